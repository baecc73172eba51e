"""How a PERSEUS_* variable's text becomes its value: the parsers a declaration in perseus.config names.

Each parser raises ValueError holding what is allowed, and carries what the generated native option table needs:
`kind` ("int", "real" or "text": the engine option's C type), `accepts` (the words an error shows) and, where the
value has bounds, `minimum` / `maximum` (and `minimum_inclusive` for numbers).
"""

import math
import os
import socket
from typing import Any, Callable, Dict, List, Optional

Parser = Callable[[str], Any]


def choice(choices: Dict[str, Any], allowed: str) -> Parser:
    def parse(raw: str) -> Any:
        if raw.strip() not in choices:
            raise ValueError(allowed)
        return choices[raw.strip()]

    parse.accepts = allowed  # type: ignore[attr-defined]  # the C header's PERSEUS_ACCEPTS_
    parse.kind = "text"  # type: ignore[attr-defined]
    numbers = sorted(int(k) for k in choices if k.isdigit())
    if numbers and len(numbers) == len(choices) and numbers == list(range(numbers[0], numbers[-1] + 1)):
        parse.minimum, parse.maximum = numbers[0], numbers[-1]  # type: ignore[attr-defined]
        parse.kind = "int"  # type: ignore[attr-defined]  # consecutive integers: the engine holds the number
    return parse


def int_range(low: int, high: Optional[int]) -> Parser:
    def parse(raw: str) -> int:
        try:
            value = int(raw.strip(), 10)
        except ValueError:
            raise ValueError(range_text(low, high)) from None
        if value < low or (high is not None and value > high):
            raise ValueError(range_text(low, high))
        return value

    parse.minimum, parse.maximum = low, high  # type: ignore[attr-defined]  # the C header's PERSEUS_MIN_/MAX_
    parse.accepts = range_text(low, high)  # type: ignore[attr-defined]
    parse.kind = "int"  # type: ignore[attr-defined]
    return parse


def range_text(low: float, high: Optional[float]) -> str:
    if high is None:
        return "an integer >= {}".format(low)
    return "an integer from {} to {}".format(low, high)


def float_range(low: float, high: Optional[float], low_inclusive: bool) -> Parser:
    text = "a number {} {}{}".format(">=" if low_inclusive else ">", low, "" if high is None else " and <= {}".format(high))

    def parse(raw: str) -> float:
        try:
            value = float(raw.strip())
        except ValueError:
            raise ValueError(text) from None
        too_low = value < low if low_inclusive else value <= low
        if math.isnan(value) or math.isinf(value) or too_low or (high is not None and value > high):
            raise ValueError(text)
        return value

    parse.accepts = text  # type: ignore[attr-defined]
    parse.kind = "real"  # type: ignore[attr-defined]
    parse.minimum, parse.maximum, parse.minimum_inclusive = low, high, low_inclusive  # type: ignore[attr-defined]
    return parse


def existing_file(raw: str) -> str:
    path = os.path.expanduser(raw.strip())
    if not os.path.isfile(path):
        raise ValueError("the path of an existing file ({} is not one)".format(path))
    return path


existing_file.kind = "text"  # type: ignore[attr-defined]


def path_prefix(raw: str) -> str:
    prefix = os.path.expanduser(raw.strip())
    folder = os.path.dirname(prefix) or "."
    if not prefix or not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise ValueError("a path prefix in a writable folder ({} is not)".format(folder))
    return prefix


path_prefix.kind = "text"  # type: ignore[attr-defined]


def interface(raw: str) -> str:
    name = raw.strip()
    present = network_interfaces()
    if name not in present:
        raise ValueError("a network interface of this machine: {}".format(", ".join(sorted(present)) or "(none found)"))
    return name


interface.kind = "text"  # type: ignore[attr-defined]


def network_interfaces() -> List[str]:
    try:
        return [entry[1] for entry in socket.if_nameindex()]
    except OSError:
        return []
