from pagewise import ELLIPSIS, Paginator, elided_page_range


def test_short_ranges_are_not_elided():
    assert elided_page_range(3, 6) == [1, 2, 3, 4, 5, 6]


def test_middle_page():
    assert elided_page_range(10, 20) == [1, ELLIPSIS, 8, 9, 10, 11, 12, ELLIPSIS, 20]


def test_paginator_helper():
    paginator = Paginator(range(100), per_page=5)
    assert paginator.elided_page_range(1) == [1, 2, 3, ELLIPSIS, 20]
