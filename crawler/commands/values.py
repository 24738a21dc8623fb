"""How the text of an option that sets no setting of its own is read and checked
(argparse types): a bad value is one line naming the option and what is allowed. An
option that sets a setting is checked by that setting's rule
(:func:`crawler.commands.settingrules.option_type`). The options that use them:
:mod:`crawler.commands.declarations`.
"""

from __future__ import annotations

import argparse
import re

from crawler.audit.classes import FAILABLE
from crawler.commands.settingrules import check_value
from crawler.core.agent import is_product_token
from crawler.core.cores import usable_cores


def processes_count(text: str) -> int:
    """``--processes``: a positive number, or ``auto`` for the machine's cores."""
    if text != "auto":
        try:
            check_value("SITEMAP_REDIS_PROCESSES_HERE", text)  # how many a machine runs
        except ValueError as e:
            raise argparse.ArgumentTypeError(f"{text!r}: {e}, or auto") from None
        return int(text)
    return usable_cores()


def percent(text: str) -> float:
    """``--fail-under``: a percentage from 0 to 100 (a trailing ``%`` allowed)."""
    try:
        value = float(text.rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a percentage: {text!r}") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"must be between 0 and 100: {text!r}")
    return value


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
