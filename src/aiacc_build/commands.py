"""Registry of command groups: one line per module that defines commands."""

from __future__ import annotations

import importlib

import click

# Each module exposes `register(cli: click.Group) -> None`.
COMMAND_MODULES: list[str] = [
    "matrix.cli",
    "render.cli",
    "checks.cli",
    "wheels.cli",
    "index.cli",
    "images.cli",
    "toolkits.cli",
    "caffe.cli",
    "wheels.wheel_cli",
    "ci_local.cli",
    "adapters.cli",
]


def register_all(cli: click.Group) -> None:
    for name in COMMAND_MODULES:
        importlib.import_module(f"aiacc_build.{name}").register(cli)
