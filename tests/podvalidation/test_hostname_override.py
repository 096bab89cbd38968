"""hostnameOverride (gate HostnameOverride: alpha in 1.34, on from 1.35): validatePodHostName of
validation.go v1.37.2 (the same from v1.34.4), whose verdicts the oracle's kube-apiserver 1.37
recording holds (tests/oracle): not with setHostnameAsFQDN or hostNetwork, at most 64 characters,
a DNS subdomain, the empty string included, in that order."""

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


def test_not_with_fqdn_or_host_network_reported_first() -> None:
    assert gated_errors(pod_with(hostnameOverride="db", setHostnameAsFQDN=True), GATE) == [
        "spec.hostnameOverride: Forbidden: may not be specified when setHostnameAsFQDN is true"
    ]
    errs = gated_errors(pod_with(hostnameOverride="Bad", hostNetwork=True), GATE)
    assert errs[0] == "spec.hostnameOverride: Forbidden: may not be specified when hostNetwork is true"
    assert errs[1].startswith('spec.hostnameOverride: Invalid value: "Bad"')


def test_the_empty_override_is_not_a_subdomain() -> None:
    errs = gated_errors(pod_with(hostnameOverride=""), GATE)
    assert len(errs) == 1 and errs[0].startswith('spec.hostnameOverride: Invalid value: "": a lowercase RFC 1123 subdomain')


def test_not_checked_with_the_gate_off() -> None:
    assert gated_errors(pod_with(hostnameOverride="Bad_Name")) == []
