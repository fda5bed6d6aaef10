"""Exceptions raised by tickerkit."""


class TickerError(Exception):
    """Base class for every error tickerkit raises on purpose."""


class UnknownSymbol(TickerError, LookupError):
    """The source has no data for this symbol."""

    def __init__(self, symbol: str) -> None:
        super().__init__(f"unknown symbol: {symbol!r}")
        self.symbol = symbol


class UnknownRate(TickerError, LookupError):
    """The source cannot convert between these two currencies."""

    def __init__(self, base: str, quote: str) -> None:
        super().__init__(f"no exchange rate from {base} to {quote}")
        self.base = base
        self.quote = quote
