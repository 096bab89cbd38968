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

Patterns are compiled by RE2 itself (Google's `re2` bindings, `go_regex`), as Go's `regexp`, which
is RE2, compiles them in Volcano: the same syntax and linear-time matching, so a pattern such as
`(a*)*b` cannot stall the webhook or the reconciler as a backtracking matcher could. What Go's
regexp/syntax refuses selects nothing, as it does in Volcano; the C++ parser accepts two forms Go
refuses (`\\C`, and a group name that is not ASCII), refused here before it runs. Known
differences left: RE2 refuses a pattern whose compiled program exceeds its memory budget (RE2's default;
a large Unicode class repeated hundreds of times, such as `\\pL{1000}`) that Go accepts, and Go
refuses patterns nested over 1000 deep or too large for its own size limits that RE2 accepts: both
are far beyond a pattern for node names (at most 253 characters), and the budget keeps one short
pattern from costing the webhook memory and CPU. Unicode class names are those of the Unicode
version the RE2 release knows.

A leaf module: it reads HyperNodes through their typed view (webhook/shapes/volcano.py, decoded
by the caller) and judges label keys and values by apimachinery's formats (webhook/names.py, the
ones the Pod validation port uses). Every answer carries the reason a member selects nothing when
it is the input's fault, for the caller to note once.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeGuard

import re2

from .names import is_qualified_name, is_valid_label_value
from .shapes.volcano import HYPERNODE, NODE, HyperNode, LabelSelector, MemberSelector

# ---- Go RE2 patterns on RE2 ---------------------------------------------------------------------


class GoPattern(Protocol):
    """A compiled pattern: `search` finds it anywhere in the text (Go's MatchString)."""

    def search(self, text: str) -> object: ...


def _go_text(text: str) -> str:
    """`text` as Go holds it after decoding JSON: a lone UTF-16 surrogate (which JSON can spell and
    UTF-8 cannot) becomes U+FFFD, as encoding/json makes it; RE2 takes UTF-8."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _go_only_refusal(pattern: str) -> str:
    """Why Go's regexp/syntax refuses a pattern that C++ RE2 accepts, or "": `\\C` (any byte) outside a
    class, which Go's parseEscape does not know, and a group name that is not ASCII (isValidCaptureName
    takes `[A-Za-z0-9_]`, C++ RE2 any Unicode word character); Go's `regexp/syntax/parse.go` (Go 1.22+). Scans escapes, `\\Q...\\E` literals and
    classes the way both parsers do; C++ RE2 judges everything else, so only patterns it accepts
    need to be read right."""
    i, in_class = 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            nxt = pattern[i + 1 : i + 2]
            if nxt == "Q" and not in_class:
                end = pattern.find("\\E", i + 2)
                i = len(pattern) if end < 0 else end + 2
                continue
            if nxt == "C" and not in_class:
                return "invalid escape sequence: \\C (Go's regexp does not implement it)"
            i += 2
        elif in_class:
            if c == "[" and pattern.startswith("[:", i) and pattern.find(":]", i + 2) > 0:
                i = pattern.find(":]", i + 2) + 2
                continue
            in_class = c != "]"
            i += 1
        elif c == "[":
            i += 1 + (pattern[i + 1 : i + 2] == "^")
            i += pattern[i : i + 1] == "]"  # a `]` first in a class is a literal
            in_class = True
        elif pattern.startswith(("(?P<", "(?<"), i):
            start = pattern.index("<", i) + 1
            name = pattern[start : pattern.find(">", start)]
            if not name.isascii():
                return f"invalid named capture: {name!r} (Go's regexp takes ASCII letters, digits and _)"
            i = start
        else:
            i += 1
    return ""


_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused pattern is the caller's note, not a line on stderr


@functools.lru_cache(maxsize=1024)
def go_regex(pattern: str) -> GoPattern | str:
    """The pattern compiled as Go's `regexp.Compile` compiles it (RE2 syntax, linear-time
    matching), or why it does not compile."""
    pattern = _go_text(pattern)
    refused = _go_only_refusal(pattern)
    if refused:
        return refused
    try:
        compiled: GoPattern = re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        return reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
    return compiled


def go_search(compiled: GoPattern, name: str) -> bool:
    """Go's MatchString: the pattern matches somewhere in `name`."""
    try:
        return compiled.search(name) is not None
    except UnicodeEncodeError:
        return compiled.search(_go_text(name)) is not None


# ---- label selectors as metav1.LabelSelectorAsSelector converts them -------------------------------


def _key_ok(key: Any) -> TypeGuard[str]:
    """apimachinery validation.IsQualifiedName."""
    return isinstance(key, str) and not is_qualified_name(key)


def _value_ok(value: Any) -> bool:
    """apimachinery validation.IsValidLabelValue."""
    return isinstance(value, str) and not is_valid_label_value(value)


Requirement = tuple[str, str, frozenset[str]]


def label_requirements(selector: LabelSelector) -> list[Requirement] | str:
    """The requirements of a non-empty metav1.LabelSelector, or why LabelSelectorAsSelector
    refuses it (the refusal Volcano logs before selecting nothing)."""
    reqs: list[Requirement] = []
    if selector.match_labels is None:
        return "matchLabels is not a map"
    for label, value in selector.match_labels.items():
        if not _key_ok(label) or not _value_ok(value):
            return f"matchLabels {label!r}: {value!r} is not a valid label"
        reqs.append((label, "In", frozenset((value,))))
    if selector.expressions is None:
        return "matchExpressions is not a list"
    for expr in selector.expressions:
        if expr is None:
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


def node_members(selector: MemberSelector | None, nodes: Mapping[str, Mapping[str, Any]]) -> Picked:
    """The nodes (name -> labels) one `Node` member's selector picks: volcano GetMembers."""
    if selector is None:
        return Picked(frozenset(), "its selector is not an object")
    members: set[str] = set()
    if selector.exact is not None:
        if not selector.exact:
            return Picked(frozenset(), "exactMatch without a name")
        members.add(selector.exact)
    if selector.has_regex:
        raw = selector.pattern
        compiled = go_regex(raw) if isinstance(raw, str) else "not a string"
        if isinstance(compiled, str):
            return Picked(frozenset(), f"regexMatch pattern {raw!r} does not compile as Go's RE2 ({compiled})")
        members.update(n for n in nodes if go_search(compiled, n))
    if selector.has_label:
        label = selector.label
        if label is None:
            return Picked(frozenset(), "labelMatch is not an object")
        if label.empty:
            return Picked(frozenset(members))  # valid, and selects nothing: not the member's fault
        reqs = label_requirements(label)
        if isinstance(reqs, str):
            return Picked(frozenset(), f"labelMatch refused: {reqs}")
        members.update(n for n, labels in nodes.items() if requirements_match(reqs, labels))
    return Picked(frozenset(members))


def hypernode_member(selector: MemberSelector | None) -> str | None:
    """The HyperNode a `HyperNode` member names (exact name only), or None."""
    return (selector.exact or None) if selector is not None else None


@dataclass(frozen=True, slots=True)
class Members:
    """A HyperNode's members, read: Node selectors, child HyperNode names, and what was skipped."""

    nodes: tuple[MemberSelector, ...] = ()
    children: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()


def members_of(hypernode: HyperNode) -> Members:
    """The members of a HyperNode, as the scheduler walks them (BuildHyperNodeCache)."""
    nodes: list[MemberSelector] = []
    children: list[str] = []
    problems: list[str] = []
    for member in hypernode.members:
        if member.type == NODE:
            if member.selector is not None:
                nodes.append(member.selector)
            else:
                problems.append(f"members[{member.index}]: its selector is not an object")
        elif member.type == HYPERNODE:
            name = hypernode_member(member.selector)
            if name is None:
                problems.append(f"members[{member.index}]: a HyperNode member is resolved by exactMatch only, and this one has none")
            else:
                children.append(name)
        else:
            problems.append(f"members[{member.index}]: unknown member type {member.type!r}")
    return Members(tuple(nodes), tuple(children), tuple(problems))


def resolve_nodes(hypernode: HyperNode, nodes: Mapping[str, Mapping[str, Any]]) -> tuple[set[str], list[str]]:
    """The nodes a HyperNode's own `Node` members select (the union; exact names of nodes that do
    not exist left out) and a note for each member at fault."""
    read = members_of(hypernode)
    picked: set[str] = set()
    notes = list(read.problems)
    for i, selector in enumerate(read.nodes):
        got = node_members(selector, nodes)
        picked |= got.names
        if got.problem:
            notes.append(f"Node member {i + 1}: {got.problem}: it selects nothing")
    return {n for n in picked if n in nodes}, notes
