"""HAL structures with a field deleted (``del operand.type``): invalid arguments, not crashes.

Validation reads fields without asking whether each exists (that would cost a check per
field of every model). When a read fails with AttributeError, the entry points
(``naming_missing_fields``) ask ``raise_for_missing_field`` whether the argument lacks a
field its dataclass declares: if so, that is the client's error and becomes a
ValidationError naming the field; if not, the AttributeError is a bug of the driver and
goes on.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Callable, TypeVar

from ..errors import fail

F = TypeVar("F", bound=Callable)


def first_missing_field(value: object, where: str) -> str | None:
    """Where, in ``value`` and the dataclasses and lists inside it, a declared field is
    missing (None when none is)."""
    seen: set[int] = set()
    pending = [(value, where)]
    while pending:
        item, place = pending.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, list):
            pending.extend((element, f"{place}[{i}]") for i, element in reversed(list(enumerate(item))))
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            children = []
            for field in dataclasses.fields(item):
                try:
                    children.append((getattr(item, field.name), f"{place}.{field.name}"))
                except AttributeError:
                    return f"{place}: {type(item).__name__} has no field {field.name}"
            pending.extend(reversed(children))
    return None


def raise_for_missing_field(value: object, where: str) -> None:
    """Raise ValidationError if ``value`` lacks a declared field; return otherwise."""
    problem = first_missing_field(value, where)
    if problem is not None:
        fail(problem)


def naming_missing_fields(where: str) -> Callable[[F], F]:
    """A check of a HAL structure (its first argument, named ``where`` in messages) whose
    AttributeError becomes the ValidationError of the field the structure lacks, if any."""
    def decorate(check_structure: F) -> F:
        @functools.wraps(check_structure)
        def checked(value, *args, **kwargs):
            try:
                return check_structure(value, *args, **kwargs)
            except AttributeError:
                raise_for_missing_field(value, where)
                raise
        return checked  # type: ignore[return-value]
    return decorate
