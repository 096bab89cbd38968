"""Pure admission rules, one module per API family, and the registry that routes to them.

To add a rule: write a function in the module of its API family and register it with
`@REGISTRY.validates(...)`, `validates_update(...)`, `validates_request(...)` or `mutates(...)`
(registry.py says what each hands the function); import a new module here.
Rules never do I/O (other objects come through `ctx.lookups`) and keep no state between reviews
(a view shared by several rules goes through the engine's per-review memo, `view=`).
"""

from . import cronhpa, fits, hpa, kserve, kthena_autoscaling, modelservings, pods, scaletargets, topology  # noqa: F401  (registers rules)
from .context import Context, DictLookups, LookupFailed, Lookups, NoLookups
from .registry import REGISTRY, Registry, Rule
from .settings import PolicySettings

__all__ = ["REGISTRY", "Registry", "Rule", "Context", "DictLookups", "LookupFailed", "Lookups", "NoLookups", "PolicySettings"]
