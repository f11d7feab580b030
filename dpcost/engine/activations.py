"""The tensors one transformer layer's forward leaves for its backward, and the KV cache for serving.

Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models", section 4: one
GPT layer stores sbh(34 + 5as/h) bytes with 16-bit activations (s sequence, b micro-batch, h hidden, a heads):
attention 11sbh + 5as^2b, MLP 19sbh, two layer norms 4sbh. `layer_tensors` lists the same tensors from the
shapes, one entry per tensor autograd keeps, so the sum is that formula for a GPT-3 layer with fused kernels
(tests/test_memory.py), and it extends to:
- GQA/MQA (K and V are s*b*kv_heads*head_dim) and MLA (latent inputs plus expanded Q, K, V);
- gated MLPs, SwiGLU and GeGLU (gate and up outputs and the product, 3 x sbf, as Megatron's fused bias-swiglu keeps
  them; eager PyTorch also keeps the activation's output, 4 x sbf), and GELU/ReLU MLPs (the first matmul's output and
  the activation: 2 x sbf); in eager PyTorch a model's named activation keeps what its ops save (EAGER_ACTIVATIONS:
  transformers' gelu_new 3 x sbf more, ReLU only its output);
- no dropout masks when dropout is 0 (modern LLMs);
- FlashAttention: the s^2 score matrix is never stored, only its log-sum-exp (4 bytes per row and head);
- MoE layers: the router's fp32 logits, and each token's activations through the experts it is routed to (top-k)
  and the shared ones;
- norms as the model has them: one per block (GPT-J, Falcon: attention and MLP share it), two (pre-norm), four
  (Gemma 2/3's post-norms keep their inputs), and query/key norms (Qwen3, OLMo 2) keep theirs;
- how the layer runs (`Kernels`): "fused" counts what Megatron's fused kernels keep (Korthikanti's count);
  "eager" counts what PyTorch ops keep: an RMSNorm written in them (Hugging Face's LlamaRMSNorm, torchtitan's
  RMSNorm) keeps an fp32 copy of its input and the normalised bf16 product before the weight (6 bytes per element
  where a fused norm keeps its 2-byte input), GQA's K and V are kept as copies for every query head (torchtitan's
  repeat_kv; one key/value head's is a view, no copy; `repeat_kv` off: the flash kernel reads them grouped, as
  transformers' SDPA does without a mask, reads_grouped_kv), and transformers' attention
  keeps what its layouts leave (resolved/attention-layout.json): a copy of SDPA's output where the query is
  heads-first (context_copied), and the whole fused QKV or MLA kv_b_proj output that V is a view of;
  "compiled" drops the element-wise intermediates torch.compile's partitioner recomputes rather than saves
  (torch/_functorch/partitioners.py, min_cut_rematerialization_partition: pointwise ops are recomputed): the
  norms keep only their input, a gated MLP only its two matmul outputs, a GELU MLP only its first matmul's output.
Which of these tensors a recomputation policy keeps is checkpointing.py's; the loss's logits are loss.py's.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Literal

from dpcost.engine.attention_keys import cached_entries, cached_keys
from dpcost.engine.params import hyper_mixes
from dpcost.frozen import frozen
from dpcost.specs import (
    CSA,
    HCA,
    REUSED_BLOCK,
    SHARED_BLOCK,
    Activation,
    DeltaNetSpec,
    GateClamp,
    MLASpec,
    ModelArchitecture,
    MoESpec,
)

__all__ = [
    "ACT_BYTES",
    "EAGER_ACTIVATIONS",
    "EAGER_GATE_CLAMPS",
    "EagerActivation",
    "EagerGateClamp",
    "Kernels",
    "LayerTensors",
    "Tensor",
    "eager_gate_clamp",
    "kv_cache_bytes",
    "kv_read_bytes",
    "layer_tensors",
    "mla_latent_tensors",
    "norm_bytes",
    "reads_grouped_kv",
    "recurrent_state_bytes",
    "ring_attention_backward_bytes",
    "ring_key_value_width",
    "routed_copies",
    "tensor_parallel_share",
]

Kernels = Literal["eager", "fused", "compiled"]
ACT_BYTES = 2  # bf16/fp16 activations


@frozen
class EagerActivation:
    """What eager PyTorch runs and keeps of one of transformers' named MLP activations (ACT2FN[name], activations.py,
    5.25.0; BLOOM's own, BloomGelu), per element of the MLP's width in bf16: the nn.functional kernels run once and keep
    their input (GELU, SiLU) or only their output (ReLU, sigmoid, tanh); the GELUs written as arithmetic launch a kernel
    per op and keep what each op saves (gelu_new: tanh's output, 0.5x and 1 + tanh). Measured with saved-tensor hooks
    and a TorchDispatchMode: tests/reference/hf-configs/resolved/eager-activations.json."""

    keeps_input: bool  # the matmul output before it
    kept_bytes: float  # its own intermediates kept for the backward, besides its input and output
    forward_bytes: float  # read and written by its forward's kernels
    forward_kernels: int
    backward_bytes: float
    backward_kernels: int


EAGER_ACTIVATIONS: dict[Activation, EagerActivation] = {
    "gelu": EagerActivation(True, 0, 4, 1, 6, 1),
    "gelu_10": EagerActivation(True, 2, 8, 2, 20, 6),
    "gelu_accurate": EagerActivation(True, 6, 36, 8, 56, 11),
    "gelu_fast": EagerActivation(True, 12, 42, 9, 72, 13),
    "gelu_new": EagerActivation(True, 6, 36, 8, 56, 11),
    "gelu_python": EagerActivation(False, 6, 22, 5, 48, 10),
    "gelu_python_tanh": EagerActivation(True, 6, 36, 8, 56, 11),
    "gelu_pytorch_tanh": EagerActivation(True, 0, 4, 1, 6, 1),
    "hardswish": EagerActivation(True, 0, 4, 1, 6, 1),
    "laplace": EagerActivation(False, 2, 20, 5, 30, 7),
    "leaky_relu": EagerActivation(True, 0, 4, 1, 6, 1),
    "linear": EagerActivation(False, 0, 0, 0, 0, 0),
    "mish": EagerActivation(True, 0, 4, 1, 6, 1),
    "quick_gelu": EagerActivation(True, 2, 14, 3, 28, 5),
    "relu": EagerActivation(False, 0, 4, 1, 6, 1),
    "relu2": EagerActivation(False, 2, 8, 2, 20, 4),
    "relu6": EagerActivation(True, 0, 4, 1, 6, 1),
    "sigmoid": EagerActivation(False, 0, 4, 1, 6, 1),
    "silu": EagerActivation(True, 0, 4, 1, 6, 1),
    "sqrtsoftplus": EagerActivation(True, 0, 8, 2, 16, 3),
    "swish": EagerActivation(True, 0, 4, 1, 6, 1),
    "tanh": EagerActivation(False, 0, 4, 1, 6, 1),
    "xielu": EagerActivation(True, 7, 58, 15, 104, 23),
    "bloom_gelu": EagerActivation(True, 0, 42, 9, 88, 18),
}  # fmt: skip


@frozen
class EagerGateClamp:
    """What eager PyTorch keeps and runs of a clamped gated MLP (specs.GateClamp: its experts' _apply_gate,
    transformers 5.25.0) beyond an unclamped SwiGLU's F.silu(gate) * up, per element of the MLP's width in bf16. Both
    keep the gate and up halves and the product; the clamps keep clamped copies besides (DeepSeek-V4's: the clamped
    gate, which silu keeps as its input, and the clamped up), and gpt-oss's arithmetic what each of its ops saves
    (the clamped gate, the sigmoid's output, up + 1 and the gate's product with it). Measured with saved-tensor hooks
    and a TorchDispatchMode: tests/reference/hf-configs/resolved/eager-activations.json, clamped_gates."""

    routed_only: bool  # the routed experts clamp, the dense and shared MLPs not (HY V4's HYV4MLP)
    kept_bytes: float
    forward_bytes: float
    forward_kernels: int
    backward_bytes: float  # gpt-oss's halves are interleaved (gate_up[..., ::2]): each slice's backward fills a zero
    backward_kernels: int  # gradient as wide as both


EAGER_GATE_CLAMPS: dict[GateClamp, EagerGateClamp] = {
    "gpt_oss": EagerGateClamp(True, 6, 22, 5, 64, 14),
    "minimax_m3_vl": EagerGateClamp(False, 6, 22, 5, 44, 12),
    "deepseek_v4": EagerGateClamp(False, 4, 8, 2, 22, 8),
    "hy_v4": EagerGateClamp(True, 4, 8, 2, 22, 8),
}  # fmt: skip
# One fused kernel (F.gelu; F.silu alike), which keeps its input and nothing more: what an MLP keeps of an activation
# dpcost knows no name for, or one that runs fused (Megatron's kernels, torch.compile)
FUSED_ACTIVATION = EAGER_ACTIVATIONS["gelu"]
# Megatron's module names (megatron/core/transformer/transformer_config.py, recompute_modules), used to tag each
# tensor with the part of the layer it belongs to.
Module = Literal[
    "input",
    "layernorm",
    "qkv",
    "mla_up_proj",
    "core_attn",
    "attn_out",
    "mlp",
    "moe_act",
    "router",
    "shared_experts",
    "moe",
]


@frozen
class Tensor:
    """One tensor of one layer's forward: bytes per token (per token of context too, for s^2 scores)."""

    name: str
    module: Module
    bytes_per_token: float
    saved: bool = True  # autograd keeps it for the backward (False: a matmul output only a residual add reads)
    matmul: int = 0  # its position among the layer's aten.mm calls, in forward order (0: not a matmul output)
    quadratic: bool = False  # scales with s x s x b (attention scores) rather than s x b
    # a row-parallel projection's output (attention's output projection, the MLP's down projection): under TP the
    # partial sums each rank holds whole until the reduce-scatter (tensor_parallel_share)
    row_parallel: bool = False

    def bytes(self, seq_len: int, micro_batch: int) -> float:
        return self.bytes_per_token * seq_len * micro_batch * (seq_len if self.quadratic else 1)


@frozen
class LayerTensors:
    tensors: tuple[Tensor, ...]
    kernels: Kernels  # how the layer runs, which decides what torch.compile's partitioner keeps
    # the width of the block's input, which every checkpointing policy keeps (0: the block is empty; a fraction of it
    # where sequence parallelism leaves each rank a slice of the sequence: tensor_parallel_share)
    hidden: float
    tp: int = 1  # the tensor-parallel ranks it is one rank's share of (tensor_parallel_share)

    def saved_bytes(self, seq_len: int, micro_batch: int) -> float:
        """Everything autograd keeps: the layer without recomputation."""
        return sum(t.bytes(seq_len, micro_batch) for t in self.tensors if t.saved)


def tensor_parallel_share(layer: LayerTensors, tp: int) -> LayerTensors:
    """What one of `tp` tensor-parallel ranks keeps of a dense layer's tensors under torchtitan's plan
    (models/llama3/infra/parallelize.py apply_tp: SequenceParallel on attention_norm and ffn_norm, ColwiseParallel
    wq, wk, wv, w1 and w3, RowwiseParallel wo and w2 back to Shard(1)): the norms run on the rank's slice of the
    sequence and the heads and the MLP's columns split `tp` ways, so every tensor is 1/tp of the whole but a norm's
    output (module "layernorm"), which PrepareModuleInput all-gathers to the whole sequence for the column-parallel
    projections that keep it, and a row-parallel projection's output, the partial sums of the whole sequence each rank
    holds until RowwiseParallel reduce-scatters them (autograd keeps none; per-op SAC caches them eager). The block's
    input is the rank's slice of the sequence."""
    if tp == 1:
        return layer
    shared = tuple(
        t if t.module == "layernorm" or t.row_parallel else replace(t, bytes_per_token=t.bytes_per_token / tp)
        for t in layer.tensors
    )
    return LayerTensors(shared, layer.kernels, layer.hidden / tp, tp)


def ring_attention_backward_bytes(a: ModelArchitecture, cp: int, tp: int = 1, repeated_kv: bool = False) -> float:
    """Bytes per local token one attention layer's backward holds at its peak, beyond the bf16 gradients a flash
    attention's backward returns, under torch's context_parallel with the allgather rotater and head-tail load
    balancing, torchtitan's defaults (torch 2.14.1 distributed/tensor/experimental/_context_parallel/_attention.py,
    _templated_ring_attention_backward), at a balanced step's exchange of a rank past the first:
    - the query gradient accumulated in fp32 (convert_to_f32): 4 q;
    - four fp32 key and value gradients alive together: the one received from the last step, _partial_update's
      new one, next_grad_kv's cat and the all-to-all rotater's output: 16 kv;
    - the step's keys and values concatenated in bf16 to send (next_kv): 2 kv;
    - the keys and values of all `cp` ranks, all-gathered in bf16: 2 cp kv.
    q and kv are the widths of the rank's query heads and of its keys and values together, the latter copied out to
    every query head where the model repeats them before SDPA (`repeated_kv`: torchtitan's repeat_kv before v0.2,
    its enable_gqa after)."""
    if cp == 1:
        return 0.0
    view = a.attention_of(next((m for m in a.mixers if "attention" in m), "attention"))
    query = view.heads * view.d_head / tp
    return 4 * query + (18 + ACT_BYTES * cp) * ring_key_value_width(view, tp, repeated_kv)


def ring_key_value_width(a: ModelArchitecture, tp: int, repeated_kv: bool = False) -> float:
    """The keys' and values' width per token one of `tp` tensor-parallel ranks exchanges over context parallelism:
    its share of the KV heads (each rank holds one whole where TP exceeds them), or of every query head where the
    model copies K and V out to them before SDPA (`repeated_kv`)."""
    kv_heads = a.heads / tp if repeated_kv else a.n_kv_heads / min(tp, a.n_kv_heads)
    return kv_heads * (a.d_head + a.d_value)


def norm_bytes(a: ModelArchitecture, kernels: Kernels) -> float:
    """Bytes a norm keeps per element of its input: the bf16 input (fused kernels, compiled), or an eager RMSNorm's
    fp32 copy of it and the normalised product before the weight, cast to bf16 (4 + 2: Llama's
    x.to(dtype) * w) or left in fp32 where the weight multiplies first (4 + 4: Gemma's (x * w).to(dtype)); a
    LayerNorm written in fp32 ops (Cohere's) keeps x - mean twice, for pow and for the product, and the fp32
    normalised product (4 + 4 + 4). Measured: resolved/norm-bytes.json."""
    if kernels != "eager":
        return ACT_BYTES
    if a.norm == "rmsnorm":
        return 4 + (4 if a.norm_in_fp32 else 2)
    return 12.0 if a.norm_in_fp32 else ACT_BYTES


def _fp32_norm_bytes(a: ModelArchitecture) -> float:
    """What an eager norm keeps an element of an fp32 input (autocast's residual): an RMSNorm its input and its fp32
    normalised product (4 + 4), a LayerNorm its input (4), or what one written in fp32 ops keeps anyway (norm_bytes)."""
    if a.norm == "rmsnorm":
        return 8.0
    return max(4.0, norm_bytes(a, "eager"))


def _norm_input(a: ModelArchitecture, kernels: Kernels, name: str, module: Module, width: int) -> Tensor:
    """What a norm keeps of its input (norm_bytes)."""
    return Tensor(f"{name} input", module, norm_bytes(a, kernels) * width)


def _norm(
    a: ModelArchitecture, kernels: Kernels, name: str, fused_into: Module | None = None, casts: int = 0
) -> list[Tensor]:
    """A pre-norm: its input as it keeps it, and its output, the next matmul's input. `fused_into`: the module whose
    matmul runs the norm in one kernel and keeps its output (Megatron's TELayerNormColumnParallelLinear), which
    recomputes it, not "layernorm". `casts`: under torch.autocast, eager, the linear layers reading its output
    (_attention_readers, _mlp_readers; 0 otherwise). Its input is then the fp32 residual stream, which it keeps, an
    RMSNorm with its fp32 normalised product (x.to(input_dtype) is fp32), and its output is fp32, which each reader
    casts to 16 bits and keeps (autocast caches only the weights' casts): 4 (LayerNorm) or 8 (RMSNorm) + 2 x readers
    bytes an element, where 16 bits keep norm_bytes + 2. Measured: resolved/autocast-activations.json."""
    module: Module = "input" if name == "attention norm" else "attn_out"
    if casts:
        return [
            Tensor(f"{name} input (the fp32 residual)", module, _fp32_norm_bytes(a) * a.hidden),
            Tensor(f"{name} output, cast to 16 bits by each of {casts} linear layers", fused_into or "layernorm",
                   ACT_BYTES * casts * a.hidden),
        ]  # fmt: skip
    return [
        _norm_input(a, kernels, name, module, a.hidden),
        Tensor(f"{name} output", fused_into or "layernorm", ACT_BYTES * a.hidden),
    ]


def _attention_readers(a: ModelArchitecture, mixer: str) -> int:
    """The linear layers that read the attention norm's output and keep their cast: Q's, K's and V's (one where
    fused_qkv; Q's alone in a kv-shared layer), MLA's query and key-value down-projections (DeepSeek-V3.2's indexer
    reads it too, under torch.no_grad in transformers, keeping nothing), any other mixer's input projection."""
    if "attention" not in mixer or a.compressed_attention is not None:
        return 1
    kv = a.computes_kv(mixer)
    if a.mla is not None:
        return 2 if kv else 1
    return 1 if a.fused_qkv or not kv else 3


def _mlp_readers(a: ModelArchitecture, moe_layer: bool) -> int:
    """The linear layers that read the MLP norm's output: a gated MLP's gate and up (one where fused_gate_up), a
    GELU MLP's first; an MoE layer's router, its shared experts' and their gate (Qwen2-MoE's shared_expert_gate;
    its routed experts read their dispatched copies)."""
    dense = 1 if a.fused_gate_up or not a.gated_mlp else 2
    if moe_layer and a.moe is not None:
        return 1 + a.moe.shared * dense + int(a.moe.shared_gate)
    return dense


def _post_norm(a: ModelArchitecture, kernels: Kernels, name: str) -> Tensor:
    """A norm on a sub-layer's output before the residual add (Gemma 2/3's post-norms): its input, which nothing
    else keeps; its output meets only the add."""
    return _norm_input(a, kernels, name, "attn_out", a.hidden)


# The widest head transformers' SDPA path passes K and V grouped for (integrations/sdpa_attention.py use_gqa_in_sdpa,
# transformers 5.25.0: "no mask and supported head dims to avoid falling back to the math kernel")
GROUPED_KV_MAX_HEAD_DIM = 256


def reads_grouped_kv(a: ModelArchitecture, flash: bool) -> bool:
    """Whether the attention kernel can read grouped K and V as they are, with no copy per query head: a flash
    kernel, K's and V's head dims equal and at most 256 (transformers' use_gqa_in_sdpa: SDPA's enable_gqa; without
    flash, transformers' eager attention copies them, repeat_kv)."""
    return flash and a.d_head == a.d_value <= GROUPED_KV_MAX_HEAD_DIM


def mla_latent_tensors(m: MLASpec, computes_kv: bool = True, first_mm: int = 0) -> list[Tensor]:
    """What Megatron-Core's MLA keeps of its latents per token (multi_latent_attention.py get_query_key_value_tensors,
    at d98e8a64dd): each down-projection's output, which its norm keeps as input, and the norm's output, which the
    up-projection keeps. The norms are fused into the up-projections (TELayerNormColumnParallelLinear), which
    qkv_up_proj_and_rope_apply runs and recompute_modules "mla_up_proj" checkpoints: their outputs are that module's.
    `first_mm`: the query down-projection's position among the layer's mm calls."""
    e, q_rank, mm = ACT_BYTES, m.q_lora_rank or 0, first_mm
    out: list[Tensor] = []
    if q_rank:
        out.append(Tensor("q_a output", "qkv", e * q_rank, matmul=mm))
        out.append(Tensor("q norm output", "mla_up_proj", e * q_rank))
        mm += 1
    if computes_kv:  # a kv-shared layer expands the earlier layer's latent (Mistral Large 4's)
        out.append(Tensor("kv_a output", "qkv", e * (m.kv_lora_rank + m.qk_rope_head_dim), matmul=mm))
        out.append(Tensor("kv norm output", "mla_up_proj", e * m.kv_lora_rank))
    return out


def _attention(
    a: ModelArchitecture,
    flash: bool,
    kernels: Kernels,
    first_mm: int,
    computes_kv: bool = True,
    indexed: bool = True,
    autocast: bool = False,
    repeat_kv: bool = True,
    softmax_fp32: bool = False,
) -> tuple[list[Tensor], int]:
    """Q, K, V as attention reads them, its core (log-sum-exp under flash, else the s^2 softmax and dropout),
    the context (the output projection's input) and its output; and the mm calls it makes. A kv-shared layer
    (not `computes_kv`) reads the K and V an earlier layer keeps, and keeps none of its own. `repeat_kv`: eager
    attention copies grouped K and V out to every query head (else the kernel reads them grouped, where it can).
    `softmax_fp32`: the fused kernels' softmax runs unfused in fp32 (_unfused_fp32_scores)."""
    e, h = ACT_BYTES, a.hidden
    out: list[Tensor] = []
    mm = first_mm
    if a.mla is not None:
        m = a.mla
        d_qk, d_v = m.qk_nope_head_dim + m.qk_rope_head_dim, m.v_head_dim
        q_rank = m.q_lora_rank or 0
        # the up-projections and RoPE run as one function, which recompute_modules "mla_up_proj" checkpoints: its
        # outputs, Q, K and V, go with the latents' norm outputs (mla_latent_tensors)
        out += mla_latent_tensors(m, computes_kv, mm)
        mm += 1 if q_rank else 0
        kv_a = 1 if computes_kv else 0
        out.append(Tensor("Q", "mla_up_proj", e * a.heads * d_qk, matmul=mm + kv_a if q_rank else 0))
        out.append(Tensor("K, V", "mla_up_proj", e * a.heads * (d_qk + d_v), matmul=mm + kv_a + (1 if q_rank else 0)))
        if kernels == "eager":  # V is a view of kv_b_proj's output (a kv-shared layer's too), kept whole
            kept = e * a.heads * m.qk_nope_head_dim
            out.append(Tensor("keys' latent part, kept in V's storage", "mla_up_proj", kept))
        mm += kv_a + (2 if q_rank else 1)
        if a.indexer is not None and indexed:  # DeepSeek-V3.2's indexer: its queries, key and head weights
            i = a.indexer
            out.append(Tensor("indexer q, k, weights", "core_attn", e * (i.heads * i.head_dim + i.head_dim + i.heads)))
        context = a.heads * d_v
    else:
        q, kv = a.heads * a.d_head, a.n_kv_heads * a.d_head
        # Eager PyTorch models copy K and V out to every query head before SDPA (torchtitan's repeat_kv, torchtune's
        # and litgpt's expand + reshape), and SDPA keeps the copies; fused and compiled attention read K, V as they
        # are. A single key/value head's expand + reshape is a view (its size-1 head dim merges with the stride-0
        # one), which SDPA's kernels read as it is: multi-query attention under flash copies nothing (without flash,
        # the scores' batched matmul copies the view where the micro-batch is over 1: counted). JetMoE's attention
        # repeats them itself, whatever the kernel (modeling_jetmoe.py key_states.repeat).
        single_head_view = flash and a.n_kv_heads == 1
        copied = kernels == "eager" and (repeat_kv or not reads_grouped_kv(a, flash)) and not single_head_view
        expanded = (copied or a.attention_experts is not None) and kv < q
        out.append(Tensor("Q", "qkv", e * q, matmul=mm))
        if computes_kv:
            out.append(Tensor("K", "qkv", e * kv, saved=not expanded, matmul=mm + 1))
            out.append(Tensor("V", "qkv", e * a.n_kv_heads * a.d_value, saved=not expanded, matmul=mm + 2))
        if expanded:
            out.append(Tensor("K and V copied to every query head", "qkv", e * a.heads * (a.d_head + a.d_value)))
        elif kernels == "eager" and a.fused_qkv and a.rotary and computes_kv:
            # Q and K are rotated into new tensors, and V stays a view of the fused projection's output, which
            # attention keeps whole
            out.append(Tensor("fused projection's Q and K, kept in V's storage", "qkv", e * (q + kv)))
        if kernels == "eager" and a.clip_qkv:  # clamp keeps its input (DBRX, MPT); clamp_ a copy of it (OLMo)
            clamped = q + (kv + a.n_kv_heads * a.d_value if computes_kv else 0)
            out.append(Tensor("Q, K and V before their clamp (clip_qkv)", "qkv", e * clamped))
        if a.qk_norm != "none":  # the norms' inputs are the projections' outputs; their outputs are Q and K above
            out.append(_norm_input(a, kernels, "query and key norms", "qkv", q + (kv if computes_kv else 0)))
        if a.cca is not None:  # ZAYA's two convolutions keep their inputs, and its L2 norms theirs
            out.append(Tensor("queries and keys into the depthwise and grouped convolutions", "qkv", 2 * e * (q + kv)))
            out.append(Tensor("queries and keys before their L2 norms", "qkv", e * (q + kv)))
        mm += 3 if computes_kv else 1
        if a.relative_logits is not None:  # Inkling's r_proj output, which the bank's matmul keeps
            rank = a.relative_logits.rank
            out.append(Tensor("relative logits' weights (r_proj output)", "qkv", e * a.heads * rank, matmul=mm))
            mm += 1
        if a.sink_projection:  # Inkling 2's sink_proj output: a sink logit per head, which the softmax reads
            out.append(Tensor("sink logits (sink_proj output)", "core_attn", e * a.heads, matmul=mm))
            mm += 1
        if a.indexer is not None:  # MiniMax M3's block indexer: its queries and key
            i = a.indexer
            out.append(Tensor("indexer q, k", "core_attn", e * (i.heads * i.head_dim + i.head_dim)))
        context = a.heads * a.d_value
    if flash:
        out.append(Tensor("log-sum-exp (fp32)", "core_attn", 4.0 * a.heads))
    else:
        if kernels == "eager":
            out += _eager_scores(a, autocast)
        elif softmax_fp32:
            out += _unfused_fp32_scores(a)
        else:
            out.append(Tensor("softmax", "core_attn", e * a.heads, quadratic=True))
        if a.dropout > 0:
            out.append(Tensor("attention dropout mask", "core_attn", 1.0 * a.heads, quadratic=True))
            out.append(Tensor("attention dropout output", "core_attn", e * a.heads, quadratic=True))
    if flash and kernels == "eager" and a.context_copied:
        out.append(Tensor("attention output, laid out per head", "core_attn", e * context))
    out.append(Tensor("context (output projection input)", "core_attn", e * context))
    out.append(Tensor("output projection output", "attn_out", e * h, saved=False, matmul=mm, row_parallel=True))
    if a.dropout > 0:
        out.append(Tensor("dropout mask", "attn_out", 1.0 * h))
    return out, mm + 1


def _eager_scores(a: ModelArchitecture, autocast: bool) -> list[Tensor]:
    """The score square as transformers' eager attention keeps it, per token pair (modeling_llama.py
    eager_attention_forward, transformers 5.25.0): softmax(dtype=torch.float32) keeps its fp32 output, and the
    .to(query.dtype) copy the matmul with V reads, unless dropout's output takes its place. A family whose softmax
    stays in 16 bits (eager_softmax_16bit: GPT-2's, BERT's) keeps that alone, but under torch.autocast, which runs
    softmax in fp32 whatever its input (torch.amp's fp32 op list) and casts back for the matmul. Some families keep
    16-bit copies of the scores besides (eager_score_copies). Measured for each family with saved-tensor hooks, without
    dropout or autocast: tests/reference/hf-configs/resolved/eager-attention.json."""
    e, heads = ACT_BYTES, a.heads
    fp32 = autocast or not a.eager_softmax_16bit
    out = [Tensor(f"softmax output ({'fp32' if fp32 else '16-bit'})", "core_attn", (4.0 if fp32 else e) * heads,
                  quadratic=True)]  # fmt: skip
    if fp32 and a.dropout == 0:
        out.append(Tensor("softmax cast to 16 bits (the matmul with V reads it)", "core_attn", e * heads,
                          quadratic=True))  # fmt: skip
    out += [
        Tensor(f"scores kept in 16 bits ({i + 1})", "core_attn", e * heads, quadratic=True)
        for i in range(a.eager_score_copies)
    ]
    return out


def _unfused_fp32_scores(a: ModelArchitecture) -> list[Tensor]:
    """The score square as Megatron's unfused softmax keeps it in fp32 (megatron/core/fusions/fused_softmax.py
    forward_torch_softmax, Megatron-LM d98e8a64dd): the 16-bit scores cast up, scaled by a number and masked in
    place keep nothing; the softmax keeps its fp32 output; the cast back to 16 bits is what dropout reads, or, without
    attention dropout, what the matmul with V keeps."""
    out = [Tensor("softmax output (fp32, unfused)", "core_attn", 4.0 * a.heads, quadratic=True)]
    if a.dropout == 0:
        out.append(Tensor("softmax cast to 16 bits (the matmul with V reads it)", "core_attn", ACT_BYTES * a.heads,
                          quadratic=True))  # fmt: skip
    return out


def _attention_convolutions(a: ModelArchitecture, mixer: str, kernels: Kernels) -> list[Tensor]:
    """Inkling's k_sconv, v_sconv and attn_sconv (InklingShortConvolution, modeling_inkling.py, transformers 5.25.0):
    each casts its input to fp32 and keeps it for the depthwise convolution's backward; the residual around it and
    the cast back keep nothing. Inkling 2's full layers also keep each token's projected taps (fp32); eager, their
    Inkling2DynamicShortConvolution keeps the unfolded windows and the taps broadcast over them instead (fp32, kernel
    x channels each; measured by a helper's saved-tensor hooks)."""
    view = a.attention_of(mixer)
    keys_values = view.n_kv_heads * (view.d_head + view.d_value)
    out = [
        Tensor("key and value convolutions' inputs (fp32)", "qkv", 4.0 * keys_values),
        Tensor("attention output convolution's input (fp32)", "attn_out", 4.0 * a.hidden),
    ]
    g = a.global_attention
    if a.sconv_kernel is not None and g is not None and g.dynamic_convs and mixer == "global attention":
        if kernels == "eager":  # the unfolded windows and the taps broadcast over them, fp32, kernel x channels each
            windows = 2 * a.sconv_kernel * keys_values
            out.append(Tensor("key and value convolutions' windows and broadcast taps (fp32)", "qkv", 4.0 * windows))
        else:
            taps = 2 * view.n_kv_heads * a.sconv_kernel  # Inkling 2's per-token taps for the keys and the values
            out.append(Tensor("key and value convolutions' per-token taps (fp32)", "qkv", 4.0 * taps))
    return out


def _shared_block(
    a: ModelArchitecture,
    flash: bool,
    kernels: Kernels,
    first_mm: int,
    autocast: bool = False,
    repeat_kv: bool = True,
    softmax_fp32: bool = False,
) -> tuple[list[Tensor], int]:
    """Zamba's and Zamba2's shared transformer block as a hybrid layer runs it (SharedBlockSpec;
    Zamba2AttentionDecoderLayer and Zamba2HybridLayer, modeling_zamba2.py, transformers 5.25.0): the hidden state
    concatenated with the embedding (2h), which input_layernorm keeps, and its output, which q, k, v and their
    adapters read (2h); Zamba2's adapters' rank-wide intermediates (run as matmuls, not numbered here); attention
    as any layer's; pre_ff_layernorm's input and output; the gated MLP; and the block's output, the layer's linear
    layer's input (h). Every run keeps its own, whichever layer holds the weights."""
    s = a.shared_block
    assert s is not None and a.ffn is not None
    e, h = ACT_BYTES, a.hidden
    out = [
        _norm_input(a, kernels, "shared block input norm (hidden state and embedding)", "input", 2 * h),
        Tensor("shared block input norm output", "layernorm", e * 2 * h),
    ]
    if s.adapter_rank:
        adapters = 4 if s.attention_adapters else 1
        out.append(Tensor("shared block adapters' intermediates", "qkv", e * adapters * s.adapter_rank))
    attention, mm = _attention(a, flash, kernels, first_mm, autocast=autocast, repeat_kv=repeat_kv,
                               softmax_fp32=softmax_fp32)  # fmt: skip
    out += attention + _norm(a, kernels, "shared block MLP norm")
    mlp = _mlp(a, a.ffn, kernels, mm, "mlp", "shared block MLP")
    mm += sum(1 for t in mlp if t.matmul)
    out += mlp
    out.append(Tensor("shared block output (the layer's linear layer's input)", "mlp", e * h))
    out.append(Tensor("linear layer output", "mlp", e * h, saved=False, matmul=mm))
    return out, mm + 1


def _attention_experts(a: ModelArchitecture) -> list[Tensor]:
    """What JetMoE's mixture of attention heads keeps beyond its attention (JetMoeMoA map and reduce, saved-tensor
    hooks on transformers 5.25.0's bf16 layer): each token's input copied to its top-k experts, their queries as
    routed, the outputs gathered back and weighted by the gates, and the router's fp32 logits and gates with its
    top-k indices."""
    assert a.attention_experts is not None and a.moe is not None
    e, k, width = ACT_BYTES, a.moe.active, a.n_kv_heads * a.d_head
    return [
        Tensor("attention experts' routed inputs", "qkv", e * k * a.hidden),
        Tensor("attention experts' queries as routed", "qkv", e * k * width),
        Tensor("attention experts' outputs, gathered and weighted", "attn_out", 2 * e * k * width),
        Tensor(
            "attention router (fp32 logits and gates, top-k indices)", "router", 4.0 * a.attention_experts + 12.0 * k
        ),
    ]


def _compressed_attention(a: ModelArchitecture, mixer: str, flash: bool, first_mm: int) -> tuple[list[Tensor], int]:
    """DeepSeek-V4's attention (modeling_deepseek_v4.py, transformers 5.24.0) as fused kernels keep it: the query
    latent and its norm's output, the queries before their unweighted norm and after it (the attention's input), the
    key-value head before its norm and after it, a compressor's projections (kv and gate, twice as wide in a sparse
    layer, whose indexer keeps its queries, its own projections and head weights), the log-sum-exp over the window
    and entries (the score square only without flash), the context, o_a_proj's output and o_b_proj's."""
    c, e = a.compressed_attention, ACT_BYTES
    assert c is not None
    queries, d = a.heads * a.d_head, a.d_head
    out = [
        Tensor("q_a output", "qkv", e * c.q_lora_rank, matmul=first_mm),
        Tensor("q norm output", "qkv", e * c.q_lora_rank),
        Tensor("Q before its norm", "qkv", e * queries, matmul=first_mm + 1),
        Tensor("Q", "qkv", e * queries),
        Tensor("KV before its norm", "qkv", e * d, matmul=first_mm + 2),
        Tensor("KV (keys and values)", "qkv", e * d),
    ]
    mm = first_mm + 3
    if mixer == CSA:
        di = c.index_head_dim
        out.append(Tensor("compressor kv and gate", "core_attn", e * 4 * d, matmul=mm))
        out.append(Tensor("indexer kv, gate, queries and weights", "core_attn",
                          e * (4 * di + c.index_heads * di + c.index_heads), matmul=mm + 2))  # fmt: skip
        mm += 6
    elif mixer == HCA:
        out.append(Tensor("compressor kv and gate", "core_attn", e * 2 * d, matmul=mm))
        mm += 2
    if flash:
        out.append(Tensor("log-sum-exp (fp32)", "core_attn", 4.0 * a.heads))
    else:
        out.append(Tensor("softmax", "core_attn", e * a.heads, quadratic=True))
    out.append(Tensor("context (output projection input)", "core_attn", e * queries))
    out.append(Tensor("o_a output", "attn_out", e * c.o_groups * c.o_lora_rank, matmul=mm))
    out.append(Tensor("output projection output", "attn_out", e * a.hidden, matmul=mm + 1))
    return out, mm + 2


def _hyper_connection(a: ModelArchitecture, module: Module, name: str) -> list[Tensor]:
    """One of DeepSeek-V4's hyper-connections (DeepseekV4HyperConnection): the n input streams its mapping and its
    collapse read, and the fp32 weights it computes from them (params.hyper_mixes: (2 + n) n pre, post and mixing
    ones; Hy4's 2n; Qwen4-Exp's gate rank and n injections)."""
    n = a.residual_streams
    return [
        Tensor(f"{name} hyper-connection input streams", module, ACT_BYTES * n * a.hidden),
        Tensor(f"{name} hyper-connection weights (fp32)", module, 4.0 * hyper_mixes(a)),
    ]


def _mamba(a: ModelArchitecture, first_mm: int, kernels: Kernels) -> tuple[list[Tensor], int]:
    """A Mamba mixer as mamba_ssm's fused functions keep it (the kernels Megatron's and transformers' CUDA paths
    call), recomputing the convolution and the scan in the backward:
    - Mamba-2, MambaSplitConv1dScanCombinedFn (ops/triton/ssd_combined.py, v2.2.6.post3 797-836): in_proj's output
      zxbcdt (2I + 2GN + H) and the scan's output before the norm (I). transformers' training path hands it the
      gated norm and out_proj too (modeling_mamba2.py, modeling_nemotron_h.py: rmsnorm_weight, outproj_weight), and
      their inputs are recomputed; Megatron-Core's mixer does not (megatron/core/ssm/mamba_mixer.py 690-713 at
      core_v0.17.0), so under its kernels ("fused") the gated norm keeps its input (I) and one fp32 rstd per group,
      and out_proj its input (I) (docs/sources/mamba-hybrid-layouts.md, section 3);
    - Mamba-1, MambaInnerFn at checkpoint_lvl 1 (ops/selective_scan_interface.py): in_proj's output xz (2I),
      x_proj's output (R + 2N), contiguous copies of B and C (2N) and the scan's output (I)."""
    m, e = a.ssm, ACT_BYTES
    assert m is not None
    if m.version == 2:
        assert m.heads is not None
        in_proj = 2 * m.inner + 2 * m.groups * m.state + m.heads
        out = [
            Tensor("SSM in_proj output (z, x, B, C, dt)", "qkv", e * in_proj, matmul=first_mm),
            Tensor("SSM scan output", "core_attn", e * m.inner),
        ]
        if kernels == "fused":  # Megatron-Core: the gated norm and out_proj outside the fused function
            out += [
                Tensor("SSM gated-norm input", "core_attn", e * m.inner),
                Tensor("SSM gated-norm rstd (fp32)", "core_attn", 4.0 * m.groups),
                Tensor("SSM out_proj input", "core_attn", e * m.inner),
            ]
        mm = first_mm + 1
    else:
        assert m.dt_rank is not None
        out = [
            Tensor("SSM in_proj output (x, z)", "qkv", e * 2 * m.inner, matmul=first_mm),
            Tensor("SSM x_proj output (dt, B, C)", "qkv", e * (m.dt_rank + 2 * m.state), matmul=first_mm + 1),
            Tensor("SSM B and C copies", "core_attn", e * 2 * m.state),
            Tensor("SSM scan output", "core_attn", e * m.inner),
        ]
        mm = first_mm + 3  # x_proj, dt_proj
    out.append(Tensor("SSM out_proj output", "attn_out", e * a.hidden, saved=False, matmul=mm))
    return out, mm + 1


def _short_conv(a: ModelArchitecture, first_mm: int) -> tuple[list[Tensor], int]:
    """LFM2's short convolution as Lfm2ShortConv's slow path runs it: in_proj's output (B, C, x: 3h), the gated
    input B x (h), the convolution's output (h) and out_proj's input C times it (h)."""
    e, h = ACT_BYTES, a.hidden
    out = [
        Tensor("short conv in_proj output", "qkv", e * 3 * h, matmul=first_mm),
        Tensor("short conv gated input", "core_attn", e * h),
        Tensor("short conv output", "core_attn", e * h),
        Tensor("short conv gated output", "core_attn", e * h),
        Tensor("short conv out_proj output", "attn_out", e * h, saved=False, matmul=first_mm + 1),
    ]
    return out, first_mm + 2


def _rglru(a: ModelArchitecture, first_mm: int, kernels: Kernels) -> tuple[list[Tensor], int]:
    """Griffin's recurrent block over w channels (RGLRUSpec) as transformers' RecurrentGemmaRecurrentBlock and
    RecurrentGemmaRglru run it, what autograd keeps (saved-tensor hooks on a bf16 block: 38 w bytes a token):
    linear_y's output (GELU's input) and, but compiled, GELU's output; linear_x's output (the convolution's input);
    the convolution's output and its contiguous copy the gates' baddbmm keeps; the two gates' sigmoids, -8 times the
    recurrence gate, a, a^2 and 1 - a^2; the gated input and its multiplier; the scan's fp32 gate and state of each
    step (_rnn_scan's Python loop: 8 w); the recurrence's output and the gated product, linear_out's input."""
    assert a.rglru is not None
    e, w = ACT_BYTES, a.rglru.width
    out = [
        Tensor("RG-LRU linear_y output", "qkv", e * w, matmul=first_mm),
        Tensor("RG-LRU linear_x output", "qkv", e * w, matmul=first_mm + 1),
        Tensor("RG-LRU convolution output and the gates' copy of it", "core_attn", 2 * e * w),
        Tensor("RG-LRU input and recurrence gates", "core_attn", 2 * e * w),
        Tensor("RG-LRU decay: -8 x gate, a, a^2 and 1 - a^2", "core_attn", 4 * e * w),
        Tensor("RG-LRU gated input and its multiplier", "core_attn", 2 * e * w),
        Tensor("RG-LRU scan's gates and states (fp32)", "core_attn", 8.0 * w),
        Tensor("RG-LRU recurrence output", "core_attn", e * w),
        Tensor("RG-LRU gated output", "core_attn", e * w),
        Tensor("RG-LRU linear_out output", "attn_out", e * a.hidden, saved=False, matmul=first_mm + 2),
    ]
    if kernels != "compiled":
        out.insert(1, Tensor("RG-LRU GELU output", "core_attn", e * w))
    return out, first_mm + 3


def _rwkv_time_mix(a: ModelArchitecture, first_mm: int) -> tuple[list[Tensor], int]:
    """RWKV-4's time mixing over w channels (RWKVSpec) as transformers' RwkvSelfAttention runs it with the WKV CUDA
    kernel (RwkvLinearAttention: save_for_backward keeps the key, the value and its output, in bf16 for a bf16 model):
    the time-shifted input and the three interpolations the key, value and receptance matmuls read (4h), the key
    and value, sigmoid's output, the WKV output and their product, the output matmul's input (5w). Saved-tensor
    hooks on transformers 5.25.0's bf16 block agree (resolved/rwkv-saved.json)."""
    assert a.rwkv is not None
    e, h, w = ACT_BYTES, a.hidden, a.rwkv.width
    out = [
        Tensor("RWKV time-shifted input and the key, value and receptance interpolations", "qkv", e * 4 * h),
        Tensor("RWKV key (the WKV kernel keeps it)", "qkv", e * w, matmul=first_mm),
        Tensor("RWKV value (the WKV kernel keeps it)", "qkv", e * w, matmul=first_mm + 1),
        Tensor("RWKV receptance (sigmoid's input)", "qkv", e * w, saved=False, matmul=first_mm + 2),
        Tensor("RWKV sigmoid(receptance)", "core_attn", e * w),
        Tensor("RWKV WKV output (the kernel keeps it)", "core_attn", e * w),
        Tensor("RWKV gated WKV output (the output matmul's input)", "core_attn", e * w),
        Tensor("RWKV output matmul output", "attn_out", e * h, saved=False, matmul=first_mm + 3),
    ]
    return out, first_mm + 4


def _rwkv_channel_mix(a: ModelArchitecture, mm: int) -> list[Tensor]:
    """What RWKV-4's channel mixing (RwkvFeedForward) keeps beyond a ReLU MLP's tensors (its key and value are the
    layer's MLP): the time-shifted input and the key and receptance interpolations (3h), the receptance gate's
    sigmoid output and the value's output, which the gate multiplies (2h)."""
    e, h = ACT_BYTES, a.hidden
    return [
        Tensor("RWKV channel mixing's time-shifted input and key and receptance interpolations", "mlp", e * 3 * h),
        Tensor("RWKV channel mixing's receptance (sigmoid's input)", "mlp", e * h, saved=False, matmul=mm),
        Tensor("RWKV channel mixing's sigmoid(receptance)", "mlp", e * h),
        Tensor("RWKV channel mixing's value output (the gate multiplies it)", "mlp", e * h),
    ]


def _mlstm(a: ModelArchitecture, first_mm: int) -> tuple[list[Tensor], int]:
    """xLSTM's mLSTM layer (MLSTMSpec) as transformers' xLSTMLayer runs it in training through its native chunkwise
    kernel (mlstm_chunkwise_native_autograd, the kernel it has without the xlstm package), by what saved-tensor hooks
    on its bf16 layer find at twelve shapes (resolved/xlstm-saved.json; within 0.5% of each): q, k and v; the
    kernel's further copies of them (5 q/k-sized, 3 v-sized); every chunk's starting memory, twice (H d_qk d_v / C
    each); three C x C decay and score matrices per head; the gates and the per-chunk scalars (about 41 bytes a
    head, the gates' pre-activations among them); the per-head norm's input and centred input in fp32, its output,
    the output gate's sigmoid and their product, out_proj's input."""
    m = a.mlstm
    assert m is not None
    e, qk, v, heads = ACT_BYTES, m.qk_dim, m.v_dim, m.heads
    memory = heads * (qk // heads) * (v // heads) / m.chunk
    out = [
        Tensor("mLSTM q", "qkv", e * qk, matmul=first_mm),
        Tensor("mLSTM k", "qkv", e * qk, matmul=first_mm + 1),
        Tensor("mLSTM v", "qkv", e * v, matmul=first_mm + 2),
        Tensor("mLSTM output gate pre-activation", "qkv", e * v, saved=False, matmul=first_mm + 3),
        Tensor("mLSTM input gate pre-activation", "qkv", e * heads, matmul=first_mm + 4),
        Tensor("mLSTM forget gate pre-activation", "qkv", e * heads, matmul=first_mm + 5),
        Tensor("mLSTM chunkwise kernel's copies of q, k and v", "core_attn", e * (5 * qk + 3 * v)),
        Tensor("mLSTM memory at each chunk's start, twice", "core_attn", e * 2 * memory),
        Tensor("mLSTM decay and score matrices (C x C per head, three)", "core_attn", e * 3 * heads * m.chunk),
        Tensor("mLSTM gates and per-chunk scalars", "core_attn", 37.0 * heads),
        Tensor("mLSTM head norm input and centred input (fp32)", "core_attn", 8.0 * v),
        Tensor("mLSTM head norm output", "core_attn", e * v),
        Tensor("mLSTM output gate (sigmoid)", "core_attn", e * v),
        Tensor("mLSTM gated output (out_proj's input)", "core_attn", e * v),
        Tensor("mLSTM out_proj output", "attn_out", e * a.hidden, saved=False, matmul=first_mm + 6),
    ]
    return out, first_mm + 7


def _deltanet(a: ModelArchitecture, first_mm: int) -> tuple[list[Tensor], int]:
    """A gated DeltaNet mixer as transformers' Qwen3NextGatedDeltaNet runs it with fla's chunk_gated_delta_rule:
    the input projections' outputs (q, k, v and z: 2K + 2V; b and a: 2 per value head), the convolution's output
    (2K + V) the kernel keeps, the fp32 decay (per value head), the recurrence's output (V) and the gated norm's
    output, out_proj's input (V); with what fla's kernels save beside them (_gated_delta_rule_saves)."""
    d, e = a.deltanet, ACT_BYTES
    assert d is not None
    keys, values = d.key_heads * d.key_dim, d.value_heads * d.value_dim
    if d.form == "kda":
        return _kda(a, first_mm)
    if d.form == "lightning":
        return _lightning(a, first_mm)
    if d.form == "jet":
        return _jet(a, first_mm)
    out = [
        Tensor("DeltaNet in_proj_qkvz output", "qkv", e * (2 * keys + 2 * values), matmul=first_mm),
        Tensor("DeltaNet in_proj_ba output", "qkv", e * 2 * d.value_heads, matmul=first_mm + 1),
        Tensor("DeltaNet convolution output (q, k, v)", "core_attn", e * (2 * keys + values)),
        *_gated_delta_rule_saves(d, "DeltaNet"),
        Tensor("DeltaNet out_proj output", "attn_out", e * a.hidden, saved=False, matmul=first_mm + 2),
    ]
    return out, first_mm + 3


def _gated_delta_rule_saves(d: DeltaNetSpec, label: str) -> list[Tensor]:
    """What fla's chunk_gated_delta_rule and the gated norm after it keep of a gated-DeltaNet mixer, past its
    q, k and v (ChunkGatedDeltaRuleFunction.forward's save_for_backward under use_qk_l2norm_in_kernel): the fp32
    decay (a value a value head), the fp32 rstd of each query and key head and FusedRMSNormGated's of each value
    head, the chunk's triangular solve A (`chunk` a value head, in k's dtype), the recurrence's output and the gated
    norm's (V each)."""
    e, values = ACT_BYTES, d.value_heads * d.value_dim
    return [
        Tensor(f"{label} decay (fp32)", "core_attn", 4.0 * d.value_heads),
        Tensor(f"{label} q, k rstd and the gated norm's (fp32)", "core_attn", 4.0 * (2 * d.key_heads + d.value_heads)),
        Tensor(f"{label} chunk solve A", "core_attn", e * d.chunk * d.value_heads),
        Tensor(f"{label} recurrence output", "core_attn", e * values),
        Tensor(f"{label} gated norm output", "core_attn", e * values),
    ]


def _kda(a: ModelArchitecture, first_mm: int) -> tuple[list[Tensor], int]:
    """Kimi Delta Attention (KimiLinearDeltaAttention, transformers 5.24.0) with fla's chunk kernel, as gated
    DeltaNet's tensors (_deltanet): its q, k and v projections, the gates' low-rank inputs and outputs (forget and
    output: head_dim then heads x head_dim each; beta per head), the convolution's output, the fp32 decay (per
    channel, where gated DeltaNet's is per head), the recurrence's and the gated norm's outputs."""
    d, e = a.deltanet, ACT_BYTES
    assert d is not None
    width, head = d.value_heads * d.value_dim, d.value_dim
    low_rank = 0 if d.full_rank_gates else 2 * head  # Ling's gates have no low-rank inputs to keep
    out = [
        Tensor("KDA q, k, v projections", "qkv", e * 3 * width, matmul=first_mm),
        Tensor(
            "KDA forget, beta and output gates", "qkv", e * (low_rank + 2 * width + d.value_heads), matmul=first_mm + 3
        ),
        Tensor("KDA convolution output (q, k, v)", "core_attn", e * 3 * width),
        Tensor("KDA decay (fp32)", "core_attn", 4.0 * width),
        Tensor("KDA recurrence output", "core_attn", e * width),
        Tensor("KDA gated norm output", "core_attn", e * width),
        Tensor("KDA o_proj output", "attn_out", e * a.hidden, saved=False, matmul=first_mm + 8),
    ]
    return out, first_mm + 9


def _jet(a: ModelArchitecture, first_mm: int) -> tuple[list[Tensor], int]:
    """A JetBlock (NVlabs/Jet-Nemotron jet_block.py, dynamic_conv.py at 94cbd124) with fla's chunk_gated_delta_rule,
    as gated DeltaNet's tensors (_deltanet): q_proj's and k_proj's outputs, which F.silu keeps, and their SiLU, which
    the recurrence reads; v_proj's output, the convolution's input; the kernel generator's hidden layer (w1's output
    and its SiLU, V / r each) and the kernels it makes (V x conv_kernel), which the convolution reads; the
    convolution's output before and after the SiLU DynamicShortConvolution applies to it (V each); beta, b's sigmoid,
    and the softplus of a + dt_bias in fp32 (its input and output: a value per head each), b's and a's projections
    themselves not kept; g_proj's output (V); and what fla's kernels keep (_gated_delta_rule_saves), the normalised q
    and k among them (the SiLU outputs' size, which they stand for)."""
    d, e = a.deltanet, ACT_BYTES
    assert d is not None and d.generator_reduction is not None
    keys, values = d.key_heads * d.key_dim, d.value_heads * d.value_dim
    generator = values // d.generator_reduction
    out = [
        Tensor("JetBlock q projection", "qkv", e * keys, matmul=first_mm),
        Tensor("JetBlock k projection", "qkv", e * keys, matmul=first_mm + 1),
        Tensor("JetBlock v projection", "qkv", e * values, matmul=first_mm + 2),
        Tensor("JetBlock kernel generator w1 output", "qkv", e * generator, matmul=first_mm + 3),
        Tensor("JetBlock kernel generator SiLU", "qkv", e * generator),
        Tensor("JetBlock generated kernels", "qkv", e * values * d.conv_kernel, matmul=first_mm + 4),
        Tensor("JetBlock b projection", "qkv", e * d.value_heads, saved=False, matmul=first_mm + 5),
        Tensor("JetBlock a projection", "qkv", e * d.value_heads, saved=False, matmul=first_mm + 6),
        Tensor("JetBlock beta (sigmoid of b)", "core_attn", e * d.value_heads),
        Tensor("JetBlock softplus input and output (fp32)", "core_attn", 2 * 4.0 * d.value_heads),
        Tensor("JetBlock q, k (SiLU)", "core_attn", e * 2 * keys),
        Tensor("JetBlock convolution output (before its SiLU)", "core_attn", e * values),
        Tensor("JetBlock convolution output (v, after its SiLU)", "core_attn", e * values),
        Tensor("JetBlock g_proj output", "qkv", e * values, matmul=first_mm + 7),
        *_gated_delta_rule_saves(d, "JetBlock"),
        Tensor("JetBlock o_proj output", "attn_out", e * a.hidden, saved=False, matmul=first_mm + 8),
    ]
    return out, first_mm + 9


def _lightning(a: ModelArchitecture, first_mm: int) -> tuple[list[Tensor], int]:
    """Lightning attention (MiniMaxLightningAttention, transformers 5.24.0) with a blockwise kernel, as gated
    DeltaNet's tensors (_deltanet): qkv_proj's output and its SiLU (the q, k and v the recurrence reads), the
    recurrence's output, the norm's output, output_gate's output and the gated product out_proj reads."""
    d, e = a.deltanet, ACT_BYTES
    assert d is not None
    width = d.value_heads * d.value_dim
    out = [
        Tensor("lightning qkv_proj output", "qkv", e * 3 * width, matmul=first_mm),
        Tensor("lightning output_gate output", "qkv", e * width, matmul=first_mm + 1),
        Tensor("lightning q, k, v (SiLU)", "core_attn", e * 3 * width),
        Tensor("lightning recurrence output", "core_attn", e * width),
        Tensor("lightning norm output", "core_attn", e * width),
        Tensor("lightning gated output (out_proj input)", "core_attn", e * width),
        Tensor("lightning out_proj output", "attn_out", e * a.hidden, saved=False, matmul=first_mm + 2),
    ]
    return out, first_mm + 3


def _altup(a: ModelArchitecture, kernels: Kernels) -> list[Tensor]:
    """What Gemma 3n's AltUp and LAuReL keep around one layer (Gemma3nTextDecoderLayer.forward, Gemma3nTextAltUp,
    modeling_gemma3n.py, transformers 5.25.0): predict's router norm input and router input; the predicted copies
    but the active one, whose storage the attention norm's input (a view of the active copy) keeps alive unless an
    eager norm keeps its own fp32 cast instead; LAuReL's rank-r projection and its norm's input; correct's router
    norm input, router input and innovation (repeated per copy); and the scaled output's input. The router's n-wide
    tensors and the copies' n x n coefficients are left out (n = 4 against a hidden of thousands)."""
    u, e, h = a.altup, ACT_BYTES, a.hidden
    assert u is not None
    predicted = [] if kernels == "eager" else [Tensor("AltUp predicted copies but the active one", "input",
                                                      e * (u.inputs - 1) * h)]  # fmt: skip
    return [
        _norm_input(a, kernels, "AltUp router norm (predict)", "input", h),
        Tensor("AltUp router input (predict)", "input", e * h),
        *predicted,
        Tensor("LAuReL projection (rank r)", "qkv", e * u.laurel_rank),
        _norm_input(a, kernels, "LAuReL norm", "qkv", h),
        _norm_input(a, kernels, "AltUp router norm (correct)", "mlp", h),
        Tensor("AltUp router input (correct)", "mlp", e * h),
        Tensor("AltUp innovation (one per copy)", "mlp", e * u.inputs * h),
        Tensor("AltUp output scale's input", "mlp", e * h),
    ]


def _per_layer_input(a: ModelArchitecture, kernels: Kernels, first_mm: int) -> list[Tensor]:
    """Gemma 4's per-layer input after the MLP (PerLayerInputSpec; Gemma4TextDecoderLayer.forward, transformers
    5.25.0): the layer's slice of the per-layer inputs and its share of their projection's norm input, the gate's
    input (the residual after the MLP), its output, the GELU's output and its product with the slice (what
    torch.compile recomputes), and the projection's output, which its norm keeps."""
    p, e, h = a.per_layer_input, ACT_BYTES, a.hidden
    assert p is not None
    norm = norm_bytes(a, kernels)
    out = [
        Tensor("per-layer input (this layer's slice)", "input", e * p.width),
        _norm_input(a, kernels, "per-layer projection norm (this layer's share)", "input", p.width),
        Tensor("per-layer gate input", "input", e * h),
        Tensor("per-layer gate output", "mlp", e * p.width, matmul=first_mm),
    ]
    if kernels != "compiled":
        out += [Tensor(f"per-layer {name}", "mlp", e * p.width) for name in ("GELU output", "gated product")]
    return [*out, Tensor("per-layer projection output (its norm's input)", "mlp", norm * h, matmul=first_mm + 1)]


def routed_copies(moe: MoESpec, kernels: Kernels) -> int:
    """The copies of a token the routed experts compute and keep: its top-k, or under eager kernels (Hugging Face's
    code) every expert where transformers' MoE runs them all (MoESpec.every_expert: Llama4TextMoe)."""
    return moe.experts if moe.every_expert and kernels == "eager" else moe.active


def eager_gate_clamp(a: ModelArchitecture, kernels: Kernels, routed: bool) -> EagerGateClamp | None:
    """The clamp a gated MLP runs in eager PyTorch (a routed expert's, or a dense or shared MLP's), if any."""
    clamp = EAGER_GATE_CLAMPS[a.gate_clamp] if kernels == "eager" and a.gate_clamp and a.gated_mlp else None
    return clamp if clamp is not None and (routed or not clamp.routed_only) else None


def _mlp(a: ModelArchitecture, width: int, kernels: Kernels, first_mm: int, module: Module, label: str) -> list[Tensor]:
    """One MLP's tensors: the matmul outputs, then the element-wise ones torch.compile recomputes."""
    e = ACT_BYTES
    # A routed expert's activation (and its product with the gate) is recompute_modules moe_act's: TEGroupedMLP runs
    # it under CheckpointWithoutOutput and drops its output, fc2's input (megatron/core/transformer/moe/experts.py).
    act: Module = "moe_act" if module == "moe" else module
    # A fused kernel, and eager PyTorch's for the model's named activation: what it keeps of its input and beyond
    eager = EAGER_ACTIVATIONS[a.activation] if kernels == "eager" and a.activation else FUSED_ACTIVATION
    keeps_input, own = eager.keeps_input, eager.kept_bytes
    clamp = eager_gate_clamp(a, kernels, routed=module == "moe")
    if clamp is not None:  # the gate's clamp keeps the gate's output, whatever the activation after it keeps
        keeps_input, own = True, own + clamp.kept_bytes
    if a.gated_mlp:
        out = [
            Tensor(f"{label} gate output", module, e * width, saved=keeps_input, matmul=first_mm),
            Tensor(f"{label} up output", module, e * width, matmul=first_mm + 1),
        ]
        if kernels == "eager":  # silu/gelu keeps its input, the product both factors (Megatron's fused bias-swiglu
            # recomputes the activation: megatron/core/fusions/fused_bias_swiglu.py)
            out.append(Tensor(f"{label} activation output", act, e * width))
        if kernels != "compiled":
            out.append(Tensor(f"{label} gated product", act, e * width))
        down = first_mm + 2
    else:
        out = [Tensor(f"{label} first matmul output", module, e * width, saved=keeps_input, matmul=first_mm)]
        if kernels != "compiled":
            out.append(Tensor(f"{label} activation output", act, e * width))
        down = first_mm + 1
    kept_by = "clamped gate" if clamp is not None else a.activation
    for i in range(math.ceil(own / e)):  # each of its own tensors as wide as the MLP (a bool mask narrower)
        out.append(Tensor(f"{label} {kept_by}'s intermediate {i + 1} (eager)", act, min(e, own - e * i) * width))
    if a.mlp_norm:  # a norm over the intermediate before the down projection keeps its input (Kosmos-2, BitNet)
        out.append(_norm_input(a, kernels, f"{label} intermediate norm", act, width))
    out.append(Tensor(f"{label} down output", module, e * a.hidden, saved=False, matmul=down, row_parallel=True))
    return out


def layer_tensors(
    a: ModelArchitecture,
    moe_layer: bool,
    flash: bool = True,
    kernels: Kernels = "fused",
    mixer: str = "attention",
    mlp: bool = True,
    ffn: int = 0,
    autocast: bool = False,
    repeat_kv: bool = True,
    softmax_fp32: bool = False,
) -> LayerTensors:
    """The tensors of one layer's forward for one token (korthikanti et al. 2022 section 4, extended as the module
    docstring says), in forward order, with their Megatron module and matmul position. A hybrid's layer has its
    own mixer (`mixer`: Mamba, gated DeltaNet, attention beside Mamba, or none) and may have no MLP; a dense MLP is
    `ffn` wide (ModelArchitecture.layer_kind), else as wide as its mixer's (dense_ffn). `autocast`: the forward runs
    under torch.autocast on fp32 weights: the residual stream is fp32 (the embedding's output, and fp32 + 16-bit
    sums), which the block's checkpoint keeps and, eager, the pre-norms (_norm; compiled, what the partitioner keeps
    of them is not measured), and eager attention's softmax is fp32. `repeat_kv`: eager attention copies grouped K
    and V out to every query head (off: reads_grouped_kv says where the kernel reads them as they are).
    `softmax_fp32`: without flash, the fused kernels' softmax runs unfused in fp32 (_unfused_fp32_scores)."""
    # Megatron-Core's Transformer Engine spec (gpt_layer_specs.py) fuses a norm into the matmul after it, where its
    # "layernorm" recompute (transformer_layer.py) finds IdentityOp and recomputes nothing: attention's into linear_qkv
    # but MLA's (a norm of its own), a dense MLP's into linear_fc1 but an MoE layer's (the router reads it).
    if mixer == "cross":  # a text-only batch skips Mllama's cross-attention layer whole (MllamaTextModel.forward)
        return LayerTensors((), kernels, 0)
    fused = kernels == "fused" and mixer == "attention"
    attention_norm: Module | None = "qkv" if fused and a.mla is None else None
    mlp_norm: Module | None = "mlp" if fused and not (moe_layer and a.moe is not None) else None
    streams = a.hyper_connected
    tensors = _hyper_connection(a, "input", "attention") if streams else []
    cast = autocast and kernels == "eager"
    # one norm per block (GPT-J, Falcon): the MLP's readers read the attention norm's output too
    readers = _attention_readers(a, mixer) + (_mlp_readers(a, moe_layer) if mlp and a.layer_norms < 2 else 0)
    tensors += _norm(a, kernels, "attention norm", attention_norm, readers if cast else 0) if mixer != "none" else []
    mm = 1
    if mixer in (SHARED_BLOCK, REUSED_BLOCK):
        shared, mm = _shared_block(a, flash, kernels, mm, autocast, repeat_kv, softmax_fp32)
        tensors += shared
    elif "attention" in mixer and a.compressed_attention is not None:
        attention, mm = _compressed_attention(a, mixer, flash, mm)
        tensors += attention
    elif "attention" in mixer:
        indexer = a.indexer  # a kind of layer none of the indexer's layers is (dots3's sliding ones) runs none
        indexed = indexer is None or not indexer.layers or any(a.mixer(layer) == mixer for layer in indexer.layers)
        view = a.attention_of(mixer)
        attention, mm = _attention(
            view, flash, kernels, mm, a.computes_kv(mixer), indexed, autocast, repeat_kv, softmax_fp32
        )
        tensors += attention
        if a.layer_norms == 3:  # a norm over the attention's output before its projection keeps its input
            tensors.append(_norm_input(a, kernels, "attention output norm", "attn_out", a.heads * a.d_value))
        if a.attention_experts is not None and a.moe is not None:
            tensors += _attention_experts(a)
        if a.sconv_kernel is not None:
            tensors += _attention_convolutions(a, mixer, kernels)
        g = a.global_attention
        if g is not None and g.input_norms > 1 and mixer == "global attention":  # Inkling 2's k and v input norms
            width = (g.input_norms - 1) * a.hidden  # their inputs, and their outputs: k_proj's and v_proj's inputs
            tensors.append(_norm_input(a, kernels, "key and value input norms", "input", width))
            tensors.append(Tensor("key and value input norms output", "layernorm", ACT_BYTES * width))
    if "mamba" in mixer:
        ssm, mm = _mamba(a, mm, kernels)
        tensors += ssm
    if mixer == "conv":
        conv, mm = _short_conv(a, mm)
        tensors += conv
    if mixer == "rglru":
        recurrent, mm = _rglru(a, mm, kernels)
        tensors += recurrent
    if mixer == "rwkv":
        time_mix, mm = _rwkv_time_mix(a, mm)
        tensors += time_mix
    if mixer == "mlstm":
        mlstm, mm = _mlstm(a, mm)
        tensors += mlstm
    if mixer == "deltanet":
        delta, mm = _deltanet(a, mm)
        tensors += delta
    if not mlp:
        # a block with neither (Nemotron-NAS's no_op attention and MLP) returns its input, the next block's input
        kept = 0 if mixer == "none" else a.hidden * a.residual_streams
        return LayerTensors(tuple(tensors), kernels, kept)
    if a.layer_norms >= 4:
        tensors.append(_post_norm(a, kernels, "post-attention norm"))
    if streams:
        tensors += _hyper_connection(a, "attn_out", "MLP")
    if a.layer_norms >= 2 or mixer == "none":  # one norm per block (GPT-J, Falcon): attention and MLP share it
        norm = _norm(a, kernels, "MLP norm", mlp_norm, _mlp_readers(a, moe_layer) if cast else 0)
        # side by side, its input is the layer's, which the attention norm keeps
        tensors += norm[1:] if a.parallel_residual and mixer != "none" else norm
    e, h = ACT_BYTES, a.hidden
    if moe_layer and a.moe is not None:
        moe = a.moe
        tensors.append(Tensor("router logits (fp32)", "router", 4.0 * moe.router_rows(), matmul=mm))
        mm += 1
        if moe.router_mlp is not None:  # ZAYA's router: down_proj's, the norm's, fc1's and fc2's outputs, GELUs';
            # eager, also the router state it scales, the norm's fp32 copy and normed product (a helper's hooks: 9)
            widths = 9 if kernels == "eager" else 6
            tensors.append(Tensor("router MLP's intermediates", "router", widths * e * moe.router_mlp))
        for i in range(moe.shared):  # an MLP of the MoE layer: "shared_experts" recomputes it, "mlp" does not
            part = _mlp(a, moe.shared_width, kernels, mm, "shared_experts", f"shared expert {i + 1}")
            if moe.expert_norms:  # Ergo's shared_experts.norm keeps the expert's output, its input
                part.append(_norm_input(a, kernels, f"shared expert {i + 1} output norm", "shared_experts", h))
            tensors += part
            mm += sum(1 for t in part if t.matmul)
        # Routed experts run as grouped GEMMs (not aten.mm); per routed copy of a token: the dispatched input, the
        # expert's MLP and its weighted output, each one tensor over every copy of the rank's tokens (grouped_mm's and
        # TEGroupedMLP's rows; the first grouped matmul's output holds the gate and up halves together)
        routed_mlp = _mlp(a, moe.ffn, kernels, 0, "moe", "routed expert")
        fc1 = ("routed expert gate output", "routed expert up output", "routed expert first matmul output")
        io = moe.expert_io(h)  # a dispatched copy is latent-wide under LatentMoE
        per_copy: list[tuple[str, Module, float]] = [("dispatched inputs", "moe", e * io)]
        first = sum(t.bytes_per_token for t in routed_mlp if t.saved and t.name in fc1)
        per_copy.append(("first matmul outputs", "moe", first))
        per_copy += [(t.name.removeprefix("routed expert "), t.module, t.bytes_per_token)
                     for t in routed_mlp if t.saved and t.name not in fc1]  # fmt: skip
        if moe.expert_norms:  # Ergo's post_expert_norm over each routed copy's output keeps that output; eager, also
            per_copy.append(("output norms' inputs", "moe", _norm_input(a, kernels, "", "moe", io).bytes_per_token))
            if kernels == "eager":  # the copy's fp32 weight row it gathers (weight[ids])
                per_copy.append(("output norms' fp32 weights", "moe", 4.0 * io))
        per_copy.append(("weighted outputs", "moe", e * io))
        copies = routed_copies(moe, kernels)
        which = f"top-{moe.active}" if copies == moe.active else f"all {copies}"
        tensors += [Tensor(f"routed experts' {name} ({which})", part, copies * size) for name, part, size in per_copy]
        if moe.latent:  # the combined latent output, fc2_latent_proj's input
            tensors.append(Tensor("latent projection input", "moe", e * moe.latent))
        if moe.output_norm:  # its input, the experts' and shared experts' sum, which nothing else keeps
            tensors.append(_post_norm(a, kernels, "MoE output norm"))
    else:
        part = _mlp(a, ffn or a.dense_ffn(mixer), kernels, mm, "mlp", "MLP")
        tensors += part
        mm += sum(1 for t in part if t.matmul)
        if mixer == "rwkv":
            tensors += _rwkv_channel_mix(a, mm)
            mm += 1
    if a.residual_scaling:  # ZAYA: each scaling keeps its branch; eager, also its residual plus bias in fp32, where
        # fused kernels keep that sum's input, the fp32 mid-layer residual (2 bytes beyond a 16-bit copy)
        tensors.append(Tensor("attention and MLP outputs, their scales' inputs", "attn_out", 2 * e * h))
        if kernels == "eager":
            tensors.append(Tensor("residuals plus their biases (fp32)", "attn_out", 2 * 4.0 * h))
        else:
            tensors.append(Tensor("mid-layer residual's fp32 half", "attn_out", e * h))
    if a.sconv_kernel is not None:  # Inkling's mlp_sconv keeps its fp32 input, the MLP's output
        module: Module = "moe" if moe_layer and a.moe is not None else "mlp"
        tensors.append(Tensor("MLP output convolution's input (fp32)", module, 4.0 * h))
    if a.layer_norms >= 4:
        tensors.append(_post_norm(a, kernels, "post-MLP norm"))
    if a.altup is not None:
        tensors += _altup(a, kernels)
    if a.per_layer_input is not None:
        tensors += _per_layer_input(a, kernels, mm)
    if streams:  # the expansion's post weights take their gradient from the sub-layer's output
        tensors.append(Tensor("MLP output (its hyper-connection expands it)", "mlp", e * h))
    if a.dropout > 0:
        tensors.append(Tensor("MLP dropout mask", "mlp", 1.0 * h))
    # a block's inputs, which every policy keeps: its residual streams, and Gemma 4's per-layer input slice with its
    # share of their norm's input
    copies = a.altup.inputs if a.altup is not None else a.residual_streams  # Gemma 3n's layer takes every AltUp copy
    if autocast:  # the residual stream is fp32 under torch.autocast, whatever the kernels: twice a 16-bit copy's bytes
        copies *= 2
    elif a.residual_scaling:  # so is ZAYA's
        copies += 1
    inputs = a.hidden * copies + (2 * a.per_layer_input.width if a.per_layer_input is not None else 0)
    return LayerTensors(tuple(tensors), kernels, inputs)


def kv_cache_bytes(a: ModelArchitecture, seq_len: int, batch: int, dtype_bytes: int = 2) -> float:
    """Keys and values of every attention layer for `batch` sequences of `seq_len` tokens (MLA caches its latent;
    each layer its own KV heads and head_dim; a sliding-window or chunked layer at most its window or chunk:
    cached_keys; a kv-shared layer none, it reads an earlier layer's, as a rerun layer reads its holder's under
    reused_layers_read_cache), and each recurrent layer's state, whatever the
    context (recurrent_state_bytes)."""
    return _kv_bytes(a, seq_len, batch, dtype_bytes, shared=False)


def kv_read_bytes(a: ModelArchitecture, seq_len: int, batch: int, dtype_bytes: int = 2) -> float:
    """What one decode step reads of the cache: kv_cache_bytes, and again the part a kv-shared layer attends over,
    its producer's whole cached keys and values (modeling_gemma4.py: shared_kv_states)."""
    return _kv_bytes(a, seq_len, batch, dtype_bytes, shared=True)


def _kv_bytes(a: ModelArchitecture, seq_len: int, batch: int, dtype_bytes: int, shared: bool) -> float:
    if a.compressed_attention is not None:
        return _compressed_cache_bytes(a, seq_len, batch, dtype_bytes)
    kv = 0.0
    # Dory's last_loop: a rerun layer keeps no cache, but reads its holder's whole (DoryPastReader), so a decode step
    # reads as much as under per_loop
    kinds = a.held_attention_kinds if a.reused_layers_read_cache and not shared else a.attention_kinds
    for mixer, local, count in kinds:
        if not shared and not a.computes_kv(mixer):  # it holds no cache: it reads an earlier layer's
            continue
        view = a.attention_of(mixer)
        if view.mla is not None:  # the latent, and its rotary part where the layer has one
            per_token = view.mla.kv_lora_rank + view.mla.qk_rope_head_dim
        else:
            per_token = view.n_kv_heads * (view.d_head + view.d_value)
        kv += count * per_token * dtype_bytes * cached_keys(seq_len, local) * batch
    if a.indexer is not None:  # its keys too, in fp8 (DeepSeek-V3.2-Exp inference/model.py Indexer.k_cache); M3's
        # in the model's dtype (MiniMaxM3VLSparseCacheLayer.update_index); GLM-5.3's key, its pool-gate scores and a
        # validity flag in the model's dtype (Glm5NextTextIndexer's packed_states)
        i = a.indexer
        entry = 2 * i.head_dim + 1 if i.form == "pooled" else i.head_dim
        kv += entry * a.indexer_layers * seq_len * batch * (1 if i.form == "dsa" else dtype_bytes)
    return float(kv + recurrent_state_bytes(a, dtype_bytes) * batch)


def _compressed_cache_bytes(a: ModelArchitecture, seq_len: int, batch: int, dtype_bytes: int) -> float:
    """DeepSeek-V4's cache (DeepseekV4HCACache, DeepseekV4CSACache): every layer's window of its last keys, one
    head_dim entry each (the key serves as the value), and a compressed layer's entries, one per closed window
    (attention_keys.cached_entries), a sparse layer's indexer keys of index_head_dim beside them."""
    c = a.compressed_attention
    assert c is not None
    per_sequence = 0.0
    for mixer, local, count in a.attention_kinds:
        entries = float(cached_keys(seq_len, local)) * a.d_head
        if mixer == CSA:
            entries += cached_entries(seq_len, c.csa_rate) * (a.d_head + c.index_head_dim)
        elif mixer == HCA:
            entries += cached_entries(seq_len, c.hca_rate) * a.d_head
        per_sequence += count * entries
    return per_sequence * dtype_bytes * batch


def recurrent_state_bytes(a: ModelArchitecture, dtype_bytes: int = 2) -> float:
    """One sequence's recurrent state over all layers, as transformers 5.25's caches hold it: a Mamba layer's SSM state
    (inner x N) in fp32 and convolution window (its conv channels x kernel) in the model's dtype, a gated DeltaNet
    or KDA layer's state (value heads x d_k x d_v) in fp32 and window (2K + V channels) in the model's dtype (a
    JetBlock's window of its v channels alone: JetNemotronCache's conv_state, [N, V, kernel])
    (measured: a bf16 forward of Mamba, Mamba-2, Jamba, Nemotron-H, Falcon-H1, Bamba, Granite 4 hybrid and
    Qwen3-Next keeps every recurrent state in fp32 and every window in bf16), lightning attention's state in the
    model's dtype and no window (MiniMaxCache), an LFM2 short convolution's window (h channels x its kernel), a
    Griffin recurrent block's window (w channels x k - 1 steps: RecurrentGemmaRecurrentBlock's conv1d_state) and its
    fp32 recurrent state, an RWKV-4 layer's previous token for each of its two token shifts (h each) and its WKV
    state, numerator, denominator and running maximum in fp32 (w each: RwkvModel's five state tensors), an mLSTM
    layer's memory, normaliser and stabiliser per head (xLSTMCache, in the embeddings' dtype); a Qwen4-Exp n-gram
    layer's convolution window (n x hidden channels, (kernel - 1) x dilation steps) and its last n-gram context ids
    (ngram_size - 1 int64s); Inkling's four short convolutions' windows in every layer (the keys', the values' and
    twice the hidden state's channels x sconv_kernel steps, in fp32: measured, as above); ZAYA's convolution window
    over the queries and keys (cca_time0 - 1 + cca_time1 - 1 steps) and its last token's delayed value half, in the
    model's dtype (measured)."""
    total = 0.0
    for i in range(a.layers):
        mixer, m, d = a.mixer(i), a.ssm, a.deltanet
        if "mamba" in mixer and m is not None:
            conv = m.inner + (2 * m.groups * m.state if m.version == 2 else 0)
            total += m.inner * m.state * 4.0 / dtype_bytes + conv * m.conv_kernel
        if mixer == "deltanet" and d is not None:
            fp32 = d.form != "lightning"
            state = d.value_heads * d.key_dim * d.value_dim * (4.0 / dtype_bytes if fp32 else 1.0)
            total += state + d.conv_channels * d.conv_kernel
        if mixer == "conv" and a.short_conv is not None:  # the convolution's window of its h channels
            total += a.hidden * a.short_conv.kernel
        if mixer == "rglru" and a.rglru is not None:  # the window's k - 1 steps, and the fp32 recurrent state
            total += a.rglru.width * (a.rglru.conv_kernel - 1) + a.rglru.width * 4.0 / dtype_bytes
        if mixer == "rwkv" and a.rwkv is not None:  # the two shifts' last token, the WKV numerator, denominator, max
            total += 2 * a.hidden + 3 * a.rwkv.width * 4.0 / dtype_bytes
        if mixer == "mlstm" and a.mlstm is not None:  # per head its memory C, normaliser n and stabiliser m
            cell = a.mlstm
            d_qk, d_v = cell.qk_dim // cell.heads, cell.v_dim // cell.heads
            total += cell.heads * (d_qk * d_v + d_qk + 1)
    if a.cca is not None:  # ZAYA: the queries' and keys' window (t0 - 1 + t1 - 1 steps) and the delayed value half
        channels = (a.heads + a.n_kv_heads) * a.d_head
        total += a.attention_layers * (channels * (a.cca.depthwise + a.cca.grouped - 2) + a.n_kv_heads * a.d_value // 2)
    if a.sconv_kernel is not None:  # k_sconv, v_sconv, attn_sconv, mlp_sconv: conv states 0-3 of every layer
        for mixer, _, count in a.attention_kinds:
            view = a.attention_of(mixer)
            channels = view.n_kv_heads * (view.d_head + view.d_value) + 2 * a.hidden
            total += count * channels * a.sconv_kernel * 4.0 / dtype_bytes
    g = a.ngram_embedding
    if g is not None:  # Qwen4ExpTextPLELayer's conv state (state 1) and n-gram ids (state 2: 8-byte integers)
        window = a.residual_streams * a.hidden * (g.conv_kernel - 1) * g.dilation
        total += len(g.layers) * (window + (g.dilation - 1) * 8.0 / dtype_bytes)
    return total * dtype_bytes
