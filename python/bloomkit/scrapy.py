"""A Scrapy duplicate filter on a Bloom filter: constant memory, resumable, shareable.

Use it with ``DUPEFILTER_CLASS = "bloomkit.scrapy.BloomDupeFilter"``. Like
Scrapy's ``RFPDupeFilter`` it test-and-sets each request's fingerprint
(``crawler.request_fingerprinter``), logs the first filtered request (every
one with ``DUPEFILTER_DEBUG``) and counts ``dupefilter/filtered``. Unlike it,
memory stays at the filter's size however many URLs are seen (a set of SHA1
fingerprints costs ~100 bytes per URL; the default filter 3.6 bytes).

Settings:

* ``BLOOMKIT_DUPEFILTER_CAPACITY`` (default 1,000,000) and
  ``BLOOMKIT_DUPEFILTER_ERROR_RATE`` (default 1e-6): a false positive is a page
  never crawled, so the default rate is low.
* ``JOBDIR``: the filter is saved atomically to ``JOBDIR/requests.bloom`` when
  the spider closes and loaded when it opens, so a paused crawl resumes
  without revisiting pages.
* ``BLOOMKIT_DUPEFILTER_REDIS_URL`` (e.g. ``redis://host:6379/0``): the seen
  set is a :class:`bloomkit.redis.RedisBloomFilter` shared by every crawler
  process using the same key, ``BLOOMKIT_DUPEFILTER_REDIS_KEY`` (default
  ``bloomkit:dupefilter:<spider name>``). Needs redis-py.
* ``BLOOMKIT_DUPEFILTER_WINDOW`` (e.g. ``"7d"``, with a Redis URL): the seen
  set is a :class:`bloomkit.redis_window.RedisWindowFilter`, so a page is
  crawled again once the window has passed since it was first crawled
  (within one window more); ``BLOOMKIT_DUPEFILTER_CAPACITY`` is then the
  requests per window. ``BLOOMKIT_DUPEFILTER_WINDOW_GENERATIONS`` (default 5)
  sets how finely the window slides (forgotten by W + W/(g - 1)).
"""

from __future__ import annotations

import logging
import os

from scrapy.dupefilters import BaseDupeFilter
from scrapy.utils.job import job_dir
from scrapy.utils.request import referer_str

from .bloom import BloomFilter

__all__ = ["BloomDupeFilter"]

DEFAULT_CAPACITY = 1_000_000
DEFAULT_ERROR_RATE = 1e-6
JOBDIR_FILE = "requests.bloom"


class BloomDupeFilter(BaseDupeFilter):
    """``DUPEFILTER_CLASS`` backed by a bloomkit Bloom filter (local, JOBDIR-persisted, or in Redis)."""

    def __init__(self, seen, *, fingerprinter, path=None, debug=False):
        self.seen = seen
        self.fingerprinter = fingerprinter
        self.path = path
        self.debug = debug
        self.logdupes = True
        self.logger = logging.getLogger(__name__)

    @classmethod
    def from_crawler(cls, crawler):
        settings = crawler.settings
        capacity = settings.getint("BLOOMKIT_DUPEFILTER_CAPACITY", DEFAULT_CAPACITY)
        error_rate = settings.getfloat("BLOOMKIT_DUPEFILTER_ERROR_RATE", DEFAULT_ERROR_RATE)
        redis_url = settings.get("BLOOMKIT_DUPEFILTER_REDIS_URL")
        window = settings.get("BLOOMKIT_DUPEFILTER_WINDOW")
        path = None
        if window and not redis_url:
            raise ValueError(
                "BLOOMKIT_DUPEFILTER_WINDOW needs BLOOMKIT_DUPEFILTER_REDIS_URL (the window lives in Redis)"
            )
        if redis_url:
            import redis

            client = redis.Redis.from_url(redis_url)
            key = settings.get("BLOOMKIT_DUPEFILTER_REDIS_KEY") or f"bloomkit:dupefilter:{crawler.spidercls.name}"
            if window:
                from .redis_window import RedisWindowFilter

                generations = settings.getint("BLOOMKIT_DUPEFILTER_WINDOW_GENERATIONS", 5)
                seen = RedisWindowFilter(client, key, capacity, error_rate, window=window, generations=generations)
            else:
                from .redis import RedisBloomFilter

                seen = RedisBloomFilter(client, key, capacity, error_rate)
        else:
            directory = job_dir(settings)
            path = os.path.join(directory, JOBDIR_FILE) if directory else None
            seen = _load_or_create(path, capacity, error_rate)
        return cls(
            seen,
            fingerprinter=crawler.request_fingerprinter,
            path=path,
            debug=settings.getbool("DUPEFILTER_DEBUG"),
        )

    def request_seen(self, request) -> bool:
        """Test-and-set the request's fingerprint: True if it was (probably) seen before."""
        return self.seen.add(self.fingerprinter.fingerprint(request))

    def close(self, reason: str) -> None:
        if self.path is not None:
            self.seen.save(self.path)

    def log(self, request, spider) -> None:
        if self.debug:
            self.logger.debug(
                "Filtered duplicate request: %(request)s (referer: %(referer)s)",
                {"request": request, "referer": referer_str(request)},
                extra={"spider": spider},
            )
        elif self.logdupes:
            self.logger.debug(
                "Filtered duplicate request: %(request)s - no more duplicates will be shown"
                " (see DUPEFILTER_DEBUG to show all duplicates)",
                {"request": request},
                extra={"spider": spider},
            )
            self.logdupes = False
        spider.crawler.stats.inc_value("dupefilter/filtered")


def _load_or_create(path, capacity, error_rate) -> BloomFilter:
    """The JOBDIR filter if there is one (it keeps its own size), else a new one."""
    if path is not None and os.path.exists(path):
        return BloomFilter.load(path)
    return BloomFilter(capacity, error_rate)
