import inspect
import random

import pytest

from stubborn import RetryError, RetryPolicy, RetryRecorder, retry_call, retrying


class Flaky:
    def __init__(self, failures, exc=ConnectionError, value="ok"):
        self.failures = failures
        self.exc = exc
        self.value = value
        self.calls = []

    def __call__(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        if len(self.calls) <= self.failures:
            raise self.exc(f"failure {len(self.calls)}")
        return self.value


def always_failing(attempts, **options):
    """Sleeps of a call that never succeeds."""
    sleeps = []
    with pytest.raises(RetryError):
        retry_call(Flaky(10**6), attempts=attempts, sleep=sleeps.append, **options)
    return sleeps


@pytest.fixture(autouse=True)
def _seeded():
    random.seed(1234)


# --- FAIL_TO_PASS: the new jitter option ----------------------------------------------------


def test_retry_call_fractional_jitter_stays_in_range_and_varies():
    sleeps = always_failing(25, delay=1.0, backoff=1.0, jitter=0.25)
    assert len(sleeps) == 24
    assert all(0.75 <= s <= 1.25 for s in sleeps), sleeps
    assert len(set(sleeps)) > 1


def test_fractional_jitter_scales_with_backoff():
    sleeps = always_failing(5, delay=1.0, backoff=2.0, jitter=0.5)
    for nominal, actual in zip([1.0, 2.0, 4.0, 8.0], sleeps, strict=True):
        assert nominal * 0.5 <= actual <= nominal * 1.5


def test_callable_jitter_receives_computed_delay():
    seen = []

    def halve(d):
        seen.append(d)
        return d / 2

    sleeps = always_failing(4, delay=0.5, backoff=2.0, jitter=halve)
    assert seen == [0.5, 1.0, 2.0]
    assert sleeps == [0.25, 0.5, 1.0]


def test_decorator_accepts_jitter():
    sleeps = []

    @retrying(attempts=3, delay=1.0, jitter=lambda d: d + 0.5, sleep=sleeps.append)
    def fetch():
        """Fetch."""
        fetch.flaky()
        return 42

    fetch.flaky = Flaky(2)
    assert fetch() == 42
    assert sleeps == [1.5, 2.5]
    assert fetch.__name__ == "fetch"


def test_decorator_fractional_jitter():
    sleeps = []

    @retrying(attempts=12, delay=2.0, backoff=1.0, jitter=0.1, sleep=sleeps.append)
    def fetch():
        raise TimeoutError

    with pytest.raises(RetryError):
        fetch()
    assert len(sleeps) == 11
    assert all(1.8 <= s <= 2.2 for s in sleeps)
    assert len(set(sleeps)) > 1


def test_policy_accepts_jitter():
    policy = RetryPolicy(attempts=4, delay=1.0, backoff=3.0, jitter=lambda d: d * 0.1)
    sleeps = []
    assert policy.run(Flaky(3), sleep=sleeps.append) == "ok"
    assert sleeps == pytest.approx([0.1, 0.3, 0.9])


def test_on_retry_reports_the_jittered_wait():
    recorder = RetryRecorder()
    sleeps = always_failing(8, delay=0.5, backoff=1.5, jitter=0.3, on_retry=recorder)
    assert recorder.delays == sleeps
    assert [attempt for attempt, _, _ in recorder.calls] == list(range(1, 8))


def test_max_delay_still_caps_jittered_waits():
    sleeps = always_failing(10, delay=1.0, backoff=2.0, max_delay=3.0, jitter=0.5)
    assert all(0.5 <= s <= 3.0 for s in sleeps), sleeps
    grown = always_failing(5, delay=1.0, backoff=2.0, max_delay=2.0, jitter=lambda d: d * 10)
    assert grown == [2.0, 2.0, 2.0, 2.0]


def test_zero_or_none_jitter_is_exact():
    assert always_failing(4, delay=0.5, jitter=0) == [0.5, 1.0, 2.0]
    assert always_failing(4, delay=0.5, jitter=None) == [0.5, 1.0, 2.0]


# --- PASS_TO_PASS: existing callers keep working ---------------------------------------------


def test_retry_call_signature_prefix_unchanged():
    names = list(inspect.signature(retry_call).parameters)
    assert names[:10] == [
        "func", "args", "kwargs", "attempts", "delay", "backoff",
        "exceptions", "max_delay", "on_retry", "sleep",
    ]


def test_retrying_signature_prefix_unchanged():
    names = list(inspect.signature(retrying).parameters)
    assert names[:7] == [
        "attempts", "delay", "backoff", "exceptions", "max_delay", "on_retry", "sleep",
    ]


def test_retry_call_fully_positional():
    func = Flaky(3)
    recorder = RetryRecorder()
    sleeps = []
    result = retry_call(
        func, (1, 2), {"k": 3}, 5, 0.5, 3.0, (ConnectionError,), 10.0, recorder, sleeps.append
    )
    assert result == "ok"
    assert func.calls == [((1, 2), {"k": 3})] * 4
    assert sleeps == [0.5, 1.5, 4.5]
    assert recorder.delays == sleeps


def test_retry_call_short_positional_form_from_readme():
    func = Flaky(4)
    sleeps = []
    assert retry_call(func, ("u",), None, 5, 0.5, sleep=sleeps.append) == "ok"
    assert sleeps == [0.5, 1.0, 2.0, 4.0]


def test_retrying_fully_positional():
    sleeps = []
    recorder = RetryRecorder()

    @retrying(5, 0.5, 3.0, (ValueError,), 2.0, recorder, sleeps.append)
    def parse():
        parse.flaky()
        return "parsed"

    parse.flaky = Flaky(4, exc=ValueError)
    assert parse() == "parsed"
    assert sleeps == [0.5, 1.5, 2.0, 2.0]
    assert parse.retry_policy.exceptions == (ValueError,)


def test_keyword_names_unchanged():
    sleeps = []
    result = retry_call(
        func=Flaky(1), args=(), kwargs={}, attempts=2, delay=0.3, backoff=2.0,
        exceptions=ConnectionError, max_delay=None, on_retry=None, sleep=sleeps.append,
    )
    assert result == "ok"
    assert sleeps == [0.3]

    @retrying(attempts=2, delay=0.3, backoff=2.0, exceptions=ConnectionError, max_delay=1.0,
              on_retry=None, sleep=sleeps.append)
    def job():
        job.flaky()
        return "done"

    job.flaky = Flaky(1)
    assert job() == "done"


def test_policy_positional_fields_unchanged():
    policy = RetryPolicy(4, 0.5, 3.0, (KeyError,), 2.0)
    assert (policy.attempts, policy.delay, policy.backoff) == (4, 0.5, 3.0)
    assert policy.exceptions == (KeyError,)
    assert policy.max_delay == 2.0
    assert policy.delays() == [0.5, 1.5, 2.0]
    assert policy.should_retry(KeyError()) and not policy.should_retry(ValueError())
    assert RetryPolicy(4, 0.5, 3.0, (KeyError,), 2.0) == policy


def test_returns_the_functions_own_value():
    marker = object()
    assert retry_call(lambda: marker, sleep=lambda s: None) is marker
    assert retry_call(lambda: None, sleep=lambda s: None) is None

    @retrying(sleep=lambda s: None)
    def make():
        return marker

    assert make() is marker


def test_policy_run_returns_value():
    marker = object()
    assert RetryPolicy(attempts=2).run(lambda: marker, sleep=lambda s: None) is marker


def test_retry_error_and_non_retryable():
    func = Flaky(10)
    with pytest.raises(RetryError) as info:
        retry_call(func, attempts=3, sleep=lambda s: None)
    assert info.value.attempts == 3
    assert isinstance(info.value.last_exception, ConnectionError)
    assert info.value.__cause__ is info.value.last_exception
    with pytest.raises(KeyError):
        retry_call(Flaky(1, exc=KeyError), exceptions=ConnectionError, sleep=lambda s: None)


def test_default_waits_are_exact():
    assert always_failing(5, delay=0.2) == [0.2, 0.4, 0.8, 1.6]
    assert always_failing(5, delay=1.0, backoff=2.0, max_delay=3.0) == [1.0, 2.0, 3.0, 3.0]
    assert RetryPolicy(attempts=4, delay=0.5).delays() == [0.5, 1.0, 2.0]


def test_decorator_metadata():
    @retrying()
    def documented(a, b=2):
        """Docs."""
        return a + b

    assert documented.__name__ == "documented"
    assert documented.__doc__ == "Docs."
    assert documented.__wrapped__(1) == 3
    assert documented(1, b=5) == 6
    assert isinstance(documented.retry_policy, RetryPolicy)
