"""`rasp-sim universal`: build, target, embed, verify; JSON output; errors exit 1."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from rasp_sim.cli import main
from rasp_sim.compiler.universal.sparse import build_sparse
from rasp_sim.compiler.universal.target import Shape
from rasp_sim.compiler.weights import load, weights_equal


def run_json(capsys, *argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


SHAPE_ARGS = ("--heads", "2", "--layers", "2", "--dim", "3", "--head-dim", "2")


@pytest.mark.parametrize("extra", [(), ("--tied",), ("--residual",), ("--random", "4"),
                                   ("--random", "4", "--mask", "full")])
def test_build_target_embed_verify(tmp_path, capsys, extra):
    ut, target, embedding = (str(tmp_path / name) for name in ("ut.npz", "t.npz", "E.npy"))
    built = run_json(capsys, "universal", "build", *SHAPE_ARGS, *extra, "-o", ut)
    target_extra = [a for a in extra if a in ("--residual", "--mask", "full")]
    run_json(capsys, "universal", "target", *SHAPE_ARGS, *target_extra, "--seed", "5", "-o", target)
    embedded = run_json(capsys, "universal", "embed", target, "--ut", ut, "-o", embedding)
    assert np.load(embedding).shape == (3, built["m"]) and embedded["m"] == built["m"]
    checked = run_json(capsys, "universal", "verify", target, "--ut", ut, "--embedding",
                       embedding, "--lengths", "1-12")
    assert checked["passed"] and checked["relative_error"] <= checked["tolerance"]
    assert checked["sequences"] == 4 * 12
    assert ("condition" in checked) == ("--random" in extra)


def test_built_file_is_the_library_construction(tmp_path, capsys):
    run_json(capsys, "universal", "build", *SHAPE_ARGS, "--out-dim", "1", "-o",
             str(tmp_path / "ut.npz"))
    assert weights_equal(load(tmp_path / "ut.npz"), build_sparse(Shape(3, 2, 1, 2, 2)))


def test_human_output_names_m_error_and_time(tmp_path, capsys):
    ut, target = str(tmp_path / "ut.npz"), str(tmp_path / "t.npz")
    assert main(["universal", "build", *SHAPE_ARGS, "-o", ut]) == 0
    # Compact layout, H = L = 2, k = 2, c = d = 3: m = 2Hk(1 + H) + cH^2 = 24 + 12.
    assert "m: 36" in capsys.readouterr().out
    assert main(["universal", "target", *SHAPE_ARGS, "--seed", "1", "-o", target]) == 0
    assert main(["universal", "verify", target, "--ut", ut, "--lengths", "3"]) == 0
    out = capsys.readouterr().out
    for key in ("max_error:", "m: 36", "verify_seconds:", "passed: True"):
        assert key in out


def test_wrong_embedding_fails_verification(tmp_path, capsys):
    ut, target, embedding = (str(tmp_path / name) for name in ("ut.npz", "t.npz", "E.npy"))
    main(["universal", "build", *SHAPE_ARGS, "-o", ut])
    main(["universal", "target", *SHAPE_ARGS, "--seed", "1", "-o", target])
    main(["universal", "embed", target, "--ut", ut, "-o", embedding])
    np.save(embedding, np.load(embedding) * (1 + 1e-6))
    capsys.readouterr()
    assert main(["universal", "verify", target, "--ut", ut, "--embedding", embedding]) == 1
    assert "passed: False" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["build", "--heads", "1", "--layers", "2", "--dim", "2", "--tied", "--residual"],
     "tied: a looped"),
    (["build", "--heads", "2", "--layers", "2", "--dim", "2", "--random", "0", "--m", "5"],
     None),  # building is fine; embedding below fails
])
def test_build_errors(tmp_path, capsys, argv, message):
    code = main(["universal", *argv, "-o", str(tmp_path / "ut.npz")])
    if message is None:
        assert code == 0
        main(["universal", "target", "--heads", "2", "--layers", "2", "--dim", "2", "--seed", "0",
              "-o", str(tmp_path / "t.npz")])
        capsys.readouterr()
        code = main(["universal", "embed", str(tmp_path / "t.npz"), "--ut",
                     str(tmp_path / "ut.npz"), "-o", str(tmp_path / "E.npy")])
        message = "m: the universal transformer has m = 5 .* need m >= 32"
    assert code == 1
    err = capsys.readouterr().err
    assert err.startswith("universal error: ") and re.search(message, err)
    assert "Traceback" not in err


def test_unreadable_files_exit_1(tmp_path, capsys):
    (tmp_path / "bad.npz").write_bytes(b"garbage")
    np.save(tmp_path / "E.npy", np.full((3, 36), np.nan))
    ut = str(tmp_path / "ut.npz")
    main(["universal", "build", *SHAPE_ARGS, "-o", ut])
    capsys.readouterr()
    assert main(["universal", "embed", str(tmp_path / "bad.npz"), "--ut", ut, "-o",
                 str(tmp_path / "x.npy")]) == 1
    assert "weights error: " in capsys.readouterr().err
    main(["universal", "target", *SHAPE_ARGS, "--seed", "1", "-o", str(tmp_path / "t.npz")])
    capsys.readouterr()
    assert main(["universal", "verify", str(tmp_path / "t.npz"), "--ut", ut, "--embedding",
                 str(tmp_path / "E.npy")]) == 1
    assert "embedding: " in (err := capsys.readouterr().err) and "non-finite values" in err


def test_usage_errors_exit_2(tmp_path, capsys):
    assert main(["universal", "build", *SHAPE_ARGS, "--m", "4", "-o", str(tmp_path / "u")]) == 2
    with pytest.raises(SystemExit) as exit_info:
        main(["universal", "verify", "t.npz", "--ut", "u.npz", "--lengths", "0-3"])
    assert exit_info.value.code == 2
