"""Memory per GPU under a layout (dpcost/engine/layout_memory.py) against Megatron-LM's theoretical formula.

`megatron_theoretical_memory` below is megatron/training/theoretical_memory_usage.py at commit
d98e8a64ddf34856e74b24714e3bedb2f5a39553 (compute_weight_and_optimizer_memory, compute_activation_memory,
compute_activation_memory_without_sp, report_theoretical_memory) transcribed line by line onto an `args` namespace,
without the module under test: the layouts below are published runs, their arguments written out from the papers
and configs, and the module gets them through its adapter from the catalog's model specs.
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import pytest

from dpcost.catalog import load_model
from dpcost.engine.layout_memory import (
    MemoryLayout,
    ModelShape,
    ParamGroups,
    activation_bytes,
    attention_width_bytes,
    bytes_per_parameter,
    chunk_forwards,
    deferred_output_wgrad_bytes,
    dummy_wgrad_bytes,
    expert_data_parallel_size,
    first_stage_microbatches,
    korthikanti_layer_activation_bytes,
    layer_activation_bytes,
    layout_memory,
    layout_memory_for,
    microbatches_in_flight,
    mlp_half_bytes,
    model_shape,
    moe_mlp_half_bytes,
    padded_vocab_size,
    parameters_on_most_loaded_shard,
    parameters_on_stage,
    stage_activation_bytes,
    stage_layers,
    stage_memory,
    state_bytes,
    stored_scores_bytes,
    weight_and_optimizer_bytes,
)
from dpcost.engine.layout_step import PipelineSplit
from dpcost.specs import ModelArchitecture, ModelSpec

GB = 1e9


# ----------------------------------------------------------------------------------------------- Megatron, transcribed


def megatron_theoretical_memory(args: SimpleNamespace, num_microbatches: int | None) -> tuple[float, float]:
    """(weight and optimizer bytes, activation bytes) as theoretical_memory_usage.py computes them (its MB / 2^20
    undone). Only the paths these layouts take: no latent MoE, moe_layer_freq as a list."""
    # compute_weight_and_optimizer_memory
    query_projection_size = args.kv_channels * args.num_attention_heads
    query_projection_to_hidden_size_ratio = query_projection_size / args.hidden_size
    num_query_groups = args.num_query_groups if args.group_query_attention else args.num_attention_heads
    num_experts = 1 if args.num_experts is None else args.num_experts
    gated_linear_multiplier = 3 / 2 if args.swiglu else 1
    shared_ffn = args.moe_shared_expert_intermediate_size or 0
    if args.num_experts is not None:
        pattern = args.moe_layer_freq
        num_moe_layers = sum(pattern)
        num_dense_layers = args.num_layers - num_moe_layers
        moe_ffn_hidden_size = args.moe_ffn_hidden_size
    else:
        pattern = [0] * args.num_layers
        num_dense_layers, num_moe_layers, moe_ffn_hidden_size = args.num_layers, 0, 0
    if args.mtp_num_layers is not None:
        mtp_num_moe_layers = pattern[-1] * args.mtp_num_layers
        mtp_num_dense_layers = (1 - pattern[-1]) * args.mtp_num_layers
    else:
        mtp_num_moe_layers = mtp_num_dense_layers = 0
    norm_size = 1 if args.normalization == "RMSNorm" else 2
    if args.multi_latent_attention:
        if args.q_lora_rank is None:
            q_term = args.hidden_size * args.num_attention_heads * (args.qk_head_dim + args.qk_pos_emb_head_dim)
        else:
            q_term = args.q_lora_rank * (
                args.hidden_size + args.num_attention_heads * (args.qk_head_dim + args.qk_pos_emb_head_dim) + norm_size
            )
        self_attn_term = (
            q_term
            + args.kv_lora_rank
            * (args.hidden_size + args.num_attention_heads * (args.qk_head_dim + args.v_head_dim) + norm_size)
            + args.hidden_size * args.qk_pos_emb_head_dim
            + (args.num_attention_heads * args.v_head_dim) * args.hidden_size
        )
    else:
        self_attn_term = (
            2
            * args.hidden_size
            * args.hidden_size
            * ((1 + (num_query_groups / args.num_attention_heads)) * query_projection_to_hidden_size_ratio)
        )
    embedding_size = args.hidden_size * args.padded_vocab_size
    final_layernorm = norm_size * args.hidden_size
    attention_params = self_attn_term
    dense_mlp_params = 2 * args.hidden_size * args.ffn_hidden_size * gated_linear_multiplier
    shared_expert_params = 2 * args.hidden_size * shared_ffn * gated_linear_multiplier
    routed_expert_params = 2 * args.hidden_size * moe_ffn_hidden_size * num_experts * gated_linear_multiplier
    layernorm_params = 2 * args.hidden_size * norm_size
    router_params = (
        (args.hidden_size * num_experts) + (num_experts if args.add_bias_linear else 0)
        if args.num_experts is not None
        else 0
    )
    etp, ep, pp, tp = (
        args.expert_tensor_parallel_size,
        args.expert_model_parallel_size,
        args.pipeline_model_parallel_size,
        args.tensor_model_parallel_size,
    )
    expert_data_parallel_size = args.world_size // (etp * ep * pp)
    tp_block = (attention_params + dense_mlp_params) * num_dense_layers + (
        attention_params + shared_expert_params
    ) * num_moe_layers
    replicated_block = layernorm_params * num_dense_layers + (layernorm_params + router_params) * num_moe_layers
    replicated_block += final_layernorm
    expert_block = routed_expert_params * num_moe_layers
    tp_mtp = (attention_params + dense_mlp_params) * mtp_num_dense_layers + (
        attention_params + shared_expert_params
    ) * mtp_num_moe_layers
    replicated_mtp = layernorm_params * mtp_num_dense_layers + (layernorm_params + router_params) * mtp_num_moe_layers
    expert_mtp = routed_expert_params * mtp_num_moe_layers
    tp_shard = ((tp_block / pp) + tp_mtp + embedding_size) / tp
    replicated_shard = (replicated_block / pp) + replicated_mtp
    expert_shard = ((expert_block / pp) + expert_mtp) / (etp * ep)
    if args.untie_embeddings_and_output_weights and pp == 1:
        tp_shard += embedding_size / tp

    def num_bytes_per_parameter(data_parallel_size: int) -> float:
        return 18 if not args.use_distributed_optimizer else 6 + (12 / data_parallel_size)

    weight_and_optimizer = (tp_shard + replicated_shard) * num_bytes_per_parameter(
        args.data_parallel_size
    ) + expert_shard * num_bytes_per_parameter(expert_data_parallel_size)

    # report_theoretical_memory: which activation formula
    s, b, h, vp = args.seq_length, args.micro_batch_size, args.hidden_size, args.virtual_pipeline_model_parallel_size
    if args.sequence_parallel and args.recompute_granularity == "selective":
        # compute_activation_memory
        act = (s * b * h) * (18 + (4 * (args.ffn_hidden_size / h)))
        act *= args.num_layers
        act += 8 * s * b * pp
        act += s * b * h * pp
        if vp is not None:
            act *= 1 + ((pp - 1) / (pp * vp))
        if vp is None and pp > 1 and num_microbatches is not None:
            act *= min(1, num_microbatches / pp)
        if pp == 1:
            act += s * b * h * 4 * (1 + (args.padded_vocab_size / h))
        act /= tp
    else:
        # compute_activation_memory_without_sp
        act = s * b * h * (10 + (24 / tp))
        act *= args.num_layers
        act += 8 * s * b * pp
        act += s * b * h * pp
        if vp is not None:
            act *= 1 + ((pp - 1) / (pp * vp))
        if vp is None and pp > 1 and num_microbatches is not None:
            act *= min(1, num_microbatches / pp)
        if pp == 1:
            act += ((s * b * args.padded_vocab_size) / tp + s * b * h) * 2
        act *= 1.05
    return weight_and_optimizer, act


def megatron_args(**kw: object) -> SimpleNamespace:
    """Megatron's arguments with its defaults for what a dense GPT leaves unset."""
    defaults: dict[str, object] = {
        "group_query_attention": False,
        "num_query_groups": None,
        "num_experts": None,
        "moe_ffn_hidden_size": None,
        "moe_shared_expert_intermediate_size": None,
        "moe_layer_freq": 1,
        "mtp_num_layers": None,
        "multi_latent_attention": False,
        "add_bias_linear": False,
        "context_parallel_size": 1,
        "expert_model_parallel_size": 1,
        "virtual_pipeline_model_parallel_size": None,
        "sequence_parallel": True,
        "recompute_granularity": "selective",
        "use_distributed_optimizer": True,
        "micro_batch_size": 1,
    }
    args = SimpleNamespace(**{**defaults, **kw})
    if getattr(args, "expert_tensor_parallel_size", None) is None:  # arguments.py: defaults to TP
        args.expert_tensor_parallel_size = args.tensor_model_parallel_size
    if args.tensor_model_parallel_size == 1:  # arguments.py: "Disabling sequence parallelism"
        args.sequence_parallel = False
    args.world_size = (
        args.tensor_model_parallel_size
        * args.pipeline_model_parallel_size
        * args.context_parallel_size
        * args.data_parallel_size
    )
    return args


GPT3_175B = {  # Brown et al. 2020 Table 2.1; vocabulary 50257 padded to 51200 (Korthikanti et al. 2022, Table 3)
    "num_layers": 96,
    "hidden_size": 12288,
    "num_attention_heads": 96,
    "kv_channels": 128,
    "ffn_hidden_size": 49152,
    "padded_vocab_size": 51200,
    "seq_length": 2048,
    "normalization": "LayerNorm",
    "swiglu": False,
    "untie_embeddings_and_output_weights": False,
    "add_bias_linear": True,
}
LLAMA_405B = {  # meta-llama/Llama-3.1-405B config.json; 128256 padded to a multiple of 128 x TP8 = 1024: 129024
    "num_layers": 126,
    "hidden_size": 16384,
    "num_attention_heads": 128,
    "group_query_attention": True,
    "num_query_groups": 8,
    "kv_channels": 128,
    "ffn_hidden_size": 53248,
    "padded_vocab_size": 129024,
    "seq_length": 8192,
    "normalization": "RMSNorm",
    "swiglu": True,
    "untie_embeddings_and_output_weights": True,
}
LLAMA_70B = {**LLAMA_405B, "num_layers": 80, "hidden_size": 8192, "num_attention_heads": 64, "ffn_hidden_size": 28672}
LLAMA_70B["padded_vocab_size"] = 129024
LLAMA_70B["seq_length"] = 4096
MIXTRAL = {  # Megatron-LM examples/mixtral/train_mixtral_8x7b_distributed.sh
    "num_layers": 32,
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "group_query_attention": True,
    "num_query_groups": 8,
    "kv_channels": 128,
    "ffn_hidden_size": 14336,
    "moe_ffn_hidden_size": 14336,  # arguments.py: defaults to ffn_hidden_size
    "num_experts": 8,
    "moe_router_topk": 2,
    "moe_layer_freq": [1] * 32,
    "padded_vocab_size": 32000,
    "seq_length": 4096,
    "normalization": "RMSNorm",
    "swiglu": True,
    "untie_embeddings_and_output_weights": True,
}
DEEPSEEK_V3 = {  # deepseek-ai/DeepSeek-V3 config.json in Megatron's names
    "num_layers": 61,
    "hidden_size": 7168,
    "num_attention_heads": 128,
    "kv_channels": 128,
    "ffn_hidden_size": 18432,
    "moe_ffn_hidden_size": 2048,
    "moe_shared_expert_intermediate_size": 2048,
    "num_experts": 256,
    "moe_router_topk": 8,
    "moe_layer_freq": [0] * 3 + [1] * 58,
    "multi_latent_attention": True,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_head_dim": 128,
    "qk_pos_emb_head_dim": 64,
    "v_head_dim": 128,
    "mtp_num_layers": 1,
    "padded_vocab_size": 129280,
    "seq_length": 4096,
    "normalization": "RMSNorm",
    "swiglu": True,
    "untie_embeddings_and_output_weights": True,
}
MT_NLG_530B = {  # Korthikanti et al. 2022, Table 3
    **GPT3_175B,
    "num_layers": 105,
    "hidden_size": 20480,
    "num_attention_heads": 128,
    "kv_channels": 160,
    "ffn_hidden_size": 81920,
}
MT_NLG_SPEC = ModelSpec(
    name="mt-nlg-530b",
    title="MT-NLG 530B",
    architecture=ModelArchitecture(
        hidden=20480,
        layers=105,
        heads=128,
        ffn=81920,
        mlp="gelu",
        vocab=50257,
        tied_embeddings=True,
        norm="layernorm",
        linear_bias=True,
    ),
)

# name, model, Megatron args, layout, micro-batches per step, MTP, the module's GB per GPU (Megatron's total)
CASES = [
    (
        # MegaScale's GPT-3 layout (NSDI'24): TP8 PP8 DP192, 1536 sequences a step (Megatron's examples/gpt3) / 192 = 8
        "gpt3-175b TP8 PP8 DP192",
        "gpt3-175b",
        megatron_args(
            **GPT3_175B, tensor_model_parallel_size=8, pipeline_model_parallel_size=8, data_parallel_size=192
        ),
        MemoryLayout(tp=8, pp=8, dp=192, sequence_parallel=True, zero=1),
        8,
        False,
        27.25,
    ),
    (
        # Korthikanti et al. Table 3: 64 GPUs, global batch 64, three model chunks per rank
        "gpt3-175b TP8 PP8 v3 (Korthikanti)",
        "gpt3-175b",
        megatron_args(
            **GPT3_175B,
            tensor_model_parallel_size=8,
            pipeline_model_parallel_size=8,
            data_parallel_size=1,
            virtual_pipeline_model_parallel_size=3,
            use_distributed_optimizer=False,
        ),
        MemoryLayout(tp=8, pp=8, virtual_stages=3, sequence_parallel=True),
        64,
        False,
        63.64,
    ),
    (
        "mt-nlg-530b TP8 PP35 v3 (Korthikanti)",
        MT_NLG_SPEC,
        megatron_args(
            **MT_NLG_530B,
            tensor_model_parallel_size=8,
            pipeline_model_parallel_size=35,
            data_parallel_size=1,
            virtual_pipeline_model_parallel_size=3,
            use_distributed_optimizer=False,
        ),
        MemoryLayout(tp=8, pp=35, virtual_stages=3, sequence_parallel=True),
        280,
        False,
        61.36,
    ),
    (
        # Llama 3 (arXiv 2407.21783) Table 4: TP8 CP1 PP16 DP128, seq 8192, 16 sequences per DP rank; one layer
        # fewer on the first and the last stage (section 3.3.2)
        "llama-405b TP8 PP16 DP128",
        "llama-405b",
        megatron_args(
            **LLAMA_405B, tensor_model_parallel_size=8, pipeline_model_parallel_size=16, data_parallel_size=128
        ),
        MemoryLayout(
            tp=8,
            pp=16,
            dp=128,
            sequence_parallel=True,
            zero=1,
            first_stage_layers=7,
            last_stage_layers=7,
        ),
        16,
        False,
        86.53,
    ),
    (
        # without SP: compute_activation_memory_without_sp, and at PP1 the untied head and the output terms
        "llama-70b TP8 DP16 no SP",
        "llama-70b",
        megatron_args(
            **LLAMA_70B,
            tensor_model_parallel_size=8,
            pipeline_model_parallel_size=1,
            data_parallel_size=16,
            sequence_parallel=False,
        ),
        MemoryLayout(tp=8, dp=16, zero=1),
        None,
        False,
        96.43,
    ),
    (
        # Mixtral at TP2 EP8: experts over ETP2 x EP8, expert-DP = 64 / (2 x 8 x 4) = 1: 18 bytes per expert parameter
        "mixtral-8x7b TP2 PP4 EP8 DP8",
        "mixtral-8x7b",
        megatron_args(
            **MIXTRAL,
            tensor_model_parallel_size=2,
            pipeline_model_parallel_size=4,
            expert_model_parallel_size=8,
            data_parallel_size=8,
        ),
        MemoryLayout(tp=2, pp=4, ep=8, dp=8, sequence_parallel=True, zero=1),
        32,
        False,
        23.06,
    ),
    (
        # Megatron's own Mixtral example: TP1 PP4 EP8 (SP off at TP1), 256 sequences / DP8
        "mixtral-8x7b TP1 PP4 EP8 DP8 (examples/mixtral)",
        "mixtral-8x7b",
        megatron_args(
            **MIXTRAL,
            tensor_model_parallel_size=1,
            pipeline_model_parallel_size=4,
            expert_model_parallel_size=8,
            data_parallel_size=8,
        ),
        MemoryLayout(tp=1, pp=4, ep=8, dp=8, sequence_parallel=True, zero=1),
        32,
        False,
        48.11,
    ),
    (
        # DeepSeek-V3 (arXiv 2412.19437, section 3): PP16 x EP64, ZeRO-1 DP on 2048 GPUs, 4K tokens, 15360 sequences
        # a step / DP128 = 120 micro-batches; the 61 layers split 3, [4] x 14, 2 (Megatron's 61-layer Kimi-K2 export)
        "deepseek-v3 PP16 EP64 DP128 (MTP)",
        "deepseek-v3",
        megatron_args(
            **DEEPSEEK_V3,
            tensor_model_parallel_size=1,
            pipeline_model_parallel_size=16,
            expert_model_parallel_size=64,
            data_parallel_size=128,
        ),
        MemoryLayout(pp=16, ep=64, dp=128, zero=1, first_stage_layers=3, last_stage_layers=2),
        120,
        True,
        87.09,
    ),
]


def _spec(model: str | ModelSpec) -> ModelSpec:
    return load_model(model) if isinstance(model, str) else model


def _shape(name: str, tp: int, mtp: bool = False) -> ModelShape:
    arch = load_model(name).architecture
    assert arch is not None
    return model_shape(arch, tp, arch.mtp_layers if mtp else 0)


@pytest.mark.parametrize(
    ("name", "model", "args", "layout", "micro_batches", "mtp", "gb"), CASES, ids=[c[0] for c in CASES]
)
def test_equals_megatron_theoretical_memory(
    name: str,
    model: str | ModelSpec,
    args: SimpleNamespace,
    layout: MemoryLayout,
    micro_batches: int | None,
    mtp: bool,
    gb: float,
) -> None:
    """Weights + optimizer, activations and their sum per GPU: the module from the catalog's spec equals the file."""
    weights, activations = megatron_theoretical_memory(args, micro_batches)
    arch = _spec(model).architecture
    assert arch is not None
    mtp_layers = arch.mtp_layers if mtp else 0
    got = layout_memory_for(_spec(model), layout, args.seq_length, args.micro_batch_size, micro_batches, mtp_layers)
    assert got.weight_and_optimizer == pytest.approx(weights, rel=1e-12)
    assert got.activations == pytest.approx(activations, rel=1e-12)
    assert got.total == pytest.approx(weights + activations, rel=1e-12)
    assert got.total / GB == pytest.approx(gb, abs=0.005)


# ----------------------------------------------------------------------------------------------- closed forms


def test_llama_405b_shard_by_hand() -> None:
    """Llama-3.1-405B at TP8 PP16, from its config: h 16384, 126 layers, 128 heads, 8 KV heads of 128, ffn 53248,
    vocab 128256 padded to 129024, untied, RMSNorm."""
    attention = 16384 * 128 * 128 + 2 * 16384 * 8 * 128 + 128 * 128 * 16384  # Q, K + V, O
    assert attention == 570_425_344
    mlp = 3 * 16384 * 53248  # gate, up, down
    assert mlp == 2_617_245_696
    norms = 2 * 16384
    embedding = 16384 * 129024
    assert embedding == 2_113_929_216
    # Megatron's most loaded shard: 126/16 layers and one embedding over TP8, the norms (and the final norm) whole
    tp_sharded = (126 * (attention + mlp) / 16 + embedding) / 8
    assert tp_sharded == 3_402_104_832
    replicated = (126 * norms + 16384) / 16
    assert replicated == 259_072
    layout = MemoryLayout(tp=8, pp=16, dp=128, zero=1, first_stage_layers=7, last_stage_layers=7)
    got = layout_memory_for(load_model("llama-405b"), layout, 8192, 1, 16)
    assert got.parameters == 3_402_363_904 == tp_sharded + replicated
    # Each stage's own: 7 layers and the embedding on stage 0, 8 layers in the middle, 7, the head and the final norm
    stage0 = (7 * (attention + mlp) + embedding) / 8 + 7 * norms
    middle = 8 * (attention + mlp) / 8 + 8 * norms
    last = (7 * (attention + mlp) + embedding) / 8 + 7 * norms + 16384
    assert [s.parameters for s in got.stages] == [stage0] + [middle] * 14 + [last]
    assert (stage0, middle) == (3_053_682_688, 3_187_933_184)
    # bf16 weights 2 + fp32 grads 4 + (fp32 master + Adam 12) / DP128
    assert got.weight_and_optimizer == pytest.approx(3_402_363_904 * (6 + 12 / 128), rel=1e-15)


def test_bytes_per_parameter() -> None:
    """18 bytes per parameter without the distributed optimizer, 6 + 12/DP with it."""
    for dp in (1, 2, 8, 128, 192):
        assert bytes_per_parameter(False, dp) == 18
        assert bytes_per_parameter(True, dp) == 6 + 12 / dp
    assert bytes_per_parameter(True, 1) == 18
    # grad_reduce_in_fp32=False: Megatron-Core's gradient buffer takes the parameters' bf16 (param_and_grad_buffer.py)
    assert bytes_per_parameter(False, 8, grad_bytes=2) == 2 + 2 + 12
    assert bytes_per_parameter(True, 8, grad_bytes=2) == 2 + 2 + 12 / 8


def test_experts_shard_over_ep_and_expert_dp() -> None:
    """DeepSeek-V3 at PP16 EP64 on 2048 GPUs: each MoE layer's 256 experts of 3 x 7168 x 2048 split 256/64 = 4 per
    rank; expert-DP = 2048 / (ETP1 x EP64 x PP16) = 2, so ZeRO-1 keeps 6 + 12/2 = 12 bytes per expert parameter
    against 6 + 12/128 for the dense ones."""
    expert = 3 * 7168 * 2048
    layout = MemoryLayout(pp=16, ep=64, dp=128, zero=1, first_stage_layers=3, last_stage_layers=2)
    assert expert_data_parallel_size(layout) == 2
    shape = _shape("deepseek-v3", 1, mtp=True)
    assert shape.moe_layer.expert_sharded == 256 * expert
    # stage 0 holds the three dense layers, stage 1 four MoE layers: 4 x (256/64) experts
    layers = stage_layers(PipelineSplit(61, 16, 1, 3, 2))
    assert [len(x) for x in layers] == [3] + [4] * 14 + [2]
    assert parameters_on_stage(shape, layout, 0, layers[0]).expert_sharded == 0
    assert parameters_on_stage(shape, layout, 1, layers[1]).expert_sharded == 4 * (256 // 64) * expert
    # the last stage: 2 MoE layers and the MoE MTP layer
    assert parameters_on_stage(shape, layout, 15, layers[15]).expert_sharded == 3 * 4 * expert
    # Megatron's shard averages the 58 MoE layers over 16 stages and adds the MTP layer's
    held = parameters_on_most_loaded_shard(shape, layout)
    assert held.expert_sharded == pytest.approx((58 / 16 + 1) * 256 * expert / 64, rel=1e-15)
    # Mixtral at TP2 EP8: ETP defaults to TP, so each rank holds one expert split in two
    mixtral = MemoryLayout(tp=2, pp=4, ep=8, dp=8)
    m_shape = _shape("mixtral-8x7b", 2)
    stage = parameters_on_stage(m_shape, mixtral, 1, stage_layers(PipelineSplit(32, 4))[1])
    assert stage.expert_sharded == 8 * 8 * (3 * 4096 * 14336) / (8 * 2)
    assert expert_data_parallel_size(mixtral) == 64 // (2 * 8 * 4) == 1  # each expert shard held once: 18 bytes
    assert expert_data_parallel_size(MemoryLayout(tp=2, pp=4, ep=8, dp=8, etp=1)) == 64 // (1 * 8 * 4) == 2


def test_korthikanti_table_2() -> None:
    """One layer's bytes per GPU (Korthikanti et al. 2022, Table 2), GPT-3 175B at t = 8: sbh(10 + 24/t + 5as/ht)
    for TP alone, sbh(34/t + 5as/ht) with SP, and selective recomputation drops the 5as/ht; Megatron's
    sbh(18 + 4 ffn/h)/t is 34/t at ffn = 4h and its without-SP form the TP + selective row."""
    s, b, h, a, t = 2048, 1, 12288, 96, 8
    sbh = s * b * h
    scores = 5 * a * s / (h * t)
    assert scores == 10
    assert korthikanti_layer_activation_bytes(s, b, h, a, t, False, False) == sbh * (10 + 3 + 10)
    assert korthikanti_layer_activation_bytes(s, b, h, a, t, True, False) == pytest.approx(sbh * (34 / 8 + 10))
    assert korthikanti_layer_activation_bytes(s, b, h, a, t, False, True) == sbh * 13
    assert korthikanti_layer_activation_bytes(s, b, h, a, t, True, True) == sbh * 34 / 8
    assert korthikanti_layer_activation_bytes(s, b, h, a, 1, False, False) == sbh * (34 + 5 * a * s / h)
    assert layer_activation_bytes(s, b, h, 4 * h, t, True) == korthikanti_layer_activation_bytes(
        s, b, h, a, t, True, True
    )
    assert layer_activation_bytes(s, b, h, 4 * h, t, False) == korthikanti_layer_activation_bytes(
        s, b, h, a, t, False, True
    )
    # the paper's "5x": TP alone against TP + SP + selective, 23 sbh against 4.25 sbh
    assert round((10 + 3 + 10) / (34 / 8), 2) == 5.41


def test_stored_attention_scores_without_flash() -> None:
    """Without flash attention or selective recomputation a layer also keeps its scores, softmax and dropout mask,
    Korthikanti et al.'s sbh x 5as/(ht) (Table 2), which Megatron's formula leaves out: 10 sbh for GPT-3 175B at t = 8,
    for each layer and micro-batch in flight, under the 5% without-SP buffer."""
    s, b, h, a, t = 2048, 1, 12288, 96, 8
    shape = _shape("gpt3-175b", t)
    assert (shape.hidden, shape.heads) == (h, a)
    without = MemoryLayout(tp=t, pp=4, dp=1)
    stored = MemoryLayout(tp=t, pp=4, dp=1, attention_scores=True)
    added = stage_activation_bytes(shape, stored, s, b, 1, 3, 2) - stage_activation_bytes(shape, without, s, b, 1, 3, 2)
    assert added == pytest.approx(10 * s * b * h * 3 * 2 * 1.05)


def test_sequence_parallelism_splits_activations_without_recomputation() -> None:
    """Korthikanti et al. 2022 Table 2, the "sequence parallel" row: sbh(34/t + 5as/(ht)) with no recomputation; SP
    splits the norms' and dropouts' tensors whatever is recomputed. GPT-3 175B at t = 8, a stage of 12 layers with
    6 micro-batches in flight: under flash attention (no scores kept) none holds what selective holds, 34sbh/t per
    layer; without it, 10 sbh more per layer for the scores."""
    s, b, h, t = 2048, 1, 12288, 8
    sbh = s * b * h
    shape = _shape("gpt3-175b", t)
    none = MemoryLayout(tp=t, pp=8, dp=1, sequence_parallel=True, recompute="none")
    selective = MemoryLayout(tp=t, pp=8, dp=1, sequence_parallel=True, recompute="selective")
    assert stage_activation_bytes(shape, none, s, b, 3, 12, 6) == pytest.approx(34 * sbh / t * 12 * 6)
    assert stage_activation_bytes(shape, none, s, b, 3, 12, 6) == stage_activation_bytes(
        shape, selective, s, b, 3, 12, 6
    )
    scores = MemoryLayout(tp=t, pp=8, dp=1, sequence_parallel=True, recompute="none", attention_scores=True)
    assert stage_activation_bytes(shape, scores, s, b, 3, 12, 6) == pytest.approx((34 / t + 10) * sbh * 12 * 6)


def test_gpipe_holds_every_micro_batch_where_1f1b_holds_the_pipeline_depth() -> None:
    """GPipe runs every forward before any backward (Huang et al. 2019 section 2.3), so each stage keeps all m
    micro-batches' activations; 1F1B keeps p - s on stage s (at most m) [M]. GPT-3 175B, TP8 PP8 with SP, m = 32:
    stage 0 holds 32 micro-batches against 8, stage 7 32 against 1; the weights do not change."""
    s, b = 2048, 1
    shape = _shape("gpt3-175b", 8)
    one_f_one_b = MemoryLayout(tp=8, pp=8, dp=1, sequence_parallel=True, recompute="selective")
    gpipe = MemoryLayout(tp=8, pp=8, dp=1, sequence_parallel=True, recompute="selective", all_forwards_first=True)
    ones = stage_memory(shape, one_f_one_b, s, b, 32)
    alls = stage_memory(shape, gpipe, s, b, 32)
    layer = 34 * s * b * shape.hidden / 8  # one layer, one micro-batch, with SP (Korthikanti Table 2)
    # a middle stage: 12 layers, 5 micro-batches in flight under 1F1B
    assert alls[3].activations - ones[3].activations == pytest.approx((32 - 5) * 12 * layer)
    # stage 0, its embedding's output with its layers: everything it keeps scales with the micro-batches held
    assert alls[0].activations / ones[0].activations == pytest.approx(32 / 8)
    assert all(a.weights == o.weights for a, o in zip(alls, ones, strict=True))


def test_full_recomputation_keeps_each_layers_input() -> None:
    """Full recomputation (Korthikanti et al. 2022 section 4): each layer keeps only its 16-bit input, "2sbhL" in all,
    split over t with SP; while the backward re-runs one layer it holds that layer's activations, 34sbh/t with SP
    under flash attention (Table 2, the SP + selective row) and sbh(10 + 24/t) x 1.05 without. GPT-3 175B at t = 8, a
    middle stage of 12 layers with 6 micro-batches in flight."""
    s, b, h, t = 2048, 1, 12288, 8
    sbh = s * b * h
    shape = _shape("gpt3-175b", t)
    with_sp = MemoryLayout(tp=t, pp=8, dp=1, sequence_parallel=True, recompute="full")
    assert stage_activation_bytes(shape, with_sp, s, b, 3, 12, 6) == pytest.approx(2 * sbh / t * 12 * 6 + 34 * sbh / t)
    without_sp = MemoryLayout(tp=t, pp=8, dp=1, recompute="full")
    assert stage_activation_bytes(shape, without_sp, s, b, 3, 12, 6) == pytest.approx(
        (2 * sbh * 12 * 6 + sbh * (10 + 24 / t)) * 1.05
    )
    # against keeping every layer's activations (selective with SP): 2/t of 34/t per layer and micro-batch
    selective = MemoryLayout(tp=t, pp=8, dp=1, sequence_parallel=True, recompute="selective")
    assert stage_activation_bytes(shape, selective, s, b, 3, 12, 6) == pytest.approx(34 * sbh / t * 12 * 6)
    # without flash attention the re-run layer holds its scores too (5as/(ht) sbh), once, not per kept layer
    scores = MemoryLayout(tp=t, pp=8, dp=1, sequence_parallel=True, recompute="full", attention_scores=True)
    added = stage_activation_bytes(shape, scores, s, b, 3, 12, 6) - stage_activation_bytes(
        shape, with_sp, s, b, 3, 12, 6
    )
    assert added == pytest.approx(10 * sbh)


def test_micro_batches_in_flight() -> None:
    """Warm-up + 1 forwards (megatron/core/pipeline_parallel/schedules.py): p - r under 1F1B, capped at m; chunks
    2(p - r - 1) + (v - 1)p + 1 of 1/v of the stage interleaved, which on stage 0 is the file's p(1 + (p-1)/(pv))."""
    assert microbatches_in_flight(1) == 1
    assert [microbatches_in_flight(8, r) for r in range(8)] == [8, 7, 6, 5, 4, 3, 2, 1]
    assert microbatches_in_flight(8, 0, num_microbatches=4) == 4 == 8 * min(1, 4 / 8)
    assert microbatches_in_flight(8, 0, 3) == (2 * 7 + 2 * 8 + 1) / 3 == pytest.approx(8 * (1 + 7 / 24))
    assert microbatches_in_flight(8, 7, 3) == (2 * 8 + 1) / 3
    assert microbatches_in_flight(35, 0, 3) == pytest.approx(35 * (1 + 34 / 105))  # Korthikanti's 530B: 1.324
    assert microbatches_in_flight(8, 0, 3, num_microbatches=8) == 8  # all 8 x 3 chunks in warm-up


def test_unlike_chunks_keep_the_micro_batches_their_forwards_ran() -> None:
    """Megatron-Core's interleaved schedule table (schedules.py get_schedule_table) runs each group of PP
    micro-batches through chunk 0, then chunk 1, ...: with 6 layers on PP 4 x VP 2 and the embedding and loss counted
    as layers (E|t|t|t|t|t|t|L), the last rank's 4 + 1 warm-up forwards are 4 through its one-layer chunk (virtual
    stage 3) and 1 through its loss chunk (stage 7, no layer): its layer keeps 4 micro-batches, not 5 / 2. Like chunks
    keep the forwards over V."""
    assert chunk_forwards(4, 2, 4, 5) == [0, 0, 0, 0, 1]
    assert chunk_forwards(6, 2, 4, 12) == [0] * 4 + [1] * 4 + [0] * 2 + [1] * 2  # the last group what is left
    assert microbatches_in_flight(4, 3, 2, 4, chunk_layers=[1, 0]) == 4
    assert microbatches_in_flight(4, 3, 2, 4, chunk_layers=[1, 1]) == microbatches_in_flight(4, 3, 2, 4) == 2.5


def test_context_parallel_splits_the_sequence() -> None:
    """CP halves every activation term (each rank holds s/CP tokens) and leaves the parameters; Megatron's file has no
    CP term, so at CP 1 the module is the file."""
    one = MemoryLayout(tp=8, pp=16, dp=8, sequence_parallel=True, first_stage_layers=7, last_stage_layers=7)
    two = MemoryLayout(tp=8, cp=2, pp=16, dp=8, sequence_parallel=True, first_stage_layers=7, last_stage_layers=7)
    spec = load_model("llama-405b")
    a, b = layout_memory_for(spec, one, 131072, 1, 16), layout_memory_for(spec, two, 131072, 1, 16)
    assert b.activations == pytest.approx(a.activations / 2, rel=1e-12)
    assert b.parameters == a.parameters
    assert [x.activations for x in b.stages] == pytest.approx([x.activations / 2 for x in a.stages], rel=1e-12)


def test_stage_layers() -> None:
    """get_num_layers_to_build: an even split, an uneven first and last stage, interleaved chunks holding virtual
    stages r, r + p, ... (transformer_block.py: 8 layers, 2 stages, 2 chunks: [0, 1] [4, 5] | [2, 3] [6, 7])."""
    assert stage_layers(PipelineSplit(8, 2, 2)) == ((0, 1, 4, 5), (2, 3, 6, 7))
    assert stage_layers(PipelineSplit(8, 2, 4)) == ((0, 2, 4, 6), (1, 3, 5, 7))
    assert [len(x) for x in stage_layers(PipelineSplit(126, 16, 1, 7, 7))] == [7] + [8] * 14 + [7]
    assert stage_layers(PipelineSplit(96, 8))[1] == tuple(range(12, 24))
    with pytest.raises(ValueError, match="do not split"):
        stage_layers(PipelineSplit(126, 16))
    with pytest.raises(ValueError, match="do not split"):
        stage_layers(PipelineSplit(126, 16, 1, 8, 8))
    with pytest.raises(ValueError, match="PP > 1"):
        stage_layers(PipelineSplit(8, 1, 1, 4, 4))


def test_an_interleaved_pipeline_with_uneven_virtual_stages_is_megatrons_layout() -> None:
    """Megatron-Core's pipeline_model_parallel_layout puts virtual stage i on rank i mod PP
    (pipeline_parallel_layer_layout.py: layout[vpp_rank * pp + pp_rank]). Llama 3 405B at PP 16 with 2 chunks per
    rank: 126 layers as 32 virtual stages of 3 + 30 x 4 + 3, so rank 0 builds layers 0-2 and 63-66, rank 15
    layers 59-62 and 123-125, and each middle rank 8."""
    ranks = stage_layers(PipelineSplit(126, 16, 2))
    assert ranks[0] == (0, 1, 2, 63, 64, 65, 66)
    assert ranks[15] == (59, 60, 61, 62, 123, 124, 125)
    assert ranks[1] == (3, 4, 5, 6, 67, 68, 69, 70)
    assert sorted(i for rank in ranks for i in rank) == list(range(126))


def test_most_loaded_stage() -> None:
    """An even dense split: stage 0 (p micro-batches and the embedding), equal to Megatron's figure but for the final
    norm, which Megatron spreads over the stages, and for what Megatron-Core builds and the file leaves out: GPT-3's
    learned position table (2,048 x 12,288, whole on every TP rank) and its 12 layers' biases (QKV's 3h and fc1's 4h
    split over TP 8, the output projection's and fc2's h whole). Llama 3's 7 | 8 x 14 | 7 split moves it to stage 1
    (8 layers x 15 micro-batches > 7 x 16). DeepSeek-V3: stage 1 (4 MoE layers), and Megatron's total, which adds the
    MTP stage's parameters to stage 0's L/p x p activations, is above every stage's own."""
    gpt3 = layout_memory_for(
        load_model("gpt3-175b"),
        MemoryLayout(tp=8, pp=8, dp=192, sequence_parallel=True, zero=1),
        2048,
        1,
        8,
    )
    assert gpt3.most_loaded.stage == 0
    assert gpt3.most_loaded.activations == gpt3.activations
    h = 12288
    own = 2048 * h + 12 * (3 * h / 8 + h + 4 * h / 8 + h)
    assert gpt3.most_loaded.parameters == pytest.approx(gpt3.parameters - 2 * h / 8 + own, rel=1e-15)
    layout = MemoryLayout(
        tp=8,
        pp=16,
        dp=128,
        sequence_parallel=True,
        zero=1,
        first_stage_layers=7,
        last_stage_layers=7,
    )
    llama = layout_memory_for(load_model("llama-405b"), layout, 8192, 1, 16)
    assert llama.most_loaded.stage == 1
    # a layer as Megatron-Core keeps Llama's: the file's sbh(18 + 4f/h)/t without the two dropout masks (no dropout)
    # and with the fused SwiGLU's 2f-wide input (sbh(16 + 6f/h)/t), less K and V's narrowing to 8 x 128 of 16,384
    # (4sb(h - 1,024)/t), beside the embedding's 8sb of token ids on stage 0 (its dropout keeps no mask at p = 0)
    per_layer = 16 + 6 * 53248 / 16384 - 4 * (1 - 1024 / 16384)
    assert llama.stages[1].activations / llama.stages[0].activations == pytest.approx(
        (8 * 15) / (7 * 16 + 16 * 8 / (16384 * per_layer)), rel=1e-12
    )
    deepseek = layout_memory_for(
        load_model("deepseek-v3"),
        MemoryLayout(pp=16, ep=64, dp=128, zero=1, first_stage_layers=3, last_stage_layers=2),
        4096,
        1,
        120,
        mtp_layers=1,
    )
    assert deepseek.most_loaded.stage == 1
    # Each stage's own view costs an MoE layer's 8 routed copies of a token as Megatron-Core keeps them, where a
    # dense layer has its MLP of ffn_hidden_size 18,432: per token (TP 1, so no SP), the router's fp32 scores 4 x
    # 256, the shared expert's fused SwiGLU its 4,096-wide input and its output (6 x 2,048), and 8 x (the grouped
    # fc1's input 2 x 7,168 + fc1's output and its SwiGLU's product with the probability, 6 x 2,048), against
    # the dense MLP's fused SwiGLU input and fc2's input, 6 x 18,432: 115,712 bytes more, on stage 1's 4 MoE layers
    # x 15 micro-batches in flight, with the file's 5% without SP
    layout = MemoryLayout(pp=16, ep=64, dp=128, zero=1, first_stage_layers=3, last_stage_layers=2)
    shape = model_shape(load_model("deepseek-v3").architecture, 1, mtp_layers=1)
    dense = layout_memory(dataclasses.replace(shape, moe_topk=0), layout, 4096, 1, 120)
    assert deepseek.stages[1].activations - dense.stages[1].activations == pytest.approx(
        1.05 * 15 * 4 * 4096 * 115_712, rel=1e-12
    )
    assert dense.stages[0].activations == deepseek.stages[0].activations  # its three dense layers
    assert deepseek.total == dense.total  # Megatron's own view, the file's formula, costs them as dense
    # --recompute-modules moe: each MoE layer keeps its norm's input and output (no dropout, so no mask), 110,592
    # bytes a token fewer than a dense layer's MLP, and the one layer whose backward re-runs the MoE forward holds all
    # of it
    moe = dataclasses.replace(layout, recompute="selective", moe_recompute="moe")
    rerun = layout_memory(shape, moe, 4096, 1, 120).stages[1].activations
    formula = layout_memory(dataclasses.replace(shape, moe_topk=0), moe, 4096, 1, 120).stages[1].activations
    assert rerun - formula == pytest.approx(1.05 * 4096 * (15 * 4 * -110_592 + 115_712 + 110_592), rel=1e-12)


def test_the_distributed_optimizer_shards_over_dp_and_cp() -> None:
    """Megatron-Core's distributed optimizer shards the fp32 main weights and Adam's moments over the DP x CP group
    (megatron/core/optimizer/__init__.py: intra_dp_cp_group): at DP 4 x CP 2, 12 bytes a dense parameter over 8 ranks,
    where Megatron's formula (weight_and_optimizer_bytes) divides by DP's 4; the experts' over expert-DP."""
    layout = MemoryLayout(cp=2, dp=4, zero=1)
    held = ParamGroups(tp_sharded=1e9)
    weights, grads, optimizer = state_bytes(held, layout)
    assert (weights, grads, optimizer) == (2e9, 4e9, 12e9 / 8)
    assert weight_and_optimizer_bytes(held, layout) == 2e9 + 4e9 + 12e9 / 4


def functional_test_shape(**changes: Any) -> ModelShape:
    """The GPT of Megatron-LM's functional tests (d98e8a64dd): 12 layers of hidden 512 and FFN 2,048, GPT-2's
    vocabulary padded to 50,432 (128 x TP 2), untied; parameters not needed here."""
    shape = ModelShape(
        hidden=512,
        layers=12,
        ffn=2048,
        vocab=50432,
        dense_layer=ParamGroups(),
        moe_layer=ParamGroups(),
        moe_pattern=(False,) * 12,
        final_layernorm=1024.0,
        untied=False,
    )
    return dataclasses.replace(shape, **changes)


def test_moe_layer_as_megatron_core_keeps_it() -> None:
    """Megatron-LM's functional test gpt3_mcore_te_tp2_pp1_te_8experts2parallel_* (d98e8a64dd): 8 experts of 2,048
    over hidden 512, top-1, TP 2 with SP, ETP 2 (EP 2), 4 x 1,024 tokens. Each rank holds 2,048 tokens; its ETP group
    of 2 routes 4,096 copies to the experts it computes (top-1), and TEGroupedMLP keeps per copy the grouped fc1's
    512-wide input (1,024 bytes) and, 1,024 wide each, fc1's output, the GELU's output and its product with the
    probability that fc2 keeps (6,144 bytes); per token held, the norm's input and output (1,024 each), the dropout
    mask (512) and the router's fp32 scores over 8 experts (32)."""
    shape = functional_test_shape(moe_pattern=(True,) * 12, moe_experts=8, moe_topk=1, moe_ffn=2048)
    assert moe_mlp_half_bytes(1024, 4, shape, 2, 2, True) == 4096 * (1024 + 6144) + 2048 * (1024 + 1024 + 512 + 32)
    # --recompute-modules moe_act: of the three 1,024-wide tensors a copy keeps fc1's output alone (the GELU runs
    # under CheckpointWithoutOutput, its output discarded after fc2); a gated expert's fc1 output is twice as wide
    assert moe_mlp_half_bytes(1024, 4, shape, 2, 2, True, "moe_act") == 4096 * (1024 + 2048) + 2048 * 2592
    gated = dataclasses.replace(shape, gated_mlp=True)
    assert moe_mlp_half_bytes(1024, 4, gated, 2, 2, True, "moe_act") == 4096 * (1024 + 4096) + 2048 * 2592
    # --recompute-modules moe: the MoE forward checkpointed on the norm's output; the norm's input, its output and
    # the dropout mask stay
    assert moe_mlp_half_bytes(1024, 4, shape, 2, 2, True, "moe") == 2048 * (1024 + 1024 + 512)
    # without hidden dropout the bias-dropout-add keeps no mask (torch's dropout returns its input at p = 0)
    no_dropout = dataclasses.replace(shape, dropout=False)
    assert moe_mlp_half_bytes(1024, 4, no_dropout, 2, 2, True, "moe") == 2048 * (1024 + 1024)
    # the file's dense MLP of ffn_hidden_size 2,048 for the same layer: sbh(5 + 4f/h)/t
    assert mlp_half_bytes(1024, 4, 512, 2048, 2, True) == 4096 * 512 * 21 / 2
    # top-4 of 32 with a 1,024-wide shared expert, SwiGLU, ETP 1 at TP 2 (the DeepSeek-like memory_speed test):
    # each held token's 4 copies, and the shared expert's fused SwiGLU input (2,048 wide) and output over TP
    proxy = dataclasses.replace(
        shape, hidden=1024, moe_experts=32, moe_topk=4, moe_ffn=1024, moe_shared_ffn=1024, gated_mlp=True
    )
    held = 4096 * 4 / 2
    assert moe_mlp_half_bytes(4096, 4, proxy, 2, 1, True) == held * (4 * (2048 + 6144) + 5 * 1024 + 4 * 32 + 6 * 1024)


def test_adapter_reads_the_spec() -> None:
    """The spec's fields as Megatron's arguments: GQA groups and head width, the padded vocabulary, untied, MoE."""
    assert padded_vocab_size(50257, 8) == 51200
    assert padded_vocab_size(128256, 8) == 129024
    assert padded_vocab_size(129280, 1) == 129280
    mixtral = _shape("mixtral-8x7b", 1)
    assert (mixtral.hidden, mixtral.layers, mixtral.ffn, mixtral.vocab, mixtral.untied) == (
        4096,
        32,
        14336,
        32000,
        True,
    )
    assert all(mixtral.moe_pattern)
    assert mixtral.moe_layer.replicated == 2 * 4096 + 4096 * 8  # two RMSNorms and the router
    gpt3 = _shape("gpt3-175b", 8)
    assert gpt3.dense_layer.tp_sharded == 12 * 12288**2 and gpt3.dense_layer.replicated == 4 * 12288
    assert not gpt3.untied
    with pytest.raises(ValueError, match="architecture"):
        layout_memory_for(ModelSpec(name="x", title="x", params=1e9), MemoryLayout(), 2048)


def test_interleaved_first_stage_file_against_schedule() -> None:
    """Interleaved with as many micro-batches as stages, schedules.py runs all m x v chunks in warm-up (p of them on
    stage 0, 8 here), where the file's factor keeps p(1 + (p-1)/(pv)): Megatron's view keeps the file's, the stage
    view the schedule's. With more micro-batches they agree."""
    assert first_stage_microbatches(8, 3, 8) == pytest.approx(8 * (1 + 7 / 24))
    assert microbatches_in_flight(8, 0, 3, 8) == 8
    assert microbatches_in_flight(8, 0, 3, 64) == pytest.approx(first_stage_microbatches(8, 3, 64))
    shape = _shape("gpt3-175b", 8)
    layout = MemoryLayout(tp=8, pp=8, virtual_stages=3, sequence_parallel=True)
    got = layout_memory_for(load_model("gpt3-175b"), layout, 2048, 1, 8)
    assert got.activations == activation_bytes(shape, layout, 2048, 1, 8)
    assert got.stages[0].activations == pytest.approx(got.activations * 8 / (8 + 7 / 3), rel=1e-12)


def test_the_last_stage_keeps_the_vocab_parallel_loss_fp32_logits() -> None:
    """Megatron-LM's functional test gpt3_mcore_tp4_pp1 (@d98e8a64dd: 12 layers of 512, TP4 x DP2, micro-batch 4 of
    1,024 tokens, --transformer-impl local, bf16) records mem-max-allocated-bytes 1,628,741,632 on A100
    (golden_values_dev_dgx_a100.json, iterations 5-50). Its loss casts each rank's 1,024 x 4 x 50,688 / 4 logits to
    fp32 and keeps the exponentials (cross_entropy.py), 0.19 GiB the theoretical file leaves out: without them
    dpcost read 1.26 GiB (-17%)."""
    from conftest import REFERENCE

    from dpcost.catalog import load_topology
    from dpcost.engine.estimate import estimate
    from dpcost.options import Options

    model = load_model(str(REFERENCE / "memory-peaks" / "configs" / "megatron-test-gpt-12l.yaml"))
    plan = Options.model_validate(
        {"dp": 2, "tp": 4, "framework": "megatron", "zero": 0, "recompute": "none", "micro_batch": 4,
         "global_batch": 32, "seq_len": 1024, "flash_attention": False}
    )  # fmt: skip
    report = estimate(model, load_topology("dgx-a100"), plan)
    assert report.layout is not None
    assert report.layout.stages[-1].memory_bytes == pytest.approx(1_628_741_632, rel=0.06)


def test_a_layer_keeps_gqas_k_and_v_at_their_own_width() -> None:
    """Megatron-LM's functional test gpt3_7b_tp4_pp1_memory_speed (@d98e8a64dd: 32 layers of 4,096, 32 heads in 8
    query groups, TP4 x DP2, distributed optimizer, micro-batch 2 of 8,192 tokens, Transformer Engine) records
    mem-max-allocated-bytes 58,217,476,096 on GB200 (golden_values_dev_dgx_gb200.json; 58,188,115,968 on A100). Its
    layers keep K and V at 8 x 128 wide, not Table 2's 4,096: counted so dpcost reads +1.1%, and +4.0% as Table 2 has
    them. H100's golden file records 1,073,684,480 bytes (about a bf16 logits shard) less at the same allocation after
    each step, which dpcost does not tell apart (+3.0% there)."""
    from conftest import REFERENCE

    from dpcost.catalog import load_topology
    from dpcost.engine.estimate import estimate
    from dpcost.options import Options

    model = load_model(str(REFERENCE / "memory-peaks" / "configs" / "megatron-test-gpt-7b.yaml"))
    plan = Options.model_validate(
        {"dp": 2, "tp": 4, "framework": "megatron", "zero": 1, "recompute": "none", "micro_batch": 2,
         "global_batch": 8, "seq_len": 8192}
    )  # fmt: skip
    report = estimate(model, load_topology("dgx-h100"), plan)
    assert report.layout is not None
    assert report.layout.stages[-1].memory_bytes == pytest.approx(58_217_476_096, rel=0.02)


def test_a_gated_mlp_without_dropout_as_megatron_core_keeps_it() -> None:
    """Llama 3 8B's layer (4,096 wide, 8 K/V heads of 128, SwiGLU of 14,336, no dropout) as Megatron-Core keeps it
    under Transformer Engine and flash attention (@d98e8a64dd): each norm-fused linear its norm's input and output
    (2 x 2 x 2h), attention Q and its output (2 x 2h) and K and V (2 x 2 x 1,024), the fused SwiGLU its input, fc1's
    2f-wide output (fused_bias_swiglu.py SwiGLUFunction.save_for_backward), and fc2 its f-wide input (6f); no
    bias-dropout-add mask at hidden dropout 0 (torch's dropout returns its input at p = 0): 12h + 4 x 1,024 + 6f
    bytes a token, 139,264, where the file's sbh(18 + 4f/h) counts the two masks and a GELU's 4f. The DP engine's
    op-by-op count (checkpointing.activation_memory) keeps the same."""
    from dpcost.engine.checkpointing import activation_memory

    a = load_model("llama-8b").architecture
    assert (a.hidden, a.n_kv_heads * a.d_head, a.ffn, a.gated_mlp, a.dropout) == (4096, 1024, 14336, True, 0)
    shape = model_shape(a, 1)
    layout = MemoryLayout(pp=3)  # a middle stage: no embedding or head; TP 1, so without SP's split
    one_layer = stage_activation_bytes(shape, layout, 8192, 1, 1, 1, 1.0, (5,), own_widths=True) / 1.05
    assert one_layer == pytest.approx(8192 * (12 * 4096 + 4 * 1024 + 6 * 14336), rel=1e-12)
    op_by_op = activation_memory(a, 8192, 1, "selective").kept / a.layers
    assert one_layer == pytest.approx(op_by_op, rel=1e-12)
    # TP 8 with SP: every term over TP; a GELU MLP with dropout is the file's layer again
    sp = MemoryLayout(tp=8, pp=3, sequence_parallel=True)
    split = stage_activation_bytes(shape, sp, 8192, 1, 1, 1, 1.0, (5,), own_widths=True)
    assert split == pytest.approx(8192 * (12 * 4096 + 8 * 128 * 4 + 6 * 14336) / 8, rel=1e-12)
    gelu = dataclasses.replace(shape, gated_mlp=False, dropout=True)
    assert stage_activation_bytes(gelu, sp, 8192, 1, 1, 1, 1.0, (5,), own_widths=True) - attention_width_bytes(
        gelu, sp, 8192, 1
    ) == pytest.approx(layer_activation_bytes(8192, 1, 4096, 14336, 8, True), rel=1e-12)


def test_recomputed_mlp_shared_experts_and_norms_keep_their_inputs_alone() -> None:
    """Megatron-Core's selective recomputation (@d98e8a64dd): "mlp" checkpoints a dense layer's MLP on its input
    (transformer_layer.py recompute_mlp; under Transformer Engine the residual its norm-fused fc1 reads), so of the
    norm's input and output (2h each) and the fused SwiGLU's and fc2's inputs (6f) the layer keeps 2h a held token;
    the one layer whose backward re-runs it holds the rest again. "shared_experts" drops the shared experts' 6f_s,
    "layernorm" an MoE layer's pre-MLP norm output (2h; moe_layer.py, CheckpointWithoutOutput) and MLA's input
    norm output (2h), while Transformer Engine's norm-fused linear_qkv has no norm module to recompute."""
    llama = model_shape(load_model("llama-8b").architecture, 2)
    h, f = 4096, 14336
    base = MemoryLayout(tp=2, pp=2, sequence_parallel=True, recompute="selective")
    mlp = dataclasses.replace(base, dropped_modules=frozenset({"mlp"}))
    held = 8192 / 2  # tokens a rank holds under SP
    first = tuple(range(16))
    keep, drop = (stage_activation_bytes(llama, lay, 8192, 1, 0, 16, 2.0, first, True) for lay in (base, mlp))
    assert keep - drop == pytest.approx(held * (2 * h + 6 * f) * (16 * 2.0 - 1), rel=1e-12)
    # the attention norm is fused: "layernorm" drops nothing in a dense Llama layer
    norms = dataclasses.replace(base, dropped_modules=frozenset({"layernorm"}))
    assert stage_activation_bytes(llama, norms, 8192, 1, 0, 16, 2.0, first, True) == keep
    # DeepSeek-V3 at TP 1 (no SP): an MoE layer's norm output and shared experts (2,048 wide, gated), MLA's input norm
    deepseek = model_shape(load_model("deepseek-v3").architecture, 1)
    assert deepseek.mla_latents and deepseek.moe_shared_ffn == 2048
    moe_stage = tuple(range(4, 8))
    plain = MemoryLayout(pp=16, ep=64, dp=128, recompute="selective")
    both = dataclasses.replace(plain, dropped_modules=frozenset({"layernorm", "shared_experts"}))
    whole, less = (stage_activation_bytes(deepseek, lay, 4096, 1, 1, 4, 15.0, moe_stage, True) for lay in (plain, both))
    per_layer = 4096 * (2 * 7168 + 6 * 2048 + 2 * 7168)  # the MoE norm's output, the shared experts, MLA's norm
    assert whole - less == pytest.approx(1.05 * (4 * 15.0 - 1) * per_layer, rel=1e-12)


def test_the_block_method_checkpoints_the_first_layers_of_each_chunk() -> None:
    """Megatron-LM's --recompute-method block (megatron/core/recompute.py @d98e8a64dd): each model chunk's
    TransformerBlock checkpoints its layers l < recompute_num_layers. Llama 3 405B at PP 16 x V 2 builds 32 virtual
    stages of 3, 4, ..., 4, 3 layers, rank r holding stages r and r + 16: with N = 2, rank 0 checkpoints layers 0-1
    and 63-64, rank 15 layers 59-60 and 123-124. A stage keeps each checkpointed layer's input (full recomputation's
    2sbh/t under SP), the others all they save, and holds one re-run layer."""
    from dpcost.engine.layout_step import checkpointed_rank_layers, virtual_stage_layers

    per_virtual_stage = virtual_stage_layers(PipelineSplit(126, 16, 2))
    assert per_virtual_stage[:2] == (3, 4) and per_virtual_stage[-1] == 3
    ranks = checkpointed_rank_layers(PipelineSplit(126, 16, 2), block=2)
    assert ranks[0] == (0, 1, 63, 64) and ranks[15] == (59, 60, 123, 124)
    assert checkpointed_rank_layers(PipelineSplit(126, 16, 2))[0] == (0, 1, 2, 63, 64, 65, 66)
    llama = model_shape(load_model("llama-8b").architecture, 2)
    first = tuple(range(16))
    none, full, block = (
        MemoryLayout(tp=2, pp=2, sequence_parallel=True, recompute=policy, recompute_block=n)
        for policy, n in (("none", None), ("full", None), ("full", 2))
    )
    layer = stage_activation_bytes(llama, none, 8192, 1, 1, 1, 1.0, (16,), True) - stage_activation_bytes(
        llama, none, 8192, 1, 1, 0, 1.0, (), True
    )
    kept_input = 8192 * 4096 * 2 / 2
    acts = {lay.recompute_block: stage_activation_bytes(llama, lay, 8192, 1, 0, 16, 2.0, first, True)
            for lay in (none, block)}  # fmt: skip
    assert acts[2] - acts[None] == pytest.approx(2 * 2.0 * (kept_input - layer) + layer, rel=1e-12)
    every_layer = dataclasses.replace(block, recompute_block=16)  # N at least a chunk's layers: full recomputation
    assert stage_activation_bytes(llama, every_layer, 8192, 1, 0, 16, 2.0, first, True) == stage_activation_bytes(
        llama, full, 8192, 1, 0, 16, 2.0, first, True
    )
    assert activation_bytes(llama, every_layer, 8192, 1, 2) == activation_bytes(llama, full, 8192, 1, 2)


def test_ring_attention_keeps_a_second_copy_of_its_output() -> None:
    """Transformer Engine's ring attention (AttnFuncWithCPAndKVP2P, context_parallel.py at d0067d0da) corrects its
    output in fp32 over the ring's steps, saves one 16-bit conversion (out_part) and returns another (out_f16), which
    linear_proj keeps: 2c bytes more a token of the rank's s / CP, over TP, in each layer that keeps its output. A
    layer whose core attention is recomputed keeps neither; Ulysses (a2a) and all_gather CP run other functions."""
    llama = model_shape(load_model("llama-8b").architecture, 2)
    base = MemoryLayout(tp=2, cp=2, pp=2, sequence_parallel=True)
    ring = dataclasses.replace(base, cp_ring=True)
    first = tuple(range(16))
    with_copy, without = (stage_activation_bytes(llama, lay, 8192, 1, 0, 16, 2.0, first, True) for lay in (ring, base))
    assert with_copy - without == pytest.approx(2 * 4096 * (8192 / 2) / 2 * 16 * 2.0, rel=1e-12)
    rerun = dataclasses.replace(ring, attention_keeps_output=False)
    assert stage_activation_bytes(llama, rerun, 8192, 1, 0, 16, 2.0, first, True) == stage_activation_bytes(
        llama, dataclasses.replace(base, attention_keeps_output=False), 8192, 1, 0, 16, 2.0, first, True
    )


def test_stored_scores_keep_the_dropouts_tensors_only_where_attention_drops_out() -> None:
    """Korthikanti et al.'s Table 2 stores 5as^2b per layer where attention keeps its scores: the softmax's output
    (2), its dropout's mask (1) and output (2). At a dropout of 0 torch's dropout returns its input (ATen's
    _dropout_impl: p == 0), so the matmul with V keeps the softmax's output alone: 2as^2b. GPT-3 as Megatron trains
    it (dropout 0.1) keeps 5; the same model without dropout, 2."""
    gpt3 = load_model("gpt3-175b").architecture
    assert gpt3 is not None and gpt3.dropout > 0
    layout = MemoryLayout(tp=8, attention_scores=True)
    seq, b = 2048, 1
    kept = stored_scores_bytes(model_shape(gpt3, 8), layout, seq, b)
    assert kept == 5 * 96 * seq * seq * b / 8
    dry = model_shape(gpt3.model_copy(update={"dropout": 0.0}), 8)
    assert stored_scores_bytes(dry, layout, seq, b) == 2 * 96 * seq * seq * b / 8
    assert stored_scores_bytes(dry, MemoryLayout(tp=8), seq, b) == 0.0
    # Megatron's unfused fp32 softmax (fused_softmax.py forward_torch_softmax): its fp32 output (4) in place of the
    # 16-bit one (2); without dropout the matmul with V keeps the 16-bit cast (2) besides
    fp32 = MemoryLayout(tp=8, attention_scores=True, scores_fp32=True)
    assert stored_scores_bytes(model_shape(gpt3, 8), fp32, seq, b) == 7 * 96 * seq * seq * b / 8
    assert stored_scores_bytes(dry, fp32, seq, b) == 6 * 96 * seq * seq * b / 8


def test_overlapped_moe_all_to_alls_hold_one_more_forward_in_the_interleaved_warm_up() -> None:
    """schedules.py get_pp_rank_microbatches: with overlap_moe_expert_parallel_comm the interleaved warm-up runs one
    more forward, (p - r - 1) x 2 + (v - 1) x p + 1 of them, plus the one 1F1B holds. Without interleaving there is
    no such step (Megatron asks for a virtual pipeline to overlap them on PP above 1)."""
    assert microbatches_in_flight(8, 0, 3, extra_warmup=1) == (2 * 7 + 2 * 8 + 1 + 1) / 3
    assert microbatches_in_flight(8, 7, 3, extra_warmup=1) == (2 * 8 + 1 + 1) / 3
    assert microbatches_in_flight(8, 0, 1, extra_warmup=1) == microbatches_in_flight(8, 0, 1) == 8
    assert microbatches_in_flight(8, 0, 3, num_microbatches=8, extra_warmup=1) == 8  # never beyond all m x v


def test_a_larger_microbatch_group_holds_more_of_the_interleaved_warm_up() -> None:
    """schedules.py: the interleaved warm-up runs (p - r - 1) x 2 + (v - 1) x N forwards, N the micro-batches each
    virtual stage runs in a row (--microbatch-group-size-per-virtual-pipeline-stage, PP unless given)."""
    assert microbatches_in_flight(8, 0, 3, group=8) == microbatches_in_flight(8, 0, 3)
    assert microbatches_in_flight(8, 0, 3, group=16) == (2 * 7 + 2 * 16 + 1) / 3
    assert microbatches_in_flight(4, 3, 2, group=5, extra_warmup=1) == (0 + 5 + 1 + 1) / 2


def test_mla_keeps_its_wider_heads_and_its_latents() -> None:
    """Megatron-Core's MLA (multi_latent_attention.py @d98e8a64dd) hands the core attention Q and K of 128 heads x
    (128 + 64) and V of 128 x 128, and its context is 128 x 128: 2 x (2 x 24,576 + 2 x 16,384) = 163,840 bytes a
    token where Table 2 counts four tensors of 7,168, 57,344. Its latents are kept besides, per token: q_a's output
    (1,536) and its norm's (1,536), kv_a's (512 + 64) and its norm's (512), 8,320 bytes. DeepSeek-V3's stage 1 (4
    layers, 15 micro-batches in flight, no SP: the file's 5%) holds 114,816 bytes a token a layer more.
    --recompute-modules mla_up_proj drops Q, K, V (131,072 bytes) and the two norms' outputs (4,096), and the one
    layer whose backward re-makes them holds them again."""
    layout = MemoryLayout(pp=16, ep=64, dp=128, zero=1, first_stage_layers=3, last_stage_layers=2)
    shape = model_shape(load_model("deepseek-v3").architecture, 1, mtp_layers=1)
    h_wide = dataclasses.replace(
        shape, query_width=0, key_width=0, value_width=0, context_width=0, latent_bytes=0.0, latent_recomputed_bytes=0.0
    )
    for recompute, per_layer, remade in (("none", 114_816, 0), ("selective", 114_816 - 135_168, 135_168)):
        held = dataclasses.replace(layout, recompute=recompute, mla_recompute=recompute == "selective")
        own = layout_memory(shape, held, 4096, 1, 120).stages[1].activations
        file = layout_memory(h_wide, held, 4096, 1, 120).stages[1].activations
        assert own - file == pytest.approx(1.05 * 4096 * (15 * 4 * per_layer + remade), rel=1e-12)


def test_grouped_kv_is_copied_to_every_head_where_unfused_attention_keeps_its_scores() -> None:
    """dot_product_attention.py repeats K and V to every query head before its batched matmuls: with stored scores
    Llama 3 70B's layer keeps them 8,192 wide (8 groups of 128 copied to 64 heads), as Table 2 has them; with a fused
    kernel at 1,024. A TP rank keeps at least one group: at TP 16, 8 groups leave each rank one 128-wide group, not
    1,024 / 16."""
    shape = model_shape(load_model("llama-70b").architecture, 8)
    sb = 4096.0
    assert attention_width_bytes(shape, MemoryLayout(tp=8, attention_scores=True), 4096, 1) == 0.0
    assert attention_width_bytes(shape, MemoryLayout(tp=8), 4096, 1) == sb * 2 * 2 * (1024 - 8192) / 8
    assert attention_width_bytes(shape, MemoryLayout(tp=16), 4096, 1) == sb * 2 * 2 * (128 - 8192 / 16)


def test_transformer_engine_keeps_one_placeholder_weight_gradient_per_distinct_shape() -> None:
    """TE's get_dummy_wgrad (module/base.py @d0067d0da) caches one 16-bit tensor per distinct (shape, dtype) under
    gradient-accumulation fusion. Llama 3 405B at TP 8: QKV (16,384 + 2 x 1,024) / 8 x 16,384, the output projection
    16,384 x 2,048, fc1 2 x 53,248 / 8 x 16,384 and fc2 16,384 x 6,656: 398,458,880 elements, 797 MB, whatever the
    number of layers; the last stage's output layer (Megatron's ColumnParallelLinear, tensor_parallel/layers.py,
    takes one from the same cache) adds the vocabulary's, padded to 129,024 (128 x TP), / 8 x 16,384. DeepSeek-V3's
    shared expert (2,048 wide, over TP 1) has a routed expert's shape at ETP 1: one tensor for both. Off
    (--no-gradient-accumulation-fusion), none."""
    llama = model_shape(load_model("llama-405b").architecture, 8)
    on = MemoryLayout(tp=8, dummy_wgrads=True)
    elements = 18_432 // 8 * 16_384 + 16_384 * 2_048 + 106_496 // 8 * 16_384 + 16_384 * 6_656
    assert dummy_wgrad_bytes(llama, on, range(8)) == dummy_wgrad_bytes(llama, on, range(1)) == 2 * elements
    assert dummy_wgrad_bytes(llama, on, range(8), last=True) == 2 * (elements + 129_024 // 8 * 16_384)
    assert dummy_wgrad_bytes(llama, MemoryLayout(tp=8), range(8)) == 0.0
    deepseek = model_shape(load_model("deepseek-v3").architecture, 1)
    moe_layer = dummy_wgrad_bytes(deepseek, MemoryLayout(dummy_wgrads=True), [5])
    # MLA: q_down 1,536 x 7,168, q_up 24,576 x 1,536, kv_down 576 x 7,168, kv_up 32,768 x 512, output 7,168 x
    # 16,384; the experts' fc1 4,096 x 7,168 and fc2 7,168 x 2,048, once for the shared and the routed
    mla = 1_536 * 7_168 + 24_576 * 1_536 + 576 * 7_168 + 32_768 * 512 + 7_168 * 16_384
    assert moe_layer == 2 * (mla + 4_096 * 7_168 + 7_168 * 2_048)


def test_deferred_output_weight_gradients_keep_inputs_and_logit_gradients_until_the_flush() -> None:
    """--defer-embedding-wgrad-compute (tensor_parallel/layers.py @d98e8a64dd): the last stage's output layer keeps
    its input (forward) and its logits' gradient cast to 16 bits (backward) in place of each weight-gradient GEMM,
    for the step's first N calls (--wgrad-deferral-limit; 0: all), and runs the GEMMs after the pipeline flush.
    Megatron's functional test gpt3_mcore_te_tp2_pp2_*defer_embedding_wgrad_compute: hidden 512, GPT-2's vocabulary
    padded to 50,432 at TP 2 (25,216 a rank), 4 x 1,024 tokens a micro-batch, 4 micro-batches, limit 2. At the last
    micro-batch's peak 2 earlier calls' buffers are held: 2 x 4,096 x (25,216 + 512) 16-bit values; with no limit,
    the 3 earlier micro-batches'; none on the first stage."""
    shape = functional_test_shape()
    limited = MemoryLayout(tp=2, pp=2, wgrad_deferral=2)
    assert deferred_output_wgrad_bytes(shape, limited, 1024, 4, 4) == 2 * 2 * 4096 * (25_216 + 512)
    every = MemoryLayout(tp=2, pp=2, wgrad_deferral=0)
    assert deferred_output_wgrad_bytes(shape, every, 1024, 4, 4) == 3 * 2 * 4096 * (25_216 + 512)
    assert deferred_output_wgrad_bytes(shape, MemoryLayout(tp=2, pp=2, wgrad_deferral=8), 1024, 4, 4) == (
        deferred_output_wgrad_bytes(shape, every, 1024, 4, 4)
    )
    # under SP the layer takes the sequence's TP shard as its input
    sp = MemoryLayout(tp=2, pp=2, sequence_parallel=True, wgrad_deferral=2)
    assert deferred_output_wgrad_bytes(shape, sp, 1024, 4, 4) == 2 * 2 * 4096 * (25_216 + 256)
    # each MTP depth calls the output layer once more a micro-batch: the limit counts calls
    mtp = dataclasses.replace(shape, mtp_layers=1)
    assert deferred_output_wgrad_bytes(mtp, every, 1024, 4, 4) == 6 * 2 * 4096 * (25_216 + 512)
    assert deferred_output_wgrad_bytes(shape, MemoryLayout(tp=2, pp=2), 1024, 4, 4) == 0.0
    first, last = stage_memory(shape, limited, 1024, 4, 4)
    plain_first, plain_last = stage_memory(shape, MemoryLayout(tp=2, pp=2), 1024, 4, 4)
    assert first == plain_first
    assert last.activations - plain_last.activations == 2 * 2 * 4096 * (25_216 + 512)
    with pytest.raises(ValueError, match="pipeline"):
        MemoryLayout(tp=2, wgrad_deferral=2)


@pytest.mark.parametrize("golden", ["golden_values_dev_dgx_h100.json", "golden_values_dev_dgx_gb200.json"])
def test_what_stays_allocated_after_a_step_holds_the_biases_and_the_position_table(golden: str, tmp_path: Any) -> None:
    """Megatron-LM's 7B functional test at TP 4 (gpt3_7b_tp4_pp1_memory_speed: learned absolute positions over 8,192
    rows, add_bias_linear's default) logs what stays allocated after each step; its one stage holds the position
    table and the biases the file leaves out, 33,554,432 + 442,368 parameters at 2 + 4 + 12/2 bytes (408 MB). dpcost's
    states and buffers come within 5 MB of the measured figure (a median over its steps, at d98e8a64dd)."""
    from conftest import load_benchmark

    bench = load_benchmark("megatron_test_peaks")
    row = next(
        r for r in bench.rows() if r["case"] == "gpt/gpt3_7b_tp4_pp1_memory_speed" and r["golden_file"] == golden
    )
    assert abs(int(row["mem_allocated_bytes_median"]) - bench.held_after_step(row, tmp_path)) < 5e6


def _stage_buffers(model: str, **options: Any) -> list[float]:
    """Each pipeline stage's buffers as estimate costs them on a DGX H100, in bytes."""
    from dpcost.catalog import load_topology
    from dpcost.engine.layout_report import layout_stage_memory
    from dpcost.options import Options

    return [s.buffers for s in layout_stage_memory(load_model(model), load_topology("dgx-h100"), Options(**options))]


def test_megatron_s_global_buffer_holds_the_largest_gather_for_the_run() -> None:
    """Megatron-Core's GlobalMemoryBuffer keeps one bf16 tensor ("mpu") at the largest size asked of it, for the run
    (utils.py get_tensor). Under sequence parallelism the output layer gathers its input over TP into it
    (tensor_parallel/layers.py): Llama 3.1 8B at TP 2 x PP 2 over 8,192 tokens, its last stage holds 8,192 x 4,096 x
    2 bytes more beyond the first than without sequence parallelism. The allgather dispatcher gathers each MoE
    layer's tokens over expert TP x EP into it (token_dispatcher.py, use_global_buffer): Mixtral 8x7B at EP 8 (TP 1)
    over 4,096 tokens holds 4,096 x 8 x 4,096 x 2 bytes more than under the all-to-all dispatcher, which gathers
    nothing there."""
    dense = dict(tp=2, pp=2, dp=2, sequence_parallel=True, seq_len=8192, global_batch=8, recompute="none")
    first, last = _stage_buffers("llama-8b", **dense)
    layers = dict(dp=8, ep=8, seq_len=4096, global_batch=8, recompute="full")
    gathered = _stage_buffers("mixtral-8x7b", ep_dispatcher="allgather", **layers)[0]
    assert gathered - _stage_buffers("mixtral-8x7b", **layers)[0] == 4096 * 8 * 4096 * 2
    # the last stage also holds the output layer and its placeholder weight gradient; the gather is what differs
    # from a plan without sequence parallelism at the same TP, whose output layer gathers nothing
    plain = _stage_buffers("llama-8b", **{**dense, "sequence_parallel": False})
    assert (last - first) - (plain[1] - plain[0]) == 8192 * 4096 * 2


def test_the_deferred_output_wgrads_drain_gathers_into_two_more_global_buffers() -> None:
    """Under sequence parallelism the pipeline flush's drain of the deferred output-layer weight gradients gathers
    their inputs over TP into "mpu_0" and, from two deferred calls, "mpu_1" (utils.py drain_embedding_wgrad_compute),
    each the output layer's whole input, kept for the run beside "mpu". Llama 3.1 8B at TP 2 x PP 2 over 8,192
    tokens: the last stage's buffers grow by 2 x 8,192 x 4,096 x 2 bytes with every call deferred (8 micro-batches),
    by one such buffer with one call deferred, beyond what the deferral holds in its activations."""
    dense = dict(tp=2, pp=2, dp=2, sequence_parallel=True, seq_len=8192, global_batch=16, recompute="none")
    base = _stage_buffers("llama-8b", **dense)[-1]
    gather = 8192 * 4096 * 2
    assert _stage_buffers("llama-8b", **dense, defer_embedding_wgrad=0)[-1] - base == 2 * gather
    assert _stage_buffers("llama-8b", **dense, defer_embedding_wgrad=1)[-1] - base == gather


def test_transformer_engine_s_output_layer_gathers_outside_the_global_buffer() -> None:
    """--fp8-output-proj builds the output layer as Transformer Engine's TELMHeadColumnParallelLinear (gpt_model.py),
    which gathers its input under SP itself: the last stage holds no global buffer for it. Llama 3.1 8B at TP 2 x PP 2
    on a DGX B200 in MXFP8: the last stage holds 8,192 x 4,096 x 2 bytes less of it than with Megatron's head, beside
    the MXFP8 copy of the head's weight that Transformer Engine caches."""
    from dpcost.catalog import load_topology
    from dpcost.engine.layout_report import layout_stage_memory
    from dpcost.options import Options

    plan = dict(tp=2, pp=2, dp=2, sequence_parallel=True, seq_len=8192, global_batch=8, recompute="none",
                compute_dtype="fp8", fp8_recipe="mxfp8")  # fmt: skip
    topology, model = load_topology("dgx-b200"), load_model("llama-8b")
    megatron = layout_stage_memory(model, topology, Options(**plan))[-1].buffers
    te = layout_stage_memory(model, topology, Options(**plan, fp8_output_proj=True))[-1].buffers
    head_cache = 128256 * 4096 / 2 * 2 * (1 + 1 / 32)  # vocab / TP x hidden, both MXFP8 usages with their scales
    assert te - megatron == pytest.approx(head_cache - 8192 * 4096 * 2, rel=1e-3)
