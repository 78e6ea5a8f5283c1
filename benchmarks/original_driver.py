"""Run by benchmarks/interpreter.py under ANOTHER Python, one that has
antlr4-python3-runtime 4.9.x and termcolor: loads a program into the original RASP
interpreter (tech-srl/RASP, a local checkout given as argv[1]; its modules are imported
from there at run time, nothing of it is copied here) and evaluates one s-op on inputs,
one input at a time, as the original does.

Protocol: one JSON request per input line,
    {"source": program text, "name": s-op name, "inputs": [input, ...]};
one JSON answer per line, {"outputs": [[value, ...], ...], "seconds": evaluation CPU time}
or {"error": message}. Only the evaluation loop is timed: building the original's REPL
(which loads its library) and running the program text are not.
"""
import contextlib
import io
import json
import os
import sys
import time
from pathlib import Path

CHECKOUT = Path(sys.argv[1]).resolve()
sys.path.insert(0, str(CHECKOUT))
os.chdir(CHECKOUT)  # the original loads its library as "RASP_support/rasplib" from the cwd

# The original prints a banner and its results; keep stdout for the protocol.
with contextlib.redirect_stdout(sys.stderr):
    from RASP_support.REPL import REPL  # noqa: E402


def load(source):
    """A fresh original REPL with `source` run in it, as if typed at its prompt."""
    with contextlib.redirect_stdout(sys.stderr):
        repl = REPL()
        repl.show_sequence_examples = repl.show_selector_examples = False
        repl.run(fromfile=io.StringIO(source))
    return repl


def answer(request):
    repl = load(request["source"])
    try:
        sop = repl.env.get_variable(request["name"])
    except Exception as error:  # the original's UndefinedVariable: the program failed to load
        return {"error": f"the original did not define {request['name']!r}: {error}"}
    outputs = []
    with contextlib.redirect_stdout(sys.stderr):
        start = time.process_time()  # CPU seconds, like the benchmark's own timings
        for x in request["inputs"]:
            result = sop.call(x)
            if not hasattr(result, "get_vals"):  # the original returns a failure marker string
                return {"error": f"the original failed on input {x!r}: {result}"}
            outputs.append(result.get_vals())
        seconds = time.process_time() - start
    return {"outputs": outputs, "seconds": seconds}


for line in sys.stdin:
    print(json.dumps(answer(json.loads(line))), flush=True)
