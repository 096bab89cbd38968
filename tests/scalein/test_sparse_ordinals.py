"""Sparse ServingGroup and Role ordinals (kthena#1780): after a maxSurge rollout (kthena#1626)
Kthena may keep groups 0, 2, 3 and 10 of a 4-replica ModelServing. Ranking, `plan` and the pod
mutator compare ordinals by value and never count them."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from webhook.kthena import LABEL_GROUP, LABEL_NAME, LABEL_ROLE, LABEL_ROLE_ID
from webhook.scalein.plan import planning
from webhook.scalein.plan.ranking import _ordinal


def _scoring_helpers():
    # tests/scalein/test_scoring.py by its path: a plain `import scalein...` can find
    # benchmarks/scalein.py instead once a benchmark test has put benchmarks/ on sys.path.
    spec = importlib.util.spec_from_file_location("_scalein_test_scoring", Path(__file__).with_name("test_scoring.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build, module.node, module.pod, module.ready


build, node, pod, ready = _scoring_helpers()

MS = ("workload.serving.volcano.sh/v1alpha1", "ModelServing", "llm")


def member(group: int, role_replica: int, k: int, node_name: str) -> dict:
    """A pod of ServingGroup `llm-<group>`, Role replica `decode-<role_replica>`, pod index k."""
    p = ready(pod(f"llm-{group}-decode-{role_replica}-{k}", node_name, 2, owner=MS))
    p["metadata"]["labels"] = {LABEL_NAME: "llm", LABEL_GROUP: f"llm-{group}", LABEL_ROLE: "decode", LABEL_ROLE_ID: f"decode-{role_replica}"}
    return p


def sparse_cluster():
    """Groups 0, 2, 3 and 10, each alone on an identical node: equal sums, so the ordinal decides."""
    nodes = [node(f"n{g}", 8) for g in (0, 2, 3, 10)]
    pods = [member(g, 0, 0, f"n{g}") for g in (0, 2, 3, 10)]
    return nodes, pods


def test_groups_tie_break_on_the_higher_ordinal_by_value():
    [ms] = planning.build_plan(build(*sparse_cluster()))
    assert [u.name for u in ms.units] == ["llm-10", "llm-3", "llm-2", "llm-0"]
    assert [u.ordinal for u in ms.units] == [10, 3, 2, 0]
    assert len({u.cost for u in ms.units}) == 1


def test_role_replicas_with_gaps_rank_and_list_by_value():
    """Role replicas 0, 4 and 11 of one group; pods listed decode-2 before decode-10, not as text sorts."""
    nodes = [node("n", 16)]
    pods = [member(5, r, 0, "n") for r in (0, 4, 11)] + [member(5, 2, 0, "n"), member(5, 10, 0, "n")]
    [ms] = planning.build_plan(build(nodes, pods))
    [group] = ms.units
    assert group.ordinal == 5
    assert [r.name for r in group.roles] == ["decode-11", "decode-10", "decode-4", "decode-2", "decode-0"]
    assert [e.pod.name for e in group.entries] == [f"llm-5-decode-{r}-0" for r in (0, 2, 4, 10, 11)]


@pytest.mark.parametrize("name, ordinal", [("llm-0", 0), ("llm-10", 10), ("decode-2147483647", 2**31 - 1), ("llm-2147483648", -1), ("llm", -1), ("llm-", -1)])
def test_ordinal_is_kthenas_int32_parse(name, ordinal):
    assert _ordinal(name) == ordinal


def test_plan_removes_the_surge_group_and_says_why(tmp_path, capsys):
    nodes, pods = sparse_cluster()
    snapshot = tmp_path / "snapshot.json"
    snapshot.write_text(json.dumps({"nodes": {"items": nodes}, "pods": {"items": pods}}))
    assert planning.main(["--snapshot", str(snapshot), "--remove", "2", "--output", "text"]) == 0
    out = capsys.readouterr().out
    assert "1. llm-10  " in out and "<- removed: same summed cost, higher ordinal (10 > 2)" in out
    assert "2. llm-3  " in out and "<- removed: same summed cost, higher ordinal (3 > 2)" in out
    assert "3. llm-2  " in out and "4. llm-0  " in out
    assert planning.main(["--snapshot", str(snapshot), "--remove", "1", "--output", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    [ms] = data["workloads"]
    assert [(g["name"], g["ordinal"]) for g in ms["order"]] == [("llm-10", 10), ("llm-3", 3), ("llm-2", 2), ("llm-0", 0)]
