"""rasp-sim: the RASP language, its vectorised interpreter and its compiler to weights.

The Python API (docs/python.md)::

    import rasp_sim
    program = rasp_sim.load("examples/reverse.rasp")      # or rasp_sim.parse(text)
    program.run(["hello"])                                 # [['o', 'l', 'l', 'e', 'h']]
    model = rasp_sim.compile(program, "reverse", vocab="abc", max_len=5)
    model.run(["abca"]), model.trace("abca"), model.save("reverse.npz")

Each public name below is imported from its module on first use (PEP 562), so `import
rasp_sim` (and so every CLI start) stays light; `rasp_sim.testing` holds the hypothesis
strategies and `assert_matches` for testing one's own programs.
"""
from __future__ import annotations

from .compiler._exports import Table, lazy_getattr
from .base.limits import allow_int_text

# Values may be integers of up to rasp_sim.base.limits.MAX_INT_BITS bits: printing one (the
# REPL, `run`, JSON) must not hit Python's default 4,300-digit str(int) limit.
allow_int_text()

_TABLE: Table = {
    "parse": ("rasp_sim.api", "parse"),
    "load": ("rasp_sim.api", "load"),
    "compile": ("rasp_sim.api", "compile"),
    "from_tracr": ("rasp_sim.tracr_frontend", "from_tracr"),
    "compile_tracr": ("rasp_sim.tracr_frontend", "compile_tracr"),
    "load_model": ("rasp_sim.compiled.model", "load_model"),
    "compress": ("rasp_sim.compression", "compress"),
    "keep_freed_memory": ("rasp_sim.base.freed_memory", "keep_freed_memory"),
    "Program": ("rasp_sim.language.program", "Program"),
    "SelectorValue": ("rasp_sim.language.program", "SelectorValue"),
    "Analysis": ("rasp_sim.language.analyse", "Analysis"),
    "Model": ("rasp_sim.compiled.model", "Model"),
    "Block": ("rasp_sim.compiled.model", "Block"),
    "Operation": ("rasp_sim.compiled.model", "Operation"),
    "Trace": ("rasp_sim.compiled.trace", "Trace"),
    "RaspError": ("rasp_sim.base.errors", "RaspError"),
    "RaspSyntaxError": ("rasp_sim.base.errors", "RaspSyntaxError"),
    "RaspNameError": ("rasp_sim.base.errors", "RaspNameError"),
    "RaspTypeError": ("rasp_sim.base.errors", "RaspTypeError"),
    "RaspRuntimeError": ("rasp_sim.base.errors", "RaspRuntimeError"),
    "RaspResourceError": ("rasp_sim.base.errors", "RaspResourceError"),
    "CompileError": ("rasp_sim.base.errors", "CompileError"),
    "OutputRefused": ("rasp_sim.base.errors", "OutputRefused"),
    "ConversionError": ("rasp_sim.tracr_frontend", "ConversionError"),
    "WeightsError": ("rasp_sim.compiler.weights_format", "WeightsError"),
}

__all__ = list(_TABLE)
__getattr__ = lazy_getattr(__name__, _TABLE)
