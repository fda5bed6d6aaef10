"""durata: parse and format human-friendly and ISO 8601 durations."""

from .errors import DurationParseError
from .formatter import format_duration
from .iso import IsoDuration, format_iso, parse_iso, shift
from .parser import parse

__version__ = "1.3.0"

__all__ = [
    "DurationParseError",
    "IsoDuration",
    "format_duration",
    "format_iso",
    "parse",
    "parse_iso",
    "shift",
]
