"""The Jinja2 environment: templates live in the repository's conda/, docker/, ci/ and scripts/.

One environment per process: Jinja compiles each template once and caches it, so rendering every
cell of every release costs the template execution only.
"""

from __future__ import annotations

import json
import shlex
from functools import lru_cache
from pathlib import Path

import jinja2

from ..paths import REPO_ROOT

TEMPLATE_DIRS: tuple[Path, ...] = (REPO_ROOT,)
_PACKAGE_TEMPLATES = Path(__file__).parent / "templates"


def _quote_json(value: object) -> str:
    """A JSON string is also a valid YAML scalar: safe for any text in a YAML file."""
    return json.dumps(value, ensure_ascii=False)


def _shell_join(values: object) -> str:
    return " ".join(shlex.quote(str(v)) for v in values)  # type: ignore[union-attr]


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader(
            [jinja2.FileSystemLoader([str(d) for d in TEMPLATE_DIRS]), jinja2.FileSystemLoader(str(_PACKAGE_TEMPLATES))]
        ),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
        auto_reload=False,
    )
    env.filters["q"] = _quote_json
    env.filters["shquote"] = lambda v: shlex.quote(str(v))
    env.filters["shjoin"] = _shell_join
    return env


def render(template: str, **context: object) -> str:
    return environment().get_template(template).render(**context)
