"""Validation of HAL 1.3 models and requests.

``validate_model(model)`` and ``validate_request(request, model)`` return None for valid
input and raise driver.errors.ValidationError (INVALID_ARGUMENT) otherwise, with a message
naming the subgraph / operand / operation or request argument at fault, e.g.
"main subgraph, operand 3: ..." or "referenced subgraph 1, operation 0 (ADD): ...".
Only the HAL surface turns that error into a status.

They are check_model (model.py) and check_request (request.py), pure functions of what
they are given, remembered by content and the limits in force (memo.py, which says how to
turn it off).

``check_compatible(outer, inner, what)`` is the subgraph-boundary rule of IF and WHILE.

Each rule is one ``check(condition, message, *args)``, its message formatted only for a
failure (driver/errors.py).
"""
from .compat import check_compatible, dimensions_compatible  # noqa: F401
from .memo import validate_model, validate_request  # noqa: F401

__all__ = ["validate_model", "validate_request", "check_compatible", "dimensions_compatible"]
