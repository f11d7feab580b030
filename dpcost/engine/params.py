"""Parameter counts from the architecture: total, active per token, and per transformer block.

Counting follows the weight shapes of the Hugging Face implementations (LlamaForCausalLM, Qwen2, Mixtral,
DeepseekV3, GPT-2/3): every matrix is in x out, biases and norm weights included. MLA shapes follow the
DeepSeek-V2 paper (section 2.1) and DeepSeek-V3's config. Checked against each model's published count
(tests/test_params.py, ../shared/reference/models.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from dpcost.specs import ModelArchitecture, ModelSpec

__all__ = ["BlockCount", "ParamCount", "count_params"]


@dataclass(frozen=True)
class BlockCount:
    """One transformer block: all its parameters, and those one token passes through."""

    params: float
    active: float
    moe: bool


@dataclass(frozen=True)
class ParamCount:
    total: float
    active: float
    embedding: float  # the input lookup table: memory, but no matmul FLOPs
    lm_head: float  # 0 when tied to the embedding
    blocks: tuple[BlockCount, ...]
    largest_module: float  # the biggest single weight (DeepSpeed's "largest layer")
    mtp: float  # DeepSeek's multi-token-prediction module, counted apart and not in `total`
    components: tuple[tuple[str, float], ...]  # for `dpcost show model`

    @property
    def largest_block(self) -> float:
        """The biggest transformer block: the unit FSDP/ZeRO-3 gathers at once (per-block wrapping)."""
        return max((b.params for b in self.blocks), default=self.total)


def _attention(a: ModelArchitecture) -> tuple[float, float]:
    """(parameters, largest matrix) of one attention sub-layer."""
    h = a.hidden
    if a.mla is not None:
        m = a.mla
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        if m.q_lora_rank is None:
            q = h * a.heads * qk
        else:
            q = h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * a.heads * qk  # q_a, q_a_norm, q_b
        kv = h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank  # kv_a_proj_with_mqa, kv_a_norm
        kv += m.kv_lora_rank * a.heads * (m.qk_nope_head_dim + m.v_head_dim)  # kv_b_proj
        o = a.heads * m.v_head_dim * h
        return q + kv + o, max(o, m.kv_lora_rank * a.heads * (m.qk_nope_head_dim + m.v_head_dim))
    q_out, kv_out = a.heads * a.d_head, a.n_kv_heads * a.d_head
    params = h * q_out + 2 * h * kv_out + q_out * h
    if a.qkv_bias:
        params += q_out + 2 * kv_out
    if a.linear_bias:
        params += h  # output projection bias
    return params, h * q_out


def _mlp(a: ModelArchitecture, width: int) -> float:
    h = a.hidden
    if a.mlp == "swiglu":
        return 3 * h * width + (2 * width + h if a.linear_bias else 0)
    return 2 * h * width + (width + h if a.linear_bias else 0)


def _norm(a: ModelArchitecture) -> float:
    return (2 if a.norm == "layernorm" else 1) * a.hidden


def _block(a: ModelArchitecture, moe_layer: bool) -> BlockCount:
    attn, _ = _attention(a)
    norms = 2 * _norm(a)
    if not moe_layer or a.moe is None:
        assert a.ffn is not None  # guaranteed by ModelArchitecture validation
        mlp = _mlp(a, a.ffn)
        return BlockCount(attn + norms + mlp, attn + norms + mlp, moe=False)
    e = a.moe
    expert = _mlp(a, e.ffn)
    router = a.hidden * e.experts + (e.experts if e.router_bias else 0)
    total = attn + norms + router + (e.experts + e.shared) * expert
    active = attn + norms + router + (e.active + e.shared) * expert
    return BlockCount(total, active, moe=True)


def count_params(spec: ModelSpec) -> ParamCount:
    """Total and active parameters of `spec`; a spec with only `params` is taken as dense."""
    a = spec.architecture
    if a is None:
        assert spec.params is not None  # guaranteed by ModelSpec validation
        largest = spec.largest_layer_params or spec.params
        return ParamCount(
            total=spec.params,
            active=spec.params,
            embedding=0.0,
            lm_head=0.0,
            blocks=(),
            largest_module=largest,
            mtp=0.0,
            components=(("params (given)", spec.params),),
        )
    h = a.hidden
    first_dense = a.moe.first_dense_layers if a.moe else a.layers
    blocks = tuple(_block(a, moe_layer=i >= first_dense) for i in range(a.layers))
    embedding = float(a.vocab * h)
    lm_head = 0.0 if a.tied_embeddings else float(a.vocab * h)
    positions = float(a.learned_positions * h)
    final_norm = _norm(a)
    outside = embedding + lm_head + positions + final_norm
    total = sum(b.params for b in blocks) + outside
    active = sum(b.active for b in blocks) + outside

    _, attn_matrix = _attention(a)
    widths = [w for w in (a.ffn, a.moe.ffn if a.moe else None) if w]
    largest_module = max([embedding, lm_head, attn_matrix, *(h * w for w in widths)])

    mtp = 0.0
    if a.mtp_layers:
        # One extra MoE block per module, plus eh_proj (2h -> h) and the enorm/hnorm/final norms; the
        # embedding and output head are shared with the main model (DeepSeek-V3 README_WEIGHTS.md).
        mtp = a.mtp_layers * (_block(a, moe_layer=a.moe is not None).params + 2 * h * h + 3 * _norm(a))

    attn, _ = _attention(a)
    components: list[tuple[str, float]] = [
        ("embedding", embedding),
        ("attention", attn * a.layers),
        ("norms", 2 * _norm(a) * a.layers + final_norm),
    ]
    if first_dense:
        assert a.ffn is not None
        components.append(("dense MLP", _mlp(a, a.ffn) * first_dense))
    if a.moe:
        moe_layers = a.layers - first_dense
        expert = _mlp(a, a.moe.ffn)
        components.append(("routed experts", expert * a.moe.experts * moe_layers))
        if a.moe.shared:
            components.append(("shared experts", expert * a.moe.shared * moe_layers))
        components.append(("routers", (h * a.moe.experts + (a.moe.experts if a.moe.router_bias else 0)) * moe_layers))
    if positions:
        components.append(("position table", positions))
    if lm_head:
        components.append(("output head", lm_head))
    return ParamCount(
        total=total,
        active=active,
        embedding=embedding,
        lm_head=lm_head,
        blocks=blocks,
        largest_module=largest_module,
        mtp=mtp,
        components=tuple(components),
    )
