"""Diagnostics and findings: data, created where a decision is made, rendered elsewhere.

Every diagnostic carries a stable code. Code ranges by stage:

  R1xx  reading the file (bytes, encoding, line endings, shebang, directive tokenizing, body grammar)
  O2xx  sbatch options and job resolution (unknown/ambiguous options, invalid values, conflicts)
  L3xx  launch-line analysis (launchers, containers, Slurm variables used)
  P4xx  trainer plan findings (what Kubernetes does differently, what was dropped)
  F5xx  site profiles
  M6xx  bulk migration (discovery, I/O, worker failures)
  V7xx  TrainJob validation against the CRD

Every code that appears in the source is documented in docs/codes.md (a test checks it).
"""

from __future__ import annotations

from dataclasses import dataclass

from translator.records import FrozenRecord, _set

ERROR = "error"
WARNING = "warning"
INFO = "info"
SEVERITIES = (ERROR, WARNING, INFO)


@dataclass(init=False, repr=False, eq=False)
class Diagnostic(FrozenRecord):
    """A message about the input, tied to a line (1-based) where one applies.

    Used for reader/option diagnostics (`inspect`) and, as `Finding`, for plan findings (`convert`).
    """

    severity: str
    code: str
    message: str
    line: int | None = None
    suggestion: str | None = None

    def __init__(self, severity: str, code: str, message: str, line: int | None = None, suggestion: str | None = None):
        _set(self, "severity", severity)
        _set(self, "code", code)
        _set(self, "message", message)
        _set(self, "line", line)
        _set(self, "suggestion", suggestion)

    def to_json(self) -> dict:
        """The `inspect --json` contract form: severity, line, code, message."""
        return {"severity": self.severity, "line": self.line, "code": self.code, "message": self.message}

    def format(self, path: str) -> str:
        """`path:line: severity CODE message` (the form compilers use; editors can jump to it)."""
        where = f"{path}:{self.line}" if self.line is not None else path
        text = f"{where}: {self.severity} {self.code} {self.message}"
        if self.suggestion:
            text += f" (fix: {self.suggestion})"
        return text


# A plan finding is the same data: severity, stable code, source line, message, suggestion.
Finding = Diagnostic


def has_errors(diags) -> bool:
    return any(d.severity == ERROR for d in diags)
