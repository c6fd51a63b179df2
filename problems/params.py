"""Checks of family parameter values, declared with each ``Param`` (``Param.check``).

Each function here returns a check: a callable taking the value given in a family spec (or
to ``generate``) and returning it (normalised where said) or raising ``ValueError`` with
what it expected. ``FamilySpec.of`` runs the checks once, at the edge, so that
``planar-box[mu=0.3]`` is refused naming the parameter and the expected form, before any
sampler sees it.
"""

from __future__ import annotations

import math
import os
from numbers import Integral, Real
from dataclasses import dataclass
from typing import Any, Callable

Check = Callable[[Any], Any]


def _real(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(float(value))


def number(ge: float | None = None, le: float | None = None, gt: float | None = None) -> Check:
    """A finite real number (not a bool) within the given bounds."""
    def check(value):
        if not _real(value) or (ge is not None and value < ge) or (le is not None and value > le) or (
                gt is not None and value <= gt):
            raise ValueError
        return value
    return check


def integer(ge: int | None = None, le: int | None = None) -> Check:
    """An integer (not a bool) within the given bounds."""
    def check(value):
        if not isinstance(value, Integral) or isinstance(value, bool) or (ge is not None and value < ge) or (
                le is not None and value > le):
            raise ValueError
        return value
    return check


def boolean(value: Any) -> bool:
    """True or False."""
    if not isinstance(value, bool):
        raise ValueError
    return value


def interval(ge: float | None = None, gt: float | None = None, le: float | None = None,
             whole: bool = False) -> Check:
    """A ``(low, high)`` pair of finite numbers (integers with ``whole``) with low <= high,
    each within the given bounds."""
    item = integer(ge, le) if whole else number(ge=ge, le=le, gt=gt)

    def check(value):
        if not isinstance(value, (tuple, list)) or len(value) != 2:
            raise ValueError
        low, high = (item(v) for v in value)
        if low > high:
            raise ValueError
        return value
    return check


def widths(count: int) -> Check:
    """``count`` finite numbers >= 0 (half-widths)."""
    item = number(ge=0)

    def check(value):
        if not isinstance(value, (tuple, list)) or len(value) != count:
            raise ValueError
        for v in value:
            item(v)
        return value
    return check


def one_of(*choices: Any) -> Check:
    """One of ``choices``."""
    def check(value):
        if not isinstance(value, str) or value not in choices:
            raise ValueError
        return value
    return check


def subset(choices: tuple[str, ...]) -> Check:
    """A non-empty tuple or list of distinct members of ``choices``."""
    def check(value):
        if not isinstance(value, (tuple, list)) or not value or len(set(value)) != len(value) or any(
                not isinstance(v, str) or v not in choices for v in value):
            raise ValueError
        return value
    return check


def mapping(value: Any) -> dict:
    """A dict with string keys."""
    if not isinstance(value, dict) or any(not isinstance(k, str) for k in value):
        raise ValueError
    return value


def optional(check: Check) -> Check:
    """None, or what ``check`` accepts."""
    def wrapped(value):
        return None if value is None else check(value)
    return wrapped


def directory(value: Any) -> str:
    """A folder path, made absolute (a worker on another machine or in another working
    directory reads the same folder; the spec names the problems, not the caller's cwd)."""
    if not isinstance(value, str) or not value:
        raise ValueError
    return os.path.abspath(os.path.expanduser(value))


def either(*checks: Check) -> Check:
    """What the first of ``checks`` that accepts the value returns."""
    def check(value):
        for one in checks:
            try:
                return one(value)
            except (ValueError, TypeError):
                continue
        raise ValueError
    return check


@dataclass(frozen=True)
class Param:
    """One parameter a family (or a kind) takes: ``type`` is a short description of the
    accepted values (``float``, ``(low, high)``, ``bool``, one of ...), ``doc`` says what it
    does and in which unit."""

    name: str
    type: str
    default: Any
    doc: str
    #: the value check (see above): returns the value, normalised, or raises ``ValueError``;
    #: None accepts anything (the sampler checks it)
    check: Callable[[Any], Any] | None = None

