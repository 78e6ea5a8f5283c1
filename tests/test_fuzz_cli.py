"""Fuzzing the command line with damaged versions of the example and library programs.

The promise under test (README: "no traceback"): whatever the file, `rasp-sim` ends with
exit 0 (ran), 1 (a located error of the program) or 2 (usage), prints no Python
traceback and no `internal error`, and stays within a time and memory bound. The CLI runs
in-process (`rasp_sim.cli.main`), as a user's shell would run it, on files from
`fuzz_mutations.mutate`. Cases are numbered and seeded: case N is the same everywhere, and
a failure names its case, mutations and the file it wrote.

Some cases write standard output to a failing stream (closed, full, a broken pipe), which
must end with a message or quietly, never an internal error.

The default run tries 150 cases; the slow run (CI) 10,000 (measured: 25 minutes with
`-n 2` on a loaded 2-core machine, about 0.15 s a case; those at the limits take seconds).
"""
from __future__ import annotations

import contextlib
import errno
import io
import random
import resource
import signal
from pathlib import Path

import pytest
from fuzz_mutations import mutate

from rasp_sim.cli import main

ROOT = Path(__file__).resolve().parent.parent
SEEDS = sorted([*ROOT.glob("examples/*.rasp"), *ROOT.glob("examples/compile/*.rasp"),
                *ROOT.glob("programs/*.rasp")])
INPUTS = ["[3, 1, 2, 1]", "hello", "[0.5, -1, 2]", "[1, 2, 3, 4, 5, 6, 7, 8, 9]"]

# Bounds of one case. A case that reaches them has hung or grabbed memory: the CLI is
# meant to refuse work that does not fit before starting it. The time bound is generous
# because CI machines are slow and loaded; the fastest cases take milliseconds.
SECONDS_PER_CASE = 30
EXTRA_ADDRESS_SPACE = 3 * 2**30
CASES_DEFAULT, CASES_SLOW = 150, 10_000
SLOW_BLOCKS = 100


class FailingOutput(io.StringIO):
    """Standard output whose writes fail after `room` characters with `error`."""

    def __init__(self, error: OSError, room: int):
        super().__init__()
        self.error, self.room = error, room

    def write(self, text: str) -> int:
        if self.tell() + len(text) > self.room:
            raise self.error
        return super().write(text)


def _stdout(rng: random.Random) -> io.StringIO | None:
    """Where a case writes its output: mostly a buffer, sometimes a failing stream."""
    kind = rng.choices(["buffer", "closed", "full", "broken pipe"], weights=(17, 1, 1, 1))[0]
    if kind == "closed":
        return None  # as Python sets sys.stdout when file descriptor 1 is closed
    if kind == "full":
        return FailingOutput(OSError(errno.ENOSPC, "No space left on device"), rng.choice([0, 40]))
    if kind == "broken pipe":
        return FailingOutput(BrokenPipeError(errno.EPIPE, "Broken pipe"), rng.choice([0, 40]))
    return io.StringIO()


class CaseTimeout(BaseException):
    """Raised by the alarm; a BaseException so that no handler in the CLI swallows it."""


def _commands(path: Path, out: Path, rng: random.Random) -> list[str]:
    text = rng.choice(INPUTS)
    return rng.choice([
        ["run", str(path), "--input", text],
        ["run", str(path), "--input", text, "--json"],
        ["run", str(path), "--input", text, "--exact"],
        ["run", str(path), "--input", text, "--strict"],
        ["analyse", str(path)],
        ["draw", str(path), "-o", str(out)],
    ])


@contextlib.contextmanager
def _bounded(seconds: int, extra_bytes: int):
    """Raise CaseTimeout after `seconds`; cap the address space at its size now plus
    `extra_bytes` (a MemoryError beyond it), restoring both afterwards."""
    def on_alarm(signum, frame):
        raise CaseTimeout

    previous_handler = signal.signal(signal.SIGALRM, on_alarm)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    current = _address_space_bytes()
    cap = current + extra_bytes if hard == resource.RLIM_INFINITY else min(hard, current + extra_bytes)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        signal.signal(signal.SIGALRM, previous_handler)


def _address_space_bytes() -> int:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[0])
    return pages * resource.getpagesize()


def run_case(number: int, workdir: Path) -> None:
    rng = random.Random(number)
    seed = rng.choice(SEEDS)
    source, mutations = mutate(seed.read_bytes(), rng)
    path = workdir / f"case{number}.rasp"
    path.write_bytes(source)
    argv = _commands(path, workdir / f"case{number}.dot", rng)
    stdout, stderr = _stdout(rng), io.StringIO()
    described = (f"case {number}: {seed.name} with {mutations}, argv {argv}, stdout "
                 f"{getattr(stdout, 'error', stdout)!r}")
    try:
        with _bounded(SECONDS_PER_CASE, EXTRA_ADDRESS_SPACE), \
                contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):  # type: ignore[type-var]
            code: int | str | None = main(argv)
    except CaseTimeout:
        pytest.fail(f"{described}: no answer within {SECONDS_PER_CASE} s")
    except SystemExit as exit_:  # argparse's usage errors
        code = exit_.code
    output = (stdout.getvalue() if stdout is not None else "") + stderr.getvalue()
    assert code in (0, 1, 2), f"{described}: exit {code}\n{output[-2000:]}"
    assert "Traceback" not in output, f"{described}:\n{output[-4000:]}"
    assert "internal error" not in output, f"{described}:\n{output[-4000:]}"
    # a MemoryError (reported as "out of memory") means the address-space bound was hit
    assert "out of memory" not in output, f"{described}:\n{output[-4000:]}"
    path.unlink()  # passed: the resource cases write files of megabytes


@pytest.mark.parametrize("block", range(3))
def test_fuzzed_programs_end_cleanly(block, tmp_path):
    per_block = CASES_DEFAULT // 3
    for number in range(block * per_block, (block + 1) * per_block):
        run_case(number, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("block", range(SLOW_BLOCKS))
def test_fuzzed_programs_end_cleanly_many(block, tmp_path):
    per_block = CASES_SLOW // SLOW_BLOCKS
    for number in range(CASES_DEFAULT + block * per_block, CASES_DEFAULT + (block + 1) * per_block):
        run_case(number, tmp_path)
