from datetime import date

from bankdays import add_months, iso_week, months_between, week_start, weeks_in_year


def test_add_months_clamps():
    assert add_months(date(2024, 1, 31), 1) == date(2024, 2, 29)
    assert add_months(date(2023, 1, 31), 1) == date(2023, 2, 28)
    assert add_months(date(2024, 2, 29), 1, keep_month_end=True) == date(2024, 3, 31)


def test_add_months_over_year_end():
    assert add_months(date(2024, 11, 30), 2) == date(2025, 1, 30)
    assert add_months(date(2025, 1, 15), -1) == date(2024, 12, 15)


def test_months_between():
    assert months_between(date(2024, 1, 31), date(2024, 2, 29)) == 1
    assert months_between(date(2024, 1, 15), date(2024, 3, 14)) == 1


def test_iso_weeks():
    assert iso_week(date(2021, 1, 3)) == (2020, 53)
    assert week_start(2021, 1) == date(2021, 1, 4)
    assert weeks_in_year(2020) == 53
