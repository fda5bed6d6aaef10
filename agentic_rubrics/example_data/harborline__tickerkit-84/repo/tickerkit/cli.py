"""``tickerkit`` command line: print quotes from a CSV file.

    tickerkit prices.csv AAPL MSFT --currency EUR --rates rates.csv
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Sequence
from decimal import Decimal

from tickerkit.client import QuoteClient
from tickerkit.errors import TickerError
from tickerkit.formatting import format_price
from tickerkit.sources import load_csv


def read_rates(path: str) -> dict[tuple[str, str], Decimal]:
    """Exchange rates from a CSV file with columns base, quote, rate."""
    with open(path, newline="", encoding="utf-8") as fh:
        return {
            (row["base"].strip().upper(), row["quote"].strip().upper()): Decimal(row["rate"])
            for row in csv.DictReader(fh)
        }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tickerkit", description="Print quotes from a CSV file.")
    parser.add_argument("prices", help="CSV file with columns symbol, price, currency")
    parser.add_argument("symbols", nargs="+")
    parser.add_argument("--currency", default=None, help="convert prices to this currency")
    parser.add_argument("--rates", help="CSV file with columns base, quote, rate")
    args = parser.parse_args(argv)

    source = load_csv(args.prices)
    if args.rates:
        source.rates.update(read_rates(args.rates))
    client = QuoteClient(source)
    status = 0
    for symbol in args.symbols:
        try:
            quote = client.quote(symbol)
            currency = args.currency or quote.currency
            amount = client.convert(quote.price, quote.currency, to=currency)
        except (TickerError, ValueError) as exc:
            print(f"{symbol}: {exc}", file=sys.stderr)
            status = 1
            continue
        print(f"{quote.symbol:<8} {format_price(amount, currency)}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
