"""Kept for the import path: `check` lives in the `webhook.check` package now."""

from .check.cli import EXIT_DENIED, EXIT_OK, EXIT_UNUSABLE, main, run

__all__ = ["EXIT_DENIED", "EXIT_OK", "EXIT_UNUSABLE", "main", "run"]
