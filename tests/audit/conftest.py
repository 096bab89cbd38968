"""The audit tests' cluster: the fake API server serving every audited kind and PolicyReports.
The objects they seed are made by auditobjects.py (importable from this folder)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from webhook.audit.kinds import audited_kinds  # noqa: E402


@pytest.fixture
def cluster(fake_api):
    """The fake API with every audited kind served (empty) and the PolicyReport CRD installed."""
    for kind in audited_kinds():
        fake_api.install_custom(kind.group, kind.resource)
    fake_api.install_custom("wgpolicyk8s.io", "policyreports")
    return fake_api
