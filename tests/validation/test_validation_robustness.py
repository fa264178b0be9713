"""Random multi-field corruptions of the valid models: validation either accepts or raises
ValidationError (anything else is a bug), and what it accepts can be read safely."""
from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from driver.errors import ValidationError
from driver.hal import DataLocation, OperandExtraParams, SymmPerChannelQuantParams
from driver.operands import subgraph_infos
from driver.validation import validate_model, validate_request
from tests.models import ALL_MODELS

pytestmark = pytest.mark.usefixtures("memo_setting")

INTS = st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7, 15, 16, 255, 256, 10000, 10001, 65535, 65536,
                        0x70001, 2 ** 31, 2 ** 32 - 1, 2 ** 32, -1, -129])
DIMS = st.lists(st.sampled_from([0, 1, 2, 3, 4, 65536, 2 ** 32 - 1, -1]), max_size=4)
SCALES = st.sampled_from([0.0, 0.5, 1.0, -1.0, math.nan, math.inf, 1e300])
EXTRA = st.sampled_from([
    OperandExtraParams(), OperandExtraParams(extension=b"x"),
    OperandExtraParams(channelQuant=SymmPerChannelQuantParams([0.5, 0.25, 2.0], 1)),
    OperandExtraParams(channelQuant=SymmPerChannelQuantParams([1.0], 5)),
])
OPERAND_FIELDS = {
    "type": INTS, "dimensions": DIMS, "scale": SCALES, "zeroPoint": INTS,
    "lifetime": st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7]), "numberOfConsumers": INTS,
    "location": st.builds(DataLocation, INTS, INTS, INTS), "extraParams": EXTRA,
}


def corrupt(data, model) -> None:
    subgraphs = [model.main, *model.referenced]
    for _ in range(data.draw(st.integers(1, 3), "corruptions")):
        subgraph = data.draw(st.sampled_from(subgraphs), "subgraph")
        if data.draw(st.booleans(), "operand?"):
            operand = data.draw(st.sampled_from(subgraph.operands), "operand")
            field = data.draw(st.sampled_from(sorted(OPERAND_FIELDS)), "field")
            setattr(operand, field, data.draw(OPERAND_FIELDS[field], field))
        else:
            operation = data.draw(st.sampled_from(subgraph.operations), "operation")
            field = data.draw(st.sampled_from(["type", "inputs", "outputs"]), "field")
            if field == "type":
                operation.type = data.draw(INTS, "type")
            else:
                indexes = getattr(operation, field)
                if indexes and data.draw(st.booleans(), "drop one?"):
                    indexes.pop()
                else:
                    indexes.append(data.draw(INTS, "index"))


# The memo's setting holds for every example alike.
@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.data())
def test_corrupted_models_fail_only_with_validation_error(data):
    case = ALL_MODELS[data.draw(st.sampled_from(sorted(ALL_MODELS)), "model")]()
    corrupt(data, case.model)
    try:
        validate_model(case.model)
    except ValidationError:
        return
    # Accepted: every constant must be readable as the operation modules read them.
    for subgraph in [case.model.main, *case.model.referenced]:
        subgraph_infos(case.model, subgraph)
    main = case.model.main
    if case.name != "extension" and all(
            0 not in main.operands[i].dimensions for i in main.outputIndexes):
        try:   # a sample request sized from the (corrupted) model: valid or not, no crash
            validate_request(case.request(), case.model)
        except ValidationError:
            pass
