"""Settings: flags over environment over config file over defaults, and a clear error per bad value."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest
from support import free_port
from support.commands import run_webhook

from webhook.config import ConfigError, add_arguments, load
from webhook.servesettings import ServeSettings

REPO = Path(__file__).resolve().parents[1]


def parse(argv, env=None):
    parser = argparse.ArgumentParser()
    add_arguments(parser, ServeSettings)
    return load(ServeSettings, parser.parse_args(argv), env or {})


def test_defaults():
    s = parse([])
    assert (s.listener.port, s.listener.workers, s.policies.scheduler_name, s.listener.max_body_bytes) == (8443, 2, "volcano", 7 * 1024 * 1024)


def test_precedence_flag_env_file(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("port: 9000\nworkers: 3\nscheduler-name: from-file\nskip_namespaces: [a, b]\n")
    s = parse(["--config", str(cfg), "--port", "9100"], {"SERVINGGATE_WORKERS": "4"})
    assert s.listener.port == 9100 and s.listener.workers == 4 and s.policies.scheduler_name == "from-file" and s.policies.skip_namespaces == {"a", "b"}
    s = parse([], {"SERVINGGATE_CONFIG": str(cfg)})
    assert s.listener.port == 9000


@pytest.mark.parametrize(
    "argv, env, needle",
    [
        (["--port", "70000"], {}, "--port: invalid value '70000': must be at most 65535"),
        (["--workers", "two"], {}, "--workers: invalid value 'two': must be an integer"),
        ([], {"SERVINGGATE_KEEPALIVE": "5"}, "SERVINGGATE_KEEPALIVE: invalid value '5': must be at least 30"),
        ([], {"SERVINGGATE_TLS_MIN_VERSION": "1.0"}, "SERVINGGATE_TLS_MIN_VERSION: invalid value '1.0': must be one of 1.2, 1.3"),
        (["--max-body-bytes", "lots"], {}, "--max-body-bytes: invalid value 'lots'"),
        (["--cert-management", "magic"], {}, "--cert-management: invalid value 'magic'"),
        (["--scheduler-name", " "], {}, "--scheduler-name: invalid value ' ': must not be empty"),
    ],
)
def test_bad_values_name_their_source(argv, env, needle):
    with pytest.raises(ConfigError) as info:
        parse(argv, env)
    assert needle in str(info.value)


def test_config_file_with_unknown_key_is_refused(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("prot: 1\n")
    with pytest.raises(ConfigError, match="unknown setting"):
        parse(["--config", str(cfg)])


def test_serve_exits_2_with_the_message_before_starting(tmp_path):
    proc = run_webhook(["serve", "--port", "0", "--certs-dir", str(tmp_path)], cwd=REPO, timeout=60)
    assert proc.returncode == 2
    assert "servinggate serve: --port: invalid value '0': must be at least 1" in proc.stderr
    assert not (tmp_path / "tls.crt").exists()


def test_unknown_command_exits_2():
    proc = run_webhook(["frobnicate"], cwd=REPO, timeout=60)
    assert proc.returncode == 2 and "unknown command 'frobnicate'" in proc.stderr


def test_generated_docs_match_the_declarations_and_the_registry():
    """`./dev docs` rewrites them; a setting added, renamed or re-defaulted without it fails here."""
    from webhook import docs

    for name, kind in docs.FILES.items():
        text = (REPO / name).read_text()
        assert docs.render(text, kind) == text, f"{name} is stale: run ./dev docs"
    configuration = (REPO / "docs" / "configuration.md").read_text()
    for command in ("serve", "check", "plan", "reconcile", "audit", "smoke"):
        assert f"<!-- generated:settings:{command} -->" in configuration
    from webhook.policies import REGISTRY

    rules = (REPO / "docs" / "policies.md").read_text()
    assert all(f"\n- `{name}`: " in rules for name in REGISTRY.names())


def test_check_and_serve_read_the_policy_settings_from_the_same_declarations():
    from webhook.check.settings import CheckSettings
    from webhook.config import _settings_fields
    from webhook.policies.settings import PolicySettings

    policy = {f.name for f in _settings_fields(PolicySettings)}
    assert {f.name for f in _settings_fields(CheckSettings)} == policy | {"kubernetes_version", "feature_gates", "crds"}
    assert policy <= {f.name for f in _settings_fields(ServeSettings)}


def serving(tmp_path) -> list[str]:
    return ["--certs-dir", str(tmp_path / "c"), "--port", str(free_port()), "--metrics-port", "0"]


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["serve", "--cert-management", "self"], "servinggate serve: --cert-management self needs access to the API server"),
        (["reconcile"], "servinggate reconcile: --kubeconfig: no usable Kubernetes API configuration"),
    ],
)
def test_no_api_access_is_a_clear_start_error_not_a_traceback(argv, needle, tmp_path):
    """On free ports: a server the developer runs on the default ones must not change the answer."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBERNETES_", "SERVINGGATE_"))}
    env.update(HOME=str(tmp_path), KUBECONFIG=str(tmp_path / "missing"))
    proc = subprocess.run(
        [sys.executable, "-m", "webhook", *argv, *(serving(tmp_path) if argv[0] == "serve" else [])],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr


# ---- --kubernetes-version: one declaration, shared by serve, check, audit and smoke -------------


def test_the_kubernetes_version_is_one_declaration_every_judging_command_shares():
    import dataclasses

    from webhook.audit.settings import AuditSettings
    from webhook.check.settings import CheckSettings
    from webhook.config import KubernetesVersionSettings, _settings_fields
    from webhook.smoke.settings import SmokeSettings

    declared = KubernetesVersionSettings.__dataclass_fields__["kubernetes_version"]
    for cls in (ServeSettings, CheckSettings, AuditSettings, SmokeSettings):
        assert {f.name: f for f in _settings_fields(cls)}["kubernetes_version"] is declared, cls
        assert {f.name: f.metadata["group"] for f in dataclasses.fields(cls)}["version"] is KubernetesVersionSettings, cls


def test_the_kubernetes_version_from_flag_env_and_file(tmp_path):
    from webhook.kubeversion import KubeVersion

    assert parse([]).version.kubernetes_version == "auto"
    assert parse(["--kubernetes-version", "AUTO"]).version.kubernetes_version == "auto"
    assert parse(["--kubernetes-version", "1.30"]).version.kubernetes_version == KubeVersion(1, 30)
    assert parse([], {"SERVINGGATE_KUBERNETES_VERSION": "v1.31.2-eks-1"}).version.kubernetes_version == KubeVersion(1, 31)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("kubernetes-version: 1.30\n")  # a YAML float: read as written, not as 1.3
    assert parse(["--config", str(cfg)]).version.kubernetes_version == KubeVersion(1, 30)
    assert parse(["--config", str(cfg)], {"SERVINGGATE_KUBERNETES_VERSION": "1.29"}).version.kubernetes_version == KubeVersion(1, 29)
    assert parse(["--config", str(cfg), "--kubernetes-version", "1.28"], {"SERVINGGATE_KUBERNETES_VERSION": "1.29"}).version.kubernetes_version == KubeVersion(
        1, 28
    )


@pytest.mark.parametrize(
    "argv, env, needle",
    [
        (["--kubernetes-version", "1.27"], {}, "--kubernetes-version: invalid value '1.27': must be 1.28 or newer (got 1.27)"),
        (["--kubernetes-version", "one"], {}, "--kubernetes-version: invalid value 'one': must be auto or a Kubernetes version such as 1.34"),
        ([], {"SERVINGGATE_KUBERNETES_VERSION": "1"}, "SERVINGGATE_KUBERNETES_VERSION: invalid value '1': must be auto"),
    ],
)
def test_a_bad_kubernetes_version_names_its_source(argv, env, needle):
    with pytest.raises(ConfigError) as info:
        parse(argv, env)
    assert needle in str(info.value)


@pytest.mark.parametrize("command", ["serve", "audit", "smoke"])
def test_a_kubernetes_version_below_1_28_stops_every_command_with_one_line(command, tmp_path):
    proc = run_webhook([command, "--kubernetes-version", "1.20"], cwd=REPO, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == f"servinggate {command}: --kubernetes-version: invalid value '1.20': must be 1.28 or newer (got 1.20)\n"


# ---- composition: one settings object per command, one field per concern -----------------------


def test_every_command_settings_is_one_field_per_concern():
    """No command inherits its groups: each field of a command's settings is a group (a concern),
    and the groups' settings stay flat flags, variables and file keys."""
    import dataclasses

    from webhook.docs import _command_settings

    for command, cls in _command_settings().items():
        fields = dataclasses.fields(cls)
        assert fields and all("group" in f.metadata for f in fields), command
        assert cls.__bases__ == (object,), command
    assert parse(["--port", "9001", "--rule-actions", "pods.gang-labels=off"]).policies.rule_actions == (("pods.gang-labels", "off"),)


def test_compose_routes_each_setting_to_its_group_and_refuses_unknown_names():
    from webhook.config import compose

    s = compose(ServeSettings, port=9001, kubeconfig="k", log_every_review=True)
    assert (s.listener.port, s.kube.kubeconfig, s.review_log.log_every_review, s.listener.host) == (9001, "k", True, "0.0.0.0")
    with pytest.raises(TypeError, match="no setting named nope"):
        compose(ServeSettings, nope=1)


def test_a_setting_two_groups_of_one_command_declare_is_refused():
    from dataclasses import dataclass

    from webhook.config import KubeSettings, _settings_fields, group, setting

    @dataclass(frozen=True)
    class AlsoKube:
        kubeconfig: str = setting("", str, "again")

    @dataclass(frozen=True)
    class Twice:
        kube: KubeSettings = group(KubeSettings)
        again: AlsoKube = group(AlsoKube)

    with pytest.raises(TypeError, match="kubeconfig declared in more than one group"):
        _settings_fields(Twice)


def test_each_group_checks_its_own_fields_when_loaded():
    with pytest.raises(ConfigError, match="--rule-actions: unknown rule"):
        parse(["--rule-actions", "no.such-rule=off"])
