"""`python -m webhook plan` and the settings, as a user runs them (subprocesses)."""

from __future__ import annotations

import json
import subprocess

import pytest
from support.commands import run_webhook

from webhook.config import ConfigError, load
from webhook.scalein.settings import ReconcileSettings, ScoringSettings

REPO_ENV = None


def webhook(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return run_webhook([*args], timeout=60, env=env)


def test_plan_text_s1(s1_path, tmp_path):
    svg = tmp_path / "map.svg"
    r = webhook("plan", "--snapshot", str(s1_path), "--remove", "2", "--workload", "deploy1", "--svg", str(svg))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "scale-in-priority=binpack" in out
    lines = [line for line in out.splitlines() if line.strip().startswith(("1.", "2.", "3.", "4."))]
    assert [("node-b" in line) for line in lines] == [True, True, False, False]
    assert "node-b" in out and "idle 6" in out
    text = svg.read_text()
    assert text.startswith("<svg") and "node-b" in text and "freed:" in text


def test_plan_json_s2_groups_and_roles(s2_path):
    r = webhook("plan", "--snapshot", str(s2_path), "--output", "json", "--remove", "1", "--scale-in-priority", "wl")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["settings"]["scale_in_priority"] == "wl"
    ms = next(w for w in data["workloads"] if w["kind"] == "ModelServing")
    assert [g["name"] for g in ms["order"]] == ["sample-1", "sample-0"]
    assert ms["order"][0]["cost"] < ms["order"][1]["cost"]
    for g in ms["order"]:
        assert g["cost"] == sum(p["cost"] for p in g["pods"]) == sum(r["cost"] for r in g["roles"])
    nodes = {n["node"]: n for n in data["nodes"]}
    assert nodes["n3"]["after"] == nodes["n4"]["after"] == 0
    assert nodes["n1"]["after"] + nodes["n2"]["after"] == 14  # filler (2 NPUs a pod) loses its first pod too


def test_plan_ranks_unready_and_pending_before_cost(s1, tmp_path):
    pods = s1["pods"]["items"]
    a_pod = next(p for p in pods if p["metadata"]["name"].startswith("deploy1") and p["spec"]["nodeName"] == "node-a")
    for c in a_pod["status"]["conditions"]:
        if c["type"] == "Ready":
            c["status"] = "False"
    snap = tmp_path / "s.json"
    snap.write_text(json.dumps(s1))
    data = json.loads(webhook("plan", "--snapshot", str(snap), "--output", "json", "--workload", "default/deploy1").stdout)
    first = data["workloads"][0]["order"][0]["pods"][0]
    assert first["pod"] == "default/" + a_pod["metadata"]["name"] and first["ready"] is False


def test_plan_wl_keeps_foreign_values_binpack_overwrites(s1, tmp_path):
    for p in s1["pods"]["items"]:
        if p["metadata"]["name"].startswith("deploy1") and p["spec"]["nodeName"] == "node-a":
            p["metadata"].setdefault("annotations", {})["controller.kubernetes.io/pod-deletion-cost"] = "-900000000"
    snap = tmp_path / "s.json"
    snap.write_text(json.dumps(s1))
    wl = json.loads(webhook("plan", "--snapshot", str(snap), "--output", "json", "--workload", "deploy1", "--scale-in-priority", "wl").stdout)
    order = [p["pods"][0] for p in wl["workloads"][0]["order"]]
    assert [p["node"] for p in order][:2] == ["node-a", "node-a"] and order[0]["action"] == "foreign"
    bp = json.loads(webhook("plan", "--snapshot", str(snap), "--output", "json", "--workload", "deploy1").stdout)
    order = [p["pods"][0] for p in bp["workloads"][0]["order"]]
    assert [p["node"] for p in order][:2] == ["node-b", "node-b"]
    assert {p["action"] for p in order if p["node"] == "node-a"} == {"overwrite"}


def test_plan_bad_snapshot_exits_2(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text("[]")
    r = webhook("plan", "--snapshot", str(bad))
    assert r.returncode == 2 and "NodeList" in r.stderr


def test_malformed_third_party_type_stops_the_start():
    r = webhook("reconcile", "--third-party-types", "apps.kruise.io/v1alpha1/clonesets,clonesets")
    assert r.returncode == 2 and "'clonesets'" in r.stderr and "--third-party-types" in r.stderr
    r = webhook("plan", "--snapshot", "/nonexistent", "--third-party-types", "a/b")
    assert r.returncode == 2 and "'a/b'" in r.stderr


def test_settings_from_env_and_config_file(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("enable-scale-in-score: true\nscale-in-priority: wl\nscoring-qps: 5\nthird-party-types: [apps.kruise.io/v1alpha1/clonesets]\n")
    s = load(ReconcileSettings, {"_config_file": str(cfg)}, environ={"SERVINGGATE_SCORING_QPS": "7"})
    assert (s.scoring.enable_scale_in_score, s.scoring.scale_in_priority, s.runtime.scoring_qps) == (True, "wl", 7)
    assert s.scoring.third_party() == (("apps.kruise.io", "v1alpha1", "clonesets"),)
    with pytest.raises(ConfigError, match="SERVINGGATE_SCORING_QPS"):
        load(ReconcileSettings, {}, environ={"SERVINGGATE_SCORING_QPS": "0"})
    with pytest.raises(ConfigError, match="--score-annotation-key"):
        load(ScoringSettings, {"score_annotation_key": "example.com/x"}, environ={})
    assert load(ScoringSettings, {"score_annotation_key": "openvessel.io/workload-balancer-score"}, environ={}).score_annotation_key


def test_plan_reads_the_reconcilers_configmap_file(s1_path, tmp_path):
    """Operators point `plan` at the same file the reconciler mounts: the scoring keys apply,
    the reconciler-only keys (leader-elect, scoring-qps, ...) are ignored, a typo is refused."""
    from pathlib import Path

    import yaml

    cm = yaml.safe_load((Path(__file__).resolve().parents[2] / "manifests/base/reconciler-configmap.yaml").read_text())
    data = yaml.safe_load(cm["data"]["reconcile.yaml"])
    data["scale-in-priority"] = "wl"
    cfg = tmp_path / "reconcile.yaml"
    cfg.write_text(yaml.safe_dump(data))
    r = webhook("plan", "--snapshot", str(s1_path), "--config", str(cfg))
    assert r.returncode == 0, r.stderr
    assert "scale-in-priority=wl" in r.stdout and "enable-scale-in-score=true" in r.stdout

    cfg.write_text(yaml.safe_dump({**data, "scale-in-prority": "wl"}))
    r = webhook("plan", "--snapshot", str(s1_path), "--config", str(cfg))
    assert r.returncode == 2 and "unknown setting(s) scale_in_prority" in r.stderr


def test_plan_shows_a_remove_last_pod_with_the_top_cost_last(s1, tmp_path):
    pods = s1["pods"]["items"]
    keep = next(p for p in pods if p["metadata"]["name"].startswith("deploy1") and p["spec"]["nodeName"] == "node-b")
    keep["metadata"].setdefault("annotations", {})["servinggate.io/remove-last"] = "true"
    snap = tmp_path / "s.json"
    snap.write_text(json.dumps(s1))
    text = webhook("plan", "--snapshot", str(snap), "--workload", "default/deploy1")
    assert text.returncode == 0, text.stderr
    ranked = [line for line in text.stdout.splitlines() if line.strip()[:2] in ("1.", "2.", "3.", "4.")]
    assert keep["metadata"]["name"] in ranked[-1] and "cost 2147483647  remove-last" in ranked[-1]
    assert sum("remove-last" in line for line in ranked) == 1
    data = json.loads(webhook("plan", "--snapshot", str(snap), "--output", "json", "--workload", "default/deploy1").stdout)
    last = data["workloads"][0]["order"][-1]["pods"][0]
    assert (last["pod"], last["cost"], last["remove_last"]) == ("default/" + keep["metadata"]["name"], 2147483647, True)
