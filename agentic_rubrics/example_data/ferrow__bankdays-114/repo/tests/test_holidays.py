from datetime import date

from bankdays import UK_ENGLAND, US_FEDERAL, easter_sunday


def test_easter():
    assert easter_sunday(2024) == date(2024, 3, 31)
    assert easter_sunday(2025) == date(2025, 4, 20)


def test_us_observance_moves_saturday_to_friday():
    assert date(2021, 12, 31) in US_FEDERAL.dates_in(2021)  # New Year's Day 2022 was a Saturday
    assert date(2022, 1, 1) not in US_FEDERAL.dates_in(2022)


def test_uk_substitute_days():
    names = UK_ENGLAND.named_dates_in(2022)
    assert names[date(2022, 1, 3)] == "New Year's Day (substitute day)"
    assert names[date(2022, 12, 26)] == "Boxing Day"
    assert names[date(2022, 12, 27)] == "Christmas Day (substitute day)"
