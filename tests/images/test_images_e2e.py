"""End to end (opt-in: starts dockerd, debootstraps a base, ~3-10 min): build the local cell's image
from the rendered Dockerfile, push it to a registry on 127.0.0.1, remove it, pull it by its seed-style
tag, and run `import perseus.torch` plus a 2-process perseusrun inside."""

from __future__ import annotations

import os
import shutil

import pytest

from aiacc_build.cli import main
from aiacc_build.images.build import pull_image, push_image
from aiacc_build.images.cli import CACHE_DIR, STATE_DIR
from aiacc_build.images.engine import start_engine
from aiacc_build.images.local import build_local_images, local_images
from aiacc_build.images.registry import start_registry
from aiacc_build.matrix import load_release
from aiacc_build.paths import DIST_DIR
from aiacc_build.render.support import BuildHost

pytestmark = pytest.mark.skipif(os.environ.get("AIACC_OPTIN") != "1", reason="opt-in (AIACC_OPTIN=1): starts dockerd and builds an image")

LOCAL_CELL = "2.0.0/torch-2.13.0/cpu/py3.11/x86_64"
HVD_CHECK = (
    "import torch, perseus.torch.horovod as hvd; hvd.init(); "
    "t = hvd.allreduce(torch.ones(4) * (hvd.rank() + 1), op=hvd.Sum); "
    "assert t.tolist() == [3.0] * 4, t; print('allreduce ok on rank', hvd.rank())"
)


def test_build_push_pull_run(capsys):
    for tool in ("dockerd", "debootstrap", "docker-registry"):
        assert shutil.which(tool), f"{tool} missing: apt-get install docker.io debootstrap docker-registry"
    assert main(["render", "--release", "2.0.0"]) == 0
    assert main(["build", "--release", "2.0.0"]) == 0
    release = load_release("2.0.0")
    images = local_images(release.cells, BuildHost.detect(), (LOCAL_CELL,))
    engine = start_engine(STATE_DIR)
    registry = start_registry(STATE_DIR / "registry-e2e")
    try:
        first = build_local_images(engine.client, images, DIST_DIR / "2.0.0", CACHE_DIR, 18765)[0].result
        again = build_local_images(engine.client, images, DIST_DIR / "2.0.0", CACHE_DIR, 18765)[0].result
        with capsys.disabled():
            print(f"\nimage build: {first.seconds:.1f}s ({first.cached_steps}/{first.steps} cached); "
                  f"unchanged rebuild: {again.seconds:.1f}s ({again.cached_steps}/{again.steps} cached)")
        assert again.cache_hit and again.image_id == first.image_id
        tag = images[0].tags[0]
        assert tag == "perseus-training:debian12-cpu-pt2.13.0-py311-latest"
        remote = push_image(engine.client, tag, registry.address)
        assert remote == f"{registry.address}/{tag}"
        engine.client.images.remove(remote)
        engine.client.images.remove(tag)
        pull_image(engine.client, remote)
        run = dict(remove=True, shm_size="1g", ulimits=[{"Name": "memlock", "Soft": -1, "Hard": -1}], network_mode="none")
        out = engine.client.containers.run(remote, ["python", "-c", "import perseus.torch; print(perseus.torch.__name__)"], **run)
        assert b"perseus.torch" in out
        out = engine.client.containers.run(remote, ["perseusrun", "-np", "2", "--", "python", "-c", HVD_CHECK], **run)
        assert out.count(b"allreduce ok on rank") == 2, out.decode(errors="replace")
    finally:
        registry.stop()
        engine.stop()
