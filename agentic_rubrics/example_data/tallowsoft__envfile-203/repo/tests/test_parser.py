import pytest

import envfile
from envfile import ParseError


def test_basic_assignments():
    text = "# settings\nexport PORT=8080\nHOST = example.org \n\nEMPTY=\n"
    assert envfile.loads(text) == {"PORT": "8080", "HOST": "example.org", "EMPTY": ""}


def test_inline_comment_on_unquoted_value():
    assert envfile.loads("A=value # note\nB=value #note\n") == {"A": "value", "B": "value"}


def test_hash_inside_unquoted_value_is_kept():
    assert envfile.loads("URL=http://example.org/#top\n") == {"URL": "http://example.org/#top"}


def test_quoted_values():
    text = "A='single $HOME'\nB=\"dq \\\"x\\\" \\n\"\nC='a' # c\n"
    assert envfile.loads(text, environ={"HOME": "/root"}) == {
        "A": "single $HOME",
        "B": 'dq "x" \n',
        "C": "a",
    }


def test_interpolation_order_and_defaults():
    text = "HOST=db\nURL=${HOST}:${PORT:-5432}/$NAME\n"
    assert envfile.loads(text, environ={"NAME": "app"})["URL"] == "db:5432/app"


def test_parse_reports_line_numbers():
    bindings = envfile.parse("A=1\n\n# c\nB='2'\n")
    assert [(b.key, b.value, b.quote, b.lineno) for b in bindings] == [
        ("A", "1", "", 1),
        ("B", "2", "'", 4),
    ]


def test_errors():
    with pytest.raises(ParseError) as info:
        envfile.loads("A=1\nB='open\n")
    assert info.value.lineno == 2
    with pytest.raises(ParseError):
        envfile.loads("no equals sign\n")
    with pytest.raises(ParseError):
        envfile.loads("1BAD=x\n")
