"""KServe InferenceServices (serving.kserve.io/v1beta1): the autoscaling fields of each component,
judged in the deployment mode KServe will deploy the InferenceService in.

- `inferenceservices.autoscaling`: what KServe's webhook refuses, at its field (negative bounds,
  minReplicas above a positive maxReplicas, an autoscaler class or scale metric it does not
  support in that mode, a target out of its range), and what KServe admits but would never run:
  a scaleTarget of 0 or less (the HPA or Knative autoscaler KServe would write is refused by its
  API) and a deployment mode KServe does not know (its controller deploys nothing). Bounds KServe
  admits but does not honour as written are admitted with a warning saying what KServe does
  instead (Standard mode's HPA holds at least one replica, and a maxReplicas of 0 becomes
  minReplicas).

Mirrors kserve/kserve aaac4e29 (2026-08-21): `validateReplicas` (pkg/apis/serving/v1beta1/component.go),
`validateInferenceServiceAutoscaler` and `validateAutoScalingCompExtension`
(inference_service_validation.go), `createHPA` and `getHPAMetrics`
(pkg/controller/v1beta1/inferenceservice/reconcilers/hpa/hpa_reconciler.go), and how the mode
is chosen: the annotation, its deprecated words normalised (`ParseDeploymentMode`,
pkg/constants/constants.go), else the `deploy` entry of the `inferenceservice-config` ConfigMap
in KServe's namespace (`NewDeployConfig`, configmap.go; `GetDeploymentMode`,
inferenceservice/utils/utils.go). Where the mode cannot be read, only the checks of every mode
are made, and the warning says why.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..admission.decision import Verdict
from ..admission.fields import FieldError, FieldPath, forbidden, invalid, not_supported
from ..admission.review import Request
from ..shapes import as_dict, as_object
from .common import is_int, is_number
from .context import Context, LookupFailed
from .projections import KSERVE_CONFIGMAP
from .registry import REGISTRY, Target

SPEC = FieldPath.of("spec")
ANNOTATIONS = FieldPath.of("metadata", "annotations")
INFERENCE_SERVICES = Target(group="serving.kserve.io", resource="inferenceservices", versions=("v1beta1",))

KSERVE_COMPONENTS = ("predictor", "transformer", "explainer")
KSERVE_METRICS = ["cpu", "memory", "concurrency", "rps"]  # the CRD's enum of scaleMetric
HPA_METRICS = ("cpu", "memory")  # constants.AutoscalerAllowedHPAMetricsList
KPA_METRICS = ("concurrency", "rps")  # constants.AutoscalerAllowedKPAMetricsList
KSERVE_MODE_ANNOTATION = "serving.kserve.io/deploymentMode"
AUTOSCALER_CLASS_ANNOTATION = "serving.kserve.io/autoscalerClass"
AUTOSCALER_CLASSES = ["hpa", "external", "keda", "none"]  # constants.AutoscalerAllowedClassList
KNATIVE_CLASS_ANNOTATION = "autoscaling.knative.dev/class"
KNATIVE_HPA_CLASS = "hpa.autoscaling.knative.dev"
KSERVE_CONFIG_NAME = "inferenceservice-config"  # in the namespace of the setting kserve_namespace

STANDARD, KNATIVE, MODELMESH = "Standard", "Knative", "ModelMesh"
MODES = (STANDARD, KNATIVE, MODELMESH)
LEGACY_MODES = {"RawDeployment": STANDARD, "Serverless": KNATIVE}
DEFAULT_MIN_REPLICAS = 1  # constants.DefaultMinReplicas: what Standard mode's HPA holds at least


@dataclass(frozen=True, slots=True)
class Mode:
    """How KServe's webhook validates the InferenceService: `branch` "standard" for Standard
    mode, "knative" for every other mode and for an annotation KServe does not know (its
    webhook's default branch), "" when the mode cannot be told."""

    branch: str
    note: str = ""  # a warning about the mode itself


def read_default_mode(ctx: Context) -> tuple[str, str]:
    """KServe's default deployment mode from its ConfigMap, normalised, or ("", why not)."""
    namespace = ctx.settings.kserve_namespace
    where = f"ConfigMap {namespace}/{KSERVE_CONFIG_NAME}"
    try:
        config = ctx.lookups.get(KSERVE_CONFIGMAP.api_version, KSERVE_CONFIGMAP.kind, namespace, KSERVE_CONFIG_NAME)
    except LookupFailed as exc:
        return "", f"{where} could not be read ({str(exc)[:80]})"
    if config is None:
        return "", f"{where} does not exist"
    deploy = as_dict(config.get("data")).get("deploy")
    try:
        mode = as_dict(json.loads(deploy)).get("defaultDeploymentMode") if isinstance(deploy, str) else None
    except ValueError:
        mode = None
    mode = LEGACY_MODES.get(str(mode), mode)
    if mode not in MODES:
        return "", f"{where} names no mode KServe accepts"
    return str(mode), ""


def _mode(mode: str, note: str = "") -> Mode:
    return Mode("standard" if mode == STANDARD else "knative", note)


def deployment_mode(isvc: dict[str, Any], ctx: Context) -> Mode:
    """The annotation's mode (its deprecated words normalised), else the ConfigMap's default."""
    notes = as_dict(as_dict(isvc.get("metadata")).get("annotations"))
    word = notes.get(KSERVE_MODE_ANNOTATION)
    if isinstance(word, str):
        if word in LEGACY_MODES:
            mode = LEGACY_MODES[word]
            return _mode(mode, f"servinggate: {ANNOTATIONS.key(KSERVE_MODE_ANNOTATION)} {word} is deprecated: KServe reads it as {mode}")
        return _mode(word)  # a word KServe does not know takes its webhook's Knative branch
    default, why = read_default_mode(ctx)
    if not default:
        return Mode("", f"servinggate: deployment mode unknown (no annotation, and {why}): only the checks of every mode were made")
    return _mode(default)


@REGISTRY.validates_request("inferenceservices.autoscaling", INFERENCE_SERVICES)
def inference_service_errors(req: Request, ctx: Context) -> Verdict:
    """Each component's replica bounds, autoscaler class, scaleMetric and scaleTarget, in its mode."""
    isvc = as_dict(req.subject)
    spec = as_dict(isvc.get("spec"))
    notes = as_dict(as_dict(isvc.get("metadata")).get("annotations"))
    errs: list[FieldError] = []
    warnings: list[str] = []
    klass = notes.get(AUTOSCALER_CLASS_ANNOTATION)
    if klass is not None and klass not in AUTOSCALER_CLASSES:
        errs.append(not_supported(ANNOTATIONS.key(AUTOSCALER_CLASS_ANNOTATION), klass, AUTOSCALER_CLASSES))
    word = notes.get(KSERVE_MODE_ANNOTATION)
    if isinstance(word, str) and word not in MODES and word not in LEGACY_MODES:
        # KServe's webhook admits it (validated as Knative), and its controller then fails every
        # reconcile with "unsupported deployment mode for workload" and makes nothing (shown on
        # the e2e stack, tests/e2e/test_kserve.py): it would never run, whatever else it says.
        errs.append(not_supported(ANNOTATIONS.key(KSERVE_MODE_ANNOTATION), word, [*MODES, *LEGACY_MODES]))
    components = [(name, comp) for name in KSERVE_COMPONENTS if (comp := as_object(spec.get(name))) is not None]
    if not any(_scaling(comp) for _, comp in components):
        return Verdict(errors=errs)
    mode = deployment_mode(isvc, ctx)
    if mode.note:
        warnings.append(mode.note)
    scaler = Scaler(branch=mode.branch, klass=klass if isinstance(klass, str) else "", knative_hpa=notes.get(KNATIVE_CLASS_ANNOTATION) == KNATIVE_HPA_CLASS)
    for name, comp in components:
        scaler.judge(SPEC.child(name), comp, errs, warnings)
    return Verdict(errors=errs, warnings=warnings)


def _scaling(comp: dict[str, Any]) -> bool:
    return any(k in comp for k in ("minReplicas", "maxReplicas", "scaleMetric", "scaleTarget", "deploymentStrategy"))


@dataclass(frozen=True, slots=True)
class Scaler:
    """How one InferenceService's components are scaled: the webhook branch of its mode, its
    autoscaler class annotation ("" when absent: KServe's HPA), and Knative's HPA class."""

    branch: str
    klass: str
    knative_hpa: bool

    def judge(self, path: FieldPath, comp: dict[str, Any], errs: list[FieldError], warnings: list[str]) -> None:
        low, high = comp.get("minReplicas"), comp.get("maxReplicas")
        metric, target = comp.get("scaleMetric"), comp.get("scaleTarget")
        # validateReplicas, every mode. maxReplicas 0 means "no limit" to Knative, so only a
        # positive bound is compared.
        if low is not None and (not is_int(low) or low < 0):
            errs.append(invalid(path.child("minReplicas"), low, "must be greater than or equal to 0"))
        if high is not None and (not is_int(high) or high < 0):
            errs.append(invalid(path.child("maxReplicas"), high, "must be greater than or equal to 0"))
        elif is_int(high) and high > 0 and is_int(low) and high < low:
            errs.append(invalid(path.child("maxReplicas"), high, f"must be greater than or equal to minReplicas ({low})"))
        if metric is not None and metric not in KSERVE_METRICS:
            errs.append(not_supported(path.child("scaleMetric"), metric, KSERVE_METRICS))
            metric = None
        # A target of 0 or less: every autoscaler KServe writes refuses it (the HPA's
        # averageUtilization and Knative's target annotation must be positive), whichever mode.
        if target is not None and (not is_number(target) or target <= 0):
            errs.append(invalid(path.child("scaleTarget"), target, "must be greater than 0"))
            target = None
        if self.branch == "standard":
            if self.klass in ("", "hpa"):
                self._standard_hpa(path, low, high, metric, target, errs, warnings)
            elif self.klass == "keda" and metric is not None:
                errs.append(invalid(path.child("scaleMetric"), metric, "is not supported with KServe's KEDA autoscaler class: use autoScaling.metrics"))
        elif self.branch == "knative":
            if self.knative_hpa:
                _hpa_metric(path, metric, target, errs)
            else:  # validateScalingKPACompExtension
                if metric in HPA_METRICS:
                    errs.append(not_supported(path.child("scaleMetric"), metric, list(KPA_METRICS)))
                if "deploymentStrategy" in comp:
                    errs.append(forbidden(path.child("deploymentStrategy"), "is only supported in KServe's Standard (RawDeployment) mode"))

    def _standard_hpa(self, path: FieldPath, low: Any, high: Any, metric: Any, target: Any, errs: list[FieldError], warnings: list[str]) -> None:
        """Standard mode with KServe's HPA. Its webhook checks the metric and target only when the
        class annotation says `hpa`; without one the HPA is made all the same from what it can
        use (getHPAMetrics), and the bounds as createHPA sets them."""
        if self.klass == "hpa":
            _hpa_metric(path, metric, target, errs)
        elif metric in KPA_METRICS:
            warnings.append(
                f"servinggate: {path}.scaleMetric {metric} is a Knative metric: KServe's HPA in Standard mode gets no metric for it and scales on CPU at 80% (the HPA's default)"
            )
        elif is_number(target) and target > 100:
            warnings.append(f"servinggate: {path}.scaleTarget {target} is above 100% {metric or 'cpu'} utilisation; the autoscaler may never scale up")
        floor = low if is_int(low) and low >= DEFAULT_MIN_REPLICAS else DEFAULT_MIN_REPLICAS
        if is_int(low) and 0 <= low < DEFAULT_MIN_REPLICAS:
            warnings.append(
                f"servinggate: {path}.minReplicas {low}: KServe's HPA in Standard mode keeps at least {DEFAULT_MIN_REPLICAS} replica (no scale to zero), minReplicas {DEFAULT_MIN_REPLICAS}"
            )
        if (is_int(high) and high == 0) or (high is None and (metric is not None or target is not None)):
            warnings.append(
                f"servinggate: {path}.maxReplicas is {'0' if high == 0 else 'not set'}: in Standard mode KServe's HPA gets maxReplicas = minReplicas ({floor}), so the component does not scale"
            )


def _hpa_metric(path: FieldPath, metric: Any, target: Any, errs: list[FieldError]) -> None:
    """validateScalingHPACompExtension: cpu or memory, and a target of at most 100 (a utilisation
    percentage: KServe's HPA reads a memory target as one too)."""
    if metric in KPA_METRICS:
        errs.append(not_supported(path.child("scaleMetric"), metric, list(HPA_METRICS)))
    if is_number(target) and target > 100:
        errs.append(invalid(path.child("scaleTarget"), target, "must be at most 100: KServe's HPA target is a utilisation percentage"))
