"""What `perseus doctor` reports: the report, its problems, the perseus wheels it found."""

from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional

INSTALLER = "install_AIACC-Training.sh"


@dataclass
class Problem:
    severity: str  # "error" (a mismatch: exit code 1) or "warning"
    what: str
    fix: str


@dataclass
class PerseusWheel:
    name: str
    version: str
    location: str
    manifest_path: Optional[str] = None
    manifest: Optional[Dict[str, Any]] = None


@dataclass
class Report:
    launch: Dict[str, Any] = field(default_factory=dict)
    driver: Dict[str, Any] = field(default_factory=dict)
    cuda_toolkit: Dict[str, Any] = field(default_factory=dict)
    frameworks: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    settings: List[Dict[str, Any]] = field(default_factory=list)  # every PERSEUS_* variable in effect
    perseus: List[PerseusWheel] = field(default_factory=list)
    tools: Dict[str, Optional[str]] = field(default_factory=dict)
    system: Dict[str, str] = field(default_factory=dict)
    problems: List[Problem] = field(default_factory=list)

    def error(self, what: str, fix: str) -> None:
        self.problems.append(Problem("error", what, fix))

    def warn(self, what: str, fix: str) -> None:
        self.problems.append(Problem("warning", what, fix))

    @property
    def ok(self) -> bool:
        return not any(p.severity == "error" for p in self.problems)

    def to_dict(self) -> Dict[str, Any]:
        d = asdict(self)
        d["ok"] = self.ok
        return d
