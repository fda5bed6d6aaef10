from recordkit import drop, flatten, get_path, merge, pick, rename, set_path, unflatten


def test_get_and_set_path():
    record = {"address": {"city": "Nelson"}, "name": "x"}
    assert get_path(record, "address.city") == "Nelson"
    assert get_path(record, "address.zip", "-") == "-"
    updated = set_path(record, "address.zip", "7010")
    assert updated["address"] == {"city": "Nelson", "zip": "7010"}
    assert record == {"address": {"city": "Nelson"}, "name": "x"}


def test_pick_drop_rename():
    record = {"a": 1, "b": 2, "c": 3}
    assert pick(record, ["c", "a", "z"]) == {"c": 3, "a": 1}
    assert drop(record, ["b"]) == {"a": 1, "c": 3}
    assert list(rename(record, {"b": "beta"})) == ["a", "beta", "c"]


def test_merge_later_layers_win():
    merged = merge({"a": 1, "n": {"x": 1, "y": 2}}, {"n": {"y": 3}, "b": 2})
    assert merged == {"a": 1, "n": {"x": 1, "y": 3}, "b": 2}
    assert merge({"n": {"x": 1}}, {"n": None}) == {"n": None}
    assert merge() == {}


def test_flatten_roundtrip():
    record = {"a": {"b": {"c": 1}}, "d": [1, 2]}
    assert flatten(record) == {"a.b.c": 1, "d": [1, 2]}
    assert unflatten(flatten(record)) == record
