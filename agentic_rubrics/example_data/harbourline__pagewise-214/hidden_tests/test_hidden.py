import statistics

import pytest

from pagewise import (
    ELLIPSIS,
    Paginator,
    chunked,
    count_windows,
    elided_page_range,
    rolling,
    sliding_window,
    window_bounds,
)
from pagewise.cli import main


def expected_bounds(length, size, step, partial):
    out = []
    start = 0
    while start < length:
        stop = start + size
        if stop > length:
            if not partial:
                break
            stop = length
        out.append((start, stop))
        start += step
    return out


# ---- FAIL_TO_PASS: the issue --------------------------------------------------------------

DAILY = [12, 15, 11, 18, 20, 14, 9, 13, 17, 16, 21, 19, 22, 25]


def test_rolling_includes_most_recent_window():
    averages = rolling(DAILY, 7)
    assert len(averages) == 8
    assert averages[-1] == pytest.approx(statistics.fmean(DAILY[-7:]))
    assert averages[0] == pytest.approx(statistics.fmean(DAILY[:7]))


def test_rolling_exactly_one_window():
    assert rolling([1, 2, 3, 4, 5, 6, 7], 7) == [4.0]


def test_rolling_with_step_reaching_the_end():
    assert rolling(range(10), 4, max, step=3) == [3, 6, 9]


def test_sliding_window_last_window():
    assert list(sliding_window([1, 2, 3, 4, 5], 3)) == [[1, 2, 3], [2, 3, 4], [3, 4, 5]]
    assert list(sliding_window("abcdef", 4, 2)) == ["abcd", "cdef"]
    assert list(sliding_window("abc", 3)) == ["abc"]
    assert list(sliding_window(iter([1, 2]), 1)) == [[1], [2]]


def test_window_bounds_full_windows():
    assert list(window_bounds(5, 3)) == [(0, 3), (1, 4), (2, 5)]
    assert list(window_bounds(3, 3)) == [(0, 3)]
    assert list(window_bounds(10, 4, 3)) == [(0, 4), (3, 7), (6, 10)]
    assert list(window_bounds(1, 1)) == [(0, 1)]


@pytest.mark.parametrize("partial", [False, True])
def test_window_bounds_agree_with_count_windows(partial):
    for length in range(0, 13):
        for size in range(1, 6):
            for step in range(1, 5):
                got = list(window_bounds(length, size, step, partial=partial))
                assert got == expected_bounds(length, size, step, partial), (length, size, step)
                assert len(got) == count_windows(length, size, step, partial=partial)


def test_cli_window_prints_last_window(tmp_path, capsys):
    data = tmp_path / "prices.txt"
    data.write_text("a\nb\nc\nd\n", encoding="utf-8")
    assert main(["window", str(data), "--size", "2", "--separator", ","]) == 0
    assert capsys.readouterr().out.splitlines() == ["1: a,b", "2: b,c", "3: c,d"]


# ---- PASS_TO_PASS: neighbouring behaviour -------------------------------------------------


def test_partial_windows_unchanged():
    assert list(window_bounds(7, 3, 3, partial=True)) == [(0, 3), (3, 6), (6, 7)]
    assert list(window_bounds(6, 3, 3, partial=True)) == [(0, 3), (3, 6)]
    assert list(sliding_window([1, 2, 3, 4, 5, 6], 3, 3, partial=True)) == [[1, 2, 3], [4, 5, 6]]
    assert list(sliding_window("abcde", 2, 2, partial=True)) == ["ab", "cd", "e"]


def test_windows_that_do_not_reach_the_end():
    assert list(sliding_window(list(range(10)), 3, step=2)) == [
        [0, 1, 2],
        [2, 3, 4],
        [4, 5, 6],
        [6, 7, 8],
    ]
    assert rolling(range(10), 3, max, step=2) == [2, 4, 6, 8]


def test_too_short_and_empty_inputs():
    assert list(sliding_window([1, 2], 3)) == []
    assert list(window_bounds(0, 1)) == []
    assert rolling([], 3) == []
    assert count_windows(2, 3) == 0


def test_invalid_window_arguments():
    with pytest.raises(ValueError):
        list(window_bounds(5, 0))
    with pytest.raises(ValueError):
        list(sliding_window([1, 2, 3], 2, step=0))
    with pytest.raises(ValueError):
        count_windows(5, 2, 0)


def test_chunked_unchanged():
    assert list(chunked(range(7), 3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(chunked(iter(range(4)), 2)) == [[0, 1], [2, 3]]


def test_paginator_unchanged():
    paginator = Paginator(range(1, 24), per_page=10, orphans=3)
    assert paginator.num_pages == 2
    assert list(paginator.page(2)) == list(range(11, 24))
    assert [len(p) for p in Paginator(range(25), per_page=10)] == [10, 10, 5]
    assert [len(p) for p in Paginator(range(30), per_page=10)] == [10, 10, 10]
    assert Paginator(range(21), per_page=10).page(3).end_index() == 21


def test_page_range_unchanged():
    assert elided_page_range(10, 20) == [1, ELLIPSIS, 8, 9, 10, 11, 12, ELLIPSIS, 20]
    assert elided_page_range(5, 20) == [1, 2, 3, 4, 5, 6, 7, ELLIPSIS, 20]


def test_cli_page_unchanged(tmp_path, capsys):
    data = tmp_path / "notes.txt"
    data.write_text("".join(f"line {i}\n" for i in range(1, 8)), encoding="utf-8")
    assert main(["page", str(data), "--per-page", "3", "--page", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "line 7"
    assert out[1] == "-- page 3 of 3, lines 7-7 of 7 --"
