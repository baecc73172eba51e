"""Deriving a release's cells from its rules and the upstream facts.

The release file says what it wants (a support table, or versions x accelerators within
constraints); the facts say what exists upstream. Everything explicitly asked for must exist
(an impossible combination is an error naming file and line); constraints just filter.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from packaging.version import Version

from ..model import Arch, Cell, Framework, ReleaseInfo, python_specific
from ..naming import accelerator
from .facts import Facts, ResolvedBuild
from .located_yaml import LocatedData
from .schema import FrameworkRules, ReleaseFile, SupportEntry


@dataclass(frozen=True)
class _Want:
    version: str
    accelerator: str | None  # None: any accelerator the rules allow (product mode)
    pythons: tuple[str, ...] | None  # explicit (strict) or None
    arches: tuple[str, ...] | None  # explicit (strict) or None
    path: tuple


def nearest_versions(version: str, known: list[str], n: int = 3) -> list[str]:
    """Known versions closest to `version`: same major.minor first, then by distance."""
    want = Version(version).release + (0, 0, 0)

    def distance(v: str) -> tuple:
        r = Version(v).release + (0, 0, 0)
        return (r[0] != want[0], abs(r[0] - want[0]), r[1] != want[1], abs(r[1] - want[1]), abs(r[2] - want[2]), v)

    return sorted(known, key=distance)[:n]


def _fmt_builds(builds: tuple[ResolvedBuild, ...]) -> str:
    return "; ".join(f"{b.accelerator} {b.arch.value} (Python {', '.join(b.pythons)})" for b in builds)


class Deriver:
    def __init__(self, model: ReleaseFile, loc: LocatedData, facts: Facts, info: ReleaseInfo) -> None:
        self.model, self.loc, self.facts, self.info = model, loc, facts, info
        self.problems: list[str] = []
        self.cells: list[Cell] = []
        self._cell_where: dict[str, str] = {}

    def err(self, path: tuple, message: str) -> None:
        self.problems.append(f"{self.loc.where(path)}: {message}")

    def run(self) -> list[Cell]:
        m = self.model
        self._no_duplicates(("pythons",), m.pythons)
        self._no_duplicates(("arches",), m.arches)
        self._no_duplicates(("release", "docker_os_types"), m.release.docker_os_types)
        for fw_name, rules in m.frameworks.items():
            fw = Framework(fw_name)
            for section in ("platform", "repair_platform"):
                if fw_name not in getattr(m.wheel_tags, section):
                    self.err(("wheel_tags", section), f"wheel_tags.{section} has no entry for {fw_name}; add `{fw_name}: \"<tag>_{{arch}}\"`")
            self._framework(fw, rules, ("frameworks", fw_name))
        return self.cells

    # -- one framework -------------------------------------------------------------------------------

    def _framework(self, fw: Framework, rules: FrameworkRules, base: tuple) -> None:
        release_pythons = set(self.model.pythons)
        py_constraint = rules.pythons or self.model.pythons
        arch_constraint = rules.arches or self.model.arches
        if rules.pythons:
            self._no_duplicates(base + ("pythons",), rules.pythons)
            for i, p in enumerate(rules.pythons):
                if p not in release_pythons:
                    self.err(base + ("pythons", i), f"Python {p} is not one of the release's pythons ({', '.join(self.model.pythons)})")
        if rules.env_pythons:
            self._no_duplicates(base + ("env_pythons",), rules.env_pythons)
            if python_specific(fw):
                self.err(base + ("env_pythons",), f"{fw.value} wheels are CPython-specific: use `pythons`, not `env_pythons`")
        wants: list[_Want] = []
        if rules.support is not None:
            for accel, items in rules.support.items():
                seen: dict[str, int] = {}
                for i, item in enumerate(items):
                    entry = item if isinstance(item, SupportEntry) else SupportEntry(version=item)
                    path = base + ("support", accel, i)
                    if entry.version in seen:
                        self.err(path, f"duplicate entry {fw.value} {entry.version} under {accel} (also item {seen[entry.version] + 1}); remove one")
                        continue
                    seen[entry.version] = i
                    wants.append(_Want(entry.version, accel, tuple(entry.pythons) if entry.pythons else None,
                                       tuple(entry.arches) if entry.arches else None, path))
        else:
            assert rules.versions is not None
            self._no_duplicates(base + ("versions",), rules.versions)
            for i, v in enumerate(dict.fromkeys(rules.versions)):
                wants.append(_Want(v, None, None, None, base + ("versions", rules.versions.index(v))))
        before = len(self.cells)
        for want in wants:
            self._want(fw, rules, want, py_constraint, arch_constraint, base)
        self._exclude(fw, rules, base, before)

    def _want(self, fw: Framework, rules: FrameworkRules, want: _Want, py_constraint, arch_constraint, base) -> None:
        builds = self.facts.of(fw, want.version)
        if builds is None:
            known = self.facts.versions(fw)
            near = nearest_versions(want.version, known)
            hint = f"nearest known: {', '.join(near)}" if near else f"known: {', '.join(known)}"
            self.err(want.path, f"{fw.value} {want.version} is not in the facts ({self.facts.files[fw].name}); {hint}. "
                                "Add its upstream builds there first, with a source")
            return
        if want.accelerator is not None:
            matching = tuple(b for b in builds if b.accelerator == want.accelerator)
            if not matching:
                self.err(want.path, f"{fw.value} {want.version} never had a {want.accelerator} build upstream "
                                    f"(it had: {_fmt_builds(builds)})")
                return
        else:
            matching = tuple(b for b in builds if self._accelerator_allowed(rules, b))
            if not matching:
                self.err(want.path, f"{fw.value} {want.version} has no build within the accelerators "
                                    f"{self._accel_text(rules)} (it had: {_fmt_builds(builds)})")
                return
        if want.arches:
            for a in want.arches:
                if not any(b.arch.value == a for b in matching):
                    self.err(want.path, f"{fw.value} {want.version} {want.accelerator or ''} has no {a} wheel upstream "
                                        f"(builds: {_fmt_builds(matching)})".replace("  ", " "))
            arch_ok = set(want.arches)
        else:
            arch_ok = set(arch_constraint)
        made = 0
        for b in matching:
            if b.arch.value not in arch_ok:
                continue
            if want.pythons:
                missing = [p for p in want.pythons if p not in b.pythons]
                if missing:
                    self.err(want.path, f"{fw.value} {want.version} {b.accelerator} {b.arch.value} has no wheel for Python "
                                        f"{', '.join(missing)} upstream (it has {', '.join(b.pythons)}; source: {b.source})")
                    continue
                pythons = list(want.pythons)
            else:
                pythons = [p for p in py_constraint if p in b.pythons]
            if not pythons:
                continue
            made += self._cells_for(fw, rules, b, pythons, want.path, base)
        if made == 0 and not any(p.startswith(self.loc.where(want.path)) for p in self.problems):
            self.err(want.path, f"{fw.value} {want.version} gives no cell: its upstream builds ({_fmt_builds(matching)}) "
                                f"miss the release's Pythons {', '.join(py_constraint)} / arches {', '.join(sorted(arch_ok))}")

    def _cells_for(self, fw: Framework, rules: FrameworkRules, b: ResolvedBuild, pythons: list[str], path, base) -> int:
        if python_specific(fw):
            per_cell = [(p, (p,)) for p in sorted(pythons, key=Version)]
        else:
            if rules.env_pythons:
                missing = [p for p in rules.env_pythons if p not in b.pythons]
                if missing:
                    self.err(base + ("env_pythons",), f"{fw.value} {b.version} ({b.accelerator}, {b.arch.value}) does not run on "
                                                     f"Python {', '.join(missing)} upstream (it supports {', '.join(b.pythons)}; "
                                                     f"source: {b.source})")
                    return 0
                env = tuple(rules.env_pythons)
            else:
                env = tuple(sorted(pythons, key=Version))
            per_cell = [(None, env)]
        n = 0
        for python, env in per_cell:
            cell = Cell(
                release=self.info,
                release_version=self.info.version,
                framework=fw,
                framework_version=b.version,
                cuda=b.cuda,
                python=python,
                arch=b.arch,
                env_pythons=env,
                build=b.build,
            )
            where = self.loc.where(path)
            if cell.key in self._cell_where:
                self.err(path, f"duplicate cell {cell.key} (also from {self._cell_where[cell.key]})")
                continue
            self._cell_where[cell.key] = where
            self.cells.append(cell)
            n += 1
        return n

    # -- helpers --------------------------------------------------------------------------------------

    @staticmethod
    def _accelerator_allowed(rules: FrameworkRules, b: ResolvedBuild) -> bool:
        acc = rules.accelerators
        assert acc is not None
        if b.cuda is None:
            return acc.cpu
        if acc.cuda is None:
            return False
        return Version(acc.cuda.min) <= Version(b.cuda) <= Version(acc.cuda.max)

    @staticmethod
    def _accel_text(rules: FrameworkRules) -> str:
        acc = rules.accelerators
        parts = []
        if acc and acc.cuda:
            parts.append(f"CUDA {acc.cuda.min}-{acc.cuda.max}")
        if acc and acc.cpu:
            parts.append("cpu")
        return " + ".join(parts) or "(none)"

    def _exclude(self, fw: Framework, rules: FrameworkRules, base: tuple, start: int) -> None:
        for i, rule in enumerate(rules.exclude):
            def fits(c: Cell) -> bool:  # every field but the Python
                accel = accelerator(c.cuda)
                return ((rule.version is None or c.framework_version == rule.version)
                        and (rule.accelerator is None or accel == rule.accelerator)
                        and (rule.arch is None or c.arch.value == rule.arch))

            kept: list[Cell] = []
            matched = 0
            for c in self.cells[start:]:
                if not fits(c) or (rule.python is not None and rule.python not in (c.python, *c.env_pythons)):
                    kept.append(c)
                    continue
                matched += 1
                if rule.python is not None and c.python is None:
                    # a Python-independent cell loses one environment, not the wheel
                    env = tuple(p for p in c.env_pythons if p != rule.python)
                    if env:
                        kept.append(replace(c, env_pythons=env))
            if not matched:
                self.err(base + ("exclude", i), "this exclude rule matches no cell; remove it or fix its fields")
            self.cells[start:] = kept

    def _no_duplicates(self, path: tuple, values: list) -> None:
        first: dict = {}
        for i, v in enumerate(values):
            if v in first:
                self.err(path + (i,), f"duplicate entry {v!r} (first on line {self.loc.line_of(path + (first[v],))}); remove one")
            else:
                first[v] = i
