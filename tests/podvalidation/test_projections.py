"""Projected volume sources `clusterTrustBundle` (ClusterTrustBundleProjection) and `podCertificate`
(PodCertificateRequest): both gates GA and on from 1.37, off before (the API server drops the
source), and what else changed in validateProjectionSources since 1.28 (versions.SINCE).

The rules are validateProjectionSources, ValidateSignerName and ValidateUserAnnotations of
kube-apiserver v1.37.2; cases follow its TestValidatePod ("ClusterTrustBundlePEM projected
volume ...", "PodCertificate projected volume ...") and TestIsKubernetesSignerName, and every
message below is the one a live kube-apiserver 1.37.2 gave for the same volume (tests/oracle).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from webhook.admission.fields import FieldPath
from webhook.kubeversion import KubeVersion
from webhook.podvalidation.defaults import prepare_spec
from webhook.podvalidation.options import options_for
from webhook.podvalidation.podspec import pod_spec_errors
from webhook.podvalidation.projections import is_kubernetes_signer_name
from webhook.podvalidation.versions import status_at

SPEC = FieldPath.of("spec")
AT = "spec.volumes[0].projected"
SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
KEY_TYPES = '"RSA3072", "RSA4096", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519"'
CERT = {"signerName": "example.com/foo", "keyType": "ED25519", "credentialBundlePath": "creds.pem"}
CTB = {"signerName": "example.com/foo", "path": "ctb.pem"}


def judge(sources: list[dict[str, Any]], minor: int) -> tuple[list[str], list[str]]:
    """A `minor` API server on a new pod with one projected volume of these sources: its errors
    and the fields it dropped first (paths under the spec)."""
    spec = {
        "containers": [{"name": "main", "image": "vllm:1", "volumeMounts": [{"name": "p", "mountPath": "/p"}]}],
        "volumes": [{"name": "p", "projected": {"sources": copy.deepcopy(sources)}}],
    }
    opts = options_for(KubeVersion(1, minor))
    dropped = prepare_spec(spec, opts)
    errs = [f"{e.field}: {e.body()}" for e in pod_spec_errors(spec, SPEC, is_pod=True, opts=opts)]
    return [e for e in errs if not e.startswith("spec.containers[0].volumeMounts[0].name: Not found")], [".".join(map(str, d.path)) for d in dropped]


def errors_at_1_37(*sources: dict[str, Any]) -> list[str]:
    errs, dropped = judge(list(sources), 37)
    assert dropped == []
    return errs


# ---- by minor -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind, source", [("clusterTrustBundle", CTB), ("podCertificate", CERT)])
@pytest.mark.parametrize("minor", [35, 36])
def test_dropped_while_the_gate_is_off(minor, kind, source):
    """dropDisabledClusterTrustBundleProjection / dropDisabledPodCertificateProjection: the entry
    is left empty, which validateProjectionSources takes as no source at all."""
    broken = {**source, "path": "/abs", "credentialBundlePath": "/abs"}
    assert judge([{kind: broken}], minor) == ([], [f"volumes.0.projected.sources.0.{kind}"])
    assert (
        status_at({"clusterTrustBundle": "ClusterTrustBundleProjection", "podCertificate": "PodCertificateRequest"}[kind], KubeVersion(1, minor)) == "dropped"
    )


@pytest.mark.parametrize("gate", ["ClusterTrustBundleProjection", "PodCertificateRequest"])
def test_judged_from_1_37(gate):
    assert status_at(gate, KubeVersion(1, 37)) == "judged"


@pytest.mark.parametrize("kind, source", [("clusterTrustBundle", CTB), ("podCertificate", CERT)])
def test_a_valid_source_is_admitted_at_1_37(kind, source):
    assert judge([{kind: source}], 37) == ([], [])


def test_user_annotations_are_unknown_before_1_35():
    """The field is in the schema from 1.35: at 1.34 decoding drops it (and the gate, off, drops
    the source anyway); at 1.37 it is judged."""
    errs, dropped = judge([{"podCertificate": {**CERT, "userAnnotations": {"bad key!": "x"}}}], 34)
    assert errs == [] and "volumes.0.projected.sources.0.podCertificate" in dropped
    assert errors_at_1_37({"podCertificate": {**CERT, "userAnnotations": {"bad key!": "x"}}}) == [
        f'{AT}.sources[0].podCertificate.userAnnotations: Invalid value: "bad key!": name part must consist of alphanumeric characters, '
        "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
        "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
    ]


@pytest.mark.parametrize(
    "minor, message",
    [
        (28, "may not specify more than 1 volume type"),
        (30, "may not specify more than 1 volume type"),
        (31, "may not specify more than 1 volume type per source"),  # v1.31.14 on
        (37, "may not specify more than 1 volume type per source"),
    ],
)
def test_two_kinds_in_one_source_by_minor(minor, message):
    """TestValidateVolumes "ProjectedVolumeSource more than one projection in a source"."""
    errs, _ = judge([{"configMap": {"name": "c"}, "secret": {"name": "s"}}], minor)
    assert errs == [f"{AT}.sources[0]: Forbidden: {message}"]


@pytest.mark.parametrize(
    "minor, errs",
    [
        (28, []),
        (29, []),
        (30, [f'{AT}.path: Invalid value: "/abs": must be a relative path']),
        (37, [f'{AT}.path: Invalid value: "/abs": must be a relative path']),
    ],
)
def test_a_token_path_must_be_local_from_1_30(minor, errs):
    """ValidateLocalNonReservedPath on a serviceAccountToken's path (v1.30.14 on; a create has no
    old pod, so AllowNonLocalProjectedTokenPath is false), reported at the volume's `path`."""
    assert judge([{"serviceAccountToken": {"path": "/abs"}}], minor)[0] == errs
    assert judge([{"serviceAccountToken": {"path": "..x"}}], minor)[0] == ([f"{AT}.path: Invalid value: \"..x\": must not start with '..'"] if errs else [])


# ---- clusterTrustBundle (1.37) ------------------------------------------------------------------


def test_cluster_trust_bundle_both_name_and_signer_name():
    """TestValidatePod "ClusterTrustBundlePEM projected volume using both byName and bySigner":
    the bad value is the internal struct as json.Marshal prints it."""
    source = {"name": "ctb", "signerName": "example.com/foo", "labelSelector": {"matchLabels": {"b": "2", "a": "1"}}, "path": "foo-path", "optional": True}
    assert errors_at_1_37({"clusterTrustBundle": source}) == [
        f'{AT}.sources[0].clusterTrustBundle: Invalid value: {{"Name":"ctb","SignerName":"example.com/foo","LabelSelector":{{"matchLabels":{{"a":"1","b":"2"}}}},'
        '"Optional":true,"Path":"foo-path","User":null}: only one of name and signerName may be used'
    ]


def test_cluster_trust_bundle_by_name():
    at = f"{AT}.sources[0].clusterTrustBundle"
    assert errors_at_1_37({"clusterTrustBundle": {"name": "", "path": "p"}}) == [
        f"{at}.name: Required value: must be a valid object name",
        f'{at}.name: Invalid value: "": not a valid clustertrustbundlename: {SUBDOMAIN}',
    ]
    assert errors_at_1_37({"clusterTrustBundle": {"name": "UPPER", "labelSelector": {}, "path": "p"}}) == [
        f'{at}.name: Invalid value: "UPPER": not a valid clustertrustbundlename: {SUBDOMAIN}',
        f"{at}.labelSelector: Invalid value: {{}}: labelSelector must be unset if name is specified",
    ]
    # a name with a ':' belongs to the signer before its last ':'
    assert errors_at_1_37({"clusterTrustBundle": {"name": "example.com:foo:ctb", "path": "p"}}) == []
    assert errors_at_1_37({"clusterTrustBundle": {"name": "a/b:c", "path": "p"}}) == [
        f'{at}.name: Invalid value: "a/b:c": not a valid clustertrustbundlename: ClusterTrustBundle for signerName a/b must be named with prefix a:b:'
    ]
    assert errors_at_1_37({"clusterTrustBundle": {"name": "example.com:foo:", "path": "p"}}) == [
        f'{at}.name: Invalid value: "example.com:foo:": not a valid clustertrustbundlename: {SUBDOMAIN}'
    ]
    assert errors_at_1_37({"clusterTrustBundle": {"name": ":x", "path": "p"}}) == [
        f'{at}.name: Invalid value: ":x": not a valid clustertrustbundlename: ClusterTrustBundle without signer name must not have ":" in its name'
    ]


def test_cluster_trust_bundle_by_signer_name():
    at = f"{AT}.sources[0].clusterTrustBundle"
    assert errors_at_1_37({"clusterTrustBundle": {"signerName": "", "path": "p"}}) == [
        f"{at}.signerName: Required value: must be a valid signer name",
        f"{at}.signerName: Required value",
    ]
    assert errors_at_1_37({"clusterTrustBundle": {"signerName": "bad", "path": "p"}}) == [
        f"{at}.signerName: Invalid value: \"bad\": must be a fully qualified domain and path of the form 'example.com/signer-name'"
    ]
    # with a signer name the selector is a label selector like any other
    assert errors_at_1_37(
        {"clusterTrustBundle": {"signerName": "example.com/s", "labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}, "path": "p"}}
    ) == [f"{at}.labelSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"]
    assert errors_at_1_37({"clusterTrustBundle": {"path": "p"}}) == [f"{at}: Required value: either name or signerName must be specified"]


def test_cluster_trust_bundle_path():
    at = f"{AT}.sources[0].clusterTrustBundle"
    assert errors_at_1_37({"clusterTrustBundle": {**CTB, "path": ""}}) == [f"{at}.path: Required value"]
    assert errors_at_1_37({"clusterTrustBundle": {**CTB, "path": "/abs"}}) == [f'{at}.path: Invalid value: "/abs": must be a relative path']
    assert errors_at_1_37({"clusterTrustBundle": {**CTB, "path": "a/../b"}}) == [f"{at}.path: Invalid value: \"a/../b\": must not contain '..'"]
    assert errors_at_1_37({"clusterTrustBundle": CTB}, {"configMap": {"name": "c", "items": [{"key": "k", "path": "ctb.pem"}]}}) == [
        f'{AT}: Invalid value: "c": conflicting duplicate paths'
    ]
    assert errors_at_1_37({"clusterTrustBundle": CTB}, {"podCertificate": {**CERT, "credentialBundlePath": "ctb.pem"}}) == [
        f'{AT}: Invalid value: "ctb.pem": conflicting duplicate paths'
    ]


# ---- podCertificate (1.37) ----------------------------------------------------------------------


def test_pod_certificate_key_type_and_paths():
    """TestValidatePod "PodCertificate projected volume with bad key type / no paths / conflicting paths"."""
    at = f"{AT}.sources[0].podCertificate"
    assert errors_at_1_37({"podCertificate": {**CERT, "keyType": "BAD"}}) == [f'{at}.keyType: Unsupported value: "BAD": supported values: {KEY_TYPES}']
    assert errors_at_1_37({"podCertificate": {"signerName": "example.com/foo", "keyType": "ED25519"}}) == [
        f"{at}: Required value: specify at least one of credentialBundlePath, keyPath, and certificateChainPath"
    ]
    assert errors_at_1_37({"podCertificate": {**CERT, "keyPath": "creds.pem", "certificateChainPath": "../c"}}) == [
        f'{AT}: Invalid value: "creds.pem": conflicting duplicate paths',
        f"{at}.certificateChainPath: Invalid value: \"../c\": must not contain '..'",
    ]
    # ".." is both a '..' element and a start with '..' (ValidateLocalNonReservedPath skips only "../")
    assert errors_at_1_37({"podCertificate": {**CERT, "credentialBundlePath": ".."}}) == [
        f"{at}.credentialBundlePath: Invalid value: \"..\": must not contain '..'",
        f"{at}.credentialBundlePath: Invalid value: \"..\": must not start with '..'",
    ]


@pytest.mark.parametrize(
    "signer, seconds, message",
    [
        ("example.com/foo", 3599, "must be >= 3600"),
        ("example.com/foo", 3600, None),
        ("example.com/foo", 7862400, None),
        ("example.com/foo", 7862401, "must be <= 7862400"),
        ("kubernetes.io/kube-apiserver-client-pod", 86400, None),
        ("kubernetes.io/kube-apiserver-client-pod", 86401, "must be <= 86400"),
        ("a.kubernetes.io/x", 86401, "must be <= 86400"),
    ],
)
def test_pod_certificate_max_expiration(signer, seconds, message):
    errs = errors_at_1_37({"podCertificate": {**CERT, "signerName": signer, "maxExpirationSeconds": seconds}})
    assert errs == (
        [f"{AT}.sources[0].podCertificate.maxExpirationSeconds: Invalid value: {seconds}: if provided, maxExpirationSeconds {message}"] if message else []
    )


@pytest.mark.parametrize(
    "signer, want",
    [
        ("kubernetes.io", True),
        ("kubernetes.io/a", True),
        ("kubernetes.io/a/b.c/d.e", True),
        ("foo.kubernetes.io", True),
        ("fookubernetes.io", False),
        ("foo.com/a", False),
    ],
)
def test_is_kubernetes_signer_name_TestIsKubernetesSignerName(signer, want):
    assert is_kubernetes_signer_name(signer) is want


@pytest.mark.parametrize(
    "signer, messages",
    [
        ("", ["Required value"]),
        ("example.com/a/b", ["Invalid value: \"example.com/a/b\": must be a fully qualified domain and path of the form 'example.com/signer-name'"]),
        ("example/x", ['Invalid value: "example": should be a domain with at least two segments separated by dots']),
        ("example.com/", [f'Invalid value: "": validating label "": {SUBDOMAIN}']),
        ("example.com/ns.name", []),
        (
            "-a.com/x",
            [
                'Invalid value: "-a.com": validating label "-a": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '
                "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            ],
        ),
        ("x" * 64 + ".com/s", [f'Invalid value: "{"x" * 64}.com": validating label "{"x" * 64}": must be no more than 63 characters']),
        ("example.com/" + "y" * 254, [f'Invalid value: "{"y" * 254}": validating label "{"y" * 254}": must be no more than 253 characters']),
        (("a" * 60 + ".") * 5 + "com/s", ["Too long: may not be more than 253 bytes"]),
    ],
)
def test_pod_certificate_signer_name_ValidateSignerName(signer, messages):
    assert errors_at_1_37({"podCertificate": {**CERT, "signerName": signer}}) == [f"{AT}.sources[0].podCertificate.signerName: {m}" for m in messages]


@pytest.mark.parametrize(
    "key, messages",
    [
        ("example.com/a", []),
        ("Example.COM/A", []),  # lower-cased first
        ("", ["Required value"]),
        ("a", ['Invalid value: "a": must be a domain-prefixed key (such as "acme.io/foo")']),
        ("example.com/", ['Invalid value: "example.com/": name part must be non-empty', "NAME_REGEX example.com/"]),
        ("example.com/" + "x" * 64, [f'Invalid value: "example.com/{"x" * 64}": name part must be no more than 63 bytes']),
        (
            "a/b/c",
            [
                "Invalid value: \"a/b/c\": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
                "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ],
        ),
    ],
)
def test_pod_certificate_user_annotations_ValidateUserAnnotations(key, messages):
    """Reported at the map's path (no key), the bad value the lower-cased key."""
    regex = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
    want = [f'Invalid value: "{m.split(" ", 1)[1]}": {regex}' if m.startswith("NAME_REGEX") else m for m in messages]
    assert errors_at_1_37({"podCertificate": {**CERT, "userAnnotations": {key: "v"}}}) == [f"{AT}.sources[0].podCertificate.userAnnotations: {m}" for m in want]


def test_pod_certificate_user_annotations_size():
    at = f"{AT}.sources[0].podCertificate.userAnnotations"
    assert errors_at_1_37({"podCertificate": {**CERT, "userAnnotations": {"example.com/big": "x" * (262144 - 15)}}}) == []
    assert errors_at_1_37({"podCertificate": {**CERT, "userAnnotations": {"example.com/big": "x" * (262144 - 14)}}}) == [
        f"{at}: Too long: may not be more than 262144 bytes"
    ]
