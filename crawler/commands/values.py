"""How an option's text is read and checked (argparse types): a bad value is one line
naming the option and what is allowed. The options that use them:
:mod:`crawler.commands.declarations`.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable
from functools import partial

from crawler.audit.classes import FAILABLE
from crawler.core.agent import is_product_token
from crawler.crawl.calendars import parse_window
from crawler.fetch.access import parse_auth, parse_cookie, parse_header


def _whole(text: str, minimum: int) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(
            f"must be at least 1: {text!r}" if minimum else f"must not be negative: {text!r}"
        )
    return value


positive_int = partial(_whole, minimum=1)
non_negative_int = partial(_whole, minimum=0)


def positive_float(text: str) -> float:
    """A number above 0 (a number of days, say)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be above 0: {text!r}")
    return value


def positive_int_or_auto(text: str) -> int | str:
    """A whole number of at least 1, or ``auto``."""
    return "auto" if text == "auto" else _whole(text, 1)


def processes_count(text: str) -> int:
    """``--processes``: a positive number, or ``auto`` for the machine's cores."""
    if text != "auto":
        return positive_int(text)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _between(what: str, high: int, unit: str = "", strip: str = "") -> Callable[[str], float]:
    """An argparse type: a number from 0 to *high* (*what*, in the errors)."""

    def check(text: str) -> float:
        try:
            value = float(text.rstrip(strip))
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a {what}: {text!r}") from None
        if not 0 <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between 0 and {high}{unit}: {text!r}")
        return value

    return check


seconds = _between("number of seconds", 3600, " seconds")
percent = _between("percentage", 100, strip="%")


def duration(text: str) -> float:
    """``90s``, ``30m``, ``2h``, ``1h30m`` or plain seconds -> seconds (more than 0)."""
    parts = _DURATION.fullmatch(text.strip().lower())
    if not text.strip() or parts is None:
        raise argparse.ArgumentTypeError(
            f"not a duration: {text!r} (90s, 30m, 2h, 1h30m, or seconds)"
        )
    total = sum(
        float(value) * unit
        for value, unit in zip(parts.groups(), (86400, 3600, 60, 1), strict=True)
        if value
    )
    if total <= 0:
        raise argparse.ArgumentTypeError(f"must be longer than 0: {text!r}")
    return total


_DURATION = re.compile(
    r"(?:(\d+(?:\.\d+)?)d)?\s*(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*"
    r"(?:(\d+(?:\.\d+)?)s?)?"
)


def regex(text: str) -> str:
    try:
        re.compile(text)
    except re.error as e:
        raise argparse.ArgumentTypeError(f"invalid regular expression {text!r}: {e}") from None
    return text


def setting(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name.strip(), value


def robots_token(text: str) -> str:
    if not is_product_token(text):
        raise argparse.ArgumentTypeError(
            f"not a product token (letters, digits, '_' and '-'): {text!r}"
        )
    return text


def _parsed(parse: Callable[[str], object]) -> Callable[[str], str]:
    """An argparse type: the text itself, once *parse* accepts it. Its ValueError is
    the message, which names no value: it may be a secret (argparse names the option)."""

    def check(text: str) -> str:
        try:
            parse(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        return text

    return check


window = _parsed(parse_window)
header_option = _parsed(parse_header)
cookie_option = _parsed(parse_cookie)
auth_option = _parsed(parse_auth)


def classes(text: str) -> list[str]:
    """``--fail-on``: the audit's classes and flags, comma-separated."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in FAILABLE]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown class {', '.join(map(repr, unknown)) or repr(text)}; "
            f"one of: {', '.join(sorted(FAILABLE))}"
        )
    return names
