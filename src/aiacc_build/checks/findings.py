"""What a check reports: findings (file, rule, subject, message) and a summary per check."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ChecksFailedError

__all__ = ["ERROR", "WARNING", "ChecksFailedError", "CheckReport", "Finding"]

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True)
class Finding:
    file: str  # the checked file, relative to the dist folder where there is one
    rule: str  # short rule id, e.g. "package-not-on-channel"
    subject: str  # the package, job or line the rule is about
    message: str  # what is wrong and what would be right
    severity: str = ERROR

    def as_json(self) -> dict[str, str]:
        return {"file": self.file, "rule": self.rule, "subject": self.subject, "message": self.message, "severity": self.severity}

    def __str__(self) -> str:
        return f"{self.file}: [{self.rule}] {self.subject}: {self.message}"


@dataclass
class CheckReport:
    check: str  # "conda" or "ci"
    checked: dict[str, int] = field(default_factory=dict)  # what was checked, counted: {"files": 118, ...}
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # how it was checked, when that matters to a reader
    seconds: float = 0.0

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == WARNING]

    @property
    def ok(self) -> bool:
        return not self.errors

    def count(self, what: str, n: int = 1) -> None:
        self.checked[what] = self.checked.get(what, 0) + n

    def as_json(self) -> dict:
        return {
            "check": self.check,
            "ok": self.ok,
            "checked": self.checked,
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "findings": [f.as_json() for f in self.findings],
            "notes": self.notes,
            "seconds": round(self.seconds, 3),
        }
