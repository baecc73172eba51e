"""horovodrun's options on perseusrun's command line (perseus/run/horovod_flags.py): taken as the option they
spell or the setting they make, or refused by name before anything starts."""

import json
import os
import sys

import pytest

from run_helpers import PYTHON, perseusrun, rank_lines

from perseus.run import args, horovod_flags

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


def _plan(extra):
    proc = perseusrun(["-np", "2"] + extra + ["--dry-run", "--json", "--", "python", "train.py"])
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


def test_tunables_become_the_ranks_perseus_settings():
    plan, stderr = _plan(["--cycle-time-ms", "3", "--fusion-threshold-mb=0", "--num-nccl-streams", "2",
                          "--gloo-timeout-seconds", "45", "--hierarchical-allreduce"])
    for rank in plan["ranks"]:
        env = rank["env"]
        assert (env["PERSEUS_CYCLE_TIME_MS"], env["PERSEUS_ALLREDUCE_FUSION"], env["PERSEUS_ALLREDUCE_STREAMS"],
                env["GLOO_TIMEOUT_SECONDS"], env["PERSEUS_ALLREDUCE_MODE"]) == ("3", "0", "2", "45", "1")
    assert "read horovodrun's --cycle-time-ms as PERSEUS_CYCLE_TIME_MS=3 for every rank" in stderr


def test_other_spellings_of_perseusrun_options(tmp_path):
    key = tmp_path / "id_test"
    key.write_text("not a real key")
    plan, stderr = _plan(["-i", str(key), "--output-filename", str(tmp_path / "logs"), "--disable-cache"])
    assert plan["log_dir"] == str(tmp_path / "logs")
    assert "read horovodrun's -i as --ssh-identity-file" in stderr
    options = args.parse(["-np", "1", "-i", str(key), "--", "true"])
    assert options.ssh_identity_file == str(key)


@pytest.mark.parametrize("flag, message", [
    (["--timeline-filename", "/tmp/tl.json"], "--timeline-filename is horovodrun's and perseusrun does not take it: "
                                              "not supported: perseus writes no timeline"),
    (["--fusion-threshold-mb", "32"], "--fusion-threshold-mb is horovodrun's and perseusrun does not take it: perseus "
                                      "fuses by granularity"),
    (["--check-build"], "run `perseus doctor`"),
    (["--cycle-time-ms", "0"], "--cycle-time-ms: HOROVOD_CYCLE_TIME='0' (read as PERSEUS_CYCLE_TIME_MS) is not allowed"),
])
def test_refused_options_name_themselves_and_start_nothing(flag, message):
    proc = perseusrun(["-np", "1"] + flag + ["--", PYTHON, "-c", "print('STARTED')"])
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "STARTED" not in proc.stdout


def test_horovods_default_fusion_threshold_is_taken():
    plan, stderr = _plan(["--fusion-threshold-mb", "64", "--no-hierarchical-allreduce"])
    assert "PERSEUS_ALLREDUCE_FUSION" not in plan["ranks"][0]["env"]
    assert "asks for what perseus does by default" in stderr


def test_verbose_prints_the_plan_and_ranks_see_the_settings():
    probe = "import os; print('CYCLE', os.environ['PERSEUS_CYCLE_TIME_MS'])"
    proc = perseusrun(["-np", "2", "--verbose", "--cycle-time-ms", "2.5", "--", PYTHON, "-c", probe])
    assert proc.returncode == 0, proc.stderr
    assert "perseusrun plan: 2 ranks on 1 host(s)" in proc.stderr
    lines = rank_lines(proc.stdout)
    assert lines["0"] == ["CYCLE 2.5"] and lines["1"] == ["CYCLE 2.5"]


def test_every_flag_has_exactly_one_treatment():
    for flag in horovod_flags.FLAGS:
        treatments = [bool(flag.variable), bool(flag.spells), bool(flag.accepted), bool(flag.refused)]
        assert treatments.count(True) == 1, flag.names
        if flag.spells:
            assert flag.spells in {a for action in args.parser()._actions for a in action.option_strings}
