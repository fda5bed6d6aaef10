import pytest

import envfile
from envfile import EnvDocument, ParseError


def one(line, **kw):
    kw.setdefault("environ", {})
    return envfile.loads(line + "\n", **kw)["P"]


# ----------------------------------------------------------------- '#' inside quoted values


@pytest.mark.parametrize(
    "line, expected",
    [
        ("P='hunter2 #42'", "hunter2 #42"),
        ('P="hunter2 #42"', "hunter2 #42"),
        ("P='hunter2 #42'   # from the vault", "hunter2 #42"),
        ('P="hunter2 #42" # from the vault', "hunter2 #42"),
        ("export P='#leading'", "#leading"),
        ('P=" # "', " # "),
        ('P="a=b # c=d"', "a=b # c=d"),
        ("P='x #1' #'quoted' comment", "x #1"),
    ],
)
def test_hash_inside_quotes_is_part_of_the_value(line, expected):
    assert one(line) == expected


def test_issue_file_loads(tmp_path):
    path = tmp_path / ".env"
    path.write_text("DEBUG=false\nSMTP_HOST=mail.example.org   # relay\n")
    doc = EnvDocument.from_file(path)
    doc.set("SMTP_PASSWORD", "hunter2 #42")
    doc.save(path)
    assert envfile.load(path, environ={}) == {
        "DEBUG": "false",
        "SMTP_HOST": "mail.example.org",
        "SMTP_PASSWORD": "hunter2 #42",
    }


def test_escaped_quotes_do_not_end_a_double_quoted_value():
    assert one('P="say \\"hi\\" # not a comment"') == 'say "hi" # not a comment'
    assert one('P="a \\" # b" # c') == 'a " # b'
    assert one('P="\\"#\\"" #x') == '"#"'


def test_escaped_backslash_before_closing_quote():
    assert one('P="C:\\\\tmp\\\\" # windows') == "C:\\tmp\\"
    assert one('P="C:\\\\tmp\\\\"') == "C:\\tmp\\"


def test_single_quotes_have_no_escapes():
    assert one("P='C:\\tmp\\' # windows") == "C:\\tmp\\"
    assert one("P='a \\' # b") == "a \\"


def test_quoted_values_with_hash_are_interpolated_as_usual():
    text = "USER=dana\nA=\"${USER} #1\" # c\nB='${USER} #2' # c\n"
    assert envfile.loads(text, environ={}) == {"USER": "dana", "A": "dana #1", "B": "${USER} #2"}


def test_bindings_record_quote_style():
    bindings = envfile.parse("A='x #1' # c\nB=\"y #2\"\nC=z #3\n")
    assert [(b.key, b.value, b.quote) for b in bindings] == [
        ("A", "x #1", "'"),
        ("B", "y #2", '"'),
        ("C", "z", ""),
    ]
    assert envfile.parse_assignment("D='#'  # c").value == "#"


def test_dumps_round_trip_with_hash_and_quotes():
    values = {
        "A": "hunter2 #42",
        "B": "a # b 'c'",
        "C": 'x" #y',
        "D": "#",
        "E": "tab\t# here",
        "F": "back\\slash # \"q\"",
    }
    assert envfile.loads(envfile.dumps(values), interpolate=False) == values


def test_document_get_and_set_with_hash():
    doc = EnvDocument("# secrets\nA='p #1'  # first\nexport B=\"q #2\"\n")
    assert doc.get("A") == "p #1"
    assert doc.get("B") == "q #2"
    doc.set("C", "r #3")
    assert doc.get("C") == "r #3"
    doc.set("B", "s # 4")
    assert doc.get("B") == "s # 4"
    assert str(doc).splitlines()[0] == "# secrets"
    assert str(doc).splitlines()[2].startswith("export B=")


# ----------------------------------------------------------------- behaviour that must not change


@pytest.mark.parametrize(
    "line, expected",
    [
        ("P=value # note", "value"),
        ("P=value\t#note", "value"),
        ("P=http://example.org/#top", "http://example.org/#top"),
        ("P=#only a comment", ""),
        ("P=", ""),
        ("P=''", ""),
        ('P=""  # empty', ""),
        ("P=it's", "it's"),
        ("P='x' # the 'primary' one", "x"),
        ('P="x" # the "primary" one', "x"),
        ('P="tab\\there\\n"', "tab\there\n"),
        ('P="unknown \\q escape"', "unknown \\q escape"),
        ("P='C:\\dir\\'", "C:\\dir\\"),
        ("  P = '  padded  '  ", "  padded  "),
    ],
)
def test_unchanged_value_syntax(line, expected):
    assert one(line) == expected


@pytest.mark.parametrize(
    "text",
    [
        "P='open\n",
        'P="open\n',
        'P="open # c\n',
        "P='open # c\n",
        'P="x" trailing\n',
        "P='x' trailing\n",
        "P=\"\n",
    ],
)
def test_bad_quoting_is_still_an_error(text):
    with pytest.raises(ParseError) as info:
        envfile.loads("A=1\n" + text)
    assert info.value.lineno == 2


def test_load_error_names_the_file(tmp_path):
    path = tmp_path / "bad.env"
    path.write_text("A=1\nB='x\n")
    with pytest.raises(ParseError) as info:
        envfile.load(path)
    assert info.value.source == str(path)
    assert info.value.lineno == 2


def test_interpolation_unchanged():
    text = "HOST=db\nURL=${HOST}:${PORT:-5432}/$NAME # c\nLIT='$HOST'\nCOST=\"$$5\"\n"
    assert envfile.loads(text, environ={"NAME": "app"}) == {
        "HOST": "db",
        "URL": "db:5432/app",
        "LIT": "$HOST",
        "COST": "$5",
    }


def test_document_unrelated_lines_untouched():
    doc = EnvDocument("A=1 # keep me\n\n# section\nB='2'\n")
    doc.set("B", "3")
    assert str(doc) == "A=1 # keep me\n\n# section\nB=3\n"
    assert doc.remove("A") is True
    assert doc.keys() == ["B"]
