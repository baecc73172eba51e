"""perseusrun's signal handlers run on the main thread, between any two of its bytecodes: also while that thread
holds the console lock (it has just written a line to stderr). A handler that takes the lock itself never returns:
perseusrun then ignores every further signal and relays no more output (a CI run saw `perseusrun` outlive SIGTERM by
60 s). The handlers must only record the signal."""

import signal
import threading

import pytest

from perseus.run import args
from perseus.run.elastic.driver import Driver
from perseus.run.supervisor import Supervisor

pytestmark = pytest.mark.integration  # the elastic driver binds its service socket (tests/support/fast_tier.py)


def _returns_while_held(lock: threading.Lock, handler) -> bool:
    with lock:
        caller = threading.Thread(target=handler, args=(signal.SIGTERM, None), daemon=True)
        caller.start()
        caller.join(timeout=3.0)
        return not caller.is_alive()


def test_the_elastic_driver_records_a_signal_without_the_console_lock():
    options = args.parse(["-np", "2", "--host-discovery-script", "/bin/true", "python", "train.py"])
    driver = Driver(options, {})
    assert _returns_while_held(driver.console, driver._on_signal)
    assert driver.signalled == signal.SIGTERM


def test_the_supervisor_records_a_signal_without_the_output_lock():
    supervisor = Supervisor(plan=None, environ={})  # the handler needs no plan
    assert _returns_while_held(supervisor.lock, supervisor._on_signal)
    assert supervisor.signalled == signal.SIGTERM
