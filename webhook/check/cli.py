"""`python -m webhook check`: what the API server and the webhook would say about manifests, offline.

Inputs are files, directories (searched recursively for .yaml, .yml and .json) and `-` (stdin,
e.g. `kustomize build | python -m webhook check -`). Each object is a CREATE, or an UPDATE when an
`--old` input holds an object with the same group, kind, namespace and name. Lookups (an
autoscaler's target ModelServing) are answered from the inputs. The cluster-fact rules (will it
run: nodes, queues, topology, other autoscalers) judge against a recorded cluster with
`--cluster FILE` or a live one with `--kubeconfig PATH` (cluster.py), and say nothing without.

CRDs come from where the user's truth is: with `--kubeconfig`, the CRDs the cluster serves;
otherwise the cache `crds refresh PATH` fills; then each `--crds PATH` (SERVINGGATE_CRDS, the
config file's `crds`) over them, the last given winning for a kind (said on stderr). A custom
kind whose CRD is nowhere gets one note naming `--crds`: the API server's stage (schema,
defaults, CEL) is skipped for it and our own rules still judge it.

Exit codes (stable): 0 every object passes; 1 at least one object is refused or has an error
finding (or, with --fail-on-warn, a warning); 2 unusable input (unreadable, not YAML, not a
Kubernetes object, or no object at all) or a usage error. Unusable input wins over 1.

`--kubernetes-version` (the setting `serve` and `audit` share) picks the API server mirrored:
its Pod validation (a version newer than the newest ported is judged as that one) and the
built-in schemas (`kubernetes-validate`'s, capped at the newest it ships). `check` reads no
cluster, so `auto` is the newest supported version. Decoding stays strict (`--field-validation
Strict`, kubectl's default): a field the chosen version does not know is refused, as `kubectl
apply` against that server would refuse it.
"""

from __future__ import annotations

import argparse
import gc
import sys
from typing import Any, TextIO, cast

from .. import config
from ..crds import CacheError, cached, describe_entry, describe_sources
from ..errors import OperatorError
from ..featuregates import not_at
from ..kubeversion import NEWEST, NEWEST_SCHEMAS, Chosen, KubeVersion, named, parse_kubernetes_version
from ..policies import Context, DictLookups, PolicySettings
from ..policies.clusterfacts import ClusterFacts
from . import catalog, reporting, templates
from .builtin import Builtins
from .catalog import Catalog
from .cluster import cluster_crds, cluster_facts
from .loading import Loaded, Problem, load
from .pipeline import DocumentResult, FieldValidation, Finding, Pipeline
from .settings import SHARES_FILE_WITH, CheckSettings

EXIT_OK, EXIT_DENIED, EXIT_UNUSABLE = 0, 1, 2


def _identity(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = obj.get("metadata") or {}
    group = str(obj.get("apiVersion") or "").rpartition("/")[0]
    return group, str(obj.get("kind")), str(meta.get("namespace") or ""), str(meta.get("name") or "")


def chosen_version(setting: KubeVersion | str) -> Chosen:
    """`check`'s version: the one named, or for `auto` the newest supported (no cluster is read)."""
    return named(setting) or Chosen(NEWEST, "the newest supported version (check reads no cluster)")


def schema_version(version: KubeVersion) -> KubeVersion:
    """The release whose built-in schemas are read: `version`, capped at the newest shipped."""
    return min(version, NEWEST_SCHEMAS)


def version_notes(chosen: Chosen) -> list[str]:
    """What `check` says on stderr when it does not judge at exactly the version chosen."""
    notes = []
    if chosen.judged != chosen.version:
        notes.append(f"Kubernetes {chosen.version}: Pod validation is judged as {chosen.judged}, the newest ported")
    if schema_version(chosen.version) != chosen.version:
        notes.append(f"Kubernetes {chosen.version}: built-in kinds are read with the schemas of {NEWEST_SCHEMAS}, the newest shipped")
    return notes


def run(
    paths: list[str],
    old_paths: list[str],
    settings: PolicySettings,
    *,
    crd_paths: list[str] | None = None,
    crds: Catalog | None = None,
    field_validation: str = "Strict",
    kubernetes_version: KubeVersion | str = "auto",
    previews: bool = True,
    stdin: TextIO | None = None,
    facts: ClusterFacts | None = None,
    feature_gates: tuple[tuple[str, bool], ...] = (),
) -> tuple[list[DocumentResult], list[Problem]]:
    """Every object of `paths` through the pipeline. The CRDs: `crds` (built by the caller from
    its sources), else those of `crd_paths` alone (catalog.build raises CrdPathError). `-` reads
    `stdin`, by default the process's at the time of the call."""
    # The loaded documents are hundreds of thousands of small objects (values and YAML nodes, kept
    # for line numbers) and hold no reference cycles; with the cyclic collector on, each new
    # generation sweeps them again, which cost more than parsing (figures in benchmarks/HISTORY.md).
    collecting = gc.isenabled()
    gc.disable()
    try:
        known = crds if crds is not None else catalog.build(list(crd_paths or []))
        return _run(paths, old_paths, settings, known, field_validation, kubernetes_version, previews, stdin or sys.stdin, facts, feature_gates)
    finally:
        if collecting:
            gc.enable()


def _run(
    paths: list[str],
    old_paths: list[str],
    settings: PolicySettings,
    crds: Catalog,
    field_validation: str,
    kubernetes_version: KubeVersion | str,
    previews: bool,
    stdin: TextIO,
    facts: ClusterFacts | None,
    feature_gates: tuple[tuple[str, bool], ...] = (),
) -> tuple[list[DocumentResult], list[Problem]]:
    version = chosen_version(parse_kubernetes_version(kubernetes_version) if isinstance(kubernetes_version, str) else kubernetes_version).version
    new = load(paths, stdin)
    old = load(old_paths, stdin) if old_paths else Loaded()
    olds = {_identity(d.obj): d.obj for d in old.documents}
    ctx = Context(
        settings=settings,
        lookups=DictLookups([d.obj for d in old.documents] + [d.obj for d in new.documents]),
        kubernetes_version=version,
        feature_gates=feature_gates,
        facts=facts,
    )
    pipeline = Pipeline(crds, Builtins(str(schema_version(version))), ctx, cast(FieldValidation, field_validation))
    results = [pipeline.run(d, olds.get(_identity(d.obj))) for d in new.documents]
    if previews:
        for r in results:
            _preview(r, ctx)
    problems = new.problems + old.problems
    if not new.documents and not new.problems:
        problems.append(Problem(", ".join(paths), 0, 0, "no objects found"))
    return results, problems


def _preview(r: DocumentResult, ctx: Context) -> None:
    """Pods of an accepted workload, with what our pod rules will do to them."""
    if r.status == "denied" or r.final is None:
        return
    previews = templates.preview(r.final, ctx)
    r.pods = [p.summary for p in previews]
    for p in previews:
        for e in p.errors:
            r.findings.append(Finding(e.rule, "error", e.error, line=r.doc.line, column=r.doc.column, pod=p.summary["name"]))


def exit_code(results: list[DocumentResult], problems: list[Problem], fail_on_warn: bool) -> int:
    if problems:
        return EXIT_UNUSABLE
    if any(r.status == "denied" or r.errors for r in results):
        return EXIT_DENIED
    if fail_on_warn and any(r.warnings for r in results):
        return EXIT_DENIED
    return EXIT_OK


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="*", metavar="PATH", help="YAML/JSON files, directories (recursive) or - for stdin")
    p.add_argument("--output", "-o", choices=reporting.FORMATS, default="text", help="report format (default text)")
    p.add_argument(
        "--old", action="append", default=[], metavar="PATH", help="the objects as they are now: matching objects are checked as UPDATEs (repeatable)"
    )
    p.add_argument(
        "--field-validation",
        choices=("Strict", "Warn", "Ignore"),
        default="Strict",
        help="unknown fields: Strict refuses them (kubectl's default), Warn warns and drops them, Ignore drops them",
    )
    p.add_argument("--fail-on-warn", action="store_true", help="exit 1 when there are warnings, even if every object passes")
    p.add_argument("--verbose", "-v", action="store_true", help="text: show every object's verdict and patches, not only findings")
    p.add_argument("--no-pods", action="store_true", help="do not preview the pods of workloads")
    cluster = p.add_mutually_exclusive_group()
    cluster.add_argument(
        "--cluster",
        default="",
        metavar="FILE",
        help="judge will-it-run rules against this recorded cluster (plan --snapshot's format, with Queues, HyperNodes, autoscalers, ...)",
    )
    cluster.add_argument("--kubeconfig", default="", metavar="PATH", help="judge will-it-run rules against the cluster this kubeconfig reaches (read once)")


def main(argv: list[str]) -> int:
    # A short-lived command: the cyclic collector stays off (see `run`), and what it built is
    # frozen before returning so neither a late collection nor the one at exit walks it again.
    gc.disable()
    try:
        return _main(argv)
    finally:
        gc.freeze()


def crd_sources(kubeconfig: str) -> tuple[list[tuple[dict[str, Any], str]], list[str]]:
    """The CRDs under any `--crds`: the cluster's with a kubeconfig, else the cache's; and the
    notes to print (a cache that cannot be read is said and skipped, never fatal)."""
    if kubeconfig:
        return cluster_crds(kubeconfig), []
    try:
        return [(crd, f"the cache ({describe_entry(entry)})") for entry, crd in cached()], []
    except CacheError as exc:
        return [], [f"{exc}; its CRDs are not used"]


def missing_crd_notes(results: list[DocumentResult]) -> list[str]:
    """One note per custom kind that had no CRD: the API server's stage was skipped for it."""
    missing: dict[str, None] = {}
    for r in results:
        if r.schema == "" and r.reason != "mapping":
            missing[f"{r.obj.get('kind')} ({r.obj.get('apiVersion')})"] = None
    return [
        f"no CRD for {kind}: the API server's schema, defaults and CEL rules are skipped for it, our rules still judge it; "
        "give its CRD with --crds PATH (or SERVINGGATE_CRDS, crds refresh PATH, --kubeconfig)"
        for kind in missing
    ]


def _help_epilog() -> str:
    """`check --help`'s last lines: which CRDs are in use and where they came from (the
    environment's and the config file's `crds`; a `--crds` given with --help is not read)."""
    try:
        paths = list(config.load(CheckSettings, {}, shared_with=SHARES_FILE_WITH).crds.crds)
    except OperatorError as exc:
        return f"CRDs: the settings cannot be read: {exc}"
    return "\n".join(describe_sources(paths))


def _main(argv: list[str]) -> int:
    epilog = _help_epilog() if any(a in ("-h", "--help") for a in argv) else ""

    def arguments(p: argparse.ArgumentParser) -> None:
        p.epilog, p.formatter_class = epilog, argparse.RawDescriptionHelpFormatter
        _arguments(p)

    try:
        settings, args = config.parse_command(
            CheckSettings,
            argv,
            "python -m webhook check",
            "Check manifests offline: decoding, CRD defaults, schema, CEL, then the webhook's rules.",
            extra=arguments,
            shared_with=SHARES_FILE_WITH,
        )
    except SystemExit as exc:  # argparse: 0 for --help, 2 for a usage error
        return int(exc.code or 0)
    if not args.files:
        print("check: no input given (files, directories or - for stdin)", file=sys.stderr)
        return EXIT_UNUSABLE
    if args.files.count("-") + args.old.count("-") > 1:
        print("check: stdin (-) can be given only once", file=sys.stderr)
        return EXIT_UNUSABLE
    chosen = chosen_version(settings.version.kubernetes_version)
    problem = not_at(settings.version.feature_gates, chosen.version)
    if problem:  # with auto: the version check judges by (a named one was checked as the settings were read)
        print(f"servinggate check: --feature-gates: {problem}", file=sys.stderr)
        return 2
    for note in version_notes(chosen):
        print(f"check: {note}", file=sys.stderr)
    try:
        facts = cluster_facts(args.cluster, args.kubeconfig)
        base, notes = crd_sources(args.kubeconfig)
        crds = catalog.build(list(settings.crds.crds), base)
    except (ValueError, OperatorError) as exc:  # an unusable snapshot or --crds path, an unreachable cluster
        print(f"check: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    for note in notes + crds.problems + crds.replaced:
        print(f"check: {note}", file=sys.stderr)
    try:
        results, problems = run(
            args.files,
            args.old,
            settings.policies,
            crds=crds,
            field_validation=args.field_validation,
            kubernetes_version=settings.version.kubernetes_version,
            previews=not args.no_pods,
            facts=facts,
            feature_gates=settings.version.feature_gates,
        )
    except ValueError as exc:  # a Kubernetes release without schemas
        print(f"check: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    reporting.write(args.output, results, problems, sys.stdout, args.verbose)
    for note in missing_crd_notes(results):
        print(f"check: {note}", file=sys.stderr)
    for p in problems:
        print(f"check: {p}", file=sys.stderr)
    return exit_code(results, problems, args.fail_on_warn)
