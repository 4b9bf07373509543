"""Generate examples/urls.txt.gz: a crawler's URL frontier with duplicates.

300,000 URL-like lines, about 186,000 of them distinct. Popular pages come
back again and again (repeats are drawn with a strong bias towards early
URLs, roughly Zipf-like), as in a real crawl frontier. A few lines carry
UTF-8 paths and a few are Latin-1 bytes that are not valid UTF-8, to show
that ``bloomkit dedup`` compares raw bytes.

The output is deterministic: the same bytes on every run and machine with
the same zlib (``random.Random`` with a fixed seed, gzip mtime 0, no file
name in the header). Run from the repository root::

    python examples/make_urls.py            # writes examples/urls.txt.gz
    python examples/make_urls.py out.txt.gz

Try it::

    bloomkit dedup examples/urls.txt.gz --stats > /dev/null
"""

from __future__ import annotations

import gzip
import os
import random
import sys

SEED = 20240601
LINES = 300_000
NEW_URL_SHARE = 0.62  # a line is a URL not seen before with this probability

WORDS = (
    "alpha apple atlas blue cedar cloud coral delta ember fable falcon forest garden harbor hazel "
    "island jade lumen maple meadow nova ocean orbit pebble pine quartz raven river saffron "
    "signal solar spruce stone summit tidal timber urban velvet willow zenith"
).split()
TLDS = ("com", "org", "net", "io", "de", "co.uk", "fr", "dev")
SECTIONS = ("news", "blog", "products", "docs", "forum", "wiki", "search", "category", "tag", "user")
SOURCES = ("newsletter", "twitter", "google", "partner", "rss")
UTF8_SLUGS = ("café-crème", "straße", "naïve-résumé", "東京", "smörgåsbord", "jalapeño")


def _hosts(rng: random.Random) -> list:
    hosts = set()
    while len(hosts) < 120:
        first, second = rng.choice(WORDS), rng.choice(WORDS)
        prefix = rng.choice(("www.", "", "blog.", "shop.", "m."))
        hosts.add(f"{prefix}{first}-{second}.{rng.choice(TLDS)}")
    return sorted(hosts)


def _new_url(rng: random.Random, hosts: list) -> bytes:
    # Hosts are popular in a skewed way too: the first few get most pages.
    host = hosts[int(len(hosts) * rng.random() ** 2)]
    section = rng.choice(SECTIONS)
    roll = rng.random()
    if roll < 0.002:
        # Latin-1 bytes: not valid UTF-8, still a perfectly good key.
        return f"http://{host}/{section}/caf\xe9-{rng.randrange(10**6)}".encode("latin-1")
    if roll < 0.01:
        slug = rng.choice(UTF8_SLUGS)
        return f"https://{host}/{section}/{slug}-{rng.randrange(10**6)}".encode()
    path = f"https://{host}/{section}/{rng.choice(WORDS)}-{rng.choice(WORDS)}/{rng.randrange(10**4)}"
    if roll < 0.35:
        path += f"?page={rng.randrange(1, 50)}"
    elif roll < 0.45:
        path += f"?utm_source={rng.choice(SOURCES)}&id={rng.randrange(1000)}"
    return path.encode()


def generate(seed: int = SEED, lines: int = LINES):
    """Yield the lines (bytes, no newline), first occurrences and repeats interleaved."""
    rng = random.Random(seed)
    hosts = _hosts(rng)
    emitted = []
    for _ in range(lines):
        if not emitted or rng.random() < NEW_URL_SHARE:
            url = _new_url(rng, hosts)
            emitted.append(url)
            yield url
        elif rng.random() < 0.5:
            # A link seen again on a nearby page: one of the last few hundred URLs.
            yield emitted[-1 - int(min(len(emitted), 300) * rng.random())]
        else:
            # rng.random() ** 3 piles repeats onto the earliest (most linked) pages.
            yield emitted[int(len(emitted) * rng.random() ** 3)]


def write(path: str, seed: int = SEED, lines: int = LINES) -> None:
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as out:
        out.write(b"".join(line + b"\n" for line in generate(seed, lines)))


if __name__ == "__main__":
    target = (
        sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "urls.txt.gz")
    )
    write(target)
    print(f"wrote {target} ({os.path.getsize(target):,} bytes)")
