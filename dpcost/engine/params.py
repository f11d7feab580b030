"""Parameter counts from the architecture: total, active per token, and per transformer block.

Counting follows the weight shapes of the Hugging Face implementations (modeling_<family>.py of Llama, Llama 4,
Mistral/Mixtral, Qwen2/Qwen2-MoE/Qwen3/Qwen3-MoE, Gemma 1-3, Phi-3, OLMo 2, GPT-NeoX, GPT-2, GPT-J, OPT, BLOOM,
Falcon, DeepSeek-V2/V3, gpt-oss): every matrix is in x out, biases and norm weights included. MLA shapes follow
the DeepSeek-V2 paper (section 2.1). Checked against each model's published count (tests/test_params.py,
tests/test_hf_configs.py, tests/reference/hf-configs/README.md).

Active parameters come in two conventions, and publishers differ: `active` counts every weight a token
touches, the input embedding row included (Mistral's 12.9B for Mixtral, Qwen's 3.3B for Qwen3-30B-A3B, Meta's
17B for Llama 4); `active_excl_embedding` leaves out the input lookup tables (token embedding and learned
positions), which are read but never multiplied (OpenAI's 5.13B for gpt-oss-120b, DeepSeek's 2.4B for
DeepSeek-V2-Lite and 36.7B for DeepSeek-V3). The second is the N of 6N training FLOPs (compute.py).
"""

from __future__ import annotations

from functools import cache

from dpcost.engine.memo import cached_property, per_object
from dpcost.frozen import frozen
from dpcost.specs import CSA, HCA, KV_SHARED, REUSED_BLOCK, SHARED_BLOCK, ModelArchitecture, ModelSpec

__all__ = [
    "BlockCount",
    "ParamCount",
    "block_matrices",
    "block_tensors",
    "compressor_parameters",
    "count_params",
    "embedding_width",
    "hyper_connection_parameters",
    "hyper_head_parameters",
    "hyper_mixes",
    "input_table_parameters",
    "mtp_layer",
    "ngram_layer_parameters",
    "tensor_parallel_parameters",
]


@frozen
class BlockCount:
    """One transformer block: all its parameters, and those one token passes through."""

    params: float
    active: float
    moe: bool


@frozen
class ParamCount:
    total: float
    active: float
    embedding: float  # the input lookup table: memory, but no matmul FLOPs
    lm_head: float  # 0 when tied to the embedding
    blocks: tuple[BlockCount, ...]
    largest_module: float  # the biggest single weight (DeepSpeed's "largest layer")
    mtp: float  # DeepSeek's multi-token-prediction module, counted apart and not in `total`
    components: tuple[tuple[str, float], ...]  # for `dpcost show model`
    positions: float = 0.0  # a learned position table (GPT-2, OPT) and BERT's token-type tables: lookups too
    per_layer_embedding: float = 0.0  # Gemma 4's per-layer embedding table: a lookup too
    per_layer_projection: float = 0.0  # Gemma 4's projection of the embedding to every layer's input, and its norm
    # held and trained, never run by a text token: Mllama's cross-attention layers, ERNIE-4.5-VL's vision experts
    idle: float = 0.0

    @property
    def lookups(self) -> float:
        """The input lookup tables (token embedding, learned positions and token types, per-layer embeddings,
        LongCat-Flash-Lite's n-gram tables): read, never multiplied."""
        return self.embedding + self.positions + self.per_layer_embedding

    @property
    def active_excl_embedding(self) -> float:
        """Active parameters without the input lookup tables: the weights a token multiplies, OpenAI's and
        DeepSeek's convention (module docstring)."""
        return self.active - self.lookups

    @cached_property
    def moe_layers(self) -> tuple[bool, ...]:
        """Whether each block's MLP is the mixture of experts, in layer order."""
        return tuple(b.moe for b in self.blocks)

    @cached_property
    def largest_block(self) -> float:
        """The biggest transformer block: the unit FSDP/ZeRO-3 gathers at once (per-block wrapping)."""
        return max((b.params for b in self.blocks), default=self.total)


def _attention(a: ModelArchitecture) -> tuple[float, float]:
    """(parameters, largest matrix) of one attention sub-layer."""
    h = a.hidden
    if a.compressed_attention is not None:
        return _compressed_attention(a)
    if a.mla is not None:
        m = a.mla
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        if m.q_lora_rank is None:
            q = h * a.heads * qk
        elif m.query_gate:  # A.X K2: q_a, q_a_norm, q_gate_proj (2 x q_lora_rank -> heads x (qk + v))
            q = h * m.q_lora_rank + m.q_lora_rank + 2 * m.q_lora_rank * a.heads * (qk + m.v_head_dim)
        else:
            q = h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * a.heads * qk  # q_a, q_a_norm, q_b
        kv = h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank  # kv_a_proj_with_mqa, kv_a_norm
        kv += m.kv_lora_rank * a.heads * (m.qk_nope_head_dim + m.v_head_dim)  # kv_b_proj
        o = a.heads * m.v_head_dim * h
        if a.qkv_bias:  # attention_bias biases q_a_proj and kv_a_proj_with_mqa (modeling_deepseek_v3.py, 5.24.0)
            q += m.q_lora_rank or 0
            kv += m.kv_lora_rank + m.qk_rope_head_dim
        if a.out_bias:
            o += h
        sinks = a.heads if a.attention_sinks else 0  # Hy4's HYV4Attention.sinks, one per head
        sinks += m.qk_rope_head_dim if m.rope_key_norm else 0  # dots3's k_rope_only_layernorm
        return q + kv + o + sinks, max(o, m.kv_lora_rank * a.heads * (m.qk_nope_head_dim + m.v_head_dim))
    q_out, kv_out = a.heads * a.d_head, a.n_kv_heads * a.d_head
    v_out = 0 if a.values_from_keys else a.n_kv_heads * a.d_value  # Gemma 4's attention_k_eq_v: no v_proj
    params = h * q_out + h * kv_out + h * v_out + a.heads * a.d_value * h
    if a.qkv_bias:
        params += q_out + kv_out + v_out
    if a.out_bias or (a.out_bias is None and a.linear_bias):
        params += h  # output projection bias
    per = a.qk_norm_weights
    if a.qk_norm == "head":
        params += 2 * per * a.d_head  # q_norm, k_norm over one head's dimension (Qwen3, Gemma 3)
    elif a.qk_norm == "full":
        params += per * (q_out + kv_out)  # q_norm, k_norm over all heads (OLMo 2)
    if a.attention_sinks:
        params += a.heads  # gpt-oss: GptOssAttention.sinks, one per attention head
    if a.sink_projection:
        params += h * a.heads  # Inkling 2's sink_proj: a sink logit per head from each token
    if a.query_scale:
        params += q_out  # Inkling 2's q_proj.norm.scale, one per query head and channel
    return params + cca_parameters(a), h * q_out


def cca_parameters(a: ModelArchitecture) -> float:
    """ZAYA's convolutions over the queries and keys (CCASpec; ZayaCCAProjection, modeling_zaya.py, transformers
    5.25.0): conv_qk_depthwise (one weight per channel and tap, and a bias per channel) and conv_qk_grouped (each
    channel's weights over its head's head_dim channels and taps, and a bias), over (heads + kv_heads) x head_dim
    channels; and ZayaQKNorm's temp, a scale per KV head."""
    c = a.cca
    if c is None:
        return 0.0
    channels = (a.heads + a.n_kv_heads) * a.d_head
    return float(channels * (c.depthwise + 1) + channels * (a.d_head * c.grouped + 1) + a.n_kv_heads)


def _compressed_attention(a: ModelArchitecture) -> tuple[float, float]:
    """(parameters, largest matrix) of DeepSeek-V4's attention without its compressor (modeling_deepseek_v4.py
    DeepseekV4Attention, transformers 5.24.0): q_a_proj (hidden -> q_lora_rank) and its norm, q_b_proj (-> heads x
    head_dim), kv_proj (hidden -> head_dim, one head serving as keys and values) and its norm, o_a_proj (each of the
    o_groups groups of heads x head_dim / o_groups -> o_lora_rank), o_b_proj (o_groups x o_lora_rank -> hidden) and
    a sink per head; no biases."""
    c = a.compressed_attention
    assert c is not None
    matrices = _compressed_attention_matrices(a)
    return float(sum(matrices) + c.q_lora_rank + a.d_head + a.heads), float(max(matrices))


def _compressed_attention_matrices(a: ModelArchitecture) -> list[int]:
    """DeepSeek-V4's attention weight matrices in forward order: q_a, q_b, kv, o_a, o_b (_compressed_attention)."""
    c = a.compressed_attention
    assert c is not None
    h, heads_width = a.hidden, a.heads * a.d_head
    return [h * c.q_lora_rank, c.q_lora_rank * heads_width, h * a.d_head, heads_width * c.o_lora_rank,
            c.o_groups * c.o_lora_rank * h]  # fmt: skip


def compressor_parameters(a: ModelArchitecture, mixer: str) -> float:
    """DeepSeek-V4's compressor in one layer (modeling_deepseek_v4.py, transformers 5.24.0), none in a sliding one:
    - heavily compressed (DeepseekV4HCACompressor): kv_proj and gate_proj (hidden -> head_dim), a position bias of
      hca_rate x head_dim and the entries' norm;
    - compressed sparse (DeepseekV4CSACompressor): the same at twice the width (each token feeds its own window's
      entry and the next one's) with a csa_rate x 2 head_dim bias, and its lightning indexer (DeepseekV4Indexer): a
      compressor of its own at 2 x index_head_dim, q_b_proj (q_lora_rank -> index heads x index_head_dim) and
      weights_proj (hidden -> index heads)."""
    c = a.compressed_attention
    if c is None or mixer not in (CSA, HCA):
        return 0.0
    d, di = a.d_head, c.index_head_dim
    # beside the matrices: the position biases and the entries' norms
    rest = c.hca_rate * d + d if mixer == HCA else c.csa_rate * 2 * d + d + c.csa_rate * 2 * di + di
    return sum(_compressor_matrices(a, mixer)) + rest


def _compressor_matrices(a: ModelArchitecture, mixer: str) -> list[float]:
    """A compressor's weight matrices in forward order (compressor_parameters)."""
    c = a.compressed_attention
    if c is None or mixer not in (CSA, HCA):
        return []
    h, d, di = a.hidden, a.d_head, c.index_head_dim
    if mixer == HCA:
        return [float(h * d), float(h * d)]  # kv_proj, gate_proj
    indexer = [h * 2 * di, h * 2 * di, c.q_lora_rank * c.index_heads * di, h * c.index_heads]
    return [float(t) for t in (h * 2 * d, h * 2 * d, *indexer)]


def hyper_connection_parameters(a: ModelArchitecture) -> float:
    """One of DeepSeek-V4's hyper-connections (modeling_deepseek_v4.py DeepseekV4HyperConnection), two a layer: fn
    mapping the n streams (n x hidden) to n pre, n post and n x n mixing weights, their base and three scales; Hy4's
    (modeling_hy_v4.py HYV4HyperConnection) to n pre and n post only, with two scales; none without
    hyper-connections (ModelArchitecture.hyper_connected)."""
    if not a.hyper_connected:
        return 0.0
    if a.hyper_form == "lowrank":  # Qwen4-Exp (Qwen4ExpTextGatedResidual): hc_norm's weight and three matrices
        return float(a.residual_streams * a.hidden + sum(_hyper_matrices(a)))
    mixes = hyper_mixes(a)
    scales = 2 if a.hyper_form == "independent" else 3
    return float(mixes * a.residual_streams * a.hidden + mixes + scales)


def hyper_mixes(a: ModelArchitecture) -> int:
    """The weights one hyper-connection computes from the streams: n pre, n post and (manifold) n x n mixing; a
    lowrank one's gate rank and n injection weights."""
    n = a.residual_streams
    if a.hyper_form == "lowrank":
        assert a.hyper_rank is not None
        return a.hyper_rank + n
    return 2 * n if a.hyper_form == "independent" else (2 + n) * n


def _hyper_matrices(a: ModelArchitecture) -> list[float]:
    """One hyper-connection's weight matrices: fn (n x hidden -> its mixes), or a lowrank one's down (n x hidden ->
    rank), up (rank -> n x hidden) and block_inject (n x hidden -> n)."""
    wide = a.residual_streams * a.hidden
    if a.hyper_form == "lowrank":
        assert a.hyper_rank is not None
        return [float(wide * a.hyper_rank), float(a.hyper_rank * wide), float(wide * a.residual_streams)]
    return [float(hyper_mixes(a) * wide)]


def hyper_head_parameters(a: ModelArchitecture) -> float:
    """DeepSeek-V4's final collapse of the streams (DeepseekV4HyperHead): n x (n x hidden) weights, n biases and a
    scale; none without hyper-connections, or where the collapse is a mean (GLM-5.3's Glm5NextTextHyperHead)."""
    n = a.residual_streams
    if not a.hyper_connected or a.hyper_head == "mean":
        return 0.0
    if a.hyper_head == "lowrank":  # Qwen4-Exp's hyper_connection_mixer: hc_norm, down and up, no block_inject
        return float(n * a.hidden + sum(_hyper_matrices(a)[:2]))
    return float(n * n * a.hidden + n + 1)


def _mlp(a: ModelArchitecture, width: int, io: int | None = None) -> float:
    """One MLP of `width` between inputs and outputs of `io` (the hidden size, or a routed expert's latent one)."""
    h = io or a.hidden
    out_bias = h if a.mlp_out_bias and not a.linear_bias else 0
    if a.gated_mlp:
        return 3 * h * width + (2 * width + h if a.linear_bias else 0) + out_bias
    return 2 * h * width + (width + h if a.linear_bias else 0) + out_bias


def latent_projections(a: ModelArchitecture) -> float:
    """LatentMoE's two projections in one MoE layer, hidden -> latent before the routed experts and latent -> hidden
    after, with biases by mlp_bias (transformers 5.24.0 modeling_nemotron_h.py NemotronHMoE fc1/fc2_latent_proj), and
    the latent-wide norms around the experts (Muse Spark's, MoESpec.latent_norms)."""
    e = a.moe
    if e is None or e.latent is None:
        return 0.0
    norms = e.latent_norms * a.norm_weights * e.latent
    return 2 * a.hidden * e.latent + (e.latent + a.hidden if a.linear_bias else 0) + norms


def routed_expert(a: ModelArchitecture) -> float:
    """One routed expert's parameters: an MLP of moe.ffn over the width experts work in, and the norm over its
    output where each expert has its own (MoESpec.expert_norms)."""
    assert a.moe is not None
    return _mlp(a, a.moe.ffn, a.moe.expert_io(a.hidden)) + (_norm(a) if a.moe.expert_norms else 0.0)


def shared_expert(a: ModelArchitecture) -> float:
    """One shared expert's parameters: an MLP of its width, and the norm over its output (MoESpec.expert_norms)."""
    assert a.moe is not None
    return _mlp(a, a.moe.shared_width) + (_norm(a) if a.moe.expert_norms else 0.0)


def _norm(a: ModelArchitecture) -> float:
    return a.norm_weights * a.hidden


def rope_scale_parameters(a: ModelArchitecture) -> float:
    """Mistral Large 4's learned scale of the rotary frequencies (MistralLarge4TextRotaryEmbedding.alpha, one number
    per frequency of the rotary head_dim, qk_rope_head_dim: transformers 5.25.0), held once."""
    if not a.rope_alpha:
        return 0.0
    return float((a.mla.qk_rope_head_dim if a.mla is not None else a.d_head) // 2)


def ngpt_layer_scale_parameters(
    a: ModelArchitecture, mixer: str = "attention", mlp_kind: str = "", ffn: int = 0
) -> float:
    """nGPT's learned scales in one layer (modeling_dory.py, transformers 5.25.0): lambda_1 and lambda_2 (hidden
    each), the attention's sqk and s_gate (heads x head_dim each), the MLP's suv_gate and suv_up (ffn each)."""
    if not a.ngpt_scales:
        return 0.0
    attention = 2 * a.heads * a.d_head if "attention" in mixer else 0
    mlp = 2 * (ffn or a.dense_ffn(mixer)) if mlp_kind != "none" else 0
    return float(2 * a.hidden + attention + mlp)


def contact_head_parameters(a: ModelArchitecture) -> float:
    """ESM's EsmContactPredictionHead (modeling_esm.py, transformers 5.25.0): regression, a linear layer from every
    layer's heads' attention maps (layers x heads) to one logit, biased. Masked-LM training does not run it."""
    return float(a.layers * a.heads + 1) if a.contact_head else 0.0


def input_table_parameters(a: ModelArchitecture) -> float:
    """The lookup tables added to the token embedding: a learned position table and BERT's segment tables
    (BertEmbeddings' position_embeddings and token_type_embeddings, modeling_bert.py, transformers 5.25.0), each
    as wide as the embedding."""
    return float((a.learned_positions + a.token_types) * embedding_width(a))


def embedding_width(a: ModelArchitecture) -> int:
    """The width of the embedding's tables and of the tied output matrix: hidden, or ALBERT's embedding_size."""
    return a.embedding_width or a.hidden


def outside_norm_parameters(a: ModelArchitecture) -> float:
    """The norms outside the layers: the final norm (none in GPT-1), and BLOOM's after the embedding, as wide as the
    embedding."""
    return a.norm_weights * (a.hidden * int(a.final_norm) + embedding_width(a) * int(a.embedding_norm))


def embedding_projection_parameters(a: ModelArchitecture) -> float:
    """ALBERT's embedding_hidden_mapping_in (modeling_albert.py, transformers 5.25.0): a biased linear layer from the
    embedding's width to hidden."""
    return float(a.embedding_width * a.hidden + a.hidden) if a.embedding_width is not None else 0.0


def ngram_input_parameters(a: ModelArchitecture) -> tuple[float, float]:
    """LongCat-Flash-Lite's n-gram embeddings (NgramInputSpec; NgramEmbedding._init_ngram_embeddings): the tables,
    sum over i of int(m + 2i + 1) rows x width, and the projections, tables x width x hidden (no biases)."""
    g = a.ngram_input
    if g is None:
        return 0.0, 0.0
    return float(sum(g.rows) * g.width), float(g.tables * g.width * a.hidden)


def ngram_layer_parameters(a: ModelArchitecture) -> float:
    """What one of Qwen4-Exp's n-gram layers holds beside its table (Qwen4ExpTextPLELayer, transformers 5.25.0):
    key_proj (width -> n x hidden) and value_proj (width -> hidden), no biases, norm_key, norm_query and norm_conv
    (n x hidden each) and the depthwise conv1d (n x hidden channels of conv_kernel taps, no bias)."""
    g = a.ngram_embedding
    if g is None:
        return 0.0
    wide = a.residual_streams * a.hidden
    return float(g.width * wide + g.width * a.hidden + 3 * wide + wide * g.conv_kernel)


def kv_projection_parameters(a: ModelArchitecture) -> float:
    """The key and value projections of one attention sub-layer, their biases and the key norm: what a kv-shared
    layer does not hold (modeling_gemma4.py Gemma4TextAttention, transformers 5.25.0: no k_proj, v_proj or k_norm
    where is_kv_shared_layer; v_norm has no weight)."""
    if a.mla is not None:  # MLA's kv_a_proj_with_mqa and kv_a_layernorm (Mistral Large 4's kv-shared layers); the
        m = a.mla  # shared latent is still expanded by the layer's own kv_b_proj
        latent = m.kv_lora_rank + m.qk_rope_head_dim
        return float(a.hidden * latent + m.kv_lora_rank + (latent if a.qkv_bias else 0))
    h, kv_out = a.hidden, a.n_kv_heads * a.d_head
    v_out = 0 if a.values_from_keys else a.n_kv_heads * a.d_value
    norm = {"head": a.d_head, "full": kv_out}.get(a.qk_norm, 0) * a.qk_norm_weights
    return h * (kv_out + v_out) + (kv_out + v_out if a.qkv_bias else 0) + norm


def altup_layer_parameters(a: ModelArchitecture) -> float:
    """What one layer holds of Gemma 3n's AltUp and LAuReL (AltUpSpec): correct_output_scale and router_norm (hidden
    each), correction_coefs (n x n), prediction_coefs (n x n^2), modality_router (hidden x n), no biases;
    linear_left (hidden x rank), linear_right (rank x hidden) and post_laurel_norm (hidden)."""
    u = a.altup
    if u is None:
        return 0.0
    n, h = u.inputs, a.hidden
    return float(2 * a.norm_weights * h + n * n + n**3 + h * n + 2 * h * u.laurel_rank + a.norm_weights * h)


def altup_projection_parameters(a: ModelArchitecture) -> float:
    """Gemma 3n's altup_projections and altup_unembed_projections: n - 1 hidden x hidden matrices each, no biases."""
    return 0.0 if a.altup is None else float(2 * (a.altup.inputs - 1) * a.hidden * a.hidden)


def per_layer_input_parameters(a: ModelArchitecture) -> float:
    """What one layer holds of Gemma 4's per-layer embeddings (PerLayerInputSpec): per_layer_input_gate (hidden ->
    width), per_layer_projection (width -> hidden), no biases, and post_per_layer_input_norm (hidden)."""
    p = a.per_layer_input
    return 0.0 if p is None else float(2 * a.hidden * p.width + _norm(a))


def _attention_params(a: ModelArchitecture) -> float:
    """One attention sub-layer, with Qwen3-Next's output gate (its q_proj makes the gate too: 2 x q_out rows, biased
    where MiniCPM5-MoE's q_gate_proj is, or a bias per head: Beam's gate_bias) and DeepSeek-V3.2's indexer."""
    params, _ = _attention(a)
    gated = a.heads * (a.mla.v_head_dim if a.mla is not None else a.d_head)  # Hy4's gate_proj gates MLA's values
    gate = (a.hidden + a.attention_gate_bias) * gated if a.attention_gate else 0
    gate += a.heads if a.attention_gate_head_bias else 0
    gate += 2 * a.heads if a.softmax_scaling else 0  # Mistral Large 4's softmax_scaling: a scale and a bias per head
    return params + gate + (a.hidden * a.heads if a.head_gate else 0) + indexer_parameters(a)


def indexer_parameters(a: ModelArchitecture) -> float:
    """DeepSeek-V3.2's lightning indexer in one layer (inference/model.py Indexer): wq_b from MLA's compressed query
    (q_lora_rank -> heads x head_dim), wk (hidden -> head_dim), k_norm's LayerNorm (weight and bias) and
    weights_proj (hidden -> heads), no biases; MiniMax M3's block indexer: q_proj (hidden -> heads x head_dim),
    k_proj (hidden -> head_dim) and their per-head norms."""
    i = a.indexer
    if i is not None and i.form == "block":  # MiniMax M3 (modeling_minimax_m3_vl.py MiniMaxM3VLIndexer, 5.24.0)
        return float(a.hidden * i.heads * i.head_dim + a.hidden * i.head_dim + 2 * i.head_dim)
    if i is not None and i.form == "hidden":  # Mistral Large 4 (MistralLarge4TextIndexer, 5.25.0): wq_b from the
        # hidden state, wk, k_norm and weights_proj as DeepSeek's, q_input_norm (a LayerNorm) and softmax_scaling
        h = a.hidden
        return float(h * i.heads * i.head_dim + h * i.head_dim + 2 * i.head_dim + h * i.heads + 2 * h + 2 * i.heads)
    if i is not None and i.form == "qsa":  # Qwen4-Exp (Qwen4ExpTextIndexer, 5.25.0): index_qk_proj (hidden -> heads
        # queries and one key of head_dim), q_layernorm and k_layernorm (head_dim each)
        return float(a.hidden * (i.heads + 1) * i.head_dim + 2 * i.head_dim)
    if i is None or a.mla is None or a.mla.q_lora_rank is None:
        return 0.0
    # GLM-5.3's pooled indexer adds index_kpool_compress_ape (pool x head_dim) and _gate (head_dim x hidden)
    # (modeling_glm5_next.py Glm5NextTextIndexer, transformers 5.25.0)
    pooled = i.pool * i.head_dim + i.head_dim * a.hidden if i.form == "pooled" else 0
    return float(
        a.mla.q_lora_rank * i.heads * i.head_dim + a.hidden * i.head_dim + 2 * i.head_dim + a.hidden * i.heads + pooled
    )


def ssm_parameters(a: ModelArchitecture) -> float:
    """One Mamba mixer as transformers holds it (docs/sources/ssm-families.md). Mamba-2 (Mamba2Mixer): in_proj
    h -> 2I + 2GN + H, a depthwise conv over I + 2GN channels, dt_bias, A_log and D per head, the gated RMSNorm
    (I), out_proj I -> h. Mamba-1 (MambaMixer): in_proj h -> 2I, a conv over I channels, x_proj I -> R + 2N,
    dt_proj R -> I with its bias, A_log (I x N), D (I), out_proj I -> h; Jamba adds RMSNorms of dt, B and C."""
    m, h = a.ssm, a.hidden
    assert m is not None
    inner, n = m.inner, m.state
    if m.version == 2:
        assert m.heads is not None
        conv = inner + 2 * m.groups * n
        params = h * (inner + conv + m.heads) + conv * m.conv_kernel + 3 * m.heads + inner * h
        params += (conv if m.conv_bias else 0) + (inner if m.gated_norm else 0)
        params += (inner + conv + m.heads + h) if m.bias else 0
    else:
        assert m.dt_rank is not None
        params = h * 2 * inner + inner * m.conv_kernel + inner * (m.dt_rank + 2 * n) + m.dt_rank * inner + inner
        params += inner * n + inner + inner * h + (inner if m.conv_bias else 0)
        params += (2 * inner + h) if m.bias else 0
        params += (m.dt_rank + 2 * n) if m.dt_bc_norms else 0
    return float(params)


def deltanet_parameters(a: ModelArchitecture) -> float:
    """One gated DeltaNet mixer as Qwen3NextGatedDeltaNet holds it: in_proj_qkvz h -> 2K + 2V, in_proj_ba
    h -> 2 value heads, a depthwise conv (no bias) over 2K + V channels, dt_bias and A_log per value head, the gated
    RMSNorm over one value head, out_proj V -> h (K, V: all heads' key and value widths)."""
    d, h = a.deltanet, a.hidden
    assert d is not None
    keys, values = d.key_heads * d.key_dim, d.value_heads * d.value_dim
    conv = 2 * keys + values
    if d.form == "kda":
        return kda_parameters(a)
    if d.form == "lightning":
        return lightning_parameters(a)
    if d.form == "jet":
        return jet_parameters(a)
    return float(h * (2 * keys + 2 * values) + h * 2 * d.value_heads + conv * d.conv_kernel + 2 * d.value_heads
                 + d.value_dim + values * h)  # fmt: skip


def kda_parameters(a: ModelArchitecture) -> float:
    """One Kimi Delta Attention mixer as KimiLinearDeltaAttention holds it (modeling_kimi_linear.py, transformers
    5.24.0): q, k and v projections (hidden -> heads x head_dim each), a depthwise conv (no bias) over the three,
    the forget gate (f_a: hidden -> head_dim, f_b: -> heads x head_dim, a dt_bias per channel, A_log per head),
    b_proj (hidden -> heads), the output gate (g_a, g_b as f's), the gated norm over one head, o_proj; no biases."""
    d = a.deltanet
    assert d is not None
    width = d.value_heads * d.value_dim
    return float(sum(_kda_matrices(a)) + 3 * width * d.conv_kernel + width + d.value_heads + d.value_dim)


def jet_parameters(a: ModelArchitecture) -> float:
    """One JetBlock as Jet-Nemotron holds it (NVlabs/Jet-Nemotron jet_block.py, dynamic_conv.py at 94cbd124): q_proj
    and k_proj (hidden -> K), v_proj (hidden -> V), b_proj and a_proj (hidden -> heads), A_log and dt_bias per head,
    the convolution's kernel generator (w1: hidden -> V / r, w2: V / r -> V x conv_kernel, w2 alone biased),
    g_proj (hidden -> V), the gated norm over one value head (FusedRMSNormGated) and o_proj (V -> hidden)."""
    d = a.deltanet
    assert d is not None and d.generator_reduction is not None
    taps = d.value_heads * d.value_dim * d.conv_kernel
    return float(sum(_jet_matrices(a)) + 2 * d.value_heads + taps + d.value_dim)


def _jet_matrices(a: ModelArchitecture) -> list[float]:
    """A JetBlock's weight matrices in forward order (jet_parameters): q, k, v, the kernel generator's w1 and w2,
    b, a, g, o."""
    d, h = a.deltanet, a.hidden
    assert d is not None and d.generator_reduction is not None
    keys, values = d.key_heads * d.key_dim, d.value_heads * d.value_dim
    generator = values // d.generator_reduction
    return [float(t) for t in (h * keys, h * keys, h * values, h * generator, generator * values * d.conv_kernel,
                               h * d.value_heads, h * d.value_heads, h * values, values * h)]  # fmt: skip


def lightning_parameters(a: ModelArchitecture) -> float:
    """One lightning-attention mixer as MiniMaxLightningAttention holds it (modeling_minimax.py, transformers 5.24.0):
    qkv_proj (hidden -> 3 x heads x head_dim), output_gate (hidden -> heads x head_dim), an RMSNorm over all heads,
    out_proj (-> hidden); no biases, and the decays are buffers. Ring-linear's (BailingMoeV2LinearAttention:
    query_key_value, g_proj, the group RMSNorm g_norm, dense) holds the same and, with qk_norms, an RMSNorm of
    head_dim for the queries and one for the keys."""
    d = a.deltanet
    assert d is not None
    return float(sum(_lightning_matrices(a)) + d.value_heads * d.value_dim + (2 * d.key_dim if d.qk_norms else 0))


def _lightning_matrices(a: ModelArchitecture) -> list[float]:
    """Lightning attention's weight matrices in forward order (lightning_parameters)."""
    d, h = a.deltanet, a.hidden
    assert d is not None
    width = d.value_heads * d.value_dim
    return [float(h * 3 * width), float(h * width), float(width * h)]


def _kda_matrices(a: ModelArchitecture) -> list[float]:
    """Kimi Delta Attention's weight matrices in forward order (kda_parameters)."""
    d, h = a.deltanet, a.hidden
    assert d is not None
    width, head = d.value_heads * d.value_dim, d.value_dim
    if d.full_rank_gates:  # Ling (modular_bailing_hybrid.py, 5.25.0): q, k, v, f_proj, b_proj, g_proj, o_proj
        return [float(t) for t in (h * width, h * width, h * width, h * width, h * d.value_heads, h * width, width * h)]
    return [float(t) for t in (h * width, h * width, h * width, h * head, head * width, h * d.value_heads,
                               h * head, head * width, width * h)]  # fmt: skip


def short_conv_parameters(a: ModelArchitecture) -> float:
    """One LFM2 short-convolution mixer (ShortConvSpec): in_proj h x 3h, the depthwise kernel k x h, out_proj h x h,
    and with conv_bias their biases (3h + h + h)."""
    c, h = a.short_conv, a.hidden
    assert c is not None
    return float(4 * h * h + c.kernel * h + (5 * h if c.bias else 0))


def rglru_parameters(a: ModelArchitecture) -> float:
    """One Griffin recurrent block (RGLRUSpec) of width w over h: linear_y, linear_x (h x w + w each), linear_out
    (w x h + h), the depthwise convolution (k x w + w), the decay (w), and the input and recurrence gates (each
    block-diagonal, heads blocks of (w / heads)^2, and a bias of w)."""
    r, h = a.rglru, a.hidden
    assert r is not None
    w = r.width
    return float(2 * (h * w + w) + w * h + h + r.conv_kernel * w + w + w + 2 * (w * (w // r.heads) + w))


def rwkv_parameters(a: ModelArchitecture) -> float:
    """One RWKV-4 layer's time mixing (RWKVSpec) of width w over h: key, value and receptance (h x w each), output
    (w x h), time_decay and time_first (w each), time_mix_key/value/receptance (h each); and its channel mixing's
    receptance (h x h) with time_mix_key and time_mix_receptance (h each). No biases."""
    assert a.rwkv is not None
    h, w = a.hidden, a.rwkv.width
    return float(4 * h * w + 2 * w + 3 * h + h * h + 2 * h)


def mlstm_parameters(a: ModelArchitecture) -> float:
    """One xLSTM layer's mLSTM (MLSTMSpec) over h: q and k (h x qk_dim), v and the output gate (h x v_dim), the
    input and forget gates (h x heads, biased), the per-head norm's weight (v_dim) and out_proj (v_dim x h); with
    use_bias the biases of q, k, v, the output gate, the norm and out_proj, and of the layer's two RMSNorms."""
    m = a.mlstm
    assert m is not None
    h, q, v = a.hidden, m.qk_dim, m.v_dim
    weights = 2 * h * q + 2 * h * v + 2 * (h * m.heads + m.heads) + v + v * h
    return float(weights + (2 * q + 2 * v + v + h + 2 * h if m.bias else 0))


def shared_block_parameters(a: ModelArchitecture) -> float:
    """One Zamba or Zamba2 shared transformer block (SharedBlockSpec), held once however many layers run it:
    input_layernorm (2h), q_proj (2h -> heads x head_dim), k_proj and v_proj (2h -> KV heads x head_dim) and o_proj
    (back to h), none biased; pre_ff_layernorm (h) and the gated MLP (gate_up_proj, down_proj: biased by
    add_bias_linear)."""
    assert a.ffn is not None
    h, q, kv = a.hidden, a.heads * a.d_head, a.n_kv_heads * a.d_head
    return float(2 * h + 2 * h * q + 2 * 2 * h * kv + q * h + h + _mlp(a, a.ffn))


def shared_block_layer_parameters(a: ModelArchitecture) -> float:
    """What each Zamba or Zamba2 hybrid layer holds of its own beside its Mamba layer (ZambaHybridLayer,
    Zamba2HybridLayer and its slot in the block's adapter lists): the linear layer after the shared block (h x h) and
    in Zamba2 the adapter beside the MLP's gate and up projection (h -> rank -> 2 ffn) and, with attention_adapters,
    those beside q, k and v (2h -> rank -> 2h each); none biased."""
    s = a.shared_block
    assert s is not None and a.ffn is not None
    h, r = a.hidden, s.adapter_rank or 0
    return float(h * h + r * (h + 2 * a.ffn) + (3 * r * (2 * h + 2 * h) if s.attention_adapters else 0))


def _shared_block_matrices(a: ModelArchitecture, mixer: str) -> list[float]:
    """A Zamba or Zamba2 hybrid layer's matrices beside its Mamba mixer's, in forward order: the shared block's (q, k,
    v, o, the MLP's gate and up, down) where the layer holds it, its own adapters' and its linear layer."""
    s = a.shared_block
    assert s is not None and a.ffn is not None
    h, r, f = a.hidden, s.adapter_rank, a.ffn
    q, kv = a.heads * a.d_head, a.n_kv_heads * a.d_head
    attention = [2 * h * q, 2 * h * kv, 2 * h * kv] if mixer == SHARED_BLOCK else []
    attention += [2 * h * r, r * 2 * h] * 3 if r and s.attention_adapters else []
    gate_up = [h * 2 * f] if r else [h * f, h * f]  # Zamba2's gate_up_proj is one matrix, Zamba's two
    mlp = [q * h, *gate_up, f * h] if mixer == SHARED_BLOCK else []
    adapter = [h * r, r * 2 * f] if r else []
    return [float(t) for t in [*attention, *mlp, *adapter, h * h]]


def mixer_parameters(a: ModelArchitecture, mixer: str) -> float:
    """One layer's token mixer: attention (attention_parameters), a Mamba mixer, a gated DeltaNet, both side by side,
    or none."""
    return (
        (attention_parameters(a, mixer) if "attention" in mixer else 0.0)
        + compressor_parameters(a, mixer)
        + (ssm_parameters(a) if "mamba" in mixer else 0.0)
        + (deltanet_parameters(a) if mixer == "deltanet" else 0.0)
        + (short_conv_parameters(a) if mixer == "conv" else 0.0)
        + (rglru_parameters(a) if mixer == "rglru" else 0.0)
        + (rwkv_parameters(a) if mixer == "rwkv" else 0.0)
        + (mlstm_parameters(a) if mixer == "mlstm" else 0.0)
        + (cross_attention_parameters(a) if mixer == "cross" else 0.0)
    )


def cross_attention_parameters(a: ModelArchitecture) -> float:
    """Mllama's cross-attention (MllamaTextCrossAttention, modeling_mllama.py, transformers 5.25.0): q_proj (hidden
    -> heads x head_dim) over the text, k_proj and v_proj (hidden -> KV heads x head_dim) over the projected image
    states, o_proj, no biases, q_norm and k_norm over head_dim; and the layer's two tanh gates, one number each
    (cross_attn_attn_gate, cross_attn_mlp_gate)."""
    return sum(_mixer_matrices(a, "cross")) + 2 * a.d_head + 2


def attention_parameters(a: ModelArchitecture, mixer: str) -> float:
    """One attention layer of `mixer`: a global layer's as global_attention shapes it, a kv-shared one's without its
    key and value projections; Inkling's relative logits and key and value convolutions where it has them."""
    view = a.attention_of(mixer)
    own = _attention_params(view) - (0.0 if a.computes_kv(mixer) else kv_projection_parameters(view))
    return own + relative_logits_parameters(a, mixer) + key_value_convolution_parameters(a, mixer)


def relative_logits_parameters(a: ModelArchitecture, mixer: str) -> float:
    """Inkling's relative logits in one attention layer (RelativeLogitsSpec; InklingAttention's r_proj and
    rel_logits_proj, modeling_inkling.py, transformers 5.25.0): r_proj (hidden x heads x rank, no bias) and the bank
    (rank x the distances it covers: a sliding layer's window, a full layer's extent); Inkling 2's scale on the
    mixing weights (heads x rank)."""
    r = a.relative_logits
    if r is None or "attention" not in mixer:
        return 0.0
    local = a.local_attention
    distances = local.size if local is not None and mixer == "attention" else r.extent  # specs: _consistent
    heads = a.attention_of(mixer).heads
    return float(a.hidden * heads * r.rank + r.rank * distances + (heads * r.rank if r.scaled else 0))


def key_value_convolution_parameters(a: ModelArchitecture, mixer: str) -> float:
    """Inkling's k_sconv and v_sconv in one attention layer (InklingShortConvolution, modeling_inkling.py,
    transformers 5.25.0): depthwise over the keys' and the values' channels, sconv_kernel taps each, no bias; in
    Inkling 2's full layers also each one's weight_proj (hidden -> kv_heads x sconv_kernel, GlobalAttentionSpec
    dynamic_convs)."""
    if a.sconv_kernel is None or "attention" not in mixer:
        return 0.0
    view = a.attention_of(mixer)
    taps = 2 * a.hidden * view.n_kv_heads * a.sconv_kernel if _dynamic_convs(a, mixer) else 0  # weight_proj, k and v
    return float(a.sconv_kernel * view.n_kv_heads * (view.d_head + view.d_value) + taps)


def _dynamic_convs(a: ModelArchitecture, mixer: str) -> bool:
    """Whether a layer of `mixer` projects its key and value convolutions' taps per token (Inkling 2's full layers)."""
    g = a.global_attention
    return g is not None and g.dynamic_convs and mixer.removeprefix(KV_SHARED) == "global attention"


def attention_residual_parameters(a: ModelArchitecture) -> float:
    """Inkling 2's attention residuals' queries (Inkling2BlockAttentionResidual.query, hidden-wide,
    modeling_inkling2.py, transformers 5.25.0): each layer's mlp_input, each layer's attention_input but the first's
    (three queries in a full layer, whose queries, keys and values read their own), and the model's final_input.
    Held with the outside parameters: the first layer has none for its attention."""
    if a.attention_residual_block is None:
        return 0.0
    g = a.global_attention

    def attention_input(mixer: str) -> int:  # a query per input its attention reads: the input norms'
        return g.input_norms if g is not None and mixer.removeprefix(KV_SHARED) == "global attention" else 1

    mixers = [mixer for mixer, *_ in a.layer_kinds]
    queries = len(mixers) + sum(attention_input(m) for m in mixers[1:]) + 1  # mlp_input, attention_input, final
    return float(queries * a.hidden)


def output_convolution_parameters(a: ModelArchitecture) -> float:
    """Inkling's attn_sconv and mlp_sconv in one layer (InklingDecoderLayer, modeling_inkling.py, transformers
    5.25.0): depthwise over the attention's and the MLP's hidden-wide outputs, sconv_kernel taps each, no bias."""
    return 0.0 if a.sconv_kernel is None else float(2 * a.sconv_kernel * a.hidden)


def attention_expert_parameters(a: ModelArchitecture) -> tuple[float, float]:
    """A mixture of attention heads (ModelArchitecture.attention_experts; JetMoE's JetMoeMoA, modeling_jetmoe.py,
    transformers 5.25.0) beyond the attention its active experts make (heads = kv_heads x moe.active, which
    _attention counts): (the idle experts' query and output projections, held but not run by a token; the router,
    hidden x experts, and the output bias, which every token runs)."""
    experts = a.attention_experts
    if experts is None or a.moe is None:
        return 0.0, 0.0
    return float((experts - a.moe.active) * attention_expert(a)), float(a.hidden * experts + a.hidden)


def attention_expert(a: ModelArchitecture) -> float:
    """One attention expert of a mixture of attention heads: its query projection (hidden -> kv_heads x head_dim) and
    its output projection back, no biases (JetMoeMoA's input_linear and output_linear)."""
    return float(2 * a.hidden * a.n_kv_heads * a.d_head)


def vision_expert_parameters(a: ModelArchitecture) -> float:
    """One MoE layer's modality-isolated vision experts (MoESpec.vision_experts; ERNIE-4.5-VL's vision_moe,
    modeling_ernie4_5_vl_moe.py, transformers 5.25.0): their router (hidden x experts) and its correction bias where
    the text one has it, and the experts, MLPs of vision_ffn. Held and trained; no text token reaches them."""
    e = a.moe
    if e is None or not e.vision_experts:
        return 0.0
    assert e.vision_ffn is not None
    router = a.hidden * e.vision_experts + (e.vision_experts if e.router_bias else 0)
    return float(router + e.vision_experts * _mlp(a, e.vision_ffn))


def _router(a: ModelArchitecture) -> float:
    """The routing matrix (hidden x experts, and Inkling's shared experts), its bias, Qwen2-MoE's shared-expert gate
    (hidden -> 1) and Inkling's scale on the routing weights (one number); ZAYA's router MLP in its place."""
    e = a.moe
    assert e is not None
    biased = e.router_outputs or e.experts
    gates = (a.hidden if e.shared_gate else 0) + (1 if e.router_scale else 0)
    r = e.router_mlp
    if r is not None:  # ZAYA: down_proj and its bias, the norm, fc1 and fc2 with biases, out_proj
        return a.hidden * r + r + r + 2 * (r * r + r) + r * e.router_rows() + (biased if e.router_bias else 0) + gates
    return a.hidden * e.router_rows() + (biased if e.router_bias else 0) + gates


def router_state_scale_parameters(a: ModelArchitecture) -> float:
    """ZAYA's router_states_scale (router_hidden_size each), in every MoE layer's router but the first layer's, which
    has no earlier router state to scale (ZayaRouter.use_eda): held with the outside parameters."""
    e = a.moe
    if e is None or e.router_mlp is None:
        return 0.0
    return float(e.router_mlp * sum(1 for i in range(1, a.layers) if a.moe_layer(i)))


def head_transform_parameters(a: ModelArchitecture) -> float:
    """The prediction head before the output matrix: dense (biased or not) and a norm (ModernBertDecoderPredictionHead,
    modeling_modernbert_decoder.py; BertPredictionHeadTransform, modeling_bert.py, and RobertaLMHead,
    modeling_roberta.py; transformers 5.25.0), from hidden to the embedding's width (hidden, or ALBERT's
    embedding_size: AlbertMLMHead), the norm that wide."""
    if a.head_transform == "none":
        return 0.0
    width = embedding_width(a)
    return float(a.hidden * width + (width if a.head_transform == "dense_biased" else 0) + a.norm_weights * width)


def input_scale_parameters(a: ModelArchitecture) -> float:
    """ZAYA's input_hidden_states_scale and _bias on the embedding (ModelArchitecture.residual_scaling; each layer's
    two ZayaResidualScaling, a scale and a bias on the branch and on the residual, are the layer's)."""
    return float(2 * a.hidden) if a.residual_scaling else 0.0


def layer_norm_parameters(a: ModelArchitecture, mixer: str = "attention", mlp_kind: str = "") -> float:
    """One layer's norm weights: layer_norms of them, but where each sub-layer has its own (two or more) a layer
    without a mixer or without an MLP holds none for it (Nemotron-NAS's no_op blocks build neither the sub-layer nor
    its norm: NVIDIA-NeMo/Automodel decilm/layers.py Block); Inkling 2's full layers one more for the keys' input
    and one for the values' (GlobalAttentionSpec.input_norms)."""
    if a.layer_norms < 2:
        return a.layer_norms * _norm(a)
    present = (mixer != "none") + (mlp_kind != "none")
    g = a.global_attention
    inputs = g.input_norms - 1 if g is not None and mixer.removeprefix(KV_SHARED) == "global attention" else 0
    return ((a.layer_norms - a.weightless_norms) * present // 2 + inputs) * _norm(a)


def norm_gate_parameters(a: ModelArchitecture, moe_layer: bool) -> float:
    """A.X K2's norm gates in one layer (AXK2GatedRMSNorm's AXK2GateMLP: fc1 hidden -> rank, fc2 rank -> hidden, no
    biases; modular_axk2.py, transformers 5.25.0): after input_layernorm, and after post_attention_layernorm in an
    MoE layer."""
    rank = a.norm_gate_rank
    return 0.0 if rank is None else float(2 * a.hidden * rank * (1 + moe_layer))


def _block(
    a: ModelArchitecture, moe_layer: bool, mixer: str = "attention", mlp_kind: str = "", ffn: int = 0
) -> BlockCount:
    """One layer: its mixer, its norms and its MLP (dense of width `ffn`, else of its mixer's width
    (ModelArchitecture.dense_ffn); MoE; or none for a hybrid's single-mixer layers)."""
    if mixer in (SHARED_BLOCK, REUSED_BLOCK):  # Zamba's hybrid layer: a token runs the shared block in each
        own = ssm_parameters(a) + layer_norm_parameters(a, mixer, mlp_kind) + shared_block_layer_parameters(a)
        shared = shared_block_parameters(a)
        return BlockCount(own + (shared if mixer == SHARED_BLOCK else 0.0), own + shared, moe=False)
    idle_attention, routed_attention = attention_expert_parameters(a)
    attn = mixer_parameters(a, mixer) + per_layer_input_parameters(a) + altup_layer_parameters(a) + routed_attention
    # with the norms: each sub-layer's input
    norms = layer_norm_parameters(a, mixer, mlp_kind) + 2 * hyper_connection_parameters(a)
    norms += a.residual_gates * a.hidden  # Muse Spark's residual gates: a hidden-wide vector each
    norms += output_convolution_parameters(a) + (8 * a.hidden if a.residual_scaling else 0)  # ZAYA's two scalings
    norms += ngpt_layer_scale_parameters(a, mixer, mlp_kind, ffn)
    norms += norm_gate_parameters(a, moe_layer and a.moe is not None and mlp_kind != "none")
    if mlp_kind == "none":
        return BlockCount(attn + norms + idle_attention, attn + norms, moe=False)
    if not moe_layer or a.moe is None:
        width = ffn or a.dense_ffn(mixer)
        mlp = _mlp(a, width) + a.activation_scalars + (a.norm_weights * width if a.mlp_norm else 0)
        # a text-only batch skips a cross-attention layer whole (MllamaTextModel.forward): no token passes through
        active = 0.0 if mixer == "cross" else attn + norms + mlp
        return BlockCount(attn + norms + mlp + idle_attention, active, moe=False)
    e = a.moe
    expert = routed_expert(a)
    shared = e.shared * shared_expert(a)
    always = attn + norms + _router(a) + shared + latent_projections(a) + (_norm(a) if e.output_norm else 0.0)
    always += a.hidden if e.output_bias else 0.0
    total = always + e.experts * expert + vision_expert_parameters(a) + idle_attention
    active = always + e.active * expert
    return BlockCount(total, active, moe=True)


def block_tensors(
    a: ModelArchitecture, moe_layer: bool, mixer: str = "attention", mlp_kind: str = "", ffn: int = 0
) -> tuple[float, ...]:
    """One block's weight tensors, in forward order, as the HF implementations hold them (one nn.Linear per
    projection and per expert): what a framework's gradient buckets are filled with, whole. The norms' weights and
    the biases come last as one small tensor, so that the sizes sum to the block's count."""
    matrices = block_matrices(a, moe_layer, mixer, mlp_kind, ffn)
    rest = _block(a, moe_layer, mixer, mlp_kind, ffn).params - sum(matrices)
    return (*matrices, rest) if rest > 0 else matrices


def block_vectors(
    a: ModelArchitecture, moe_layer: bool, mixer: str = "attention", mlp_kind: str = "", ffn: int = 0
) -> int:
    """How many tensors the last of block_tensors stands for where it lumps the small ones (0: it lumps none): each
    norm's weight, and its bias under LayerNorm (one hidden-sized tensor each), and a bias a projection where
    linear layers have them (q, k and v alone with qkv_bias: one where they are fused), as the modules hold them."""
    tensors = block_tensors(a, moe_layer, mixer, mlp_kind, ffn)
    matrices = block_matrices(a, moe_layer, mixer, mlp_kind, ffn)
    if len(tensors) == len(matrices):
        return 0
    norms = round(layer_norm_parameters(a, mixer, mlp_kind) / a.hidden)
    biases = len(matrices) if a.linear_bias else ((1 if a.fused_qkv else 3) if a.qkv_bias else 0)
    return max(1, norms + biases)


def _mixer_matrices(a: ModelArchitecture, mixer: str) -> list[float]:
    """A hybrid's mixer's weight matrices, in forward order: Zamba's shared block's, Mamba's projections, gated
    DeltaNet's."""
    h, out = a.hidden, (_shared_block_matrices(a, mixer) if mixer in (SHARED_BLOCK, REUSED_BLOCK) else [])
    if "mamba" in mixer and a.ssm is not None:
        m = a.ssm
        if m.version == 2:
            assert m.heads is not None
            out += [h * (2 * m.inner + 2 * m.groups * m.state + m.heads), m.inner * h]
        else:
            assert m.dt_rank is not None
            out += [h * 2 * m.inner, m.inner * (m.dt_rank + 2 * m.state), m.dt_rank * m.inner, m.inner * h]
    if mixer == "conv" and a.short_conv is not None:
        out += [h * 3 * h, h * h]
    if mixer == "rglru" and a.rglru is not None:  # linear_y, linear_x, the two gates' blocks, linear_out
        w = a.rglru.width
        out += [h * w, h * w, w * (w // a.rglru.heads), w * (w // a.rglru.heads), w * h]
    if mixer == "rwkv" and a.rwkv is not None:  # key, value, receptance, output; the channel mixing's receptance
        w = a.rwkv.width
        out += [h * w, h * w, h * w, w * h, h * h]
    if mixer == "mlstm" and a.mlstm is not None:  # q, k, v, the output, input and forget gates, out_proj
        cell = a.mlstm
        qk, v, heads = cell.qk_dim, cell.v_dim, cell.heads
        out += [h * qk, h * qk, h * v, h * v, h * heads, h * heads, v * h]
    if mixer == "cross":  # Mllama's cross-attention: q, k, v, o (cross_attention_parameters)
        q, kv = a.heads * a.d_head, a.n_kv_heads * a.d_head
        out += [h * q, h * kv, h * kv, q * h]
    if mixer == "deltanet" and a.deltanet is not None and a.deltanet.form == "kda":
        return [float(t) for t in out] + _kda_matrices(a)
    if mixer == "deltanet" and a.deltanet is not None and a.deltanet.form == "lightning":
        return [float(t) for t in out] + _lightning_matrices(a)
    if mixer == "deltanet" and a.deltanet is not None and a.deltanet.form == "jet":
        return [float(t) for t in out] + _jet_matrices(a)
    if mixer == "deltanet" and a.deltanet is not None:
        d = a.deltanet
        keys, values = d.key_heads * d.key_dim, d.value_heads * d.value_dim
        out += [h * (2 * keys + 2 * values), h * 2 * d.value_heads, values * h]
    return [float(t) for t in out]


def block_matrices(
    a: ModelArchitecture, moe_layer: bool, mixer: str = "attention", mlp_kind: str = "", ffn: int = 0
) -> tuple[float, ...]:
    """One block's weight matrices (its linear layers' weights, the router's included), in forward order."""
    h, a = a.hidden, a.attention_of(mixer)
    if "attention" not in mixer or mixer in (SHARED_BLOCK, REUSED_BLOCK):  # Zamba's: _mixer_matrices
        attention: list[int] = []
    elif a.compressed_attention is not None:
        attention = _compressed_attention_matrices(a)
    elif a.mla is not None:
        m = a.mla
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        q = [h * a.heads * qk] if m.q_lora_rank is None else [h * m.q_lora_rank, m.q_lora_rank * a.heads * qk]
        kv_a = [h * (m.kv_lora_rank + m.qk_rope_head_dim)] if a.computes_kv(mixer) else []  # none where kv-shared
        kv = [*kv_a, m.kv_lora_rank * a.heads * (m.qk_nope_head_dim + m.v_head_dim)]
        attention = [*q, *kv, a.heads * m.v_head_dim * h]
    else:
        q_out, kv_out = a.heads * a.d_head, a.n_kv_heads * a.d_head
        values = [] if a.values_from_keys else [h * a.n_kv_heads * a.d_value]
        keys_values = [h * kv_out, *values] if a.computes_kv(mixer) else []
        relative = [h * a.heads * a.relative_logits.rank] if a.relative_logits is not None else []  # Inkling's r_proj
        relative += [h * a.heads] if a.sink_projection else []  # Inkling 2's sink_proj
        queries = [h * q_out * (2 if a.attention_gate else 1)]
        if a.fused_qkv and keys_values and a.attention_experts is None:
            # one linear layer projects Q, K and V (GPT-2's c_attn, Megatron's query_key_value): one tensor
            queries, keys_values = [queries[0] + sum(keys_values)], []
        attention = [*queries, *keys_values, *relative, a.heads * a.d_value * h]
        if a.head_gate:
            attention.append(h * a.heads)
        if a.attention_experts is not None:  # JetMoE's MoA: its router, each expert's query, the keys and values,
            width = a.n_kv_heads * a.d_head  # each expert's output projection
            experts = a.attention_experts
            attention = [h * experts, *[h * width] * experts, *keys_values, *[width * h] * experts]

    def mlp(width: int) -> list[int]:
        return [h * width, h * width, width * h] if a.gated_mlp else [h * width, width * h]

    if mlp_kind == "none":
        mlp_matrices: list[int] = []
    elif moe_layer and a.moe is not None:
        e = a.moe
        io = e.expert_io(h)
        routed = [io * e.ffn] * (3 if a.gated_mlp else 2)
        latent_in, latent_out = ([h * e.latent], [e.latent * h]) if e.latent else ([], [])
        r = e.router_mlp
        router = [h * e.router_rows()] if r is None else [h * r, r * r, r * r, r * e.router_rows()]  # ZAYA's MLP
        mlp_matrices = [*router, *latent_in] + [t for _ in range(e.experts) for t in routed] + latent_out
        mlp_matrices += [t for _ in range(e.shared) for t in mlp(e.shared_width)]
        if e.vision_experts and e.vision_ffn is not None:  # their router, then each vision expert
            mlp_matrices += [h * e.vision_experts] + [t for _ in range(e.vision_experts) for t in mlp(e.vision_ffn)]
    else:
        mlp_matrices = mlp(ffn or a.dense_ffn(mixer))
    if a.per_layer_input is not None:
        mlp_matrices += [h * a.per_layer_input.width, a.per_layer_input.width * h]
    if a.altup is not None:  # modality_router, prediction_coefs, linear_left, linear_right, correction_coefs
        n, rank = a.altup.inputs, a.altup.laurel_rank
        mlp_matrices += [h * n, n * n * n, h * rank, rank * h, n * n]
    streams = _hyper_matrices(a) if a.hyper_connected else []
    mixing = [*streams, *attention, *_compressor_matrices(a, mixer), *_mixer_matrices(a, mixer), *streams]
    mixing += mlp_matrices
    return tuple(float(t) for t in mixing)


def mtp_layer(a: ModelArchitecture) -> BlockCount:
    """One multi-token-prediction module: a block of the decoder's last layer's kind (Megatron-Core builds it from
    the last layer's spec), eh_proj (2h -> h) and its enorm, hnorm and final norm; the embedding and output head
    are the main model's (DeepSeek-V3 README_WEIGHTS.md; arXiv 2412.19437 section 2.2)."""
    block = _block(a, moe_layer=a.moe_layer(a.layers - 1))
    extra = 2 * a.hidden * a.hidden + 3 * _norm(a)
    return BlockCount(block.params + extra, block.active + extra, block.moe)


def tensor_parallel_parameters(counts: ParamCount, a: ModelArchitecture | None, tp: int) -> float:
    """The parameters one of `tp` tensor-parallel ranks holds under torchtitan's plan for a dense decoder
    (models/llama3/infra/parallelize.py apply_tp): the embedding (RowwiseParallel), the output head
    (ColwiseParallel) and every projection of the blocks split `tp` ways; the norms (SequenceParallel) whole on
    every rank, and so the query and key norms over one head's dimension (Qwen 3's q_norm and k_norm,
    SequenceParallel(sequence_dim=2) on the rank's heads)."""
    if tp == 1:
        return counts.total
    whole = dict(counts.components).get("norms", 0.0)
    if a is not None and a.qk_norm == "head":
        whole += a.attention_layers * 2 * a.qk_norm_weights * a.d_head
    return (counts.total - whole) / tp + whole


@per_object  # a frozen spec: counted once
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
    kinds = a.layer_kinds
    block_of = cache(lambda mixer, mlp, ffn: _block(a, mlp == "moe", mixer, mlp, ffn))  # a model's layers: few kinds
    blocks = tuple(block_of(*kind) for kind in kinds)
    if a.layer_weights:  # ALBERT: a layer running an earlier layer's weights holds none, and a token passes through
        blocks = tuple(b if a.holds_weights(i) else BlockCount(0.0, b.active, b.moe) for i, b in enumerate(blocks))
    if a.indexer is not None and a.indexer.layers:  # GLM-5.2: a layer reusing another's top-k holds no indexer
        spares = {m: indexer_parameters(a.attention_of(m)) for m, *_ in kinds if "attention" in m}  # at its width
        blocks = tuple(
            b
            if i in a.indexer.layers or "attention" not in kinds[i][0]  # GLM-5.3's KDA layers hold none to spare
            else BlockCount(b.params - spares[kinds[i][0]], b.active - spares[kinds[i][0]], b.moe)
            for i, b in enumerate(blocks)
        )
    dense_layers = sum(1 for _, mlp, _ in kinds if mlp == "dense")
    width = embedding_width(a)
    embedding = float(a.vocab * width)
    rows = a.output_vocab
    lm_head = (0.0 if a.tied_embeddings else float(rows * width)) + (float(rows) if a.head_bias else 0.0)
    positions = input_table_parameters(a)
    final_norm = outside_norm_parameters(a) + hyper_head_parameters(a) + attention_residual_parameters(a)
    final_norm += input_scale_parameters(a) + router_state_scale_parameters(a)
    final_norm += h if a.last_out_bias else 0  # GPT-NeoX-Japanese's last layer's dense_bias, held outside the blocks
    final_norm += head_transform_parameters(a) + a.relative_position_buckets * a.heads
    final_norm += embedding_projection_parameters(a) + (rows if a.ngpt_scales else 0)  # Dory's logit_scale
    per_layer = a.per_layer_input
    # Gemma 4's embed_tokens_per_layer, and per_layer_model_projection with per_layer_projection_norm
    per_layer_embedding = per_layer_projection = 0.0
    if per_layer is not None:
        per_layer_embedding = float(per_layer.vocab * a.layers * per_layer.width)
        per_layer_projection = float(h * a.layers * per_layer.width + a.norm_weights * per_layer.width)
    ngram = a.ngram_embedding
    if ngram is not None:  # Qwen4-Exp's tables are lookups; their projections, norms and convolutions run per token
        per_layer_embedding = float(sum(ngram.tables))
        per_layer_projection = float(len(ngram.layers) * ngram_layer_parameters(a))
    if a.ngram_input is not None:  # LongCat-Flash-Lite's tables are lookups; their post_projs run per token
        per_layer_embedding, per_layer_projection = ngram_input_parameters(a)
    outside = embedding + lm_head + positions + final_norm + per_layer_embedding + per_layer_projection
    outside += altup_projection_parameters(a) + rope_scale_parameters(a)
    active = sum(b.active for b in blocks) + outside
    contact_head = contact_head_parameters(a)  # held, not run by a token
    total = sum(b.params for b in blocks) + outside + contact_head

    mixers = {m for m, *_ in kinds}
    own_attention = [m for m in mixers if "attention" in m and m not in (SHARED_BLOCK, REUSED_BLOCK)]
    attn_matrix = max((_attention(a.attention_of(m))[1] for m in own_attention), default=0.0)
    mixer_matrices = [t for mixer in mixers for t in _mixer_matrices(a, mixer)]
    widths = [w for w in (a.ffn, a.kv_shared_ffn, a.moe.shared_ffn if a.moe else None, *a.ffn_widths) if w]
    expert_matrix = a.moe.expert_io(h) * a.moe.ffn if a.moe else 0
    matrices = [embedding, lm_head, attn_matrix, *mixer_matrices, expert_matrix, *(h * w for w in widths)]
    tables = [per_layer_embedding, per_layer_projection]
    if a.ngram_input is not None:  # LongCat-Flash-Lite's: each table and each projection a module of its own
        tables = [float(max(a.ngram_input.rows) * a.ngram_input.width), float(a.ngram_input.width * h)]
    largest_module = max([*matrices, *tables])

    mtp = a.mtp_layers * mtp_layer(a).params if a.mtp_layers else 0.0

    components: list[tuple[str, float]] = [("embedding", embedding)]
    held = [kind for i, kind in enumerate(kinds) if a.holds_weights(i)]  # the layers holding the weights they run
    if a.embedding_width is not None:
        components.append(("embedding projection", embedding_projection_parameters(a)))
    if own_attention:
        spared = [m for i, (m, *_) in enumerate(kinds) if "attention" in m and a.indexer and a.indexer.layers
                  and i not in a.indexer.layers]  # fmt: skip
        without = sum(indexer_parameters(a.attention_of(m)) for m in spared)  # each at its own width
        attention_of = cache(lambda mixer: attention_parameters(a, mixer))
        attention = sum(attention_of(m) for m, *_ in held if "attention" in m)
        if a.attention_experts is not None and a.moe is not None:  # the experts' projections have their own rows
            without += a.attention_layers * a.moe.active * attention_expert(a)
        components.append(("attention", attention - without))
        if a.attention_experts is not None and a.moe is not None:
            components.append(("attention experts", a.attention_layers * a.attention_experts * attention_expert(a)))
            routed = attention_expert_parameters(a)[1]
            components.append(("attention routers and output biases", a.attention_layers * routed))
    form = a.deltanet.form if a.deltanet is not None else "gated"
    delta = {
        "kda": "Kimi Delta Attention mixers",
        "lightning": "lightning attention mixers",
        "jet": "JetBlocks (gated DeltaNet, dynamic convolution)",
    }.get(form, "gated DeltaNet mixers")
    for label, kind in (
        ("Mamba mixers", "mamba"),
        (delta, "deltanet"),
        ("short convolutions", "conv"),
        ("cross-attention (image states)", "cross"),
        ("RG-LRU recurrent blocks", "rglru"),
        ("RWKV time mixing and channel-mixing gates", "rwkv"),
        ("mLSTM layers", "mlstm"),
    ):
        layers = sum(1 for mixer, *_ in kinds if kind in mixer)
        if layers:
            components.append((label, mixer_parameters(a, kind) * layers))
    if a.shared_block is not None:
        holders = sum(1 for mixer, *_ in kinds if mixer == SHARED_BLOCK)
        hybrids = holders + sum(1 for mixer, *_ in kinds if mixer == REUSED_BLOCK)
        components.append(("shared transformer blocks", shared_block_parameters(a) * holders))
        components.append(("hybrid layers' linear layers and adapters", shared_block_layer_parameters(a) * hybrids))
    compressors_of = cache(lambda mixer: compressor_parameters(a, mixer))
    compressors = sum(compressors_of(mixer) for mixer, *_ in kinds)
    if compressors:
        components.append(("compressors and indexers", compressors))
    norms_of = cache(lambda mixer, mlp: layer_norm_parameters(a, mixer, mlp))
    layer_norms = sum(norms_of(mixer, mlp) for mixer, mlp, _ in held)
    if a.mlp_norm:  # a norm over each dense MLP's intermediate (Kosmos-2, BitNet)
        layer_norms += sum(a.norm_weights * ffn for _, mlp, ffn in kinds if mlp == "dense")
    components.append(("norms", layer_norms + outside_norm_parameters(a)))
    if a.residual_gates:
        components.append(("residual gates", a.residual_gates * a.hidden * a.layers))
    if a.ngpt_scales:
        scales = sum(ngpt_layer_scale_parameters(a, *kind) for kind in held) + rows
        components.append(("nGPT scales", scales))
    if a.sconv_kernel is not None:
        components.append(("sub-layer output convolutions", output_convolution_parameters(a) * a.layers))
    if a.attention_residual_block is not None:
        components.append(("attention residual queries", attention_residual_parameters(a)))
    if a.residual_scaling:
        components.append(("residual scales", 8 * a.hidden * a.layers + input_scale_parameters(a)))
    if a.last_out_bias:
        components.append(("last layer's output projection bias", float(a.hidden)))
    if a.head_transform != "none":
        components.append(("output head's dense layer and norm", head_transform_parameters(a)))
    if a.norm_gate_rank:
        components.append(("norm gates", sum(norm_gate_parameters(a, mlp == "moe") for _, mlp, _ in kinds)))
    if a.hyper_connected:
        streams = 2 * hyper_connection_parameters(a) * a.layers + hyper_head_parameters(a)
        components.append(("hyper-connections", streams))
    if dense_layers:  # with each MLP's activation scalars (Apertus's xIELU)
        mlps = sum(_mlp(a, ffn) + a.activation_scalars for _, mlp, ffn in held if mlp == "dense")
        components.append(("dense MLP", mlps))
    if a.altup is not None:
        altup = altup_layer_parameters(a) * a.layers + altup_projection_parameters(a)
        components.append(("AltUp and LAuReL", altup))
    if per_layer:
        components.append(("per-layer embeddings", per_layer_embedding))
        components.append(("per-layer inputs", per_layer_projection + per_layer_input_parameters(a) * a.layers))
    if ngram:
        components.append(("n-gram embedding tables", per_layer_embedding))
        components.append(("n-gram layers", per_layer_projection))
    if a.ngram_input is not None:
        components.append(("n-gram embedding tables", per_layer_embedding))
        components.append(("n-gram projections", per_layer_projection))
    moe_layers = sum(1 for _, mlp, _ in kinds if mlp == "moe")
    vision = vision_expert_parameters(a) * moe_layers  # held and trained, never run by text
    if a.moe:
        components.append(("routed experts", routed_expert(a) * a.moe.experts * moe_layers))
        if a.moe.latent:
            components.append(("latent projections", latent_projections(a) * moe_layers))
        if a.moe.shared:
            components.append(("shared experts", shared_expert(a) * a.moe.shared * moe_layers))
        components.append(("routers", _router(a) * moe_layers + router_state_scale_parameters(a)))
        if a.moe.output_bias:
            components.append(("MoE output biases", a.hidden * moe_layers))
        if a.moe.output_norm:
            components.append(("MoE output norms", _norm(a) * moe_layers))
        if vision:
            components.append(("vision experts and their routers", vision))
    if a.rope_alpha:
        components.append(("rotary frequency scale", rope_scale_parameters(a)))
    if a.learned_positions:
        components.append(("position table", float(a.learned_positions * width)))
    if a.token_types:
        components.append(("token-type tables", float(a.token_types * width)))
    if a.relative_position_buckets:
        components.append(("relative position biases", float(a.relative_position_buckets * a.heads)))
    if contact_head:
        components.append(("contact prediction head", contact_head))
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
        positions=positions,
        per_layer_embedding=per_layer_embedding,
        per_layer_projection=per_layer_projection,
        idle=sum(b.params for b, (mixer, *_) in zip(blocks, kinds, strict=True) if mixer == "cross")
        + vision
        + contact_head,
    )
