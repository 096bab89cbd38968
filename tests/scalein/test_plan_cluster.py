"""`plan` for real clusters (issue 10, point 5): live reads, kubectl's YAML snapshots, a bounded
--remove, and an SVG map a person can read without hovering."""

from __future__ import annotations

import json
import re
import subprocess
from xml.etree import ElementTree as ET

import yaml
from support import REPO
from support.commands import run_webhook

SVG = "{http://www.w3.org/2000/svg}"


def plan(*args: str) -> subprocess.CompletedProcess:
    return run_webhook(["plan", *args], cwd=REPO, timeout=120)


def as_kubectl_list(snapshot: dict) -> dict:
    """What `kubectl get nodes,pods -A -o yaml` prints: one List, kinds set on each item."""
    items = [{"apiVersion": "v1", "kind": "Node", **n} for n in snapshot["nodes"]["items"]]
    items += [{"apiVersion": "v1", "kind": "Pod", **p} for p in snapshot["pods"]["items"]]
    return {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}


def test_yaml_list_snapshot_gives_the_same_plan(s2, s2_path, tmp_path):
    snap = tmp_path / "snapshot.yaml"
    snap.write_text(yaml.safe_dump(as_kubectl_list(s2)))
    from_json = plan("--snapshot", str(s2_path), "--output", "json")
    from_yaml = plan("--snapshot", str(snap), "--output", "json")
    assert from_yaml.returncode == 0, from_yaml.stderr
    assert json.loads(from_yaml.stdout) == json.loads(from_json.stdout)


def test_snapshot_of_another_shape_is_refused(tmp_path):
    snap = tmp_path / "x.yaml"
    snap.write_text("kind: ConfigMap\ndata: {}\n")
    r = plan("--snapshot", str(snap))
    assert r.returncode == 2 and "kubectl get nodes,pods,hypernodes,events,modelservings -A -o yaml" in r.stderr


def test_remove_more_than_a_workload_has_is_an_error(s2_path):
    r = plan("--snapshot", str(s2_path), "--remove", "3")
    assert r.returncode == 2
    assert "--remove 3 is more than some workloads have" in r.stderr
    assert "ModelServing sample (default) has 2 ServingGroups" in r.stderr
    assert plan("--snapshot", str(s2_path), "--remove", "2", "--workload", "sample").returncode == 0


def test_text_gives_a_reason_for_each_removed_unit(s2_path):
    r = plan("--snapshot", str(s2_path), "--remove", "1")
    removed = [line for line in r.stdout.splitlines() if "<- removed" in line]
    assert len(removed) == 2
    assert removed[1].strip().startswith("1. sample-1") and removed[1].endswith("<- removed: lowest summed cost 2003976 (next kept group: 4003992)")


def _svg(path):
    root = ET.parse(path).getroot()
    texts = [t.text or "" for t in root.iter(f"{SVG}text")]
    fills = {r.get("fill") for r in root.iter(f"{SVG}rect")}
    return root, texts, fills


def test_svg_shows_affected_nodes_legend_costs_and_reasons(s2_path, tmp_path):
    out = tmp_path / "map.svg"
    assert plan("--snapshot", str(s2_path), "--remove", "1", "--svg", str(out)).returncode == 0
    _, texts, fills = _svg(out)
    node_labels = sorted({t.split()[0] for t in texts if re.fullmatch(r"n\d \d+/\d+", t)})
    assert node_labels == ["n2", "n3", "n4"]  # n1 loses nothing: not drawn
    assert "ModelServing sample" in texts and "removed (before)" in texts and "freed (after)" in texts and "idle device" in texts
    assert "ModelServing sample (default): sample-1  cost 2003976  - lowest summed cost 2003976 (next kept group: 4003992)" in texts
    # Workload colours come from the fixed palette, never the idle/freed/removed marks' colours.
    from webhook.scalein.plan.rendering import FREED, IDLE, PALETTE, REMOVED

    workload_fills = fills - {IDLE, FREED, "#999999"}
    assert workload_fills and workload_fills <= set(PALETTE)
    assert not {IDLE, FREED, REMOVED, "#999999"} & set(PALETTE)
    every = tmp_path / "all.svg"
    assert plan("--snapshot", str(s2_path), "--remove", "1", "--svg", str(every), "--svg-all-nodes").returncode == 0
    _, texts, _ = _svg(every)
    assert sorted({t.split()[0] for t in texts if re.fullmatch(r"n\d \d+/\d+", t)}) == ["n1", "n2", "n3", "n4"]


def test_live_cluster_through_a_kubeconfig(fake_api, s2, tmp_path):
    fake_api.load(s2["nodes"]["items"], s2["pods"]["items"])
    kubeconfig = fake_api.write_kubeconfig(tmp_path / "kubeconfig")
    live = plan("--kubeconfig", str(kubeconfig), "--output", "json")
    assert live.returncode == 0, live.stderr
    snap = tmp_path / "s2.json"
    snap.write_text(json.dumps(s2))
    assert json.loads(live.stdout) == json.loads(plan("--snapshot", str(snap), "--output", "json").stdout)
    assert fake_api.count("GET", "/api/v1/nodes") >= 1 and fake_api.count("GET", "/api/v1/pods") >= 1


def test_live_read_refused_is_one_line_exit_2(fake_api, tmp_path):
    fake_api.fail("GET", r"^/api/v1/pods$", 403, "Forbidden", 'pods is forbidden: User "ci" cannot list resource "pods" in API group "" at the cluster scope')
    kubeconfig = fake_api.write_kubeconfig(tmp_path / "kubeconfig")
    r = plan("--kubeconfig", str(kubeconfig))
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "list" in r.stderr and "pods" in r.stderr
