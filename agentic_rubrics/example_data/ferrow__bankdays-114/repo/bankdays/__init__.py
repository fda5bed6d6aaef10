"""bankdays: business-day arithmetic with holiday calendars.

    >>> from datetime import date
    >>> from bankdays import BusinessCalendar, UK_ENGLAND
    >>> cal = BusinessCalendar(UK_ENGLAND)
    >>> cal.add_business_days(date(2025, 4, 17), 1)
    datetime.date(2025, 4, 22)
"""

from bankdays.calendar import CONVENTIONS, BusinessCalendar
from bankdays.holidays import (
    CALENDARS,
    TARGET,
    UK_ENGLAND,
    US_FEDERAL,
    EasterOffset,
    Fixed,
    HolidayCalendar,
    NthWeekday,
    easter_sunday,
)
from bankdays.isoweek import iso_week, week_label, week_start, weeks_in_year
from bankdays.months import add_months, days_in_month, end_of_month, is_month_end, months_between

__version__ = "1.3.0"

__all__ = [
    "CALENDARS",
    "CONVENTIONS",
    "TARGET",
    "UK_ENGLAND",
    "US_FEDERAL",
    "BusinessCalendar",
    "EasterOffset",
    "Fixed",
    "HolidayCalendar",
    "NthWeekday",
    "add_months",
    "days_in_month",
    "easter_sunday",
    "end_of_month",
    "is_month_end",
    "iso_week",
    "months_between",
    "week_label",
    "week_start",
    "weeks_in_year",
]
