"""Could a ModelServing's pods ever be placed? Judged against node classes, not free capacity.

- `modelservings.fits` (warn by default; an operator may set deny): for each role's entry pod
  and, with workers, its worker pod (the controller keeps a template's resources, nodeSelector,
  affinity and tolerations as they are, kthena_pods.py, so the templates are read directly):
  1. every resource it requests is advertised by some node; when not, the names nodes do
     advertise that are close (the same vendor prefix, another case or spelling) are named:
     `huawei.com/Ascend910` asked for where nodes have `huawei.com/ascend-1980`;
  2. some node class matches its nodeSelector and required node affinity, tolerates its
     NoSchedule and NoExecute taints, and has the allocatable for the whole pod, counted as the
     kube-scheduler counts it (webhook/podrequests.py, its PodRequests: containers and sidecars
     summed, each init container beside the sidecars started before it, the larger wins; the
     pod-level `resources` where PodLevelResources is on at the cluster's version; `overhead`;
     a request defaults to its limit, as the API server defaults it);
  3. the gang of one ServingGroup (each role's `gangPolicy.minRoleReplicas`, else its replicas,
     times an entry pod and `workerReplicas` worker pods) needs no more of any extended resource
     (an accelerator) than the cluster's nodes have in all; with a hard network topology that
     limits the tier (groupPolicy), no more than one HyperNode of an allowed tier has.

An update that leaves `spec.template` as it was is not judged again (what it says of an existing
ModelServing, `audit` reports). "Could never fit": free capacity (what other pods use) is not considered, so a pod this allows
may still wait for room; what it flags cannot run on these nodes at all. Taints under
`node.kubernetes.io/` (not-ready, unschedulable, ...) describe a passing condition of a node and
are not held against it. No nodes known (none listed, or none at all) says nothing.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Sequence
from decimal import Decimal
from typing import Any

from .. import podrequests
from ..admission.decision import Verdict
from ..admission.fields import FieldError, FieldPath, invalid
from ..admission.review import Request
from ..podvalidation.options import options_for
from ..shapes import as_dict, as_list, objects, only_objects, volcano
from .clusterfacts import ClusterFacts, NodeClass, ask, facts_of
from .common import is_int
from .context import Context, LookupFailed
from .kthena_pods import template_path, templates_in_use
from .modelservings import MODELSERVINGS
from .projections import HOSTNAME_LABEL
from .registry import REGISTRY
from .topology import unchanged_template

RULE = "modelservings.fits"
_ALWAYS = frozenset({"cpu", "memory", "pods", "ephemeral-storage"})
_PASSING_TAINTS = "node.kubernetes.io/"
_HARD_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


# ---- what a pod asks for ---------------------------------------------------------------------------


def pod_demand(spec: dict[str, Any], *, pod_level: bool, sidecars: bool = True) -> dict[str, Decimal]:
    """What one pod needs of each resource, as the scheduler counts it (podrequests.pod_requests,
    the pod the controller builds from the template defaulted as the API server stores it), and
    the one pod itself. Quantities that do not parse are left to the Pod rules. Without
    `sidecars` (SidecarContainers off: 1.28's default) the API server drops an init container's
    `restartPolicy` (dropDisabledFields, pkg/api/pod/util.go at v1.28.7), so the scheduler sees an
    ordinary init container: counted at its peak, not beside the containers."""
    inits = as_list(spec.get("initContainers"))
    if not sidecars and any(isinstance(c, dict) and "restartPolicy" in c for c in inits):
        spec = {**spec, "initContainers": [{k: v for k, v in c.items() if k != "restartPolicy"} if isinstance(c, dict) else c for c in inits]}
    demand = podrequests.pod_requests(spec, podrequests.decimal_amounts, pod_level=pod_level)
    demand["pods"] = Decimal(1)
    return demand


def asked_at(spec: dict[str, Any], name: str, at: FieldPath, *, pod_level: bool) -> FieldPath:
    """Where the pod whose spec is at `at` asks for `name`, for a finding: the pod's own
    `resources` when they set it (and count), else the first container (init containers first)
    that requests it or, without a request, limits it, else `overhead`."""
    if pod_level:
        resources = as_dict(spec.get("resources"))
        for field in ("requests", "limits"):
            if name in as_dict(resources.get(field)) and podrequests.supported_at_pod_level(name):
                return at.child("resources", field).key(name)
    for key in ("initContainers", "containers"):
        for k, container in objects(spec.get(key)):
            resources = as_dict(container.get("resources"))
            for field in ("requests", "limits"):
                if name in as_dict(resources.get(field)):
                    return at.child(key).index(k).child("resources", field).key(name)
    return at.child("overhead").key(name)


# ---- placement against one node class -------------------------------------------------------------


def _hosts_match(hostnames: frozenset[str], operator: str, values: list[str]) -> bool:
    if operator == "In":
        return bool(hostnames & set(values))
    if operator == "NotIn":
        return bool(hostnames - set(values))
    return operator == "Exists" and bool(hostnames)


def _has_key(expr: Any) -> bool:
    """Whether a nodeSelectorRequirement is an object with a string key: one without is not ours to judge."""
    key = as_dict(expr).get("key")
    return isinstance(key, str)


def _expression(c: NodeClass, expr: Any, *, field: bool = False) -> bool:
    """One nodeSelectorRequirement against a class; one of the wrong shape matches (not ours to refuse)."""
    if not _has_key(expr):
        return True
    key, op = expr["key"], expr.get("operator")
    values = [v for v in as_list(expr.get("values")) if isinstance(v, str)]
    if field or key == HOSTNAME_LABEL:
        if op == "DoesNotExist":
            return not c.hostnames
        return _hosts_match(c.hostnames, str(op), values) if op in ("In", "NotIn", "Exists") else True
    have = c.labels.get(key)
    if op == "In":
        return have in values
    if op == "NotIn":
        return have not in values
    if op == "Exists":
        return have is not None
    if op == "DoesNotExist":
        return have is None
    if op in ("Gt", "Lt") and len(values) == 1:
        try:
            mine, theirs = int(have or ""), int(values[0])
        except ValueError:
            return False
        return mine > theirs if op == "Gt" else mine < theirs
    return True


class Selector:
    """A pod's nodeSelector and required node affinity, read once and then matched per class."""

    __slots__ = ("labels", "terms")

    def __init__(self, spec: dict[str, Any]) -> None:
        selector = spec.get("nodeSelector")
        self.labels = list(as_dict(selector).items())
        required = as_dict(as_dict(as_dict(spec.get("affinity")).get("nodeAffinity")).get("requiredDuringSchedulingIgnoredDuringExecution"))
        terms = required.get("nodeSelectorTerms")
        self.terms: list[tuple[list[Any], list[Any]]] | None = None
        if isinstance(terms, list) and terms:
            self.terms = [(as_list(as_dict(t).get("matchExpressions")), as_list(as_dict(t).get("matchFields"))) for t in terms]

    def matches(self, c: NodeClass) -> bool:
        """Some node of the class can match (an empty term matches no node)."""
        if not all(_has_label(c, key, value) for key, value in self.labels):
            return False
        if self.terms is None:
            return True
        return any(
            (exprs or fields) and all(_expression(c, e) for e in exprs) and all(_expression(c, f, field=True) for f in fields) for exprs, fields in self.terms
        )


def _has_label(c: NodeClass, key: str, value: Any) -> bool:
    """Some node of the class has the nodeSelector label `key=value`."""
    return value in c.hostnames if key == HOSTNAME_LABEL else c.labels.get(key) == value


def _requirement(expr: dict[str, Any], *, field: bool = False) -> str:
    """A nodeSelectorRequirement as one reads it: `zone In (a, b)`, `gpu Exists`."""
    op, values = str(expr.get("operator")), [str(v) for v in as_list(expr.get("values"))]
    shown = f"{'field ' if field else ''}{expr['key']} {op}"
    if op in ("In", "NotIn"):
        return f"{shown} ({', '.join(values)})"
    return f"{shown} {values[0]}" if op in ("Gt", "Lt") and values else shown


def _values_of(classes: Sequence[NodeClass], key: str) -> str:
    """What the nodes have for `key`: a hint beside the value no node has."""
    have = sorted(set().union(*(c.hostnames for c in classes))) if key == HOSTNAME_LABEL else sorted({c.labels[key] for c in classes if key in c.labels})
    if not have:
        return f"no node has the label {key}"
    return f"nodes have {key}={', '.join(have[:5])}" + (f" and {len(have) - 5} more" if len(have) > 5 else "")


def _unmatched(classes: Sequence[NodeClass], selector: Selector) -> str:
    """Why no node matches the pod's nodeSelector and required node affinity, naming what no node
    has: the first nodeSelector label no node carries; else, per required node affinity term, the
    first requirement no node left by the nodeSelector meets."""
    for key, value in selector.labels:
        if not any(_has_label(c, key, value) for c in classes):
            return f"no node has the label {key}={value} its nodeSelector asks for ({_values_of(classes, key)})"
    pool = [c for c in classes if all(_has_label(c, key, value) for key, value in selector.labels)]
    asked = ", ".join(f"{key}={value}" for key, value in selector.labels)
    if not pool:
        return f"no node has all the labels its nodeSelector asks for ({asked})"
    reasons = []
    for exprs, fields in selector.terms or []:
        checked = [(e, False) for e in exprs] + [(f, True) for f in fields]
        shaped = [(e, field) for e, field in checked if _has_key(e)]
        unmet = next((_requirement(e, field=field) for e, field in shaped if not any(_expression(c, e, field=field) for c in pool)), None)
        every = ", ".join(_requirement(e, field=field) for e, field in shaped)
        reasons.append("an empty term matches no node" if not checked else f"no node has {unmet}" if unmet else f"no node meets all of {every}")
    where = f" among the nodes with {asked}" if selector.labels else ""
    return f"no node matches its required node affinity{where}: " + "; ".join(reasons)


def _tolerates(tolerations: list[Any], taint: tuple[str, str, str]) -> bool:
    key, value, effect = taint
    for tol in only_objects(tolerations):
        if tol.get("effect") and tol.get("effect") != effect:
            continue
        op = tol.get("operator") or "Equal"
        if not tol.get("key"):
            if op == "Exists":
                return True
            continue
        if tol.get("key") != key:
            continue
        if op == "Exists" or (op == "Equal" and (tol.get("value") or "") == value):
            return True
    return False


def untolerated(c: NodeClass, tolerations: list[Any]) -> list[tuple[str, str, str]]:
    return [t for t in c.taints if t[2] in _HARD_EFFECTS and not t[0].startswith(_PASSING_TAINTS) and not _tolerates(tolerations, t)]


def _number(value: Decimal) -> str:
    return format(value.normalize(), "f") if value == value.to_integral_value() else str(value)


def _candidates(facts: ClusterFacts, classes: tuple[NodeClass, ...], selector: Selector) -> tuple[NodeClass, ...]:
    """The classes that have the nodeSelector's labels (hostname aside), by the label index."""
    narrowest: tuple[NodeClass, ...] | None = None
    index = facts.by_label()
    for key, value in selector.labels:
        if key == HOSTNAME_LABEL:
            continue
        found = index.get((key, value) if isinstance(value, str) else ("", ""), ())
        if narrowest is None or len(found) < len(narrowest):
            narrowest = found
    return classes if narrowest is None else narrowest


def _placement_problem(facts: ClusterFacts, classes: tuple[NodeClass, ...], spec: dict[str, Any], demand: dict[str, Decimal]) -> str:
    """ "" when some class could hold the pod, else why none could."""
    selector = Selector(spec)
    selected = [c for c in _candidates(facts, classes, selector) if selector.matches(c)]
    if not selected:
        return _unmatched(classes, selector)
    tolerations = as_list(spec.get("tolerations"))
    refused: dict[tuple[tuple[str, str, str], ...], bool] = {}  # classes share taint sets: judge each set once
    tolerated = []
    for c in selected:
        if c.taints:
            no = refused.get(c.taints)
            if no is None:
                no = refused[c.taints] = bool(untolerated(c, tolerations))
            if no:
                continue
        tolerated.append(c)
    if not tolerated:
        taints = sorted({f"{k}={v}:{e}" if v else f"{k}:{e}" for c in selected for k, v, e in untolerated(c, tolerations)})
        return f"every node it may use has a taint it does not tolerate ({', '.join(taints[:5])})"
    wanted = [(name, need) for name, need in demand.items() if need > 0]
    zero = Decimal(0)
    for c in tolerated:
        have = c.allocatable
        if all(have.get(name, zero) >= need for name, need in wanted):
            return ""
    for name, need in sorted(wanted):
        most = max(c.allocatable.get(name, zero) for c in tolerated)
        if most < need:
            return f"it asks for {_number(need)} {name} per pod and the largest node it may use has {_number(most)}"
    return "no single node it may use has all it asks for at once"


# ---- names ----------------------------------------------------------------------------------------


def close_names(name: str, advertised: Collection[str]) -> list[str]:
    """Advertised names that look like `name`: the same vendor prefix, or a near spelling."""
    prefix = name.partition("/")[0].lower() if "/" in name else ""
    near = {n for n in advertised if prefix and "/" in n and n.partition("/")[0].lower() == prefix}
    near |= set(difflib.get_close_matches(name, sorted(advertised), n=3, cutoff=0.6))
    near |= {n for n in advertised if n.lower() == name.lower()}
    return sorted(near - {name})[:5]


def _extended(name: str) -> bool:
    return "/" in name and not name.startswith(("hugepages-", "kubernetes.io/"))


# ---- the rule -------------------------------------------------------------------------------------


def _gang_findings(
    ms: dict[str, Any], facts: ClusterFacts, classes: tuple[NodeClass, ...], demands: dict[tuple[int, str], dict[str, Decimal]]
) -> list[FieldError]:
    template = as_dict(as_dict(ms.get("spec")).get("template"))
    mins = as_dict(as_dict(template.get("gangPolicy")).get("minRoleReplicas"))
    gang: dict[str, Decimal] = {}
    for i, role in enumerate(as_list(template.get("roles"))):
        role = as_dict(role)
        name = role.get("name")
        count = mins.get(name) if isinstance(name, str) and is_int(mins.get(name)) else role.get("replicas", 1)
        workers = role.get("workerReplicas") or 0
        if not is_int(count) or not is_int(workers) or count < 0 or workers < 0:
            continue
        for res, need in demands.get((i, "entryTemplate"), {}).items():
            if _extended(res):
                gang[res] = gang.get(res, Decimal(0)) + count * need
        for res, need in demands.get((i, "workerTemplate"), {}).items():
            if _extended(res):
                gang[res] = gang.get(res, Decimal(0)) + count * workers * need
    gang = {r: n for r, n in gang.items() if n > 0}
    if not gang:
        return []
    path = FieldPath.of("spec", "template", "gangPolicy", "minRoleReplicas") if mins else FieldPath.of("spec", "template", "roles")
    errs = []
    totals = facts.cluster_totals()
    for res, need in sorted(gang.items()):
        total = totals.get(res, Decimal(0))
        if total and need > total:
            errs.append(
                invalid(
                    path,
                    {res: _number(need)},
                    f"could never fit: one ServingGroup's gang needs {_number(need)} {res} "
                    f"and the cluster's nodes have {_number(total)} in all (free capacity not considered)",
                )
            )
    if errs:
        return errs
    return _topology_findings(template, facts, gang)


def _topology_findings(template: dict[str, Any], facts: ClusterFacts, gang: dict[str, Decimal]) -> list[FieldError]:
    policy = volcano.topology_policies(template).get(volcano.GROUP_POLICY)
    if policy is None or not policy.hard:
        return []
    allowed, tier_name = policy.tier_allowed, policy.tier_name
    if not is_int(allowed) and not tier_name:
        return []
    try:
        tiers = facts.hypernode_tiers()
        most_by_tier = facts.hypernode_most()
    except LookupFailed:
        return []  # the topology rule already says what it could not read
    if tiers is None or most_by_tier is None:
        return []
    if not is_int(allowed):
        named = [t for t, names in tiers[2].items() if tier_name in names]
        if not named:
            return []  # no such tier: modelservings.topology-facts says so
        allowed = max(named)
    usable = most_by_tier.get(allowed)
    if usable is None:
        return []
    path = FieldPath.of("spec", "template", "networkTopology", "groupPolicy")
    errs = []
    for res, need in sorted(gang.items()):
        most = usable.get(res, Decimal(0))
        if need > most:
            errs.append(
                invalid(
                    path,
                    policy.policy,
                    f"could never fit: one ServingGroup's gang needs {_number(need)} {res} within one HyperNode "
                    f"of tier {allowed} or lower, and the largest has {_number(most)} (free capacity not considered)",
                )
            )
    return errs


@REGISTRY.validates_request(RULE, MODELSERVINGS, action="warn", family="modelservings")
def check_fits(req: Request, ctx: Context) -> Verdict:
    """Every role's pods could ever be placed on some node class, and one ServingGroup's gang within the cluster (free capacity not considered)."""
    ms = req.object
    if ms is None or unchanged_template(req):
        return Verdict()
    classes, warnings = ask(ctx, "placement", ClusterFacts.node_classes)
    if not classes:
        return Verdict(warnings=warnings)
    facts = facts_of(ctx)
    advertised = facts.advertised()
    verdict = Verdict()
    demands: dict[tuple[int, str], dict[str, Decimal]] = {}
    placed: dict[tuple[Any, ...], str] = {}
    options = options_for(ctx.kubernetes_version, ctx.feature_gates)
    pod_level, sidecars = options.on("PodLevelResources"), options.on("SidecarContainers")
    for i, _role, which in templates_in_use(ms):
        path = template_path(i, which)
        spec = as_dict(as_dict(_role.get(which)).get("spec"))
        demand = pod_demand(spec, pod_level=pod_level, sidecars=sidecars)
        demands[(i, which)] = demand
        missing = [n for n in demand if n not in advertised and n not in _ALWAYS and demand[n] > 0]
        for name in missing:
            near = close_names(name, advertised)
            hint = f"; nodes advertise {', '.join(near)}" if near else ""
            at = asked_at(spec, name, path.child("spec"), pod_level=pod_level)
            verdict.errors.append(invalid(at, _number(demand[name]), f"could never fit: no node advertises {name}{hint}"))
        if missing:
            continue
        # an entry and a worker template usually place alike: judge each placement once per review
        alike = (tuple(sorted(demand.items())), repr(spec.get("nodeSelector")), repr(spec.get("affinity")), repr(spec.get("tolerations")))
        problem = placed.get(alike)
        if problem is None:
            problem = placed[alike] = _placement_problem(facts, classes, spec, demand)
        if problem:
            asked = {n: _number(v) for n, v in sorted(demand.items()) if n != "pods"}
            verdict.errors.append(invalid(path.child("spec"), asked, f"could never fit: {problem} (free capacity not considered)"))
    if not verdict.errors:
        verdict.errors += _gang_findings(ms, facts, classes, demands)
    return verdict
