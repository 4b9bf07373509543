"""The CI rule "a skip is a failure" (BLOOMKIT_REQUIRE_INTEGRATION=1), as a pytest plugin.

A test that skips at run time (a missing redis-server, JDK or Connect
dependency) and a module that skips while it is collected (a module-level
``pytest.importorskip("pyspark")``) are both reported as failures, so a
missing install step cannot hide behind a green run. ``conftest.py`` loads
it; ``test_require_integration.py`` runs it on modules made to skip.
"""

import pytest

from support import REQUIRE_INTEGRATION

_FORBIDDEN = "but BLOOMKIT_REQUIRE_INTEGRATION=1 forbids skipping"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if REQUIRE_INTEGRATION and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped, {_FORBIDDEN}: {report.longrepr}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if REQUIRE_INTEGRATION and report.skipped:
        report.outcome = "failed"
        report.longrepr = f"skipped while collecting {collector.nodeid}, {_FORBIDDEN}: {report.longrepr}"
