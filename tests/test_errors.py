"""Exit codes mean one thing each: every error class of the tool derives from the class of its code."""

from __future__ import annotations

import importlib
import pkgutil

import aiacc_build
from aiacc_build.cli import main
from aiacc_build.errors import EXIT_CODE_CLASSES, AiaccError, exit_codes


def _all_subclasses(cls: type) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out += [sub, *_all_subclasses(sub)]
    return out


def test_each_exit_code_has_one_meaning():
    for module in pkgutil.walk_packages(aiacc_build.__path__, "aiacc_build."):
        if not module.name.rpartition(".")[2].startswith("_"):  # drivers run inside other environments
            importlib.import_module(module.name)
    owner = {cls.exit_code: cls for cls in EXIT_CODE_CLASSES}
    assert len(owner) == len(EXIT_CODE_CLASSES), "two classes of errors.py share an exit code"
    wrong = [
        f"{cls.__module__}.{cls.__name__} exits {cls.exit_code} but does not derive from {owner.get(cls.exit_code)}"
        for cls in _all_subclasses(AiaccError)
        if cls not in EXIT_CODE_CLASSES and not issubclass(cls, owner.get(cls.exit_code, type(None)))
    ]
    assert wrong == []


def test_help_lists_the_exit_codes(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for code, text in exit_codes().items():
        assert f"{code}  {text}" in out
