"""What many test modules share: where the repository's own test data lives, loaders for it, and a
polling helper.

Import it as `support` (`from support import ADMISSION_FIXTURES`): the root conftest puts `tests/`
on `sys.path`. pytest runs with `--import-mode=importlib`, so a conftest module cannot be imported by
name; constants and helpers live here instead, and the pytest fixtures built on them live in
`tests/conftest.py`."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
FIXTURES = TESTS / "fixtures"
ADMISSION_FIXTURES = FIXTURES / "admission"  # AdmissionReview bodies a real kube-apiserver sent
CLUSTER_FIXTURES = FIXTURES / "cluster"  # node and pod lists from a real cluster, per scale-in scenario
FUZZ_FINDINGS = FIXTURES / "fuzz-findings"  # inputs that once broke the webhook (data for a later issue)
CRDS = FIXTURES / "crds"  # CRDs of our own for `check`: the fields, defaults and rules the tests exercise

T = TypeVar("T")


def _json_name(name: str) -> str:
    return name if name.endswith(".json") else name + ".json"


def admission_fixture_paths() -> list[Path]:
    """Every recorded AdmissionReview, sorted by name; an empty folder is an error, not zero tests."""
    paths = sorted(ADMISSION_FIXTURES.glob("*.json"))
    if not paths:
        raise RuntimeError(f"no AdmissionReview fixtures in {ADMISSION_FIXTURES}")
    return paths


def admission_path(name: str) -> Path:
    """A recorded AdmissionReview's file, by name with or without `.json`."""
    return ADMISSION_FIXTURES / _json_name(name)


def load_admission(name: str) -> dict:
    """A recorded AdmissionReview, parsed."""
    return json.loads(admission_path(name).read_text())


def cluster_path(name: str) -> Path:
    return CLUSTER_FIXTURES / _json_name(name)


def load_cluster(name: str) -> dict:
    """A cluster snapshot: `{"nodes": <NodeList>, "pods": <PodList>}`."""
    return json.loads(cluster_path(name).read_text())


def wait_for(pred: Callable[[], T], timeout: float = 20.0, what: str = "condition") -> T:
    """Poll until pred() is truthy and return its value. The deadline only guards against hangs;
    no test asserts on how long this takes."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = pred()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def free_port() -> int:
    """A TCP port that was free on 127.0.0.1 a moment ago, for a server that needs a number."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


POD_CORPUS = FIXTURES / "podspecs" / "corpus.json"  # a real kube-apiserver's verdicts on pod specs


def load_pod_corpus() -> dict:
    """The recorded pod-spec oracle (tests/fixtures/podspecs/record.py explains how it was made):
    `{"apiserver": {...}, "cases": [{"name", "pod", "pod_verdict", "modelserving",
    "modelserving_verdict", "template_field", "not_knowable_offline", ...}]}`."""
    return json.loads(POD_CORPUS.read_text())


# libyaml's loader where PyYAML was built with it (the wheels are): the same documents as
# yaml.safe_load_all, several times faster, and the deployment tests parse megabytes of them.
_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def yaml_documents(text: str) -> list[Any]:
    """The non-empty documents of a YAML stream, as yaml.safe_load_all reads them."""
    return [d for d in yaml.load_all(text, Loader=_YAML_LOADER) if d]
