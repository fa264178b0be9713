"""Execution plans: compiled once at prepare time (plan.py), run per request (run.py)."""
from .plan import ModelAnalysis, SubgraphPlan, compile_model  # noqa: F401
from .steps import ExecutionContext  # noqa: F401
