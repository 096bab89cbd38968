"""`python -m webhook check` as CI runs it: a subprocess on files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from support import REPO, load_admission


def obj(name: str) -> dict:
    return load_admission(name)["request"]["object"]


def check(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "webhook", "check", *args],
        cwd=REPO,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def gang_ms() -> dict:
    ms = obj("modelservings-create-gang-example-validating")
    for key in ("uid", "creationTimestamp", "generation", "managedFields", "annotations"):
        ms["metadata"].pop(key, None)
    return ms


def write_yaml(path: Path, *docs: dict) -> Path:
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def test_all_allowed_exit_0_text(tmp_path):
    f = write_yaml(tmp_path / "ok.yaml", gang_ms(), obj("autoscalingpolicies-create-homogeneous-validating"))
    res = check(str(f))
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"{f}#1: ModelServing default/sample (CREATE): allowed" in res.stdout
    assert f"{f}#2: AutoscalingPolicy default/sample-kv (CREATE): allowed" in res.stdout
    assert res.stdout.rstrip().endswith("2 object(s) checked, 0 denied, 0 unusable")


def test_violation_exit_1_json_shape(tmp_path):
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(obj("autoscalingpolicies-create-min-greater-than-max-validating")))
    res = check("--output", "json", str(f))
    assert res.returncode == 1, res.stderr
    report = json.loads(res.stdout)
    assert report["problems"] == []
    [entry] = report["results"]
    assert entry == {
        "file": str(f),
        "document": 1,
        "apiVersion": "workload.serving.volcano.sh/v1alpha1",
        "kind": "AutoscalingPolicy",
        "namespace": "default",
        "name": "sample-kv-inverted",
        "operation": "CREATE",
        "checked": True,
        "rules": ["autoscalingpolicies.bounds", "autoscalingpolicies.role-floor"],
        "allowed": False,
        "code": 422,
        "message": 'AutoscalingPolicy.workload.serving.volcano.sh "sample-kv-inverted" is invalid: '
        "spec.homogeneousTarget.minReplicas: Invalid value: 5: minReplicas must be <= maxReplicas",
        "errors": [
            {
                "rule": "autoscalingpolicies.bounds",
                "field": "spec.homogeneousTarget.minReplicas",
                "type": "FieldValueInvalid",
                "message": "Invalid value: 5: minReplicas must be <= maxReplicas",
            }
        ],
        "warnings": [],
        "changes": [],
        "patch": [],
    }


def test_pod_mutation_preview_from_stdin_list(tmp_path):
    pod = obj("pods-create-kthena-entry-missing-scheduler-annotations-roleid-mutating")
    doc = {"apiVersion": "v1", "kind": "List", "items": [pod, obj("pods-create-kthena-entry-complete-mutating")]}
    res = check("-o", "json", "-", stdin=json.dumps(doc))
    assert res.returncode == 0, res.stderr
    first, second = json.loads(res.stdout)["results"]
    assert (first["file"], first["document"], first["item"]) == ("<stdin>", 1, 0)
    assert first["allowed"] is True
    assert first["patch"] == [
        {"op": "add", "path": "/metadata/labels/modelserving.volcano.sh~1role-id", "value": "prefill-1"},
        {"op": "add", "path": "/metadata/annotations", "value": {"scheduling.k8s.io/group-name": "sample-0", "volcano.sh/task-spec": "prefill-1"}},
        {"op": "replace", "path": "/spec/schedulerName", "value": "volcano"},
    ]
    assert first["warnings"] == []  # routine mutations are changes, not warnings
    assert first["changes"][0] == {"rule": "pods.default-scheduler", "message": "set spec.schedulerName to 'volcano' for gang scheduling"}
    assert second["patch"] == [] and second["item"] == 1


def test_lookups_answered_from_the_documents(tmp_path):
    policy = obj("autoscalingpolicies-create-homogeneous-validating")
    target = policy["spec"].pop("homogeneousTarget")["target"]
    policy["spec"]["disaggregatedTarget"] = {
        "targetRef": target["targetRef"],
        "roles": {"prefill": {"minReplicas": 1, "maxReplicas": 3, "metricSources": target["metricSources"]}},
    }
    alone = write_yaml(tmp_path / "policy.yaml", policy)
    res = check("-o", "json", str(alone))
    assert res.returncode == 0
    assert json.loads(res.stdout)["results"][0]["warnings"] == [
        {"rule": "autoscalingpolicies.role-floor", "message": "servinggate: role bounds not checked, ModelServing default/sample does not exist yet"}
    ]
    together = write_yaml(tmp_path / "both.yaml", gang_ms(), policy)
    res = check(str(together))
    assert res.returncode == 1
    assert (
        "  error [autoscalingpolicies.role-floor]: spec.disaggregatedTarget.roles[prefill].minReplicas: Invalid value: 1: must not be below minRoleReplicas (2) "
        "of role prefill in ModelServing sample: the ModelServing would refuse that scale-down"
    ) in res.stdout


def test_old_gives_update_semantics(tmp_path):
    old = gang_ms()
    new = gang_ms()
    new["spec"]["template"]["gangPolicy"]["minRoleReplicas"]["decode"] = 2
    new_file, old_file = write_yaml(tmp_path / "new.yaml", new), write_yaml(tmp_path / "old.yaml", old)
    assert check(str(new_file)).returncode == 0  # as a CREATE it is fine
    res = check("-o", "json", "--old", str(old_file), str(new_file))
    assert res.returncode == 1
    [entry] = json.loads(res.stdout)["results"]
    assert entry["operation"] == "UPDATE"
    assert entry["errors"] == [
        {
            "rule": "modelservings.gang-immutable",
            "field": "spec.template.gangPolicy.minRoleReplicas",
            "type": "FieldValueInvalid",
            "message": 'Invalid value: {"decode":2,"prefill":2}: minRoleReplicas is immutable',
        }
    ]


def test_unusable_input_exit_2_names_file_and_document(tmp_path):
    f = tmp_path / "mixed.yaml"
    f.write_text(yaml.safe_dump_all([gang_ms(), ["not", "an", "object"], {"kind": "Pod", "metadata": {"name": "p"}}]))
    res = check("-o", "json", str(f))
    assert res.returncode == 2
    report = json.loads(res.stdout)
    assert report["problems"] == [
        {"file": str(f), "document": 2, "message": "expected a Kubernetes object (a mapping), got list"},
        {"file": str(f), "document": 3, "message": "apiVersion: required (a non-empty string)"},
    ]
    assert [r["name"] for r in report["results"]] == ["sample"]
    assert f"check: {f}: document 2: expected a Kubernetes object (a mapping), got list" in res.stderr


def test_broken_yaml_and_missing_file_exit_2(tmp_path):
    f = tmp_path / "broken.yaml"
    f.write_text("apiVersion: v1\nkind: Pod\n---\nmetadata: {name: [\n")
    res = check(str(f))
    assert res.returncode == 2
    assert f"{f}: document 2: not valid YAML/JSON" in res.stderr
    res = check(str(tmp_path / "nope.yaml"))
    assert res.returncode == 2
    assert "cannot read" in res.stderr


def test_unknown_kinds_pass_unchecked(tmp_path):
    f = write_yaml(tmp_path / "cm.yaml", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}})
    res = check(str(f))
    assert res.returncode == 0
    assert "ConfigMap c (CREATE): no rules" in res.stdout


def test_usage_error_exit_2():
    assert check("--output", "xml", "x.yaml").returncode == 2
    assert check().returncode == 2


def _scheduler_patch(res: subprocess.CompletedProcess) -> list:
    assert res.returncode == 0, res.stdout + res.stderr
    report = json.loads(res.stdout)
    return [op for op in report["results"][0]["patch"] if op["path"] == "/spec/schedulerName"]


def test_check_reads_the_webhooks_settings_from_variables_and_config(tmp_path):
    """`check` answers as `serve` would with the same SERVINGGATE_* variables or --config file."""
    pod = obj("pods-create-kthena-entry-missing-scheduler-annotations-roleid-mutating")
    f = tmp_path / "pod.json"
    f.write_text(json.dumps(pod))
    env = {**os.environ, "SERVINGGATE_SCHEDULER_NAME": "volcano-npu"}
    res = subprocess.run([sys.executable, "-m", "webhook", "check", "-o", "json", str(f)], cwd=REPO,
                         capture_output=True, text=True, timeout=120, env=env)
    assert _scheduler_patch(res) == [{"op": "replace", "path": "/spec/schedulerName", "value": "volcano-npu"}]

    # The webhook's own config file (listener keys and all) works as is; its policy keys apply.
    cfg = tmp_path / "serve.yaml"
    cfg.write_text("port: 9443\nworkers: 4\nscheduler-name: volcano-gpu\n")
    assert _scheduler_patch(check("-o", "json", "--config", str(cfg), str(f))) == [
        {"op": "replace", "path": "/spec/schedulerName", "value": "volcano-gpu"}
    ]
    # The namespace is skipped: no mutation at all.
    ns = pod["metadata"].get("namespace") or "default"
    assert _scheduler_patch(check("-o", "json", "--skip-namespaces", ns, str(f))) == []
