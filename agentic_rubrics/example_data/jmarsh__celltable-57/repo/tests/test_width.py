import pytest

from celltable.width import char_width, display_width, pad, truncate


def test_ascii_width():
    assert display_width("hello") == 5
    assert display_width("") == 0


def test_wide_characters_take_two_columns():
    assert char_width("東") == 2
    assert display_width("東京") == 4
    assert display_width("ｆｕｌｌ") == 8


def test_zero_width_joiner():
    assert display_width("a\u200db") == 2


def test_char_width_rejects_strings():
    with pytest.raises(ValueError):
        char_width("ab")


def test_truncate():
    assert truncate("hello world", 8) == "hello w…"
    assert truncate("short", 10) == "short"
    assert truncate("東京都庁", 5) == "東京…"


def test_pad_alignments():
    assert pad("ab", 5) == "ab   "
    assert pad("ab", 5, "r") == "   ab"
    assert pad("ab", 5, "c") == " ab  "
    assert pad("東", 4, "r") == "  東"
