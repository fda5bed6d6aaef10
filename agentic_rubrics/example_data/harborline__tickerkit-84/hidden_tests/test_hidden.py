from decimal import Decimal

import pytest

from tickerkit import QuoteClient, StaticSource, TTLCache, cached


class FakeClock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def source():
    return StaticSource(
        quotes={"AAPL": {"price": "190.00"}, "SAP": {"price": "120.00", "currency": "EUR"}},
        rates={("EUR", "USD"): "1.08", ("EUR", "GBP"): "0.86", ("USD", "JPY"): "150"},
        history={"AAPL": [str(100 + i) for i in range(40)]},
    )


@pytest.fixture(autouse=True)
def _fresh_client_caches():
    QuoteClient.quote.cache_clear()
    QuoteClient.rate.cache_clear()
    QuoteClient.history.cache_clear()
    yield


# ----------------------------------------------------------------- the reported behaviour


def test_rate_depends_on_target_currency(source):
    client = QuoteClient(source)
    assert client.rate("EUR", to="USD") == Decimal("1.08")
    assert client.rate("EUR", to="GBP") == Decimal("0.86")
    assert client.rate("EUR", to="USD") == Decimal("1.08")
    assert source.calls["rate"] == 2


def test_convert_into_several_currencies(source):
    client = QuoteClient(source)
    assert client.convert(100, "EUR", to="USD") == Decimal("108.00")
    assert client.convert(100, "EUR", to="GBP") == Decimal("86.00")
    assert client.convert(100, "EUR", to="EUR") == Decimal("100.00")


def test_price_in_different_currencies(source):
    client = QuoteClient(source)
    assert client.price("AAPL") == Decimal("190.00")
    assert client.price("AAPL", "JPY") == Decimal("28500.00")
    assert client.price("SAP", "GBP") == Decimal("103.20")
    assert client.price("SAP") == Decimal("129.60")


def test_history_days_are_respected(source):
    client = QuoteClient(source)
    assert len(client.history("AAPL", days=5)) == 5
    assert len(client.history("AAPL", days=30)) == 30
    assert client.history("AAPL", days=2) == [Decimal("138"), Decimal("139")]


def test_keyword_only_arguments_get_their_own_entries():
    calls = []

    @cached(ttl=60)
    def scaled(x, *, factor=1, offset=0):
        calls.append((x, factor, offset))
        return x * factor + offset

    assert scaled(2, factor=3) == 6
    assert scaled(2, factor=5) == 10
    assert scaled(2, offset=3) == 5
    assert scaled(2, factor=3) == 6
    assert len(calls) == 3


def test_var_keyword_arguments_get_their_own_entries():
    calls = []

    @cached(ttl=300)
    def find_listings(exchange, **filters):
        calls.append(filters)
        return (exchange, sorted(filters.items()))

    assert find_listings("XETRA", sector="tech") == ("XETRA", [("sector", "tech")])
    assert find_listings("XETRA", sector="energy") == ("XETRA", [("sector", "energy")])
    assert find_listings("XETRA") == ("XETRA", [])
    assert find_listings("XETRA", sector="tech") == ("XETRA", [("sector", "tech")])
    assert len(calls) == 3


def test_keyword_names_are_part_of_the_key():
    @cached(ttl=300)
    def describe(kind, **fields):
        return sorted(fields)

    assert describe("bond", issuer="X") == ["issuer"]
    assert describe("bond", rating="X") == ["rating"]
    assert describe("bond", issuer="X", rating="Y") == ["issuer", "rating"]
    assert describe("bond", issuer="Y", rating="X") == ["issuer", "rating"]


def test_keyword_order_does_not_change_the_result():
    @cached(ttl=300)
    def pair(**kw):
        return (kw["a"], kw["b"])

    assert pair(a=1, b=2) == (1, 2)
    assert pair(b=2, a=1) == (1, 2)
    assert pair(b=1, a=2) == (2, 1)


def test_invalidate_targets_one_keyword_call():
    calls = []

    @cached(ttl=60)
    def rate(base, *, to="USD"):
        calls.append(to)
        return f"{base}->{to}"

    rate("EUR", to="GBP")
    rate("EUR", to="JPY")
    assert rate.invalidate("EUR", to="GBP") is True
    assert rate.invalidate("EUR", to="GBP") is False
    assert rate("EUR", to="JPY") == "EUR->JPY"
    assert calls == ["GBP", "JPY"]
    assert rate("EUR", to="GBP") == "EUR->GBP"
    assert calls == ["GBP", "JPY", "GBP"]


def test_unhashable_keyword_value_is_passed_through():
    calls = []

    @cached(ttl=60)
    def tagged(name, *, tags=()):
        calls.append(name)
        return [name, *tags]

    assert tagged("a", tags=["x"]) == ["a", "x"]
    assert tagged("a", tags=["y"]) == ["a", "y"]
    assert len(calls) == 2
    assert tagged("a", tags=("x",)) == ["a", "x"]
    assert tagged("a", tags=("x",)) == ["a", "x"]
    assert len(calls) == 3


# ----------------------------------------------------------------- behaviour that must not change


def test_repeated_keyword_call_is_served_from_cache():
    calls = []

    @cached(ttl=60)
    def lookup(symbol, *, region="eu", **filters):
        calls.append(symbol)
        return symbol

    lookup("SAP", region="us", sector="tech")
    lookup("SAP", region="us", sector="tech")
    lookup(symbol="SAP", region="us", sector="tech")
    assert len(calls) == 1


def test_defaults_and_spellings_share_an_entry():
    calls = []

    @cached(ttl=60)
    def convert(amount, base="EUR", *, to="USD"):
        calls.append(amount)
        return (amount, base, to)

    assert convert(5) == (5, "EUR", "USD")
    assert convert(amount=5) == (5, "EUR", "USD")
    assert convert(5, "EUR") == (5, "EUR", "USD")
    assert convert(5, base="EUR", to="USD") == (5, "EUR", "USD")
    assert len(calls) == 1
    assert convert.cache_info().hits == 3


def test_positional_arguments_still_distinguish_calls():
    @cached(ttl=60)
    def add(a, b):
        return a + b

    assert add(1, 2) == 3
    assert add(2, 1) == 3
    assert add(1, 3) == 4
    assert add.cache_info().misses == 3


def test_unhashable_positional_argument_is_passed_through():
    calls = []

    @cached(ttl=60)
    def total(values):
        calls.append(1)
        return sum(values)

    assert total([1, 2]) == 3
    assert total([1, 2]) == 3
    assert len(calls) == 2


def test_entries_expire_with_the_clock():
    clock = FakeClock()
    calls = []

    @cached(ttl=10, clock=clock)
    def fetch(symbol, *, field="close"):
        calls.append(symbol)
        return len(calls)

    assert fetch("X", field="open") == 1
    clock.now += 5
    assert fetch("X", field="open") == 1
    clock.now += 6
    assert fetch("X", field="open") == 2


def test_maxsize_evicts_least_recently_used():
    @cached(ttl=60, maxsize=2)
    def ident(x):
        return x

    ident(1)
    ident(2)
    ident(1)
    ident(3)
    assert len(ident.cache) == 2
    assert ident.invalidate(2) is False
    assert ident.invalidate(1) is True


def test_bad_call_still_raises_type_error():
    @cached(ttl=60)
    def needs_one(x):
        return x

    with pytest.raises(TypeError):
        needs_one()
    with pytest.raises(TypeError):
        needs_one(1, 2)


def test_wrapper_keeps_metadata():
    @cached(ttl=60)
    def documented(x):
        """Say something."""
        return x

    assert documented.__name__ == "documented"
    assert documented.__doc__ == "Say something."


def test_clients_do_not_share_results():
    one = QuoteClient(StaticSource(quotes={"AAPL": {"price": "1.00"}}))
    two = QuoteClient(StaticSource(quotes={"AAPL": {"price": "2.00"}}))
    assert one.quote("AAPL").price == Decimal("1.00")
    assert two.quote("AAPL").price == Decimal("2.00")


def test_quote_cached_and_refresh_forgets(source):
    client = QuoteClient(source)
    client.quote("AAPL")
    client.quote("AAPL")
    assert source.calls["quote"] == 1
    client.refresh()
    client.quote("AAPL")
    assert source.calls["quote"] == 2


def test_ttl_cache_basics():
    clock = FakeClock()
    cache = TTLCache(5, maxsize=3, clock=clock)
    cache.set(("a", 1), "x")
    assert cache.get(("a", 1)) == "x"
    clock.now += 5
    assert cache.get(("a", 1), "gone") == "gone"
    assert len(cache) == 0
