"""Activation checkpointing as frameworks run it: which of a layer's tensors (activations.layer_tensors) each policy
keeps until the backward, and what the backward re-creates (docs/sources/checkpointing.md).

- none: every tensor autograd saves.
- selective: Megatron-LM's --recompute-granularity selective (megatron/core/transformer/transformer_config.py
  @core_r0.13.0, recompute_modules, default ["core_attn"]): each listed module runs under checkpoint, so its
  internal tensors are dropped and re-created in the backward; its input and output are kept by their neighbours.
  Korthikanti et al. 2022 section 5's selective recomputation is core_attn: it drops the s^2 terms (under flash
  attention only the log-sum-exp is left to drop).
- op: torchtitan's per-op selective checkpointing (torchtitan/parallelisms/parallelize_llama.py@9dec370,
  _apply_ac_to_transformer_block, selective_ac_option "op"): each block keeps its input and the outputs of the ops
  in _save_list (aten.mm, the SDPA flash/efficient kernels, aten.max, aten.abs, reduce_scatter), except every
  second mm; the
  mm counter is created afresh for every checkpointed call (selective_checkpointing_context_fn), so every step keeps
  the 1st, 3rd, 5th... mm's output: wq, wv, w1 and w2 of a Llama block. Under torch.compile only those the
  backward reads are kept (_sac_saved).
- full: every block keeps only its input (Korthikanti section 4: 2sbh per layer); the backward re-runs one
  block's forward at a time.
`every` (--recompute-layers K) applies the policy to every K-th block only (torchtitan's selective_ac_option = K:
blocks whose running count is divisible by K, so layers // K of them) and keeps everything in the others; `block`
(--recompute-block N) to the first N (Megatron-LM's --recompute-method block: megatron/core/recompute.py at
d98e8a64dd checkpoints layer l of each model chunk's TransformerBlock while l < recompute_num_layers).
"""

from __future__ import annotations

from typing import Any, Literal

from dpcost.engine.activations import ACT_BYTES, Kernels, LayerTensors, layer_tensors, tensor_parallel_share
from dpcost.frozen import frozen
from dpcost.specs import KV_SHARED, ModelArchitecture

__all__ = [
    "DEFAULT_MODULES",
    "DROPPED_MODULES",
    "RECOMPUTE",
    "Activations",
    "Recompute",
    "activation_memory",
    "checkpointed_share",
    "keeps_local_mask",
    "kept_per_token",
    "recomputed_modules",
    "takes_policy",
]

Recompute = Literal["none", "selective", "op", "full"]
RECOMPUTE: tuple[Recompute, ...] = ("none", "selective", "op", "full")
# Megatron-LM's default --recompute-modules (transformer_config.py@core_r0.13.0); the choices dpcost prices are
# options.Plan.recompute_modules'.
DEFAULT_MODULES = frozenset({"core_attn"})
# The selective modules a layout's memory reads as a set (layout_memory.MemoryLayout.dropped_modules): a dense
# layer's MLP (transformer_layer.py recompute_mlp), the shared experts (moe_layer.py) and the norms that are modules
# of their own (CheckpointWithoutOutput: MLA's input norm, an MoE layer's pre-MLP norm). The others have fields of
# their own: moe_recompute, mla_recompute, attention_keeps_output.
DROPPED_MODULES = frozenset({"mlp", "shared_experts", "layernorm"})
# A module's output is kept by the next op even when the module is recomputed: the attention context by the output
# projection, a norm's output by the matmuls after it.
_KEPT_OUTPUTS = frozenset({"context (output projection input)"})
# recompute_modules "moe" checkpoints the MoE layer's whole forward, route, dispatch, experts and combine
# (megatron/core/transformer/moe/moe_layer.py, moe_layer_recompute): the router, the experts' activation and the
# shared experts with it.
_HOLDS = {"moe": frozenset({"moe", "router", "moe_act", "shared_experts"})}


def takes_policy(i: int, every: int = 1, block: int | None = None) -> bool:
    """Whether block i (from 0) takes the checkpointing policy: one of the first `block` (Megatron's block method),
    else every `every`-th (torchtitan's selective_ac_option)."""
    return i < block if block is not None else (i + 1) % every == 0


def checkpointed_share(layers: int, every: int = 1, block: int | None = None) -> float:
    """The share of `layers` blocks that take the policy (takes_policy): min(N, L) / L, or (L // K) / L."""
    return (min(block, layers) if block is not None else layers // every) / layers


def recomputed_modules(modules: frozenset[str]) -> frozenset[str]:
    """The module tags (activations.Module, ops.Op.module) a recompute_modules list re-runs: each module, and what its
    checkpoint holds."""
    return frozenset().union(*(_HOLDS.get(m, frozenset({m})) for m in modules))


@frozen
class Activations:
    """One micro-batch's activations on one GPU under a policy, in bytes."""

    kept: float  # every layer's kept tensors: what the backward starts with
    recompute: float  # the largest re-created set while one layer's backward runs
    gradients: float  # the largest layer's activation gradients in flight during its backward
    largest_tensor: float  # the largest single activation tensor (the allocator's fragmentation follows it)


def _sac_saved(layer: LayerTensors, seq_len: int, micro_batch: int) -> float:
    """torchtitan's per-op SAC: the outputs of the odd-numbered mm calls of the block, and under tensor parallelism
    of its reduce-scatters (_op_sac_save_list: _c10d_functional.reduce_scatter_tensor), each row-parallel output's
    slice of the sequence, as wide as the block's input. Eager SAC caches every such output for the recomputation
    (the row-parallel mm's whole, before its reduce-scatter: activations.tensor_parallel_share); under
    torch.compile the partitioner keeps a MUST_SAVE output only if the backward reads it
    (torch/_functorch/partitioners.py, _extract_fwd_bwd_modules drops saved values the backward does not use), which
    the down projection's output (read only by a residual add) is not, nor the last reduce-scatter's; every earlier
    reduce-scatter's is, as the residual sum after it, which a norm's backward reads, is recomputed from it (the
    partitioner recomputes what the policy prefers to: partitioners.py, must_recompute)."""
    compiled = layer.kernels == "compiled"
    saved = sum(t.bytes(seq_len, micro_batch) for t in layer.tensors if t.matmul % 2 == 1 and (t.saved or not compiled))
    if layer.tp == 1:
        return saved
    scatters = sum(t.row_parallel for t in layer.tensors) - compiled
    return saved + max(0, scatters) * ACT_BYTES * layer.hidden * seq_len * micro_batch


def kept_per_token(
    layer: LayerTensors,
    policy: str,
    seq_len: int,
    micro_batch: int,
    modules: frozenset[str] = DEFAULT_MODULES,
) -> float:
    """Bytes one layer keeps for its backward under `policy`."""
    s, b = seq_len, micro_batch
    block_input = ACT_BYTES * s * b * layer.hidden
    if policy == "none":
        return layer.saved_bytes(s, b)
    if policy == "selective":
        held = recomputed_modules(modules)
        dropped = sum(
            t.bytes(s, b) for t in layer.tensors if t.saved and t.module in held and t.name not in _KEPT_OUTPUTS
        )
        return layer.saved_bytes(s, b) - dropped
    if policy == "op":
        sdpa = sum(t.bytes(s, b) for t in layer.tensors if t.module == "core_attn" and not t.quadratic)
        return block_input + _sac_saved(layer, s, b) + sdpa
    if policy == "full":
        return block_input
    raise ValueError(f"recompute must be one of {RECOMPUTE}")


def shared_kv_per_token(a: ModelArchitecture, recomputed: set[int]) -> float:
    """Bytes per token of the keys and values a layer passes on to later ones (Gemma 3n's and Gemma 4's
    shared_kv_states: the last layer of each kind before the kv-shared ones, where one reads them, and in Gemma 4
    whether or not one does, stores_last_kv), where that layer is recomputed whole. Its checkpoint drops what its
    attention kept, but the later layers' checkpoints hold the dict of K/V tensors they take as an argument until
    their backward (modeling_gemma4.py / modeling_gemma3n.py, transformers 5.25.0); under any other policy the
    layer's attention keeps them anyway. K and V are each their own tensor (K after its norm and rotation, V after
    v_norm), also where the keys serve as values."""
    last: dict[tuple[str, Any], int] = {}
    read: set[int] = set()
    for i, mixer in enumerate(a.mixers):
        kind = (mixer.removeprefix(KV_SHARED), a.local_span(i))
        if a.computes_kv(mixer):
            last[kind] = i
        elif kind in last:
            read.add(last[kind])
    passed = set(last.values()) if a.stores_last_kv else read
    total = 0.0
    for i in passed & recomputed:
        view = a.attention_of(a.mixers[i])
        total += ACT_BYTES * view.n_kv_heads * (view.d_head + view.d_value)
    return total


def keeps_local_mask(a: ModelArchitecture, layer: int, seq_len: int) -> bool:
    """Whether transformers keeps a layer's attention mask with no position padded: its window or chunk is no longer
    than the sequence (masking_utils._ignore_causal_mask_sdpa: kv_length >= local_attention_size). With a mask,
    sdpa_attention_forward copies grouped K and V to every query head (repeat_kv)."""
    span = a.local_span(layer)
    return span is not None and span.size <= seq_len


def activation_memory(
    a: ModelArchitecture,
    seq_len: int,
    micro_batch: int,
    recompute: str = "none",
    flash: bool = True,
    kernels: Kernels = "fused",
    every: int = 1,
    modules: frozenset[str] = DEFAULT_MODULES,
    autocast: bool = False,
    repeat_kv: bool = True,
    softmax_fp32: bool = False,
    block: int | None = None,
    tp: int = 1,
) -> Activations:
    """Kept and re-created activations of one micro-batch, layer by layer, on one of `tp` tensor-parallel ranks as
    torchtitan's plan leaves it (activations.tensor_parallel_share; 1: no tensor or sequence parallelism);
    the policy in the layers takes_policy(i, every, block) picks, everything kept in the others;
    `autocast`: the forward runs under torch.autocast; `repeat_kv`: eager attention copies grouped K and V to every
    query head, else only a layer whose mask stays (keeps_local_mask); `softmax_fp32`: the fused kernels' softmax
    runs unfused in fp32 (activations.layer_tensors)."""
    if recompute not in RECOMPUTE:
        raise ValueError(f"recompute must be one of {RECOMPUTE}")
    s, b = seq_len, micro_batch
    # A layer's kind, and whether it copies K and V (kinds below: the tensors each keeps)
    layer_keys = [(kind, repeat_kv or keeps_local_mask(a, i, s)) for i, kind in enumerate(a.layer_kinds)]
    kinds = {}
    for key in set(layer_keys):
        (mixer, mlp, width), copied = key
        kinds[key] = tensor_parallel_share(
            layer_tensors(a, mlp == "moe", flash, kernels, mixer, mlp != "none", width, autocast, copied, softmax_fp32),
            tp,
        )
    # How many layers of each (kind, policy): the layers of one kind under one policy keep the same bytes.
    counts: dict[tuple[Any, str], int] = {}
    for i, key in enumerate(layer_keys):
        counted = (key, recompute if takes_policy(i, every, block) else "none")
        counts[counted] = counts.get(counted, 0) + 1
    full = {i for i in range(a.layers) if recompute == "full" and takes_policy(i, every, block)}
    kept = shared_kv_per_token(a, full) * s * b if full and a.mixers else 0.0
    recomputed = 0.0
    for (kind, policy), n in counts.items():
        layer = kinds[kind]
        keeps = kept_per_token(layer, policy, s, b, modules)
        kept += n * keeps
        if policy != "none":
            recomputed = max(recomputed, layer.saved_bytes(s, b) - keeps)
    widest = max(t.bytes(s, b) for layer in kinds.values() for t in layer.tensors if not t.quadratic)
    quadratic = max((t.bytes(s, b) for layer in kinds.values() for t in layer.tensors if t.quadratic), default=0.0)
    return Activations(
        kept=kept,
        recompute=recomputed,
        gradients=(3 if a.gated_mlp else 2) * widest,
        largest_tensor=max(widest, quadratic),
    )
