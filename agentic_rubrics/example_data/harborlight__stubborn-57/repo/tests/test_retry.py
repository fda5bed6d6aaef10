import pytest

from stubborn import RetryError, RetryRecorder, retry_call, retrying


class Flaky:
    """Fails ``failures`` times with ``exc``, then returns ``value``."""

    def __init__(self, failures, exc=ConnectionError, value="ok"):
        self.failures = failures
        self.exc = exc
        self.value = value
        self.calls = 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.calls <= self.failures:
            raise self.exc(f"failure {self.calls}")
        return self.value


def test_retry_call_returns_result_after_failures():
    sleeps = []
    func = Flaky(2)
    assert retry_call(func, attempts=3, delay=0.5, sleep=sleeps.append) == "ok"
    assert func.calls == 3
    assert sleeps == [0.5, 1.0]


def test_retry_call_passes_arguments():
    seen = []
    retry_call(lambda *a, **k: seen.append((a, k)), (1, 2), {"x": 3}, sleep=lambda s: None)
    assert seen == [((1, 2), {"x": 3})]


def test_gives_up_with_retry_error():
    func = Flaky(10)
    with pytest.raises(RetryError) as info:
        retry_call(func, attempts=4, sleep=lambda s: None)
    assert info.value.attempts == 4
    assert isinstance(info.value.__cause__, ConnectionError)
    assert func.calls == 4


def test_non_retryable_exception_propagates():
    func = Flaky(1, exc=KeyError)
    with pytest.raises(KeyError):
        retry_call(func, exceptions=ConnectionError, sleep=lambda s: None)
    assert func.calls == 1


def test_decorator_keeps_metadata_and_retries():
    recorder = RetryRecorder()

    @retrying(4, 0.25, 2.0, ConnectionError, on_retry=recorder, sleep=lambda s: None)
    def download(url):
        """Download a file."""
        download.flaky()
        return url.upper()

    download.flaky = Flaky(2)
    assert download("a") == "A"
    assert download.__name__ == "download"
    assert download.__doc__ == "Download a file."
    assert recorder.delays == [0.25, 0.5]


def test_max_delay_caps_waits():
    sleeps = []
    with pytest.raises(RetryError):
        retry_call(Flaky(10), attempts=6, delay=1.0, backoff=3.0, max_delay=5.0, sleep=sleeps.append)
    assert sleeps == [1.0, 3.0, 5.0, 5.0, 5.0]
