"""matchLabelKeys of topology spread constraints before and after 1.34.

Up to 1.33 ValidateMatchLabelKeysInTopologySpread refuses a key the selector names anywhere. From
1.34 (MatchLabelKeysInPodTopologySpreadSelectorMerge, beta and on) validateTopologySpreadConstraints
of v1.34.0 uses validateMatchLabelKeysAndMismatchLabelKeys, which refuses a key the selector names
twice, after mutateTopologySpreadConstraints appended `key In (value)` for each key a new Pod carries.
"""

from __future__ import annotations

import copy
from typing import Any

from support.gated import gated_errors
from support.pods import pod_with

from webhook.kubeversion import KubeVersion
from webhook.podvalidation import apply_template_defaults, validate_pod_template_spec
from webhook.podvalidation.errors import FieldPath
from webhook.podvalidation.options import options_for

GATE = "MatchLabelKeysInPodTopologySpreadSelectorMerge"
AT = "spec.topologySpreadConstraints[0]"
BOTH = "exists in both matchLabelKeys and labelSelector"


def _spread(selector: dict[str, Any] | None, keys: list[str], labels: dict[str, str] | None = None) -> dict[str, Any]:
    constraint: dict[str, Any] = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "matchLabelKeys": keys}
    if selector is not None:
        constraint["labelSelector"] = selector
    pod = pod_with(topologySpreadConstraints=[constraint])
    pod["metadata"]["labels"] = labels or {}
    return pod


EXPRESSION = {"matchExpressions": [{"key": "app", "operator": "Exists"}]}
MATCH_LABELS = {"matchLabels": {"app": "web"}}


def test_the_gate_is_on_from_1_34() -> None:
    assert not options_for(KubeVersion(1, 33)).on(GATE)
    assert options_for(KubeVersion(1, 34)).on(GATE)


def test_a_key_the_selector_names_once_is_refused_before_1_34_and_allowed_after() -> None:
    pod = _spread(EXPRESSION, ["app"])  # the pod does not carry `app`: nothing is merged
    assert gated_errors(pod) == [f'{AT}.matchLabelKeys[0]: Invalid value: "app": {BOTH}']
    assert gated_errors(pod, GATE) == []


def test_a_key_the_pod_carries_and_the_selector_names_is_refused_once_merged() -> None:
    for selector in (EXPRESSION, MATCH_LABELS):
        assert gated_errors(_spread(selector, ["app"], {"app": "web"}), GATE) == [f'{AT}[0]: Invalid value: "app": {BOTH}']
    assert gated_errors(_spread(MATCH_LABELS, ["app"], {"tier": "web"}), GATE) == []


def test_a_key_named_twice_is_refused_at_its_last_index_once_the_pod_carries_it() -> None:
    twice = _spread({}, ["pod-template-hash", "pod-template-hash"], {"pod-template-hash": "abc"})
    assert gated_errors(twice, GATE) == [f'{AT}[1]: Invalid value: "pod-template-hash": {BOTH}']


def test_the_usual_use_passes_with_the_merge() -> None:
    pod = _spread(MATCH_LABELS, ["pod-template-hash"], {"app": "web", "pod-template-hash": "abc"})
    assert gated_errors(pod, GATE) == []
    assert gated_errors(pod) == []


def test_key_names_and_a_missing_selector_are_refused_either_way() -> None:
    for gates in ((), (GATE,)):
        assert gated_errors(_spread({}, ["/bad"]), *gates)[0].startswith(f'{AT}.matchLabelKeys[0]: Invalid value: "/bad": prefix part must be non-empty')
        assert gated_errors(_spread(None, ["app"]), *gates) == [f"{AT}.matchLabelKeys: Forbidden: must not be specified when labelSelector is not set"]


def test_a_template_at_1_34_is_judged_as_written() -> None:
    """A template is not mutated: a key its selector names once passes at 1.34 and not at 1.33."""
    pod = _spread(MATCH_LABELS, ["app"], {"app": "web"})
    template = {"metadata": copy.deepcopy(pod["metadata"]), "spec": pod["spec"]}
    template["metadata"].pop("name", None)
    at = FieldPath.of("template")
    found = {}
    for minor in (33, 34):
        opts = options_for(KubeVersion(1, minor))
        found[minor] = [str(e) for e in validate_pod_template_spec(apply_template_defaults(copy.deepcopy(template), opts), at, opts=opts)]
    at_133, at_134 = found[33], found[34]
    assert at_133 == [f'template.{AT}.matchLabelKeys[0]: Invalid value: "app": {BOTH}']
    assert at_134 == []
