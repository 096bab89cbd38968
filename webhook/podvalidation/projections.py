"""The projected volume sources 1.29 to 1.34 added, judged from 1.37 where their gates turn on:
`clusterTrustBundle` (ClusterTrustBundleProjection) and `podCertificate` (PodCertificateRequest).

Ports the two arms of validateProjectionSources of kube-apiserver v1.37.2
(`pkg/apis/core/validation/validation.go`), with ValidateSignerName, ValidateClusterTrustBundleName
and IsKubernetesSignerName of its `names.go`, and ValidateUserAnnotations (apimachinery v0.37.2
IsDomainPrefixedKey, ValidateAnnotationsSize). With a gate off the API server has dropped the
source (drops.py), so volumes.py never hands it here. Its paths join the volume's other sources'
in `seen` (upstream's allPaths).
"""

from __future__ import annotations

import json
from typing import Any

from .. import names
from ..admission.gofmt import go_quote
from .errors import Errors, FieldPath, GoSyntax, invalid, not_supported, required, too_long_bytes
from .meta import ANNOTATIONS_MAX_BYTES, local_non_reserved_path
from .scheduling import validate_label_selector
from .values import opt_flag, opt_int, opt_obj, opt_text, string_map, text


def _claimed(target: str, seen: set[str], path: FieldPath, errs: Errors) -> None:
    """validateProjectionSources' allPaths: a path a second source of the volume writes too."""
    if target in seen:
        errs.append(invalid(path, target, "conflicting duplicate paths"))
    seen.add(target)


def _go_json(value: Any) -> str:
    """encoding/json's compact text (keys as given: callers order them as Go's struct would)."""
    out = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return out.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _selector_json(selector: dict[str, Any] | None) -> Any:
    """A metav1.LabelSelector as json.Marshal writes it: matchLabels (keys sorted), then
    matchExpressions (key, operator, values; no values when there are none); None is null."""
    if selector is None:
        return None
    out: dict[str, Any] = {}
    labels = selector.get("matchLabels")
    if labels:
        out["matchLabels"] = dict(sorted(labels.items())) if isinstance(labels, dict) else labels
    exprs = selector.get("matchExpressions")
    if exprs and isinstance(exprs, list):
        out["matchExpressions"] = [_requirement_json(e) for e in exprs]
    elif exprs:
        out["matchExpressions"] = exprs
    return out


def _requirement_json(expr: Any) -> Any:
    if not isinstance(expr, dict):
        return expr
    out = {"key": expr.get("key", ""), "operator": expr.get("operator", "")}
    if expr.get("values"):
        out["values"] = expr["values"]
    return out


def cluster_trust_bundle(part: dict[str, Any], at: FieldPath, path: FieldPath, seen: set[str], errs: Errors) -> None:
    """validateProjectionSources, `sources[i].clusterTrustBundle` (kube-apiserver v1.37.2)."""
    name = opt_text(part.get("name"), at.child("name"), errs)
    signer = opt_text(part.get("signerName"), at.child("signerName"), errs)
    selector = opt_obj(part.get("labelSelector"), at.child("labelSelector"), errs)
    optional = opt_flag(part.get("optional"), at.child("optional"), errs)
    target = text(part.get("path"), at.child("path"), errs)
    if name is not None and signer is not None:
        # the internal core.ClusterTrustBundleProjection, as json.Marshal prints it (no json tags)
        struct = {"Name": name, "SignerName": signer, "LabelSelector": _selector_json(selector), "Optional": optional, "Path": target, "User": part.get("user")}
        errs.append(invalid(at, GoSyntax(_go_json(struct)), "only one of name and signerName may be used"))
    elif name is not None:
        if not name:
            errs.append(required(at.child("name"), "must be a valid object name"))
        errs += [invalid(at.child("name"), name, f"not a valid clustertrustbundlename: {m}") for m in names.cluster_trust_bundle_name(name)]
        if selector is not None:
            errs.append(invalid(at.child("labelSelector"), GoSyntax(_go_json(_selector_json(selector))), "labelSelector must be unset if name is specified"))
    elif signer is not None:
        if not signer:
            errs.append(required(at.child("signerName"), "must be a valid signer name"))
        errs += signer_name_errors(signer, at.child("signerName"))
        validate_label_selector(selector, at.child("labelSelector"), errs)
    else:
        errs.append(required(at, "either name or signerName must be specified"))
    if not target:
        errs.append(required(at.child("path")))
    errs += local_non_reserved_path(target, at.child("path"))
    _claimed(target, seen, path, errs)


KEY_TYPES = ["RSA3072", "RSA4096", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519"]  # upstream's order
MIN_EXPIRATION_SECONDS = 3600
MAX_EXPIRATION_SECONDS = 91 * 24 * 60 * 60  # certificates.MaxMaxExpirationSeconds
KUBERNETES_MAX_EXPIRATION_SECONDS = 24 * 60 * 60  # certificates.KubernetesMaxMaxExpirationSeconds


def pod_certificate(part: dict[str, Any], at: FieldPath, path: FieldPath, seen: set[str], errs: Errors) -> None:
    """validateProjectionSources, `sources[i].podCertificate` (kube-apiserver v1.37.2). `user`
    (AtomicWriteVolumeUserFields, off) has been dropped, so validateUserField has nothing to see."""
    signer = text(part.get("signerName"), at.child("signerName"), errs)
    errs += signer_name_errors(signer, at.child("signerName"))
    if part.get("userAnnotations") is not None:
        annotations = string_map(part.get("userAnnotations"), at.child("userAnnotations"), errs)
        errs += user_annotation_errors(annotations, at.child("userAnnotations"))
    key_type = text(part.get("keyType"), at.child("keyType"), errs)
    if key_type not in KEY_TYPES:
        errs.append(not_supported(at.child("keyType"), key_type, KEY_TYPES))
    seconds = opt_int(part.get("maxExpirationSeconds"), at.child("maxExpirationSeconds"), errs)
    if seconds is not None:
        if seconds < MIN_EXPIRATION_SECONDS:
            errs.append(invalid(at.child("maxExpirationSeconds"), seconds, f"if provided, maxExpirationSeconds must be >= {MIN_EXPIRATION_SECONDS}"))
        most = KUBERNETES_MAX_EXPIRATION_SECONDS if is_kubernetes_signer_name(signer) else MAX_EXPIRATION_SECONDS
        if seconds > most:
            errs.append(invalid(at.child("maxExpirationSeconds"), seconds, f"if provided, maxExpirationSeconds must be <= {most}"))
    paths = 0
    for key in ("credentialBundlePath", "keyPath", "certificateChainPath"):
        target = text(part.get(key), at.child(key), errs)
        if target:
            paths += 1
            errs += local_non_reserved_path(target, at.child(key))
            _claimed(target, seen, path, errs)
    if not paths:
        errs.append(required(at, "specify at least one of credentialBundlePath, keyPath, and certificateChainPath"))


def is_kubernetes_signer_name(signer: str) -> bool:
    """IsKubernetesSignerName (names.go, v1.37.2): a signer the Kubernetes project reserves."""
    host = signer.split("/", 1)[0]
    return host == "kubernetes.io" or host.endswith(".kubernetes.io")


_DNS1123_SUBDOMAIN_MAX = 253
_DNS1123_LABEL_MAX = 63


def signer_name_errors(signer: str, path: FieldPath) -> Errors:
    """ValidateSignerName of kube-apiserver v1.37.2 (pkg/apis/core/validation/names.go): a
    `<domain>/<path>` of at most 571 bytes, the domain DNS labels (at least two), the path DNS
    subdomains separated by '.'; only the first bad label of each part is reported."""
    if not signer:
        return [required(path)]
    segments = signer.split("/")
    if len(segments) != 2:
        return [invalid(path, signer, "must be a fully qualified domain and path of the form 'example.com/signer-name'")]
    domain, rest = segments
    errs: Errors = []
    if len(domain.encode()) > _DNS1123_SUBDOMAIN_MAX:
        errs.append(too_long_bytes(path, _DNS1123_SUBDOMAIN_MAX))
    labels = domain.split(".")
    for label in labels:
        if problems := names.is_dns1123_label(label):
            errs += [invalid(path, domain, f"validating label {go_quote(label)}: {m}") for m in problems]
            break
    if len(labels) < 2:
        errs.append(invalid(path, domain, "should be a domain with at least two segments separated by dots"))
    for label in rest.split("."):
        if problems := names.is_dns1123_subdomain(label):
            errs += [invalid(path, rest, f"validating label {go_quote(label)}: {m}") for m in problems]
            break
    most = _DNS1123_SUBDOMAIN_MAX + (_DNS1123_SUBDOMAIN_MAX + _DNS1123_LABEL_MAX + 1) + 1
    if len(signer.encode()) > most:
        errs.append(too_long_bytes(path, most))
    return errs


def user_annotation_errors(annotations: dict[str, str], path: FieldPath) -> Errors:
    """ValidateUserAnnotations (validation.go, v1.37.2): each key, lower-cased, through
    IsDomainPrefixedKey (apimachinery v0.37.2), reported at the map's own path; then the size cap
    of ValidateAnnotationsSize (keys and values together, ANNOTATIONS_MAX_BYTES)."""
    errs: Errors = []
    for key in annotations:
        key = key.lower()
        if not key:
            errs.append(required(path))
            continue
        if problems := names.is_label_key(key):
            errs += [invalid(path, key, m) for m in problems]
            continue
        if len(key.split("/")) != 2:
            errs.append(invalid(path, key, 'must be a domain-prefixed key (such as "acme.io/foo")'))
    if sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items()) > ANNOTATIONS_MAX_BYTES:
        errs.append(too_long_bytes(path, ANNOTATIONS_MAX_BYTES))
    return errs
