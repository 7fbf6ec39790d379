"""What a recorded value looks like: worth correlating, made by the client, or typed by the
person recording.

The filters keep generic matching from binding a value to text that holds it by chance: short
values, booleans, small numbers, words, sentences, URLs, and path segments that are not ids
(naive matching binds ``/upload`` to the word "upload" in an earlier page's title).
"""

from __future__ import annotations

import re
from typing import Optional

from ..decisions import Slot

UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
HEX = re.compile(r"[0-9a-fA-F]{8,}")
WORDS = {"true", "false", "null", "none", "undefined", "yes", "no", "on", "off", "nan"}
DAY = 86400

# Names of what people type: a feeder column each (never correlated).
TYPED_NAMES = re.compile(
    r"^(user(name)?|user_?name|login|email|e-?mail|mail|pass(word)?|passwd|pwd|passphrase|pin|otp|phone|"
    r"q|query|search|term|keywords?|first_?name|last_?name|full_?name)$", re.IGNORECASE)
SECRET_NAMES = re.compile(r"pass|pwd|secret|pin$", re.IGNORECASE)
# Names of values a client makes up for each request or login flow.
RANDOM_NAMES = re.compile(r"^(state|nonce|_?cb|cachebuster|rnd|rand|random|request_?id|correlation_?id|trace_?id)$",
                          re.IGNORECASE)
TOKEN_NAMES = re.compile(r"csrf|xsrf|token|nonce|state|viewstate|validation|session|sid|auth|code|guid|uuid|id$",
                         re.IGNORECASE)


def looks_like_id(value: str) -> bool:
    """A path segment that may name a resource: digits, a uuid, hex, or letters mixed with
    digits, 8 characters or more."""
    if value.isdigit():
        return True
    if UUID.fullmatch(value) or HEX.fullmatch(value):
        return True
    return len(value) >= 8 and any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def worth_correlating(slot: Slot) -> bool:
    """Whether generic matching may bind this value to a response that holds it."""
    value = slot.value
    if len(value) < 4 or value.lower() in WORDS:
        return False
    if any(c.isspace() for c in value):
        return False  # a sentence someone typed
    if "://" in value or value.startswith("/"):
        return False  # a URL: redirects are followed, links are not state
    if value.isdigit() and len(value) < 5:
        return False
    if re.fullmatch(r"[A-Za-z]+", value) and len(value) < 12:
        return False  # a word
    if re.fullmatch(r"[A-Za-z]+([_.-][A-Za-z]+)*", value) and not TOKEN_NAMES.search(slot.name):
        return False  # words joined: an enumeration, a field name
    if slot.id.kind == "path" and not looks_like_id(value):
        return False
    if SECRET_NAMES.search(slot.name):
        return False
    return True


def is_typed(slot: Slot) -> bool:
    return slot.id.kind in ("form", "part", "json", "query") and bool(TYPED_NAMES.match(slot.name)) and slot.value != ""


def generated_expression(slot: Slot, started: float) -> Optional[str]:
    """The template function that makes a value the client made up, or None."""
    value = slot.value
    if UUID.fullmatch(value):
        return "__uuid()"
    if value.isdigit() and len(value) == 13 and abs(int(value) / 1000 - started) < DAY:
        return "__now_ms()"
    if value.isdigit() and len(value) == 10 and abs(int(value) - started) < DAY:
        return "__now_s()"
    if RANDOM_NAMES.match(slot.name) and len(value) >= 8 and slot.id.kind in ("query", "form", "part", "json"):
        if value.isdigit():
            return f"__random_int({10 ** (len(value) - 1)}, {10 ** len(value) - 1})"
        if re.fullmatch(r"[A-Za-z0-9]+", value):
            return f"__random_string({len(value)})"
    return None
