"""Label selectors (metav1.LabelSelector) matched against labels, for `check`, which tells a workload
whose selector does not match its own template (the API server's `selector does not match template
labels`). Lenient on purpose: the selector's own errors are reported by the structural checks, so
an unusable one simply matches nothing here. HyperNode members are resolved by webhook/hypernodes.py,
which parses selectors strictly as Volcano's LabelSelectorAsSelector call does."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..shapes import as_dict


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """metav1.LabelSelectorAsSelector(selector).Matches(labels); an unusable selector matches
    nothing here (its own errors come from elsewhere)."""
    for key, value in as_dict(selector.get("matchLabels")).items():
        if labels.get(key) != value:
            return False
    expressions = selector.get("matchExpressions")
    for raw in expressions if isinstance(expressions, list) else []:
        expr = as_dict(raw)
        name, op, values = expr.get("key"), expr.get("operator"), expr.get("values")
        if not isinstance(name, str):
            return False
        values = values if isinstance(values, list) else []
        has = name in labels
        if op == "In" and not (has and labels[name] in values):
            return False
        if op == "NotIn" and has and labels[name] in values:
            return False
        if (op == "Exists" and not has) or (op == "DoesNotExist" and has):
            return False
    return True
