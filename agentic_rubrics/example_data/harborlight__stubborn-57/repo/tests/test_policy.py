import pytest

from stubborn import RetryPolicy, constant, exponential, linear
from stubborn.backoff import take
from stubborn.utils import format_seconds, normalise_exceptions


def test_policy_delays():
    assert RetryPolicy(attempts=4, delay=0.5).delays() == [0.5, 1.0, 2.0]
    assert RetryPolicy(attempts=1).delays() == []


def test_policy_validation():
    with pytest.raises(ValueError):
        RetryPolicy(attempts=0)
    with pytest.raises(ValueError):
        RetryPolicy(delay=-1)
    with pytest.raises(TypeError):
        RetryPolicy(exceptions=("not an exception",))


def test_policy_normalises_exceptions():
    assert RetryPolicy(exceptions=OSError).exceptions == (OSError,)
    assert RetryPolicy(exceptions=[OSError, ValueError]).should_retry(ValueError())


def test_schedules():
    assert take(constant(2), 3) == [2.0, 2.0, 2.0]
    assert take(linear(1, 2, max_delay=4), 4) == [1.0, 3.0, 4.0, 4.0]
    assert take(exponential(1, 3, max_delay=10), 4) == [1.0, 3.0, 9.0, 10.0]


def test_helpers():
    assert normalise_exceptions(KeyError) == (KeyError,)
    assert format_seconds(0.25) == "250ms"
    assert format_seconds(1.5) == "1.5s"
    assert format_seconds(90) == "1m30s"
