"""Every command the tool prints as advice for the local matrix is a valid command line of the tool
itself (parsed by its own click parser), and the cheap ones do what they say."""

from __future__ import annotations

import json
import re
import shlex
import warnings
from pathlib import Path

import click
import pytest

from aiacc_build import hints
from aiacc_build.registry import RegistryClient
from aiacc_build.wheels.plan import plan_cells
from aiacc_build.wheels.select import select
from aiacc_build.cli import _register, cli, main
from aiacc_build.errors import AiaccError
from aiacc_build.images.local import MissingWheelError, buildable_images, local_images
from aiacc_build.index.mirror import build_index
from aiacc_build.matrix import load_release
from aiacc_build.render.support import BuildHost

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

COMMAND = re.compile(r"(aiacc-build [^`\n]*?)(?:`|\)|$| \(then)")


def parse(command: str) -> click.Context:
    """Resolve `command` down to its leaf command with the tool's own parser; raises on any error."""
    argv = shlex.split(command)
    assert argv[0] == hints.TOOL, command
    _register()
    ctx = cli.make_context(hints.TOOL, argv[1:])
    command_obj: click.Command = cli
    while isinstance(command_obj, click.Group):
        with warnings.catch_warnings():  # click 8.2 deprecates protected_args; its replacement is click 9's
            warnings.simplefilter("ignore", DeprecationWarning)
            remaining = [*ctx.protected_args, *ctx.args]
        name, sub, rest = command_obj.resolve_command(ctx, remaining)
        assert sub is not None, command
        ctx = sub.make_context(name, rest, parent=ctx)
        command_obj = sub
    return ctx


def commands_in(text: str) -> list[str]:
    return [m.group(1).strip() for m in COMMAND.finditer(text)]


@pytest.fixture(scope="module")
def release():
    return load_release("2.0.0")


@pytest.fixture(scope="module")
def printed(release, tmp_path_factory) -> list[str]:
    """What the tool prints for the local matrix: plan reasons, images fixes, index errors, next steps."""
    tmp = tmp_path_factory.mktemp("hints")
    texts = [p.reason for p in plan_cells("2.0.0", release.cells, RegistryClient(tmp / "registry", offline=True)).cells]
    with pytest.raises(MissingWheelError) as missing:
        buildable_images(local_images(release.cells, BuildHost.detect()), tmp / "dist" / "2.0.0", named=False)
    texts.append(str(missing.value))
    with pytest.raises(AiaccError) as unbuilt:
        build_index("2.0.0", tmp / "dist")
    texts.append(str(unbuilt.value))
    texts += hints.next_steps("2.0.0", tmp / "dist")
    with pytest.raises(AiaccError) as unmatched:
        select(release.cells, ["qqqqqqqq"])
    texts.append(str(unmatched.value))
    texts += [str(hints.toolkit_fetch("12.4")), str(hints.images_registry(5001))]
    return texts


def test_every_hint_parses_with_the_tools_parser(printed):
    found = [c for text in printed for c in commands_in(text)]
    assert len(found) >= 8
    for command in found:
        parse(command)


def test_the_matrix_list_hint_lists_the_release(release, printed, capsys):
    (listing,) = [c for text in printed for c in commands_in(text) if " matrix list " in c]
    assert main(shlex.split(listing)[1:]) == 0
    assert f"{len(release.cells)} cells" in capsys.readouterr().out


def test_a_hint_with_a_bad_option_would_fail_to_parse():
    with pytest.raises(click.UsageError):
        parse("aiacc-build build --release 2.0.0 --cell x")


LOCAL_CELL = "torch-2.13.0/cpu/py3.11/x86_64"  # its framework lies on this disk: the cheap one to run


def test_the_missing_wheel_fix_plans_that_very_cell_into_that_dist(release, printed, tmp_path, capsys):
    fixes = [c for text in printed if "needs wheels that are not built" in text for c in commands_in(text)]
    (fix,) = [c for c in fixes if c.endswith(f"--cells {LOCAL_CELL}")]
    argv = shlex.split(fix)[1:]
    dist = Path(argv[argv.index("--dist") + 1])
    assert dist.name == "dist"  # the folder `images build` looked in, not the default dist/
    assert main([*argv, "--plan-only", "--json", "--offline"]) == 0
    plan = json.loads(capsys.readouterr().out)
    selector = argv[argv.index("--cells") + 1]
    (cell,) = [c for c in plan["cells"] if c["key"].endswith(selector)]
    assert cell["status"] == "build", cell
    assert [c["key"] for c in plan["cells"] if c["status"] == "build"] == [cell["key"]]


def test_the_render_fix_writes_the_missing_dockerfile(tmp_path):
    from aiacc_build.images.local import _context

    root = tmp_path / "dist" / "2.0.0"
    root.mkdir(parents=True)
    with pytest.raises(MissingWheelError) as missing:
        _context(root, tmp_path / "ctx")
    (fix,) = commands_in(str(missing.value))
    assert main(shlex.split(fix)[1:]) == 0
    assert (root / "docker" / "Dockerfile.local").is_file()


def test_a_selection_nothing_of_which_builds_here_is_an_error(tmp_path):
    code = main(["build", "--release", "2.0.0", "--dist", str(tmp_path), "--offline", "--cells", "*/aarch64"])
    assert code != 0
    assert not (tmp_path / "2.0.0.record.json").exists()
