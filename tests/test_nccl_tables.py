"""dpcost's copy of NCCL's tuning tables equals the provenance-stamped transcription in tests/reference/nccl/."""

from __future__ import annotations

import json

import pytest
from conftest import REFERENCE

from dpcost.engine import nccl_tables as nccl

TRANSCRIPTION = json.loads((REFERENCE / "nccl" / "tuning-tables.json").read_text())
TABLES = TRANSCRIPTION["tables"]


def _same(a: object, b: object) -> bool:
    return json.dumps(a) == json.dumps(b)


def test_version_and_source_match() -> None:
    assert TRANSCRIPTION["source"] == nccl.NCCL_SOURCE
    assert TRANSCRIPTION["version"].startswith(nccl.NCCL_VERSION)


def test_index_orders_match() -> None:
    enums = TRANSCRIPTION["enums"]
    assert [a.lower() for a in enums["algorithm_order"]] == list(nccl.ALGORITHM_ORDER)
    assert [p.lower() for p in enums["protocol_order"]] == list(nccl.PROTOCOL_ORDER)
    assert [h.lower() for h in enums["hw_link_order"]] == list(nccl.LINK_ORDER)
    assert [c.lower() for c in enums["compcap_index_order"]] == list(nccl.ARCH_ORDER)


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (nccl.NVLS_EFFICIENCY, TABLES["nvlsEfficiency"]["values"]),
        (nccl.BASE_LAT, TABLES["baseLat"]["values"]),
        (nccl.HW_LAT, [TABLES["hwLat"][link]["values"] for link in ("NVLINK", "PCI", "NET")]),
        (nccl.LL_MAX_BWS, TABLES["llMaxBws"]["values"]),
        (nccl.PER_CH_MAX_RING_LL128_BWS, TABLES["perChMaxRingLL128Bws"]["values"]),
        (nccl.PER_CH_MAX_TREE_LL128_BWS, TABLES["perChMaxTreeLL128Bws"]["values"]),
        (nccl.PER_CH_MAX_TREE_BWS, TABLES["perChMaxTreeBws"]["values"]),
        (nccl.PER_CH_MAX_NVLS_TREE_BWS, TABLES["perChMaxNVLSTreeBws"]["values"]),
        (nccl.TREE_CORRECTION_FACTOR, TABLES["treeCorrectionFactor"]["values"]),
        (nccl.SPEED_ARRAY_INTER, TABLES["speedArrayInter"]["values"]),
    ],
)
def test_table_equals_the_transcription(ours: tuple[object, ...], theirs: list[object]) -> None:
    as_lists = json.loads(json.dumps(ours))
    assert len(as_lists) == len(theirs)
    for a, b in zip(as_lists, theirs, strict=True):
        assert (
            a == pytest.approx(b, abs=0)
            if isinstance(a, float | int)
            else _same([float(x) for x in _flat(a)], [float(x) for x in _flat(b)])
        )


def _flat(x: object) -> list[object]:
    return [y for item in x for y in _flat(item)] if isinstance(x, list | tuple) else [x]


def test_inline_constants_match() -> None:
    inline = TABLES["inline_constants"]["values"]
    assert inline["ring_LL_busBw_factor"]["value"] == nccl.RING_LL
    assert inline["ring_LL128_busBw_factor"]["value"] == nccl.RING_LL128
    assert inline["tree_allreduce_busBw_factor"]["value"] == nccl.TREE_ALLREDUCE
    assert inline["pat_busBw_factor"]["value"] == nccl.PAT
    assert inline["ring_simple_multinode_allreduce_plateau_latency_multiplier"]["otherwise"] == nccl.RING_PLATEAU
    assert inline["pat_log_latency_divisor"]["value"] == nccl.PAT_LOG_DIVISOR
    assert inline["pat_linear_latency_us_per_rank"]["value"] == nccl.PAT_PER_RANK_US
    assert nccl.NET_OVERHEAD_US["intel"] == inline["netOverhead_us"]["intel_x86"]
    assert nccl.NET_OVERHEAD_US["amd"] == inline["netOverhead_us"]["amd_x86"]
    assert inline["netOverhead_simple_multiplier"]["value"] == nccl.NET_OVERHEAD_SIMPLE
