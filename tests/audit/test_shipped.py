"""The auditor as shipped: its Deployment's arguments parse as `audit` settings and keep auditing
every 10 minutes with reports and a Lease; the PolicyReport CRD is the upstream file, optional."""

from __future__ import annotations

from pathlib import Path

import yaml

from webhook.audit.settings import SHARES_FILE_WITH, AuditSettings
from webhook.config import parse_command

REPO = Path(__file__).resolve().parents[2]


def test_the_deployment_audits_every_10_minutes_with_reports_and_a_lease():
    [deployment] = yaml.safe_load_all((REPO / "manifests" / "base" / "auditor-deployment.yaml").read_text())
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    command, *args = container["args"]
    assert command == "audit"
    settings, _ = parse_command(AuditSettings, args, "audit", "", shared_with=SHARES_FILE_WITH)
    assert (settings.auditor.every, settings.auditor.write_reports, settings.auditor.leader_elect) == (600, True, True)
    assert settings.auditor.health_port == container["ports"][0]["containerPort"]
    assert deployment["spec"]["replicas"] == 1
    base = yaml.safe_load((REPO / "manifests" / "base" / "kustomization.yaml").read_text())
    assert {"auditor-rbac.yaml", "auditor-deployment.yaml"} <= set(base["resources"])


def test_the_policyreport_crd_is_an_optional_component_serving_v1alpha2():
    folder = REPO / "manifests" / "components" / "policyreport-crd"
    component = yaml.safe_load((folder / "kustomization.yaml").read_text())
    assert component["kind"] == "Component" and component["resources"] == ["wgpolicyk8s.io_policyreports.yaml"]
    [crd] = [d for d in yaml.safe_load_all((folder / "wgpolicyk8s.io_policyreports.yaml").read_text()) if d]
    assert crd["metadata"]["name"] == "policyreports.wgpolicyk8s.io"
    assert {v["name"]: v["served"] for v in crd["spec"]["versions"]}["v1alpha2"] is True
    base = (REPO / "manifests" / "base" / "kustomization.yaml").read_text()
    assert "policyreport" not in base  # never installed by default: Kyverno may own the same CRD
