"""The routes of fuzz/routes.py (memory domains, compilation caching): how the codec writes
them, the client calls they make (hal_client/domains.py), that they hold on the bundled
driver and are skipped by one offering neither, and that the drivers of
broken_drivers.DOMAIN_RULES are found by fuzzing from the corpus."""
from __future__ import annotations

import os

import pytest

from driver import SampleDriver
from driver.hal import ErrorStatus
from fuzz import harness, relations, routes
from fuzz.case import PLACED_RELATIONS, ExecutionChoices, FuzzCase, Relation
from fuzz.codec import decode, encode
from fuzz.oracles import BuffersDifferViolation
from fuzz.drivers import make_device
from hal_client import contract, domains
from hal_client.contract import MalformedResultViolation
from tests.fuzz import broken_drivers
from tests.fuzz.test_broken_drivers import CORPUS, MODULE, fuzz_from_corpus
from tests.fuzz.test_codec import assert_round_trip

#: (mutation seeds, most inputs per seed) of a fuzz run from the corpus (relations and
#: routes on, no reference) that finds each DOMAIN_RULES driver's bug (each seed does, the
#: first within 200 inputs); the walks depend on the corpus.
FUZZED = {"CopyToZeroes": ((3, 2), 3000), "FreedTokenKept": ((3, 2), 3000),
          "CacheUnchecked": ((4, 3), 3000), "SharedBetweenPreparations": ((1, 3), 3000),
          "BufferExtentUnchecked": ((4, 2), 3000), "BufferArgumentsRefused": ((3, 2), 3000)}


# --- the codec ---------------------------------------------------------------------------------

@pytest.mark.parametrize("relation", list(routes.ROUTES), ids=lambda r: r.name)
def test_route_choices_round_trip(relation):
    corruption = 123_456 if relation in PLACED_RELATIONS else 0
    assert_round_trip(FuzzCase(choices=ExecutionChoices(relation=relation, corruption=corruption)))


def test_a_relation_varint_past_the_last_reads_as_the_last_and_takes_no_corruption():
    """The last member takes no corruption varint: an old input naming a relation past the
    end is no longer than it was."""
    last = list(Relation)[-1]
    assert last not in PLACED_RELATIONS
    data = encode(FuzzCase())
    related = bytes([data[0], data[1] | 0x80, data[2], 99]) + data[3:]
    case = decode(related)
    assert case.choices.relation == last and case.choices.corruption == 0
    assert len(encode(case)) == len(related)


def test_every_route_is_a_relation_with_its_own_violation():
    assert set(routes.ROUTES) == set(list(Relation)[1:]) - set(relations.RULES)
    assert {r.Violation.rule for r in routes.ROUTES.values()} == {
        "buffers-differ", "invalid-token-accepted", "invalid-request-accepted", "cache-differs",
        "corrupted-cache-accepted", "exception-from-hal"}


# --- the client's calls -------------------------------------------------------------------------

def test_allocate_gives_a_buffer_and_a_positive_uint32_token_exactly_on_success():
    contract.check_allocation(ErrorStatus.NONE, object(), 1)
    contract.check_allocation(ErrorStatus.GENERAL_FAILURE, None, 0)
    for status, buffer, token in ((ErrorStatus.NONE, None, 1), (ErrorStatus.NONE, object(), 0),
                                  (ErrorStatus.NONE, object(), 2 ** 32), (ErrorStatus.NONE, object(), True),
                                  (ErrorStatus.GENERAL_FAILURE, object(), 3)):
        with pytest.raises(MalformedResultViolation, match="IDevice.allocate"):
            contract.check_allocation(status, buffer, token)


def test_cache_file_counts_are_at_most_the_hal_limit():
    contract.check_cache_file_counts(ErrorStatus.NONE, 0, 32)
    contract.check_cache_file_counts(ErrorStatus.GENERAL_FAILURE, -1, 99)
    for counts in ((33, 0), (0, -1), (1.0, 1)):
        with pytest.raises(MalformedResultViolation, match="getNumberOfCacheFilesNeeded"):
            contract.check_cache_file_counts(ErrorStatus.NONE, *counts)


def test_cache_files_read_back_what_was_written():
    with domains.CacheFiles(1, 2) as files:
        assert (len(files.model), len(files.data)) == (1, 2)
        files.write([b"model", b"", b"data"])
        assert files.contents() == [b"model", b"", b"data"]
        files.write([b"m", b"dd", b""])
        assert files.contents() == [b"m", b"dd", b""]


# --- on drivers ---------------------------------------------------------------------------------

def run_routes(device, relation: Relation) -> harness.HarnessStats:
    """Every fifth corpus input with ``relation``, on ``device``: the statistics it added."""
    before = harness.STATS
    harness.STATS = harness.HarnessStats()
    try:
        for path in sorted(CORPUS.iterdir())[::5]:
            case = decode(path.read_bytes())
            case.choices.relation = relation
            case.choices.corruption = 181     # a byte of the data cache's payload
            harness.run_case(case, device, harness.Oracles(None, True))
        return harness.STATS
    finally:
        harness.STATS = before


#: Routes that apply only to some cases: a forged cache rewrites a string the model names
#: (a pool's or an extension's name), and most models name none; a client misuses its
#: input pools (shrinks them, or hands them over as cache files) only where the request
#: has inputs with values.
FOR_SOME_MODELS = {Relation.CACHE_FORGED, Relation.POOL_SHRUNK, Relation.POOL_AS_CACHE}


@pytest.mark.parametrize("relation", list(routes.ROUTES), ids=lambda r: r.name)
def test_every_route_holds_on_the_corpus(relation):
    """On the bundled driver: no violation, and the route runs for most inputs that ran
    (for some, where it applies only to some models)."""
    stats = run_routes(SampleDriver(), relation)
    routed = stats.routed_cache if routes.ROUTES[relation].uses_cache else stats.routed_buffers
    if relation in FOR_SOME_MODELS:
        assert routed > 0
    else:
        assert routed > 0.9 * stats.executed_ok and stats.routes_skipped < 0.1 * stats.executed_ok


@pytest.mark.parametrize("relation", [Relation.THROUGH_BUFFERS, Relation.FROM_CACHE],
                         ids=lambda r: r.name)
def test_a_driver_without_memory_domains_or_caching_is_skipped_not_judged(relation):
    stats = run_routes(make_device(f"{MODULE}:NoDomainsNoCache"), relation)
    assert stats.routed_buffers == stats.routed_cache == 0
    assert stats.routes_skipped == stats.executed_ok > 0


class _UnreadableBuffer(broken_drivers._Delegating):
    def copyTo(self, dst) -> ErrorStatus:
        return ErrorStatus.GENERAL_FAILURE


class OutputsNeverStored(broken_drivers.DeviceWrapper):
    """Executions into its buffers succeed, but a buffer an execution wrote cannot be read."""

    def allocate(self, *arguments):
        status, buffer, token = super().allocate(*arguments)
        return status, None if buffer is None else _UnreadableBuffer(buffer), token


def test_an_output_buffer_that_cannot_be_read_after_its_execution_is_a_difference():
    with pytest.raises(BuffersDifferViolation, match="copyTo of output 0 failed after the execution"):
        run_routes(OutputsNeverStored(), Relation.THROUGH_BUFFERS)


@pytest.mark.parametrize("name", sorted(broken_drivers.DOMAIN_RULES))
@pytest.mark.usefixtures("generous_hang_margin")
def test_fuzzing_from_the_corpus_finds_the_domain_bug(name):
    """Found with the rule meant to catch it; the input passes on the bundled driver."""
    device = make_device(f"{MODULE}:{name}")
    data, violation = fuzz_from_corpus(device, *FUZZED[name], harness.Oracles(None, True))
    assert type(violation) is broken_drivers.DOMAIN_RULES[name], violation
    harness.run_one(data, SampleDriver(), harness.Oracles(None, True))


# --- forged cache files and misused pools -----------------------------------------------------------

def test_forge_rewrites_a_string_with_its_length_prefix():
    payload = b"head" + (6).to_bytes(8, "little") + b"ashmem" + b"tail"
    nul, empty, long = (routes.forge(payload, [b"ashmem"], place) for place in range(3))
    assert nul == b"head" + (6).to_bytes(8, "little") + b"ash\0em" + b"tail"
    assert empty == b"head" + bytes(8) + b"tail"
    assert long[4:12] == (300).to_bytes(8, "little") and len(long) == len(payload) + 294
    assert long.endswith(b"tail") and b"\0" not in long[12:-4]
    assert routes.forge(payload, [b"mmap_fd"], 0) == payload


def test_the_bundled_drivers_sealer_gets_a_forged_payload_past_the_mac():
    """A forged payload sealed with the device's sealer is read back whole (the MAC and
    header pass), where the same payload without it is refused."""
    from driver import cache
    token = routes.CACHE_TOKEN

    def read_back(content: bytes) -> bytes:
        fd = os.memfd_create("cache")
        try:
            os.write(fd, content)
            return bytes(cache._open(cache.CacheKind.DATA, fd, token, "v"))
        finally:
            os.close(fd)

    sealed = cache.seal(cache.CacheKind.DATA, b"payload", token, "v")
    resealed = SampleDriver.cache_payload_sealer(sealed, token, lambda p: p + b" forged")
    assert read_back(resealed) == b"payload forged"
    unsealed = sealed[:-32 - 7] + b"payload forged" + sealed[-32:]
    with pytest.raises(cache.CacheError):
        read_back(unsealed)


def test_the_forged_route_names_the_models_strings():
    case = decode((CORPUS / sorted(p.name for p in CORPUS.iterdir())[0]).read_bytes())
    names = {pool.name.encode() for pool in case.model.pools}
    assert set(routes.model_strings(case)) == names - {b""}


def test_misused_pools_hold_only_inputs_past_a_cache_files_length():
    request = next(c.request for c in map(decode, (p.read_bytes() for p in sorted(CORPUS.iterdir())))
                   if c.request.inputs and c.request.pools)
    run = routes.RouteRun(None, None, FuzzCase(request=request), None, request, None)
    moved, memories = routes._inputs_apart(run)
    assert all(a.location.offset == routes.MISUSED_POOL_OFFSET for a in moved.inputs
               if not a.hasNoValue)
    outputs = {id(moved.pools[a.location.poolIndex].hidlMemory) for a in moved.outputs}
    assert memories and not outputs & set(map(id, memories))
