"""The local builder stand-in's Dockerfile (no engine needed): the /opt/python layout cibuildwheel
looks for, the host CA bundle, the host's wheel folders seen under /host, and the glibc caveat."""

from __future__ import annotations

from aiacc_build.ci_local.builder import GLIBC_NOTE, bake_target_of, standin_dockerfile


def test_standin_has_the_interpreters_the_ca_bundle_and_says_what_it_does_not_prove(monkeypatch, tmp_path):
    monkeypatch.setenv("PIP_FIND_LINKS", f"{tmp_path} relative/dir")
    text = standin_dockerfile("perseus-base:debian12-cpu")
    assert text.splitlines()[1] == "FROM perseus-base:debian12-cpu"
    for ident in ("cp39-cp39", "cp310-cp310", "cp311-cp311"):
        assert f"-m venv /opt/python/{ident}" in text
    assert "COPY host-ca-bundle.crt /etc/ssl/certs/ca-certificates.crt" in text
    assert f"PIP_FIND_LINKS=/host{tmp_path}" in text and "relative/dir" not in text
    assert "not the manylinux glibc floor" in GLIBC_NOTE and GLIBC_NOTE in text


def test_the_bake_step_names_its_target_last():
    run = 'base="$(python x.py manylinux_2_28 x86_64)"\ndocker buildx bake --load --set t.args.MANYLINUX_IMAGE="$base" builder-manylinux_2_28-cpu-x86_64\n'
    assert bake_target_of(run) == "builder-manylinux_2_28-cpu-x86_64"
