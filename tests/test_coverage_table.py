"""The coverage table (docs/coverage.md) is generated from the conformance rows and current; every row of every
binding has a test: the binding's conformance module exists and runs that binding's rows, and every collective
function in a binding's __all__ has rows (a dtype set declared for it)."""

from support import coverage_table
from support import hvd_conformance as C


def test_the_coverage_table_is_current():
    assert coverage_table.DOC.read_text() == coverage_table.render(), \
        "docs/coverage.md is stale: python tests/support/coverage_table.py --write"


def test_every_collective_function_of_every_binding_has_rows():
    for binding in C.BINDINGS.values():
        functions = {name for name in binding.public_names() if C.variant_of(name)[0]}
        with_rows = {C.function_name(row) for row in C.universe(binding)}
        assert functions == with_rows, (binding.framework, sorted(functions - with_rows))


def test_every_row_names_a_test_that_runs_it():
    for framework, binding in C.BINDINGS.items():
        module = C.REPO / binding.test
        assert module.is_file(), "{}: no conformance test {}".format(framework, binding.test)
        text = module.read_text()
        # the module parametrizes test_row over exactly this binding's rows, by their keys
        assert 'ROWS = C.universe(C.BINDINGS["{}"])'.format(framework) in text, binding.test
        assert "def test_row(" in text and "ids=[row.key() for row in ROWS]" in text, binding.test


def test_row_names_and_functions_round_trip():
    for name in ("allreduce", "allreduce_async_", "grouped_allreduce_", "grouped_allgather_async", "broadcast_",
                 "reducescatter_async", "alltoall"):
        collective, variant = C.variant_of(name)
        assert C.function_name(C.Row("x", collective, variant, "float32")) == name
    assert C.variant_of("allgather_object") == ("", "") and C.variant_of("sparse_allreduce_async") == ("", "")
