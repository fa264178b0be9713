"""The errors the driver raises internally; only the HAL surface turns them into statuses.

Validation reads as a list of one-line checks (``check(cond, message, *args)``). A failed check
raises :class:`ValidationError`; a failure detected while running a plan raises
:class:`ExecutionError` with the status to return. Any other exception is a bug and is
left to propagate, so that tests and the fuzzer see it.
"""
from __future__ import annotations

from typing import NoReturn

from .hal.enums import ErrorStatus


class DriverError(Exception):
    """An expected failure that maps to an ErrorStatus."""

    status: ErrorStatus = ErrorStatus.GENERAL_FAILURE

    def __init__(self, message: str, status: ErrorStatus | None = None) -> None:
        super().__init__(message)
        if status is not None:
            self.status = status

    @property
    def message(self) -> str:
        return str(self)


class ValidationError(DriverError):
    """Invalid model, request or argument: INVALID_ARGUMENT."""

    status = ErrorStatus.INVALID_ARGUMENT


class ExecutionError(DriverError):
    """A failure while running a plan (e.g. a runtime shape mismatch, a loop timeout)."""

    status = ErrorStatus.GENERAL_FAILURE


class ResourceError(DriverError):
    """A size that would exhaust memory: refused, not attempted."""

    status = ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT


def check(condition: object, message: str, *args: object) -> None:
    """Raise ValidationError unless condition holds (NN_RET_CHECK in Python). The message
    is ``message.format(*args)`` (or ``message`` itself without args), formatted only on
    failure: a check that passes costs a call, not a string."""
    if not condition:
        raise ValidationError(message.format(*args) if args else message)


def fail(message: str) -> NoReturn:
    """Raise ValidationError(message): for a failure already decided."""
    raise ValidationError(message)
