"""At exit perseus drains its threads, drops what it built and destroys a default process group the script left
alive, before torch's own exit handlers and the interpreter's teardown (bench/exit_soak.py counts the exits)."""

import pytest

from perseus_harness import launch

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


@pytest.mark.parametrize("api", ["ddp", "hvd"])
def test_exit_handler_leaves_nothing_alive_for_the_interpreter(api):
    for rank in launch("exit_order.py", 2, [api], env={"PERSEUS_MASTER_PORT": None}):
        assert rank.returncode == 0
        assert rank.output == {"default_group_alive": False, "world": False, "perseus_threads": []}
