"""`python -m webhook smoke [--namespace NS] [--kubeconfig FILE]`: one line per step, then the exit
code: 0 every step as expected, 1 a step failed, 2 the check could not run (no cluster, RBAC
refused, Kthena's CRDs or the namespace missing)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from ..kube import load_api_client
from . import dryrun, objects, verdicts

EXIT_OK, EXIT_FAILED, EXIT_UNUSABLE = 0, 1, 2
DEFAULT_NAMESPACE = "default"


def steps(namespace: str) -> list[tuple[str, dict[str, Any], Callable[[int, Any, str], verdicts.Outcome]]]:
    """(title, object, how its answer is judged), in the order they run."""
    return [
        ("known-good ModelServing is accepted", objects.good_modelserving(namespace), verdicts.accepted),
        ("known-bad ModelServing is refused by our webhook", objects.bad_modelserving(namespace),
         lambda status, body, what: verdicts.refused(status, body, what, objects.BAD_RULE, objects.BAD_FIELD)),
        ("ModelServing pod gets our patch", objects.modelserving_pod(namespace), verdicts.patched),
    ]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m webhook smoke",
        description="check that the installed webhooks answer: server-side dry-run creates of a known-good and a known-bad "
                    "ModelServing and of a ModelServing pod (nothing is stored)",
    )
    parser.add_argument("--namespace", "-n", default=DEFAULT_NAMESPACE,
                        help=f"where the dry-run objects are sent; one the webhooks judge (default {DEFAULT_NAMESPACE})")
    parser.add_argument("--kubeconfig", default="", help="kubeconfig file (default: in-cluster, then $KUBECONFIG, then ~/.kube/config)")
    args = parser.parse_args(argv)
    api = load_api_client(args.kubeconfig)  # KubeAccessError: exit 2 through __main__
    failed = False
    try:
        for title, obj, judge in steps(args.namespace):
            what = f"{obj['kind']} {args.namespace}/{obj['metadata']['name']}"
            status, body = dryrun.create(api, obj)
            try:
                outcome = judge(status, body, what)
            except verdicts.Unusable as exc:
                print(f"UNUSABLE  {title}: {exc}")
                return EXIT_UNUSABLE
            print(f"{'PASS' if outcome.ok else 'FAIL'}      {title}: {outcome.text}")
            failed |= not outcome.ok
    finally:
        api.close()
    print("smoke: a step failed" if failed else "smoke: the webhooks answer as expected", file=sys.stderr)
    return EXIT_FAILED if failed else EXIT_OK
