"""`python -m webhook audit`: judge what already exists in the cluster by today's rules.

Once (the default): list, judge, print the report, optionally write PolicyReports, and exit 0
(no deny-action finding), 1 (at least one object the webhook would refuse to create today) or 2
(unusable: no cluster, a refused permission, a bad setting; one line on stderr, from
webhook/__main__.py). Findings of rules set to `warn` or `audit` never change the exit code.

With `--every DURATION` it keeps auditing (the in-cluster auditor): one log line and the metrics
per run, PolicyReports if asked; a failed run is logged and counted and the next one is tried.
With `--leader-elect` only the holder of the auditor's Lease audits.

Objects are judged as the API server of `--kubernetes-version` would; `auto` reads the API
server's `/version` at start and, with `--every`, again before the first run after a failed one
(the client has reconnected then; a control-plane upgrade is one way runs fail).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

from .. import config, logs, plainhttp
from ..kube import load_api_client
from ..kube.errors import KubeAccessError
from ..kube.leases import LeaderElector, elector_for
from ..kube.serverversion import FollowedVersion
from .auditing import AuditRun, audit
from .listing import Lister
from .metrics import AuditMetrics
from .output import FORMATS, REFUSED, summary, write
from .reports import reports
from .settings import SHARES_FILE_WITH, AuditSettings
from .writing import ReportWriter, Written

EXIT_OK, EXIT_DENIED, EXIT_UNUSABLE = 0, 1, 2

log = logging.getLogger("servinggate.audit")


class Auditor:
    """One audit run at a time against one API client: list and judge, then the reports."""

    def __init__(self, settings: AuditSettings, api_client: Any, kubernetes: FollowedVersion | None = None, metrics: AuditMetrics | None = None) -> None:
        self.settings = settings
        self.kubernetes = kubernetes or FollowedVersion.on(settings.version.kubernetes_version, api_client)
        self.recovering = False  # the last run failed: read the version again before the next
        self.lister = Lister(
            api_client, namespace=settings.auditor.namespace, page_size=settings.auditor.page_size, metrics=metrics.listwatch if metrics else None
        )
        self.writer = ReportWriter(api_client, namespace=settings.auditor.namespace) if settings.auditor.write_reports else None
        self._noted_no_crd = False

    def run(self) -> tuple[AuditRun, Written | None]:
        if self.recovering:
            self.kubernetes.refresh()
        try:
            run = audit(
                self.lister,
                self.settings.policies,
                namespace=self.settings.auditor.namespace,
                kubernetes_version=self.kubernetes.current.version,
                feature_gates=self.settings.version.feature_gates,
            )
            written = self._write(run)
        except Exception:
            self.recovering = True
            raise
        self.recovering = False
        return run, written

    def _write(self, run: AuditRun) -> Written | None:
        if self.writer is None:
            return None
        if not self.writer.installed():
            if not self._noted_no_crd:
                log.warning(
                    {
                        "msg": "the PolicyReport CRD (policyreports.wgpolicyk8s.io) is not installed: no reports are written "
                        "until it is (from wg-policy-prototypes, or Kyverno's chart: docs/audit.md)"
                    }
                )
                self._noted_no_crd = True
            return None
        self._noted_no_crd = False
        return self.writer.sync(reports(run.judged, int(time.time())))


def log_run(run: AuditRun, written: Written | None) -> None:
    line: dict[str, object] = {
        "msg": "audit run",
        **summary(run),
        "findings": sum(len(j.findings) for j in run.judged),
        "kubernetesVersion": str(run.kubernetes_version),
        "seconds": round(run.seconds, 3),
    }
    if written is not None:
        line.update(reports_created=written.created, reports_updated=written.updated, reports_deleted=written.deleted)
    for note in run.skipped:
        log.info({"msg": "kind skipped", "note": note})
    log.info(line)


def once(auditor: Auditor, fmt: str, out: TextIO) -> int:
    run, written = auditor.run()
    write(fmt, run, out)
    log_run(run, written)
    return EXIT_DENIED if run.failed else EXIT_OK


def keep_auditing(
    auditor: Auditor, stop: threading.Event, metrics: AuditMetrics, *, elector: LeaderElector | None = None, clock: Callable[[], float] = time.monotonic
) -> int:
    """Audit every `--every` seconds until `stop`; never exits on a failed run."""
    if elector is not None:
        threading.Thread(target=elector.run, args=(stop, lambda leading: metrics.leader.set(1 if leading else 0)), name="lease", daemon=True).start()
    else:
        metrics.leader.set(1)
    due = clock()
    while not stop.is_set():
        if clock() >= due and (elector is None or elector.is_leader()):
            try:
                run, written = auditor.run()
            except Exception as exc:  # a failed run is counted and logged; the next one is tried
                metrics.failed()
                if isinstance(exc, KubeAccessError):
                    log.error({"msg": "audit run failed", "error": str(exc)})
                else:
                    log.exception({"msg": "audit run failed", "error": f"{type(exc).__name__}: {exc}"})
            else:
                metrics.completed(run, time.time())
                log_run(run, written)
            due = clock() + auditor.settings.auditor.every
        stop.wait(max(0.05, min(1.0, due - clock())))
    return EXIT_OK


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--output",
        "-o",
        choices=FORMATS + tuple(REFUSED),
        default="text",
        help="report format of a single run (default text; github is refused: there is no file to annotate)",
    )


def main(argv: list[str]) -> int:
    try:
        settings, args = config.parse_command(
            AuditSettings,
            argv,
            "python -m webhook audit",
            "Judge the objects already in the cluster as the webhook would judge their creation today.",
            extra=_arguments,
            shared_with=SHARES_FILE_WITH,
        )
    except SystemExit as exc:  # argparse: 0 for --help, 2 for a usage error
        return int(exc.code or 0)
    if args.output in REFUSED:
        print(f"audit: --output {args.output}: {REFUSED[args.output]}", file=sys.stderr)
        return EXIT_UNUSABLE
    logs.configure(settings.log.log_level)
    api_client = load_api_client(settings.kube.kubeconfig)
    metrics = AuditMetrics() if settings.auditor.every else None  # a single run's figures are in its report
    auditor = Auditor(settings, api_client, metrics=metrics)
    if metrics is None:  # its version is on the "audit run" line; a failure stays one line
        return once(auditor, args.output, sys.stdout)
    log.info({"msg": "judging by Kubernetes " + str(auditor.kubernetes.current.judged), **auditor.kubernetes.current.log_fields()})
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server = (
        plainhttp.serve_health(settings.auditor.health_host, settings.auditor.health_port, lambda: True, metrics.registry)
        if settings.auditor.health_port
        else None
    )
    elector = None
    if settings.auditor.leader_elect:
        elector = elector_for(
            api_client,
            name=settings.auditor.lease_name,
            namespace=settings.auditor.lease_namespace,
            identity=settings.auditor.holder_identity(),
            logger="servinggate.audit.lease",
        )
    try:
        return keep_auditing(auditor, stop, metrics, elector=elector)
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()
