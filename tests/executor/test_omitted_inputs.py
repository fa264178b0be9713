"""A request may omit (hasNoValue) only inputs that no operation requires."""
from __future__ import annotations

import pytest

from driver.hal import ErrorStatus
from tests.driver.execution import Path, execute, prepare
from tests.models import add_model, while_counter_model


def _omit_first_input(request):
    argument = request.inputs[0]
    argument.hasNoValue = True
    argument.location.poolIndex = argument.location.offset = argument.location.length = 0
    argument.dimensions = []
    return request


# The same request with its input given runs: test_device_rejects_invalid's
# test_model_builders_compute_expected.
@pytest.mark.parametrize("make_case", [add_model, while_counter_model],
                         ids=["operation input", "loop input"])
def test_omitting_an_input_is_invalid(make_case):
    case = make_case()
    outcome = execute(prepare(case.model), _omit_first_input(case.request()), Path.SYNC)
    assert outcome.status == ErrorStatus.INVALID_ARGUMENT
