from recordkit import Field, Schema, apply_defaults, dedupe, group_by, normalise_keys, sort_records


def test_apply_defaults_fills_missing_fields():
    out = apply_defaults([{"id": 1}, {"id": 2, "country": "AU"}], {"country": "NZ"})
    assert out == [{"country": "NZ", "id": 1}, {"country": "AU", "id": 2}]
    [row] = apply_defaults([{"id": 3, "meta": {"owner": "ops"}}], {"meta": {"source": "crm"}})
    assert row == {"meta": {"source": "crm", "owner": "ops"}, "id": 3}


def test_normalise_keys():
    assert normalise_keys([{"First Name": "a", "lastName": "b", "e-mail": "c"}]) == [
        {"first_name": "a", "last_name": "b", "e_mail": "c"}
    ]


def test_sort_dedupe_group():
    rows = [{"n": "b"}, {"n": None}, {"n": "a"}, {"n": "b"}]
    assert [r["n"] for r in sort_records(rows, "n")] == ["a", "b", "b", None]
    assert [r["n"] for r in dedupe(rows, "n")] == ["b", None, "a"]
    assert list(group_by(rows, "n")) == ["b", None, "a"]


def test_schema_apply():
    schema = Schema([Field("id", int, required=True), Field("country", str, default="NZ")])
    assert schema.apply({"id": "7"}) == {"country": "NZ", "id": 7}
    assert schema.problems({"country": 3}) == ["id: required", "country: expected str, got 3"]
