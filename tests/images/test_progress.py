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
    assert len(shown) == 3
    assert shown[0] == "perseus-training:debian12-cpu-pt2.13.0-py311-latest: step 1/3: ARG BASE_IMAGE"
    assert shown[1].endswith("...") and len(shown[1].split(": step 2/3: ", 1)[1]) == 70
