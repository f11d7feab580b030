"""Collective times: each algorithm's closed form, and the properties any sane model must keep."""

from __future__ import annotations

import itertools
import math

import pytest

from dpcost.catalog import list_topologies, load_topology
from dpcost.engine.collectives import (
    BASE_LATENCY,
    LL_MAX_BUSBW_NODES,
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
    """Chain in the node (2S per GPU) pipelined with a double binary tree over 4 nodes on 8 rails, with NCCL's
    tree step latencies: 2 x ((ppn - 1) x intra + log2(nodes) x inter)."""
    n, s = 32, 4.0 * GIB
    nv, ib = h100.tiers[0], h100.tiers[1]
    got = collective_time(h100, "all_reduce", n, s, "tree")
    intra = 2 * s / nv.effective_bandwidth
    inter = 2 * 3 / 4 * s / 8 / ib.effective_bandwidth
    assert nv.tree_latency is not None and ib.tree_latency is not None
    latency = h100.call_overhead + BASE_LATENCY["tree"]["simple"] + 2 * (7 * 4.0e-6 + 2 * 14e-6)
    assert got.protocol == "simple"
    assert got.seconds == pytest.approx(latency + max(intra, inter) / TREE_BANDWIDTH, rel=1e-12)


def test_tree_and_nvls_tree_send_the_whole_inter_node_volume_through_the_nics() -> None:
    """Across scalable units every tree edge still passes the NIC: 2(D-1)/D x S/8 per GPU, whatever tier it
    reaches above; no algorithm beats the NICs' bound."""
    pod = load_topology("rack-pod-h100")  # two nodes per rack: half of all edges leave a rack
    s = 4.0 * GIB
    for n in (64, 1024, 6144):
        d = n // 8
        nic_bytes = 2 * (d - 1) / d * s / 8
        for alg in ("tree", "nvls_tree"):
            got = collective_time(pod, "all_reduce", n, s, alg)
            rack = next(t for t in got.tiers if t.tier == "rack")
            assert rack.bytes_per_gpu == pytest.approx(nic_bytes, rel=1e-12)
            assert not rack.nested and all(t.nested for t in got.tiers if t.tier in ("pod", "cluster"))
            assert got.seconds >= nic_bytes / pod.tiers[1].effective_bandwidth


@pytest.mark.parametrize("name", ["dgx-h100", "dgx-a100", "rack-pod-h100"])
def test_time_grows_with_ranks(name: str) -> None:
    topo = load_topology(name)
    for size in (8.0, 4.0 * GIB):
        for alg in ("ring", "tree"):
            times = [collective_time(topo, "all_reduce", n, size, alg).seconds for n in range(8, 1025, 8)]
            assert all(b >= a * (1 - 1e-12) for a, b in itertools.pairwise(times)), (name, alg, size)


def test_ranks_must_fit_the_topology(h100: TopologySpec) -> None:
    with pytest.raises(ValueError, match="unevenly"):
        collective_time(h100, "all_reduce", 9, GIB, "ring")
    with pytest.raises(ValueError, match="exceed rack-pod-h100's 24576"):
        collective_time(load_topology("rack-pod-h100"), "all_reduce", 24577, GIB, "ring")
    # a partly filled scalable unit: no hierarchical phases (they assume full domains), the rest still work
    assert "hierarchical" not in algorithms_for(h100, "all_reduce", 264)
    assert "hierarchical" in algorithms_for(h100, "all_reduce", 512)


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
    """NCCL's llMaxBws: across nodes LL is capped by the host CPU: 39 GB/s of bus bandwidth on 2 Intel nodes,
    22.5 on 2 AMD nodes."""
    from dpcost.engine.collectives import _levels, _ring

    size = 64 * 2**20
    ll = _ring(h100, "all_reduce", 16, size, _levels(h100, 16), "ll")
    assert h100.host_cpu == "intel"
    assert ll.bandwidth_seconds == pytest.approx(bus_factor("all_reduce", 16) * size / LL_MAX_BUSBW_NODES["intel"][0])
    a100 = load_topology("dgx-a100")
    assert a100.host_cpu == "amd"
    ll = _ring(a100, "all_reduce", 16, size, _levels(a100, 16), "ll")
    assert ll.bandwidth_seconds == pytest.approx(bus_factor("all_reduce", 16) * size / 22.5e9)
    assert collective_time(h100, "all_reduce", 16, size, "ring").protocol != "ll"


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


def _with_sharp(topology: TopologySpec) -> TopologySpec:
    import json

    doc = json.loads(topology.model_dump_json())
    for tier in doc["tiers"][1:]:
        tier["in_network_reduction"] = {"kind": "sharp", "efficiency": 0.9, "latency": 31e-6}
    return TopologySpec.model_validate(doc)


def test_sharp_where_a_fabric_declares_it(h100: TopologySpec) -> None:
    sharp = _with_sharp(h100)
    got = collective_time(sharp, "all_reduce", 512, GIB, "collnet")
    # each rail sends its S/8 once: half the ring's 2(D-1)/D x S/8
    leaf = next(t for t in got.tiers if t.tier == "leaf")
    assert leaf.bytes_per_gpu == pytest.approx(GIB / 8)
    assert leaf.seconds == pytest.approx(GIB / 8 / (50e9 * 0.9))
    # the switches reduce: the spine carries one stream per rail per scalable unit
    spine = next(t for t in got.tiers if t.tier == "spine")
    assert spine.bytes_per_gpu == pytest.approx(2 * GIB / 512) and spine.nested


def test_sharp_reduces_before_an_oversubscribed_tier() -> None:
    pod = _with_sharp(load_topology("rack-pod-h100"))
    flat = TopologySpec.model_validate(
        {
            **pod.model_dump(mode="json"),
            "tiers": [{**t, "oversubscription": 1} for t in pod.model_dump(mode="json")["tiers"]],
        }
    )
    a = collective_time(pod, "all_reduce", 24576, 4 * GIB, "collnet").seconds
    b = collective_time(flat, "all_reduce", 24576, 4 * GIB, "collnet").seconds
    assert a == pytest.approx(b, rel=0.01)


def test_a_single_rank_moves_nothing(h100: TopologySpec) -> None:
    c = collective(h100, "all_reduce", 1, GIB)
    assert c.best.seconds == 0 and c.best.algorithm == "none"
    assert bus_factor("all_reduce", 1) == 0
