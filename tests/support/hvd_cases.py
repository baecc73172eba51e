"""Shared by the torch Horovod workers: run named cases, record each one's value or error, emit them."""

import traceback
from typing import Any, Callable, Dict

results: Dict[str, Any] = {}


def check(name: str) -> Callable[[Callable[[], Any]], Callable[[], Any]]:
    def wrap(fn: Callable[[], Any]) -> Callable[[], Any]:
        try:
            results[name] = {"ok": True, "value": fn()}
        except Exception as error:  # recorded; the test decides whether an error was expected
            results[name] = {"ok": False, "error": "{}: {}".format(type(error).__name__, error),
                             "type": type(error).__name__, "trace": traceback.format_exc()}
        return fn
    return wrap


def value(ranks: Any, name: str) -> Any:
    """The value of case `name` on every rank (assert it ran without error everywhere)."""
    for entry in ranks:
        assert name in entry, "case {} did not run".format(name)
        assert entry[name]["ok"], entry[name].get("trace") or entry[name].get("error")
    return [entry[name]["value"] for entry in ranks]
