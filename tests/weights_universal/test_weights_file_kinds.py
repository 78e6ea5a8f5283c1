"""A model path that is not a regular file (a FIFO, a link to one, a device, a folder) is
refused before it is opened blocking, through `load_model` and every command that reads a
model; a file larger than its memory limit allows is refused before its headers are read
(rasp_sim/compiler/weights_files.py). A FIFO blocked these readers forever: an alarm turns
a hang into a failure."""
from __future__ import annotations

import os
import stat

import numpy as np
import pytest
from cli_helpers import run_cli, write
from hang_guard import deadline

import rasp_sim
from rasp_sim.compiler.weights import WeightsError, save
from rasp_sim.base.errors import RaspResourceError

from .test_weights_hostile import token_model

NOT_REGULAR = "not a regular file (a FIFO, socket or device): only regular files are read " \
    "as weights files"


@pytest.fixture(autouse=True)
def no_hang():
    with deadline(20, "reading the model"):
        yield


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


def _readouts():
    from rasp_sim.compiler.weights import OutputEncoder, SparseMatrix

    empty = np.zeros(0, dtype=np.int64)
    return {
        "empty": (token_model().replace(unembed=np.zeros((3, 0)),
                                        output_encoder=OutputEncoder(())),
                  "unembed: no columns, and output_encoder.values is empty"),
        "wide": (token_model().replace(unembed=SparseMatrix((3, 2**40), empty, empty,
                                                            np.zeros(0)),
                                       output_encoder=OutputEncoder(None)),
                 "unembed: 1,099,511,627,776 columns, but a numerical output is read from "
                 "exactly one"),
    }


@pytest.mark.parametrize("case", ["empty", "wide"])
@pytest.mark.parametrize("command", ["run", "trace"])
def test_an_unusable_readout_is_refused_before_a_run(tmp_path, capsys, case, command):
    """An empty unembedding gave an internal error (an arg-max over no column); a
    2^40-wide sparse one for a numerical output ran out of memory."""
    model, message = _readouts()[case]
    path = tmp_path / "m.npz"
    save(model, path)
    argv = (["run", "--weights", str(path)] if command == "run" else ["trace", str(path)])
    code, _, err = run_cli(capsys, *argv, "--input", "ab")
    assert code == 1 and err.startswith(f"weights error: {path}: {message}"), err
