"""Training and inference FLOPs per token, and compute time on a GPU.

Model FLOPs per token (Chowdhery et al. 2022, PaLM, appendix B): 6N + 12 L H Q T for training, where N counts
the weights a token multiplies (active parameters minus the input embedding and position tables, which are
lookups), L layers, H heads, Q head dimension and T the sequence length: the attention score and value
matmuls. With different query/key and value head sizes (MLA) the term is 6 L H (Q_qk + Q_v) T.
Forward is one third, backward two thirds (Kaplan et al. 2020). Recomputation runs forward work again in
the backward pass: full recomputation one more forward of every layer, selective the attention scores only
(Korthikanti et al. 2022); model FLOPs (and MFU) do not count it.
Time = FLOPs executed / (dense BF16 peak x efficiency). The efficiency is the `--mfu` input: the fraction of peak
the training math sustains when nothing waits for communication, applied to every FLOP the GPU executes
(recomputation included). The MFU a report prints counts model FLOPs only (PaLM's definition), so it is lower
when recomputation runs or communication is exposed.
"""

from __future__ import annotations

from dpcost.engine.attention_keys import (
    bidirectional_keys,
    cached_entries,
    cached_keys,
    causal_keys,
    compressed_entries,
)
from dpcost.engine.checkpointing import DEFAULT_MODULES, checkpointed_share, recomputed_modules
from dpcost.engine.params import ParamCount, mtp_layer
from dpcost.frozen import frozen
from dpcost.specs import CSA, HCA, ModelArchitecture

__all__ = [
    "FlopsPerToken",
    "attention_flops",
    "flops_per_token",
    "layer_mixer_flops",
    "mixer_recurrence_flops",
    "mla_up_projection_flops",
    "mlp_recompute_flops",
    "mtp_forward_flops",
    "recurrence_flops",
]


@frozen
class FlopsPerToken:
    forward: float
    backward: float
    recompute: float  # extra forward work in the backward pass, not model FLOPs

    @property
    def model(self) -> float:
        """Model FLOPs per token for training (forward + backward)."""
        return self.forward + self.backward

    @property
    def executed(self) -> float:
        return self.model + self.recompute


def attention_flops(arch: ModelArchitecture, seq_len: int, decode: bool = False) -> float:
    """Forward FLOPs per token of the score and value matmuls: 2 L H (Q_qk + Q_v) T (PaLM appendix B), each layer at
    its own head_dim (Gemma 4's global layers). PaLM's T is twice the keys a query attends to causally on average
    (causal_keys): a sliding-window or chunked layer counts twice its own; an encoder's, those it sees
    (bidirectional_keys). Decoding one token (`decode`) it reads
    the keys its cache holds (cached_keys). With DeepSeek-V3.2's indexer, attention over its top-k keys and the
    indexer's scores over all T; with MiniMax M3's block indexer, so in the layers that have one and over every key
    in the others. DeepSeek-V4's layers read their window's keys and their compressed entries, and its
    sparse layers' indexers score the entries (_compressed)."""
    mla = arch.mla
    flops = 0.0
    for mixer, local, count in arch.attention_kinds:
        view = arch.attention_of(mixer)
        width = mla.qk_nope_head_dim + mla.qk_rope_head_dim + mla.v_head_dim if mla else view.d_head + view.d_value
        if decode:
            dense = cached_keys(seq_len, local)
        elif arch.bidirectional:  # an encoder's queries see every key (or their window's): no causal half
            dense = bidirectional_keys(seq_len, local)
        else:
            dense = 2 * causal_keys(seq_len, local)
        sparse = 0 if arch.indexer is None else count
        if arch.indexer is not None and arch.indexer.form == "block":  # M3: only the layers with an indexer
            sparse = min(count, arch.indexer_layers)
        entries, indexed = _compressed(arch, mixer, seq_len, decode)
        topk = min(seq_len, arch.indexer.topk) if arch.indexer is not None else 0.0
        flops += 2.0 * view.heads * width * (sparse * (topk + entries) + (count - sparse) * (dense + entries))
        if indexed and arch.compressed_attention is not None:
            c = arch.compressed_attention
            flops += 2.0 * count * c.index_heads * c.index_head_dim * indexed
    if arch.indexer is not None:
        # DeepSeek Sparse Attention (DeepSeek-V3.2): attention reads the indexer's top-k keys, and the indexer scores
        # the whole context, I(t, s) = sum_j w(t, j) ReLU(q(t, j) . k(s)) over its heads: 2 H_I d_I T; GLM-5.3's over
        # its pools of `pool` keys (Glm5NextTextIndexer.get_pooled_states), T / pool of them, as Qwen4-Exp's blocks
        scored = seq_len / arch.indexer.pool if arch.indexer.pool else seq_len
        flops += 2.0 * arch.indexer_layers * arch.indexer.heads * arch.indexer.head_dim * scored
    return flops


def _compressed(arch: ModelArchitecture, mixer: str, seq_len: int, decode: bool) -> tuple[float, float]:
    """DeepSeek-V4's compressed entries in PaLM's convention, twice the causal average as the window's keys
    (attention_keys.compressed_entries), and a decoded token all it can read: those a `mixer` layer's attention
    reads beside its window, all of them in a heavily compressed layer, at most the indexer's top k in a sparse one
    (capped as DeepSeek-V3.2's top k is, min(T, k)); and those its indexer scores, ReLU(q . k) over every index
    head (the sparse layers only). (0, 0) elsewhere."""
    c = arch.compressed_attention
    if c is None or mixer not in (CSA, HCA):
        return 0.0, 0.0
    rate = c.csa_rate if mixer == CSA else c.hca_rate
    entries = cached_entries(seq_len, rate) if decode else 2 * compressed_entries(seq_len, rate)
    if mixer == HCA:
        return entries, 0.0
    return min(entries, c.index_topk), entries


def recurrence_flops(arch: ModelArchitecture, decode: bool = False) -> float:
    """Forward FLOPs per token of every layer's recurrence (mixer_recurrence_flops), zero without one."""
    if not arch.mixers:
        return 0.0
    return sum(mixer_recurrence_flops(arch, arch.mixer(i), decode) for i in range(arch.layers))


def mixer_recurrence_flops(arch: ModelArchitecture, mixer: str, decode: bool = False) -> float:
    """Forward FLOPs per token of one layer's recurrence, which holds no weights and so is not in 2N:
    - Mamba-1's selective scan: 9 D N + D per channel width D and state N (Tri Dao's count, state-spaces/mamba#110);
    - Mamba-2's SSD in chunks of Q (Dao & Gu 2024, Listing 1's four einsums): C B^T over the chunk (2 Q G N), its
      masked product with X (2 Q I), the chunk's states (2 N I) and the states' output (2 N I);
    - gated DeltaNet in chunks of C (Yang et al. 2024, the chunkwise form): per value head, Q K^T, K K^T and the
      W = T (beta K) transform (6 C d_k), U = T (beta V) and the intra-chunk output (4 C d_v), and reading,
      correcting and updating the d_k x d_v state (6 d_k d_v); a JetBlock (Jet-Nemotron's jet_block.py) the same
      recurrence, and its convolution over the V value channels with the kernel of k taps its generator made for the
      token (2 k V; the generator's matmuls are weights, in 2N);
    - lightning attention in blocks of C (Qin et al. 2024, arXiv 2401.04658; MiniMax-01, arXiv 2501.08313): per head,
      the block's Q K^T and its product with V (4 C d), reading the d x d state (the inter-block product) and
      updating it with the block's K^T V (4 d d);
    - LFM2's short convolution: a depthwise kernel of k taps over h channels (2 k h) and its two gates (2 h);
    - Griffin's recurrent block over w channels (arXiv 2402.19427 section 2.4): the depthwise kernel of k taps (2 k w),
      the recurrence's multiply-add (2 w) and the gating of its input and output (2 w);
    - RWKV-4's WKV recurrence over w channels (modeling_rwkv.py rwkv_linear_attention_cpu, its kernel's reference
      form): the output's numerator, denominator and ratio and the state's update, 17 additions, multiplications
      and divisions a channel (its 4 exponentials and 2 maxima not counted), the receptance gate (w), the five
      token-shift interpolations (3 h each) and the channel mixing's gate (h): 18 w + 16 h;
    - xLSTM's mLSTM in chunks of C (Beck et al. 2025, arXiv 2503.13427, its chunkwise form): per head, the chunk's
      Q K^T and its product with V (2 C d_qk + 2 C d_v), reading the d_qk x d_v memory and updating it with the
      chunk's K^T V (4 d_qk d_v).
    Decoding one token runs the recurrent form: the chunk terms fall away."""
    chunked = 0.0 if decode else 1.0
    flops, m, d = 0.0, arch.ssm, arch.deltanet
    if "mamba" in mixer and m is not None:
        if m.version == 1:
            flops += 9.0 * m.inner * m.state + m.inner
        else:
            flops += chunked * 2.0 * m.chunk * (m.groups * m.state + m.inner) + 4.0 * m.state * m.inner
    if mixer == "deltanet" and d is not None and d.form == "lightning":
        flops += d.value_heads * (chunked * 4.0 * d.chunk * d.key_dim + 4.0 * d.key_dim * d.value_dim)
    elif mixer == "deltanet" and d is not None:
        intra = 6.0 * d.chunk * d.key_dim + 4.0 * d.chunk * d.value_dim
        flops += d.value_heads * (chunked * intra + 6.0 * d.key_dim * d.value_dim)
        if d.form == "jet":  # the generated kernels are no weights: their taps are not in 2N
            flops += 2.0 * d.conv_kernel * d.conv_channels
    if mixer == "conv" and arch.short_conv is not None:  # LFM2: the depthwise kernel over h channels, and its gates
        flops += 2.0 * arch.short_conv.kernel * arch.hidden + 2.0 * arch.hidden
    if mixer == "rglru" and arch.rglru is not None:
        flops += 2.0 * arch.rglru.conv_kernel * arch.rglru.width + 4.0 * arch.rglru.width
    if mixer == "rwkv" and arch.rwkv is not None:
        flops += 18.0 * arch.rwkv.width + 16.0 * arch.hidden
    if mixer == "mlstm" and arch.mlstm is not None:
        cell = arch.mlstm
        d_qk, d_v = cell.qk_dim / cell.heads, cell.v_dim / cell.heads
        flops += cell.heads * (chunked * 2.0 * cell.chunk * (d_qk + d_v) + 4.0 * d_qk * d_v)
    return flops


def layer_mixer_flops(arch: ModelArchitecture, seq_len: int) -> tuple[float, ...]:
    """Forward FLOPs per token of each layer's mixer beyond its weights' 2N, in order: the attention layers share
    attention_flops evenly (exact where they see the same context), a recurrent layer its
    mixer_recurrence_flops."""
    attention = attention_flops(arch, seq_len) / arch.attention_layers if arch.attention_layers else 0.0
    if not arch.mixers:  # attention in every layer
        return (attention,) * arch.layers
    # once per kind of mixer, not per layer: a layout search asks for every plan it costs
    per_kind = {m: (attention if "attention" in m else 0.0) + mixer_recurrence_flops(arch, m) for m in set(arch.mixers)}
    return tuple(per_kind[m] for m in arch.mixers)


def mtp_forward_flops(counts: ParamCount, arch: ModelArchitecture, seq_len: int) -> float:
    """Forward FLOPs per token of one multi-token-prediction module: 2N of its layer and eh_proj (params.mtp_layer),
    one layer's attention, and the output head run again (DeepSeek-V3, arXiv 2412.19437 section 2.2)."""
    head = counts.embedding if arch.tied_embeddings else counts.lm_head
    return 2.0 * mtp_layer(arch).active + attention_flops(arch, seq_len) / arch.layers + 2.0 * head


def mla_up_projection_flops(arch: ModelArchitecture) -> float:
    """Forward FLOPs per token of every MLA layer's up-projections, which recompute_modules "mla_up_proj" runs again
    in the backward (Megatron-Core multi_latent_attention.py, qkv_up_proj_and_rope_apply): the query's from its
    latent (q_lora_rank x heads x (qk_nope + qk_rope)), or from the hidden state where the model has no query latent
    (linear_q_proj runs in the same function), and the keys' and values' (kv_lora_rank x heads x (qk_nope + v))."""
    m = arch.mla
    if m is None:
        return 0.0
    query = (m.q_lora_rank or arch.hidden) * arch.heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)
    key_value = m.kv_lora_rank * arch.heads * (m.qk_nope_head_dim + m.v_head_dim)
    return 2.0 * arch.attention_layers * (query + key_value)


def mlp_recompute_flops(arch: ModelArchitecture, modules: frozenset[str]) -> float:
    """Forward FLOPs per token of the MLP work Megatron's recompute_modules "mlp" (every dense layer's MLP), "moe"
    (every MoE layer whole: router, latent projections, the top-k routed experts and the shared ones) and
    "shared_experts" (the shared ones alone) run again in the backward (transformer_config.py, moe_layer.py; the
    matmuls ops.layer_ops prices for them)."""
    h, fc = arch.hidden, 3 if arch.gated_mlp else 2  # matmuls of an MLP: gate, up and down; or up and down
    held = recomputed_modules(modules)  # "moe" holds the router and the shared experts
    total = 0.0
    for mixer, mlp, ffn in arch.layer_kinds:
        if mlp == "dense" and "mlp" in held and mixer != "cross":  # a text-only batch skips a cross layer
            total += 2.0 * fc * h * ffn
        elif mlp == "moe" and arch.moe is not None:
            e = arch.moe
            if "router" in held:
                total += 2.0 * h * e.experts
            if "moe" in held:
                total += 2.0 * (2 * h * (e.latent or 0) + e.active * fc * e.expert_io(h) * e.ffn)
            if "shared_experts" in held:
                total += 2.0 * e.shared * fc * h * e.shared_width
    return total


def flops_per_token(
    counts: ParamCount,
    arch: ModelArchitecture | None,
    seq_len: int,
    recompute: str = "none",
    flash: bool = True,
    every: int = 1,
    modules: frozenset[str] = DEFAULT_MODULES,
    block: int | None = None,
) -> FlopsPerToken:
    """Training FLOPs per token (PaLM's 6N + 12LHQT), split into forward, backward and recomputation.

    Selective recomputation of core_attn redoes the attention scores; FlashAttention's backward already does so
    inside its kernel, so with flash it adds nothing to the model's work (and saves no memory: activations.py); of
    mla_up_proj, MLA's up-projections (mla_up_projection_flops); of mlp, moe and shared_experts, their matmuls
    (mlp_recompute_flops); layernorm and moe_act run no matmul. Per-op SAC
    (checkpointing.py, "op") re-runs the mm calls it did not save, every other one, and so half of the layers'
    matmul FLOPs on average over two iterations; the attention kernel's output is saved. With `every` = K only
    layers // K blocks are checkpointed, with `block` = N the first N (checkpointing.checkpointed_share), each at
    the layers' mean FLOPs (op by op, ops.micro_batch_compute counts the first N's own)."""
    head = counts.lm_head
    if arch is not None and arch.tied_embeddings:
        head = counts.embedding  # the tied embedding is the output projection too
    matmul_params = counts.active - counts.lookups - counts.lm_head + head
    attention = attention_flops(arch, seq_len) if arch is not None else 0.0
    forward = 2.0 * matmul_params + attention + (recurrence_flops(arch) if arch is not None else 0.0)
    if recompute == "full":
        extra = forward - 2.0 * head  # every layer again, not the output head
    elif recompute == "op":
        extra = 0.5 * 2.0 * (matmul_params - head)
    elif recompute == "selective":
        extra = attention if "core_attn" in modules and not flash else 0.0
        if arch is not None:
            extra += mla_up_projection_flops(arch) if "mla_up_proj" in modules else 0.0
            extra += mlp_recompute_flops(arch, modules)
    else:
        extra = 0.0
    if arch is not None and (every > 1 or block is not None):
        extra *= checkpointed_share(arch.layers, every, block)
    return FlopsPerToken(forward=forward, backward=2 * forward, recompute=extra)
