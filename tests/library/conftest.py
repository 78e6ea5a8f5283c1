"""Put tests/library/ on sys.path so the library tests can import `lib_refs`."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
