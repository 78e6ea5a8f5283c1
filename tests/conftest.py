"""Put tests/ on sys.path so test modules can import the helper modules beside them
(`program_strategy`, `ast_text`, ...): pytest's importlib mode does not do it."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
