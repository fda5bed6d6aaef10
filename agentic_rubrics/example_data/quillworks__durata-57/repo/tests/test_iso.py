from datetime import date, datetime, timedelta

import pytest

from durata import DurationParseError, IsoDuration, format_iso, parse, parse_iso, shift


def test_parse_iso_components():
    iso = parse_iso("P1Y2M3DT4H5M6.5S")
    assert (iso.years, iso.months, iso.days) == (1, 2, 3)
    assert (iso.hours, iso.minutes, iso.seconds) == (4, 5, 6.5)
    assert iso.isoformat() == "P1Y2M3DT4H5M6.5S"


def test_iso_through_parse():
    assert parse("PT1H30M") == timedelta(minutes=90)
    assert parse("p1dt12h") == timedelta(hours=36)
    assert parse("-PT1,5S") == timedelta(seconds=-1.5)


def test_nominal_calendar_units():
    assert parse_iso("P1Y").to_timedelta() == timedelta(days=365)
    assert parse_iso("P1M").to_timedelta() == timedelta(days=30)


@pytest.mark.parametrize("text", ["P", "PT", "P1H", "PT1D", "P1D1Y", "P1X"])
def test_invalid_iso(text):
    with pytest.raises(DurationParseError):
        parse_iso(text)


def test_format_iso():
    assert format_iso(timedelta(days=1, hours=2, minutes=3, seconds=4.5)) == "P1DT2H3M4.5S"
    assert format_iso(timedelta(0)) == "PT0S"
    assert format_iso(-timedelta(hours=1)) == "-PT1H"


def test_shift_months_clamps_day():
    assert shift(date(2024, 1, 31), "P1M") == date(2024, 2, 29)
    assert shift(datetime(2023, 3, 31, 9), "-P1MT1H") == datetime(2023, 2, 28, 8)
    assert shift(date(2024, 5, 10), IsoDuration(days=3)) == date(2024, 5, 13)
