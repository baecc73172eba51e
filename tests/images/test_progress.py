from __future__ import annotations

import io

from aiacc_build.images.progress import StepProgress


def test_every_line_goes_to_the_log_and_steps_to_the_status_line():
    log = io.StringIO()
    shown: list[str] = []
    progress = StepProgress("perseus-training:debian12-cpu-pt2.13.0-py311-latest", log, shown.append)
    lines = [
        "Step 1/3 : ARG BASE_IMAGE",
        " ---> Using cache",
        "Step 2/3 : RUN python -m pip install --no-cache-dir --no-index --find-links http://127.0.0.1:8765/wheelhouse/ " + "x" * 80,
        "Collecting torch==2.13.0+cpu",
        "Step 3/3 : COPY docker/README.md /opt/perseus/README.md",
    ]
    for line in lines:
        progress(line)
    assert log.getvalue() == "\n".join(lines) + "\n"
    assert len(shown) == 4
    assert shown[2] == "perseus-training:debian12-cpu-pt2.13.0-py311-latest: step 2/3: pip: collecting torch==2.13.0+cpu"
    assert shown[0] == "perseus-training:debian12-cpu-pt2.13.0-py311-latest: step 1/3: ARG BASE_IMAGE"
    assert shown[1].endswith("...") and len(shown[1].split(": step 2/3: ", 1)[1]) == 70


def test_downloads_and_the_base_image_show_progress_with_their_figures():
    shown: list[str] = []
    progress = StepProgress("t", io.StringIO(), shown.append)
    for line in [
        "Collecting the framework wheels of t (pip download, cached)",
        "Collecting torch==2.13.0+cpu",
        "  Downloading https://download.pytorch.org/whl/cpu/torch-2.13.0%2Bcpu-cp311-cp311-manylinux_2_28_x86_64.whl (190.1 MB)",
        "Progress 52428800 of 199337984",
        "Saved ./torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl",
        "making base image perseus-base:debian12: debootstrap bookworm from http://deb.debian.org/debian",
        "I: Retrieving libc6 2.36-9+deb12u10",
    ]:
        progress(line)
    assert shown[0] == "t: framework wheels: pip: collecting the framework wheels of t (pip download, cached)"
    assert shown[3] == "t: framework wheels: downloading torch-2.13.0%2Bcpu-cp311-cp311-manylinux_2_28_x86_64.whl 50/190 MiB"
    assert shown[-2].startswith("t: making base image perseus-base:debian12: debootstrap bookworm")
    assert shown[-1] == "t: base image: Retrieving libc6 2.36-9+deb12u10"
