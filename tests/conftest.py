"""Fixtures every test folder may use: the repository's recorded data and the fake API server.

Paths and loaders live in `tests/support/`, the fake API server in `tests/fakes/`; both are
importable (`from support import ...`, `from fakes.apiserver import FakeAPI`) because this file puts
`tests/` on sys.path, the same way tests/server/conftest.py makes `serverproc` importable."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from fakes.apiserver import FakeAPI  # noqa: E402
from hypothesis import settings  # noqa: E402
from support import CRDS, cluster_path, load_cluster, wait_for  # noqa: E402
from support.examples import profile  # noqa: E402

# ---- hypothesis ------------------------------------------------------------------------------------

# Two profiles, chosen by SERVINGGATE_HYPOTHESIS_PROFILE (tests/support/examples.py): `dev` for
# `./dev test`, `ci` for `.ci/run`. Each property's example count comes from `examples(n)`; the
# profiles differ in what a failure prints (CI prints the reproduction blob). Each sets what it
# means outright: hypothesis bases a profile on its own default, which differs when the `CI`
# variable is set (print_blob on, derandomized, no database).
settings.register_profile("dev", deadline=None, print_blob=False)
settings.register_profile("ci", deadline=None, print_blob=True)
settings.load_profile(profile())

# ---- the order tests start in ---------------------------------------------------------------------

# The modules whose tests take longest, started first: `./dev test` runs two workers per core
# (pytest-xdist, --dist worksteal), and a long test left for last would run alone while the other
# workers wait. Only the order changes; a name that no longer matches moves nothing.
STARTED_FIRST = (
    "tests/test_architecture.py",
    "tests/deploy/test_fallback.py",
    "tests/server/test_bad_reviews.py",
    "tests/policies/test_projections.py",
    "tests/policies/test_pods.py",
    "tests/test_startup_errors.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        module = item.nodeid.split("::", 1)[0]
        return STARTED_FIRST.index(module) if module in STARTED_FIRST else len(STARTED_FIRST)

    items.sort(key=rank)  # stable: within a module, and for every other module, collection order


# ---- every test ----------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _root_logging_restored():
    """A command run in-process (`main([...])`) points the root logger at the sys.stderr of that
    moment, which is pytest's capture of that one test; once the test ends the stream is closed,
    and every later line from any thread failed with "--- Logging error ---". Each test gets back
    the root logger it started with."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:], root.level = handlers, level


@pytest.fixture(autouse=True)
def _crds_of_our_own(monkeypatch, tmp_path_factory):
    """`check` reads CRDs from the user's cache and SERVINGGATE_CRDS: every test gets an empty
    cache of its own (never the user's) and our CRD fixtures in SERVINGGATE_CRDS, as a user who
    names their CRDs would; a test of the missing-CRD path takes the variable away."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.setenv("SERVINGGATE_CRDS", str(CRDS))


# ---- recorded data -------------------------------------------------------------------------------


@pytest.fixture
def s1() -> dict:
    """S1: compaction on NPU nodes (tests/fixtures/cluster/README.md)."""
    return load_cluster("S1-compaction")


@pytest.fixture
def s2() -> dict:
    """S2: ModelServing ServingGroups spread over four NPU nodes."""
    return load_cluster("S2-modelserving-groups")


@pytest.fixture
def s1_path() -> Path:
    return cluster_path("S1-compaction")


@pytest.fixture
def s2_path() -> Path:
    return cluster_path("S2-modelserving-groups")


# ---- the fake API server -----------------------------------------------------------------------


@pytest.fixture
def fake_api():
    """A started FakeAPI (tests/fakes/apiserver.py), empty until the test seeds it. Calling it,
    `api, api_client = fake_api(nodes, pods)`, seeds nodes and pods and gives a client."""
    with FakeAPI() as api:
        yield api


@pytest.fixture
def fake_api_factory():
    """`make()` -> another started FakeAPI, for a test that compares two identical clusters;
    each is closed at the end of the test."""
    made: list[FakeAPI] = []

    def make() -> FakeAPI:
        made.append(FakeAPI().start())
        return made[-1]

    yield make
    for api in made:
        api.close()


@pytest.fixture
def api_client(fake_api):
    """An official ApiClient pointed at `fake_api`."""
    return fake_api.client()


@pytest.fixture
def waiter():
    """`wait_for(pred, timeout=20, what=...)`: poll until pred() is truthy."""
    return wait_for
