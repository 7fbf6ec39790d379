"""Durations in the DSL: seconds as numbers (as Gatling's ``pause(1)``) or timedeltas."""

from datetime import timedelta

from .errors import DslError


def _seconds(value, what):
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise DslError(f"{what}: expected seconds (a number) or a timedelta, got {value!r}")
    if seconds < 0:
        raise DslError(f"{what}: a duration cannot be negative ({value!r})")
    return seconds


def to_ms(value, what):
    """Milliseconds from seconds (int, float) or a timedelta; refuses negatives and non-numbers."""
    return int(round(_seconds(value, what) * 1000))


def to_us(value, what):
    """Microseconds from seconds (int, float) or a timedelta, for what is finer than a
    millisecond (``0.0005`` is 500 µs); refuses negatives and non-numbers."""
    return int(round(_seconds(value, what) * 1_000_000))
