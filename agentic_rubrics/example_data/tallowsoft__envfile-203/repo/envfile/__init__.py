"""envfile: read, write and edit ``.env`` files."""

from envfile.document import EnvDocument
from envfile.errors import EnvFileError, ParseError
from envfile.interpolate import expand
from envfile.parser import Binding, load, loads, parse, parse_assignment
from envfile.writer import dumps, format_assignment, quote_value

__version__ = "1.2.0"

__all__ = [
    "Binding",
    "EnvDocument",
    "EnvFileError",
    "ParseError",
    "dumps",
    "expand",
    "format_assignment",
    "load",
    "loads",
    "parse",
    "parse_assignment",
    "quote_value",
]
