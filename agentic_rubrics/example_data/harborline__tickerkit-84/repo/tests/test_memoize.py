from tickerkit import cached


def test_result_is_reused_within_ttl():
    calls = []

    @cached(ttl=60)
    def square(x):
        calls.append(x)
        return x * x

    assert square(3) == 9
    assert square(3) == 9
    assert calls == [3]


def test_positional_and_keyword_spellings_share_an_entry():
    calls = []

    @cached(ttl=60)
    def double(x, factor=2):
        calls.append(x)
        return x * factor

    assert double(4) == 8
    assert double(x=4) == 8
    assert double(4, factor=2) == 8
    assert len(calls) == 1


def test_unhashable_arguments_are_not_cached():
    calls = []

    @cached(ttl=60)
    def total(values):
        calls.append(1)
        return sum(values)

    assert total([1, 2]) == 3
    assert total([1, 2]) == 3
    assert len(calls) == 2


def test_cache_clear_and_invalidate():
    calls = []

    @cached(ttl=60)
    def ident(x):
        calls.append(x)
        return x

    ident(1)
    ident(2)
    assert ident.invalidate(1) is True
    assert ident.invalidate(1) is False
    ident(1)
    ident(2)
    assert calls == [1, 2, 1]
    ident.cache_clear()
    ident(2)
    assert calls == [1, 2, 1, 2]
