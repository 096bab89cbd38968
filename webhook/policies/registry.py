"""The one table that says which rule sees which request.

The HTTP endpoints, the `check` CLI, the generated webhook configurations (rules, operations and
the pods' `objectSelector`) and the docs all read it, so they cannot drift apart.

A rule is one pure function and one registration. What the function is handed depends on how it
is registered, so no rule needs a wrapper that only converts:

- `@REGISTRY.validates(name, target)`: `fn(obj) -> findings` — the object alone: the new one, or
  on DELETE the one being deleted (`Request.subject`; `Rule.judge` makes that switch, so no rule
  reads the operation to find its object);
- `@REGISTRY.validates_update(name, target)`: `fn(obj, old) -> findings` — only on UPDATE;
- `@REGISTRY.validates_request(name, target)`: `fn(req, ctx) -> findings` — when the rule needs
  the request (name, namespace, subresource) or other objects through `ctx.lookups`;
- `@REGISTRY.mutates(name, target, scope=..., edits=...)`: `fn(req, obj, ctx) -> Changes` — edits
  `obj`, a private copy (deep, or only of the dicts `edits` names); the engine computes the JSON Patch by diffing it against the request. What
  it changed goes to the audit annotations and the log; only problems are warnings.

Findings are a list of field errors, or a `Verdict` when there are warnings or a refusal too.

`view=`: an object or update rule may ask for a view of the object instead of the dict (the
ModelServing rules share one `Shape`). The engine computes each view once per review in a
`Views` memo that lives as long as the review, so a family of rules reads one extraction and no
rule keeps state between reviews.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol, TypeVar

from ..admission.decision import Verdict
from ..admission.review import OPERATIONS, Request


# The registry sits below the settings and the context that name it (settings.py checks rule names
# against it, context.py builds on settings), so it knows them only by what it reads of them.
class SkipsNamespaces(Protocol):
    """What a label scope reads of the policy settings (PolicySettings, settings.py)."""

    @property
    def skip_namespaces(self) -> frozenset[str]: ...


class OpaqueContext(Protocol):
    """The review's policy Context (context.py): handed through to request rules, never read here."""


Action = Literal["validate", "mutate"]
Kind = Literal["object", "update", "request", "mutation"]
F = TypeVar("F", bound=Callable[..., Any])
View = Callable[[dict[str, Any]], Any]
Edits = tuple[tuple[str, ...], ...]  # key paths from an object's root to dicts a mutator changes in place


class Views:
    """What the rules of one review judge, read once, and a memo of their views.

    `subject` is `req.subject` (the new object, or on DELETE the one being deleted) and `old` the
    old object; each view of either is computed once and dropped with the review. Bound to its
    request, so a memo handed to another request is not used for it."""

    __slots__ = ("req", "subject", "old", "of_subject", "of_old")

    def __init__(self, req: Request) -> None:
        self.req = req
        self.subject = req.subject
        self.old = req.old_object
        self.of_subject: dict[View, Any] = {}
        self.of_old: dict[View, Any] | None = None  # made when an update rule first needs it

    @classmethod
    def instead(cls, req: Request, subject: dict[str, Any], old: dict[str, Any] | None) -> Views:
        """Judge other objects on behalf of `req`: the scale subresource judges the ModelServing
        update a scale amounts to (building that Request would cost more than the rules)."""
        views = cls(req)
        views.subject, views.old = subject, old
        return views


@dataclass(frozen=True, slots=True)
class Target:
    """The API resource a rule judges, as a webhook configuration's `rules` entry names it."""

    group: str
    resource: str
    versions: tuple[str, ...]
    operations: tuple[str, ...] = ("CREATE", "UPDATE")
    subresource: str = ""
    scope: str = "Namespaced"

    def on(self, *operations: str) -> Target:
        return replace(self, operations=operations)

    def sub(self, subresource: str, *operations: str) -> Target:
        return replace(self, subresource=subresource, operations=operations or self.operations)

    @property
    def full_resource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


@dataclass(frozen=True, slots=True)
class MatchCondition:
    """A CEL expression the API server evaluates before calling the webhook (admissionregistration
    `matchConditions`, beta and on by default in 1.28, GA in 1.30): requests it rejects are never
    sent, so the webhook being down cannot block them. The rule must give the same answer
    without it (the engine does not evaluate CEL), so a cluster without matchConditions is safe."""

    name: str
    expression: str


# No validating rule judges an UPDATE of an object that is being deleted (its deletionTimestamp set):
# what such an object still receives are its controllers' finalizer removals, and a refusal (or our
# webhook being down, with failurePolicy Fail) would leave it Terminating until someone edits it by
# hand. Every validating webhook entry and fallback policy carries this condition, so the API server
# does not even send those updates; the engine skips them as well (`being_deleted`), for an API
# server without matchConditions and for `check`.
NOT_BEING_DELETED = MatchCondition("not-being-deleted", "request.operation != 'UPDATE' || !has(object.metadata.deletionTimestamp)")


def being_deleted(req: Request) -> bool:
    """What NOT_BEING_DELETED leaves out: an UPDATE whose new object has a deletionTimestamp."""
    if req.operation != "UPDATE" or type(req.object) is not dict:
        return False
    meta = req.object.get("metadata")
    return type(meta) is dict and "deletionTimestamp" in meta


@dataclass(frozen=True, slots=True)
class CelCheck:
    """The rule, or the part of it whose findings have `detail`, as a CEL validation the API
    server can run by itself: `python -m webhook manifests` writes it into an opt-in
    ValidatingAdmissionPolicy, the fallback that still holds when the webhook is bypassed.

    `expression` is true when the object is allowed. It reads `object` (and `oldObject` in an
    update rule) as a ValidatingAdmissionPolicy does, after the rule's `match` conditions. The
    message is the detail text of the rule's finding: `message` when it is fixed,
    `message_expression` when it names values. The engine never runs it; tests evaluate the
    generated policies against the same cases as the rule, so the two cannot drift apart."""

    expression: str
    message: str = ""
    message_expression: str = ""
    detail: str = ""  # only the rule's findings with this detail are mirrored; "" = all of them


@dataclass(frozen=True, slots=True)
class LabelScope:
    """Which objects of a resource a rule is for, by label: any of `any_of`, unless opted out.

    Declared once at registration. The engine applies it to the request (plus the configured
    skipped namespaces) and the generated webhook configuration turns it into `objectSelector`s,
    so the API server does not even send what the rule would ignore. A selector's expressions
    are ANDed, so the OR takes one entry per label, each excluding the labels before it (no
    object is reviewed twice by one configuration).
    """

    any_of: tuple[tuple[str, str], ...]  # (short name for the webhook entry, label key)
    opt_out: tuple[str, str] | None = None  # (label key, value) that takes an object out

    def admits(self, labels: Mapping[str, Any], namespace: str, settings: SkipsNamespaces) -> bool:
        if namespace in settings.skip_namespaces:
            return False
        if self.opt_out is not None and labels.get(self.opt_out[0]) == self.opt_out[1]:
            return False
        return any(key in labels for _, key in self.any_of)

    def object_selectors(self) -> list[tuple[str, dict[str, Any]]]:
        out: list[tuple[str, dict[str, Any]]] = []
        for i, (short, key) in enumerate(self.any_of):
            expressions: list[dict[str, Any]] = [{"key": key, "operator": "Exists"}]
            expressions += [{"key": earlier, "operator": "DoesNotExist"} for _, earlier in self.any_of[:i]]
            if self.opt_out is not None:
                expressions.append({"key": self.opt_out[0], "operator": "NotIn", "values": [self.opt_out[1]]})
            out.append((short, {"matchExpressions": expressions}))
        return out


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    kind: Kind
    target: Target
    fn: Callable[..., Any] = field(compare=False, repr=False)
    scope: LabelScope | None = None
    match: tuple[MatchCondition, ...] = ()
    # The rule's outcome depends on the object's replica counts, so the `scale` subresource
    # (kubectl scale, HPA) must re-run it with the new count (see modelservings.scale).
    replica_dependent: bool = False
    cel: tuple[CelCheck, ...] = ()  # the CEL fallback policy's validations (webhook/deploy/fallback.py)
    view: View | None = None  # what an object/update rule's fn is handed instead of the dict
    edits: Edits | None = None  # a mutator's dicts changed in place (engine.private_copy); None: anything
    # the action when --rule-actions names none: "deny" for validating rules, unless a rule only
    # warns by default (what might not fit); "on" for mutating ones
    default_action: str = ""
    # the API family whose webhook entry sends this rule its requests: "" for the module the rule
    # is written in (webhook/deploy/configurations.family); a rule of one concern written apart
    # from its resource's module names the family (the will-it-run rules)
    family: str = ""

    @property
    def default(self) -> str:
        return self.default_action or ("on" if self.kind == "mutation" else "deny")

    @property
    def action(self) -> Action:
        return "mutate" if self.kind == "mutation" else "validate"

    def judge(self, req: Request, ctx: OpaqueContext, views: Views | None = None) -> Verdict:
        """Run a validating rule on a request; the result normalised to a Verdict.

        The one place that maps an operation to the object a rule judges (as controller-runtime's
        validator adapter does): `req.subject`, the old object on DELETE, read once per review by
        `Views`. A request with nothing to judge is allowed. `views` is the review's memo; the
        engine shares one between its rules. (The memo reads are inlined: this runs for every
        rule of every review.)"""
        kind = self.kind
        if kind == "request":
            found = self.fn(req, ctx)
        else:
            if views is None or views.req is not req:
                views = Views(req)
            obj = views.subject
            if obj is None:
                return Verdict()
            view = self.view
            if view is not None:
                memo = views.of_subject
                made = memo.get(view, memo)  # the memo itself stands for "not made yet"
                if made is memo:
                    made = memo[view] = view(obj)
                obj = made
            if kind == "object":
                found = self.fn(obj)
            else:
                old = views.old
                if old is None:
                    return Verdict()
                if view is not None:
                    olds = views.of_old
                    if olds is None:
                        olds = views.of_old = {}
                    made = olds.get(view, olds)
                    if made is olds:
                        made = olds[view] = view(old)
                    old = made
                found = self.fn(obj, old)
        return found if isinstance(found, Verdict) else Verdict(errors=list(found))


class Registry:
    def __init__(self) -> None:
        self._rules: list[Rule] = []
        self._index: dict[tuple[str, str, str, str, str], tuple[Rule, ...]] = {}
        self._served: set[tuple[str, str, str]] = set()

    def _register(
        self,
        kind: Kind,
        name: str,
        target: Target,
        *,
        scope: LabelScope | None = None,
        replica_dependent: bool = False,
        match: tuple[MatchCondition, ...] = (),
        cel: tuple[CelCheck, ...] = (),
        view: View | None = None,
        edits: Edits | None = None,
        action: str = "",
        family: str = "",
    ) -> Callable[[F], F]:
        unknown = set(target.operations) - set(OPERATIONS)
        if unknown:
            raise ValueError(f"rule {name}: unknown operations {sorted(unknown)}")
        if kind == "update" and target.operations != ("UPDATE",):
            raise ValueError(f"rule {name}: an update rule is registered for UPDATE only")

        def decorate(fn: F) -> F:
            if any(r.name == name for r in self._rules):
                raise ValueError(f"rule {name} is registered twice")
            self._rules.append(
                Rule(name, kind, target, fn, scope, match, replica_dependent, cel=cel, view=view, edits=edits, default_action=action, family=family)
            )
            self._served.add((target.group, target.resource, target.subresource))
            self._index.clear()
            return fn

        return decorate

    def validates(
        self,
        name: str,
        target: Target,
        *,
        replica_dependent: bool = False,
        match: tuple[MatchCondition, ...] = (),
        cel: tuple[CelCheck, ...] = (),
        view: View | None = None,
        action: str = "",
        family: str = "",
    ) -> Callable[[F], F]:
        """`fn(obj) -> findings`, or `fn(view(obj))` with a view; `action="warn"` for a rule that
        only warns unless an operator says deny; `family` (see Rule) for a rule written outside
        its resource's module."""
        return self._register("object", name, target, replica_dependent=replica_dependent, match=match, cel=cel, view=view, action=action, family=family)

    def validates_update(self, name: str, target: Target, *, cel: tuple[CelCheck, ...] = (), view: View | None = None) -> Callable[[F], F]:
        """`fn(obj, old) -> findings`, on UPDATE; `fn(view(obj), view(old))` with a view."""
        return self._register("update", name, target.on("UPDATE"), cel=cel, view=view)

    def validates_request(self, name: str, target: Target, *, match: tuple[MatchCondition, ...] = (), action: str = "", family: str = "") -> Callable[[F], F]:
        """`fn(req, ctx) -> findings`; `action` and `family` as for `validates`."""
        return self._register("request", name, target, match=match, action=action, family=family)

    def mutates(self, name: str, target: Target, *, scope: LabelScope | None = None, edits: Edits | None = None) -> Callable[[F], F]:
        """`fn(req, obj, ctx) -> Changes`; `obj` is a private copy the rule edits: a deep copy, or
        with `edits` (the key paths of the only dicts it changes in place) a copy of those dicts
        and of the dicts on the way to them (see engine.private_copy)."""
        return self._register("mutation", name, target, scope=scope, edits=edits)

    def rules(self, action: Action | None = None) -> list[Rule]:
        return [r for r in self._rules if action is None or r.action == action]

    def names(self) -> list[str]:
        return [r.name for r in self._rules]

    def match(self, action: Action, group: str, resource: str, subresource: str, operation: str) -> tuple[Rule, ...]:
        """The rules for one request, in registration order (cached: this is on every review's path)."""
        key = (action, group, resource, subresource, operation)
        found = self._index.get(key)
        if found is None:
            found = tuple(
                r
                for r in self._rules
                if r.action == action
                and r.target.group == group
                and r.target.resource == resource
                and r.target.subresource == subresource
                and operation in r.target.operations
            )
            # Bounded by the registry, not by what clients send: a key is kept only for a
            # resource some rule is registered for (the operation is one of five by then), so
            # invented group or resource names, up to megabytes each, are never held.
            if found or (group, resource, subresource) in self._served:
                self._index[key] = found
        return found

    def serves(self, group: str, resource: str, subresource: str) -> bool:
        return (group, resource, subresource) in self._served


REGISTRY = Registry()
