"""`python -m webhook smoke` against the fake API server, whose dry-run creates go through webhooks
the test wires in: our real rules (the engine behind `serve`), one that allows everything, or
Kthena's refusing first; and the answers after which no verdict is possible (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from support.commands import run_webhook

from webhook.__main__ import main as webhook_main
from webhook.admission.responses import review_response
from webhook.admission.review import make_request
from webhook.kubeversion import NEWEST
from webhook.policies import Context, DictLookups, PolicySettings, engine
from webhook.smoke import cli, objects, verdicts

REPO = Path(__file__).resolve().parents[2]
OURS = {"validate": "modelservings.validate.servinggate.io", "mutate": "pods-modelserving.mutate.servinggate.io"}


def our_webhook(action: str, settings: PolicySettings | None = None):
    """What our webhook answers, through the same engine and response builder as `serve`."""
    ctx = Context(settings=settings or PolicySettings(), lookups=DictLookups([]))

    def answer(obj: dict) -> dict | None:
        kind_matches = (obj["kind"] == "Pod") == (action == "mutate")
        if not kind_matches:
            return None  # the configuration's rules do not select it
        req = make_request(obj, dry_run=True)
        return review_response(req, engine.review(action, req, ctx))["response"]

    return answer


def allow_everything(obj: dict) -> dict:
    return {"uid": "x", "allowed": True}


def kthena_refuses(obj: dict) -> dict | None:
    if obj["kind"] != "ModelServing":
        return None
    return {"uid": "x", "allowed": False, "status": {"code": 400, "message": "validation failed: spec.template is invalid"}}


@pytest.fixture
def smoke(fake_api, tmp_path, capsys):
    kubeconfig = fake_api.write_kubeconfig(tmp_path / "kubeconfig")

    def run(*extra: str) -> tuple[int, str]:
        code = webhook_main(["smoke", "--kubeconfig", str(kubeconfig), "--namespace", "team-a", *extra])
        out = capsys.readouterr()
        return code, out.out + out.err

    return run


def _install_ours(api, settings: PolicySettings | None = None) -> None:
    api.mutating_webhooks = [(OURS["mutate"], our_webhook("mutate", settings))]
    api.validating_webhooks = [(OURS["validate"], our_webhook("validate", settings))]


def test_passes_when_our_webhooks_answer(fake_api, smoke):
    _install_ours(fake_api)
    code, out = smoke()
    assert code == 0, out
    assert out.count("PASS") == 4
    assert f'refused by "{OURS["validate"]}"' in out and "schedulerName volcano" in out
    assert "PASS      opt-in gang pod is mutated: by our mutating webhook (no MutatingAdmissionPolicy installed); " in out
    assert "schedulerName volcano, PodGroup servinggate-smoke" in out
    creates = [c for c in fake_api.requests if c.method == "POST"]
    assert len(creates) == 4 and all(c.query == {"dryRun": "All"} for c in creates)
    assert all("/namespaces/team-a/" in c.path for c in creates)


def test_fails_against_a_webhook_that_allows_everything(fake_api, smoke):
    fake_api.mutating_webhooks = [("allow.example.com", allow_everything)]
    fake_api.validating_webhooks = [("allow.example.com", allow_everything)]
    code, out = smoke()
    assert code == 1, out
    assert "PASS      known-good" in out
    assert "FAIL      known-bad ModelServing is refused by our webhook: accepted" in out
    assert "FAIL      ModelServing pod gets our patch: accepted without our patch" in out
    assert "FAIL      opt-in gang pod is mutated: accepted unmutated" in out


def test_says_the_opt_in_gang_was_made_by_the_mutating_policy_where_installed(fake_api, smoke):
    """With our MutatingAdmissionPolicy's binding installed, the gang's pod is the API server's work
    (stood in for here by a mutator doing what the policy does; tests/oracle proves the two equal)."""
    from webhook.deploy.mutationpolicy import GROUP, NAME

    _install_ours(fake_api)
    fake_api.mutating_webhooks = [("policy", our_webhook("mutate"))]  # our webhook itself is gone
    fake_api.add_custom({"apiVersion": f"{GROUP}/v1", "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": NAME}})
    code, out = smoke()
    assert "PASS      opt-in gang pod is mutated: by the MutatingAdmissionPolicy (v1), in the API server;" in out
    fake_api.mutating_webhooks = []
    code, out = smoke()
    assert code == 1
    assert "FAIL      opt-in gang pod is mutated: accepted unmutated: schedulerName " in out and "PodGroup annotation unset" in out
    assert "(expected from the MutatingAdmissionPolicy (v1), in the API server)" in out
    fake_api.mutating_webhooks = [("policy", our_webhook("mutate"))]
    fake_api.fail("GET", "mutatingadmissionpolicybindings", 403, "Forbidden", "cannot get")
    code, out = smoke()
    assert "PASS      opt-in gang pod is mutated: by our mutating webhook or the MutatingAdmissionPolicy (its binding could not be read);" in out


def test_fails_when_the_rule_is_only_warning(fake_api, smoke):
    _install_ours(fake_api, PolicySettings(rule_actions=((objects.BAD_RULE, "warn"),)))
    code, out = smoke()
    assert code == 1 and "FAIL      known-bad" in out


def test_says_when_kthenas_webhook_answers_first(fake_api, smoke):
    fake_api.validating_webhooks = [("validate.modelserving.kthena.io", kthena_refuses), (OURS["validate"], our_webhook("validate"))]
    fake_api.mutating_webhooks = [(OURS["mutate"], our_webhook("mutate"))]
    code, out = smoke()
    assert code == 1
    assert out.count('another webhook first, "validate.modelserving.kthena.io"') == 2
    assert "PASS      ModelServing pod" in out


@pytest.mark.parametrize(
    "trouble, expected",
    [
        (lambda api: setattr(api, "modelservings_served", False), "are Kthena's CRDs installed?"),
        (
            lambda api: api.fail(
                "POST", r"/modelservings$", 403, "Forbidden", 'modelservings.workload.serving.volcano.sh is forbidden: User "x" cannot create resource'
            ),
            "forbidden: cannot create",
        ),
        (lambda api: api.fail("POST", r"/pods$", 404, "NotFound", 'namespaces "team-a" not found'), "the smoke namespace does not exist"),
    ],
)
def test_exits_2_when_the_check_cannot_run(fake_api, smoke, trouble, expected):
    _install_ours(fake_api)
    trouble(fake_api)
    code, out = smoke()
    assert code == 2, out
    assert "UNUSABLE" in out and expected in out


def test_exits_2_without_a_cluster(tmp_path, capsys):
    dead = tmp_path / "kubeconfig"
    dead.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "x",
                "clusters": [{"name": "x", "cluster": {"server": "http://127.0.0.1:9"}}],
                "users": [{"name": "x", "user": {}}],
                "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}],
            }
        )
    )
    assert webhook_main(["smoke", "--kubeconfig", str(dead)]) == 2
    assert "unreachable" in capsys.readouterr().err
    assert webhook_main(["smoke", "--kubeconfig", str(tmp_path / "missing")]) == 2


def test_the_smoke_objects_are_what_check_says_they_are(tmp_path):
    """Offline, as the API server's schema and our rules would: the good one passes everything,
    the bad one is refused by exactly the rule smoke expects."""
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(yaml.safe_dump(objects.good_modelserving("team-a")))
    bad.write_text(yaml.safe_dump(objects.bad_modelserving("team-a")))
    run = lambda p: run_webhook(["check", "--no-pods", str(p)], cwd=REPO)  # noqa: E731
    assert run(good).returncode == 0
    refused = run(bad)
    assert refused.returncode == 1 and f"[{objects.BAD_RULE}]" in refused.stdout and objects.BAD_FIELD in refused.stdout
    assert refused.stdout.count("error [") == 1


def test_answers_are_read_without_a_cluster():
    what = "ModelServing ns/x"
    denied = {"message": f'admission webhook "{OURS["validate"]}" denied the request: x: {objects.BAD_FIELD}: Forbidden'}
    assert verdicts.refused(422, denied, what, objects.BAD_RULE, objects.BAD_FIELD).ok
    assert not verdicts.refused(422, {"message": "ModelServing is invalid: spec.replicas: Invalid"}, what, objects.BAD_RULE, objects.BAD_FIELD).ok
    assert not verdicts.accepted(422, denied, what).ok
    assert "our webhook" in verdicts.accepted(422, denied, what).text
    assert not verdicts.patched(201, {"spec": {"schedulerName": "default-scheduler"}}, what).ok
    assert verdicts.patched(201, {"spec": {"schedulerName": "volcano"}}, what).ok
    with pytest.raises(verdicts.Unusable):
        verdicts.accepted(500, {"message": "etcd down"}, what)
    # a webhook that is down with failurePolicy Fail: a 500 that names it is a failed step, not "unusable"
    down = {"message": f'Internal error occurred: failed calling webhook "{OURS["validate"]}": connection refused'}
    with pytest.raises(verdicts.Unusable):
        verdicts.refused(500, down, what, objects.BAD_RULE, objects.BAD_FIELD)
    assert [title for title, _, _ in cli.steps("x")][1].startswith("known-bad")


def test_says_which_version_the_webhook_judges_by(fake_api, smoke, tmp_path):
    _install_ours(fake_api)
    fake_api.version = {"major": "1", "minor": "38", "gitVersion": "v1.38.1"}
    code, out = smoke()
    assert code == 0, out
    assert out.splitlines()[0] == (
        f"INFO      the webhook (--kubernetes-version auto) judges by Kubernetes 1.38, judged as {NEWEST}, from the API server's /version (v1.38.1)"
    )
    served = tmp_path / "serve.yaml"  # the webhook's own settings file: its other keys are ignored
    served.write_text("kubernetes-version: '1.29'\nport: 8443\nrule-actions: ''\n")
    calls = len(fake_api.calls("GET", "^/version/?$"))
    code, out = smoke("--config", str(served))
    assert out.splitlines()[0] == "INFO      the webhook (--kubernetes-version 1.29) judges by Kubernetes 1.29, from --kubernetes-version"
    assert len(fake_api.calls("GET", "^/version/?$")) == calls


def test_an_unreadable_version_is_reported_as_the_webhook_would_take_it(fake_api, smoke):
    _install_ours(fake_api)
    fake_api.version = None
    code, out = smoke()
    assert code == 0, out
    assert f"judges by Kubernetes {NEWEST}, from the newest supported version, as the API server's /version could not be read" in out
