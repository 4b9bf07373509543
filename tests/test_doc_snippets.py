"""Every code block of the README and of the pages under docs/ runs as written.

A page's ``python`` blocks run in order in one fresh interpreter (a page reads
as one session: later blocks use what earlier ones defined), in an empty
working directory, each compiled under the name ``PAGE:LINE`` so a failure
points at the block. A block may need something a reader already has (a
Redis client, a Spark session with data): the page then names a hidden setup
file in an HTML comment just above the block, ``<!-- setup: tests/snippet_setup/redis_client.py -->``,
which runs first. Blocks that are not Python say what they are, and are not
run: shell commands (``bash``, ``console``) and output (``text``); the site's
MyST directives (```` ```{include} ````) are not code. A block without a
language, or with another one, fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGES = ["README.md"] + sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md"))
RUN = {"python"}
NOT_RUN = {"bash": "shell", "console": "shell", "text": "output"}

FENCE = re.compile(r"^```(?P<lang>[^\n`]*)\n(?P<body>.*?)^```[ \t]*$", re.M | re.S)
SETUP = re.compile(r"<!--\s*setup:\s*(?P<path>\S+)\s*-->\s*\Z")

# What a setup file needs from the test run, by file.
NEEDS_REDIS = {"tests/snippet_setup/redis_client.py"}
NEEDS_SPARK = {"tests/snippet_setup/spark_session.py"}


def blocks(page: str) -> list[dict]:
    text = (REPO / page).read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n")
        setup = SETUP.search(before)
        found.append(
            {
                "lang": match.group("lang").strip(),
                "line": text.count("\n", 0, match.start()) + 1,
                "code": match.group("body"),
                "setup": setup.group("path") if setup else None,
            }
        )
    return found


def test_the_pages_exist_and_have_blocks():
    assert "docs/integrations.md" in PAGES and "docs/cuckoo.md" in PAGES
    assert sum(1 for page in PAGES for b in blocks(page) if b["lang"] in RUN) >= 19


@pytest.mark.parametrize("page", PAGES)
def test_every_block_says_what_it_is(page):
    for block in blocks(page):
        if block["lang"].startswith("{"):  # a MyST directive of the docs site (docs/index.md)
            continue
        assert block["lang"] in RUN or block["lang"] in NOT_RUN, (
            f"{page}:{block['line']}: a code block is tagged python (run by this test), "
            f"or one of {sorted(NOT_RUN)}; not {block['lang']!r}"
        )
        if block["setup"] is not None:
            assert block["lang"] in RUN and (REPO / block["setup"]).is_file(), f"{page}:{block['line']}"


# The last line it prints says every block ran: a library that ends the process
# early with sys.exit(0) (PySpark does, when Spark Connect's dependencies are
# missing) must not pass for a page that ran.
RUNNER = """
import json, sys
ns = {"__name__": "__main__"}
program = json.load(open(sys.argv[1], encoding="utf-8"))
for name, code in program:
    try:
        exec(compile(code, name, "exec"), ns)
    except SystemExit as stop:
        raise RuntimeError(f"{name} ended the process: SystemExit({stop.code!r})") from None
print(f"ran {len(program)} blocks")
"""


@pytest.mark.parametrize("page", [p for p in PAGES if any(b["lang"] in RUN for b in blocks(p))])
def test_python_blocks_run_as_written(page, request, tmp_path):
    env = dict(
        os.environ, MPLBACKEND="Agg", PYTHONFAULTHANDLER="1", PYTHONPATH=os.pathsep.join(p for p in sys.path if p)
    )
    program = []
    for block in blocks(page):
        if block["lang"] not in RUN:
            continue
        if block["setup"] is not None:
            if block["setup"] in NEEDS_REDIS:
                env["BLOOMKIT_SNIPPET_REDIS_URL"] = request.getfixturevalue("redis_url")
            if block["setup"] in NEEDS_SPARK:
                if shutil.which("java") is None:
                    pytest.skip("a JDK is needed for the Spark snippets")
                try:
                    from pyspark.sql.connect.utils import check_dependencies

                    check_dependencies()
                except ImportError as missing:
                    pytest.skip(f"the Spark snippets need Spark Connect's dependencies (the [test] extra): {missing}")
            program.append((block["setup"], (REPO / block["setup"]).read_text(encoding="utf-8")))
        program.append((f"{page}:{block['line']}", textwrap.dedent(block["code"])))
    script = tmp_path / "blocks.json"
    script.write_text(json.dumps(program), encoding="utf-8")
    work = tmp_path / "cwd"
    work.mkdir()
    result = subprocess.run(
        [sys.executable, "-c", RUNNER, str(script)], cwd=work, env=env, capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, f"{page}: a block failed\n{result.stderr[-4000:]}"
    assert result.stdout.splitlines()[-1] == f"ran {len(program)} blocks", result.stdout[-2000:]
