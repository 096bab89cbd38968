"""The auditor as shipped: its Deployment's arguments parse as `audit` settings and keep auditing
every 10 minutes with reports and a Lease; the PolicyReport CRD is not shipped (wg-policy-prototypes' or
Kyverno's chart installs it, docs/audit.md says how)."""

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


def test_no_policyreport_crd_is_shipped_and_the_docs_say_where_it_comes_from():
    assert not (REPO / "manifests" / "components" / "policyreport-crd").exists()
    for folder in ("manifests", "charts"):
        for path in (REPO / folder).rglob("*.yaml"):
            text = path.read_text()
            assert "kind: CustomResourceDefinition" not in text, path
    audit_doc = (REPO / "docs" / "audit.md").read_text()
    assert "kubernetes-sigs/wg-policy-prototypes" in audit_doc and "kyverno" in audit_doc.lower()
