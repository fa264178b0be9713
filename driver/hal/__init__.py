"""The NN HAL 1.0-1.3 types, in their 1.3 form: enums, structures, interfaces, callbacks."""
from .enums import *  # noqa: F401,F403
from .enums import UINT64_MAX  # noqa: F401
from .structs import *  # noqa: F401,F403
from .structs import NO_TIMING  # noqa: F401
from .callbacks import ExecutionCallback, PreparedModelCallback  # noqa: F401,E402
