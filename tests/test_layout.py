"""Layouts and their process groups (issue 19): Megatron-Core's rank order, the groups' placements, and the
point-to-point traffic the other dimensions need."""

from __future__ import annotations

import math

import pytest

from dpcost.catalog import load_model, load_topology
from dpcost.engine.collectives import collective, collective_time
from dpcost.engine.layout import Layout, group_kinds, group_members, group_of_rank_zero
from dpcost.engine.layout_step import ep_calls
from dpcost.engine.p2p import all_to_all, domains_per_token, send_recv
from dpcost.engine.placement import place, place_group
from dpcost.specs import TopologySpec

GIB = 2**30


@pytest.fixture(scope="module")
def h100() -> TopologySpec:
    return load_topology("dgx-h100")


# ------------------------------------------------------------------------------------------------ rank order


def test_groups_follow_megatrons_worked_example() -> None:
    """parallel_state.py generate_masked_orthogonal_rank_groups' docstring: 24 GPUs, order tp-dp-pp, sizes 2-3-4:
    dp_group[0] = [0, 2, 4], dp_group[1] = [1, 3, 5], ..., dp_group[7] = [19, 21, 23]."""
    layout = Layout(tp=2, dp=3, pp=4, order="tp-dp-pp")
    dp = group_members(layout, "dp")
    assert len(dp) == 8 and dp[0] == [0, 2, 4] and dp[1] == [1, 3, 5] and dp[-1] == [19, 21, 23]
    # its other example: 8 GPUs, tp-pp-dp, 2-2-2: dp groups [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert group_members(Layout(tp=2, pp=2, dp=2, order="tp-pp-dp"), "dp") == [[0, 4], [1, 5], [2, 6], [3, 7]]


def test_default_order_puts_tp_innermost_and_pp_outermost() -> None:
    """tp-cp-ep-dp-pp: TP groups are consecutive ranks, PP groups stride by TP x CP x DP."""
    layout = Layout(tp=8, cp=2, pp=4, dp=4)
    assert layout.gpus == 256
    assert group_members(layout, "tp")[0] == list(range(8))
    assert group_members(layout, "cp")[0] == [0, 8]
    assert group_members(layout, "dp")[0] == [0, 16, 32, 48]
    assert group_members(layout, "dp-cp")[0] == [0, 8, 16, 24, 32, 40, 48, 56]
    assert group_members(layout, "pp")[0] == [0, 64, 128, 192]
    for kind in ("tp", "cp", "dp", "dp-cp", "pp"):
        groups = group_members(layout, kind)
        assert sorted(r for g in groups for r in g) == list(range(256)), kind  # a partition of the GPUs


def test_experts_are_carved_out_of_dp_and_cp() -> None:
    """DeepSeek-V3 (arXiv 2412.19437 section 3.2): 2,048 GPUs, PP16 x EP64, no TP. Dense DP is 128; the experts'
    grid is ETP1 x EP64 x EDP2 x PP16 (parallel_state.py: expert-DP = GPUs / (ETP x EP x PP)): an EP group is 64
    consecutive ranks, 8 nodes, and each expert is replicated on 2 of them."""
    layout = Layout(pp=16, dp=128, ep=64)
    assert (layout.gpus, layout.expert_dp) == (2048, 2)
    assert group_members(layout, "ep")[0] == list(range(64))
    assert group_members(layout, "edp")[0] == [0, 64]
    assert group_members(layout, "pp")[0] == list(range(0, 2048, 128))
    with_tp = Layout(tp=2, dp=8, ep=4)  # ETP defaults to TP
    assert (with_tp.expert_tp, with_tp.expert_dp) == (2, 2)
    assert group_members(with_tp, "etp")[0] == [0, 1]
    assert group_members(with_tp, "ep")[0] == [0, 2, 4, 6]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tp": 0}, "--tp: must be a positive integer"),
        ({"dp": 6, "ep": 4}, "--ep: ETP x EP x PP = 1 x 4 x 1 = 4 must divide the 6 GPUs"),
        ({"tp": 2, "order": "tp-dp-xx"}, "--order: 'tp-dp-xx' must name each of"),
        ({"tp": 2, "cp": 2, "order": "tp-dp-pp"}, "--order: 'tp-dp-pp' leaves out cp"),
    ],
)
def test_impossible_layouts_are_refused_naming_the_flag(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        Layout(**kwargs)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------------ placement


@pytest.mark.parametrize("ranks", [2, 8, 12, 16, 64, 256, 512, 1024, 4096])
def test_contiguous_members_place_as_a_count_of_ranks(h100: TopologySpec, ranks: int) -> None:
    assert place_group(h100, list(range(ranks))) == place(h100, ranks)


def test_a_dp_group_of_one_rank_per_node_is_what_nccl_sees(h100: TopologySpec) -> None:
    """Llama 3 405B's layout (arXiv 2407.21783 Table 4) at DP128: TP8 fills each node, so one DP group holds one
    GPU of each of 128 nodes: NCCL's nNodes 128, one rank per node, 32 per leaf of 32 nodes; no NVLS (ncclNvlsInit
    needs two GPUs on the node), and every byte on that GPU's own NIC."""
    dp = place_group(h100, group_members(Layout(tp=8, pp=16, dp=128), "dp")[0])
    assert (dp.ranks, dp.nodes, dp.ppn) == (128, 128, 1.0)
    assert [lv.domain for lv in dp.levels[:2]] == [1.0, 32.0]
    choice = collective(h100, "all_reduce", dp, GIB)
    assert "nvls_tree" not in {c.algorithm for c in choice.candidates}
    ring = collective_time(h100, "all_reduce", dp, GIB, "ring")
    assert [t.tier for t in ring.tiers] == ["leaf", "spine"] and ring.tiers[0].bytes_per_gpu == pytest.approx(
        2 * 127 / 128 * GIB
    )
    assert ring.seconds > collective_time(h100, "all_reduce", 128, GIB, "ring").seconds * 6  # one rail, not eight


# ------------------------------------------------------------------------------------------------ point to point


def test_all_to_all_inside_a_node_moves_n_minus_one_nths_over_nvlink(h100: TopologySpec) -> None:
    """nccl-tests alltoall: S / N to each peer, (N - 1) / N x S sent per GPU, busbw = algbw x (N - 1) / N."""
    c = all_to_all(h100, place(h100, 8), GIB)
    nvlink = 450e9 * 0.82
    assert [t.tier for t in c.tiers] == ["nvlink"] and c.tiers[0].bytes_per_gpu == pytest.approx(7 / 8 * GIB)
    assert c.bandwidth_seconds == pytest.approx(7 / 8 * GIB / nvlink, rel=1e-12)
    assert c.busbw == pytest.approx(GIB / c.seconds * 7 / 8)


def test_all_to_all_across_nodes_puts_the_off_node_share_on_the_nics(h100: TopologySpec) -> None:
    """64 GPUs on 8 nodes: 7/64 of S stays on NVLink, 56/64 leaves through each GPU's 400G NIC, which sets the
    time: 56/64 x S / (50 GB/s x 0.98 x the fabric's loss at 8 nodes)."""
    c = all_to_all(h100, place(h100, 64), GIB)
    by_tier = {t.tier: t.bytes_per_gpu for t in c.tiers}
    assert by_tier == pytest.approx({"nvlink": 7 / 64 * GIB, "leaf": 56 / 64 * GIB})
    nic = 50e9 * 0.98 * (1 - h100.scaling_loss) ** 2
    assert c.bandwidth_seconds == pytest.approx(56 / 64 * GIB / nic, rel=1e-12)


def test_node_limited_dispatch_sends_each_token_once_per_node_and_forwards_it_over_nvlink(h100: TopologySpec) -> None:
    """DeepSeek-V3's node-limited routing with DeepEP (arXiv 2412.19437 sections 2.1.2, 3.2.2), EP 64 on 8 nodes,
    top-8 to at most 4 nodes: a token crosses IB once per target node, so the NIC carries 4/8 of what 8 copies
    would (56/64 x S x 1/2), and its copies reach their experts' GPUs over NVLink (7/8 x S)."""
    c = all_to_all(h100, place(h100, 64), GIB, network_share=0.5)
    assert {t.tier: t.bytes_per_gpu for t in c.tiers} == pytest.approx({"nvlink": 7 / 8 * GIB, "leaf": 28 / 64 * GIB})
    a = load_model("deepseek-v3").architecture
    assert a is not None and a.moe is not None and a.moe.active == 8
    (limited,) = ep_calls(a, Layout(pp=16, dp=128, ep=64), 1, 4096, 2.0, False, node_limit=4)
    (free,) = ep_calls(a, Layout(pp=16, dp=128, ep=64), 1, 4096, 2.0, False)
    assert (limited.network_share, free.network_share) == (0.5, 1.0)


def test_a_token_reaches_the_domains_its_experts_are_in() -> None:
    """domains_per_token against counting: every top-k set of E experts spread evenly over N domains, each equally
    likely (a force-balanced router), and the domains each set touches, averaged."""
    from itertools import combinations

    for experts, top_k, domains in ((8, 2, 2), (16, 4, 4), (12, 3, 3), (16, 1, 4), (8, 8, 4)):
        per = experts // domains
        sets = list(combinations(range(experts), top_k))
        counted = sum(len({e // per for e in chosen}) for chosen in sets) / len(sets)
        assert domains_per_token(top_k, experts, domains) == pytest.approx(counted, rel=1e-12)
    assert domains_per_token(8, 256, 1) == 1.0


def test_a_flex_dispatch_crosses_the_network_once_per_node_it_reaches(h100: TopologySpec) -> None:
    """DeepEP and HybridEP send a token over InfiniBand once to each node that holds one of its experts and forward
    its copies over NVLink there (DeepEP's hybrid-ep docs/Hybrid-EP_Implementation.md, "RDMA communication
    pattern"). DeepSeek-V3 (top-8 of 256) at EP 32 on 4 nodes: a token reaches D = 4 (1 - C(192, 8) / C(256, 8))
    nodes, 3.61; of its 8 copies' bytes, 24/32 would leave the node, and D/8 of that does."""
    size = GIB
    reached = 4 * (1 - math.comb(192, 8) / math.comb(256, 8))
    assert reached == pytest.approx(3.614, abs=1e-3)
    c = all_to_all(h100, place(h100, 32), size, routed=(8, 256))
    by_tier = {t.tier: t.bytes_per_gpu for t in c.tiers}
    assert by_tier == pytest.approx({"nvlink": 7 / 8 * size, "leaf": 24 / 32 * size * reached / 8})
    inside = all_to_all(h100, place(h100, 8), size, routed=(8, 256))
    assert inside == all_to_all(h100, place(h100, 8), size)  # one node: nothing to send once per node
    a = load_model("deepseek-v3").architecture
    assert a is not None
    (flex,) = ep_calls(a, Layout(pp=8, dp=32, ep=32), 1, 4096, 2.0, False, dispatcher="flex")
    (limited,) = ep_calls(a, Layout(pp=8, dp=32, ep=32), 1, 4096, 2.0, False, node_limit=4, dispatcher="flex")
    (plain,) = ep_calls(a, Layout(pp=8, dp=32, ep=32), 1, 4096, 2.0, False)
    assert (flex.routed, limited.routed, plain.routed) == ((8, 256), None, None)  # a node limit keeps M / k


def test_all_to_all_beyond_a_leaf_also_loads_the_spine_with_what_leaves_the_leaf(h100: TopologySpec) -> None:
    """One GPU on each of 64 nodes (TP8), 32 nodes per leaf: all 63/64 of S crosses the NIC, half crosses the spine."""
    group = place_group(h100, list(range(0, 512, 8)))
    c = all_to_all(h100, group, GIB)
    assert {t.tier: t.bytes_per_gpu for t in c.tiers} == pytest.approx({"leaf": 63 / 64 * GIB, "spine": 32 / 64 * GIB})
    assert c.tiers[1].nested


def test_send_recv_crosses_the_tier_between_its_two_ranks(h100: TopologySpec) -> None:
    """A pipeline stage boundary: NVLink inside a node, the NIC across nodes; one Simple step of latency."""
    inside = send_recv(h100, place_group(h100, [0, 1]), 64 * 2**20)
    across = send_recv(h100, place_group(h100, [0, 8]), 64 * 2**20)
    assert inside.bandwidth_seconds == pytest.approx(64 * 2**20 / (450e9 * 0.82), rel=1e-12)
    assert across.bandwidth_seconds == pytest.approx(64 * 2**20 / (50e9 * 0.98), rel=1e-12)
    assert across.latency_seconds > inside.latency_seconds > h100.call_overhead
    with pytest.raises(ValueError, match="pairs two ranks"):
        send_recv(h100, place(h100, 4), 1.0)


def test_the_group_of_rank_zero_is_the_first_group_built_alone() -> None:
    """A job of a million GPUs needs one group of each kind, not all of them: group_of_rank_zero builds only that."""
    for layout in (
        Layout(tp=2, dp=3, pp=4, order="tp-dp-pp"),
        Layout(tp=8, cp=2, pp=4, dp=4),
        Layout(pp=16, dp=128, ep=64),
    ):
        for kind in group_kinds():
            assert group_of_rank_zero(layout, kind) == group_members(layout, kind)[0], (layout, kind)


def test_an_order_not_ending_in_pp_needs_expert_dp_equal_to_dp() -> None:
    """parallel_state.py: `order.endswith("pp") or pipeline_model_parallel_size == 1 or expert_data_parallel_size ==
    data_parallel_size`."""
    assert Layout(tp=2, pp=2, dp=4, order="tp-pp-dp").gpus == 16  # no experts: expert-DP = DP
    with pytest.raises(ValueError, match=r"^--order: 'tp-pp-ep-dp-cp' does not end in pp"):
        Layout(pp=2, dp=8, ep=4, order="tp-pp-ep-dp-cp")


def test_the_allgather_dispatcher_gathers_each_token_once_over_expert_tp_x_ep() -> None:
    """Megatron's default MoE dispatcher (token_dispatcher.py MoEAllGatherTokenDispatcher): [(S/TP)B, H] gathered
    over the tp_ep group to [(S/TP)B x TP x EP, H] before the experts, the outputs reduce-scattered back after them;
    backward each call's gradient is the other. The routing map (a bool per expert) and the probabilities are
    gathered beside them forward, the probabilities' gradients reduce-scattered backward. Mixtral 8x7B at TP 2
    (SP) x EP 4, one micro-batch of 4,096 tokens: 2,048 tokens a GPU, 2,048 x 4,096 x 2 bytes x 8 = 128 MiB a call,
    two of each per MoE layer (32 layers); the routing map 2,048 x 8 x 8 experts = 128 KiB, once a layer."""
    a = load_model("mixtral-8x7b").architecture
    assert a is not None
    layout = Layout(tp=2, ep=4, dp=4)
    gather, scatter, routing, probs, probs_grad = ep_calls(a, layout, 1, 4096, 2.0, True, dispatcher="allgather")
    assert (gather.op, scatter.op, gather.group, scatter.group) == ("all_gather", "reduce_scatter", "etp-ep", "etp-ep")
    assert gather.message_bytes == scatter.message_bytes == 2048 * 4096 * 2 * 8 == 128 * 2**20
    assert gather.per_micro_batch == scatter.per_micro_batch == 2 * 32
    assert (routing.op, probs.op, probs_grad.op) == ("all_gather", "all_gather", "reduce_scatter")
    assert routing.message_bytes == 2048 * 8 * 8 == 128 * 2**10 and probs.message_bytes == 2 * routing.message_bytes
    assert routing.per_micro_batch == probs.per_micro_batch == probs_grad.per_micro_batch == 32
    assert group_of_rank_zero(layout, "etp-ep") == list(range(8))  # tp-cp-ep-dp-pp: expert TP and EP the fastest
