"""Put tests/ on sys.path so test modules can import the helper modules beside them
(`program_strategy`, `ast_text`, ...): pytest's importlib mode does not do it.

Deliver Ctrl-C to the tests that check what it does (tests/training/test_train.py,
tests/compiler_tracr/test_tracr_interrupt.py, ...): a pytest started in the background
by a shell without job control (`(nohup pytest &)`) inherits SIGINT as ignored, and so
would every process a test starts, so those tests would see no interruption at all.
Python's own handler in the test processes makes their children start with the default
disposition again (exec resets a handled signal, not an ignored one)."""
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
