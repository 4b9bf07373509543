"""Run one Scrapy crawl (used by tests/test_scrapy.py as a subprocess).

    python scrapy_crawl.py START_URL OUT_FILE SETTINGS_JSON

Every response's URL is appended to OUT_FILE; the crawl's stats go to
OUT_FILE.stats.json. Start requests go through the dupefilter (not
``dont_filter``), so a resumed crawl does not fetch its start page again.
"""

import json
import sys

import scrapy
from scrapy.crawler import CrawlerProcess


class SiteSpider(scrapy.Spider):
    name = "site"

    def __init__(self, start, out, **kwargs):
        super().__init__(**kwargs)
        self.start_url = start
        self.out = out

    def start_requests(self):
        yield scrapy.Request(self.start_url, dont_filter=False)

    async def start(self):
        yield scrapy.Request(self.start_url, dont_filter=False)

    def parse(self, response):
        with open(self.out, "a", encoding="utf-8") as fh:
            fh.write(response.url + "\n")
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, self.parse)

    def closed(self, reason):
        stats = {k: v for k, v in self.crawler.stats.get_stats().items() if isinstance(v, (int, float, str))}
        with open(self.out + ".stats.json", "w", encoding="utf-8") as fh:
            json.dump(stats, fh)


if __name__ == "__main__":
    start, out, settings = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    process = CrawlerProcess(
        settings={
            "ROBOTSTXT_OBEY": False,
            "TELNETCONSOLE_ENABLED": False,
            "CONCURRENT_REQUESTS": 16,
            "RETRY_ENABLED": False,
            "LOG_LEVEL": "INFO",
            **settings,
        }
    )
    process.crawl(SiteSpider, start=start, out=out)
    process.start()
