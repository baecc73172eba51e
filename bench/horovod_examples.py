"""Horovod's own examples, unchanged, on perseus: each runs under `perseusrun -np 2` on the CPU with `horovod.*`
resolving to the perseus modules (the test-only shim of tests/support/horovod_shim, which only aliases modules).
The MNIST examples train on learnable MNIST-format data generated here (this machine reaches no dataset server):
each class is a bright block at its own place over noise, so accuracy far above chance (10 %) means the ranks
really trained one model together. Prints a table; --json writes it.

    python bench/horovod_examples.py --horovod /path/to/horovod [--torch-python P] [--tf-python P]
        [--mxnet-python P] [--only NAME ...] [--json FILE]

Each Python needs its framework and the perseus packages installed (a perseus_torch built for that torch, the
perseus_tensorflow wheel, perseus_mxnet); pytorch_mnist needs torchvision. Exit code 1 when an example fails.
"""

import argparse
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from support.ports import free_ports  # noqa: E402

SHIM = REPO / "tests" / "support" / "horovod_shim"
TRAIN, TEST = 6000, 1000  # images per split (MNIST has 60000 / 10000; fewer keep a CPU run short)


def learnable_mnist(count: int, seed: int):
    """uint8 images [count, 28, 28] and labels [count]: class k is a 6x5 block of 255 at row 3 + 14 * (k // 5),
    column 1 + 5 * (k % 5), over uniform noise below 64."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, size=count).astype(np.uint8)
    images = rng.integers(0, 64, size=(count, 28, 28)).astype(np.uint8)
    for k in range(10):
        row, col = 3 + 14 * (k // 5), 1 + 5 * (k % 5)
        images[labels == k, row:row + 6, col:col + 5] = 255
    return images, labels


def write_idx(folder: Path) -> None:
    """The four MNIST files in the idx format (train-images-idx3-ubyte, ..., t10k-labels-idx1-ubyte)."""
    folder.mkdir(parents=True, exist_ok=True)
    for prefix, count, seed in (("train", TRAIN, 1), ("t10k", TEST, 2)):
        images, labels = learnable_mnist(count, seed)
        (folder / "{}-images-idx3-ubyte".format(prefix)).write_bytes(
            struct.pack(">IIII", 2051, count, 28, 28) + images.tobytes())
        (folder / "{}-labels-idx1-ubyte".format(prefix)).write_bytes(struct.pack(">II", 2049, count) + labels.tobytes())


def torch_mnist_data(work: Path) -> None:
    write_idx(work / "data" / "MNIST" / "raw")  # torchvision's MNIST finds the files and downloads nothing


def mxnet_mnist_data(work: Path) -> None:
    """mxnet_mnist.py downloads data-<rank>/mnist.zip unless it is there, then unzips it."""
    source = work / "idx"
    write_idx(source)
    for rank in (0, 1):
        folder = work / "data-{}".format(rank)
        folder.mkdir(exist_ok=True)
        with zipfile.ZipFile(folder / "mnist.zip", "w") as archive:
            for path in sorted(source.iterdir()):
                archive.write(path, path.name)


def last_float(pattern: str) -> Callable[[str], Optional[float]]:
    def parse(output: str) -> Optional[float]:
        found = re.findall(pattern, output)
        return float(found[-1]) if found else None
    return parse


@dataclass
class Example:
    name: str
    framework: str  # torch, tensorflow, mxnet: which Python runs it
    path: str  # under the Horovod checkout
    args: List[str]
    metric: str
    parse: Callable[[str], Optional[float]]
    good: Callable[[float], bool]
    data: Optional[Callable[[Path], None]] = None
    env: Dict[str, str] = field(default_factory=dict)


EXAMPLES = [
    Example("pytorch_synthetic_benchmark", "torch", "examples/pytorch/pytorch_synthetic_benchmark.py",
            ["--no-cuda", "--model", "resnet18", "--batch-size", "8", "--num-warmup-batches", "2",
             "--num-batches-per-iter", "2", "--num-iters", "3"],
            "total img/sec", last_float(r"Total img/sec on 2 CPU\(s\): ([0-9.]+)"), lambda v: v > 0),
    Example("pytorch_mnist", "torch", "examples/pytorch/pytorch_mnist.py",
            ["--no-cuda", "--epochs", "2", "--data-dir", "data"],
            "test accuracy %", last_float(r"Accuracy: ([0-9.]+)%"), lambda v: v > 90.0, data=torch_mnist_data),
    Example("tensorflow2_synthetic_benchmark (tf-keras)", "tensorflow", "examples/tensorflow2/tensorflow2_synthetic_benchmark.py",
            ["--no-cuda", "--model", "MobileNetV2", "--batch-size", "4", "--num-warmup-batches", "1",
             "--num-batches-per-iter", "2", "--num-iters", "2"],
            "total img/sec", last_float(r"Total img/sec on 2 CPU\(s\): ([0-9.]+)"), lambda v: v > 0,
            env={"TF_USE_LEGACY_KERAS": "1"}),  # Keras 2's optimizer.variables() (a property in Keras 3)
    Example("tensorflow2_keras_synthetic_benchmark (tf-keras)", "tensorflow",
            "examples/tensorflow2/tensorflow2_keras_synthetic_benchmark.py",
            ["--no-cuda", "--model", "MobileNetV2", "--batch-size", "4", "--num-batches-per-iter", "2",
             "--num-iters", "2"],
            "total img/sec", last_float(r"Total img/sec on 2 CPU\(s\): ([0-9.]+)"), lambda v: v > 0,
            env={"TF_USE_LEGACY_KERAS": "1"}),
    Example("mxnet_mnist", "mxnet", "examples/mxnet/mxnet_mnist.py", ["--no-cuda", "--epochs", "2"],
            "validation accuracy", last_float(r"Validation: accuracy=([0-9.]+)"), lambda v: v > 0.96,
            data=mxnet_mnist_data),
]


def run(example: Example, horovod: Path, python: str, timeout: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="hvd-example-") as tmp:
        work = Path(tmp)
        if example.data:
            example.data(work)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PERSEUS_", "HOROVOD_", "MASTER_", "RANK", "WORLD_SIZE", "LOCAL_"))}
        paths = [str(SHIM)]
        if example.framework == "mxnet":  # .venv-mxnet takes perseus-common from the sources, as tests/mxnet does
            paths.append(str(REPO / "native" / "runtime"))
        env["PYTHONPATH"] = os.pathsep.join(paths + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        env["MASTER_PORT"], env["PERSEUS_MASTER_PORT"] = (str(p) for p in free_ports(2))
        env.update({"TF_CPP_MIN_LOG_LEVEL": "2", "OMP_NUM_THREADS": "1"}, **example.env)
        # perseusrun of the Python running this script launches the example's Python
        command = [sys.executable, "-m", "perseus.run", "-np", "2", "--", python, str(horovod / example.path)]
        command += example.args
        started = time.monotonic()
        try:
            proc = subprocess.run(command, cwd=str(work), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  universal_newlines=True, timeout=timeout)
            output, code = proc.stdout, proc.returncode
        except subprocess.TimeoutExpired as error:
            output, code = (error.stdout or "") if isinstance(error.stdout, str) else "", None
        seconds = time.monotonic() - started
    value = example.parse(output)
    ok = code == 0 and value is not None and example.good(value)
    return {"example": example.name, "rc": code, "seconds": round(seconds, 1), "metric": example.metric,
            "value": value, "ok": ok, "tail": "" if ok else output[-3000:]}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horovod", required=True, type=Path, help="a Horovod checkout (its examples/ folder)")
    parser.add_argument("--torch-python", default=sys.executable)
    parser.add_argument("--tf-python", default=sys.executable)
    parser.add_argument("--mxnet-python", default=str(REPO / ".venv-mxnet" / "bin" / "python"))
    parser.add_argument("--only", nargs="*", help="example names (default: all)")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    pythons = {"torch": args.torch_python, "tensorflow": args.tf_python, "mxnet": args.mxnet_python}
    results = []
    for example in EXAMPLES:
        if args.only and example.name.split(" ")[0] not in args.only:
            continue
        print("running {} ...".format(example.name), flush=True)
        result = run(example, args.horovod, pythons[example.framework], args.timeout)
        results.append(result)
        print("{:52} rc {}  {:7.1f} s  {} = {}  {}".format(example.name, result["rc"], result["seconds"],
                                                           result["metric"], result["value"],
                                                           "ok" if result["ok"] else "FAILED"), flush=True)
        if not result["ok"]:
            print(result["tail"])
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0 if results and all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
