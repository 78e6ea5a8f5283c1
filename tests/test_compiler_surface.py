"""The compiler's public surface (compiler/__init__.py, compiler/universal/__init__.py):
rasp_sim imports only the names it lists, and importing it is light."""
from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import rasp_sim.compiler as compiler
import rasp_sim.compiler.universal
from heavy_imports import heavy_modules_after

RASP_SIM = Path(__file__).resolve().parent.parent / "rasp_sim"
SURFACES = {"rasp_sim.compiler": compiler, "rasp_sim.compiler.universal": compiler.universal}
# Subpackages outside the language and CLI: the compiler itself (compiler/, linked into
# rasp_sim/), the library (programs/, linked) and the experiments, which build their
# frozen backbones on the compiler's internals.
# The compression of compiled models (compression/) builds on the proof's internals too.
LINKED = {"compiler", "programs", "experiments", "compression"}


def _compiler_imports(path: Path) -> list[tuple[int, str, str | None]]:
    """(line, module, name) of each import of a compiler module in `path`; name None
    for `import rasp_sim.compiler...`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and (
                node.module == "rasp_sim.compiler" or node.module.startswith("rasp_sim.compiler.")):
            found += [(node.lineno, node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, None) for alias in node.names
                      if alias.name.split(".")[:2] == ["rasp_sim", "compiler"]]
    return found


def test_rasp_sim_imports_only_the_public_surface():
    imports = [(path, *found) for path in sorted(RASP_SIM.rglob("*.py"))
               if path.relative_to(RASP_SIM).parts[0] not in LINKED
               for found in _compiler_imports(path)]
    assert imports, "the CLI uses the compiler: the scan must find its imports"
    wrong = [f"{path.relative_to(RASP_SIM)}:{line}: {module} {name}"
             for path, line, module, name in imports
             if module not in SURFACES or name not in SURFACES[module].__all__]
    assert wrong == [], "import from rasp_sim.compiler or rasp_sim.compiler.universal, names in __all__"


@pytest.mark.parametrize("package", SURFACES.values(), ids=SURFACES.keys())
def test_no_public_name_is_shadowed_by_a_submodule(package):
    """Importing a submodule sets it as an attribute of its package: a public name that
    is also a submodule's name would then resolve to the module instead."""
    submodules = {info.name for info in pkgutil.iter_modules(package.__path__)}
    for name in set(package.__all__) & submodules:
        assert package._TABLE[name] == (f"{package.__name__}.{name}", None), name


@pytest.mark.parametrize("package", SURFACES.values(), ids=SURFACES.keys())
def test_every_public_name_resolves_to_its_table_entry(package):
    pytest.importorskip("tracr")  # compiler.tracr_driver imports it
    for name in package.__all__:
        module, attribute = package._TABLE[name]
        target = importlib.import_module(module)
        expected = target if attribute is None else getattr(target, attribute)
        assert getattr(package, name) is expected, name
    with pytest.raises(AttributeError, match="no attribute 'missing'"):
        getattr(package, "missing")


@pytest.mark.parametrize("statement", [
    "import rasp_sim.compiler", "import rasp_sim.compiler.universal",
    "from rasp_sim.compiler import load_compiled, run_weights",  # `rasp-sim run --weights`
    "from rasp_sim.compiler.universal import *",  # every universal command: NumPy only
])
def test_the_surface_imports_neither_jax_nor_tracr(statement, tmp_path):
    assert heavy_modules_after(statement, tmp_path) == []


def test_the_tracr_driver_loads_on_first_use(tmp_path):
    pytest.importorskip("tracr")
    assert "tracr" in heavy_modules_after("import rasp_sim.compiler; rasp_sim.compiler.tracr_driver", tmp_path)


def test_compile_without_tracr_says_which_extra_to_install(tmp_path):
    """The driver comes through the lazy surface: tracr's ImportError must still reach
    compile's message about the missing extra (sys.modules[name] = None blocks an import)."""
    program = tmp_path / "p.rasp"
    program.write_text("x = tokens;\n")
    code = ("import sys; sys.modules['tracr'] = None; from rasp_sim.cli import main; "
            f"sys.exit(main(['compile', {str(program)!r}, '--name', 'x', '--vocab', 'a', '--max-len', '2']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "error: compiling needs the 'compile' extra (tracr, jax, dm-haiku)" in done.stderr
