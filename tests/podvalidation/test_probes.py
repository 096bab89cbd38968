"""Probes and lifecycle hooks."""

from support.pods import container_pod, errors_of


def test_a_probe_needs_exactly_one_handler():
    assert errors_of(container_pod(livenessProbe={})) == ["spec.containers[0].livenessProbe: Required value: must specify a handler type"]
    errs = errors_of(container_pod(readinessProbe={"exec": {"command": ["true"]}, "tcpSocket": {"port": 80}}))
    assert errs == ["spec.containers[0].readinessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type"]


def test_probe_bounds_and_success_threshold():
    errs = errors_of(container_pod(livenessProbe={"exec": {"command": ["x"]}, "periodSeconds": -1, "successThreshold": 2}))
    assert errs == [
        "spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0",
        "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1",
    ]


def test_named_and_numbered_ports():
    assert errors_of(container_pod(readinessProbe={"httpGet": {"port": "http"}})) == []
    assert errors_of(container_pod(readinessProbe={"httpGet": {"port": 0}})) == [
        "spec.containers[0].readinessProbe.httpGet.port: Invalid value: 0: must be between 1 and 65535, inclusive"
    ]
    assert errors_of(container_pod(readinessProbe={"tcpSocket": {"port": "8080"}})) == [
        'spec.containers[0].readinessProbe.tcpSocket.port: Invalid value: "8080": must contain at least one letter (a-z)'
    ]


def test_lifecycle_hooks_and_the_readiness_grace_period():
    assert errors_of(container_pod(lifecycle={"preStop": {}})) == ["spec.containers[0].lifecycle.preStop: Required value: must specify a handler type"]
    errs = errors_of(container_pod(readinessProbe={"exec": {"command": ["x"]}, "terminationGracePeriodSeconds": 5}))
    assert errs == ["spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes"]
