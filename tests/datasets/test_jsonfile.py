"""datasets.jsonfile: every loader's bad-JSON path gives one clear error, never a RecursionError/UnicodeError."""
import json
import re
import pytest

from datasets import DatasetError, load_workload
from datasets.jsonfile import JsonInputError, nesting_depth, parse_json, read_json
from kernels.plans import PlanError, load_plan
from datasets.runfile import RunFileError, load_run

DEEP = "[" * 1000 + "]" * 1000


def test_nesting_depth_ignores_brackets_inside_strings():
    assert nesting_depth('{"a": [1, {"b": "[[[[{"}]}') == 3
    assert nesting_depth('"\\"[["') == 0
    assert nesting_depth('["a\\\\", [1, "]]"], "\\u005b"]') == 2  # an escaped backslash ends the string
    assert nesting_depth('{"k": "multi\nline [", "v": [[]]}') == 3


@pytest.mark.parametrize("data, problem", [
    (DEEP, "nested 1000 levels deep"),
    (b"\xff\xfe{}", "not UTF-8"),
    ("{\"a\": NaN}", "NaN"),
    ("{", "not valid JSON"),
])
def test_parse_json_names_the_problem(data, problem):
    with pytest.raises(JsonInputError, match=problem) as info:
        parse_json(data, "x.json")
    assert str(info.value).startswith("x.json: ")


def test_size_limit():
    with pytest.raises(JsonInputError, match="over the 10-byte limit"):
        parse_json(b"[1, 2, 3, 4, 5]", "u.json", max_bytes=10)


def test_read_json_missing_file(tmp_path):
    with pytest.raises(JsonInputError, match="cannot read"):
        read_json(tmp_path / "none.json")


@pytest.mark.parametrize("loader, error", [(load_run, RunFileError), (load_plan, PlanError),
                                           (load_workload, DatasetError)])
@pytest.mark.parametrize("content", [DEEP.encode(), b"\xff\xfe\x00"])
def test_every_loader_turns_bad_json_into_its_own_error(tmp_path, loader, error, content):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(error, match="nested 1000 levels deep|not UTF-8"):
        loader(path)


def test_a_gzip_run_file_reads_as_the_file_it_compresses(tmp_path):
    import gzip
    doc = {"schema_version": 1, "results": [{"median_us": 12.5}]}
    plain, packed = tmp_path / "a.json", tmp_path / "a.json.gz"
    plain.write_text(json.dumps(doc))
    packed.write_bytes(gzip.compress(plain.read_bytes(), mtime=0))
    assert read_json(packed) == read_json(plain) == doc


def test_a_gzip_file_is_refused_when_it_expands_past_the_limit_or_is_cut_short(tmp_path):
    import gzip
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b"[" + b"0," * 50_000 + b"0]"))
    with pytest.raises(JsonInputError, match=r"^bomb\.json\.gz: expands to over 1,000 bytes"):
        read_json(bomb, max_bytes=1_000)
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(b'{"a": 1}' * 100)[:-12])
    with pytest.raises(JsonInputError, match=r"^cut\.json\.gz: the gzip data is cut short"):
        read_json(cut)
    fake = tmp_path / "fake.json.gz"
    fake.write_bytes(b'{"a": 1}')
    with pytest.raises(JsonInputError, match=r"^fake\.json\.gz: not a gzip file"):
        read_json(fake)


def test_committed_compressed_runs_are_listed_and_load():
    from datasets import RUNS_DIR
    from datasets.paths import run_paths, run_stem
    from dashboard.model.runs import list_runs, parse_run_name
    packed = [p for p in run_paths(RUNS_DIR) if p.name.endswith(".json.gz")]
    assert packed and set(packed) <= set(list_runs())
    for p in packed[:3]:
        assert parse_run_name(p)["label"] == run_stem(p.name).split("_", 2)[2]
        assert load_run(p)["results"]


# --- what Python's json module takes silently or turns into a traceback --------------------------------------------
@pytest.mark.parametrize("text, words", [
    ('{"a": 1, "a": 2}', "duplicate key 'a' in one object (which of its values is meant is ambiguous) at a"),
    ('{"results": [{"load": "decode 1", "family": "o", "M": 1, "candidate": "x", "median_us": 5, "median_us": 50}]}',
     "duplicate key 'median_us' in one object (which of its values is meant is ambiguous) at results[0].median_us "
     "(decode 1/o, x)"),
    ("1" + "0" * 5000, "a number with more than 4,300 digits"),
])
def test_ambiguous_or_oversized_json_is_named_with_its_path(text, words):
    with pytest.raises(JsonInputError) as info:
        parse_json(text, "x.json")
    assert str(info.value) == f"x.json: not valid JSON: {words}"


def test_a_byte_order_mark_is_dropped_as_the_csv_reader_drops_it(tmp_path):
    path = tmp_path / "notepad.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"a": [1, 2]}).encode())
    assert read_json(path) == {"a": [1, 2]}
    assert parse_json("\ufeff[1]", "x.json") == [1]


@pytest.mark.parametrize("tail, words", [(b"garbage", "7 byte(s) after the end of the gzip data"),
                                         (None, "after the end of the gzip data (a second member")])
def test_a_gzip_file_with_trailing_bytes_or_a_second_member_is_refused(tmp_path, tail, words):
    import gzip

    doc = b'{"a": 1}'
    path = tmp_path / "x.json.gz"
    path.write_bytes(gzip.compress(doc, mtime=0) + (tail if tail is not None else gzip.compress(b'{"b": 2}')))
    with pytest.raises(JsonInputError, match=re.escape(f"x.json.gz: ") + ".*" + re.escape(words)):
        read_json(path)


def test_a_link_to_a_file_outside_the_project_is_neither_listed_nor_read(tmp_path):
    from datasets.paths import run_paths

    outside = tmp_path / "secret.json"
    outside.write_text('{"a": 1}')
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "2026-01-01_x_link.json").symlink_to(outside)
    (folder / "2026-01-01_x_real.json").write_text('{"a": 1}')
    assert [p.name for p in run_paths(folder)] == ["2026-01-01_x_real.json"]
    with pytest.raises(JsonInputError, match=r"^2026-01-01_x_link\.json: a link to a file outside the project"):
        read_json(folder / "2026-01-01_x_link.json")


def test_control_characters_come_back_escaped_and_a_clean_file_is_not_walked(monkeypatch):
    import datasets.jsonfile as jsonfile

    doc = {"candidate": "a\x1b[31mb\r\n\x00\u202ec", "plain \\n": "µ"}
    for text in (json.dumps(doc), json.dumps(doc, ensure_ascii=False, indent=1)):
        assert parse_json(text, "x") == {"candidate": "a\\x1b[31mb\\r\\n\\x00\\u202ec", "plain \\n": "µ"}

    def walked(value):
        raise AssertionError("a document without unsafe characters was walked")

    monkeypatch.setattr(jsonfile, "escape_strings", walked)
    clean = json.dumps({"results": [{"candidate": "best", "method": "gemv \"q\"", "us": 1.5}] * 3, "µs": "x"},
                       indent=1)
    assert parse_json(clean, "x")["results"][0]["method"] == 'gemv "q"'
