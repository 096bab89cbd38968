"""The webhook's lookups against the fake API server: a watch-fed store of projections, one
budgeted GET on a miss (404 -> None, other failures -> LookupFailed), at most one lookup of an
object per review, and an API server that never answers costs a review at most the budget."""

from __future__ import annotations

import time

import pytest
from fakes.apiserver import FakeAPI
from fakes.silent import Silent, kubeconfig_for
from support import wait_for

from webhook.kthena import AUTOSCALINGPOLICY_API_VERSION, AUTOSCALINGPOLICY_KIND, MODELSERVING_API_VERSION, MODELSERVING_KIND
from webhook.kube.lookups import KubeLookups, serving_lookups
from webhook.kube.watching import StoreWatcher
from webhook.policies import Context, LookupFailed
from webhook.policies.context import NOT_HERE
from webhook.policies.kserve import KSERVE_CONFIG_NAME
from webhook.policies.projections import KSERVE_CONFIGMAP
from webhook.policies.store import ProjectionStore

GROUP = MODELSERVING_API_VERSION.rpartition("/")[0]


def ms(name: str, namespace: str = "default", scheduler: str = "volcano") -> dict:
    return {
        "apiVersion": MODELSERVING_API_VERSION,
        "kind": MODELSERVING_KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "schedulerName": scheduler,
            "replicas": 1,
            "template": {"roles": [{"name": "prefill", "replicas": 1, "entryTemplate": {"spec": {"containers": [{"name": "c", "image": "big"}]}}}]},
        },
    }


def policy(name: str) -> dict:
    return {"apiVersion": AUTOSCALINGPOLICY_API_VERSION, "kind": AUTOSCALINGPOLICY_KIND, "metadata": {"name": name, "namespace": "default"}}


_started: list[KubeLookups] = []


@pytest.fixture(autouse=True)
def _stop_watchers():
    yield
    while _started:
        _started.pop().close()


@pytest.fixture
def api():
    with FakeAPI() as fake:
        fake.install_custom(GROUP, "modelservings")
        fake.install_custom(GROUP, "autoscalingpolicies")
        yield fake


def lookups(api: FakeAPI, *, watch: bool = True, budget: float = 0.5, resync: float = 600.0) -> KubeLookups:
    store = ProjectionStore()
    watcher = StoreWatcher(api.client(), store, resync=resync) if watch else None
    lk = KubeLookups(store, api.client(), budget=budget, watcher=watcher)
    _started.append(lk)
    if watcher is not None:
        lk.start()
        wait_for(lambda: all(s.synced for s in store.states()), timeout=5)
    return lk


def get_ms(lk, name: str, namespace: str = "default"):
    return lk.get(MODELSERVING_API_VERSION, MODELSERVING_KIND, namespace, name)


def gets(api: FakeAPI) -> int:
    return len([c for c in api.calls("GET", "/modelservings/") if c.query.get("watch") != "true"])


def test_the_watch_keeps_the_store_current_and_reviews_read_it(api):
    api.add_custom(ms("listed"))
    lk = lookups(api)
    assert get_ms(lk, "listed")["spec"] == {"schedulerName": "volcano", "replicas": 1, "template": {"roles": [{"name": "prefill", "replicas": 1}]}}
    api.add_custom(ms("added", scheduler="other"))
    wait_for(lambda: lk.store.cached(MODELSERVING_API_VERSION, MODELSERVING_KIND, "default", "added") is not None, timeout=5)
    api.edit_custom(GROUP, "modelservings", "default", "listed", lambda o: o["spec"].update(schedulerName="kai"))
    wait_for(lambda: get_ms(lk, "listed")["spec"]["schedulerName"] == "kai", timeout=5)
    api.delete_custom(GROUP, "modelservings", "default", "added")
    wait_for(lambda: lk.store.cached(MODELSERVING_API_VERSION, MODELSERVING_KIND, "default", "added") is None, timeout=5)
    assert gets(api) == 0  # every answer came from memory
    assert "ModelServing: 1 cached, watching" in lk.describe()


def lists(api: FakeAPI) -> int:
    return len([c for c in api.calls("GET", "/modelservings$") if c.query.get("watch") != "true"])


def test_a_compacted_watch_lists_again(api):
    lk = lookups(api)
    before = lists(api)
    api.fault("GET", "/apis/workload.serving.volcano.sh/v1alpha1/modelservings", 410, watch=True)  # the next watch: 410 Gone
    api.add_custom(ms("after-compaction"))
    wait_for(lambda: lists(api) > before, timeout=8)
    wait_for(lambda: lk.store.cached(MODELSERVING_API_VERSION, MODELSERVING_KIND, "default", "after-compaction") is not None, timeout=8)


def test_the_periodic_resync_lists_again(api):
    lookups(api, resync=1.0)
    first = lists(api)
    wait_for(lambda: lists(api) > first, timeout=5)


def test_a_miss_falls_back_to_one_get_and_404_is_none(api):
    lk = lookups(api, watch=False)
    api.add_custom(ms("fresh"))
    assert get_ms(lk, "fresh")["spec"]["schedulerName"] == "volcano"
    assert get_ms(lk, "gone") is None
    assert lk.get(AUTOSCALINGPOLICY_API_VERSION, AUTOSCALINGPOLICY_KIND, "default", "p") is None
    api.add_custom(policy("p"))
    assert lk.get(AUTOSCALINGPOLICY_API_VERSION, AUTOSCALINGPOLICY_KIND, "default", "p")["metadata"]["name"] == "p"


def test_one_lookup_of_an_object_per_review(api):
    lk = lookups(api, watch=False)
    api.add_custom(ms("owner"))
    review = Context(lookups=lk).for_review().lookups  # what the engine gives each review
    for _ in range(3):
        review.get(MODELSERVING_API_VERSION, MODELSERVING_KIND, "default", "owner")
    assert gets(api) == 1
    api.fail("GET", "/modelservings/broken", 500, "InternalError", "boom")
    review = Context(lookups=lk).for_review().lookups
    for _ in range(2):
        with pytest.raises(LookupFailed, match="HTTP 500"):
            review.get(MODELSERVING_API_VERSION, MODELSERVING_KIND, "default", "broken")
    assert len(api.calls("GET", "/modelservings/broken")) == 1
    with pytest.raises(LookupFailed):  # the next review asks again: an HTTP error is not remembered
        lk.get(MODELSERVING_API_VERSION, MODELSERVING_KIND, "default", "broken")
    assert len(api.calls("GET", "/modelservings/broken")) == 2


def test_kserves_configmap_is_read_by_name_and_projected(api):
    """The one core kind a rule looks up: a GET each time (never listed or kept), cut to
    `data.deploy`; 404 is None and a refusal (no RBAC for it) LookupFailed."""
    lk = lookups(api, watch=False)
    assert lk.get(KSERVE_CONFIGMAP.api_version, KSERVE_CONFIGMAP.kind, "kserve", KSERVE_CONFIG_NAME) is None
    deploy = '{"defaultDeploymentMode": "Standard"}'
    api.configmaps[("kserve", KSERVE_CONFIG_NAME)] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": KSERVE_CONFIG_NAME, "namespace": "kserve", "uid": "u"},
        "data": {"deploy": deploy, "ingress": "{}"},
    }
    found = lk.get(KSERVE_CONFIGMAP.api_version, KSERVE_CONFIGMAP.kind, "kserve", KSERVE_CONFIG_NAME)
    assert found == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": KSERVE_CONFIG_NAME, "namespace": "kserve"}, "data": {"deploy": deploy}}
    assert len(api.calls("GET", "/configmaps/")) == 2
    api.fail("GET", "/configmaps/", 403, "Forbidden", "no")
    with pytest.raises(LookupFailed, match="HTTP 403"):
        lk.get(KSERVE_CONFIGMAP.api_version, KSERVE_CONFIGMAP.kind, "kserve", KSERVE_CONFIG_NAME)


@pytest.mark.parametrize("code", [403, 500])
def test_other_failures_raise_lookup_failed(api, code):
    api.fail("GET", "/modelservings/x", code, "Nope", "no")
    with pytest.raises(LookupFailed, match=f"HTTP {code}"):
        get_ms(lookups(api, watch=False), "x")


def test_a_failing_watch_shows_in_the_state_and_keeps_the_objects(api):
    api.add_custom(ms("kept"))
    lk = lookups(api)
    api.fail("GET", "/modelservings$", 403, "Forbidden", "cannot watch")
    wait_for(lambda: "retrying" in lk.describe(), timeout=8)
    assert "forbidden" in lk.describe() and get_ms(lk, "kept") is not None


@pytest.fixture
def silent():
    s = Silent()
    yield s
    s.close()


def test_a_hanging_api_server_costs_a_review_at_most_the_budget(silent, tmp_path):
    lk = serving_lookups(kubeconfig_for(silent.url, tmp_path / "kubeconfig"), budget=0.5, resync=600)
    _started.append(lk)
    started = time.monotonic()
    review = Context(lookups=lk).for_review().lookups
    for _ in range(2):  # both pod mutators ask for the owner
        with pytest.raises(LookupFailed, match="ReadTimeoutError|TimeoutError"):
            review.get(MODELSERVING_API_VERSION, MODELSERVING_KIND, "default", "owner")
    with pytest.raises(LookupFailed):
        review.get(AUTOSCALINGPOLICY_API_VERSION, AUTOSCALINGPOLICY_KIND, "default", "p")
    # one budget (0.5 s) for the whole review, with room for a loaded machine: were it each ask's,
    # the three asks would take 1.5 s at least
    assert time.monotonic() - started < 1.2
    started = time.monotonic()
    with pytest.raises(LookupFailed, match="no answer"):  # the next review does not wait again
        get_ms(lk, "owner")
    assert time.monotonic() - started < 0.4  # waiting at all would take the whole budget
    assert "not listed yet" in lk.describe()


def test_both_pod_mutators_cost_one_get_per_review(api):
    from webhook.admission.review import make_request
    from webhook.policies import engine

    lk = lookups(api, watch=False)  # nothing cached: every review must GET its owner
    api.add_custom(ms("owner", scheduler="other"))
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "owner-0-prefill-0-0", "namespace": "default", "labels": {"modelserving.volcano.sh/name": "owner"}},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    ctx = Context(lookups=lk)
    for n in (1, 2):
        decision = engine.mutate(make_request(pod), ctx)
        assert decision.patch == [] and gets(api) == n  # left alone: the owner chose another scheduler


def test_cluster_facts_are_listed_and_kinds_not_installed_are_skipped(api):
    from webhook.policies.clusterfacts import ClusterFacts

    api.load(
        nodes=[
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}"}},
                "status": {"allocatable": {"cpu": "8", "huawei.com/ascend-1980": "8"}},
            }
            for i in range(3)
        ]
    )
    api.install_custom("scheduling.volcano.sh", "queues")
    api.add_custom({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "ml"}, "status": {"state": "Open"}})
    lk = lookups(api)
    facts = ClusterFacts(lk.store)
    [one] = facts.node_classes()
    assert one.count == 3 and one.allocatable["huawei.com/ascend-1980"] == 8 and one.hostnames == {"n0", "n1", "n2"}
    assert set(facts.queues() or {}) == {"ml"}
    # KEDA and HyperNodes are not installed here: skipped, and said so once in /readyz's detail
    assert facts.hypernode_tiers() is None and facts.scale_targets("default") == []
    detail = lk.describe()
    assert "ScaledObject: not installed, its checks skipped" in detail and "HyperNode: not installed" in detail
    assert "Node: 3 cached" in detail


def test_check_reads_the_cluster_facts_once_through_a_kubeconfig(api, tmp_path):
    from webhook.check.cluster import cluster_facts
    from webhook.kube import KubeAccessError

    api.load(nodes=[{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0"}, "status": {"allocatable": {"cpu": "8"}}}])
    kubeconfig = kubeconfig_for(api.url, tmp_path / "kubeconfig")
    facts = cluster_facts(kubeconfig=kubeconfig)
    assert [c.count for c in facts.node_classes()] == [1]
    assert facts.queues() is None  # Volcano's Queue CRD is not served here: skipped
    assert not [c for c in api.calls("GET", "/api/v1/nodes") if c.query.get("watch") == "true"]  # listed, never watched
    api.fault("GET", "/api/v1/nodes", 403)
    with pytest.raises(KubeAccessError, match="nodes"):
        cluster_facts(kubeconfig=kubeconfig)


def test_check_with_an_unreachable_cluster_is_one_line(tmp_path):
    from webhook.check.cluster import cluster_facts
    from webhook.kube import KubeAccessError

    with pytest.raises(KubeAccessError) as caught:
        cluster_facts(kubeconfig=kubeconfig_for("http://127.0.0.1:9", tmp_path / "kubeconfig"))
    assert "\n" not in str(caught.value)


def test_a_miss_is_not_here_for_a_review_that_may_not_wait_and_one_get_for_one_that_may(api):
    lk = lookups(api, watch=False)
    api.add_custom(ms("fresh"))
    view = lk.for_review()
    assert view.try_get(MODELSERVING_API_VERSION, MODELSERVING_KIND, "default", "fresh") is NOT_HERE
    assert gets(api) == 0
    assert view.get(MODELSERVING_API_VERSION, MODELSERVING_KIND, "default", "fresh")["metadata"]["name"] == "fresh"
    assert gets(api) == 1


def test_a_deferred_lookup_stops_the_review_before_the_next_rule(api):
    lk = lookups(api, watch=False)
    ctx = Context(lookups=lk).for_review(may_wait=False)
    with pytest.raises(LookupFailed, match="may not wait"):
        ctx.lookups.get(MODELSERVING_API_VERSION, MODELSERVING_KIND, "default", "fresh")
    assert ctx.deferred and gets(api) == 0
    assert not Context(lookups=lk).for_review().deferred
