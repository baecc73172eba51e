"""The rules one conda environment file must keep, against the committed channel table.

Conda's strict channel priority is assumed (conda-forge's recommendation and the default of
micromamba / conda >= 23.10 with `channel_priority: strict`): a package comes from the FIRST listed
channel that carries it at all, so a version that exists only on a later channel is not installable.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import Version as PyVersion
from rattler import MatchSpec, Version, VersionSpec

from .. import naming
from ..adapters import all_adapters
from ..model import Cell
from ..render.conda import adapter_companions
from .conda_env import EnvFile
from ..conda_table import CondaTable, Package, pin
from .findings import Finding

NODEFAULTS = "nodefaults"
USE_COMMAND = "CONDA_DEFAULT_CHANNELS=conda-forge conda env create -f {filename}"
PIP_OPTIONS = ("--extra-index-url", "--index-url", "--find-links", "-f", "--trusted-host")


@dataclass(frozen=True)
class Spec:
    text: str
    name: str
    version: str | None  # rattler's version spec, e.g. "11.0.*"
    channel: str | None  # an explicit `channel::name`


@dataclass(frozen=True)
class Expected:
    """What the file must say for its cells: the architecture variants of one cell, one Python."""

    variants: tuple[Cell, ...]
    python: str

    @property
    def cell(self) -> Cell:
        return self.variants[0]


def _matches(version_spec: str | None, versions: tuple[str, ...]) -> bool:
    if version_spec is None:
        return bool(versions)
    spec = VersionSpec(version_spec)
    return any(spec.matches(Version(v)) for v in versions)


class EnvChecker:
    """Checks one parsed environment file; `findings` collects what it breaks."""

    def __init__(self, env: EnvFile, table: CondaTable, expected: Expected | None):
        self.env = env
        self.table = table
        self.expected = expected
        self.findings: list[Finding] = []
        self.specs: dict[str, Spec] = {}

    def fail(self, rule: str, subject: str, message: str) -> None:
        self.findings.append(Finding(self.env.path, rule, subject, message))

    def run(self) -> list[Finding]:
        self._name()
        self._parse_specs()
        self._channels()
        for spec in self.specs.values():
            self._availability(spec)
        self._python()
        self._cuda_conventions()
        for adapter in all_adapters():
            adapter.check_conda(self)
        self._pip_lines()
        self._use_line()
        if self.expected is not None:
            self._matches_cells()
        return self.findings

    # --- structure -------------------------------------------------------------------------------

    def _name(self) -> None:
        stem = self.env.path.rsplit("/", 1)[-1].removesuffix(".yaml")
        if self.env.name != stem:
            self.fail("env-name", "name", f"the environment is named {self.env.name!r} but the file {stem!r}: `conda env create -f` users expect the same")

    def _parse_specs(self) -> None:
        for text in self.env.specs:
            try:
                match = MatchSpec(text)
            except Exception as exc:  # rattler raises its own exception types per problem
                self.fail("match-spec", text, f"not a valid conda match spec: {exc}")
                continue
            name = match.name.normalized
            if name in self.specs:
                self.fail("duplicate-spec", name, f"{name} is listed twice ({self.specs[name].text!r} and {text!r})")
                continue
            channel = match.channel.name if match.channel is not None else None
            self.specs[name] = Spec(text, name, match.version, channel)

    def _channels(self) -> None:
        if NODEFAULTS in self.env.channels:
            self.fail(
                "nodefaults-refused",
                "channels",
                "the file lists `nodefaults`: conda >= 26.7 (`conda env create` is `conda create` there) reads it as "
                "a channel name and refuses the file (UnavailableInvalidChannel); drop it and keep defaults out with "
                "CONDA_DEFAULT_CHANNELS=conda-forge, as the file's header says (CONDA_CHANNELS is merged with the "
                "configured channels and keeps nothing out)",
            )
        if "defaults" in self.env.channels:
            self.fail("defaults-channel", "defaults", "Anaconda's defaults channel is not in the table (other terms of use, "
                      "a terms-of-service prompt): list conda-forge instead")
        for channel in self.env.channels:
            if channel not in (NODEFAULTS, "defaults") and channel not in self.table.channels:
                self.fail("unknown-channel", channel, f"channel {channel!r} is not in the table ({self.table.path}); known: {', '.join(self.table.channels)}")

    # --- every package on a listed channel, in the pinned version ----------------------------------

    def _listed(self) -> list[str]:
        return [c for c in self.env.channels if c in self.table.channels]

    def provider(self, name: str) -> tuple[str, Package] | None:
        """The channel conda takes `name` from (strict priority) and the table's entry there."""
        spec = self.specs.get(name)
        candidates = [spec.channel] if spec is not None and spec.channel else self._listed()
        for channel in candidates:
            package = self.table.channels.get(channel)
            if package is not None and name in package.packages:
                return channel, package.packages[name]
        return None

    def _availability(self, spec: Spec) -> None:
        if spec.name in self.table.conventions.pip_only:
            self.fail("pip-only", spec.name, f"{spec.name} comes from pip in our environments (see the table's pip-only-frameworks source), not from conda")
            return
        found = self.provider(spec.name)
        if found is None:
            elsewhere = self.table.channels_with(spec.name)
            hint = f"the table has it on: {', '.join(elsewhere)}" if elsewhere else "the table knows no channel with it"
            self.fail("package-not-on-channel", spec.name, f"no listed channel ({', '.join(self.env.channels)}) carries {spec.name}; {hint}")
            return
        channel, package = found
        if package.not_our_convention:
            self.fail("not-our-convention", spec.name, f"{spec.name} would come from {channel}: {package.not_our_convention}")
            return
        for needed in package.requires_channels:
            if needed not in self.env.channels:
                self.fail("requires-channel", spec.name, f"{spec.name} from {channel} installs packages from the {needed} channel, which the file does not list")
        if package.any_version or _matches(spec.version, package.all_versions()):
            return
        removed = package.removed
        if removed is not None and _matches(spec.version, removed.versions):
            self.fail(
                "version-removed",
                spec.text,
                f"{spec.name} {pin(spec)} was removed from channel {channel} ({self.table.source_url(removed.source)})",
            )
            return
        later = [c for c in self._listed() if c != channel and spec.name in self.table.channels[c].packages and _matches(spec.version, self.table.channels[c].packages[spec.name].all_versions())]
        if later:
            self.fail(
                "channel-priority",
                spec.text,
                f"strict channel priority takes {spec.name} from {channel}, which has no {pin(spec)}; {', '.join(later)} has it: list it first",
            )
            return
        self.fail(
            "version-not-on-channel",
            spec.text,
            f"channel {channel} has no {spec.name} {pin(spec)} (it has {', '.join(package.all_versions()) or 'none'}; source: {self.table.source_url(package.source)})",
        )

    # --- conventions -------------------------------------------------------------------------------

    def _python(self) -> None:
        python = self.specs.get("python")
        if python is None or python.version is None:
            self.fail("python-pin", "python", "the file must pin the Python minor version (`python=3.X`): the Perseus wheels are built per Python")
        if "pip" not in self.specs:
            self.fail("pip-missing", "pip", "the file has a pip section but does not install pip from conda")

    def _cuda_conventions(self) -> None:
        toolkit, cuda_version = self.specs.get("cudatoolkit"), self.specs.get("cuda-version")
        last = PyVersion(self.table.conventions.cudatoolkit_last)
        toolkit_pin = pin(toolkit)
        if toolkit_pin and PyVersion(toolkit_pin) > last:
            self.fail(
                "era-cudatoolkit",
                toolkit.text,
                f"CUDA {toolkit_pin} has no cudatoolkit package (its last is {last}): pin `cuda-version={toolkit_pin}` instead",
            )
        if toolkit and cuda_version and pin(toolkit) != pin(cuda_version):
            self.fail("cuda-pin-mismatch", "cuda", f"cudatoolkit={pin(toolkit)} and cuda-version={pin(cuda_version)} pin two CUDA versions")
        if toolkit and "pytorch-cuda" in self.specs:
            self.fail("era-pytorch-cuda", "cudatoolkit", "pytorch-cuda and cudatoolkit pin CUDA twice: PyTorch's channel uses one or the other, by release")
        if "cudnn" in self.specs:
            cuda = pin(toolkit) or pin(cuda_version)
            cudnn = self.provider("cudnn")
            if cuda is None:
                self.fail("cudnn-without-cuda", "cudnn", "cudnn without a pinned CUDA (cudatoolkit / cuda-version) lets conda pick any toolkit")
            elif cudnn is not None and cudnn[1].cuda and cuda not in cudnn[1].cuda:
                self.fail("cudnn-cuda", "cudnn", f"{cudnn[0]} has no cudnn build for CUDA {cuda}")

    def _pip_lines(self) -> None:
        for line in self.env.pip:
            option = line.split(maxsplit=1)
            if line.startswith("-"):
                if option[0] not in PIP_OPTIONS or len(option) != 2:
                    self.fail("pip-line", line, f"not a pip option environment files support ({', '.join(PIP_OPTIONS)} URL)")
                continue
            if line.startswith(("https://", "http://")):
                if not line.endswith(".whl") or " " in line:
                    self.fail("pip-line", line, "a bare URL line must name one .whl file")
                continue
            try:
                Requirement(line)
            except InvalidRequirement as exc:
                self.fail("pip-line", line, f"not a pip requirement: {exc}")

    def _use_line(self) -> None:
        """The header's `# Use:` command: the one both conda versions run (bench/RESULTS.md, real conda 26.5.3 and
        26.7.1). A rendered file (one with cells) must have it."""
        filename = self.env.path.rsplit("/", 1)[-1]
        use = self.env.use
        if use is None:
            if self.expected is not None:
                self.fail("use-line", "header", f"no `# Use:` line: the header must say `{USE_COMMAND.format(filename=filename)}`")
            return
        if "://" in use:
            self.fail("use-line", use, "the command reads the file from a URL: conda 26.7.1 fails `conda env create -f URL` "
                      "for any file with a pip section (AttributeError in conda/env/pip_util.py get_pip_workdir, after the conda "
                      f"packages are linked); download the file first and run `{USE_COMMAND.format(filename=filename)}`")
        elif use != USE_COMMAND.format(filename=filename):
            self.fail("use-line", use, f"the header's command must be `{USE_COMMAND.format(filename=filename)}` (the file's own "
                      "name; CONDA_DEFAULT_CHANNELS keeps a configured `defaults` out)")

    # --- the file says what its cells need ---------------------------------------------------------

    def _matches_cells(self) -> None:
        expected = self.expected
        cell = expected.cell
        python = pin(self.specs.get("python"))
        if python is not None and python != expected.python:
            self.fail("cell-python", "python", f"pins Python {python}, the file is for Python {expected.python}")
        pins = {n: pin(self.specs.get(n)) for n in ("cudatoolkit", "pytorch-cuda", "cuda-version") if n in self.specs}
        if cell.cuda is None and pins:
            self.fail("cell-cuda", "cuda", f"a CPU cell's environment pins CUDA ({', '.join(f'{k}={v}' for k, v in pins.items())})")
        if cell.cuda is not None:
            if not pins:
                self.fail("cell-cuda", "cuda", f"the cell is built for CUDA {cell.cuda} but the file pins no CUDA (cudatoolkit / pytorch-cuda / cuda-version)")
            for name, value in pins.items():
                if value != cell.cuda:
                    self.fail("cell-cuda", name, f"pins {name}={value}, the cell is built for CUDA {cell.cuda}")
        from_conda = [(a, self.specs[a.conda_package]) for a in all_adapters() if a.conda_package in self.specs]
        for adapter, spec in from_conda:
            foreign = sorted({v.arch.value for v in expected.variants} - {"x86_64"})
            if foreign:
                self.fail("platform", spec.text, f"the table's {adapter.display_name} channel builds are linux-64 only; this file also serves {', '.join(foreign)}")
            if cell.framework is not adapter.framework or pin(spec) != cell.framework_version:
                self.fail("cell-framework", spec.text, f"installs {adapter.conda_package} {pin(spec)}, the cell is {cell.framework.value} {cell.framework_version}")
        if not from_conda:
            wanted = {v.build.requirement for v in expected.variants}
            present = {line.split(";", 1)[0].strip() for line in self.env.pip}
            for requirement in sorted(wanted - present):
                self.fail("cell-framework", requirement, f"neither conda nor pip installs the cell's framework build {requirement}")
        for companion in adapter_companions(cell):  # every pin the adapter declares reaches the file
            where = self.env.specs if from_conda else [line.split(";", 1)[0].strip() for line in self.env.pip]
            if companion not in where:
                self.fail("adapter-pin", companion, f"the {cell.framework.value} adapter installs {companion} next to "
                          f"{cell.build.requirement}; the file's {'dependencies' if from_conda else 'pip section'} lack it")
        text = "\n".join(self.env.pip)
        if naming.common_wheel_url(cell.release) not in text:
            self.fail("cell-wheel", naming.common_wheel_filename(cell.release),
                      f"the pip section does not install {naming.common_wheel_url(cell.release)}")
        for variant in expected.variants:
            url = naming.wheel_url(variant)
            # a mirror built outside the release's manylinux image names the platform tag its build proved
            stem, arch = url.rsplit("-", 1)[0] + "-", f"_{variant.arch.value}.whl"
            if url not in text and not any(stem in line and line.split(";", 1)[0].strip().endswith(arch) for line in self.env.pip):
                self.fail("cell-wheel", url.rsplit("/", 1)[-1], f"the pip section does not install {url}")


def check_env(env: EnvFile, table: CondaTable, expected: Expected | None) -> list[Finding]:
    return EnvChecker(env, table, expected).run()
