"""tickerkit: quote lookups with short-lived in-memory caching."""

from tickerkit.cache import CacheInfo, TTLCache
from tickerkit.client import Quote, QuoteClient
from tickerkit.errors import TickerError, UnknownRate, UnknownSymbol
from tickerkit.formatting import format_change, format_price, sparkline
from tickerkit.memoize import cached
from tickerkit.sources import StaticSource, load_csv

__version__ = "0.4.1"

__all__ = [
    "CacheInfo",
    "Quote",
    "QuoteClient",
    "StaticSource",
    "TTLCache",
    "TickerError",
    "UnknownRate",
    "UnknownSymbol",
    "cached",
    "format_change",
    "format_price",
    "load_csv",
    "sparkline",
]
