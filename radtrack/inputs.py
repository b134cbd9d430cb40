"""One checked parser for every number and one checked rule for every text a user types.

Sheet cells and command-line values go through these, so each kind of bad input is
refused the same way wherever it is typed: a number is ASCII digits in decimal or
exponent notation and finite (no ``nan``, ``inf``, ``1e999``, ``²``, ``٣``, ``1_0``); a
text holds no control character (NUL, tab, line breaks, escape, bidi overrides).
Each raises ValueError with a message that says what would be accepted.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

DECIMAL_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_WHOLE_RE = re.compile(r"[+-]?[0-9]+")
_NAMED = {0: "a NUL byte", 9: "a tab", 10: "a line break", 13: "a carriage return",
          27: "an escape character", 127: "a DEL character"}
# Text direction overrides and isolates ("Trojan source"): they reorder what a reader sees.
_BIDI = set(range(0x202A, 0x202F)) | set(range(0x2066, 0x206A)) | {0x200E, 0x200F, 0x061C}


def _odd_character(text: str) -> tuple[int, str] | None:
    """(0-based position, description) of the first character no typed value may hold."""
    for i, ch in enumerate(text):
        code = ord(ch)
        category = unicodedata.category(ch)
        if category == "Cc" or category in ("Zl", "Zp", "Cs") or code in _BIDI:
            what = _NAMED.get(code) or f"the control character {unicodedata.name(ch, '')}".strip()
            return i, f"{what} (U+{code:04X})"
    return None


def check_text(text: str) -> str:
    """``text`` itself, or ValueError naming the first control character and where it is."""
    odd = _odd_character(text)
    if odd is not None:
        pos, what = odd
        raise ValueError(f"holds {what} at character {pos + 1}; only printable text is "
                         "accepted (spaces, not tabs; one line)")
    return text


def _not_ascii_digit(text: str) -> str | None:
    for ch in text:
        if not ch.isascii() and (ch.isdigit() or ch.isnumeric() or unicodedata.category(ch) == "Nd"):
            return ch
    return None


def number(text: str, unit: str = "", *, whole: bool = False, positive: bool = False,
           minimum: float | None = None, maximum: float | None = None) -> float:
    """``text`` as a finite number (an int-valued float when ``whole``), or ValueError.

    ``unit`` names what the number counts ("seconds"); ``positive`` means > 0; ``minimum``
    and ``maximum`` are inclusive bounds.
    """
    raw = text.strip()
    kind = "whole number" if whole else "number"
    what = f"{kind}{f' ({unit})' if unit else ''}"
    example = "3" if whole else "0.5"
    odd = _not_ascii_digit(raw)
    if odd is not None:
        raise ValueError(f"{text!r} holds {odd!r} (U+{ord(odd):04X}), which is not one of the "
                         f"ASCII digits 0-9: write the {what} with 0-9, e.g. {example}")
    pattern = _WHOLE_RE if whole else DECIMAL_RE
    if not pattern.fullmatch(raw):
        if raw.lower().lstrip("+-") in ("nan", "inf", "infinity"):
            raise ValueError(f"{text!r} is not a finite {what}: nan and inf are refused; "
                             f"give digits such as {example}")
        raise ValueError(f"{text!r} is not a {what}: give digits 0-9"
                         f"{'' if whole else ' with an optional . and exponent'}, e.g. {example}")
    value = float(raw)
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is too large to be a finite {what}")
    bound = ""
    if positive and not value > 0:
        bound = "greater than 0"
    elif minimum is not None and value < minimum:
        bound = f">= {minimum:g}"
    elif maximum is not None and value > maximum:
        bound = f"<= {maximum:g}"
    if bound:
        raise ValueError(f"{text!r} must be {bound}{f' ({unit})' if unit else ''}")
    return value


def whole(text: str, unit: str = "", **bounds: float | bool | None) -> int:
    """``number(text, whole=True)`` as an int."""
    return int(number(text, unit, whole=True, **bounds))  # type: ignore[arg-type]


def argument(parse: Callable[[str], T]) -> Callable[[str], T]:
    """An argparse ``type=`` from a checked parser: its ValueError becomes argparse's one-line
    error (exit 2) with the parser's message."""

    def convert(text: str) -> T:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = getattr(parse, "__name__", "value")
    return convert


def integer(text: str) -> int:
    """Any whole number (its bounds are the caller's to check and word)."""
    return whole(text)


def count(text: str) -> int:
    """A whole number >= 0 (a workload number, an epoch count)."""
    return whole(text, minimum=0)


def finite(text: str) -> float:
    """Any finite number (its bounds, such as --interval > 0, are the caller's to check)."""
    return number(text)


def seconds(text: str) -> float:
    """A finite number of seconds >= 0 (a grace period)."""
    return number(text, "seconds", minimum=0)


def text_argument(text: str) -> str:
    """A command-line text value (an experiment or run name) under the text rule."""
    try:
        return check_text(text)
    except ValueError as exc:
        raise ValueError(f"{text!r} {exc}") from None


def script_problem(text: str, path: Path) -> str | None:
    """What stops ``path`` (typed as ``text``: a File cell, the command line's script) from
    being run, in the same words wherever it was typed; None for a readable file. The file's
    kind (.py) is the caller's to check."""
    if path.is_dir():
        return f"{text!r} is a directory ({path}); give the Python script to run"
    if not path.exists():
        return f"script {text!r} not found (looked for {path})"
    if not path.is_file() or not os.access(path, os.R_OK):
        return f"{text!r} is not a readable file ({path}): check its permissions"
    return None
