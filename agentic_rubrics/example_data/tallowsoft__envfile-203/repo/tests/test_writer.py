import envfile
from envfile import EnvDocument


def test_dumps_quotes_only_when_needed():
    text = envfile.dumps({"A": "plain", "B": "two words", "C": "it's", "D": ""})
    assert text == "A=plain\nB='two words'\nC=\"it's\"\nD=''\n"


def test_round_trip_simple_values():
    values = {"A": "x y", "B": 'say "hi"', "C": "tab\there", "D": "$HOME"}
    assert envfile.loads(envfile.dumps(values), interpolate=False) == {
        **values,
        "C": "tab\there",
        "D": "$HOME",
    }


def test_document_keeps_layout():
    doc = EnvDocument("# top\nexport A=1\n\nB=2  # two\n")
    doc.set("A", "one more")
    doc.set("C", "3")
    assert str(doc) == "# top\nexport A='one more'\n\nB=2  # two\nC=3\n"
    assert doc.get("B") == "2"
    assert doc.keys() == ["A", "B", "C"]
    assert doc.remove("B") is True
    assert "B" not in doc
