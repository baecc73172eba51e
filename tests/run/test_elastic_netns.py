"""Elastic perseusrun across two network namespaces: perseusrun and one worker in namespace A, the other worker
started over ssh in namespace B (a real sshd on port 36666, as test_multihost_netns.py). The remote worker is
SIGKILLed mid-epoch; the local one goes on alone from the last commit; host B comes back after its blacklist
cooldown and the job grows back to 2 over ssh. The final weights equal numpy's replay of the committed steps."""

import os
import signal
import subprocess
import time

import numpy as np
import pytest

import netns_helpers
from run_helpers import BASE_ENV, PERSEUSRUN, PYTHON
from support import elastic as E

reason = netns_helpers.missing_requirements()
pytestmark = [pytest.mark.integration, pytest.mark.skipif(bool(reason), reason=reason or "ok")]


def test_remote_worker_killed_then_host_back_after_cooldown(tmp_path):
    work = tmp_path / "netns"
    work.mkdir()
    hosts = netns_helpers.start(work)
    try:
        script, _ = E.discovery_script(tmp_path, [hosts.addr_a + ":1", hosts.addr_b + ":1"])
        env = dict(BASE_ENV, ELASTIC_TEST_HOLD="8", PYTHONPATH=os.environ.get("PYTHONPATH", ""))
        job = subprocess.Popen(hosts.in_a() + [
            PERSEUSRUN, "-np", "2", "--min-np", "1", "--max-np", "2", "--host-discovery-script", str(script),
            "--blacklist-cooldown-range", "1", "2", "--elastic-timeout", "60", "-p", str(netns_helpers.SSH_PORT),
            "--ssh-config", hosts.ssh_config, PYTHON, str(E.TRAIN), str(tmp_path), "16", "0.02", "3"],
            cwd=str(tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        failed = None
        try:
            E.wait_for(lambda: E.progress(tmp_path) == (8, 2), "2 workers holding after step 8", 120, job)
            remote = E.worker_pid(tmp_path, hosts.addr_b + ":0")
            assert remote in hosts.pids_in_b(), "the second worker runs in namespace B"
            os.kill(remote, signal.SIGKILL)
            E.wait_for(lambda: E.progress(tmp_path) == (8, 1), "1 worker at step 8", 60, job)
            time.sleep(3.5)  # the cooldown (2 s) ends: the driver plans the grown job and starts B's worker again
            (tmp_path / "go.8").write_text("")
            E.wait_for(lambda: E.progress(tmp_path)[1] == 2, "the job grown back to 2 workers", 90, job)
        except AssertionError as error:
            failed = error
        try:
            out, err = job.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            job.kill()
            out, err = job.communicate()
        assert failed is None, "{}\n{}".format(failed, err[-4000:])
        assert job.returncode == 0, err[-3000:]
        # over ssh, the remote shell reports the kill as 128 + 9
        assert "worker {}:0 exited with code 137".format(hosts.addr_b) in err
        sizes = [step["size"] for step in E.result(tmp_path)["history"]]
        assert sizes == [2] * 6 + [1] * 3 + [2] * 7, sizes
        result = E.result(tmp_path)
        assert np.max(np.abs(np.array(result["weights"]) - E.replay(result["history"]))) <= 1e-6
    finally:
        netns_helpers.stop(hosts)
