"""A model path that is not a regular file (a FIFO, a link to one, a device, a folder) is
refused before it is opened blocking, through `load_model` and every command that reads a
model; a file larger than its memory limit allows is refused before its headers are read
(rasp_sim/compiler/weights_files.py). A FIFO blocked these readers forever: an alarm turns
a hang into a failure."""
from __future__ import annotations

import os
import signal
import stat

import pytest
from cli_helpers import run_cli, write

import rasp_sim
from rasp_sim.compiler.weights import WeightsError, save
from rasp_sim.errors import RaspResourceError

from .test_weights_hostile import token_model

NOT_REGULAR = "not a regular file (a FIFO, socket or device): only regular files are read " \
    "as weights files"


class Hung(Exception):
    pass


@pytest.fixture(autouse=True)
def no_hang():
    """Fail, instead of blocking forever, when a reader waits on a FIFO."""
    def hang(signum, frame):
        raise Hung("blocked reading the model")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def _fifo(tmp_path):
    path = tmp_path / "m.npz"
    os.mkfifo(path)
    return path, NOT_REGULAR


def _link_to_fifo(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "m.npz").symlink_to(tmp_path / "pipe")
    return tmp_path / "m.npz", NOT_REGULAR


def _device(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root (CI runs as root)")
    path = tmp_path / "m.npz"
    os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # a /dev/zero of its own
    return path, NOT_REGULAR


def _folder(tmp_path):
    (tmp_path / "m.npz").mkdir()
    return tmp_path / "m.npz", "a directory, not a weights file"


KINDS = [_fifo, _link_to_fifo, _device, _folder]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("suffix", [".npz", ".safetensors"])
def test_load_model_refuses_what_is_not_a_regular_file(tmp_path, kind, suffix):
    path, reason = kind(tmp_path)
    named = path.with_suffix(suffix)
    path.rename(named)
    with pytest.raises(WeightsError) as info:
        rasp_sim.load_model(named)
    assert str(info.value) == f"weights error: {named}: {reason}"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("command", ["trace", "report", "verify"])
def test_commands_refuse_a_model_that_is_not_a_regular_file(tmp_path, capsys, kind, command):
    path, reason = kind(tmp_path)
    argv = {"trace": ["trace", str(path), "--input", "ab"],
            "report": ["report", str(path), "--input", "ab", "-o", str(tmp_path / "r.html")],
            "verify": ["verify", str(path), write(tmp_path, "y = tokens;\n"), "--name", "y"]}
    code, out, err = run_cli(capsys, *argv[command])
    assert code == 1 and out == ""
    assert err.startswith(f"{path}") or f": {path}: " in err, err
    assert (reason if command != "verify" else "") in err
    assert "internal error" not in err


def test_a_file_larger_than_its_memory_limit_allows_is_refused_unread(tmp_path):
    path = tmp_path / "big.npz"
    save(token_model(), path)
    os.truncate(path, 2**28)  # sparse: 256 MiB of nothing after a valid start
    with pytest.raises(RaspResourceError) as info:
        rasp_sim.load_model(path, memory_limit=1000)
    assert str(info.value) == (
        f"resource limit: {path}: the file has 268,435,456 bytes, more than its arrays may "
        "hold under the memory limit (1,000 bytes, plus 128 MiB for the container's "
        "headers); raise it with memory_limit= (rasp-sim: --memory-limit)")


def test_a_model_within_its_limits_still_loads(tmp_path):
    for name in ("m.npz", "m.safetensors"):
        save(token_model(), tmp_path / name)
        assert rasp_sim.load_model(tmp_path / name).validated
