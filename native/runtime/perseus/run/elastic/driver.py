"""The elastic driver: keeps a worker on every assigned slot, plans generations and answers the workers.

Each tick it computes the slots the job should use now: the discovered hosts in the order they were first seen
(the oldest get the lowest ranks, so rank 0 is a worker that holds the state), their slots, blacklisted hosts
left out, at most --max-np. When that list differs from the current generation's members (a worker failed and
its host was blacklisted, a host appeared or left) or a member asks to re-form, it plans the next generation:
a fresh engine store, new workers on new slots, the host-update counter raised (members learn of it at their
next commit). A generation is formed when every member has asked to join it; they then get their numbers.
Fewer than --min-np slots for longer than --elastic-timeout, a discovery script that fails on its first call
(or keeps failing for longer than the timeout), a generation that does not form within the timeout, or more
than --reset-limit resets end the job with a message naming the cause, exit code 1.
"""

import os
import signal
import socket
import sys
import threading
import time
from collections import OrderedDict
from typing import Dict, List, Mapping, Optional

from perseus.launch.torchrun import PERSEUSRUN_MARKER

from .. import environment
from .. import store as served_store
from ..hosts import is_local
from ..options import Options
from ..plan import horovod_env
from . import discovery, workers
from .service import Service

TICK_SECONDS = 0.05
DISCOVER_SECONDS = 1.0  # horovodrun's frequency too
FAILED = 1  # perseusrun's exit code when the elastic job is ended for a reason of its own


class JobFailed(Exception):
    """Ends the elastic job; the message names the cause."""


def _route_address(toward: str) -> str:
    """This machine's address on the route to `toward` (the one a remote worker reaches perseusrun at)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((socket.gethostbyname(toward), 9))  # UDP: no packet is sent
            return str(s.getsockname()[0])
    except OSError:
        return socket.gethostbyname(socket.gethostname())


class Driver:
    def __init__(self, options: Options, environ: Mapping[str, str]) -> None:
        self.o = options
        self.environ = dict(environ)
        self.cond = threading.Condition()
        self.console = threading.Lock()
        self.blacklist = discovery.Blacklist(options.cooldown_range)
        self.hosts: "OrderedDict[str, int]" = OrderedDict()  # the last discovery, in first-seen order
        self.first_seen: Dict[str, int] = {}
        self.discovered_once = False
        self.discovery_failing_since: Optional[float] = None
        self.discovery_error: Optional[str] = None
        self.workers: Dict[str, workers.Worker] = {}
        self.told_to_stop: set = set()
        self.generation = 0  # the last planned; 0: none yet
        self.formed = 0  # the last formed
        self.members: List[str] = []
        self.last_formed_members: List[str] = []
        self.answers: Dict[str, dict] = {}
        self.waiting: Dict[str, int] = {}  # worker -> the generation it last had, while it waits in join
        self.planned_at = 0.0
        self.store: Optional[served_store.StoreProcess] = None
        self.old_stores: List[served_store.StoreProcess] = []
        self.updates = 0
        self.removed_only: Dict[int, bool] = {}
        self.resets = 0
        self.reset_requested = False
        self.short_since: Optional[float] = None
        self.lost_at: Optional[float] = None  # when the last member loss was seen (for the re-rendezvous time)
        self.lost: Optional[str] = None  # the last lost worker, as the plan's reason
        self.success = False
        self.success_at: Optional[float] = None
        self.failure: Optional[str] = None
        self.signalled: Optional[int] = None
        self.stopping = threading.Event()
        self.service = Service(self.answer)
        self.grace = min(5.0, environment.gloo_timeout(environ) / 4)

    # -- output ------------------------------------------------------------------------------------------
    def say(self, message: str) -> None:
        with self.console:
            sys.stderr.write("perseusrun: elastic: {}\n".format(message))
            sys.stderr.flush()

    # -- discovery ---------------------------------------------------------------------------------------
    def _discover_once(self) -> "OrderedDict[str, int]":
        if self.o.host_discovery_script:
            return discovery.run_script(self.o.host_discovery_script, self.o.slots_per_host)
        return OrderedDict((h.host, h.slots) for h in self.o.fixed_hosts or [])

    def _discover_loop(self) -> None:
        while not self.stopping.is_set():
            try:
                found = self._discover_once()
                with self.cond:
                    self._take_hosts(found)
                    self.discovery_failing_since, self.discovery_error = None, None
                    self.discovered_once = True
            except discovery.DiscoveryError as error:
                with self.cond:
                    if not self.discovered_once:
                        self.failure = "the job cannot start, discovery failed on its first call: {}".format(error)
                    else:
                        if self.discovery_failing_since is None:
                            self.discovery_failing_since = time.monotonic()
                            self.say("{}; retrying for up to --elastic-timeout {} s".format(error, self.o.elastic_timeout))
                        self.discovery_error = str(error)
            self.stopping.wait(DISCOVER_SECONDS)

    def _take_hosts(self, found: "OrderedDict[str, int]") -> None:
        for host in found:
            self.first_seen.setdefault(host, len(self.first_seen))
        ordered = OrderedDict(sorted(found.items(), key=lambda item: self.first_seen[item[0]]))
        if ordered != self.hosts:
            self.say("hosts now {}".format(", ".join("{}:{}".format(h, n) for h, n in ordered.items()) or "none"))
        self.hosts = ordered

    # -- planning ----------------------------------------------------------------------------------------
    def _desired(self) -> List[str]:
        slots = ["{}:{}".format(host, slot) for host, count in self.hosts.items() if not self.blacklist.is_out(host)
                 for slot in range(count)]
        return slots[: self.o.max_np] if self.o.max_np is not None else slots

    def _host_of(self, wid: str) -> str:
        return wid.rpartition(":")[0]

    def _store_host(self, members: List[str]) -> str:
        remote = [self._host_of(w) for w in members if not is_local(self._host_of(w))]
        return _route_address(remote[0]) if remote else "127.0.0.1"

    def _plan(self, desired: List[str], why: str) -> None:
        if self.formed and self.o.reset_limit is not None and self.resets >= self.o.reset_limit:
            raise JobFailed("the job would re-form a {} time ({}), but --reset-limit is {}; raise --reset-limit or fix "
                            "what makes the workers fail".format(
                                _ordinal(self.resets + 1), why, self.o.reset_limit))
        if self.last_formed_members and not set(desired) & set(self.last_formed_members):
            raise JobFailed("no worker of generation {} is left to hand its state on ({}); the job cannot go on"
                            .format(self.formed, why))
        previous = set(self.members)
        self.generation += 1
        self.members = list(desired)
        self.planned_at = time.monotonic()
        self.reset_requested = False
        if self.store is not None:
            self.old_stores.append(self.store)
        self.store, why_not = served_store.start()
        if self.store is None:
            raise JobFailed("elastic mode needs the engine's store, which this installation cannot serve ({}); "
                            "install a perseus binding (perseus_torch) beside perseus-common".format(why_not or "no engine library"))
        self.updates += 1
        self.removed_only[self.updates] = bool(previous) and set(desired) <= previous
        self.answers = self._assign(self.members)
        self.say("planning generation {} with {} worker(s) ({}): {}".format(
            self.generation, len(desired), why, ", ".join(desired)))
        for wid in desired:
            worker = self.workers.get(wid)
            if worker is None or not worker.running:
                self._start(wid)
        self.cond.notify_all()

    def _assign(self, members: List[str]) -> Dict[str, dict]:
        store_host = self._store_host(members)
        hosts: "OrderedDict[str, List[str]]" = OrderedDict()
        for wid in members:
            hosts.setdefault(self._host_of(wid), []).append(wid)
        local_sizes = [len(ws) for ws in hosts.values()]
        answers = {}
        for rank, wid in enumerate(members):
            host = self._host_of(wid)
            node = list(hosts).index(host)
            local_rank, local_size = hosts[host].index(wid), len(hosts[host])
            env = {"RANK": str(rank), "WORLD_SIZE": str(len(members)), "LOCAL_RANK": str(local_rank),
                   "LOCAL_WORLD_SIZE": str(local_size), "GROUP_RANK": str(node), "NODE_RANK": str(node),
                   "GROUP_WORLD_SIZE": str(len(hosts)), "MASTER_ADDR": store_host,
                   PERSEUSRUN_MARKER[0]: PERSEUSRUN_MARKER[1],
                   served_store.VARIABLE: "{}:{}".format(store_host, self.store.port)}  # type: ignore[union-attr]
            env.update(horovod_env(rank, len(members), local_rank, local_size, host, local_sizes))
            answers[wid] = {"generation": self.generation, "rank": rank, "size": len(members),
                            "local_rank": local_rank, "local_size": local_size, "node": node, "num_nodes": len(hosts),
                            "store_host": store_host, "store_port": self.store.port,  # type: ignore[union-attr]
                            "updates": self.updates, "env": env}
        return answers

    def _start(self, wid: str) -> None:
        host, slot = self._host_of(wid), int(wid.rpartition(":")[2])
        local = is_local(host)
        address = "127.0.0.1" if local else _route_address(host)
        env = {"PERSEUS_ELASTIC_DRIVER": "{}:{}".format(address, self.service.port), "PERSEUS_ELASTIC_WORKER": wid,
               "PERSEUS_USE_DDP_LAUNCHER": "0", "HOROVOD_HOSTNAME": host}
        if "PYTHONUNBUFFERED" not in self.environ:
            env["PYTHONUNBUFFERED"] = "1"
        if "OMP_NUM_THREADS" not in self.environ and self.hosts.get(host, 1) > 1:
            env["OMP_NUM_THREADS"] = "1"
        env.update(environment.exports(self.o.exports, self.environ))
        if not local:
            env = dict(environment.forwarded(self.environ), **env)
        ssh = {"port": self.o.ssh_port, "identity_file": self.o.ssh_identity_file, "config_file": self.o.ssh_config}
        self.workers[wid] = workers.start(wid, host, slot, local, list(self.o.command), env, self.environ,
                                          os.getcwd(), self.grace, ssh, self.o.log_dir, self.console)
        self.told_to_stop.discard(wid)

    # -- the workers' requests ---------------------------------------------------------------------------
    def answer(self, request: dict) -> dict:
        if request.get("op") == "updates":
            with self.cond:
                since = int(request.get("since", 0))
                removed = all(self.removed_only.get(n, False) for n in range(since + 1, self.updates + 1))
                return {"counter": self.updates, "removed_only": removed}
        if request.get("op") != "join":
            return {"stop": "unknown request {!r}".format(request.get("op")), "code": 2}
        wid, last = str(request.get("worker", "")), int(request.get("last", -1))
        with self.cond:
            if wid in self.members and self.formed == self.generation and last >= self.generation:
                self.reset_requested = True  # a member of the formed generation lost it: form the next one
            self.waiting[wid] = last
            self.cond.notify_all()
            try:
                while True:
                    if self.success:
                        self.told_to_stop.add(wid)
                        return {"stop": "the job has finished (a worker ended training)", "code": 0}
                    if self.failure is not None or self.stopping.is_set():
                        return {"stop": "the job is ending ({})".format(self.failure or "done"), "code": 1}
                    if wid not in self.members and self.generation > last:
                        self.told_to_stop.add(wid)
                        return {"stop": "its slot is not in generation {} (host left, or above --max-np)".format(
                            self.generation), "code": 0}
                    if self.formed == self.generation and self.generation > last and wid in self.members:
                        return self.answers[wid]
                    self.cond.wait(0.5)
            finally:
                self.waiting.pop(wid, None)

    def _check_formed(self) -> None:
        if self.formed == self.generation or not self.members:
            return
        if all(self.waiting.get(w, self.generation) < self.generation for w in self.members):
            took = time.monotonic() - self.planned_at
            loss = "" if self.lost_at is None else ", {:.3f} s after the worker loss".format(time.monotonic() - self.lost_at)
            if self.formed:
                self.resets += 1
            self.formed = self.generation
            self.last_formed_members = list(self.members)
            self.lost_at = None
            self.say("generation {} formed: {} worker(s), rendezvous took {:.3f} s{}".format(
                self.generation, len(self.members), took, loss))
            for old in self.old_stores:
                old.stop()
            self.old_stores = []
            self.cond.notify_all()
        elif time.monotonic() - self.planned_at > self.o.elastic_timeout:
            missing = [w for w in self.members if self.waiting.get(w, self.generation) >= self.generation]
            raise JobFailed("generation {} did not form within --elastic-timeout {} s: worker(s) {} never asked to "
                            "join (is the command calling hvd.init() / hvd.elastic.run?)".format(
                                self.generation, self.o.elastic_timeout, ", ".join(missing)))

    # -- the loop ----------------------------------------------------------------------------------------
    def _reap(self) -> None:
        for wid, worker in self.workers.items():
            if worker.running or getattr(worker, "seen", False):
                continue
            worker.seen = True  # type: ignore[attr-defined]
            code = worker.returncode
            if code == 0 and wid in self.last_formed_members and wid not in self.told_to_stop:
                self.success = True  # training ended; a generation planned meanwhile is not formed any more
                self.success_at = self.success_at or time.monotonic()
                self.cond.notify_all()
                continue
            if wid in self.told_to_stop or code == 0:
                continue
            how = "was killed by {}".format(signal.Signals(-code).name) if code < 0 else "exited with code {}".format(code)
            self.blacklist.add(worker.host)
            self.lost_at = self.lost_at or time.monotonic()
            self.lost = "worker {} {}".format(wid, how)
            self.say("worker {} {}; host {} is blacklisted{}".format(
                wid, how, worker.host, "" if self.o.cooldown_range is None else " for a cooldown period"))

    def _tick(self) -> None:
        if self.failure is not None:
            raise JobFailed(self.failure)
        now = time.monotonic()
        if self.discovery_failing_since is not None and now - self.discovery_failing_since > self.o.elastic_timeout:
            raise JobFailed("{} for longer than --elastic-timeout {} s".format(self.discovery_error, self.o.elastic_timeout))
        self._reap()
        if self.success or not self.discovered_once:
            return
        desired = self._desired()
        need, flag = (self.o.min_np, "--min-np") if self.generation else (self.o.np, "-np")  # -np: to start
        if len(desired) < need:
            if self.short_since is None:
                self.short_since = now
                self.say("{} slot(s) available, {} is {}; waiting up to --elastic-timeout {} s for more".format(
                    len(desired), flag, need, self.o.elastic_timeout))
            elif now - self.short_since > self.o.elastic_timeout:
                raise JobFailed("only {} slot(s) available (hosts: {}; blacklisted: {}) for longer than "
                                "--elastic-timeout {} s, fewer than {} {}".format(
                                    len(desired), ", ".join("{}:{}".format(h, n) for h, n in self.hosts.items()) or "none",
                                    ", ".join(self.blacklist.hosts()) or "none", self.o.elastic_timeout, flag, need))
            return
        self.short_since = None
        if not self.generation:
            self._plan(desired, "start")
        elif desired != self.members:
            self._plan(desired, self.lost or "hosts changed")
            self.lost = None
        elif self.reset_requested:
            self._plan(desired, "a worker asked to re-form")
        self._check_formed()

    def run(self) -> int:
        handled = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        previous = {s: signal.signal(s, self._on_signal) for s in handled}
        self.service.start()
        discoverer = threading.Thread(target=self._discover_loop, name="perseusrun-discovery", daemon=True)
        discoverer.start()
        code = 0
        try:
            while True:
                if self.signalled is not None:
                    self.say("{} received, ending all workers".format(signal.Signals(self.signalled).name))
                    code = 128 + self.signalled
                    break
                with self.cond:
                    self._tick()
                    if self.success_at is not None and time.monotonic() - self.success_at > self.o.elastic_timeout:
                        late = [w.wid for w in self.workers.values() if w.running]
                        self.say("training ended, but worker(s) {} still run after --elastic-timeout {} s; ending "
                                 "them".format(", ".join(late), self.o.elastic_timeout))
                        break
                    if self.success and all(not w.running for w in self.workers.values()):
                        failed = [w for w in self.workers.values() if w.returncode not in (0, None)
                                  and w.wid in self.members and w.wid not in self.told_to_stop]
                        code = 128 - failed[0].returncode if failed and failed[0].returncode < 0 else (
                            failed[0].returncode if failed else 0)
                        break
                time.sleep(TICK_SECONDS)
        except JobFailed as error:
            self.failure = str(error)
            self.say("error: {}".format(error))
            code = FAILED
        finally:
            self.stopping.set()
            with self.cond:
                self.cond.notify_all()
            self._end_workers()
            self.service.stop()
            for store in self.old_stores + ([self.store] if self.store else []):
                store.stop()
            for s, handler in previous.items():
                signal.signal(s, handler)
        return code

    def _on_signal(self, signum: int, frame: object) -> None:
        # Only records: the handler runs on the main thread, which may hold the console lock (a deadlock) or be
        # inside a write to stderr (a reentrant write); the loop reports it.
        if self.signalled is None:
            self.signalled = signum

    def _end_workers(self) -> None:
        for worker in self.workers.values():
            worker.terminate()
        deadline = time.monotonic() + self.grace
        while time.monotonic() < deadline and any(w.running for w in self.workers.values()):
            time.sleep(TICK_SECONDS)
        for worker in self.workers.values():
            worker.kill()  # also what a worker left in its process group
        for worker in self.workers.values():
            worker.waiter.join(timeout=2.0)
            for output in worker.outputs:
                output.thread.join(timeout=2.0)


def _ordinal(n: int) -> str:
    return "{}{}".format(n, "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th"))
