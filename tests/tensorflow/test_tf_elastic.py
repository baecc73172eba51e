"""hvd.elastic for TensorFlow 2 with Keras 3 (tf.keras is Keras 3 on TensorFlow 2.21) under elastic perseusrun, with
real processes. Hosts are loopback addresses 127.0.0.x, one slot each, as in tests/run/test_elastic.py, or (where
root, ip and sshd are here) network namespaces with an sshd each (tests/support/netns_hosts.py), as in
tests/run/test_elastic_netns.py."""

import os
import signal
import sys
from pathlib import Path

import numpy as np
import pytest

from support import elastic as E
from support import netns_hosts

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

WORKERS = Path(__file__).resolve().parent / "workers"
TRAIN = WORKERS / "tf_elastic_train.py"
FIT = WORKERS / "tf_elastic_fit.py"
HOSTS = ["127.0.0.1:1", "127.0.0.2:1", "127.0.0.3:1", "127.0.0.4:1"]
ENV = {"TF_CPP_MIN_LOG_LEVEL": "3", "GLOO_TIMEOUT_SECONDS": "60"}


def test_kill_one_worker_then_grow_back_tensorflow_keras3(tmp_path, tf):
    """TF2 + Keras 3, a custom loop with TensorFlowKerasState: 4 workers train; one is SIGKILLed mid-epoch (the
    workers hold before step 9) and its host leaves discovery; 3 go on from the last commit (step 6); a new host
    appears and the job grows back to 4 at the commit after step 9. The final weights equal numpy's replay of the
    committed steps."""
    script, set_hosts = E.discovery_script(tmp_path, HOSTS)
    job = E.start(["-np", "4", "--min-np", "3", "--max-np", "4", "--host-discovery-script", str(script),
                   "--elastic-timeout", "90", sys.executable, str(TRAIN), str(tmp_path), "16", "0.02", "3"], tmp_path,
                  env=dict(ENV, ELASTIC_TEST_HOLD="8"))
    failed = E.lose_one_then_grow_back(tmp_path, job, set_hosts, HOSTS, "127.0.0.5:1", 150)
    code, out, err = E.finish(job, 150)
    assert failed is None, "{}\n{}".format(failed, err[-4000:])
    assert code == 0, err[-3000:]
    assert "worker 127.0.0.4:0 was killed by SIGKILL" in err
    result = E.result(tmp_path)
    assert result["keras"].startswith("3."), result["keras"]
    sizes = [step["size"] for step in result["history"]]
    # commits after steps 3, 6, 9, ...: steps 7 and 8 ran with 4 workers, were lost with the kill and ran again
    # with 3; the new host joined at the commit after step 9
    assert sizes == [4] * 6 + [3] * 3 + [4] * 7, sizes
    assert "[127.0.0.5:0]<stdout>:COMMIT step 12 size 4" in out, out[-3000:]
    diff = np.max(np.abs(np.array(result["weights"]) - E.replay(result["history"], E.result_data(result))))
    assert diff <= 1e-6, diff


def test_keras_fit_with_the_elastic_callbacks_goes_on_after_a_lost_worker(tmp_path, tf):
    """Keras 3 model.fit with KerasState, CommitStateCallback(batches_per_commit=5), UpdateBatchStateCallback and
    UpdateEpochStateCallback: 2 workers; the second is SIGKILLed after step 8 (fit holds there); the first goes on
    alone from the commit after step 5, and the epoch it retries skips the committed samples. The final weights
    equal numpy's replay of the committed steps; the state's epoch counts both epochs across the reset."""
    script, set_hosts = E.discovery_script(tmp_path, HOSTS[:2])
    job = E.start(["-np", "2", "--min-np", "1", "--max-np", "2", "--host-discovery-script", str(script),
                   "--elastic-timeout", "90", sys.executable, str(FIT), str(tmp_path), "2", "5"], tmp_path,
                  env=dict(ENV, ELASTIC_TEST_HOLD="8"))
    failed = None
    try:
        E.wait_for(lambda: E.progress(tmp_path) == (8, 2), "2 workers holding after step 8", 150, job)
        os.kill(E.worker_pid(tmp_path, "127.0.0.2:0"), signal.SIGKILL)
        set_hosts(HOSTS[:1])
        E.wait_for(lambda: E.progress(tmp_path) == (8, 1), "1 worker at step 8 again", 90, job)
        (tmp_path / "go.8").write_text("")
    except AssertionError as error:
        failed = error
    code, out, err = E.finish(job, 150)
    assert failed is None, "{}\n{}".format(failed, err[-4000:])
    assert code == 0, err[-3000:]
    assert "worker 127.0.0.2:0 was killed by SIGKILL" in err
    result = E.result(tmp_path)
    assert result["keras"].startswith("3."), result["keras"]
    assert (result["epoch"], result["batch"]) == (2, 0)
    sizes = [step["size"] for step in result["history"]]
    # 12 steps make an epoch of 2 workers; steps 6-8 were lost with the kill; the 28 samples epoch 0 had left
    # make 14 steps of 1 worker, then epoch 1 is 24 steps
    assert sizes == [2] * 5 + [1] * 38, sizes
    for epoch in (0, 1):
        samples = [i for step in result["history"] if step["epoch"] == epoch for p in step["parts"] for i in p]
        assert sorted(samples) == list(range(48)), epoch  # each sample once per epoch, the retried one included
    diff = np.max(np.abs(np.array(result["weights"]) - E.replay(result["history"], E.result_data(result))))
    assert diff <= 1e-6, diff


def test_process_sets_registered_before_a_reset_are_refused_then_registered_again_tensorflow(tmp_path, tf):
    """tests/support/elastic.process_sets_story with TensorFlow 2: 4 workers, sets [0, 1] (from hvd.init) and
    [0, 3]; rank 3 is SIGKILLed; the old sets are refused naming the reset, registered again they give the right
    sums."""
    E.process_sets_story(tmp_path, "tensorflow", ENV)


NETNS_MISSING = netns_hosts.missing_requirements()


@pytest.mark.skipif(bool(NETNS_MISSING), reason=NETNS_MISSING or "ok")
def test_four_namespaces_kill_one_then_a_fifth_host_grows_the_job_back_tensorflow_keras3(tmp_path, tf):
    """The first test's story across network namespaces: hosts 0-3 train (perseusrun and worker 0 in host 0's
    namespace, the others started over ssh in their own); host 3's worker is SIGKILLed holding after step 8 and host
    3 leaves discovery; 3 go on from the commit after step 6; host 4 appears and joins at the commit after step 9.
    The final weights equal numpy's replay of the committed steps."""
    work = tmp_path / "netns"
    work.mkdir()
    hosts = netns_hosts.start(work, 5)
    try:
        exports = [arg for name, value in sorted(dict(ENV, ELASTIC_TEST_HOLD="8").items())
                   for arg in ("-x", "{}={}".format(name, value))]  # the remote workers get them too
        out, result = E.namespaces_lose_one_then_grow_back(
            tmp_path, hosts, netns_hosts.SSH_PORT, exports,
            [sys.executable, str(TRAIN), str(tmp_path), "16", "0.02", "3"], 90)
        assert result["keras"].startswith("3."), result["keras"]
        sizes = [step["size"] for step in result["history"]]
        assert sizes == [4] * 6 + [3] * 3 + [4] * 7, sizes
        assert "[{}:0]<stdout>:COMMIT step 12 size 4".format(hosts.addrs[4]) in out, out[-3000:]
        diff = np.max(np.abs(np.array(result["weights"]) - E.replay(result["history"], E.result_data(result))))
        assert diff <= 1e-6, diff
    finally:
        netns_hosts.stop(hosts)
    assert not netns_hosts.left_over(hosts)
