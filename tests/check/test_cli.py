"""`python -m webhook check` as CI runs it: a subprocess on files."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import yaml
from support import REPO, load_admission
from support.commands import run_webhook


def obj(name: str) -> dict:
    return load_admission(name)["request"]["object"]


def check(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return run_webhook(["check", *args], cwd=REPO, input=stdin, timeout=120)


def gang_ms() -> dict:
    ms = obj("modelservings-create-gang-example-validating")
    for key in ("uid", "creationTimestamp", "generation", "managedFields", "annotations"):
        ms["metadata"].pop(key, None)
    return ms


def write_yaml(path: Path, *docs: dict) -> Path:
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def test_all_allowed_exit_0_text_shows_findings_only_unless_verbose(tmp_path):
    f = write_yaml(tmp_path / "ok.yaml", gang_ms(), obj("autoscalingpolicies-create-homogeneous-validating"))
    res = check(str(f))
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout == "2 checked, 0 denied, 0 warned, 0 skipped, 0 unusable\n"
    res = check("--verbose", str(f))
    assert res.returncode == 0
    lines = res.stdout.splitlines()
    assert f"{f}:1:1: ModelServing default/sample (CREATE): allowed" in lines
    second = next(line for line in lines if "AutoscalingPolicy" in line)
    assert second.startswith(f"{f}:") and second.endswith("AutoscalingPolicy default/sample-kv (CREATE): allowed")
    assert lines[-1] == "2 checked, 0 denied, 0 warned, 0 skipped, 0 unusable"


def test_violation_exit_1_json_shape(tmp_path):
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(obj("autoscalingpolicies-create-min-greater-than-max-validating")))
    res = check("--output", "json", str(f))
    assert res.returncode == 1, res.stderr
    report = json.loads(res.stdout)
    assert report["problems"] == []
    [entry] = report["results"]
    assert report["summary"] == {"checked": 1, "denied": 1, "warned": 0, "skipped": 0, "unusable": 0}
    assert entry["line"] == 1 and entry["column"] == 1  # a JSON file is one flow mapping
    del entry["line"], entry["column"]
    error_at = entry["errors"][0].pop("line"), entry["errors"][0].pop("column")
    text = f.read_text()
    assert error_at[0] == 1 and text[error_at[1] - 1 :].startswith('"minReplicas"')  # the field's own column
    assert entry == {
        "file": str(f),
        "document": 1,
        "apiVersion": "workload.serving.volcano.sh/v1alpha1",
        "kind": "AutoscalingPolicy",
        "namespace": "default",
        "name": "sample-kv-inverted",
        "operation": "CREATE",
        "status": "denied",
        "checked": True,
        "schema": "crd",
        "rules": ["autoscalingpolicies.bounds", "autoscalingpolicies.role-floor", "autoscalingpolicies.one-owner"],
        "allowed": False,
        "code": 422,
        "reason": "webhook",
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
        "audits": [],
        "changes": [],
        "patch": [],
        "pods": [],
    }


def test_pod_mutation_preview_from_stdin_list(tmp_path):
    pod = obj("pods-create-kthena-entry-missing-scheduler-annotations-roleid-mutating")
    # with their owner, `sample`, scheduled by volcano: Kthena makes its PodGroups
    doc = {"apiVersion": "v1", "kind": "List", "items": [pod, obj("pods-create-kthena-entry-complete-mutating"), gang_ms()]}
    res = check("-o", "json", "-", stdin=json.dumps(doc))
    assert res.returncode == 0, res.stderr
    first, second, _owner = json.loads(res.stdout)["results"]
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
    assert [{k: w[k] for k in ("rule", "message")} for w in json.loads(res.stdout)["results"][0]["warnings"]] == [
        {"rule": "autoscalingpolicies.role-floor", "message": "servinggate: role bounds not checked, ModelServing default/sample does not exist yet"}
    ]
    together = write_yaml(tmp_path / "both.yaml", gang_ms(), policy)
    res = check(str(together))
    assert res.returncode == 1
    line = next(x for x in res.stdout.splitlines() if "[autoscalingpolicies.role-floor]" in x)
    assert line.startswith(f"{together}:")
    assert line.split(": ", 1)[1] == (
        "error [autoscalingpolicies.role-floor] AutoscalingPolicy default/sample-kv: "
        "spec.disaggregatedTarget.roles[prefill].minReplicas: Invalid value: 1: must not be below minRoleReplicas (2) "
        "of role prefill in ModelServing sample: the ModelServing would refuse that scale-down"
    )
    # the field's own line: the YAML dump puts `minReplicas: 1` under `prefill:`
    text = together.read_text().splitlines()
    row, col = map(int, line.split(":")[1:3])
    assert text[row - 1].strip() == "minReplicas: 1" and text[row - 1][col - 1 :].startswith("minReplicas")


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
    # The CRD's transition rule refuses it before any webhook is asked, as the API server does.
    assert [(e["rule"], e["field"], e["message"]) for e in entry["errors"]] == [
        ("cel", "spec.template.gangPolicy.minRoleReplicas", 'Invalid value: "object": minRoleReplicas is immutable')
    ]
    assert (entry["code"], entry["reason"]) == (422, "validation")


def test_unusable_input_exit_2_names_file_and_document(tmp_path):
    f = tmp_path / "mixed.yaml"
    f.write_text(yaml.safe_dump_all([gang_ms(), ["not", "an", "object"], {"kind": "Pod", "metadata": {"name": "p"}}]))
    res = check("-o", "json", str(f))
    assert res.returncode == 2
    report = json.loads(res.stdout)
    doc_lines = [i + 1 for i, line in enumerate(f.read_text().splitlines()) if line == "---"]
    assert report["problems"] == [
        {"file": str(f), "document": 2, "line": doc_lines[0] + 1, "message": "expected a Kubernetes object (a mapping), got list"},
        {"file": str(f), "document": 3, "line": doc_lines[1] + 1, "message": "apiVersion: required (a non-empty string)"},
    ]
    assert [r["name"] for r in report["results"]] == ["sample"]
    assert f"check: {f}:{doc_lines[0] + 1}: document 2: expected a Kubernetes object (a mapping), got list" in res.stderr


def test_broken_yaml_and_missing_file_exit_2(tmp_path):
    f = tmp_path / "broken.yaml"
    f.write_text("apiVersion: v1\nkind: Pod\n---\nmetadata: {name: [\n")
    res = check(str(f))
    assert res.returncode == 2
    assert f"{f}:5: document 2: not valid YAML/JSON" in res.stderr
    res = check(str(tmp_path / "nope.yaml"))
    assert res.returncode == 2
    assert "cannot read" in res.stderr


def test_kinds_without_schema_or_rule_are_skipped_and_builtins_are_decoded(tmp_path):
    f = write_yaml(
        tmp_path / "x.yaml",
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"a": 1}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}, "dta": {}},
    )
    res = check("-v", str(f))
    assert res.returncode == 1
    assert "Widget w (CREATE): skipped (no schema or rule applies)" in res.stdout
    assert 'error [schema] ConfigMap c: dta: unknown field "dta"' in res.stdout
    assert res.stdout.splitlines()[-1] == "2 checked, 1 denied, 0 warned, 1 skipped, 0 unusable"


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
    res = run_webhook(["check", "-o", "json", str(f)], cwd=REPO, timeout=120, env=env)
    assert _scheduler_patch(res) == [{"op": "replace", "path": "/spec/schedulerName", "value": "volcano-npu"}]

    # The webhook's own config file (listener keys and all) works as is; its policy keys apply.
    cfg = tmp_path / "serve.yaml"
    cfg.write_text("port: 9443\nworkers: 4\nscheduler-name: volcano-gpu\n")
    assert _scheduler_patch(check("-o", "json", "--config", str(cfg), str(f))) == [{"op": "replace", "path": "/spec/schedulerName", "value": "volcano-gpu"}]
    # The namespace is skipped: no mutation at all.
    ns = pod["metadata"].get("namespace") or "default"
    assert _scheduler_patch(check("-o", "json", "--skip-namespaces", ns, str(f))) == []


def test_rule_actions_in_check_warn_and_audit_keep_the_finding_and_its_place(tmp_path):
    """`--rule-actions` means in check what it means in the webhook: warn and audit findings are
    reported at their field (file:line:column), warn fails only with --fail-on-warn, audit never."""
    ms = gang_ms()
    ms["spec"]["template"]["roles"][0]["entryTemplate"].setdefault("metadata", {}).setdefault("labels", {})["modelserving.volcano.sh/role-id"] = "x"
    f = write_yaml(tmp_path / "ms.yaml", ms)
    rule = "modelservings.reserved-labels"
    denied = check("-o", "json", str(f))
    assert denied.returncode == 1
    [error] = json.loads(denied.stdout)["results"][0]["errors"]
    for action, key, code, code_strict in (("warn", "warnings", 0, 1), ("audit", "audits", 0, 0)):
        res = check("-o", "json", "--rule-actions", f"{rule}={action}", str(f))
        assert res.returncode == code, res.stdout + res.stderr
        entry = json.loads(res.stdout)["results"][0]
        assert entry["errors"] == [] and entry["allowed"] is True
        [found] = entry[key]
        assert (found["rule"], found["field"], found["line"], found["column"]) == (rule, error["field"], error["line"], error["column"])
        assert check("--fail-on-warn", "--rule-actions", f"{rule}={action}", str(f)).returncode == code_strict
    assert "audit [modelservings.reserved-labels]" in check("--rule-actions", f"{rule}=audit", str(f)).stdout


# ---- will it run: judged against a recorded cluster -------------------------------------------------


def _willrun_snapshot(tmp_path: Path) -> Path:
    from support.willrun import policy, queue

    s2 = json.loads((REPO / "tests/fixtures/cluster/S2-modelserving-groups.json").read_text())
    s2["facts"] = {"apiVersion": "v1", "kind": "List", "items": [queue("ml"), queue("frozen", state="Closed"), policy("scaler", "gate-demo")]}
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(s2))
    return path


def _willrun_ms(npu: str, queue_name: str) -> dict:
    ms = gang_ms()
    ms["metadata"].update(name="gate-demo", namespace="default", annotations={"scheduling.volcano.sh/queue-name": queue_name})
    for role in ms["spec"]["template"]["roles"]:
        for which in ("entryTemplate", "workerTemplate"):
            limits = {"cpu": "1", npu: "2"}
            role[which]["spec"]["containers"][0]["resources"] = {"requests": dict(limits), "limits": dict(limits)}
    return ms


def test_check_against_a_recorded_cluster(tmp_path):
    from support.willrun import hpa

    cluster = _willrun_snapshot(tmp_path)
    ok = check("--cluster", str(cluster), "--no-pods", str(write_yaml(tmp_path / "ok.yaml", _willrun_ms("huawei.com/Ascend910", "ml"))))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    odd = write_yaml(tmp_path / "odd.yaml", _willrun_ms("huawei.com/ascend-1980", "frozen"), hpa("second", "gate-demo"))
    res = check("--cluster", str(cluster), "--no-pods", str(odd))
    assert res.returncode == 1, res.stderr
    out = res.stdout
    assert (
        "warning [modelservings.fits] ModelServing default/gate-demo: spec.template.roles[0].entryTemplate.spec.containers[0]"
        ".resources.requests[huawei.com/ascend-1980]"
    ) in out
    assert "no node advertises huawei.com/ascend-1980; nodes advertise huawei.com/Ascend910" in out
    assert "error [modelservings.queue] ModelServing default/gate-demo: metadata.annotations[scheduling.volcano.sh/queue-name]" in out
    assert "queue `frozen` status is `Closed`" in out
    assert "error [horizontalpodautoscalers.one-owner] HorizontalPodAutoscaler default/second: spec.scaleTargetRef.name" in out
    assert "already scaled by AutoscalingPolicy default/scaler" in out
    # without a cluster, none of these is said
    offline = check("--no-pods", str(odd))
    assert "one-owner" not in offline.stdout and "modelservings.fits" not in offline.stdout and "modelservings.queue" not in offline.stdout


def test_an_unusable_cluster_snapshot_exits_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"nodes": 5}')
    res = check("--cluster", str(bad), str(write_yaml(tmp_path / "ms.yaml", gang_ms())))
    assert res.returncode == 2 and "--cluster" in res.stderr and "no objects found" in res.stderr
    both = check("--cluster", str(bad), "--kubeconfig", "x", str(tmp_path / "ms.yaml"))
    assert both.returncode == 2


# ---- issue 36: check gives the webhook's answer on gangs and queues ----------------------------------


def _facts(tmp_path: Path, *items: dict) -> Path:
    path = tmp_path / "facts.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)}))
    return path


def test_check_annotates_a_kthena_pod_only_where_kthena_makes_its_podgroup(tmp_path):
    from support.willrun import podgroup_crd, queue

    files = str(write_yaml(tmp_path / "pod.yaml", obj("pods-create-kthena-entry-missing-scheduler-annotations-roleid-mutating"), gang_ms()))
    paths = {"/metadata/annotations", "/metadata/labels/modelserving.volcano.sh~1role-id", "/spec/schedulerName"}
    with_crd = check("-o", "json", "--cluster", str(_facts(tmp_path, podgroup_crd(True))), files)
    assert {op["path"] for op in json.loads(with_crd.stdout)["results"][0]["patch"]} == paths, with_crd.stderr
    without = check("-o", "json", "--cluster", str(_facts(tmp_path, queue("ml"))), files)  # a cluster with no PodGroup CRD
    pod, ms = json.loads(without.stdout)["results"]
    assert {op["path"] for op in pod["patch"]} == paths - {"/metadata/annotations"}
    assert all("annotations" not in json.dumps(p["patch"]) for p in ms["pods"])


def test_check_refuses_a_queue_with_children_under_capacity_hierarchy(tmp_path):
    from support.willrun import podgroup_crd, queue

    ms = gang_ms()
    ms["metadata"]["annotations"] = {"scheduling.volcano.sh/queue-name": "root"}
    files = str(write_yaml(tmp_path / "ms.yaml", ms))
    cluster = str(_facts(tmp_path, queue("root"), queue("ml"), podgroup_crd(True)))
    warned = check("--no-pods", "--cluster", cluster, files)
    assert warned.returncode == 0 and "warning [modelservings.queue]" in warned.stdout and "stalls every allocation" in warned.stdout
    refused = check("--no-pods", "--capacity-hierarchy", "--cluster", cluster, files)
    assert refused.returncode == 1 and "error [modelservings.queue]" in refused.stdout, refused.stdout + refused.stderr
