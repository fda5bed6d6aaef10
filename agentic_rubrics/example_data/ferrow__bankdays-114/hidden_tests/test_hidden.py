"""Hidden tests for ferrow/bankdays#114: business-day arithmetic across year ends."""

from datetime import date, timedelta

import pytest

from bankdays import (
    TARGET,
    UK_ENGLAND,
    US_FEDERAL,
    BusinessCalendar,
    Fixed,
    HolidayCalendar,
    add_months,
    easter_sunday,
    iso_week,
    months_between,
    week_start,
    weeks_in_year,
)
from bankdays.cli import main as cli_main

ONE = timedelta(days=1)


def reference_holidays(holiday_calendar, first_year, last_year, extra=()):
    days = set(extra)
    for year in range(first_year, last_year + 1):
        days |= set(holiday_calendar.dates_in(year))
    return days


def reference_add(start, n, holidays, weekend=(5, 6)):
    step = ONE if n >= 0 else -ONE
    current, left = start, abs(n)
    while left:
        current += step
        if current.weekday() not in weekend and current not in holidays:
            left -= 1
    return current


def reference_between(start, end, holidays, weekend=(5, 6)):
    sign = 1
    if end < start:
        start, end, sign = end, start, -1
    count, current = 0, start
    while current < end:
        if current.weekday() not in weekend and current not in holidays:
            count += 1
        current += ONE
    return sign * count


@pytest.fixture
def us():
    return BusinessCalendar(US_FEDERAL)


@pytest.fixture
def uk():
    return BusinessCalendar(UK_ENGLAND)


# ---------------------------------------------------------------- FAIL_TO_PASS


def test_issue_example_add(us):
    assert us.add_business_days(date(2024, 12, 30), 2) == date(2025, 1, 2)


def test_holiday_in_the_middle_of_the_span_is_skipped(us):
    assert us.add_business_days(date(2024, 12, 30), 3) == date(2025, 1, 3)
    assert us.add_business_days(date(2024, 12, 27), 10) == date(2025, 1, 13)


def test_issue_example_between(us):
    assert us.business_days_between(date(2024, 12, 23), date(2025, 1, 6)) == 8
    assert us.business_days_between(date(2025, 1, 6), date(2024, 12, 23)) == -8


def test_backwards_into_previous_year(uk):
    # Boxing Day and Christmas 2024 must be skipped when counting back from January
    assert uk.add_business_days(date(2025, 1, 2), -4) == date(2024, 12, 24)
    assert uk.add_business_days(date(2025, 1, 6), -6) == date(2024, 12, 24)


def test_new_year_observed_on_previous_december_31(us):
    # 2022-01-01 was a Saturday: observed on Friday 2021-12-31
    assert us.add_business_days(date(2022, 1, 3), -1) == date(2021, 12, 30)
    assert us.add_business_days(date(2021, 12, 30), 1) == date(2022, 1, 3)
    assert us.business_days_between(date(2021, 12, 27), date(2022, 1, 4)) == 5


def test_extra_holiday_in_next_year():
    cal = BusinessCalendar(US_FEDERAL, extra_holidays=[date(2025, 1, 9)])
    assert cal.add_business_days(date(2024, 12, 30), 7) == date(2025, 1, 10)
    assert cal.business_days_between(date(2024, 12, 30), date(2025, 1, 13)) == 8


def test_custom_weekend_across_year_end():
    gulf = HolidayCalendar("Office", [Fixed("New Year's Day", 1, 1), Fixed("Year end", 12, 31)])
    cal = BusinessCalendar(gulf, weekend=(4, 5))  # Friday and Saturday
    # 2025-12-30 Tue; 31 Dec holiday; 1 Jan holiday; 2 Jan Fri and 3 Jan Sat weekend
    assert cal.add_business_days(date(2025, 12, 30), 1) == date(2026, 1, 4)
    assert cal.add_business_days(date(2026, 1, 4), -1) == date(2025, 12, 30)


@pytest.mark.parametrize("start", [date(2023, 12, 28), date(2024, 6, 14), date(2025, 1, 2)])
def test_long_spans_match_reference(start):
    cal = BusinessCalendar(UK_ENGLAND)
    holidays = reference_holidays(UK_ENGLAND, 2020, 2028)
    for n in range(-700, 701, 53):
        assert cal.add_business_days(start, n) == reference_add(start, n, holidays), n


def test_multi_year_between_matches_reference(us):
    holidays = reference_holidays(US_FEDERAL, 2019, 2029)
    pairs = [
        (date(2023, 6, 1), date(2026, 3, 1)),
        (date(2021, 12, 31), date(2022, 1, 3)),
        (date(2020, 2, 29), date(2024, 2, 29)),
        (date(2027, 1, 1), date(2024, 12, 24)),
    ]
    for start, end in pairs:
        assert us.business_days_between(start, end) == reference_between(start, end, holidays)


def test_add_and_between_agree_over_year_end(uk):
    start = date(2024, 12, 20)
    for n in range(1, 40):
        end = uk.add_business_days(start, n)
        assert uk.is_business_day(end)
        assert uk.business_days_between(start, end) == n


def test_cli_add_over_year_end(capsys):
    assert cli_main(["add", "2024-12-30", "2"]) == 0
    assert capsys.readouterr().out.strip() == "2025-01-02"


# ---------------------------------------------------------------- PASS_TO_PASS


def test_within_a_single_year(us, uk):
    assert us.add_business_days(date(2024, 6, 7), 1) == date(2024, 6, 10)
    assert us.add_business_days(date(2024, 6, 10), -1) == date(2024, 6, 7)
    assert us.add_business_days(date(2024, 11, 27), 1) == date(2024, 11, 29)
    assert uk.add_business_days(date(2025, 4, 17), 1) == date(2025, 4, 22)
    assert uk.add_business_days(date(2025, 4, 22), -1) == date(2025, 4, 17)
    assert us.business_days_between(date(2024, 11, 25), date(2024, 12, 2)) == 4
    assert uk.business_days_between(date(2025, 5, 1), date(2025, 6, 1)) == 20
    assert uk.business_days_between(date(2025, 5, 1), date(2025, 5, 1)) == 0


def test_zero_days_returns_start_even_on_a_holiday(us):
    assert us.add_business_days(date(2025, 1, 1), 0) == date(2025, 1, 1)
    assert us.add_business_days(date(2024, 12, 28), 0) == date(2024, 12, 28)


def test_start_on_non_business_day(us):
    assert us.add_business_days(date(2025, 1, 1), 1) == date(2025, 1, 2)
    assert us.add_business_days(date(2024, 12, 28), 1) == date(2024, 12, 30)
    assert us.add_business_days(date(2024, 12, 28), -1) == date(2024, 12, 27)


def test_holidays_in_years():
    assert US_FEDERAL.dates_in(2021) >= {date(2021, 12, 24), date(2021, 12, 31)}
    assert date(2022, 1, 1) not in US_FEDERAL.dates_in(2022)
    assert date(2021, 12, 31) not in US_FEDERAL.dates_in(2022)
    assert len(US_FEDERAL.dates_in(2022)) == 10
    assert len(US_FEDERAL.dates_in(2021)) == 12
    assert BusinessCalendar(US_FEDERAL).holidays_in(2025) == US_FEDERAL.dates_in(2025)
    assert sorted(UK_ENGLAND.dates_in(2021))[-2:] == [date(2021, 12, 27), date(2021, 12, 28)]
    assert TARGET.dates_in(2022) == {date(2022, 4, 15), date(2022, 4, 18), date(2022, 12, 26)}
    assert easter_sunday(2038) == date(2038, 4, 25)


def test_extra_holidays_and_is_business_day():
    cal = BusinessCalendar(US_FEDERAL, extra_holidays=[date(2025, 1, 9)])
    assert not cal.is_business_day(date(2025, 1, 9))
    assert date(2025, 1, 9) in cal.holidays_in(2025)
    assert date(2025, 1, 9) not in cal.holidays_in(2024)
    assert cal.is_holiday(date(2024, 12, 25))
    assert not cal.is_holiday(date(2024, 12, 28))


def test_roll_and_neighbours(uk):
    assert uk.roll(date(2025, 5, 31)) == date(2025, 6, 2)
    assert uk.roll(date(2025, 5, 31), "modified_following") == date(2025, 5, 30)
    assert uk.roll(date(2024, 12, 25), "preceding") == date(2024, 12, 24)
    assert uk.roll(date(2025, 1, 1), "modified_preceding") == date(2025, 1, 2)
    assert uk.next_business_day(date(2024, 12, 24)) == date(2024, 12, 27)
    assert uk.previous_business_day(date(2024, 12, 27)) == date(2024, 12, 24)
    with pytest.raises(ValueError):
        uk.roll(date(2025, 1, 1), "nearest")


def test_business_days_in_month(us):
    december = us.business_days_in_month(2024, 12)
    assert len(december) == 21
    assert date(2024, 12, 25) not in december
    assert december[-1] == date(2024, 12, 31)


def test_weekend_validation():
    with pytest.raises(ValueError):
        BusinessCalendar(weekend=range(7))
    assert BusinessCalendar().add_business_days(date(2024, 12, 31), 1) == date(2025, 1, 1)


def test_months_and_weeks():
    assert add_months(date(2024, 1, 31), 1) == date(2024, 2, 29)
    assert add_months(date(2024, 11, 30), 1) == date(2024, 12, 30)
    assert add_months(date(2025, 1, 31), -2) == date(2024, 11, 30)
    assert add_months(date(2024, 2, 29), 12) == date(2025, 2, 28)
    assert add_months(date(2024, 4, 30), 1, keep_month_end=True) == date(2024, 5, 31)
    assert months_between(date(2024, 12, 31), date(2025, 2, 28)) == 2
    assert months_between(date(2025, 3, 15), date(2024, 12, 15)) == -3
    assert iso_week(date(2024, 12, 30)) == (2025, 1)
    assert week_start(2025, 1) == date(2024, 12, 30)
    assert weeks_in_year(2026) == 53
    with pytest.raises(ValueError):
        week_start(2025, 53)


def test_cli_other_commands(capsys):
    assert cli_main(["--calendar", "uk", "between", "2025-05-01", "2025-06-01"]) == 0
    assert capsys.readouterr().out.strip() == "20"
    assert cli_main(["roll", "2024-07-04"]) == 0
    assert capsys.readouterr().out.strip() == "2024-07-05"
    assert cli_main(["add", "2024-06-07", "-5"]) == 0
    assert capsys.readouterr().out.strip() == "2024-05-31"
