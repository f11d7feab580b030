"""Collective times: each algorithm's closed form, and the properties any sane model must keep."""

from __future__ import annotations

import itertools
import math

import pytest

from dpcost.catalog import list_topologies, load_topology
from dpcost.engine.collectives import (
    BASE_LATENCY,
    LL_MAX_BUSBW,
    OPS,
    TREE_BANDWIDTH,
    algorithms_for,
    bus_factor,
    collective,
    collective_time,
)
from dpcost.specs import TopologySpec

GIB = 2**30
US = 1e-6


def test_ring_all_reduce_one_node_closed_form(h100: TopologySpec) -> None:
    """2(N-1) steps + 2(N-1)/N x S / B, B = 450 GB/s x 0.82 (Patarasuk & Yuan 2009; NCCL's latency terms)."""
    n, s = 8, float(GIB)
    nv = h100.tiers[0]
    expected = (
        h100.call_overhead
        + BASE_LATENCY["ring"]["simple"]
        + 2 * (n - 1) * nv.latency.simple
        + 2 * (n - 1) / n * s / (450e9 * 0.82)
    )
    got = collective_time(h100, "all_reduce", n, s, "ring")
    assert got.protocol == "simple"
    assert got.seconds == pytest.approx(expected, rel=1e-12)
    assert got.busbw == pytest.approx(got.algbw * 2 * 7 / 8)


def test_ring_two_nodes_closed_form(h100: TopologySpec) -> None:
    """16 ranks on 2 nodes: 14 of the 16 hops on NVLink, 2 on the NICs, 8 rails; NCCL's intra/inter steps."""
    n, s = 16, 8.0 * GIB
    nv, ib = h100.tiers[0], h100.tiers[1]
    v = 2 * (n - 1) / n * s
    bandwidth = max(14 / 16 * v / nv.effective_bandwidth, 2 / 16 * v / ib.effective_bandwidth)
    latency = h100.call_overhead + BASE_LATENCY["ring"]["simple"] + 28 * nv.latency.simple + 2 * ib.latency.simple
    got = collective_time(h100, "all_reduce", n, s, "ring")
    assert got.seconds == pytest.approx(latency + bandwidth, rel=1e-12)
    # the NICs are the bottleneck: bus bandwidth = 8 rails x 47 GB/s
    assert got.busbw == pytest.approx(8 * ib.effective_bandwidth, rel=0.01)


def test_reduce_scatter_all_gather_closed_form(h100: TopologySpec) -> None:
    n, s = 8, float(GIB)
    nv = h100.tiers[0]
    for op in ("reduce_scatter", "all_gather"):
        got = collective_time(h100, op, n, s, "ring")
        expected = (
            h100.call_overhead
            + BASE_LATENCY["ring"]["simple"]
            + (n - 1) * nv.latency.simple
            + (n - 1) / n * s / nv.effective_bandwidth
        )
        assert got.seconds == pytest.approx(expected, rel=1e-12)


def test_nvls_closed_form(h100: TopologySpec) -> None:
    """NVLink SHARP: each GPU sends and receives (1 + 1/N) x S through the switch."""
    n, s = 8, float(GIB)
    nv = h100.tiers[0]
    assert nv.in_network_reduction is not None
    got = collective_time(h100, "all_reduce", n, s, "nvls")
    expected = h100.call_overhead + nv.in_network_reduction.latency + (1 + 1 / n) * s / (450e9 * 0.69)
    assert got.seconds == pytest.approx(expected, rel=1e-12)
    # about the 480 GB/s busbw nccl-tests' maintainers measure with NVLS on 8 x H100
    assert got.busbw == pytest.approx(480e9, rel=0.03)


def test_tree_closed_form(h100: TopologySpec) -> None:
    """Chain in the node (2S per GPU) pipelined with a double binary tree over 4 nodes on 8 rails."""
    n, s = 32, 4.0 * GIB
    nv, ib = h100.tiers[0], h100.tiers[1]
    got = collective_time(h100, "all_reduce", n, s, "tree")
    intra = 2 * s / nv.effective_bandwidth
    inter = 2 * 3 / 4 * s / 8 / ib.effective_bandwidth
    latency = h100.call_overhead + BASE_LATENCY["tree"]["simple"] + 2 * (7 * nv.latency.simple + 2 * ib.latency.simple)
    assert got.protocol == "simple"
    assert got.seconds == pytest.approx(latency + max(intra, inter) / TREE_BANDWIDTH, rel=1e-12)


def test_one_tier_hierarchical_equals_ring(h100: TopologySpec) -> None:
    for op in ("all_reduce", "reduce_scatter", "all_gather"):
        for size in (1e3, 1e6, 1e9):
            assert (
                collective_time(h100, op, 8, size, "hierarchical").seconds
                == collective_time(h100, op, 8, size, "ring").seconds
            )


def test_hierarchical_is_its_phases(h100: TopologySpec) -> None:
    """RS in the node + ring all-reduce of S/8 across 64 nodes (one GPU per node per rail) + AG in the node."""
    s = float(GIB)
    got = collective_time(h100, "all_reduce", 512, s, "hierarchical")
    rs = collective_time(h100, "reduce_scatter", 8, s, "ring").seconds
    ag = collective_time(h100, "all_gather", 8, s, "ring").seconds
    assert got.calls >= 3
    assert got.seconds > rs + ag
    inter = got.seconds - rs - ag
    ib = h100.tiers[1]
    # 2(D-1)/D x S/8 over one NIC per GPU, at least
    assert inter > 2 * 63 / 64 * s / 8 / ib.effective_bandwidth


def test_reduce_scatter_plus_all_gather_is_all_reduce_volume(h100: TopologySpec) -> None:
    for n in (8, 16, 512, 4096):
        ar = collective_time(h100, "all_reduce", n, GIB, "ring")
        rs = collective_time(h100, "reduce_scatter", n, GIB, "ring")
        ag = collective_time(h100, "all_gather", n, GIB, "ring")
        assert rs.bytes_sent_per_gpu + ag.bytes_sent_per_gpu == pytest.approx(ar.bytes_sent_per_gpu, rel=1e-12)
        assert ar.bytes_sent_per_gpu == pytest.approx(2 * (n - 1) / n * GIB, rel=1e-12)


SIZES = [8 * 4**i for i in range(17)]  # 8 B .. 32 GiB


@pytest.mark.parametrize("topo", list_topologies(), ids=lambda t: t.name)
def test_time_grows_with_size_for_every_algorithm(topo: TopologySpec) -> None:
    for n in (8, 64, 512):
        if (topo.max_gpus and n > topo.max_gpus) or (n > topo.domain_size and n % topo.domain_size):
            continue
        for op in OPS:
            for alg in algorithms_for(topo, op, n):
                times = [collective_time(topo, op, n, s, alg).seconds for s in SIZES]
                assert all(b >= a for a, b in itertools.pairwise(times)), (topo.name, op, alg, n)
            best = [collective(topo, op, n, s).best.seconds for s in SIZES]
            assert all(b >= a for a, b in itertools.pairwise(best)), (topo.name, op, n)


@pytest.mark.parametrize("topo", list_topologies(), ids=lambda t: t.name)
def test_never_below_the_bandwidth_bound(topo: TopologySpec) -> None:
    """Whatever the algorithm, each NVLink domain must move (D-1)/D of the data out through its rails at line
    rate (and, on one domain, each GPU (N-1)/N of it through NVLink): no prediction may beat that."""
    s = 4.0 * GIB
    for n in (8, 72, 144, 512):
        if (topo.max_gpus and n > topo.max_gpus) or (n > topo.domain_size and n % topo.domain_size):
            continue
        g = min(n, topo.domain_size)
        d = math.ceil(n / g)
        bound = (d - 1) / d * s / (g * topo.tiers[1].bandwidth) if d > 1 else (n - 1) / n * s / topo.tiers[0].bandwidth
        for op in ("all_reduce", "reduce_scatter", "all_gather"):
            for alg in algorithms_for(topo, op, n):
                assert collective_time(topo, op, n, s, alg).seconds >= bound, (topo.name, op, alg, n)


def test_small_messages_take_tens_of_microseconds(h100: TopologySpec) -> None:
    for n in (8, 16, 512):
        t = collective(h100, "all_reduce", n, 8).best.seconds
        assert 10 * US < t < 100 * US, n
    assert collective(h100, "all_reduce", 8, 8).best.protocol == "ll"


def test_ll_is_held_under_nccls_cap(h100: TopologySpec) -> None:
    """NCCL's llMaxBws: LL never beats 45 GB/s of bus bandwidth on 2 Hopper nodes."""
    got = collective_time(h100, "all_reduce", 16, 64 * 2**20, "ring")
    assert got.protocol != "ll"
    from dpcost.engine.collectives import _levels, _ring

    ll = _ring(h100, "all_reduce", 16, 64 * 2**20, _levels(h100, 16), "ll")
    assert ll.bandwidth_seconds >= bus_factor("all_reduce", 16) * 64 * 2**20 / LL_MAX_BUSBW["hopper"][1]


def test_the_fastest_algorithm_is_chosen(h100: TopologySpec) -> None:
    for n, s in ((16, 8), (16, GIB), (512, GIB), (8, GIB)):
        choice = collective(h100, "all_reduce", n, s)
        assert choice.best.seconds == min(c.seconds for c in choice.candidates)
    # one node, large: NVLS, as NCCL picks; across nodes, NVLSTree
    assert collective(h100, "all_reduce", 8, GIB).best.algorithm == "nvls"
    assert collective(h100, "all_reduce", 16, GIB).best.algorithm == "nvls_tree"


def test_forced_algorithm_and_availability(h100: TopologySpec) -> None:
    a100 = load_topology("dgx-a100")
    assert "nvls" not in algorithms_for(a100, "all_reduce", 8)
    assert algorithms_for(h100, "all_gather", 16) == ("ring", "hierarchical")
    with pytest.raises(ValueError, match="not available"):
        collective_time(a100, "all_reduce", 8, GIB, "nvls")
    forced = collective(h100, "all_reduce", 16, GIB, "ring")
    assert forced.best.algorithm == "ring"
    assert forced.best.seconds > min(c.seconds for c in forced.candidates)


def test_sharp_where_a_fabric_declares_it(h100: TopologySpec) -> None:
    import json

    doc = json.loads(h100.model_dump_json())
    for tier in doc["tiers"][1:]:
        tier["in_network_reduction"] = {"kind": "sharp", "efficiency": 0.9, "latency": 31e-6}
    sharp = TopologySpec.model_validate(doc)
    got = collective_time(sharp, "all_reduce", 512, GIB, "collnet")
    ib = sharp.tiers[1]
    # each rail sends its S/8 once: half the ring's 2(D-1)/D x S/8
    inter = next(t for t in got.tiers if t.tier == ib.name)
    assert inter.bytes_per_gpu == pytest.approx(GIB / 8)
    assert inter.seconds == pytest.approx(GIB / 8 / (50e9 * 0.9))


def test_a_single_rank_moves_nothing(h100: TopologySpec) -> None:
    c = collective(h100, "all_reduce", 1, GIB)
    assert c.best.seconds == 0 and c.best.algorithm == "none"
    assert bus_factor("all_reduce", 1) == 0
