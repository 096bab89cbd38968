"""The one table that says which rule sees which request.

The HTTP endpoints, the `check` CLI and the generated webhook configurations all read it, so they
cannot drift apart. A rule is a plain function registered with `@REGISTRY.validator(...)` or
`@REGISTRY.mutator(...)` in the module of its API family.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

Action = Literal["validate", "mutate"]

Validator = Callable[..., Any]  # (request, ctx) -> Verdict
Mutator = Callable[..., Any]  # (request, obj, ctx) -> list[str]; edits obj, a private copy


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    action: Action
    group: str
    resource: str
    subresource: str
    operations: tuple[str, ...]
    fn: Callable[..., Any] = field(compare=False, repr=False)
    versions: tuple[str, ...] = ("*",)
    scope: str = "Namespaced"
    # Mutators only: the dict paths (e.g. ("metadata", "labels")) the rule edits in place. When
    # every matching mutator declares them, the engine copies just those dicts (and the root)
    # instead of the whole object; the rule must then leave every other nested value untouched.
    edits: tuple[tuple[str, ...], ...] | None = None

    @property
    def full_resource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


class Registry:
    def __init__(self) -> None:
        self._rules: list[Rule] = []
        self._index: dict[tuple[str, str, str, str, str], tuple[Rule, ...]] = {}

    def _register(
        self,
        action: Action,
        name: str,
        *,
        group: str,
        resource: str,
        operations: Iterable[str],
        subresource: str = "",
        versions: Iterable[str] = ("*",),
        scope: str = "Namespaced",
        edits: Iterable[Iterable[str]] | None = None,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        ops = tuple(operations)
        unknown = set(ops) - {"CREATE", "UPDATE", "DELETE", "CONNECT"}
        if unknown:
            raise ValueError(f"rule {name}: unknown operations {sorted(unknown)}")

        def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
            if any(r.name == name for r in self._rules):
                raise ValueError(f"rule {name} is registered twice")
            declared = None if edits is None else tuple(tuple(p) for p in edits)
            self._rules.append(Rule(name, action, group, resource, subresource, ops, fn, tuple(versions), scope, declared))
            self._index.clear()
            return fn

        return decorate

    def validator(self, name: str, **target: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        return self._register("validate", name, **target)

    def mutator(self, name: str, **target: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        return self._register("mutate", name, **target)

    def rules(self, action: Action | None = None) -> list[Rule]:
        return [r for r in self._rules if action is None or r.action == action]

    def match(self, action: Action, group: str, resource: str, subresource: str, operation: str) -> tuple[Rule, ...]:
        """The rules for one request, in registration order (cached: this is on every review's path)."""
        key = (action, group, resource, subresource, operation)
        found = self._index.get(key)
        if found is None:
            found = tuple(
                r
                for r in self._rules
                if r.action == action
                and r.group == group
                and r.resource == resource
                and r.subresource == subresource
                and operation in r.operations
            )
            self._index[key] = found
        return found

    def serves(self, group: str, resource: str, subresource: str) -> bool:
        return any(r.group == group and r.resource == resource and r.subresource == subresource for r in self._rules)


REGISTRY = Registry()
