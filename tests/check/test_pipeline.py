"""The steps of `check`'s pipeline one at a time: loading, defaults, field validation modes, CEL
projection, --crd, templates, and the small renderers the API server's messages depend on."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml
from support import CRDS, REPO
from support.commands import run_webhook

from webhook.admission.gofmt import go_float, go_value
from webhook.check import catalog, celrules, run
from webhook.check.loading import load, resolve_plain
from webhook.policies.settings import PolicySettings

CASES = Path(__file__).resolve().parents[1] / "fixtures" / "verdicts" / "cases"


def ms() -> dict:
    return yaml.safe_load((CASES / "ms-valid.yaml").read_text())


def check_text(text: str, **kwargs):
    kwargs.setdefault("crd_paths", [str(CRDS)])
    results, problems = run(["-"], [], PolicySettings(), stdin=io.StringIO(text), **kwargs)
    assert problems == []
    return results


def check_obj(obj: dict, **kwargs):
    return check_text(yaml.safe_dump(obj, sort_keys=False), **kwargs)


# ---- defaults: our rules see the object the API server would hand the webhook ------------------


def test_crd_defaults_reach_our_rules():
    m = ms()
    del m["spec"]["replicas"]
    [r] = check_obj(m)
    assert r.status == "allowed", [f.message for f in r.findings]
    assert r.final["spec"]["replicas"] == 1
    assert r.final["spec"]["schedulerName"] == "volcano"
    assert r.final["spec"]["recoveryPolicy"] == "RoleRecreate"
    assert all(role["replicas"] in (1, 2) and role["maxUnavailable"] == 1 for role in r.final["spec"]["template"]["roles"])
    assert "replicas" not in r.obj["spec"]  # the input is never edited


def test_null_without_default_is_pruned_and_null_with_default_is_defaulted():
    m = ms()
    m["spec"]["replicas"] = None
    m["spec"]["template"]["networkTopology"] = None
    [r] = check_obj(m)
    assert r.status == "allowed"
    assert r.final["spec"]["replicas"] == 1 and "networkTopology" not in r.final["spec"]["template"]


# ---- unknown fields: Strict refuses, Warn warns and drops, Ignore drops ---------------------------


def misspelled() -> dict:
    m = ms()
    m["spec"]["template"]["gangPolcy"] = m["spec"]["template"].pop("gangPolicy")
    return m


def test_field_validation_modes():
    [strict] = check_obj(misspelled())
    assert (strict.status, strict.code, strict.reason) == ("denied", 400, "decode")
    assert strict.message == (
        'ModelServing in version "v1alpha1" cannot be handled as a ModelServing: strict decoding error: unknown field "spec.template.gangPolcy"'
    )
    [warn] = check_obj(misspelled(), field_validation="Warn")
    assert warn.status == "allowed"
    assert [(f.rule, f.message) for f in warn.warnings] == [("schema", 'unknown field "spec.template.gangPolcy"')]
    assert "gangPolcy" not in warn.final["spec"]["template"] and "gangPolicy" not in warn.final["spec"]["template"]
    [ignore] = check_obj(misspelled(), field_validation="Ignore")
    assert ignore.status == "allowed" and ignore.warnings == []


def test_repeated_yaml_key_is_a_warning_and_the_last_value_wins():
    text = (CASES / "ms-duplicate-key-yaml.yaml").read_text()
    [r] = check_text(text)
    assert r.status == "allowed"
    assert r.final["spec"]["replicas"] == 2
    [w] = r.warnings
    assert (w.rule, w.field, w.line) == ("decode", "spec.replicas", 8)
    assert w.message == 'duplicate field "spec.replicas": the last value is kept'


# ---- CEL --------------------------------------------------------------------------------------


def test_cel_projection_keeps_what_the_rule_reads():
    rule = "self.all(x, self.exists_one(y, y.name == x.name))"
    keys = celrules.projection(rule)
    assert keys is not None and "name" in keys
    roles = [{"name": "a", "entryTemplate": {"spec": {}}}, {"name": "b"}]
    assert celrules.project(roles, keys, rule) == [{"name": "a"}, {"name": "b"}]
    # Whole values compared, sized or indexed: no projection.
    for whole in ("self == oldSelf", "size(self) > 1", "self.all(k, self[k] > 0)", "self.all(x, x == 1)", "self.all(x, x.all(k, k == 'a'))"):
        assert celrules.projection(whole) is None, whole
    # A map iterated by a macro keeps its keys.
    assert celrules.project({"a": 1, "b": 2}, frozenset({"all"}), "self.all(k, k != 'c')") == {"a": 1, "b": 2}


def test_transition_rules_need_the_old_object():
    new = ms()
    new["spec"]["template"]["gangPolicy"]["minRoleReplicas"]["decode"] = 2
    [create] = check_obj(new)
    assert create.status == "allowed"
    results, _ = run(["-"], [], PolicySettings(), crd_paths=[str(CRDS)], stdin=io.StringIO(yaml.safe_dump(new)))
    assert results[0].status == "allowed"


def test_rule_the_library_cannot_compile_is_a_warning_not_a_verdict(tmp_path):
    crd = yaml.safe_load((CRDS / "podgroup.yaml").read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["x-kubernetes-validations"] = [{"rule": "self.minMember >", "message": "broken"}]
    (tmp_path / "pg.json").write_text(json.dumps(crd))
    pg = yaml.safe_load((CASES / "podgroup-valid.yaml").read_text())
    [r] = check_obj(pg, crd_paths=[str(tmp_path / "pg.json")])
    assert r.status == "allowed"
    [w] = r.warnings
    assert w.rule == "cel" and "not checked offline" in w.message


def test_the_last_crd_given_for_a_kind_wins_and_is_said(tmp_path):
    crd = yaml.safe_load((CRDS / "modelserving.yaml").read_text())
    role = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["template"]["properties"]["roles"]["items"]
    role["properties"]["name"]["maxLength"] = 5
    (tmp_path / "crds").mkdir()
    (tmp_path / "crds" / "ms.yaml").write_text(yaml.safe_dump(crd))
    [ours] = check_obj(ms())
    both = catalog.build([str(CRDS), str(tmp_path / "crds")])
    [own] = check_obj(ms(), crds=both)
    assert ours.status == "allowed"
    assert own.status == "denied"
    assert [f"{f.field}: {f.message}" for f in own.errors if f.rule == "schema"] == [
        "spec.template.roles[0].name: Too long: may not be longer than 5",
        "spec.template.roles[1].name: Too long: may not be longer than 5",
    ]
    assert both.replaced == [
        f"the CRD of ModelServing.workload.serving.volcano.sh from {tmp_path / 'crds' / 'ms.yaml'} replaces the one from {CRDS / 'modelserving.yaml'} (the last given wins)"
    ]
    assert both.origins["modelservings.workload.serving.volcano.sh"] == str(tmp_path / "crds" / "ms.yaml")


# ---- loading ------------------------------------------------------------------------------------


def test_scalars_resolve_as_kubectl_sends_them():
    assert [resolve_plain(s) for s in ("1", "0755", "0x1F", "1_000", "1.5", "yes", "n", "on", "~", "2024-01-01", "abc")] == [
        1,
        493,
        31,
        1000,
        1.5,
        True,
        False,
        True,
        None,
        "2024-01-01",
        "abc",
    ]


def test_positions_and_list_items(tmp_path):
    f = tmp_path / "list.yaml"
    f.write_text("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n  data:\n    k: v\n")
    loaded = load([str(f)])
    [doc] = loaded.documents
    assert (doc.item, doc.line, doc.column) == (0, 4, 3)
    assert doc.position(("data", "k")) == (8, 5)
    assert doc.position(("data", "missing")) == (7, 3)  # the deepest node the YAML has


def test_directories_are_searched_recursively_for_manifests(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "one.yml").write_text(yaml.safe_dump(ms()))
    (tmp_path / "a" / "two.json").write_text(json.dumps(yaml.safe_load((CASES / "pod-valid.yaml").read_text())))
    (tmp_path / "a" / "notes.txt").write_text("not: a manifest\n")
    loaded = load([str(tmp_path)])
    assert sorted(Path(d.source).name for d in loaded.documents) == ["one.yml", "two.json"]


def test_no_objects_is_unusable(tmp_path):
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing here\n---\n")
    proc = run_webhook(["check", str(empty)], cwd=REPO, timeout=60)
    assert proc.returncode == 2
    assert "no objects found" in proc.stderr


# ---- pods of workloads ------------------------------------------------------------------------------


def test_modelserving_pods_are_built_as_kthena_builds_them():
    [r] = check_obj(ms())
    names = [p["name"] for p in r.pods]
    assert names == ["llm-0-prefill-0-0", "llm-0-prefill-0-1", "llm-0-decode-0-0", "llm-0-decode-0-1"]
    assert all(p["allowed"] for p in r.pods)
    assert r.pods[0]["patch"] == []  # Kthena's pods already carry everything our mutation adds


def test_deployment_pods_show_the_mutation_they_will_get():
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web", "servinggate.io/gang": "web-g"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
        },
    }
    [r] = check_obj(deploy)
    assert r.status == "allowed" and r.schema == "builtin"
    [pod] = r.pods
    assert pod["name"] == "web-*" and pod["template"] == "spec.template"
    assert {"op": "replace", "path": "/spec/schedulerName", "value": "volcano"} in pod["patch"]


# ---- renderers ------------------------------------------------------------------------------------


@pytest.mark.parametrize("value, text", [(1000000.0, "1e+06"), (123456.0, "123456"), (0.5, "0.5"), (1e-05, "1e-05"), (100.0, "100")])
def test_go_float(value, text):
    assert go_float(value) == text


def test_go_value():
    assert go_value("x") == '"x"' and go_value(None) == '"null"' and go_value(True) == "true"
    assert go_value({"name": "a"}) == 'map[string]interface {}{"name":"a"}'


def test_version_names_the_crds_in_use():
    """`version` says which CRDs `check` uses and where they came from (SERVINGGATE_CRDS: our fixtures, set by conftest)."""
    proc = run_webhook(["--version"], cwd=REPO, timeout=60)
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("servinggate ")
    assert f"    modelservings.workload.serving.volcano.sh v1alpha1: {CRDS / 'modelserving.yaml'}" in lines
    assert f"  --crds {CRDS}:" in lines
    from webhook.kubeversion import NEWEST, NEWEST_SCHEMAS, OLDEST

    assert lines[1] == (f"Kubernetes versions judged by (--kubernetes-version, default auto): {OLDEST} to {NEWEST}; a newer cluster is judged as {NEWEST}")
    assert f"check's built-in schemas (kubernetes-validate): {OLDEST} to {NEWEST_SCHEMAS}" in proc.stdout


def test_manifests_shaped_like_kthenas_examples_pass():
    """Our own manifests in the shapes Kthena's examples use: an autoscaled ModelServing without
    spec.replicas (the prometheus-autoscaler example), a PD-disaggregated one whose templates carry
    modelserving.volcano.sh/rolename (the router example), and the AutoscalingPolicy for it."""
    autoscaled = ms()
    del autoscaled["spec"]["replicas"]
    routed = ms()
    routed["metadata"]["name"] = "llm-pd"
    for role in routed["spec"]["template"]["roles"]:
        role["entryTemplate"]["metadata"] = {"labels": {"app": "llm-pd", "modelserving.volcano.sh/rolename": role["name"]}}
    policy = yaml.safe_load((CASES / "asp-valid.yaml").read_text())
    results = check_text(yaml.safe_dump_all([autoscaled, routed, policy], sort_keys=False))
    assert [(r.obj["kind"], r.status) for r in results] == [("ModelServing", "allowed"), ("ModelServing", "allowed"), ("AutoscalingPolicy", "allowed")]
    assert all(not r.findings for r in results), [f.message for r in results for f in r.findings]


def test_a_dropped_template_field_is_a_warning_at_the_checks_minor():
    """`check` judges a workload's pod template as its --kubernetes-version's server does: at 1.28
    a sidecar's restartPolicy is dropped (SidecarContainers off), which `check` reports."""
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "ai"},
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": "x:1"}], "initContainers": [{"name": "sync", "image": "x:1", "restartPolicy": "Always"}]},
            },
        },
    }
    [r] = check_obj(deploy, kubernetes_version="1.28")
    assert r.status == "allowed", [f.message for f in r.findings]
    assert [(f.rule, f.message) for f in r.warnings] == [
        (
            "podvalidation",
            "spec.template.spec.initContainers[0].restartPolicy: dropped: the feature gate SidecarContainers"
            " is off by default in Kubernetes 1.28, so the API server drops it",
        )
    ]
