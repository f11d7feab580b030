"""The per-op compute model (engine/ops.py): each op's FLOPs and bytes in closed form, and their sum against
PaLM's 6N + 12LHQT where that formula holds."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import read_reference_csv

from dpcost.catalog import load_model, load_topology
from dpcost.engine.compute import flops_per_token
from dpcost.engine.ops import (
    Op,
    fp8_cast,
    layer_ops,
    matmul_operands,
    micro_batch_compute,
    model_ops,
    optimizer_bytes,
    tensor_parallel,
    times,
)
from dpcost.engine.params import count_params
from dpcost.engine.rates import EAGER_SCORES_HBM, rates_for
from dpcost.specs import ModelArchitecture


def test_a_dense_layers_matmuls_are_twice_its_weights_per_token_and_flash_attention_the_causal_half() -> None:
    """Llama 3.1 8B, one layer, T tokens of s: matmul FLOPs 2 x (4096 x (4096 + 2 x 1024) + 4096 x 4096 + 3 x 4096
    x 14336) x T forward; attention 2 x T x s x 32 x (128 + 128) / 2 (FlashAttention-2's causal count)."""
    a = load_model("llama-8b").architecture
    assert a is not None
    t, s = 8192, 8192
    ops = layer_ops(a, False, t, s, "fused")
    weights = 4096 * (4096 + 2 * 1024) + 4096 * 4096 + 3 * 4096 * 14336
    gemm = sum(op.flops * op.repeats for op in ops if op.kind == "gemm")
    assert gemm == pytest.approx(2 * weights * t)
    assert sum(op.backward_flops * op.repeats for op in ops if op.kind == "gemm") == pytest.approx(4 * weights * t)
    attention = next(op for op in ops if op.kind == "attention")
    assert attention.flops == pytest.approx(2 * t * s * 32 * 256 / 2)
    assert attention.backward_flops == pytest.approx(2.5 * attention.flops)
    # the fused MLP activation reads gate and up and writes their product: 3 x 14336 bf16 values per token
    act = next(op for op in ops if op.name == "MLP activation")
    assert act.bytes == pytest.approx(6 * 14336 * t)


def test_qwen3s_query_and_key_norms_read_and_write_the_queries_and_keys() -> None:
    """Qwen3's QK-norm, as Megatron-Core's q_layernorm and k_layernorm run it (attention.py
    get_query_key_value_tensors, before RoPE): Qwen3 8B's 32 query heads and 8 key heads of 128, one fused RMSNorm
    kernel each, read and write every 16-bit element once forward (4 bytes) and twice that backward; a model
    without QK-norm (Llama 3.1 8B) has none."""
    a = load_model("tests/reference/hf-configs/qwen3-8b.json").architecture
    assert a is not None and a.qk_norm == "head"
    t = 4096
    norms = [op for op in layer_ops(a, False, t, 4096, "fused") if op.name == "query and key norms"]
    assert len(norms) == 1 and norms[0].module == "qkv" and norms[0].kernels == 2
    assert norms[0].bytes == 4 * (32 + 8) * 128 * t and norms[0].backward_bytes == 2 * norms[0].bytes
    llama = load_model("llama-8b").architecture
    assert llama is not None
    assert not [op for op in layer_ops(llama, False, t, 4096, "fused") if "norms" in op.name]


def test_an_moe_layer_permutes_its_tokens_to_the_experts_and_back() -> None:
    """Megatron-Core's token dispatchers (moe/token_dispatcher.py, moe_utils.permute / unpermute /
    sort_chunks_by_idxs with Transformer Engine's fused kernels), Qwen3-30B-A3B (hidden 2048, top-8 of 128 experts),
    T tokens: the permutation reads each token once and writes its 8 copies, (1 + 8) x 2048 x 2 bytes per token; the
    unpermutation reads the 8 copies and writes one; with the all-to-all over EP 8 (16 local experts) the received
    copies are also sorted by local expert and unsorted, each 2 x 8 x 2048 x 2 bytes; the backward moves the same
    bytes. Without EP (one rank holds every expert) nothing is sorted, nor by the all-gather and flex dispatchers,
    which permute by expert what they receive (or receive it so, HybridEP) and call no sort_chunks_by_idxs."""
    import json
    from pathlib import Path

    from dpcost.catalog import model_from_hf_config

    path = Path(__file__).parent / "reference" / "hf-configs" / "qwen3-30b-a3b.json"
    a = model_from_hf_config(json.loads(path.read_text()), str(path)).architecture
    assert a is not None and a.moe is not None and (a.hidden, a.moe.active, a.moe.experts) == (2048, 8, 128)
    t = 4096
    names = [op.name for op in layer_ops(a, True, t, 4096, "fused", ep=8)]
    i, j = names.index("expert gate and up"), names.index("expert down")
    assert names[i - 2 : i] == ["token permutation", "tokens sorted by local expert"]
    assert names[j + 2 : j + 4] == ["tokens unsorted", "token unpermutation"]
    by_name = {op.name: op for op in layer_ops(a, True, t, 4096, "fused", ep=8)}
    assert by_name["token permutation"].bytes == 9 * 2048 * 2 * t == by_name["token unpermutation"].bytes
    assert by_name["tokens sorted by local expert"].bytes == 2 * 8 * 2048 * 2 * t
    assert all(by_name[n].backward_bytes == by_name[n].bytes for n in ("token permutation", "tokens unsorted"))
    alone = [op.name for op in layer_ops(a, True, t, 4096, "fused")]
    assert "token permutation" in alone and "tokens sorted by local expert" not in alone
    for dispatcher in ("flex", "allgather"):
        names = [op.name for op in layer_ops(a, True, t, 4096, "fused", ep=8, dispatcher=dispatcher)]
        assert "token permutation" in names and not {"tokens sorted by local expert", "tokens unsorted"} & {*names}


def test_megatron_runs_gpt_oss_clamp_and_expert_biases_outside_its_fused_kernels() -> None:
    """Megatron-Core at 0d8e0714 (the commit Megatron-Bridge v0.2.0 pins), gpt-oss-120b (hidden 2880, top-4 of 128
    experts of 2880, swiglu_limit 7), T tokens over EP 64 (2 local experts), 4T expert rows of 16-bit elements:
    - fused_bias_geglu.py weighted_bias_quick_geglu_impl: `x_glu.clamp(max=c)` and `x_linear.clamp(-c, c)` each read
      and write a half (rows x 2880), `torch.cat` reads both halves and writes the whole: 3 kernels before the
      compiled activation;
    - experts.py _apply_bias: per local expert `b * p` writes its rows (rows x 2880) and `t + b * p` reads two and
      writes one, then `torch.cat` reads and writes them all: 2 kernels an expert and one.
    Neither runs under other frameworks' kernels, nor for a model without a clamp or expert biases (Qwen3)."""
    import json
    from pathlib import Path

    from dpcost.catalog import model_from_hf_config

    here = Path(__file__).parent / "reference" / "hf-configs"
    a = model_from_hf_config(json.loads((here / "gpt-oss-120b.json").read_text()), "gpt-oss-120b.json").architecture
    assert a is not None and a.moe is not None and a.activation_clamp == 7.0 and a.linear_bias
    t, half = 4096, 4 * 4096 * 2880 * 2  # one half of the FFN input, or the output, over the rank's 4T rows
    by_name = {op.name: op for op in layer_ops(a, True, t, 4096, "fused", ep=64)}
    clamp, bias = by_name["expert activation clamp"], by_name["expert output bias"]
    clamps, cat = 2 * (half + half), (2 * half) + (2 * half)
    assert (clamp.module, clamp.bytes, clamp.kernels) == ("moe_act", clamps + cat, 3)
    b_times_p, add, cat_rows = half, 3 * half, 2 * half
    assert (bias.module, bias.bytes, bias.kernels) == ("moe", b_times_p + add + cat_rows, 2 * 2 + 1)
    for kernels in ("eager", "compiled"):
        names = {op.name for op in layer_ops(a, True, t, 4096, kernels, ep=64)}
        assert not names & {"expert activation clamp", "expert output bias"}
    qwen = model_from_hf_config(json.loads((here / "qwen3-30b-a3b.json").read_text()), "q.json").architecture
    assert qwen is not None
    assert not {op.name for op in layer_ops(qwen, True, t, 4096, "fused", ep=8)} & {clamp.name, bias.name}

    # YaRN's scale (0.1 ln 32 + 1) sends Megatron-Core's RoPE down its unfused path (rope_utils.py: mscale != 1):
    # gpt-oss's rotary moves what eager PyTorch's does, Qwen3's what the fused kernel does
    def rotary_bytes(arch: ModelArchitecture, kernels: str) -> float:
        return next(op.bytes for op in layer_ops(arch, True, t, 4096, kernels) if op.name == "rotary")

    assert a.rope_mscale > 1 and qwen.rope_mscale == 1
    width = (64 * 64 + 8 * 64) * t
    assert rotary_bytes(a, "fused") == rotary_bytes(a, "eager") == 12 * width
    assert rotary_bytes(qwen, "fused") == 4 * (32 * 128 + 4 * 128) * t


def test_megatron_adds_gpt_oss_biases_and_residuals_unfused() -> None:
    """Megatron-Core at 0d8e0714: TEGroupedMLP asserts bias_dropout_fusion off when the linear layers have biases
    (experts.py:782-784), so gpt-oss's bias-dropout-adds run _bias_dropout_add_func eagerly (fused_bias_dropout.py).
    On T x 2880 16-bit elements: after attention `x + bias` (read, write) and `residual + out` (two reads, a write),
    10 bytes an element in 2 kernels, its backward the bias gradient's reduction (one read); after the MoE layer
    (its bias None: the experts add their own) the add alone, 6 bytes in 1 kernel. Qwen3 (no biases) keeps the add
    fused into the norm after it, 2 bytes; eager PyTorch's add is 6 bytes either way."""
    import json
    from pathlib import Path

    from dpcost.catalog import model_from_hf_config

    here = Path(__file__).parent / "reference" / "hf-configs"
    oss = model_from_hf_config(json.loads((here / "gpt-oss-120b.json").read_text()), "o.json").architecture
    qwen = model_from_hf_config(json.loads((here / "qwen3-30b-a3b.json").read_text()), "q.json").architecture
    assert oss is not None and qwen is not None
    t = 4096
    elements = 2880 * t

    def residuals(arch: ModelArchitecture, kernels: str) -> list[tuple[float, int, float, int]]:
        ops = layer_ops(arch, True, t, 4096, kernels, ep=8)
        return [(o.bytes, o.kernels, o.backward_bytes, o.backward_kernels) for o in ops if o.module == "residual"]

    assert residuals(oss, "fused") == [(10 * elements, 2, 2 * elements, 1), (6 * elements, 1, 0.0, 0)]
    assert residuals(oss, "eager") == [(6 * elements, 1, 6 * elements, 2)] * 2
    assert residuals(qwen, "fused") == [(2 * 2048 * t, 0, 2 * 2048 * t, 0)] * 2


def test_dropout_moves_the_scores_and_a_mask_before_flash_attention_and_a_mask_beside_each_residual_add() -> None:
    """GPT-3 175B as Megatron-LM trained it (dropout 0.1, before flash attention), T tokens of s: the attention
    probabilities' dropout reads and writes b x heads x s x s bf16 scores and writes a bool mask, 5 bytes per score,
    and its backward reads the gradient and the mask and writes the gradient, 5 more; each of the two hidden-state
    dropouts, fused into the bias-dropout-add, writes a bool mask of T x h forward and reads it backward. Under flash
    attention the scores' dropout runs in the kernel, and a model without dropout has none of these ops."""
    a = load_model("gpt3-175b").architecture
    assert a is not None and a.dropout > 0
    t, s = 4096, 2048
    ops = layer_ops(a, False, t, s, "fused", flash=False)
    scores = 96 * s * t
    dropped = next(op for op in ops if op.name == "attention dropout")
    assert (dropped.bytes, dropped.backward_bytes) == (5 * scores, 5 * scores)
    hidden = [op for op in ops if op.name == "dropout"]
    assert [(op.bytes, op.backward_bytes) for op in hidden] == [(12288 * t, 12288 * t)] * 2
    eager = [op for op in layer_ops(a, False, t, s, "eager", flash=False) if op.name == "dropout"]
    assert [op.bytes for op in eager] == [5 * 12288 * t] * 2  # nn.Dropout: bf16 in, bf16 out, bool mask
    assert not [op for op in layer_ops(a, False, t, s, "fused") if op.name == "attention dropout"]
    llama = load_model("llama-8b").architecture
    assert llama is not None
    assert not [op for op in layer_ops(llama, False, t, s, "fused") if "dropout" in op.name]


def test_an_fp8_matmul_casts_its_input_and_its_output_gradient_each_time() -> None:
    """Transformer Engine's current scaling (Float8CurrentScalingQuantizer::quantize_impl): amax, scale, then the
    cast, three kernels; the 16-bit tensor read twice and written in FP8 row- and (on Hopper, not Blackwell)
    column-wise: 2 + 2 + 1 + 1 = 6 bytes per element, 5 on Blackwell; where a norm or an activation computed the amax,
    2 + 1 + 1 = 4 and two kernels. Llama-8B, T tokens: inputs of the QKV (T x 4096, after the norm), output (T x 4096,
    from attention), gate (T x 4096, after the norm; its cast serves the up matmul, Megatron's one fc1) and down
    (T x 14336, after the activation) matmuls; gradients of their outputs (T x 6144, 4096, 14336, 14336, 4096). Under
    TP 8 without sequence parallelism the column-parallel inputs stay whole."""
    assert (fp8_cast("hopper").bytes, fp8_cast("blackwell").bytes) == (6.0, 5.0)
    a = load_model("llama-8b").architecture
    assert a is not None
    t = 8192
    casts = [op for op in layer_ops(a, False, t, 8192, "fused", 1.0, cast=fp8_cast("hopper")) if "FP8 cast" in op.name]
    assert sum(op.bytes for op in casts) == t * (4 * 4096 + 6 * 4096 + 4 * 4096 + 4 * 14336)
    assert sum(op.backward_bytes for op in casts) == 6 * t * (6144 + 4096 + 14336 + 14336 + 4096)
    assert sorted(op.kernels for op in casts if op.bytes) == [2, 2, 2, 3]
    assert {op.backward_kernels for op in casts if op.backward_bytes} == {3}
    assert not [op for op in layer_ops(a, False, t, 8192, "fused", 1.0) if "FP8 cast" in op.name]
    split = tensor_parallel(casts, 8, False)
    assert sum(op.bytes for op in split) == t * (4 * 4096 + 6 * 4096 / 8 + 4 * 4096 + 4 * 14336 / 8)
    assert sum(op.backward_bytes for op in split) == 6 * t * ((6144 + 14336 + 14336) / 8 + 4096 + 4096)


def test_megatron_projects_a_gated_mlps_gate_and_up_in_one_matmul() -> None:
    """Megatron-Core's MLP doubles linear_fc1's output width for a gated linear unit (transformer/mlp.py at
    core_r0.15.0: "If this is a gated linear unit we double the output width"), its grouped experts' fc1 alike
    (moe/experts.py): Llama-8B's T x 4096 by 4096 x 28672 and Qwen3-30B-A3B's experts' 4096 x 1536, where eager
    PyTorch runs transformers' Llama gate_proj and up_proj as two matmuls of 14336, and Phi-3's gate_up_proj as one.
    The FLOPs are the same either way."""
    import json
    from pathlib import Path

    from dpcost.catalog import model_from_hf_config

    def config(name: str) -> ModelArchitecture:
        path = Path(__file__).parent / "reference" / "hf-configs" / name
        a = model_from_hf_config(json.loads(path.read_text()), str(path)).architecture
        assert a is not None
        return a

    def fc1(a: ModelArchitecture, moe: bool, kernels: str) -> list[tuple[float, float, float]]:
        ops = layer_ops(a, moe, 4096, 4096, kernels)
        return [op.shape for op in ops if op.kind == "gemm" and (" gate" in op.name or op.name.endswith(" up"))]

    llama, qwen3, phi3 = load_model("llama-8b").architecture, config("qwen3-30b-a3b.json"), config("phi-3-medium.json")
    assert llama is not None
    assert fc1(llama, False, "fused") == [(4096, 4096, 28672)]
    assert fc1(llama, False, "eager") == [(4096, 4096, 14336)] * 2
    assert fc1(qwen3, True, "fused") == [(4096 * 8 / 128, 2048, 1536)]
    assert fc1(phi3, False, "eager") == [(4096, phi3.hidden, 2 * (phi3.ffn or 0))]
    flops = [sum(op.flops for op in layer_ops(llama, False, 4096, 4096, k)) for k in ("fused", "eager")]
    assert flops[0] == pytest.approx(flops[1])


def test_transformer_engines_fused_grouped_mlp_leaves_the_activation_and_two_casts_in_its_kernels() -> None:
    """Transformer Engine 2.16's CuTe-DSL grouped MLP (ops/fused/forward_grouped_mlp.py, backward_grouped_mlp.py):
    forward, fc1's input is cast to MXFP8 and one kernel runs fc1 with the SwiGLU, the probabilities and fc2's input
    cast in its epilogue; backward, fc2's output gradient is cast and fc2's gradient kernel applies the SwiGLU's
    backward and casts fc1's output gradient. Qwen3-30B-A3B's experts on Blackwell lose their activation and those
    two casts and keep the other two; GPT-OSS's clamp goes with its activation, its experts' output bias stays."""
    import json
    from pathlib import Path

    from dpcost.catalog import model_from_hf_config

    def names(config: str, fused: bool) -> set[str]:
        path = Path(__file__).parent / "reference" / "hf-configs" / config
        a = model_from_hf_config(json.loads(path.read_text()), str(path)).architecture
        assert a is not None
        ops = layer_ops(a, True, 4096, 4096, "fused", 1.0, ep=8, cast=fp8_cast("blackwell"), fused_grouped_mlp=fused)
        return {op.name for op in ops if op.name.startswith("expert ")}

    unfused, fused = names("qwen3-30b-a3b.json", False), names("qwen3-30b-a3b.json", True)
    assert unfused - fused == {
        "expert activation", "expert down, FP8 cast", "expert gate and up, gradient FP8 cast"
    }  # fmt: skip
    assert {"expert gate and up, FP8 cast", "expert down, gradient FP8 cast"} <= fused and not fused - unfused
    oss_unfused, oss_fused = names("gpt-oss-120b.json", False), names("gpt-oss-120b.json", True)
    assert "expert activation clamp" in oss_unfused - oss_fused and "expert output bias" in oss_fused


def test_latent_attentions_up_projections_cast_their_own_inputs_under_fp8() -> None:
    """DeepSeek-V3's query and key-value up-projections read the normed query and key-value latents, not a gate's
    input: each casts its own (Transformer Engine's LayerNormColumnParallelLinear computes the amax in the norm), as
    the query's down-projection and every other matmul does but the router and an unfused up-projection after its
    gate."""
    a = load_model("deepseek-v3").architecture
    assert a is not None and a.mla is not None
    ops = layer_ops(a, False, 4096, 4096, "fused", 1.0, cast=fp8_cast("hopper"))
    names = [op.name for op in ops]
    for up in ("query up", "key-value up"):
        assert names[names.index(up) + 1] == f"{up}, FP8 cast"


def test_an_nvfp4_matmul_casts_as_transformer_engines_nvfp4_quantizer() -> None:
    """NVFP4 (Transformer Engine's NVFP4Quantizer::quantize_impl with the random Hadamard transform): the amaxes
    before and after the transform in one read of the 16-bit tensor, a row-wise cast and a transposed cast through the
    transform, each reading it once and writing half a byte per element and an E4M3 scale per 16:
    2 + 2 x (2 + 0.5 + 1/16) = 7.125 bytes, three kernels, for every input and every gradient, a norm's or an
    activation's output too (the post-transform amax is a read of its own). The operands: 0.5625 bytes."""
    gemm_bytes, cast = matmul_operands("blackwell", "nvfp4")
    assert cast is not None
    assert (gemm_bytes, cast.bytes, cast.kernels) == (0.5625, 7.125, 3)
    a = load_model("llama-8b").architecture
    assert a is not None
    t = 8192
    casts = [op for op in layer_ops(a, False, t, 8192, "fused", gemm_bytes, cast=cast) if "NVFP4 cast" in op.name]
    assert sum(op.bytes for op in casts) == 7.125 * t * (4096 + 4096 + 4096 + 14336)
    assert sum(op.backward_bytes for op in casts) == 7.125 * t * (6144 + 4096 + 14336 + 14336 + 4096)
    assert {op.kernels for op in casts if op.bytes} == {3}
    assert matmul_operands("hopper", "bf16") == (2.0, None)


@pytest.mark.parametrize("name", ["llama-8b", "llama-70b", "mixtral-8x7b", "deepseek-v3"])
def test_the_matmuls_and_attention_sum_to_palms_model_flops(name: str) -> None:
    """Forward matmul FLOPs of every layer and the head = 2N per token (N: the weights a token multiplies); the
    attention ops count the causal half of PaLM's 12LHQT / 3 forward, so doubling them gives it back."""
    model = load_model(name)
    a = model.architecture
    assert a is not None
    counts = count_params(model)
    t, s = 4096, 4096
    total_gemm = total_attention = 0.0
    for block in counts.blocks:
        for op in layer_ops(a, block.moe, t, s, "fused"):
            if op.kind == "gemm":
                total_gemm += op.flops * op.repeats
            elif op.kind == "attention":
                total_attention += op.flops
    total_gemm += sum(op.flops for op in model_ops(a, t, "fused", "fused") if op.kind == "gemm")
    palm = flops_per_token(counts, a, s)
    attention_palm = (
        2.0
        * a.layers
        * a.heads
        * ((a.mla.qk_nope_head_dim + a.mla.qk_rope_head_dim + a.mla.v_head_dim) if a.mla else 2 * a.d_head)
        * s
    )
    assert total_attention * 2 / t == pytest.approx(attention_palm, rel=1e-9)
    assert total_gemm / t == pytest.approx(palm.forward - attention_palm, rel=0.002)


def test_an_ops_time_is_the_largest_of_compute_bandwidth_and_launch() -> None:
    """H100: a 16384 x 4096 x 4096 matmul is compute-bound at 708.5 of 989 TFLOP/s (ml-engineering MSMF, sustained
    at the 700 W limit, measured on the H200's same die) x 0.91, the in-step share fitted on published runs
    (rates.IN_STEP_MATMUL, `large_runs.py --fit-matmul`); a norm
    over 16384 x 4096 bf16 values is bandwidth-bound at 1832 of 2000 GB/s; a tiny kernel takes its launch."""
    h100 = load_topology("dgx-h100").gpu
    r = rates_for(h100)
    a = load_model("llama-8b").architecture
    assert a is not None
    ops = layer_ops(a, False, 16384, 4096, "fused")
    out = next(op for op in ops if op.name == "output projection")
    t = times([out], r, h100.bf16_dense, h100.bf16_dense, h100.hbm_bandwidth, 4096, "flash2")
    assert t.forward["matmuls"] == pytest.approx(2 * 16384 * 4096 * 4096 / (708.5e12 * 0.91), rel=1e-3)
    norm = next(op for op in ops if op.name == "input norm")
    t = times([norm], r, h100.bf16_dense, h100.bf16_dense, h100.hbm_bandwidth, 4096, "flash2")
    assert t.forward["memory-bound"] == pytest.approx(4 * 4096 * 16384 / (h100.hbm_bandwidth * 1832 / 2000))
    tiny = layer_ops(a, False, 1, 4096, "eager")
    rotary = next(op for op in tiny if op.name == "rotary")
    t = times([rotary], r, h100.bf16_dense, h100.bf16_dense, h100.hbm_bandwidth, 4096, "flash2")
    assert t.forward["memory-bound"] == pytest.approx(rotary.kernels * r.launch)


def _attention_rate(gpu_topology: str, seq_len: int, kernel: str) -> float:
    gpu = load_topology(gpu_topology).gpu
    a = load_model("llama-8b").architecture
    assert a is not None
    att = next(op for op in layer_ops(a, False, 16384, seq_len, "fused") if op.kind == "attention")
    t = times([att], rates_for(gpu), gpu.bf16_dense, gpu.bf16_dense, gpu.hbm_bandwidth, seq_len, kernel)
    return (att.flops + att.backward_flops) / (t.forward["attention"] + t.backward["attention"])


def test_flash_attention_runs_at_the_kernels_measured_rate_for_its_sequence() -> None:
    """FlashAttention-2 causal, head dim 128, forward + backward on H100: 163 TFLOP/s at 512 and 328 at 16k
    (tests/reference/compute-rates/attention.csv), benchmark bursts; in a step the kernel keeps the share of its
    burst rate a power-saturated matmul keeps (708.5 of 841.9 TFLOP/s, ml-engineering's MSMF and MAMF on H200):
    the saturating curve stays within 6% of both, so derated."""
    kept = 708.5 / 841.9
    for s, burst in ((512, 163e12), (16384, 328e12)):
        assert _attention_rate("dgx-h100", s, "flash2") == pytest.approx(burst * kept, rel=0.06), s


def test_attention_in_a_step_matches_the_one_in_step_measurement() -> None:
    """ml-engineering measured FlashAttention-3 at 447 TFLOP/s forward + backward inside a Llama-3.1-8B training
    step at 8k on H200 (attention.csv): cuDNN's attention (Transformer Engine's, the Hopper rate dpcost has a burst
    benchmark for) as dpcost runs it in a step comes within 5% of it. Two kernels of like speed alone (cuDNN 539
    TFLOP/s forward at 16k, FlashAttention-3 648 non-causal): a cross-check, not the same kernel."""
    assert _attention_rate("hgx-h200", 8192, "cudnn") == pytest.approx(447e12, rel=0.05)


def _standard_attention_rows() -> dict[int, float]:
    """attention.csv's PyTorch standard attention on A100 (FlashAttention-2's benchmark): seq_len -> TFLOP/s."""
    rows = read_reference_csv("compute-rates/attention.csv")
    return {
        int(r["seq_len"]): float(r["tflops"])
        for r in rows
        if r["impl"] == "PyTorch standard attention" and r["head_dim"] == "128"
    }


def test_eager_attention_streams_its_scores_at_the_share_standard_attention_reaches() -> None:
    """FlashAttention-2's A100 benchmark: PyTorch's standard attention, head dim 128, causal, forward + backward, at
    2k, 4k and 8k runs 32, 32 and 34 TFLOP/s as FlashAttention counts them (3.5 x 4bs^2hd / 2). Its kernels move 26
    bytes per score (forward: the scores written, the causal mask added, softmax, the scores read by the second
    matmul: 2 + 4 + 4 + 2; backward: 14); at A100's streaming rate (1,759 GB/s triad) that takes the share of the
    measured time rates.EAGER_SCORES_HBM holds, and dpcost's eager attention moves its bytes at that share."""
    measured = _standard_attention_rows()
    assert {s: measured[s] for s in (2048, 4096, 8192)} == {2048: 32.0, 4096: 32.0, 8192: 34.0}
    shares = []
    for s in (2048, 4096, 8192):
        batch, heads, head_dim = 16384 // s, 16, 128
        scores = batch * heads * s * s
        seconds = 3.5 * 4 * batch * s * s * heads * head_dim / 2 / (measured[s] * 1e12)
        shares.append(26 * scores / 1759e9 / seconds)
    assert sum(shares) / len(shares) == pytest.approx(EAGER_SCORES_HBM, abs=0.005)
    a100 = load_topology("dgx-a100").gpu
    a = load_model("llama-8b").architecture
    assert a is not None
    eager = next(op for op in layer_ops(a, False, 16384, 2048, "fused", flash=False) if op.name == "attention (eager)")
    t = times([eager], rates_for(a100), a100.bf16_dense, a100.bf16_dense, a100.hbm_bandwidth, 2048, "flash2")
    streaming = a100.hbm_bandwidth * rates_for(a100).hbm
    assert t.forward["matmuls"] == pytest.approx(eager.bytes / (streaming * EAGER_SCORES_HBM))
    assert t.backward["matmuls"] == pytest.approx(eager.backward_bytes / (streaming * EAGER_SCORES_HBM))


def test_full_recomputation_reruns_every_layers_forward_and_none_nothing() -> None:
    h100 = load_topology("dgx-h100").gpu
    model = load_model("llama-8b")
    a = model.architecture
    assert a is not None
    moe = [b.moe for b in count_params(model).blocks]
    common = (a, moe, 8192, 8192, "fused", "upcast", rates_for(h100), h100.bf16_dense, h100.bf16_dense)
    none = micro_batch_compute(*common, h100.hbm_bandwidth, "flash2", "none")
    full = micro_batch_compute(*common, h100.hbm_bandwidth, "flash2", "full")
    layers = micro_batch_compute(*common, h100.hbm_bandwidth, "flash2", "none")
    assert none.recompute == 0
    head_and_loss = sum(
        times(model_ops(a, 8192, "fused", "upcast"), rates_for(h100), h100.bf16_dense, h100.bf16_dense,
              h100.hbm_bandwidth, 8192, "flash2").forward.values()
    )  # fmt: skip
    assert full.recompute == pytest.approx(layers.forward - head_and_loss)
    assert full.backward == pytest.approx(none.backward + full.recompute)


def test_adamw_moves_its_states_master_weights_and_gradient_once() -> None:
    """Per parameter: fp32 gradient read twice (the update and the norm for clipping), m and v read and written
    (8 B each way), the fp32 master read and written and the bf16 weight written: 8 + 16 + 8 + 2 = 34 B."""
    assert optimizer_bytes(1.0, 4.0, True, 8.0) == 34.0


def _head_dim_share(impl: str, direction: str, head_dim: str) -> float:
    """attention.csv's H100 causal rate at `head_dim` over head dim 128's, averaged over the sequences swept."""
    rows = [r for r in read_reference_csv("compute-rates/attention.csv")
            if r["gpu"].startswith("H100") and r["impl"] == impl and r["direction"] == direction
            and r["causal"] == "true"]  # fmt: skip
    by = {(r["head_dim"], r["seq_len"]): float(r["tflops"]) for r in rows}
    ratios = [by[(head_dim, s)] / by[("128", s)] for (d, s) in by if d == head_dim and ("128", s) in by]
    assert len(ratios) == 6
    return sum(ratios) / len(ratios)


def test_attention_keeps_the_share_of_its_rate_the_head_dim_sweeps_measure() -> None:
    """The head-dim shares are attention.csv's (H100, causal, 512 to 16k): FlashAttention-2 forward + backward at
    64, its forward at 256, cuDNN's forward at both; gpt-oss's head dim 64 under cuDNN runs at 0.707 of what head
    dim 128 would, and MLA's (192 + 128) / 2 = 160 between 128's and 256's."""
    from dpcost.engine.rates import ATTENTION_HEAD_DIM, attention_head_factor

    measured = {
        "flash2": (
            _head_dim_share("FlashAttention-2", "fwd+bwd", "64"),
            _head_dim_share("FlashAttention-2", "fwd", "256"),
        ),
        "cudnn": (_head_dim_share("cuDNN", "fwd", "64"), _head_dim_share("cuDNN", "fwd", "256")),
    }
    for kernel, (at_64, at_256) in measured.items():
        table = dict(ATTENTION_HEAD_DIM[kernel])
        assert table[64] == pytest.approx(at_64, abs=0.001) and table[256] == pytest.approx(at_256, abs=0.001)
    assert attention_head_factor("cudnn", 128) == 1.0
    assert 0.945 < attention_head_factor("cudnn", 160) < 1.0
    h100 = load_topology("dgx-h100").gpu
    oss = load_model("tests/reference/hf-configs/gpt-oss-120b.json").architecture
    assert oss is not None
    att = next(op for op in layer_ops(oss, True, 4096, 4096, "fused") if op.kind == "attention")
    wide = replace(att, head_dim=128.0)
    r = rates_for(h100)
    narrow_s = times([att], r, h100.bf16_dense, h100.bf16_dense, h100.hbm_bandwidth, 4096, "cudnn").forward_seconds
    wide_s = times([wide], r, h100.bf16_dense, h100.bf16_dense, h100.hbm_bandwidth, 4096, "cudnn").forward_seconds
    assert wide_s / narrow_s == pytest.approx(0.707, rel=1e-9)


def test_the_output_head_and_the_router_stay_in_16_bits_under_fp8() -> None:
    """Megatron-Core's output layer is its own ColumnParallelLinear, outside Transformer Engine's FP8 (gpt_model.py;
    MXFP8 only under the opt-in fp8_output_proj), and its router multiplies in the input's dtype or fp32
    (router.py router_gating_linear): under FP8 both run at the BF16 peak and BF16 share, the layers' projections
    at the FP8 ones. Llama 3 8B's head and Mixtral's router take as long in an FP8 step as in a BF16 one."""
    h100 = load_topology("dgx-h100").gpu
    r = rates_for(h100)
    assert h100.fp8_dense is not None

    def seconds(op: Op, dtype: str) -> float:
        peak = h100.fp8_dense if dtype == "fp8" else h100.bf16_dense
        share = r.gemm_fp8 if dtype == "fp8" else r.gemm
        t = times([op], r, peak, h100.bf16_dense, h100.hbm_bandwidth, 4096, "cudnn", share, ("hopper", dtype))
        return t.forward_seconds + t.backward_seconds

    llama, mixtral = load_model("llama-8b").architecture, load_model("mixtral-8x7b").architecture
    assert llama is not None and mixtral is not None
    head = next(op for op in model_ops(llama, 4096, "fused", "vocab-parallel") if op.module == "head")
    router = next(op for op in layer_ops(mixtral, True, 4096, 4096, "fused") if op.module == "router")
    for op in (head, router):
        assert op.sixteen_bit and seconds(op, "fp8") == pytest.approx(seconds(op, "bf16")), op.name
    proj = next(op for op in layer_ops(llama, False, 4096, 4096, "fused") if op.module == "qkv")
    assert not proj.sixteen_bit and seconds(proj, "fp8") < 0.6 * seconds(proj, "bf16")


def test_context_parallel_attention_runs_at_the_rate_of_its_blocks() -> None:
    """Transformer Engine's ring attention (AttnFuncWithCPAndKVP2P) computes a rank's queries against the sequence
    in blocks of seq_len / CP: with CP 2 a rank's 4,096 tokens of an 8,192-token sequence do the same attention
    FLOPs, at the rate of a causal kernel over 4,096 (rates: attention x T / (T + attention_seq)), where without CP
    the same FLOPs would run at 8,192's rate. A sliding window shorter than the block keeps its own span."""
    from dpcost.specs import LocalAttentionSpec

    a = load_model("llama-8b").architecture
    assert a is not None

    def attention(ops: list[Op]) -> Op:
        return next(op for op in ops if op.kind == "attention")

    whole, split = (attention(layer_ops(a, False, 4096, 8192, "fused", cp=cp)) for cp in (1, 2))
    assert split.flops == whole.flops and split.backward_flops == whole.backward_flops
    assert (whole.span, split.span) == (8192, 4096)
    h100 = load_topology("dgx-h100").gpu
    rates = rates_for(h100)

    def seconds(op: Op) -> float:
        t = times([op], rates, h100.bf16_dense, h100.bf16_dense, h100.hbm_bandwidth, 8192, "cudnn")
        return t.forward_seconds + t.backward_seconds

    at = rates.attention_seq
    assert seconds(split) / seconds(whole) == pytest.approx((8192 / (8192 + at)) / (4096 / (4096 + at)))
    window = LocalAttentionSpec(kind="sliding", size=1024)
    local = [attention(layer_ops(a, False, 4096, 8192, "fused", local=window, cp=cp)) for cp in (1, 2)]
    assert local[0].span == local[1].span < 4096


def test_an_mxfp8_output_layer_takes_the_recipes_operands_and_casts() -> None:
    """Megatron-Core's output layer is a 16-bit ColumnParallelLinear unless fp8_output_proj (#4825, gpt_model.py):
    then Transformer Engine's TELMHeadColumnParallelLinear under the MXFP8 autocast, at the FP8 rate, its
    (tokens x hidden) input and (tokens x vocab) output gradient cast like any MXFP8 matmul's. MTP's head likewise."""
    from dpcost.engine.ops import mtp_ops

    a = load_model("deepseek-v3").architecture
    assert a is not None
    operands = matmul_operands("blackwell", "fp8")
    gemm_bytes, cast = operands
    assert cast is not None

    def head(ops: list[Op]) -> list[Op]:
        return [op for op in ops if op.name.startswith("output head")]

    (plain,) = head(model_ops(a, 4096, "fused", "vocab-parallel"))
    low, cast_in, cast_grad = head(model_ops(a, 4096, "fused", "vocab-parallel", operands))
    assert plain.sixteen_bit and not low.sixteen_bit and low.flops == plain.flops
    assert low.bytes == gemm_bytes * (4096 * a.hidden + a.hidden * a.output_vocab) + 2 * 4096 * a.output_vocab
    assert cast_in.bytes == cast.bytes * 4096 * a.hidden and cast_in.backward_bytes == 0
    assert cast_grad.backward_bytes == cast.bytes * 4096 * a.output_vocab and cast_grad.bytes == 0
    assert len(head(mtp_ops(a, 4096, "fused", "vocab-parallel", operands))) == 3
