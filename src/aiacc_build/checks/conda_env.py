"""A rendered conda environment file, read into channels, conda match specs and pip lines."""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from .findings import Finding


@dataclass(frozen=True)
class EnvFile:
    path: str
    name: str
    channels: tuple[str, ...]
    specs: tuple[str, ...]  # conda match specs, as written
    pip: tuple[str, ...]  # lines of the pip section, as written
    use: str | None = None  # the command of the header's `# Use:` line, when the file has one


def use_line(text: str) -> str | None:
    """The command after `# Use:` in the file's leading comment block."""
    for line in text.splitlines():
        if not line.startswith("#"):
            return None
        if line.startswith("# Use:"):
            return line.removeprefix("# Use:").strip()
    return None


def parse_env_file(path: str, text: str) -> tuple[EnvFile | None, list[Finding]]:
    """Parse `text`; on a structural problem return None and findings that say what is wrong."""

    def bad(message: str) -> tuple[None, list[Finding]]:
        return None, [Finding(path, "structure", "file", message)]

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return None, [Finding(path, "yaml", "file", f"not valid YAML: {exc}")]
    if not isinstance(data, dict):
        return bad("expected a mapping with name, channels and dependencies")
    name, channels, deps = data.get("name"), data.get("channels"), data.get("dependencies")
    if not isinstance(name, str) or not name:
        return bad("`name` is missing: `conda env create -f` needs it")
    if not isinstance(channels, list) or not all(isinstance(c, str) for c in channels) or not channels:
        return bad("`channels` must be a non-empty list of channel names")
    if not isinstance(deps, list):
        return bad("`dependencies` must be a list")
    specs = [d for d in deps if isinstance(d, str)]
    pip_sections = [d for d in deps if isinstance(d, dict)]
    others = [d for d in deps if not isinstance(d, (str, dict))]
    if others:
        return bad(f"`dependencies` holds something that is neither a spec nor a pip section: {others[0]!r}")
    if len(pip_sections) != 1 or set(pip_sections[0]) != {"pip"} or not isinstance(pip_sections[0]["pip"], list):
        return bad("`dependencies` needs exactly one `pip:` section with a list of lines (the Perseus wheels come from pip)")
    pip_lines = pip_sections[0]["pip"]
    if not all(isinstance(line, str) for line in pip_lines):
        return bad("every line of the pip section must be a string")
    return EnvFile(path, name, tuple(channels), tuple(specs), tuple(pip_lines), use_line(text)), []
