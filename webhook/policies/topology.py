"""What Volcano does with a ModelServing's gang: its network topology, its PodGroup and its queue.

Kthena copies `spec.template.networkTopology.groupPolicy` into the PodGroup it makes for each
ServingGroup and `rolePolicy` into every `subGroupPolicy` entry, as they are, and takes the queue
from the ModelServing's `scheduling.volcano.sh/queue-name` annotation. Volcano's PodGroup webhook
(volcano `pkg/webhooks/admission/podgroups/validate`, validatePodGroup: checkQueueState and
validateNetworkTopology, master of 2025) then refuses what these rules catch at apply time, when
nothing would otherwise say why the ServingGroup never gets pods:

- `modelservings.network-topology` (deny): a policy with both `highestTierAllowed` and
  `highestTierName`, in Volcano's words;
- `modelservings.queue` (deny): only for a ModelServing whose scheduler is `volcano` (Kthena reads
  the annotation for no other); the queue named does not exist or is not `Open`; a queue that is
  not a leaf (`root` whenever another queue exists, since a queue without `spec.parent` is a child
  of `root`, or one some queue names as its parent) is refused when the setting
  `capacity-hierarchy` says the cluster's Volcano runs the `capacity` plugin with hierarchy (one
  such PodGroup stalls every allocation there: volcano `pkg/scheduler/plugins/capacity/capacity.go`,
  buildHierarchicalQueueAttrs), and otherwise warned of, since the PodGroup webhook does not require
  a leaf (Volcano's Job webhook does) and the default `proportion` plugin has no hierarchy; judged
  on create and when the annotation changes or the ModelServing turns to `volcano`, never on an
  unrelated update of a ModelServing already in a queue that closed since;
- `modelservings.topology-facts` (warn): a tier or tier name no HyperNode has (the gang then
  waits for topology that does not exist), and role gang fields (`rolePolicy`,
  `gangPolicy.minRoleReplicas`) on a cluster whose PodGroup CRD has no `subGroupPolicy`: Kthena
  then drops the role gangs without a word (kthena#587). An update that leaves `spec.template`
  as it was is not judged again.

Facts come from the cluster (clusterfacts.py); a kind not installed skips its check, and facts
not listed yet allow with a "not checked" warning.
"""

from __future__ import annotations

import re
from typing import Any

from ..admission.decision import Verdict
from ..admission.fields import FieldError, FieldPath, invalid
from ..admission.review import Request
from ..kthena import KTHENA_GANG_SCHEDULER
from ..shapes import as_dict
from ..shapes.volcano import ROLE_POLICY, TopologyPolicy
from .clusterfacts import ClusterFacts, ask, facts_of, not_checked
from .common import is_int
from .context import Context, LookupFailed
from .modelservings import MODELSERVINGS, Shape, shape
from .registry import REGISTRY

QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
TOPOLOGY = FieldPath.of("spec", "template", "networkTopology")
BOTH_TIERS = "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology simultaneously."
# a plain cluster Queue name; anything else (a namespaced queue reference) is left to Volcano
_QUEUE_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def _policies(s: Shape) -> list[tuple[FieldPath, TopologyPolicy]]:
    return [(TOPOLOGY.child(name), policy) for name, policy in s.topology.items()]


@REGISTRY.validates("modelservings.network-topology", MODELSERVINGS, view=shape, family="modelservings")
def both_tier_fields(s: Shape) -> list[FieldError]:
    """A network topology policy sets at most one of highestTierAllowed and highestTierName (Volcano refuses the PodGroup otherwise)."""
    errs = []
    for path, policy in _policies(s):
        if policy.tier_allowed is not None and policy.tier_name:
            errs.append(invalid(path.child("highestTierName"), policy.tier_name, BOTH_TIERS))
    return errs


def _tier_findings(s: Shape, facts: ClusterFacts) -> tuple[list[FieldError], list[str]]:
    policies = _policies(s)
    if not policies:
        return [], []
    try:
        tiers = facts.hypernode_tiers()
    except LookupFailed as exc:
        return [], not_checked(facts, "network topology tiers", exc)
    if tiers is None:  # no HyperNode CRD: Volcano's network topology is not in use here
        return [], []
    by_tier, names, _ = tiers
    errs = []
    for path, policy in policies:
        allowed, name = policy.tier_allowed, policy.tier_name
        if is_int(allowed) and allowed not in by_tier:
            known = ", ".join(str(t) for t in sorted(by_tier)) or "none"
            errs.append(invalid(path.child("highestTierAllowed"), allowed, f"no HyperNode has tier {allowed} (tiers: {known}): the gang could never be placed"))
        if name and name not in names:
            known = ", ".join(sorted(names)) or "none"
            errs.append(invalid(path.child("highestTierName"), name, f"no HyperNode has tierName {name} (tier names: {known}): the gang could never be placed"))
    return errs, []


def _role_gang_findings(s: Shape, facts: ClusterFacts) -> tuple[list[FieldError], list[str]]:
    role_policy = s.topology.get(ROLE_POLICY)
    if not s.mins and role_policy is None:
        return [], []
    try:
        has = facts.subgroup_policy()
    except LookupFailed as exc:
        return [], not_checked(facts, "role gangs", exc)
    if has is None or has:  # no PodGroup CRD (no Volcano to drop them), or one that keeps them
        return [], []
    detail = "the installed PodGroup CRD has no subGroupPolicy: Kthena drops the role gangs silently (kthena#587)"
    errs = []
    if s.mins:
        errs.append(invalid(FieldPath.of("spec", "template", "gangPolicy", "minRoleReplicas"), s.mins, detail))
    if role_policy is not None:
        errs.append(invalid(TOPOLOGY.child(ROLE_POLICY), role_policy.policy, detail))
    return errs, []


def unchanged_template(req: Request) -> bool:
    """An update that leaves `spec.template` as it was: the facts rules that judge the template
    let it pass, so a cluster that changed since never blocks an unrelated update."""
    if req.operation != "UPDATE" or req.old_object is None or req.object is None:
        return False
    return bool(as_dict(req.object.get("spec")).get("template") == as_dict(req.old_object.get("spec")).get("template"))


@REGISTRY.validates_request("modelservings.topology-facts", MODELSERVINGS, action="warn", family="modelservings")
def check_topology_facts(req: Request, ctx: Context) -> Verdict:
    """Topology tiers some HyperNode has, and role gangs the installed PodGroup CRD can carry."""
    obj = req.object
    if obj is None or unchanged_template(req):
        return Verdict()
    s = shape(obj)
    facts = facts_of(ctx)
    verdict = Verdict()
    for errs, warnings in (_tier_findings(s, facts), _role_gang_findings(s, facts)):
        verdict.errors += errs
        verdict.warnings += warnings
    return verdict


def _queue(obj: dict[str, Any] | None) -> Any:
    return as_dict(as_dict(as_dict(obj).get("metadata")).get("annotations")).get(QUEUE_ANNOTATION)


def uses_volcano(obj: dict[str, Any] | None) -> bool:
    """Kthena reads the queue, and makes a PodGroup at all, only for a ModelServing whose
    `spec.schedulerName` is literally `volcano` (kthena `podgroupmanager/manager.go`,
    shouldCreatePodGroup); an absent one is the CRD's default, `volcano`."""
    return as_dict(as_dict(obj).get("spec")).get("schedulerName", KTHENA_GANG_SCHEDULER) == KTHENA_GANG_SCHEDULER


def stalls(name: str, children: tuple[str, ...]) -> str:
    """Why a queue with children is a problem: what Volcano's capacity plugin does with it."""
    shown = ", ".join(children[:5]) + (f" and {len(children) - 5} more" if len(children) > 5 else "")
    return (
        f"queue `{name}` is not a leaf queue (child queues: {shown}): under Volcano's `capacity` plugin with hierarchy, "
        "one PodGroup in it fails the session's queue hierarchy and stalls every allocation in the cluster"
    )


@REGISTRY.validates_request("modelservings.queue", MODELSERVINGS, family="modelservings")
def check_queue(req: Request, ctx: Context) -> Verdict:
    """A `volcano` ModelServing's queue annotation names a Queue that exists and is Open; a non-leaf one is refused under capacity hierarchy, else warned of."""
    name = _queue(req.object)
    if not isinstance(name, str) or not _QUEUE_NAME.fullmatch(name) or not uses_volcano(req.object):
        return Verdict()
    if req.operation == "UPDATE" and _queue(req.old_object) == name and uses_volcano(req.old_object):
        return Verdict()
    queues, warnings = ask(ctx, "queue", ClusterFacts.queues)
    if queues is None:  # no Queue CRD (no Volcano queues to submit to), or not readable yet
        return Verdict(warnings=warnings)
    path = FieldPath.of("metadata", "annotations").key(QUEUE_ANNOTATION)
    found = queues.get(name)
    if found is None:
        return Verdict(errors=[invalid(path, name, f'unable to find queue: queues.scheduling.volcano.sh "{name}" not found')])
    if found.state != "Open":
        return Verdict(errors=[invalid(path, name, f"can only submit workload to queue with state `Open`, queue `{name}` status is `{found.state}`")])
    if found.children:
        # Volcano's PodGroup webhook, which judges Kthena's PodGroups, does not require a leaf
        # (its Job webhook does), and the default `proportion` plugin has no hierarchy: refused
        # only where the cluster is said to run `capacity` with hierarchy, whose
        # buildHierarchicalQueueAttrs then fails every allocate, enqueue and reclaim.
        not_leaf = invalid(path, name, stalls(name, found.children))
        if ctx.settings.capacity_hierarchy:
            return Verdict(errors=[not_leaf])
        return Verdict(warnings=[str(not_leaf)])
    return Verdict()
