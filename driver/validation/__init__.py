"""Validation of HAL 1.3 models and requests.

``validate_model(model)`` and ``validate_request(request, model)`` return None for valid
input and raise driver.errors.ValidationError (INVALID_ARGUMENT) otherwise, with a message
naming the subgraph / operand / operation or request argument at fault, e.g.
"main subgraph, operand 3: ..." or "referenced subgraph 1, operation 0 (ADD): ...".
Only the HAL surface turns that error into a status.

``check_compatible(outer, inner, what)`` is the subgraph-boundary rule of IF and WHILE.

Each rule is one ``check(condition, message, *args)``, its message formatted only for a
failure (driver/errors.py). Parts found valid (operands, subgraph structures, request arguments) are
remembered by content (driver.fingerprint.VALID_PARTS), and so are whole verdicts
(driver.fingerprint.MODEL_MEMO).
"""
from .compat import check_compatible, dimensions_compatible  # noqa: F401
from .model import validate_model  # noqa: F401
from .request import validate_request  # noqa: F401

__all__ = ["validate_model", "validate_request", "check_compatible", "dimensions_compatible"]
