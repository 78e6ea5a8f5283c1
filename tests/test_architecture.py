"""The package's shape (docs/architecture.md): every module of rasp_sim belongs to one
layer, imports only from its own layer and the layers below it, and no modules import each
other in a circle. grimp reads the imports of every module (function-level ones too)."""
from __future__ import annotations

import grimp
import networkx as nx
import pytest

# The layers of rasp_sim, top to bottom: the pipeline's stages run downwards (the command
# line drives the API, which compiles and draws the programs the language builds).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("rasp_sim",),  # the package itself: the public names, each resolved on first use
    ("rasp_sim.__main__", "rasp_sim.cli"),
    ("rasp_sim.tracr_frontend",),
    ("rasp_sim.api", "rasp_sim.testing", "rasp_sim.experiments", "rasp_sim.compression"),
    ("rasp_sim.pictures",),
    ("rasp_sim.compiled",),
    ("rasp_sim.compiler",),
    ("rasp_sim.language",),
    ("rasp_sim.evaluation",),
    ("rasp_sim.core",),
    ("rasp_sim.base", "rasp_sim.programs"),  # programs: the RASP library, data only
)


def layer_of(module: str, layers: tuple[tuple[str, ...], ...] = LAYERS) -> int | None:
    """The index of the layer holding `module` (0 = top), or None where none does."""
    for index, members in enumerate(layers):
        for member in members:
            if module == member or (member != "rasp_sim" and module.startswith(member + ".")):
                return index
    return None


def upward_imports(graph: grimp.ImportGraph,
                   layers: tuple[tuple[str, ...], ...] = LAYERS) -> list[str]:
    """Each import of a module from a layer above its own, as 'importer -> imported'."""
    found = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            low, high = layer_of(importer, layers), layer_of(imported, layers)
            if low is not None and high is not None and high < low:
                found.append(f"{importer} -> {imported}")
    return found


def circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The sets of modules that import each other in a circle."""
    edges = nx.DiGraph()
    for importer in graph.modules:
        edges.add_node(importer)
        for imported in graph.find_modules_directly_imported_by(importer):
            edges.add_edge(importer, imported)
    return [sorted(group) for group in nx.strongly_connected_components(edges)
            if len(group) > 1]


@pytest.fixture(scope="module")
def imports() -> grimp.ImportGraph:
    return grimp.build_graph("rasp_sim", cache_dir=None)


def test_every_module_has_a_layer(imports):
    assert [m for m in sorted(imports.modules) if layer_of(m) is None] == []


def test_no_module_imports_from_a_layer_above(imports):
    """Annotations count too: a type named from above is a dependency on the layer above."""
    assert upward_imports(imports) == []


def test_no_modules_import_each_other_in_a_circle():
    """Imports under `if TYPE_CHECKING:` never run, so they close no circle (trace.py
    names the Model that model.py's `Model.trace` builds it from)."""
    runtime = grimp.build_graph("rasp_sim", cache_dir=None, exclude_type_checking_imports=True)
    assert circles(runtime) == []


def _graph(*edges: tuple[str, str]) -> grimp.ImportGraph:
    graph = grimp.ImportGraph()
    for importer, imported in edges:
        graph.add_import(importer=importer, imported=imported)
    return graph


def test_an_upward_import_is_found():
    graph = _graph(("rasp_sim.api", "rasp_sim.core.graph"),
                   ("rasp_sim.core.graph", "rasp_sim.pictures.notebook"))
    assert upward_imports(graph) == ["rasp_sim.core.graph -> rasp_sim.pictures.notebook"]


def test_a_circle_is_found():
    graph = _graph(("rasp_sim.pictures.draw", "rasp_sim.pictures.draw_layout"),
                   ("rasp_sim.pictures.draw_layout", "rasp_sim.pictures.draw"),
                   ("rasp_sim.pictures.draw", "rasp_sim.core.graph"))
    assert circles(graph) == [["rasp_sim.pictures.draw", "rasp_sim.pictures.draw_layout"]]


@pytest.mark.parametrize("name", ["parse", "load", "compile", "load_model", "Program", "Model",
                                  "Trace", "RaspError"])
def test_the_public_names_stay_at_the_top(name):
    """Internal modules move freely; the public API keeps its names (issue 36)."""
    import rasp_sim

    assert name in rasp_sim.__all__ and getattr(rasp_sim, name) is not None
