"""Where prices come from.

A source is any object with three methods: ``fetch_quote(symbol) -> dict`` (keys ``price`` and
``currency``), ``fetch_rate(base, quote) -> Decimal`` and ``fetch_history(symbol, days) -> list``
of closing prices, oldest first. :class:`StaticSource` keeps everything in memory.
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol

from tickerkit.errors import UnknownRate, UnknownSymbol


class Source(Protocol):
    def fetch_quote(self, symbol: str) -> dict[str, Any]: ...

    def fetch_rate(self, base: str, quote: str) -> Decimal: ...

    def fetch_history(self, symbol: str, days: int) -> list[Decimal]: ...


class StaticSource:
    """An in-memory source for tests and offline use.

    Args:
        quotes: ``{symbol: {"price": ..., "currency": ...}}``; currency defaults to USD.
        rates: ``{(base, quote): rate}``; the inverse direction is derived.
        history: ``{symbol: [close, ...]}``, oldest first.

    ``calls`` counts how often each ``fetch_*`` method ran, keyed ``"quote"``, ``"rate"``,
    ``"history"``.
    """

    def __init__(
        self,
        quotes: Mapping[str, Mapping[str, Any]] | None = None,
        rates: Mapping[tuple[str, str], Any] | None = None,
        history: Mapping[str, Sequence[Any]] | None = None,
    ) -> None:
        self.quotes = {sym.upper(): dict(row) for sym, row in (quotes or {}).items()}
        self.rates = {
            (base.upper(), quote.upper()): Decimal(str(rate))
            for (base, quote), rate in (rates or {}).items()
        }
        self.history = {
            sym.upper(): [Decimal(str(close)) for close in closes]
            for sym, closes in (history or {}).items()
        }
        self.calls: Counter[str] = Counter()

    def fetch_quote(self, symbol: str) -> dict[str, Any]:
        self.calls["quote"] += 1
        try:
            row = self.quotes[symbol]
        except KeyError:
            raise UnknownSymbol(symbol) from None
        return {"price": Decimal(str(row["price"])), "currency": row.get("currency", "USD")}

    def fetch_rate(self, base: str, quote: str) -> Decimal:
        self.calls["rate"] += 1
        if base == quote:
            return Decimal(1)
        if (base, quote) in self.rates:
            return self.rates[base, quote]
        if (quote, base) in self.rates:
            return 1 / self.rates[quote, base]
        raise UnknownRate(base, quote)

    def fetch_history(self, symbol: str, days: int) -> list[Decimal]:
        self.calls["history"] += 1
        try:
            closes = self.history[symbol]
        except KeyError:
            raise UnknownSymbol(symbol) from None
        return list(closes[-days:]) if days > 0 else []


def load_csv(path: str | Path) -> StaticSource:
    """A :class:`StaticSource` with the quotes of a CSV file (columns symbol, price, currency)."""
    quotes: dict[str, dict[str, Any]] = {}
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            quotes[row["symbol"].strip()] = {
                "price": row["price"].strip(),
                "currency": (row.get("currency") or "USD").strip().upper(),
            }
    return StaticSource(quotes=quotes)
