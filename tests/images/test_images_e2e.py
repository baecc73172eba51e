"""End to end (opt-in: starts dockerd, debootstraps a base when it is missing, ~5 min): build the
local cell's image from the rendered Dockerfile from scratch, rebuild it unchanged (a full cache
hit), push it to a registry on 127.0.0.1, remove it, pull it by its seed-style tag, and run
`import perseus.torch` plus a 2-process perseusrun allreduce inside. Prints the figures (-s)."""

from __future__ import annotations

import json
import resource
import shutil
import time

import docker
import pytest

from aiacc_build.cli import main
from aiacc_build.images.build import pull_image, push_image
from aiacc_build.images.cli import CACHE_DIR, STATE_DIR
from aiacc_build.images.engine import start_engine
from aiacc_build.images.local import build_local_images, local_images
from aiacc_build.images.registry import start_registry
from aiacc_build.matrix import load_release
from aiacc_build.paths import DIST_DIR
from aiacc_build.render.docker import DOCKER_RUN_ARGS
from aiacc_build.render.support import BuildHost

pytestmark = pytest.mark.optin("starts dockerd and builds an image")

LOCAL_CELL = "2.0.0/torch-2.13.0/cpu/py3.11/x86_64"
HVD_CHECK = (
    "import torch, perseus.torch.horovod as hvd; hvd.init(); "
    "t = hvd.allreduce(torch.ones(4) * (hvd.rank() + 1), op=hvd.Sum); "
    "assert t.tolist() == [3.0] * 4, t; print('allreduce ok on rank', hvd.rank())"
)
# What the image must hold besides Perseus: the declared OS of its tag, the seed's container advice.
IMAGE_FACTS = (
    "import json, platform, shutil; "
    "os_release = dict(l.rstrip().split('=', 1) for l in open('/etc/os-release') if '=' in l); "
    "print(json.dumps({'os': os_release['ID'] + os_release['VERSION_ID'].strip('\"'), "
    "'python': platform.python_version(), 'perseusrun': shutil.which('perseusrun'), "
    "'readme': open('/opt/perseus/README.md').read()}))"
)


def _remove_if_present(client: docker.DockerClient, reference: str) -> None:
    try:
        client.images.remove(reference)
    except docker.errors.ImageNotFound:
        pass


def _memlock_ulimit() -> docker.types.Ulimit:
    """The seed's `--ulimit memlock=-1` where the engine may raise the limit; else the host's hard
    limit (without CAP_SYS_RESOURCE runc fails with "error setting rlimit type 8")."""
    _, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    limit = -1 if hard == resource.RLIM_INFINITY else hard
    return docker.types.Ulimit(name="memlock", soft=limit, hard=limit)


def test_build_push_pull_run(capsys, tmp_path):
    for tool in ("dockerd", "debootstrap", "docker-registry"):
        assert shutil.which(tool), f"{tool} missing: apt-get install docker.io debootstrap docker-registry"
    assert main(["render", "--release", "2.0.0"]) == 0
    assert main(["build", "--release", "2.0.0"]) == 0
    release = load_release("2.0.0")
    (image,) = local_images(release.cells, BuildHost.detect(), (LOCAL_CELL,))
    tag = image.tags[0]
    assert tag == "perseus-training:debian12-cpu-pt2.13.0-py311-latest"
    engine = start_engine(STATE_DIR)
    registry = start_registry(tmp_path / "registry")
    client = engine.client
    remote = f"{registry.address}/{tag}"
    figures: dict[str, object] = {}
    try:
        # From scratch over the (kept) base: removing the tag also removes its cached parent layers.
        _remove_if_present(client, remote)
        _remove_if_present(client, tag)
        start = time.monotonic()
        first = build_local_images(client, [image], DIST_DIR / "2.0.0", CACHE_DIR, 18765)[0]
        figures["first build_local_images wall s (wheelhouse + base + build)"] = round(time.monotonic() - start, 1)
        again = build_local_images(client, [image], DIST_DIR / "2.0.0", CACHE_DIR, 18765)[0].result
        figures |= {
            "base debootstrap+import s (null: it existed)": first.base.made_seconds and round(first.base.made_seconds, 1),
            "first build s": round(first.result.seconds, 1),
            "first build cached steps": f"{first.result.cached_steps}/{first.result.steps}",
            "unchanged rebuild s": round(again.seconds, 2),
            "rebuild cached steps": f"{again.cached_steps}/{again.steps}",
            "image MiB": round(first.result.size_bytes / 2**20),
        }
        assert first.result.cached_steps < first.result.steps
        assert again.cache_hit and again.image_id == first.result.image_id, again

        start = time.monotonic()
        assert push_image(client, tag, registry.address) == remote
        figures["push s"] = round(time.monotonic() - start, 1)
        client.images.remove(remote)
        client.images.remove(tag)
        with pytest.raises(docker.errors.ImageNotFound):
            client.images.get(tag)
        start = time.monotonic()
        assert pull_image(client, remote) == first.result.image_id
        figures["pull s"] = round(time.monotonic() - start, 1)

        pulled = client.images.get(remote)
        assert pulled.labels["perseus.docker-run-args"] == DOCKER_RUN_ARGS
        assert DOCKER_RUN_ARGS in pulled.labels["perseus.usage"]
        run = dict(remove=True, shm_size="1g", ulimits=[_memlock_ulimit()], network_mode="none")
        facts = json.loads(client.containers.run(remote, ["python", "-c", IMAGE_FACTS], **run))
        assert facts["os"] == "debian12" and tag.split(":")[1].startswith(facts["os"] + "-")
        assert facts["python"].startswith("3.11.")
        assert facts["perseusrun"] == "/opt/perseus/env/bin/perseusrun"
        assert f"docker run --gpus all {DOCKER_RUN_ARGS}" in facts["readme"]
        out = client.containers.run(remote, ["python", "-c", "import perseus.torch; print(perseus.torch.__name__)"], **run)
        assert b"perseus.torch" in out
        start = time.monotonic()
        out = client.containers.run(remote, ["perseusrun", "-np", "2", "--", "python", "-c", HVD_CHECK], stderr=True, **run)
        figures["perseusrun -np 2 s"] = round(time.monotonic() - start, 1)
        assert out.count(b"allreduce ok on rank") == 2, out.decode(errors="replace")
    finally:
        with capsys.disabled():
            print("\nimages e2e figures: " + json.dumps(figures))
        registry.stop()
        engine.stop()


def test_the_printed_run_line_works_as_printed_with_the_printed_key():
    """`build --plan-only` prints the key; `images build --cell <that key>` builds and prints `run it: ...`;
    that line, run verbatim by a shell, exits 0 (the tool's dockerd kept running, a memlock limit this engine
    accepts); `images stop` then ends the dockerd."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    tool = str(Path(sys.executable).with_name("aiacc-build"))
    env = dict(os.environ, COLUMNS="400")
    env.pop("DOCKER_HOST", None)
    assert shutil.which("docker"), "no docker client: apt-get install docker.io"
    plan = subprocess.run([tool, "build", "--release", "2.0.0", "--plan-only"], capture_output=True, text=True, env=env)
    key = next(line.split()[1].rstrip(":") for line in (plan.stdout + plan.stderr).splitlines()
               if line.split()[:1] == ["build"] and "torch-2.13.0/cpu/py3.11" in line)
    assert subprocess.run([tool, "render", "--release", "2.0.0"], env=env, stdout=subprocess.DEVNULL).returncode == 0
    assert subprocess.run([tool, "build", "--release", "2.0.0", "--cells", key], env=env).returncode == 0
    built = subprocess.run([tool, "images", "build", "--release", "2.0.0", "--cell", key], capture_output=True, text=True,
                           env=env, timeout=3600)
    try:
        assert built.returncode == 0, built.stderr[-3000:]
        (line,) = [ln.split("run it: ", 1)[1] for ln in built.stderr.splitlines() if "run it: " in ln]
        run = subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, f"{line}\n{run.stderr}"
        print("\nprinted run line (rc 0): " + line)
    finally:
        stop = subprocess.run([tool, "images", "stop"], capture_output=True, text=True, env=env)
    assert "stopped dockerd" in stop.stderr
