"""horde.testing.retry, seed 002's RetriableCondition for users' own tests: as a decorator and as
a loop of ``with attempt:`` blocks; the last failure and the count when nothing passes; other
exceptions at once; the pause and the timeout kept; and a real eventually consistent store,
the built-in target's /eventual/, read until a write becomes visible, with the target's own
counts of the reads that missed."""

import json
import time
import urllib.error
import urllib.request
from datetime import timedelta

import pytest

from conftest import Target
from horde.errors import DslError
from horde.testing import RetryError, retry


def failing_until(passes_at):
    """A function of asserts that fails on its first ``passes_at - 1`` calls, then returns the
    number of calls; ``calls`` counts them."""
    calls = []

    def check():
        calls.append(1)
        assert len(calls) >= passes_at, f"call {len(calls)}: not yet"
        return len(calls)

    return check, calls


def test_the_decorator_returns_the_value_after_the_failures():
    check, calls = failing_until(4)
    assert retry(times=5, pause=0.001)(check)() == 4
    assert len(calls) == 4


def test_the_decorator_keeps_the_functions_name_and_arguments_and_each_call_has_every_attempt():
    tries = []

    @retry(times=2, pause=0)
    def second_try(value, *, scale=1):
        """Passes at the second try of each call."""
        tries.append(value)
        assert len(tries) % 2 == 0, "first try"
        return value * scale

    assert (second_try.__name__, second_try.__doc__) == ("second_try", "Passes at the second try of each call.")
    assert second_try(2, scale=3) == 6
    # Two attempts again: the count starts afresh at each call.
    assert second_try(5) == 5
    assert tries == [2, 2, 5, 5]


def test_when_nothing_passes_the_last_failure_and_the_attempts_are_said():
    check, calls = failing_until(100)
    started = time.monotonic()
    with pytest.raises(RetryError) as raised:
        retry(times=3, pause=0.05)(check)()
    elapsed = time.monotonic() - started
    error = raised.value
    assert isinstance(error, AssertionError)
    assert len(calls) == 3
    assert error.attempts == 3
    # pytest rewrote the assert: its message is followed by lines explaining it, and the count
    # comes on a line of its own.
    lines = str(error).splitlines()
    assert lines[0] == "call 3: not yet"
    assert lines[-1].startswith("(after 3 attempts over ") and lines[-1].endswith(" s)")
    assert isinstance(error.__cause__, AssertionError) and str(error.__cause__).startswith("call 3: not yet\n")
    assert error.last is error.__cause__
    # Two pauses between three attempts.
    assert 0.1 <= error.elapsed <= elapsed
    assert f"over {error.elapsed:.2f} s" in str(error)


def test_the_loop_retries_its_block_and_counts_attempts():
    replies = iter([503, 404, 200, 500])
    for attempt in retry(times=10, pause=0.001):
        with attempt:
            status = next(replies)
            assert status == 200
    assert attempt.number == 3
    assert status == 200
    assert next(replies) == 500  # no attempt after the one that passed


def test_the_loop_reports_the_last_failure_with_the_count():
    statuses = iter([503, 404])
    with pytest.raises(RetryError) as raised:
        for attempt in retry(times=2, pause=0):
            with attempt:
                status = next(statuses)
                assert status == 200
    assert str(raised.value).startswith("assert 404 == 200 (after 2 attempts over 0.0")
    assert attempt.number == 2


def test_other_exceptions_go_through_at_once():
    calls = []

    @retry(times=5, pause=0.001)
    def broken():
        calls.append(1)
        raise KeyError("no such key")

    with pytest.raises(KeyError):
        broken()
    assert len(calls) == 1

    attempts = []
    with pytest.raises(ZeroDivisionError):
        for attempt in retry(times=5, pause=0.001):
            with attempt:
                attempts.append(attempt.number)
                1 / 0
    assert attempts == [1]


def test_the_exceptions_retried_can_be_chosen_and_are_named_in_the_message():
    failures = iter([ConnectionRefusedError("refused"), ConnectionResetError("reset")])

    @retry(times=2, pause=0, exceptions=ConnectionError)
    def connect():
        raise next(failures)

    with pytest.raises(RetryError) as raised:
        connect()
    assert str(raised.value).startswith("ConnectionResetError: reset (after 2 attempts")
    assert isinstance(raised.value.__cause__, ConnectionResetError)
    # AssertionError is not retried unless named.
    check, calls = failing_until(2)
    with pytest.raises(AssertionError) as raised:
        retry(times=3, pause=0, exceptions=(ConnectionError,))(check)()
    assert not isinstance(raised.value, RetryError) and len(calls) == 1


def test_the_timeout_ends_the_attempts_before_the_times_do():
    check, calls = failing_until(10_000)
    started = time.monotonic()
    with pytest.raises(RetryError) as raised:
        retry(times=10_000, pause=0.05, timeout=0.3)(check)()
    elapsed = time.monotonic() - started
    # No attempt starts after 0.3 s, and none is waited for beyond it.
    assert elapsed < 0.3 + 0.2, elapsed
    assert raised.value.elapsed <= 0.3 + 0.05
    assert 2 <= raised.value.attempts <= 7, raised.value.attempts
    assert raised.value.attempts == len(calls)
    assert f"after {len(calls)} attempts" in str(raised.value)


def test_pauses_come_between_attempts_and_may_be_timedeltas():
    check, calls = failing_until(3)
    started = time.monotonic()
    assert retry(times=3, pause=timedelta(milliseconds=100))(check)() == 3
    assert time.monotonic() - started >= 0.2
    # One attempt that passes does not pause.
    started = time.monotonic()
    for attempt in retry(times=3, pause=5):
        with attempt:
            pass
    assert attempt.number == 1 and time.monotonic() - started < 1


@pytest.mark.parametrize("arguments, message", [
    ({"times": 0, "pause": 1}, "at least 1, got 0"),
    ({"times": -2, "pause": 1}, "at least 1, got -2"),
    ({"times": 2.5, "pause": 1}, "whole number of times"),
    ({"times": True, "pause": 1}, "whole number of times"),
    ({"times": "3", "pause": 1}, "got '3'"),
    ({"times": 3, "pause": -1}, "retry(pause=...): a duration cannot be negative"),
    ({"times": 3, "pause": "1s"}, "retry(pause=...): expected seconds"),
    ({"times": 3, "pause": 1, "timeout": -5}, "retry(timeout=...): a duration cannot be negative"),
    ({"times": 3, "pause": 1, "exceptions": ()}, "exception types"),
    ({"times": 3, "pause": 1, "exceptions": ("AssertionError",)}, "exception types"),
    ({"times": 3, "pause": 1, "exceptions": KeyboardInterrupt}, "exception types"),
])
def test_bad_arguments_are_refused_with_a_reason(arguments, message):
    with pytest.raises(DslError) as raised:
        retry(**arguments)
    assert message in str(raised.value)


def test_misuse_is_named():
    with pytest.raises(DslError, match="with attempt:"):
        for attempt in retry(times=3, pause=0):
            pass
    with pytest.raises(DslError, match="decorates a function"):
        retry(times=3, pause=0)(42)


def request(url, method="GET", body=None):
    """(status, body) of a request, whatever the status."""
    with_body = urllib.request.Request(url, data=body, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(with_body, timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_retry_reads_the_targets_eventual_store_until_the_write_is_visible():
    server = Target(args=["--eventual-delay-ms", "300"])
    try:
        document = json.dumps({"order": 7, "state": "paid"}).encode()
        written = time.monotonic()
        status, reply = request(server.url + "/eventual/order-7", "PUT", document)
        assert (status, json.loads(reply)) == (202, {"key": "order-7", "visible_after_ms": 300})

        for attempt in retry(times=50, pause=0.05, timeout=5):
            with attempt:
                status, body = request(server.url + "/eventual/order-7")
                assert status == 200, f"attempt {attempt.number}: {status} {body!r}"
        assert attempt.number > 1
        assert body == document
        assert time.monotonic() - written >= 0.3

        # The server saw the same story: one write, a miss for every attempt but the last.
        stats = server.stats()
        assert stats["eventual_writes"] == 1
        assert stats["eventual_reads_not_found"] == attempt.number - 1
        assert stats["eventual_reads_found"] == 1
    finally:
        server.stop()
