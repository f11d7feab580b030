"""Activation memory per GPU for training, and the KV cache for serving.

Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models", section 4: one
GPT layer stores sbh(34 + 5as/h) bytes with 16-bit activations (s sequence, b micro-batch, h hidden, a heads):
attention 11sbh + 5as^2b, MLP 19sbh, two layer norms 4sbh. We count the same tensors from the shapes, so the
formula holds exactly for a GPT-3-like layer (tests/test_memory.py) and extends to:
- GQA/MQA (K and V are s*b*kv_heads*head_dim) and MLA (latent inputs plus expanded Q, K, V);
- gated MLPs, SwiGLU and GeGLU (input 2sbh, gate/up outputs and their product 6sbf), and GELU/ReLU MLPs
  (2sbh + 4sbf);
- no dropout masks when dropout is 0 (modern LLMs);
- FlashAttention: the s^2 score matrix is never stored, only its log-sum-exp (4 bytes per row and head);
- MoE layers: each token's activations through the experts it is routed to (top-k) and the shared ones.
Recomputation: "none" stores everything; "selective" recomputes the attention core (the s^2 terms);
"full" keeps each layer's input (2sbh) and recomputes one layer at a time in the backward pass.
Outside the layers (section 4.3): final norm 2sbh, output projection input 2sbh, fp32 logits for the loss 4sbv.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from dpcost.specs import ModelArchitecture

__all__ = ["RECOMPUTE", "ActivationMemory", "activation_memory", "kv_cache_bytes"]

Recompute = Literal["none", "selective", "full"]
RECOMPUTE: tuple[Recompute, ...] = ("none", "selective", "full")
ACT_BYTES = 2  # bf16/fp16 activations


@dataclass(frozen=True)
class ActivationMemory:
    per_layer: float  # one layer's stored activations with no recomputation (s^2 terms included)
    attention_core: float  # the part selective recomputation drops (the s^2 terms)
    layer_input: float  # what full recomputation keeps per layer
    outside: float  # final norm, output projection, logits
    layers: int
    recompute: str
    total: float


def _layer(a: ModelArchitecture, s: int, b: int, flash: bool, moe_layer: bool) -> tuple[float, float]:
    """(stored bytes of one layer without recomputation, the s^2 part of it)."""
    h, sb = a.hidden, s * b
    e = ACT_BYTES
    dropout = a.dropout > 0
    total = 2.0 * e * sb * h  # inputs of the two norms
    total += e * sb * h  # attention input (norm output)
    if a.mla is not None:
        m = a.mla
        d_qk, d_v = m.qk_nope_head_dim + m.qk_rope_head_dim, m.v_head_dim
        latent = (m.q_lora_rank or 0) + m.kv_lora_rank
        total += e * sb * (latent + m.qk_rope_head_dim)  # latent projections (q_a, kv_a) outputs
        total += e * sb * latent  # their norm outputs, the inputs of q_b and kv_b
        total += e * sb * a.heads * (2 * d_qk + d_v)  # expanded Q, K, V
        total += e * sb * a.heads * d_v  # output projection input
    else:
        q, kv = a.heads * a.d_head, a.n_kv_heads * a.d_head
        total += e * sb * (q + 2 * kv)  # Q, K, V
        total += e * sb * q  # output projection input
    if dropout:
        total += sb * h  # dropout mask after the attention projection (1 byte per element)
    if flash:
        core = 4.0 * sb * a.heads  # log-sum-exp per row and head, fp32
    else:
        core = e * a.heads * s * s * b  # softmax output
        if dropout:
            core += a.heads * s * s * b + e * a.heads * s * s * b  # its dropout mask and output
    total += core

    def mlp(width: int) -> float:
        inner = 3 * e * sb * width if a.gated_mlp else 2 * e * sb * width
        return inner

    if moe_layer and a.moe is not None:
        moe = a.moe
        total += e * sb * h  # MLP input (norm output), shared by router and experts
        total += 4 * sb * moe.experts  # fp32 router logits
        total += moe.shared * mlp(moe.shared_width)
        total += moe.active * (2 * e * sb * h + mlp(moe.ffn))  # dispatched copy, expert MLP, weighted output
    else:
        assert a.ffn is not None
        total += e * sb * h + mlp(a.ffn)
    if dropout:
        total += sb * h  # dropout mask after the MLP
    return total, (0.0 if flash else core)


def activation_memory(
    a: ModelArchitecture, seq_len: int, micro_batch: int, recompute: str = "none", flash: bool = True
) -> ActivationMemory:
    """Stored activations of one micro-batch on one GPU (no tensor or sequence parallelism)."""
    if recompute not in RECOMPUTE:
        raise ValueError(f"recompute must be one of {RECOMPUTE}")
    s, b = seq_len, micro_batch
    layers = [_layer(a, s, b, flash, moe_layer=a.moe_layer(i)) for i in range(a.layers)]
    largest = max(layers)
    layer_input = ACT_BYTES * s * b * a.hidden
    outside = 2 * ACT_BYTES * s * b * a.hidden + 4 * s * b * a.vocab
    if a.dropout > 0:
        outside += s * b * a.hidden  # embedding dropout mask
    if recompute == "none":
        stored = sum(total for total, _ in layers)
    elif recompute == "selective":
        stored = sum(total - core for total, core in layers)
    else:
        stored = a.layers * layer_input + largest[0]  # checkpoints + the one layer being recomputed
    return ActivationMemory(
        per_layer=largest[0],
        attention_core=largest[1],
        layer_input=layer_input,
        outside=outside,
        layers=a.layers,
        recompute=recompute,
        total=stored + outside,
    )


def kv_cache_bytes(a: ModelArchitecture, seq_len: int, batch: int, dtype_bytes: int = 2) -> float:
    """Keys and values of every layer for `batch` sequences of `seq_len` tokens (MLA caches its latent)."""
    per_token = a.mla.kv_lora_rank + a.mla.qk_rope_head_dim if a.mla is not None else 2 * a.n_kv_heads * a.d_head
    return float(per_token * dtype_bytes * a.layers * seq_len * batch)
