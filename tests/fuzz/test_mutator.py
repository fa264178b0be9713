"""fuzz.mutator: mutations keep the encoding well formed, mostly keep valid cases valid, do
what they say, and the hand-written seeds run."""
from __future__ import annotations

import collections
import dataclasses
import random
import sys
from typing import Callable

import numpy as np
import pytest

from driver import SampleDriver
from driver.errors import ValidationError
from driver.hal import ErrorStatus, OperandLifeTime as L, OperandType as T, OperationType as Op
from driver.hal.enums import LoopTimeoutDurationNs
from driver.limits import MEMORY_BUDGET_BYTES
from driver.operations.registry import definitions
from driver.validation import validate_model, validate_request
from fuzz import codec, harness, mutator
from fuzz.case import ExecutionPath, FuzzCase
from fuzz.drivers import MEMORY_BUDGET_BYTES as FUZZ_BUDGET_BYTES, make_device
from fuzz.oracles import OracleViolation
from fuzz.seed_models import CONTROL_FLOW_SEEDS, operation_seeds, seed_specs
from hal_client.paths import DeadlineEdge

SPECS = seed_specs()
SEED_BYTES = {name: codec.serialize(spec) for name, spec in SPECS.items()}


def is_valid(case: FuzzCase) -> bool:
    try:
        validate_model(case.model)
        validate_request(case.request, case.model)
    except ValidationError:
        return False
    return True


def fresh(name: str) -> codec.CaseSpec:
    return codec.parse(SEED_BYTES[name])


@pytest.fixture(scope="module")
def fuzzed_device():
    """The bundled driver as the fuzz harness makes it: under the harness's budget."""
    return make_device("driver:SampleDriver")


# --- the seeds ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(SPECS))
def test_seed_is_valid_and_runs(device, name):
    case = codec.lower(SPECS[name])
    assert is_valid(case)
    outcome = harness.run_case(case, device)
    assert outcome.prepare_status == ErrorStatus.NONE
    if name == "while_infinite":
        assert outcome.first.status == ErrorStatus.MISSED_DEADLINE_TRANSIENT
        return
    if outcome.first.status == ErrorStatus.MISSED_DEADLINE_TRANSIENT:
        # Its loops outlasted the seed's timeout, which only a machine slower or busier than
        # the timeout allows for does: given the longest timeout, they must end.
        case.choices = dataclasses.replace(case.choices,
                                           loopTimeoutDuration_ns=LoopTimeoutDurationNs.MAXIMUM)
        outcome = harness.run_case(case, device)
    assert outcome.first.status == ErrorStatus.NONE


def test_every_registered_operation_has_generated_seeds():
    """operation_seeds() makes a model of every signature variant of every operation the
    driver registers (each checked above: it validates, prepares and executes)."""
    variants = collections.Counter((seed.operation, len(seed.args))
                                   for seed in operation_seeds().values())
    for definition in definitions():
        for signature in definition.signatures:
            assert variants[definition.type, signature.counts()[0][0]], definition.type.name


def test_every_declared_example_makes_a_seed_and_wrapped_seeds():
    """Each Example an operation declares is valid: it becomes a seed (run above), and the
    first is also run inside IF branches and a WHILE body."""
    seeds = operation_seeds()
    for definition in definitions():
        for k in range(len(definition.examples)):
            name = f"{definition.type.name.lower()}_example_{k}"
            assert name in seeds, f"{definition.type.name}: example {k} is not valid"
            if k == 0:
                assert {f"if_{name}", f"while_{name}"} <= CONTROL_FLOW_SEEDS.keys()


def test_growing_loop_output_has_the_grown_shape(device):
    outcome = harness.run_case(codec.lower(SPECS["while_growing_concatenation"]), device)
    assert [list(shape.dimensions) for shape in outcome.first.shapes] == [[1], [1, 4]]
    grown = np.frombuffer(outcome.first.outputs[1][:16], "<f4")
    assert grown.tolist() == [1.0, 2.0, 2.0, 2.0]


# --- the entry points ---------------------------------------------------------------------------

def test_mutate_is_deterministic_bounded_and_decodable():
    rng = random.Random(3)
    changed = 0
    for i in range(300):
        data = rng.choice(list(SEED_BYTES.values()))
        out = mutator.mutate(data, 4096, i)
        assert out == mutator.mutate(data, 4096, i)
        assert len(out) <= 4096
        case = codec.decode(out)
        assert codec.decode(codec.encode(case)) == case
        changed += out != data
    assert changed > 270


def stacked_mutations(seed: int, steps: int,
                      before_each: Callable[[], None] = lambda: None) -> list[bytes]:
    """Outputs of mutate and crossover, each applied to the previous output (as libFuzzer
    does), from the seeds; ``before_each`` is called before each of them."""
    rng = random.Random(seed)
    names = sorted(SEED_BYTES)
    outputs = []
    for _ in range(steps):
        data = SEED_BYTES[rng.choice(names)]
        for _ in range(4):
            before_each()
            if rng.random() < 0.5:
                data = mutator.mutate(data, 4096, rng.randrange(1 << 30))
            else:
                data = mutator.crossover(data, SEED_BYTES[rng.choice(names)], 4096,
                                         rng.randrange(1 << 30))
            outputs.append(data)
    return outputs


def clear_caches() -> None:
    mutator.PARSED_INPUTS.clear()
    mutator.RECENT_OUTPUTS.clear()


def test_parsed_inputs_do_not_change_what_mutate_and_crossover_give():
    clear_caches()
    warm = stacked_mutations(21, 60)
    assert warm == stacked_mutations(21, 60, before_each=clear_caches)


def test_kept_specs_stay_as_their_bytes_parse():
    """Mutations work on copies that share most objects with the kept specs: none may
    change a kept spec (that would change later mutations of the same input)."""
    clear_caches()
    stacked_mutations(22, 80)
    entries = [*mutator.PARSED_INPUTS._entries.items(), *mutator.RECENT_OUTPUTS._entries.items()]
    assert len(entries) > 20
    for data, entry in entries:
        assert codec.serialize(entry.spec) == entry.data
        assert codec.parse(data) == entry.spec
        assert codec.encode_parts(codec.parse(data)).parts == entry.parts
    for data, entry in mutator.RECENT_OUTPUTS._entries.items():
        assert entry.data == data


@pytest.mark.parametrize("mutation", mutator.MUTATIONS, ids=lambda m: m.name)
def test_each_mutation_leaves_the_spec_it_copied_alone(mutation):
    rng = random.Random(12)
    for name in sorted(SPECS) * 2:
        encoded = codec.encode_parts(fresh(name))
        before = encoded.data
        origins: codec.Origins = {}
        spec = encoded.copy(origins)
        if mutation.apply(spec, rng):
            mutator.request.tidy_pools(spec)
            assert codec.encode_parts(spec, origins).data == codec.serialize(spec)
        assert codec.serialize(encoded.spec) == before == encoded.data


def test_the_spec_cache_drops_the_least_recently_used():
    cache = mutator.SpecCache(2)
    entries = {data: codec.encode_parts(codec.parse(data)) for data in (b"a", b"b", b"c")}
    cache.put(b"a", entries[b"a"])
    cache.put(b"b", entries[b"b"])
    assert cache.get(b"a") is entries[b"a"]
    cache.put(b"c", entries[b"c"])
    assert cache.get(b"b") is None and cache.get(b"a") is entries[b"a"]


def test_mutate_respects_a_small_max_size():
    data = SEED_BYTES["nested_if_in_while"]
    for seed in range(50):
        assert len(mutator.mutate(data, 40, seed)) <= 40


def test_outside_libfuzzer_the_builtin_byte_mutation_is_used(monkeypatch):
    monkeypatch.setattr(mutator.engine, "BYTE_MUTATE", None)
    monkeypatch.setattr(mutator.engine, "BYTE_MUTATION_SHARE", 1.0)
    out = mutator.mutate(SEED_BYTES["add_float32"], 100, 1)
    assert mutator.engine.BYTE_MUTATE is mutator.builtin_byte_mutate
    assert len(out) <= 100


def test_crossover_output_decodes():
    names = sorted(SEED_BYTES)
    for seed in range(100):
        a, b = random.Random(seed).sample(names, 2)
        out = mutator.crossover(SEED_BYTES[a], SEED_BYTES[b], 4096, seed)
        assert len(out) <= 4096
        codec.decode(out)


def test_grafted_subgraphs_keep_pointing_at_their_own_subgraphs():
    first, second = SEED_BYTES["if_true"], SEED_BYTES["nested_if_in_while"]
    grafted = [codec.parse(mutator.crossover(first, second, 1 << 16, seed)) for seed in range(40)]
    grafted = [s for s in grafted if len(s.model.referenced) > 2]
    assert grafted
    for spec in grafted:
        for sg in spec.model.subgraphs():
            for o in sg.operands:
                if o.lifetime == L.SUBGRAPH:
                    assert o.target < len(spec.model.referenced)


# --- every mutation ----------------------------------------------------------------------------

def test_each_mutation_is_registered_once_as_the_function_it_decorates():
    names = [m.name for m in mutator.MUTATIONS]
    assert len(names) == len(set(names))
    for m in mutator.MUTATIONS:
        assert m.weight > 0
        assert getattr(sys.modules[m.apply.__module__], m.name) is m.apply


def test_mutations_are_drawn_by_weight():
    rng = random.Random(13)
    draws = collections.Counter(mutator.registry.pick_mutation(rng).name for _ in range(50000))
    total = sum(m.weight for m in mutator.MUTATIONS)
    for m in mutator.MUTATIONS:
        assert abs(draws[m.name] / 50000 - m.weight / total) < 0.01, m.name


def test_every_breaker_is_registered_with_an_equal_share_and_drawn():
    breakers = [m for m in mutator.MUTATIONS if m.name in mutator.breaking.BREAKERS]
    assert {m.name for m in breakers} == mutator.breaking.BREAKERS
    assert len({m.weight for m in breakers}) == 1
    assert sum(m.weight for m in breakers) == pytest.approx(mutator.breaking.BREAKING_WEIGHT)
    rng = random.Random(17)
    drawn = {mutator.registry.pick_mutation(rng).name for _ in range(20000)}
    assert mutator.breaking.BREAKERS <= drawn


@pytest.mark.parametrize("mutation", mutator.MUTATIONS, ids=lambda m: m.name)
def test_each_mutation_applies_somewhere_and_stays_encodable(mutation):
    rng = random.Random(11)
    applied = 0
    for name in sorted(SPECS) * 3:
        spec = fresh(name)
        before = codec.serialize(spec)
        if not mutation.apply(spec, rng):
            continue
        applied += 1
        after = codec.serialize(spec)
        case = codec.decode(after)
        assert codec.decode(codec.encode(case)) == case
        if mutation.name not in ("swap_operation_inputs", "change_choice", "retarget_subgraph",
                                 "request_dimensions", "tweak_constant", "tweak_input",
                                 "reseed_value", "quantization", *mutator.breaking.BREAKERS):
            assert after != before, f"{mutation.name} applied to {name} but changed nothing"
    assert applied >= 5


def test_mutated_seeds_stay_mostly_valid():
    """The structural mutations exist to keep the fuzzer past validation."""
    rng = random.Random(5)
    results = collections.Counter()
    for _ in range(600):
        spec = fresh(rng.choice(sorted(SPECS)))
        mutator.mutate_spec(spec, rng)
        results[is_valid(codec.lower(spec))] += 1
    assert results[True] / 600 >= 0.6


def test_fuzzing_from_the_seeds_mostly_prepares_and_executes(device):
    """The targets of the mutator: from the seed corpus, >= 30 % of fuzzed inputs prepare
    and >= 15 % execute with status NONE, a good share of them running IF/WHILE."""
    rng = random.Random(8)
    names = sorted(SPECS)
    counts = collections.Counter()
    runs = 240
    for i in range(runs):
        data = mutator.mutate(SEED_BYTES[rng.choice(names)], 1 << 16, rng.randrange(1 << 30))
        try:
            outcome = harness.run_one(data, device)
        except OracleViolation:        # a finding, not this test's business
            counts["violation"] += 1
            continue
        if outcome.prepare_status == ErrorStatus.NONE:
            counts["prepared"] += 1
            if outcome.first.status == ErrorStatus.NONE:
                counts["executed"] += 1
                if harness.has_control_flow(codec.decode(data).model):
                    counts["control_flow"] += 1
    assert counts["prepared"] >= 0.3 * runs
    assert counts["executed"] >= 0.15 * runs
    assert counts["control_flow"] >= 0.05 * runs


# --- what individual mutations do ---------------------------------------------------------------

def test_tweak_input_changes_a_loop_count_by_a_little():
    rng = random.Random(0)
    seen = set()
    for _ in range(30):
        spec = fresh("while_counter_3")
        assert mutator.values.tweak_input(spec, rng)
        count_arg = spec.request.inputs[0]
        value = np.frombuffer(codec.value_bytes(T.TENSOR_INT32, [1], count_arg.value), "<i4")
        seen.add(int(value[0]))
    assert {2, 4} <= seen


def test_resize_dimension_keeps_an_elementwise_graph_valid():
    rng = random.Random(1)
    for _ in range(20):
        spec = fresh("add_float32")
        assert mutator.shapes.resize_dimension(spec, rng)
        case = codec.lower(spec)
        assert is_valid(case)
        assert case.model.main.operands[0].dimensions != [2, 3] or \
            case.model.main.operands[1].dimensions != [3]


def test_retype_all_converts_float32_to_float16_with_values():
    spec = fresh("if_true")
    mutator.operand_types.retype_all(spec, random.Random(0))     # the only family present
    case = codec.lower(spec)
    types = {o.type for sg in [case.model.main, *case.model.referenced] for o in sg.operands}
    assert T.TENSOR_FLOAT32 not in types and T.TENSOR_FLOAT16 in types
    assert is_valid(case)
    constant = next(o for o in case.model.referenced[0].operands if o.lifetime == L.CONSTANT_COPY
                    and o.type == T.TENSOR_FLOAT16)
    raw = case.model.operandValues[constant.location.offset:][:2]
    assert np.frombuffer(raw, "<f2")[0] == 10.0


def test_constant_to_input_and_back_keep_the_case_valid():
    rng = random.Random(2)
    spec = fresh("add_float16_const")
    assert mutator.lifetimes.constant_to_input(spec, rng)
    case = codec.lower(spec)
    assert is_valid(case) and len(case.request.inputs) == 2
    assert mutator.lifetimes.input_to_constant(spec, rng)
    assert is_valid(codec.lower(spec))


def test_append_unary_replaces_an_output_and_keeps_the_case_valid():
    rng = random.Random(4)
    for name in ("add_float32", "add_quant8_asymm", "add_int32", "logical_chain",
                 "nested_while_in_if"):
        spec = fresh(name)
        operations = sum(len(sg.operations) for sg in spec.model.subgraphs())
        assert mutator.graph.append_unary(spec, rng)
        assert sum(len(sg.operations) for sg in spec.model.subgraphs()) == operations + 1
        assert is_valid(codec.lower(spec)), name


def test_duplicate_operation_adds_outputs_to_the_request():
    spec = fresh("while_counter_3")
    assert mutator.graph.duplicate_operation(spec, random.Random(0))
    case = codec.lower(spec)
    assert len(case.request.outputs) == len(case.model.main.outputIndexes) == 6
    assert is_valid(case)


def test_change_choice_draws_mostly_short_loop_timeouts():
    # An endless loop costs its whole timeout (twice per input): short ones dominate.
    rng = random.Random(6)
    timeouts = [mutator.choices.loop_timeout_ns(rng) for _ in range(20000)]
    share = collections.Counter(
        "omitted" if t is None else "<1ms" if t < 1_000_000 else "1-2ms" if t <= 2_000_000
        else "3-20ms" if 3_000_000 <= t <= 20_000_000 else "other" for t in timeouts)
    assert 0.002 < share["omitted"] / 20000 < 0.01
    assert 0.62 < share["<1ms"] / 20000 < 0.68
    assert 0.27 < share["1-2ms"] / 20000 < 0.33
    assert 0.03 < share["3-20ms"] / 20000 < 0.06
    assert share["other"] == 0
    assert all(t % 1000 == 0 for t in timeouts if t is not None)    # whole microseconds
    deadlines = [mutator.choices.deadline_ns(rng) for _ in range(2000)]
    assert sum(d is None for d in deadlines) > 1600
    delays = [mutator.choices.random_choices(rng).wait_fence_delay_ns for _ in range(500)]
    assert max(delays) <= 5_000_000
    assert sum(d <= 1_000_000 for d in delays) > 420


def test_changed_choices_equal_the_parse_of_their_bytes():
    """The mutator keeps the specs of its outputs: a kept spec must read as its bytes do,
    or a later mutation of it would depend on whether it was kept (here: a corruption,
    which only a placed relation writes)."""
    rng = random.Random(3)
    for _ in range(300):
        spec = fresh("while_counter_3")
        for _ in range(4):
            rng.choice([mutator.choices.change_choice, mutator.choices.relate])(spec, rng)
        assert spec.choices == codec.parse(codec.serialize(spec)).choices


def test_slow_choices_rarely_pass_to_the_children_of_an_input():
    """A parent whose endless loop would run for the 2 s default (or whose fences signal
    late) is kept in a corpus for its coverage; most of its mutants must be fast again."""
    spec = fresh("while_counter_3")
    spec.choices.loopTimeoutDuration_ns = None
    spec.choices.wait_fences, spec.choices.wait_fence_delay_ns = 1, 5_000_000
    parent = codec.serialize(spec)
    children = [codec.decode(mutator.mutate(parent, 1 << 16, seed)).choices for seed in range(400)]
    structural = [c for c in children if c.wait_fences]    # byte mutations aside
    slow_loops = sum(c.loopTimeoutDuration_ns is None or c.loopTimeoutDuration_ns > 2_000_000
                     for c in children)
    assert slow_loops < 0.4 * len(children)   # byte mutations (15 %) keep them; else 10 %
    assert sum(c.wait_fence_delay_ns > 1_000_000 for c in structural) < 0.4 * len(structural)


def test_change_operation_type_stays_in_the_family():
    rng = random.Random(9)
    spec = fresh("add_float32")
    assert mutator.graph.change_operation_type(spec, rng)
    assert spec.model.main.operations[0].type in (Op.SUB, Op.MUL, Op.DIV)


def test_emptied_pools_are_dropped():
    spec = fresh("two_pools_and_omitted_dims")
    spec.request.outputs[0].target = 0        # pool 1 now holds nothing
    mutator.request.tidy_pools(spec)
    assert len(spec.request.pools) == 1
    assert is_valid(codec.lower(spec))


def test_break_signature_is_always_rejected():
    """One step outside an operation's signatures: validation must refuse every one."""
    rng = random.Random(11)
    applied = 0
    for _ in range(300):
        spec = fresh(rng.choice(sorted(SPECS)))
        if mutator.breaking.break_signature(spec, rng):
            applied += 1
            assert not is_valid(codec.lower(spec))
    assert applied > 150


def test_appended_operations_follow_the_signatures():
    """append_unary/append_binary draw from every registered operation taking the operand."""
    rng = random.Random(12)
    appended = collections.Counter()
    for _ in range(400):
        spec = fresh(rng.choice(sorted(SPECS)))
        if rng.choice((mutator.graph.append_unary, mutator.graph.append_binary))(spec, rng):
            appended[spec.model.main.operations[-1].type] += 1
    assert len(appended) >= 25


# --- the driver's limits ----------------------------------------------------------------------

LIMITS = mutator.limits


@pytest.mark.parametrize("piece, status", [
    (lambda: LIMITS.expanded(LIMITS.MAX_RANK - 1, declared=True), ErrorStatus.NONE),
    (lambda: LIMITS.expanded(LIMITS.MAX_RANK, declared=False), ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT),
    (lambda: LIMITS.gathered(LIMITS.NUMPY_MAX_DIMS + 1, 33), ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT),
    (lambda: LIMITS.grown_by_loop(LIMITS.MAX_RANK - 1), ErrorStatus.NONE),
    (lambda: LIMITS.grown_by_loop(LIMITS.NUMPY_MAX_DIMS), ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT),
], ids=["declared-32", "stated-33", "gathered-65", "loop-32", "loop-65"])
def test_ranks_at_and_past_the_limit_are_valid_and_refused_past_it(device, piece, status):
    """Valid cases, which the bundled driver runs up to its rank limit and refuses past it."""
    case = codec.lower(piece())
    assert is_valid(case)
    assert harness.run_case(case, device).first.status == status


def test_large_values_are_refused_over_the_budget_and_run_under_it(fuzzed_device):
    """Over the budget the harness gives the driver, not the driver's own."""
    small = LIMITS.tiled_chain(FUZZ_BUDGET_BYTES // 8, 4, (False, True))
    large = LIMITS.tiled_chain(LIMITS.MAX_VALUE_BYTES, 16, (True, False, True))
    for spec, status in ((small, ErrorStatus.OUTPUT_INSUFFICIENT_SIZE),    # 4-byte output buffers
                         (large, ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT)):
        case = codec.lower(spec)
        assert is_valid(case)
        assert harness.run_case(case, fuzzed_device).first.status == status
    assert fuzzed_device.memory_budget_bytes == FUZZ_BUDGET_BYTES < MEMORY_BUDGET_BYTES


def test_a_grafted_piece_keeps_the_case_and_adds_its_own():
    spec = fresh("while_counter_3")
    before = codec.lower(spec)
    assert LIMITS.graft(spec, LIMITS.grown_by_loop(3))
    case = codec.lower(spec)
    assert is_valid(case)
    main = case.model.main
    assert len(case.model.referenced) == len(before.model.referenced) + 2
    assert len(main.inputIndexes) == len(before.model.main.inputIndexes) + 1
    assert len(case.request.outputs) == len(before.request.outputs) + 1
    outcome = harness.run_case(case, SampleDriver())
    assert outcome.first.status == ErrorStatus.NONE
    assert outcome.first.shapes[-1].dimensions == [1] * 4


def test_output_shapes_past_the_driver_limits_are_no_shapes():
    """A FILL whose shape vector is longer than the rank limit: the driver's shape inference
    refuses it with RESOURCE_EXHAUSTED, which the mutator takes as "no shape" rather than
    letting it escape (an exception in the custom mutator aborts the fuzzer)."""
    from driver.operations.registry import OperandInfo
    shape = OperandInfo(0, T.TENSOR_INT32, (1 << 16,), 0.0, 0, L.SUBGRAPH_INPUT, None)
    value = OperandInfo(1, T.FLOAT32, (), 0.0, 0, L.CONSTANT_COPY, np.array([1.0], np.float32))
    output = OperandInfo(2, T.TENSOR_FLOAT32, (), 0.0, 0, L.SUBGRAPH_OUTPUT, None)
    assert mutator.operations.output_shapes(Op.FILL, [shape, value], [output]) is None


# --- the extremes ---------------------------------------------------------------------------------

EXTREMES = mutator.extremes


def applied(mutation, name: str, seed: int = 0) -> codec.CaseSpec:
    """``mutation`` applied to the seed ``name``; it round-trips through the encoding."""
    spec = fresh(name)
    assert mutation(spec, random.Random(seed))
    assert codec.parse(codec.serialize(spec)) == spec
    return spec


@pytest.mark.parametrize("seed", range(6))
def test_deadline_at_edge_sets_an_edge_of_the_clock(seed):
    spec = applied(EXTREMES.deadline_at_edge, "add_float32", seed)
    choices = codec.decode(codec.serialize(spec)).choices
    assert choices.deadline_ns == 0 and choices.deadline_edge != DeadlineEdge.NONE
    if choices.path == ExecutionPath.FENCED:
        assert choices.wait_fences > 0


@pytest.mark.parametrize("name", ["depthwise_conv_2d_example_0", "quantized_16bit_lstm_example_0",
                                  "quantized_lstm_example_0"])
def test_zero_sized_input_feeds_an_operation_a_slice_of_no_element(name):
    """A SLICE whose size has a 0 feeds the operation; the model stays valid."""
    spec = applied(EXTREMES.zero_sized_input, name)
    case = codec.lower(spec)
    main = case.model.main
    (k, slice_op), = [(k, op) for k, op in enumerate(main.operations) if op.type == Op.SLICE]
    size = np.frombuffer(codec.value_bytes(T.TENSOR_INT32, [len(main.operands[slice_op.inputs[0]].dimensions)],
                                           spec.model.main.operands[slice_op.inputs[2]].value), "<i4")
    assert 0 in size
    assert slice_op.outputs[0] in main.operations[k + 1].inputs
    assert validate_model(case.model) is None


@pytest.mark.parametrize("seed", range(8))
def test_huge_rank_states_or_declares_a_shape_far_past_the_limits(seed):
    before = len(SEED_BYTES["add_float32"])
    spec = applied(EXTREMES.huge_rank, "add_float32", seed)
    case = codec.decode(codec.serialize(spec))
    shapes = [o.dimensions for o in case.model.main.operands] + [
        a.dimensions for a in (*case.request.inputs, *case.request.outputs)]
    assert max(map(len, shapes)) in EXTREMES.HUGE_RANKS
    assert len(codec.serialize(spec)) < before + 16


def test_heavy_dimension_multiplies_a_dimension_under_a_short_deadline():
    grown = 0
    for seed in range(20):
        spec = fresh("depthwise_conv_2d_example_0")
        before = max(codec.storage_bytes(o.type, o.dimensions) for o in spec.model.main.operands)
        if not EXTREMES.heavy_dimension(spec, random.Random(seed)):
            continue
        assert codec.parse(codec.serialize(spec)) == spec
        assert spec.choices.deadline_ns == EXTREMES.SHORT_DEADLINE_NS
        after = max(codec.storage_bytes(o.type, o.dimensions) for o in spec.model.main.operands)
        grown += after >= 16 * before
    assert grown >= 10


def test_heavy_operation_grafts_a_depthwise_convolution_of_a_hundred_thousand_taps():
    spec = applied(EXTREMES.heavy_operation, "add_float32", 2)
    case = codec.lower(spec)
    assert is_valid(case)
    main = case.model.main
    (conv,) = [op for op in main.operations if op.type == Op.DEPTHWISE_CONV_2D]
    side = main.operands[conv.inputs[1]].dimensions[1]
    assert side in EXTREMES.WIDE_FILTER_SIDES and side ** 2 >= 160_000
    assert case.choices.deadline_ns == EXTREMES.SHORT_DEADLINE_NS


@pytest.mark.parametrize("mutation", ["deadline_at_edge", "zero_sized_input", "huge_rank",
                                      "heavy_dimension", "heavy_operation"])
def test_the_extremes_are_drawn_rarely(mutation):
    weights = {m.name: m.weight for m in mutator.MUTATIONS}
    assert weights[mutation] <= 3 and weights[mutation] / sum(weights.values()) < 0.03
