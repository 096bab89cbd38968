"""Faults beside the real stack: Kthena's controller restarted mid scale-in, and the API server
restarted mid scale-in, with our webhook and reconciler running. Nothing is lost: the ServingGroups
Kthena keeps are whole, their pods the ones from before (none deleted that should live), nothing is
left of the groups it removed (pods, PodGroups), and a scale-up afterwards makes a whole group
through our webhook. The time from the fault to that settled state is printed (`settle`).

Mid scale-in: every pod carries a finalizer of ours before `spec.replicas` goes 4 -> 2, so the pods
Kthena deletes stay terminating (as through a grace period on a kubelet; KWOK deletes a pod without
finalizers at once) until the fault, and the finalizers go around it.

How to restart a component depends on the cluster, so the command comes from the environment
(`SERVINGGATE_E2E_RESTART_KTHENA`, `SERVINGGATE_E2E_RESTART_APISERVER`: a shell command that returns
once the component was started again; docs/e2e.md); unset, the test skips and names the variable."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from support.e2e import (
    NODE_OWNER,
    RESTART_ENV,
    Cluster,
    OurReconciler,
    OurWebhook,
    answering,
    hold,
    modelserving,
    poll,
    release,
    restart,
    restart_command,
    role,
    running_ready,
)

GROUP = "modelserving.volcano.sh/group-name"
PODGROUP = "scheduling.k8s.io/group-name"
NAME = "modelserving.volcano.sh/name=llm"
PER_GROUP = 3  # prefill: an entry and a worker; decode: an entry
STEADY = 10.0  # seconds the settled state must hold


def serving(owner: str, replicas: int) -> dict:
    sel = {NODE_OWNER: owner}
    roles = [role("prefill", workers=1, npu=1, node_selector=sel), role("decode", npu=1, node_selector=sel)]
    return modelserving("llm", replicas, roles)


def whole(cluster: Cluster, ns: str, count: int) -> dict[str, dict[str, str]] | None:
    """group -> {pod name: uid} once exactly `count` ServingGroups are whole and running, each pod
    annotated with its PodGroup, no pod of the ModelServing terminating, and a PodGroup for each
    group and no other; else None."""
    groups: dict[str, dict[str, str]] = {}
    for pod in cluster.pods(ns, NAME):
        if pod.metadata.deletion_timestamp is not None or not running_ready(pod):
            return None
        if (pod.metadata.annotations or {}).get(PODGROUP) != pod.metadata.labels[GROUP]:
            return None
        groups.setdefault(pod.metadata.labels[GROUP], {})[pod.metadata.name] = pod.metadata.uid
    if len(groups) != count or any(len(pods) != PER_GROUP for pods in groups.values()):
        return None
    if {pg["metadata"]["name"] for pg in cluster.podgroups(ns)} != set(groups):
        return None
    return groups


def steady(pred: Callable[[], Any], window: float, timeout: float) -> tuple[Any, float]:
    """(value, when it first held) once `pred()` has returned the same truthy value for `window`
    seconds on end: the settled state, not a pass through it (after an API server restart the node
    controller may mark pods not ready for a while, before KWOK's next heartbeat)."""
    deadline = time.monotonic() + timeout
    value, since = None, 0.0
    while time.monotonic() < deadline:
        now, got = time.monotonic(), pred()
        if not got or got != value:
            value, since = got, now
        elif now - since >= window:
            return value, since
        time.sleep(0.5)
    raise AssertionError(f"not steady for {window:.0f}s within {timeout:.0f}s")


def describe(cluster: Cluster, ns: str) -> str:
    """The ModelServing's pods and the PodGroups, for a failure message."""
    pods = [
        f"{p.metadata.name}({p.status.phase}{',ready' if running_ready(p) else ''}{',terminating' if p.metadata.deletion_timestamp else ''}"
        f"{',annotated' if (p.metadata.annotations or {}).get(PODGROUP) else ''})"
        for p in cluster.pods(ns, NAME)
    ]
    return f"pods {sorted(pods)}; podgroups {sorted(pg['metadata']['name'] for pg in cluster.podgroups(ns))}"


def scale_in_through(cluster: Cluster, ns: str, fault: Callable[[], float], what: str) -> str:
    """4 ServingGroups, all pods held; 4 -> 2; once Kthena has deleted two groups' pods, `fault()`;
    then the checks of the module doc, but for one returned: what replaced the pods of a group
    that should have lived ("" when nothing did). `fault` releases the held pods around the restart."""
    for i in range(2):
        cluster.node(f"{ns}-n{i}", ns, npu=8)
    cluster.create_ms(ns, serving(ns, 4))
    pods = poll(lambda: (ps := cluster.pods(ns)) and len(ps) == 4 * PER_GROUP and all(map(running_ready, ps)) and ps, 180, "12 pods Running")
    hold(cluster, ns, [p.metadata.name for p in pods])
    try:
        cluster.patch_ms(ns, "llm", {"spec": {"replicas": 2}})
        doomed = poll(
            lambda: len(gone := {p.metadata.labels[GROUP] for p in cluster.pods(ns, NAME) if p.metadata.deletion_timestamp}) == 2 and gone,
            60,
            "Kthena deleting two groups",
        )
        live: dict[str, dict[str, str]] = {}
        for p in pods:
            if p.metadata.labels[GROUP] not in doomed:
                live.setdefault(p.metadata.labels[GROUP], {})[p.metadata.name] = p.metadata.uid
        start = time.monotonic()
        took = fault()
        try:
            kept, since = steady(answering(lambda: whole(cluster, ns, 2)), STEADY, 240)
        except AssertionError as exc:
            raise AssertionError(f"{exc} (two whole groups after {what}); Kthena deleted {sorted(doomed)}; now: {describe(cluster, ns)}") from None
        settle = since - start
    finally:
        poll(answering(lambda: release(cluster, ns) or True), 60, "finalizers released")
    print(f"settle after {what}: {settle:.1f}s (restart command {took:.1f}s)")
    # Kthena and our webhook answer again: a scale-up makes a whole group, through our webhook
    cluster.patch_ms(ns, "llm", {"spec": {"replicas": 3}})
    poll(lambda: whole(cluster, ns, 3), 120, "a third whole group")
    # the same pods: none deleted that should live, none recreated
    if kept == live:
        return ""
    before = {p.metadata.uid for p in pods}
    now = {g: sorted("old" if u in before else "new" for u in ps.values()) for g, ps in kept.items()}
    return f"Kthena had deleted {sorted(doomed)} and kept {sorted(live)}; after {what}: {now}"


def restarted_mid_scale_in(cluster: Cluster, need, ns: str, component: str, what: str, fault: Callable[[str], float], *running: Any) -> None:
    """Both fault tests: skip without a command to restart `component`; else the scale-in of
    `scale_in_through` with `fault(command)` in its middle, then each of `running` still alive
    and no ServingGroup replaced. `what` names the restart in messages."""
    need("kthena", "volcano-controllers", "volcano-scheduler", "kwok", "held-pods")
    command = restart_command(component)
    if command is None:
        pytest.skip(f"{RESTART_ENV[component]} is not set: no command for {what} (docs/e2e.md)")
    replaced = scale_in_through(cluster, ns, lambda: fault(command), what)
    for process in running:
        process.alive()
    assert not replaced, replaced


@pytest.mark.cluster_to_itself
def test_kthena_restarted_mid_scale_in_loses_nothing(cluster: Cluster, need, servinggate: OurWebhook, reconciler: OurReconciler, namespace: str) -> None:
    def fault(command: str) -> float:
        took = restart(command)
        release(cluster, namespace)  # the deleted pods finish terminating while the new controller starts
        return took

    restarted_mid_scale_in(cluster, need, namespace, "kthena", "Kthena's restart", fault, reconciler, servinggate)


@pytest.mark.cluster_to_itself
def test_apiserver_restarted_mid_scale_in_loses_nothing(cluster: Cluster, need, servinggate: OurWebhook, reconciler: OurReconciler, namespace: str) -> None:
    # Kthena rolls a half-deleted group back to Running when a delete fails while the API server is
    # down; its pods gone, it sums to 0. Our costs once ran below 0, so every live group summed lower
    # and Kthena removed one of them instead (3 runs of 3); Kthena's pods get them above 0 now (costs.summed)
    def fault(command: str) -> float:
        release(cluster, namespace)  # KWOK deletes the released pods at once: Kthena's cleanup meets the restart
        return restart(command)

    restarted_mid_scale_in(cluster, need, namespace, "apiserver", "the API server's restart", fault, reconciler, servinggate)
