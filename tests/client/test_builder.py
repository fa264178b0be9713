"""The request builder states each input's dimensions as the array has them."""
import numpy as np

from hal_client.builder import make_request, out_like


def test_request_states_a_scalar_input_with_no_dimensions():
    io = make_request([np.float32(3.0), np.ones((2, 3), np.float32).T], [out_like(np.float32, [1])])
    assert [argument.dimensions for argument in io.request.inputs] == [[], [3, 2]]
    # The transposed input is packed in C order, as its shape reads.
    start = io.request.inputs[1].location.offset
    assert io.input_pool.buffer()[start:start + 24].tobytes() == np.ones((3, 2), np.float32).tobytes()
