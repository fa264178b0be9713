"""The client side of the NN HAL 1.3: what calls a driver rather than implements one.

Loading a driver, the four execution paths with time limits, the contract checks on what
a driver answers, and the one model builder. The fuzz harness and the conformance runner
are both clients of this package; it reaches a driver only through the HAL surface."""

#: Every value a client places (in operandValues, a constant pool or a request pool) starts
#: at a multiple of this, as the NN runtime places them (at most 4-byte aligned: no element
#: of the HAL's types is wider), so a driver may view any value as an array of its element type.
VALUE_ALIGNMENT = 4
