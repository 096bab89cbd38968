"""In-process cost of each policy per review, next to a bare JSON round trip of the same body.

For every recorded review a rule matches, it times, in the same run and interleaved:
  bare     orjson.loads(body) + orjson.dumps(doc)              (the floor any webhook pays)
  review   parse_review(body) + engine (all matching rules) + orjson.dumps(response)
The "x bare" column is review p50 / bare p50. Targets (issue 3): the gangPolicy ModelServing
validation and the ModelServing-pod mutation within 3x of the bare round trip.

Then the price of `modelservings.pod-templates` (issue 18.5): the same ModelServing review (Kthena's
gang example: 2 roles, each with an entry and a worker template, so 4 pods judged) with the rule
on and with it off, interleaved, on CREATE and on an UPDATE that changes no template (ratcheted),
then on CREATE at each Kubernetes minor the Pod validation mirrors (1.28 to 1.37) and at a newer
one. Target: under 150 µs added on CREATE, at every minor; and (issue 45) the added cost at 1.37
at most 1.2x that at 1.28, measured in alternating rounds, the worst round shown.

Usage: python benchmarks/policies.py [--rounds 3000]
Prints figures; it passes or fails nothing.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ADMISSION = REPO / "tests" / "fixtures" / "admission"
sys.path.insert(0, str(REPO))

import orjson  # noqa: E402

from webhook.admission.responses import review_response  # noqa: E402
from webhook.admission.review import parse_review  # noqa: E402
from webhook.policies import REGISTRY, Context, DictLookups, engine  # noqa: E402

TARGETS = {
    "modelservings-create-gang-example-validating": "gangPolicy ModelServing validation",
    "pods-create-kthena-entry-missing-scheduler-annotations-roleid-mutating": "ModelServing pod mutation",
}


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(body: bytes, action: str, ctx: Context, rounds: int) -> tuple[list[float], list[float]]:
    bare: list[float] = []
    review: list[float] = []
    clock = time.perf_counter_ns
    loads, dumps = orjson.loads, orjson.dumps
    for _ in range(rounds):
        t0 = clock()
        dumps(loads(body))
        t1 = clock()
        req = parse_review(body)
        dumps(review_response(req, engine.review(action, req, ctx)))
        t2 = clock()
        bare.append((t1 - t0) / 1000)
        review.append((t2 - t1) / 1000)
    return bare, review


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3000)
    args = parser.parse_args(argv)

    gang = orjson.loads((ADMISSION / "modelservings-create-gang-example-validating.json").read_bytes())["request"]["object"]
    ctx = Context(lookups=DictLookups([gang]))
    rows = []
    for path in sorted(ADMISSION.glob("*.json")):
        body = path.read_bytes()
        action = "mutate" if path.stem.endswith("-mutating") else "validate"
        req = parse_review(body)
        rules = REGISTRY.match(action, req.resource.group, req.resource.resource, req.sub_resource, req.operation)
        if not rules:
            continue
        for _ in range(200):  # warm up
            engine.review(action, req, ctx)
        gc.collect()
        gc.disable()
        try:
            bare, review = measure(body, action, ctx, args.rounds)
        finally:
            gc.enable()
        rows.append((path.stem, ", ".join(r.name for r in rules), len(body), bare, review))

    print(f"{'review':<74} {'bytes':>6} {'bare p50':>9} {'p99':>7} {'policy p50':>11} {'p99':>7} {'x bare':>7}")
    for stem, rules, size, bare, review in rows:
        b50, b99, r50, r99 = percentile(bare, 0.5), percentile(bare, 0.99), percentile(review, 0.5), percentile(review, 0.99)
        mark = "  <- target 3x: " + TARGETS[stem] if stem in TARGETS else ""
        print(f"{stem:<74} {size:>6} {b50:>8.1f}µ {b99:>6.1f}µ {r50:>10.1f}µ {r99:>6.1f}µ {r50 / b50:>6.2f}x{mark}")
        print(f"    rules: {rules}")
    pod_templates(args.rounds)
    return 0


def _interleaved(req, on: Context, off: Context, rounds: int) -> tuple[list[float], list[float]]:
    """Review times without and with the rule, interleaved, in µs."""
    clock = time.perf_counter_ns
    for _ in range(200):
        engine.validate(req, on), engine.validate(req, off)
    without: list[float] = []
    with_rule: list[float] = []
    gc.collect()
    gc.disable()
    try:
        for _ in range(rounds):
            t0 = clock()
            engine.validate(req, off)
            t1 = clock()
            engine.validate(req, on)
            t2 = clock()
            without.append((t1 - t0) / 1000)
            with_rule.append((t2 - t1) / 1000)
    finally:
        gc.enable()
    return without, with_rule


def pod_templates(rounds: int) -> None:
    """The ModelServing review with and without the pod-template rule, interleaved (p50 and p99):
    at the default minor on CREATE and a ratcheted UPDATE, then on CREATE at every minor whose Pod
    validation is ported, and at one newer (judged as the newest)."""
    from webhook.admission.review import make_request
    from webhook.kubeversion import KubeVersion
    from webhook.podvalidation.versions import PORTED
    from webhook.policies.modelserving_pods import RULE
    from webhook.policies.settings import PolicySettings

    ms = orjson.loads((ADMISSION / "modelservings-create-gang-example-validating.json").read_bytes())["request"]["object"]
    old = orjson.loads(orjson.dumps(ms))
    old["spec"]["replicas"] = 2
    off_settings = PolicySettings(rule_actions=((RULE, "off"),))
    on, off = Context(), Context(settings=off_settings)
    print(f"\n{'ModelServing review (gang example, 4 pods)':<44} {'without p50':>12} {'p99':>7} {'with p50':>9} {'p99':>7} {'added p50':>10}")
    create = make_request(ms, operation="CREATE")
    runs = [
        (f"CREATE ({on.kubernetes_version})", create, on, off, rounds),
        ("UPDATE, templates unchanged", make_request(ms, operation="UPDATE", old=old), on, off, rounds),
    ]
    for version in PORTED + (KubeVersion(1, 38),):
        runs.append(
            (
                f"CREATE at {version}",
                create,
                Context(kubernetes_version=version),
                Context(settings=off_settings, kubernetes_version=version),
                max(rounds // 3, 200),
            )
        )
    for label, req, with_ctx, without_ctx, n in runs:
        assert not engine.validate(req, with_ctx).errors
        without, with_rule = _interleaved(req, with_ctx, without_ctx, n)
        w50, r50 = percentile(without, 0.5), percentile(with_rule, 0.5)
        mark = "  <- target < 150µ" if label.startswith("CREATE") else ""
        print(f"{label:<44} {w50:>11.1f}µ {percentile(without, 0.99):>6.1f}µ {r50:>8.1f}µ {percentile(with_rule, 0.99):>6.1f}µ {r50 - w50:>9.1f}µ{mark}")
    newest_beside_oldest(create, off_settings, max(rounds // 3, 200))


def newest_beside_oldest(create, off_settings, rounds: int, repeats: int = 5) -> None:
    """The rule's added cost per CREATE at 1.37 beside 1.28 (issue 45: at most 1.2x), the four
    reviews interleaved in each round, so both minors see the same machine; every round's ratio
    is printed, the worst last."""
    from webhook.kubeversion import NEWEST, OLDEST

    ctx = {v: (Context(kubernetes_version=v), Context(settings=off_settings, kubernetes_version=v)) for v in (OLDEST, NEWEST)}
    ratios = []
    for _ in range(repeats):
        added = {}
        for v, (on, off) in ctx.items():
            without, with_rule = _interleaved(create, on, off, rounds)
            added[v] = percentile(with_rule, 0.5) - percentile(without, 0.5)
        ratios.append(added[NEWEST] / added[OLDEST])
        print(f"pod-templates added p50 per CREATE: {OLDEST} {added[OLDEST]:.1f}µ, {NEWEST} {added[NEWEST]:.1f}µ, {NEWEST}/{OLDEST} {ratios[-1]:.2f}x")
    print(f"{NEWEST}/{OLDEST} median {sorted(ratios)[len(ratios) // 2]:.2f}x, worst round {max(ratios):.2f}x  <- target <= 1.2x")


if __name__ == "__main__":
    sys.exit(main())
