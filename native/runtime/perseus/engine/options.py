"""The options an engine is made with: opaque in the C ABI, made with their defaults, set and read by name.

The engine lists them (perseus_engine_option_name): who this process is (rank, size, local_rank, local_size,
node_rank, master_addr, master_port, serve_store, hostname, stream_tuning) and one option per PERSEUS_* variable whose
declaration in perseus.config names an engine field (`engine=`: wire_dtype, mode, gradient_scale, streams, ...).
Nothing here repeats those names: a value is checked by the engine with its variable's rule.

    opts = Options.from_env(lib)          # defaults, then the PERSEUS_* environment
    opts.set("wire_dtype", 1)             # or opts.set("PERSEUS_ALLREDUCE_DTYPE", 1)
    opts.policy()                         # {"wire_dtype": 1, "mode": -1, "gradient_scale": 10.0, ...}
"""

import ctypes
import enum
import functools
from typing import Any, Callable, Dict, List, NamedTuple, Optional

from ._errors import check

_KINDS = {0: int, 1: float, 2: str}  # perseus_engine_option_name's kind: integer, number, text
_TEXT_CAPACITY = 1024


class OptionName(NamedTuple):
    field: str
    kind: Callable[[str], Any]  # int, float or str: how its text reads back
    variable: Optional[str]  # the PERSEUS_* variable that sets it; None for who-this-process-is fields


@functools.lru_cache(maxsize=None)
def option_names(lib: ctypes.CDLL) -> List[OptionName]:
    """Every option of this engine library, in its order."""
    names = []  # type: List[OptionName]
    kind, variable = ctypes.c_int(), ctypes.c_char_p()
    index = 0
    while True:
        field = lib.perseus_engine_option_name(index, ctypes.byref(kind), ctypes.byref(variable))
        if field is None:
            return names
        names.append(OptionName(field.decode(), _KINDS[kind.value],
                                None if variable.value is None else variable.value.decode()))
        index += 1


def _text(value: Any) -> str:
    if value is None:
        return ""  # unset: the variable's default, or the engine's automatic choice
    if isinstance(value, (bool, enum.IntEnum)):
        return str(int(value))
    if isinstance(value, float):
        return repr(value)
    return str(value)


class Options:
    """One perseus_engine_options of `lib`, freed with this object."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self._lib = lib
        self._ptr = ctypes.c_void_p()
        check(lib, lib.perseus_engine_options_new(ctypes.byref(self._ptr)))

    @classmethod
    def from_env(cls, lib: ctypes.CDLL) -> "Options":
        """The defaults, then every declared variable the environment sets (a bad value raises, naming it)."""
        self = cls(lib)
        check(lib, lib.perseus_engine_options_from_env(self._ptr))
        return self

    @property
    def pointer(self) -> ctypes.c_void_p:
        return self._ptr

    def set(self, name: str, value: Any) -> None:
        """By field or variable name; None (or "") unsets it. The engine refuses a value its variable does not accept,
        or an unknown name."""
        check(self._lib, self._lib.perseus_engine_options_set(self._ptr, name.encode(), _text(value).encode()))

    def get(self, name: str) -> Any:
        out = ctypes.create_string_buffer(_TEXT_CAPACITY)
        check(self._lib, self._lib.perseus_engine_options_get(self._ptr, name.encode(), out, _TEXT_CAPACITY))
        kind = next((n.kind for n in option_names(self._lib) if name in (n.field, n.variable)), str)
        return kind(out.value.decode())

    def from_mpi(self) -> None:
        """Under a plain mpirun: every number, rank 0's address and a free port agreed through MPI (collective)."""
        check(self._lib, self._lib.perseus_engine_options_from_mpi(self._ptr))

    def policy(self) -> Dict[str, Any]:
        """What the variables set (every option with a variable, by field), plus stream_tuning, which follows them."""
        return {n.field: self.get(n.field) for n in option_names(self._lib) if n.variable or n.field == "stream_tuning"}

    def __del__(self) -> None:
        ptr, self._ptr = getattr(self, "_ptr", None), None
        if ptr:
            self._lib.perseus_engine_options_free(ptr)
