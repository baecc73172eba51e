"""The matrix API other modules use: load_release, load_all, select_cells."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import MatrixError, UnsupportedCellError
from ..model import Arch, CaffeArtifacts, Cell, Framework, MxnetSourcePatch, ReleaseInfo, WheelTagRules
from ..paths import facts_dir as matrix_facts_dir, releases_dir as matrix_releases_dir
from .derive import Deriver
from .facts import Facts, load_facts
from .files import read_model
from .schema import ReleaseFile


@dataclass(frozen=True)
class Release:
    info: ReleaseInfo
    cells: tuple[Cell, ...]
    source: Path


def release_info(model: ReleaseFile) -> ReleaseInfo:
    r, t = model.release, model.wheel_tags
    return ReleaseInfo(
        version=r.version,
        cibuildwheel=r.cibuildwheel,
        manylinux_image=r.manylinux_image,
        docker_os_types=tuple(r.docker_os_types),
        local_os_type=r.local_os_type,
        mirror_url=r.mirror_url,
        docker_registry=r.docker_registry,
        docker_image=r.docker_image,
        docker_tag_suffix=r.docker_tag_suffix,
        conda_dir=r.conda_dir,
        wheel_tags=WheelTagRules(
            independent_python_tag=t.independent_python_tag,
            platform={Framework(k): v for k, v in t.platform.items()},
            repair_platform={Framework(k): v for k, v in t.repair_platform.items()},
        ),
        caffe=None if model.caffe is None else CaffeArtifacts(
            upstream_commit=model.caffe.upstream_commit,
            patches=tuple(model.caffe.patches),
            platforms=tuple(model.caffe.platforms),
            gpu_toolkit=model.caffe.gpu_toolkit,
        ),
        mxnet_patch=None if model.mxnet_patch is None else MxnetSourcePatch(
            upstream_version=model.mxnet_patch.upstream_version,
            upstream_commit=model.mxnet_patch.upstream_commit,
            patch=model.mxnet_patch.patch,
        ),
    )


_facts_cache: dict[tuple, Facts] = {}


def _facts(facts_dir: Path) -> Facts:
    files = sorted(facts_dir.glob("*.yaml"))
    key = (str(facts_dir),) + tuple((str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in files)
    if key not in _facts_cache:
        _facts_cache.clear()
        _facts_cache[key] = load_facts(facts_dir)
    return _facts_cache[key]


def release_path(version_or_path: str | Path) -> Path:
    p = Path(version_or_path)
    if p.suffix in (".yaml", ".yml") or p.is_file():
        return p
    folder = matrix_releases_dir()
    candidate = folder / f"{version_or_path}.yaml"
    if not candidate.is_file():
        known = ", ".join(sorted(f.stem for f in folder.glob("*.yaml"))) or "none"
        raise UnsupportedCellError(f"no release {version_or_path!r} in {folder} (known releases: {known})")
    return candidate


def load_release(version_or_path: str | Path, facts_dir: Path | None = None, text: str | None = None) -> Release:
    """Load and validate one release file; raise MatrixError (file:line per problem) if it is invalid."""
    path = release_path(version_or_path)
    model, loc = read_model(path, ReleaseFile, text=text)
    facts = _facts(facts_dir or matrix_facts_dir())
    info = release_info(model)
    deriver = Deriver(model, loc, facts, info)
    if path.stem != model.release.version and path.suffix in (".yaml", ".yml"):
        deriver.err(("release", "version"), f"the file {path.name} declares release {model.release.version!r}; "
                                           f"name the file {model.release.version}.yaml or fix the version")
    cells = deriver.run()
    if deriver.problems:
        raise MatrixError(deriver.problems)
    return Release(info=info, cells=tuple(cells), source=path)


def load_all(releases_dir: Path | None = None) -> list[Release]:
    """Every release in the matrix's releases/ (paths.matrix_dir), sorted by version; all problems of all files at once."""
    from packaging.version import Version

    folder = releases_dir or matrix_releases_dir()
    releases, problems = [], []
    for f in sorted(folder.glob("*.yaml")):
        try:
            releases.append(load_release(f))
        except MatrixError as exc:
            problems.extend(exc.problems)
    if problems:
        raise MatrixError(problems)
    return sorted(releases, key=lambda r: Version(r.info.version))


def default_release() -> str:
    """The newest release in matrix/releases: what a command acts on when --release is not given."""
    return load_all()[-1].info.version


def _norm_cuda(cuda: str) -> str | None:
    c = cuda.strip().lower()
    if c == "cpu":
        return None
    c = c.removeprefix("cuda").removeprefix("cu")
    if "." not in c and c.isdigit() and len(c) >= 3:  # "110" -> "11.0", "102" -> "10.2", "130" -> "13.0"
        c = f"{c[:-1]}.{c[-1]}"
    return c


def select_cells(
    cells,
    framework: str | Framework | None = None,
    framework_version: str | None = None,
    cuda: str | None = None,
    python: str | None = None,
    arch: str | Arch | None = None,
) -> list[Cell]:
    """Filter cells. cuda="cpu" selects CPU cells; "11.0", "cuda11.0", "cu110" all mean CUDA 11.0.

    A Python-independent cell matches `python` when that Python is one of its env_pythons.
    """
    fw = Framework(framework) if framework is not None else None
    ar = Arch(arch) if arch is not None else None
    want_cuda = _norm_cuda(cuda) if cuda is not None else None
    out = []
    for c in cells:
        if fw is not None and c.framework is not fw:
            continue
        if framework_version is not None and c.framework_version != framework_version:
            continue
        if cuda is not None and c.cuda != want_cuda:
            continue
        if python is not None and not (c.python == python or (c.python is None and python in c.env_pythons)):
            continue
        if ar is not None and c.arch is not ar:
            continue
        out.append(c)
    return out
