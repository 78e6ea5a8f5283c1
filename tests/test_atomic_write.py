"""Atomic writes (rasp_sim/base/atomic_write.py): a file rasp-sim writes is the old one or the
new one whole, whatever happens during the write: an exception, SIGKILL at any moment, a
full disk, a second writer."""
from __future__ import annotations

import os
import random
import resource
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from rasp_sim.base.atomic_write import _temporary_name, replacing, write_text
from rasp_sim.compiler import load_weights, save_weights
from rasp_sim.compiler.universal import Shape, build_random
from rasp_sim.compiler.weights import HASH_KEY, _stored_form

SHAPE = Shape(dim=4, head_dim=4, out_dim=4, heads=1, layers=1, residual=False, causal=True)


def machine(seed: int, m: int = 64):
    return build_random(SHAPE, seed, False, m)


def signature(path: Path) -> str:
    """A weights file loaded in full (the loader checks its hash), as the SHA-256 of its
    header and arrays, computed again from what was loaded."""
    return _stored_form(load_weights(path))[0][HASH_KEY]


def rasp_sim(*argv: str, **options) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rasp_sim", *argv], capture_output=True,
                          text=True, **options)


def test_a_failed_write_leaves_the_old_file_and_nothing_else(tmp_path):
    path = tmp_path / "out.txt"
    write_text(path, "old")
    for interruption in (ValueError("disk on fire"), KeyboardInterrupt()):
        with pytest.raises(type(interruption)):
            with replacing(path) as handle:
                handle.write(b"half of the new")
                raise interruption
    assert path.read_text() == "old"
    assert os.listdir(tmp_path) == ["out.txt"]


@pytest.mark.parametrize("suffix", [".npz", ".safetensors"])
def test_new_files_follow_the_umask_and_old_files_keep_their_mode(tmp_path, suffix):
    path = tmp_path / f"ut{suffix}"
    old = os.umask(0o022)
    try:
        save_weights(machine(1), path)
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
        os.umask(0o077)
        save_weights(machine(1), tmp_path / f"private{suffix}")
        assert stat.S_IMODE((tmp_path / f"private{suffix}").stat().st_mode) == 0o600
    finally:
        os.umask(old)
    path.chmod(0o640)
    save_weights(machine(2), path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert signature(path) == signature_of(machine(2), tmp_path / f"x{suffix}")


def signature_of(model, scratch: Path) -> str:
    save_weights(model, scratch)
    try:
        return signature(scratch)
    finally:
        scratch.unlink()


WRITER = textwrap.dedent("""
    import sys
    from rasp_sim.compiler import save_weights
    from rasp_sim.compiler.universal import Shape, build_random
    shape = Shape(dim=4, head_dim=4, out_dim=4, heads=1, layers=1, residual=False, causal=True)
    models = [build_random(shape, seed, False, int(sys.argv[2])) for seed in (1, 2)]
    print("ready", flush=True)
    turn = 0
    while True:
        save_weights(models[turn % 2], sys.argv[1])
        turn += 1
""")


@pytest.mark.parametrize("suffix,kills", [
    (".npz", 12), (".safetensors", 12),
    pytest.param(".npz", 60, marks=pytest.mark.slow),
    pytest.param(".safetensors", 60, marks=pytest.mark.slow)])
def test_sigkill_at_random_points_of_writes(tmp_path, suffix, kills):
    """A writer saves two models in turn to one path, without pause, and is killed after a
    random delay: the file is always one of the two models, whole (its hash checks). A
    temporary file is left only by a kill between `link` and `os.replace` (then it is a
    whole model, named by the killed writer's PID), and the next write removes it."""
    path = tmp_path / f"model{suffix}"
    m = 1024  # about 8 MB per file: a write takes tens of ms, so most kills land inside one
    expected = [signature_of(machine(seed, m), tmp_path / f"ref{suffix}") for seed in (1, 2)]
    save_weights(machine(1, m), path)
    chooser = random.Random(22)
    killed = []
    for _ in range(kills):
        child = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(m)],
                                 stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        time.sleep(chooser.uniform(0.0, 0.25))
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
        killed.append(child.pid)
        loaded = signature(path)
        assert loaded in expected
        for name in set(os.listdir(tmp_path)) - {path.name}:
            assert any(f"-{pid}." in name for pid in killed), name
            staged = tmp_path / name
            assert signature(staged.rename(tmp_path / f"left{suffix}")) in expected
            (tmp_path / f"left{suffix}").rename(staged)
    save_weights(machine(2, m), path)
    assert os.listdir(tmp_path) == [path.name]


KILLED_WHILE_PUBLISHING = textwrap.dedent("""
    import os, signal, sys
    from rasp_sim.base.atomic_write import write_text
    os.replace = lambda *names: os.kill(os.getpid(), signal.SIGKILL)
    write_text(sys.argv[1], "new")
""")


def test_a_kill_between_link_and_replace_leaves_a_whole_file_the_next_write_removes(
        tmp_path):
    """The one instant the unnamed file has a name: SIGKILL there (forced by replacing
    os.replace with a kill) leaves the old file and a staged copy of the new one whole."""
    path = tmp_path / "out.txt"
    write_text(path, "old")
    child = subprocess.run([sys.executable, "-c", KILLED_WHILE_PUBLISHING, str(path)])
    assert child.returncode == -signal.SIGKILL
    assert path.read_text() == "old"
    [left] = set(os.listdir(tmp_path)) - {"out.txt"}
    assert (tmp_path / left).read_text() == "new"
    write_text(path, "newer")
    assert os.listdir(tmp_path) == ["out.txt"]


def test_a_write_removes_only_the_temporary_files_of_dead_writers(tmp_path):
    """Leftovers of a killed writer go at the next write to the same file; a running
    writer's, another host's and another file's stay."""
    path = tmp_path / "out.txt"
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    dead = _temporary_name(path).name.replace(f"-{os.getpid()}.", f"-{finished.pid}.")
    running = _temporary_name(path).name.replace(f"-{os.getpid()}.", f"-{os.getppid()}.")
    other_host = f".out.txt.00000000-{finished.pid}.0123456789ab.tmp"
    other_file = _temporary_name(tmp_path / "other.txt").name.replace(
        f"-{os.getpid()}.", f"-{finished.pid}.")
    for name in (dead, running, other_host, other_file):
        (tmp_path / name).write_text("staged")
    write_text(path, "new")
    assert path.read_text() == "new"
    assert sorted(os.listdir(tmp_path)) == sorted([
        "out.txt", running, other_host, other_file])


def _limit_file_size(limit: int):
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


@pytest.mark.parametrize("suffix", [".npz", ".safetensors"])
def test_a_full_disk_keeps_the_old_file(tmp_path, suffix):
    """RLIMIT_FSIZE below the new file's size: writing fails with EFBIG, as on a full disk
    (Python ignores SIGXFSZ). A clean error and exit 1; the old file loads unchanged."""
    path = tmp_path / f"ut{suffix}"
    small = ["universal", "build", "--heads", "1", "--layers", "1", "--dim", "4"]
    assert rasp_sim(*small, "--random", "1", "--m", "64", "-o", str(path)).returncode == 0
    before = path.read_bytes()
    result = rasp_sim(*small, "--random", "2", "--m", "1024", "-o", str(path),
                      preexec_fn=_limit_file_size(len(before) + 1000))
    assert result.returncode == 1, result.stderr
    assert f"cannot write {path}: File too large" in result.stderr
    assert "internal error" not in result.stderr
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == [path.name]


def test_two_concurrent_writers_leave_one_whole_file(tmp_path):
    path = tmp_path / "ut.npz"
    argv = ["universal", "build", "--heads", "1", "--layers", "1", "--dim", "4", "--m", "1024",
            "-o", str(path), "--random"]
    expected = [signature_of(machine(seed, 1024), tmp_path / "ref.npz") for seed in (1, 2)]
    for _ in range(3):
        writers = [subprocess.Popen([sys.executable, "-m", "rasp_sim", *argv, str(seed)],
                                    stdout=subprocess.DEVNULL) for seed in (1, 2)]
        assert [writer.wait() for writer in writers] == [0, 0]
        loaded = signature(path)
        assert loaded in expected
        assert os.listdir(tmp_path) == [path.name]


# ---------------------------------------------------------------- what may be replaced
# Never the machine's own device nodes: the test makes its own in a temporary folder.


def _special_files(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    made = {"a FIFO": fifo, "a folder": tmp_path / "folder"}
    made["a folder"].mkdir()
    if os.geteuid() == 0:  # mknod of a character device needs root (CI runs as root)
        device = tmp_path / "null-like"
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        made["a character device"] = device
    return made


def test_an_output_that_is_not_a_regular_file_is_refused(tmp_path):
    from rasp_sim.base.atomic_write import write_bytes
    from rasp_sim.base.errors import OutputRefused

    for kind, path in _special_files(tmp_path).items():
        before = os.stat(path).st_mode
        with pytest.raises(OutputRefused, match=f"{path} is {kind}, not a regular file"):
            write_bytes(path, b"model")
        assert os.stat(path).st_mode == before  # still what it was
        link = tmp_path / f"link-to-{path.name}"
        link.symlink_to(path)
        with pytest.raises(OutputRefused, match=rf"{link} \(a link to {path}\) is {kind}"):
            write_bytes(link, b"model")
        assert link.is_symlink()


def test_a_link_to_a_regular_file_replaces_the_target_and_stays_a_link(tmp_path):
    from rasp_sim.base.atomic_write import write_bytes

    target = tmp_path / "real.npz"
    target.write_bytes(b"old")
    link = tmp_path / "link.npz"
    link.symlink_to(target)
    write_bytes(link, b"new")
    assert link.is_symlink() and target.read_bytes() == b"new"


def test_commands_refuse_such_an_output_before_any_work(tmp_path, capsys):
    from rasp_sim.cli import main

    program = tmp_path / "p.rasp"
    program.write_text("r = aggregate(select(indices, length - indices - 1, ==), tokens);")
    for kind, path in _special_files(tmp_path).items():
        if kind == "a folder":
            continue
        for argv in (["compile", str(program), "--vocab", "a,b", "--max-len", "3"],
                     ["draw", str(program)], ["from-tracr", "tracr.compiler.lib:make_hist",
                                              "--vocab", "a", "--max-len", "2"]):
            assert main([*argv, "-o", str(path)]) == 1
            err = capsys.readouterr().err
            assert f"cannot write: {path} is {kind}, not a regular file" in err, err
            assert "wrote" not in err and "validated" not in err
        assert not stat.S_ISREG(os.stat(path).st_mode)


@pytest.mark.parametrize("step", ["link", "replace"])
def test_ctrl_c_while_the_file_takes_its_name_finishes_the_write_and_says_so(
        tmp_path, monkeypatch, step):
    """SIGINT between link and rename left a stray temporary file; SIGINT at the rename
    said "interrupted" as if the old file stayed. Now the step completes, then the
    interruption says the new file is in place."""
    from rasp_sim.base.atomic_write import WrittenThenInterrupted

    path = tmp_path / "model.npz"
    write_text(path, "old")
    real = getattr(os, step)

    def interrupted_step(*args, **kwargs):
        result = real(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGINT)  # Python runs the handler right after this
        return result

    monkeypatch.setattr(os, step, interrupted_step)
    with pytest.raises(WrittenThenInterrupted, match=f"{path} was written whole"):
        write_text(path, "new")
    monkeypatch.undo()
    assert path.read_text() == "new"
    assert os.listdir(tmp_path) == ["model.npz"]
    with pytest.raises(KeyboardInterrupt):  # Ctrl-C is Ctrl-C again after the write
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)


def test_the_command_says_the_output_was_written_when_ctrl_c_came_at_the_rename(
        tmp_path, monkeypatch, capsys):
    from rasp_sim.cli import EXIT_INTERRUPTED, main

    program = tmp_path / "p.rasp"
    program.write_text("r = aggregate(select(indices, length - indices - 1, ==), tokens);")
    output = tmp_path / "p.svg"
    real = os.replace

    def interrupted_replace(*args, **kwargs):
        real(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(os, "replace", interrupted_replace)
    assert main(["draw", str(program), "-o", str(output)]) == EXIT_INTERRUPTED
    assert f"interrupted: {output} was written whole" in capsys.readouterr().err
    assert output.read_text().startswith("<?xml")


def test_an_output_in_a_folder_that_cannot_take_it_is_refused_before_any_work(
        tmp_path, capsys):
    """A missing folder, or a file where the folder should be: refused by name before
    the command works (trace and draw ended in an internal error after their work)."""
    from rasp_sim.cli import main

    program = tmp_path / "p.rasp"
    program.write_text("r = aggregate(select(indices, length - indices - 1, ==), tokens);")
    for folder, why in ((tmp_path / "missing", "does not exist"),
                        (program, "is not a folder")):
        for argv in (["draw", str(program), "-o", str(folder / "p.svg")],
                     ["compile", str(program), "--vocab", "a,b", "--max-len", "3",
                      "-o", str(folder / "p.npz")]):
            assert main(argv) == 1
            err = capsys.readouterr().err
            assert f"cannot write: {folder / argv[-1].rsplit('/', 1)[-1]}: the folder " \
                   f"{folder} {why}" in err, err
            assert "validated" not in err and "internal error" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.rasp"]
