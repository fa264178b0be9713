"""The NNAPI conformance (CTS) test models as HAL objects, and a runner that measures a
driver against them: ``python -m hal_client.conformance PATH...``."""
from .loader import (Example, LoadError, TestOperand, SubgraphSpec, build_model, build_request,
                     find_model_files, load_examples)

__all__ = ["Example", "LoadError", "TestOperand", "SubgraphSpec", "build_model", "build_request",
           "find_model_files", "load_examples"]
