from datetime import timedelta

from durata import format_duration
from durata.cli import main


def test_compact_and_long():
    delta = timedelta(hours=1, minutes=30)
    assert format_duration(delta) == "1h 30m"
    assert format_duration(delta, style="long") == "1 hour, 30 minutes"


def test_weeks_and_max_units():
    assert format_duration(timedelta(days=15), style="long", use_weeks=True) == "2 weeks, 1 day"
    assert format_duration(timedelta(days=15)) == "15d"
    assert format_duration(timedelta(hours=26, minutes=3), max_units=1) == "1d"


def test_zero_and_negative():
    assert format_duration(timedelta(0)) == "0s"
    assert format_duration(timedelta(seconds=-90)) == "-1m 30s"


def test_cli(capsys):
    assert main(["90", "minutes", "--to", "iso"]) == 0
    assert main(["PT36H", "--to", "long"]) == 0
    assert capsys.readouterr().out.splitlines() == ["PT1H30M", "1 day, 12 hours"]
