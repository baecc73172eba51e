"""No import circles in the project's packages (aiacc_build, aiacc_installer, perseus-common and the bindings),
imports inside functions counted: `.venv/bin/python tests/support/import_graph.py` prints them."""

from support import import_graph


def test_there_are_no_import_circles():
    found = import_graph.circles(import_graph.graph())
    assert found == [], "import circles (run tests/support/import_graph.py): " + "; ".join(" <-> ".join(c) for c in found)


def test_the_graph_sees_imports_inside_functions():
    edges = import_graph.graph()
    # perseus.horovod_variables imports perseus.config only inside a function (the build tool loads the file alone)
    assert "perseus.config" in edges["perseus.horovod_variables"]
