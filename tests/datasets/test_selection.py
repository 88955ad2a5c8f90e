"""--shapes selections: keywords, family:M lists, M= lists and combinations, validated against the workload."""
from pathlib import Path

import pytest

from datasets import ShapeSelectionError, load_workload, select_shapes, shape_key_of
from datasets.selection import Part, parse_selection

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "workloads" / "tiny.json"


@pytest.fixture(scope="module")
def muse():
    return load_workload()


@pytest.fixture(scope="module")
def llama():
    return load_workload("llama31_8b_decode")


def _ids(rows):
    return [(r["load"], r["family"], r["M"], r["N"]) for r in rows]


def test_parse_splits_parts_and_items():
    assert parse_selection(" qkv_gate, o : 1, 64 + M=3 + all ") == [
        Part(("qkv_gate", "o"), (1, 64)), Part(None, (3,)), Part(None, ("all",))]


def test_keywords_give_the_workload_frames(muse):
    assert select_shapes("official", muse) == muse.scored_rows()
    assert select_shapes("nearby", muse) == muse.nearby_rows()
    assert select_shapes("all", muse) == muse.scored_rows() + muse.nearby_rows()
    assert (len(select_shapes("official", muse)), len(select_shapes("all", muse))) == (30, 85)


def test_family_with_scored_and_unscored_m(muse):
    rows = select_shapes("qkv_gate:1,64,512", muse)
    assert _ids(rows) == [("decode 1", "qkv_gate", 1, 2304), ("nearby", "qkv_gate", 64, 2304),
                          ("nearby", "qkv_gate", 512, 2304)]
    assert [shape_key_of(r) for r in rows] == ["decode 1/qkv_gate", "nearby/qkv_gate/M64", "nearby/qkv_gate/M512"]
    scored = {shape_key_of(r) for r in muse.scored_rows()}
    assert {shape_key_of(r) for r in rows} - scored == {"nearby/qkv_gate/M64", "nearby/qkv_gate/M512"}


def test_unpooler_n_follows_n_by_m(muse):
    assert _ids(select_shapes("unpooler:1,8,9,64", muse)) == [
        ("decode 1", "unpooler", 1, 1024), ("verify 1", "unpooler", 8, 1024), ("nearby", "unpooler", 9, 8192),
        ("nearby", "unpooler", 64, 8192)]


def test_m_equals_covers_every_family(muse):
    rows = select_shapes("M=3,17", muse)
    assert len(rows) == 10 and {r["family"] for r in rows} == set(muse.family_order)
    assert all(r["load"] == "nearby" for r in rows)


def test_combinations_keep_order_and_drop_repeats(muse):
    rows = select_shapes("qkv_gate:64+official+M=1+qkv_gate:64", muse)
    assert len(rows) == 31 and shape_key_of(rows[0]) == "nearby/qkv_gate/M64"
    assert rows[1:] == muse.scored_rows()
    assert _ids(select_shapes("o,router:official", muse)) == [
        (load, f, M, {"o": 8192, "router": 256}[f]) for load, M in muse.load_m.items() for f in ("o", "router")]


def test_llama_selection(llama):
    assert _ids(select_shapes("qkv:64", llama)) == [("nearby", "qkv", 64, 6144)]
    assert _ids(select_shapes("down:128", llama)) == [("prefill 128", "down", 128, 4096)]
    assert select_shapes("all", llama) == llama.scored_rows()             # no nearby list: all = official
    with pytest.raises(ShapeSelectionError, match="llama31_8b_decode lists no nearby M values"):
        select_shapes("nearby", llama)
    with pytest.raises(ShapeSelectionError, match="unknown family 'qkv_gate'; llama31_8b_decode has qkv, o, "):
        select_shapes("qkv_gate:1", llama)


def test_tiny_selection():
    tiny = load_workload(TINY)
    assert _ids(select_shapes("proj:1,2,5", tiny)) == [("one", "proj", 1, 32), ("nearby", "proj", 2, 64),
                                                       ("nearby", "proj", 5, 64)]


@pytest.mark.parametrize("selection, words", [
    ("qkv:1", ["unknown family 'qkv'", "qkv_gate, o, pooler, unpooler, router"]),
    ("qkv_gate:0", ["M must be a positive integer", "'0'"]),
    ("qkv_gate:-3", ["M must be a positive integer", "'-3'"]),
    ("M=1.5", ["expected an M", "'1.5'"]),
    ("qkv_gate:sixty", ["'sixty'"]),
    ("qkv_gate:", ["empty item"]),
    ("qkv_gate:1,,2", ["empty item"]),
    ("M=", ["empty item"]),
    (":1", ["empty family name"]),
    ("K=4096", ["only 'M='", "'K'"]),
    ("qkv_gate", ["'qkv_gate' is not a selection", "qkv_gate:official"]),
    ("official+", ["empty part"]),
    ("", ["empty selection"]),
    ("M=100000", ["over the limit 65,536"]),
])
def test_bad_selections_are_one_clear_line(muse, selection, words):
    with pytest.raises(ShapeSelectionError) as info:
        select_shapes(selection, muse)
    message = str(info.value)
    assert isinstance(info.value, ValueError) and "\n" not in message
    assert message.startswith(f"shapes {selection!r}: ")
    for word in words:
        assert word in message, message
