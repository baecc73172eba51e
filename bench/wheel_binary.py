"""What a built perseus_torch wheel's ops library really holds, read with binutils and cuobjdump.

For bench/optin_builds.py: a CUDA cell must carry device code (SASS for sm_75+, read out of the
fatbin with the toolkit's own cuobjdump), must not need or vendor libcudart (the core links the CUDA
runtime statically; torch brings its own), and its torch-facing symbols must use the C++ ABI of the
torch it was built against (a pre-cxx11 torch: no std::__cxx11 in any c10::/at::/torch:: symbol).
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

TORCH_NAMESPACES = ("c10::", "at::", "torch::", "caffe2::")


@dataclass(frozen=True)
class BinaryReport:
    library: str  # the member's path in the wheel
    needed: tuple[str, ...]  # DT_NEEDED
    vendored: tuple[str, ...]  # libraries grafted into the wheel (<package>.libs/)
    sass: tuple[str, ...] | None  # sm_XX with device code in the fatbin; None: no cuobjdump to list it
    ptx: tuple[str, ...] | None  # sm_XX with PTX
    torch_symbols: int  # undefined symbols the library takes from torch (c10::, at::, torch::)
    torch_cxx11_symbols: int  # ... of them mangled with std::__cxx11 (cxx11 ABI)
    manifest_archs: tuple[str, ...] = ()  # the build manifest's cuda_architectures ("75-real", "90")

    def expected_device_code(self) -> tuple[set[str], set[str]]:
        """(SASS, PTX) architectures the manifest's CMake list promises: 75-real SASS only, 90-virtual PTX
        only, a plain 90 both."""
        sass, ptx = set(), set()
        for entry in self.manifest_archs:
            arch, _, kind = entry.partition("-")
            if kind in ("", "real"):
                sass.add(arch)
            if kind in ("", "virtual"):
                ptx.add(arch)
        return sass, ptx

    def problems(self, cuda: bool, cxx11_abi: bool) -> list[str]:
        out = []
        if any(n.startswith("libcudart") for n in self.needed + self.vendored):
            out.append("needs or vendors libcudart")
        if cuda and self.sass is not None and not [a for a in self.sass if int(a.rstrip("a")) >= 75]:
            out.append("no device code for sm_75+")
        if cuda and self.sass is not None and self.expected_device_code() != (set(self.sass), set(self.ptx or ())):
            out.append(f"the manifest lists {';'.join(self.manifest_archs)}, the fatbin holds other code")
        if self.torch_symbols == 0:
            out.append("takes no symbol from torch (not a torch extension?)")
        elif not cxx11_abi and self.torch_cxx11_symbols:
            out.append(f"{self.torch_cxx11_symbols} torch-facing symbols use std::__cxx11 (pre-cxx11 torch)")
        elif cxx11_abi and not self.torch_cxx11_symbols:
            out.append("no torch-facing symbol uses std::__cxx11 (cxx11 torch)")
        return out

    def summary(self) -> str:
        if self.sass is None:
            device = "device code not listed (no cuobjdump with this toolkit)"
        else:
            device = f"SASS sm_{'/'.join(self.sass)}" if self.sass else "no device code"
        if self.ptx:
            device += f" + PTX sm_{'/'.join(self.ptx)}"
        cudart = "libcudart NEEDED" if any(n.startswith("libcudart") for n in self.needed) else "no libcudart"
        return (
            f"{device}; {cudart}; {self.torch_symbols} torch symbols, "
            f"{self.torch_cxx11_symbols} with __cxx11"
        )


def _run(cmd: list[str], check: bool = True) -> str:
    # cuobjdump exits non-zero when a library holds no device code of the kind asked for
    return subprocess.run(cmd, check=check, capture_output=True, text=True).stdout


def _archs(listing: str, kind: str) -> tuple[str, ...]:
    return tuple(sorted(set(re.findall(rf"{kind} file\s+\d+:.*\.sm_(\d+a?)\.", listing)), key=lambda a: int(a.rstrip("a"))))


def inspect_wheel(wheel: Path, cuobjdump: Path | None) -> BinaryReport:
    """Read the wheel's ops library (perseus/torch/_perseus_ops*.so); `cuobjdump` of the cell's toolkit
    (a toolkit installed without it, like /usr/local/cuda-13.0 here, leaves the device code unlisted)."""
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        (member,) = [n for n in names if re.search(r"/_perseus_ops[^/]*\.so$", n)]
        vendored = tuple(sorted(Path(n).name for n in names if re.search(r"\.libs/[^/]+\.so", n)))
        manifest = json.loads(zf.read(member.rsplit("/", 1)[0] + "/build_manifest.json"))
        with tempfile.TemporaryDirectory(prefix="aiacc-inspect-") as tmp:
            lib = Path(tmp) / "ops.so"
            lib.write_bytes(zf.read(member))
            needed = tuple(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", _run(["readelf", "-d", str(lib)])))
            sass: tuple[str, ...] | None = None
            ptx: tuple[str, ...] | None = None
            if cuobjdump is not None and cuobjdump.is_file():
                sass = _archs(_run([str(cuobjdump), "--list-elf", str(lib)], check=False), "ELF")
                ptx = _archs(_run([str(cuobjdump), "--list-ptx", str(lib)], check=False), "PTX")
            undefined = _run(["nm", "-D", "-C", "--undefined-only", str(lib)]).splitlines()
    torch = [line for line in undefined if any(ns in line for ns in TORCH_NAMESPACES)]
    return BinaryReport(
        library=member,
        needed=needed,
        vendored=vendored,
        sass=sass,
        ptx=ptx,
        torch_symbols=len(torch),
        torch_cxx11_symbols=sum("__cxx11" in line for line in torch),
        manifest_archs=tuple(manifest.get("cuda_architectures") or ()),
    )
