"""`aiacc-build caffe`: BVLC Caffe with the manual's patches and libperseus-caffe, built here."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console

from ..matrix import default_release
from ..paths import REPO_ROOT
from . import package, steps

console = Console(stderr=True)


@click.group("caffe")
def caffe_group() -> None:
    """BVLC Caffe 99bd997 (Debian bullseye's signature-checked source) with recipes/caffe/patches and
    libperseus-caffe (native/bindings/caffe)."""


@caffe_group.command("source")
def source_cmd() -> None:
    """Fetch and check the source (tarball sha256, every file against recipes/caffe/source.sha256); print its folder."""
    click.echo(steps.source().output)


@caffe_group.command("build")
@click.option("--release", default="2.0.0", show_default=True, help="Release libperseus-caffe is built for.")
@click.option("--patches", default="1 2 3", show_default=True, help="Which patches/bvlc_caffe/N_*.patch, in order.")
@click.option("-j", "--jobs", default=2, show_default=True, help="Parallel compile jobs.")
@click.option("--no-deps", is_flag=True, help="Do not apt-get install the Debian build dependencies.")
@click.option("--cudnn-layer", is_flag=True,
              help="Also compile patch 2's cuDNN layer alone with nvcc against PyPI's cuDNN headers (~1 GB of wheels).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable summary.")
def build_cmd(release: str, patches: str, jobs: int, no_deps: bool, cudnn_layer: bool, as_json: bool) -> None:
    """Build libperseus-caffe and then Caffe CPU_ONLY with ccache into .cache/caffe (unchanged inputs: a no-op)."""
    results = [] if no_deps else [steps.install_deps()]
    results.append(steps.gloo())
    results.append(steps.library(release, results[-1].output, jobs))
    results.append(steps.caffe(results[-1].output, jobs, patches))
    caffe_dir = results[-1].output
    if cudnn_layer:
        results.append(steps.cudnn_layer(caffe_dir))
    summary = {r.name: {"seconds": round(r.seconds, 2), "output": r.output} for r in results}
    if as_json:
        click.echo(json.dumps(summary, indent=2))
        return
    for r in results:
        console.print(f"{r.name:<20} {r.seconds:8.1f} s  {r.output}")
    click.echo(f"{caffe_dir}/tools/caffe")


@caffe_group.command("library")
@click.option("--release", default=None, help="Release libperseus-caffe is built for (default: the newest).")
@click.option("-j", "--jobs", default=2, show_default=True, help="Parallel compile jobs.")
def library_cmd(release: str | None, jobs: int) -> None:
    """Build libperseus-caffe (and Gloo, by its recipe) into .cache/caffe/perseus-caffe-<release>/install, without
    Caffe itself: what `caffe package` publishes. Unchanged inputs: seconds. Prints the install prefix."""
    release = release or default_release()
    results = [steps.gloo()]
    results.append(steps.library(release, results[-1].output, jobs))
    for r in results:
        console.print(f"{r.name:<20} {r.seconds:8.1f} s  {r.output}", soft_wrap=True)
    click.echo(results[-1].output)


@caffe_group.command("package")
@click.option("--release", default=None, help="Release (default: the newest).")
@click.option("--dist", "dist_dir", type=click.Path(file_okay=False), default=None,
              help="Output root (default dist/): files go to <dist>/<release>/caffe/.")
def package_cmd(release: str | None, dist_dir: str | None) -> None:
    """The release's Caffe artifacts: the patches and the libperseus-caffe archive of this platform (after
    `caffe library` or `caffe build`); `aiacc-build index` then lists them in manifest.json and SHA256SUMS."""
    release = release or default_release()
    prefix = steps.CACHE_DIR / f"perseus-caffe-{release}" / "install"
    out = (Path(dist_dir) if dist_dir else REPO_ROOT / "dist") / release
    for path in package.write_artifacts(release, prefix, out):
        click.echo(path)


def register(cli: click.Group) -> None:
    cli.add_command(caffe_group)
