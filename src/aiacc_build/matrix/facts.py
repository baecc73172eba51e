"""Upstream facts: which builds each framework version had, resolved per architecture.

Hand-written facts (matrix/facts/<framework>.yaml, each with a cited source) are merged with the
registry facts that `matrix sync` writes (matrix/facts/pypi.yaml): `pythons: pypi` and
`accelerator: pypi` are filled from the registry, and a hand-written CUDA that contradicts what the
registry's Requires-Dist pins is an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

from ..errors import MatrixError
from .. import naming
from ..model import Arch, Framework, FrameworkBuild
from .files import read_model
from .schema import BuildFact, FactsFile, RegistryFile



def facts_file(framework: Framework) -> str:
    """`matrix/facts/<framework>.yaml`: the cited upstream facts of one framework."""
    return f"{framework.value}.yaml"


def _frameworks_with_facts(facts_dir: Path) -> list[Framework]:
    """The registered frameworks that have a facts file (a release naming another one fails in derive)."""
    return [fw for fw in Framework if (facts_dir / facts_file(fw)).is_file()]
REGISTRY_FILE = "pypi.yaml"


def registry_key(requirement: str) -> tuple[str, str]:
    """('torch', '1.7.1') for 'torch==1.7.1+cu110'; extras are part of the name: 'tensorflow[and-cuda]'."""
    req = Requirement(requirement)
    name = req.name.lower().replace("_", "-").replace(".", "-")
    if req.extras:
        name += "[" + ",".join(sorted(req.extras)) + "]"
    (spec,) = req.specifier
    return name, Version(spec.version).public


@dataclass(frozen=True)
class ResolvedBuild:
    """One upstream build for one architecture, with everything a cell needs from it."""

    framework: Framework
    version: str
    accelerator: str  # "cuda11.0" or "cpu"
    arch: Arch
    pythons: tuple[str, ...]
    build: FrameworkBuild
    source: str  # the citation text
    where: str  # file:line of the build in the facts file

    @property
    def cuda(self) -> str | None:
        return None if self.accelerator == "cpu" else self.accelerator[len("cuda") :]


@dataclass(frozen=True)
class Facts:
    builds: dict[tuple[Framework, str], tuple[ResolvedBuild, ...]]  # (framework, version) -> builds
    files: dict[Framework, Path]

    def versions(self, framework: Framework) -> list[str]:
        return [v for (fw, v) in self.builds if fw is framework]

    def of(self, framework: Framework, version: str) -> tuple[ResolvedBuild, ...] | None:
        return self.builds.get((framework, version))


def pending_registry_requests(facts_dir: Path) -> list[tuple[str, str, str, tuple[Arch, ...]]]:
    """(requirement, registry name, version, arches) of every build whose facts come from the registry."""
    wanted = []
    for fw in _frameworks_with_facts(facts_dir):
        model, _ = read_model(facts_dir / facts_file(fw), FactsFile)
        for vf in model.versions.values():
            for b in vf.builds:
                if b.pythons == "pypi" or b.accelerator == "pypi":
                    name, version = registry_key(b.requirement)
                    wanted.append((b.requirement, name, version, tuple(Arch(a) for a in b.arches)))
    return wanted


def load_facts(facts_dir: Path) -> Facts:
    problems: list[str] = []
    registry_path = facts_dir / REGISTRY_FILE
    registry, registry_loc = read_model(registry_path, RegistryFile)
    builds: dict[tuple[Framework, str], tuple[ResolvedBuild, ...]] = {}
    files: dict[Framework, Path] = {}
    for fw in _frameworks_with_facts(facts_dir):
        path = facts_dir / facts_file(fw)
        files[fw] = path
        model, loc = read_model(path, FactsFile)
        if model.framework != fw.value:
            problems.append(f"{loc.where(('framework',))}: this file holds {fw.value} facts, not {model.framework!r}")
        for version, vf in model.versions.items():
            resolved: list[ResolvedBuild] = []
            for i, b in enumerate(vf.builds):
                where_path = ("versions", version, "builds", i)
                resolved.extend(_resolve(fw, version, b, model, registry, loc.where(where_path), problems))
            seen: dict[tuple[str, Arch], str] = {}
            for r in resolved:
                k = (r.accelerator, r.arch)
                if k in seen:
                    problems.append(
                        f"{r.where}: {fw.value} {version} has two {r.accelerator} builds for {r.arch.value} "
                        f"(the other at {seen[k]}); keep one"
                    )
                seen[k] = r.where
            builds[(fw, version)] = tuple(resolved)
    if problems:
        raise MatrixError(problems)
    return Facts(builds=builds, files=files)


def _resolve(
    fw: Framework, version: str, b: BuildFact, model: FactsFile, registry: RegistryFile, where: str, problems: list[str]
) -> list[ResolvedBuild]:
    name, reg_version = registry_key(b.requirement)
    if reg_version != version and not reg_version.startswith(version + ".post"):
        problems.append(f"{where}: requirement {b.requirement!r} is not a build of {fw.value} {version}")
    source = model.sources.get(b.source, b.source)
    if b.source not in model.sources and "://" not in b.source:
        problems.append(f"{where}: source {b.source!r} is neither a key of 'sources' nor a URL")
    out = []
    for arch_name in b.arches:
        arch = Arch(arch_name)
        reg = None
        if b.pythons == "pypi" or b.accelerator == "pypi":
            rel = registry.packages.get(name, {}).get(reg_version)
            reg = rel.wheels.get(arch_name) if rel else None
            if reg is None:
                problems.append(
                    f"{where}: the registry facts (matrix/facts/pypi.yaml) have no {arch_name} wheel of {name} "
                    f"{reg_version}; run `aiacc-build matrix sync --write`, or fix the arches of this build"
                )
                continue
        pythons = tuple(reg.pythons) if b.pythons == "pypi" else tuple(b.pythons)  # type: ignore[union-attr]
        if not pythons:
            problems.append(f"{where}: no Python is known for {b.requirement} on {arch_name}; list `pythons` explicitly")
            continue
        if b.accelerator == "pypi":
            accelerator = naming.accelerator(reg.requires_cuda)  # type: ignore[union-attr]
        else:
            accelerator = b.accelerator
            # only the registry's own build can contradict (a `+cu110`/`+cpu` build shares just its Pythons)
            same_build = b.index_url is None
            if same_build and reg is not None and reg.requires_cuda is not None and accelerator != naming.accelerator(reg.requires_cuda):
                problems.append(
                    f"{where}: {b.requirement} is declared {accelerator} but its registry metadata pins CUDA "
                    f"{reg.requires_cuda} ({reg.evidence})"
                )
        out.append(
            ResolvedBuild(
                framework=fw,
                version=version,
                accelerator=accelerator,
                arch=arch,
                pythons=tuple(sorted(set(pythons), key=Version)),
                build=FrameworkBuild(
                    requirement=b.requirement, index_url=b.index_url, cuda_variant=b.cuda_variant, cxx11_abi=b.cxx11_abi
                ),
                source=source,
                where=where,
            )
        )
    return out
