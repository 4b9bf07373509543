# Hidden setup of the Redis snippets (tests/test_doc_snippets.py): `r`, a
# redis-py client of the test's own redis-server, where a reader has
# `r = redis.Redis()` for theirs.
import os

import redis

r = redis.Redis.from_url(os.environ["BLOOMKIT_SNIPPET_REDIS_URL"])
r.flushdb()
