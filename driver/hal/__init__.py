"""The NN HAL 1.0-1.3 types, in their 1.3 form: enums, structures, interfaces, callbacks."""
from .enums import *  # noqa: F401,F403
from .structs import *  # noqa: F401,F403
from .callbacks import ExecutionCallback, PreparedModelCallback  # noqa: F401,E402
