"""Suite-wide policy: in CI nothing may be skipped.

Tests skip when an optional component (pyarrow, pandas, matplotlib, the
Jupyter kernel) is missing on a developer's machine. CI sets
BLOOMKIT_REQUIRE_INTEGRATION=1, and then a skip is reported as a failure, so a
missing install step cannot hide behind a green run. Tests that need an
external component (a local SparkSession, a redis-server) follow the same rule:
skip locally when it is absent, fail in CI. No marker is needed for that.
"""

import pytest

# The skip-is-a-failure rule (tests/require_integration.py).
pytest_plugins = ["require_integration"]


def pytest_configure(config):
    # Registered here rather than only in pyproject.toml, so the suite keeps its
    # markers when it runs from a copy of tests/ against an installed wheel
    # (.ci/wheel.sh, cibuildwheel).
    config.addinivalue_line("markers", "statistical: large-sample accuracy checks (slower; CI runs them)")
    config.addinivalue_line(
        "markers", "integration: needs an external component (Redis, Spark, Scrapy); CI requires it"
    )
    config.addinivalue_line(
        "markers",
        "checkout: reads the source checkout beyond tests/ (.ci/, benchmarks/, python/); "
        "the run against an installed wheel deselects it",
    )


# -- a real redis-server (tests/redis_server.py) ---------------------------------
@pytest.fixture(scope="module")
def redis_url():
    """A redis-server on a free loopback port, one per test module that asks for it."""
    from redis_server import running_redis

    try:
        with running_redis() as url:
            yield url
    except FileNotFoundError as error:
        pytest.skip(str(error))


@pytest.fixture
def client(redis_url):
    """A redis-py client of the module's server, its database emptied first."""
    redis = pytest.importorskip("redis")
    connection = redis.Redis.from_url(redis_url)
    connection.flushdb()
    yield connection
    connection.close()
