"""What the reconciler writes first, and that events never wait behind the backlog: the worker
against the fake API server (real HTTP, the official client). No test here is timed: order is
read from the sequence of patches the API server applied, and bounds are generous."""

from __future__ import annotations

import logging
import re
import threading
import urllib.request

from support import free_port

from webhook.config import compose
from webhook.scalein import costs
from webhook.scalein.reconcile import reconciling
from webhook.scalein.settings import COST_KEY, RECORD_KEY, REMOVE_LAST_KEY, ReconcileSettings

NPU = "huawei.com/Ascend910"
ALONE = str(costs.cost(1, 8, 1))  # one 1-NPU pod on an 8-NPU node: -875008
HALF = str(costs.cost(4, 8, 1))  # -500005
FULL = str(costs.cost(8, 8, 1))  # -1


def settings(**kw) -> ReconcileSettings:
    base = dict(enable_scale_in_score=True, scoring_qps=1000, health_port=0, watch_timeout_seconds=1, resync_seconds=0)
    base.update(kw)
    return compose(ReconcileSettings, **base)


def node(name: str, npus: int = 8) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"allocatable": {"cpu": "96", NPU: str(npus)}}}


def pod(name: str, node_name: str, npus: int = 1, annotations: dict | None = None) -> dict:
    meta = {
        "name": name,
        "namespace": "default",
        "uid": f"uid-{name}",
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs", "controller": True}],
    }
    if annotations:
        meta["annotations"] = dict(annotations)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"nodeName": node_name, "containers": [{"name": "c", "resources": {"requests": {NPU: str(npus)}, "limits": {NPU: str(npus)}}}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


def cost_in(ops: list[dict]) -> str:
    """The cost a patch sets: in `/metadata/annotations` when the pod had none, else on its own."""
    for op in ops:
        if op["op"] == "add" and op["path"] == "/metadata/annotations":
            return op["value"][COST_KEY]
        if op["op"] == "add" and op["path"].endswith("pod-deletion-cost"):
            return op["value"]
    raise AssertionError(f"no cost in {ops}")


def written(api) -> list[tuple[str, str]]:
    """(pod key, cost) of every patch the API server applied, in the order it applied them."""
    with api.lock:
        return [(key, cost_in(ops)) for key, ops in api.patches]


def holds(api, want: dict[str, str]) -> bool:
    return all(api.annotations(k).get(COST_KEY) == v and api.annotations(k).get(RECORD_KEY) == v for k, v in want.items())


def test_the_backlog_is_written_lowest_cost_first_not_in_name_order(fake_api, running, waiter):
    """Names sort the other way round from costs: the pods alone on a node (which a scale-in
    removes first) are named z-*, those on the full node a-*."""
    nodes = [node(f"alone-{i}") for i in range(6)] + [node("half-0"), node("half-1"), node("full")]
    pods = [pod(f"z-{i}", f"alone-{i}") for i in range(6)]
    pods += [pod(f"m-{n}-{i}", f"half-{n}") for n in range(2) for i in range(4)]
    pods += [pod(f"a-{i}", "full") for i in range(8)]
    api, api_client = fake_api(nodes, pods)
    running(settings(scoring_qps=5), api_client)  # a burst of 5, then one write every 200 ms
    want = {f"default/{p['metadata']['name']}": {"z": ALONE, "m": HALF, "a": FULL}[p["metadata"]["name"][0]] for p in pods}
    waiter(lambda: holds(api, want), what="every cost written")
    order = written(api)
    assert len(order) == len(pods)  # one write per pod
    # the writers overlap only within a burst, so compare each tier as a set, in sequence
    assert {k for k, _ in order[:6]} == {f"default/z-{i}" for i in range(6)}
    assert {v for _, v in order[6:14]} == {HALF}
    assert {v for _, v in order[14:]} == {FULL}


def test_a_queued_write_keeps_the_latest_value_and_is_dropped_once_it_no_longer_differs(fake_api, running, waiter):
    """The first writes are held at the API server's door while the cluster changes under the
    queue: a pod whose cost moved is written once, with the new value; a pod deleted, and one
    someone else already set to our value, are never patched at all."""
    nodes = [node(f"alone-{i}") for i in range(6)] + [node("target")]
    pods = [pod(f"cheap-{i}", f"alone-{i}") for i in range(6)] + [pod(f"t-{i}", "target") for i in range(8)]
    api, api_client = fake_api(nodes, pods)
    api.hold_writes()
    try:
        r = running(settings(), api_client)
        waiter(lambda: api.writes_waiting == 4 and r.rec.writes.size() == len(pods) - 4, what="4 writes held, the rest queued")
        api.delete_pod("default/t-0")  # target: 7 of 8 used; t-1..t-7 waited at -1, now need 7/8's cost
        after = str(costs.cost(7, 8, 1))
        api.edit_pod("default/t-1", lambda p: p["metadata"].setdefault("annotations", {}).update({COST_KEY: after, RECORD_KEY: after}))

        def queued() -> dict[str, int]:
            with r.rec.writes.cond:
                return {k: e.value for k, e in r.rec.writes.entries.items()}

        waiter(
            lambda: queued() == {"default/cheap-4": int(ALONE), "default/cheap-5": int(ALONE), **{f"default/t-{i}": int(after) for i in range(2, 8)}},
            what="the queue follows the cluster",
        )
    finally:
        api.release_writes()
    want = {f"default/cheap-{i}": ALONE for i in range(6)} | {f"default/t-{i}": after for i in range(1, 8)}
    waiter(lambda: holds(api, want), what="every cost written")
    waiter(lambda: r.rec.writes.idle(), what="nothing left to write")
    order = written(api)
    assert sorted(k for k, _ in order) == sorted([f"default/cheap-{i}" for i in range(6)] + [f"default/t-{i}" for i in range(2, 8)])
    assert [v for k, v in order if k.startswith("default/t-")] == [after] * 6  # once each, never the stale -1
    assert not api.calls("PATCH", r"/pods/t-[01]$")  # deleted, or already right: no request at all


def test_an_event_is_written_while_a_long_backlog_drains(fake_api, waiter):
    """`reconcile` as `main` runs it, at 2 writes a second with 41 pods to write (about 20 s): a
    pod placed once the drain has begun gets its cost long before the backlog is done, although
    by cost it would come last, and /healthz stays ok throughout. The metrics show the backlog
    and the event's latency."""
    nodes = [node(f"half-{n}") for n in range(10)] + [node("fresh")]
    pods = [pod(f"p-{n}-{i}", f"half-{n}") for n in range(10) for i in range(4)] + [pod("big", "fresh", 7)]
    api, api_client = fake_api(nodes, pods)
    port, stop = free_port(), threading.Event()
    result: list[int] = []
    thread = threading.Thread(
        target=lambda: result.append(reconciling.run(settings(scoring_qps=2, health_host="127.0.0.1", health_port=port), api_client, stop)), daemon=True
    )
    thread.start()
    try:
        waiter(lambda: len(api.patches) >= 1, what="the drain began")
        assert get(port, "/healthz") == "ok\n"
        metrics = get(port, "/metrics")
        assert metric(metrics, "servinggate_scalein_write_backlog") >= 20
        api.add_pod(pod("new-pod", "fresh"))
        waiter(lambda: any(k == "default/new-pod" for k, _ in written(api)), what="the new pod's cost")
        order = written(api)
        position = [k for k, _ in order].index("default/new-pod")
        assert position < 20, f"the event waited behind {position} backlog writes"
        assert dict(order)["default/new-pod"] == FULL  # the node is full now: by cost it would go last
        assert get(port, "/healthz") == "ok\n"  # draining is work, not a fault
        # The writer records the event's latency once its PATCH is answered, a moment after the
        # fake API server saw the PATCH (a race a loaded machine lost): wait for it, then read.
        waiter(lambda: metric(get(port, "/metrics"), "servinggate_scalein_event_to_write_seconds_count") >= 1, what="the event's write latency")
        metrics = get(port, "/metrics")
        assert metric(metrics, "servinggate_scalein_write_backlog") >= 1
        assert metric(metrics, "servinggate_scalein_write_backlog_oldest_seconds") > 0
    finally:
        stop.set()
        thread.join(20)
    assert result == [0]


def get(port: int, path: str) -> str:
    return urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5).read().decode()


def metric(text: str, name: str) -> float:
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    assert m, f"{name} not exported"
    return float(m.group(1))


def test_one_log_line_when_a_full_pass_has_converged(s1, fake_api, running, waiter, caplog):
    caplog.set_level(logging.INFO, logger="servinggate.scalein")
    api, api_client = fake_api(s1["nodes"]["items"], s1["pods"]["items"])
    r = running(settings(), api_client)

    def converged_lines() -> list[dict]:
        return [rec.msg for rec in caplog.records if isinstance(rec.msg, dict) and str(rec.msg.get("msg", "")).startswith("full pass converged")]

    waiter(lambda: converged_lines(), what="the convergence line")
    line = converged_lines()[0]
    assert line["writes"] == len(api.pods) and line["seconds"] >= 0
    assert r.sample("servinggate_scalein_last_convergence_seconds") == line["seconds"] or r.sample("servinggate_scalein_last_convergence_seconds") > 0
    victim = next(k for k, p in api.pods.items() if p["spec"]["nodeName"] == "node-b")
    done = len(api.patches)
    api.delete_pod(victim)  # an event: its writes are not a full pass, so no second line
    waiter(lambda: len(api.patches) >= done + 3, what="node-b re-scored")
    waiter(lambda: r.rec.writes.idle(), what="nothing left to write")
    assert len(converged_lines()) == 1


def test_remove_last_is_written_and_follows_the_annotation(s1, fake_api, running, waiter):
    pods = [dict(p, metadata=dict(p["metadata"])) for p in s1["pods"]["items"]]
    pods[0]["metadata"]["annotations"] = {REMOVE_LAST_KEY: "true"}
    api, api_client = fake_api(s1["nodes"]["items"], pods)
    running(settings(), api_client)
    first, second = (f"default/{p['metadata']['name']}" for p in pods[:2])
    top = str(costs.REMOVE_LAST_COST)
    waiter(lambda: api.annotations(first).get(COST_KEY) == top, what="the protected pod's top cost")
    waiter(lambda: COST_KEY in api.annotations(second), what="the others' costs")
    api.edit_pod(second, lambda p: p["metadata"].setdefault("annotations", {}).update({REMOVE_LAST_KEY: "true"}))
    waiter(lambda: api.annotations(second).get(COST_KEY) == top, what="protected by an event")
    api.edit_pod(first, lambda p: p["metadata"]["annotations"].pop(REMOVE_LAST_KEY))
    waiter(lambda: api.annotations(first).get(COST_KEY) not in (None, top), what="unprotected again")
