"""Tolerations, node selector, affinity and topology spread."""

from support.pods import errors_of, pod_with


def test_tolerations():
    assert errors_of(pod_with(tolerations=[{"key": "a", "operator": "In"}])) == [
        'spec.tolerations[0].operator: Unsupported value: "In": supported values: "Equal", "Exists"'
    ]
    assert errors_of(pod_with(tolerations=[{"operator": "Equal", "value": "x"}])) == [
        'spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when `key` is empty, which means "match all values and all keys"'
    ]
    assert errors_of(pod_with(tolerations=[{"key": "a", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 3}])) == [
        "spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set"
    ]
    errs = errors_of(pod_with(tolerations=[{"key": "a", "operator": "Exists", "value": "x"}]))
    assert errs == [
        'spec.tolerations[0].operator: Invalid value: core.Toleration{Key:"a", Operator:"Exists", Value:"x", '
        "Effect:\"\", TolerationSeconds:(*int64)(nil)}: value must be empty when `operator` is 'Exists'"
    ]


def test_node_affinity():
    term = {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "a", "operator": "In"}], "matchFields": [{"key": "metadata.labels", "operator": "In", "values": ["x"]}]}
        ]
    }
    errs = errors_of(pod_with(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": term}}))
    base = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
    assert errs == [
        f"{base}.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
        f'{base}.matchFields[0].key: Invalid value: "metadata.labels": not a valid field selector key',
    ]
    empty = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}
    assert errors_of(pod_with(affinity=empty)) == [
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value: must have at least one node selector term"
    ]


def test_pod_anti_affinity_weight_and_topology_key():
    term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": ""}
    errs = errors_of(pod_with(affinity={"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 101, "podAffinityTerm": term}]}}))
    base = "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
    assert errs[0] == f"{base}.weight: Invalid value: 101: must be in the range 1-100"
    assert errs[1] == f"{base}.podAffinityTerm.topologyKey: Required value: can not be empty"


def test_topology_spread():
    c = {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "Never", "labelSelector": {"matchLabels": {"app": "w"}}}
    errs = errors_of(pod_with(topologySpreadConstraints=[c, dict(c, maxSkew=1)]))
    assert errs == [
        "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
        'spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: "Never": supported values: "DoNotSchedule", "ScheduleAnyway"',
        'spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}: Duplicate value: "{zone, Never}"',
        'spec.topologySpreadConstraints[1].whenUnsatisfiable: Unsupported value: "Never": supported values: "DoNotSchedule", "ScheduleAnyway"',
    ]


def test_node_selector_values_are_label_values():
    errs = errors_of(pod_with(nodeSelector={"a": "bad value!"}))
    assert len(errs) == 1 and errs[0].startswith('spec.nodeSelector: Invalid value: "bad value!": a valid label')
