"""The bounded reader for files rasp-sim did not write in this run (rasp_sim/base/bounded_read.py)."""
import json
import os

import pytest
from hypothesis import given, strategies as st

from rasp_sim.base.bounded_read import UnreadableFile, json_depth, parse_json, read_bytes, read_json

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab,: '),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(alphabet='[]{}"\\ab'), children, max_size=3),
    max_leaves=20)


def _depth(value) -> int:
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    return 0


@given(_json_values)
def test_json_depth_counts_nesting_not_brackets_inside_strings(value):
    assert json_depth(json.dumps(value).encode()) == _depth(value)


def test_deep_json_is_refused_before_parsing():
    with pytest.raises(UnreadableFile, match="nested 5,000 levels deep"):
        parse_json(b"[" * 5000 + b"]" * 5000)


def test_only_regular_files_under_the_bound_are_read(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(UnreadableFile, match="FIFO"):  # would block if opened plainly
        read_bytes(fifo, "proof record", 100)
    with pytest.raises(UnreadableFile, match="a directory, not a proof record file"):
        read_bytes(tmp_path, "proof record", 100)
    big = tmp_path / "big.json"
    with open(big, "wb") as file:  # sparse: 1 GB of nothing, never read
        file.truncate(2**30)
    with pytest.raises(UnreadableFile, match="1,073,741,824 bytes, above the limit of 100"):
        read_bytes(big, "result", 100)
    good = tmp_path / "good.json"
    good.write_text('{"rows": [1, 2]}')
    assert read_json(good, "summary", 100) == {"rows": [1, 2]}
    with pytest.raises(UnreadableFile, match="not valid JSON"):
        parse_json(b'{"rows": [1, 2}')
    with pytest.raises(UnreadableFile, match="No such file"):
        read_bytes(tmp_path / "missing", "model", 100)
