from datetime import date, datetime, timedelta

import pytest

from durata import (
    DurationParseError,
    IsoDuration,
    format_duration,
    format_iso,
    parse,
    parse_iso,
    shift,
)
from durata.cli import main

# ---- FAIL_TO_PASS: ISO 8601 week designator -----------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("P1W", timedelta(weeks=1)),
        ("P2W", timedelta(weeks=2)),
        ("p3w", timedelta(weeks=3)),
        ("P1.5W", timedelta(days=10, hours=12)),
        ("P0,5W", timedelta(days=3, hours=12)),
        ("-P1W", -timedelta(weeks=1)),
        ("+P2W", timedelta(weeks=2)),
    ],
)
def test_parse_weeks(text, expected):
    assert parse(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("P1W2D", timedelta(days=9)),
        ("P2WT12H", timedelta(days=14, hours=12)),
        ("P1Y2W", timedelta(days=365 + 14)),
        ("P1M1W1DT1S", timedelta(days=30 + 7 + 1, seconds=1)),
    ],
)
def test_weeks_combined_with_other_designators(text, expected):
    assert parse(text) == expected


def test_parse_iso_weeks_directly():
    assert parse_iso("P2W").to_timedelta() == timedelta(weeks=2)
    assert parse_iso("-P1W3D").to_timedelta() == -timedelta(days=10)
    assert parse_iso("P1W").is_exact


@pytest.mark.parametrize("text", ["P2W", "P1W2D", "-P1.5W", "P1WT1H", "P1Y1W"])
def test_weeks_survive_isoformat_round_trip(text):
    iso = parse_iso(text)
    again = parse_iso(iso.isoformat())
    assert again.to_timedelta() == iso.to_timedelta()
    assert parse_iso(str(iso)).to_timedelta() == iso.to_timedelta()


def test_shift_by_weeks():
    assert shift(date(2024, 3, 1), "P2W") == date(2024, 3, 15)
    assert shift(date(2024, 3, 15), "-P2W") == date(2024, 3, 1)
    assert shift(datetime(2024, 1, 31, 8), "P1M1W") == datetime(2024, 3, 7, 8)
    assert shift(datetime(2024, 12, 30, 12), parse_iso("P1WT12H")) == datetime(2025, 1, 7, 0)


def test_repeated_week_designator_is_a_parse_error():
    with pytest.raises(DurationParseError):
        parse("P1W1W")


def test_cli_weeks(capsys):
    assert main(["P1W", "--to", "seconds"]) == 0
    assert main(["P2W", "--to", "long", "--weeks"]) == 0
    assert capsys.readouterr().out.splitlines() == ["604800", "2 weeks"]


# ---- PASS_TO_PASS: the rest of the ISO grammar and the other forms ------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("PT1H30M", timedelta(minutes=90)),
        ("P2D", timedelta(days=2)),
        ("P1DT2H", timedelta(days=1, hours=2)),
        ("P1Y", timedelta(days=365)),
        ("P1M", timedelta(days=30)),
        ("PT1M", timedelta(minutes=1)),
        ("PT0.5S", timedelta(milliseconds=500)),
        ("-PT1,5S", timedelta(seconds=-1.5)),
    ],
)
def test_other_iso_forms_unchanged(text, expected):
    assert parse(text) == expected


@pytest.mark.parametrize("text", ["P", "PT", "P1H", "PT1D", "PT1W", "P1D1W", "P1D1Y", "P1X", "P1WT"])
def test_invalid_iso_still_rejected(text):
    with pytest.raises(DurationParseError):
        parse_iso(text)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1h30m", timedelta(minutes=90)),
        ("2 weeks", timedelta(weeks=2)),
        ("3w", timedelta(weeks=3)),
        ("1 hour, 30 minutes and 5s", timedelta(hours=1, minutes=30, seconds=5)),
        ("1:30:00", timedelta(minutes=90)),
        ("90", timedelta(seconds=90)),
        ("-5m", timedelta(minutes=-5)),
    ],
)
def test_human_forms_unchanged(text, expected):
    assert parse(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "1h1h", "5 parsecs", "pwned"])
def test_garbage_rejected(text):
    with pytest.raises(DurationParseError):
        parse(text)


def test_components_and_isoformat_unchanged():
    iso = parse_iso("P1Y2M3DT4H5M6.5S")
    assert (iso.years, iso.months, iso.days, iso.hours, iso.minutes, iso.seconds) == (
        1,
        2,
        3,
        4,
        5,
        6.5,
    )
    assert iso.isoformat() == "P1Y2M3DT4H5M6.5S"
    assert IsoDuration().isoformat() == "PT0S"
    assert IsoDuration(days=3, negative=True).isoformat() == "-P3D"
    assert not parse_iso("P1M").is_exact


def test_format_iso_uses_days_only():
    assert format_iso(timedelta(weeks=2)) == "P14D"
    assert format_iso(timedelta(days=1, hours=2, minutes=3, seconds=4.5)) == "P1DT2H3M4.5S"
    assert format_iso(-timedelta(hours=1)) == "-PT1H"


def test_format_duration_unchanged():
    assert format_duration(timedelta(days=14)) == "14d"
    assert format_duration(timedelta(days=15), use_weeks=True) == "2w 1d"
    assert format_duration(timedelta(minutes=90), style="long") == "1 hour, 30 minutes"


def test_shift_calendar_units_unchanged():
    assert shift(date(2024, 1, 31), "P1M") == date(2024, 2, 29)
    assert shift(date(2023, 1, 31), "P1Y1M") == date(2024, 2, 29)
    assert shift(datetime(2023, 3, 31, 9), "-P1MT1H") == datetime(2023, 2, 28, 8)
    with pytest.raises(ValueError):
        shift(date(2024, 1, 1), "P1.5M")
