"""Bad matrices: every problem is reported with the file, the line and what is wrong (exit code 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiacc_build.errors import MatrixError
from aiacc_build.matrix import load_release


def line_of(text: str, needle: str, nth: int = 1) -> int:
    """1-based line of the nth line containing `needle`."""
    hits = [i + 1 for i, line in enumerate(text.splitlines()) if needle in line]
    assert len(hits) >= nth, f"{needle!r} not in the test text"
    return hits[nth - 1]


def broken(tmp_path: Path, text: str, name: str = "1.5.0.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def problems_of(path: Path, facts_dir: Path | None = None) -> str:
    with pytest.raises(MatrixError) as info:
        load_release(path, facts_dir=facts_dir)
    assert info.value.exit_code == 3
    return str(info.value)


def assert_reported(message: str, path: Path, line: int, *fragments: str) -> None:
    where = f"{path}:{line}:"
    matching = [m for m in message.splitlines() if m.startswith(where)]
    assert matching, f"no problem reported at {where}; got:\n{message}"
    for fragment in fragments:
        assert any(fragment in m for m in matching), f"{fragment!r} missing at {where}; got:\n{message}"


def test_unknown_top_level_key_suggests_the_right_one(tmp_path, seed_text):
    text = seed_text.replace("\npythons:", "\npythonz:")
    path = broken(tmp_path, text)
    msg = problems_of(path)
    assert_reported(msg, path, line_of(text, "pythonz:"), "unknown key 'pythonz'", "did you mean 'pythons'?")


def test_unknown_key_in_release_section(tmp_path, seed_text):
    text = seed_text.replace("  cibuildwheel:", "  cibuildweel:")
    path = broken(tmp_path, text)
    msg = problems_of(path)
    assert_reported(msg, path, line_of(text, "cibuildweel:"), "unknown key 'cibuildweel' in release", "did you mean 'cibuildwheel'?")


def test_unknown_key_in_framework_rules(tmp_path, seed_text):
    text = seed_text.replace("  mxnet:\n    env_pythons:", "  mxnet:\n    env_python:")
    path = broken(tmp_path, text)
    msg = problems_of(path)
    assert_reported(msg, path, line_of(text, "env_python:"), "unknown key 'env_python' in frameworks.mxnet", "did you mean 'env_pythons'?")


def test_duplicate_mapping_key(tmp_path, seed_text):
    text = seed_text.replace("      cuda11.0: [\"2.4.0\"]", "      cuda11.0: [\"2.4.0\"]\n      cuda10.0: [\"1.14.0\"]")
    path = broken(tmp_path, text)
    msg = problems_of(path)
    first = line_of(text, 'cuda10.0: ["1.14.0", "1.15.0", "2.0.0"]')
    assert_reported(msg, path, line_of(text, 'cuda10.0: ["1.14.0"]'), "duplicate key 'cuda10.0'", f"first defined on line {first}")


def test_duplicate_entry_in_support_table(tmp_path, seed_text):
    text = seed_text.replace('cuda11.0: ["1.7.0", "1.7.1"]', 'cuda11.0: ["1.7.0", "1.7.1",\n                "1.7.1"]')
    path = broken(tmp_path, text)
    msg = problems_of(path)
    assert_reported(msg, path, line_of(text, '                "1.7.1"]'), "duplicate entry torch 1.7.1 under cuda11.0")


def test_duplicate_python_in_release_pythons(tmp_path, seed_text):
    text = seed_text.replace('pythons: ["3.6", "3.7", "3.8", "3.9"]', 'pythons:\n  - "3.6"\n  - "3.7"\n  - "3.6"')
    path = broken(tmp_path, text)
    msg = problems_of(path)
    first = line_of(text, '  - "3.6"')
    assert_reported(msg, path, line_of(text, '  - "3.6"', nth=2), "duplicate entry '3.6'", f"first on line {first}")


def test_python_the_framework_version_never_had(tmp_path, seed_text):
    text = seed_text.replace('cuda10.0: ["1.2.0", "1.3.0"]', 'cuda10.0:\n        - {version: "1.2.0", pythons: ["3.6", "3.9"]}\n        - "1.3.0"')
    path = broken(tmp_path, text)
    msg = problems_of(path)
    assert_reported(msg, path, line_of(text, 'version: "1.2.0"'), "torch 1.2.0 cuda10.0 x86_64 has no wheel for Python 3.9", "it has 3.5, 3.6, 3.7")


def test_cuda_the_framework_version_never_had(tmp_path, seed_text):
    text = seed_text.replace('cuda11.0: ["1.7.0", "1.7.1"]', 'cuda11.0: ["1.7.0", "1.7.1"]\n      cuda10.1-rows: []').replace(
        'cuda10.1: ["1.6.0", "1.5.1", "1.4.0"]', 'cuda10.1: ["1.6.0", "1.5.1", "1.4.0",\n                 "1.7.1"]'
    ).replace("\n      cuda10.1-rows: []", "")
    path = broken(tmp_path, text)
    msg = problems_of(path)
    assert_reported(msg, path, line_of(text, '                 "1.7.1"]'), "torch 1.7.1 never had a cuda10.1 build upstream", "cuda11.0 x86_64")


def test_aarch64_where_upstream_has_no_wheel(tmp_path, modern_text):
    text = modern_text.replace(
        '  tensorflow:\n    # 2.14.1 is the last CUDA 11.8 build; 2.20/2.21 the current CUDA 12 line\n    versions: ["2.14.1", "2.20.0", "2.21.0"]\n    accelerators:\n      cuda: {min: "11.8", max: "13.9"}\n      cpu: true',
        '  tensorflow:\n    support:\n      cuda12.5:\n        - {version: "2.20.0", arches: [aarch64]}',
    )
    assert "{version: \"2.20.0\", arches: [aarch64]}" in text
    path = broken(tmp_path, text, "2.0.0.yaml")
    msg = problems_of(path)
    assert_reported(msg, path, line_of(text, 'arches: [aarch64]}'), "tensorflow 2.20.0 cuda12.5 has no aarch64 wheel upstream")


def test_malformed_framework_version(tmp_path, seed_text):
    text = seed_text.replace('cuda11.0: ["1.7.0", "1.7.1"]', 'cuda11.0: ["1.7.0", "1.7.x"]')
    path = broken(tmp_path, text)
    msg = problems_of(path)
    assert_reported(msg, path, line_of(text, '"1.7.x"'), "'1.7.x' is not a valid version")


def test_framework_version_with_local_label(tmp_path, seed_text):
    text = seed_text.replace('cuda11.0: ["1.7.0", "1.7.1"]', 'cuda11.0: ["1.7.0", "1.7.1+cu110"]')
    path = broken(tmp_path, text)
    msg = problems_of(path)
    assert_reported(msg, path, line_of(text, '"1.7.1+cu110"'), "has a local label", "'1.7.1'")


def test_malformed_python_version(tmp_path, seed_text):
    text = seed_text.replace('  tensorflow:\n    env_pythons: ["3.6"]', '  tensorflow:\n    env_pythons: ["python3.6"]')
    path = broken(tmp_path, text)
    msg = problems_of(path)
    assert_reported(msg, path, line_of(text, '"python3.6"'), "'python3.6' is not a CPython minor version")


def test_malformed_accelerator(tmp_path, seed_text):
    text = seed_text.replace('      cuda11.0: ["2.4.0"]', '      cuda11: ["2.4.0"]')
    path = broken(tmp_path, text)
    msg = problems_of(path)
    assert_reported(msg, path, line_of(text, 'cuda11: ["2.4.0"]'), "'cuda11' is not an accelerator")


def test_missing_required_key(tmp_path, seed_text):
    text = "\n".join(line for line in seed_text.splitlines() if not line.startswith("  mirror_url:")) + "\n"
    path = broken(tmp_path, text)
    msg = problems_of(path)
    assert_reported(msg, path, line_of(text, "release:"), "missing required key 'mirror_url' in release")


def test_unknown_framework_version_names_the_nearest(tmp_path, seed_text):
    text = seed_text.replace('cuda11.0: ["1.7.0", "1.7.1"]', 'cuda11.0: ["1.7.0", "1.7.2"]')
    path = broken(tmp_path, text)
    msg = problems_of(path)
    assert_reported(msg, path, line_of(text, '"1.7.2"'), "torch 1.7.2 is not in the facts (torch.yaml)", "nearest known: 1.7.1")


def test_environment_python_the_framework_does_not_run_on(tmp_path, seed_text):
    text = seed_text.replace('  tensorflow:\n    env_pythons: ["3.6"]', '  tensorflow:\n    env_pythons: ["3.6", "3.8"]')
    path = broken(tmp_path, text)
    msg = problems_of(path)
    assert_reported(msg, path, line_of(text, 'env_pythons: ["3.6", "3.8"]'), "tensorflow 1.14.0 (cuda10.0, x86_64) does not run on Python 3.8")


def test_exclude_rule_that_matches_nothing(tmp_path, seed_text):
    text = seed_text.replace(
        '  mxnet:\n    env_pythons: ["3.6"]',
        '  mxnet:\n    exclude:\n      - {version: "1.4.1", accelerator: cuda11.0, reason: "not built"}\n    env_pythons: ["3.6"]',
    )
    path = broken(tmp_path, text)
    msg = problems_of(path)
    assert_reported(msg, path, line_of(text, 'reason: "not built"'), "this exclude rule matches no cell")


def test_file_name_must_match_release_version(tmp_path, seed_text):
    path = broken(tmp_path, seed_text, "1.5.1.yaml")
    msg = problems_of(path)
    assert_reported(msg, path, line_of(seed_text, 'version: "1.5.0"'), "declares release '1.5.0'", "name the file 1.5.0.yaml")


def test_yaml_syntax_error_has_a_line(tmp_path, seed_text):
    text = seed_text.replace('cuda11.0: ["1.7.0", "1.7.1"]', 'cuda11.0: ["1.7.0", "1.7.1"')
    path = broken(tmp_path, text)
    msg = problems_of(path)
    assert "YAML syntax error" in msg and f"{path}:" in msg
    reported = int(msg.split(f"{path}:")[1].split(":")[0])
    assert abs(reported - line_of(text, '"1.7.1"')) <= 2


def test_wheel_tags_must_cover_every_framework(tmp_path, seed_text):
    text = seed_text.replace('    mxnet: "manylinux1_{arch}"\n', "")
    path = broken(tmp_path, text)
    msg = problems_of(path)
    assert_reported(msg, path, line_of(text, "  platform:"), "wheel_tags.platform has no entry for mxnet")


def test_support_and_versions_are_exclusive(tmp_path, seed_text):
    text = seed_text.replace('  mxnet:\n    env_pythons: ["3.6"]', '  mxnet:\n    versions: ["1.9.0"]\n    env_pythons: ["3.6"]')
    path = broken(tmp_path, text)
    msg = problems_of(path)
    assert_reported(msg, path, line_of(text, "  mxnet:", nth=3), "use either 'support' or 'versions' + 'accelerators'")


def test_every_problem_is_reported_at_once(tmp_path, seed_text):
    text = seed_text.replace("\npythons:", "\npythonz:").replace("  cibuildwheel:", "  cibuildweel:")
    path = broken(tmp_path, text)
    msg = problems_of(path)
    assert len(msg.splitlines()) >= 2


# --- facts files ---------------------------------------------------------------------------------------


def test_facts_cuda_contradicting_the_registry(tmp_path, seed_text, facts_copy):
    torch_facts = facts_copy / "torch.yaml"
    text = torch_facts.read_text().replace(
        "      - accelerator: pypi\n        requirement: torch==2.13.0\n",
        "      - accelerator: cuda12.8\n        requirement: torch==2.13.0\n",
    )
    torch_facts.write_text(text)
    msg = problems_of(broken(tmp_path, seed_text), facts_dir=facts_copy)
    assert_reported(msg, torch_facts, line_of(text, "accelerator: cuda12.8"), "torch==2.13.0 is declared cuda12.8", "pins CUDA 13.0")


def test_facts_two_builds_for_the_same_accelerator(tmp_path, seed_text, facts_copy):
    torch_facts = facts_copy / "torch.yaml"
    text = torch_facts.read_text().replace(
        "        requirement: torch==1.3.0+cu100\n", "        requirement: torch==1.3.0+cu100\n", 1
    ).replace("      - accelerator: cuda10.0\n        requirement: torch==1.3.0+cu100", "      - accelerator: cuda10.1\n        requirement: torch==1.3.0+cu101")
    torch_facts.write_text(text)
    msg = problems_of(broken(tmp_path, seed_text), facts_dir=facts_copy)
    assert_reported(msg, torch_facts, line_of(text, "requirement: torch==1.3.0+cu101") - 1, "torch 1.3.0 has two cuda10.1 builds for x86_64")


def test_facts_unknown_key(tmp_path, seed_text, facts_copy):
    mx = facts_copy / "mxnet.yaml"
    text = mx.read_text().replace("        requirement: mxnet-cu100==1.4.1\n", "        requirment: mxnet-cu100==1.4.1\n")
    mx.write_text(text)
    msg = problems_of(broken(tmp_path, seed_text), facts_dir=facts_copy)
    assert_reported(msg, mx, line_of(text, "requirment:"), "unknown key 'requirment'", "did you mean 'requirement'?")
