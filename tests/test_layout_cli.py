"""`dpcost estimate` with a layout (issue 19): what it reports, that pure DP is unchanged, and its refusals."""

from __future__ import annotations

import pytest
from conftest import REFERENCE
from conftest import cli_report as report
from conftest import run_cli as run

from dpcost.catalog import load_model
from dpcost.engine.layout_memory import MemoryLayout, layout_memory_for

LLAMA_405B = [
    "estimate", "--model", "llama-405b", "--tp", "8", "--pp", "16", "--dp", "128", "--global-batch", "2048",
    "--seq-len", "8192", "--sequence-parallel",
]  # fmt: skip
DEEPSEEK_V3 = [
    "estimate", "--model", "deepseek-v3", "--pp", "16", "--ep", "64", "--dp", "128", "--topology", "hgx-h800",
    "--global-batch", "15360", "--seq-len", "4096",
]  # fmt: skip


def test_the_layout_is_reported_with_its_groups_and_the_step_sums() -> None:
    r = report(*LLAMA_405B)
    lay = r["layout"]
    assert (lay["gpus"], lay["tp"], lay["pp"], lay["dp"], lay["micro_batches"]) == (16384, 8, 16, 128, 16)
    groups = {g["group"]: g for g in lay["groups"]}
    assert groups["tp"]["tiers"] == ["nvlink"] and groups["tp"]["domains"] == 1
    assert (groups["dp-cp"]["ranks"], groups["dp-cp"]["ranks_per_domain"], groups["dp-cp"]["domains"]) == (128, 1, 128)
    t = r["time"]
    assert sum(b["seconds"] for b in t["breakdown"]) == pytest.approx(t["step_seconds"], rel=1e-9)
    assert any(b["term"] == "pipeline bubble" and b["seconds"] > 0 for b in t["breakdown"])
    assert r["setup"]["framework"] == "megatron" and r["setup"]["zero_stage"] == 1


def test_memory_per_gpu_is_megatrons_for_the_most_loaded_stage() -> None:
    """The reported allocation is layout_memory.py's (tested against Megatron's formula there), on the stage
    holding the most: weights 2 + gradients 4 bytes per parameter, Adam's 12 over DP, the activations in flight
    (selective recomputation given: the automatic choice is full, where selective does not fit)."""
    r = report(*LLAMA_405B, "--recompute", "selective")
    spec = MemoryLayout(
        tp=8, pp=16, dp=128, sequence_parallel=True, recompute="selective", zero=1,
        first_stage_layers=7, last_stage_layers=7,
        workspaces=2 * 32 * 2**20 + 32 * 2**20 + 1024,  # PyTorch's two cuBLAS workspaces and TE's, on Hopper
        dummy_wgrads=True,  # TE's placeholder weight gradients under Megatron's gradient-accumulation fusion
    )  # fmt: skip
    megatron = layout_memory_for(load_model("llama-405b"), spec, 8192, 1, 16).most_loaded
    row = r["memory"]["stages"][1]
    assert row["allocated_bytes"] == int(megatron.total)
    assert row["params_bytes"] == int(2 * megatron.parameters) and row["grads_bytes"] == int(4 * megatron.parameters)
    assert r["layout"]["memory_stage"] == megatron.stage == 1


def test_deepseek_v3_fits_on_2048_h800s_at_pp16_ep64_with_zero1() -> None:
    """Issue 19's must-show: DeepSeek-V3 as DeepSeek trained it (arXiv 2412.19437 section 3.2: PP16, EP64 over 8
    nodes, ZeRO-1 DP) fits in the H800's 80 GB."""
    r = report(*DEEPSEEK_V3)
    assert r["summary"]["fits"] and r["setup"]["zero_stage"] == 1
    lay = r["layout"]
    assert (lay["gpus"], lay["ep"], lay["expert_dp"]) == (2048, 64, 2)
    ep = next(g for g in lay["groups"] if g["group"] == "ep")
    assert (ep["ranks"], ep["domains"]) == (64, 8)
    overlapped = report(*DEEPSEEK_V3, "--ep-comm-overlap")
    assert overlapped["time"]["step_seconds"] < r["time"]["step_seconds"]


def test_pure_dp_reports_no_layout() -> None:
    assert "layout" not in report("estimate", "--model", "llama-8b", "--dp", "8")


def test_tp_across_nodes_is_warned_with_its_cause() -> None:
    """TP 16 on 8-GPU nodes is too large for a node; TP 8 with DP varying fastest (--order dp-tp-...) puts each TP
    group's ranks 16 apart, one per node: the order is the cause, not TP's size."""
    r = report("estimate", "--model", "gpt3-175b", "--tp", "16", "--dp", "4", "--global-batch", "64")
    (warning,) = [w for w in r["warnings"] if w["code"] == "tp-across-domains"]
    assert warning["action"].startswith("keep --tp at or below 8")
    r = report("estimate", "--model", "llama-70b", "--tp", "8", "--dp", "16", "--order", "dp-tp-cp-ep-pp")
    (warning,) = [w for w in r["warnings"] if w["code"] == "tp-across-domains"]
    assert "span 8 NVLink domains" in warning["message"]
    assert warning["action"].startswith("put tp first in --order")


@pytest.mark.parametrize(
    ("args", "start"),
    [
        (["--dp", "8", "--tp", "2", "--framework", "deepspeed"], "dpcost: error: --framework: a TP/CP/PP/EP layout is"),
        (
            ["--dp", "8", "--tp", "2", "--pp", "2", "--framework", "fsdp", "--zero", "3"],
            "dpcost: error: --zero: under PP",
        ),
        (["--dp", "8", "--tp", "2", "--virtual-stages", "2"], "dpcost: error: --virtual-stages: interleaving needs"),
        (["--dp", "8", "--ep", "8"], "dpcost: error: --ep: llama-70b has no experts to split"),
        (["--dp", "8", "--tp", "3"], "dpcost: error: --tp: 3 does not divide llama-70b's 64 attention heads"),
        (["--dp", "8", "--tp", "16"], "dpcost: error: --tp: 16 does not divide llama-70b's 8 KV heads"),
        (["--dp", "8", "--tp", "2", "--recompute", "op"], "dpcost: error: --recompute: a layout runs Megatron's"),
        (["--dp", "200000", "--tp", "8", "--pp", "8"], "dpcost: error: --dp: TP x CP x PP x DP = 12800000 GPUs"),
        (["--dp", "8", "--tp", "2", "--order", "tp-dp-zz"], "dpcost: error: --order: 'tp-dp-zz' must name each of"),
        (["--dp", "8", "--ep-node-limit", "4"], "dpcost: error: --ep-node-limit: limits where the expert all-to-all"),
    ],
)
def test_impossible_layouts_get_one_line_and_exit_2(args: list[str], start: str) -> None:
    base = ["estimate", "--model", "llama-70b"]
    code, out, err = run(*base, *args)
    assert code == 2 and out == "", (code, out, err)
    assert err.startswith(start) and err.count("\n") == 1, err


def test_full_recomputation_is_chosen_where_selective_does_not_fit() -> None:
    """SC'21's 529.6B on TP8 x PP35 (Narayanan et al. Table 1) holds 35 micro-batches of 3 layers on its first stage:
    without recomputation (or selective, which under flash attention drops nothing) it needs more than an 80 GB
    A100; keeping each layer's input alone (2sbh per layer, Korthikanti et al. section 4) fits, and the step then
    re-runs every forward: more time than selective's, which the automatic choice takes only where it fits."""
    common = ["estimate", "--model", "tests/reference/large-runs/models/gpt-529.6b.yaml", "--topology", "dgx-a100",
              "--tp", "8", "--pp", "35", "--dp", "2", "--global-batch", "2240", "--seq-len", "2048"]  # fmt: skip
    selective, full, chosen = (report(*common, *f) for f in (["--recompute", "selective"], ["--recompute", "full"], []))
    first = {name: r["memory"]["stages"][0] for name, r in (("selective", selective), ("full", full))}
    assert not first["selective"]["fits"] and first["full"]["fits"]
    assert chosen["setup"]["recompute"] == "full" and chosen["memory"]["stages"][0]["fits"]
    assert first["full"]["activations_bytes"] < first["selective"]["activations_bytes"] / 5
    assert full["time"]["step_seconds"] > selective["time"]["step_seconds"]


def test_a_layout_recomputes_the_modules_given() -> None:
    """Megatron-LM's --recompute-modules mlp re-runs each layer's MLP forward in the backward
    (transformer_config.py recompute_modules): its three matmuls, 2 x 3 x tokens x hidden x ffn / TP FLOPs per
    layer and micro-batch, no faster than the dense peak. Llama 3 70B on TP4 x PP4, 20 layers a stage, 32
    micro-batches of 8,192 tokens."""
    common = ["estimate", "--model", "llama-70b", "--tp", "4", "--pp", "4", "--dp", "8", "--global-batch", "256",
              "--seq-len", "8192", "--sequence-parallel", "--recompute", "selective"]  # fmt: skip
    attention = report(*common, "--recompute-modules", "core_attn")
    with_mlp = report(*common, "--recompute-modules", "core_attn,mlp")
    mlp_flops = 2 * 3 * 8192 * 8192 * 28672 / 4 * 20 * 32
    added = with_mlp["time"]["step_seconds"] - attention["time"]["step_seconds"]
    assert added >= mlp_flops / 989e12
    assert added <= 2 * mlp_flops / 989e12  # at no less than half the peak: the matmuls, not a whole forward


def test_a_layout_recomputes_mla_up_projections_when_asked() -> None:
    """Megatron-Core's --recompute-modules mla_up_proj re-runs MLA's up-projections (and RoPE) in the backward
    (multi_latent_attention.py qkv_up_proj_and_rope_apply): per layer and token 2 x (1536 x 128 x 192 + 512 x 128 x
    256) FLOPs, on DeepSeek-V3's busiest stage of PP 16 (4 of 61 layers) for each of 120 micro-batches of 4,096
    tokens: no faster than the dense BF16 peak, and not slower than a matmul at 40% of it with the bubble."""
    common = ["estimate", "--model", "deepseek-v3", "--topology", "hgx-h800", "--pp", "16", "--ep", "64",
              "--dp", "128", "--zero", "1", "--global-batch", "15360", "--seq-len", "4096",
              "--recompute", "selective"]  # fmt: skip
    attention = report(*common, "--recompute-modules", "core_attn")
    with_up = report(*common, "--recompute-modules", "core_attn,mla_up_proj")
    up_flops = 2 * (1536 * 128 * 192 + 512 * 128 * 256) * 4 * 4096 * 120
    added = with_up["time"]["step_seconds"] - attention["time"]["step_seconds"]
    assert up_flops / 989e12 <= added <= up_flops / (0.4 * 989e12) * (120 + 15) / 120


def test_a_layout_reduces_gradients_in_bf16_when_asked() -> None:
    """Megatron-Bridge's performance presets set grad_reduce_in_fp32=False: the gradient buffer is bf16, 2 bytes a
    parameter instead of Megatron-LM's fp32 default (arguments.py, accumulate_allreduce_grads_in_fp32 under --bf16);
    fp8 or int8 reductions are not Megatron-Core's and are refused."""
    common = ["estimate", "--model", "llama-70b", "--tp", "4", "--pp", "8", "--dp", "2", "--global-batch", "128",
              "--seq-len", "8192", "--sequence-parallel"]  # fmt: skip
    default, bf16 = report(*common), report(*common, "--grad-dtype", "bf16")
    assert (default["setup"]["grad_dtype"], bf16["setup"]["grad_dtype"]) == ("fp32", "bf16")
    for a, b in zip(default["memory"]["stages"], bf16["memory"]["stages"], strict=True):
        assert b["grads_bytes"] == pytest.approx(a["grads_bytes"] / 2, rel=1e-9)
        assert a["total_bytes"] - b["total_bytes"] == pytest.approx(a["grads_bytes"] / 2, rel=1e-6)
    code, _out, err = run(*common, "--grad-dtype", "fp8")
    assert code == 2 and err.startswith("dpcost: error: --grad-dtype: a layout reduces gradients as Megatron-Core")


def test_memory_with_a_layout_shows_the_rows_estimate_costs() -> None:
    """`dpcost memory` takes the layout too: Megatron's rows with the pipeline full (as its formula assumes), as
    `estimate` costs them with as many micro-batches as stages, not the pure-DP ZeRO table."""
    common = ["--model", "llama-405b", "--tp", "8", "--pp", "16", "--dp", "128", "--seq-len", "8192",
              "--sequence-parallel"]  # fmt: skip
    memory = report("memory", *common)
    est = report("estimate", *common, "--accum", "16")
    assert [r["total_bytes"] for r in memory["stages"]] == [r["total_bytes"] for r in est["memory"]["stages"]]
    assert len(memory["stages"]) == 2 and "most loaded pipeline stage" in memory["note"]


def test_inference_names_the_layout_flags_it_does_not_read() -> None:
    r = report("estimate", "--model", "llama-8b", "--dp", "8", "--tp", "2", "--mode", "inference")
    assert any(w["code"] == "ignored-flags" and "--tp" in w["message"] for w in r["warnings"])


def test_moe_with_tp_needs_sequence_parallelism_as_megatron_core_requires() -> None:
    code, out, err = run("estimate", "--model", "mixtral-8x7b", "--dp", "8", "--tp", "2")
    assert code == 2 and out == "" and err.startswith("dpcost: error: --sequence-parallel: Megatron-Core trains MoE")


def test_node_limited_routing_takes_half_of_deepseeks_all_to_all_off_the_network() -> None:
    """DeepSeek-V3 at EP64 on 8 nodes, top-8 routed to at most 4 nodes (arXiv 2412.19437 section 3.2.2): each
    dispatch crosses InfiniBand half as often, so its all-to-alls take less time and the step is shorter."""
    free = report(*DEEPSEEK_V3)
    limited = report(*DEEPSEEK_V3, "--ep-node-limit", "4")

    def ep_call(r: dict) -> dict:
        return next(c for c in r["layout"]["calls"] if c["dimension"] == "ep")

    assert ep_call(limited)["seconds_per_call"] < ep_call(free)["seconds_per_call"]
    assert limited["time"]["step_seconds"] < free["time"]["step_seconds"]


def test_the_flex_dispatcher_sends_fewer_bytes_over_the_network_and_needs_expert_parallelism() -> None:
    """--ep-dispatcher flex (DeepEP, HybridEP): DeepSeek-V3's all-to-alls at EP 64 over 8 nodes cross InfiniBand
    once per node a token reaches, not once per expert, so each call is shorter; alltoall is the default, and
    without EP there is nothing to dispatch."""

    def ep_call(r: dict) -> dict:
        return next(c for c in r["layout"]["calls"] if c["dimension"] == "ep")

    plain, flex = report(*DEEPSEEK_V3), report(*DEEPSEEK_V3, "--ep-dispatcher", "flex")
    assert report(*DEEPSEEK_V3, "--ep-dispatcher", "alltoall") == plain
    assert ep_call(flex)["seconds_per_call"] < ep_call(plain)["seconds_per_call"]
    code, out, err = run("estimate", "--model", "mixtral-8x7b", "--dp", "8", "--ep-dispatcher", "flex")
    assert code == 2 and out == "" and err.startswith("dpcost: error: --ep-dispatcher: ") and "--ep above 1" in err
    code, _, err = run("estimate", "--model", "mixtral-8x7b", "--dp", "8", "--ep", "8", "--ep-dispatcher", "deepep")
    assert code == 2 and "--ep-dispatcher" in err and "alltoall" in err and "\n" not in err.strip()


def test_a_recomputed_moe_layer_dispatches_and_combines_again() -> None:
    """Recomputing an MoE layer re-runs its forward, dispatcher included: full recomputation re-runs the whole
    layer, and recompute_modules "moe" checkpoints moe_layer.py's route -> dispatch -> compute -> combine. Mixtral's
    32 MoE layers on EP 8 then make 6 all-to-alls per layer and micro-batch (dispatch and combine, forward, backward
    and forward again), not 4."""
    common = ["estimate", "--model", "mixtral-8x7b", "--ep", "8", "--dp", "8", "--global-batch", "64"]

    def all_to_alls(*extra: str) -> int:
        calls = report(*common, *extra)["layout"]["calls"]
        return sum(c["calls_per_micro_batch"] for c in calls if c["op"] == "all_to_all")

    assert all_to_alls("--recompute", "none") == all_to_alls("--recompute", "selective") == 4 * 32
    assert all_to_alls("--recompute", "full") == 6 * 32
    assert all_to_alls("--recompute", "selective", "--recompute-modules", "moe") == 6 * 32


def test_a_step_the_bubble_dominates_is_said_to_be_bubble_bound() -> None:
    """DeepSeek-V3 at PP16 with one micro-batch per pipeline: 15 of 16 slots idle, (p - 1) / (m + p - 1) = 94% of
    the pipeline's time, far more than its compute or its exposed calls."""
    code, out, err = run(
        "estimate", "--model", "deepseek-v3", "--pp", "16", "--ep", "64", "--dp", "128", "--topology", "hgx-h800",
        "--zero", "1",
    )  # fmt: skip
    assert code == 0, err
    assert "pipeline bubble-bound" in out and "idle in the pipeline's bubble" in out
    assert "max(T_compute, T_comm) + bubble" in out and "T_compute + T_comm + bubble" in out


def test_a_plan_search_that_finds_nothing_still_says_its_batch() -> None:
    code, out, err = run("plan", "--model", "llama-70b", "--gpus", "12")
    assert code == 0, err
    assert "12 sequences of 4,096 tokens per step on 12 GPUs" in out


def test_the_experts_gradients_and_parameters_are_listed_on_expert_dp() -> None:
    """DeepSeek-V3 at PP16 x EP64 x DP128, ZeRO-1: expert-DP = 2048 / (EP 64 x PP 16) = 2 ranks, one per node. The
    most loaded stage's MoE layers (4) each hold 256 / 64 = 4 experts of 3 x 7168 x 2048 weights: their fp32
    gradients reduce-scattered once per step over expert-DP, each rank sending (2 - 1) / 2 of them, and their bf16
    parameters gathered back."""
    r = report(
        "estimate", "--model", "deepseek-v3", "--pp", "16", "--ep", "64", "--dp", "128", "--topology", "hgx-h800",
        "--zero", "1", "--global-batch", "15360",
    )  # fmt: skip
    experts = 4 * 4 * 3 * 7168 * 2048
    rows = {c["purpose"]: c for c in r["communication"]["collectives"]}
    grads, params = rows["expert gradients"], rows["expert parameters"]
    assert (grads["op"], grads["bytes"], grads["occurrences"]) == ("reduce_scatter", experts * 4, 1)
    assert grads["bytes_sent_per_rank"] == experts * 4 // 2
    assert (params["op"], params["bytes"]) == ("all_gather", experts * 2)


def test_sweep_and_estimate_say_the_jobs_gpus_and_nodes_under_a_layout() -> None:
    """TP8 x PP16 on 8-GPU nodes: each DP replica is 128 GPUs, so DP 32 is 4,096 GPUs on 512 nodes, while one DP
    group (one rank per node) spans 32 nodes."""
    rows = report("sweep", "--model", "llama-405b", "--tp", "8", "--pp", "16", "--dp", "32..64")
    assert [(r["dp"], r["nodes"]) for r in rows] == [(32, 512), (64, 1024)]
    code, out, _ = run("estimate", "--model", "llama-405b", "--tp", "8", "--pp", "16", "--dp", "32")
    assert code == 0
    assert "32 replicas of 128 GPUs (TP x CP x PP) = 4,096 GPUs on 512 nodes; a DP group spans 32 nodes x 1" in out


def test_meta_s_interleaved_405b_layout_is_costed_from_the_command_line() -> None:
    """Llama 3 405B as Meta ran it on 8,192 GPUs (TP8 x PP16 x DP64, interleaved, arXiv 2407.21783 section 3.3.2):
    126 layers do not split into 32 equal virtual stages; the ends take 3 layers (stage_layers), and the stages'
    layers are 7, 8, ..., 8, 7, as without interleaving."""
    r = report("estimate", "--model", "llama-405b", "--tp", "8", "--pp", "16", "--dp", "64", "--virtual-stages", "2",
               "--global-batch", "2048", "--seq-len", "8192", "--sequence-parallel", "--recompute", "none")  # fmt: skip
    assert [s["layers"] for s in r["layout"]["stages"]] == [7] + [8] * 14 + [7]
    assert r["layout"]["virtual_stages"] == 2


def test_the_breakdown_names_dp_beside_the_other_dimensions() -> None:
    """The issue's 'DP's share beside the others': under a layout, DP's exposed collectives are named as DP's."""
    r = report("estimate", "--model", "llama-405b", "--tp", "8", "--pp", "16", "--dp", "128", "--global-batch", "2048",
               "--seq-len", "8192", "--sequence-parallel")  # fmt: skip
    terms = [t["term"] for t in r["time"]["breakdown"]]
    assert "exposed TP calls" in terms and "exposed PP calls" in terms
    assert any(t.startswith("exposed DP ") for t in terms)
    assert not any(t in ("exposed all_gather", "exposed reduce_scatter", "exposed all_reduce") for t in terms)


def test_a_layout_sweep_row_carries_its_gpus_and_bubble_and_its_columns_sum() -> None:
    rows = report("sweep", "--model", "llama-405b", "--tp", "8", "--pp", "16", "--dp", "32..64")
    for row in rows:
        assert row["gpus"] == 128 * row["dp"]
        parts = row["compute_seconds"] + row["exposed_comm_seconds"] + row["losses_seconds"] + row["bubble_seconds"]
        assert parts == pytest.approx(row["step_seconds"], rel=1e-9)
    assert "gpus" not in report("sweep", "--model", "llama-8b", "--dp", "8..16")[0]


def test_a_dense_layout_lists_no_expert_groups() -> None:
    groups = {
        g["group"] for g in report("estimate", "--model", "llama-70b", "--tp", "8", "--dp", "16")["layout"]["groups"]
    }
    assert groups == {"tp", "dp-cp"}
    moe = report("estimate", "--model", "deepseek-v3", "--pp", "16", "--ep", "64", "--dp", "128", "--topology",
                 "hgx-h800", "--global-batch", "15360")  # fmt: skip
    assert {"ep", "edp"} <= {g["group"] for g in moe["layout"]["groups"]}


def test_the_memory_note_prints_megatrons_own_figure_for_the_layout() -> None:
    """Megatron-LM prints report_theoretical_memory at start-up, in MB of 2**20 bytes; the report says what it
    would print for the layout (layout_memory.LayoutMemory.total, held to the file's formulas in
    tests/test_layout_memory.py), beside the stage dpcost costs."""
    r = report("estimate", "--model", "llama-405b", "--tp", "8", "--pp", "16", "--dp", "128", "--global-batch", "2048",
               "--seq-len", "8192", "--sequence-parallel")  # fmt: skip
    layout = MemoryLayout(tp=8, pp=16, dp=128, zero=1, sequence_parallel=True, first_stage_layers=7,
                          last_stage_layers=7, recompute=r["setup"]["recompute"])  # fmt: skip
    megatron = layout_memory_for(load_model("llama-405b"), layout, 8192, 1, 16).total
    assert f"report_theoretical_memory prints {megatron / 2**20:,.0f} MB" in r["memory"]["note"]


def test_older_megatron_lms_pipeline_and_tp_backward_are_flags() -> None:
    """Megatron-LM before Megatron-Core split each pipeline send over TP and gathered it after the receive (SC'21
    section 4.1: 1/t of the bytes cross the link, then an all-gather over TP's NVLink), and before 16c90445
    (2021-09) waited for TP's backward all-reduce: the same plan sends 1/8 of the bytes, gathers them, and no longer
    hides the backward all-reduce."""
    base = ["estimate", "--model", "llama-70b", "--tp", "8", "--pp", "4", "--dp", "2", "--global-batch", "64",
            "--seq-len", "4096"]  # fmt: skip
    now = {(c["dimension"], c["op"], c["purpose"]): c for c in report(*base)["layout"]["calls"]}
    old_report = report(*base, "--no-tp-backward-async", "--pp-scatter-gather")
    old = {(c["dimension"], c["op"], c["purpose"]): c for c in old_report["layout"]["calls"]}
    send = ("pp", "send_recv", "activations and their gradients")
    assert old[send]["message_bytes"] * 8 == now[send]["message_bytes"]
    gather = old[("pp", "all_gather", "received chunks gathered over TP")]
    assert gather["group"] == "tp" and gather["message_bytes"] == now[send]["message_bytes"]
    backward = ("tp", "all_reduce", "input gradients, backward")
    assert now[backward]["overlapped"] and not old[backward]["overlapped"]


def test_the_bubble_advice_counts_its_slots_and_asks_for_no_smaller_micro_batch_than_one() -> None:
    """At micro-batch 1 and one micro-batch per step, PP 16's bubble is 15 idle slots beside the 1 that computes
    (Narayanan et al. 2021 section 2.2: (p - 1) / v); only a larger global batch (or interleaving) shrinks it."""
    r = report(*DEEPSEEK_V3[:-4])  # the default global batch: one micro-batch per pipeline
    bubble = next(w for w in r["warnings"] if w["code"] == "pipeline-bubble")
    assert "15 micro-batch slots idle beside the 1 that compute" in bubble["message"]
    assert "smaller micro-batch" not in bubble["action"]


def test_the_allgather_dispatcher_runs_its_calls_on_the_expert_tp_x_ep_group() -> None:
    """--ep-dispatcher allgather (Megatron's default dispatcher) gathers and reduce-scatters over expert TP x EP,
    a group the report lists only where a call runs on it; at EP 1 it still gathers over expert TP."""
    plan = ("estimate", "--model", "mixtral-8x7b", "--tp", "2", "--ep", "4", "--dp", "4", "--sequence-parallel")
    gathered = report(*plan, "--ep-dispatcher", "allgather")["layout"]
    ops = {(c["op"], c["group"]) for c in gathered["calls"] if c["dimension"] == "ep"}
    assert ops == {("all_gather", "etp-ep"), ("reduce_scatter", "etp-ep")}
    assert "etp-ep" in {g["group"] for g in gathered["groups"]}
    assert "etp-ep" not in {g["group"] for g in report(*plan)["layout"]["groups"]}
    tp_only = report("estimate", "--model", "mixtral-8x7b", "--tp", "2", "--dp", "4", "--sequence-parallel",
                     "--ep-dispatcher", "allgather")["layout"]  # fmt: skip
    assert {c["group"] for c in tp_only["calls"] if c["dimension"] == "ep"} == {"etp-ep"}
    # transformer_config.py: overlap_moe_expert_parallel_comm "is supported with alltoall/flex token dispatcher"
    code, out, err = run(*plan, "--ep-dispatcher", "allgather", "--ep-comm-overlap")
    assert code == 2 and out == "" and err.startswith("dpcost: error: --ep-comm-overlap: ")


def test_a_microbatch_group_outside_pp_to_m_is_refused_as_megatron_refuses_it() -> None:
    """schedules.py: "The number of contiguous micro-batches in a virtual pipeline stage should range in [PP, M]",
    and only an interleaved pipeline groups them."""
    plan = ("estimate", "--model", "llama-8b", "--dp", "2", "--pp", "4", "--global-batch", "64")
    assert run(*plan, "--virtual-stages", "2", "--microbatch-group", "8")[0] == 0
    for extra in (("--microbatch-group", "8"), ("--virtual-stages", "2", "--microbatch-group", "2"),
                  ("--virtual-stages", "2", "--microbatch-group", "33")):  # fmt: skip
        code, out, err = run(*plan, *extra)
        assert code == 2 and out == "" and err.startswith("dpcost: error: --microbatch-group: ")


def test_distributed_optimizer_instances_shard_within_and_all_reduce_across() -> None:
    """Megatron's --num-distributed-optimizer-instances N (param_and_grad_buffer.py, parallel_state.py): the
    optimizer states shard over DP x CP / N ranks, the gradients reduce-scatter within an instance of consecutive
    DP x CP ranks and each shard all-reduces across the N instances, the parameters gather within an instance. Llama
    3 70B at TP 8 x DP 32 with 4 instances: 12 bytes a parameter of Adam over 8 ranks where 32 held it, the
    reduce-scatter on 8 ranks, its 1/8 shard all-reduced across 4."""
    plan = ("--model", "llama-70b", "--tp", "8", "--dp", "32", "--global-batch", "256", "--seq-len", "8192",
            "--sequence-parallel", "--recompute", "none")  # fmt: skip
    one, four = report("estimate", *plan), report("estimate", *plan, "--dist-opt-instances", "4")
    held = one["memory"]["stages"][1]["params_bytes"] / 2  # the rank's 16-bit weights
    optimizer = [r["memory"]["stages"][1]["optimizer_bytes"] for r in (one, four)]
    assert optimizer[1] - optimizer[0] == pytest.approx(12 * held * (1 / 8 - 1 / 32), rel=1e-6)
    calls = {c["op"]: c for c in four["communication"]["collectives"] if "embedding" not in c["purpose"]}
    scatter, across = calls["reduce_scatter"], calls["all_reduce"]
    assert scatter["bytes_sent_per_rank"] == pytest.approx(7 / 8 * scatter["bytes"], rel=1e-6)
    assert across["bytes"] == pytest.approx(scatter["bytes"] / 8, rel=1e-6)
    assert across["bytes_sent_per_rank"] == pytest.approx(2 * 3 / 4 * across["bytes"], rel=1e-6)


def test_distributed_optimizer_instances_need_a_layout_at_zero_1_and_whole_dp_ranks() -> None:
    """Instances shard the distributed optimizer (ZeRO 1) of a Megatron layout: N divides DP x CP (parallel_state.py
    asserts it), so DP 3 x CP 2 takes 2 instances and DP 6 x TP 2 not 4."""
    base = ("estimate", "--model", "llama-8b", "--global-batch", "96")
    for extra in (("--dp", "8"), ("--dp", "8", "--tp", "2", "--zero", "0"), ("--dp", "6", "--tp", "2")):
        code, out, err = run(*base, *extra, "--dist-opt-instances", "4")
        assert code == 2 and out == "" and err.startswith("dpcost: error: --dist-opt-instances: "), err
    assert run(*base, "--dp", "3", "--cp", "2", "--dist-opt-instances", "2")[0] == 0


def test_deferred_embedding_wgrads_need_a_pipeline_and_fused_accumulation() -> None:
    """Megatron refuses --defer-embedding-wgrad-compute without pipeline stages or without gradient-accumulation
    fusion (model_parallel_config.py); with both, the last stage holds more, the first the same."""
    base = ("estimate", "--model", "llama-8b", "--global-batch", "64", "--format", "json")
    unfused = ("--dp", "4", "--pp", "2", "--no-grad-accumulation-fusion")
    for extra in (("--dp", "8"), ("--dp", "4", "--tp", "2"), unfused):
        code, out, err = run(*base, *extra, "--defer-embedding-wgrad", "2")
        assert code == 2 and out == "" and err.startswith("dpcost: error: --defer-embedding-wgrad: "), err
    plain = report(*base, "--dp", "4", "--pp", "2")["layout"]["stages"]
    deferred = report(*base, "--dp", "4", "--pp", "2", "--defer-embedding-wgrad", "2")["layout"]["stages"]
    assert deferred[0]["memory_bytes"] == plain[0]["memory_bytes"]
    assert deferred[-1]["memory_bytes"] > plain[-1]["memory_bytes"]
    # dpcost's GPipe is not a Megatron schedule; a search without fusion would refuse it in every layout
    gpipe = ("--dp", "4", "--pp", "2", "--pp-schedule", "gpipe", "--defer-embedding-wgrad", "2")
    assert run(*base, *gpipe)[0] == 2
    code, _, err = run("plan", "--model", "llama-8b", "--gpus", "16", "--no-grad-accumulation-fusion",
                       "--defer-embedding-wgrad", "2")  # fmt: skip
    assert code == 2 and err.startswith("dpcost: error: --defer-embedding-wgrad: "), err
    # `memory`, which does not know the step's micro-batches, holds a limit's calls (16 of 2.2 GB put the last
    # stage above the first, which the table shows), and refuses "every call"
    table = ("memory", "--model", "llama-8b", "--dp", "4", "--pp", "2")
    plain_rows = report(*table)["stages"]
    deferred_rows = report(*table, "--defer-embedding-wgrad", "16")["stages"]
    assert [r["stage"] for r in plain_rows] == [r["stage"] for r in deferred_rows]
    assert all(d["activations_bytes"] > p["activations_bytes"] for d, p in zip(deferred_rows, plain_rows, strict=True))
    code, _, err = run(*table, "--defer-embedding-wgrad", "0")
    assert code == 2 and err.startswith("dpcost: error: --defer-embedding-wgrad: 0 keeps every call"), err
    # Megatron's hybrid (Mamba) models build their output layer without the buffers (hybrid_model.py)
    hybrid = str(REFERENCE / "hf-configs" / "nemotron-h-8b-base-8k.json")
    code, _, err = run("estimate", "--model", hybrid, "--dp", "4", "--pp", "2", "--defer-embedding-wgrad", "2")
    assert code == 2 and "hybrid" in err, err
    code, _, err = run("plan", "--model", hybrid, "--gpus", "16", "--defer-embedding-wgrad", "2")  # before searching
    assert code == 2 and "hybrid" in err, err


def test_mtp_modules_skip_megatrons_block_recomputation() -> None:
    """Megatron-Core's MTP block warns "recompute_method == 'block' is not supported for MTP yet" and skips the
    recomputation (multi_token_prediction.py @d98e8a64dd): with N at least every chunk's layers, the decoder layers
    re-run as under full recomputation and the MTP module does not, so the step is shorter by its re-run forward;
    without MTP the two are the same step."""
    plan = ["estimate", "--model", "deepseek-v3", "--pp", "16", "--ep", "64", "--dp", "128", "--topology",
            "hgx-h800", "--global-batch", "15360", "--seq-len", "4096", "--recompute", "full"]  # fmt: skip
    step = {}
    for mtp in ([], ["--mtp-layers", "1"]):
        for block in ([], ["--recompute-block", "100"]):
            step[bool(mtp), bool(block)] = report(*plan, *mtp, *block)["time"]["step_seconds"]
    assert step[False, True] == pytest.approx(step[False, False], rel=1e-12)
    assert step[True, True] < step[True, False]
