"""HyperNode members as Volcano resolves them: one resolver for the scale-in reconciler and `plan`
(scalein/topology.py) and for the will-it-run rules and `check` (policies/clusterfacts.py), so
that a HyperNode holds the same nodes whichever command asks.

A port of volcano `pkg/util/hypernode/member_selector.go` GetMembers (master ed72c7c8, 2026-08-20)
and of how the scheduler walks members (`pkg/scheduler/api/hyper_node_info.go`,
BuildHyperNodeCache):

- a member of type `Node` selects, as the union of its selectors: the exact name as given (an
  empty name selects nothing, whatever else the selector says); every node whose name a regular
  expression matches anywhere (Go's `MatchString`: unanchored); every node a label selector
  matches. A pattern that does not compile selects nothing, nor does a label selector with
  neither `matchLabels` nor `matchExpressions`, nor one `metav1.LabelSelectorAsSelector` refuses
  (an unknown operator, `In` without values, a malformed key or value);
- a member of type `HyperNode` is the HyperNode its `exactMatch` names; a regex or a label
  selector there selects nothing ("HyperNode member does not support regex match");
- a member of another type is skipped.

Patterns are Go RE2 and run here on Python's `re` (`go_regex`): what RE2 refuses and Python would
accept (look-around, back-references, possessive and nested repetition, a repeat count over
1000, `\\Z`, flags RE2 does not know) selects nothing, as it does in Volcano; the RE2 syntax
Python spells differently is translated (`(?<name>`, `\\z`, `\\Q...\\E`, `\\x{...}`, octal escapes,
POSIX classes such as `[[:digit:]]`, a `{` that is not a repeat); the few RE2 forms with no Python
spelling (`\\pL` Unicode classes, `(?U)`, a flag group after the pattern's start, a negated POSIX
class) select nothing and say so. Node names are DNS subdomains, so the ASCII/Unicode differences
of `\\d`, `\\w`, `\\s` and case folding cannot show.

Leaf module: it imports nothing of ours. Every answer carries the reason a member selects nothing
when it is the input's fault, for the caller to note once.
"""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

NODE, HYPERNODE = "Node", "HyperNode"

# ---- Go RE2 patterns on Python's re --------------------------------------------------------------

_MAX_REPEAT = 1000  # regexp/syntax maxRepeat
_REPEAT = re.compile(r"\{(\d+)(,(\d*))?\}")
_POSIX = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7f",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}
_SIMPLE = {"a": "\\x07", "f": "\\x0c", "n": "\\n", "r": "\\r", "t": "\\t", "v": "\\x0b"}
_CLASSES = set("dDsSwW")


class _Refused(Exception):
    """RE2 refuses the pattern, or it has no Python spelling: it selects nothing."""


def _char(code: int) -> str:
    if code > 0x10FFFF:
        raise _Refused("escape beyond Unicode")
    return re.escape(chr(code))


def _escape(p: str, i: int, in_class: bool) -> tuple[str, int]:
    """The Python text of the escape at p[i] == '\\\\' and the index after it (regexp/syntax parseEscape)."""
    if i + 1 >= len(p):
        raise _Refused("trailing backslash")
    c = p[i + 1]
    if c.isascii() and not c.isalnum():
        return re.escape(c), i + 2
    if c in _SIMPLE:
        return _SIMPLE[c], i + 2
    if c in _CLASSES:
        return "\\" + c, i + 2
    if c in "01234567":
        if c != "0" and not (i + 2 < len(p) and p[i + 2] in "01234567"):
            raise _Refused("back-references are not RE2")
        j = i + 2
        while j < len(p) and j < i + 4 and p[j] in "01234567":
            j += 1
        return _char(int(p[i + 1 : j], 8)), j
    if c == "x":
        if i + 2 < len(p) and p[i + 2] == "{":
            end = p.find("}", i + 3)
            digits = p[i + 3 : end] if end > 0 else ""
            if not digits or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise _Refused("bad \\x{} escape")
            return _char(int(digits, 16)), end + 1
        digits = p[i + 2 : i + 4]
        if len(digits) != 2 or not all(d in "0123456789abcdefABCDEF" for d in digits):
            raise _Refused("bad \\x escape")
        return _char(int(digits, 16)), i + 4
    if not in_class:
        if c in "bBA":
            return "\\" + c, i + 2
        if c == "z":
            return "\\Z", i + 2
    raise _Refused(f"\\{c} is not an RE2 escape here, or has no Python spelling")


def _class(p: str, i: int) -> tuple[str, int]:
    """The Python text of the character class at p[i] == '[' and the index after it."""
    out = ["["]
    j = i + 1
    if j < len(p) and p[j] == "^":
        out.append("^")
        j += 1
    first = True
    while j < len(p):
        c = p[j]
        if c == "]" and not first:
            out.append("]")
            return "".join(out), j + 1
        first = False
        if c == "[" and p.startswith("[:", j):
            end = p.find(":]", j + 2)
            name = p[j + 2 : end] if end > 0 else ""
            if name in _POSIX:
                out.append(_POSIX[name])
                j = end + 2
                continue
            if name.startswith("^") and name[1:] in _POSIX:
                raise _Refused("a negated POSIX class has no Python spelling inside a class")
            if end > 0:
                raise _Refused(f"unknown POSIX class [:{name}:]")
        if c == "\\":
            text, j = _escape(p, j, in_class=True)
            out.append(text)
            continue
        out.append("\\" + c if c in "[]&~|" else c)  # literal in RE2; Python warns of nested sets
        j += 1
    raise _Refused("missing closing ]")


def _group(p: str, i: int, at_start: bool) -> tuple[str, int]:
    """The Python text opening the group at p[i] == '(' and the index after it."""
    if not p.startswith("(?", i):
        return "(", i + 1
    rest = p[i + 2 :]
    if rest.startswith("P<") or (rest.startswith("<") and not rest.startswith(("<=", "<!"))):
        start = i + (4 if rest.startswith("P<") else 3)
        end = p.find(">", start)
        name = p[start:end] if end > 0 else ""
        if not name or not all(ch == "_" or (ch.isascii() and ch.isalnum()) for ch in name):
            raise _Refused("bad group name")
        return f"(?P<{name}>", end + 1
    m = re.match(r"([a-zA-Z]*)(-([a-zA-Z]*))?([:)])", rest)
    if not m:
        raise _Refused("look-around, comments, atomic and conditional groups are not RE2")
    on, off, close = m.group(1), m.group(3) or "", m.group(4)
    if set(on + off) - set("imsU") or (m.group(2) and not off):
        raise _Refused("flags RE2 does not know")
    if "U" in on + off:
        raise _Refused("(?U) has no Python spelling")
    end = i + 2 + m.end()
    if close == ":":
        return "(?" + on + ("-" + off if off else "") + ":", end
    if not on and not off:
        return "", end  # `(?)`: no flags, nothing to do
    if off or not at_start:
        raise _Refused("a flag group after the start of the pattern has no Python spelling")
    return "(?" + on + ")", end


def translate(pattern: str) -> str:
    """`pattern` (Go RE2 syntax) as a Python pattern that matches the same names; raises
    ValueError with the reason when RE2 refuses it or Python cannot spell it."""
    out: list[str] = []
    i, after_repeat = 0, False
    try:
        while i < len(pattern):
            c = pattern[i]
            m = _REPEAT.match(pattern, i) if c == "{" else None
            if c in "*+?" or m:
                if after_repeat:
                    raise _Refused("nested repetition operator")
                if m:
                    low, high = int(m.group(1)), m.group(3)
                    if low > _MAX_REPEAT or (high and int(high) > _MAX_REPEAT):
                        raise _Refused("repeat count over 1000")
                    out.append(m.group(0))
                    i = m.end()
                else:
                    out.append(c)
                    i += 1
                if i < len(pattern) and pattern[i] == "?":  # lazy
                    out.append("?")
                    i += 1
                after_repeat = True
                continue
            after_repeat = False
            if c == "\\":
                if pattern.startswith("\\Q", i):
                    end = pattern.find("\\E", i + 2)
                    literal = pattern[i + 2 :] if end < 0 else pattern[i + 2 : end]
                    out.append(re.escape(literal))
                    i = len(pattern) if end < 0 else end + 2
                    continue
                text, i = _escape(pattern, i, in_class=False)
                out.append(text)
            elif c == "[":
                text, i = _class(pattern, i)
                out.append(text)
            elif c == "(":
                text, i = _group(pattern, i, at_start=not out)
                out.append(text)
            elif c == "{":
                out.append("\\{")  # not a repeat: a literal brace in RE2 (Python reads `{,n}` as one)
                i += 1
            else:
                out.append(c)
                i += 1
    except _Refused as exc:
        raise ValueError(str(exc)) from None
    return "".join(out)


@functools.lru_cache(maxsize=1024)
def go_regex(pattern: str) -> re.Pattern[str] | str:
    """The compiled pattern, or why it selects nothing (RE2 refuses it, or Python cannot spell it)."""
    try:
        text = translate(pattern)
    except ValueError as exc:
        return str(exc)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return re.compile(text, re.ASCII)
    except (re.error, RecursionError, OverflowError) as exc:
        return str(exc)


# ---- label selectors as metav1.LabelSelectorAsSelector converts them -------------------------------

_QNAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def _key_ok(key: Any) -> TypeGuard[str]:
    """apimachinery validation.IsQualifiedName."""
    if not isinstance(key, str):
        return False
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _SUBDOMAIN.fullmatch(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(_QNAME.fullmatch(name))


def _value_ok(value: Any) -> bool:
    """apimachinery validation.IsValidLabelValue."""
    return isinstance(value, str) and len(value) <= 63 and (not value or bool(_QNAME.fullmatch(value)))


Requirement = tuple[str, str, frozenset[str]]


def label_requirements(selector: Mapping[str, Any]) -> list[Requirement] | str:
    """The requirements of a non-empty metav1.LabelSelector, or why LabelSelectorAsSelector
    refuses it (the refusal Volcano logs before selecting nothing)."""
    reqs: list[Requirement] = []
    match_labels = selector.get("matchLabels")
    if match_labels is not None and not isinstance(match_labels, dict):
        return "matchLabels is not a map"
    for key, value in (match_labels or {}).items():
        if not _key_ok(key) or not _value_ok(value):
            return f"matchLabels {key!r}: {value!r} is not a valid label"
        reqs.append((key, "In", frozenset((value,))))
    expressions = selector.get("matchExpressions")
    if expressions is not None and not isinstance(expressions, list):
        return "matchExpressions is not a list"
    for expr in expressions or ():
        if not isinstance(expr, dict):
            return "a matchExpressions entry is not an object"
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values")
        values = [] if values is None else values
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return f"{op!r} is not a valid label selector operator"
        if not _key_ok(key) or not isinstance(values, list):
            return f"matchExpressions key {key!r} is not a valid label key"
        if op in ("In", "NotIn") and not values:
            return f"matchExpressions {key}: for 'in', 'notin' operators, values set can't be empty"
        if op in ("Exists", "DoesNotExist") and values:
            return f"matchExpressions {key}: values set must be empty for exists and does not exist"
        if not all(_value_ok(v) for v in values):
            return f"matchExpressions {key}: {values!r} holds an invalid label value"
        reqs.append((key, op, frozenset(values)))
    return reqs


def requirements_match(reqs: list[Requirement], labels: Mapping[str, Any]) -> bool:
    """labels.Selector.Matches: every requirement holds."""
    for key, op, values in reqs:
        has = key in labels
        if op == "In" and not (has and labels[key] in values):
            return False
        if op == "NotIn" and has and labels[key] in values:
            return False
        if (op == "Exists" and not has) or (op == "DoesNotExist" and has):
            return False
    return True


# ---- members ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Picked:
    """What one Node member selects: the names GetMembers returns (an exact name as given, whether
    or not such a node exists), and, when the member itself is at fault, why it selects nothing."""

    names: frozenset[str]
    problem: str = ""


def _present(selector: Mapping[str, Any], key: str) -> bool:
    """A pointer field set in Go: present and not null."""
    return selector.get(key) is not None


def node_members(selector: Any, nodes: Mapping[str, Mapping[str, Any]]) -> Picked:
    """The nodes (name -> labels) one `Node` member's selector picks: volcano GetMembers."""
    if not isinstance(selector, dict):
        return Picked(frozenset(), "its selector is not an object")
    members: set[str] = set()
    if _present(selector, "exactMatch"):
        exact = selector["exactMatch"]
        name = exact.get("name") if isinstance(exact, dict) else None
        if not isinstance(name, str) or not name:
            return Picked(frozenset(), "exactMatch without a name")
        members.add(name)
    if _present(selector, "regexMatch"):
        regex = selector["regexMatch"]
        raw = regex.get("pattern") if isinstance(regex, dict) else None
        compiled = go_regex(raw) if isinstance(raw, str) else "not a string"
        if isinstance(compiled, str):
            return Picked(frozenset(), f"regexMatch pattern {raw!r} does not compile as Go's RE2 ({compiled})")
        members.update(n for n in nodes if compiled.search(n))
    if _present(selector, "labelMatch"):
        label = selector["labelMatch"]
        if not isinstance(label, dict):
            return Picked(frozenset(), "labelMatch is not an object")
        if not label.get("matchLabels") and not label.get("matchExpressions"):
            return Picked(frozenset(members))  # valid, and selects nothing: not the member's fault
        reqs = label_requirements(label)
        if isinstance(reqs, str):
            return Picked(frozenset(), f"labelMatch refused: {reqs}")
        members.update(n for n, labels in nodes.items() if requirements_match(reqs, labels))
    return Picked(frozenset(members))


def hypernode_member(selector: Any) -> str | None:
    """The HyperNode a `HyperNode` member names (exact name only), or None."""
    exact = selector.get("exactMatch") if isinstance(selector, dict) else None
    name = exact.get("name") if isinstance(exact, dict) else None
    return name if isinstance(name, str) and name else None


@dataclass(frozen=True, slots=True)
class Members:
    """A HyperNode's members, read: Node selectors, child HyperNode names, and what was skipped."""

    nodes: tuple[dict[str, Any], ...] = ()
    children: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()


def members_of(spec: Any) -> Members:
    """The members of a HyperNode's spec, as the scheduler walks them (BuildHyperNodeCache)."""
    members = spec.get("members") if isinstance(spec, dict) else None
    nodes: list[dict[str, Any]] = []
    children: list[str] = []
    problems: list[str] = []
    for i, member in enumerate(members if isinstance(members, list) else ()):
        kind = member.get("type") if isinstance(member, dict) else None
        selector = member.get("selector") if isinstance(member, dict) else None
        if kind == NODE:
            if isinstance(selector, dict):
                nodes.append(selector)
            else:
                problems.append(f"members[{i}]: its selector is not an object")
        elif kind == HYPERNODE:
            name = hypernode_member(selector)
            if name is None:
                problems.append(f"members[{i}]: a HyperNode member is resolved by exactMatch only, and this one has none")
            else:
                children.append(name)
        else:
            problems.append(f"members[{i}]: unknown member type {kind!r}")
    return Members(tuple(nodes), tuple(children), tuple(problems))


def resolve_nodes(spec: Any, nodes: Mapping[str, Mapping[str, Any]]) -> tuple[set[str], list[str]]:
    """The nodes a HyperNode's own `Node` members select (the union; exact names of nodes that do
    not exist left out) and a note for each member at fault."""
    read = members_of(spec)
    picked: set[str] = set()
    notes = list(read.problems)
    for i, selector in enumerate(read.nodes):
        got = node_members(selector, nodes)
        picked |= got.names
        if got.problem:
            notes.append(f"Node member {i + 1}: {got.problem}: it selects nothing")
    return {n for n in picked if n in nodes}, notes
