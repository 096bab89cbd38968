"""Fixtures for the certificate tests (webhook/certs/). The fake API server (`fake_api`,
`api_client`) comes from the root conftest."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def committed_configurations() -> list[dict]:
    """The webhook configurations `kubectl apply -k manifests/` installs (caBundle still empty)."""
    text = (REPO / "manifests" / "base" / "webhook-configurations.yaml").read_text()
    return [d for d in yaml.safe_load_all(text) if d]
