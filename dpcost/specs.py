"""Validated specs of models and topologies (pydantic v2, frozen, unknown fields rejected).

Unit strings are converted here, once: every quantity below is a float in SI units (bytes, seconds, bytes/s,
FLOP/s) after validation. The engine takes these objects and never parses text.
"""

# No `from __future__ import annotations` here: pydantic would evaluate each string annotation as it builds the
# class (engine/report.py imported in 28 ms without it, 45 ms with it: start-up, README's Speed).

import math
from collections import Counter
from collections.abc import Iterable
from functools import cache, cached_property
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from dpcost.units import parse_bandwidth, parse_bytes, parse_count, parse_flops, parse_seconds

__all__ = [
    "CSA",
    "HCA",
    "Activation",
    "Calibration",
    "CompressedAttentionSpec",
    "DeltaNetSpec",
    "GPUArch",
    "GPUSpec",
    "InNetworkReduction",
    "IndexerSpec",
    "LocalAttentionSpec",
    "MLASpec",
    "MoESpec",
    "ModelArchitecture",
    "ModelSpec",
    "NcclChannels",
    "PerLayerInputSpec",
    "Published",
    "SSMSpec",
    "SharedBlockSpec",
    "TierLatency",
    "TierSpec",
    "TopologySpec",
]

# NCCL's protocols, in its own order (src/include/plugin/nccl_tuner.h at v2.30.7-1: NCCL_PROTO_LL 0, NCCL_PROTO_LL128
# 1, NCCL_PROTO_SIMPLE 2)
Protocol = Literal["ll", "ll128", "simple"]
PROTOCOLS: tuple[Protocol, ...] = ("ll", "ll128", "simple")


def nccl_proto(value: Any) -> Any:
    """An NCCL_PROTO list: one protocol or several, comma-separated, in any case ("Simple,LL128", as NCCL's parseList
    reads it, src/graph/tuning.cc), kept as the names it allows, lower case, in NCCL's order. Spaces after a comma are
    forgiven; NCCL's "^" exclusion and per-collective prefixes are not taken."""
    if not isinstance(value, str):
        return value
    names = {name.strip().lower() for name in value.split(",")}
    if not names <= set(PROTOCOLS):
        said = f"one or more of {', '.join(PROTOCOLS)}, comma-separated as NCCL_PROTO takes them, got {value!r}"
        raise ValueError(said)
    return ",".join(name for name in PROTOCOLS if name in names)


# NCCL_ALGO's algorithm names (src/init.cc ncclAlgoStr at v2.30.7-1; "CollNet" before 2.14), in any case, by dpcost's
# name: CollNetDirect and CollNetChain are dpcost's one collnet
NCCL_ALGO_NAMES = {
    "tree": "tree",
    "ring": "ring",
    "collnetdirect": "collnet",
    "collnetchain": "collnet",
    "collnet": "collnet",
    "nvls": "nvls",
    "nvlstree": "nvls_tree",
    "pat": "pat",
}
# NCCL_ALGO's function prefixes (src/init.cc ncclFuncStr), in any case, by dpcost's op
NCCL_FUNCTIONS = {
    "broadcast": "broadcast",
    "reduce": "reduce",
    "allgather": "all_gather",
    "reducescatter": "reduce_scatter",
    "allreduce": "all_reduce",
}


# NCCL_ALGO's elements at v2.30.7-1 (src/init.cc ncclAlgoStr), lower case, and the one name older NCCL took: "CollNet",
# its single CollNet algorithm from 2.6.4 until 2.14.3 split it into today's two
_NCCL_ALGO_ELEMENTS = ("tree", "ring", "collnetdirect", "collnetchain", "nvls", "nvlstree", "pat")
_NCCL_ALGO_BEFORE_2_14 = {"collnet": ("collnetdirect", "collnetchain")}


@cache
def nccl_algo_enabled(setting: str) -> dict[str, frozenset[str]]:
    """The algorithms an NCCL_ALGO setting leaves each collective (dpcost's names), as NCCL's parseList reads it
    (src/graph/tuning.cc:36-136, applied at :461 and :538, v2.30.7-1; the function prefixes since 2.24.3):
    `;`-separated entries, only the first without a `function:` prefix (then for every function), split as strtok
    splits them (empty tokens skipped, what follows a second `:` not read); each a `,`-separated list of the
    algorithms to enable, all others off, or after a `^` of those to disable, all others on ("^NVLS": every
    algorithm but NVLS; "Ring,Tree"; "allreduce:tree;allgather:ring"); names matched whole, in any case
    (strcasecmp). A ValueError names what NCCL would refuse (ncclInvalidUsage), or, for an entry of colons alone,
    read from a null pointer."""
    refused = f"NCCL_ALGO={setting[:60]}: "
    enabled = {op: set(_NCCL_ALGO_ELEMENTS) for op in NCCL_FUNCTIONS.values()}
    for number, entry in enumerate(e for e in setting.split(";") if e):
        tokens = [t for t in entry.split(":") if t]
        if not tokens:
            raise ValueError(refused + f"{entry!r} names neither a function nor an algorithm")
        if len(tokens) == 1 and (number or setting.startswith(";")):  # tuning.cc:69: not the string's first entry
            raise ValueError(refused + f"every entry but the first must name its function ({entry!r})")
        prefix, listed = (tokens[0], tokens[1]) if len(tokens) > 1 else (None, tokens[0])
        ops = list(NCCL_FUNCTIONS.values()) if prefix is None else [NCCL_FUNCTIONS.get(prefix.lower())]
        if None in ops:
            raise ValueError(
                refused + f"{str(prefix)[:30]!r} is no function NCCL names (Broadcast, Reduce, AllGather, "
                "ReduceScatter, AllReduce)"
            )
        excluded = listed.startswith("^")
        names: set[str] = set()
        for word in (w.lower() for w in listed.removeprefix("^").split(",") if w):
            if word not in _NCCL_ALGO_ELEMENTS and word not in _NCCL_ALGO_BEFORE_2_14:
                raise ValueError(
                    refused + f"{word[:30]!r} is not one of Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, "
                    "PAT (or CollNet, before NCCL 2.14)"
                )
            names.update(_NCCL_ALGO_BEFORE_2_14.get(word, (word,)))
        for op in ops:
            assert op is not None
            enabled[op] = set(_NCCL_ALGO_ELEMENTS) - names if excluded else names
    return {op: frozenset(NCCL_ALGO_NAMES[n] for n in names) for op, names in enabled.items()}


def nccl_algo_setting(value: Any) -> Any:
    """An NCCL_ALGO setting a cluster or a plan runs under, as NCCL reads it (nccl_algo_enabled), kept as written. It
    must leave every collective Ring: Ring runs every collective on every group, and NCCL fails a call that none of
    the algorithms left can run (which calls those are depends on each group's placement)."""
    if not isinstance(value, str):
        return value
    setting = value.strip()
    enabled = nccl_algo_enabled(setting)
    without = [op for op, names in enabled.items() if "ring" not in names]
    if without:
        raise ValueError(
            f"NCCL_ALGO={setting[:60]} takes Ring away from {', '.join(without)}: dpcost prices settings that leave "
            "every collective Ring (^NVLS, Ring,Tree, allreduce:tree,ring), as NCCL fails a call that none of the "
            "algorithms left can run"
        )
    return setting


def allowed_protocols(protocol: str | None) -> tuple[Protocol, ...]:
    """The protocols NCCL may run under a forced NCCL_PROTO (`protocol`: one name, or several comma-separated as
    nccl_proto keeps them); all three where none is forced."""
    return PROTOCOLS if protocol is None else tuple(pr for pr in PROTOCOLS if pr in protocol.split(","))


# Bounds are physical plausibility, not policy: they turn typos (a bandwidth of 1e-300, a billion layers) into a
# clear message before any arithmetic could overflow or loop for hours. Units.py bounds the other side.
# In a spec file each takes a unit string ("80GB", "450GB/s", "2.5us") or a plain SI number (what the schema says).
Bytes = Annotated[float, BeforeValidator(parse_bytes, json_schema_input_type=str | float), Field(ge=1e6)]
Bandwidth = Annotated[float, BeforeValidator(parse_bandwidth, json_schema_input_type=str | float), Field(ge=1e6)]
Seconds = Annotated[float, BeforeValidator(parse_seconds, json_schema_input_type=str | float), Field(ge=0)]
Flops = Annotated[float, BeforeValidator(parse_flops, json_schema_input_type=str | float), Field(ge=1e9)]
Count = Annotated[float, BeforeValidator(parse_count, json_schema_input_type=str | float), Field(ge=1)]


def _unset(flag: bool) -> bool:
    """A flag at its default (false), which a dump leaves out."""
    return not flag


Fraction = Annotated[float, Field(ge=0.01, le=1)]
PositiveInt = Annotated[int, Field(gt=0, le=10_000_000, strict=True)]
NonNegativeInt = Annotated[int, Field(ge=0, le=10_000_000, strict=True)]
MAX_LAYERS = 100_000
Layers = Annotated[int, Field(gt=0, le=MAX_LAYERS, strict=True)]
Slug = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=64)]
Text = Annotated[str, Field(pattern=r"^[^\x00-\x1f\x7f]*$", max_length=500)]  # printable: it reaches terminals


class Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


# ----------------------------------------------------------------------------------------------- models


class MoESpec(Spec):
    """Mixture-of-experts MLP: `experts` routed experts of which `active` serve each token, plus `shared`."""

    experts: PositiveInt
    active: PositiveInt
    shared: NonNegativeInt = 0
    ffn: PositiveInt = Field(description="intermediate size of one expert")
    shared_ffn: PositiveInt | None = Field(
        None, description="intermediate size of the shared expert(s), if not `ffn` (Qwen2-MoE)"
    )
    shared_gate: bool = Field(False, description="a sigmoid gate (hidden -> 1) on the shared expert (Qwen2-MoE)")
    first_dense_layers: NonNegativeInt = Field(0, description="leading layers with a dense MLP (DeepSeek)")
    every: PositiveInt = Field(1, description="MoE in layers i with (i + 1) % every == 0 (Llama 4, Qwen2-MoE)")
    dense_layers: tuple[NonNegativeInt, ...] = Field((), description="further layers with a dense MLP (Qwen)")
    router_bias: bool = Field(False, description="a per-expert routing bias (DeepSeek-V3 e_score_correction)")
    output_norm: bool = Field(
        False, description="a norm over the MoE block's output (A.X K1's post_mlp_layernorm)", exclude_if=_unset
    )
    output_bias: bool = Field(
        False, description="a bias added to the MoE block's output (JetMoE's JetMoeMoE.bias)", exclude_if=_unset
    )
    vision_experts: NonNegativeInt = Field(
        0,
        description="modality-isolated experts beside the routed ones, with a router of their own, which only image "
        "and video tokens reach (ERNIE-4.5-VL's vision_moe): held and trained, never run by text",
        exclude_if=lambda v: not v,
    )
    vision_ffn: PositiveInt | None = Field(
        None, description="intermediate size of one vision expert", exclude_if=lambda v: v is None
    )
    router_outputs: PositiveInt | None = Field(
        None,
        description="the router's scores per token, if more than `experts` (LongCat-Flash's zero-computation experts, "
        "which return their input and hold no weights)",
        exclude_if=lambda v: v is None,
    )
    router_scale: bool = Field(
        False,
        description="a learned scalar on the routing weights in each MoE layer (Inkling's gate.global_scale)",
        exclude_if=_unset,
    )
    expert_norms: bool = Field(
        False,
        description="a norm over each expert's output, each routed expert with its own weights and each shared "
        "expert too (Ergo's post_expert_norm and shared_experts.norm)",
        exclude_if=_unset,
    )
    router_mlp: PositiveInt | None = Field(
        None,
        description="the router's hidden width where it is an MLP, not one matrix (ZAYA's ZayaRouter, "
        "router_hidden_size: down_proj from hidden, a norm, two GELU layers, out_proj to the scores, biased but the "
        "last; after the first layer, a scale on the state the previous layer's router passes on)",
        exclude_if=lambda v: v is None,
    )
    router_weighs_shared: bool = Field(
        False,
        description="the router scores the shared experts too, their weights its last `shared` outputs, which the "
        "correction bias leaves out (Inkling's InklingTopkRouter)",
        exclude_if=_unset,
    )
    latent: PositiveInt | None = Field(
        None,
        description="the width the routed experts work in, if not hidden (Nemotron 3's LatentMoE: a hidden -> latent "
        "projection before them, latent -> hidden after)",
        exclude_if=lambda v: v is None,
    )
    latent_norms: NonNegativeInt = Field(
        0,
        description="norms of the latent width in each MoE layer (Muse Spark's pre_expert_norm and the experts' "
        "post_expert_norm: 2)",
        exclude_if=lambda v: not v,
    )
    expert_loop: bool = Field(
        False,
        description="transformers' own experts forward loops over the experts hit, each running its activation on its "
        "rows (DbrxExperts), where the default grouped_mm forward gates every routed row at once",
        exclude_if=_unset,
    )
    every_expert: bool = Field(
        False,
        description="transformers' own MoE runs every expert on every token, each copy weighted by its router score, "
        "zero where the token is not routed (Llama4TextMoe): run as Hugging Face's code (eager kernels), the experts "
        "compute and keep `experts` copies of a token, not `active`",
        exclude_if=_unset,
    )

    @model_validator(mode="after")
    def _active_le_experts(self) -> "MoESpec":
        if self.active > self.experts:
            raise ValueError(f"active ({self.active}) must not exceed experts ({self.experts})")
        if self.router_outputs is not None and self.router_outputs < self.experts:
            raise ValueError(f"router_outputs ({self.router_outputs}) must not be fewer than experts ({self.experts})")
        if self.vision_experts and self.vision_ffn is None:
            raise ValueError("vision_ffn: the vision experts' intermediate size is required with vision_experts")
        return self

    @property
    def shared_width(self) -> int:
        return self.shared_ffn or self.ffn

    def router_rows(self) -> int:
        """The router's scores per token: one per expert (router_outputs where it has more), and Inkling's shared
        experts' weights."""
        return (self.router_outputs or self.experts) + (self.shared if self.router_weighs_shared else 0)

    def expert_io(self, hidden: int) -> int:
        """The width a routed expert takes in and gives out (and its dispatched tokens carry): the latent one under
        LatentMoE, else the model's hidden size."""
        return self.latent or hidden


class MLASpec(Spec):
    """DeepSeek's multi-head latent attention (DeepSeek-V2 paper, section 2.1)."""

    q_lora_rank: PositiveInt | None = None
    kv_lora_rank: PositiveInt
    qk_nope_head_dim: PositiveInt
    qk_rope_head_dim: NonNegativeInt  # 0: no rotary part (GLM-5.3's NoPE latent attention)
    v_head_dim: PositiveInt
    query_gate: bool = Field(
        False,
        description="A.X K2's q_gate_proj in place of q_b_proj: from the query latent and its normed copy (2 x "
        "q_lora_rank) to every head's query and an output gate per value channel",
        exclude_if=_unset,
    )
    rope_key_norm: bool = Field(
        False,
        description="an RMSNorm over the shared rotary key (dots3's k_rope_only_layernorm, qk_rope_head_dim wide)",
        exclude_if=_unset,
    )


class SSMSpec(Spec):
    """A selective state-space mixer: Mamba-1 (Gu & Dao 2023) or Mamba-2's SSD (Dao & Gu 2024), as transformers'
    MambaMixer / Mamba2Mixer hold it (docs/sources/ssm-families.md)."""

    version: Literal[1, 2]
    inner: PositiveInt = Field(description="the mixer's inner width: expand x hidden, or Mamba-2 heads x head_dim")
    state: PositiveInt = Field(description="ssm_state_size, N")
    heads: PositiveInt | None = Field(None, description="Mamba-2: its heads (each of inner / heads channels)")
    groups: PositiveInt = Field(1, description="Mamba-2: n_groups sharing B and C")
    conv_kernel: PositiveInt = Field(4, description="the causal depthwise convolution's width")
    dt_rank: PositiveInt | None = Field(None, description="Mamba-1: the rank of the step-size projection")
    conv_bias: bool = True
    bias: bool = Field(False, description="biases on the input and output projections")
    gated_norm: bool = Field(True, description="Mamba-2: an RMSNorm of the output gated by z (inner weights)")
    dt_bc_norms: bool = Field(False, description="Mamba-1: RMSNorms of dt, B and C (Jamba)")
    chunk: PositiveInt = Field(256, description="Mamba-2: the SSD chunk length, which its FLOPs read")

    @model_validator(mode="after")
    def _versioned(self) -> "SSMSpec":
        if self.version == 2 and (self.heads is None or self.inner % self.heads):
            raise ValueError("a Mamba-2 mixer needs heads dividing inner")
        if self.version == 1 and self.dt_rank is None:
            raise ValueError("a Mamba-1 mixer needs dt_rank")
        return self


class DeltaNetSpec(Spec):
    """Gated DeltaNet linear attention (Yang et al. 2024), as Qwen3-Next's Qwen3NextGatedDeltaNet holds it; or Kimi
    Delta Attention (`form` kda: Kimi Linear's KimiLinearDeltaAttention), the same recurrence with a decay per
    channel, its q, k and v, forget and output gates projected apart; or MiniMax's lightning attention (`form`
    lightning: MiniMaxLightningAttention), linear attention with a fixed decay per head, no convolution and no
    delta rule, computed in blocks of `chunk`; or Jet-Nemotron's JetBlock (`form` jet: NVlabs/Jet-Nemotron
    jet_block.py), the gated delta rule with q, k and v projected apart and a convolution over v alone whose kernels
    a small MLP generates from each token (dynamic_conv.py DynamicShortConvolution)."""

    form: Literal["gated", "kda", "lightning", "jet"] = Field(
        "gated",
        description="gated: Qwen3-Next's gated DeltaNet; kda: Kimi Delta Attention; lightning: MiniMax's lightning "
        "attention; jet: Jet-Nemotron's JetBlock",
        exclude_if=lambda v: v == "gated",
    )
    key_heads: PositiveInt
    value_heads: PositiveInt
    key_dim: PositiveInt = Field(description="per key head")
    value_dim: PositiveInt = Field(description="per value head")
    conv_kernel: PositiveInt = 4
    chunk: PositiveInt = Field(64, description="the chunked recurrence's chunk length, which its FLOPs read")
    full_rank_gates: bool = Field(
        False,
        description="kda: the forget and output gates projected straight from the hidden state (f_proj, g_proj: "
        "hidden -> heads x head_dim; Ling's BailingHybridDeltaAttention) in place of KDA's low-rank pairs",
        exclude_if=_unset,
    )
    qk_norms: bool = Field(
        False,
        description="lightning: an RMSNorm over each query head and one over each key head (Ring-linear's "
        "query_layernorm and key_layernorm, by use_qk_norm)",
        exclude_if=_unset,
    )
    generator_reduction: PositiveInt | None = Field(
        None,
        description="jet: dconv_generator_reduction, the kernel generator's width as a fraction of the values' (w1: "
        "hidden -> V / r, w2: -> V x conv_kernel with a bias)",
        exclude_if=lambda v: v is None,
    )

    @model_validator(mode="after")
    def _lightning_heads(self) -> "DeltaNetSpec":
        if self.form == "lightning" and (self.key_heads != self.value_heads or self.key_dim != self.value_dim):
            raise ValueError("lightning attention has as many key heads as value heads, of one width")
        if self.qk_norms and self.form != "lightning":
            raise ValueError("qk_norms: the q and k norms of lightning attention (Ring-linear's); not of this form")
        if (self.form == "jet") != (self.generator_reduction is not None):
            raise ValueError("generator_reduction: a JetBlock's kernel generator (form jet) needs it; no other form")
        if self.form == "jet" and self.key_heads != self.value_heads:
            raise ValueError("a JetBlock has as many key heads as value heads (num_heads)")
        return self

    @property
    def conv_channels(self) -> int:
        """The channels the depthwise convolution runs over: q, k and v (2K + V; gated DeltaNet, KDA), v alone (a
        JetBlock), none (lightning attention)."""
        values = self.value_heads * self.value_dim
        return {"lightning": 0, "jet": values}.get(self.form, 2 * self.key_heads * self.key_dim + values)


class ShortConvSpec(Spec):
    """LFM2's gated short convolution (modeling_lfm2.py Lfm2ShortConv, transformers 5.24.0): in_proj h -> 3h (B, C,
    x), a depthwise convolution of `kernel` over the h channels of B x, out_proj h -> h of C times its output."""

    kernel: PositiveInt = Field(3, description="conv_L_cache")
    bias: bool = Field(False, description="conv_bias: biases on in_proj, the convolution and out_proj")


class RGLRUSpec(Spec):
    """Griffin's recurrent block (De et al. 2024, arXiv 2402.19427 section 2.4; modeling_recurrent_gemma.py
    RecurrentGemmaRecurrentBlock and RecurrentGemmaRglru, transformers 5.25.0): linear_y and linear_x (h -> width,
    biased), a depthwise convolution of `conv_kernel` taps over linear_x's output (biased), the RG-LRU (its input and
    recurrence gates block-diagonal over `heads` blocks, each with a bias, and a decay per channel), the product
    with GELU(linear_y) and linear_out (width -> h, biased)."""

    width: PositiveInt = Field(description="lru_width: the recurrence's channels")
    heads: PositiveInt = Field(description="the gates' diagonal blocks (num_attention_heads), each width / heads wide")
    conv_kernel: PositiveInt = Field(4, description="conv1d_width")


class RWKVSpec(Spec):
    """RWKV-4's time mixing (Peng et al. 2023, arXiv 2305.13048 section 3; modeling_rwkv.py RwkvSelfAttention and
    RwkvFeedForward, transformers 5.25.0): key, value and receptance (h -> width) of the hidden state interpolated
    with the previous token's (time_mix_key/value/receptance), the WKV recurrence over width channels (time_decay,
    time_first), sigmoid(receptance) times it, and output (width -> h); and its channel mixing's receptance gate
    (h -> h, with time_mix_key and time_mix_receptance), whose key (h -> ffn) and value (ffn -> h) are the layer's
    MLP. No biases."""

    width: PositiveInt = Field(description="attention_hidden_size: the WKV recurrence's channels")


class MLSTMSpec(Spec):
    """xLSTM 7B's mLSTM layer (Beck et al. 2025, arXiv 2503.13427; modeling_xlstm.py xLSTMLayer, transformers 5.25.0):
    q and k (h -> qk_dim), v and the output gate (h -> v_dim), the input and forget gates (h -> heads, biased),
    the matrix memory over `heads` heads in chunks of `chunk`, a norm per head (v_dim) and out_proj (v_dim -> h);
    with `bias`, biases on the projections and the norms (the layer's two RMSNorms' too)."""

    heads: PositiveInt = Field(description="num_heads")
    qk_dim: PositiveInt = Field(description="int(hidden_size x qk_dim_factor)")
    v_dim: PositiveInt = Field(description="int(hidden_size x v_dim_factor)")
    chunk: PositiveInt = Field(64, description="chunk_size: the chunkwise kernel's")
    bias: bool = Field(False, description="use_bias")


class SharedBlockSpec(Spec):
    """Zamba's and Zamba2's shared transformer blocks (Glorioso et al. 2024, arXiv 2405.16712 and 2411.15242;
    modeling_zamba.py ZambaHybridLayer, modeling_zamba2.py Zamba2AttentionDecoderLayer and Zamba2HybridLayer,
    transformers 5.25.0). `count` blocks (Zamba's one), each an attention over
    the hidden state concatenated with the embedding (2h wide: an RMSNorm of 2h, q, k and v from 2h, o back to h)
    and a gated MLP of ffn under its own RMSNorm, run in turn by the hybrid layers before their Mamba-2 mixer, each
    adding its output through a linear layer (h x h) of its own. In Zamba2 each hybrid layer also holds its own
    adapters of `adapter_rank` (h -> rank -> 2 ffn beside the MLP's gate and up projection; with
    `attention_adapters`, 2h -> rank -> 2h beside q, k and v)."""

    count: PositiveInt = Field(description="num_mem_blocks: the blocks the hybrid layers take in turn")
    adapter_rank: PositiveInt | None = Field(None, description="adapter_rank (Zamba2); none: no adapters (Zamba)")
    attention_adapters: bool = Field(False, description="use_shared_attention_adapter: adapters beside q, k and v")


class IndexerSpec(Spec):
    """DeepSeek-V3.2's lightning indexer (DeepSeek Sparse Attention): in every attention layer it scores all the
    context with `heads` small heads and attention then reads only the `topk` best keys
    (deepseek-ai/DeepSeek-V3.2-Exp inference/model.py Indexer)."""

    form: Literal["dsa", "block", "hidden", "pooled", "qsa"] = Field(
        "dsa",
        description="dsa: DeepSeek-V3.2's (wq_b from MLA's query latent, wk, k_norm, weights_proj; every attention "
        "layer reads its top k); block: MiniMax M3's (q_proj, k_proj and per-head q/k norms over the hidden state; "
        "its keys chosen a block at a time, and the layers without one attend to every key); hidden: Mistral Large "
        "4's (DeepSeek's, its wq_b from the hidden state under a LayerNorm of its own, q_input_norm, with a learned "
        "softmax scale and bias per head; its key cache in the model's dtype); pooled: GLM-5.3's (DeepSeek's, "
        "scoring pools of `pool` keys: a position table per pool slot and a gate from the hidden state; its cache "
        "holds each key, its gate scores and a validity flag in the model's dtype); qsa: Qwen4-Exp's (one fused "
        "projection of the hidden state to `heads` queries and one key, a q and a k norm; keys mean-pooled in blocks "
        "of `pool`; its cache holds the raw keys in the model's dtype)",
        exclude_if=lambda v: v == "dsa",
    )
    pool: NonNegativeInt = Field(
        0,
        description="pooled: index_kpool; qsa: indexer_compress_ratio; the keys each pool holds",
        exclude_if=lambda v: v == 0,
    )
    heads: PositiveInt = Field(description="index_n_heads")
    head_dim: PositiveInt = Field(description="index_head_dim")
    topk: PositiveInt = Field(
        description="index_topk: the keys each query's attention reads (block: index_topk_blocks x index_block_size)"
    )
    layers: tuple[NonNegativeInt, ...] = Field(
        (),
        description="the layers with an indexer of their own, where not every attention layer has one (GLM-5.2's "
        "indexer_types: the others reuse the top-k of the last layer that scored); empty: every attention layer",
        exclude_if=lambda v: not v,
    )


class LocalAttentionSpec(Spec):
    """Attention layers whose queries see nearby keys only. `sliding`: each query the last `size` keys, its own
    included (transformers' create_sliding_window_causal_mask keeps key j for query i where j > i - size;
    Megatron's window_size (size - 1, 0)); in an encoder (bidirectional) the keys within `size` of it on either side
    (sliding_window_bidirectional_overlay, |i - j| <= size); `chunked`: the sequence cut into chunks of `size`
    tokens, each query the keys before it in its own chunk (Llama 4's attention_chunk_size,
    create_chunked_causal_mask)."""

    kind: Literal["sliding", "chunked"] = Field("sliding", description="sliding (a window) or chunked")
    size: PositiveInt = Field(description="sliding_window, or attention_chunk_size: keys a query can see")
    layers: tuple[NonNegativeInt, ...] = Field(
        (),
        description="the attention layers that attend locally (config.json layer_types' sliding or chunked ones); "
        "empty: every attention layer",
        exclude_if=lambda v: not v,
    )


class GlobalAttentionSpec(Spec):
    """Full-attention layers shaped otherwise than the sliding-window ones around them (Gemma 4: per_layer_config
    from global_head_dim and num_global_key_value_heads, configuration_gemma4.py, transformers 5.24.0; Step 3.5:
    fewer query heads than its sliding layers, configuration_step3p7.py, 5.25.0). Their layers are the `mixers`
    entries "global attention"."""

    head_dim: PositiveInt = Field(description="global_head_dim")
    kv_heads: PositiveInt = Field(description="num_global_key_value_heads, else the sliding layers' KV heads")
    heads: PositiveInt | None = Field(
        None,
        description="their query heads where they differ from the sliding layers' (Step 3.5's num_attention_heads "
        "beside num_sliding_attention_heads)",
        exclude_if=lambda v: v is None,
    )
    values_from_keys: bool = Field(False, description="attention_k_eq_v: no v_proj, the keys serve as values")
    sinks: bool = Field(
        False,
        description="learned sinks in these layers (MiMo-V2-Flash has them in its sliding ones only)",
        exclude_if=_unset,
    )
    mla: MLASpec | None = Field(
        None,
        description="their latent attention's shapes where they differ from the sliding layers' (dots3's "
        "per_layer_config)",
        exclude_if=lambda v: v is None,
    )
    input_norms: Annotated[int, Field(ge=1, le=3, strict=True)] = Field(
        1,
        description="norms over the layer's input: 3 where the queries, keys and values each read their own "
        "(Inkling 2's q_input_layernorm, k_input_layernorm, v_input_layernorm)",
        exclude_if=lambda v: v == 1,
    )
    dynamic_convs: bool = Field(
        False,
        description="the key and value convolutions' taps also projected per token from the layer's input "
        "(Inkling 2's Inkling2DynamicShortConvolution: weight_proj hidden -> kv_heads x sconv_kernel)",
        exclude_if=_unset,
    )


class CCASpec(Spec):
    """ZAYA's compressed convolutional attention projection (ZayaCCAProjection and ZayaQKNorm, modeling_zaya.py,
    transformers 5.25.0; Figliolia et al. 2025, arXiv 2510.04476): the queries and keys, concatenated, pass a
    depthwise causal convolution and then one grouped by head (each head's head_dim channels mixed), both biased,
    with residual paths around them; half of each value head comes from the previous token; the keys are scaled
    per KV head after an L2 norm. The projections hold what plain attention's do."""

    depthwise: PositiveInt = Field(description="cca_time0: the depthwise convolution's taps")
    grouped: PositiveInt = Field(description="cca_time1: the grouped convolution's taps")


class RelativeLogitsSpec(Spec):
    """Relative position logits conditioned on the hidden state (Inkling's InklingRelativeLogits, modeling_inkling.py,
    transformers 5.25.0): each attention layer's r_proj (hidden -> heads x rank, no bias) mixes, for each token and
    head, a learned bank of `rank` bias-by-distance profiles (rel_logits_proj.proj, rank x the distances it covers),
    added to the scores of the keys that many tokens back. A full-attention layer's bank covers `extent` distances,
    a sliding layer's its window."""

    rank: PositiveInt = Field(description="d_rel")
    extent: PositiveInt = Field(description="rel_extent: the distances a full-attention layer's bank covers")
    scaled: bool = Field(
        False,
        description="a learned scale per head and channel on the mixing weights (Inkling 2's Inkling2ScaledL2Clip)",
        exclude_if=_unset,
    )


class CompressedAttentionSpec(Spec):
    """DeepSeek-V4's attention (transformers 5.24.0 modeling_deepseek_v4.py DeepseekV4Attention; the DeepSeek-V4 report,
    section 2.3): queries through a low-rank latent (q_a_proj to `q_lora_rank`, q_b_proj to heads x head_dim), one
    key-value head that serves as keys and values (kv_proj, K = V), a learned sink per head, and a grouped low-rank
    output projection (the heads in `o_groups` groups, each projected to `o_lora_rank`, then mixed to hidden). Every
    layer attends to a sliding window of recent keys (local_attention) and, in its "compressed sparse attention" or
    "heavily compressed attention" layers (mixers), also to compressed entries of the older context: CSA pools each
    `csa_rate` tokens into one entry from windows overlapping their neighbours, and a lightning indexer of
    `index_heads` x `index_head_dim` keeps each query's `index_topk` best entries; HCA pools each `hca_rate` tokens
    and attends to all of them."""

    q_lora_rank: PositiveInt
    o_groups: PositiveInt
    o_lora_rank: PositiveInt
    csa_rate: PositiveInt = Field(4, description="compress_rates' compressed_sparse_attention: tokens per entry")
    hca_rate: PositiveInt = Field(128, description="compress_rates' heavily_compressed_attention: tokens per entry")
    index_heads: PositiveInt = Field(description="index_n_heads")
    index_head_dim: PositiveInt = Field(description="index_head_dim")
    index_topk: PositiveInt = Field(description="index_topk: the compressed entries each CSA query reads")


class NgramEmbeddingSpec(Spec):
    """Qwen4-Exp's per-layer n-gram embeddings (PLE: Qwen4ExpTextPLELayer, modeling_qwen4_exp.py, transformers
    5.25.0) in some linear-attention layers: a table of hashed n-gram rows per layer (`heads` heads of width / heads
    each, looked up per token), key_proj (width -> streams x hidden), value_proj (width -> hidden), three norms of
    streams x hidden and a depthwise convolution over them of `conv_kernel` taps, `dilation` apart."""

    layers: tuple[NonNegativeInt, ...] = Field(description="the layers holding one (ple_layer_ids, counted from 0)")
    rows: tuple[Annotated[int, Field(gt=0, le=10**12, strict=True)], ...] = Field(
        description="each of those layers' table rows (its heads' prime sizes)"
    )
    width: PositiveInt = Field(description="ple_embed_dim")
    heads: PositiveInt = Field(description="(ngram_size - 1) x heads_per_ngram")
    conv_kernel: PositiveInt = Field(description="ple_conv_kernel_size")
    dilation: PositiveInt = Field(description="ngram_size")

    @property
    def tables(self) -> tuple[int, ...]:
        """Each layer's table: its rows, each width / heads wide (Qwen4ExpTextNGramEmbedding.ngram_embedding)."""
        return tuple(rows * (self.width // self.heads) for rows in self.rows)


class NgramInputSpec(Spec):
    """LongCat-Flash-Lite's n-gram embeddings beside the token embedding (NgramEmbedding of meituan-longcat's remote
    modeling_longcat_ngram.py, as its public ports transcribe it): emb_split_num x (emb_neighbor_num - 1) tables, the
    i-th of int(m + 2i + 1) rows (m = ngram_vocab_size_ratio x vocab_size) and hidden // tables columns, each looked up
    by a rolling hash of the token and those before it and projected back to the hidden width (post_projs, no bias);
    the projections' sum joins the token's embedding."""

    tables: PositiveInt = Field(description="emb_split_num x (emb_neighbor_num - 1)")
    base_rows: Annotated[int, Field(gt=0, le=10**13, strict=True)] = Field(
        description="int(ngram_vocab_size_ratio x vocab_size): the first table's rows less one"
    )
    width: PositiveInt = Field(description="hidden_size // tables: each table's columns")

    @property
    def rows(self) -> tuple[int, ...]:
        """Each table's rows: int(m + 2i + 1) for the i-th (NgramEmbedding._init_ngram_embeddings)."""
        return tuple(self.base_rows + 2 * i + 1 for i in range(self.tables))


class PerLayerInputSpec(Spec):
    """Gemma 4's per-layer embeddings (modeling_gemma4.py Gemma4TextModel and Gemma4TextDecoderLayer, transformers
    5.25.0): a second lookup table of `vocab` rows of layers x `width`, and a projection of the embedded input to
    the same layers x `width` (per_layer_model_projection, with a norm over `width`); each layer takes its slice,
    gates it by its output (per_layer_input_gate, hidden -> width, GELU), projects it back (per_layer_projection,
    width -> hidden), norms it and adds it to the residual."""

    width: PositiveInt = Field(description="hidden_size_per_layer_input")
    vocab: PositiveInt = Field(description="vocab_size_per_layer_input: the table's rows")


CSA, HCA = "compressed sparse attention", "heavily compressed attention"


class AltUpSpec(Spec):
    """Gemma 3n's alternating updates (AltUp, arXiv 2301.13310) and learned augmented residual (LAuReL, arXiv
    2411.07501), as Gemma3nTextAltUp and Gemma3nTextLaurelBlock build them (modeling_gemma3n.py, transformers 5.25.0):
    the hidden state is kept as `inputs` copies, of which one runs the layer. Each layer predicts every copy
    (modality_router: hidden -> inputs, with its router_norm; prediction_coefs: inputs -> inputs^2), corrects them
    by what the layer did (correction_coefs: inputs -> inputs; correct_output_scale: hidden), and adds a residual of
    rank `laurel_rank` beside its attention (linear_left, linear_right, post_laurel_norm); the model projects the
    embedding to the other copies and them back before its norm (altup_projections, altup_unembed_projections:
    inputs - 1 of hidden x hidden each)."""

    inputs: PositiveInt = Field(description="altup_num_inputs: the hidden state's copies")
    laurel_rank: PositiveInt = Field(description="laurel_rank")


KV_SHARED = "kv-shared "  # the prefix of a layer that attends with an earlier layer's keys and values
NOPE = "nope attention"  # an MLA layer without RoPE (ModelArchitecture.attention_of)
# Zamba2's hybrid layers (SharedBlockSpec): a shared transformer block, then a Mamba-2 mixer; the first layer to run
# each block holds its weights, the later ones reuse them
SHARED_BLOCK, REUSED_BLOCK = "shared-block attention+mamba", "reused-block attention+mamba"
# "cross": Mllama's cross-attention layer over the image states, which a text-only batch skips whole
Mixer = Literal[
    "attention", "global attention", "mamba", "deltanet", "conv", "attention+mamba", "none",
    "compressed sparse attention", "heavily compressed attention", "kv-shared attention", "kv-shared global attention",
    "cross", "rglru", "rwkv", "mlstm", "nope attention", "kv-shared nope attention",
    "shared-block attention+mamba", "reused-block attention+mamba",
]  # fmt: skip


MlpKind = Literal["dense", "moe", "none"]
# The MLP activations transformers runs by name (ACT2CLS in activations.py, 5.25.0; prelu, which holds a weight, left
# out), and BLOOM's own (modeling_bloom.py BloomGelu). What eager PyTorch keeps and runs of each is
# engine/activations.py's.
Activation = Literal[
    "gelu", "gelu_10", "gelu_accurate", "gelu_fast", "gelu_new", "gelu_python", "gelu_python_tanh",
    "gelu_pytorch_tanh", "hardswish", "laplace", "leaky_relu", "linear", "mish", "quick_gelu", "relu", "relu2",
    "relu6", "sigmoid", "silu", "sqrtsoftplus", "swish", "tanh", "xielu", "bloom_gelu",
]  # fmt: skip
# The gated MLPs whose two halves transformers clamps (swiglu_limit), by the model_type whose code clamps them:
# gpt-oss's experts ((up + 1) x gate sigmoid(alpha gate) of interleaved halves), MiniMax-M3's (the same of concatenated
# halves), DeepSeek-V4's (act(gate) x up of the clamped halves; GLM-5 Next's alike) and HY V4's (DeepSeek-V4's, on its
# routed experts alone). What eager PyTorch keeps and runs of each is engine/activations.py's.
GateClamp = Literal["gpt_oss", "minimax_m3_vl", "deepseek_v4", "hy_v4"]
LayerKind = tuple[Mixer, MlpKind, int]  # a layer's mixer, its MLP, and the dense MLP's width (0 for MoE or none)


class ModelArchitecture(Spec):
    hidden: PositiveInt
    layers: Layers
    heads: PositiveInt
    kv_heads: PositiveInt | None = None
    head_dim: PositiveInt | None = None
    ffn: PositiveInt | None = Field(None, description="dense MLP intermediate size")
    mlp: Literal["swiglu", "geglu", "gelu", "relu"] = Field(
        "swiglu", description="swiglu/geglu: gated, 3 matrices; gelu/relu: 2 matrices"
    )
    eager_softmax_16bit: bool = Field(
        False,
        description="the model's eager attention takes its softmax in the scores' 16 bits (GPT-2's, BERT's), where "
        "Llama's eager_attention_forward takes it in fp32 and keeps a 16-bit copy for the matmul with V",
        exclude_if=_unset,
    )
    fused_qkv: bool = Field(
        False,
        description="one linear layer projects Q, K and V (GPT-2's c_attn, GPT-NeoX's query_key_value, Phi-3's "
        "qkv_proj): under torch.autocast it keeps one 16-bit cast of the attention norm's output, where separate "
        "projections keep one each",
        exclude_if=_unset,
    )
    clip_qkv: bool = Field(
        False,
        description="the Q, K and V projections' output is clamped (clip_qkv: DBRX's and MPT's fused output out of "
        "place, OLMo's and OLMoE's each in place): eager kernels keep it as it was before the clamp",
        exclude_if=_unset,
    )
    context_copied: bool = Field(
        False,
        description="the model's queries reach attention laid out per head (transformers' partial-rotary torch.cat), "
        "so SDPA's output is too, and the output projection reads a copy of it: eager kernels keep both",
        exclude_if=_unset,
    )
    fused_gate_up: bool = Field(
        False,
        description="one linear layer projects a gated MLP's gate and up halves (Phi-3's and GLM-4's gate_up_proj): "
        "under torch.autocast it keeps one 16-bit cast of the MLP norm's output, where separate ones keep two",
        exclude_if=_unset,
    )
    eager_score_copies: Annotated[int, Field(ge=0, le=8, strict=True)] = Field(
        0,
        description="16-bit copies of the score square the model's eager attention keeps besides its softmax: "
        "Gemma 2's logit soft-capping (tanh's output), Granite's sinks (logsumexp's input), XGLM's clamp (torch.max's)",
        exclude_if=lambda v: v == 0,
    )
    activation: Activation | None = Field(
        None,
        description="the MLP's activation by transformers' name for it (ACT2FN), where the model runs it by name: "
        "eager PyTorch keeps what its ops save, more than a fused kernel for the GELUs written as arithmetic "
        "(gelu_new, gelu_fast, quick_gelu); none: a fused kernel that keeps its input",
        exclude_if=lambda v: v is None,
    )
    gate_clamp: GateClamp | None = Field(
        None,
        description="the gated MLP's halves clamped as this model_type's transformers code clamps them (swiglu_limit): "
        "eager PyTorch keeps the clamped copies and what the clamped activation's arithmetic saves",
        exclude_if=lambda v: v is None,
    )
    vocab: PositiveInt
    head_vocab: PositiveInt | None = Field(
        None,
        description="the output head's rows, if fewer than vocab (Apertus 1.5's head pruned to its text tokens)",
        exclude_if=lambda v: v is None,
    )
    tied_embeddings: bool = False
    norm: Literal["rmsnorm", "layernorm", "layernorm_nb", "layernorm_np"] = Field(
        "rmsnorm",
        description="rmsnorm (a scale), layernorm (scale and bias), layernorm_nb (a LayerNorm's scale without a bias: "
        "MPT, ModernBERT), layernorm_np (neither: OLMo 1)",
    )
    layer_norms: Annotated[int, Field(ge=0, le=8, strict=True)] = Field(
        2, description="hidden-sized norms per block: 2 (pre-norm), 1 (GPT-J, Falcon), 4 (Gemma 2/3)"
    )
    parallel_residual: bool = Field(
        False,
        description="attention and the MLP both read the layer's input, each through a norm of its own (GPT-NeoX's "
        "use_parallel_residual, Falcon's new decoder): that input is one tensor, kept once",
        exclude_if=_unset,
    )
    stores_last_kv: bool = Field(
        False,
        description="the last layer of each attention kind before any kv-shared ones passes its keys and values on to "
        "every later layer, read or not (Gemma 4's kv_sharing_modes 'store', kept for assistant models)",
        exclude_if=_unset,
    )
    norm_in_fp32: bool = Field(
        False,
        description="the norm multiplies its weight in fp32 and casts after (Gemma's RMSNorm, (x * w).to(dtype), where "
        "Llama's is x.to(dtype) * w: transformers PR #29402), so eager it keeps an fp32 normed product; a LayerNorm "
        "so written (Cohere's) runs in fp32 ops throughout",
        exclude_if=_unset,
    )
    qk_norm: Literal["none", "head", "full"] = Field(
        "none", description="norms on queries and keys: per head (Qwen3, Gemma 3) or over all heads (OLMo 2)"
    )
    qk_norm_bias: bool | None = Field(
        None,
        description="the query/key norms' bias: true (Chameleon's LayerNorms in RMSNorm layers), false (StableLM's "
        "bias-free LayerNorms in LayerNorm layers); unset: as norm says",
        exclude_if=lambda v: v is None,
    )
    embedding_norm: bool = Field(False, description="a norm right after the embedding (BLOOM)")
    final_norm: bool = Field(
        True,
        description="a norm after the last layer (all but GPT-1, whose post-norm blocks end in their own)",
        exclude_if=lambda v: v,
    )
    qkv_bias: bool = False
    # left out of a dump unless set, so that specs without them read as before
    out_bias: bool | None = Field(
        None,
        description="a bias on the attention output projection (Phi-3.5-MoE, Seed-OSS), or none even with "
        "linear_bias (GPT-J, CodeGen); unset: as linear_bias says",
        exclude_if=lambda v: v is None,
    )
    mlp_out_bias: bool = Field(
        False,
        description="a bias on the MLP's output projection alone, its input projections unbiased (TeleChat's "
        "down_proj); linear_bias biases them all",
        exclude_if=_unset,
    )
    head_transform: Literal["none", "dense", "dense_biased"] = Field(
        "none",
        description="a dense layer (hidden x hidden, biased or not), its activation and a norm before the output head "
        "(ModernBERT-decoder's prediction head)",
        exclude_if=lambda v: v == "none",
    )
    last_out_bias: bool = Field(
        False,
        description="a bias on the last layer's attention output projection alone (GPT-NeoX-Japanese's dense_bias)",
        exclude_if=_unset,
    )
    head_bias: bool = Field(
        False, description="a bias on the output head (Phi-3.5-MoE's lm_head_bias)", exclude_if=_unset
    )
    linear_bias: bool = Field(False, description="biases on every linear layer and norm (GPT-2/3 style)")
    learned_positions: NonNegativeInt = Field(
        0, description="rows of a learned position table; 0 = rotary, unless alibi"
    )
    alibi: bool = Field(
        False,
        description="ALiBi: positions enter as a bias on the scores, with no table and no rotary (BLOOM, MPT, "
        "Baichuan 13B, Falcon-RW)",
        exclude_if=_unset,
    )
    position_offset: NonNegativeInt = Field(
        0,
        description="rows of the position table before the first position, which no token reads: RoBERTa's "
        "padding_idx + 1 (create_position_ids_from_input_ids), OPT's and BioGPT's 2",
        exclude_if=lambda v: v == 0,
    )
    token_types: NonNegativeInt = Field(
        0,
        description="rows of the segment tables added to the embedding (BERT's token_type_embeddings of "
        "type_vocab_size, ERNIE's task_type_embeddings too)",
        exclude_if=lambda v: v == 0,
    )
    relative_position_buckets: NonNegativeInt = Field(
        0,
        description="a learned bias per head for each bucket of relative distance, added to every layer's scores and "
        "held once (MPNet's relative_attention_bias)",
        exclude_if=lambda v: v == 0,
    )
    embedding_width: PositiveInt | None = Field(
        None,
        description="the embedding's width where it differs from hidden (ALBERT's embedding_size): its tables, and "
        "the tied output matrix, are that wide; a biased linear layer maps it to hidden, and the prediction head "
        "maps hidden back to it",
        exclude_if=lambda v: v is None,
    )
    layer_weights: tuple[NonNegativeInt, ...] = Field(
        (),
        description="for each layer, the layer whose weights it runs: its own, or an earlier layer's (ALBERT's "
        "groups, which every layer runs in turn); empty: each its own",
        exclude_if=lambda v: not v,
    )
    ngpt_scales: bool = Field(
        False,
        description="nGPT's learned scales (Loshchilov et al. 2024, arXiv 2410.01131; Dory's): in every layer the "
        "residual rates (two hidden-wide), the query and gate scales (two query-wide) and the MLP's (two "
        "ffn-wide); a logit scale per vocabulary row",
        exclude_if=_unset,
    )
    reused_layers_read_cache: bool = Field(
        False,
        description="a layer running an earlier layer's weights keeps no KV cache of its own, it reads its holder's "
        "(Dory's recurrent_kv_cache_mode last_loop); false: each run keeps its own (per_loop)",
        exclude_if=_unset,
    )
    contact_head: bool = Field(
        False,
        description="ESM's contact prediction head: a logistic regression over every layer's attention maps "
        "(layers x heads weights and a bias), held, and run only when contacts are asked for",
        exclude_if=_unset,
    )
    bidirectional: bool = Field(
        False,
        description="an encoder: every query attends to every key, and nothing is decoded token by token (BERT and "
        "RoBERTa as their files give them, is_decoder false)",
        exclude_if=_unset,
    )
    dropout: Annotated[float, Field(ge=0, lt=1)] = 0.0
    moe: MoESpec | None = None
    mla: MLASpec | None = None
    mtp_layers: NonNegativeInt = Field(0, description="multi-token-prediction modules (DeepSeek-V3)")
    attention_sinks: bool = Field(False, description="a learned logit per attention head in every layer (gpt-oss)")
    attention_experts: PositiveInt | None = Field(
        None,
        description="a mixture of attention heads (JetMoE's MoA): this many experts, each a query projection to "
        "kv_heads x head_dim and an output projection back, moe.active of them per token (heads = kv_heads x "
        "moe.active), over one shared key-value projection, with a router and an output bias",
        exclude_if=lambda v: v is None,
    )
    rope_mscale: Annotated[float, Field(gt=0)] = Field(
        1.0,
        description="YaRN's scale on the rotary cos and sin, 0.1 ln(factor) + 1 (gpt-oss: factor 32); Megatron-Core's "
        "fused RoPE takes only 1",
        exclude_if=lambda v: v == 1.0,
    )
    activation_clamp: Annotated[float, Field(gt=0)] | None = Field(
        None,
        description="the gated MLP's two inputs clamped to this before the activation (gpt-oss's swiglu_limit)",
        exclude_if=lambda v: v is None,
    )
    attention_gate: bool = Field(
        False, description="the query projection also makes a sigmoid gate on the attention output (Qwen3-Next)"
    )
    attention_gate_bias: bool = Field(
        False,
        description="the gate's projection is biased: made by the query projection, it takes its bias "
        "(MiniCPM5-MoE's q_gate_proj under attention_bias)",
        exclude_if=_unset,
    )
    attention_gate_head_bias: bool = Field(
        False,
        description="the gate takes one bias per head, broadcast over its channels (Beam's gate_bias)",
        exclude_if=_unset,
    )
    mlp_norm: bool = Field(
        False,
        description="an RMSNorm over a dense MLP's intermediate width before its down projection (BitNet's "
        "ffn_sub_norm)",
        exclude_if=lambda v: not v,
    )
    activation_scalars: NonNegativeInt = Field(
        0,
        description="learned scalars of a dense layer's MLP activation (Apertus's xIELU: alpha_p and alpha_n)",
        exclude_if=lambda v: v == 0,
    )
    norm_gate_rank: PositiveInt | None = Field(
        None,
        description="A.X K2's gated norms (AXK2GatedRMSNorm): a gate MLP hidden -> rank -> hidden after the input "
        "norm of every layer and the post-attention norm of its MoE layers",
        exclude_if=lambda v: v is None,
    )
    head_gate: bool = Field(
        False,
        description="a sigmoid gate per attention head on its output, projected hidden -> heads (LFM3's g_proj)",
        exclude_if=lambda v: not v,
    )
    weightless_norms: NonNegativeInt = Field(
        0,
        description="of a layer's layer_norms, those that hold no weight (Muse Spark's post-attention norm)",
        exclude_if=lambda v: not v,
    )
    residual_gates: NonNegativeInt = Field(
        0,
        description="learned hidden-wide gates mixing each sub-layer's output into the residual, per layer (Muse "
        "Spark's post_attention_residual_gate and post_feedforward_residual_gate: 2)",
        exclude_if=lambda v: not v,
    )
    softmax_scaling: bool = Field(
        False,
        description="a learned scale and bias per attention head on the queries by log position (Mistral Large 4's "
        "softmax_scaling: 2 x heads numbers a layer)",
        exclude_if=lambda v: not v,
    )
    rope_alpha: bool = Field(
        False,
        description="a learned tensor scaling the rotary frequencies, one number per frequency (Mistral Large 4's "
        "rotary_emb.alpha: qk_rope_head_dim / 2 numbers, once)",
        exclude_if=lambda v: not v,
    )
    mixers: tuple[Mixer, ...] = Field(
        (),
        description="hybrids: each layer's token mixer (attention, mamba, deltanet, attention+mamba side by side, or "
        "none); empty: attention in every layer",
    )
    mlp_free_layers: tuple[NonNegativeInt, ...] = Field(
        (), description="layers without an MLP (Nemotron-H's and Mamba's single-mixer layers)"
    )
    ssm: SSMSpec | None = None
    deltanet: DeltaNetSpec | None = None
    short_conv: ShortConvSpec | None = Field(None, exclude_if=lambda v: v is None)
    rglru: RGLRUSpec | None = Field(None, exclude_if=lambda v: v is None)
    rwkv: RWKVSpec | None = Field(None, exclude_if=lambda v: v is None)
    shared_block: SharedBlockSpec | None = Field(None, exclude_if=lambda v: v is None)
    mlstm: MLSTMSpec | None = Field(None, exclude_if=lambda v: v is None)
    indexer: IndexerSpec | None = None
    global_attention: GlobalAttentionSpec | None = Field(None, exclude_if=lambda v: v is None)
    local_attention: LocalAttentionSpec | None = Field(
        None,
        description="sliding-window or chunked attention layers (gpt-oss, Gemma 2/3, Mistral 7B v0.1, Llama 4); "
        "none: every attention layer sees the whole context before it",
        exclude_if=lambda v: v is None,
    )
    values_from_keys: bool = Field(
        False,
        description="no value projection: the keys serve as values (Gemma 4's attention_k_eq_v)",
        exclude_if=_unset,
    )
    v_head_dim: PositiveInt | None = Field(
        None,
        description="the value heads' width where it is not head_dim (MiMo-V2-Flash; MLA keeps its own)",
        exclude_if=lambda v: v is None,
    )
    compressed_attention: CompressedAttentionSpec | None = Field(
        None,
        description="DeepSeek-V4's attention: its query latent, grouped output projection and compressors",
        exclude_if=lambda v: v is None,
    )
    ngram_embedding: NgramEmbeddingSpec | None = Field(
        None, description="Qwen4-Exp's per-layer n-gram embeddings (ple_layer_ids)", exclude_if=lambda v: v is None
    )
    relative_logits: RelativeLogitsSpec | None = Field(
        None,
        description="Inkling's relative position logits in every attention layer",
        exclude_if=lambda v: v is None,
    )
    cca: CCASpec | None = Field(
        None, description="ZAYA's compressed convolutional attention projection", exclude_if=lambda v: v is None
    )
    residual_scaling: bool = Field(
        False,
        description="a learned scale and bias on both terms of each residual add, and on the embedding "
        "(ZayaResidualScaling: 4 x hidden each, two a layer; the model's input scale and bias)",
        exclude_if=_unset,
    )
    attention_residual_block: PositiveInt | None = Field(
        None,
        description="attention residuals (Inkling 2's Inkling2BlockAttentionResidual, n_layers_per_attn_res_block): "
        "each sub-layer's input is a softmax mix of the earlier blocks' outputs and the running one, under a learned "
        "query per input (three for a full layer's queries, keys and values, none before the first layer's "
        "attention); one for the final norm's input",
        exclude_if=lambda v: v is None,
    )
    sink_projection: bool = Field(
        False,
        description="a sink logit per head made from each token (Inkling 2's sink_proj, hidden -> heads, no bias)",
        exclude_if=_unset,
    )
    query_scale: bool = Field(
        False,
        description="a learned scale per query head and channel before the queries are clipped to a norm (Inkling "
        "2's q_proj.norm.scale, heads x head_dim)",
        exclude_if=_unset,
    )
    sconv_kernel: PositiveInt | None = Field(
        None,
        description="Inkling's short convolutions (InklingShortConvolution: depthwise, causal, no bias, in fp32, with "
        "a residual around each) of this many taps, on the keys, the values, the attention's output and the MLP's "
        "output of every layer (sconv_kernel_size, conv_kernel_size)",
        exclude_if=lambda v: v is None,
    )
    per_layer_input: PerLayerInputSpec | None = Field(
        None,
        description="Gemma 4 E2B/E4B's per-layer embeddings (hidden_size_per_layer_input)",
        exclude_if=lambda v: v is None,
    )
    ngram_input: NgramInputSpec | None = Field(
        None,
        description="LongCat-Flash-Lite's n-gram embedding tables beside the token embedding (ngram_vocab_size_ratio)",
        exclude_if=lambda v: v is None,
    )
    ffn_widths: tuple[NonNegativeInt, ...] = Field(
        (),
        description="each layer's dense MLP width where the layers differ (Nemotron-NAS's block_configs ffn_mult), "
        "0 for a layer without one; empty: ffn in every dense layer",
        exclude_if=lambda v: not v,
    )
    altup: AltUpSpec | None = Field(
        None,
        description="Gemma 3n's AltUp copies of the hidden state and its LAuReL residual",
        exclude_if=lambda v: v is None,
    )
    kv_shared_ffn: PositiveInt | None = Field(
        None,
        description="the dense MLP's width in the kv-shared layers where it is not ffn (Gemma 4 E2B's "
        "use_double_wide_mlp: twice intermediate_size)",
        exclude_if=lambda v: v is None,
    )
    residual_streams: PositiveInt = Field(
        1,
        description="the residual kept as this many streams, collapsed into each sub-layer's input and its output "
        "expanded back (DeepSeek-V4's manifold-constrained hyper-connections, hc_mult); 1: one residual",
        exclude_if=lambda v: v == 1,
    )
    hyper_form: Literal["manifold", "independent", "lowrank"] = Field(
        "manifold",
        description="each hyper-connection's weights: manifold (DeepSeek-V4's: n pre, n post and n x n mixing "
        "weights from the streams, three scales), independent (Hy4's HYV4HyperConnection: n pre and n post, no "
        "mixing, two scales) or lowrank (Qwen4-Exp's Qwen4ExpTextGatedResidual: a norm over the n streams, a gate "
        "through hyper_rank back to n x hidden, and n injection weights)",
        exclude_if=lambda v: v == "manifold",
    )
    hyper_rank: PositiveInt | None = Field(
        None, description="lowrank: hc_lowrank, the gate's rank", exclude_if=lambda v: v is None
    )
    hyper_head: Literal["learned", "mean", "lowrank"] = Field(
        "learned",
        description="how the streams collapse before the final norm: learned (DeepSeek-V4's DeepseekV4HyperHead), "
        "an unweighted mean holding no weights (GLM-5.3's Glm5NextTextHyperHead, whose layers build their "
        "hyper-connections whatever hc_mult is), or lowrank (Qwen4-Exp's hyper_connection_mixer: a lowrank "
        "hyper-connection without its injection weights)",
        exclude_if=lambda v: v == "learned",
    )

    @model_validator(mode="after")
    def _consistent(self) -> "ModelArchitecture":
        if self.kv_heads is not None and self.heads % self.kv_heads:
            raise ValueError(f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})")
        if self.head_dim is None and self.mla is None and self.hidden % self.heads:
            raise ValueError(f"hidden ({self.hidden}) is not a multiple of heads ({self.heads}); give head_dim")
        if self.moe is not None and self.moe.first_dense_layers > self.layers:
            raise ValueError("moe.first_dense_layers exceeds layers")
        if self.bidirectional and self.local_attention is not None and self.local_attention.kind == "chunked":
            raise ValueError("local_attention: an encoder's (bidirectional) window slides; chunked is for decoders")
        if self.layer_weights:
            if len(self.layer_weights) != self.layers:
                raise ValueError(f"layer_weights has {len(self.layer_weights)} entries for {self.layers} layers")
            if any(j > i or self.layer_weights[j] != j for i, j in enumerate(self.layer_weights)):
                raise ValueError("layer_weights: each layer runs its own weights or those an earlier layer holds")
            other = self.mlp_free_layers or self.ffn_widths or self.hyper_connected or self.altup is not None
            if self.mixers or self.moe is not None or other or self.per_layer_input is not None:
                raise ValueError("layer_weights: shared weights are counted for attention and MLP layers only")
        if self.embedding_width is not None and self.head_transform == "none":
            raise ValueError("embedding_width: the output matrix is that wide, so a head_transform maps hidden to it")
        if self.position_offset and self.position_offset >= self.learned_positions:
            raise ValueError(
                f"position_offset ({self.position_offset}) leaves none of the {self.learned_positions} "
                "learned_positions rows for a token"
            )
        if self.parallel_residual and self.layer_norms != 2:
            raise ValueError("parallel_residual: attention's and the MLP's norms read the layer's input side by side, "
                             f"so layer_norms is 2, got {self.layer_norms}")  # fmt: skip
        if self.alibi and self.learned_positions:
            raise ValueError("alibi: ALiBi's biases replace the learned_positions table; set one of the two")
        if self.moe is not None and any(i >= self.layers for i in self.moe.dense_layers):
            raise ValueError(f"moe.dense_layers: layer indices run from 0 to {self.layers - 1}")
        if self.mixers and len(self.mixers) != self.layers:
            raise ValueError(f"mixers has {len(self.mixers)} entries for {self.layers} layers")
        if any(i >= self.layers for i in self.mlp_free_layers):
            raise ValueError(f"mlp_free_layers: layer indices run from 0 to {self.layers - 1}")
        if any("mamba" in m for m in self.mixers) and self.ssm is None:
            raise ValueError("mamba layers need ssm")
        if "deltanet" in self.mixers and self.deltanet is None:
            raise ValueError("deltanet layers need deltanet")
        if "conv" in self.mixers and self.short_conv is None:
            raise ValueError("conv layers need short_conv")
        if "rglru" in self.mixers and self.rglru is None:
            raise ValueError("rglru layers need rglru")
        if "rwkv" in self.mixers and self.rwkv is None:
            raise ValueError("rwkv layers need rwkv")
        if "mlstm" in self.mixers and self.mlstm is None:
            raise ValueError("mlstm layers need mlstm")
        if self.mlstm is not None and (self.mlstm.qk_dim % self.mlstm.heads or self.mlstm.v_dim % self.mlstm.heads):
            raise ValueError(f"mlstm.qk_dim ({self.mlstm.qk_dim}) and mlstm.v_dim ({self.mlstm.v_dim}) must be "
                             f"multiples of mlstm.heads ({self.mlstm.heads})")  # fmt: skip
        if (SHARED_BLOCK in self.mixers or REUSED_BLOCK in self.mixers) and (
            self.shared_block is None or self.ffn is None
        ):
            raise ValueError("shared-block layers need shared_block and ffn")
        if self.rglru is not None and self.rglru.width % self.rglru.heads:
            raise ValueError(f"rglru.width ({self.rglru.width}) must be a multiple of heads ({self.rglru.heads}): "
                             "the gates' blocks")  # fmt: skip
        dsa = self.indexer is not None and self.indexer.form in ("dsa", "pooled")
        if self.indexer is not None and (self.indexer.form in ("pooled", "qsa")) != (self.indexer.pool > 0):
            raise ValueError("indexer.pool: a pooled or qsa indexer's keys per pool (1 or more), and 0 for any other")
        ngram = self.ngram_embedding
        if ngram is not None and (len(ngram.rows) != len(ngram.layers) or ngram.width % ngram.heads):
            raise ValueError("ngram_embedding: one rows entry per layer, and width a multiple of heads")
        if ngram is not None and any(i >= self.layers or self.mixer(i) != "deltanet" for i in ngram.layers):
            raise ValueError(f"ngram_embedding.layers: linear-attention layers, from 0 to {self.layers - 1}")
        if ngram is not None and self.residual_streams < 2:
            raise ValueError("ngram_embedding: its keys are one per residual stream (residual_streams 2 or more)")
        if (self.hyper_form == "lowrank") != (self.hyper_rank is not None):
            raise ValueError("hyper_rank: the low-rank hyper-connections' rank (hc_lowrank), and only theirs")
        if dsa and (self.mla is None or self.mla.q_lora_rank is None):
            raise ValueError("indexer: DeepSeek's indexer reads MLA's compressed query (mla.q_lora_rank)")
        if any(m.removeprefix(KV_SHARED) == "global attention" for m in self.mixers) and self.global_attention is None:
            raise ValueError("global attention layers need global_attention")
        if any(m.removeprefix(KV_SHARED) == NOPE for m in self.mixers) and self.mla is None:
            raise ValueError("nope attention layers need mla: their latent keeps no rotary part")
        g = self.global_attention
        if g is not None and (g.heads or self.heads) % g.kv_heads:
            heads = "global_attention.heads" if g.heads else "heads"
            raise ValueError(
                f"{heads} ({g.heads or self.heads}) must be a multiple of global_attention.kv_heads ({g.kv_heads})"
            )
        local = self.local_attention
        if local is not None and any(i >= self.layers or "attention" not in self.mixer(i) for i in local.layers):
            raise ValueError(f"local_attention.layers: indices of attention layers, from 0 to {self.layers - 1}")
        if (
            self.relative_logits is not None
            and local is not None
            and local.layers
            and (set(local.layers) != {i for i in range(self.layers) if self.mixer(i) == "attention"})
        ):
            raise ValueError("relative_logits: where some layers slide, the full-attention ones are global attention "
                             "mixers (their banks cover extent distances, the sliding ones' their window)")  # fmt: skip
        if self.indexer is not None and any(i >= self.layers for i in self.indexer.layers):
            raise ValueError(f"indexer.layers: layer indices run from 0 to {self.layers - 1}")
        c = self.compressed_attention
        if any(m in (CSA, HCA) for m in self.mixers) and c is None:
            raise ValueError("compressed attention layers need compressed_attention")
        if c is not None and (self.kv_heads != 1 or not self.values_from_keys or self.mla is not None):
            raise ValueError("compressed_attention: one key-value head that serves as values (kv_heads 1, "
                             "values_from_keys), and no MLA")  # fmt: skip
        if c is not None and self.heads % c.o_groups:
            raise ValueError(f"compressed_attention.o_groups ({c.o_groups}) must divide heads ({self.heads})")
        producers: set[tuple[str, LocalAttentionSpec | None]] = set()  # the kinds of layer that computed K and V
        for i, mixer in enumerate(self.mixers):
            own = mixer.removeprefix(KV_SHARED)
            if mixer == own:
                producers.add((own, self.local_span(i)))
            elif (own, self.local_span(i)) not in producers:
                raise ValueError(f"mixers: layer {i} ({mixer}) needs an earlier {own} layer of its span, whose keys "
                                 "and values it attends with")  # fmt: skip
        if (self.attention_gate_bias or self.attention_gate_head_bias) and not self.attention_gate:
            raise ValueError("attention_gate_bias: the bias of an attention gate, and attention_gate is false")
        if self.kv_shared_ffn is not None and not any(m.startswith(KV_SHARED) for m in self.mixers):
            raise ValueError("kv_shared_ffn: the width of the kv-shared layers' MLP, and no layer is kv-shared")
        dense = [i for i in range(self.layers) if self.has_mlp(i) and not self.moe_layer(i)]
        if self.ffn_widths:
            if self.ffn is not None or self.kv_shared_ffn is not None or len(self.ffn_widths) != self.layers:
                raise ValueError(f"ffn_widths: one width for each of the {self.layers} layers, in place of ffn")
            wrong = next((i for i, w in enumerate(self.ffn_widths) if (w > 0) != (i in dense)), None)
            if wrong is not None:
                raise ValueError(f"ffn_widths: layer {wrong}: a positive width where a layer has a dense MLP, "
                                 "else 0")  # fmt: skip
        elif self.ffn is None and dense:
            raise ValueError("ffn is required for dense MLP layers")
        return self

    def mixer(self, i: int) -> Mixer:
        """Layer i's token mixer: attention unless `mixers` says otherwise."""
        return self.mixers[i] if self.mixers else "attention"

    @staticmethod
    def computes_kv(mixer: str) -> bool:
        """Whether a layer of `mixer` projects keys and values of its own: a kv-shared one attends with those of the
        last earlier layer of its kind (Gemma 4's num_kv_shared_layers, configuration_gemma4.py kv_sharing_modes)."""
        return not mixer.startswith(KV_SHARED)

    def dense_ffn(self, mixer: str) -> int:
        """The dense MLP's width in a layer of `mixer` where every layer of a kind has one width: kv_shared_ffn in a
        kv-shared layer where given, else ffn (per layer: layer_kind)."""
        width = self.kv_shared_ffn if self.kv_shared_ffn is not None and not self.computes_kv(mixer) else self.ffn
        assert width is not None  # guaranteed by validation where a layer has a dense MLP
        return width

    def local_span(self, i: int) -> LocalAttentionSpec | None:
        """Layer i's local attention (a window or a chunk), None where it attends to the whole context."""
        local = self.local_attention
        if local is None or "attention" not in self.mixer(i) or (local.layers and i not in local.layers):
            return None
        return local

    def has_mlp(self, i: int) -> bool:
        return i not in self.mlp_free_layers

    def layer_kind(self, i: int) -> LayerKind:
        """Layer i as (its mixer, its MLP: dense, MoE or none, the dense MLP's width or 0): layers of one kind hold
        and keep the same."""
        mixer = self.mixer(i)
        if not self.has_mlp(i):
            return mixer, "none", 0
        if self.moe_layer(i):
            return mixer, "moe", 0
        return mixer, "dense", self.ffn_widths[i] if self.ffn_widths else self.dense_ffn(mixer)

    @cached_property
    def layer_kinds(self) -> tuple[LayerKind, ...]:
        """Every layer's kind (layer_kind), once per spec: the engine reads it for every plan it costs."""
        return tuple(self.layer_kind(i) for i in range(self.layers))

    @cached_property
    def attention_kinds(self) -> tuple[tuple[Mixer, LocalAttentionSpec | None, int], ...]:
        """The attention layers by kind, (mixer, local attention or None, how many), once per spec."""
        return self._attention_kinds_of(range(self.layers))

    @cached_property
    def held_attention_kinds(self) -> tuple[tuple[Mixer, LocalAttentionSpec | None, int], ...]:
        """attention_kinds of the layers holding the weights they run (layer_weights)."""
        return self._attention_kinds_of(i for i in range(self.layers) if self.holds_weights(i))

    def _attention_kinds_of(self, layers: Iterable[int]) -> tuple[tuple[Mixer, LocalAttentionSpec | None, int], ...]:
        kinds = self.layer_kinds
        counts = Counter((kinds[i][0], self.local_span(i)) for i in layers if "attention" in kinds[i][0])
        return tuple((mixer, local, n) for (mixer, local), n in counts.items())

    @property
    def rotary(self) -> bool:
        """Q and K are rotated by position (RoPE): no learned position table and no ALiBi."""
        return not self.learned_positions and not self.alibi

    @property
    def indexer_layers(self) -> int:
        """The layers whose own lightning indexer scores the context (IndexerSpec.layers), 0 without one."""
        if self.indexer is None:
            return 0
        return len(self.indexer.layers) if self.indexer.layers else self.attention_layers

    @cached_property
    def attention_layers(self) -> int:
        """The layers that attend over the whole context (the KV cache's and the score FLOPs' layers)."""
        if not self.mixers:
            return self.layers
        return sum(1 for m in self.mixers if "attention" in m)

    @property
    def output_vocab(self) -> int:
        """The logits' width: the output head's rows."""
        return self.head_vocab or self.vocab

    @cached_property
    def hybrid(self) -> bool:
        """Some layer is not plain attention followed by an MLP (a recurrent or convolutional mixer, none, or
        DeepSeek-V4's compressed attention), the residual is kept as several streams, the layers take Gemma 4's
        per-layer inputs or Gemma 3n's AltUp copies, the input takes LongCat-Flash-Lite's n-gram tables, their MLPs
        differ in width, their experts are split by modality, their norms are gated and their queries fused with a gate
        (A.X K2), or their attention takes relative logits and short convolutions (Inkling), or each expert's output is
        normed (Ergo), or their inputs are attention residuals (Inkling 2), or their attention is ZAYA's or dots3's, or
        they share weights or a narrower embedding (ALBERT), or nGPT's scales (Dory): what layouts and the per-op model
        do not cost yet."""
        plain = ("attention", "global attention")
        unusual = bool(self.mlp_free_layers or self.ffn_widths) or self.hyper_connected or self.vision_experts
        unusual = unusual or self.attention_experts is not None or self.gated_norms_and_query
        unusual = unusual or self.per_layer_input is not None or self.altup is not None or self.ngram_input is not None
        unusual = unusual or self.relative_or_convolved or (self.moe is not None and self.moe.expert_norms)
        unusual = unusual or self.attention_residual_block is not None or self.convolved_or_scaled
        unusual = unusual or self.latent_kinds or self.shared_narrow_or_scaled
        return any(m not in plain for m in self.mixers) or unusual

    @property
    def gated_norms_and_query(self) -> bool:
        """A.X K2's gated norms (norm_gate_rank) or its query gate fused into q_gate_proj (MLASpec.query_gate)."""
        return self.norm_gate_rank is not None or (self.mla is not None and self.mla.query_gate)

    @property
    def latent_kinds(self) -> bool:
        """dots3's latent attention shaped otherwise in its full layers (global_attention.mla) or with a norm over its
        rotary key (mla.rope_key_norm)."""
        g = self.global_attention
        return (g is not None and g.mla is not None) or (self.mla is not None and self.mla.rope_key_norm)

    @property
    def convolved_or_scaled(self) -> bool:
        """ZAYA's compressed convolutional attention (cca), residual scaling or MLP router (moe.router_mlp)."""
        router_mlp = self.moe is not None and self.moe.router_mlp is not None
        return self.cca is not None or self.residual_scaling or router_mlp

    @property
    def relative_or_convolved(self) -> bool:
        """Inkling's relative position logits (relative_logits) or short convolutions (sconv_kernel)."""
        return self.relative_logits is not None or self.sconv_kernel is not None

    @property
    def vision_experts(self) -> bool:
        """Whether the MoE layers hold modality-isolated vision experts (MoESpec.vision_experts)."""
        return self.moe is not None and self.moe.vision_experts > 0

    @property
    def hyper_connected(self) -> bool:
        """Hyper-connections around every sub-layer: several residual streams, or DeepSeek-V4's and GLM-5.3's layers,
        which build their two hyper-connections whatever hc_mult is (modeling_deepseek_v4.py, modeling_glm5_next.py)."""
        hy4 = self.hyper_form == "independent"  # HYV4DecoderLayer builds its two whatever hc_mult is, too
        return self.residual_streams > 1 or self.compressed_attention is not None or self.hyper_head == "mean" or hy4

    def holds_weights(self, i: int) -> bool:
        """Whether layer `i` holds the weights it runs (layer_weights), not an earlier layer's."""
        return not self.layer_weights or self.layer_weights[i] == i

    @property
    def shared_narrow_or_scaled(self) -> bool:
        """Layers that run an earlier layer's weights, or an embedding narrower than the hidden state (ALBERT), or
        nGPT's scaled, normalised layers (Dory), whose element-wise ops the per-op model does not price."""
        return bool(self.layer_weights) or self.embedding_width is not None or self.ngpt_scales

    @property
    def unmodelled(self) -> str:
        """What of a hybrid the per-op model does not time yet (ops.has_layer_ops), in words for its refusals."""
        if self.shared_narrow_or_scaled:
            return "layers sharing their weights, an embedding of another width than the hidden state, or nGPT's scales"
        if self.shared_block is not None:
            return "transformer blocks shared across layers"
        if any(m.removeprefix(KV_SHARED) == NOPE for m in self.mixers):
            return "latent attention layers without RoPE"
        if self.hyper_connected:
            compressed = "compressed attention and " if self.compressed_attention is not None else ""
            return f"{compressed}hyper-connected residual streams"
        if self.altup is not None:
            return "AltUp's copies of the hidden state, LAuReL, per-layer embeddings and layers sharing keys and values"
        if self.per_layer_input is not None:
            return "per-layer embeddings and layers sharing keys and values"
        if self.ngram_input is not None:
            return "n-gram embedding tables beside the token embedding"
        if any(not self.computes_kv(m) for m in self.mixers):
            return "layers sharing keys and values"
        if self.gated_norms_and_query:
            return "gated norms and a query gate fused into the query projection"
        if self.ffn_widths:
            return "MLP widths that differ from layer to layer"
        if self.attention_experts:
            return "a mixture of attention heads (attention experts)"
        if self.vision_experts:
            return "experts isolated by modality (vision experts beside the text ones)"
        if "cross" in self.mixers:
            return "cross-attention layers over image states"
        if self.attention_residual_block is not None:
            return "attention residuals over blocks of layers"
        if self.convolved_or_scaled:
            return "compressed convolutional attention, scaled residuals and an MLP router"
        if self.latent_kinds:
            return "latent attention of other shapes in its sliding and full layers"
        if self.relative_or_convolved:
            return "relative position logits and short convolutions on the keys, values and sub-layer outputs"
        if self.moe is not None and self.moe.expert_norms:
            return "a norm over each expert's output, with weights of its own"
        return (
            "mixers that are not attention or Mamba-2 (Mamba-1, DeltaNet, lightning attention, short convolutions, "
            "RG-LRU recurrent blocks, RWKV time mixing, mLSTM layers)"
        )

    def attention_of(self, mixer: str) -> "ModelArchitecture":
        """The architecture a layer of `mixer` attends with: a "global attention" layer's own head_dim, KV heads,
        query heads and K = V (global_attention); a "nope attention" layer's MLA without a rotary part (_nope_view);
        else this one."""
        own = mixer.removeprefix(KV_SHARED)
        if own == NOPE and self.mla is not None:
            return self._nope_view
        return self._global_view if own == "global attention" and self.global_attention is not None else self

    @cached_property
    def _nope_view(self) -> "ModelArchitecture":
        """An MLA layer without RoPE (Mistral Large 4's no_rope_layers, modeling_mistral_large4.py
        MistralLarge4TextAttention, transformers 5.25.0): kv_a_proj_with_mqa makes the latent alone, and the rotary
        slice of each query and key head is a non-rotary one (qk_nope_head_dim + qk_rope_head_dim), so kv_b_proj
        is that much wider and the cache keeps the latent alone."""
        m = self.mla
        assert m is not None
        nope = m.model_copy(update={"qk_nope_head_dim": m.qk_nope_head_dim + m.qk_rope_head_dim, "qk_rope_head_dim": 0})
        return self._view({"mla": nope, "mixers": ()})

    @cached_property
    def _global_view(self) -> "ModelArchitecture":
        g = self.global_attention
        assert g is not None
        return self._view(
            {"head_dim": g.head_dim, "kv_heads": g.kv_heads, "values_from_keys": g.values_from_keys,
             "attention_sinks": g.sinks, "mixers": (), "global_attention": None, "heads": g.heads or self.heads,
             "mla": g.mla or self.mla}
        )  # fmt: skip

    def _view(self, update: dict[str, Any]) -> "ModelArchitecture":
        """A copy of this architecture with `update`, as one kind of its layers attends."""
        view = self.model_copy(update=update)
        for name, attribute in vars(type(self)).items():  # a copy carries this spec's cached values: not the view's
            if isinstance(attribute, cached_property):
                view.__dict__.pop(name, None)
        return view

    def moe_layer(self, i: int) -> bool:
        """Whether layer i (from 0) has the MoE MLP: past the leading dense layers, every `every`-th layer
        ((i + 1) % every == 0, as Llama 4's interleave_moe_layer_step and Qwen2-MoE's decoder_sparse_step), and
        not listed among `dense_layers` (Qwen's mlp_only_layers)."""
        return self.moe_pattern[i] if 0 <= i < self.layers else self._moe_layer(i)

    @cached_property
    def moe_pattern(self) -> tuple[bool, ...]:
        """moe_layer of every layer, in order (asked per layer, per stage and per plan in a search)."""
        return tuple(self._moe_layer(i) for i in range(self.layers))

    @cached_property
    def moe_layers(self) -> int:
        """How many layers have the MoE MLP."""
        return sum(self.moe_pattern)

    def _moe_layer(self, i: int) -> bool:
        m = self.moe
        if m is None:
            return False
        return i >= m.first_dense_layers and (i + 1) % m.every == 0 and i not in m.dense_layers and self.has_mlp(i)

    @property
    def norm_weights(self) -> int:
        """Weights per element of one norm: LayerNorm's scale and bias, RMSNorm's scale, none for OLMo's
        non-parametric LayerNorm (modeling_olmo.py OlmoLayerNorm)."""
        return {"layernorm": 2, "rmsnorm": 1, "layernorm_nb": 1, "layernorm_np": 0}[self.norm]

    @property
    def qk_norm_weights(self) -> int:
        """Weights per element of a query or key norm: a scale and, where qk_norm_bias says, a bias; else as the
        layers' norms (norm_weights)."""
        return self.norm_weights if self.qk_norm_bias is None else 1 + int(self.qk_norm_bias)

    @property
    def gated_mlp(self) -> bool:
        """SwiGLU and GeGLU MLPs have three matrices (gate, up, down); GELU and ReLU MLPs two."""
        return self.mlp in ("swiglu", "geglu")

    @property
    def n_kv_heads(self) -> int:
        return self.kv_heads or self.heads

    @property
    def d_head(self) -> int:
        return self.head_dim or self.hidden // self.heads

    @property
    def d_value(self) -> int:
        """A value head's width (v_head_dim, else head_dim)."""
        return self.v_head_dim or self.d_head


class Published(Spec):
    """The count the model's own card or paper states, with where it says so."""

    total: Count
    active: Count | None = None
    source: Text
    note: Text = ""


class ModelSpec(Spec):
    name: Slug
    title: Text
    source: Text = ""
    params: Count | None = Field(None, description="total parameters, for models the counter cannot describe")
    largest_layer_params: Count | None = None
    published: Published | None = None
    architecture: ModelArchitecture | None = None

    @model_validator(mode="after")
    def _something_to_count(self) -> "ModelSpec":
        if self.params is None and self.architecture is None:
            raise ValueError("give an architecture or params")
        return self


# ----------------------------------------------------------------------------------------------- topologies


class ComputeRatesSpec(Spec):
    """Sustained rates of this GPU, over its generation's (dpcost/engine/rates.py): shares of the dense peak or of
    the HBM bandwidth, and seconds per eager kernel launch."""

    gemm: Annotated[float, Field(gt=0, le=1)] | None = Field(
        None, description="share of the BF16 peak a matmul sustains"
    )
    gemm_fp8: Annotated[float, Field(gt=0, le=1)] | None = Field(None, description="share of the FP8 peak")
    gemm_fp4: Annotated[float, Field(gt=0, le=1)] | None = Field(
        None, description="share of the FP4 (NVFP4) peak [default: the FP8 share]"
    )
    matmul_in_step: Annotated[float, Field(gt=0, le=1)] | None = Field(
        None,
        description="the share of those matmul rates a training step's matmuls keep [default: engine/rates.py "
        "IN_STEP_MATMUL, fitted on published runs; 1 takes the benchmark rates as they are]",
    )
    attention_flash2: Annotated[float, Field(gt=0, le=1)] | None = Field(
        None, description="FlashAttention-2 forward + backward, share of the BF16 peak at long sequences"
    )
    attention_cudnn: Annotated[float, Field(gt=0, le=1)] | None = Field(
        None, description="cuDNN fused attention forward + backward, share of the BF16 peak at long sequences"
    )
    hbm: Annotated[float, Field(gt=0, le=1)] | None = Field(
        None, description="share of the HBM bandwidth a stream reaches"
    )
    launch: Seconds | None = Field(None, description="the shortest time an eagerly launched kernel takes")
    node_drop: Annotated[float, Field(ge=0, lt=1)] | None = Field(
        None, description="the sustained rate's fall, on average, with every GPU of the node busy"
    )
    gpu_spread: Annotated[float, Field(ge=0, lt=1)] | None = Field(
        None, description="the standard deviation of the sustained rate between busy GPUs, as a share of it"
    )


GPUArch = Literal["ampere", "hopper", "blackwell"]  # a GPU's generation, which its defaults follow


class GPUSpec(Spec):
    name: Text
    arch: GPUArch
    hbm: Bytes
    hbm_bandwidth: Bandwidth
    bf16_dense: Flops
    fp8_dense: Flops | None = Field(None, description="dense FP8 tensor-core peak, where the GPU has one")
    fp4_dense: Flops | None = Field(None, description="dense FP4 (NVFP4) tensor-core peak, where the GPU has one")
    sms: Annotated[int, Field(ge=1, le=100_000)] | None = Field(
        None, description="streaming multiprocessors: a collective's channels take one each while it runs"
    )
    context: Bytes | None = Field(
        None,
        description="memory a process holds outside PyTorch's allocator: CUDA context, NCCL buffers [default: "
        "dpcost/engine/memory.py CONTEXT_BYTES for the GPU's generation]",
    )
    rates: ComputeRatesSpec | None = Field(
        None, description="sustained matmul, attention and HBM rates [default: the generation's, engine/rates.py]"
    )

    def peak(self, dtype: str) -> float:
        """The dense tensor-core peak the compute runs against (FLOP/s)."""
        if dtype == "fp8":
            if self.fp8_dense is None:
                raise ValueError(f"the {self.name} has no FP8 tensor cores")
            return self.fp8_dense
        if dtype == "nvfp4":
            if self.fp4_dense is None:
                raise ValueError(f"the {self.name} has no FP4 tensor cores (gpu.fp4_dense: Blackwell and later)")
            return self.fp4_dense
        return self.bf16_dense


def _latency_mapping(value: Any) -> Any:
    """A single time applies to all three NCCL protocols."""
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return {"ll": value, "ll128": value, "simple": value}
    return value


class TierLatency(Spec):
    """One-way latency of one algorithm step across this tier, per NCCL protocol."""

    ll: Seconds
    ll128: Seconds
    simple: Seconds


class InNetworkReduction(Spec):
    """Reduction done by the switches: NVLink SHARP (NVLS) in an NVSwitch domain, or SHARP on a fabric."""

    kind: Literal["nvls", "sharp"]
    efficiency: Fraction = Field(
        description="of line rate, with each GPU moving (1 + 1/N) x S (NVLS, at up to 8 ranks) or S/g (SHARP)"
    )
    loss_per_doubling: Annotated[float, Field(ge=0, le=0.5)] = Field(
        0.0, description="NVLS: the share of its efficiency lost per doubling of the ranks beyond 8 in one domain"
    )
    latency: Seconds = Field(description="per call: the switch's reduce-and-multicast round trip")
    note: Text = ""

    @model_validator(mode="after")
    def _loss_is_nvls_only(self) -> "InNetworkReduction":
        if self.kind != "nvls" and self.loss_per_doubling:
            raise ValueError("loss_per_doubling applies to nvls only: SHARP on a fabric keeps one efficiency")
        return self

    def efficiency_over(self, ranks: float) -> float:
        """The efficiency kept over `ranks` GPUs of one domain: `efficiency` up to 8 ranks (an HGX board's NVLS
        group, where every NVLink generation's figure is measured), (1 - loss_per_doubling) less per doubling
        beyond, as a rack-scale domain shows (topologies/gb200-nvl72.yaml)."""
        return float(self.efficiency * (1 - self.loss_per_doubling) ** max(0.0, math.log2(ranks / 8)))


LatencyTable = Annotated[
    TierLatency | None, BeforeValidator(_latency_mapping, json_schema_input_type=TierLatency | str | float | None)
]


class TierSpec(Spec):
    """One level of the fabric. `size` is the number of GPUs in one domain of this tier (e.g. 8 for a node's
    NVLink, 256 for a scalable unit under one set of leaf switches); the last tier may leave it open.
    `bandwidth` is per GPU and one direction. Step latencies are NCCL's hwLatencies for the tier's `link`
    (dpcost/engine/nccl_tables.py), plus `hop_latency` for a network tier's own switches and NIC; NCCL's tuner picks
    with `reported_latency` in its place where the NIC's plugin reports another (engine/collectives.py)."""

    name: Text
    size: Annotated[int, Field(gt=0, le=1_000_000_000, strict=True)] | None = None
    link: Literal["nvlink", "pci", "net"] | None = Field(
        None, description="NCCL's latency row for this tier; default nvlink for the first tier, net above"
    )
    bandwidth: Bandwidth
    efficiency: Fraction = 1.0
    oversubscription: Annotated[float, Field(ge=1, le=1000)] = 1.0
    hop_latency: Seconds = Field(
        0.0, description="added to NCCL's network hop latency (twice for Simple), as NCCL adds a NIC's latency"
    )
    reported_latency: Seconds | None = Field(
        None,
        description="the latency the NIC's plugin reports to NCCL (props->latency), which NCCL's tuner adds in "
        "hop_latency's place when it picks an algorithm and protocol; unset: hop_latency",
    )
    latency: LatencyTable = Field(None, description="replaces NCCL's Ring hop latency on this tier")
    tree_latency: LatencyTable = Field(None, description="replaces NCCL's Tree hop latency on this tier")
    in_network_reduction: InNetworkReduction | None = None
    tray: Annotated[int, Field(gt=0, le=1_000_000, strict=True)] | None = Field(
        None,
        description="GPUs per compute tray of a multi-host NVLink domain (GB200 NVL72: 4): a job holds such domains in "
        "scheduler segments of whole trays (placement.job_view)",
    )
    shared_by: Annotated[int, Field(gt=0, le=10_000_000, strict=True)] = Field(
        1,
        description="GPUs that share `bandwidth` (a datacenter interconnect: one link per site, shared by the site's "
        "GPUs); per-GPU bandwidth is bandwidth / shared_by",
    )
    crossing_loss: Annotated[float, Field(ge=0, le=0.5)] = Field(
        0.0,
        description="share of network bandwidth a call loses once its ranks span more than one domain of the tier "
        "below (leaf to spine: longer paths, ECMP collisions); declared, or fitted by calibrate",
    )
    note: Text = ""

    @property
    def effective_bandwidth(self) -> float:
        """Per-GPU bandwidth after efficiency and oversubscription: what a ring can count on (bytes/s)."""
        return self.bandwidth * self.efficiency / self.oversubscription / self.shared_by


class Calibration(Spec):
    """What `dpcost calibrate` fitted, from which measurements, and how well (kept with the topology it wrote)."""

    base: Text
    files: list[Text] = Field(default_factory=list)
    fitted: dict[str, float] = Field(default_factory=dict)
    undetermined: list[Text] = Field(default_factory=list)
    error: dict[str, float] = Field(default_factory=dict, description="geomean |error| per size band after the fit")
    points: NonNegativeInt = 0


ChannelCount = Annotated[int, Field(ge=1, le=64, strict=True)]


class NcclChannels(Spec):
    """The channels NCCL runs on this cluster, as its NCCL_DEBUG=INFO log prints them ("<n> coll channels, ..., <m>
    nvls channels"); each one not given follows NCCL 2.30.7's rules (dpcost/engine/nccl_channels.py)."""

    one_node: ChannelCount | None = Field(None, description="Ring/Tree channels of a communicator inside one node")
    across_nodes: ChannelCount | None = Field(None, description="Ring/Tree channels of a communicator across nodes")
    nvls: ChannelCount | None = Field(None, description="NVLS/NVLSTree channels")


# aws-ofi-nccl's region tuner per AWS platform (p5/p5e, p5en, p6-b200): engine/tuner_plugin.py
TunerPlugin = Literal["aws-ofi-nccl-p5", "aws-ofi-nccl-p5en", "aws-ofi-nccl-p6"]


class TopologySpec(Spec):
    name: Slug
    title: Text
    sources: list[Text] = Field(default_factory=list)
    gpu: GPUSpec
    host_cpu: Literal["intel", "amd", "arm"] = Field(
        "intel", description="the nodes' CPU vendor: NCCL caps LL across nodes by it"
    )
    call_overhead: Seconds = Field(description="per-call floor: kernel launch and completion")
    latency_scale: Annotated[float, Field(ge=0.05, le=100)] = Field(
        1.0, description="multiplies NCCL's hop latencies (calibrated from a cluster's own runs)"
    )
    scaling_loss: Annotated[float, Field(ge=0, le=0.5)] = Field(
        0.0, description="fraction of network bandwidth lost per doubling of nodes beyond two (calibrated)"
    )
    tiers: Annotated[list[TierSpec], Field(min_length=1)]
    nvls: bool = Field(
        True,
        description="NCCL may run NVLS/NVLSTree where a tier has NVLink SHARP (off: NCCL_NVLS_ENABLE=0, or no fabric "
        "manager / IMEX channels)",
    )
    collnet: bool = Field(True, description="NCCL may run CollNet where the fabric has SHARP (NCCL_COLLNET_ENABLE)")
    protocol: Annotated[str, BeforeValidator(nccl_proto)] | None = Field(
        None,
        description="the protocols NCCL may run on this cluster, as NCCL_PROTO in its environment sets them: one, or "
        "several comma-separated (Google's TCPXO profile: simple,ll128); none: NCCL chooses among LL, LL128 and "
        "Simple (a plan's --protocol overrides it)",
    )
    nccl_algo: Annotated[str, BeforeValidator(nccl_algo_setting)] | None = Field(
        None,
        description="the algorithms NCCL may run on this cluster, as NCCL_ALGO in its environment sets them "
        "(^NVLS, Ring,Tree, allreduce:tree,ring), leaving every collective Ring; none: NCCL chooses among all (a "
        "plan's --nccl-algo overrides it)",
    )
    tuner_plugin: TunerPlugin | None = Field(
        None,
        description="the tuner plugin that picks NCCL's algorithm and protocol where its tables cover the call "
        "(aws-ofi-nccl-p5, -p5en, -p6: aws-ofi-nccl's region tuner on that AWS platform, on by default since v1.16); "
        "none: NCCL's own",
    )
    channels: NcclChannels | None = Field(
        None,
        description="the channels NCCL's log prints for this cluster, where its rules do not give them (the "
        "NICs a node shares, NCCL_MIN/MAX_NCHANNELS set); none: NCCL's rules",
    )
    calibration: Calibration | None = None

    @model_validator(mode="after")
    def _nested_tiers(self) -> "TopologySpec":
        previous = 0
        for i, tier in enumerate(self.tiers):
            last = i == len(self.tiers) - 1
            if tier.size is None:
                if not last:
                    raise ValueError(f"tiers[{i}] ({tier.name}): only the last tier may leave size open")
                continue
            if previous and (tier.size <= previous or tier.size % previous):
                raise ValueError(f"tiers[{i}] ({tier.name}): size {tier.size} must be a larger multiple of {previous}")
            previous = tier.size
        for i, tier in enumerate(self.tiers):
            reduction = tier.in_network_reduction
            if reduction is not None and (reduction.kind == "nvls") != (i == 0):
                raise ValueError(f"tiers[{i}]: nvls belongs to the first (NVLink) tier, sharp to a network tier")
        return self

    @property
    def max_gpus(self) -> int | None:
        return self.tiers[-1].size

    @property
    def domain_size(self) -> int:
        """GPUs in one scale-up (NVLink) domain: the first tier."""
        size = self.tiers[0].size
        return size if size is not None else 1 << 62
