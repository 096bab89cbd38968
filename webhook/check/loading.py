"""Inputs to objects, with line numbers: files, directories (recursive .yaml/.yml/.json) and stdin.

The YAML is parsed and composed by libyaml (PyYAML's C parser, `CBaseLoader`: no Python-side
tag resolution), and the node tree is turned into values here, once, with the scalar rules of
the YAML library kubectl uses (go-yaml v2 through sigs.k8s.io/yaml): `yes`/`on`/`y` are booleans,
`0755` is octal, timestamps stay strings. The composed nodes are kept, so a finding's field path
can be traced back to `line:column` only when a finding needs it.

A key repeated in one mapping is kept once (the last value wins, as kubectl sends it) and named
in a warning; the API server never sees the repetition.
"""

from __future__ import annotations

import gc
import math
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import yaml

SUFFIXES = (".yaml", ".yml", ".json")
_STR = "tag:yaml.org,2002:str"
_BASE: Any = getattr(yaml, "CBaseLoader", yaml.BaseLoader)


class _Loader(_BASE):
    """libyaml's parser and composer; every node gets the default tag of its kind at once (the
    scalars are resolved later, by `resolve_plain`), instead of BaseResolver's generic walk."""

    _DEFAULT = {yaml.ScalarNode: "tag:yaml.org,2002:str", yaml.SequenceNode: "tag:yaml.org,2002:seq", yaml.MappingNode: "tag:yaml.org,2002:map"}

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        return self._DEFAULT[kind]


_LOADER: Any = _Loader

_TRUE = frozenset({"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"})
_FALSE = frozenset({"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"})
_NULL = frozenset({"", "~", "null", "Null", "NULL"})
_SPECIAL_FLOATS = {
    ".nan": math.nan,
    ".NaN": math.nan,
    ".NAN": math.nan,
    ".inf": math.inf,
    ".Inf": math.inf,
    ".INF": math.inf,
    "+.inf": math.inf,
    "+.Inf": math.inf,
    "+.INF": math.inf,
    "-.inf": -math.inf,
    "-.Inf": -math.inf,
    "-.INF": -math.inf,
}
_GO_INT = re.compile(r"[-+]?(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)")
_YAML_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_NUMERIC_START = frozenset("0123456789+-.")


def resolve_plain(text: str) -> Any:
    """A plain (unquoted) scalar as go-yaml v2 resolves it."""
    if text in _NULL:
        return None
    first = text[0]
    if first in _NUMERIC_START:
        plain = text.replace("_", "")
        if _GO_INT.fullmatch(plain):
            sign = -1 if plain[0] == "-" else 1
            digits = plain.lstrip("+-")
            if len(digits) > 1 and digits[0] == "0" and digits[1] in "xXoObB":
                value = int(digits[2:], {"x": 16, "o": 8, "b": 2}[digits[1].lower()])
            elif len(digits) > 1 and digits[0] == "0":
                value = int(digits, 8)
            else:
                value = int(digits)
            value *= sign
            if -(2**63) <= value < 2**64:
                return value
        if _YAML_FLOAT.fullmatch(plain):
            return float(plain)
        if text in _SPECIAL_FLOATS:
            return _SPECIAL_FLOATS[text]
        return text
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    return text


@dataclass(slots=True)
class Document:
    source: str
    number: int  # 1-based position of the YAML document in its file
    line: int  # 1-based line where the document (or its List item) starts
    column: int
    obj: dict[str, Any]
    node: Any = field(repr=False, default=None)
    item: int | None = None  # index inside a List document
    notes: list[tuple[tuple[str | int, ...], str]] = field(default_factory=list)  # (path, warning) from parsing

    def position(self, parts: tuple[str | int, ...]) -> tuple[int, int]:
        """(line, column) of the deepest node on `parts` that the YAML has (1-based)."""
        node = self.node
        line, column = self.line, self.column
        for part in parts:
            if part == "":  # the root a path written with a leading dot starts from (`.spec.replicas`)
                continue
            found = _child(node, part)
            if found is None:
                break
            key_node, node = found
            mark = (key_node or node).start_mark
            line, column = mark.line + 1, mark.column + 1
        return line, column


def _child(node: Any, part: str | int) -> tuple[Any, Any] | None:
    if isinstance(node, yaml.MappingNode):
        name = str(part)
        found = None
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.value == name:
                found = (key_node, value_node)
        return found
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
        return None, node.value[part]
    return None


@dataclass(slots=True)
class Problem:
    """An input that cannot be checked at all."""

    source: str
    number: int
    line: int
    message: str

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}" if self.line else self.source
        return f"{where}: document {self.number}: {self.message}" if self.number else f"{where}: {self.message}"


@dataclass(slots=True)
class Loaded:
    documents: list[Document] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


class _Builder:
    """Composed nodes to values; repeated keys become warnings with their path."""

    def __init__(self) -> None:
        self.notes: list[tuple[tuple[str | int, ...], str]] = []
        self._seen: dict[int, Any] = {}

    def build(self, node: Any, path: tuple[str | int, ...]) -> Any:
        if isinstance(node, yaml.ScalarNode):
            if node.tag == _STR and not node.style:
                return resolve_plain(node.value)
            if node.tag != _STR:
                return _tagged(node)
            return node.value
        memo = self._seen.get(id(node))
        if memo is not None:
            return memo
        if isinstance(node, yaml.SequenceNode):
            out_list: list[Any] = []
            self._seen[id(node)] = out_list
            for i, child in enumerate(node.value):
                out_list.append(self.build(child, path + (i,)))
            return out_list
        out: dict[str, Any] = {}
        self._seen[id(node)] = out
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.value == "<<" and not key_node.style:
                self._merge(out, value_node, path)
                continue
            key = self.build(key_node, path)
            if isinstance(key, (dict, list)):
                raise yaml.constructor.ConstructorError(None, None, "found an unhashable key", key_node.start_mark)
            key = key if isinstance(key, str) else _key_text(key)
            if key in out:
                self.notes.append((path + (key,), f'duplicate field "{_dotted(path + (key,))}": the last value is kept'))
            out[key] = self.build(value_node, path + (key,))
        return out

    def _merge(self, out: dict[str, Any], value_node: Any, path: tuple[str | int, ...]) -> None:
        sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
        for source in sources:
            merged = self.build(source, path)
            if isinstance(merged, dict):
                for k, v in merged.items():
                    out.setdefault(k, v)


def _key_text(key: Any) -> str:
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


def _tagged(node: Any) -> Any:
    tag = node.tag.rsplit(":", 1)[-1]
    if tag == "null":
        return None
    if tag == "bool":
        return node.value in _TRUE
    if tag in ("int", "float"):
        value = resolve_plain(node.value)
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else node.value
    return node.value


def _dotted(parts: tuple[str | int, ...]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + part
    return out


def usable(obj: Any) -> str | None:
    """Why a document cannot be checked at all, or None."""
    if not isinstance(obj, dict):
        return f"expected a Kubernetes object (a mapping), got {_kind_name(obj)}"
    for key in ("apiVersion", "kind"):
        if not isinstance(obj.get(key), str) or not obj.get(key):
            return f"{key}: required (a non-empty string)"
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return "metadata: required (a mapping)"
    name, generate = meta.get("name"), meta.get("generateName")
    if not (isinstance(name, str) and name) and not (isinstance(generate, str) and generate):
        return "metadata.name: required (or metadata.generateName)"
    return None


def _kind_name(obj: Any) -> str:
    return {list: "list", str: "str", int: "int", float: "float", bool: "bool"}.get(type(obj), type(obj).__name__)


def _is_list(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("kind"), str) and obj["kind"].endswith("List") and isinstance(obj.get("items"), list)


def parse(text: str, source: str, loaded: Loaded) -> None:
    """Every document of one YAML/JSON stream into `loaded`."""
    number = 0
    try:
        for number, node in enumerate(yaml.compose_all(text, Loader=_LOADER), start=1):
            if node is None:
                continue
            builder = _Builder()
            obj = builder.build(node, ())
            mark = node.start_mark
            if obj is None:
                continue
            if _is_list(obj):
                item_kind = obj["kind"][: -len("List")]
                for i, item in enumerate(obj["items"]):
                    item_node = node_at(node, ("items", i))
                    at = item_node.start_mark if item_node is not None else mark
                    if isinstance(item, dict) and item_kind and "kind" not in item:
                        item = {"apiVersion": obj.get("apiVersion"), "kind": item_kind, **item}
                    _add(
                        loaded,
                        Document(
                            source, number, at.line + 1, at.column + 1, item, item_node, i, [(p[2:], n) for p, n in builder.notes if p[:2] == ("items", i)]
                        ),
                    )
                continue
            _add(loaded, Document(source, number, mark.line + 1, mark.column + 1, obj, node, None, builder.notes))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 0
        loaded.problems.append(Problem(source, number + 1, line, f"not valid YAML/JSON: {' '.join(str(exc).split())}"))
    except RecursionError:
        loaded.problems.append(Problem(source, number, 0, "not valid YAML/JSON: nested too deeply"))


def node_at(node: Any, parts: tuple[str | int, ...]) -> Any:
    for part in parts:
        found = _child(node, part)
        if found is None:
            return None
        node = found[1]
    return node


def _add(loaded: Loaded, doc: Document) -> None:
    problem = usable(doc.obj)
    if problem:
        where = f"items[{doc.item}]: " if doc.item is not None else ""
        loaded.problems.append(Problem(doc.source, doc.number, doc.line, where + problem))
    else:
        loaded.documents.append(doc)


def expand(paths: list[str]) -> Iterator[tuple[str, Path | None]]:
    """(name to show, path or None for stdin) for every input: directories recursively, sorted."""
    for raw in paths:
        if raw == "-":
            yield "<stdin>", None
            continue
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
            for p in found:
                yield str(p), p
        else:
            yield raw, path


def load(paths: list[str], stdin: TextIO = sys.stdin) -> Loaded:
    """Every input's documents. The cyclic garbage collector is paused meanwhile: the values and
    nodes hold no cycles, and its sweeps over them cost three times the parsing."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _load(paths, stdin)
    finally:
        if collecting:
            gc.enable()


def _load(paths: list[str], stdin: TextIO) -> Loaded:
    loaded = Loaded()
    for name, path in expand(paths):
        try:
            text = stdin.read() if path is None else path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            loaded.problems.append(Problem(name, 0, 0, f"cannot read: {reason}"))
            continue
        parse(text, name, loaded)
    return loaded
