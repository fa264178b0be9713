"""The driver's memo: the verdicts of validation and the analyses of models, remembered by
content and by the limits in force, where the HAL surface asks for them.

Validation (check_model, check_request) and compilation are pure functions of their
arguments and of the limits in force (driver/limits.py), and a client often hands the
driver the same content several times in a row: getSupportedOperations_1_3 then
prepareModel_1_3 of one model, one request on several paths, a fuzz harness validating a
case before the driver does. ``validate_model`` and ``validate_request`` (driver.validation's,
which the HAL surface, the executor and the harness call) and the device's analysis of a
model (``remembered``) look the content up in MEMO first; a remembered failure is raised
again as a new error of the same message. A key holds the limits in force, so a changed
limit is a new key; a changed rule is in no key: turn the memo off around it. Parts of
models found valid are remembered too (VALID_PARTS, ``check_by_parts``): fuzz inputs, and a
client's successive models, share most of their operands and subgraphs.

``ENABLED`` (False when the environment sets NNHAL_NO_MEMO) turns it all off: every call
validates and compiles anew. ``PARTS_ENABLED`` (False when it sets NNHAL_NO_PART_MEMO)
turns off the memo of parts alone. Both are read at each call.
"""
from __future__ import annotations

import os
from typing import Callable, Hashable, Optional, TypeVar

from .. import limits
from ..fingerprint import MISSING, ContentMemo, model_fingerprint, request_key, structure_key
from ..hal.structs import Model, Request, Subgraph
from ..operands import ModelInfos
from .graph import check_io_indexes, check_not_empty
from .model import (check_model, check_model_fields, check_no_reference_cycles,
                    check_signatures, check_structure, labelled_subgraphs)
from .operand import ModelStorage, check_location_bounds, check_operand
from .request import check_request

#: Set (to anything): the driver remembers nothing by content.
NO_MEMO_ENV = "NNHAL_NO_MEMO"
#: Set (to anything): the driver remembers whole models and requests, not parts of models.
NO_PART_MEMO_ENV = "NNHAL_NO_PART_MEMO"
ENABLED = not os.environ.get(NO_MEMO_ENV)
PARTS_ENABLED = not os.environ.get(NO_PART_MEMO_ENV)

#: What the driver derived from the most recent contents, by ``(content key, what)``: a
#: model's verdict with the OperandInfo views its validation made, its compiled
#: ModelAnalysis (driver/device.py), a request's verdict.
MEMO: ContentMemo = ContentMemo(64)
#: Parts of models found valid, by content and the limits in force: operands (their key
#: and the extension prefixes), the operand lists of subgraphs (their keys and the model's
#: storage) and subgraph structures (structure_key and the extension prefixes). Failures
#: are not remembered (their messages name the part's position).
VALID_PARTS: ContentMemo[bool] = ContentMemo(16384)

V = TypeVar("V")


def model_key(model: object) -> Optional[tuple]:
    """What MEMO knows a model by: its fingerprint and the limits in force; None (nothing
    remembered) with the memo off, or for a model of no fingerprint."""
    fingerprint = model_fingerprint(model) if ENABLED else None
    return None if fingerprint is None else (fingerprint, limits.in_force())


def remembered(key: Optional[tuple], what: Hashable, compute: Callable[[], V]) -> V:
    """``compute()``, done once while ``(key, what)`` is remembered; every time for key None."""
    return compute() if key is None else MEMO.remember((key, what), compute)


def validate_model(model: Model, *, allow_unknown_size_while: bool = True) -> None:
    """check_model (driver/validation/model.py), remembered by content: raise
    ValidationError, naming the subgraph / operand / operation at fault, unless ``model`` is
    a valid HAL 1.3 model."""
    validate_keyed_model(model, model_key(model), allow_unknown_size_while)


def validate_keyed_model(model: Model, key: Optional[tuple],
                         allow_unknown_size_while: bool = True) -> ModelInfos:
    """validate_model for a caller that made the model's ``model_key`` already; returns the
    OperandInfo views validation made (for compile_model)."""
    return remembered(key, ("verdict", allow_unknown_size_while),
                      lambda: validate_anew(model, key, allow_unknown_size_while))


def validate_anew(model: Model, key: Optional[tuple], allow_unknown_size_while: bool) -> ModelInfos:
    """The model's verdict, not remembered: by parts where it has a key and they are on."""
    if key is None or not PARTS_ENABLED:
        return check_model(model, allow_unknown_size_while)
    return check_by_parts(model, key, allow_unknown_size_while)


def validate_request(request: Request, model: Model, *,
                     allow_unspecified_output: bool = True) -> None:
    """check_request (driver/validation/request.py), remembered by content: raise
    ValidationError, naming the argument or pool at fault, unless ``request`` is a valid
    request for ``model`` (which validate_model accepted)."""
    content = request_key(request, model) if ENABLED else None
    remembered(None if content is None else (content, limits.in_force()),
               ("request verdict", allow_unspecified_output),
               lambda: check_request(request, model, allow_unspecified_output))


def check_by_parts(model: Model, key: tuple, allow_unknown_size_while: bool) -> ModelInfos:
    """check_model, stage by stage, skipping the checks of the parts found valid before:
    a subgraph's structure (its lists, operations and data flow), and each of its operands
    but for the bounds of its location in this model's storage. A part found valid passes
    every check it skips, so the first check to fail, and its message, are check_model's."""
    fingerprint, in_force = key
    storage = check_model_fields(model)
    subgraphs = labelled_subgraphs(model)
    new_structures = []
    for (label, subgraph), part in zip(subgraphs, fingerprint.subgraph_parts):
        structure = (structure_key(part), storage.extension_prefixes, in_force)
        known = VALID_PARTS.get(structure) is not MISSING
        if not known:
            check_not_empty(subgraph, label)
        check_operands_by_parts(subgraph, storage, label, part[1], in_force)
        if not known:
            check_io_indexes(subgraph, label)
            new_structures.append((label, subgraph, structure))
    check_no_reference_cycles(model)
    for label, subgraph, structure in new_structures:
        check_structure(subgraph, storage, label)
        VALID_PARTS.put(structure, True)
    return check_signatures(model, subgraphs, allow_unknown_size_while)


def check_operands_by_parts(subgraph: Subgraph, storage: ModelStorage, label: str,
                            keys: tuple[tuple, ...], in_force: tuple) -> None:
    """check_operands, where a list of operands found valid in a model of the same storage
    passes at once, and an operand found valid needs only the bounds of its location."""
    operands = (keys, storage, in_force)
    if VALID_PARTS.get(operands) is not MISSING:
        return
    for index, (operand, key) in enumerate(zip(subgraph.operands, keys)):
        where, known = f"{label}, operand {index}", (key, storage.extension_prefixes, in_force)
        if VALID_PARTS.get(known) is MISSING:
            check_operand(operand, storage, where)
            VALID_PARTS.put(known, True)
        else:
            check_location_bounds(operand, storage, where)
    VALID_PARTS.put(operands, True)
