"""Defaults shared by the tickerkit modules."""

DEFAULT_CURRENCY = "USD"

QUOTE_TTL = 15.0
"""Seconds a quote stays cached: prices move, so keep this short."""

RATE_TTL = 300.0
"""Seconds an exchange rate stays cached."""

HISTORY_TTL = 3600.0
"""Seconds a daily history stays cached."""

DEFAULT_MAXSIZE = 256
"""Entries kept per cache before the least recently used one is evicted."""

PRICE_PLACES = 2

CURRENCY_SYMBOLS = {
    "USD": "$",
    "EUR": "\u20ac",
    "GBP": "\u00a3",
    "JPY": "\u00a5",
}
