"""`python -m webhook crds refresh [--upstream LABEL] PATH...`: replace the bundled CRDs.

PATH is a CRD file or a directory searched recursively (a whole Kthena or Volcano checkout, a Helm
chart's `crds/` folder). Only `kind: CustomResourceDefinition` documents are read: Helm templates
(files containing `{{`), files that do not parse as YAML and documents of other kinds are skipped
and counted in the output, and hidden folders (`.git`, `.github`) are not searched. Every CRD
found whose name is already bundled replaces the bundled copy; `--add` bundles new ones too.
`versions.json` records, per CRD, the upstream label (`--upstream`, else `git describe` of the
checkout), the commit checked out when PATH is in a git work tree, the file it came from
(relative to PATH) and its sha256, so a reviewer can tell exactly what is shipped. A PATH that
cannot be used (missing, not a file or directory, no CRD under it) exits 2 with one line.

    python -m webhook crds refresh --upstream "kthena v1.0.0" ~/src/kthena/charts
    python -m webhook crds list
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import orjson
import yaml

from ..shapes import as_dict
from . import VERSIONS_FILE, crd_files, is_crd, strip_descriptions, versions

HERE = Path(__file__).resolve().parent


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


class Found(NamedTuple):
    """One CRD document met under a PATH, and the file it was read from."""

    crd: dict[str, Any]
    file: Path
    root: Path
    sha256: str


@dataclass
class Scan:
    """What a walk over the given paths met: the CRDs, and what it skipped and why."""

    crds: list[Found] = field(default_factory=list)
    helm_templates: int = 0  # files with `{{`: Helm renders them, we cannot parse them
    unparsable: int = 0  # files that are not YAML (or not readable as text)
    other_documents: int = 0  # YAML documents of another kind
    duplicates: list[str] = field(default_factory=list)  # "name in file" met again after the first

    def summary(self) -> str:
        return (
            f"read {len(self.crds)} CRD(s); skipped {self.helm_templates} Helm template file(s), "
            f"{self.unparsable} unparsable file(s), {self.other_documents} other document(s)"
        )


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def scan(paths: list[Path]) -> Scan:
    """Every `kind: CustomResourceDefinition` document under `paths` (files, or directories
    searched recursively for .yaml/.yml/.json). Helm templates, files that do not parse and
    documents of other kinds are counted and skipped; a CRD name met twice keeps its first file."""
    out = Scan()
    seen: set[str] = set()
    for root in paths:
        for file in crd_files(root):
            if root.is_dir() and any(part.startswith(".") for part in file.relative_to(root).parts[:-1]):
                continue
            try:
                raw = file.read_bytes()
            except OSError:
                out.unparsable += 1
                continue
            if b"{{" in raw:
                out.helm_templates += 1
                continue
            try:
                docs = [d for d in yaml.load_all(raw, Loader=_LOADER) if d is not None]
            except (yaml.YAMLError, ValueError, RecursionError):  # ValueError: bytes that are not UTF-8/16 text
                out.unparsable += 1
                continue
            sha = hashlib.sha256(raw).hexdigest()
            for doc in docs:
                if not is_crd(doc) or not isinstance(doc.get("metadata"), dict) or not isinstance(doc["metadata"].get("name"), str):
                    out.other_documents += 1
                    continue
                name = doc["metadata"]["name"]
                if name in seen:
                    out.duplicates.append(f"{name} in {file}")
                    continue
                seen.add(name)
                out.crds.append(Found(doc, file, root, sha))
    return out


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


def refresh(paths: list[Path], upstream: str | None, add: bool, target: Path = HERE, found: Scan | None = None) -> list[dict[str, Any]]:
    """Write the CRDs found under `paths` that are bundled (all of them with `add`) into `target`
    and record them in its versions.json; returns their new entries."""
    existing = target / VERSIONS_FILE
    current = {e["name"]: e for e in orjson.loads(existing.read_bytes())} if existing.exists() else {}
    found = found if found is not None else scan(paths)
    commits = {root: checkout_commit(root) for root in paths}
    changed: list[dict[str, Any]] = []
    for crd, file, root, sha in found.crds:
        name = crd["metadata"]["name"]
        if name not in current and not add:
            continue
        file_name = name + ".json"
        stripped = {k: v for k, v in crd.items() if k != "status"}
        (target / file_name).write_bytes(orjson.dumps(strip_descriptions(stripped), option=orjson.OPT_SORT_KEYS))
        source = str(file.relative_to(root)) if root.is_dir() else file.name
        label = upstream or _git_label(root) or "unknown"
        current[name] = entry_for(crd, file_name, label, source, sha, commits[root])
        changed.append(current[name])
    ordered = sorted(current.values(), key=lambda e: e["name"])
    (target / VERSIONS_FILE).write_bytes(orjson.dumps(ordered, option=orjson.OPT_INDENT_2) + b"\n")
    return changed


def unusable(path: Path) -> str | None:
    """Why `path` cannot be read for CRDs, or None."""
    if not path.exists():
        return "no such file or directory"
    if not (path.is_dir() or path.is_file()):
        return "not a file or directory"
    if path.is_dir() and not os.access(path, os.R_OK | os.X_OK):
        return "directory not readable"
    return None


def main(argv: list[str], target: Path = HERE) -> int:
    """The command; `target` is the bundle folder written (the package's own, but for tests)."""
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
            commit = f"  commit:{e['commit'][:12]}" if e.get("commit") else ""
            print(f"{e['name']}  {','.join(e['versions'])}  {e['upstream']}  {e['source']}  sha256:{e['sha256'][:12]}{commit}")
        return 0
    for path in args.paths:
        problem = unusable(path)
        if problem:
            print(f"crds refresh: {path}: {problem}", file=sys.stderr)
            return 2
    found = scan(args.paths)
    if not found.crds:
        where = ", ".join(str(p) for p in args.paths)
        print(f"crds refresh: no CustomResourceDefinition found under {where} ({found.summary().removeprefix('read 0 CRD(s); ')})", file=sys.stderr)
        return 2
    try:
        changed = refresh(args.paths, args.upstream, args.add, target=target, found=found)
    except (OSError, ValueError) as exc:  # ValueError: an unreadable versions.json in the bundle
        print(f"crds refresh: cannot update the bundle in {target}: {exc}", file=sys.stderr)
        return 2
    for e in changed:
        at = f" @ {e['commit']}" if e.get("commit") else ""
        print(f"refreshed {e['name']} ({','.join(e['versions'])}) from {e['source']} [{e['upstream']}{at}]")
    for dup in found.duplicates:
        print(f"ignored a second copy of {dup}")
    print(found.summary())
    if not changed:
        print("crds refresh: no bundled CRD found under the given paths (use --add to bundle new ones)", file=sys.stderr)
        return 2
    return 0
