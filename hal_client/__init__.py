"""The client side of the NN HAL 1.3: what calls a driver rather than implements one.

Loading a driver, the four execution paths with time limits, the contract checks on what
a driver answers, and the one model builder. The fuzz harness and the conformance runner
are both clients of this package; it reaches a driver only through the HAL surface."""
