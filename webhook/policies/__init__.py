"""Pure admission rules, one module per API family, and the registry that routes to them.

To add a rule: write a function in the module of its API family and decorate it with
`@REGISTRY.validator(...)` or `@REGISTRY.mutator(...)`; import a new module here.
Rules never do I/O: other objects come through `ctx.lookups`.
"""

from . import cronhpa, hpa, kserve, kthena_autoscaling, modelservings, pods  # noqa: F401  (registers rules)
from .context import Context, DictLookups, LookupFailed, Lookups, NoLookups
from .registry import REGISTRY, Registry, Rule
from .settings import PolicySettings

__all__ = ["REGISTRY", "Registry", "Rule", "Context", "DictLookups", "LookupFailed", "Lookups", "NoLookups", "PolicySettings"]
