"""One module per family of operations; each registers its OperationDefs, with their
signatures as data, in registry.py."""
from .registry import (OperandInfo, OperationContext, OperationDef, definitions, lookup,  # noqa: F401
                       register, supported_types)
