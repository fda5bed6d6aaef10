import pytest

from tickerkit import TTLCache


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_entries_expire_after_ttl():
    clock = FakeClock()
    cache = TTLCache(10, clock=clock)
    cache.set("a", 1)
    clock.now += 9.5
    assert cache.get("a") == 1
    clock.now += 1
    assert cache.get("a") is None
    assert "a" not in cache


def test_least_recently_used_entry_is_evicted():
    cache = TTLCache(60, maxsize=2)
    cache.set("a", 1)
    cache.set("b", 2)
    cache.get("a")
    cache.set("c", 3)
    assert "a" in cache and "c" in cache
    assert "b" not in cache


def test_info_counts_hits_and_misses():
    cache = TTLCache(60)
    cache.set("a", 1)
    cache.get("a")
    cache.get("missing")
    info = cache.info()
    assert (info.hits, info.misses, info.size) == (1, 1, 1)


def test_rejects_bad_settings():
    with pytest.raises(ValueError):
        TTLCache(0)
    with pytest.raises(ValueError):
        TTLCache(10, maxsize=0)
