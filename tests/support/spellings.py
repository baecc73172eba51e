"""Every spelling of a PERSEUS_* variable that perseus.config accepts: its declared name, then its aliases
(the manual's spellings), read from the one declaration (native/runtime/perseus/config.py). Tests that a
variable works in a framework run once per spelling, so a new alias is tested everywhere without a new test."""
from __future__ import annotations

from aiacc_build.variables import declaration


def spellings(name: str) -> list[str]:
    found = [spec for spec in declaration().VARIABLES if spec.name == name]
    if not found:
        raise KeyError(f"{name} is no declared PERSEUS_* variable")
    return [found[0].name, *found[0].aliases]


NANCHECK_SPELLINGS = spellings("PERSEUS_ALLREDUCE_NANCHECK")
