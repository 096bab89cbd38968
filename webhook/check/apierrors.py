"""The API server's refusals that are not about a field: strict decoding and kind lookup.

Field errors (schema, CEL, built-in validation) are `admission.fields.FieldError`s with their
origin; these two answers are plain messages.
"""

from __future__ import annotations


def strict_decoding_message(kind: str, version: str, problems: list[str]) -> str:
    """The 400 a strict (`kubectl --validate=strict`, the default) create or update gets."""
    return f'{kind} in version "{version}" cannot be handled as a {kind}: strict decoding error: ' + ", ".join(problems)


def no_match_message(kind: str, api_version: str) -> str:
    """kubectl's RESTMapper refusal: the version (or kind) is not served by the API server."""
    return f'no matches for kind "{kind}" in version "{api_version}"'
