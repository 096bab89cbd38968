"""Shared test fixtures: where the real data lives, and loaders for it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SERVINGGATE_SHARED", REPO.parent / "shared")).resolve()
ADMISSION_FIXTURES = SHARED / "fixtures" / "admission"
CLUSTER_FIXTURES = SHARED / "fixtures" / "cluster"
CRDS = SHARED / "crds"


def admission_fixture_paths() -> list[Path]:
    paths = sorted(ADMISSION_FIXTURES.glob("*.json"))
    if not paths:
        raise RuntimeError(f"no AdmissionReview fixtures in {ADMISSION_FIXTURES}; set SERVINGGATE_SHARED")
    return paths


def load_admission(name: str) -> dict:
    """A recorded AdmissionReview by file name, with or without `.json`."""
    path = ADMISSION_FIXTURES / (name if name.endswith(".json") else name + ".json")
    return json.loads(path.read_text())


def load_cluster(name: str) -> dict:
    path = CLUSTER_FIXTURES / (name if name.endswith(".json") else name + ".json")
    return json.loads(path.read_text())


@pytest.fixture
def shared_dir() -> Path:
    return SHARED
