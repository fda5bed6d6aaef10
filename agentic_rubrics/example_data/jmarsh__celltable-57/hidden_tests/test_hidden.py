"""Hidden tests for jmarsh/celltable#57: combining marks must take no terminal column."""

import unicodedata

import pytest

from celltable import Table, render_table
from celltable.styles import STYLES, get_style
from celltable.table import format_cell
from celltable.width import char_width, display_width, pad, truncate
from celltable.wrap import wrap_text

_INVISIBLE = {"\u200b", "\u200c", "\u200d", "\u2060", "\ufeff"}


def screen_width(text):
    """Independent reference: what a terminal shows for the strings used here."""
    total = 0
    for ch in text:
        if ch in _INVISIBLE or unicodedata.combining(ch):
            continue
        total += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return total


def assert_rectangular(rendered):
    widths = {screen_width(line) for line in rendered.splitlines()}
    assert len(widths) == 1, rendered


# ---------------------------------------------------------------- FAIL_TO_PASS


def test_combining_mark_has_no_width():
    assert char_width("\u0301") == 0
    assert char_width("\u0308") == 0
    assert display_width("Cafe\u0301") == 4
    assert display_width("Cafe\u0301 menu.pdf") == display_width("Caf\u00e9 menu.pdf") == 13


def test_stacked_marks():
    # Vietnamese "ệ" fully decomposed: e + dot below + circumflex
    assert display_width("e\u0323\u0302") == 1
    assert display_width("Vie\u0323\u0302t Nam") == 8


@pytest.mark.parametrize(
    "text, expected",
    [
        ("x\u0304", 1),  # x-bar: no precomposed form
        ("v\u20d7", 1),  # vector arrow, outside the Combining Diacritical Marks block
        ("q\u0323\u0307", 1),
        ("\u05e9\u05b8\u05c1\u05dc\u05d5\u05b9\u05dd", 4),  # Hebrew with points
        ("\u0e01\u0e48", 1),  # Thai tone mark
        ("\u0915\u093c", 1),  # Devanagari nukta
    ],
)
def test_marks_without_precomposed_forms(text, expected):
    assert display_width(text) == expected


def test_wide_base_with_mark():
    assert display_width("\u6771\u0301") == 2


def test_issue_table_lines_up():
    t = Table(["File", "Size"], align="lr")
    t.add_row(["Cafe\u0301 menu.pdf", "12 KB"])
    t.add_row(["notes.txt", "3 KB"])
    out = t.render()
    assert_rectangular(out)
    assert "\u2502 Cafe\u0301 menu.pdf \u2502 12 KB \u2502" in out


def test_table_with_marks_that_do_not_compose():
    t = Table(["Symbol", "Meaning"], style="ascii")
    t.add_row(["x\u0304", "sample mean"])
    t.add_row(["v\u20d7", "velocity"])
    t.add_row(["sigma", "std dev"])
    out = t.render()
    assert_rectangular(out)
    assert "| x\u0304      | sample mean |" in out


def test_truncate_keeps_text_that_fits():
    assert truncate("Rene\u0301e", 5) == "Rene\u0301e"


def test_truncate_never_drops_trailing_mark():
    assert truncate("abcde\u0301fgh", 6) == "abcde\u0301\u2026"
    assert truncate("e\u0301e\u0301e\u0301e\u0301", 3) == "e\u0301e\u0301\u2026"


def test_truncate_decomposed_text():
    assert truncate("Cre\u0300me bru\u0302le\u0301e", 8) == "Cre\u0300me b\u2026"


def test_table_max_width_with_decomposed_text():
    t = Table(["Dish", "Price"], max_width=8)
    t.add_row(["Cre\u0300me bru\u0302le\u0301e", 7.5])
    t.add_row(["Tarte", 5])
    out = t.render()
    assert_rectangular(out)
    assert "Cre\u0300me b\u2026" in out


def test_pad_decomposed():
    assert pad("Cafe\u0301", 6, "r") == "  Cafe\u0301"
    assert pad("Cafe\u0301", 6, "c") == " Cafe\u0301 "


def test_wrap_decomposed():
    text = "Cre\u0300me bru\u0302le\u0301e maison"
    assert wrap_text(text, 12) == ["Cre\u0300me bru\u0302le\u0301e", "maison"]
    assert wrap_text("e\u0301e\u0301e\u0301e\u0301e\u0301", 2) == [
        "e\u0301e\u0301",
        "e\u0301e\u0301",
        "e\u0301",
    ]


def test_wrapped_table_lines_up():
    t = Table(["Note"], max_width=10, overflow="wrap", style="rounded")
    t.add_row(["Re\u0301sume\u0301 of the se\u0301ance"])
    assert_rectangular(t.render())


# ---------------------------------------------------------------- PASS_TO_PASS


def test_ascii_and_precomposed_widths():
    assert display_width("") == 0
    assert display_width("hello") == 5
    assert display_width("Caf\u00e9") == 4
    assert char_width("\u00e9") == 1


def test_spacing_accents_are_not_combining():
    # standalone accent characters are visible glyphs of their own
    assert char_width("\u00b4") == 1  # ACUTE ACCENT
    assert char_width("\u02c6") == 1  # MODIFIER LETTER CIRCUMFLEX ACCENT
    assert char_width("^") == 1
    assert display_width("a\u00b4b") == 3


def test_wide_and_zero_width_characters():
    assert display_width("\u6771\u4eac") == 4
    assert display_width("\uff46\uff55\uff4c\uff4c") == 8
    assert display_width("a\u200db") == 2
    assert display_width("\ufeffx") == 1
    assert char_width("\u6771") == 2


def test_char_width_rejects_strings():
    with pytest.raises(ValueError):
        char_width("ab")
    with pytest.raises(ValueError):
        char_width("")


def test_truncate_ascii_and_cjk():
    assert truncate("hello world", 8) == "hello w\u2026"
    assert truncate("short", 10) == "short"
    assert truncate("\u6771\u4eac\u90fd\u5e81", 5) == "\u6771\u4eac\u2026"
    assert truncate("abcdef", 3, placeholder="...") == "..."
    assert truncate("abcdef", 2, placeholder="...") == ".."
    with pytest.raises(ValueError):
        truncate("abc", -1)


def test_pad():
    assert pad("ab", 5) == "ab   "
    assert pad("ab", 5, "r") == "   ab"
    assert pad("ab", 5, "c") == " ab  "
    assert pad("toolong", 3) == "toolong"
    with pytest.raises(ValueError):
        pad("ab", 5, "x")


def test_wrap_ascii():
    assert wrap_text("the quick brown fox", 10) == ["the quick", "brown fox"]
    assert wrap_text("abcdefghij", 4) == ["abcd", "efgh", "ij"]
    assert wrap_text("one\ntwo three", 5) == ["one", "two", "three"]
    assert wrap_text("", 5) == [""]


def test_box_table_exact():
    t = Table(["Name", "Qty"], align="lr")
    t.add_row(["apples", 3]).add_row(["kiwi", 12])
    assert t.render() == (
        "\u250c\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u252c\u2500\u2500\u2500\u2500\u2500\u2510\n"
        "\u2502 Name   \u2502 Qty \u2502\n"
        "\u251c\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u253c\u2500\u2500\u2500\u2500\u2500\u2524\n"
        "\u2502 apples \u2502   3 \u2502\n"
        "\u2502 kiwi   \u2502  12 \u2502\n"
        "\u2514\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2534\u2500\u2500\u2500\u2500\u2500\u2518"
    )


def test_markdown_and_plain():
    out = render_table([["a", 1.5]], ["key", "value"], style="markdown")
    assert out == "| key | value |\n|-----|-------|\n| a   | 1.5   |"
    plain = render_table([["x", "yy"], ["zzz", None]], style="plain")
    assert plain.splitlines() == [" x     yy", " zzz"]


def test_cjk_table():
    t = Table(["City", "Pop"], style="ascii", align="lr")
    t.add_row(["\u6771\u4eac", 13960000]).add_row(["Oslo", 709000])
    out = t.render()
    assert_rectangular(out)
    assert "| \u6771\u4eac | 13960000 |" in out


def test_table_validation_and_formatting():
    with pytest.raises(ValueError):
        Table(["a", "b"]).add_row([1])
    with pytest.raises(ValueError):
        Table(["a"], overflow="ellipsis")
    with pytest.raises(ValueError):
        Table(["a"], style="fancy")
    assert format_cell(None) == ""
    assert format_cell(True) == "yes"
    assert format_cell(0.25) == "0.25"
    assert get_style("box") is STYLES["box"]
