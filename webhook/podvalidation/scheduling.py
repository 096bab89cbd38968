"""Where a pod may run: tolerations, node and pod (anti-)affinity, topology spread constraints.

`matchLabelKeys`/`mismatchLabelKeys` of pod (anti-)affinity terms (gate
MatchLabelKeysInPodAffinity, 1.29 alpha, 1.31 on) port validateMatchLabelKeysAndMismatchLabelKeys
and validateLabelKeys of kube-apiserver's `pkg/apis/core/validation/validation.go` at commit
000f2605 (between 1.32 and 1.33; unchanged 1.31-1.34), and on a new Pod what mutatePodAffinity
(`pkg/registry/core/pod/strategy.go`) appends to the selector first (`merged_label_key_errors`).

`matchLabelKeys` of topology spread constraints: up to 1.33 ValidateMatchLabelKeysInTopologySpread
(a key the selector names anywhere is refused); from 1.34, with MatchLabelKeysInPodTopologySpreadSelectorMerge
(beta, on), validateTopologySpreadConstraints of v1.34.0 judges them with
validateMatchLabelKeysAndMismatchLabelKeys instead, after mutateTopologySpreadConstraints merged the
pod's labels into the selector on a new Pod. The v1.34.0 exception for an update whose old pod
already fails the newer check (it falls back to the older one) is not mirrored: spread constraints
cannot change on a Pod update, and a template's update is judged as a create, never stricter.
"""

from __future__ import annotations

from typing import Any

from .. import names
from .errors import Errors, FieldPath, GoSyntax, duplicate, forbidden, invalid, not_supported, required
from .meta import validate_labels
from .options import DEFAULT_OPTIONS, PodOptions
from .values import arr, integer, obj, opt_int, opt_obj, opt_text, string_map, strings, text

TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
WHEN_UNSATISFIABLE = ["DoNotSchedule", "ScheduleAnyway"]
INCLUSION_POLICIES = ["Honor", "Ignore"]
SPREAD_SELECTOR_MERGE = "MatchLabelKeysInPodTopologySpreadSelectorMerge"


def _label_name(key: str, path: FieldPath) -> Errors:
    return [invalid(path, key, m) for m in names.is_qualified_name(key)]


def validate_tolerations(value: Any, path: FieldPath, errs: Errors) -> None:
    for i, raw in enumerate(arr(value, path, errs)):
        at = path.index(i)
        tol = obj(raw, at, errs)
        key = text(tol.get("key"), at.child("key"), errs)
        operator = text(tol.get("operator"), at.child("operator"), errs)
        tol_value = text(tol.get("value"), at.child("value"), errs)
        effect = text(tol.get("effect"), at.child("effect"), errs)
        seconds = opt_int(tol.get("tolerationSeconds"), at.child("tolerationSeconds"), errs)
        if key:
            errs += _label_name(key, at.child("key"))
        if not key and operator != "Exists":
            errs.append(invalid(at.child("operator"), operator, 'operator must be Exists when `key` is empty, which means "match all values and all keys"'))
        if seconds is not None and effect != "NoExecute":
            errs.append(invalid(at.child("effect"), effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        if operator in ("Equal", ""):
            problems = names.is_valid_label_value(tol_value)
            if problems:
                errs.append(invalid(at.child("operator"), tol_value, ";".join(problems)))
        elif operator == "Exists":
            if tol_value:
                errs.append(
                    invalid(
                        at.child("operator"), _toleration_text(key, operator, tol_value, effect, seconds), "value must be empty when `operator` is 'Exists'"
                    )
                )
        else:
            errs.append(not_supported(at.child("operator"), operator, ["Equal", "Exists"]))
        if effect and effect not in TAINT_EFFECTS:
            errs.append(not_supported(at.child("effect"), effect, TAINT_EFFECTS))


def _toleration_text(key: str, operator: str, value: str, effect: str, seconds: int | None) -> GoSyntax:
    """`%#v` of a core.Toleration (its TolerationSeconds pointer prints as an address when set)."""
    shown = "(*int64)(nil)" if seconds is None else "(*int64)(0x{pointer})"
    return GoSyntax(f'core.Toleration{{Key:"{key}", Operator:"{operator}", Value:"{value}", Effect:"{effect}", TolerationSeconds:{shown}}}')


def _operator_and_values(operator: str, values: list[str], path: FieldPath, errs: Errors, *, numeric: bool) -> None:
    """The operator rules a label selector's expressions and a node selector's requirements share
    (In/NotIn need values, Exists/DoesNotExist forbid them); only node requirements also take the
    numeric Gt/Lt with exactly one value."""
    if operator in ("In", "NotIn"):
        if not values:
            errs.append(required(path.child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            errs.append(forbidden(path.child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    elif numeric and operator in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(required(path.child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"))
    else:
        errs.append(invalid(path.child("operator"), operator, "not a valid selector operator"))


def _requirement(req: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    operator = text(req.get("operator"), path.child("operator"), errs)
    values = strings(req.get("values"), path.child("values"), errs)
    _operator_and_values(operator, values, path, errs, numeric=True)
    errs += _label_name(text(req.get("key"), path.child("key"), errs), path.child("key"))


def _field_requirement(req: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    operator = text(req.get("operator"), path.child("operator"), errs)
    values = strings(req.get("values"), path.child("values"), errs)
    if operator in ("In", "NotIn"):
        if len(values) != 1:
            errs.append(required(path.child("values"), "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
    else:
        errs.append(invalid(path.child("operator"), operator, "not a valid selector operator"))
    key = text(req.get("key"), path.child("key"), errs)
    if key != "metadata.name":
        errs.append(invalid(path.child("key"), key, "not a valid field selector key"))
        return
    for i, v in enumerate(values):
        errs += [invalid(path.child("values").index(i), v, m) for m in names.name_is_dns_subdomain(v)]


def _node_term(term: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    for j, req in enumerate(arr(term.get("matchExpressions"), path.child("matchExpressions"), errs)):
        at = path.child("matchExpressions").index(j)
        _requirement(obj(req, at, errs), at, errs)
    for j, req in enumerate(arr(term.get("matchFields"), path.child("matchFields"), errs)):
        at = path.child("matchFields").index(j)
        _field_requirement(obj(req, at, errs), at, errs)


def _node_affinity(na: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    needed = opt_obj(na.get("requiredDuringSchedulingIgnoredDuringExecution"), path.child("requiredDuringSchedulingIgnoredDuringExecution"), errs)
    if needed is not None:
        at = path.child("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
        terms = arr(needed.get("nodeSelectorTerms"), at, errs)
        if not terms:
            errs.append(required(at, "must have at least one node selector term"))
        for i, term in enumerate(terms):
            _node_term(obj(term, at.index(i), errs), at.index(i), errs)
    at = path.child("preferredDuringSchedulingIgnoredDuringExecution")
    for i, raw in enumerate(arr(na.get("preferredDuringSchedulingIgnoredDuringExecution"), at, errs)):
        pref = _weighted(raw, at.index(i), errs)
        _node_term(obj(pref.get("preference"), at.index(i).child("preference"), errs), at.index(i).child("preference"), errs)


def _weighted(raw: Any, path: FieldPath, errs: Errors) -> dict[str, Any]:
    """A preferred scheduling term, of node or pod (anti-)affinity alike: its weight is 1-100."""
    entry = obj(raw, path, errs)
    weight = integer(entry.get("weight"), path.child("weight"), errs)
    if not 0 < weight <= 100:
        errs.append(invalid(path.child("weight"), weight, "must be in the range 1-100"))
    return entry


def validate_label_selector(selector: dict[str, Any] | None, path: FieldPath, errs: Errors) -> None:
    if selector is None:
        return
    errs += validate_labels(string_map(selector.get("matchLabels"), path.child("matchLabels"), errs), path.child("matchLabels"))
    for i, raw in enumerate(arr(selector.get("matchExpressions"), path.child("matchExpressions"), errs)):
        at = path.child("matchExpressions").index(i)
        expr = obj(raw, at, errs)
        operator = text(expr.get("operator"), at.child("operator"), errs)
        values = strings(expr.get("values"), at.child("values"), errs)
        _operator_and_values(operator, values, at, errs, numeric=False)
        errs += _label_name(text(expr.get("key"), at.child("key"), errs), at.child("key"))
        for j, v in enumerate(values):
            errs += [invalid(at.child("values").index(j), v, m) for m in names.is_valid_label_value(v)]


def _pod_term(term: dict[str, Any], path: FieldPath, errs: Errors, opts: PodOptions) -> None:
    validate_label_selector(opt_obj(term.get("labelSelector"), path.child("labelSelector"), errs), path.child("labelSelector"), errs)
    validate_label_selector(opt_obj(term.get("namespaceSelector"), path.child("namespaceSelector"), errs), path.child("namespaceSelector"), errs)
    for ns in strings(term.get("namespaces"), path.child("namespaces"), errs):
        errs += [invalid(path.child("namespace"), ns, m) for m in names.name_is_dns_label(ns)]
    if (term.get("matchLabelKeys") is not None or term.get("mismatchLabelKeys") is not None) and opts.on("MatchLabelKeysInPodAffinity"):
        _match_and_mismatch_label_keys(term, path, errs)
    key = text(term.get("topologyKey"), path.child("topologyKey"), errs)
    if not key:
        errs.append(required(path.child("topologyKey"), "can not be empty"))
    errs += _label_name(key, path.child("topologyKey"))


def _match_and_mismatch_label_keys(term: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    """An affinity term's keys, read for `_label_keys_beside_selector`."""
    selector = opt_obj(term.get("labelSelector"), path.child("labelSelector"), [])
    match = strings(term.get("matchLabelKeys"), path.child("matchLabelKeys"), errs)
    mismatch = strings(term.get("mismatchLabelKeys"), path.child("mismatchLabelKeys"), errs)
    _label_keys_beside_selector(selector, match, mismatch, path, errs)


def _label_keys_beside_selector(selector: dict[str, Any] | None, match: list[str], mismatch: list[str], path: FieldPath, errs: Errors) -> None:
    """validateMatchLabelKeysAndMismatchLabelKeys: each key a label name (and the lists allowed
    only beside a labelSelector), a matchLabelKeys key not named twice by the selector, and no key
    in both lists.

    Upstream sees the selector after the pod strategy appended one expression per key whose label
    the pod carries; this check sees the selector as written, so it finds a key the selector
    names twice but not one the merge would have added again (`merged_label_key_errors` does):
    never more than the API server."""
    _label_keys(match, selector, path.child("matchLabelKeys"), errs)
    _label_keys(mismatch, selector, path.child("mismatchLabelKeys"), errs)
    if selector is not None:
        index = {key: i for i, key in enumerate(match)}
        seen = {str(k) for k in obj(selector.get("matchLabels"), path, [])}
        for expr in arr(selector.get("matchExpressions"), path, []):
            key = expr.get("key") if isinstance(expr, dict) else None
            if not isinstance(key, str):
                continue
            if key in index and key in seen:
                errs.append(invalid(path.index(index[key]), key, "exists in both matchLabelKeys and labelSelector"))
            seen.add(key)
    both = set(mismatch)
    for i, key in enumerate(match):
        if key in both:
            errs.append(invalid(path.child("matchLabelKeys").index(i), key, "exists in both matchLabelKeys and mismatchLabelKeys"))


def merged_label_key_errors(spec: Any, labels: Any, spec_path: FieldPath, *, opts: PodOptions = DEFAULT_OPTIONS) -> Errors:
    """What a new Pod's labels add to the checks of `matchLabelKeys`, merged into the selectors of
    its affinity terms (`affinity_label_key_errors`) and, from 1.34, of its topology spread
    constraints (`spread_label_key_errors`)."""
    return affinity_label_key_errors(spec, labels, spec_path.child("affinity"), opts=opts) + spread_label_key_errors(
        spec, labels, spec_path.child("topologySpreadConstraints"), opts=opts
    )


def spread_label_key_errors(spec: Any, labels: Any, path: FieldPath, *, opts: PodOptions = DEFAULT_OPTIONS) -> Errors:
    """mutateTopologySpreadConstraints (v1.34.0 strategy.go, gate MatchLabelKeysInPodTopologySpreadSelectorMerge
    on) appends `key In (value)` to a constraint's labelSelector for each matchLabelKeys key the new
    Pod carries; validateMatchLabelKeysAndMismatchLabelKeys then refuses one the selector already
    names, at the constraint's path indexed by the key's last position (as upstream writes it)."""
    if not opts.on(SPREAD_SELECTOR_MERGE) or type(spec) is not dict or type(labels) is not dict or not labels:
        return []
    errs: Errors = []
    for i, constraint in enumerate(_list(spec.get("topologySpreadConstraints"))):
        if type(constraint) is dict:
            _appended_keys(constraint, _keys(constraint.get("matchLabelKeys")), [], labels, path.index(i), errs)
    return errs


def affinity_label_key_errors(spec: Any, labels: Any, path: FieldPath, *, opts: PodOptions = DEFAULT_OPTIONS) -> Errors:
    """What a new Pod's labels add to the check above: mutatePodAffinity
    (pkg/registry/core/pod/strategy.go, kubernetes/kubernetes 1.31 to 1.34, with
    MatchLabelKeysInPodAffinity on) appends to each term's labelSelector, before validation, one
    `key In (value)` per matchLabelKeys key and one `key NotIn (value)` per mismatchLabelKeys key
    whose label the pod carries. validateMatchLabelKeysAndMismatchLabelKeys then walks those
    expressions too, so a matchLabelKeys key the written selector already names (in matchLabels
    or an expression), or that matchLabelKeys names twice, is refused once the pod carries it.

    These are the errors of the appended expressions only (the written ones are the spec's,
    `_match_and_mismatch_label_keys`), at upstream's path: the term's, indexed by the key's last
    position in matchLabelKeys. A pod template is not mutated (ValidatePodTemplateSpec sees the
    selector as written), so only a Pod, or a template judged as the pod made from it, has them."""
    if not opts.on("MatchLabelKeysInPodAffinity") or type(spec) is not dict or type(labels) is not dict or not labels:
        return []
    affinity = spec.get("affinity")
    if type(affinity) is not dict:
        return []
    errs: Errors = []
    for kind in ("podAffinity", "podAntiAffinity"):
        pa = affinity.get(kind)
        if type(pa) is not dict:
            continue
        at = path.child(kind)
        for i, term in enumerate(_list(pa.get("requiredDuringSchedulingIgnoredDuringExecution"))):
            _term_appended_keys(term, labels, at.child("requiredDuringSchedulingIgnoredDuringExecution").index(i), errs)
        for i, weighted in enumerate(_list(pa.get("preferredDuringSchedulingIgnoredDuringExecution"))):
            if type(weighted) is dict:
                term_at = at.child("preferredDuringSchedulingIgnoredDuringExecution").index(i).child("podAffinityTerm")
                _term_appended_keys(weighted.get("podAffinityTerm"), labels, term_at, errs)
    return errs


def _list(value: Any) -> list[Any]:
    return value if type(value) is list else []


def _keys(value: Any) -> list[str]:
    return [k for k in _list(value) if type(k) is str]


def _term_appended_keys(term: Any, labels: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    if type(term) is dict:
        _appended_keys(term, _keys(term.get("matchLabelKeys")), _keys(term.get("mismatchLabelKeys")), labels, path, errs)


def _appended_keys(term: dict[str, Any], match: list[str], mismatch: list[str], labels: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    """applyLabelKeysToLabelSelector for one term or constraint, then the rest of upstream's walk
    over the selector's expressions: those the merge appended, after the written ones."""
    if type(term.get("labelSelector")) is not dict:
        return  # a nil labelSelector matches nothing: upstream appends nothing
    appended = [k for k in match + mismatch if k in labels]
    if not appended:
        return
    selector = term["labelSelector"]
    index = {key: i for i, key in enumerate(match)}
    seen = {str(k) for k in selector.get("matchLabels") or {}} if type(selector.get("matchLabels")) is dict else set()
    seen |= {e["key"] for e in _list(selector.get("matchExpressions")) if type(e) is dict and type(e.get("key")) is str}
    for key in appended:
        if key in index and key in seen:
            errs.append(invalid(path.index(index[key]), key, "exists in both matchLabelKeys and labelSelector"))
        seen.add(key)


def _label_keys(keys: list[str], selector: dict[str, Any] | None, path: FieldPath, errs: Errors) -> None:
    """validateLabelKeys."""
    if not keys:
        return
    if selector is None:
        errs.append(forbidden(path, "must not be specified when labelSelector is not set"))
        return
    for i, key in enumerate(keys):
        errs += _label_name(key, path.index(i))


def _pod_affinity(pa: dict[str, Any], path: FieldPath, errs: Errors, opts: PodOptions) -> None:
    at = path.child("requiredDuringSchedulingIgnoredDuringExecution")
    for i, term in enumerate(arr(pa.get("requiredDuringSchedulingIgnoredDuringExecution"), at, errs)):
        _pod_term(obj(term, at.index(i), errs), at.index(i), errs, opts)
    at = path.child("preferredDuringSchedulingIgnoredDuringExecution")
    for i, raw in enumerate(arr(pa.get("preferredDuringSchedulingIgnoredDuringExecution"), at, errs)):
        weighted = _weighted(raw, at.index(i), errs)
        term_at = at.index(i).child("podAffinityTerm")
        _pod_term(obj(weighted.get("podAffinityTerm"), term_at, errs), term_at, errs, opts)


def validate_affinity(spec: dict[str, Any], path: FieldPath, errs: Errors, *, opts: PodOptions = DEFAULT_OPTIONS) -> None:
    affinity = opt_obj(spec.get("affinity"), path, errs)
    if affinity is None:
        return
    if (na := opt_obj(affinity.get("nodeAffinity"), path.child("nodeAffinity"), errs)) is not None:
        _node_affinity(na, path.child("nodeAffinity"), errs)
    for kind in ("podAffinity", "podAntiAffinity"):
        if (pa := opt_obj(affinity.get(kind), path.child(kind), errs)) is not None:
            _pod_affinity(pa, path.child(kind), errs, opts)


def validate_topology_spread(value: Any, path: FieldPath, errs: Errors, *, opts: PodOptions = DEFAULT_OPTIONS) -> None:
    constraints = [obj(raw, path.index(i), errs) for i, raw in enumerate(arr(value, path, errs))]
    for i, c in enumerate(constraints):
        at = path.index(i)
        skew = integer(c.get("maxSkew"), at.child("maxSkew"), errs)
        if skew <= 0:
            errs.append(invalid(at.child("maxSkew"), skew, "must be greater than zero"))
        key = text(c.get("topologyKey"), at.child("topologyKey"), errs)
        if not key:
            errs.append(required(at.child("topologyKey"), "can not be empty"))
        action = text(c.get("whenUnsatisfiable"), at.child("whenUnsatisfiable"), errs)
        if action not in WHEN_UNSATISFIABLE:
            errs.append(not_supported(at.child("whenUnsatisfiable"), action, WHEN_UNSATISFIABLE))
        if any(o.get("topologyKey", "") == key and o.get("whenUnsatisfiable", "") == action for o in constraints[i + 1 :]):
            errs.append(duplicate(at.child("{topologyKey, whenUnsatisfiable}"), f"{{{key}, {action}}}"))
        _min_domains(c, action, at, errs)
        for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            chosen = opt_text(c.get(policy), at.child(policy), errs)
            if chosen is not None and chosen not in INCLUSION_POLICIES:
                errs.append(not_supported(at.child(policy), chosen, INCLUSION_POLICIES))
        selector = opt_obj(c.get("labelSelector"), at.child("labelSelector"), errs)
        keys = strings(c.get("matchLabelKeys"), at.child("matchLabelKeys"), errs)
        if opts.on(SPREAD_SELECTOR_MERGE):
            _label_keys_beside_selector(selector, keys, [], at, errs)
        else:
            _match_label_keys(keys, selector, at.child("matchLabelKeys"), errs)
        validate_label_selector(selector, at.child("labelSelector"), errs)


def _min_domains(c: dict[str, Any], action: str, at: FieldPath, errs: Errors) -> None:
    domains = opt_int(c.get("minDomains"), at.child("minDomains"), errs)
    if domains is None:
        return
    if domains <= 0:
        errs.append(invalid(at.child("minDomains"), domains, "must be greater than zero"))
    if action != "DoNotSchedule":
        errs.append(invalid(at.child("minDomains"), domains, f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"))


def _match_label_keys(keys: list[str], selector: dict[str, Any] | None, path: FieldPath, errs: Errors) -> None:
    if not keys:
        return
    known: set[str] = set()
    if selector is None:
        errs.append(forbidden(path, "must not be specified when labelSelector is not set"))
    else:
        known.update(str(k) for k in obj(selector.get("matchLabels"), path, []))
        known.update(str(e.get("key")) for e in arr(selector.get("matchExpressions"), path, []) if isinstance(e, dict))
    for i, key in enumerate(keys):
        errs += _label_name(key, path.index(i))
        if key in known:
            errs.append(invalid(path.index(i), key, "exists in both matchLabelKeys and labelSelector"))
