"""The CTS control-flow models (IF/WHILE) against validate_model: all valid, and under the
HAL 1.3 rule the only rejections are WHILE operands of unknown size (the CTS-only
unknown-dimension/rank models, and models whose main outputs have been made unknown).

Reads ../shared/conformance at run time; skipped when it is absent."""
from __future__ import annotations

from pathlib import Path

import pytest

from driver.errors import ValidationError
from driver.validation import validate_model

pytestmark = pytest.mark.usefixtures("memo_setting")

REPO_ROOT = Path(__file__).resolve().parents[2]
CTS = REPO_ROOT.parent / "shared" / "conformance" / "cts"
loader = pytest.importorskip("hal_client.conformance.loader")

if not CTS.is_dir():
    pytest.skip(f"no conformance models at {CTS}", allow_module_level=True)

FILES = sorted(path for version in ("V1_3", "V1_3_cts_only")
               for path in (CTS / version).glob("*.json.gz")
               if path.name.startswith(("if_", "while_")))


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
@pytest.mark.parametrize("zero_output_dims", [False, True], ids=["declared outputs", "unknown outputs"])
def test_control_flow_models(path, zero_output_dims):
    unexpected = []
    for example in loader.load_examples(path):
        model = loader.build_model(example, zero_output_dims=zero_output_dims)
        validate_model(model)
        try:
            validate_model(model, allow_unknown_size_while=False)
        except ValidationError as error:
            if "has no known size, which WHILE requires" not in str(error):
                unexpected.append(f"{example.name}: {error}")
    assert not unexpected, "\n".join(unexpected)


def test_control_flow_models_found():
    assert len(FILES) >= 9
