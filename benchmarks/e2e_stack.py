"""Figures beside the real Kthena and Volcano (the cluster of tests/e2e, docs/e2e.md):

1. the time from applying Kthena's gang example (8 pods of 2 NPUs on two 8-NPU KWOK nodes) to every
   pod Running and Ready, with ServingGate in the path (our webhook registered and judging the
   namespace) and without (the namespace not judged), interleaved, median of `--rounds`;
2. the time from applying an opt-in gang (a Deployment of 4 pods of 1 NPU, `servinggate.io/gang`,
   its PodGroup with minMember 4) to every pod Running and Ready, three ways, interleaved, median
   of `--rounds`: mutated by our webhook; by our MutatingAdmissionPolicy where the API server
   serves it (the webhook's opt-in entry then Ignore, as components/mutating-policy-* install it);
   and written complete by hand with nothing of ours judging it (`none`);
3. our reconciler's pod patches per pod created over a Kthena rolling update of a ModelServing
   with two ServingGroups.

Usage: SERVINGGATE_E2E_KUBECONFIG=~/k8s/run/kubeconfig .venv/bin/python benchmarks/e2e_stack.py [--rounds 5]
Without the variable it says what it needs and exits 0 (as in `./dev bench`)."""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.e2e import (  # noqa: E402
    ENV,
    PG_GROUP,
    PG_VERSION,
    Cluster,
    OurReconciler,
    OurWebhook,
    gang_example,
    gang_podgroup,
    kubeconfig_from_env,
    modelserving,
    opt_in_gang,
    poll,
    probe_stack,
    role,
    running_ready,
)

REVISION = "modelserving.volcano.sh/revision"


def gang_round(cluster: Cluster, judged: bool) -> float:
    """Seconds from the ModelServing's create to its 8th pod Running and Ready."""
    ns = cluster.namespace("sg-bench-gang" if judged else "sg-bench-plain", judged=judged)
    try:
        for i in range(2):
            cluster.node(f"{ns}-n{i}", ns, npu=8)
        poll(lambda: all(n.status.conditions for n in cluster.core.list_node(label_selector=f"servinggate-e2e/namespace={ns}").items), 60, "nodes Ready")
        start = time.monotonic()
        cluster.create_ms(ns, gang_example(ns, npu=2))
        poll(lambda: (ps := cluster.pods(ns)) and len(ps) == 8 and all(map(running_ready, ps)), 300, "8 pods Running", every=0.1)
        return time.monotonic() - start
    finally:
        cluster.delete_namespace(ns)
        cluster.delete_nodes(ns)
        poll(lambda: not cluster.core.list_namespace(field_selector=f"metadata.name={ns}").items, 120, "namespace gone")


OPT_IN_SIZE = 4


def opt_in_round(cluster: Cluster, hook: OurWebhook, path: str, policy: str | None) -> float:
    """Seconds from the opt-in gang's Deployment create to its 4th pod Running and Ready, mutated
    along `path`: "webhook", "policy" (the MutatingAdmissionPolicy at version `policy`, the
    webhook's entry Ignore) or "none" (written complete, the namespace not judged)."""
    ns = cluster.namespace(f"sg-bench-optin-{path}", judged=path != "none")
    try:
        cluster.node(f"{ns}-n0", ns, npu=8)
        poll(lambda: all(n.status.conditions for n in cluster.core.list_node(label_selector=f"servinggate-e2e/namespace={ns}").items), 60, "node Ready")
        cluster.custom.create_namespaced_custom_object(PG_GROUP, PG_VERSION, ns, "podgroups", gang_podgroup("gang", OPT_IN_SIZE))

        def apply() -> float:
            start = time.monotonic()
            cluster.apps.create_namespaced_deployment(ns, opt_in_gang(ns, OPT_IN_SIZE, complete=path == "none"))
            poll(lambda: (ps := cluster.pods(ns, "app=gang")) and len(ps) == OPT_IN_SIZE and all(map(running_ready, ps)), 300, "gang Running", every=0.1)
            return time.monotonic() - start

        if path == "policy":
            assert policy is not None
            with cluster.mutating_policy(ns, policy), hook.failing("pods-gang", "Ignore"):
                return apply()
        return apply()
    finally:
        cluster.delete_namespace(ns)
        cluster.delete_nodes(ns)
        poll(lambda: not cluster.core.list_namespace(field_selector=f"metadata.name={ns}").items, 120, "namespace gone")


def rolling_update(cluster: Cluster, rec: OurReconciler) -> str:
    """Our writes per pod Kthena creates while it rolls a two-group ModelServing to a new template."""
    ns = cluster.namespace("sg-bench-roll")
    try:
        for i in range(2):
            cluster.node(f"{ns}-n{i}", ns, npu=8)
        sel = {"servinggate-e2e/namespace": ns}
        roles = [role("prefill", replicas=2, workers=1, npu=1, node_selector=sel), role("decode", replicas=1, workers=1, npu=1, node_selector=sel)]
        cluster.create_ms(ns, modelserving("llm", 2, roles))
        pods = poll(lambda: (ps := cluster.pods(ns)) and len(ps) == 12 and all(map(running_ready, ps)) and ps, 300, "12 pods Running")
        old = {p.metadata.labels[REVISION] for p in pods}
        time.sleep(5)  # the reconciler's first pass over these pods
        before, t0 = rec.writes(), time.monotonic()
        cluster.patch_ms(ns, "llm", [{"op": "add", "path": "/spec/template/roles/0/entryTemplate/metadata", "value": {"labels": {"rev": "2"}}}], kind="json")

        def rolled() -> bool:
            ps = cluster.pods(ns)
            return len(ps) == 12 and all(running_ready(p) and p.metadata.labels[REVISION] not in old for p in ps)

        poll(rolled, 600, "every pod on the new revision")
        took = time.monotonic() - t0
        time.sleep(5)  # let the last writes land
        writes = rec.writes() - before
        return f"rolling update of 2 ServingGroups (12 pods, all recreated) in {took:.1f} s: {writes:.0f} reconciler patches, {writes / 12:.2f} per pod created"
    finally:
        cluster.delete_namespace(ns)
        cluster.delete_nodes(ns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--skip-rolling", action="store_true")
    parser.add_argument("--only-opt-in", action="store_true", help="only the opt-in gang's three paths")
    args = parser.parse_args()
    kubeconfig = kubeconfig_from_env()
    if kubeconfig is None:
        print(f"skipped: {ENV} is not set (the cluster of tests/e2e, with Kthena, Volcano and KWOK; docs/e2e.md)")
        return
    cluster = Cluster(kubeconfig)
    missing = {k: v for k, v in probe_stack(cluster).items() if v}
    if missing:
        print("skipped: " + "; ".join(f"{k}: {v}" for k, v in missing.items()))
        return
    with tempfile.TemporaryDirectory() as tmp:
        hook = OurWebhook(cluster, Path(tmp)).start()
        hook.register()
        rec = OurReconciler(cluster, Path(tmp)).start()
        try:
            times: dict[str, list[float]] = {"with ServingGate": [], "without": []}
            for k in range(0 if args.only_opt_in else args.rounds):
                for judged in (k % 2 == 0, k % 2 == 1):
                    times["with ServingGate" if judged else "without"].append(gang_round(cluster, judged))
            policy = cluster.mutating_policy_version()
            paths = ["webhook", "none"] + (["policy"] if policy else [])
            if not policy:
                print("the API server serves no MutatingAdmissionPolicy: the opt-in gang without the policy path")
            for k in range(args.rounds):
                for path in paths[k % len(paths) :] + paths[: k % len(paths)]:  # each path first in turn
                    times.setdefault(f"opt-in gang, {path}", []).append(opt_in_round(cluster, hook, path, policy))
            for label, values in times.items():
                if not values:
                    continue
                what = (
                    f"gang example to 8 pods Running, {label}" if label in ("with ServingGate", "without") else f"{label}: apply to {OPT_IN_SIZE} pods Running"
                )
                print(f"{what}: median {statistics.median(values):.2f} s over {len(values)} (" + ", ".join(f"{v:.2f}" for v in values) + ")")
            if not args.skip_rolling and not args.only_opt_in:
                print(rolling_update(cluster, rec))
        finally:
            rec.stop()
            hook.unregister()
            hook.stop()


if __name__ == "__main__":
    main()
