"""datasets.jsonfile: every loader's bad-JSON path gives one clear error, never a RecursionError/UnicodeError."""
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
