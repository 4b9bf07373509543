"""bloomkit.scrapy.BloomDupeFilter in real Scrapy crawls of a generated local site."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

pytest.importorskip("scrapy")
from w3lib.url import canonicalize_url  # noqa: E402

pytestmark = pytest.mark.integration

HERE = os.path.dirname(__file__)
PAGES = 500
BLOOM = {"DUPEFILTER_CLASS": "bloomkit.scrapy.BloomDupeFilter"}


def page_links(i: int) -> list:
    """12 links per page, many to the same pages in different spellings (query order, fragments)."""
    rng = np.random.default_rng(i)
    links = [f"/p/{(i + 1) % PAGES}"]
    for j in rng.integers(0, PAGES, size=6):
        links += [f"/p/{j}", f"/p/{j}#top"]
    k = int(rng.integers(0, PAGES))
    links += [f"/p/{k}?a=1&b=2", f"/p/{k}?b=2&a=1", f"/p/{k}?a=1&b=2#x"]
    return links


class SiteHandler(BaseHTTPRequestHandler):
    def do_GET(self):
        path = self.path.split("?")[0]
        if not path.startswith("/p/") or not path[3:].isdigit() or int(path[3:]) >= PAGES:
            self.send_error(404)
            return
        body = "<html><body>" + "".join(f'<a href="{h}">x</a>' for h in page_links(int(path[3:]))) + "</body></html>"
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def site():
    server = ThreadingHTTPServer(("127.0.0.1", 0), SiteHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def start_crawl(start, out, settings):
    return subprocess.Popen(
        [sys.executable, os.path.join(HERE, "scrapy_crawl.py"), start, str(out), json.dumps(settings)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finish(process, out):
    log, _ = process.communicate(timeout=600)
    assert process.returncode == 0, log[-3000:]
    visited = open(out, encoding="utf-8").read().split() if os.path.exists(out) else []
    with open(str(out) + ".stats.json", encoding="utf-8") as fh:
        return visited, json.load(fh), log


def crawl(start, out, settings):
    return finish(start_crawl(start, out, settings), out)


@pytest.fixture(scope="module")
def reference(site, tmp_path_factory):
    """The crawl with Scrapy's default RFPDupeFilter: (visited URLs, stats)."""
    out = tmp_path_factory.mktemp("reference") / "default.txt"
    visited, stats, _ = crawl(site + "/p/0", out, {})
    return visited, stats


def test_same_pages_as_scrapys_default_dupefilter(site, reference, tmp_path):
    default_visited, default_stats = reference
    bloom_visited, bloom_stats, log = crawl(site + "/p/0", tmp_path / "bloom.txt", {**BLOOM, "LOG_LEVEL": "DEBUG"})
    assert sorted(bloom_visited) == sorted(default_visited)
    assert len(set(map(canonicalize_url, bloom_visited))) == len(bloom_visited)  # nothing fetched twice
    assert len(bloom_visited) > PAGES + PAGES // 3  # every page, plus query-string variants
    assert bloom_stats["dupefilter/filtered"] == default_stats["dupefilter/filtered"] > 5 * PAGES
    assert log.count("Filtered duplicate request") == 1  # logged once, like RFPDupeFilter


def test_resumed_crawl_from_jobdir_revisits_nothing(site, reference, tmp_path):
    jobdir = str(tmp_path / "job")
    first, _, _ = crawl(
        site + "/p/0", tmp_path / "first.txt", {**BLOOM, "JOBDIR": jobdir, "CLOSESPIDER_PAGECOUNT": 150}
    )
    assert os.path.exists(os.path.join(jobdir, "requests.bloom"))
    second, _, _ = crawl(site + "/p/0", tmp_path / "second.txt", {**BLOOM, "JOBDIR": jobdir})
    assert 150 <= len(first) < 300 and len(second) > 300
    assert not set(first) & set(second)
    full = reference[0]
    # Requests in flight when the first run stopped are neither finished nor re-queued (Scrapy's own behaviour).
    assert set(first) | set(second) <= set(full)
    assert len(set(first) | set(second)) >= len(full) - 20


def test_two_processes_share_one_seen_set_in_redis(site, reference, tmp_path):
    redis = pytest.importorskip("redis")
    from redis_server import running_redis

    try:
        server = running_redis()
        url = server.__enter__()
    except FileNotFoundError as error:
        pytest.skip(str(error))
    try:
        shared = {**BLOOM, "BLOOMKIT_DUPEFILTER_REDIS_URL": url, "BLOOMKIT_DUPEFILTER_REDIS_KEY": "crawl:seen"}
        a = start_crawl(site + "/p/0", tmp_path / "a.txt", shared)
        b = start_crawl(site + "/p/250", tmp_path / "b.txt", shared)
        visited_a, stats_a, _ = finish(a, tmp_path / "a.txt")
        visited_b, stats_b, _ = finish(b, tmp_path / "b.txt")
        full = reference[0]
        assert not set(visited_a) & set(visited_b)  # each page crawled by exactly one process
        assert sorted(visited_a + visited_b) == sorted(full)
        from bloomkit.redis import RedisBloomFilter

        seen = RedisBloomFilter(redis.Redis.from_url(url), "crawl:seen")
        assert abs(len(seen) - len(full)) < 0.01 * len(full)
    finally:
        server.__exit__(None, None, None)


def test_redis_window_recrawls_pages_after_the_window(site, tmp_path):
    pytest.importorskip("redis")
    from redis_server import running_redis

    try:
        server = running_redis()
        url = server.__enter__()
    except FileNotFoundError as error:
        pytest.skip(str(error))
    # The start page and the pages it links to: a crawl of seconds, well inside the window.
    near = {"DEPTH_LIMIT": 1}
    window = 40.0  # seconds in 5 generations: a page is kept at least 40 s and forgotten by 50 s
    try:
        reference, _, _ = crawl(site + "/p/0", tmp_path / "reference.txt", near)
        settings = {
            **BLOOM,
            **near,
            "BLOOMKIT_DUPEFILTER_REDIS_URL": url,
            "BLOOMKIT_DUPEFILTER_REDIS_KEY": "crawl:window",
            "BLOOMKIT_DUPEFILTER_WINDOW": "40s",
        }
        started = time.monotonic()
        first, _, _ = crawl(site + "/p/0", tmp_path / "first.txt", settings)
        first_ended = time.monotonic()  # every page was first requested before this
        assert sorted(first) == sorted(reference) and len(first) > 5  # nothing crawled twice
        again, _, _ = crawl(site + "/p/0", tmp_path / "again.txt", settings)
        ended = time.monotonic()
        assert ended - started < window, "both crawls must run within the window for this test"
        assert again == []  # within the window: even the start page is a duplicate
        time.sleep(max(0.0, first_ended + 1.25 * window + 1 - time.monotonic()))
        later, _, _ = crawl(site + "/p/0", tmp_path / "later.txt", settings)
        assert sorted(later) == sorted(reference)  # after the window: every page crawled again, once
    finally:
        server.__exit__(None, None, None)
