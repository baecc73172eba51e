"""The GPU check of the engine's device buffers, for a lent one-GPU machine (docs/device.md):

  1. the core's CUDA fp16 kernels bit for bit against the CPU path (test_cuda's GPU cases, not skipped);
  2. their throughput against the device's memory bandwidth (bench_cuda_kernels; target >= 85 % of a
     device-to-device cudaMemcpy, read + write bytes);
  3. 1 rank: device buffers through NCCL (NCCL_DEBUG=VERSION must show NCCL's banner), results equal bit for
     bit to the host path's, DTYPE 0 (fp16 wire, compressed on the device) and 1 (fp32);
  4. 2 ranks on the one GPU: NCCL refuses a shared GPU, so the engine takes Gloo with host staging and the
     kernels; results equal bit for bit to the host path's (and no NCCL banner).

With --torch (perseus_torch installed for the machine's torch, as bench/gpu_device_run.sh builds it there):
  5. the binding's engine has device buffers and loads torch's own NCCL and CUDA runtime (nvidia/ packages);
  6. CUDA tensors through perseus.torch (hvd.allreduce/broadcast, DDP, DistributedOptimizer), 2 ranks on the
     one GPU under gloo, equal to the same calls on host tensors (tests/torch/workers/device_collectives.py);
  7. a DDP step with CUDA tensors, perseus vs torch's fp16_compress_hook (bench/gpu_ddp_step.py): at least as
     fast, the same loss within fp16 tolerance, device-to-host bytes <= 0.6 x the fp32 gradient, and no
     cudaDeviceSynchronize on the training thread.

Multi-GPU NCCL runs (2+ GPUs, one per rank) are not done here: CI-only. Prints a table and `uptime`; exits 0
when every step passes, 1 when one fails, 2 when no CUDA device is visible.

  .venv/bin/python bench/gpu_device_check.py [--build native/build] [--site DIR_WITH_nvidia/nccl] [--torch]
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

REPO = Path(__file__).resolve().parents[1]
WORKER = Path(__file__).resolve().parent / "gpu_device_worker.py"


def env_for(library: str, site: str, extra: Dict[str, str]) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PERSEUS_", "RANK", "WORLD_SIZE", "LOCAL_",
                                                                     "MASTER_", "NCCL_DEBUG"))}
    path = [str(REPO / "native" / "runtime")] + ([site] if site else [])
    env.update({"PERSEUS_ENGINE_LIBRARY": library, "PYTHONPATH": os.pathsep.join(path), "GLOO_TIMEOUT_SECONDS": "60"})
    env.update(extra)
    return env


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ranks(library: str, site: str, size: int, extra: Dict[str, str]) -> List[Tuple[int, str, str]]:
    master, port = free_port(), free_port()
    procs = []
    for r in range(size):
        e = env_for(library, site, dict(extra, RANK=str(r), WORLD_SIZE=str(size), LOCAL_RANK=str(r),
                                        LOCAL_WORLD_SIZE=str(size), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(master),
                                        PERSEUS_MASTER_PORT=str(port), NCCL_DEBUG="VERSION"))
        procs.append(subprocess.Popen([sys.executable, str(WORKER), "check"], env=e, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, universal_newlines=True))
    return [(p.wait(timeout=300), p.stdout.read(), p.stderr.read()) for p in procs]


def reported(stdout: str) -> dict:
    return json.loads(stdout.split("REPORT ", 1)[1].splitlines()[0]) if "REPORT " in stdout else {}


def engine_run(library: str, site: str, size: int, dtype: str) -> Tuple[bool, str]:
    done = ranks(library, site, size, {"PERSEUS_ALLREDUCE_DTYPE": dtype})
    banner = any("NCCL version" in out + err for _, out, err in done)
    found = [reported(out) for _, out, _ in done]
    ok = all(rc == 0 for rc, _, _ in done) and all(f and all(v["equal"] for v in f["results"].values()) for f in found)
    want_nccl = size == 1
    ok = ok and banner == want_nccl
    detail = "NCCL banner {}; ".format("seen" if banner else "absent") + "; ".join(
        "rank {}: {}".format(f.get("rank"), {k: (v["equal"], v.get("elements_differing")) for k, v in
                                             f.get("results", {}).items()}) for f in found)
    if not ok:
        detail += " | stderr: " + " / ".join(err[-800:] for _, _, err in done)
    return ok, detail


def torch_ranks(script: Path, size: int, extra: List[str], timeout: float = 400) -> List[Tuple[int, str, str]]:
    port = free_port()
    procs = []
    for r in range(size):
        e = {k: v for k, v in os.environ.items() if not k.startswith(("PERSEUS_", "NCCL_DEBUG"))}
        e.update(RANK=str(r), WORLD_SIZE=str(size), LOCAL_RANK=str(r), LOCAL_WORLD_SIZE=str(size),
                 MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), PYTHONUNBUFFERED="1")
        procs.append(subprocess.Popen([sys.executable, str(script)] + extra, env=e, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, universal_newlines=True))
    return [(p.wait(timeout=timeout), p.stdout.read(), p.stderr.read()) for p in procs]


def torch_rows() -> List[Tuple[str, bool, str]]:
    rows = []
    probe = subprocess.run([sys.executable, "-c", "import json, torch\nfrom perseus.torch import _comm, _device, _native\n"
                            "_comm.load_library(); print(json.dumps({'report': _device.report(), "
                            "'manifest': _native.read_manifest()}))"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    found = json.loads(probe.stdout) if probe.returncode == 0 else {}
    report, manifest = found.get("report", {}), found.get("manifest", {})
    ok = bool(report.get("built")) and "/nvidia/" in report.get("nccl_library", "") and \
        "/nvidia/" in report.get("cuda_library", "") and report.get("device_count", 0) >= 1
    rows.append(("torch binding: device engine, torch's NCCL + CUDA runtime", ok, json.dumps({
        "manifest": {k: manifest.get(k) for k in ("version", "torch_version", "cuda_architectures", "cuda_toolkit")},
        "nccl": report.get("nccl_library"), "nccl_version": report.get("nccl_version"),
        "cudart": report.get("cuda_library")}) if found else probe.stderr[-1500:]))
    done = torch_ranks(REPO / "tests" / "torch" / "workers" / "device_collectives.py", 2, [])
    found_reports = [reported(out) for _, out, _ in done]
    ok = all(rc == 0 for rc, _, _ in done) and all(f.get("ok") for f in found_reports)
    detail = "; ".join("rank {}: {}".format(f.get("rank"), {k: (v.get("equal"), v.get("max_difference", v.get("error")))
                                                             for k, v in f.get("cases", {}).items()})
                       for f in found_reports)
    if not ok:
        detail += " | " + " / ".join(err[-1500:] for _, _, err in done)
    rows.append(("torch: CUDA tensors = host tensors, 2 ranks one GPU", ok, detail))
    bench = subprocess.run([sys.executable, str(REPO / "bench" / "gpu_ddp_step.py")], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
    figures = reported(bench.stdout)
    if not figures:
        rows.append(("DDP step: perseus vs torch fp16_compress_hook", False, (bench.stdout + bench.stderr)[-3000:]))
        return rows
    prof = figures["profiled_step"]
    d2h_ratio = prof["perseus"]["d2h_bytes"] / float(figures["fp32_gradient_bytes"])
    checks = {
        "at least as fast": figures["perseus_vs_torch"] >= 1.0,
        "same loss (fp16 tolerance)": figures["max_relative_loss_difference"] <= 1e-2,
        "d2h <= 0.6 x fp32 gradient": d2h_ratio <= 0.6,
        "no cudaDeviceSynchronize in the step (any thread)": prof["perseus"]["step_range_found"] == 1 and
            prof["perseus"]["cudaDeviceSynchronize"] == 0,
    }
    rows.append(("DDP step: perseus vs torch fp16_compress_hook", all(checks.values()), json.dumps({
        "parameters": figures["parameters"], "median_ms": figures["median_ms"],
        "perseus_vs_torch": round(figures["perseus_vs_torch"], 3),
        "max_relative_loss_difference": figures["max_relative_loss_difference"],
        "d2h_bytes": {k: v["d2h_bytes"] for k, v in prof.items()}, "d2h_vs_fp32_gradient": round(d2h_ratio, 3),
        "cudaDeviceSynchronize": {k: [v["cudaDeviceSynchronize"], v["cudaDeviceSynchronize_training_thread"]]
                                  for k, v in prof.items()},
        "engine": figures.get("perseus_engine"), "checks": checks})))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=str(REPO / "native" / "build"), help="the CMake build (CUDA and device on)")
    parser.add_argument("--site", default="", help="a folder holding nvidia/nccl/lib/libnccl.so.2 (pip's layout)")
    parser.add_argument("--torch", action="store_true", help="also the perseus.torch steps (5-7)")
    args = parser.parse_args()
    build = Path(args.build)
    library = str(build / "engine" / "libperseus_engine.so")
    rep = subprocess.run([sys.executable, str(WORKER), "report"], env=env_for(library, args.site, {}),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    device = reported(rep.stdout).get("device")
    if not device:
        print("no device report: " + rep.stderr[-2000:])
        return 1
    print("device report: " + json.dumps(device))
    if not device["built"]:
        print("{} has no device backend: configure with -DPERSEUS_ENGINE_DEVICE=ON".format(library))
        return 1
    if device["device_count"] < 1:
        print("needs a CUDA device: " + device["cuda_message"])
        return 2
    rows = []
    test_cuda = build / "core" / "tests" / "test_cuda"
    done = subprocess.run([str(test_cuda), "--gtest_filter=Cuda.KernelsMatchTheCpuScalarPath:Cuda.DownsampleAndPackMatchTheCpu"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    rows.append(("kernels bit for bit vs CPU", done.returncode == 0 and "SKIPPED" not in done.stdout,
                 done.stdout.strip().splitlines()[-1] if done.stdout else "no output"))
    bench = subprocess.run([str(build / "core" / "tests" / "bench_cuda_kernels"), "256", "20"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
    figures = json.loads(bench.stdout) if bench.returncode == 0 else {}
    ratio = min(figures.get("compress_vs_memcpy", 0), figures.get("decompress_vs_memcpy", 0))
    rows.append(("kernels >= 85% of memcpy bandwidth", ratio >= 0.85, json.dumps(figures) or bench.stderr))
    if device["nccl_version"]:
        for dtype in ("0", "1"):
            ok, detail = engine_run(library, args.site, 1, dtype)
            rows.append(("1 rank, NCCL, DTYPE={}".format(dtype), ok, detail))
    else:
        rows.append(("1 rank, NCCL", False, device["nccl_message"]))
    ok, detail = engine_run(library, args.site, 2, "0")
    rows.append(("2 ranks, one GPU, Gloo + kernels, DTYPE=0", ok, detail))
    if args.torch:
        rows += torch_rows()
    print("\n| step | result | detail |\n|---|---|---|")
    for name, ok, detail in rows:
        print("| {} | {} | {} |".format(name, "PASS" if ok else "FAIL", detail.replace("|", "/")))
    print("load: " + subprocess.run(["uptime"], stdout=subprocess.PIPE, universal_newlines=True).stdout.strip())
    print("multi-GPU NCCL runs (one GPU per rank): CI-only, not run here")
    return 0 if all(ok for _, ok, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
