"""`python -m webhook crds refresh [--upstream LABEL] PATH...` and `crds list`: the user's CRD cache.

PATH is a CRD file or a folder searched recursively (a Kthena or Volcano checkout, a Helm chart's
`crds/` folder); what is read and skipped is webhook/crds/__init__.py's `scan`. Every CRD found
goes into the cache (`$XDG_CACHE_HOME/servinggate/crds`), replacing a cached CRD of the same name;
when PATH holds the same CRD twice, the last one read wins and the command says so. `check` reads
the cache when it is given neither `--kubeconfig` nor, for that kind, `--crds`.

The cache's `versions.json` records, per CRD, the upstream label (`--upstream`, else `git
describe` of the checkout), the commit checked out when PATH is in a git work tree, the file it
came from (relative to PATH) and its sha256, so `version` and `check --help` can say exactly
what `check` validates against. A PATH that cannot be used (missing, not a file or folder, no CRD
under it) exits 2 with one line; a CRD document that does not parse is named with its file and
line on stderr and the others are still cached.

    python -m webhook crds refresh --upstream "kthena v0.4.0" ~/src/kthena/charts/kthena/charts/workload/crds
    python -m webhook crds list
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

from ..shapes import as_dict
from . import VERSIONS_FILE, CacheError, Found, Scan, cache_dir, cache_entries, describe_entry, scan, strip_descriptions, unusable


def _git(folder: Path, *args: str) -> str:
    """`git -C folder args...`'s output, or "" when git is missing, fails or is not in a work tree."""
    try:
        proc = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return proc.stdout.strip() if proc.returncode == 0 else ""


def checkout_commit(path: Path) -> str:
    """The commit checked out in the git work tree `path` is in (`git rev-parse HEAD`), or ""."""
    folder = path if path.is_dir() else path.parent
    if _git(folder, "rev-parse", "--is-inside-work-tree") != "true":
        return ""
    return _git(folder, "rev-parse", "HEAD")


def _git_label(path: Path) -> str:
    folder = path if path.is_dir() else path.parent
    return _git(folder, "describe", "--tags", "--always", "--long")


def entry_for(crd: dict[str, Any], file_name: str, upstream: str, source: str, sha256: str, commit: str = "") -> dict[str, Any]:
    spec = as_dict(crd.get("spec"))
    listed = spec.get("versions")
    entry = {
        "name": crd["metadata"]["name"],
        "group": spec.get("group"),
        "kind": as_dict(spec.get("names")).get("kind"),
        "versions": [v.get("name") for v in listed if isinstance(v, dict) and v.get("served", True)] if isinstance(listed, list) else [],
        "upstream": upstream,
        "source": source,
        "sha256": sha256,
        "file": file_name,
    }
    if commit:
        entry["commit"] = commit
    return entry


def last_of_each(found: list[Found]) -> tuple[list[Found], list[str]]:
    """One CRD per name, the last read; and a line for each one it replaced."""
    kept: dict[str, Found] = {}
    replaced: list[str] = []
    for f in found:
        if f.name in kept:
            earlier = kept.pop(f.name)
            replaced.append(f"{f.name}: {f.file}:{f.line} replaces {earlier.file}:{earlier.line} (the last read wins)")
        kept[f.name] = f
    return list(kept.values()), replaced


def refresh(paths: list[Path], upstream: str | None, target: Path | None = None, found: Scan | None = None) -> list[dict[str, Any]]:
    """Write the CRDs found under `paths` into the cache folder `target` (created) and record them
    in its versions.json, over the entries of the same names; returns their new entries."""
    target = target or cache_dir()
    current = {e["name"]: e for e in cache_entries(target)}
    found = found if found is not None else scan(paths)
    commits = {root: checkout_commit(root) for root in paths}
    try:
        target.mkdir(parents=True, exist_ok=True)
        changed: list[dict[str, Any]] = []
        for f in last_of_each(found.crds)[0]:
            file_name = f.name + ".json"
            stripped = {k: v for k, v in f.crd.items() if k != "status"}
            (target / file_name).write_bytes(orjson.dumps(strip_descriptions(stripped), option=orjson.OPT_SORT_KEYS))
            source = str(f.file.relative_to(f.root)) if f.root.is_dir() else f.file.name
            label = upstream or _git_label(f.root) or "unknown"
            current[f.name] = entry_for(f.crd, file_name, label, source, f.sha256, commits[f.root])
            changed.append(current[f.name])
        ordered = sorted(current.values(), key=lambda e: e["name"])
        (target / VERSIONS_FILE).write_bytes(orjson.dumps(ordered, option=orjson.OPT_INDENT_2) + b"\n")
    except OSError as exc:
        raise CacheError(f"cannot write the CRD cache {target}: {exc.strerror}") from None
    return changed


def main(argv: list[str], target: Path | None = None) -> int:
    """The command; `target` is the cache folder (the user's, but for tests)."""
    parser = argparse.ArgumentParser(
        prog="python -m webhook crds", description=f"List or refresh the CRDs `check` reads from the user's cache ({cache_dir()})."
    )
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("list", help="print the cached CRDs and where they come from")
    ref = sub.add_parser("refresh", help="cache the CRDs found under PATH (a chart's crds/ folder, a checkout)")
    ref.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="CRD file or folder (searched recursively)")
    ref.add_argument("--upstream", default=None, help="label recorded as the upstream version (default: git describe of PATH)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    folder = target or cache_dir()
    if args.action == "list":
        try:
            entries = cache_entries(folder)
        except CacheError as exc:
            print(f"crds list: {exc}", file=sys.stderr)
            return 2
        if not entries:
            print(f"no CRD cached in {folder} (python -m webhook crds refresh PATH)", file=sys.stderr)
        for e in entries:
            print(f"{e['name']}  {','.join(e.get('versions') or [])}  {describe_entry(e)}  sha256:{str(e.get('sha256', ''))[:12]}")
        return 0
    for path in args.paths:
        problem = unusable(path)
        if problem:
            print(f"crds refresh: {path}: {problem}", file=sys.stderr)
            return 2
    found = scan(args.paths)
    for line in found.problems:
        print(f"crds refresh: {line}", file=sys.stderr)
    if not found.crds:
        where = ", ".join(str(p) for p in args.paths)
        print(f"crds refresh: no CustomResourceDefinition found under {where} ({found.summary().removeprefix('read 0 CRD(s); ')})", file=sys.stderr)
        return 2
    try:
        changed = refresh(args.paths, args.upstream, target=folder, found=found)
    except CacheError as exc:
        print(f"crds refresh: {exc}", file=sys.stderr)
        return 2
    for line in last_of_each(found.crds)[1]:
        print(f"crds refresh: {line}", file=sys.stderr)
    for e in changed:
        at = f" @ {e['commit']}" if e.get("commit") else ""
        print(f"cached {e['name']} ({','.join(e['versions'])}) from {e['source']} [{e['upstream']}{at}]")
    print(f"{found.summary()}; cache: {folder}")
    return 0
