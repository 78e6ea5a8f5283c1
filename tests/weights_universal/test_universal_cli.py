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


def fails(capsys, argv, code):
    """Run `rasp-sim universal ARGV`, expecting exit `code`; its stderr."""
    if code == 2:
        try:
            got = main(["universal", *argv])
        except SystemExit as exit_info:  # argparse's own usage errors
            got = exit_info.code
    else:
        got = main(["universal", *argv])
    err = capsys.readouterr().err
    assert got == code, err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize("argv, pattern", [
    (["build", "--heads", "0", "--layers", "1", "--dim", "2"],
     r"argument --heads: invalid value '0': expected a positive integer"),
    (["build", *SHAPE_ARGS, "--random", "-1"],
     r"argument --random: invalid value '-1': expected a seed, an integer >= 0"),
    (["build", *SHAPE_ARGS, "--random", str(2**70)],  # it wrote a file it could not read
     r"argument --random: invalid value '\d+': expected a seed, an integer >= 0 of at most "
     r"4,294,967,295"),
    (["build", *SHAPE_ARGS, "--random", "1", "--m", "0"],
     r"argument --m: invalid value '0': expected a positive integer"),
    (["target", *SHAPE_ARGS, "--seed", "-1"],
     r"argument --seed: invalid value '-1': expected a seed, an integer >= 0"),
    (["verify", "t.npz", "--ut", "u.npz", "--batch", "0"],
     r"argument --batch: invalid value '0': expected a positive integer"),
    (["verify", "t.npz", "--ut", "u.npz", "--lengths", "5-3"], r"invalid lengths '5-3'"),
    (["build", *SHAPE_ARGS, "--memory-limit", "0"], r"invalid size '0'"),
])
def test_bad_arguments_are_usage_errors(capsys, argv, pattern):
    err = fails(capsys, [*argv, "-o", "x.npz"] if argv[0] != "verify" else argv, 2)
    assert re.search(pattern, err), err


@pytest.mark.parametrize("where, pattern", [
    ("missing/ut.npz", r"-o .*missing/ut\.npz: the folder .*missing does not exist"),
    (".", r"-o .*: is a folder; give a file name"),
])
def test_output_is_checked_before_building(tmp_path, capsys, where, pattern):
    err = fails(capsys, ["build", *SHAPE_ARGS, "-o", str(tmp_path / where)], 2)
    assert re.search(pattern, err), err
    assert list(tmp_path.iterdir()) == []


def test_sizes_are_estimated_before_building(tmp_path, capsys):
    from rasp_sim.compiler.universal.budget import sparse_width

    out = str(tmp_path / "ut.npz")
    err = fails(capsys, ["build", "--heads", "8", "--layers", "8", "--dim", "4", "-o", out], 1)
    m = sparse_width(Shape(4, 4, 4, 8, 8), False)
    assert re.match(rf"resource limit: the sparse universal transformer for H = 8, L = 8, d = 4, "
                    rf"k = 4, c = 4 \(m = {m:,}\) needs about [\d,]+ bytes, above the memory "
                    r"limit of 4,294,967,296 bytes; raise it with --memory-limit SIZE", err), err
    err = fails(capsys, ["build", *SHAPE_ARGS, "--random", "1", "--m", "1000000000", "-o", out], 1)
    # H * L = 4 value matrices of m x m float64 alone: 4 * 8 * 10^18 bytes
    needed = int(re.search(r"needs about ([\d,]+) bytes", err).group(1).replace(",", ""))
    assert "(m = 1,000,000,000)" in err and needed > 32 * 10**18
    err = fails(capsys, ["build", "--heads", "3", "--layers", "100", "--dim", "4", "-o", out], 1)
    assert "has 3^100 (about 2^158) attention paths" in err and "beyond any memory limit" in err
    err = fails(capsys, ["build", *SHAPE_ARGS, "--memory-limit", "1MiB", "-o", out], 1)
    assert "above the memory limit of 1,048,576 bytes" in err
    assert not (tmp_path / "ut.npz").exists()


def test_verify_estimates_its_longest_input(tmp_path, capsys):
    ut, target = str(tmp_path / "ut.npz"), str(tmp_path / "t.npz")
    main(["universal", "build", *SHAPE_ARGS, "-o", ut])
    main(["universal", "target", *SHAPE_ARGS, "--seed", "1", "-o", target])
    capsys.readouterr()
    err = fails(capsys, ["verify", target, "--ut", ut, "--lengths", "1-1000000000000"], 1)
    assert re.match(r"resource limit: embedding a target in the sparse universal transformer "
                    r"\(H = 2, L = 2, d = 3, k = 2, c = 3\) and running it on 4 inputs of length "
                    r"up to 1000000000000 needs about [\d,]+ bytes, above the memory limit", err)


def test_embed_writes_exactly_the_output_path(tmp_path, capsys):
    ut, target, bare = (str(tmp_path / name) for name in ("ut.npz", "t.npz", "E"))
    main(["universal", "build", *SHAPE_ARGS, "-o", ut])
    main(["universal", "target", *SHAPE_ARGS, "--seed", "1", "-o", target])
    capsys.readouterr()
    assert main(["universal", "embed", target, "--ut", ut, "-o", bare]) == 0
    assert f"output: {bare}\n" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["E", "t.npz", "ut.npz"]
    assert main(["universal", "verify", target, "--ut", ut, "--embedding", bare]) == 0


def test_embedding_files_are_checked_before_reading(tmp_path, capsys):
    ut, target = str(tmp_path / "ut.npz"), str(tmp_path / "t.npz")
    main(["universal", "build", *SHAPE_ARGS, "-o", ut])
    main(["universal", "target", *SHAPE_ARGS, "--seed", "1", "-o", target])
    np.save(tmp_path / "wide.npy", np.zeros((3, 37)))
    (tmp_path / "text.npy").write_text("hello")
    capsys.readouterr()
    for name, pattern in [
            ("t.npz", r"t\.npz: embedding: an \.npz archive, not an \.npy array"),
            ("wide.npy", r"wide\.npy: embedding: holds a float64 array of shape \(3, 37\), "
                         r"expected float64 of shape \(3, 36\) \(d x m\)"),
            ("text.npy", r"text\.npy: embedding: not an \.npy array"),
            ("none.npy", r"none\.npy: no such file")]:
        err = fails(capsys, ["verify", target, "--ut", ut, "--embedding",
                             str(tmp_path / name)], 1)
        assert err.startswith("weights error: ") and re.search(pattern, err), err


def test_a_universal_file_cannot_claim_another_shape(tmp_path, capsys):
    from rasp_sim.compiler.weights import save

    ut = build_sparse(Shape(3, 2, 3, 2, 2))
    info = dict(ut.metadata["universal"])
    for field, value, pattern in [
            ("layers", 8, r"metadata\.universal\.layers: says 8 but the weights have 2"),
            ("heads", "2", r"metadata\.universal\.heads: expected a positive integer, got '2'"),
            ("layout", "tied", r"metadata\.universal\.layout: 'tied' does not fit")]:
        save(ut.replace(metadata={"universal": {**info, field: value}}), tmp_path / "u.npz")
        main(["universal", "target", *SHAPE_ARGS, "--seed", "1", "-o", str(tmp_path / "t.npz")])
        capsys.readouterr()
        err = fails(capsys, ["embed", str(tmp_path / "t.npz"), "--ut", str(tmp_path / "u.npz"),
                             "-o", str(tmp_path / "E.npy")], 1)
        assert err.startswith(f"weights error: {tmp_path / 'u.npz'}: ") and re.search(pattern, err)
