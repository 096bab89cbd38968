"""`python -m webhook manifests`: every file derived from the rule registry, under `manifests/`
and in the Helm chart (`charts/servinggate`: its webhook configurations, CEL fallback, helpers and
values.schema.json, see charttemplates.py).

The base holds the webhook configurations (configurations.py, where the conventions every entry
shares are kept); the opt-in kustomize components go with them (components.py): one that removes
`matchConditions` for clusters without them, and the CEL fallback policies (fallback.py).
Everything is committed; a test regenerates it and fails on drift.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path

from ..errors import OperatorError
from ..policies.registry import Rule
from . import charttemplates, components, monitoring
from .configurations import configurations, registry_rules
from .yamlfile import HEADER, dump

OUTPUT_FILE = "webhook-configurations.yaml"
DEFAULT_MANIFESTS_DIR = Path("manifests")
DEFAULT_CHART_DIR = Path("charts") / "servinggate"

CA_NOTE = "# caBundle is filled in the cluster: by the webhook itself (cert-management=self) or by\n# cert-manager's cainjector (overlays/cert-manager).\n"


def render(rules: Iterable[Rule] | None = None) -> str:
    docs = configurations(registry_rules() if rules is None else rules)
    return dump(docs, HEADER + CA_NOTE)


def outputs(rules: Iterable[Rule] | None = None) -> dict[Path, str]:
    """Every generated file, by its path under the manifests folder."""
    rules = registry_rules() if rules is None else list(rules)
    files = {Path("base") / OUTPUT_FILE: render(rules)}
    files.update(components.render(rules, configurations(rules)))
    files.update(monitoring.render(rules))
    return files


def chart_outputs(rules: Iterable[Rule] | None = None) -> dict[Path, str]:
    """Every generated file of the chart, by its path under the chart folder."""
    return charttemplates.render(registry_rules() if rules is None else list(rules))


def _write(root: Path, files: dict[Path, str], *, check: bool) -> list[Path]:
    """Write each file under `root` that differs from `files` (`check`: write nothing); the
    paths that differed."""
    stale = []
    for path, text in ((root / relative, text) for relative, text in files.items()):
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        stale.append(path)
        if not check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    return stale


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m webhook manifests",
        description="write the webhook configurations, the opt-in components and the Helm chart files derived from the rule registry",
    )
    parser.add_argument("--manifests-dir", default=str(DEFAULT_MANIFESTS_DIR), help=f"the kustomize tree (default {DEFAULT_MANIFESTS_DIR})")
    parser.add_argument("--chart-dir", default=str(DEFAULT_CHART_DIR), help=f"the Helm chart (default {DEFAULT_CHART_DIR})")
    parser.add_argument("--stdout", action="store_true", help="print the webhook configurations instead of writing files")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a committed file differs from the registry")
    args = parser.parse_args(argv)
    if args.stdout:
        sys.stdout.write(render())
        return 0
    roots = [("--manifests-dir", Path(args.manifests_dir), outputs()), ("--chart-dir", Path(args.chart_dir), chart_outputs())]
    for flag, root, _ in roots:
        if root.exists() and not root.is_dir():
            raise OperatorError(f"{flag} {root}: not a folder; give the folder the generated files go in")
    stale = []
    for flag, root, files in roots:
        try:
            stale += _write(root, files, check=args.check)
        except OSError as exc:  # a folder that cannot be written
            where = f"{exc.filename}: " if exc.filename else ""
            raise OperatorError(f"{flag} {root}: cannot write the generated files ({where}{exc.strerror or exc}); give a writable folder") from None
    if args.check and stale:
        for path in stale:
            print(f"{path} is out of date with the rule registry; run: python -m webhook manifests", file=sys.stderr)
        return 1
    if args.check:
        print(f"{', '.join(str(root) for _, root, _ in roots)}: the generated files match the rule registry")
    return 0
