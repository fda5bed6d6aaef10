from datetime import date

import pytest

from bankdays import TARGET, UK_ENGLAND, US_FEDERAL, BusinessCalendar


@pytest.fixture
def us():
    return BusinessCalendar(US_FEDERAL)


@pytest.fixture
def uk():
    return BusinessCalendar(UK_ENGLAND)


def test_is_business_day(us):
    assert us.is_business_day(date(2024, 7, 3))
    assert not us.is_business_day(date(2024, 7, 4))  # Independence Day
    assert not us.is_business_day(date(2024, 7, 6))  # Saturday


def test_add_business_days_over_a_weekend(us):
    assert us.add_business_days(date(2024, 6, 7), 1) == date(2024, 6, 10)
    assert us.add_business_days(date(2024, 6, 10), -1) == date(2024, 6, 7)


def test_add_business_days_skips_holidays(uk):
    assert uk.add_business_days(date(2025, 4, 17), 1) == date(2025, 4, 22)
    assert uk.add_business_days(date(2024, 12, 23), 2) == date(2024, 12, 27)


def test_add_zero_returns_start(us):
    assert us.add_business_days(date(2024, 12, 25), 0) == date(2024, 12, 25)


def test_business_days_between(uk):
    assert uk.business_days_between(date(2025, 5, 1), date(2025, 6, 1)) == 20
    assert uk.business_days_between(date(2025, 6, 1), date(2025, 5, 1)) == -20


def test_roll_conventions(uk):
    assert uk.roll(date(2025, 5, 31)) == date(2025, 6, 2)
    assert uk.roll(date(2025, 5, 31), "modified_following") == date(2025, 5, 30)
    assert uk.roll(date(2025, 6, 1), "preceding") == date(2025, 5, 30)


def test_target_has_no_substitute_days():
    cal = BusinessCalendar(TARGET)
    assert cal.holidays_in(2022) == {date(2022, 4, 15), date(2022, 4, 18), date(2022, 12, 26)}
