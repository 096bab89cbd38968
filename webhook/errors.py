"""The errors a person running ServingGate can fix, as opposed to bugs.

`python -m webhook` turns an `OperatorError` into exit code 2 and one line on stderr naming what
to fix (a setting, a permission, an unreachable API server, a missing file); anything else is a
bug and keeps its traceback. Raising the right class is the whole contract: no command maps
exceptions to exit codes itself.
"""

from __future__ import annotations


class OperatorError(Exception):
    """A start-up problem an operator can fix: exit 2, one line, no traceback."""
