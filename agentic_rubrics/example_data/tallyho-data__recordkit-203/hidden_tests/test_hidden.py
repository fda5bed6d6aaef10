import copy
from types import MappingProxyType

import pytest

from recordkit import (
    Field,
    Schema,
    SchemaError,
    apply_defaults,
    dedupe,
    drop,
    flatten,
    group_by,
    index_by,
    merge,
    normalise_keys,
    pick,
    read_csv,
    read_jsonl,
    rename,
    set_path,
    sort_records,
    unflatten,
    write_csv,
    write_jsonl,
)


def issue_rows():
    return [
        {"id": 1, "name": "Aroha Ngata", "meta": {"owner": "sales"}},
        {"id": 2, "name": "Ben Okafor"},
        {"id": 3, "name": "Chen Wei", "country": "AU", "meta": {"source": "web-form"}},
    ]


def issue_defaults():
    return {"country": "NZ", "meta": {"source": "crm-export", "tags": []}}


# --- FAIL_TO_PASS ---------------------------------------------------------------------------------


def test_issue_example_each_record_gets_its_own_meta():
    defaults = issue_defaults()
    out = apply_defaults(issue_rows(), defaults)
    assert [(r["id"], r["meta"]) for r in out] == [
        (1, {"source": "crm-export", "tags": [], "owner": "sales"}),
        (2, {"source": "crm-export", "tags": []}),
        (3, {"source": "web-form", "tags": []}),
    ]
    assert [r["country"] for r in out] == ["NZ", "NZ", "AU"]
    assert defaults == issue_defaults()


def test_issue_example_defaults_reusable_across_batches():
    defaults = issue_defaults()
    apply_defaults(issue_rows(), defaults)
    [fresh] = apply_defaults([{"id": 9}], defaults)
    assert fresh == {"country": "NZ", "meta": {"source": "crm-export", "tags": []}, "id": 9}


def test_tagging_one_record_does_not_tag_the_others():
    defaults = issue_defaults()
    out = apply_defaults(issue_rows(), defaults)
    out[1]["meta"]["tags"].append("vip")
    assert [r["meta"]["tags"] for r in out] == [[], ["vip"], []]
    assert defaults["meta"]["tags"] == []
    [later] = apply_defaults([{"id": 4}], defaults)
    assert later["meta"]["tags"] == []


def test_merge_leaves_every_layer_unchanged():
    base = {"n": {"x": 1, "deep": {"a": 1}}, "l": [1], "s": "v"}
    middle = {"n": {"y": 2, "deep": {"b": 2}}, "only": {"k": {"z": 0}}}
    top = {"n": {"deep": {"c": 3}}, "only": {"k": {"w": 1}}}
    snapshots = [copy.deepcopy(layer) for layer in (base, middle, top)]
    merged = merge(base, middle, top)
    assert merged == {
        "n": {"x": 1, "deep": {"a": 1, "b": 2, "c": 3}, "y": 2},
        "l": [1],
        "s": "v",
        "only": {"k": {"z": 0, "w": 1}},
    }
    assert [base, middle, top] == snapshots


def test_merge_into_empty_first_layer_leaves_later_layers_unchanged():
    b = {"n": {"x": 1}}
    c = {"n": {"y": 2}}
    assert merge({}, b, c) == {"n": {"x": 1, "y": 2}}
    assert b == {"n": {"x": 1}}
    assert merge(b, c) == {"n": {"x": 1, "y": 2}}
    assert b == {"n": {"x": 1}}


def test_merge_result_shares_no_dicts_or_lists_with_layers():
    base = {"meta": {"tags": ["a"], "inner": {"v": 1}}, "items": [{"k": 1}]}
    override = {"extra": {"list": [1, 2], "d": {"q": 1}}, "meta": {"more": ["m"]}}
    snapshots = copy.deepcopy(base), copy.deepcopy(override)
    merged = merge(base, override)
    merged["meta"]["tags"].append("b")
    merged["meta"]["inner"]["v"] = 2
    merged["meta"]["more"].append("n")
    merged["items"][0]["k"] = 2
    merged["items"].append({})
    merged["extra"]["list"].append(3)
    merged["extra"]["d"]["q"] = 2
    assert (base, override) == snapshots


def test_apply_defaults_output_is_independent_of_input_records():
    rows = [{"id": 1, "address": {"city": "Nelson", "lines": ["1 Main St"]}}]
    snapshot = copy.deepcopy(rows)
    [out] = apply_defaults(rows, {"address": {"country": "NZ"}})
    assert out["address"] == {"country": "NZ", "city": "Nelson", "lines": ["1 Main St"]}
    out["address"]["lines"].append("Level 2")
    out["address"]["city"] = "Picton"
    assert rows == snapshot


def test_schema_list_default_is_not_shared_between_records():
    tags = Field("meta.tags", list, default=[])
    schema = Schema([Field("id", int, required=True), tags])
    first = schema.apply({"id": 1})
    first["meta"]["tags"].append("vip")
    second = schema.apply({"id": "2"})
    assert second == {"meta": {"tags": []}, "id": 2}
    assert tags.default == []


# --- PASS_TO_PASS ---------------------------------------------------------------------------------


def test_merge_semantics():
    assert merge() == {}
    single = {"a": {"b": 1}}
    assert merge(single) == single
    assert merge(single) is not single
    assert merge({"a": {"b": {"c": 1, "d": 2}}}, {"a": {"b": {"d": 3}}}) == {"a": {"b": {"c": 1, "d": 3}}}
    assert merge({"a": {"b": 1}}, {"a": 5}) == {"a": 5}
    assert merge({"a": 5}, {"a": {"b": 1}}) == {"a": {"b": 1}}
    assert merge({"a": {"b": 1}}, {"a": None}) == {"a": None}
    assert merge({"l": [1, 2]}, {"l": [3]}) == {"l": [3]}
    assert list(merge({"b": 1, "a": 1}, {"c": 1, "b": 2})) == ["b", "a", "c"]
    assert merge(MappingProxyType({"a": 1}), {"b": 2}) == {"a": 1, "b": 2}


def test_apply_defaults_record_values_win():
    rows = [{"id": 1, "country": None}, {"id": 2, "meta": {"source": "web"}}]
    out = apply_defaults(rows, {"country": "NZ", "tier": 1})
    assert out == [
        {"country": None, "tier": 1, "id": 1},
        {"country": "NZ", "tier": 1, "id": 2, "meta": {"source": "web"}},
    ]
    assert all(o is not r for o, r in zip(out, rows))
    assert apply_defaults([], {"a": 1}) == []


def test_single_record_helpers_return_copies():
    record = {"a": 1, "b": {"c": 2}}
    assert set_path(record, "b.d", 3) == {"a": 1, "b": {"c": 2, "d": 3}}
    assert set_path(record, "a.x", 1) == {"a": {"x": 1}, "b": {"c": 2}}
    assert pick(record, ["b"]) == {"b": {"c": 2}}
    assert drop(record, ["b"]) == {"a": 1}
    assert rename(record, {"a": "z"}) == {"z": 1, "b": {"c": 2}}
    assert record == {"a": 1, "b": {"c": 2}}
    assert unflatten(flatten({"x": {"y": {"z": 1}}, "e": {}})) == {"x": {"y": {"z": 1}}, "e": {}}


def test_list_operations():
    rows = [{"n": "b", "k": 1}, {"n": None, "k": 2}, {"n": "a", "k": 3}, {"n": "b", "k": 4}]
    before = copy.deepcopy(rows)
    assert [r["k"] for r in sort_records(rows, "n")] == [3, 1, 4, 2]
    assert [r["k"] for r in sort_records(rows, "n", reverse=True)] == [1, 4, 3, 2]
    assert [r["k"] for r in dedupe(rows, "n")] == [1, 2, 3]
    assert {k: len(v) for k, v in group_by(rows, "n").items()} == {"b": 2, None: 1, "a": 1}
    assert index_by(rows, "n")["b"]["k"] == 4
    assert rows == before
    assert normalise_keys([{"userID": 1, " Last Name ": 2}]) == [{"user_id": 1, "last_name": 2}]


def test_schema_apply_and_problems():
    schema = Schema(
        [Field("id", int, required=True), Field("country", str, default="NZ"), Field("meta.score", float)]
    )
    assert schema.apply({"id": "3", "meta": {"score": "1.5"}}) == {
        "country": "NZ",
        "id": 3,
        "meta": {"score": 1.5},
    }
    with pytest.raises(SchemaError) as info:
        schema.apply({"meta": {"score": "high"}})
    assert len(info.value.problems) == 2
    assert schema.problems({"id": 1}) == []


def test_io_roundtrip(tmp_path):
    rows = [{"id": 1, "address": {"city": "Nelson"}}, {"id": 2, "address": {"city": None}}]
    assert write_jsonl(rows, tmp_path / "r.jsonl") == 2
    assert read_jsonl(tmp_path / "r.jsonl") == rows
    assert write_csv(rows, tmp_path / "r.csv") == 2
    assert read_csv(tmp_path / "r.csv") == [
        {"id": "1", "address": {"city": "Nelson"}},
        {"id": "2", "address": {"city": None}},
    ]
