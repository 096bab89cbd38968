"""KubeLookups: 404 -> None, other failures -> LookupFailed, TTL cache (the client loader: tests/kube)."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import MaxRetryError

from webhook.kube.lookups import KubeLookups
from webhook.policies import LookupFailed

MS = {"apiVersion": "workload.serving.volcano.sh/v1alpha1", "kind": "ModelServing", "metadata": {"name": "sample", "namespace": "default"}}


class FakeCustom:
    def __init__(self, answer):
        self.answer = answer
        self.calls = []

    def get_namespaced_custom_object(self, group, version, namespace, plural, name, _request_timeout=None):
        self.calls.append((group, version, namespace, plural, name))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


class Clock:
    now = 100.0

    def __call__(self):
        return self.now


def lookups(answer, clock=None):
    lk = KubeLookups(client.ApiClient(client.Configuration()), ttl=5.0, clock=clock or Clock())
    lk._custom = FakeCustom(answer)
    return lk


def test_found_and_cached_until_ttl():
    clock = Clock()
    lk = lookups(MS, clock)
    assert lk.get("workload.serving.volcano.sh/v1alpha1", "ModelServing", "default", "sample") == MS
    assert lk.get("workload.serving.volcano.sh/v1alpha1", "ModelServing", "default", "sample") == MS
    assert lk._custom.calls == [("workload.serving.volcano.sh", "v1alpha1", "default", "modelservings", "sample")]
    clock.now += 6
    lk.get("workload.serving.volcano.sh/v1alpha1", "ModelServing", "default", "sample")
    assert len(lk._custom.calls) == 2


def test_not_found_is_none():
    lk = lookups(ApiException(status=404, reason="Not Found"))
    assert lk.get("workload.serving.volcano.sh/v1alpha1", "ModelServing", "default", "x") is None


@pytest.mark.parametrize("error", [ApiException(status=403, reason="Forbidden"), MaxRetryError(None, "/", "refused"), TimeoutError("slow")])
def test_other_failures_raise_lookup_failed(error):
    lk = lookups(error)
    with pytest.raises(LookupFailed):
        lk.get("workload.serving.volcano.sh/v1alpha1", "ModelServing", "default", "x")


def test_failures_are_not_cached():
    lk = lookups(ApiException(status=500, reason="boom"))
    for _ in range(2):
        with pytest.raises(LookupFailed):
            lk.get("workload.serving.volcano.sh/v1alpha1", "ModelServing", "default", "x")
    assert len(lk._custom.calls) == 2
