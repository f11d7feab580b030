"""Collective times: each algorithm's closed form on NCCL's tables, NCCL's availability rules, and the
properties any sane model must keep."""

from __future__ import annotations

import itertools
import json
import math

import pytest
from conftest import REFERENCE

from dpcost.catalog import list_topologies, load_runs, load_topology
from dpcost.engine import corrections
from dpcost.engine import nccl_tables as nccl
from dpcost.engine.availability import forcible, nccl_candidates
from dpcost.engine.collectives import (
    OPS,
    algorithms_for,
    bus_factor,
    collective,
    collective_time,
    fastest,
    network_factor,
    tree_domain_load,
)
from dpcost.engine.nccl_channels import search_channels
from dpcost.engine.placement import place
from dpcost.specs import TopologySpec

GIB = 2**30
US = 1e-6


def _with(topology: TopologySpec, **changes: object) -> TopologySpec:
    return TopologySpec.model_validate({**topology.model_dump(), **changes})


def _flat(topology: TopologySpec) -> TopologySpec:
    """No loss with scale: the closed forms below read more simply."""
    return _with(topology, scaling_loss=0.0)


# ------------------------------------------------------------------------------------------------ closed forms


def test_ring_all_reduce_one_node_closed_form(h100: TopologySpec) -> None:
    """NCCL: base 8.4 us + 2(N-1) NVLink hops of 3.4 us (Simple); Patarasuk & Yuan: 2(N-1)/N x S / B."""
    n, s = 8, float(GIB)
    got = collective_time(h100, "all_reduce", n, s, "ring")
    expected = h100.call_overhead + 8.4 * US + 2 * (n - 1) * 3.4 * US + 2 * (n - 1) / n * s / (450e9 * 0.82)
    assert got.protocol == "simple"
    assert got.seconds == pytest.approx(expected, rel=1e-12)
    assert got.busbw == pytest.approx(got.algbw * 2 * 7 / 8)


def test_ring_two_nodes_closed_form(h100: TopologySpec) -> None:
    """16 ranks on 2 nodes (tuning.cc:393-413): 28 NVLink steps at max(3.4, 3 x 1.0 us proxy overhead), 2
    network steps at 14 us, times the 1.4 "plateau" for multi-node Ring/Simple; the NICs set the bandwidth."""
    n, s = 16, 8.0 * GIB
    nv, ib = h100.tiers[0], h100.tiers[1]
    v = 2 * (n - 1) / n * s
    bandwidth = max(14 / 16 * v / nv.effective_bandwidth, 2 / 16 * v / ib.effective_bandwidth)
    latency = h100.call_overhead + 1.4 * (8.4 + 28 * max(3.4, 3 * 1.0) + 2 * 14.0) * US
    got = collective_time(h100, "all_reduce", n, s, "ring")
    assert got.protocol == "simple"
    assert got.seconds == pytest.approx(latency + bandwidth, rel=1e-12)
    assert got.busbw == pytest.approx(8 * ib.effective_bandwidth, rel=0.01)  # 8 rails x 49 GB/s


def test_reduce_scatter_all_gather_closed_form(h100: TopologySpec) -> None:
    n, s = 8, float(GIB)
    nv = h100.tiers[0]
    for op in ("reduce_scatter", "all_gather"):
        got = collective_time(h100, op, n, s, "ring")
        expected = h100.call_overhead + 8.4 * US + (n - 1) * 3.4 * US + (n - 1) / n * s / nv.effective_bandwidth
        assert got.seconds == pytest.approx(expected, rel=1e-12)


def test_nvls_closed_form(h100: TopologySpec) -> None:
    """NVLink SHARP: each GPU sends and receives (1 + 1/N) x S through the switch, after the tier's NVLS latency
    (120 us measured on H100, where NCCL's tuner says 25)."""
    n, s = 8, float(GIB)
    nv = h100.tiers[0]
    assert nv.in_network_reduction is not None
    got = collective_time(h100, "all_reduce", n, s, "nvls")
    expected = h100.call_overhead + 120 * US + (1 + 1 / n) * s / (450e9 * 0.69)
    assert got.seconds == pytest.approx(expected, rel=1e-12)
    # about the 480 GB/s busbw nccl-tests' maintainers measure with NVLS on 8 x H100
    assert got.busbw == pytest.approx(480e9, rel=0.03)


@pytest.mark.parametrize(
    ("topology", "run", "within"),
    [
        # fixed gb200-nvl72's NVLS efficiency and its loss per doubling: Google Cloud A4X at 8-72 ranks of one rack
        *(("gb200-nvl72", f"nccl-tests/gb200-{hosts}n-all_reduce-gkea4x.csv", 0.02) for hosts in (2, 4, 8, 16, 18)),
        # fixed the NVLS latency: CoreWeave's 72 ranks (NCCL 2.26.2) run 5-7% slower than A4X's (2.30.4)
        ("gb200-nvl72", "nccl-tests/gb200-18n-all_reduce-coreweave.csv", 0.075),
        ("gb200-nvl72", "nccl-tests/gb200-16n-all_reduce-ocigb200.csv", 0.02),
        # held out: OCI's GB300 at 8 and 64 ranks of one rack, on gb200-nvl72's NVLS figures
        ("gb300-nvl72", "nccl-tests-holdout/gb300-2n-all_reduce-ocigb300.csv", 0.03),
        ("gb300-nvl72", "nccl-tests-holdout/gb300-16n-all_reduce-ocigb300.csv", 0.03),
    ],
)
def test_nvls_in_one_nvl72_rack_as_measured_from_8_to_72_ranks(topology: str, run: str, within: float) -> None:
    """NVLS in one NVL72 rack keeps 453-481 GB/s algbw from 8 ranks to 72 in these runs (>= 1 GiB; CoreWeave's
    72 ranks on an older NCCL 423-425), where each GPU moving (1 + 1/N) x S at one efficiency would run 1.11x
    slower at 8 ranks than at 72."""
    gb = load_topology(topology)
    for m in load_runs(str(REFERENCE / run), run):
        assert m.ranks is not None
        for row in (r for r in m.rows if r.size_bytes >= 2**30):
            call = fastest(gb, "all_reduce", m.ranks, row.size_bytes)
            assert call.algorithm == "nvls", (run, row.size_bytes)
            assert call.seconds * 1e6 / row.time_us - 1 == pytest.approx(0, abs=within), (run, row.size_bytes)


def test_nvls_efficiency_is_quoted_at_8_ranks() -> None:
    """The NVLS efficiency holds up to 8 ranks and loses loss_per_doubling per doubling beyond: at 32 ranks
    (1 - loss)^2 of it; a domain of 8 never sees the loss."""
    reduction = load_topology("gb200-nvl72").tiers[0].in_network_reduction
    assert reduction is not None and reduction.loss_per_doubling > 0
    assert reduction.efficiency_over(4) == reduction.efficiency_over(8) == reduction.efficiency
    assert reduction.efficiency_over(32) == pytest.approx(reduction.efficiency * (1 - reduction.loss_per_doubling) ** 2)
    h100 = load_topology("dgx-h100").tiers[0].in_network_reduction
    assert h100 is not None and h100.efficiency_over(8) == h100.efficiency


def test_tree_closed_form_beyond_two_nodes(h100: TopologySpec) -> None:
    """4 nodes: a chain in the node (2S per GPU) pipelined with a double binary tree in which every node is
    interior once and moves 2S through its 8 rails; NCCL's latency 2 x ((ppn - 1) x 4.0 + log2(4) x 14) us. The
    bus bandwidth stays under 8 channels x perChMaxTreeBw (36 GB/s on Hopper beyond two nodes), which binds here."""
    topo = _flat(h100)
    n, s = 32, 4.0 * GIB
    nv, ib = topo.tiers[0], topo.tiers[1]
    got = collective_time(topo, "all_reduce", n, s, "tree")
    intra = 2 * s / nv.effective_bandwidth
    inter = 2 * s / 8 / ib.effective_bandwidth
    latency = topo.call_overhead + (8.4 + 2 * (7 * 4.0 + 2 * 14.0)) * US
    assert got.protocol == "simple"
    channels_cap = 2 * s / (8 * 36e9)
    assert channels_cap > max(intra, inter) / 0.92
    assert got.seconds == pytest.approx(latency + channels_cap, rel=1e-12)


@pytest.mark.parametrize("alg", ["tree", "nvls_tree"])
def test_double_binary_tree_moves_s_at_two_nodes_and_2s_beyond(h100: TopologySpec, alg: str) -> None:
    """NCCL/nccl#946: "2 nodes is a special case". Per GPU rail: S/8 at 2 nodes, 1.5S/8 at 3 (ncclGetDtree's two
    trees are chains there), 2S/8 at 4 and more."""
    topo = _flat(h100)
    s = 4.0 * GIB
    for n, volume in ((16, s / 8), (24, 1.5 * s / 8), (32, 2 * s / 8), (64, 2 * s / 8), (512, 2 * s / 8)):
        got = collective_time(topo, "all_reduce", n, s, alg)
        leaf = next(t for t in got.tiers if t.tier == "leaf")
        assert leaf.bytes_per_gpu == pytest.approx(volume, rel=1e-12), n
        assert not leaf.nested


def _nccl_btree(nranks: int, rank: int) -> tuple[int, int, int]:
    """NCCL's ncclGetBtree (src/graph/trees.cc, unchanged v2.18-v2.30): (parent, child 0, child 1), -1 for none."""
    bit = 1
    while bit < nranks and not bit & rank:
        bit <<= 1
    if rank == 0:
        return -1, -1, (bit >> 1) if nranks > 1 else -1
    up = (rank ^ bit) | (bit << 1)
    if up >= nranks:
        up = rank ^ bit
    lowbit = bit >> 1
    down0 = -1 if lowbit == 0 else rank - lowbit
    down1 = -1 if lowbit == 0 else rank + lowbit
    while down1 >= nranks:
        down1 = -1 if lowbit == 0 else rank + lowbit
        lowbit >>= 1
    return up, down0, down1


def _nccl_dtree(nranks: int, rank: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """NCCL's ncclGetDtree (trees.cc): the btree, and a second tree shifted by one rank (odd) or mirrored (even)."""
    if nranks % 2:
        other = tuple(-1 if r == -1 else (r + 1) % nranks for r in _nccl_btree(nranks, (rank - 1) % nranks))
    else:
        other = tuple(-1 if r == -1 else nranks - 1 - r for r in _nccl_btree(nranks, nranks - 1 - rank))
    return _nccl_btree(nranks, rank), other  # type: ignore[return-value]


def test_tree_domain_load_is_the_busiest_domain_of_ncclS_double_binary_tree() -> None:
    """Each tree carries S/2 once down and once up each edge, so a domain sends (children + parent) x S/2 per tree,
    and both trees share its NICs (connect.cc's connectTrees: channels c and c + nChannels)."""
    for nodes in range(2, 600):
        busiest = max(
            sum((sum(r != -1 for r in tree)) * 0.5 for tree in _nccl_dtree(nodes, node)) for node in range(nodes)
        )
        assert tree_domain_load(nodes) == busiest, nodes


def test_at_three_nodes_nccl_picks_as_its_tuner_weighs_a_tree_at_four(h100: TopologySpec) -> None:
    """NCCL's tuner rates trees beyond two nodes by bwInter (tuning.cc: NVLSTree's network rate doubled only at
    nNodes <= 2), so at three nodes it ranks NVLSTree against Ring as at four: Ring at 1 GiB on H100 nodes, where
    NVLSTree, forced, would move 1.5S per node and finish first."""
    s = 1.0 * GIB
    for n in (24, 32):
        assert fastest(h100, "all_reduce", n, s).algorithm == "ring"
    forced = collective_time(h100, "all_reduce", 24, s, "nvls_tree")
    assert forced.seconds < collective_time(h100, "all_reduce", 24, s, "ring").seconds


def test_nvls_tree_network_bandwidth_halves_beyond_two_nodes(h100: TopologySpec) -> None:
    """NCCL's tuner: NVLSTree's inter-node bandwidth is 2 x bwInter up to 2 nodes and bwInter beyond."""
    topo = _flat(h100)
    s = 16.0 * GIB
    two = collective_time(topo, "all_reduce", 16, s, "nvls_tree")
    four = collective_time(topo, "all_reduce", 32, s, "nvls_tree")
    nic = lambda c: next(t for t in c.tiers if t.tier == "leaf").seconds  # noqa: E731
    assert nic(four) == pytest.approx(2 * nic(two), rel=1e-12)
    # beyond 2 nodes the NICs, not NVLS, set the pace: at or below a ring's bus bandwidth
    assert four.busbw < collective_time(topo, "all_reduce", 32, s, "ring").busbw * 1.0001


def test_upper_tiers_carry_the_edges_that_leave_their_domains() -> None:
    pod = load_topology("rack-pod-h100")  # two nodes per rack: half of all edges leave a rack
    s = 4.0 * GIB
    for n in (64, 1024, 6144):
        for alg in ("tree", "nvls_tree"):
            got = collective_time(pod, "all_reduce", n, s, alg)
            assert all(t.nested for t in got.tiers if t.tier in ("pod", "cluster"))
            rack = next(t for t in got.tiers if t.tier == "rack")
            assert got.seconds >= rack.bytes_per_gpu / pod.tiers[1].effective_bandwidth


# ------------------------------------------------------------------------------------------------ NCCL's tables


def test_protocol_latencies_follow_nccls_tables(h100: TopologySpec) -> None:
    """Ring LL on one node: base 6.6 us + 14 hops of 0.6 us; across nodes LL128's network hop is corrected
    (corrections.py) and NVLSTree's tree levels cost corrections.NVLS_TREE_NET_US each."""
    got = collective_time(h100, "all_reduce", 8, 8, "ring")
    assert got.protocol == "ll"
    assert got.latency_seconds == pytest.approx(h100.call_overhead + (6.6 + 14 * 0.6) * US, rel=1e-12)
    assert corrections.hw_latency("net", "ring", "ll128") == 4.0 * corrections.NET_LL128_FACTOR
    assert corrections.hw_latency("net", "ring", "simple") == nccl.hw_latency("net", "ring", "simple") == 14.0
    nvlstree = collective_time(_flat(h100), "all_reduce", 64, 8, "nvls_tree")
    level = corrections.NVLS_TREE_NET_US
    assert nvlstree.latency_seconds == pytest.approx(h100.call_overhead + (120 + 2 * 3 * level) * US, rel=1e-12)


def test_latency_scale_multiplies_nccls_hop_latencies(h100: TopologySpec) -> None:
    slow = _with(h100, latency_scale=2.0)
    a = collective_time(h100, "all_reduce", 16, 8, "ring")
    b = collective_time(slow, "all_reduce", 16, 8, "ring")
    assert b.latency_seconds - slow.call_overhead == pytest.approx(2 * (a.latency_seconds - h100.call_overhead))


def test_ll_is_held_under_nccls_cap(h100: TopologySpec) -> None:
    """llMaxBws: across nodes LL's bus bandwidth is capped by the host CPU: 39 GB/s on 2 Intel nodes, 22.5 on
    2 AMD nodes; on one Hopper node 141 GB/s."""
    size = 64 * 2**20
    assert h100.host_cpu == "intel"
    got = fastest(h100, "all_reduce", 16, size, "ring", "ll")
    assert got.bandwidth_seconds == pytest.approx(bus_factor("all_reduce", 16) * size / 39.0e9)
    a100 = load_topology("dgx-a100")
    assert a100.host_cpu == "amd"
    got = fastest(a100, "all_reduce", 16, size, "ring", "ll")
    assert got.bandwidth_seconds == pytest.approx(bus_factor("all_reduce", 16) * size / 22.5e9)
    assert nccl.ll_max_busbw("hopper", "intel", 1) == 141.0
    assert collective_time(h100, "all_reduce", 16, size, "ring").protocol != "ll"


def test_a_forced_protocol_is_honoured(h100: TopologySpec) -> None:
    got = fastest(h100, "all_reduce", 1024, GIB, "ring", "ll128")
    assert (got.algorithm, got.protocol) == ("ring", "ll128")
    # NVLS and NVLSTree run Simple only: forcing LL128 leaves Ring and Tree
    assert fastest(h100, "all_reduce", 16, GIB, None, "ll128").algorithm in ("ring", "tree")


def test_a_topologys_protocol_is_its_clusters_nccl_proto(h100: TopologySpec) -> None:
    """Issue 17: a cluster that sets NCCL_PROTO declares it as the topology's `protocol`. NCCL then runs only that
    protocol, and NVLS, NVLSTree and CollNet run Simple only (tuning.cc:301, 338-339): under LL128 a 1 GiB
    all-reduce on 16 H100s (NVLSTree's by default) runs Ring or Tree. A forced protocol overrides the topology's."""
    assert fastest(h100, "all_reduce", 16, GIB).algorithm == "nvls_tree"
    ll128 = _with(h100, protocol="ll128")
    for size in (64 * 1024, 8 * 1024**2, GIB):
        got = fastest(ll128, "all_reduce", 16, size)
        assert got.protocol == "ll128" and got.algorithm in ("ring", "tree")
        assert got == fastest(h100, "all_reduce", 16, size, None, "ll128")
        assert collective(ll128, "all_reduce", 16, size).best == got
    assert fastest(ll128, "all_reduce", 16, GIB, None, "simple").protocol == "simple"


def test_nccl_proto_may_list_several_protocols(h100: TopologySpec) -> None:
    """NCCL_PROTO takes a comma-separated list in any case (Google's TCPXO profile sets Simple,LL128: docs/sources/
    gcp-tcpxo-nccl-profile.md): NCCL runs the fastest protocol among them and never another. With Simple in the
    list, NVLS and NVLSTree stay (they run Simple only); a small all-reduce that runs LL unforced runs LL128 or
    Simple instead."""
    listed = _with(h100, protocol="Simple, LL128")
    assert listed.protocol == "ll128,simple"
    small = 8.0
    assert fastest(h100, "all_reduce", 16, small).protocol == "ll"
    got = fastest(listed, "all_reduce", 16, small)
    assert got.protocol in ("ll128", "simple")
    assert got.seconds == min(fastest(h100, "all_reduce", 16, small, None, p).seconds for p in ("ll128", "simple"))
    assert fastest(listed, "all_reduce", 16, GIB).algorithm == "nvls_tree"
    with pytest.raises(ValueError, match="one or more of ll, ll128, simple"):
        _with(h100, protocol="ll,lowlatency")


def test_gcp_a3_mega_runs_googles_tcpxo_profile() -> None:
    """Google's TCPXO profile (nccl-env-profile.sh since May 2025) sets NCCL_PROTO=Simple,LL128: no call on A3 Mega
    runs LL, at any size or op."""
    a3 = load_topology("gcp-a3-mega")
    assert a3.protocol == "ll128,simple"
    for op, ranks, size in itertools.product(OPS, (8, 16, 64), (8.0, 64 * 1024.0, 16 * 1024**2.0, GIB)):
        assert fastest(a3, op, ranks, size).protocol != "ll"


def test_network_loses_bandwidth_per_doubling_of_nodes(h100: TopologySpec) -> None:
    assert network_factor(h100, 2) == 1.0
    assert network_factor(h100, 8) == pytest.approx((1 - h100.scaling_loss) ** 2)
    s = 16.0 * GIB
    flat, lossy = _flat(h100), _with(h100, scaling_loss=0.03)
    for n in (64, 512):
        a = collective_time(flat, "all_reduce", n, s, "ring").bandwidth_seconds
        b = collective_time(lossy, "all_reduce", n, s, "ring").bandwidth_seconds
        assert b == pytest.approx(a / 0.97 ** math.log2(n / 16), rel=1e-9)


def test_a_call_that_leaves_a_leaf_for_the_spine_loses_the_spines_crossing_loss_once(h100: TopologySpec) -> None:
    """Issue 17: a topology declares a step where a job crosses a switch tier. dgx-h100's leaf holds 256 GPUs:
    calls within it keep their bandwidth; beyond it every network tier runs at (1 - loss) of it, once."""
    flat = _flat(h100)
    doc = flat.model_dump()
    doc["tiers"][2]["crossing_loss"] = 0.08
    stepped = TopologySpec.model_validate(doc)
    s = 16.0 * GIB
    for n in (16, 256):
        assert collective_time(stepped, "all_reduce", n, s, "ring") == collective_time(flat, "all_reduce", n, s, "ring")
    for n in (512, 4096):
        a = collective_time(flat, "all_reduce", n, s, "ring")
        b = collective_time(stepped, "all_reduce", n, s, "ring")
        network = [(x, y) for x, y in zip(a.tiers, b.tiers, strict=True) if x.tier != "nvlink"]
        assert network and all(y.seconds == pytest.approx(x.seconds / 0.92, rel=1e-12) for x, y in network)
        assert b.latency_seconds == a.latency_seconds


# ------------------------------------------------------------------------------------------------ availability


def test_nccls_candidates(h100: TopologySpec) -> None:
    """tuning.cc:293-304 and enqueue.cc:1997-2012: across nodes, reduce-scatter and all-gather are Ring; Tree is
    all-reduce only; NVLSTree only across nodes; NVLS only inside one domain without SHARP."""
    one, many = place(h100, 8), place(h100, 512)
    assert nccl_candidates("all_reduce", one) == ("ring", "tree", "nvls")
    assert nccl_candidates("all_reduce", many) == ("ring", "tree", "nvls_tree")
    assert nccl_candidates("reduce_scatter", one) == ("ring", "nvls")
    for op in ("reduce_scatter", "all_gather"):
        assert nccl_candidates(op, many) == ("ring",)
    for op in ("broadcast", "reduce"):
        assert nccl_candidates(op, many) == ("ring",)
    assert "nvls" not in algorithms_for(load_topology("dgx-a100"), "all_reduce", 8)


def test_pat_only_with_one_gpu_per_node(h100: TopologySpec) -> None:
    doc = h100.model_dump()
    doc["tiers"][0].update(size=1, in_network_reduction=None)
    single = TopologySpec.model_validate(doc)  # one GPU per node, e.g. a PCIe server with one NIC
    assert nccl_candidates("all_gather", place(single, 64)) == ("ring", "pat")
    pat = collective_time(single, "all_gather", 64, GIB, "pat")
    ring = collective_time(single, "all_gather", 64, GIB, "ring")
    assert pat.bandwidth_seconds == pytest.approx(ring.bandwidth_seconds / 0.75)
    assert "pat" not in nccl_candidates("all_gather", place(h100, 64))


def test_hierarchical_is_a_what_if_priced_only_when_forced(h100: TopologySpec) -> None:
    """NCCL has no hierarchical algorithm: no framework issues it, so the default never picks it."""
    for op in ("all_reduce", "reduce_scatter", "all_gather"):
        for n in (16, 512, 4096):
            for size in (25 * 2**20, GIB):
                choice = collective(h100, op, n, size)
                assert choice.best.algorithm != "hierarchical"
                assert not choice.best.what_if
                forced = collective(h100, op, n, size, "hierarchical").best
                assert forced.algorithm == "hierarchical" and forced.what_if
                assert forced.label.endswith("(what-if)")
    assert "hierarchical" in forcible("all_reduce", place(h100, 512))
    assert "hierarchical" not in forcible("all_reduce", place(h100, 264))  # a part-filled scalable unit


def test_unavailable_algorithms_are_refused_naming_the_available_ones(h100: TopologySpec) -> None:
    with pytest.raises(ValueError, match=r"tree is not available for reduce_scatter .* available: ring, hierarchical"):
        collective(h100, "reduce_scatter", 512, GIB, "tree")
    with pytest.raises(ValueError, match="nvls is not available"):
        collective_time(load_topology("dgx-a100"), "all_reduce", 8, GIB, "nvls")


def _with_sharp(topology: TopologySpec) -> TopologySpec:
    doc = json.loads(topology.model_dump_json())
    for tier in doc["tiers"][1:]:
        tier["in_network_reduction"] = {"kind": "sharp", "efficiency": 0.9, "latency": 31e-6}
    return TopologySpec.model_validate(doc)


def test_sharp_where_a_fabric_declares_it(h100: TopologySpec) -> None:
    sharp = _with_sharp(h100)
    assert "collnet" in algorithms_for(sharp, "all_reduce", 512)
    assert "nvls" in algorithms_for(sharp, "all_reduce", 512)  # multi-node NVLS needs CollNet (enqueue.cc:2008)
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


# ------------------------------------------------------------------------------------------------ placement


def test_part_filled_domains_are_costed_evenly_and_said(h100: TopologySpec) -> None:
    """What a scheduler hands out: 12 GPUs of 8-GPU nodes are 2 nodes of 6; 128 of NVL72 are 2 racks of 64."""
    p = place(h100, 12)
    assert (p.nodes, p.ppn) == (2, 6)
    assert "12 GPUs fill 2 NVLink domains of 8 partly: costed as 6 GPUs per domain" in p.partial_note
    gb = load_topology("gb200-nvl72")
    assert place(gb, 128).ppn == 64
    choice = collective(gb, "all_reduce", 128, GIB)
    assert choice.note and choice.best.seconds > 0
    for n in (2**k for k in range(1, 12)):  # a power-of-two sweep runs on NVL72 racks
        assert collective(gb, "all_reduce", n, GIB).best.seconds > 0
    assert place(h100, 16).partial_note == ""


def test_ranks_must_fit_the_topology(h100: TopologySpec) -> None:
    with pytest.raises(ValueError, match="exceed rack-pod-h100's 24576"):
        collective_time(load_topology("rack-pod-h100"), "all_reduce", 24577, GIB, "ring")
    with pytest.raises(ValueError, match="positive"):
        collective_time(h100, "all_reduce", 0, GIB, "ring")


# ------------------------------------------------------------------------------------------------ properties


def test_reduce_scatter_plus_all_gather_is_all_reduce_volume(h100: TopologySpec) -> None:
    for n in (8, 64, 1024):
        ar = collective_time(h100, "all_reduce", n, GIB, "ring").bytes_sent_per_gpu
        rs = collective_time(h100, "reduce_scatter", n, GIB, "ring").bytes_sent_per_gpu
        ag = collective_time(h100, "all_gather", n, GIB, "ring").bytes_sent_per_gpu
        assert rs + ag == pytest.approx(ar)


@pytest.mark.parametrize("name", ["dgx-h100", "dgx-a100", "rack-pod-h100"])
def test_time_grows_with_ranks(name: str) -> None:
    topo = load_topology(name)
    for size in (8.0, 4.0 * GIB):
        for alg in ("ring", "tree"):
            times = [collective_time(topo, "all_reduce", n, size, alg).seconds for n in range(8, 1025, 8)]
            assert all(b >= a * (1 - 1e-12) for a, b in itertools.pairwise(times)), (name, alg, size)


@pytest.fixture(params=[t.name for t in list_topologies()])
def topo(request: pytest.FixtureRequest) -> TopologySpec:
    return load_topology(request.param)


def test_time_grows_with_size_for_every_algorithm(topo: TopologySpec) -> None:
    for n in (8, 72, 144, 512):
        if topo.max_gpus and n > topo.max_gpus:
            continue
        for op in OPS:
            for alg in forcible(op, place(topo, n)):
                times = [collective_time(topo, op, n, 2.0**k, alg).seconds for k in range(0, 37, 2)]
                assert all(b >= a for a, b in itertools.pairwise(times)), (topo.name, op, alg, n)


def test_never_below_the_bandwidth_bound(topo: TopologySpec) -> None:
    """Whatever the algorithm, each NVLink domain must move (D-1)/D of the data out through its rails at line
    rate (and, on one domain, each GPU (N-1)/N of it through NVLink): no prediction may beat that."""
    s = 4.0 * GIB
    for n in (8, 72, 144, 512):
        if topo.max_gpus and n > topo.max_gpus:
            continue
        p = place(topo, n)
        d, g = p.nodes, p.ppn
        bound = (d - 1) / d * s / (g * topo.tiers[1].bandwidth) if d > 1 else (n - 1) / n * s / topo.tiers[0].bandwidth
        for op in ("all_reduce", "reduce_scatter", "all_gather"):
            for alg in forcible(op, p):
                assert collective_time(topo, op, n, s, alg).seconds >= bound, (topo.name, op, alg, n)


def test_small_messages_take_tens_of_microseconds(h100: TopologySpec) -> None:
    for n in (8, 16, 512):
        t = collective(h100, "all_reduce", n, 8).best.seconds
        assert 10 * US < t < 100 * US, n
    assert collective(h100, "all_reduce", 8, 8).best.protocol == "ll"


def test_the_fastest_algorithm_is_chosen(h100: TopologySpec) -> None:
    for n, s in ((16, 8), (16, GIB), (512, GIB), (8, GIB)):
        choice = collective(h100, "all_reduce", n, s)
        nccl_times = [c.seconds for c in choice.candidates if not c.what_if]
        assert choice.best.seconds == min(nccl_times)
        assert fastest(h100, "all_reduce", n, s).seconds == choice.best.seconds
    # one node, large: NVLS, as NCCL picks; across two nodes, NVLSTree
    assert collective(h100, "all_reduce", 8, GIB).best.algorithm == "nvls"
    assert collective(h100, "all_reduce", 16, GIB).best.algorithm == "nvls_tree"


def test_a_single_rank_moves_nothing(h100: TopologySpec) -> None:
    c = collective(h100, "all_reduce", 1, GIB)
    assert c.best.seconds == 0 and c.best.algorithm == "none"
    assert bus_factor("all_reduce", 1) == 0


def test_blackwell_nvls_tree_takes_the_tree_correction_on_x86_hosts() -> None:
    """NCCL 2.30.7 tuning.cc ncclTopoGetAlgoTime: an NVLSTree all-reduce on compute capability >= 10.0 with an x86
    host takes treeCorrectionFactor[Simple][log2(size / 64)] (0.7 at 4 MiB: index 16); Grace hosts (GB200) do not."""
    from dpcost.engine.collectives import collective_time
    from dpcost.engine.nccl_tables import nvls_tree_correction

    assert nvls_tree_correction(4 * 2**20, "blackwell", "intel") == 0.7
    assert nvls_tree_correction(4 * 2**20, "blackwell", "arm") == 1.0
    assert nvls_tree_correction(4 * 2**20, "hopper", "intel") == 1.0
    assert nvls_tree_correction(2**29, "blackwell", "amd") == 0.9  # log2(2^29 / 64) = 23, the table's last
    assert nvls_tree_correction(2**30, "blackwell", "amd") == 1.0  # 24: beyond it
    b200 = load_topology("dgx-b200")
    arm = b200.model_copy(update={"host_cpu": "arm"})
    x86 = collective_time(b200, "all_reduce", 32, 4 * 2**20, "nvls_tree")
    grace = collective_time(arm, "all_reduce", 32, 4 * 2**20, "nvls_tree")
    assert x86.bandwidth_seconds == pytest.approx(grace.bandwidth_seconds / 0.7)


@pytest.mark.parametrize("nodes", [4, 8, 62])
def test_b200_tree_beyond_two_nodes_is_held_to_ncclS_per_channel_cap(nodes: int) -> None:
    """NCCL 2.30.7 tuning.cc:330-331 caps a Tree all-reduce's bus bandwidth at nChannels x perChMaxTreeBw, 24 GB/s
    per channel on Blackwell beyond two nodes; a DGX B200's search finds one channel per 400G NIC (search.cc
    sm100SpeedArrayInter: 48 GB/s fits a 50 GB/s NIC once). Measured (issue 17): 192-196 GB/s busbw for Tree
    against 386-390 GB/s for Ring on the same B200 cluster at 4-62 nodes."""
    b200 = load_topology("dgx-b200")
    ranks = 8 * nodes
    tree = collective_time(b200, "all_reduce", ranks, GIB, "tree")
    ring = collective_time(b200, "all_reduce", ranks, GIB, "ring")
    busbw = bus_factor("all_reduce", ranks) * GIB / tree.seconds / 1e9
    assert 170 <= busbw <= 196
    assert ring.seconds < tree.seconds
    assert search_channels(b200, place(b200, ranks))[0] == 8


def test_a_tree_across_nvl72_racks_runs_on_the_channels_nvlink_carries_through_a_rack() -> None:
    """Under MNNVL NCCL counts a 72-GPU rack as one node (topo.cc fuses the clique): its ring search finds as many
    channels as NVLink can carry through 71 GPUs at a NIC's speed (16 at 45 GB/s, where 72 NICs would hold 72), and
    the tree graph takes that count (init.cc), each channel on one NIC; so Tree's cap across racks is 16 x 24 GB/s
    (tuning.cc:330-331, Blackwell beyond two nodes), not the rails'. CoreWeave's 20-rack all-reduce with NVLS off
    (coreweave/nccl-tests bee97e7) reached 406 GB/s bus bandwidth at 16 GiB."""
    gb200 = load_topology("gb200-nvl72")
    p = place(gb200, 1440)
    assert (p.nodes, p.ppn, search_channels(gb200, p)[0]) == (20, 72, 16)
    tree = collective_time(gb200, "all_reduce", 1440, 16 * GIB, "tree")
    busbw = bus_factor("all_reduce", 1440) * 16 * GIB / tree.seconds / 1e9
    assert 16 * 24 * 0.9 <= busbw <= 16 * 24
