"""Memory per GPU: ZeRO's model-state formulas, DeepSpeed's estimators, Megatron's, activations, fit."""

from __future__ import annotations

import pytest
from conftest import REFERENCE, read_reference_csv

from dpcost.catalog import load_model, load_topology
from dpcost.engine.activations import kv_cache_bytes, layer_tensors
from dpcost.engine.checkpointing import activation_memory
from dpcost.engine.estimate import estimate
from dpcost.engine.loss import loss_memory
from dpcost.engine.memory import RECIPES, deepspeed_estimates, model_states
from dpcost.engine.params import count_params
from dpcost.errors import InputError
from dpcost.options import Options

ZERO = RECIPES["zero-paper"]


def _printed_tolerance(text: str) -> float:
    decimals = len(text.split(".")[1]) if "." in text else 0
    return 0.5 * 10**-decimals + 1e-9


def test_zero_paper_table_1() -> None:
    """The 7.5B column of Table 1 (tests/reference/zero-paper-table1.csv), to its printed digits."""
    rows = read_reference_csv("zero-paper-table1.csv")
    assert len(rows) == 6
    for row in rows:
        psi, nd = float(row["params"]), int(row["nd"])
        for stage, column in enumerate(("baseline_gb", "pos_gb", "pos_g_gb", "pos_g_p_gb")):
            got = model_states(psi, nd, stage, ZERO).total / 1e9
            assert got == pytest.approx(float(row[column]), abs=_printed_tolerance(row[column])), (nd, stage)


@pytest.mark.parametrize("psi", [1e9, 7.5e9, 70.554e9, 1e12])
@pytest.mark.parametrize("nd", [1, 8, 64, 512, 4096])
def test_zero_closed_forms_any_size(psi: float, nd: int) -> None:
    """16 Psi; 4 Psi + 12 Psi/Nd; 2 Psi + 14 Psi/Nd; 16 Psi/Nd (ZeRO, section 5, K = 12)."""
    expected = [16 * psi, 4 * psi + 12 * psi / nd, 2 * psi + 14 * psi / nd, 16 * psi / nd]
    for stage in range(4):
        assert model_states(psi, nd, stage, ZERO).total == pytest.approx(expected[stage], rel=1e-12)


def test_megatron_distributed_optimizer() -> None:
    """Megatron-LM: 18 bytes per parameter, or 6 + 12/d with the distributed optimizer."""
    for d in (1, 8, 64):
        assert model_states(1e9, d, 0, RECIPES["megatron"]).total == pytest.approx(18e9)
        assert model_states(1e9, d, 1, RECIPES["megatron"]).total == pytest.approx((6 + 12 / d) * 1e9)


def test_optimizer_choices() -> None:
    assert model_states(1e9, 1, 0, ZERO, "sgd").total == pytest.approx(12e9)
    assert model_states(1e9, 1, 0, ZERO, "adam8bit").total == pytest.approx(10e9)
    assert model_states(1e9, 1, 0, ZERO, "adafactor").total == pytest.approx(8e9)


GIB = 2**30


def _table(estimates) -> dict[tuple[int, str, bool | None], tuple[str, str]]:  # type: ignore[no-untyped-def]
    return {
        (e.stage, e.offload, e.zero_init): (f"{e.cpu_bytes / GIB:.2f}", f"{e.gpu_bytes / GIB:.2f}") for e in estimates
    }


def test_deepspeed_estimators_7_5b_on_8x8() -> None:
    """What deepspeed 0.19.8 prints (docs/sources/deepspeed-estimators.md), to the same GiB rounding."""
    got = _table(deepspeed_estimates(7.5e9, 1e9, gpus_per_node=8, nodes=8))
    assert got[(2, "optimizer", None)] == ("2682.21", "13.97")
    assert got[(2, "none", None)] == ("335.28", "15.93")
    assert got[(3, "params", True)] == ("23.57", "3.73")
    assert got[(3, "params", False)] == ("335.28", "3.73")
    assert got[(3, "optimizer", True)] == ("20.95", "3.94")
    assert got[(3, "optimizer", False)] == ("335.28", "3.94")
    assert got[(3, "none", True)] == ("44.70", "5.69")
    assert got[(3, "none", False)] == ("335.28", "5.69")


def test_deepspeed_estimators_t0_3b_one_gpu() -> None:
    """HF transformers docs, bigscience/T0_3B on 1 GPU. DeepSpeed prints the counts floored to millions
    ("2783M", "65M"); 2783.93M and 65.8M are counts consistent with every printed figure."""
    got = _table(deepspeed_estimates(2783.93e6, 65.8e6, gpus_per_node=1, nodes=1))
    assert got[(3, "params", True)][1] == "0.25"
    assert got[(3, "optimizer", True)][1] == "5.43"
    assert got[(3, "none", True)][1] == "46.91"
    assert got[(3, "params", True)][0] == "70.00"
    assert got[(3, "optimizer", True)][0] == "62.23"
    assert got[(3, "none", True)][0] == "0.37"
    assert got[(3, "none", False)][0] == "15.56"


def test_activations_match_korthikanti() -> None:
    """Korthikanti et al. 2022, eq. (1): one GPT layer stores sbh(34 + 5as/h) bytes; selective recomputation keeps
    34sbh, full recomputation 2sbh per layer (plus one layer being recomputed)."""
    a = load_model("gpt3-175b").architecture
    assert a is not None
    s, b, h, heads = 2048, 1, 12288, 96
    sbh = s * b * h
    layer = layer_tensors(a, moe_layer=False, flash=False, kernels="fused")
    assert layer.saved_bytes(s, b) == sbh * (34 + 5 * heads * s / h)
    selective = activation_memory(a, s, b, "selective", flash=False)
    assert selective.kept == 96 * 34 * sbh
    full = activation_memory(a, s, b, "full", flash=False)
    assert full.kept == 96 * 2 * sbh
    assert full.recompute == sbh * (34 + 5 * heads * s / h) - 2 * sbh
    # outside the layers (section 4.3): final norm 2sbh, output projection input 2sbh, fp32 logits 4sbv, and the
    # embedding dropout mask sbh
    assert loss_memory(a, s, b, "upcast").kept == 4 * sbh + 4 * s * b * 50257 + sbh


def test_megatrons_unfused_fp32_softmax_keeps_its_fp32_output() -> None:
    """Megatron's forward_torch_softmax (fusions/fused_softmax.py, d98e8a64dd) under --attention-softmax-in-fp32:
    the scores cast to fp32, scaled by a number and masked in place keep nothing; torch's Softmax keeps its fp32
    output (4 bytes a score, where the fused kernel keeps its 16-bit one, 2); the cast back is what dropout reads
    (its mask 1, its output 2, as fused). Without attention dropout the matmul with V keeps the 16-bit cast too."""
    a = load_model("gpt3-175b").architecture
    assert a is not None and a.dropout > 0
    s, b, h, heads = 2048, 1, 12288, 96
    unfused = layer_tensors(a, moe_layer=False, flash=False, kernels="fused", softmax_fp32=True)
    assert unfused.saved_bytes(s, b) == s * b * h * (34 + 7 * heads * s / h)
    dry = a.model_copy(update={"dropout": 0.0})
    fused = layer_tensors(dry, moe_layer=False, flash=False, kernels="fused").saved_bytes(s, b)
    unfused_dry = layer_tensors(dry, moe_layer=False, flash=False, kernels="fused", softmax_fp32=True)
    assert unfused_dry.saved_bytes(s, b) - fused == (4 + 2 - 2) * heads * s * s * b


def test_activations_scale_with_micro_batch_and_flash() -> None:
    a = load_model("llama-70b").architecture
    assert a is not None
    one = activation_memory(a, 4096, 1, "none").kept
    assert activation_memory(a, 4096, 4, "none").kept == pytest.approx(4 * one)
    # flash attention: only the log-sum-exp is left for selective recomputation to drop
    assert one - activation_memory(a, 4096, 1, "selective").kept == 4 * 4096 * 64 * 80
    assert activation_memory(a, 4096, 1, "none", flash=False).kept > one
    assert activation_memory(a, 4096, 1, "full").kept < one / 5


def test_moe_activations_count_routed_experts() -> None:
    a = load_model("mixtral-8x7b").architecture
    assert a is not None
    top2 = activation_memory(a, 4096, 1, "none").kept
    top1 = activation_memory(a.model_copy(update={"moe": a.moe.model_copy(update={"active": 1})}), 4096, 1, "none").kept  # type: ignore[union-attr]
    assert top2 > top1


def test_kv_cache() -> None:
    llama = load_model("llama-70b").architecture
    assert llama is not None
    assert kv_cache_bytes(llama, 4096, 1) == 2 * 8 * 128 * 2 * 80 * 4096
    ds = load_model("deepseek-v3").architecture
    assert ds is not None
    assert kv_cache_bytes(ds, 4096, 1) == (512 + 64) * 2 * 61 * 4096  # MLA caches the latent


def test_llama_70b_at_dp_512_needs_sharding() -> None:
    """Stage 0 does not fit on an 80 GB H100; stage 3 does, model states alone (2.2 GB) and in all."""
    r = estimate(load_model("llama-70b"), load_topology("dgx-h100"), Options(dp=512))
    stages = r.memory.stages
    assert not stages[0].fits
    assert stages[0].model_states_bytes > 80e9
    assert stages[3].model_states_bytes == pytest.approx(16 * 70.554e9 / 512, rel=1e-4)
    assert stages[3].model_states_bytes < 80e9 and stages[3].fits
    assert r.setup.zero_stage == 3
    assert any(w.code == "needs-sharding" and "does not fit without sharding" in w.message for w in r.warnings)


def test_deepseek_v3_needs_stage_3() -> None:
    """Stages 0-2 cannot fit on any catalog GPU (all 256 experts on every replica); stage 3 can."""
    model = load_model("deepseek-v3")
    for topo in ("dgx-h100", "hgx-h200", "dgx-b200"):
        r = estimate(model, load_topology(topo), Options(dp=512))
        assert [s.fits for s in r.memory.stages[:3]] == [False, False, False]
        assert r.memory.stages[2].model_states_bytes > 1e12
        assert r.memory.stages[3].model_states_bytes == pytest.approx(16 * 671.03e9 / 512, rel=1e-3)
        assert r.setup.zero_stage == 3
    # an H100 holds the states but not the gathered 11.5B-parameter MoE block beside them; a B200 holds all
    assert not estimate(model, load_topology("dgx-h100"), Options(dp=512)).memory.stages[3].fits
    assert estimate(model, load_topology("dgx-b200"), Options(dp=512)).memory.stages[3].fits


def test_offload_moves_states_to_cpu() -> None:
    on_gpu = model_states(7.5e9, 64, 3, RECIPES["deepspeed"], "adamw", "none")
    offloaded = model_states(7.5e9, 64, 3, RECIPES["deepspeed"], "adamw", "optimizer")
    assert offloaded.total == pytest.approx(2 * 7.5e9 / 64)
    assert offloaded.cpu == pytest.approx(on_gpu.total - offloaded.total)


def test_keeping_full_gradients_costs_a_full_gradient() -> None:
    """Stages 2-3 with accumulation: keeping unsharded gradients (to reduce once per step) adds them back."""
    model, topo = load_model("llama-8b"), load_topology("dgx-h100")
    sharded = estimate(model, topo, Options(dp=64, zero=2, accumulation=4, recompute="full"))
    kept = estimate(model, topo, Options(dp=64, zero=2, accumulation=4, recompute="full", keep_full_grads=True))
    extra = kept.memory.stages[2].buffers_bytes - sharded.memory.stages[2].buffers_bytes
    assert extra == pytest.approx(2 * 8.03e9 * (1 - 1 / 64), rel=1e-3)
    assert kept.communication.collectives[-1].occurrences == 1
    assert sharded.communication.collectives[-1].occurrences == 4


def test_offload_is_said_to_be_memory_only() -> None:
    r = estimate(load_model("llama-8b"), load_topology("dgx-h100"), Options(dp=8, zero=2, offload="optimizer"))
    assert r.memory.stages[2].cpu_bytes > 0
    assert any(w.code == "offload-untimed" and "not in the step time" in w.message for w in r.warnings)


@pytest.mark.parametrize(
    ("model_name", "topology_name", "plan"),
    [
        ("llama-8b", "dgx-h100", {"recompute": "none"}),
        # torchtitan's Qwen3 32B on 8 H100 96GB: the last step's gradient blocks count beside the activations from
        # micro-batch 2 (StageMemory.cached_grads), so a bound linear from micro-batch 1 promised 3
        (
            "hf-configs/qwen3-32b.json",
            "grand-teton-h100-96gb",
            {"framework": "fsdp", "seq_len": 4096, "recompute": "full"},
        ),
    ],
)
def test_largest_micro_batch_fits_and_one_more_does_not(model_name: str, topology_name: str, plan: dict) -> None:
    """The stage table's "max micro-batch" is the most sequences with which the stage fits (its definition)."""
    model = load_model(str(REFERENCE / model_name) if model_name.endswith(".json") else model_name)
    topo = load_topology(topology_name)
    r = estimate(model, topo, Options(dp=8, zero=3, micro_batch=1, **plan))
    best = r.memory.stages[3].max_micro_batch
    assert best >= 1
    fits = estimate(model, topo, Options(dp=8, zero=3, **{**plan, "micro_batch": best})).memory.stages[3]
    over = estimate(model, topo, Options(dp=8, zero=3, **{**plan, "micro_batch": best + 1})).memory.stages[3]
    assert fits.fits and not over.fits


def test_offload_follows_deepspeeds_stage_rules() -> None:
    from pydantic import ValidationError

    from dpcost.engine.memory import offload_applies

    assert [offload_applies("optimizer", s) for s in range(4)] == [False, True, True, True]
    assert [offload_applies("params", s) for s in range(4)] == [False, False, False, True]
    assert model_states(1e9, 8, 0, ZERO, "adamw", "optimizer").cpu == 0  # not offloadable at stage 0
    model, topo = load_model("llama-70b"), load_topology("dgx-h100")
    assert estimate(model, topo, Options(dp=64, offload="params")).setup.zero_stage == 3
    with pytest.raises(ValidationError, match="params offload needs ZeRO-3"):
        Options(dp=64, zero=1, offload="params")


def test_megatron_stage_0_has_no_ddp_copy() -> None:
    """Megatron reduces its contiguous main-grad buffer in place, its buckets views of it: 18 bytes, not 18 + a
    copy, and no bucket memory. The schedule decides, not the recipe: the generic (DDP) schedule copies."""
    from dpcost.engine.memory import buffers

    megatron = buffers(0, "megatron", RECIPES["megatron"], 4.0, 8e9, 25 * 2**20, 1e9, 1e9)
    assert megatron.ddp_copy == 0 and megatron.buckets == 0
    ddp = buffers(0, "generic", ZERO, 2.0, 8e9, 25 * 2**20, 1e9, 1e9)
    assert ddp.ddp_copy == 16e9 and ddp.buckets == 0  # the copy is DDP's buckets
    generic = buffers(0, "generic", RECIPES["megatron"], 4.0, 8e9, 25 * 2**20, 1e9, 1e9)
    assert generic.ddp_copy == 32e9


P, N, MB = 8e9, 8, 2**20


def test_deepspeed_states_are_what_its_zero_optimizers_allocate() -> None:
    """deepspeed v0.19.5 (docs/sources/deepspeed-memory.md): 16-bit weights replicated below stage 3
    (stage_1_and_2.py:439); 16-bit gradients in param.grad from the backward to the step at stages 0-1, as the rank's
    partition at stage 2 (stage_1_and_2.py:1651), in a flat partition kept from init at stage 3 (stage3.py:711); the
    fp32 master partition (stage_1_and_2.py:489) and Adam's two states beside it. No fp32 gradients outside the step."""
    ds = RECIPES["deepspeed"]
    s0, s1, s2, s3 = (model_states(P, N, stage, ds) for stage in range(4))
    assert (s0.params, s0.grads, s0.backward_grads, s0.optimizer) == (2 * P, 2 * P, 2 * P, 12 * P)
    assert (s1.params, s1.grads, s1.backward_grads, s1.optimizer) == (2 * P, 2 * P, 2 * P, 12 * P / N)
    assert (s2.params, s2.grads, s2.backward_grads) == (2 * P, 2 * P / N, 2 * P / N)
    assert (s3.params, s3.grads, s3.backward_grads, s3.optimizer) == (2 * P / N, 2 * P / N, 0, 12 * P / N)
    assert s3.step_only == 0  # the fp32 gradients are the step's copies, not a state
    # offloading the optimizer: stage 1's whole gradients stay on the GPU until the boundary; stage 2's partition is
    # accumulated on the CPU (stage_1_and_2.py async_accumulate_grad_in_cpu_via_gpu), stage 3's flat one too (:711)
    o1, o2, o3 = (model_states(P, N, stage, ds, offload="optimizer") for stage in (1, 2, 3))
    assert (o1.grads, o2.grads, o3.grads) == (2 * P, 0, 0)


def test_deepspeed_step_copies_follow_its_optimizer_steps() -> None:
    """What the optimizer step allocates beyond the 16-bit gradients it starts with: FP16_Optimizer's per-tensor fp32
    copies and their concatenation (fp16/fused_optimizer.py:290), the partition flattened and cast to fp32 after the
    other gradients are freed (stage_1_and_2.py:2320-2335), per sub-group of 1e9 elements at stage 3
    (stage3.py:2371)."""
    from dpcost.engine.memory import step_gradient_copies

    assert step_gradient_copies(0, P, N) == 8 * P
    # a torch optimizer runs FP16_UnfusedOptimizer, which casts each gradient into its fp32 master's .grad
    # (unfused_optimizer.py:216-222) and concatenates nothing
    assert step_gradient_copies(0, P, N, fused_adam=False) == 4 * P
    assert step_gradient_copies(1, P, N) == 0  # 8P/N of flattening fits where 2P of gradients were freed
    assert step_gradient_copies(1, P, 2) == 2 * P  # 2P/2 partition + 6P/2 of copies, against 2P freed
    assert step_gradient_copies(2, P, N) == 6 * P / N
    assert step_gradient_copies(3, 70e9, 8) == 6e9  # one sub-group of 1e9 elements at a time
    assert step_gradient_copies(3, P, 64) == 6 * P / 64
    # single-parameter sub-groups: the gradient norm's float64 cast of the largest parameter's partition (stage3.py
    # get_grad_norm_direct) exceeds the sub-group's fp32 cast
    assert step_gradient_copies(3, 70e9, 8, sub_group=1.3e8, largest_parameter=8 * 1.3e8) == 8 * 1.3e8
    # stages 1-2 check the partition's gradient tensors a tensor at a time, the parameters whole but cut at its
    # edges: _has_inf_or_nan holds one in fp32, three bool masks and their or in fp32, 11 bytes an element (v0.19.5
    # :2460-2465), more than the norm's float64 (8). 8B parameters on 64 ranks, a 525M-element embedding cut at the
    # 125M-element partition's edges: 11 x 1.25e8, more than the partition's 6 bytes of copies
    assert step_gradient_copies(2, 8e9, 64, largest_parameter=5.25e8) == 11 * 1.25e8
    assert step_gradient_copies(2, 8e9, 8, largest_parameter=5.25e8) == 6 * 1e9  # the embedding whole: 5.8e9 < 6e9
    # stage 1 checks beside its partition buffer (2 bytes an element), where the whole gradients the step phase
    # counts are gone: nothing beyond them on 64 ranks; on two, a parameter as large as the partition (5e8 of 1e9)
    assert step_gradient_copies(1, 8e9, 64, largest_parameter=5.25e8) == 0
    assert step_gradient_copies(1, 1e9, 2, largest_parameter=5e8) == 2 * 5e8 + 11 * 5e8 - 2 * 1e9
    assert step_gradient_copies(2, P, N, "optimizer") == 0  # the fp32 gradients are the CPU optimizer's


def test_deepspeed_sub_groups_are_closed_once_they_hold_the_size() -> None:
    """zero/stage3.py _create_fp16_sub_groups (edaa722): the partition's parameters in order, a sub-group closed once
    it holds sub_group_size partitioned elements or more (config.py: 1e9 by default, 0 allowed): the most it steps at
    once is the whole partition, else the size, else one parameter's partition where that is larger."""
    from dpcost.engine.memory import deepspeed_sub_group

    assert deepspeed_sub_group(8.75e9, None, 1.3e8) == 1e9  # Llama 3 70B over 8 ranks: sub-groups of 1e9
    assert deepspeed_sub_group(2.5e8, None, 3e7) == 2.5e8  # a partition under the size: one sub-group
    assert deepspeed_sub_group(8.75e9, 0, 1.3e8) == 1.3e8  # 0: each parameter alone, the largest sets it
    # at least the largest parameter; the greedy close can overshoot the size by less than one parameter (a group
    # of 0.99e8 that takes a parameter of 1.3e8 holds 2.29e8), which is not counted
    assert deepspeed_sub_group(8.75e9, 1e8, 1.3e8) == 1.3e8
    assert deepspeed_sub_group(8.75e9, 2e8, 1.3e8) == 2e8


def test_deepspeed_sub_group_size_bounds_the_stage_3_step() -> None:
    """Stage 3 casts a sub-group's gradient partition to fp32 at a time (_prepare_fp32_grad_for_sub_group: 6 bytes
    an element, the flat 16-bit copy and its cast), after its gradient norm has cast each parameter's partition to
    float64 in turn (get_grad_norm_direct, `g.double()`: 8 bytes an element). By default the sub-group of 1e9
    elements sets the step (8.03e9 over 8 ranks is more); with sub_group_size 0 (axolotl's zero3.json) each
    parameter is a group of its own, and the norm's cast of Llama 3.1 8B's largest, its 128,256 x 4,096 embedding,
    over 8 ranks sets it."""
    from dpcost.engine.prepare import StageMemories, prepare

    model, topology = load_model("llama-8b"), load_topology("dgx-h100")

    def step(**given: int) -> float:
        o = Options(dp=8, framework="deepspeed", zero=3, optimizer_impl="fused", **given)
        return StageMemories(model, topology, prepare(model, topology, o)).states(3).buffers.step_transient

    embedding = 128256 * 4096 / 8
    assert step() == pytest.approx(6 * 1e9)
    assert step(sub_group_size=0) == pytest.approx(8 * embedding)
    assert step(sub_group_size=int(2e8)) == pytest.approx(6 * 2e8)
    with pytest.raises(InputError, match="give --framework deepspeed"):
        prepare(model, topology, Options(dp=8, zero=3, sub_group_size=0))
    notes = prepare(model, topology, Options(dp=8, framework="deepspeed", zero=2, sub_group_size=0)).advice
    assert [(n.code, n.message) for n in notes] == [
        (
            "ignored-flags",
            "--sub-group-size applies at ZeRO-3 only: ZeRO-2 steps the rank's whole partition at once; drop them",
        )
    ]


def test_deepspeed_buckets_per_stage_and_phase() -> None:
    """Stages 1-2 allocate reduce_bucket_size buffers at the first gradient hook (two with overlap_comm) and free them
    at the backward's end (stage_1_and_2.py setup_buckets, _release_ipg_buffers), flattening each bucket they
    all-reduce; stage 3 keeps one from init (stage3.py:700) and concatenates each bucket it reduce-scatters; stage 0
    flattens 5e8 elements at a time at the backward's end (engine.py allreduce_no_retain)."""
    from dpcost.engine.memory import buffers, deepspeed_buckets, phases

    bucket = 500 * MB
    assert deepspeed_buckets(0, bucket, 2.0, P, 1) == (1e9, 0.0)
    assert deepspeed_buckets(0, bucket, 2.0, 1e8, 1) == (2e8, 0.0)  # a model smaller than a piece
    assert deepspeed_buckets(2, bucket, 2.0, P, 1) == (2 * bucket, 0.0)
    assert deepspeed_buckets(2, bucket, 2.0, P, 2) == (3 * bucket, 0.0)
    assert deepspeed_buckets(3, bucket, 2.0, P, 2) == (bucket, bucket)
    ds = RECIPES["deepspeed"]
    buf = buffers(3, "deepspeed", ds, 2.0, P, bucket, 1e9, 1e9, buckets_in_flight=2, shard_ranks=N)
    forward, backward, step = phases(model_states(P, N, 3, ds), buf, 0, 0, 0, 0, 1)
    assert forward.buffers - buf.gathered == bucket
    assert backward.buffers - buf.gathered == 2 * bucket
    assert step.buffers - buf.gathered == bucket + 6 * P / N
    buf = buffers(2, "deepspeed", ds, 2.0, P, bucket, 1e9, 1e9, buckets_in_flight=1, shard_ranks=N)
    forward, backward, step = phases(model_states(P, N, 2, ds), buf, 0, 0, 0, 0, 1)
    assert (forward.buffers, backward.buffers, step.buffers) == (0, 2 * bucket, 6 * P / N)
    # accumulating, stage 2 keeps the partition summed so far while a later backward fills a new one
    # (stage_1_and_2.py:1651, :914-923); on the CPU when the optimizer is offloaded
    kw = {"buckets_in_flight": 1, "shard_ranks": N, "accumulation": 4}
    assert buffers(2, "deepspeed", ds, 2.0, P, bucket, 1e9, 1e9, **kw).buckets == 2 * bucket + 2 * P / N
    assert buffers(2, "deepspeed", ds, 2.0, P, bucket, 1e9, 1e9, **kw, offload="optimizer").buckets == 2 * bucket
    # each buffer holds whole the parameters starting in the partition or crossing its start: rank 0's, a first
    # parameter larger than the partition (deepspeed_partition_buffer)
    whole = buffers(2, "deepspeed", ds, 2.0, P, bucket, 1e9, 1e9, **kw, first_parameter=1.5 * P / N)
    assert whole.buckets == 2 * bucket + 2 * 1.5 * P / N
    # stage 1 accumulating: its bucket is freed only at the boundary's epilogue (stage_1_and_2.py:939), so it stays
    # through the later forwards; the gradients stay whole in param.grad, no partition is filled
    stage1 = buffers(1, "deepspeed", ds, 2.0, P, bucket, 1e9, 1e9, **kw)
    assert (stage1.buckets, stage1.held_buckets) == (bucket, bucket)


def test_deepspeed_stage_1_peaks_at_its_boundary_reduction() -> None:
    """Stage 1 reduces at the accumulation boundary, every gradient whole (2 bytes a parameter) beside the bucket and
    its flattened copy; by the step they sit in the 16-bit partition and param.grad is freed (stage_1_and_2.py:945),
    and the step adds the flattened partition and its fp32 cast (:2334-2335): 8 bytes a partitioned parameter. The
    optimizer-step phase holds the larger moment."""
    from dpcost.engine.memory import buffers, phases

    ds, bucket = RECIPES["deepspeed"], 500 * MB
    buf = buffers(1, "deepspeed", ds, 2.0, P, bucket, 1e9, 1e9, buckets_in_flight=1, shard_ranks=N)
    step = phases(model_states(P, N, 1, ds), buf, 0, 0, 0, 0, 1)[2]
    assert (step.grads, step.buffers) == (2 * P, 2 * bucket)  # the boundary: 2P beside 8P/N = P
    buf = buffers(1, "deepspeed", ds, 2.0, P, bucket, 1e9, 1e9, buckets_in_flight=1, shard_ranks=2)
    step = phases(model_states(P, 2, 1, ds), buf, 0, 0, 0, 0, 1)[2]
    assert step.grads + step.buffers == pytest.approx(8 * P / 2)  # two ranks: the step's 4P exceeds it


def test_deepspeed_steps_a_torch_optimizer_beside_the_fp32_cast() -> None:
    """Stages 1-2 cast the flat 16-bit partition to fp32 and free the flat copy (stage_1_and_2.py:2334-2336 at
    v0.19.5) before the optimizer steps (:2354): foreach AdamW's square roots (4 bytes an element) come beside the
    4-byte cast, not beside the flat copy too. Stage 1's whole gradients are gone by the step but for the
    partition's; at both stages the partition is one buffer for every parameter group (:1643-1659), which the
    Trainer's second group keeps while its first steps. Stage 0 runs a torch optimizer in FP16_UnfusedOptimizer."""
    from dpcost.engine.memory import buffers

    ds, bucket, p = RECIPES["deepspeed"], 500 * MB, P / N
    kw = dict(buckets_in_flight=1, shard_ranks=N)
    fused = buffers(2, "deepspeed", ds, 2.0, P, bucket, 1e9, 1e9, **kw)
    foreach = buffers(2, "deepspeed", ds, 2.0, P, bucket, 1e9, 1e9, **kw, optimizer_impl="foreach")
    assert fused.step_transient == pytest.approx(6 * p)  # the flat copy (2) and its cast (4)
    assert foreach.step_transient == pytest.approx(8 * p)  # the cast (4) and the square roots (4), not 6 + 4
    # stage 0: FusedAdam's 8 bytes of copies (fused_optimizer.py:288); a torch foreach AdamW's 4 of casts and 4 of
    # square roots (unfused_optimizer.py:216-224), as many bytes by another path (not 8 + 4)
    fused0 = buffers(0, "deepspeed", ds, 2.0, P, bucket, 1e9, 1e9, shard_ranks=N)
    foreach0 = buffers(0, "deepspeed", ds, 2.0, P, bucket, 1e9, 1e9, shard_ranks=N, optimizer_impl="foreach")
    assert fused0.step_transient == foreach0.step_transient == 8 * P
    # stage 1 on N ranks: 2P/N + 4P/N + 4P/N at the step, where the whole 2P were freed: the boundary stays the peak
    for impl in ("fused", "foreach"):
        stage1 = buffers(1, "deepspeed", ds, 2.0, P, bucket, 1e9, 1e9, **kw, optimizer_impl=impl)
        assert stage1.at_step == 2 * bucket
    # two ranks: the partition is P/2; the cast moment holds 2 + 2 + 4 bytes of it, 4P in all; the step with foreach
    # the partition buffer (kept by the Trainer's second group, as at stage 2), the cast and the square roots,
    # 2 + 4 + 4 bytes, 5P in all: 3P beyond the whole gradients the step phase counts
    two = buffers(1, "deepspeed", ds, 2.0, P, bucket, 1e9, 1e9, buckets_in_flight=1, shard_ranks=2,
                  optimizer_impl="foreach")  # fmt: skip
    assert two.at_step == pytest.approx(3 * P)


def test_deepspeed_stage_3_steps_foreach_a_sub_group_at_a_time() -> None:
    """A torch optimizer under ZeRO-3 steps one sub-group of about 1e9 partitioned elements at a time
    (stage3.py:1154, _create_fp16_sub_groups): foreach's intermediates are one sub-group's, not the rank's share.
    They come after the sub-group's fp32 cast, whose flat 16-bit source is freed once the cast returns
    (_prepare_fp32_grad_for_sub_group at edaa722): the step holds 6 bytes an element while it casts (the copy and
    the cast), then 4 + 4 while foreach AdamW steps (the cast and the square roots' 4), the larger."""
    from dpcost.engine.memory import buffers

    ds, bucket = RECIPES["deepspeed"], 500 * MB
    fused = buffers(3, "deepspeed", ds, 2.0, 70e9, bucket, 1e9, 1e9, shard_ranks=8)
    foreach = buffers(3, "deepspeed", ds, 2.0, 70e9, bucket, 1e9, 1e9, shard_ranks=8, optimizer_impl="foreach")
    assert fused.step_transient == 6 * 1e9
    assert foreach.step_transient == 8 * 1e9


def test_out_of_memory_hint_names_recomputation() -> None:
    r = estimate(
        load_model("llama-70b"), load_topology("dgx-h100"), Options(dp=64, zero=3, recompute="selective", seq_len=8192)
    )
    assert any("with --recompute full it needs" in w.message for w in r.warnings)


def test_fsdp_gradient_shards_stay_reserved_beside_the_activations_at_micro_batch_2() -> None:
    """torchtitan PR #1690 (Qwen3 32B, 2025-09-11 log line in its description): FSDP 8 on H100 96GB, local batch 2,
    sequence 4,096, full AC, torch.compile of model and loss, printed `memory: 81.85GiB(86.17%)`, torchtitan's max
    reserved. FSDP's sharded gradients are views of the reduce-scatter's output, allocated on the reduce-scatter
    stream, whose freed blocks the compute stream's activations cannot take (CUDACachingAllocator get_free_block):
    they stay in reserved beside the activations, however large each block is (prepare._reusable_grad_block)."""
    model = load_model(str(REFERENCE / "hf-configs" / "qwen3-32b.json"))
    plan = Options(dp=8, zero=3, framework="fsdp", micro_batch=2, seq_len=4096, recompute="full", compile=True,
                   loss_impl="fused")  # fmt: skip
    row = estimate(model, load_topology("grand-teton-h100-96gb"), plan).memory.stages[3]
    assert row.reserved_bytes / 2**30 == pytest.approx(81.85, rel=0.05)  # 69.1 GiB with the gradient blocks reused


def test_fsdp_holds_its_weights_as_shards_at_shard_grad_op_whatever_the_recipe() -> None:
    """FSDP's SHARD_GRAD_OP (FSDP2 reshard_after_forward=False) keeps each parameter as its shard between steps and
    the unsharded copy from the forward to the backward as a buffer: under --recipe bf16 (pure bf16, ZeRO's rule
    replicating weights at stage 2) the stage-2 weights are 2 bytes x N / DP, as at FULL_SHARD, not N x 2 twice."""
    model = load_model("llama-8b")
    n = count_params(model).total
    plan = Options(dp=8, framework="fsdp", recipe="bf16", micro_batch=1, seq_len=4096, recompute="none")
    stages = estimate(model, load_topology("dgx-h100"), plan).memory.stages
    assert stages[2].params_bytes == stages[3].params_bytes == int(2 * n / 8)
    assert stages[2].buffers_bytes >= 2 * n  # the unsharded copy SHARD_GRAD_OP keeps


def test_autocast_keeps_a_16bit_copy_of_every_matmul_weight_until_its_backward(tmp_path):
    """Under torch.autocast on fp32 weights (--framework ddp), each linear layer saves autocast's cached bf16 copy of
    its weight for its backward: measured on a Llama decoder layer, exactly its linear weights in bf16 beyond its
    activations (tests/reference/hf-configs/resolved/autocast-weights.json). dpcost holds 2 bytes a matmul parameter
    (the layers' linears and the output head; the input embedding is looked up, not cast) from the forward to the
    backward's start, beside DDP's bucket copy of the gradients, and none at the optimizer step."""
    import json as json_module

    from dpcost import Options

    measured = json_module.loads((REFERENCE / "hf-configs" / "resolved" / "autocast-weights.json").read_text())
    h, f, layers, vocab = 256, 688, 2, 100
    config = {"model_type": "llama", "hidden_size": h, "intermediate_size": f, "num_attention_heads": 4,
              "num_key_value_heads": 4, "num_hidden_layers": layers, "vocab_size": vocab,
              "tie_word_embeddings": False}  # fmt: skip
    path = tmp_path / "config.json"
    path.write_text(json_module.dumps(config))
    # fused: foreach's intermediates would make the optimizer step the peak (test_ddp_steps_as_torch_optim_does)
    plan = Options(dp=8, framework="ddp", seq_len=128, optimizer_impl="fused")
    report = estimate(load_model(str(path)), load_topology("dgx-h100"), plan)
    stage = report.memory.stages[0]
    assert stage.peak_phase == "backward"
    ddp_copy = 4 * report.model.params_total
    linear_weights = 2 * (4 * h * h + 3 * h * f)
    expected = measured["autocast_fp32_weights"]["constant_per_bf16_linear_weights"] * linear_weights * layers
    expected += 2 * vocab * h  # the output head's copy
    cublas = 2 * 32 * 2**20  # PyTorch's two cuBLAS workspaces on Hopper (engine/workspaces.py)
    assert stage.buffers_bytes - ddp_copy - cublas == pytest.approx(expected, rel=2e-3)  # the norms' weights, 0.1%
    assert measured["bf16"]["constant_per_bf16_linear_weights"] == 0


def test_foreach_adamw_holds_one_state_of_intermediates_at_the_step() -> None:
    """torch/optim/adam.py _multi_tensor_adam: `exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)`, a new
    tensor per parameter the size of its second moment; PyTorch's docs: foreach "uses ~ sizeof(params) more peak
    memory than the for-loop version". The fused kernel updates in place."""
    from dpcost.engine.memory import optimizer_intermediates

    assert optimizer_intermediates("adamw", "foreach", RECIPES["ddp"], P) == 4 * P  # fp32 states
    assert optimizer_intermediates("adamw", "foreach", RECIPES["bf16"], P) == 2 * P  # states in bf16
    assert optimizer_intermediates("adamw", "fused", RECIPES["ddp"], P) == 0
    assert optimizer_intermediates("adamw", "for-loop", RECIPES["ddp"], P) == 0
    assert optimizer_intermediates("sgd", "foreach", RECIPES["ddp"], P) == 0


def test_ddp_steps_as_torch_optim_does_by_default() -> None:
    """--framework ddp: torch.optim's default on CUDA since PyTorch 2.0 (pytorch/pytorch#92306) is foreach, whose
    intermediates count at the optimizer step, where a DDP run with full recomputation peaks; fused takes them away."""
    model, topo = load_model("llama-8b"), load_topology("dgx-h100")
    plan = {"dp": 8, "framework": "ddp", "recompute": "full", "micro_batch": 1, "seq_len": 2048}
    foreach = estimate(model, topo, Options(**plan)).memory.stages[0]
    fused = estimate(model, topo, Options(**plan, optimizer_impl="fused")).memory.stages[0]
    params = count_params(model).total
    assert foreach.peak_phase == "optimizer step"
    assert foreach.allocated_bytes - fused.allocated_bytes == pytest.approx(4 * params, rel=1e-9)


def test_gradients_kept_between_steps_are_held_through_the_forward() -> None:
    """Before PyTorch 2.0, zero_grad() zeroed .grad in place (set_to_none=False; pytorch/pytorch#92731 made True the
    default): the gradients' memory is held from one step into the next forward, where a DDP run's backward starts with
    them. DeepSpeed and Megatron-LM manage their gradient buffers themselves: refused there."""
    from dpcost.errors import InputError

    model, topo = load_model("llama-8b"), load_topology("dgx-h100")
    plan = {"dp": 8, "framework": "ddp", "micro_batch": 4, "seq_len": 4096, "optimizer_impl": "fused"}
    freed = estimate(model, topo, Options(**plan)).memory.stages[0]
    kept = estimate(model, topo, Options(**plan, grads_between_steps="kept")).memory.stages[0]
    assert freed.peak_phase == kept.peak_phase == "backward"
    assert kept.allocated_bytes - freed.allocated_bytes == pytest.approx(4 * count_params(model).total, rel=1e-9)
    with pytest.raises(InputError, match="grads_between_steps"):
        estimate(model, topo, Options(dp=8, framework="deepspeed", zero=1, grads_between_steps="kept"))


def test_deepspeed_partition_buffer_holds_its_first_parameter_whole() -> None:
    """Stages 1-2 copy the partition's gradients into one buffer sized over every parameter that starts in the
    partition or crosses its start, whole (stage_1_and_2.py get_partition_info :1959-1988, copy_grads_in_partition
    :1643-1651 at v0.19.5): rank 0's holds the embedding whole, first in a Hugging Face model, where the partition is
    smaller. Llama 3.1 8B at ZeRO-2 on 16 ranks: partitions of 8.03e9 / 16 = 502M elements, the embedding
    128,256 x 4,096 = 525M."""
    from dpcost.engine.memory import deepspeed_partition_buffer

    assert deepspeed_partition_buffer(5.02e8, 5.25e8) == 5.25e8
    assert deepspeed_partition_buffer(1e9, 5.25e8) == 1e9  # a larger partition: its own size (overhang not counted)
    plan = Options(dp=16, zero=2, framework="deepspeed", recompute="full", seq_len=1024)
    stage = estimate(load_model("llama-8b"), load_topology("dgx-h100"), plan).memory.stages[2]
    assert stage.peak_phase == "optimizer step"
    assert stage.grads_bytes == 2 * 128256 * 4096
