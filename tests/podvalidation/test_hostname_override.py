"""hostnameOverride (gate HostnameOverride, 1.34 alpha): the constraints the field's API
documentation states (a DNS subdomain of at most 64 characters, not with setHostnameAsFQDN or
hostNetwork); the stored 1.34 source and tests were not readable, so no upstream table is replayed."""

from __future__ import annotations

from support.gated import gated_errors
from support.pods import pod_with

GATE = "HostnameOverride"


def test_valid_override() -> None:
    assert gated_errors(pod_with(hostnameOverride="db-0.example.internal"), GATE) == []
    assert gated_errors(pod_with(hostnameOverride="a" * 30 + "." + "b" * 33), GATE) == []  # 64 characters


def test_invalid_override() -> None:
    errs = gated_errors(pod_with(hostnameOverride="Bad_Name"), GATE)
    assert len(errs) == 1 and errs[0].startswith('spec.hostnameOverride: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain')
    errs = gated_errors(pod_with(hostnameOverride="a" * 30 + "." + "b" * 34), GATE)
    assert errs == ["spec.hostnameOverride: Too long: must have at most 64 bytes"]


def test_not_with_fqdn_or_host_network() -> None:
    assert gated_errors(pod_with(hostnameOverride="db", setHostnameAsFQDN=True), GATE) == [
        "spec.hostnameOverride: Forbidden: may not be set when `setHostnameAsFQDN` is true"
    ]
    errs = gated_errors(pod_with(hostnameOverride="db", hostNetwork=True), GATE)
    assert "spec.hostnameOverride: Forbidden: may not be set when `hostNetwork` is true" in errs


def test_not_checked_with_the_gate_off_or_empty() -> None:
    assert gated_errors(pod_with(hostnameOverride="Bad_Name")) == []
    assert gated_errors(pod_with(hostnameOverride=""), GATE) == []
