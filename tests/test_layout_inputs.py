"""Layouts Megatron would refuse are refused by the flag that breaks them, and groups that do not sit alike (a TP
that does not divide the node) are costed by their worst placed member group, checked against every group that
Megatron's rank generator builds."""

from __future__ import annotations

import pytest
from conftest import cli_report as report
from conftest import run_cli as run

from dpcost.catalog import load_topology
from dpcost.engine.layout import Layout, group_members, translates_place_alike
from dpcost.engine.layout_estimate import placements
from dpcost.engine.placement import Placement, job_view, place_group
from dpcost.specs import TopologySpec


@pytest.fixture(scope="module")
def h100() -> TopologySpec:
    return load_topology("dgx-h100")


def _domain_sizes(t: TopologySpec) -> list[int]:
    return [tier.size for tier in t.tiers if tier.size is not None]


def _spread(p: Placement) -> tuple[int, int, tuple[float, ...]]:
    return len(p.levels), p.nodes, tuple(level.domain for level in p.levels)


@pytest.mark.parametrize(
    ("layout", "kind", "alike"),
    [
        (Layout(tp=8, pp=16, dp=128), "tp", True),
        (Layout(tp=8, pp=16, dp=128), "dp-cp", True),  # one rank per node, whichever TP rank it holds
        (Layout(tp=8, pp=16, dp=128), "pp", True),
        (Layout(tp=2, cp=2, dp=6), "cp", True),
        (Layout(tp=3, dp=8), "tp", False),  # ranks 0-2 on one node, 6-8 across two
    ],
)
def test_groups_that_sit_alike_are_told_from_those_that_do_not(
    h100: TopologySpec, layout: Layout, kind: str, alike: bool
) -> None:
    """Checked by brute force over every group parallel_state.py's generator builds (group_members)."""
    spreads = {_spread(place_group(h100, g)) for g in group_members(layout, kind)}
    assert (len(spreads) == 1) == alike
    assert translates_place_alike(layout, kind, _domain_sizes(h100)) == alike


LAYOUTS = [
    Layout(tp=tp, cp=cp, pp=pp, dp=dp, order=order)
    for tp in (1, 2, 3, 4, 8)
    for cp in (1, 3)
    for pp in (1, 5)
    for dp in (2, 6, 32)
    for order in ("tp-cp-ep-dp-pp", "dp-tp-cp-ep-pp")
    if tp * cp * pp * dp <= 2048
]


@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
def test_groups_said_to_sit_alike_do(h100: TopologySpec, layout: Layout) -> None:
    """translates_place_alike may be cautious (the exact path then places each translate), never wrong."""
    for kind in ("tp", "cp", "dp-cp", "pp"):
        if translates_place_alike(layout, kind, _domain_sizes(h100)):
            assert len({_spread(place_group(h100, g)) for g in group_members(layout, kind)}) == 1, kind


@pytest.mark.parametrize(
    "layout",
    [Layout(tp=3, dp=8), Layout(tp=3, pp=2, dp=4), Layout(tp=6, dp=4), Layout(tp=2, cp=3, dp=4), Layout(tp=8, dp=16)],
)
def test_each_kind_is_costed_on_its_worst_placed_group(h100: TopologySpec, layout: Layout) -> None:
    """The collective waits for its slowest group: the placement costed is the one whose group crosses the most
    tiers, then the most nodes, of all the groups Megatron builds."""
    placed = placements(h100, layout)
    for kind in ("tp", "cp", "dp-cp"):
        worst = max(_spread(place_group(h100, g))[:2] for g in group_members(layout, kind))
        assert _spread(placed[kind])[:2] == worst, kind


def test_tp_3_on_8_gpu_nodes_crosses_the_network_and_warns() -> None:
    code, out, err = run(
        "estimate", "--model", "gpt3-175b", "--tp", "3", "--dp", "8", "--global-batch", "64", "--format", "json"
    )
    assert code == 0, err
    assert '"tp-across-domains"' in out and "give --tp a divisor of 8" in out


@pytest.mark.parametrize(
    ("args", "flag", "says"),
    [
        (["--model", "llama-70b", "--pp", "81", "--dp", "1"], "--pp", "81 pipeline stages need at least one layer"),
        (["--model", "deepseek-v3", "--ep", "3", "--dp", "6"], "--ep", "does not divide deepseek-v3's 256 experts"),
        (["--model", "mixtral-8x7b", "--ep", "16", "--dp", "16"], "--ep", "does not divide mixtral-8x7b's 8 experts"),
        (["--model", "llama-70b", "--cp", "3", "--dp", "8"], "--cp", "2 x CP = 6 equal chunks"),
        (["--model", "llama-70b", "--dp", "8", "--pp-schedule", "gpipe"], "--pp-schedule", "give --pp 2 or more"),
        (
            ["--model", "llama-70b", "--pp", "4", "--dp", "2", "--pp-schedule", "interleaved"],
            "--pp-schedule",
            "give --virtual-stages 2 or more",
        ),
        (
            ["--model", "llama-70b", "--pp", "4", "--dp", "2", "--virtual-stages", "2", "--pp-schedule", "gpipe"],
            "--pp-schedule",
            "drop --virtual-stages",
        ),
        (
            ["--model", "mixtral-8x7b", "--tp", "8", "--dp", "2", "--etp", "3", "--sequence-parallel"],
            "--etp",
            "ETP x EP x PP = 3 x 1 x 1 = 3 must divide the 16 GPUs",
        ),
        (
            ["--model", "gpt3-175b", "--tp", "8", "--pp", "8", "--dp", "16", "--tp-comm-overlap"],
            "--tp-comm-overlap",
            "needs --sequence-parallel",
        ),
        (
            ["--model", "mixtral-8x7b", "--ep", "8", "--dp", "8", "--fused-grouped-mlp"],
            "--fused-grouped-mlp",
            "runs MXFP8 matmuls on Blackwell",
        ),
        (
            ["--model", "llama-70b", "--pp", "8", "--dp", "1", "--topology", "dgx-b200", "--fused-grouped-mlp"],
            "--fused-grouped-mlp",
            "no gated routed experts",
        ),
        (
            [
                "--model",
                "mixtral-8x7b",
                "--dp",
                "8",
                "--topology",
                "dgx-b200",
                "--compute-dtype",
                "fp8",
                "--fused-grouped-mlp",
            ],
            "--fused-grouped-mlp",
            "give a layout or --framework megatron",
        ),
        (
            ["--model", "llama-70b", "--tp", "8", "--dp", "2", "--compute-dtype", "fp8", "--fp8-output-proj"],
            "--fp8-output-proj",
            "needs MXFP8: give --compute-dtype fp8 on a Blackwell GPU",
        ),
        (
            ["--model", "llama-70b", "--tp", "8", "--dp", "2", "--topology", "dgx-b200", "--fp8-output-proj"],
            "--fp8-output-proj",
            "needs MXFP8",
        ),
        (
            [
                "--model",
                "llama-8b",
                "--dp",
                "8",
                "--topology",
                "dgx-b200",
                "--compute-dtype",
                "fp8",
                "--fp8-output-proj",
            ],
            "--fp8-output-proj",
            "give a layout or --framework megatron",
        ),
    ],
)
def test_layouts_megatron_refuses_are_refused_by_their_flag(args: list[str], flag: str, says: str) -> None:
    """Megatron-Core: num_moe_experts % EP (moe_layer), seq % 2CP (get_batch_on_this_cp_rank), tp_comm_overlap
    needs sequence_parallel (arguments.py); a pipeline stage without a layer is not an automatic split."""
    code, _, err = run("estimate", *args)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"dpcost: error: {flag}:") and says in lines[0], err


def test_shard_group_under_a_layout_is_named_as_ignored() -> None:
    code, out, err = run(
        "estimate", "--model", "llama-70b", "--tp", "8", "--dp", "16", "--zero", "3", "--shard-group", "4",
        "--format", "json",
    )  # fmt: skip
    assert code == 0, err
    assert "--shard-group" in out and "ignored-flags" in out


@pytest.mark.parametrize(("gpus", "per_domain"), [(256, 64), (1024, 64), (128, 64), (144, 72), (200, 40), (64, 72)])
def test_a_job_gets_nvl72_racks_in_even_segments(gpus: int, per_domain: int) -> None:
    """NVIDIA's launcher asks Slurm for GB200 racks in segments of the greatest divisor of the job's trays that an
    18-tray rack holds (dgxc-benchmarking cli/llmb-run job_launcher.py _compute_segment_size): 16 trays, 64 GPUs,
    for 64 or 256 trays; 18 for 36; 10 for 50. A job that fits one rack keeps it whole."""
    view = job_view(load_topology("gb200-nvl72"), gpus)
    assert view.tiers[0].size == per_domain
    assert view.tiers[1].size == 8 * per_domain  # the scalable unit's 8 racks, each holding the job's segment


def test_job_view_changes_only_domains_built_of_trays(h100: TopologySpec) -> None:
    """An 8-GPU node is one host: a job of 500 GPUs fills 62 nodes and part of a 63rd, its domains unchanged."""
    assert job_view(h100, 500) is h100 and job_view(h100, 1024) is h100
    gb200 = load_topology("gb200-nvl72")
    assert job_view(gb200, 73) is gb200  # not whole trays


def test_on_nvl72_segments_every_expert_group_of_32_stays_in_its_rack() -> None:
    """DeepSeek-V3 at PP8 x EP32 on 256 GB200: with the job's racks in 64-GPU segments every EP group of 32 is inside
    one NVLink domain, as each of Megatron's groups is (checked over all of them)."""
    view = job_view(load_topology("gb200-nvl72"), 256)
    layout = Layout(pp=8, dp=32, ep=32)
    assert {place_group(view, g).nodes for g in group_members(layout, "ep")} == {1}
    assert placements(view, layout)["ep"].nodes == 1


def test_gpipe_holds_more_activations_for_the_same_step() -> None:
    """--pp-schedule gpipe: the same bubble and step as 1F1B, every micro-batch's activations held at once."""
    args = ["estimate", "--model", "llama-8b", "--pp", "4", "--dp", "2", "--global-batch", "32", "--recompute", "full",
            "--format", "json"]  # fmt: skip
    one_f_one_b, gpipe = report(*args), report(*args, "--pp-schedule", "gpipe")
    assert gpipe["time"]["step_seconds"] == pytest.approx(one_f_one_b["time"]["step_seconds"])
    held = [r["memory"]["stages"][r["setup"]["zero_stage"]]["activations_bytes"] for r in (one_f_one_b, gpipe)]
    assert held[1] > 2 * held[0]
