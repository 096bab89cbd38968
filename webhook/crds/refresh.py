"""`python -m webhook crds refresh [--upstream LABEL] PATH...`: replace the bundled CRDs.

PATH is a CRD file or a directory searched recursively (a Kthena or Volcano checkout, a Helm
chart's `crds/` folder). Every CustomResourceDefinition found there whose name is already bundled
replaces the bundled copy; `--add` bundles new ones too. `versions.json` records, per CRD, the
upstream label (`--upstream`, else `git describe` of the checkout the file is in), the file it
came from (relative to PATH) and its sha256, so a reviewer can tell exactly what is shipped.

    python -m webhook crds refresh --upstream "kthena v1.0.0" ~/src/kthena/charts
    python -m webhook crds list
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import yaml

from . import VERSIONS_FILE, crd_files, is_crd, strip_descriptions, versions

HERE = Path(__file__).resolve().parent


def _git_label(path: Path) -> str:
    folder = path if path.is_dir() else path.parent
    try:
        proc = subprocess.run(["git", "-C", str(folder), "describe", "--tags", "--always", "--long"],
                              capture_output=True, text=True, timeout=30)
    except OSError:
        return ""
    return proc.stdout.strip() if proc.returncode == 0 else ""


def entry_for(crd: dict[str, Any], file_name: str, upstream: str, source: str, sha256: str) -> dict[str, Any]:
    spec = crd.get("spec") or {}
    return {
        "name": crd["metadata"]["name"],
        "group": spec.get("group"),
        "kind": (spec.get("names") or {}).get("kind"),
        "versions": [v.get("name") for v in spec.get("versions") or [] if v.get("served", True)],
        "upstream": upstream,
        "source": source,
        "sha256": sha256,
        "file": file_name,
    }


def refresh(paths: list[Path], upstream: str | None, add: bool, target: Path = HERE) -> list[dict[str, Any]]:
    existing = target / VERSIONS_FILE
    current = {e["name"]: e for e in orjson.loads(existing.read_bytes())} if existing.exists() else {}
    changed: list[dict[str, Any]] = []
    for root in paths:
        label = upstream or _git_label(root) or "unknown"
        for file in crd_files(root):
            raw = file.read_bytes()
            for doc in yaml.load_all(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
                if not is_crd(doc):
                    continue
                name = doc["metadata"]["name"]
                if name not in current and not add:
                    continue
                file_name = name + ".json"
                stripped = {k: v for k, v in doc.items() if k != "status"}
                (target / file_name).write_bytes(orjson.dumps(strip_descriptions(stripped), option=orjson.OPT_SORT_KEYS))
                source = str(file.relative_to(root)) if root.is_dir() else file.name
                current[name] = entry_for(doc, file_name, label, source, hashlib.sha256(raw).hexdigest())
                changed.append(current[name])
    ordered = sorted(current.values(), key=lambda e: e["name"])
    (target / VERSIONS_FILE).write_bytes(orjson.dumps(ordered, option=orjson.OPT_INDENT_2) + b"\n")
    return changed


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m webhook crds", description="List or refresh the CRDs bundled for `check`.")
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("list", help="print the bundled CRDs and where they come from")
    ref = sub.add_parser("refresh", help="replace the bundled CRDs with the ones found under PATH")
    ref.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="CRD file or directory (searched recursively)")
    ref.add_argument("--upstream", default=None, help="label recorded as the upstream version (default: git describe of PATH)")
    ref.add_argument("--add", action="store_true", help="also bundle CRDs that are not bundled yet")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.action == "list":
        for e in versions():
            print(f"{e['name']}  {','.join(e['versions'])}  {e['upstream']}  {e['source']}  sha256:{e['sha256'][:12]}")
        return 0
    missing = [p for p in args.paths if not p.exists()]
    if missing:
        print(f"crds refresh: {missing[0]}: no such file or directory", file=sys.stderr)
        return 2
    changed = refresh(args.paths, args.upstream, args.add)
    for e in changed:
        print(f"refreshed {e['name']} ({','.join(e['versions'])}) from {e['source']} [{e['upstream']}]")
    if not changed:
        print("crds refresh: no bundled CRD found under the given paths (use --add to bundle new ones)", file=sys.stderr)
        return 2
    return 0
