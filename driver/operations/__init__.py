"""One module per operation; each registers an OperationDef in registry.py."""
from .registry import OperandInfo, OperationContext, OperationDef, lookup, register, supported_types  # noqa: F401
