"""Per-rule enforcement actions, rule identity in answers, and respect for the owner's scheduler."""

from __future__ import annotations

import pytest

from webhook.admission.responses import review_response
from webhook.admission.review import make_request
from webhook.check.settings import CheckSettings
from webhook.config import ConfigError, load
from webhook.policies import REGISTRY, Context, DictLookups, NoLookups, engine
from webhook.policies.settings import PolicySettings
from webhook.servesettings import ServeSettings

RESERVED = "modelservings.reserved-labels"


def ms_with_reserved_label(kit) -> dict:
    ms = kit.gang_ms()
    ms["spec"]["template"]["roles"][0]["entryTemplate"].setdefault("metadata", {}).setdefault("labels", {})["modelserving.volcano.sh/role-id"] = "x"
    return ms


def ctx_with(actions: str, *objects) -> Context:
    settings = load(PolicySettings, {"rule_actions": actions}, environ={})
    return Context(settings=settings, lookups=DictLookups(objects))


def test_deny_is_the_default(kit):
    out = kit.validate(ms_with_reserved_label(kit))
    assert not out.allowed and [e.rule for e in out.errors] == [RESERVED]


def test_warn_allows_with_a_warning_naming_the_rule(kit):
    ms = ms_with_reserved_label(kit)
    req = make_request(ms)
    out = engine.validate(req, ctx_with(f"{RESERVED}=warn"))
    assert out.allowed and out.code == 200
    answer = review_response(req, out)["response"]
    assert answer["allowed"] is True
    assert any(w.startswith(f"servinggate [{RESERVED}]: spec.template.roles[0].entryTemplate.metadata.labels") for w in answer["warnings"])
    assert [(v.rule, v.action, v.passed) for v in out.verdicts if v.rule == RESERVED] == [(RESERVED, "warn", False)]


def test_audit_allows_and_records_in_the_audit_annotations_only(kit):
    ms = ms_with_reserved_label(kit)
    req = make_request(ms)
    out = engine.validate(req, ctx_with(f"{RESERVED}=audit"))
    answer = review_response(req, out)["response"]
    assert answer["allowed"] is True and "warnings" not in answer
    assert answer["auditAnnotations"]["audit"].startswith(f"[{RESERVED}] spec.template.roles[0]")
    assert RESERVED in answer["auditAnnotations"]["rules"].split(",")


def test_off_does_not_run_the_rule_and_other_rules_still_deny(kit):
    ms = ms_with_reserved_label(kit)
    ms["spec"]["replicas"] = -1
    out = engine.validate(make_request(ms), ctx_with(f"{RESERVED}=off"))
    assert RESERVED not in out.rules
    assert not out.allowed and {e.rule for e in out.errors} == {"modelservings.kthena.replicas"}


def test_a_mutator_turned_off_changes_nothing(kit):
    req = kit.request("pods-create-kthena-entry-missing-scheduler-annotations-roleid-mutating")
    out = engine.mutate(req, ctx_with("pods.default-scheduler=off"))
    assert "pods.default-scheduler" not in out.rules
    assert all(op["path"] != "/spec/schedulerName" for op in out.patch) and out.patch


@pytest.mark.parametrize(
    "value, needle",
    [
        ("modelservings.nope=warn", "unknown rule 'modelservings.nope'"),
        ("pods.gang-labels=warn", "pods.gang-labels is a mutate rule: its action is one of on, off"),
        (f"{RESERVED}=on", f"{RESERVED} is a validate rule"),
        (f"{RESERVED}", "is not RULE=ACTION"),
    ],
)
def test_bad_rule_actions_are_refused_at_start_by_every_command(value, needle):
    for cls in (ServeSettings, CheckSettings):
        with pytest.raises(ConfigError, match="RULE_ACTIONS|--rule-actions") as info:
            load(cls, {}, environ={"SERVINGGATE_RULE_ACTIONS": value})
        assert needle in str(info.value)


def test_serve_and_check_read_the_same_rule_actions():
    env = {"SERVINGGATE_RULE_ACTIONS": f"{RESERVED}=warn,pods.gang-labels=off"}
    warn_by_default = {r.name: r.default_action for r in REGISTRY.rules() if r.default_action}
    assert warn_by_default and set(warn_by_default.values()) == {"warn"}
    assert (
        load(ServeSettings, {}, environ=env).policies.actions()
        == load(CheckSettings, {}, environ=env).policies.actions()
        == {**warn_by_default, RESERVED: "warn", "pods.gang-labels": "off"}
    )


# ---- the owner's scheduler ----------------------------------------------------------------------

MISSING = "pods-create-kthena-entry-missing-scheduler-annotations-roleid-mutating"


def _owner(kit, scheduler: str | None) -> dict:
    ms = kit.gang_ms()
    if scheduler is None:
        ms["spec"].pop("schedulerName", None)
    else:
        ms["spec"]["schedulerName"] = scheduler
    return ms


@pytest.mark.parametrize("scheduler", ["default-scheduler", ""])
def test_pods_of_a_modelserving_that_chose_another_scheduler_are_left_alone(kit, scheduler):
    """An explicit empty schedulerName is another scheduler too: the CRD's default fills only an
    absent field, and Kthena makes the pods with none (issue 36 item 2)."""
    out = engine.mutate(kit.request(MISSING), Context(lookups=DictLookups([_owner(kit, scheduler)])))
    assert out.patch == [] and out.changes == [] and out.warnings == []


@pytest.mark.parametrize("scheduler", ["volcano", None])
def test_pods_of_a_gang_scheduled_modelserving_are_mutated(kit, scheduler):
    out = engine.mutate(kit.request(MISSING), Context(lookups=DictLookups([_owner(kit, scheduler)])))
    assert {"op": "replace", "path": "/spec/schedulerName", "value": "volcano"} in out.patch
    assert out.warnings == []


def test_an_unreadable_owner_means_mutate_as_usual_with_a_warning(kit):
    out = engine.mutate(kit.request(MISSING), Context(lookups=NoLookups()))
    assert {"op": "replace", "path": "/spec/schedulerName", "value": "volcano"} in out.patch
    assert [w.rule for w in out.warnings] == ["pods.default-scheduler"]
    assert "scheduler choice was not checked" in out.warnings[0].text
