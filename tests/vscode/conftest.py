"""On a failed VS Code test, a picture of the window and code-server's log, for the CI log
reader: ``build/vscode-real-failures/<test>.png``."""

from __future__ import annotations

from collections.abc import Generator, Iterator

import pytest

from tests.vscode.workbench import FAILURES


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        item.stash[FAILED] = report.failed
    return report


FAILED = pytest.StashKey[bool]()


@pytest.fixture(autouse=True)
def picture_on_failure(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if not request.node.stash.get(FAILED, False) or "window" not in request.fixturenames:
        return
    window = request.getfixturevalue("window")
    FAILURES.mkdir(parents=True, exist_ok=True)
    picture = FAILURES / f"{request.node.name}.png"
    try:
        window.bench.page.screenshot(path=str(picture))
    except Exception as error:  # the browser may be what failed
        print(f"no picture of the failure: {error}")  # noqa: T201
        return
    print(f"the window at the failure: {picture}")  # noqa: T201
    print(f"code-server's log:\n{window.bench.server.log_tail()}")  # noqa: T201
