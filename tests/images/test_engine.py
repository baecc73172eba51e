from __future__ import annotations

import socket

import pytest

from aiacc_build.images.engine import EngineError, engine_from_env

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


def test_no_docker_host_means_the_tools_own_engine():
    assert engine_from_env({}) is None


def test_docker_host_is_used_and_never_replaced_by_a_started_engine(tmp_path):
    path = tmp_path / "docker.sock"
    with socket.socket(socket.AF_UNIX) as listener:  # bound but never answering: a dead engine
        listener.bind(str(path))
        with pytest.raises(EngineError) as failure:
            engine_from_env({"DOCKER_HOST": f"unix://{path}"})
    message = str(failure.value)
    assert f"DOCKER_HOST=unix://{path} does not answer" in message
    assert "unset DOCKER_HOST" in message
