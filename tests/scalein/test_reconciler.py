"""The reconciler against a fake API server, through the official client over real HTTP."""

from __future__ import annotations

import copy
import logging
import threading
import time
import urllib.error
import urllib.request

import pytest
from kubernetes import client
from support import free_port

from webhook.config import compose
from webhook.kube.leases import LeaderElector
from webhook.scalein.reconcile import reconciling
from webhook.scalein.settings import COST_KEY, RECORD_KEY, ReconcileSettings

NODE_B = "-500005"  # S1: node-b 4/8 used, one NPU per pod -> 5 idle after removal
NODE_A = "-1"  # S1: node-a full


def settings(**kw) -> ReconcileSettings:
    base = dict(enable_scale_in_score=True, scoring_qps=1000, health_port=0, watch_timeout_seconds=1, resync_seconds=0)
    base.update(kw)
    return compose(ReconcileSettings, **base)


def expected_s1(api) -> dict:
    return {k: NODE_B if p["spec"]["nodeName"] == "node-b" else NODE_A for k, p in api.pods.items()}


def converged(api, want: dict) -> bool:
    return all(api.annotations(k).get(COST_KEY) == v and api.annotations(k).get(RECORD_KEY) == v for k, v in want.items())


def test_writes_costs_with_guarded_json_patches(s1, fake_api, running, waiter):
    api, api_client = fake_api(s1["nodes"]["items"], s1["pods"]["items"])
    r = running(settings(), api_client)
    want = expected_s1(api)
    waiter(lambda: converged(api, want), what="S1 costs")
    patches = [(c.method, c.content_type) for c in api.requests if c.method == "PATCH"]
    assert patches and all(ct == "application/json-patch+json" for _, ct in patches)
    for _, ops in api.patches:
        assert ops[0]["op"] == "test"  # every write is guarded
    assert len(api.patches) == len(want)  # one write per pod, none repeated
    # the counter moves once the answer is back, a moment after the fake API applied the patch
    written = lambda: r.metrics.registry.get_sample_value("servinggate_scalein_writes_total", {"kind": "write"})  # noqa: E731
    waiter(lambda: written() == len(want), what="write counter")
    assert written() == len(want) and len(api.patches) == len(want)


def test_one_pod_event_rescores_only_its_node(s1, fake_api, running, waiter):
    api, api_client = fake_api(s1["nodes"]["items"], s1["pods"]["items"])
    running(settings(), api_client)
    waiter(lambda: converged(api, expected_s1(api)), what="S1 costs")
    done = len(api.patches)
    victim = next(k for k, p in api.pods.items() if p["spec"]["nodeName"] == "node-b")
    api.delete_pod(victim)
    rest_b = [k for k, p in api.pods.items() if p["spec"]["nodeName"] == "node-b"]
    # node-b: 3/8 used -> level 375, idle after removal 6
    waiter(lambda: all(api.annotations(k).get(COST_KEY) == "-625006" for k in rest_b), what="node-b re-scored")
    assert sorted(k for k, _ in api.patches[done:]) == sorted(rest_b)


def test_concurrent_edit_fails_the_test_op_then_rereads(s1, fake_api, running, waiter):
    api, api_client = fake_api(s1["nodes"]["items"], s1["pods"]["items"])
    target = sorted(api.pods)[0]

    def someone_else(api):  # lands between our read and our patch of that very pod
        api.edit_pod(target, lambda p: p["metadata"].setdefault("annotations", {}).update({COST_KEY: "77"}))

    ns, _, name = target.partition("/")
    api.before.append(("PATCH", f"^/api/v1/namespaces/{ns}/pods/{name}$", someone_else))
    r = running(settings(scale_in_priority="wl"), api_client)
    want = {k: v for k, v in expected_s1(api).items() if k != target}
    waiter(lambda: converged(api, want), what="costs except the edited pod")
    waiter(lambda: r.metrics.registry.get_sample_value("servinggate_scalein_conflicts_total") >= 1, what="conflict counted")
    waiter(lambda: api.count("GET", f"/api/v1/namespaces/{ns}/pods/{name}") >= 1, what="re-read")
    waiter(lambda: (r.metrics.registry.get_sample_value("servinggate_scalein_skips_total", {"reason": "foreign"}) or 0) >= 1, what="foreign skip")
    assert api.annotations(target).get(COST_KEY) == "77"  # wl: theirs is kept, never lost
    assert not [k for k, _ in api.patches if k == target]  # the refused patch was never resent


def test_binpack_overwrites_a_foreign_value(s1, fake_api, running, waiter):
    pods = copy.deepcopy(s1["pods"]["items"])
    pods[0]["metadata"].setdefault("annotations", {})[COST_KEY] = "77"
    api, api_client = fake_api(s1["nodes"]["items"], pods)
    running(settings(scale_in_priority="binpack"), api_client)
    waiter(lambda: converged(api, expected_s1(api)), what="S1 costs")
    key = f"{pods[0]['metadata']['namespace']}/{pods[0]['metadata']['name']}"
    ops = next(ops for k, ops in api.patches if k == key)
    assert {"op": "test", "path": "/metadata/annotations/controller.kubernetes.io~1pod-deletion-cost", "value": "77"} in ops


def test_409_429_and_5xx_are_survived(s1, fake_api, running, waiter):
    api, api_client = fake_api(s1["nodes"]["items"], s1["pods"]["items"])
    api.fault("PATCH", "/api/v1/namespaces/", 409)
    api.fault("PATCH", "/api/v1/namespaces/", 429, headers={"Retry-After": "1"})
    api.fault("PATCH", "/api/v1/namespaces/", 503)
    api.fault("GET", "/api/v1/pods", 500, watch=False)
    r = running(settings(), api_client)
    waiter(lambda: converged(api, expected_s1(api)), what="S1 costs despite faults")
    m = r.metrics.registry
    assert m.get_sample_value("servinggate_scalein_errors_total", {"op": "patch", "code": "429"}) == 1
    assert m.get_sample_value("servinggate_scalein_errors_total", {"op": "patch", "code": "503"}) == 1
    assert m.get_sample_value("servinggate_listwatch_errors_total", {"resource": "pods", "code": "500"}) == 1
    assert m.get_sample_value("servinggate_scalein_conflicts_total") >= 1
    assert api.count("PATCH", "/api/v1/namespaces/") == len(api.pods) + 3


def test_410_gone_on_watch_lists_again(s1, fake_api, running, waiter):
    api, api_client = fake_api(s1["nodes"]["items"], s1["pods"]["items"])
    api.fault("GET", "/api/v1/pods", 410, watch=True)
    r = running(settings(), api_client)
    waiter(lambda: converged(api, expected_s1(api)), what="S1 costs")
    waiter(lambda: r.metrics.registry.get_sample_value("servinggate_listwatch_lists_total", {"resource": "pods"}) >= 2, what="re-list")
    assert api.count("GET", "/api/v1/pods", watch="true") >= 1
    lists = [c.query for c in api.requests if c.method == "GET" and c.path == "/api/v1/pods" and c.query.get("watch") != "true"]
    assert len(lists) >= 2


def test_dry_run_writes_nothing(s1, fake_api, running, waiter):
    api, api_client = fake_api(s1["nodes"]["items"], s1["pods"]["items"])
    r = running(settings(dry_run=True), api_client)
    waiter(
        lambda: (r.metrics.registry.get_sample_value("servinggate_scalein_skips_total", {"reason": "dry-run"}) or 0) >= len(api.pods), what="dry-run decisions"
    )
    assert api.count("PATCH", "/") == 0


def test_halt_wakes_the_worker_writers_and_poster_at_once(s1, fake_api, running, waiter):
    api, api_client = fake_api(s1["nodes"]["items"], s1["pods"]["items"])
    r = running(settings(), api_client)
    waiter(lambda: api.count("PATCH", "/") >= len(api.pods) and r.rec.writes.idle(), what="every cost written")
    time.sleep(1.2)  # every thread is now in its idle wait: 1 s for the worker, 0.5 s for the poster
    r.rec.halt()  # and for each writer, one after another (they take turns), so 2 s for four
    deadline = time.monotonic() + 0.4
    waited = [r.thread, *r.rec.writer_threads, *(t for t in r.rec.threads if t.name == "events")]
    for t in waited:
        t.join(max(0.0, deadline - time.monotonic()))
    assert [t.name for t in waited if t.is_alive()] == []


# ---- enable-scale-in-score: false writes nothing ------------------------------------------------
#
# "No PATCH arrived" proves something only once the reconciler would have written by then. So each
# test first measures, on an identical fake cluster with scoring enabled, how long the reconciler
# takes to write every cost, then gives the disabled one at least twice that, plus a margin, and
# checks on the way that it is alive and (where it lists at all) has listed.

MARGIN_SECONDS = 1.0


def seconds_to_write_every_cost(api, waiter, start) -> float:
    """Run `start()` (a reconciler with scoring on) against `api`; the seconds until every cost is written."""
    started = time.monotonic()
    start()
    waiter(lambda: converged(api, expected_s1(api)), what="every cost written with scoring enabled")
    took = time.monotonic() - started
    assert len(api.patches) == len(api.pods)
    return took


def assert_no_patch_until(api, deadline: float) -> None:
    while time.monotonic() < deadline:
        assert api.count("PATCH", "/") == 0, f"scoring is disabled, yet {api.patches[:1]} was written"
        time.sleep(0.05)
    assert api.count("PATCH", "/") == 0
    assert not any(COST_KEY in api.annotations(k) or RECORD_KEY in api.annotations(k) for k in list(api.pods))


def healthz(port: int) -> bytes | None:
    try:
        return urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2).read()
    except OSError:
        return None


def test_scoring_disabled_writes_nothing_through_the_command(s1, fake_api, fake_api_factory, waiter):
    """`reconcile` as `main` runs it (`reconciling.run`): with enable-scale-in-score false it
    stays up, healthy, and writes nothing for longer than the enabled run needed to write it all."""
    nodes, pods = s1["nodes"]["items"], s1["pods"]["items"]
    threads: list[tuple[threading.Event, threading.Thread, list]] = []

    def start(api_client, **kw) -> tuple[threading.Thread, list]:
        stop, result = threading.Event(), []
        t = threading.Thread(target=lambda: result.append(reconciling.run(settings(**kw), api_client, stop)), daemon=True)
        t.start()
        threads.append((stop, t, result))
        return t, result

    try:
        enabled, enabled_client = fake_api(nodes, pods)
        took = seconds_to_write_every_cost(enabled, waiter, lambda: start(enabled_client))

        disabled, disabled_client = fake_api_factory()(nodes, pods)
        port = free_port()
        started = time.monotonic()
        thread, result = start(disabled_client, enable_scale_in_score=False, health_host="127.0.0.1", health_port=port)
        waiter(lambda: healthz(port) == b"ok\n", what="the disabled reconciler's /healthz")
        assert_no_patch_until(disabled, started + 2 * took + MARGIN_SECONDS)
        assert thread.is_alive() and healthz(port) == b"ok\n"  # still running: it chose not to write
    finally:
        for stop, _, _ in threads:
            stop.set()
        for _, t, _ in threads:
            t.join(10)
    assert not thread.is_alive() and result == [0]
    assert disabled.count("PATCH", "/") == 0


def test_run_returns_only_when_its_writers_have_stopped(s1, fake_api, waiter):
    """`reconcile` stopped mid-work: `run` returns after its writer threads finished, so none is
    left sending a patch, or logging about one, once the command has returned."""
    api, api_client = fake_api(s1["nodes"]["items"], s1["pods"]["items"])
    stop, result = threading.Event(), []
    thread = threading.Thread(target=lambda: result.append(reconciling.run(settings(scoring_qps=5), api_client, stop)), daemon=True)
    before = set(threading.enumerate())
    thread.start()
    try:
        waiter(lambda: len(api.patches) >= 1, what="the first write")
        writers = [t for t in set(threading.enumerate()) - before if t.name.startswith("writer-")]
        assert writers  # the command's own writer threads, started by this run
    finally:
        stop.set()
        thread.join(20)
    assert result == [0]
    assert not [t.name for t in writers if t.is_alive()]


def test_scoring_disabled_decides_every_pod_and_patches_none(s1, fake_api, fake_api_factory, running, waiter):
    """The guard in the per-pod write decision, without `run`'s early exit in front of it: the
    reconciler lists, scores and decides every pod, and still sends no PATCH."""
    nodes, pods = s1["nodes"]["items"], s1["pods"]["items"]
    enabled, enabled_client = fake_api(nodes, pods)
    took = seconds_to_write_every_cost(enabled, waiter, lambda: running(settings(), enabled_client))

    disabled, disabled_client = fake_api_factory()(nodes, pods)
    started = time.monotonic()
    r = running(settings(enable_scale_in_score=False), disabled_client)
    waiter(lambda: all(r.worker.synced.values()), what="nodes and pods listed into the cache")
    assert {c.path for c in disabled.calls("GET", r"^/api/v1/(nodes|pods)$") if "watch" not in c.query} == {"/api/v1/nodes", "/api/v1/pods"}
    assert_no_patch_until(disabled, started + 2 * took + MARGIN_SECONDS)
    held_back = r.metrics.registry.get_sample_value("servinggate_scalein_skips_total", {"reason": "disabled"})
    assert held_back is not None and held_back >= len(disabled.pods)  # every pod reached the write decision


def test_not_leader_writes_nothing(s1, fake_api, running, waiter):
    api, api_client = fake_api(s1["nodes"]["items"], s1["pods"]["items"])
    r = running(settings(), api_client, may_write=lambda: False)
    waiter(lambda: (r.metrics.registry.get_sample_value("servinggate_scalein_skips_total", {"reason": "not-leader"}) or 0) >= len(api.pods), what="skips")
    assert api.count("PATCH", "/") == 0


def test_clear_removes_only_our_costs(s1, fake_api):
    pods = copy.deepcopy(s1["pods"]["items"])
    pods[0]["metadata"]["annotations"] = {COST_KEY: "-5", RECORD_KEY: "-5"}
    pods[1]["metadata"]["annotations"] = {COST_KEY: "100", RECORD_KEY: "-5"}
    pods[2]["metadata"]["annotations"] = {COST_KEY: "100"}
    api, api_client = fake_api(s1["nodes"]["items"], pods)
    k = [f"default/{p['metadata']['name']}" for p in pods[:3]]
    api.fault("PATCH", "/api/v1/namespaces/", 429, headers={"Retry-After": "0"})
    assert reconciling.run(settings(), api_client, threading.Event(), clear=True) == 0
    assert COST_KEY not in api.annotations(k[0]) and RECORD_KEY not in api.annotations(k[0])
    assert api.annotations(k[1]) == {COST_KEY: "100"}
    assert api.annotations(k[2]) == {COST_KEY: "100"}
    assert len(api.patches) == 2


def test_third_party_types_through_discovery(s1, fake_api, running, waiter):
    pods = copy.deepcopy(s1["pods"]["items"])
    for p in pods:
        if p["metadata"]["name"].startswith("filler"):
            p["metadata"]["ownerReferences"] = [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "filler", "uid": "x", "controller": True}]
    api, api_client = fake_api(s1["nodes"]["items"], pods)
    api.discovery["apps.kruise.io/v1alpha1"] = {
        "kind": "APIResourceList",
        "groupVersion": "apps.kruise.io/v1alpha1",
        "resources": [{"name": "clonesets", "kind": "CloneSet", "namespaced": True}],
    }
    s = settings(third_party_types=("apps.kruise.io/v1alpha1/clonesets", "example.com/v1/widgets"))
    running(s, api_client)
    waiter(lambda: converged(api, expected_s1(api)), what="CloneSet pods scored too")
    assert api.count("GET", "/apis/example.com/v1") == 1  # not served: warned, the rest went on


def test_health_and_metrics_endpoint():
    m = reconciling.Metrics()
    m.writes.labels("write").inc()
    healthy = [True]
    server = reconciling.serve_health("127.0.0.1", 0, lambda: healthy[0], m)
    try:
        port = server.server_address[1]
        assert urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz").read() == b"ok\n"
        healthy[0] = False  # the kubelet must see the failure as a status, not only in the body
        with pytest.raises(urllib.error.HTTPError) as failed:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz")
        assert failed.value.code == 503
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/nothing")
        assert missing.value.code == 404
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
        for name in (
            "servinggate_scalein_writes_total",
            "servinggate_scalein_skips",
            "servinggate_scalein_conflicts",
            "servinggate_scalein_errors",
            "servinggate_scalein_pods_scored",
            "servinggate_scalein_pass_duration_seconds",
        ):
            assert name in body
    finally:
        server.shutdown()
        server.server_close()


# ---- leader election --------------------------------------------------------------------------


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def elector(api_client, identity, clock):
    return LeaderElector(
        client.CoordinationV1Api(api_client), name="sg", namespace="ns", identity=identity, lease_duration=15, renew_deadline=10, retry_period=2, clock=clock
    )


def test_lease_acquire_renew_expire_takeover(fake_api):
    api, api_client = fake_api([], [])
    clock = Clock()
    a, b = elector(api_client, "a", clock), elector(api_client, "b", clock)
    assert a.try_acquire_or_renew() and a.is_leader()
    lease = api.leases["sg"]["spec"]
    assert lease["holderIdentity"] == "a" and lease["leaseTransitions"] == 0 and lease["leaseDurationSeconds"] == 15
    assert "." in lease["renewTime"] and "." in lease["acquireTime"]  # MicroTime keeps its fraction
    assert not b.try_acquire_or_renew()  # a holds a live lease
    clock.t += 5
    acquired = lease["acquireTime"]
    assert a.try_acquire_or_renew()  # renew
    assert api.leases["sg"]["spec"]["acquireTime"] == acquired
    assert not b.try_acquire_or_renew()  # b saw the record change: not expired
    clock.t += 16  # a stops renewing; b sees no change for longer than the duration
    assert not a.is_leader()
    assert b.try_acquire_or_renew() and b.is_leader()
    spec = api.leases["sg"]["spec"]
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1


def test_lease_optimistic_concurrency_and_release(fake_api):
    api, api_client = fake_api([], [])
    clock = Clock()
    a, b = elector(api_client, "a", clock), elector(api_client, "b", clock)
    assert a.try_acquire_or_renew()
    api.fault("PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/sg", 409)
    clock.t += 5
    assert not a.try_acquire_or_renew()  # lost the write race: no renewal recorded
    a.release()
    assert not api.leases["sg"]["spec"].get("holderIdentity")
    assert b.try_acquire_or_renew()  # released: no need to wait for expiry
    assert api.leases["sg"]["spec"]["leaseTransitions"] == 1


# ---- HyperNodes and other writers, end to end ----------------------------------------------------


def test_hypernodes_in_the_cluster_order_costs_by_hypernode_and_follow_its_edits(fake_api, running, waiter):
    from support.topology import HYPERNODES, NODES, PODS, exact, hypernode

    from webhook.scalein import costs
    from webhook.scalein.plan import planning

    api, api_client = fake_api(NODES, PODS)
    for hn in HYPERNODES:
        api.add_custom(hn)
    running(settings(), api_client)
    by_hn = {k: str(v) for k, v in planning.make_cluster(settings().scoring, NODES, PODS, HYPERNODES).desired_all().items()}
    by_node = {k: str(v) for k, v in planning.make_cluster(settings().scoring, NODES, PODS, []).desired_all().items()}
    assert by_hn != by_node
    waiter(lambda: converged(api, by_hn), what="costs by HyperNode")
    # hn-b loses n4: n4 now ranks by node alone, and hn-b's rank changes
    edited = hypernode("hn-b", 1, exact("n3"))
    api.add_custom(edited)
    want = {k: str(v) for k, v in planning.make_cluster(settings().scoring, NODES, PODS, [HYPERNODES[0], edited, HYPERNODES[2]]).desired_all().items()}
    waiter(lambda: converged(api, want), what="costs after the HyperNode edit")
    assert api.annotations("default/b4-0")[COST_KEY] == str(costs.in_hypernode(int(by_node["default/b4-0"]), 0))  # in no HyperNode now


def test_without_the_hypernode_crd_costs_order_by_node(fake_api, running, waiter):
    from support.topology import NODES, PODS

    from webhook.scalein.plan import planning

    api, api_client = fake_api(NODES, PODS)
    r = running(settings(), api_client)
    by_node = {k: str(v) for k, v in planning.make_cluster(settings().scoring, NODES, PODS, []).desired_all().items()}
    waiter(lambda: converged(api, by_node), what="costs by node")
    assert api.count("GET", "/apis/topology.volcano.sh/v1alpha1/hypernodes") >= 1
    # a missing CRD is no error, and no watch is tried on it
    assert r.sample("servinggate_listwatch_errors_total", {"resource": "hypernodes", "code": "404"}) == 0
    assert api.count("GET", "/apis/topology.volcano.sh/v1alpha1/hypernodes", watch="true") == 0


def test_node_scope_never_asks_for_hypernodes(s1, fake_api, running, waiter):
    api, api_client = fake_api(s1["nodes"]["items"], s1["pods"]["items"])
    running(settings(compaction_scope="node"), api_client)
    waiter(lambda: converged(api, expected_s1(api)), what="S1 costs")
    assert api.count("GET", "/apis/topology.volcano.sh") == 0


def test_a_writer_that_keeps_changing_a_cost_gets_one_overwrite_and_an_event(s1, fake_api, running, waiter):
    api, api_client = fake_api(s1["nodes"]["items"], s1["pods"]["items"])
    api.fault("POST", "/api/v1/namespaces/default/events", 201, body={"kind": "Event", "apiVersion": "v1", "metadata": {"name": "e"}}, times=5)
    r = running(settings(), api_client)
    waiter(lambda: converged(api, expected_s1(api)), what="S1 costs")
    victim = next(k for k, p in api.pods.items() if p["spec"]["nodeName"] == "node-b")
    patched = lambda: sum(1 for key, _ in api.patches if key == victim)  # noqa: E731
    assert patched() == 1
    api.edit_pod(victim, lambda p: p["metadata"]["annotations"].update({COST_KEY: "-9"}))
    waiter(lambda: api.annotations(victim)[COST_KEY] == NODE_B, what="one overwrite")
    for value in ("-8", "-7", "-6"):
        api.edit_pod(victim, lambda p, v=value: p["metadata"]["annotations"].update({COST_KEY: v}))
    waiter(lambda: len(api.calls("POST", "/events$")) == 1, what="the Event")
    waiter(lambda: r.sample("servinggate_scalein_contested_pods") == 1, what="the gauge")
    time.sleep(0.5)  # a real reconciler: give it time to (wrongly) write again
    assert patched() == 2 and api.annotations(victim)[COST_KEY] == "-6"


def test_a_reconciler_not_allowed_to_read_hypernodes_orders_by_node(fake_api, running, waiter, caplog):
    from support.topology import HYPERNODES, NODES, PODS

    from webhook.scalein.plan import planning

    api, api_client = fake_api(NODES, PODS)
    for hn in HYPERNODES:
        api.add_custom(hn)
    api.fail("GET", r"^/apis/topology\.volcano\.sh/", 403, "Forbidden", "hypernodes is forbidden")
    caplog.set_level(logging.INFO, "servinggate.scalein")
    running(settings(), api_client)
    by_node = {k: str(v) for k, v in planning.make_cluster(settings().scoring, NODES, PODS, []).desired_all().items()}
    waiter(lambda: converged(api, by_node), what="costs by node")
    waiter(lambda: api.count("GET", "/apis/topology.volcano.sh/v1alpha1/hypernodes") >= 3, what="asked again")
    assert sum("no HyperNodes to read" in r.getMessage() for r in caplog.records) == 1
