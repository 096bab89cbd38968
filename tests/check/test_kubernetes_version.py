"""`check --kubernetes-version`: the built-in schemas of the version chosen (capped at the newest
shipped), `auto` as the newest supported, strict decoding at every version, and the notes when a
version is judged as another."""

from __future__ import annotations

import io

import pytest
import yaml
from support import CRDS

from webhook.__main__ import main as webhook_main
from webhook.check import run
from webhook.check.cli import chosen_version, schema_version, version_notes
from webhook.kubeversion import NEWEST, NEWEST_SCHEMAS, KubeVersion
from webhook.policies.settings import PolicySettings


def pod(**security: object) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"securityContext": security, "containers": [{"name": "c", "image": "nginx"}]},
    }


def unknown_fields(obj: dict, version: str) -> list[str]:
    [result], problems = run(["-"], [], PolicySettings(), crd_paths=[str(CRDS)], stdin=io.StringIO(yaml.safe_dump(obj)), kubernetes_version=version)
    assert problems == []
    return [f.message for f in result.findings if "unknown field" in f.message]


# appArmorProfile: a Pod field since 1.30, unknown to the 1.28 API server
APPARMOR = pod(appArmorProfile={"type": "RuntimeDefault"})


def test_a_field_of_a_newer_release_is_refused_strict_at_1_28():
    assert unknown_fields(APPARMOR, "1.28") == ['unknown field "spec.securityContext.appArmorProfile"']


@pytest.mark.parametrize("version", ["1.34", "auto", "1.36", "1.50"])
def test_the_same_field_is_known_at_1_34_and_after(version):
    assert unknown_fields(APPARMOR, version) == []


def test_a_pod_keeps_strict_decoding_at_the_newest_version():
    assert unknown_fields(pod(appArmorProfil={"type": "RuntimeDefault"}), "auto") == ['unknown field "spec.securityContext.appArmorProfil"']


def test_schemas_newer_than_the_pod_port_are_read_up_to_the_newest_shipped():
    # bindMountOptions: a volume-mount field only the 1.37 schemas know
    obj = pod()
    obj["spec"]["containers"][0]["volumeMounts"] = [{"name": "v", "mountPath": "/v", "bindMountOptions": ["x"]}]
    assert unknown_fields(obj, "1.36") != []
    assert unknown_fields(obj, "1.37") == []
    assert unknown_fields(obj, "1.40") == []  # capped at 1.37


def test_auto_is_the_newest_supported_and_capping():
    assert chosen_version("auto").version == NEWEST
    assert chosen_version(KubeVersion(1, 30)).version == KubeVersion(1, 30)
    assert schema_version(KubeVersion(1, 30)) == KubeVersion(1, 30)
    assert schema_version(KubeVersion(1, 99)) == NEWEST_SCHEMAS
    assert version_notes(chosen_version("auto")) == []
    assert version_notes(chosen_version(KubeVersion(1, 99))) == [
        f"Kubernetes 1.99: Pod validation is judged as {NEWEST}, the newest ported",
        f"Kubernetes 1.99: built-in kinds are read with the schemas of {NEWEST_SCHEMAS}, the newest shipped",
    ]


def test_the_cli_takes_the_setting_from_flag_env_and_file(tmp_path, capsys, monkeypatch):
    f = tmp_path / "pod.yaml"
    f.write_text(yaml.safe_dump(APPARMOR))
    assert webhook_main(["check", "--kubernetes-version", "1.28", str(f)]) == 1
    assert "appArmorProfile" in capsys.readouterr().out
    assert webhook_main(["check", str(f)]) == 0  # auto: the newest
    config = tmp_path / "serve.yaml"
    config.write_text("kubernetes-version: '1.28'\nport: 9443\n")  # a serve file: its other keys ignored
    assert webhook_main(["check", "--config", str(config), str(f)]) == 1
    capsys.readouterr()
    monkeypatch.setenv("SERVINGGATE_KUBERNETES_VERSION", "1.29")
    assert webhook_main(["check", str(f)]) == 1
    monkeypatch.setenv("SERVINGGATE_KUBERNETES_VERSION", "1.99")
    assert webhook_main(["check", str(f)]) == 0
    assert f"check: Kubernetes 1.99: Pod validation is judged as {NEWEST}" in capsys.readouterr().err


@pytest.mark.parametrize(
    "value, reason",
    [
        ("1.27", "must be 1.28 or newer (got 1.27)"),
        ("latest", "must be auto or a Kubernetes version such as 1.34"),
        ("", "must be auto or a Kubernetes version such as 1.34"),
    ],
)
def test_a_bad_version_is_exit_2_and_one_line(tmp_path, capsys, value, reason):
    f = tmp_path / "pod.yaml"
    f.write_text(yaml.safe_dump(APPARMOR))
    assert webhook_main(["check", "--kubernetes-version", value, str(f)]) == 2
    err = capsys.readouterr().err
    assert err == f"servinggate check: --kubernetes-version: invalid value {value!r}: {reason}\n"


@pytest.mark.parametrize(("version", "fields"), [("1.36", ["schedulingGroup"]), ("1.37", ["schedulingGroup", "evictionResponders"])])
def test_a_pod_field_whose_gate_is_off_is_dropped_as_the_server_drops_it(version, fields, tmp_path, capsys):
    """schedulingGroup (GenericWorkload) and evictionResponders (EvictionRequestAPI) are off by
    default: kube-apiservers 1.36.3 and 1.37.2 drop both (tests/oracle), and check says so."""
    obj = pod()
    obj["spec"]["schedulingGroup"] = {"podGroupName": "g"}
    if "evictionResponders" in fields:
        obj["spec"]["evictionResponders"] = [{"name": "example.com/drain", "priority": 1}]
    f = tmp_path / "pod.yaml"
    f.write_text(yaml.safe_dump(obj))
    assert webhook_main(["check", "--kubernetes-version", version, str(f)]) == 0
    out = capsys.readouterr().out
    for field in fields:
        assert f"spec.{field}: dropped: the feature gate " in out


def test_a_gate_the_cluster_turned_on_keeps_and_judges_its_field(tmp_path, capsys):
    obj = pod()
    obj["spec"]["schedulingGroup"] = {"podGroupName": "Not_A_Name"}
    f = tmp_path / "pod.yaml"
    f.write_text(yaml.safe_dump(obj))
    assert webhook_main(["check", "--kubernetes-version", "1.37", "--feature-gates", "GenericWorkload=true", str(f)]) == 1
    out = capsys.readouterr().out
    assert 'spec.schedulingGroup.podGroupName: Invalid value: "Not_A_Name": a lowercase RFC 1123 subdomain' in out
    obj["spec"]["schedulingGroup"] = {"podGroupName": "group-0"}
    f.write_text(yaml.safe_dump(obj))
    assert webhook_main(["check", "--kubernetes-version", "1.37", "--feature-gates", "GenericWorkload=true", str(f)]) == 0
    assert "schedulingGroup" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--feature-gates", "Nope=true"], "invalid value 'Nope=true': Nope is not a feature gate of any Kubernetes release from 1.28 to 1.37"),
        (["--feature-gates", "GenericWorkload=maybe"], "invalid value 'GenericWorkload=maybe': GenericWorkload: 'maybe' is not true or false"),
        (["--feature-gates", "GenericWorkload"], "invalid value 'GenericWorkload': 'GenericWorkload' is not Name=true or Name=false"),
        (["--kubernetes-version", "1.34", "--feature-gates", "GenericWorkload=true"], "GenericWorkload: not a feature gate of Kubernetes 1.34"),
        (["--feature-gates", "SidecarContainers=true"], "SidecarContainers: not a feature gate of Kubernetes 1.37"),  # auto: check judges as 1.37
    ],
)
def test_a_gate_setting_the_release_cannot_have_is_exit_2_and_one_line(args, reason, tmp_path, capsys):
    f = tmp_path / "pod.yaml"
    f.write_text(yaml.safe_dump(pod()))
    assert webhook_main(["check", *args, str(f)]) == 2
    err = capsys.readouterr().err
    assert err == f"servinggate check: --feature-gates: {reason}\n"
