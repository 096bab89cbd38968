"""`python -m webhook <command>`: one entry point; each command lives in its own module.

A command module exposes `main(argv) -> int`. This is the one place exit codes for failures are
decided: an `OperatorError` (webhook/errors.py: a bad setting, a refused permission, an
unreachable API server, a missing file) exits 2 with its one line; anything else is a bug and
keeps its traceback.
"""

from __future__ import annotations

import importlib
import sys

from .errors import OperatorError

COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("webhook.server.launch", "run the admission webhook over HTTPS"),
    "check": ("webhook.check", "check manifests offline as the API server and the webhook would (for CI)"),
    "audit": ("webhook.audit", "judge the objects already in the cluster by today's rules; PolicyReports with --write-reports"),
    "plan": ("webhook.scalein.plan.planning", "show which pods a scale-in would remove, from a snapshot"),
    "reconcile": ("webhook.scalein.reconcile.reconciling", "write pod-deletion-cost for NPU-compacting scale-in"),
    "manifests": ("webhook.deploy.generating", "write the webhook configurations derived from the rule registry"),
    "smoke": ("webhook.smoke.cli", "check that the installed webhooks answer (dry-run creates; exit 0/1/2)"),
    "certs": ("webhook.certs.cli", "generate a development CA and serving certificate"),
    "crds": ("webhook.crds.refresh", "list the CRDs check reads from the cache, or cache the CRDs of a chart or checkout"),
    "version": ("webhook.version", "print the product version, the Kubernetes versions judged by and the CRDs check validates against"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: python -m webhook <command> [options]", "", "commands:"]
    lines += [f"  {name.ljust(width)}  {text}" for name, (_, text) in COMMANDS.items()]
    lines += ["", "`python -m webhook <command> --help` lists a command's options."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--version":
        argv = ["version"]
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"unknown command {name!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[name][0])
    try:
        return int(module.main(rest) or 0)
    except OperatorError as exc:  # ConfigError is one too
        print(f"servinggate {name}: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
