"""CPU gradient-compression throughput of perseus vs memcpy vs torch eager, one thread, side by side.

    .venv/bin/python bench/compression_bench.py [--mb 128] [--repeat 15] [--json]

For each CPU dispatch path of the perseus core: compress fp32 -> fp16 / bf16 (scale + non-finite
count in one pass) and decompress fp16 -> fp32 (unscale + average, in place). Baselines on the same
bytes: memcpy of the fp32 buffer (torch copy_ and numpy copyto) and torch eager
`h = (g * s).half(); torch.isfinite(g).all()`. Throughput is GB/s of fp32 data (the gradient
size), best of --repeat runs after a warm-up; ratios are against the faster memcpy and against eager.
Targets of the issue: >= 80 % of memcpy, >= 3x torch eager.
"""
import argparse
import json
import sys
import time
from typing import Callable, Dict, List, Tuple

import numpy as np
import torch

from perseus.torch import _native

MIN_MB = 128


def best_seconds(cases, repeat):
    # type: (List[Tuple[str, Callable[[], object], Callable[[], object]]], int) -> Dict[str, float]
    """Best time of each case over `repeat` rounds; every round runs every case once (round robin),
    so a burst of load from elsewhere on the machine hits all cases alike, not one."""
    best = {name: float("inf") for name, _, _ in cases}
    for name, setup, fn in cases:  # warm-up: page faults and caches out of the measurement
        setup()
        fn()
    for _ in range(repeat):
        for name, setup, fn in cases:
            setup()
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def main(argv=None):
    # type: (List[str]) -> int
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=MIN_MB, help="fp32 buffer size in MB (>= %d)" % MIN_MB)
    parser.add_argument("--repeat", type=int, default=15, help="timed runs per case (best is reported)")
    parser.add_argument("--scale", type=float, default=10.0, help="gradient scale (PERSEUS_ALLREDUCE_GRADIENT_SCALE)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.mb < MIN_MB:
        parser.error("--mb %d: use at least %d MB so that the buffers do not fit in any cache" % (args.mb, MIN_MB))

    torch.set_num_threads(1)
    ops = _native.load()
    n = args.mb * 1000 * 1000 // 4
    gbytes = n * 4 / 1e9
    g = torch.randn(n) * 1e-3
    f32 = torch.empty_like(g)
    f16 = torch.empty(n, dtype=torch.float16)
    bf16 = torch.empty(n, dtype=torch.bfloat16)
    g_np, f32_np = g.numpy(), f32.numpy()
    scale = args.scale

    def eager():
        (g * scale).half()
        bool(torch.isfinite(g).all())

    def on(path):
        # type: (str) -> Callable[[], object]
        return lambda: ops.set_dispatch(path)

    def nothing():
        # type: () -> None
        pass

    cases = [
        ("memcpy (torch copy_)", nothing, lambda: f32.copy_(g)),
        ("memcpy (numpy copyto)", nothing, lambda: np.copyto(f32_np, g_np)),
        ("torch eager (g*s).half() + isfinite(g).all()", nothing, eager),
    ]  # type: List[Tuple[str, Callable[[], object], Callable[[], object]]]
    for path in ops.dispatch_paths().split():
        cases += [
            ("perseus compress fp16 [%s]" % path, on(path), lambda: ops.compress(g, f16, scale)),
            ("perseus compress bf16 [%s]" % path, on(path), lambda: ops.compress(g, bf16, scale)),
            ("perseus decompress fp16 [%s]" % path, on(path), lambda: ops.decompress(f16, f32, scale, 8)),
        ]
    seconds = best_seconds(cases, args.repeat)
    ops.set_dispatch("auto")
    rates = {name: gbytes / seconds[name] for name, _, _ in cases}

    memcpy = max(rates["memcpy (torch copy_)"], rates["memcpy (numpy copyto)"])
    eager_rate = rates["torch eager (g*s).half() + isfinite(g).all()"]
    rows = [{"case": case, "gb_per_s": round(rate, 2), "vs_memcpy": round(rate / memcpy, 3),
             "vs_torch_eager": round(rate / eager_rate, 2)} for case, rate in rates.items()]
    if args.json:
        json.dump({"mb": args.mb, "threads": torch.get_num_threads(), "cpu_features": ops.cpu_features(),
                   "torch": torch.__version__, "rows": rows}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    print("fp32 buffer %d MB, %d thread, torch %s, CPU: %s" % (args.mb, torch.get_num_threads(), torch.__version__,
                                                              ops.cpu_features()))
    print("%-50s %9s %11s %12s" % ("case", "GB/s", "vs memcpy", "vs eager"))
    for row in rows:
        print("%-50s %9.2f %10.0f%% %11.2fx" % (row["case"], row["gb_per_s"], 100 * row["vs_memcpy"],
                                               row["vs_torch_eager"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
