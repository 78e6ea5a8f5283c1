"""rasp-sim: the RASP language, its vectorised interpreter and its compiler to weights."""
from .limits import allow_int_text

# Values may be integers of up to rasp_sim.limits.MAX_INT_BITS bits: printing one (the
# REPL, `run`, JSON) must not hit Python's default 4,300-digit str(int) limit.
allow_int_text()
