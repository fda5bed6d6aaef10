"""Human-readable prices and changes."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import ROUND_HALF_EVEN, Decimal

from tickerkit.constants import CURRENCY_SYMBOLS, PRICE_PLACES


def format_price(amount: Decimal, currency: str, places: int = PRICE_PLACES) -> str:
    """``$1,234.50`` for known currencies, ``1,234.50 CHF`` for the others."""
    rounded = Decimal(amount).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN)
    text = f"{rounded:,.{places}f}"
    symbol = CURRENCY_SYMBOLS.get(currency.upper())
    if symbol is None:
        return f"{text} {currency.upper()}"
    if text.startswith("-"):
        return f"-{symbol}{text[1:]}"
    return f"{symbol}{text}"


def format_change(old: Decimal, new: Decimal) -> str:
    """The change from ``old`` to ``new``, absolute and relative: ``+1.25 (+2.50%)``."""
    diff = Decimal(new) - Decimal(old)
    pct = (diff / Decimal(old) * 100) if old else Decimal(0)
    return f"{diff:+.2f} ({pct:+.2f}%)"


def sparkline(closes: Sequence[Decimal]) -> str:
    """A one-line chart of ``closes`` made of block characters."""
    bars = "\u2581\u2582\u2583\u2584\u2585\u2586\u2587\u2588"
    if not closes:
        return ""
    low, high = min(closes), max(closes)
    span = high - low
    if not span:
        return bars[0] * len(closes)
    return "".join(bars[int((c - low) / span * (len(bars) - 1))] for c in closes)
