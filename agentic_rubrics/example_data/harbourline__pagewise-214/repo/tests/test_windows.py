import pytest

from pagewise import chunked, count_windows, rolling, sliding_window, window_bounds


def test_count_windows():
    assert count_windows(10, 3) == 8
    assert count_windows(2, 3) == 0
    assert count_windows(7, 3, 3, partial=True) == 3


def test_partial_windows():
    assert list(window_bounds(7, 3, 3, partial=True)) == [(0, 3), (3, 6), (6, 7)]


def test_sliding_window_with_step():
    windows = list(sliding_window(list(range(10)), 3, step=2))
    assert windows == [[0, 1, 2], [2, 3, 4], [4, 5, 6], [6, 7, 8]]


def test_window_larger_than_input():
    assert list(sliding_window([1, 2], 3)) == []


def test_rolling_custom_function():
    assert rolling(range(10), 3, max, step=2) == [2, 4, 6, 8]


def test_chunked():
    assert list(chunked(range(7), 3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(chunked([], 3)) == []


def test_invalid_arguments():
    with pytest.raises(ValueError):
        count_windows(5, 0)
    with pytest.raises(ValueError):
        list(sliding_window([1, 2, 3], 2, step=0))
