"""Host discovery for elastic perseusrun: the user's script (Horovod's `host:slots` lines) or fixed -H hosts,
and the blacklist of hosts whose workers failed (with Horovod's cooldown when --blacklist-cooldown-range)."""

import random
import subprocess
import time
from collections import OrderedDict
from typing import Dict, List, Optional, Tuple

from ..hosts import _valid_host

SCRIPT_SECONDS = 60.0  # one call of the discovery script may take this long before it counts as failed


class DiscoveryError(RuntimeError):
    """The discovery script failed or printed something that is not `HOST` / `HOST:SLOTS` lines."""


def parse_output(text: str, default_slots: Optional[int], script: str) -> "OrderedDict[str, int]":
    """{host: slots} in the order printed. A line is `HOST:SLOTS` or `HOST` (then --slots-per-host); blank lines
    are skipped, as is a whole empty output (no host available now)."""
    found: "OrderedDict[str, int]" = OrderedDict()
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        host, sep, slots_text = line.rpartition(":") if ":" in line else (line, "", "")
        if not _valid_host(host) or (sep and not slots_text.isdigit()):
            raise DiscoveryError("host discovery script {}: line {} of its output, {!r}, is not HOST or HOST:SLOTS "
                                 "(e.g. 10.0.0.2:8); fix the script's output".format(script, number, raw[:200]))
        if sep:
            slots = int(slots_text)
            if slots < 1:
                raise DiscoveryError("host discovery script {}: line {} gives {} {} slots; slots must be at least 1 "
                                     "(leave a host out to give it none)".format(script, number, host, slots))
        elif default_slots is not None:
            slots = default_slots
        else:
            raise DiscoveryError("host discovery script {}: line {} names host {} without slots; print {}:SLOTS or "
                                 "pass --slots-per-host N".format(script, number, host, host))
        if host in found and found[host] != slots:
            raise DiscoveryError("host discovery script {}: host {} is listed twice, with {} and {} slots; list it "
                                 "once".format(script, host, found[host], slots))
        found[host] = slots
    return found


def run_script(script: str, default_slots: Optional[int]) -> "OrderedDict[str, int]":
    """One call of the discovery script (run by the shell, as horovodrun does)."""
    try:
        done = subprocess.run(script, shell=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=SCRIPT_SECONDS)
    except subprocess.TimeoutExpired:
        raise DiscoveryError("host discovery script {} did not finish within {:g} s".format(script, SCRIPT_SECONDS))
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-3:]
        raise DiscoveryError("host discovery script {} exited with code {}{}".format(
            script, done.returncode, ": " + " | ".join(tail) if tail else ""))
    return parse_output(done.stdout, default_slots, script)


class Blacklist:
    """Hosts whose worker failed. Without a cooldown range a host stays out for good; with (MIN, MAX) it comes
    back after a delay that doubles with each failure of that host (MIN * 2^n plus up to MIN at random), kept
    within [MIN, MAX] (Horovod's rule)."""

    def __init__(self, cooldown: Optional[Tuple[int, int]]) -> None:
        self.cooldown = cooldown
        self._until: Dict[str, float] = {}
        self._count: Dict[str, int] = {}

    def add(self, host: str, now: Optional[float] = None) -> None:
        now = time.monotonic() if now is None else now
        if self.is_out(host, now):
            return
        if self.cooldown is None:
            self._until[host] = float("inf")
            return
        low, high = self.cooldown
        self._count[host] = self._count.get(host, 0) + 1
        delay = low * (1 << self._count[host]) + random.uniform(0, 1) * low
        self._until[host] = now + max(low, min(high, delay))

    def is_out(self, host: str, now: Optional[float] = None) -> bool:
        now = time.monotonic() if now is None else now
        return self._until.get(host, 0.0) > now

    def hosts(self, now: Optional[float] = None) -> List[str]:
        return sorted(h for h in self._until if self.is_out(h, now))
