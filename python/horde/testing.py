"""Helpers for your own integration tests (pytest or any other runner): :func:`retry` runs a
block of asserts again until it passes, for systems that become consistent a moment after a
write (seed 002's RetriableCondition). Pure Python: it needs neither the engine nor a plan.

As a decorator, on a function of asserts; the function's value is returned once it passes::

    >>> from horde.testing import retry
    >>> calls = []
    >>> @retry(times=5, pause=0.01)
    ... def three_calls_needed():
    ...     calls.append(1)
    ...     assert len(calls) >= 3, f"only {len(calls)} calls so far"
    ...     return len(calls)
    >>> three_calls_needed()
    3

As a loop of attempts, each one a ``with`` block, for asserts written in place::

    >>> replies = iter([404, 404, 200])
    >>> for attempt in retry(times=5, pause=0.01):
    ...     with attempt:
    ...         assert next(replies) == 200
    >>> attempt.number
    3

A ``with`` statement cannot run its block twice: a context manager is entered once, so
``with retry(...): ...`` could only see the first failure, never try again. Hence the loop
(the idiom of tenacity's ``for attempt in Retrying(): with attempt:``): the loop makes the
attempts, and each ``with attempt:`` catches a retried failure so that the next attempt can
follow. When the last attempt fails, :class:`RetryError` (an ``AssertionError``, so test
runners report a failure, not an error) gives the last failure's message and the count, with
the last failure as its ``__cause__``::

    >>> for attempt in retry(times=2, pause=0):  # doctest: +ELLIPSIS
    ...     with attempt:
    ...         assert 1 + 1 == 3, "the sum is not visible yet"
    Traceback (most recent call last):
    ...
    horde.testing.RetryError: the sum is not visible yet (after 2 attempts over 0.0... s)

Only ``exceptions`` (``AssertionError`` by default) are retried; anything else ends the
attempts at once, unchanged.
"""

import functools
import time

from ._durations import to_ms
from .errors import DslError

__all__ = ["Attempt", "Retry", "RetryError", "retry"]


class RetryError(AssertionError):
    """Every attempt failed. ``attempts`` is how many were made, ``elapsed`` the seconds from
    the start of the first to the end of the last, ``last`` the last failure (also
    ``__cause__``)."""

    def __init__(self, last, attempts, elapsed):
        self.last = last
        self.attempts = attempts
        self.elapsed = elapsed
        text = str(last) if isinstance(last, AssertionError) else f"{type(last).__name__}: {last}"
        text = text or type(last).__name__
        # A long message (pytest's rewritten asserts span lines) gets the count on a line of its own.
        tail = f"(after {attempts} attempt{'' if attempts == 1 else 's'} over {elapsed:.2f} s)"
        super().__init__(f"{text}\n{tail}" if "\n" in text else f"{text} {tail}")


class Attempt:
    """One attempt of a :class:`Retry` loop, used as ``with attempt:``. ``number`` counts from
    1. A retried exception raised in the block is caught and kept, so that the loop can try
    again; any other goes through."""

    def __init__(self, number, exceptions):
        self.number = number
        self._exceptions = exceptions
        self.failure = None
        self.done = False

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, traceback):
        self.done = True
        if exc is not None and isinstance(exc, self._exceptions):
            self.failure = exc
            return True
        return False

    def __repr__(self):
        state = "running" if not self.done else "failed" if self.failure is not None else "passed"
        return f"<Attempt {self.number} {state}>"


class Retry:
    """Attempts to make, made by :func:`retry`: iterate over it for a loop of :class:`Attempt`,
    or call it on a function to decorate it. It keeps no state between uses, so one ``Retry``
    can serve several loops and functions."""

    def __init__(self, times, pause, timeout=None, exceptions=(AssertionError,)):
        if isinstance(times, bool) or not isinstance(times, int) or times < 1:
            raise DslError(f"retry() needs a whole number of times of at least 1, got {times!r}")
        self.times = times
        self.pause = to_ms(pause, "retry(pause=...)") / 1000
        self.timeout = None if timeout is None else to_ms(timeout, "retry(timeout=...)") / 1000
        self.exceptions = _exception_types(exceptions)

    def __iter__(self):
        started = time.monotonic()
        deadline = None if self.timeout is None else started + self.timeout
        number = 0
        while True:
            number += 1
            attempt = Attempt(number, self.exceptions)
            yield attempt
            if not attempt.done:
                raise DslError("retry(): use each attempt as a with block: "
                               "`for attempt in retry(...):` then `with attempt:` around the asserts")
            if attempt.failure is None:
                return
            now = time.monotonic()
            # No attempt starts after the deadline: then there is no point pausing for one.
            if number >= self.times or (deadline is not None and now + self.pause > deadline):
                raise RetryError(attempt.failure, number, now - started) from attempt.failure
            time.sleep(self.pause)

    def __call__(self, function):
        if not callable(function):
            raise DslError(f"retry(...) decorates a function, got {function!r}")

        @functools.wraps(function)
        def retried(*args, **kwargs):
            for attempt in self:
                with attempt:
                    return function(*args, **kwargs)

        return retried

    def __repr__(self):
        timeout = "" if self.timeout is None else f", timeout={self.timeout}"
        names = ", ".join(t.__name__ for t in self.exceptions)
        return f"retry(times={self.times}, pause={self.pause}{timeout}, exceptions=({names},))"


def retry(times, pause, *, timeout=None, exceptions=(AssertionError,)):
    """Up to ``times`` attempts (at least 1), ``pause`` seconds apart (a number or a
    timedelta), for at most ``timeout`` seconds in all if given (no attempt starts later than
    that after the first); ``exceptions`` (a type or a tuple of types) are the failures that
    are retried. See the module's documentation for the two ways to use it.

        >>> retry(times=10, pause=0.2, timeout=5)
        retry(times=10, pause=0.2, timeout=5.0, exceptions=(AssertionError,))
        >>> retry(times=0, pause=1)
        Traceback (most recent call last):
        ...
        horde.errors.DslError: retry() needs a whole number of times of at least 1, got 0
    """
    return Retry(times, pause, timeout=timeout, exceptions=exceptions)


def _exception_types(exceptions):
    types = exceptions if isinstance(exceptions, tuple) else (exceptions,)
    if not types or not all(isinstance(t, type) and issubclass(t, Exception) for t in types):
        raise DslError(f"retry(exceptions=...) takes exception types (a type or a tuple of them), got {exceptions!r}")
    return types
