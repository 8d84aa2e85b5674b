"""Exceptions and warnings of privrl (ARCHITECTURE.md §5).

Every error raised on bad user input is an :class:`InvalidParameterError`, a subclass of both
:class:`PrivrlError` and :class:`ValueError`, so ``except ValueError`` keeps working. The command
line turns every :class:`PrivrlError` into a one-line message and a non-zero exit code.
"""

from __future__ import annotations

__all__ = [
    "PrivrlError",
    "InvalidParameterError",
    "InvalidDataError",
    "PrivacyError",
    "BudgetExceededError",
    "NotFittedError",
    "CertificationError",
    "PrivacyLeakWarning",
    "UtilityWarning",
]


class PrivrlError(Exception):
    """Base class of every error privrl raises on purpose."""


class InvalidParameterError(PrivrlError, ValueError):
    """A parameter is outside its allowed range or of the wrong type."""


class InvalidDataError(PrivrlError, ValueError):
    """A dataset, model or file is malformed (shape, dtype, bound, corrupt file...)."""


class BudgetExceededError(PrivrlError):
    """A release would spend more privacy than the budget allows."""


class NotFittedError(PrivrlError, AttributeError):
    """A fitted attribute was requested before ``fit``."""


class PrivacyError(PrivrlError):
    """A release that would spend privacy its ledger does not record (e.g. a block of a keyed release
    drawn a second time with fresh noise)."""


class CertificationError(PrivrlError):
    """The algorithm cannot certify the requested privacy guarantee (e.g. a side condition of the
    proof fails). Raised instead of silently releasing an uncertified result."""


class PrivacyLeakWarning(UserWarning):
    """Something was derived from private data in a way the guarantee does not cover."""


class UtilityWarning(UserWarning):
    """The configuration is private but likely to give poor utility."""
