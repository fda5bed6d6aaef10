import pytest

from layerconf import ConfigError, parse_ini


def test_sections_comments_and_quotes():
    text = """
    # comment
    name = "billing"
    [db.replica]
    ; another comment
    host = 'r1'
    """
    assert parse_ini(text) == {"name": "billing", "db.replica.host": "r1"}


@pytest.mark.parametrize("line", ["just words", "[]", "[db", "= value"])
def test_malformed_lines(line):
    with pytest.raises(ConfigError):
        parse_ini(line)
