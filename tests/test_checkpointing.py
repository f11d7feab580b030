"""Each checkpointing policy's bytes per layer, each loss path and the step's phases, against closed forms written
out here from their sources (docs/sources/checkpointing.md, docs/sources/allocator.md), not from the code."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from dpcost.catalog import load_model, load_topology
from dpcost.cli import app
from dpcost.engine.activations import layer_tensors
from dpcost.engine.checkpointing import activation_memory, kept_per_token
from dpcost.engine.compute import flops_per_token, mla_up_projection_flops, mlp_recompute_flops
from dpcost.engine.estimate import estimate
from dpcost.engine.loss import loss_memory
from dpcost.engine.memory import RECIPES, Buffers, model_states, phases
from dpcost.engine.params import count_params
from dpcost.engine.prepare import recipe_for
from dpcost.options import Options

# Llama 3.1 8B: hidden h, query width q = heads x d_head, K/V width kv = kv_heads x d_head, MLP width f.
H, Q, KV, F, HEADS, LAYERS, VOCAB = 4096, 4096, 1024, 14336, 32, 32, 128256
LLAMA = load_model("llama-8b").architecture
assert LLAMA is not None
S, B = 8192, 1
TOKENS = S * B


def per_token(policy: str, kernels: str = "eager", **kw: object) -> float:
    layer = layer_tensors(LLAMA, moe_layer=False, flash=True, kernels=kernels)  # type: ignore[arg-type]
    return kept_per_token(layer, policy, S, B, **kw) / TOKENS  # type: ignore[arg-type]


def test_no_recomputation_keeps_what_eager_pytorch_saves() -> None:
    """Per token, bf16 (2 bytes) unless said: each RMSNorm an fp32 copy of its input and its normalised product
    (4h + 2h) and its output (2h); Q, and K and V copied out to every query head as SDPA reads them (torchtitan's
    repeat_kv: 2q + 2q + 2q); SDPA's fp32 log-sum-exp per head (4 x heads) and its output (2q); SwiGLU's gate and
    up outputs, the SiLU output and the product (4 x 2f). The output and down projections' outputs only meet a
    residual add, which saves nothing."""
    assert per_token("none") == 2 * (6 * H + 2 * H) + 2 * Q + 4 * Q + 4 * HEADS + 2 * Q + 8 * F


def test_megatron_fused_kernels_keep_less() -> None:
    """Megatron's fused norm keeps its bf16 input (2h); its fused bias-SwiGLU recomputes the activation, keeping
    the gate and up outputs and the product (3 x 2f)."""
    assert per_token("none", "fused") == 2 * (2 * H + 2 * H) + 2 * Q + 4 * KV + 4 * HEADS + 2 * Q + 6 * F


def test_torch_compile_recomputes_the_element_wise_tensors() -> None:
    """torch.compile's min-cut partitioner keeps the norms' inputs and outputs and the MLP's two matmul outputs."""
    assert per_token("none", "compiled") == 2 * (2 * H + 2 * H) + 2 * Q + 4 * KV + 4 * HEADS + 2 * Q + 4 * F


def test_torchtitan_per_op_sac_keeps_the_odd_numbered_mm_outputs() -> None:
    """torchtitan parallelize_llama.py@9dec370: the block's input (2h), the outputs of mm 1, 3, 5, 7 in forward
    order (wq 2q, wv 2kv, w1 2f, w2 2h) and of SDPA (its output 2q and fp32 log-sum-exp). Under torch.compile the
    down projection's output, which no backward reads, is not kept."""
    assert per_token("op") == 2 * H + 2 * Q + 2 * KV + 2 * F + 2 * H + 2 * Q + 4 * HEADS
    assert per_token("op", "compiled") == 2 * H + 2 * Q + 2 * KV + 2 * F + 2 * Q + 4 * HEADS


def test_full_recomputation_keeps_the_block_input_and_re_creates_one_layer() -> None:
    """Korthikanti et al. 2022 section 4: 2sbh per layer; the backward re-runs one layer at a time."""
    assert per_token("full") == 2 * H
    act = activation_memory(LLAMA, S, B, "full", kernels="eager")
    assert act.kept == LAYERS * 2 * H * TOKENS
    assert act.recompute == (per_token("none") - 2 * H) * TOKENS
    # the MLP's backward holds three gradients as wide as its widest tensor (2f) at once
    assert act.gradients == 3 * 2 * F * TOKENS


def test_megatron_selective_drops_the_modules_it_recomputes() -> None:
    """core_attn (the default) drops only the log-sum-exp under flash attention; mlp drops the MLP's inner tensors
    (its input, the norm's output, stays kept); layernorm drops the norms' outputs."""
    none = per_token("none")
    assert per_token("selective") == none - 4 * HEADS  # the copies of K and V are SDPA's inputs: kept
    assert per_token("selective", modules=frozenset({"mlp"})) == none - 8 * F
    assert per_token("selective", modules=frozenset({"layernorm"})) == none - 2 * 2 * H


def test_norms_as_the_model_has_them() -> None:
    """Query/key norms (Qwen3) keep their inputs, the projections' outputs (eager RMSNorm: 6 bytes per element);
    Gemma 2's post-norms keep theirs (6h each); one norm per block (GPT-J) drops the MLP norm (6h + 2h)."""
    base = LLAMA.model_copy(update={"qk_norm": "none", "layer_norms": 2})

    def eager(arch: object) -> float:
        return layer_tensors(arch, False, True, "eager").saved_bytes(1, 1)  # type: ignore[arg-type]

    assert eager(base.model_copy(update={"qk_norm": "head"})) - eager(base) == 6 * (Q + KV)  # before the copies
    assert eager(base.model_copy(update={"layer_norms": 4})) - eager(base) == 2 * 6 * H
    assert eager(base) - eager(base.model_copy(update={"layer_norms": 1})) == 6 * H + 2 * H


@pytest.mark.parametrize(("topology", "saved"), [("dgx-b200", 1.0), ("dgx-h100", 0.0)])
def test_megatron_fp8_param_gather_stores_fp8_weights(topology: str, saved: float) -> None:
    """--fp8-param-gather: Transformer Engine's linear weights (32 blocks of 4h^2 + 2h kv + 3hf) in 1 byte, a byte
    fewer than bf16's, where FP8 matmuls take any layout (Blackwell); Hopper's take only TN, so each also keeps its
    transpose, made after every gather (TE tensor/utils.py post_all_gather_processing): no byte saved. The
    embedding, the output layer and the norms stay bf16; the optimizer's bytes unchanged. Megatron keeps fp8 weights
    for FP8 matmuls only ("fp8_param must be used together with fp8 mode")."""
    o = dict(dp=8, framework="megatron", zero=1, recompute="full", seq_len=2048, compute_dtype="fp8")
    bf16 = _stage(Options(**o), 1, topology=topology)  # type: ignore[arg-type]
    fp8 = _stage(Options(**o, gather_dtype="fp8"), 1, topology=topology)  # type: ignore[arg-type]
    linear = LAYERS * (2 * H * Q + 2 * H * KV + 3 * H * F)
    assert bf16.params_bytes - fp8.params_bytes == pytest.approx(saved * linear, rel=1e-9, abs=1)
    assert bf16.optimizer_bytes == fp8.optimizer_bytes


def test_recompute_layers_applies_the_policy_to_every_kth_block() -> None:
    """torchtitan's selective_ac_option = K: blocks whose running count (from 1) divides by K, layers // K."""
    act = activation_memory(LLAMA, S, B, "full", kernels="eager", every=4)
    assert act.kept == (8 * 2 * H + 24 * per_token("none")) * TOKENS
    assert activation_memory(LLAMA, S, B, "full", kernels="eager", every=64).kept == LAYERS * per_token("none") * TOKENS


def test_megatrons_block_method_recomputes_the_first_n_layers_alone() -> None:
    """Megatron-LM's --recompute-method block --recompute-num-layers N (megatron/core/recompute.py @d98e8a64dd):
    layer l of a model chunk is checkpointed while l < N, the others run as without recomputation. Of Llama 3 8B's 32
    layers N = 5 keep their inputs (2h a token), 27 all they save; the recomputation re-runs 5 / 32 of the layers'
    forward work; N beyond the layers is every layer."""
    act = activation_memory(LLAMA, S, B, "full", kernels="eager", block=5)
    assert act.kept == (5 * 2 * H + 27 * per_token("none")) * TOKENS
    assert (
        activation_memory(LLAMA, S, B, "full", kernels="eager", block=64).kept
        == activation_memory(LLAMA, S, B, "full", kernels="eager").kept
    )
    counts = count_params(load_model("llama-8b"))
    full = flops_per_token(counts, LLAMA, S, "full").recompute
    assert flops_per_token(counts, LLAMA, S, "full", block=5).recompute == pytest.approx(full * 5 / 32, rel=1e-12)


def test_the_block_method_needs_full_recomputation_and_no_other_layer_choice() -> None:
    """Megatron's recompute_method applies to full recomputation alone (transformer_config.py: "Must be None for
    'selective' activation checkpointing"); --recompute-layers picks the layers another way: bad input, one line."""
    runner = CliRunner()
    for extra, said in (
        (["--recompute", "selective"], "needs --recompute full, got selective"),
        ([], "needs --recompute full, got auto"),
        (["--recompute", "full", "--recompute-layers", "2"], "not both"),
    ):
        r = runner.invoke(app, ["estimate", "-m", "llama-8b", "--dp", "8", "--recompute-block", "5", *extra])
        assert r.exit_code == 2 and said in r.output and r.output.count("\n") == 1, r.output


@pytest.mark.parametrize(
    ("impl", "kept", "forward", "backward"),
    [
        ("upcast", 4, 2 + 4 + 4, 4 + 4 + 4),  # bf16 logits, fp32 copy, fp32 log-softmax; its two fp32 gradients
        ("bf16", 2 + 2, 2 + 2, 2 + 2 + 2 + 2),  # logits and log-softmax kept by the caller; two bf16 gradients
        ("chunked", 4, 2 + 4 + 4 / 8, 4 + 8 / 8),  # torchtune: 8 bf16 chunks, each upcast in turn
        ("fused", 2, 2, 2 + 2),  # compiled or fused: bf16 logits kept, bf16 gradient written
        ("vocab-parallel", 4, 2 + 4, 4 + 2),  # Megatron: fp32 softmax in place, gradient over it, cast to 16 bits
        # --cross-entropy-loss-fusion: the same steps compiled, each in-place update of the fp32 copy made out of
        # place and copied back (AOTAutograd's functionalization of input mutations): one fp32 copy more
        ("vocab-parallel-fused", 4, 2 + 4 + 4, 4 + 4 + 2),
    ],
)
def test_loss_paths(impl: str, kept: float, forward: float, backward: float) -> None:
    """Bytes per token in multiples of the vocabulary, beside the final norm's input and output (2h each)."""
    loss = loss_memory(LLAMA, S, B, impl, "fused")
    outside = (2 * H + 2 * H) * TOKENS
    assert loss.kept == pytest.approx(outside + kept * VOCAB * TOKENS)
    assert loss.forward_peak == pytest.approx(outside + forward * VOCAB * TOKENS)
    assert loss.backward_peak == pytest.approx(outside + backward * VOCAB * TOKENS)


def test_torchtitans_chunked_loss_keeps_no_logit_past_its_chunk() -> None:
    """ChunkedLossWrapper (torchtitan/components/loss.py at b5bcd76c6): each of 8 chunks projected, its upcast
    cross-entropy taken and run backward before the next, so no logit is kept to the decoder's backward; a chunk
    peaks as upcast's peaks over the whole (its bf16 logits, fp32 copy and log-softmax; in its backward the
    log-softmax, two fp32 gradients and its bf16 logits still referenced), and GradAccumulator holds the hidden
    states' gradient in fp32 at both peaks. The largest tensor: a chunk's fp32 logits or the output head's fp32
    gradient, which FSDP2 keeps unsharded across the chunks, whichever is larger."""
    loss = loss_memory(LLAMA, S, B, "chunked-head", "fused")
    outside = (2 * H + 2 * H) * TOKENS
    accumulator = 4 * H * TOKENS
    assert loss.kept == pytest.approx(outside)
    assert loss.forward_peak == pytest.approx(outside + (2 + 4 + 4) / 8 * VOCAB * TOKENS + accumulator)
    assert loss.backward_peak == pytest.approx(outside + (4 + 4 + 4 + 2) / 8 * VOCAB * TOKENS + accumulator)
    assert loss.largest_tensor == pytest.approx(max(4 / 8 * VOCAB * TOKENS, 4 * VOCAB * H))


def test_pure_bf16_is_eight_bytes_per_parameter_with_adamw() -> None:
    """torchtune dtype bf16 / litgpt bf16-true: bf16 weights, gradients and AdamW's two states (torch keeps them
    in the parameters' dtype)."""
    assert model_states(1e9, 1, 0, RECIPES["bf16"]).total == pytest.approx(8e9)
    assert model_states(1e9, 1, 0, RECIPES["bf16"], "adam8bit").total == pytest.approx(6e9)
    assert model_states(1e9, 8, 3, RECIPES["bf16"]).total == pytest.approx(1e9)


def _stage(options: Options, stage: int, model: str = "llama-8b", topology: str = "dgx-h100"):  # type: ignore[no-untyped-def]
    return estimate(load_model(model), load_topology(topology), options).memory.stages[stage]


def test_pytorch_gradients_live_from_the_backward_to_the_step() -> None:
    """FSDP's sharded fp32 gradients (zero_grad(set_to_none=True)): absent at the backward's start, where the peak
    is, present at the optimizer step; their cached blocks count in reserved. 8.03B parameters over 8 GPUs."""
    s = _stage(Options(dp=8, framework="fsdp", zero=3, recompute="op", seq_len=8192, micro_batch=2), 3)
    params = 8_030_261_248
    assert s.peak_phase == "backward"
    assert s.grads_bytes == 0
    assert s.params_bytes == pytest.approx(4 * params / 8, rel=1e-9)
    assert s.optimizer_bytes == pytest.approx(8 * params / 8, rel=1e-9)
    largest = 4 * VOCAB * 8192 * 2  # the fp32 log-softmax, the step's largest tensor
    assert s.reserved_bytes - s.allocated_bytes == pytest.approx(largest + 4 * params / 8, abs=2)
    assert s.total_bytes - s.reserved_bytes == s.context_bytes


def test_megatron_copies_16_bit_gradients_to_fp32_at_the_step_only() -> None:
    """Megatron's docs count 20 bytes per parameter with 16-bit gradients (its table's fp16 row); the fp32 copy for
    the main parameters exists at the optimizer step only (_copy_model_grads_to_main_grads), so the forward and
    the backward hold 16."""
    states = model_states(1e9, 1, 0, recipe_for("megatron", "bf16"))
    assert states.total == pytest.approx(20e9)
    forward, backward, step = phases(states, Buffers(0, 0, 0), 0, 0, 0, 0, accumulation=1)
    assert forward.allocated(1) == backward.allocated(1) == pytest.approx(16e9)
    assert step.allocated(1) == pytest.approx(20e9)
    assert model_states(1e9, 1, 0, RECIPES["megatron"]).total == pytest.approx(18e9)  # fp32 grads: 18, unchanged


def test_the_peak_phase_moves_to_the_optimizer_step_when_activations_are_small() -> None:
    """A single GPU with full recomputation and short sequences: weights, gradients and states at the step."""
    s = _stage(Options(dp=1, framework="fsdp", zero=0, recipe="bf16", recompute="full", seq_len=512), 0)
    assert s.peak_phase == "optimizer step"
    assert s.activations_bytes == 0 and s.params_bytes + s.grads_bytes + s.optimizer_bytes == pytest.approx(
        8 * 8_030_261_248, rel=1e-9
    )


def test_flags_reach_the_report_and_bad_ones_are_one_line() -> None:
    runner = CliRunner()
    ok = runner.invoke(
        app,
        ["estimate", "--model", "llama-8b", "--dp", "8", "--framework", "fsdp", "--recompute", "full",
         "--recompute-layers", "2", "--compile", "--loss-impl", "chunked", "-f", "json"],
    )  # fmt: skip
    assert ok.exit_code == 0, ok.stderr
    assert '"recompute_layers": 2' in ok.stdout and '"compile": true' in ok.stdout and '"chunked"' in ok.stdout
    for args, says in (
        (["--recompute-modules", "attention"], "--recompute-modules: must be one of core_attn"),
        (["--framework", "megatron", "--recompute", "op"], "Megatron-LM runs recompute none, selective, full, not op"),
        (["--loss-impl", "liger"], "--loss-impl: must be one of upcast"),
        (["--recompute-layers", "0"], "--recompute-layers: must be a positive integer"),
    ):
        bad = runner.invoke(app, ["estimate", "--model", "llama-8b", "--dp", "8", *args])
        assert bad.exit_code == 2, args
        assert says in bad.stderr and len(bad.stderr.strip().splitlines()) == 1, bad.stderr


def test_unsharded_gradient_blocks_are_reused_by_the_activations() -> None:
    """FSDP NO_SHARD: a block's fp32 gradients (218M x 4 B = 872 MB) are larger than the widest activation
    (2 x 8192 x 14336 x 2 B = 470 MB), so the allocator carves activations out of their cached blocks: reserved is
    allocated plus the largest transient tensor only. Sharded over 8 (109 MB) they are not reusable (the FULL_SHARD
    test above)."""
    s = _stage(Options(dp=8, framework="fsdp", zero=0, recompute="op", seq_len=8192, micro_batch=2), 0)
    assert s.reserved_bytes - s.allocated_bytes == pytest.approx(4 * VOCAB * 8192 * 2, abs=2)


def test_recompute_modules_without_selective_are_named_as_ignored() -> None:
    r = estimate(
        load_model("llama-8b"), load_topology("dgx-h100"), Options(dp=8, recompute="full", recompute_modules="mlp")
    )
    assert any(w.code == "ignored-flags" and "--recompute-modules" in w.message for w in r.warnings)
    r = estimate(
        load_model("llama-8b"), load_topology("dgx-h100"), Options(dp=8, recompute="selective", recompute_modules="mlp")
    )
    assert not any(w.code == "ignored-flags" for w in r.warnings)


# DeepSeek-V3 (its config.json): 128 heads, query latent 1536, key-value latent 512, qk 128 + 64 rope, v 128; 61 layers.
DSV3 = load_model("deepseek-v3").architecture
assert DSV3 is not None and DSV3.mla is not None
Q_LORA, KV_LORA, DSV3_HEADS, QK_NOPE, QK, V = 1536, 512, 128, 128, 128 + 64, 128


def test_mla_up_proj_drops_what_megatron_runs_under_its_checkpoint() -> None:
    """Megatron-Core's MLA runs the latents' norms (fused into linear_q_up_proj / linear_kv_up_proj), the
    up-projections and RoPE in one function, qkv_up_proj_and_rope_apply, which recompute_modules "mla_up_proj"
    checkpoints (multi_latent_attention.py): the normalised latents and the expanded Q, K and V go, 2 bytes each;
    the latents (its inputs) stay. The layer's input norms are not in it: "layernorm" still drops their outputs."""
    layer = layer_tensors(DSV3, moe_layer=True, flash=True, kernels="fused")
    none = kept_per_token(layer, "none", S, B) / TOKENS
    up = kept_per_token(layer, "selective", S, B, frozenset({"mla_up_proj"})) / TOKENS
    assert none - up == 2 * (Q_LORA + KV_LORA + DSV3_HEADS * QK + DSV3_HEADS * (QK + V))
    norms = kept_per_token(layer, "selective", S, B, frozenset({"layernorm"})) / TOKENS
    assert none - norms == 2 * 2 * DSV3.hidden  # the input and post-attention norms' outputs only


def test_mla_up_proj_runs_the_up_projections_again() -> None:
    """Its FLOPs in the backward: every layer's query up-projection (1536 -> 128 x 192) and key-value one
    (512 -> 128 x (128 + 128): the keys' rope part comes from the down-projection), 2 FLOPs a weight per token;
    DeepSeek-V2-Lite has no query latent, so its query projection from the hidden state (2048 -> 16 x 192) runs
    inside the same function and again."""

    per_layer = Q_LORA * DSV3_HEADS * QK + KV_LORA * DSV3_HEADS * (QK_NOPE + V)
    assert mla_up_projection_flops(DSV3) == 2 * 61 * per_layer
    counts = count_params(load_model("deepseek-v3"))
    with_up = flops_per_token(counts, DSV3, 4096, "selective", modules=frozenset({"core_attn", "mla_up_proj"}))
    assert with_up.recompute == 2 * 61 * per_layer  # core_attn adds nothing under flash attention
    assert flops_per_token(counts, DSV3, 4096, "selective").recompute == 0
    lite = load_model("tests/reference/hf-configs/deepseek-v2-lite.json").architecture
    assert lite is not None
    assert mla_up_projection_flops(lite) == 2 * 27 * (2048 * 16 * 192 + 512 * 16 * (128 + 128))


def test_mla_up_proj_is_refused_without_multi_latent_attention() -> None:
    """Megatron-Core refuses it for other attention (transformer_config.py): so does dpcost, in one line, exit 2."""
    runner = CliRunner()
    done = runner.invoke(
        app, ["estimate", "-m", "llama-8b", "-d", "8", "--recompute", "selective", "--recompute-modules", "mla_up_proj"]
    )
    assert done.exit_code == 2
    assert "--recompute-modules" in done.output and "multi-latent attention" in done.output


def test_selective_mlp_and_moe_recompute_their_matmuls_at_every_efficiency() -> None:
    """The one-efficiency compute model (--compute-model flops) charges what recompute_modules mlp and moe re-run,
    as the op-by-op one does: Llama 3 70B's 80 SwiGLU MLPs (8192 -> 28672, three matmuls); Mixtral 8x7B's 32 MoE
    layers whole (the router, 4096 -> 8, and the two experts a token takes, 4096 -> 14336, three matmuls each);
    DeepSeek-V3's 58 MoE layers (router 7168 -> 256, 8 routed and 1 shared expert of 2048), not its 3 dense ones."""
    llama, mixtral = load_model("llama-70b"), load_model("mixtral-8x7b")
    recompute = flops_per_token(count_params(llama), llama.architecture, 8192, "selective", modules=frozenset({"mlp"}))
    assert recompute.recompute == 80 * 2 * 3 * 8192 * 28672
    moe = flops_per_token(count_params(mixtral), mixtral.architecture, 4096, "selective", modules=frozenset({"moe"}))
    assert moe.recompute == 32 * 2 * (4096 * 8 + 2 * 3 * 4096 * 14336)
    assert DSV3 is not None
    per_moe_layer = 7168 * 256 + 8 * 3 * 7168 * 2048 + 3 * 7168 * 2048
    assert mlp_recompute_flops(DSV3, frozenset({"moe"})) == 58 * 2 * per_moe_layer
    assert mlp_recompute_flops(DSV3, frozenset({"layernorm", "moe_act", "core_attn"})) == 0


def test_moe_recompute_keeps_only_what_comes_before_the_moe_layer() -> None:
    """recompute_modules "moe" checkpoints the MoE layer whole (moe_layer.py): nothing it makes is kept, the
    router's fp32 logits included; what comes before it (attention, the norm whose output is its input) is."""
    mixtral = load_model("mixtral-8x7b").architecture
    assert mixtral is not None
    layer = layer_tensors(mixtral, moe_layer=True, flash=True, kernels="fused")
    names = [t.name for t in layer.tensors]
    before = layer.tensors[: names.index("MLP norm output") + 1]
    kept = kept_per_token(layer, "selective", S, B, frozenset({"moe"})) / TOKENS
    assert kept == sum(t.bytes(1, 1) for t in before if t.saved)
    assert "router logits (fp32)" in names[names.index("MLP norm output") :]


def test_moe_act_drops_the_routed_experts_activation_outputs() -> None:
    """recompute_modules moe_act: TEGroupedMLP runs the experts' activation under CheckpointWithoutOutput and drops
    its output, fc2's input (megatron/core/transformer/moe/experts.py): with Megatron's fused SwiGLU, one 2-byte
    value per expert width per routed copy, Mixtral's top-2 x 14336; the fc1 outputs it recomputes from stay."""
    mixtral = load_model("mixtral-8x7b").architecture
    assert mixtral is not None
    layer = layer_tensors(mixtral, moe_layer=True, flash=True, kernels="fused")
    none = kept_per_token(layer, "none", S, B) / TOKENS
    act = kept_per_token(layer, "selective", S, B, frozenset({"moe_act"})) / TOKENS
    assert none - act == 2 * 2 * 14336


def test_shared_experts_are_the_moe_layers_not_mlps() -> None:
    """A shared expert is an MLP of the MoE layer: recompute_modules "mlp" skips MoE layers (transformer_layer.py:
    `if not self.is_moe_layer`), "shared_experts" checkpoints it alone (moe_layer.py shared_experts_compute), "moe"
    with the rest. DeepSeek-V3's one shared expert of 2048 (SwiGLU, Megatron's fused kernels): gate, up and their
    product, 3 x 2 bytes x 2048 a token; its 58 MoE layers' shared experts run 2 x 3 x 7168 x 2048 FLOPs each again."""
    layer = layer_tensors(DSV3, moe_layer=True, flash=True, kernels="fused")
    none = kept_per_token(layer, "none", S, B) / TOKENS
    assert kept_per_token(layer, "selective", S, B, frozenset({"mlp"})) / TOKENS == none
    shared = kept_per_token(layer, "selective", S, B, frozenset({"shared_experts"})) / TOKENS
    assert none - shared == 3 * 2 * 2048
    assert mlp_recompute_flops(DSV3, frozenset({"shared_experts"})) == 58 * 2 * 3 * 7168 * 2048


def test_megatron_te_layers_fuse_their_norms_into_the_next_matmul() -> None:
    """Megatron-Core's Transformer Engine spec (gpt_layer_specs.py) runs a dense layer's norms inside linear_qkv and
    linear_fc1 (TELayerNormColumnParallelLinear, input_layernorm and pre_mlp_layernorm IdentityOp), so "layernorm"
    recomputes nothing there (transformer_layer.py skips IdentityOp) and "mlp" drops the MLP norm's output with the
    MLP: Llama 3.1 8B, fused, 2h + 3 x 2f (gate, up and their product). An MoE layer keeps a norm of its own before
    the router: "layernorm" drops that one's output (Mixtral, 2h)."""
    layer = layer_tensors(LLAMA, moe_layer=False, flash=True, kernels="fused")
    none = kept_per_token(layer, "none", S, B) / TOKENS
    assert kept_per_token(layer, "selective", S, B, frozenset({"layernorm"})) / TOKENS == none
    assert none - kept_per_token(layer, "selective", S, B, frozenset({"mlp"})) / TOKENS == 2 * H + 3 * 2 * F
    mixtral = load_model("mixtral-8x7b").architecture
    assert mixtral is not None
    moe = layer_tensors(mixtral, moe_layer=True, flash=True, kernels="fused")
    moe_none = kept_per_token(moe, "none", S, B) / TOKENS
    assert moe_none - kept_per_token(moe, "selective", S, B, frozenset({"layernorm"})) / TOKENS == 2 * 4096
