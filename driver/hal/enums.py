"""Enumerations of the NN HAL 1.0-1.3 (types.hal), with the HAL's names and numeric values.

Only the 1.3 view is modelled: where a later HAL version extends an enum, the extended
enum is the one a 1.3 driver sees.
"""
from __future__ import annotations

import enum


class OperandType(enum.IntEnum):
    FLOAT32 = 0
    INT32 = 1
    UINT32 = 2
    TENSOR_FLOAT32 = 3
    TENSOR_INT32 = 4
    TENSOR_QUANT8_ASYMM = 5
    BOOL = 6
    TENSOR_QUANT16_SYMM = 7
    TENSOR_FLOAT16 = 8
    TENSOR_BOOL8 = 9
    FLOAT16 = 10
    TENSOR_QUANT8_SYMM_PER_CHANNEL = 11
    TENSOR_QUANT16_ASYMM = 12
    TENSOR_QUANT8_SYMM = 13
    TENSOR_QUANT8_ASYMM_SIGNED = 14
    SUBGRAPH = 15
    OEM = 10000
    TENSOR_OEM_BYTE = 10001


class OperandTypeRange(enum.IntEnum):
    BASE_MIN = 0
    FUNDAMENTAL_MIN = 0
    FUNDAMENTAL_MAX = 15
    OEM_MIN = 10000
    OEM_MAX = 10001
    BASE_MAX = 0xFFFF


class OperationType(enum.IntEnum):
    ADD = 0
    AVERAGE_POOL_2D = 1
    CONCATENATION = 2
    CONV_2D = 3
    DEPTHWISE_CONV_2D = 4
    DEPTH_TO_SPACE = 5
    DEQUANTIZE = 6
    EMBEDDING_LOOKUP = 7
    FLOOR = 8
    FULLY_CONNECTED = 9
    HASHTABLE_LOOKUP = 10
    L2_NORMALIZATION = 11
    L2_POOL_2D = 12
    LOCAL_RESPONSE_NORMALIZATION = 13
    LOGISTIC = 14
    LSH_PROJECTION = 15
    LSTM = 16
    MAX_POOL_2D = 17
    MUL = 18
    RELU = 19
    RELU1 = 20
    RELU6 = 21
    RESHAPE = 22
    RESIZE_BILINEAR = 23
    RNN = 24
    SOFTMAX = 25
    SPACE_TO_DEPTH = 26
    SVDF = 27
    TANH = 28
    BATCH_TO_SPACE_ND = 29
    DIV = 30
    MEAN = 31
    PAD = 32
    SPACE_TO_BATCH_ND = 33
    SQUEEZE = 34
    STRIDED_SLICE = 35
    SUB = 36
    TRANSPOSE = 37
    ABS = 38
    ARGMAX = 39
    ARGMIN = 40
    AXIS_ALIGNED_BBOX_TRANSFORM = 41
    BIDIRECTIONAL_SEQUENCE_LSTM = 42
    BIDIRECTIONAL_SEQUENCE_RNN = 43
    BOX_WITH_NMS_LIMIT = 44
    CAST = 45
    CHANNEL_SHUFFLE = 46
    DETECTION_POSTPROCESSING = 47
    EQUAL = 48
    EXP = 49
    EXPAND_DIMS = 50
    GATHER = 51
    GENERATE_PROPOSALS = 52
    GREATER = 53
    GREATER_EQUAL = 54
    GROUPED_CONV_2D = 55
    HEATMAP_MAX_KEYPOINT = 56
    INSTANCE_NORMALIZATION = 57
    LESS = 58
    LESS_EQUAL = 59
    LOG = 60
    LOGICAL_AND = 61
    LOGICAL_NOT = 62
    LOGICAL_OR = 63
    LOG_SOFTMAX = 64
    MAXIMUM = 65
    MINIMUM = 66
    NEG = 67
    NOT_EQUAL = 68
    PAD_V2 = 69
    POW = 70
    PRELU = 71
    QUANTIZE = 72
    QUANTIZED_16BIT_LSTM = 73
    RANDOM_MULTINOMIAL = 74
    REDUCE_ALL = 75
    REDUCE_ANY = 76
    REDUCE_MAX = 77
    REDUCE_MIN = 78
    REDUCE_PROD = 79
    REDUCE_SUM = 80
    ROI_ALIGN = 81
    ROI_POOLING = 82
    RSQRT = 83
    SELECT = 84
    SIN = 85
    SLICE = 86
    SPLIT = 87
    SQRT = 88
    TILE = 89
    TOPK_V2 = 90
    TRANSPOSE_CONV_2D = 91
    UNIDIRECTIONAL_SEQUENCE_LSTM = 92
    UNIDIRECTIONAL_SEQUENCE_RNN = 93
    RESIZE_NEAREST_NEIGHBOR = 94
    QUANTIZED_LSTM = 95
    IF = 96
    WHILE = 97
    ELU = 98
    HARD_SWISH = 99
    FILL = 100
    RANK = 101
    OEM_OPERATION = 10000


class OperationTypeRange(enum.IntEnum):
    BASE_MIN = 0
    FUNDAMENTAL_MIN = 0
    FUNDAMENTAL_MAX = 101
    OEM_MIN = 10000
    OEM_MAX = 10000
    BASE_MAX = 0xFFFF


class FusedActivationFunc(enum.IntEnum):
    NONE = 0
    RELU = 1
    RELU1 = 2
    RELU6 = 3


class OperandLifeTime(enum.IntEnum):
    TEMPORARY_VARIABLE = 0
    SUBGRAPH_INPUT = 1
    SUBGRAPH_OUTPUT = 2
    CONSTANT_COPY = 3
    CONSTANT_REFERENCE = 4
    NO_VALUE = 5
    SUBGRAPH = 6


class ErrorStatus(enum.IntEnum):
    NONE = 0
    DEVICE_UNAVAILABLE = 1
    GENERAL_FAILURE = 2
    OUTPUT_INSUFFICIENT_SIZE = 3
    INVALID_ARGUMENT = 4
    MISSED_DEADLINE_TRANSIENT = 5
    MISSED_DEADLINE_PERSISTENT = 6
    RESOURCE_EXHAUSTED_TRANSIENT = 7
    RESOURCE_EXHAUSTED_PERSISTENT = 8


class DeviceStatus(enum.IntEnum):
    AVAILABLE = 0
    BUSY = 1
    OFFLINE = 2
    UNKNOWN = 3


class DeviceType(enum.IntEnum):
    OTHER = 1
    CPU = 2
    GPU = 3
    ACCELERATOR = 4


class MeasureTiming(enum.IntEnum):
    NO = 0
    YES = 1


class ExecutionPreference(enum.IntEnum):
    LOW_POWER = 0
    FAST_SINGLE_ANSWER = 1
    SUSTAINED_SPEED = 2


class Priority(enum.IntEnum):
    LOW = 0
    MEDIUM = 1
    HIGH = 2


class IOType(enum.IntEnum):
    """Which side of a prepared model a BufferRole refers to (1.3 memory domains)."""
    INPUT = 0
    OUTPUT = 1


class Constant(enum.IntEnum):
    """Named constants of types.hal (1.2 Constant, 1.3 LoopTimeoutDurationNs)."""
    BYTE_SIZE_OF_CACHE_TOKEN = 32
    MAX_NUMBER_OF_CACHE_FILES = 32


class LoopTimeoutDurationNs(enum.IntEnum):
    DEFAULT = 2 * 1_000_000_000
    MAXIMUM = 15 * 1_000_000_000


class ExtensionTypeEncoding(enum.IntEnum):
    """How an extension operand or operation type packs (prefix << LOW_BITS_TYPE) | type."""
    HIGH_BITS_PREFIX = 16
    LOW_BITS_TYPE = 16


#: Timing fields that were not measured hold this value.
UINT64_MAX = 0xFFFF_FFFF_FFFF_FFFF

#: Scalar operand types (everything else that is not OEM/SUBGRAPH is a tensor).
SCALAR_OPERAND_TYPES = frozenset({
    OperandType.FLOAT32, OperandType.INT32, OperandType.UINT32, OperandType.BOOL,
    OperandType.FLOAT16, OperandType.SUBGRAPH, OperandType.OEM,
})

#: The operations that run subgraphs the model references.
CONTROL_FLOW_OPERATION_TYPES = frozenset({OperationType.IF, OperationType.WHILE})
