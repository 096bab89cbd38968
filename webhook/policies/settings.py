"""What the rules read from the command line: the scheduler pods are defaulted to, the namespaces
left alone, how the cluster's Volcano treats queues with children, where KServe keeps its
configuration, and each rule's enforcement.
`serve` and `check` both compose it, so `check` gives the webhook's answer; it lives beside the
registry because the rule names it checks are the registry's (the `setting()` machinery it is
declared with is webhook/config.py's)."""

from __future__ import annotations

from dataclasses import dataclass

from ..config import ConfigError, csv_list, csv_set, non_empty, parse_bool, setting
from .registry import REGISTRY

VALIDATING_ACTIONS = ("deny", "warn", "audit", "off")
MUTATING_ACTIONS = ("on", "off")


def rule_action_pairs(raw: str) -> tuple[tuple[str, str], ...]:
    """`a.rule=warn,b.rule=off` -> (("a.rule", "warn"), ("b.rule", "off")); names are checked
    against the registry when the settings are loaded."""
    pairs: dict[str, str] = {}
    for item in csv_list(raw):
        name, sep, action = item.partition("=")
        if not sep or not name.strip() or not action.strip():
            raise ValueError(f"{item!r} is not RULE=ACTION")
        pairs[name.strip()] = action.strip().lower()
    return tuple(sorted(pairs.items()))


@dataclass(frozen=True)
class PolicySettings:
    """What the rules read; `serve`, `check` and `audit` share it so all three give the webhook's answer."""

    scheduler_name: str = setting("volcano", non_empty, "scheduler that pods in scope are defaulted to")
    skip_namespaces: frozenset[str] = setting(
        frozenset({"kube-system", "kube-node-lease"}), csv_set, "namespaces whose pods are never mutated (comma-separated)"
    )
    capacity_hierarchy: bool = setting(
        False,
        parse_bool,
        "the cluster's Volcano scheduler runs the `capacity` plugin with `enableHierarchy`: a ModelServing queue with child queues is refused, not warned of",
    )
    kserve_namespace: str = setting(
        "kserve",
        non_empty,
        "namespace of KServe's controller, whose ConfigMap inferenceservice-config gives the deployment mode of an InferenceService without the annotation",
    )
    rule_actions: tuple[tuple[str, str], ...] = setting(
        (),
        rule_action_pairs,
        "per-rule enforcement, comma-separated RULE=ACTION: validating rules deny (the default of most), warn, audit or off; mutating rules on (default) or off; docs/policies.md gives each rule's default",
        metavar="RULE=ACTION,...",
    )

    def check(self) -> None:
        """Every rule named exists and gets an action of its kind (the package's __init__ has
        registered every rule by the time any of its modules is imported)."""
        kinds = {r.name: r.action for r in REGISTRY.rules()}
        for name, action in self.rule_actions:
            if name not in kinds:
                raise ConfigError(f"--rule-actions: unknown rule {name!r} (the rules are listed in docs/policies.md)")
            allowed = VALIDATING_ACTIONS if kinds[name] == "validate" else MUTATING_ACTIONS
            if action not in allowed:
                raise ConfigError(f"--rule-actions: {name} is a {kinds[name]} rule: its action is one of {', '.join(allowed)}, not {action!r}")

    def actions(self) -> dict[str, str]:
        """RULE -> action for the rules given, and for the rules whose default is not deny / on
        (those that only warn by default); every other rule keeps deny / on."""
        defaults = {r.name: r.default_action for r in REGISTRY.rules() if r.default_action}
        return defaults | dict(self.rule_actions)
