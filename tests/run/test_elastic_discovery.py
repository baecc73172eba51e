"""The discovery output rules and the blacklist of elastic perseusrun (perseus.run.elastic.discovery), in-process."""

import pytest

from perseus.run.elastic.discovery import Blacklist, DiscoveryError, parse_output


def test_host_slots_lines_in_order_with_default_slots():
    found = parse_output("10.0.0.2:8\n\nnode-b\n10.0.0.2:8\n", 4, "d.sh")
    assert list(found.items()) == [("10.0.0.2", 8), ("node-b", 4)]
    assert parse_output("", None, "d.sh") == {}


@pytest.mark.parametrize("text, fragment", [
    ("10.0.0.2:x\n", "line 1 of its output, '10.0.0.2:x', is not HOST or HOST:SLOTS"),
    ("a:1\nnot a host\n", "line 2 of its output, 'not a host'"),
    ("a:0\n", "gives a 0 slots; slots must be at least 1"),
    ("a\n", "names host a without slots; print a:SLOTS or pass --slots-per-host N"),
    ("a:1\na:2\n", "host a is listed twice, with 1 and 2 slots"),
])
def test_bad_output_is_named(text, fragment):
    with pytest.raises(DiscoveryError) as caught:
        parse_output(text, None, "d.sh")
    assert fragment in str(caught.value)


def test_blacklist_without_cooldown_is_for_good():
    b = Blacklist(None)
    b.add("a", now=0.0)
    assert b.is_out("a", now=1e9) and b.hosts(now=5.0) == ["a"] and not b.is_out("b", now=0.0)


def test_cooldown_doubles_and_stays_within_the_range():
    b = Blacklist((2, 10))
    b.add("a", now=0.0)
    assert b.is_out("a", now=1.9) and not b.is_out("a", now=10.01)  # first: 2*2 + up to 2 s, within [2, 10]
    b.add("a", now=100.0)
    assert b.is_out("a", now=107.9) and not b.is_out("a", now=110.01)  # second: 2*4 + ..., capped at 10
