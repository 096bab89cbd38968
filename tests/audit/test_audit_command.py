"""`python -m webhook audit` against the fake API server: what it lists, how it judges, its
outputs and exit codes. The PolicyReports it writes are in test_policyreports.py."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from auditobjects import MS_GROUP, hpa, kubeconfig, modelserving

from webhook.__main__ import main
from webhook.audit.kinds import AuditedKind, audited_kinds

MS = ("workload.serving.volcano.sh", "modelservings")


def _audit(api, tmp_path, capsys, *args: str) -> tuple[int, str, str]:
    code = main(["audit", "--kubeconfig", kubeconfig(api, tmp_path), *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_audited_kinds_are_the_registrys_validating_kinds_on_create():
    assert {k.resource for k in audited_kinds()} == {
        "modelservings",
        "autoscalingpolicies",
        "autoscalingpolicybindings",
        "horizontalpodautoscalers",
        "cronhorizontalpodautoscalers",
        "inferenceservices",
        "scaledobjects",
    }
    assert AuditedKind("autoscaling", "v2", "horizontalpodautoscalers") in audited_kinds()  # the newest version


def test_json_lists_each_broken_object_with_its_rule_and_nothing_for_valid_ones(cluster, tmp_path, capsys):
    cluster.add_custom(modelserving("good"))
    cluster.add_custom(modelserving("bad-role", upper_role=True))
    cluster.add_custom(modelserving("bad-image", "team-b", spaced_image=True))
    code, out, _ = _audit(cluster, tmp_path, capsys, "--output", "json")
    assert code == 1
    report = json.loads(out)
    found = {(r["namespace"], r["name"]): r for r in report["results"]}
    assert set(found) == {("default", "bad-role"), ("team-b", "bad-image")}
    assert "modelservings.kthena.role-names" in {e["rule"] for e in found[("default", "bad-role")]["errors"]}
    image = found[("team-b", "bad-image")]
    assert image["allowed"] is False and image["kind"] == "ModelServing"
    assert image["errors"] == [
        {
            "rule": "modelservings.kthena.images",
            "field": "spec.template.roles[0].entryTemplate.spec.containers[0].image",
            "message": 'Invalid value: "nginx latest": invalid container image reference: image cannot contain spaces',
            "action": "deny",
        }
    ]
    assert report["summary"] == {"objects": 3, "denied": 2, "warned": 0, "skippedKinds": 0}


def test_text_names_kind_object_field_message_and_rule(cluster, tmp_path, capsys):
    cluster.add_custom(modelserving("bad-image", "team-b", spaced_image=True))
    code, out, _ = _audit(cluster, tmp_path, capsys)
    assert code == 1
    assert out.splitlines()[0] == (
        "ModelServing team-b/bad-image: spec.template.roles[0].entryTemplate.spec.containers[0].image: "
        'Invalid value: "nginx latest": invalid container image reference: image cannot contain spaces '
        "[modelservings.kthena.images]"
    )
    assert out.splitlines()[-1] == "1 audited, 1 would be denied, 0 warned, 0 kinds not installed"


def test_warn_and_audit_actions_are_reported_as_warnings_and_never_fail(cluster, tmp_path, capsys):
    cluster.add_custom(modelserving("bad-image", spaced_image=True))
    cluster.add_custom(
        hpa("scale-to-zero", min_replicas=0) | {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler"}, plural="horizontalpodautoscalers"
    )
    code, out, _ = _audit(
        cluster, tmp_path, capsys, "-o", "json", "--rule-actions", "modelservings.kthena.images=audit,horizontalpodautoscalers.modelserving-bounds=warn"
    )
    assert code == 0
    results = {r["name"]: r for r in json.loads(out)["results"]}
    assert results["bad-image"]["allowed"] and results["bad-image"]["errors"] == []
    assert [w["action"] for w in results["bad-image"]["warnings"]] == ["audit"]
    assert [(w["rule"], w["action"], w["field"]) for w in results["scale-to-zero"]["warnings"]] == [
        ("horizontalpodautoscalers.modelserving-bounds", "warn", "spec.minReplicas")
    ]


def test_a_config_file_of_the_webhook_gives_the_same_actions(cluster, tmp_path, capsys):
    """`--config` reads a `serve` file (its other keys ignored), so the auditor and the webhook agree."""
    cluster.add_custom(modelserving("bad-image", spaced_image=True))
    path = tmp_path / "serve.yaml"
    path.write_text("rule-actions: modelservings.kthena.images=warn\nworkers: 4\ncert-management: self\n")
    code, out, _ = _audit(cluster, tmp_path, capsys, "--config", str(path))
    assert code == 0 and "[modelservings.kthena.images] (warn)" in out


def test_lists_in_pages_with_continue_tokens_and_never_gets_one_object(cluster, tmp_path, capsys):
    for i in range(5):
        cluster.add_custom(modelserving(f"ms-{i}", spaced_image=(i == 3)))
    code, out, _ = _audit(cluster, tmp_path, capsys, "--page-size", "2", "-o", "json")
    assert code == 1 and [r["name"] for r in json.loads(out)["results"]] == ["ms-3"]
    lists = cluster.calls("GET", r"/modelservings$")
    assert all(c.query["limit"] == "2" for c in lists)
    # 3 pages to fill the lookups' store, 3 more to judge
    assert len(lists) == 6 and sum("continue" in c.query for c in lists) == 4
    assert not cluster.calls("GET", r"/modelservings/[^/]+$")


def test_lookups_come_from_the_listed_projections(cluster, tmp_path, capsys):
    policy = {"apiVersion": f"{MS_GROUP}/v1alpha1", "kind": "AutoscalingPolicy", "metadata": {"name": "there", "namespace": "default"}, "spec": {}}
    cluster.add_custom(policy)
    for name, ref in (("ok", "there"), ("dangling", "missing")):
        cluster.add_custom(
            {
                "apiVersion": f"{MS_GROUP}/v1alpha1",
                "kind": "AutoscalingPolicyBinding",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"policyRef": {"name": ref}},
            }
        )
    code, out, _ = _audit(cluster, tmp_path, capsys, "-o", "json")
    found = {r["name"]: [e["rule"] for e in r["errors"]] for r in json.loads(out)["results"]}
    assert "autoscalingpolicybindings.references" in found["dangling"]
    assert "autoscalingpolicybindings.references" not in found.get("ok", [])
    assert not cluster.calls("GET", r"/autoscalingpolicies/[^/]+$")


def test_one_namespace_only(cluster, tmp_path, capsys):
    cluster.add_custom(modelserving("a", "team-a", spaced_image=True))
    cluster.add_custom(modelserving("b", "team-b", spaced_image=True))
    code, out, _ = _audit(cluster, tmp_path, capsys, "--namespace", "team-b", "-o", "json")
    assert [r["namespace"] for r in json.loads(out)["results"]] == ["team-b"]
    assert all(c.path.startswith("/apis/") and "/namespaces/team-b/" in c.path for c in cluster.calls("GET", r"/modelservings$"))


def test_a_kind_without_its_crd_is_skipped_with_a_note(fake_api, tmp_path, capsys):
    fake_api.add_custom(modelserving("bad-image", spaced_image=True))  # only ModelServings are served
    code, out, _ = _audit(fake_api, tmp_path, capsys, "-o", "json")
    report = json.loads(out)
    assert code == 1 and len(report["results"]) == 1
    assert report["summary"]["skippedKinds"] == 6
    assert any(n.startswith("inferenceservices.serving.kserve.io/v1beta1: not served") for n in report["notes"])


def test_sarif_locates_findings_logically(cluster, tmp_path, capsys):
    cluster.add_custom(modelserving("bad-image", "team-b", spaced_image=True))
    code, out, _ = _audit(cluster, tmp_path, capsys, "-o", "sarif")
    log = json.loads(out)
    assert log["version"] == "2.1.0" and log["runs"][0]["tool"]["driver"]["name"] == "servinggate audit"
    [result] = log["runs"][0]["results"]
    assert result["ruleId"] == "modelservings.kthena.images" and result["level"] == "error"
    [location] = result["locations"]
    assert "physicalLocation" not in location
    assert location["logicalLocations"][0]["fullyQualifiedName"] == (
        "ModelServing/team-b/bad-image.spec.template.roles[0].entryTemplate.spec.containers[0].image"
    )


def test_junit_has_a_suite_per_resource_and_a_failure_per_refused_object(cluster, tmp_path, capsys):
    cluster.add_custom(modelserving("good"))
    cluster.add_custom(modelserving("bad-image", spaced_image=True))
    code, out, _ = _audit(cluster, tmp_path, capsys, "-o", "junit")
    root = ET.fromstring(out.split("\n", 1)[1])
    assert (root.get("tests"), root.get("failures")) == ("2", "1")
    [suite] = root.findall("testsuite")
    assert suite.get("name") == "modelservings"
    assert [c.get("name") for c in suite.findall("testcase")] == ["ModelServing default/bad-image"]


def test_github_is_refused_as_a_usage_error(cluster, tmp_path, capsys):
    code, out, err = _audit(cluster, tmp_path, capsys, "-o", "github")
    assert code == 2 and out == "" and "sarif" in err
    assert not cluster.requests


@pytest.mark.parametrize("args", [["--every", "soon"], ["--rule-actions", "no.such.rule=warn"]])
def test_bad_settings_exit_2(cluster, tmp_path, capsys, args):
    code, _, err = _audit(cluster, tmp_path, capsys, *args)
    assert code == 2 and err.count("\n") == 1


def test_a_refused_list_is_one_line_naming_the_verb_and_resource(cluster, tmp_path, capsys):
    cluster.fail(
        "GET",
        r"/inferenceservices$",
        403,
        "Forbidden",
        'inferenceservices.serving.kserve.io is forbidden: User "system:serviceaccount:x:y" cannot list resource',
    )
    code, out, err = _audit(cluster, tmp_path, capsys)
    assert code == 2
    assert err.strip() == (
        "servinggate audit: forbidden: system:serviceaccount:x:y cannot list inferenceservices.serving.kserve.io "
        "at cluster scope (RBAC: grant list on inferenceservices)"
    )


def test_no_cluster_exits_2(tmp_path, capsys):
    code = main(["audit", "--kubeconfig", str(tmp_path / "absent")])
    assert code == 2 and "unusable kubeconfig" in capsys.readouterr().err
