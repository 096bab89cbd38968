"""The edge between ServingGate and the Kubernetes API server.

Everything that turns settings into an API client (`client`), that lists and watches resources
(`reflector`, for every command that reads them), that reads objects for the rules (`lookups`),
or that turns an API failure into a sentence an operator can act on (`errors`) lives here, so
that the rest of the package never has to know how the official `kubernetes` client is configured. Only this package, the certificate keeper and the reconciler's I/O
modules import `kubernetes`.
"""

from __future__ import annotations

from .client import load_api_client
from .errors import ApiCall, KubeAccessError, describe_api_error

__all__ = ["ApiCall", "KubeAccessError", "describe_api_error", "load_api_client"]
