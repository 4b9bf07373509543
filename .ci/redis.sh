#!/usr/bin/env bash
# CI: tests/test_redis.py and tests/test_scrapy.py start a real redis-server
# (Debian's package) on a free loopback port.
set -euo pipefail
if ! command -v redis-server >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq redis-server >/dev/null
fi
redis-server --version
