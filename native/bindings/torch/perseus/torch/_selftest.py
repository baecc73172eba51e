"""The self-test every perseus_torch wheel ships, run by the local build, the CI test command and the
install script alike:

    python -m perseus.torch._selftest [RELEASE [TORCH_PUBLIC_VERSION]]

Imports perseus and perseus.torch, loads the ops through the build-manifest check (which refuses a
wheel built for another torch, CUDA, C++ ABI or Python), checks the manifest against the expected
release and torch version when given, and runs one compression op (fp32 -> fp16 with the gradient
scale and the non-finite count) against torch's own cast. Exit 0 and one line on success; a message
and exit 1 otherwise. Python 3.6 syntax: it runs under every interpreter a cell supports.
"""

import json
import sys

from perseus.horovod_kit.selftest import SelfTest

SELFTEST = SelfTest("perseus.torch", "torch", "torch_version")
_fail = SELFTEST.fail


def _check_manifest(ops, torch, release, framework_version):
    manifest = json.loads(ops.build_manifest())
    SELFTEST.check_manifest(manifest, torch.__version__, release, framework_version, ops.core_version())
    return manifest


def _check_compress(ops, torch, scale):
    src = torch.tensor([0.5, -1.25, 3.0e-3, 7.0e4, float("inf"), float("nan"), 1.0e-8, -2.0], dtype=torch.float32)
    dst = torch.empty(src.numel(), dtype=torch.float16)
    nonfinite = int(ops.compress(src, dst, scale))
    want = (src * scale).to(torch.float16)
    same = torch.equal(torch.isnan(dst), torch.isnan(want)) and bool(
        (dst[~torch.isnan(want)] == want[~torch.isnan(want)]).all()
    )
    want_nonfinite = int((~torch.isfinite(want.float())).sum())
    if not same or nonfinite != want_nonfinite:
        _fail("compress gave %s (non-finite %d), torch gives %s (non-finite %d)"
              % (dst.tolist(), nonfinite, want.tolist(), want_nonfinite))
    return nonfinite


def main(argv=None):
    arguments = SELFTEST.arguments(argv)
    if arguments is None:
        return 2
    release, framework_version = arguments
    import perseus
    import perseus.torch  # noqa: F401
    import torch
    from perseus.torch import _native

    ops = _native.load()
    manifest = _check_manifest(ops, torch, release, framework_version)
    scale = 2.0
    nonfinite = _check_compress(ops, torch, scale)
    print(
        "perseus %s, perseus.torch %s (torch %s, dispatch %s): compress fp32->fp16 x%.1f ok, %d non-finite"
        % (perseus.__version__, manifest["version"], torch.__version__, ops.dispatch(), scale, nonfinite)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
