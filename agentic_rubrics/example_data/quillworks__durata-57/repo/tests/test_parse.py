from datetime import timedelta

import pytest

from durata import DurationParseError, parse


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("2 days 3 hours", timedelta(days=2, hours=3)),
        ("1.5h", timedelta(minutes=90)),
        ("1 hour, 30 minutes and 5s", timedelta(hours=1, minutes=30, seconds=5)),
        ("2 weeks", timedelta(weeks=2)),
        ("250ms", timedelta(milliseconds=250)),
        ("-5m", timedelta(minutes=-5)),
        ("90", timedelta(seconds=90)),
        ("1:30:00", timedelta(hours=1, minutes=30)),
        ("4:05", timedelta(minutes=4, seconds=5)),
    ],
)
def test_human_forms(text, expected):
    assert parse(text) == expected


def test_default_unit():
    assert parse("15", default_unit="min") == timedelta(minutes=15)


@pytest.mark.parametrize("text", ["", "abc", "1h1h", "5 parsecs", "1:75:00"])
def test_rejects_garbage(text):
    with pytest.raises(DurationParseError):
        parse(text)
