"""The CRDs `check` validates against, read from where the user's truth is: files and folders the
user names (`--crds`), the cache `crds refresh` fills, or (in webhook/check/cluster.py) the
cluster itself. None ship with the product: a bundled CRD would be a snapshot of one Kthena
release while the user's cluster runs its own, and the webhook and `audit` never need one (the
API server applies the CRD before either sees an object).

`scan` walks files and folders (a Helm chart's `crds/`, a whole checkout) for
`kind: CustomResourceDefinition` documents. Each YAML document is parsed on its own, so one that
does not parse is named with its file and line and the others are still read. Helm templates
(files holding `{{` that do not parse, or whose CRD names are templated), documents of other kinds
and non-CRD text that does not parse are counted and skipped; hidden folders (`.git`) are not
searched. A CRD whose descriptions quote `{{` is read.

The cache is `$XDG_CACHE_HOME/servinggate/crds` (`~/.cache/servinggate/crds` without it): one
JSON file per CRD, without its `description` texts (most of the ModelServing CRD's size, read by
no check), and `versions.json` naming, per CRD, the upstream label, the commit of the checkout it
was read from, the file and its sha256.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml

VERSIONS_FILE = "versions.json"
SUFFIXES = (".yaml", ".yml", ".json")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DOCUMENT_START = re.compile(rb"^---(?:[ \t]|$)", re.MULTILINE)


def is_crd(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition" and str(doc.get("apiVersion", "")).startswith("apiextensions.k8s.io/")


def malformed(crd: dict[str, Any]) -> str | None:
    """Why a CRD document cannot be used (the fields `check` reads to find its kinds), or None."""
    meta, spec = crd.get("metadata"), crd.get("spec")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        return "no metadata.name"
    if not isinstance(spec, dict) or not isinstance(spec.get("group"), str) or not isinstance((spec.get("names") or {}).get("kind"), str):
        return "no spec.group or spec.names.kind"
    versions = spec.get("versions")
    if not isinstance(versions, list) or not all(isinstance(v, dict) and isinstance(v.get("name"), str) for v in versions):
        return "spec.versions is not a list of named versions"
    return None


@dataclass(frozen=True, slots=True)
class Found:
    """One CRD document met under a PATH: the file, the line its document starts on, the sha256 of the file."""

    crd: dict[str, Any]
    file: Path
    line: int
    root: Path
    sha256: str

    @property
    def name(self) -> str:
        return str(self.crd["metadata"]["name"])


@dataclass
class Scan:
    """What a walk over the given paths met: the CRDs in the order read, what could not be read and what was skipped."""

    crds: list[Found] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # "FILE:LINE: why", one per CRD document that cannot be used
    helm_templates: int = 0  # files with `{{`: Helm renders them, we cannot parse them
    unparsable: int = 0  # files or documents that are not YAML and do not look like a CRD
    other_documents: int = 0  # YAML documents of another kind

    def summary(self) -> str:
        return (
            f"read {len(self.crds)} CRD(s); skipped {self.helm_templates} Helm template file(s), "
            f"{self.unparsable} unparsable file(s) or document(s), {self.other_documents} other document(s)"
        )


def crd_files(path: Path) -> list[Path]:
    """`path` itself, or every .yaml/.yml/.json below it outside hidden folders (sorted, recursive)."""
    if not path.is_dir():
        return [path]
    return sorted(
        p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES and not any(part.startswith(".") for part in p.relative_to(path).parts[:-1])
    )


def unusable(path: Path) -> str | None:
    """Why `path` cannot be read for CRDs, or None."""
    if not path.exists():
        return "no such file or directory"
    if not (path.is_dir() or path.is_file()):
        return "not a file or directory"
    if not os.access(path, os.R_OK | (os.X_OK if path.is_dir() else 0)):
        return "not readable"
    return None


def _documents(raw: bytes) -> list[tuple[int, bytes]]:
    """The YAML documents of a file, each with the (1-based) line its text starts on (a `---` line, or the file's first)."""
    starts = [m.start() for m in _DOCUMENT_START.finditer(raw)]
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    bounds = starts + [len(raw)]
    out, line, previous = [], 1, 0
    for a, b in zip(bounds, bounds[1:]):
        line += raw.count(b"\n", previous, a)
        previous = a
        out.append((line, raw[a:b]))
    return out


def _reason(exc: Exception) -> str:
    text = getattr(exc, "problem", None) or str(exc)
    return " ".join(str(text).split())


def _read_file(file: Path, root: Path, out: Scan) -> None:
    try:
        raw = file.read_bytes()
    except OSError as exc:
        out.problems.append(f"{file}: cannot read: {exc.strerror}")
        return
    templated = b"{{" in raw  # a Helm template, or a CRD whose descriptions hold `{{` (Go templates in its docs)
    sha = hashlib.sha256(raw).hexdigest()
    try:  # a JSON file (a cache entry, `kubectl get crd -o json`): orjson is the fast parser
        parsed: list[tuple[int, Any]] = [(1, orjson.loads(raw))]
    except orjson.JSONDecodeError:
        parsed = []
        for line, text in _documents(raw):
            first = line + 1 if text.startswith(b"---") else line  # a document's line: its first after `---`
            try:
                parsed.append((first, yaml.load(text, Loader=_LOADER)))
            except (yaml.YAMLError, ValueError, RecursionError) as exc:  # ValueError: bytes that are not UTF-8/16 text
                if templated:  # Helm renders it; we cannot
                    out.helm_templates += 1
                    return
                if b"CustomResourceDefinition" in text:
                    mark = getattr(exc, "problem_mark", None)
                    at = line + (mark.line if mark is not None else 0)
                    out.problems.append(f"{file}:{at}: a CustomResourceDefinition that does not parse: {_reason(exc)}")
                else:
                    out.unparsable += 1
    for line, doc in parsed:
        docs = doc.get("items") if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinitionList" else [doc]
        for item in docs if isinstance(docs, list) else []:
            if item is None:
                continue
            if not is_crd(item):
                out.other_documents += 1
                continue
            problem = malformed(item)
            if templated and problem is None and "{{" in f"{item['metadata']['name']}{item['spec']['group']}{item['spec']['names']['kind']}":
                out.helm_templates += 1  # a template that happens to parse: its names are Helm's to fill
                return
            if problem:
                out.problems.append(f"{file}:{line}: a CustomResourceDefinition that cannot be used: {problem}")
                continue
            out.crds.append(Found(item, file, line, root, sha))


def scan(paths: list[Path]) -> Scan:
    """Every usable CRD document under `paths`, in the order given (files, or folders searched
    recursively); see the module doc for what is skipped."""
    out = Scan()
    for root in paths:
        for file in crd_files(root):
            _read_file(file, root, out)
    return out


def strip_descriptions(node: Any) -> Any:
    """The schema without `description` texts. A property *named* description is kept: only the
    key inside a schema object is dropped, never an entry of `properties`."""
    if isinstance(node, list):
        return [strip_descriptions(x) for x in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "description" and isinstance(value, str):
            continue
        if key in _DATA_KEYS:  # values, not schemas: kept as they are
            out[key] = value
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: strip_descriptions(sub) for name, sub in value.items()}
        else:
            out[key] = strip_descriptions(value)
    return out


_DATA_KEYS = frozenset({"default", "enum", "example", "x-kubernetes-validations"})


# ---- the cache `crds refresh` fills ----------------------------------------------------------


class CacheError(ValueError):
    """The cache cannot be read or written; the message says where and why (one line)."""


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """`$XDG_CACHE_HOME/servinggate/crds`, or `~/.cache/servinggate/crds` (the XDG base directory
    rule: a relative XDG_CACHE_HOME is ignored)."""
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_CACHE_HOME") or ""
    root = Path(base) if os.path.isabs(base) else Path(os.path.expanduser("~")) / ".cache"
    return root / "servinggate" / "crds"


def cache_entries(folder: Path | None = None) -> list[dict[str, Any]]:
    """The cache's index (one entry per CRD: name, group, kind, versions, upstream, commit,
    source, sha256, file); empty when nothing was cached. Raises CacheError when unreadable."""
    folder = folder or cache_dir()
    index = folder / VERSIONS_FILE
    if not index.exists():
        return []
    try:
        entries = orjson.loads(index.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise CacheError(f"the CRD cache {folder} cannot be read ({_reason(exc)}): run `crds refresh PATH` again") from None
    if not isinstance(entries, list) or not all(isinstance(e, dict) and isinstance(e.get("file"), str) for e in entries):
        raise CacheError(f"the CRD cache {folder} cannot be read ({VERSIONS_FILE} is not a list of entries): run `crds refresh PATH` again")
    return entries


def cached(folder: Path | None = None) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(entry, CRD) for every cached CRD. Raises CacheError when the cache cannot be read."""
    folder = folder or cache_dir()
    out = []
    for entry in cache_entries(folder):
        try:
            crd = orjson.loads((folder / entry["file"]).read_bytes())
        except (OSError, orjson.JSONDecodeError) as exc:
            raise CacheError(f"the CRD cache {folder} cannot be read ({entry['file']}: {_reason(exc)}): run `crds refresh PATH` again") from None
        out.append((entry, crd))
    return out


def describe_entry(entry: dict[str, Any]) -> str:
    """`kthena v0.4.0 @ 2029995cfa57, charts/.../x.yaml`: where a cached CRD was read."""
    commit = f" @ {str(entry['commit'])[:12]}" if entry.get("commit") else ""
    return f"{entry.get('upstream', 'unknown')}{commit}, {entry.get('source', '?')}"


def _served(crd: dict[str, Any]) -> str:
    return ",".join(str(v.get("name")) for v in crd["spec"]["versions"] if v.get("served", True))


def describe_sources(paths: list[str], folder: Path | None = None) -> list[str]:
    """What `check` validates against without `--kubeconfig`, one line per CRD, for `version` and
    `check --help`: the cache's CRDs, then those of each path (a later one wins for a kind)."""
    folder = folder or cache_dir()
    out = ["CRDs check validates against (a later one wins for the same kind; --kubeconfig: the cluster's CRDs in place of the cache):"]
    try:
        entries = cache_entries(folder)
    except CacheError as exc:
        entries = []
        out.append(f"  cache: {exc}")
    if entries:
        out.append(f"  cache {folder} (python -m webhook crds refresh PATH):")
        out += [f"    {e['name']} {','.join(e.get('versions') or [])}: {describe_entry(e)}" for e in entries]
    elif len(out) == 1:
        out.append(f"  cache {folder}: empty (python -m webhook crds refresh PATH fills it)")
    for raw in paths:
        problem = unusable(Path(raw))
        found = scan([Path(raw)]) if problem is None else Scan()
        why = problem or ("" if found.crds else "no CustomResourceDefinition found")
        out.append(f"  --crds {raw}:" + (f" {why}" if why else ""))
        out += [f"    {f.name} {_served(f.crd)}: {f.file}" + (f":{f.line}" if f.line > 1 else "") for f in found.crds]
        out += [f"    {line}" for line in found.problems]
    if not entries and not paths:
        out.append("  none given: a custom kind is judged by our rules alone; its schema, defaults and CEL rules need its CRD (--crds PATH)")
    return out
