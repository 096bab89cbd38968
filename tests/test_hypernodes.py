"""HyperNode members as Volcano resolves them (webhook/hypernodes.py), and the two users of the
resolver, the scale-in topology and the will-it-run facts, agreeing on every case.

The first table restates the cases of volcano `pkg/util/hypernode/member_selector_test.go`
(TestGetMembers, master ed72c7c8) on the same three nodes, then the rules of `GetMembers` and
`metav1.LabelSelectorAsSelector` it relies on, in our own words."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.willrun import hypernode, node

from webhook import hypernodes
from webhook.policies.clusterfacts import ClusterFacts, store_of_objects
from webhook.scalein import topology
from webhook.shapes.volcano import hypernode_spec, member_selector

REPO = Path(__file__).resolve().parent.parent
NODES = {"worker-1": {"role": "worker"}, "worker-2": {"role": "worker"}, "control-plane-1": {"role": "control-plane"}}


def node_members(selector, nodes) -> hypernodes.Picked:
    """What one member's selector, as sent, picks: decoded as every caller decodes it."""
    return hypernodes.node_members(member_selector(selector), nodes)


def expr(key: str, op: str, *values: str) -> dict:
    e: dict = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


@pytest.mark.parametrize(
    "selector, names",
    [
        # Volcano's own cases
        ({"exactMatch": {"name": "worker-1"}}, {"worker-1"}),
        ({"regexMatch": {"pattern": "^worker-"}}, {"worker-1", "worker-2"}),
        ({"regexMatch": {"pattern": "["}}, set()),
        ({"labelMatch": {"matchLabels": {"role": "worker"}}}, {"worker-1", "worker-2"}),
        ({"labelMatch": {}}, set()),
        # an exact name is taken as given, whether or not such a node exists
        ({"exactMatch": {"name": "ghost"}}, {"ghost"}),
        ({"exactMatch": {"name": ""}, "regexMatch": {"pattern": "worker"}}, set()),
        # a pattern is searched for anywhere in the name (MatchString)
        ({"regexMatch": {"pattern": "plane"}}, {"control-plane-1"}),
        ({"regexMatch": {"pattern": "-[12]$"}}, {"worker-1", "worker-2", "control-plane-1"}),
        # the union of what one selector's fields pick (the CRD allows one field; Volcano unites them)
        ({"exactMatch": {"name": "worker-1"}, "regexMatch": {"pattern": "plane"}}, {"worker-1", "control-plane-1"}),
        ({"exactMatch": {"name": "worker-1"}, "regexMatch": {"pattern": "("}}, set()),  # a bad pattern empties the whole member
        ({"exactMatch": {"name": "worker-1"}, "labelMatch": {}}, {"worker-1"}),  # an empty labelMatch keeps what came before
        # label selectors as LabelSelectorAsSelector converts them
        ({"labelMatch": {"matchLabels": {}, "matchExpressions": []}}, set()),
        ({"labelMatch": {"matchExpressions": [expr("role", "In", "worker", "x")]}}, {"worker-1", "worker-2"}),
        ({"labelMatch": {"matchExpressions": [expr("role", "NotIn", "worker")]}}, {"control-plane-1"}),
        ({"labelMatch": {"matchExpressions": [expr("role", "Exists")]}}, set(NODES)),
        ({"labelMatch": {"matchExpressions": [expr("zone", "DoesNotExist")]}}, set(NODES)),
        ({"labelMatch": {"matchExpressions": [expr("role", "Equals", "worker")]}}, set()),  # unknown operator
        ({"labelMatch": {"matchExpressions": [expr("role", "In")]}}, set()),  # In needs values
        ({"labelMatch": {"matchExpressions": [expr("role", "Exists", "worker")]}}, set()),  # Exists takes none
        ({"labelMatch": {"matchExpressions": [expr("bad key!", "DoesNotExist")]}}, set()),  # not a label key
        ({"labelMatch": {"matchLabels": {"role": "not a value"}}}, set()),
        ({"labelMatch": {"matchLabels": {"role": "worker"}, "matchExpressions": [expr("role", "Nope")]}}, set()),
        # junk never crashes
        ({"labelMatch": "x"}, set()),
        ({"regexMatch": {"pattern": 5}}, set()),
        ({"exactMatch": None, "regexMatch": None, "labelMatch": None}, set()),
        ("not a selector", set()),
    ],
)
def test_node_members(selector, names):
    assert set(node_members(selector, NODES).names) == names


@pytest.mark.parametrize(
    "pattern, matches, misses",
    [
        ("(?i)WORKER", ["worker-1"], ["control-plane-1"]),
        ("(?i:W)orker", ["worker-1"], []),
        ("(?P<n>worker)-1", ["worker-1"], ["worker-2"]),
        ("(?<n>worker)-1", ["worker-1"], ["worker-2"]),  # Go 1.22's spelling of a named group
        ("worker-1\\z", ["worker-1"], ["worker-10"]),
        ("\\Qworker-1\\E", ["worker-1"], ["workerx1"]),
        ("worker\\x2d1", ["worker-1"], ["worker-2"]),
        ("worker\\x{2d}1", ["worker-1"], []),
        ("worker\\0551", ["worker-1"], []),  # octal 055 is '-'
        ("worker-[[:digit:]]$", ["worker-1"], ["worker-a"]),
        ("^[^[:digit:]]+$", ["worker"], ["worker-1"]),
        ("worker-{,1}1", ["worker-{,1}1"], ["worker-1"]),  # not a repeat in RE2: literal braces
        ("a{2}", ["aa"], ["a"]),
        ("a{1000}", ["a" * 1000], []),
        ("(?)worker", ["worker"], []),
    ],
)
def test_go_patterns_that_compile(pattern, matches, misses):
    compiled = hypernodes.go_regex(pattern)
    assert not isinstance(compiled, str), compiled
    assert all(compiled.search(n) for n in matches) and not any(compiled.search(n) for n in misses)


@pytest.mark.parametrize(
    "pattern",
    [
        "[",
        "(",
        "worker(?=-1)",  # look-ahead
        "worker(?!-1)",
        "(?<=w)orker",  # look-behind
        "(w)\\1",  # back-reference
        "(?P<n>w)(?P=n)",
        "(?>worker)",  # atomic group
        "(?#comment)worker",
        "worker*+",  # possessive: nested repetition in RE2
        "worker**",
        "a{1001}",
        "a{1,1001}",
        "worker\\Z",
        "(?x)worker",
        "(?a)worker",
        "\\u0041",
        "\\e",
        "[[:foo:]]",
        "\\8",
    ],
)
def test_patterns_re2_refuses_select_nothing(pattern):
    assert isinstance(hypernodes.go_regex(pattern), str)
    assert node_members({"regexMatch": {"pattern": pattern}}, {"worker": {}, "a" * 1001: {}}).problem


@pytest.mark.parametrize(
    "pattern, names",
    [
        ("^\\pL+-\\pN$", {"worker-1", "worker-2"}),  # Unicode classes
        ("(?U)^w.+", {"worker-1", "worker-2"}),  # ungreedy: matches all the same
        ("^control(?i)-PLANE", {"control-plane-1"}),  # a flag group after the start
        ("^w[[:^digit:]]+[[:digit:]]$", {"worker-1", "worker-2"}),  # a negated POSIX class
        ("\\Q\\C\\E|-1$", {"worker-1", "control-plane-1"}),  # \C quoted is the two characters
        ("(?P<role_1>worker)-2", {"worker-2"}),
    ],
)
def test_go_forms_python_could_not_spell_select_as_in_go(pattern, names):
    picked = node_members({"regexMatch": {"pattern": pattern}}, NODES)
    assert picked.names == frozenset(names) and not picked.problem


@pytest.mark.parametrize("pattern", ["\\C", "worker\\C1", "(?P<rôle>worker)", "(?<ключ>worker)"])
def test_forms_c_plus_plus_re2_accepts_and_go_refuses_select_nothing(pattern):
    """Go's regexp/syntax has no `\\C` and takes ASCII group names only; C++ RE2 takes both."""
    picked = node_members({"exactMatch": {"name": "worker-1"}, "regexMatch": {"pattern": pattern}}, NODES)
    assert picked.names == frozenset() and "does not compile" in picked.problem


def test_a_lone_surrogate_is_read_as_go_decodes_json():
    """JSON can spell a lone UTF-16 surrogate; Go's encoding/json reads it as U+FFFD."""
    assert node_members({"regexMatch": {"pattern": "^\ud800x"}}, dict.fromkeys(["\ufffdx", "\udc00x"], {})).names == frozenset(["\ufffdx", "\udc00x"])


_BACKTRACKING = """
import sys
from webhook import hypernodes
from webhook.shapes.volcano import hypernode_spec
name = "a" * 200_000
spec = {"members": [{"type": "Node", "selector": {"regexMatch": {"pattern": p}}} for p in sys.argv[1:]]}
print(sorted(len(n) for n in hypernodes.resolve_nodes(hypernode_spec(spec), {name: {}, name + "b": {}})[0]))
"""


@pytest.mark.parametrize("pattern, lengths", [("(a*)*$", [200_000, 200_001]), ("^(a|a)*b", [200_001]), ("^(a|aa)+c", [])])
def test_a_catastrophic_backtracking_pattern_resolves_in_linear_time(pattern, lengths):
    """A backtracking matcher takes exponential time on these patterns and a long name (a HyperNode
    author could stall the webhook); RE2 is linear, as Go is. Run apart so a regression fails at
    the timeout instead of hanging the suite."""
    out = subprocess.run([sys.executable, "-c", _BACKTRACKING, pattern], cwd=REPO, capture_output=True, text=True, timeout=20, check=True)
    assert out.stdout.split("\n")[0] == str(lengths)


def test_hypernode_members_are_named_by_exact_name_only():
    read = hypernodes.members_of(
        hypernode_spec(
            {
                "members": [
                    {"type": "HyperNode", "selector": {"exactMatch": {"name": "leaf-a"}}},
                    {"type": "HyperNode", "selector": {"regexMatch": {"pattern": "leaf-"}}},
                    {"type": "HyperNode", "selector": {"labelMatch": {"matchLabels": {"tier": "1"}}}},
                    {"type": "Node", "selector": {"exactMatch": {"name": "n1"}}},
                    {"type": "Switch", "selector": {"exactMatch": {"name": "s"}}},
                    "junk",
                ]
            }
        )
    )
    assert read.children == ("leaf-a",)
    assert read.nodes == (member_selector({"exactMatch": {"name": "n1"}}),)
    assert len(read.problems) == 4 and "unknown member type 'Switch'" in read.problems[2]


# ---- the reconciler and the admission rules agree -------------------------------------------------

SELECTORS = [
    {"exactMatch": {"name": "npu-1"}},
    {"exactMatch": {"name": "ghost"}},
    {"regexMatch": {"pattern": "npu-[12]"}},
    {"regexMatch": {"pattern": "pu-1$"}},
    {"regexMatch": {"pattern": "(?!x)npu"}},
    {"regexMatch": {"pattern": "(?i)NPU-0"}},
    {"labelMatch": {}},
    {"labelMatch": {"matchLabels": {"rack": "r1"}}},
    {"labelMatch": {"matchExpressions": [expr("rack", "NotIn", "r1")]}},
    {"labelMatch": {"matchExpressions": [expr("rack", "Sometimes", "r1")]}},
    {"labelMatch": {"matchLabels": {"kubernetes.io/hostname": "npu-2"}}},
]
CLUSTER = [node(f"npu-{i}", {"huawei.com/Ascend910": "1"}, {"rack": f"r{i % 2}", "kubernetes.io/hostname": f"npu-{i}"}) for i in range(4)]


@pytest.mark.parametrize("selector", SELECTORS)
def test_scale_in_and_the_will_it_run_rules_see_the_same_nodes(selector):
    obj = hypernode("h", 1, members=[{"type": "Node", "selector": selector}])
    labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in CLUSTER}
    view = topology.hypernode_view(obj)
    assert view is not None
    by_scale_in = set(topology.resolve({"h": view}, labels).members.get("h", ()))
    (capacity,) = ClusterFacts(store_of_objects([*CLUSTER, obj])).hypernode_capacity() or []
    assert len(by_scale_in) == capacity.allocatable.get("huawei.com/Ascend910", 0)
    expected = {n for n in node_members(selector, labels).names if n in labels}
    assert by_scale_in == expected


def test_a_tier_2_hypernode_holds_its_children_by_exact_name_on_both_sides():
    leaves = [
        hypernode("leaf-a", 1, members=[{"type": "Node", "selector": {"regexMatch": {"pattern": "npu-[01]"}}}]),
        hypernode("leaf-b", 1, members=[{"type": "Node", "selector": {"regexMatch": {"pattern": "npu-[23]"}}}]),
    ]
    spine = hypernode(
        "spine",
        2,
        members=[
            {"type": "HyperNode", "selector": {"exactMatch": {"name": "leaf-a"}}},
            {"type": "HyperNode", "selector": {"regexMatch": {"pattern": "leaf-b"}}},
        ],
    )
    caps = {c.name: c.allocatable.get("huawei.com/Ascend910", 0) for c in ClusterFacts(store_of_objects([*CLUSTER, *leaves, spine])).hypernode_capacity() or []}
    assert caps == {"leaf-a": 2, "leaf-b": 2, "spine": 2}
    view = topology.hypernode_view(spine)
    assert view is not None and view.children == ("leaf-a",)
