from decimal import Decimal

import pytest

from tickerkit import QuoteClient, StaticSource, UnknownSymbol, format_price


@pytest.fixture
def source():
    return StaticSource(
        quotes={"AAPL": {"price": "189.50"}, "SAP": {"price": "120.00", "currency": "EUR"}},
        rates={("EUR", "USD"): "1.10"},
        history={"AAPL": ["180", "182", "185", "187", "189.5", "190"]},
    )


def test_quote_is_cached(source):
    client = QuoteClient(source)
    assert client.quote("AAPL").price == Decimal("189.50")
    assert client.quote("AAPL").price == Decimal("189.50")
    assert source.calls["quote"] == 1


def test_price_in_client_currency(source):
    client = QuoteClient(source)
    assert client.price("SAP") == Decimal("132.00")
    assert client.price("AAPL", "EUR") == Decimal("172.27")


def test_unknown_symbol(source):
    with pytest.raises(UnknownSymbol):
        QuoteClient(source).quote("MSFT")


def test_history_default_days(source):
    closes = QuoteClient(source).history("AAPL")
    assert closes == [Decimal(c) for c in ("182", "185", "187", "189.5", "190")]


def test_format_price():
    assert format_price(Decimal("1234.5"), "USD") == "$1,234.50"
    assert format_price(Decimal("7"), "CHF") == "7.00 CHF"
