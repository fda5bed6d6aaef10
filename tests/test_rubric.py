"""rubrics.yaml: every error names file, line and expectation; lint; round trip; the CLI commands."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from agentic_rubrics.cli.app import app
from agentic_rubrics.exceptions import RubricError
from agentic_rubrics.rubric.file import json_schema, lint, load_rubric, parse_rubric, write_rubric

from .conftest import item, rubric

VALID = """\
metadata:
  task_summary: "Empty headers must raise instead of returning None"
  underlying_bug: "Parser.parse_header returns None for empty input"
axes:
  file_change_rubrics:
    - id: FC1
      description: "Modifies Parser.parse_header in src/pkg/parser.py"
      weight: 3
      check: {touches_symbol: Parser.parse_header, in: src/pkg/parser.py}
    - id: FC2
      description: "Keeps the change inside src/pkg/"
      weight: 2
      check: {only_touches: ["src/pkg/", "tests/"]}
    - id: FC3
      description: "Changes at most 40 lines"
      weight: 1
      check: {max_changed_lines: 40}
    - id: FC4
      description: "Leaves the public package __init__ untouched"
      weight: 1
      check: {not_touches: src/pkg/__init__.py}
  spec_alignment_rubrics:
    - id: SA1
      description: "Raises ValueError for an empty header"
      weight: 3
      check: {adds_match: 'raise ValueError', in: src/pkg/parser.py}
    - id: SA2
      description: "Keeps returning a list for non-empty headers"
      weight: 2
    - id: SA3
      description: "Mentions the empty input in the error message"
      weight: 1
  integrity_rubrics:
    - id: IN1
      description: "Removes no assertion from the tests"
      weight: 3
      gate: true
      check: {removes_no_match: '^\\s*assert\\b', in: 'tests/'}
    - id: IN2
      description: "Adds no skip or xfail marker"
      weight: 3
      check: {adds_no_match: 'pytest\\.mark\\.(skip|xfail)'}
    - id: IN3
      description: "Adds no new dependency"
      weight: 2
      check: {not_touches: requirements*.txt}
  runtime_rubrics:
    - id: RT1
      description: "Adds no print call"
      weight: 1
      check: {adds_no_match: '^\\s*print\\(', in: '*.py'}
    - id: RT2
      description: "Preserves behaviour for headers with several colons"
      weight: 2
    - id: RT3
      description: "Avoids sleeping or timing-dependent code"
      weight: 1
      check: {adds_no_match: 'time\\.sleep'}
"""


def problems_of(text: str, file: str = "rubrics.yaml") -> list[str]:
    with pytest.raises(RubricError) as info:
        parse_rubric(text, file)
    return [str(p) for p in info.value.problems]


def test_valid_rubric_loads_without_warnings(tmp_path: Path) -> None:
    path = tmp_path / "rubrics.yaml"
    path.write_text(VALID)
    rubric, warnings = load_rubric(path)
    assert warnings == []
    assert [i.id for _, i in rubric.items()] == [
        "FC1", "FC2", "FC3", "FC4", "SA1", "SA2", "SA3", "IN1", "IN2", "IN3", "RT1", "RT2", "RT3",
    ]  # fmt: skip
    assert rubric.item("IN1").gate and rubric.item("SA2").check is None
    assert (
        rubric.item("FC1").check is not None
        and rubric.item("FC1").check.path == "src/pkg/parser.py"
    )


def test_round_trip_is_stable(tmp_path: Path) -> None:
    rubric, _ = parse_rubric(VALID)
    out = tmp_path / "sub" / "rubrics.yaml"
    write_rubric(rubric, out)
    again, warnings = load_rubric(out)
    assert again == rubric and warnings == []
    assert again.content_hash() == rubric.content_hash()
    assert [p.name for p in out.parent.iterdir()] == ["rubrics.yaml"]  # no temp file left behind


def test_yaml_syntax_error_names_line() -> None:
    text = VALID.replace(
        '      weight: 2\n      check: {only_touches: ["src/pkg/", "tests/"]}', "      weight: [2\n"
    )
    (msg,) = problems_of(text)
    assert msg.startswith("rubrics.yaml:") and "YAML syntax error" in msg
    line = int(msg.split(":")[1])
    assert 13 <= line <= 15


@pytest.mark.parametrize(
    ("old", "new", "line", "expected"),
    [
        (
            "  runtime_rubrics:",
            "  performance_rubrics:",
            47,
            "unknown axis 'performance_rubrics'; expected one of: file_change_rubrics",
        ),
        ("    - id: FC2", "    - id: FC1", 10, "duplicate item id 'FC1' (first used on line 6)"),
        (
            "      weight: 3\n      check: {touches_symbol",
            "      weight: 5\n      check: {touches_symbol",
            8,
            "weight must be 1, 2 or 3",
        ),
        (
            "check: {max_changed_lines: 40}",
            "check: {max_lines: 40}",
            17,
            "unknown check 'max_lines'; expected one of touches",
        ),
        (
            "check: {adds_match: 'raise ValueError'",
            "check: {adds_match: 'raise (ValueError'",
            26,
            "regex does not compile",
        ),
        (
            '      description: "Changes at most 40 lines"\n',
            "",
            14,
            "missing required key 'description'",
        ),
        (
            "      weight: 1\n      check: {max_changed_lines",
            "      wieght: 1\n      check: {max_changed_lines",
            16,
            "unknown key 'wieght'; expected one of: id, description, weight, check, gate",
        ),
        (
            "check: {max_changed_lines: 40}",
            "check: {max_changed_lines: forty}",
            17,
            "expected a whole number",
        ),
        (
            "check: {not_touches: src/pkg/__init__.py}",
            "check: {not_touches: x, touches: y}",
            21,
            "exactly one predicate name",
        ),
        ("      gate: true", "      gate: maybe", 37, "valid boolean"),
    ],
)
def test_each_error_names_file_line_and_expectation(
    old: str, new: str, line: int, expected: str
) -> None:
    assert old in VALID
    problems = problems_of(VALID.replace(old, new, 1), "path/to/rubrics.yaml")
    assert len(problems) <= 2, problems  # a misspelt key is also a missing one
    assert any(
        msg.startswith(f"path/to/rubrics.yaml:{line}:") and expected in msg for msg in problems
    ), problems


def test_several_errors_are_all_reported_in_line_order() -> None:
    text = VALID.replace("weight: 3", "weight: 0").replace("{max_changed_lines: 40}", "{nope: 1}")
    problems = problems_of(text)
    lines = [int(p.split(":")[1]) for p in problems]
    assert lines == sorted(lines) and len(problems) == 5


def test_non_mapping_documents() -> None:
    assert "got empty" in problems_of("")[0]
    assert "got list" in problems_of("- a\n- b\n")[0]
    assert (
        "missing required key 'axes'"
        in problems_of("metadata: {task_summary: a, underlying_bug: b}\n")[0]
    )
    dup = VALID.replace("  underlying_bug:", "  task_summary: again\n  underlying_bug:")
    assert "duplicate key 'task_summary'" in problems_of(dup)[0]


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(RubricError, match="cannot read"):
        load_rubric(tmp_path / "missing.yaml")


def test_lint_warnings_keep_the_rubric_loadable() -> None:
    text = (
        VALID.replace('"Adds no print call"', '"Adds no print call and removes the logging"')
        .replace('"Avoids sleeping or timing-dependent code"', '"Ensure it behaves like SA2"')
        .replace(
            '"Preserves behaviour for headers with several colons"', '"Adds no new  dependency"'
        )
    )
    _, warnings = parse_rubric(text, "r.yaml")
    text_of = "\n".join(str(w) for w in warnings)
    assert "compound item: joins two requirements with 'and removes'" in text_of
    assert "third-person verb" in text_of and "'Ensure'" in text_of
    assert "refers to other items (SA2)" in text_of
    assert "duplicate description" in text_of
    assert all(w.severity == "warning" and w.line for w in warnings)
    # too few items on an axis
    short, _ = parse_rubric(VALID)
    assert lint(short) == []
    small = VALID.split("  runtime_rubrics:")[0] + "  runtime_rubrics: []\n"
    _, w = parse_rubric(small)
    assert any("runtime_rubrics has 0 items; 3-6 expected" in str(x) for x in w)


def test_a_text_is_parsed_once_and_each_caller_gets_its_own_file_names() -> None:
    """The run that writes a rubric and the report that reads it back share one parse, and each gets
    a rubric of its own: an edit of one caller's lists reaches no other."""
    from agentic_rubrics.rubric.file import _parse_valid

    text = VALID.replace(
        '"Avoids sleeping or timing-dependent code"', '"Ensure it behaves like SA2"'
    )
    first, warnings_a = parse_rubric(text, "a/rubrics.yaml")
    hits = _parse_valid.cache_info().hits
    second, warnings_b = parse_rubric(text, "b/rubrics.yaml")
    assert _parse_valid.cache_info().hits == hits + 1  # parsed once
    assert second == first and second is not first
    items = len(list(first.items()))
    first.axes.file_change_rubrics.clear()  # frozen models, but their lists can be edited
    assert len(list(second.items())) == items
    assert len(list(parse_rubric(text, "c/rubrics.yaml")[0].items())) == items
    assert warnings_a and [w.file for w in warnings_a] == ["a/rubrics.yaml"] * len(warnings_a)
    assert [w.file for w in warnings_b] == ["b/rubrics.yaml"] * len(warnings_b)
    assert [(w.line, w.message) for w in warnings_a] == [(w.line, w.message) for w in warnings_b]
    # an invalid text is never cached and names the file of each call
    bad = VALID.replace("weight: 3", "weight: 9", 1)
    for file in ("x.yaml", "y.yaml"):
        with pytest.raises(RubricError) as err:
            parse_rubric(bad, file)
        assert all(p.file == file for p in err.value.problems)


def test_json_schema_accepts_the_valid_rubric_and_rejects_bad_ones() -> None:
    import jsonschema
    import yaml

    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    assert list(validator.iter_errors(yaml.safe_load(VALID))) == []
    bad = yaml.safe_load(VALID.replace("{max_changed_lines: 40}", "{max_lines: 40}"))
    assert list(validator.iter_errors(bad))


def test_cli_validate_and_schema(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(VALID)
    bad = tmp_path / "bad.yaml"
    bad.write_text(VALID.replace("weight: 3", "weight: 5", 1))
    runner = CliRunner()
    ok = runner.invoke(app, ["validate", str(good)])
    assert ok.exit_code == 0, ok.output
    assert "ok (13 items, 0 warnings)" in ok.output
    failed = runner.invoke(app, ["validate", str(good), str(bad)])
    assert failed.exit_code == 1
    assert f"{bad}:8:" in failed.output and "weight must be 1, 2 or 3" in failed.output
    warn = tmp_path / "warn.yaml"
    warn.write_text(VALID.replace('"Adds no print call"', '"Ensure no print"'))
    assert runner.invoke(app, ["validate", str(warn)]).exit_code == 0
    assert runner.invoke(app, ["validate", "--strict", str(warn)]).exit_code == 1
    out = tmp_path / "schema.json"
    assert runner.invoke(app, ["schema", "--out", str(out)]).exit_code == 0
    assert json.loads(out.read_text())["title"] == "agentic-rubrics rubrics.yaml"


def test_console_script_is_installed() -> None:
    exe = Path(sys.executable).parent / "agentic-rubrics"
    out = subprocess.run([str(exe), "--help"], capture_output=True, text=True, check=True)
    assert "validate" in out.stdout and "schema" in out.stdout


# the characters YAML treats specially, and enough words to reach the line width of 100
_YAML_TEXT = st.lists(
    st.sampled_from(
        [
            *" :#-'\"\\{}[],?!&*|>%@`=.~0123456789abcxyzéü—中\u00a0\ufeff\u2028\x85\t\n\r",
            *("word ", "null", "yes", "1e5", "---", "x" * 40),
        ]
    ),
    max_size=60,
).map("".join)
_ASCII_TEXT = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=250)


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(st.one_of(_YAML_TEXT, _ASCII_TEXT), min_size=4, max_size=4))
def test_rubrics_yaml_is_the_text_pyyaml_writes_whichever_emitter_runs(texts: list[str]) -> None:
    """libyaml's emitter is used only where it writes exactly what PyYAML's own writes."""
    import yaml

    from agentic_rubrics.rubric.file import dump_rubric_document

    doc = {
        "metadata": {"task_summary": texts[0], "underlying_bug": texts[1]},
        "axes": {
            "file_change_rubrics": [
                {
                    "id": "FC1",
                    "description": texts[2],
                    "weight": 3,
                    "check": {"adds_match": texts[3]},
                }
            ]
        },
    }
    assert dump_rubric_document(doc) == yaml.safe_dump(
        doc, sort_keys=False, allow_unicode=True, width=100
    )


def test_a_rubric_built_in_python_that_would_not_load_is_never_written(tmp_path: Path) -> None:
    """Rubric.model_validate skips the checks' validation: write_rubric wrote {no_such_check: 1}
    or {max_files: -1}, which load_rubric then refused. Now it refuses, naming the field, and writes
    nothing; parse_rubric given a dict says what it takes."""
    for check in ({"no_such_check": 1}, {"max_files": -1}, {"adds_match": "("}):
        bad = rubric(file_change=[item("FC1", 2, check)])
        path = tmp_path / "rubrics.yaml"
        with pytest.raises(RubricError, match=r"FC1|file_change"):
            write_rubric(bad, path)
        assert not path.exists()
    good = rubric(file_change=[item("FC1", 2, {"max_files": 3})])
    write_rubric(good, str(tmp_path / "ok.yaml"))
    assert load_rubric(tmp_path / "ok.yaml")[0] == good
    with pytest.raises(TypeError, match=r"takes rubrics\.yaml.s text"):
        parse_rubric({"axes": {}})  # type: ignore[arg-type]
