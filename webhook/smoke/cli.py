"""`python -m webhook smoke [--namespace NS] [--kubeconfig FILE] [--kubernetes-version auto|X.Y]`:
one line per step, then the exit code: 0 every step as expected, 1 a step failed, 2 the check
could not run (no cluster, RBAC refused, Kthena's CRDs or the namespace missing).

First it says which Kubernetes version the webhook judges by: the `--kubernetes-version` given
(pass the webhook's own, or its config file with `--config`), and for `auto` what the API
server's `/version` resolves it to, as `serve` resolves it at start."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from .. import config
from ..kube import KubeAccessError, load_api_client
from ..kube.serverversion import read_version
from ..kubeversion import Chosen, named, newest_instead
from . import dryrun, objects, verdicts
from .settings import SHARES_FILE_WITH, SmokeSettings

EXIT_OK, EXIT_FAILED, EXIT_UNUSABLE = 0, 1, 2
DEFAULT_NAMESPACE = "default"


def steps(namespace: str, policy: str | None = None) -> list[tuple[str, dict[str, Any], Callable[[int, Any, str], verdicts.Verdict]]]:
    """(title, object, how its answer is judged), in the order they run; `policy`: the version of
    our MutatingAdmissionPolicy installed, if any."""
    return [
        ("known-good ModelServing is accepted", objects.good_modelserving(namespace), verdicts.accepted),
        (
            "known-bad ModelServing is refused by our webhook",
            objects.bad_modelserving(namespace),
            lambda status, body, what: verdicts.refused(status, body, what, objects.BAD_RULE, objects.BAD_FIELD),
        ),
        ("ModelServing pod gets our patch", objects.modelserving_pod(namespace), verdicts.patched),
        ("opt-in gang pod is mutated", objects.gang_pod(namespace), lambda status, body, what: verdicts.gang_made(status, body, what, policy)),
    ]


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--namespace", "-n", default=DEFAULT_NAMESPACE, help=f"where the dry-run objects are sent; one the webhooks judge (default {DEFAULT_NAMESPACE})"
    )


def judged_by(setting: Any, api: Any) -> str:
    """The line that says which version the webhook judges by (resolved as `serve` resolves it)."""
    chosen: Chosen | None = named(setting)
    if chosen is None:
        try:
            chosen = read_version(api)
        except KubeAccessError as exc:
            chosen = newest_instead(str(exc))
    return f"the webhook (--kubernetes-version {setting}) judges by {chosen.describe()}"


def main(argv: list[str]) -> int:
    try:
        settings, args = config.parse_command(
            SmokeSettings,
            argv,
            "python -m webhook smoke",
            "check that the installed webhooks answer: server-side dry-run creates of a known-good and a known-bad "
            "ModelServing and of a ModelServing pod (nothing is stored)",
            extra=_arguments,
            shared_with=SHARES_FILE_WITH,
        )
    except SystemExit as exc:  # argparse: 0 for --help, 2 for a usage error
        return int(exc.code or 0)
    api = load_api_client(settings.kube.kubeconfig)  # KubeAccessError: exit 2 through __main__
    failed = False
    try:
        print(f"INFO      {judged_by(settings.version.kubernetes_version, api)}")
        for title, obj, judge in steps(args.namespace, dryrun.mutating_policy(api)):
            what = f"{obj['kind']} {args.namespace}/{obj['metadata']['name']}"
            status, body = dryrun.create(api, obj)
            try:
                verdict = judge(status, body, what)
            except verdicts.Unusable as exc:
                print(f"UNUSABLE  {title}: {exc}")
                return EXIT_UNUSABLE
            print(f"{'PASS' if verdict.ok else 'FAIL'}      {title}: {verdict.text}")
            failed |= not verdict.ok
    finally:
        api.close()
    print("smoke: a step failed" if failed else "smoke: the webhooks answer as expected", file=sys.stderr)
    return EXIT_FAILED if failed else EXIT_OK
