from celltable.wrap import wrap_text


def test_wraps_on_words():
    assert wrap_text("the quick brown fox", 10) == ["the quick", "brown fox"]


def test_breaks_long_words():
    assert wrap_text("abcdefghij", 4) == ["abcd", "efgh", "ij"]


def test_keeps_newlines():
    assert wrap_text("one\ntwo three", 5) == ["one", "two", "three"]
