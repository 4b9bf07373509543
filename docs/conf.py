"""Sphinx configuration of bloomkit's documentation site (built by .ci/docs.sh).

The site is this folder: the Markdown guides as they are (MyST), the README as
the front page, the changelog, and an API reference generated at build time
from the installed package's docstrings (NumPy style): the classes and
functions of ``bloomkit.__all__`` and every public submodule, found by walking
the package, so a new filter type or module appears without editing a list.
"""

from __future__ import annotations

import importlib
import pkgutil

import bloomkit

project = "bloomkit"
author = "The bloomkit maintainers"
release = version = bloomkit.__version__

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

# NumPy-style sections (Parameters, Returns, Raises, Examples) only.
napoleon_google_docstring = False
napoleon_numpy_docstring = True
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
# The pages link to files of the repository (`cpp/…`, `tests/…`) that are not
# pages of the site; MyST renders those as plain links.
myst_heading_anchors = 3

html_theme = "alabaster"
html_title = f"bloomkit {release}"

# Private modules, and the command line (documented in docs/cli.md).
_NOT_REFERENCE = {"cli", "__main__"}


def public_submodules() -> list[str]:
    names = []
    for info in pkgutil.iter_modules(bloomkit.__path__):
        if info.name.startswith("_") or info.name in _NOT_REFERENCE:
            continue
        names.append(f"bloomkit.{info.name}")
    return sorted(names)


def api_page() -> str:
    """The API reference in MyST: the package's exports, then each public submodule."""
    parts = [
        "# API reference\n",
        "Generated from the docstrings of the installed package: `bloomkit` exports first, then each public module.\n",
        "## bloomkit\n",
        "```{eval-rst}\n.. automodule:: bloomkit\n   :no-index:\n```\n",
    ]
    for name in sorted(bloomkit.__all__):
        parts.append(directive(f"bloomkit.{name}", getattr(bloomkit, name)))
    exported = {id(getattr(bloomkit, name)) for name in bloomkit.__all__}
    for module_name in public_submodules():
        module = importlib.import_module(module_name)
        names = getattr(module, "__all__", None)
        if names is None:  # what the module defines itself
            names = [
                n
                for n, v in vars(module).items()
                if not n.startswith("_") and getattr(v, "__module__", None) == module_name
            ]
        rest = [n for n in names if id(getattr(module, n)) not in exported]  # exports are above
        parts.append(f"## {module_name}\n")
        parts.append(f"```{{eval-rst}}\n.. automodule:: {module_name}\n```\n")
        parts.extend(directive(f"{module_name}.{n}", getattr(module, n)) for n in sorted(rest))
    return "\n".join(parts)


def directive(path: str, obj: object) -> str:
    if isinstance(obj, type):
        body = f".. autoclass:: {path}\n   :members:\n   :inherited-members: object, tuple, BaseException\n   :show-inheritance:\n"
    elif callable(obj):
        body = f".. autofunction:: {path}\n"
    else:  # a submodule exported by name (bloomkit.calc): its own section below
        return ""
    return f"```{{eval-rst}}\n{body}```\n"


def _fill_generated(app, docname, source):
    if docname == "api":
        source[0] = api_page()


def setup(app):
    app.connect("source-read", _fill_generated)
