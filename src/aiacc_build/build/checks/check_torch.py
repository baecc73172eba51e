"""Post-build check of a perseus_torch wheel, run in a fresh environment:
    python check_torch.py <release> <framework public version>

Imports perseus.torch, loads the ops through the build-manifest check, and runs one compression op
(fp32 -> fp16 with the gradient scale and the non-finite count), compared with torch's own cast.
Python 3.6 syntax: it runs under the cell's interpreter.
"""

import json
import sys


def main():
    release, framework_version = sys.argv[1], sys.argv[2]
    import perseus
    import perseus.torch
    import torch
    from perseus.torch import _native

    ops = _native.load()
    manifest = json.loads(ops.build_manifest())
    expected_version = "%s+%s" % (release, framework_version)
    if manifest["version"] != expected_version or manifest["torch_version"] != torch.__version__:
        raise SystemExit(
            "manifest says %s for torch %s; expected %s for torch %s"
            % (manifest["version"], manifest["torch_version"], expected_version, torch.__version__)
        )
    if ops.core_version() != release:
        raise SystemExit("core reports release %s, expected %s" % (ops.core_version(), release))

    src = torch.tensor([0.5, -1.25, 3.0e-3, 7.0e4, float("inf"), float("nan"), 1.0e-8, -2.0], dtype=torch.float32)
    scale = 2.0
    dst = torch.empty(src.numel(), dtype=torch.float16)
    nonfinite = int(ops.compress(src, dst, scale))
    want = (src * scale).to(torch.float16)
    same = torch.equal(torch.isnan(dst), torch.isnan(want)) and bool(
        (dst[~torch.isnan(want)] == want[~torch.isnan(want)]).all()
    )
    want_nonfinite = int((~torch.isfinite(want.float())).sum())
    if not same or nonfinite != want_nonfinite:
        raise SystemExit(
            "compress gave %s (non-finite %d), torch gives %s (non-finite %d)"
            % (dst.tolist(), nonfinite, want.tolist(), want_nonfinite)
        )
    print(
        "perseus %s, perseus.torch %s (torch %s, dispatch %s): compress fp32->fp16 x%.1f ok, %d non-finite"
        % (perseus.__version__, manifest["version"], torch.__version__, ops.dispatch(), scale, nonfinite)
    )


if __name__ == "__main__":
    main()
