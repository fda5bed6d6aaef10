"""The quote client: look prices up in a source and keep them for a short while."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal

from tickerkit.constants import DEFAULT_CURRENCY, HISTORY_TTL, PRICE_PLACES, QUOTE_TTL, RATE_TTL
from tickerkit.memoize import cached
from tickerkit.sources import Source


@dataclass(frozen=True)
class Quote:
    symbol: str
    price: Decimal
    currency: str


def normalise_symbol(symbol: str) -> str:
    """Upper-case ``symbol`` and check it looks like a ticker (letters, digits, ``.``, ``-``)."""
    cleaned = symbol.strip().upper()
    if not cleaned or not cleaned.replace(".", "").replace("-", "").isalnum():
        raise ValueError(f"not a ticker symbol: {symbol!r}")
    return cleaned


def normalise_currency(code: str) -> str:
    """Upper-case a three-letter currency code."""
    cleaned = code.strip().upper()
    if len(cleaned) != 3 or not cleaned.isalpha():
        raise ValueError(f"not a currency code: {code!r}")
    return cleaned


class QuoteClient:
    """Quotes, exchange rates and daily history from ``source``, cached per client.

    Quotes are cached for ``QUOTE_TTL`` seconds, rates for ``RATE_TTL`` and history for
    ``HISTORY_TTL`` (see :mod:`tickerkit.constants`). :meth:`refresh` forgets everything.
    """

    def __init__(self, source: Source, *, currency: str = DEFAULT_CURRENCY) -> None:
        self.source = source
        self.currency = normalise_currency(currency)

    @cached(ttl=QUOTE_TTL)
    def quote(self, symbol: str) -> Quote:
        """The latest quote for ``symbol``, in the currency the source reports it in."""
        symbol = normalise_symbol(symbol)
        row = self.source.fetch_quote(symbol)
        return Quote(symbol, Decimal(row["price"]), normalise_currency(row["currency"]))

    @cached(ttl=RATE_TTL)
    def rate(self, base: str, *, to: str = DEFAULT_CURRENCY) -> Decimal:
        """How many units of ``to`` one unit of ``base`` buys."""
        return self.source.fetch_rate(normalise_currency(base), normalise_currency(to))

    def convert(self, amount: Decimal | int | str, base: str, *, to: str = DEFAULT_CURRENCY) -> Decimal:
        """``amount`` of ``base`` expressed in ``to``, rounded to cents."""
        value = Decimal(str(amount)) * self.rate(base, to=to)
        return value.quantize(Decimal(1).scaleb(-PRICE_PLACES), rounding=ROUND_HALF_EVEN)

    def price(self, symbol: str, currency: str | None = None) -> Decimal:
        """The latest price of ``symbol`` in ``currency`` (the client's currency by default)."""
        quote = self.quote(symbol)
        return self.convert(quote.price, quote.currency, to=currency or self.currency)

    @cached(ttl=HISTORY_TTL)
    def history(self, symbol: str, *, days: int = 5) -> list[Decimal]:
        """The closing prices of the last ``days`` trading days, oldest first."""
        if days < 1:
            raise ValueError("days must be at least 1")
        return self.source.fetch_history(normalise_symbol(symbol), days)

    def refresh(self) -> None:
        """Forget every cached quote, rate and history."""
        for method in (QuoteClient.quote, QuoteClient.rate, QuoteClient.history):
            method.cache_clear()  # type: ignore[attr-defined]
