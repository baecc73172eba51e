"""Horovod's capability queries, answered for perseus's engine (not for the framework's own libraries).

perseus's collectives run on the engine: Gloo for host buffers always, NCCL for device buffers where the
engine was built with them and found NCCL. MPI is at most a bootstrap (a plain mpirun tells the engine its
numbers), never a transport, so mpi_built() is False; oneCCL, DDL and ROCm are not built.
"""

from typing import Any, Callable, Dict, List, Mapping

from perseus.horovod_kit.errors import NotSupportedByPerseus


class Capabilities:
    """The queries for one binding; `device_report` returns the engine library's device report
    (perseus.engine._device.device_report() once the binding pointed the engine handle at its library)."""

    def __init__(self, device_report: Callable[[], Mapping[str, Any]], initialized: Callable[[], bool],
                 profile_instead: str = "perseus doctor and PERSEUS_PERF_CHECK_N_STEPS report the job") -> None:
        self._device_report = device_report
        self._initialized = initialized
        self._profile_instead = profile_instead

    def _report(self) -> Mapping[str, Any]:
        try:
            return self._device_report()
        except Exception:  # no engine library at all: nothing is built
            return {}

    def gloo_built(self) -> bool:
        return True

    def nccl_built(self) -> int:
        """0, or NCCL's version code (e.g. 22105 for 2.21.5) when the engine's device path has NCCL."""
        report = self._report()
        return int(report.get("nccl_version") or 0) if report.get("built") else 0

    def cuda_built(self) -> bool:
        return bool(self._report().get("built"))

    def mpi_built(self) -> bool:
        return False

    def rocm_built(self) -> bool:
        return False

    def ddl_built(self) -> bool:
        return False

    def ccl_built(self) -> bool:
        return False

    def backends(self) -> List[str]:
        return ["gloo"] if self._initialized() else []

    def gloo_enabled(self) -> bool:
        return "gloo" in self.backends()

    def mpi_enabled(self) -> bool:
        return False

    def mpi_threads_supported(self) -> bool:
        raise ValueError("MPI is not a transport of perseus (its collectives run on Gloo{}); "
                         "mpi_threads_supported() asks about MPI".format(
                             " and NCCL" if self.nccl_built() else ""))

    def as_dict(self) -> Dict[str, Any]:
        return {name: getattr(self, name)() for name in (
            "gloo_built", "nccl_built", "cuda_built", "mpi_built", "rocm_built", "ddl_built", "ccl_built")}

    def start_timeline(self, file_path: str, mark_cycles: bool = False) -> None:
        raise NotSupportedByPerseus("hvd.start_timeline({!r}): perseus writes no Horovod timeline; {}".format(
            file_path, self._profile_instead))

    def stop_timeline(self) -> None:
        raise NotSupportedByPerseus("hvd.stop_timeline(): perseus writes no Horovod timeline; {}".format(
            self._profile_instead))
