"""State-space and hybrid families' config.json in dpcost's vocabulary: each layer's token mixer (attention, Mamba,
gated DeltaNet) and whether it has an MLP, with every default transformers' own `configuration_<family>.py` gives
(docs/sources/ssm-families.md). Pure, as hf_config.py: a parsed config in, architecture fields out."""

from __future__ import annotations

import math
from typing import Any

from dpcost.errors import InputError
from dpcost.hf_config import (
    Keys,
    dense_then_experts,
    dimensions,
    indexer_kinds,
    lightning_mixer,
    mlp_activation,
    per_layer,
)
from dpcost.specs import REUSED_BLOCK, SHARED_BLOCK

__all__ = ["hybrid_architecture"]

# configuration_mamba.py / configuration_falcon_mamba.py (MambaConfig's defaults, FalconMambaConfig the same)
_MAMBA = {"vocab_size": 50280, "hidden_size": 768, "state_size": 16, "num_hidden_layers": 32, "expand": 2,
          "conv_kernel": 4}  # fmt: skip
# configuration_mamba2.py (Mamba2Config)
_MAMBA2 = {"num_heads": 128, "head_dim": 64, "vocab_size": 32768, "hidden_size": 4096, "state_size": 128,
           "num_hidden_layers": 64, "expand": 2, "conv_kernel": 4, "n_groups": 8, "chunk_size": 256}  # fmt: skip
# configuration_nemotron_h.py (NemotronHConfig)
_NEMOTRON_H = {"vocab_size": 131072, "hidden_size": 4096, "intermediate_size": 21504, "num_hidden_layers": 52,
               "num_attention_heads": 32, "head_dim": 128, "num_key_value_heads": 8, "ssm_state_size": 128,
               "mamba_num_heads": 128, "n_groups": 8, "mamba_head_dim": 64, "conv_kernel": 4,
               "chunk_size": 128}  # fmt: skip
_NEMOTRON_H_PATTERN = "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-"
# configuration_qwen3_next.py (Qwen3NextConfig)
_QWEN3_NEXT = {"vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 48,
               "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256, "linear_conv_kernel_dim": 4,
               "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_num_key_heads": 16,
               "linear_num_value_heads": 32, "decoder_sparse_step": 1, "moe_intermediate_size": 512,
               "shared_expert_intermediate_size": 512, "num_experts_per_tok": 10, "num_experts": 512,
               "full_attention_interval": 4}  # fmt: skip

# configuration_kimi_linear.py (KimiLinearConfig, transformers 5.24.0)
_KIMI_LINEAR = {"vocab_size": 163840, "hidden_size": 2304, "intermediate_size": 9216, "moe_intermediate_size": 1024,
                "num_hidden_layers": 27, "num_attention_heads": 32, "n_shared_experts": 1, "kv_lora_rank": 512,
                "qk_rope_head_dim": 64, "v_head_dim": 128, "qk_nope_head_dim": 128, "num_experts_per_tok": 8,
                "num_local_experts": 256, "linear_head_dim": 128, "linear_num_heads": 32, "linear_conv_kernel_dim": 4,
                "first_k_dense_replace": 1}  # fmt: skip

# Glm5NextTextConfig's defaults (configuration_glm5_next.py, transformers 5.25.0: GLM-5.3-Flash's text model)
_GLM5_NEXT = {"vocab_size": 154880, "hidden_size": 4096, "intermediate_size": 12288, "moe_intermediate_size": 2048,
              "num_hidden_layers": 45, "num_attention_heads": 64, "n_shared_experts": 1, "n_routed_experts": 288,
              "num_experts_per_tok": 8, "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_nope_head_dim": 256,
              "v_head_dim": 256, "index_topk": 2048, "index_head_dim": 128, "index_n_heads": 32, "index_kpool": 16,
              "linear_head_dim": 128, "linear_num_heads": 64, "linear_conv_kernel_dim": 4, "hc_mult": 4}  # fmt: skip

# Qwen4ExpTextConfig's defaults (configuration_qwen4_exp.py, transformers 5.25.0): Qwen3-Next's keys, other defaults
_QWEN4_EXP = {**_QWEN3_NEXT, "vocab_size": 248320, "num_hidden_layers": 40, "hc_count": 4, "hc_lowrank": 320}

# configuration_qwen3_5.py / configuration_qwen3_5_moe.py (Qwen3_5TextConfig, Qwen3_5MoeTextConfig, transformers
# 5.24.0): Qwen3-Next's keys, other defaults
_QWEN3_5 = {**_QWEN3_NEXT, "vocab_size": 248320, "hidden_size": 4096, "intermediate_size": 12288,
            "num_hidden_layers": 32, "num_key_value_heads": 4}  # fmt: skip
_QWEN3_5_MOE = {**_QWEN3_NEXT, "vocab_size": 248320, "num_hidden_layers": 40, "num_experts_per_tok": 8,
                "num_experts": 256}  # fmt: skip
# configuration_lara_mini.py (LaraMiniConfig, transformers 5.25.0: Lara 4 Mini): Qwen3-Next's keys, other defaults
_LARA_MINI = {**_QWEN3_NEXT, "hidden_size": 1024, "num_hidden_layers": 34, "num_key_value_heads": 4, "head_dim": 128,
              "linear_num_key_heads": 8, "linear_num_value_heads": 16, "num_experts_per_tok": 4, "num_experts": 128,
              "sliding_window": 512}  # fmt: skip
_LARA_MINI_PATTERN = (
    "linear_attention",
    "sliding_attention",
    "linear_attention",
    "full_attention",
    "sliding_attention",
)

# configuration_jamba.py (JambaConfig)
_JAMBA = {"vocab_size": 65536, "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
          "num_attention_heads": 32, "num_key_value_heads": 8, "num_experts_per_tok": 2, "num_experts": 16,
          "expert_layer_period": 2, "expert_layer_offset": 1, "attn_layer_period": 8, "attn_layer_offset": 4,
          "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2}  # fmt: skip

# configuration_falcon_h1.py (FalconH1Config): mamba_d_ssm 1024 whatever the hidden size
_FALCON_H1 = {"vocab_size": 128000, "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
              "num_attention_heads": 32, "num_key_value_heads": 8, "mamba_d_ssm": 1024, "mamba_n_heads": 128,
              "mamba_n_groups": 1, "mamba_d_state": 256, "mamba_d_conv": 4, "mamba_expand": 2,
              "mamba_chunk_size": 256}  # fmt: skip

# configuration_granitemoehybrid.py (GraniteMoeHybridConfig, transformers 5.24.0)
_GRANITE_HYBRID = {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
                   "num_attention_heads": 32, "num_local_experts": 8, "num_experts_per_tok": 2,
                   "shared_intermediate_size": 1024, "mamba_n_heads": 128, "mamba_n_groups": 1, "mamba_d_state": 256,
                   "mamba_d_conv": 4, "mamba_expand": 2, "mamba_chunk_size": 256}  # fmt: skip


# configuration_lfm2.py / configuration_lfm2_moe.py (Lfm2Config, Lfm2MoeConfig, transformers 5.24.0)
_LFM2 = {"vocab_size": 65536, "hidden_size": 2560, "intermediate_size": 12288, "num_hidden_layers": 32,
         "num_attention_heads": 32, "num_key_value_heads": 8, "conv_L_cache": 3, "block_multiple_of": 256}  # fmt: skip
_LFM2_MOE = {"vocab_size": 65536, "hidden_size": 2048, "intermediate_size": 7168, "num_hidden_layers": 32,
             "num_attention_heads": 32, "num_key_value_heads": 8, "conv_L_cache": 3, "moe_intermediate_size": 1792,
             "num_dense_layers": 2, "num_experts_per_tok": 4, "num_experts": 32}  # fmt: skip


# BambaConfig's defaults (configuration_bamba.py, transformers 5.24.0)
_BAMBA = {"vocab_size": 128000, "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
          "num_attention_heads": 32, "num_key_value_heads": 8, "mamba_n_heads": 128, "mamba_n_groups": 1,
          "mamba_d_state": 256, "mamba_d_conv": 4, "mamba_expand": 2, "mamba_chunk_size": 256}  # fmt: skip
# OlmoHybridConfig's defaults (configuration_olmo_hybrid.py, transformers 5.24.0)
_OLMO_HYBRID = {"vocab_size": 100352, "hidden_size": 3840, "intermediate_size": 11008, "num_hidden_layers": 32,
                "num_attention_heads": 30, "linear_conv_kernel_dim": 4}  # fmt: skip
# MiniMaxConfig's defaults (configuration_minimax.py, transformers 5.24.0); head_dim hidden / heads unless given
_MINIMAX = {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
            "num_attention_heads": 32, "num_key_value_heads": 8, "num_experts_per_tok": 2, "num_local_experts": 8,
            "block_size": 256}  # fmt: skip
# JetNemotronConfig's defaults (NVlabs/Jet-Nemotron configuration_jet_nemotron.py at 94cbd124: Jet-Nemotron-2B's
# shape) and JetBlockConfig's (jet_block.py), which efficient_attention_config.jet overrides
_JET_NEMOTRON = {"vocab_size": 151936, "hidden_size": 1536, "intermediate_size": 8960, "num_hidden_layers": 28,
                 "num_attention_heads": 12, "num_key_value_heads": 2}  # fmt: skip
_JET_BLOCK = {"num_heads": 6, "head_dim": 256, "conv_size": 4, "dconv_generator_reduction": 8}
_JET_EXPAND_V = 2.0
_JET_LAYERS = {"jet", "attn", "swa"}


def hybrid_architecture(k: Keys, family: str) -> dict[str, Any]:
    """The architecture fields of a state-space or hybrid family's config.json, by its reader (_READERS, at the end
    of this module); Qwen3-Next's reads Qwen3.5's text models and Lara 4 Mini too."""
    if family in ("lfm2", "lfm2_moe", "qwen3_5_text", "qwen3_5_moe_text", "lara_mini"):
        return _lfm2(k, family) if family.startswith("lfm2") else _qwen3_next(k, family)
    return _READERS[family](k)


def _int(k: Keys, key: str, defaults: dict[str, int], field: str = "") -> int:
    return int(k.integer(key, default=defaults[key], field=field))


def _mamba_inner(k: Keys, key: str, default: float, hidden: int) -> int:
    """A Mamba mixer's inner width, int(expand x hidden_size) as the config classes compute it (Mamba2Config,
    GraniteMoeHybridConfig, BambaConfig, ZambaConfig, Zamba2Config); its size errors name the expand key."""
    return int(k.positive(key, default, "ssm.inner") * hidden)


def _count(k: Keys, key: str, defaults: dict[str, int], field: str = "") -> int:
    """A whole number of at least 1 (a count the reader divides by or cycles through)."""
    value = _int(k, key, defaults, field)
    if value < 1:
        raise InputError(k.where, f"{k._key(key)}: a whole number from 1, got {value}")
    return value


def _only_mixers(layers: int, mixer: str) -> dict[str, Any]:
    """A pure state-space model: every layer one norm and one mixer, no MLP, no attention (the heads fields are
    placeholders no formula reads: attention_layers is 0)."""
    return {"mixers": (mixer,) * layers, "mlp_free_layers": tuple(range(layers)), "layer_norms": 1, "heads": 1}


def _mamba(k: Keys) -> dict[str, Any]:
    """MambaForCausalLM / FalconMambaForCausalLM (Mamba-1): intermediate_size = expand x hidden, time_step_rank
    'auto' = ceil(hidden / 16), RMSNorm, tied embeddings (MambaConfig's defaults). Falcon-Mamba's extra norms of B,
    C and dt carry no weights (mixer_rms_eps)."""
    hidden = _int(k, "hidden_size", _MAMBA, "hidden")
    layers = _int(k, "num_hidden_layers", _MAMBA, "layers")
    expand = k.positive("expand", _MAMBA["expand"])
    inner = k.integer("intermediate_size", default=int(expand * hidden), field="ssm.inner")
    rank = k.get("time_step_rank", default="auto")
    rank = math.ceil(hidden / 16) if rank == "auto" else rank
    if isinstance(rank, bool) or not isinstance(rank, int):
        raise InputError(k.where, f"{k._key('time_step_rank')}: expected a whole number or 'auto', got {rank!r}"[:200])
    return {
        "hidden": hidden,
        "layers": layers,
        "vocab": _int(k, "vocab_size", _MAMBA, "vocab"),
        "tied_embeddings": k.flag("tie_word_embeddings", True),
        **_only_mixers(layers, "mamba"),
        "ssm": {
            "version": 1,
            "inner": inner,
            "state": _int(k, "state_size", _MAMBA, "ssm.state"),
            "conv_kernel": _int(k, "conv_kernel", _MAMBA, "ssm.conv_kernel"),
            "dt_rank": rank,
            "conv_bias": k.flag("use_conv_bias", True),
            "bias": k.flag("use_bias", False),
        },
    }


def _mamba2(k: Keys) -> dict[str, Any]:
    """Mamba2ForCausalLM: the mixer's width int(expand x hidden) in num_heads heads of head_dim; untied
    (Mamba2Config's defaults)."""
    hidden = _int(k, "hidden_size", _MAMBA2, "hidden")
    layers = _int(k, "num_hidden_layers", _MAMBA2, "layers")
    inner = _mamba_inner(k, "expand", _MAMBA2["expand"], hidden)
    heads = _int(k, "num_heads", _MAMBA2, "ssm.heads")
    head_dim = _int(k, "head_dim", _MAMBA2)
    if heads * head_dim != inner:
        said = f"{k._key('num_heads')} x {k._key('head_dim')} ({heads} x {head_dim})"
        raise InputError(k.where, f"{said} must be expand x hidden_size ({inner}), as Mamba2Mixer requires")
    return {
        "hidden": hidden,
        "layers": layers,
        "vocab": _int(k, "vocab_size", _MAMBA2, "vocab"),
        "tied_embeddings": k.flag("tie_word_embeddings", False),
        **_only_mixers(layers, "mamba"),
        "ssm": _ssd(k, inner, heads, _MAMBA2, "state_size"),
    }


def _ssd(k: Keys, inner: int, heads: int, defaults: dict[str, int], state_key: str) -> dict[str, Any]:
    """A Mamba-2 mixer's fields from its family's keys."""
    return {
        "version": 2,
        "inner": inner,
        "heads": heads,
        "state": _int(k, state_key, defaults, "ssm.state"),
        "groups": _int(k, "n_groups", defaults, "ssm.groups"),
        "conv_kernel": _int(k, "conv_kernel", defaults, "ssm.conv_kernel"),
        "chunk": _int(k, "chunk_size", defaults, "ssm.chunk"),
        "conv_bias": k.flag("use_conv_bias", True),
        "bias": k.flag("use_bias", False),
    }


def _mamba_prefixed_ssd(k: Keys, defaults: dict[str, int], inner: int, heads: int) -> dict[str, Any]:
    """A Mamba-2 mixer from the mamba_-prefixed keys Falcon-H1 and Granite 4.0 share (mamba_d_state, mamba_n_groups,
    mamba_d_conv, mamba_chunk_size; conv bias on and projection biases off unless said)."""
    return {
        "version": 2,
        "inner": inner,
        "heads": heads,
        "state": _int(k, "mamba_d_state", defaults, "ssm.state"),
        "groups": _int(k, "mamba_n_groups", defaults, "ssm.groups"),
        "conv_kernel": _int(k, "mamba_d_conv", defaults, "ssm.conv_kernel"),
        "chunk": _int(k, "mamba_chunk_size", defaults, "ssm.chunk"),
        "conv_bias": k.flag("mamba_conv_bias", True),
        "bias": k.flag("mamba_proj_bias", False),
    }


def _jamba(k: Keys) -> dict[str, Any]:
    """JambaForCausalLM: attention in layers i % attn_layer_period == attn_layer_offset, Mamba-1 (with weighted
    RMSNorms of dt, B and C) elsewhere; an MoE of gated experts in layers i % expert_layer_period ==
    expert_layer_offset, a gated MLP elsewhere; two norms per layer, no biases, untied (JambaConfig's defaults)."""
    d = _JAMBA
    hidden = _int(k, "hidden_size", d, "hidden")
    layers = _int(k, "num_hidden_layers", d, "layers")
    attn_period, attn_offset = _count(k, "attn_layer_period", d), _int(k, "attn_layer_offset", d)
    moe_period, moe_offset = _count(k, "expert_layer_period", d), _int(k, "expert_layer_offset", d)
    rank = k.get("mamba_dt_rank", default="auto")
    rank = math.ceil(hidden / 16) if rank == "auto" else rank
    if isinstance(rank, bool) or not isinstance(rank, int):
        raise InputError(k.where, f"{k._key('mamba_dt_rank')}: expected a whole number or 'auto', got {rank!r}"[:200])
    experts = _int(k, "num_experts", d, "moe.experts")
    arch: dict[str, Any] = {
        "hidden": hidden,
        "layers": layers,
        "heads": _int(k, "num_attention_heads", d, "heads"),
        "kv_heads": _int(k, "num_key_value_heads", d, "kv_heads"),
        "vocab": _int(k, "vocab_size", d, "vocab"),
        "tied_embeddings": k.flag("tie_word_embeddings", False),
        "ffn": _int(k, "intermediate_size", d, "ffn"),
        "mixers": tuple("attention" if i % attn_period == attn_offset else "mamba" for i in range(layers)),
        "ssm": {
            "version": 1,
            "inner": _int(k, "mamba_expand", d) * hidden,
            "state": _int(k, "mamba_d_state", d, "ssm.state"),
            "conv_kernel": _int(k, "mamba_d_conv", d, "ssm.conv_kernel"),
            "dt_rank": rank,
            "conv_bias": k.flag("mamba_conv_bias", True),
            "bias": k.flag("mamba_proj_bias", False),
            "dt_bc_norms": True,
        },
    }
    if experts > 1:
        arch["moe"] = {
            "experts": experts,
            "active": _int(k, "num_experts_per_tok", d, "moe.active"),
            "ffn": arch["ffn"],
            "dense_layers": tuple(i for i in range(layers) if i % moe_period != moe_offset),
        }
    return arch


def _falcon_h1(k: Keys) -> dict[str, Any]:
    """FalconH1ForCausalLM: attention and a Mamba-2 mixer side by side on every layer's normed input, then a gated
    MLP; two norms per layer. The mixer's width is mamba_d_ssm (1024 by default; expand x hidden only when it is
    null), its gated norm only with mamba_rms_norm; the muP multipliers scale activations and hold no weights."""
    d = _FALCON_H1
    hidden = _int(k, "hidden_size", d, "hidden")
    heads = _int(k, "num_attention_heads", d, "heads")
    if "mamba_d_ssm" in k.cfg and k.cfg["mamba_d_ssm"] is None:  # null: expand x hidden (modeling_falcon_h1.py)
        inner = _int(k, "mamba_expand", d) * hidden
    else:
        inner = _int(k, "mamba_d_ssm", d, "ssm.inner")
    ssm_heads = _int(k, "mamba_n_heads", d, "ssm.heads")
    head = k.get("mamba_d_head", default="auto")
    if head != "auto" and (isinstance(head, bool) or not isinstance(head, int) or head * ssm_heads != inner):
        raise InputError(k.where, f"{k._key('mamba_d_head')}: {head} x mamba_n_heads ({ssm_heads}) must be the "
                         f"mixer's width ({inner})")  # fmt: skip
    for pair in (("attention_bias", "mlp_bias"), ("mamba_proj_bias", "projectors_bias")):
        if k.flag(pair[0], False) != k.flag(pair[1], False):
            raise InputError(k.where, f"{k._key(pair[0])} and {k._key(pair[1])}: only equal values are counted")
    layers = _int(k, "num_hidden_layers", d, "layers")
    arch: dict[str, Any] = {
        "hidden": hidden,
        "layers": layers,
        "heads": heads,
        "kv_heads": _int(k, "num_key_value_heads", d, "kv_heads"),
        "vocab": _int(k, "vocab_size", d, "vocab"),
        "tied_embeddings": k.flag("tie_word_embeddings", False),
        "ffn": _int(k, "intermediate_size", d, "ffn"),
        "qkv_bias": k.flag("attention_bias", False),
        "linear_bias": k.flag("mlp_bias", False),
        "mixers": ("attention+mamba",) * layers,
        "ssm": {**_mamba_prefixed_ssd(k, d, inner, ssm_heads), "gated_norm": k.flag("mamba_rms_norm", False)},
    }
    head_dim = k.integer("head_dim", default=None, field="head_dim")
    if head_dim is not None:
        arch["head_dim"] = head_dim
    return arch


def _granite_hybrid(k: Keys) -> dict[str, Any]:
    """GraniteMoeHybridForCausalLM (Granite 4.0): a Mamba-2 mixer or attention per layer as layer_types says (all
    Mamba without it), then in every layer a gated shared MLP of shared_intermediate_size and, with
    num_local_experts > 0, gated experts of intermediate_size beside it (a router without bias); two RMSNorms per
    layer; attention_bias on q, k, v and o; untied unless the file says (GraniteMoeHybridConfig's defaults)."""
    d = _GRANITE_HYBRID
    hidden = _int(k, "hidden_size", d, "hidden")
    layers = _int(k, "num_hidden_layers", d, "layers")
    names = {"mamba": "mamba", "linear_attention": "mamba", "attention": "attention", "full_attention": "attention"}
    kinds = per_layer(k, "layer_types", layers, set(names)) or ["mamba"] * layers
    heads = _int(k, "num_attention_heads", d, "heads")
    inner = _mamba_inner(k, "mamba_expand", d["mamba_expand"], hidden)
    ssm_heads = _int(k, "mamba_n_heads", d, "ssm.heads")
    bias = k.flag("attention_bias", False)
    shared = _int(k, "shared_intermediate_size", d, "moe.shared_ffn")
    experts = _int(k, "num_local_experts", d, "moe.experts")
    if experts < 0:
        raise InputError(k.where, f"{k._key('num_local_experts')}: 0 (no experts) or more, got {experts}")
    arch: dict[str, Any] = {
        "hidden": hidden,
        "layers": layers,
        "heads": heads,
        "kv_heads": int(k.integer("num_key_value_heads", default=heads, field="kv_heads")),
        "vocab": _int(k, "vocab_size", d, "vocab"),
        "tied_embeddings": k.flag("tie_word_embeddings", False),
        "qkv_bias": bias,
        **({"out_bias": True} if bias else {}),
        "mixers": tuple(names[t] for t in kinds),
        "ssm": _mamba_prefixed_ssd(k, d, inner, ssm_heads),
    }
    head_dim = k.integer("head_dim", default=None, field="head_dim")
    if head_dim is not None:
        arch["head_dim"] = head_dim
    arch["ffn"] = shared  # the shared MLP: beside the experts, or with none the layer's whole MLP
    if experts > 0:
        arch["moe"] = {
            "experts": experts,
            "active": _int(k, "num_experts_per_tok", d, "moe.active"),
            "ffn": _int(k, "intermediate_size", d, "moe.ffn"),
            "shared": 1,
            "shared_ffn": shared,
        }
    return arch


def _olmo_hybrid(k: Keys) -> dict[str, Any]:
    """OlmoHybridForCausalLM (modeling_olmo_hybrid.py, transformers 5.24.0; AI2's OLMo hybrid): gated DeltaNet in the
    layers layer_types calls linear (else all but every fourth from the fourth, the last attending where none
    would), OLMo 3's attention in the rest (q/k norms over all heads, biases on q, k, v and o by attention_bias, its
    two norms after the sub-layers), a gated MLP and two norms in every layer, untied by default. The DeltaNet holds
    q, k, v, a, b, g and o projections apart, as many weights as Qwen3-Next's fused ones: linear_num_key_heads and
    linear_num_value_heads (else the attention heads), key heads of linear_key_head_dim (else 0.75 x hidden / key
    heads) and value heads of linear_value_head_dim (else twice that)."""
    d = _OLMO_HYBRID
    layers = _int(k, "num_hidden_layers", d, "layers")
    types = per_layer(k, "layer_types", layers, {"full_attention", "linear_attention"})
    if types is None:
        types = ["full_attention" if i % 4 == 3 else "linear_attention" for i in range(layers)]
        if "full_attention" not in types:
            types[-1] = "full_attention"
    hidden, heads = _int(k, "hidden_size", d, "hidden"), _int(k, "num_attention_heads", d, "heads")
    key_heads = int(k.integer("linear_num_key_heads", default=heads, field="deltanet.key_heads"))
    value_heads = int(k.integer("linear_num_value_heads", default=heads, field="deltanet.value_heads"))
    key_dim = int(k.integer("linear_key_head_dim", default=int(0.75 * hidden / key_heads), field="deltanet.key_dim"))
    value_dim = int(k.integer("linear_value_head_dim", default=2 * key_dim, field="deltanet.value_dim"))
    bias = k.flag("attention_bias", False)
    return {
        **dimensions(k, {**d, "num_key_value_heads": heads}),  # KV heads: the attention heads unless given
        "tied_embeddings": k.flag("tie_word_embeddings", False),
        "ffn": _int(k, "intermediate_size", d, "ffn"),
        "qkv_bias": bias,
        "out_bias": bias,
        "qk_norm": "full",
        "mixers": tuple("attention" if t == "full_attention" else "deltanet" for t in types),
        "deltanet": {
            "key_heads": key_heads,
            "value_heads": value_heads,
            "key_dim": key_dim,
            "value_dim": value_dim,
            "conv_kernel": _int(k, "linear_conv_kernel_dim", d),
        },
    }


def _bamba(k: Keys) -> dict[str, Any]:
    """BambaForCausalLM (modeling_bamba.py, transformers 5.24.0; IBM's Bamba-9B): Llama's attention (biases on q, k, v
    and o by attention_bias) in the layers attn_layer_indices lists (its layers_block_type; none by default), a
    Mamba-2 mixer of mamba_n_heads heads elsewhere (mamba_-prefixed keys, mamba_d_head "auto" = inner / heads), and a
    gated MLP of intermediate_size (biases by mlp_bias) and two RMSNorms in every layer; untied by default."""
    d = _BAMBA
    hidden = _int(k, "hidden_size", d, "hidden")
    layers = _int(k, "num_hidden_layers", d, "layers")
    listed = k.layers("attn_layer_indices")
    if any(not 0 <= i < layers for i in listed):
        said = f"{k._key('attn_layer_indices')}: layer indices below num_hidden_layers ({layers}), got {list(listed)!r}"
        raise InputError(k.where, said[:300])
    kinds = per_layer(k, "layers_block_type", layers, {"mamba", "attention", "full_attention", "linear_attention"})
    if kinds is None:
        kinds = ["attention" if i in listed else "mamba" for i in range(layers)]
    bias = k.flag("attention_bias", False)
    inner = _mamba_inner(k, "mamba_expand", d["mamba_expand"], hidden)
    ssm_heads = _int(k, "mamba_n_heads", d, "ssm.heads")
    head = k.get("mamba_d_head", default="auto")
    if head != "auto" and (isinstance(head, bool) or not isinstance(head, int) or head * ssm_heads != inner):
        said = f"{k._key('mamba_d_head')}: 'auto' or inner / mamba_n_heads ({inner // max(ssm_heads, 1)}), got {head!r}"
        raise InputError(k.where, said[:200])
    arch: dict[str, Any] = {
        **dimensions(k, d),
        "tied_embeddings": k.flag("tie_word_embeddings", False),
        "ffn": _int(k, "intermediate_size", d, "ffn"),
        "qkv_bias": bias,
        "out_bias": bias,
        "linear_bias": k.flag("mlp_bias", False),
        "mixers": tuple("attention" if t in ("attention", "full_attention") else "mamba" for t in kinds),
        "ssm": _mamba_prefixed_ssd(k, d, inner, ssm_heads),
    }
    head_dim = k.integer("head_dim", default=None, field="head_dim")
    if head_dim is not None:
        arch["head_dim"] = head_dim
    return arch


def _nemotron_h(k: Keys) -> dict[str, Any]:
    """NemotronHForCausalLM (Nemotron-H, Nemotron 3): one mixer and one norm per layer, as layers_block_type lists
    them (transformers 5.24.0 configuration_nemotron_h.py; its alias layer_types, and the older names mamba and
    attention) or hybrid_override_pattern spells them: M a Mamba-2 mixer of mamba_num_heads x mamba_head_dim,
    * attention, - a squared-ReLU MLP (up and down), E an MoE of such experts with shared ones and a scoring bias,
    whose routed experts work in moe_latent_size when it is given (LatentMoE, moe.latent). With layers_block_type
    the layer count is the list's length (num_hidden_layers is then ignored, as transformers ignores it). The MTP
    layers (num_nextn_predict_layers) are not counted: transformers does not build them (mtp.* is ignored on
    load)."""
    d = _NEMOTRON_H
    hidden = _int(k, "hidden_size", d, "hidden")
    listed = k.get("layers_block_type", "layer_types", default=None)
    if listed is not None:
        letters = {"mamba": "M", "linear_attention": "M", "attention": "*", "full_attention": "*", "mlp": "-",
                   "moe": "E"}  # fmt: skip
        if (
            not isinstance(listed, list)
            or not listed
            or any(not isinstance(t, str) or t not in letters for t in listed)
        ):
            said = f"{k._key('layers_block_type')}: a list of {', '.join(letters)} per layer, got {listed!r}"
            raise InputError(k.where, said[:300])
        pattern = "".join(letters[t] for t in listed)
        layers = len(pattern)
    else:
        layers = _int(k, "num_hidden_layers", d, "layers")
        pattern = str(k.get("hybrid_override_pattern", default=_NEMOTRON_H_PATTERN))
    if len(pattern) != layers or set(pattern) - set("M*-E"):
        said = f"{k._key('hybrid_override_pattern')}: one of M, *, -, E per layer ({layers}), got {pattern!r}"
        raise InputError(k.where, said[:300])
    kinds = {"M": "mamba", "*": "attention", "-": "none", "E": "none"}
    arch: dict[str, Any] = {
        "hidden": hidden,
        "layers": layers,
        "heads": _int(k, "num_attention_heads", d, "heads"),
        "kv_heads": _int(k, "num_key_value_heads", d, "kv_heads"),
        "head_dim": int(k.integer("head_dim", "attention_head_dim", default=d["head_dim"], field="head_dim")),
        "vocab": _int(k, "vocab_size", d, "vocab"),
        "tied_embeddings": k.flag("tie_word_embeddings", False),
        "qkv_bias": k.flag("attention_bias", False),
        "linear_bias": k.flag("mlp_bias", False),
        **mlp_activation(k, "mlp_hidden_act", "relu2"),  # NemotronHMLP and its experts: ACT2FN[mlp_hidden_act]
        "mlp": "relu",  # relu2: two matrices, as ReLU
        "layer_norms": 1,
        "mixers": tuple(kinds[c] for c in pattern),
        "mlp_free_layers": tuple(i for i, c in enumerate(pattern) if c in "M*"),
        "ssm": _ssd(
            k,
            _int(k, "mamba_num_heads", d) * _int(k, "mamba_head_dim", d),
            _int(k, "mamba_num_heads", d),
            d,
            "ssm_state_size",
        ),
    }
    if "-" in pattern:
        arch["ffn"] = _int(k, "intermediate_size", d, "ffn")
    if "E" in pattern:
        shared = k.integer("moe_shared_expert_intermediate_size", default=0, field="moe.shared_ffn")
        arch["moe"] = {
            "experts": k.integer("n_routed_experts", field="moe.experts"),
            "active": k.integer("num_experts_per_tok", field="moe.active"),
            "ffn": k.integer("moe_intermediate_size", field="moe.ffn"),
            "dense_layers": tuple(i for i, c in enumerate(pattern) if c != "E"),
            # NemotronHTopkRouter's e_score_correction_bias is a buffer, not a parameter
        }
        latent = k.integer("moe_latent_size", default=None, field="moe.latent")
        if latent is not None:
            arch["moe"]["latent"] = latent
        if shared:
            arch["moe"].update(shared=k.integer("n_shared_experts", default=1, field="moe.shared"), shared_ffn=shared)
    return arch


# Keys of Kimi K3's text_config (a KimiLinearForCausalLM by its architectures) that change what it holds: routed
# experts run in a narrower latent with projections around them, and further attention parts. Counted as Kimi
# Linear, its 896 experts at the full width came to 5.49T parameters, about twice the 2.8T Moonshot publishes.
_KIMI_UNREAD = {
    "routed_expert_hidden_size": "routed experts in a latent of their own width (Kimi K3)",
    "latent_moe_use_norm": "a norm in the routed experts' latent (Kimi K3)",
    "mla_use_output_gate": "an output gate on the MLA layers (Kimi K3)",
    "attn_res_block_size": "attention residual blocks (Kimi K3)",
}


def _linear_attn_config(k: Keys) -> dict[str, Any]:
    """The released files' linear_attn_config (Kimi Linear's, GLM-5.3's): a mapping, empty where absent."""
    linear = k.get("linear_attn_config", default=None) or {}
    if not isinstance(linear, dict):
        raise InputError(k.where, f"{k._key('linear_attn_config')}: a mapping, got {linear!r}"[:200])
    return linear


def _linear_attn_size(k: Keys, linear: dict[str, Any], key: str, nested: str, d: dict[str, int]) -> int:
    """A KDA size: linear_attn_config's `nested` where it gives one, else the flat `key` (else the family's default),
    as KimiLinearConfig and Glm5NextTextConfig read them."""
    value = linear.get(nested, k.integer(key, default=d[key]))
    if type(value) is not int or value <= 0:
        said = f"{k._key('linear_attn_config')}.{nested} or {k._key(key)}: a whole number above 0, got {value!r}"
        raise InputError(k.where, said[:200])
    return value


def _mla(k: Keys, d: dict[str, int]) -> dict[str, Any]:
    """The MLA layers of a hybrid (Kimi Linear's KimiMLAAttention, Ling's BailingHybridAttention: DeepSeek-V3's),
    under the family's defaults `d`; no query latent unless q_lora_rank gives one."""
    return {
        "q_lora_rank": k.integer("q_lora_rank", default=None, field="mla.q_lora_rank"),
        "kv_lora_rank": _int(k, "kv_lora_rank", d, "mla.kv_lora_rank"),
        "qk_nope_head_dim": _int(k, "qk_nope_head_dim", d, "mla.qk_nope_head_dim"),
        "qk_rope_head_dim": _int(k, "qk_rope_head_dim", d, "mla.qk_rope_head_dim"),
        "v_head_dim": _int(k, "v_head_dim", d, "mla.v_head_dim"),
    }


def _kimi_linear(k: Keys) -> dict[str, Any]:
    """KimiLinearForCausalLM (modeling_kimi_linear.py, transformers 5.24.0): Kimi Delta Attention in most layers and MLA
    in the rest, by layer_types, else the released files' linear_attn_config (full_attn_layers and kda_layers,
    counted from 1), else MLA in every fourth layer from the fifth; the KDA's heads, head dim and conv width from
    linear_attn_config where it gives them; an MLP in the first first_k_dense_replace layers (or by mlp_layer_types)
    and experts with n_shared_experts folded into one shared MLP after; the routers' e_score_correction_bias is a
    buffer. KimiLinearConfig reads first_k_dense_replace where it builds mlp_layer_types, 1 by default; its
    attribute_map gives the released files' names for three keys; its model ties no weights."""
    d = _KIMI_LINEAR
    for key, what in _KIMI_UNREAD.items():
        if k.get(key, default=None) not in (None, False):
            said = f"{what}, which transformers' KimiLinearForCausalLM does not build, so dpcost does not count it"
            raise InputError(k.where, f"{k._key(key)}: {said}; allowed: absent")
    layers = _int(k, "num_hidden_layers", d, "layers")
    linear = _linear_attn_config(k)
    types = per_layer(k, "layer_types", layers, {"full_attention", "linear_attention"})
    if types is None and "full_attn_layers" in linear and "kda_layers" in linear:
        full, kda = linear["full_attn_layers"], linear["kda_layers"]
        numbered = all(isinstance(v, list) for v in (full, kda)) and sorted(full + kda) == list(range(1, layers + 1))
        if not numbered or not all(type(i) is int for i in full + kda):
            said = (f"{k._key('linear_attn_config')}.full_attn_layers and kda_layers: together every layer once, "
                    f"counted from 1 to {layers}, got {full!r} and {kda!r}")  # fmt: skip
            raise InputError(k.where, said[:300])
        types = ["full_attention" if i + 1 in full else "linear_attention" for i in range(layers)]
    if types is None:
        types = ["full_attention" if i and i % 4 == 0 else "linear_attention" for i in range(layers)]

    heads, head_dim = (
        _linear_attn_size(k, linear, "linear_num_heads", "num_heads", d),
        _linear_attn_size(k, linear, "linear_head_dim", "head_dim", d),
    )
    first = _int(k, "first_k_dense_replace", d, "moe.first_dense_layers")
    moe_ffn = _int(k, "moe_intermediate_size", d, "moe.ffn")
    # KimiLinearConfig.attribute_map: the released files' num_shared_experts, num_experts, num_experts_per_token
    shared = k.integer("num_shared_experts", "n_shared_experts", default=d["n_shared_experts"], field="moe.shared")
    arch: dict[str, Any] = {
        "hidden": _int(k, "hidden_size", d, "hidden"),
        "layers": layers,
        "heads": _int(k, "num_attention_heads", d, "heads"),
        "ffn": _int(k, "intermediate_size", d, "ffn"),
        "vocab": _int(k, "vocab_size", d, "vocab"),
        "tied_embeddings": False,  # KimiLinearForCausalLM ties nothing (empty _tied_weights_keys), whatever it says
        # attention_bias biases the MLA layers' q_a_proj, kv_a_proj_with_mqa and o_proj (KimiMLAAttention)
        "qkv_bias": k.flag("attention_bias", False),
        "out_bias": k.flag("attention_bias", False),
        "mixers": tuple("attention" if t == "full_attention" else "deltanet" for t in types),
        "mla": _mla(k, d),
        "deltanet": {
            "form": "kda",
            "key_heads": heads,
            "value_heads": heads,
            "key_dim": head_dim,
            "value_dim": head_dim,
            "conv_kernel": _linear_attn_size(k, linear, "linear_conv_kernel_dim", "short_conv_kernel_size", d),
        },
        "moe": dense_then_experts(
            k,
            layers,
            experts=k.integer("num_experts", "num_local_experts", default=d["num_local_experts"], field="moe.experts"),
            active=k.integer(
                "num_experts_per_token", "num_experts_per_tok", default=d["num_experts_per_tok"], field="moe.active"
            ),
            ffn=moe_ffn,
            shared=shared,
            first=first,
        ),
    }
    return arch


# BailingHybridConfig's defaults (configuration_bailing_hybrid.py, transformers 5.25.0: inclusionAI's Ling 2.5 hybrid)
_BAILING_HYBRID = {"vocab_size": 157184, "hidden_size": 2560, "intermediate_size": 6144, "moe_intermediate_size": 768,
                   "num_hidden_layers": 42, "num_attention_heads": 32, "num_shared_experts": 1, "kv_lora_rank": 512,
                   "qk_rope_head_dim": 64, "v_head_dim": 128, "qk_nope_head_dim": 128, "num_experts_per_token": 8,
                   "first_k_dense_replace": 2, "num_experts": 512, "head_dim": 128, "short_conv_kernel_size": 4,
                   "layer_group_size": 6}  # fmt: skip


def _bailing_hybrid(k: Keys) -> dict[str, Any]:
    """inclusionAI's Ling hybrid (BailingHybridForCausalLM, modular_bailing_hybrid.py, transformers 5.25.0): Kimi Delta
    Attention with full-rank forget and output gates (f_proj, g_proj) of num_attention_heads heads of head_dim (or
    linear_num_heads of linear_head_dim, with a kernel of linear_conv_kernel_dim, where the file gives them, as
    transformers writes them) in the linear_attention layers of layer_types (else all but every
    layer_group_size-th), and MLA with a sigmoid gate per head (g_proj hidden -> heads) in the rest; a dense MLP in
    the layers mlp_layer_types calls dense (else the first first_k_dense_replace), experts and num_shared_experts
    shared ones folded into one MLP in the others, under DeepSeek-V3's router, whose correction bias the checkpoint
    holds. The files' names (num_experts, num_experts_per_token, num_shared_experts) win over the DeepSeek ones, as
    BailingHybridConfig reads them; the head is never tied (empty _tied_weights_keys); the MTP layers
    (num_mtp_layers) are not built, and not counted."""
    d = _BAILING_HYBRID
    layers = _int(k, "num_hidden_layers", d, "layers")
    types = per_layer(k, "layer_types", layers, {"full_attention", "linear_attention"})
    if types is None:
        group = _count(k, "layer_group_size", d)
        types = ["full_attention" if (i + 1) % group == 0 else "linear_attention" for i in range(layers)]
    heads = _count(k, "num_attention_heads", d, "heads")

    def kda_size(key: str, linear_key: str, field: str) -> int:
        """A KDA size: its linear_* key where the file gives one (set after __post_init__ derives it, so it wins,
        as transformers' own written files give it), else the key __post_init__ derives it from."""
        if k.get(linear_key, default=None) is not None:
            return int(_count(k, linear_key, {linear_key: 0}, field))
        return int(_count(k, key, d, field))

    linear_heads = kda_size("num_attention_heads", "linear_num_heads", "deltanet.key_heads")
    linear_dim = kda_size("head_dim", "linear_head_dim", "deltanet.key_dim")
    bias = k.flag("attention_bias", False)
    arch: dict[str, Any] = {
        "hidden": _int(k, "hidden_size", d, "hidden"),
        "layers": layers,
        "heads": heads,
        "ffn": _int(k, "intermediate_size", d, "ffn"),
        "vocab": _int(k, "vocab_size", d, "vocab"),
        "tied_embeddings": False,
        # attention_bias biases q_a_proj (or q_proj), kv_a_proj_with_mqa and o_proj (DeepseekV3Attention)
        "qkv_bias": bias,
        "out_bias": bias,
        "head_gate": True,
        "mixers": tuple("attention" if t == "full_attention" else "deltanet" for t in types),
        "mla": _mla(k, d),
        "deltanet": {
            "form": "kda",
            "key_heads": linear_heads,
            "value_heads": linear_heads,
            "key_dim": linear_dim,
            "value_dim": linear_dim,
            "conv_kernel": kda_size("short_conv_kernel_size", "linear_conv_kernel_dim", "deltanet.conv_kernel"),
            "full_rank_gates": True,
        },
    }
    moe_ffn = _int(k, "moe_intermediate_size", d, "moe.ffn")
    shared = k.integer("num_shared_experts", "n_shared_experts", default=d["num_shared_experts"], field="moe.shared")
    if shared < 0:
        raise InputError(k.where, f"{k._key('num_shared_experts')}: a whole number from 0, got {shared}")
    arch["moe"] = dense_then_experts(
        k,
        layers,
        experts=k.integer("num_experts", "num_local_experts", default=d["num_experts"], field="moe.experts"),
        active=k.integer("num_experts_per_token", "num_experts_per_tok", default=d["num_experts_per_token"],
                         field="moe.active"),
        ffn=moe_ffn,
        shared=shared,
        first=_int(k, "first_k_dense_replace", d, "moe.first_dense_layers"),
    )  # fmt: skip
    arch["moe"]["router_bias"] = True  # BailingHybridTopkRouter.e_score_correction_bias, a buffer checkpoints hold
    return arch


def _glm5_next_indexed(k: Keys, types: list[str]) -> tuple[int, ...]:
    """The latent-attention layers of GLM-5.3 with an indexer of their own: those hf_config.indexer_kinds calls full.
    A shared layer reuses the top-k the layer just before
    it returned, which only a full latent-attention layer returns (Glm5NextTextModel.forward); transformers raises
    on any other, so dpcost refuses it."""
    kinds, key = indexer_kinds(k, len(types))
    for i, (mixer, kind) in enumerate(zip(types, kinds, strict=True)):
        if (
            mixer == "indexed_attention"
            and kind == "shared"
            and (i == 0 or types[i - 1] != mixer or kinds[i - 1] != "full")
        ):
            said = (f"layer {i} is shared, but the layer before it is not a full indexed_attention layer, whose top-k "
                    "a shared one reuses (Glm5NextTextModel.forward raises)")  # fmt: skip
            raise InputError(k.where, f"{k._key(key)}: {said}")
    indexed = [i for i, t in enumerate(types) if t == "indexed_attention"]
    full = tuple(i for i in indexed if kinds[i] == "full")
    return () if len(full) == len(indexed) else full


def _glm5_next(k: Keys) -> dict[str, Any]:
    """GLM-5.3's text model (Glm5NextTextModel, modeling_glm5_next.py, transformers 5.25.0; GLM-5.3-Flash): Kimi
    Delta Attention in the linear_attention layers of layer_types (else three of every four, indexed_attention in
    every fourth from the fourth; full_attention is read as indexed_attention) and MLA without RoPE in the others,
    each under GLM-5's indexer scoring pools of index_kpool keys where _glm5_next_indexed gives it one, its
    attention reading index_topk keys and, with index_kpool_always_select_tail, the last pool's index_kpool - 1;
    the KDA's sizes from linear_attn_config where it gives them; hc_mult residual streams with DeepSeek-V4's
    hyper-connections in every layer, built whatever hc_mult is, collapsed at the end by a mean; a dense MLP in the
    layers mlp_layer_types calls dense (the first three by default; first_k_dense_replace is ignored), experts and
    n_shared_experts shared ones folded into one MLP in the rest, under a router whose correction bias the
    checkpoint holds. The class has no MTP layer."""
    d = _GLM5_NEXT
    layers = _int(k, "num_hidden_layers", d, "layers")
    listed = k.get("layer_types", default=None)
    if isinstance(listed, list):  # the released GLM-5.3-Flash (revision eb9eb20) names them deepseek_sparse_attention
        listed = ["indexed_attention" if t in ("full_attention", "deepseek_sparse_attention") else t for t in listed]
    types = per_layer(k, "layer_types", layers, {"linear_attention", "indexed_attention", "full_attention"}, listed)
    if types is None:
        types = ["indexed_attention" if i % 4 == 3 else "linear_attention" for i in range(layers)]
    rope = k.integer("qk_rope_head_dim", default=0, field="mla.qk_rope_head_dim")
    if rope != 0:
        raise InputError(k.where, f"{k._key('qk_rope_head_dim')}: 0 (its latent attention has no RoPE), got {rope}")
    heads = _count(k, "num_attention_heads", d, "heads")
    kv_heads = k.integer("num_key_value_heads", default=heads, field="kv_heads")
    if kv_heads != heads:
        raise InputError(k.where, f"{k._key('num_key_value_heads')}: {heads}, as num_attention_heads "
                         f"(Glm5NextTextConfig requires it), got {kv_heads}")  # fmt: skip
    linear = _linear_attn_config(k)

    linear_heads, linear_dim = (
        _linear_attn_size(k, linear, "linear_num_heads", "num_heads", d),
        _linear_attn_size(k, linear, "linear_head_dim", "head_dim", d),
    )
    pool = _count(k, "index_kpool", d, "indexer.pool")
    topk = _count(k, "index_topk", d, "indexer.topk")
    if topk % pool:
        raise InputError(k.where, f"{k._key('index_topk')}: a multiple of index_kpool ({pool}), got {topk}")
    tail = pool - 1 if k.flag("index_kpool_always_select_tail", True) else 0
    moe_ffn = _int(k, "moe_intermediate_size", d, "moe.ffn")
    kinds = per_layer(k, "mlp_layer_types", layers, {"dense", "sparse"})
    kinds = kinds or ["dense"] * min(3, layers) + ["sparse"] * max(layers - 3, 0)
    indexed = any(t == "indexed_attention" for t in types)
    bias = k.flag("attention_bias", False)
    arch: dict[str, Any] = {
        "hidden": _int(k, "hidden_size", d, "hidden"),
        "layers": layers,
        "heads": heads,
        "ffn": _int(k, "intermediate_size", d, "ffn"),
        "vocab": _int(k, "vocab_size", d, "vocab"),
        "tied_embeddings": k.flag("tie_word_embeddings", False),
        # attention_bias biases q_a_proj, kv_a_proj_with_mqa and o_proj (Glm5NextTextAttention)
        "qkv_bias": bias,
        "out_bias": bias,
        "mixers": tuple("attention" if t == "indexed_attention" else "deltanet" for t in types),
        "mla": {
            "q_lora_rank": _int(k, "q_lora_rank", d, "mla.q_lora_rank"),
            "kv_lora_rank": _int(k, "kv_lora_rank", d, "mla.kv_lora_rank"),
            "qk_nope_head_dim": _int(k, "qk_nope_head_dim", d, "mla.qk_nope_head_dim"),
            "qk_rope_head_dim": 0,
            "v_head_dim": _int(k, "v_head_dim", d, "mla.v_head_dim"),
        },
        "deltanet": {
            "form": "kda",
            "key_heads": linear_heads,
            "value_heads": linear_heads,
            "key_dim": linear_dim,
            "value_dim": linear_dim,
            "conv_kernel": _linear_attn_size(k, linear, "linear_conv_kernel_dim", "short_conv_kernel_size", d),
        },
        "residual_streams": _count(k, "hc_mult", d, "residual_streams"),
        "hyper_head": "mean",
    }
    if indexed:
        arch["indexer"] = {
            "form": "pooled",
            "heads": _count(k, "index_n_heads", d, "indexer.heads"),
            "head_dim": _count(k, "index_head_dim", d, "indexer.head_dim"),
            "topk": topk + tail,
            "pool": pool,
            "layers": _glm5_next_indexed(k, types),
        }
    if "sparse" in kinds:
        arch["moe"] = {
            "experts": k.integer("num_local_experts", "n_routed_experts", default=d["n_routed_experts"],
                                 field="moe.experts"),
            "active": _int(k, "num_experts_per_tok", d, "moe.active"),
            "ffn": moe_ffn,
            "dense_layers": tuple(i for i, t in enumerate(kinds) if t == "dense"),
            "router_bias": True,  # Glm5NextTextTopkRouter's e_score_correction_bias, a buffer the checkpoint holds
        }  # fmt: skip
        shared = _int(k, "n_shared_experts", d, "moe.shared")
        if shared:
            arch["moe"].update(shared=1, shared_ffn=moe_ffn * shared)
    return arch


def lara_mini_layer_types(k: Keys, layers: int) -> list[str]:
    """Lara 4 Mini's layer kinds: layer_types, else LaraMiniConfig's pattern (gated DeltaNet, sliding, DeltaNet, full,
    sliding attention) repeated."""
    types = per_layer(k, "layer_types", layers, {"linear_attention", "sliding_attention", "full_attention"})
    return types if types is not None else [_LARA_MINI_PATTERN[i % len(_LARA_MINI_PATTERN)] for i in range(layers)]


def _qwen3_next(k: Keys, family: str = "qwen3_next") -> dict[str, Any]:
    """Qwen3NextForCausalLM: gated DeltaNet in three of every four layers (layer_types, else every
    full_attention_interval-th layer attends), gated attention with per-head q/k norms in the rest, and an MoE
    with a gated shared expert in every layer but mlp_only_layers (dense).

    Qwen3.5's text models (modeling_qwen3_5.py, modeling_qwen3_5_moe.py, transformers 5.24.0) have the same layers,
    with the DeltaNet's input projections held as four matrices (qkv, z, b, a) of the same total size. qwen3_5_text
    has a dense gated MLP of intermediate_size in every layer and no MoE; qwen3_5_moe_text an MoE in every layer
    (its class drops mlp_only_layers and decoder_sparse_step). Their MTP module (mtp_num_hidden_layers: one
    full-attention layer of the family's MLP, fc 2h -> h and three norms, as vLLM's qwen3_5_mtp.py builds it) is
    counted apart as mtp_layers; transformers does not build it.

    Lara 4 Mini (lara_mini: modular_lara_mini.py, 5.25.0) is Qwen3.5's DeltaNet with Qwen3's attention (no output
    gate) in full or sliding layers (lara_mini_layer_types; a window of sliding_window), norms that multiply their
    weight in fp32, and in every layer experts beside a shared MLP without a gate (Flint's block), tied."""
    qwen4 = family == "qwen4_exp_text"
    qwen3_5 = family in ("qwen3_5_text", "qwen3_5_moe_text") or qwen4
    lara = family == "lara_mini"
    d = {"qwen3_5_text": _QWEN3_5, "qwen3_5_moe_text": _QWEN3_5_MOE, "lara_mini": _LARA_MINI,
         "qwen4_exp_text": _QWEN4_EXP}.get(family, _QWEN3_NEXT)  # fmt: skip
    layers = _int(k, "num_hidden_layers", d, "layers")
    if lara:
        types: list[str] | None = lara_mini_layer_types(k, layers)
    else:  # Qwen4-Exp's indexed_attention is its full attention under an indexer (_qwen4_exp)
        kinds = {"full_attention", "linear_attention", *(["indexed_attention"] if qwen4 else [])}
        types = per_layer(k, "layer_types", layers, kinds)
    if types is None:
        interval = _count(k, "full_attention_interval", d)
        types = ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(layers)]
    # attention_bias biases q (its gate's rows too), k, v and o (Qwen3NextAttention, Qwen3_5Attention,
    # LaraMiniAttention)
    bias = k.flag("attention_bias", False)
    arch: dict[str, Any] = {
        "hidden": _int(k, "hidden_size", d, "hidden"),
        "layers": layers,
        "heads": _int(k, "num_attention_heads", d, "heads"),
        "kv_heads": _int(k, "num_key_value_heads", d, "kv_heads"),
        "head_dim": _int(k, "head_dim", d, "head_dim"),
        "vocab": _int(k, "vocab_size", d, "vocab"),
        "tied_embeddings": k.flag("tie_word_embeddings", lara),
        "qk_norm": "head",
        "qkv_bias": bias,
        "out_bias": bias,
        "attention_gate_bias": not lara and bias,
        "attention_gate": not lara,
        "mixers": tuple("deltanet" if t == "linear_attention" else "attention" for t in types),
        "deltanet": {
            "key_heads": _count(k, "linear_num_key_heads", d, "deltanet.key_heads"),
            "value_heads": _count(k, "linear_num_value_heads", d, "deltanet.value_heads"),
            "key_dim": _count(k, "linear_key_head_dim", d, "deltanet.key_dim"),
            "value_dim": _count(k, "linear_value_head_dim", d, "deltanet.value_dim"),
            "conv_kernel": _count(k, "linear_conv_kernel_dim", d, "deltanet.conv_kernel"),
        },
    }
    if qwen3_5 and not qwen4:  # Qwen4ExpTextConfig has no MTP key, and its class ignores mtp.* weights
        arch["mtp_layers"] = k.integer("mtp_num_hidden_layers", default=0, field="mtp_layers")
    if family == "qwen3_5_text":
        arch["ffn"] = _int(k, "intermediate_size", d, "ffn")
        return arch
    if lara:
        arch["norm_in_fp32"] = True
    dense = () if qwen3_5 or lara else k.layers("mlp_only_layers")
    arch["moe"] = {
        "experts": _int(k, "num_experts", d, "moe.experts"),
        "active": _int(k, "num_experts_per_tok", d, "moe.active"),
        "ffn": _int(k, "moe_intermediate_size", d, "moe.ffn"),
        "every": 1 if qwen3_5 or lara else _int(k, "decoder_sparse_step", d, "moe.every"),
        "dense_layers": dense,
        "shared": 1,
        "shared_ffn": _int(k, "shared_expert_intermediate_size", d, "moe.shared_ffn"),
        "shared_gate": not lara,
    }
    if dense or arch["moe"]["every"] != 1:
        arch["ffn"] = _int(k, "intermediate_size", d, "ffn")
    return arch


def _qwen4_exp(k: Keys) -> dict[str, Any]:
    """Qwen4-Exp's text model (Qwen4ExpForCausalLM, modular_qwen4_exp.py, transformers 5.25.0): Qwen3.5-MoE's gated
    DeltaNet and gated attention (_qwen3_next) with no norm before either sub-layer and none at the end: hc_count
    residual streams instead, each sub-layer read through a low-rank gated residual (hc_norm, a gate of rank
    hc_lowrank, block_inject: hyper_form "lowrank") and the streams mixed back into one by a last one without
    injection before the head. Every indexed_attention layer (full_attention in the released files) reads the
    indexer_budget keys a QSA indexer picks in blocks of indexer_compress_ratio, plus the last incomplete block;
    the indexer's five keys have no defaults. The linear-attention layers ple_layer_ids names hold n-gram embeddings
    (_qwen4_ngram_embedding)."""
    arch = _qwen3_next(k, "qwen4_exp_text")
    d = _QWEN4_EXP
    streams = _int(k, "hc_count", d, "residual_streams")
    if streams < 2:  # Qwen4ExpTextConfig.validate_architecture
        raise InputError(k.where, f"{k._key('hc_count')}: 2 or more residual streams, got {streams}")
    arch.update(layer_norms=0, final_norm=False, residual_streams=streams, hyper_form="lowrank",
                hyper_rank=_count(k, "hc_lowrank", d, "hyper_rank"), hyper_head="lowrank")  # fmt: skip
    if "attention" in arch["mixers"]:
        ratio = k.integer("indexer_compress_ratio", field="indexer.pool")
        budget = k.integer("indexer_budget", field="indexer.topk")
        if k.integer("indexer_kv_heads") != 1:
            raise InputError(k.where, f"{k._key('indexer_kv_heads')}: 1 (Qwen4-Exp's QSA has one key head)")
        if ratio <= 0:
            raise InputError(k.where, f"{k._key('indexer_compress_ratio')}: a whole number from 1, got {ratio}")
        if budget <= 0 or budget % ratio:
            said = f"a positive multiple of indexer_compress_ratio ({ratio}), got {budget}"
            raise InputError(k.where, f"{k._key('indexer_budget')}: {said}")
        arch["indexer"] = {
            "form": "qsa",
            "heads": k.integer("indexer_n_heads", field="indexer.heads"),
            "head_dim": k.integer("indexer_head_dim", field="indexer.head_dim"),
            "topk": budget + ratio - 1,  # the picked blocks' keys and the incomplete tail's (_select_tokens)
            "pool": ratio,
        }
    ngram = _qwen4_ngram_embedding(k, arch)
    if ngram is not None:
        arch["ngram_embedding"] = ngram
    return arch


def _qwen4_ngram_embedding(k: Keys, arch: dict[str, Any]) -> dict[str, Any] | None:
    """Qwen4-Exp's n-gram embeddings in the linear-attention layers ple_layer_ids numbers from 1 (Qwen4ExpTextConfig
    .__post_init__ and validate_architecture): the p-th holds (ngram_size - 1) x heads_per_ngram heads of
    ple_embed_dim / heads each, head j's rows the (p x heads + j + 1)-th prime from ngram_vocab_size_base on, their
    sum padded to a multiple of make_ngram_vocab_size_divisible_by (Qwen4ExpTextNGramEmbedding)."""
    ids = k.get("ple_layer_ids", default=[])
    if not ids:
        return None
    layers = arch["layers"]
    if not isinstance(ids, list) or any(type(i) is not int or not 1 <= i <= layers for i in ids):
        said = f"layer numbers from 1 to {layers}, got {ids!r}"
        raise InputError(k.where, f"{k._key('ple_layer_ids')}: {said}"[:300])
    chosen = sorted(set(ids))
    if any(arch["mixers"][i - 1] != "deltanet" for i in chosen):
        said = "linear_attention layers only (Qwen4ExpTextConfig.validate_architecture)"
        raise InputError(k.where, f"{k._key('ple_layer_ids')}: {said}, got {ids!r}"[:300])
    size = k.integer("ngram_size", default=3)
    per_ngram = k.integer("heads_per_ngram", default=8)
    if size < 2 or per_ngram < 1:
        raise InputError(k.where, f"{k._key('ngram_size')} and heads_per_ngram: from 2 and from 1, got {size} and "
                         f"{per_ngram}")  # fmt: skip
    heads = (size - 1) * per_ngram
    width = k.integer("ple_embed_dim", default=arch["hidden"], field="ngram_embedding.width")
    base = k.integer("ngram_vocab_size_base", default=20_000_000)
    pad = k.integer("make_ngram_vocab_size_divisible_by", default=128)
    if width <= 0 or width % heads:
        said = f"a positive multiple of (ngram_size - 1) x heads_per_ngram ({heads}), got {width}"
        raise InputError(k.where, f"{k._key('ple_embed_dim')}: {said}")
    if not 0 < base <= 10**10 or not 0 < pad <= 10**6:
        raise InputError(k.where, f"{k._key('ngram_vocab_size_base')} and make_ngram_vocab_size_divisible_by: "
                         f"from 1 to 10^10 and to 10^6, got {base} and {pad}")  # fmt: skip
    if heads * len(chosen) > 10_000:  # each head's table size is a prime to find
        said = f"at most 10,000 n-gram heads over the layers, got {len(chosen)} layers of {heads}"
        raise InputError(k.where, f"{k._key('heads_per_ngram')} and ple_layer_ids: {said}")
    primes = _primes_from(base, heads * len(chosen))
    rows = [sum(primes[p * heads : (p + 1) * heads]) for p in range(len(chosen))]
    if max(rows) > 10**12:
        said = f"tables of at most 10^12 rows, got {max(rows):,} from {heads} heads of about {base:,}"
        raise InputError(k.where, f"{k._key('ngram_vocab_size_base')}: {said}")
    return {
        "layers": tuple(i - 1 for i in chosen),
        "rows": tuple(-(-r // pad) * pad for r in rows),
        "width": width,
        "heads": heads,
        "conv_kernel": _count(k, "ple_conv_kernel_size", {"ple_conv_kernel_size": 4}, "ngram_embedding.conv_kernel"),
        "dilation": size,
    }


def _primes_from(start: int, count: int) -> list[int]:
    """The first `count` primes at or above `start` (Qwen4-Exp's _find_nth_prime_after(start - 1, n) for n = 1 ..
    count), by a Miller-Rabin test whose bases (the primes to 41) decide every number below 3.3 x 10^24 (the reader
    holds ngram_vocab_size_base to 10^10 and the count to 10,000)."""
    found: list[int] = []
    n = max(start, 2)
    while len(found) < count:
        if _is_prime(n):
            found.append(n)
        n += 1
    return found


def _is_prime(n: int) -> bool:
    """Miller-Rabin with the first thirteen primes as bases: exact for n < 3,317,044,064,679,887,385,961,981."""
    bases = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41)
    if n < 2:
        return False
    for p in bases:
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for a in bases:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def _minimax(k: Keys) -> dict[str, Any]:
    """MiniMaxForCausalLM (modeling_minimax.py, transformers 5.24.0; MiniMax-Text-01 and -M1, arXiv 2501.08313):
    layers of lightning attention or Mixtral's softmax attention (layer_types; else the released files'
    attn_type_list, 1 softmax and 0 lightning; else the class's alternation, softmax first), each with Mixtral's MoE
    (num_local_experts experts of intermediate_size, a router without bias) and two norms. The lightning mixer's heads
    are the attention's (num_attention_heads of head_dim, else hidden / heads), in blocks of block_size."""
    d = _MINIMAX
    layers = _int(k, "num_hidden_layers", d, "layers")
    types = per_layer(k, "layer_types", layers, {"full_attention", "linear_attention"})
    listed = k.get("attn_type_list", default=None)
    if types is None and listed is not None:
        if not isinstance(listed, list) or len(listed) != layers or any(v not in (0, 1) for v in listed):
            said = f"{k._key('attn_type_list')}: 0 (lightning) or 1 (softmax) per layer ({layers}), got {listed!r}"
            raise InputError(k.where, said[:300])
        types = ["full_attention" if v == 1 else "linear_attention" for v in listed]
    if types is None:
        types = ["full_attention" if (i + 1) % 2 else "linear_attention" for i in range(layers)]
    if k.integer("shared_intermediate_size", default=0):
        raise InputError(k.where, f"{k._key('shared_intermediate_size')}: a shared expert is not built by "
                         "MiniMaxForCausalLM and not counted; 0 (MiniMax-Text-01, -M1) is")  # fmt: skip
    hidden, heads = _int(k, "hidden_size", d, "hidden"), _int(k, "num_attention_heads", d, "heads")
    head_dim = k.integer("head_dim", default=None, field="head_dim") or hidden // heads
    return {
        "hidden": hidden,
        "layers": layers,
        "heads": heads,
        "kv_heads": _int(k, "num_key_value_heads", d, "kv_heads"),
        "head_dim": head_dim,
        "vocab": _int(k, "vocab_size", d, "vocab"),
        "tied_embeddings": k.flag("tie_word_embeddings", False),
        "mixers": tuple("attention" if t == "full_attention" else "deltanet" for t in types),
        "deltanet": lightning_mixer(heads, head_dim, chunk=_int(k, "block_size", d)),
        "moe": {
            "experts": _int(k, "num_local_experts", d, "moe.experts"),
            "active": _int(k, "num_experts_per_tok", d, "moe.active"),
            "ffn": _int(k, "intermediate_size", d, "moe.ffn"),
        },
    }


# Lfm3Config's defaults (configuration_lfm3.py, transformers 5.24.0)
_LFM3 = {"vocab_size": 128000, "hidden_size": 2048, "intermediate_size": 7680, "num_hidden_layers": 24,
         "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 128, "conv_L_cache": 7}  # fmt: skip


def lfm3_layer_types(k: Keys, layers: int) -> list[str]:
    """LFM3's layer kinds: layer_types, else Lfm3Config's rule (full attention where i % 4 == 2, sliding where
    i % 4 == 0 past the first, a short convolution elsewhere)."""
    types = per_layer(k, "layer_types", layers, {"full_attention", "sliding_attention", "conv"})
    if types is None:
        types = ["full_attention" if i % 4 == 2 else "sliding_attention" if i % 4 == 0 and i > 0 else "conv"
                 for i in range(layers)]  # fmt: skip
    return types


def jet_nemotron_layer_types(k: Keys, layers: int) -> list[str]:
    """Jet-Nemotron's layer kinds: layer_types (jet, attn or swa per layer), else attention in every layer
    (JetNemotronConfig: layer_types None is ["attn"] x num_hidden_layers)."""
    return per_layer(k, "layer_types", layers, _JET_LAYERS) or ["attn"] * layers


def jet_nemotron_section(k: Keys, kind: str) -> Keys:
    """One section of efficient_attention_config (jet: the JetBlock's shape; swa: the sliding window), which
    JetNemotronDecoderLayer requires for every kind layer_types names."""
    sections = k.get("efficient_attention_config", default=None)
    section = sections.get(kind) if isinstance(sections, dict) else None
    if not isinstance(section, dict):
        said = f"efficient_attention_config.{kind}: a mapping of its keys, which the {kind} layers of layer_types need"
        raise InputError(k.where, f"{k._key(said)}, got {section!r}"[:300])
    return Keys(section, k.where, k.family, f"{k.prefix}efficient_attention_config.{kind}.")


def _jet_nemotron(k: Keys) -> dict[str, Any]:
    """JetNemotronForCausalLM (NVlabs/Jet-Nemotron modeling_jet_nemotron.py, jet_block.py at 94cbd124): each layer a
    JetBlock (jet), attention (attn) or attention in a window (swa: efficient_attention_config.swa.window_size) by
    layer_types, and a SwiGLU MLP of intermediate_size; attention as Qwen2's (q, k and v biased, o not; head_dim
    hidden / heads unless the file gives one); tied by default. A JetBlock's shape is efficient_attention_config.jet's:
    num_heads heads of head_dim keys and head_dim x expand_v values (JetBlock refuses a product that is not whole),
    conv_size taps generated through a hidden layer dconv_generator_reduction times narrower than the values."""
    d = _JET_NEMOTRON
    layers = _count(k, "num_hidden_layers", d, "layers")
    types = jet_nemotron_layer_types(k, layers)
    heads = _count(k, "num_attention_heads", d, "heads")
    kv_heads = heads if "num_key_value_heads" in k.cfg and k.cfg["num_key_value_heads"] is None else None
    hidden = _int(k, "hidden_size", d, "hidden")
    arch: dict[str, Any] = {
        "hidden": hidden,
        "layers": layers,
        "heads": heads,
        "kv_heads": kv_heads or _int(k, "num_key_value_heads", d, "kv_heads"),
        "head_dim": k.integer("head_dim", default=hidden // heads, field="head_dim"),  # getattr(config, "head_dim")
        "vocab": _int(k, "vocab_size", d, "vocab"),
        "ffn": _int(k, "intermediate_size", d, "ffn"),
        "tied_embeddings": k.flag("tie_word_embeddings", True),
        "qkv_bias": True,
        "mixers": tuple("deltanet" if t == "jet" else "attention" for t in types),
    }
    if "jet" not in types:
        return arch
    jet = jet_nemotron_section(k, "jet")
    block = _count(jet, "num_heads", _JET_BLOCK, "deltanet.key_heads")
    key_dim = _count(jet, "head_dim", _JET_BLOCK, "deltanet.key_dim")
    expand = jet.positive("expand_v", _JET_EXPAND_V, "deltanet.value_dim")
    value_dim = int(key_dim * expand)
    if not (math.isclose(block * key_dim * expand, block * value_dim, rel_tol=1e-5)
            and math.isclose(key_dim * expand, value_dim, rel_tol=1e-5)):  # fmt: skip
        said = f"head_dim ({key_dim}) x expand_v must be a whole number of value channels, got {key_dim * expand}"
        raise InputError(k.where, f"{jet._key('expand_v')}: {said}")
    arch["deltanet"] = {
        "form": "jet",
        "key_heads": block,
        "value_heads": block,
        "key_dim": key_dim,
        "value_dim": value_dim,
        "conv_kernel": _count(jet, "conv_size", _JET_BLOCK, "deltanet.conv_kernel"),
        "generator_reduction": _count(jet, "dconv_generator_reduction", _JET_BLOCK, "deltanet.generator_reduction"),
    }
    return arch


def _lfm3(k: Keys) -> dict[str, Any]:
    """Lfm3ForCausalLM (modeling_lfm3.py, transformers 5.24.0): LFM2's short convolutions and attention, the attention
    full or in a sliding window (lfm3_layer_types), with q/k norms per head and, under use_attention_gate (true by
    default), a sigmoid gate per head (g_proj: hidden -> heads); a SwiGLU MLP of intermediate_size in every layer;
    four norms a layer under use_sandwich_norm (true by default: a norm after each sub-layer too), else two; tied by
    default."""
    d = _LFM3
    layers = _int(k, "num_hidden_layers", d, "layers")
    types = lfm3_layer_types(k, layers)
    bias = k.flag("attention_bias", False)
    return {
        **dimensions(k, d),  # with head_dim (128 unless given)
        "tied_embeddings": k.flag("tie_word_embeddings", True),
        "ffn": _int(k, "intermediate_size", d, "ffn"),
        "qkv_bias": bias,
        "out_bias": bias,
        "qk_norm": "head",
        "head_gate": k.flag("use_attention_gate", True),
        "layer_norms": 4 if k.flag("use_sandwich_norm", True) else 2,
        "mixers": tuple("conv" if t == "conv" else "attention" for t in types),
        "short_conv": {"kernel": _int(k, "conv_L_cache", d, "short_conv.kernel"), "bias": k.flag("conv_bias", False)},
    }


def _lfm2(k: Keys, family: str) -> dict[str, Any]:
    """Lfm2ForCausalLM and Lfm2MoeForCausalLM (modeling_lfm2.py, modeling_lfm2_moe.py, transformers 5.24.0): layers of
    attention (q/k RMSNorms over head_dim, no biases) or a gated short convolution (short_conv, conv_L_cache taps,
    biases by conv_bias), as layer_types says (LFM2: else full_attn_idxs, else attention everywhere; LFM2-MoE has no
    default); a SwiGLU MLP and two norms in every layer; tied unless tie_embedding / tie_word_embeddings say not.
    LFM2's MLP width is block_ff_dim (else intermediate_size), cut to two thirds under block_auto_adjust_ff_dim,
    scaled by block_ffn_dim_multiplier and rounded up to block_multiple_of; LFM2-MoE's layers below
    num_dense_layers have a dense MLP of intermediate_size, the others num_experts experts of
    moe_intermediate_size with an expert_bias (use_expert_bias) and no shared expert."""
    moe = family == "lfm2_moe"
    d = _LFM2_MOE if moe else _LFM2
    layers = _int(k, "num_hidden_layers", d, "layers")
    heads = _int(k, "num_attention_heads", d, "heads")
    hidden = _int(k, "hidden_size", d, "hidden")
    types = per_layer(k, "layer_types", layers, {"full_attention", "conv"})
    if types is None and moe:
        raise InputError(k.where, f"{k._key('layer_types')}: required (full_attention or conv per layer, {layers})")
    if types is None:
        full = k.layers("full_attn_idxs") if k.get("full_attn_idxs", default=None) is not None else range(layers)
        types = ["full_attention" if i in full else "conv" for i in range(layers)]
    arch: dict[str, Any] = {
        "hidden": hidden,
        "layers": layers,
        "heads": heads,
        "kv_heads": _int(k, "num_key_value_heads", d, "kv_heads"),
        "head_dim": int(k.integer("head_dim", default=hidden // heads if heads else 1, field="head_dim")),
        "vocab": _int(k, "vocab_size", d, "vocab"),
        "tied_embeddings": k.flag("tie_embedding", k.flag("tie_word_embeddings", True)),
        "qk_norm": "head",
        "mixers": tuple("attention" if t == "full_attention" else "conv" for t in types),
        "short_conv": {"kernel": _int(k, "conv_L_cache", d, "short_conv.kernel"), "bias": k.flag("conv_bias", False)},
    }
    if moe:
        arch["ffn"] = _int(k, "intermediate_size", d, "ffn")
        arch["moe"] = {
            "experts": _int(k, "num_experts", d, "moe.experts"),
            "active": _int(k, "num_experts_per_tok", d, "moe.active"),
            "ffn": _int(k, "moe_intermediate_size", d, "moe.ffn"),
            "first_dense_layers": _int(k, "num_dense_layers", d, "moe.first_dense_layers"),
            "router_bias": k.flag("use_expert_bias", True),
        }
        return arch
    ffn = int(k.integer("block_ff_dim", "intermediate_size", default=d["intermediate_size"], field="ffn"))
    if k.flag("block_auto_adjust_ff_dim", True):
        ffn = int(2 * ffn / 3)
        if "block_ffn_dim_multiplier" not in k.cfg or k.cfg["block_ffn_dim_multiplier"] is not None:  # null: none
            multiple = _int(k, "block_multiple_of", d)
            if multiple < 1:
                raise InputError(
                    k.where, f"{k._key('block_multiple_of')}: expected a whole number above 0, got {multiple}"
                )
            ffn = int(k.positive("block_ffn_dim_multiplier", 1.0) * ffn)
            ffn = multiple * ((ffn + multiple - 1) // multiple)
    arch["ffn"] = ffn
    return arch


# RecurrentGemmaConfig's defaults (configuration_recurrent_gemma.py, transformers 5.25.0: RecurrentGemma-2B's shapes)
_RECURRENT_GEMMA = {"vocab_size": 256000, "hidden_size": 2560, "intermediate_size": 3 * 2560, "num_hidden_layers": 26,
                    "num_attention_heads": 10, "conv1d_width": 4}  # fmt: skip


def _recurrent_gemma(k: Keys) -> dict[str, Any]:
    """RecurrentGemmaForCausalLM (modeling_recurrent_gemma.py, transformers 5.25.0: Griffin, arXiv 2402.19427):
    layers whose temporal block is a recurrent block (RGLRUSpec: lru_width, else hidden_size, its gates in
    num_attention_heads blocks) or local attention (a window of attention_window_size; q, k, v biased by
    attention_bias, o_proj always; heads of hidden / heads, num_key_value_heads else all), cycling through
    block_types (_block_types in the files transformers 4 saved, the attribute its config kept and read; 5.25.0
    ignores it, and the released files give the default pattern either way); in every layer a
    GeGLU MLP of intermediate_size / 2 with biases and two Gemma RMSNorms (1 + w, the product in fp32); the
    embedding scaled by sqrt(hidden) (a buffer), tied."""
    d = _RECURRENT_GEMMA
    layers = _int(k, "num_hidden_layers", d, "layers")
    heads = _int(k, "num_attention_heads", d, "heads")
    hidden = _int(k, "hidden_size", d, "hidden")
    pattern = k.get("block_types", "_block_types", default=["recurrent", "recurrent", "attention"])
    if (
        not isinstance(pattern, list)
        or not pattern
        or any(not isinstance(t, str) or t not in ("recurrent", "attention") for t in pattern)
    ):
        key = "_block_types" if k.cfg.get("block_types") is None and "_block_types" in k.cfg else "block_types"
        said = f"{k._key(key)}: a list of recurrent or attention, got {pattern!r}"
        raise InputError(k.where, said[:200])
    types = [pattern[i % len(pattern)] for i in range(layers)]
    width = k.integer("lru_width", default=None, field="rglru.width")
    if not 0 < heads <= hidden:  # RecurrentGemmaConfig sets head_dim to hidden // heads, whatever the file says
        said = f"{k._key('num_attention_heads')}: from 1 to hidden_size ({hidden}), its heads hidden // heads wide"
        raise InputError(k.where, f"{said}, got {heads}")
    kv_heads = k.integer("num_key_value_heads", default=heads, field="kv_heads")
    return {
        "hidden": hidden,
        "layers": layers,
        "heads": heads,
        "kv_heads": heads if kv_heads is None else kv_heads,
        "head_dim": hidden // heads,
        "ffn": _int(k, "intermediate_size", d, "ffn") // 2,
        "vocab": _int(k, "vocab_size", d, "vocab"),
        "tied_embeddings": k.flag("tie_word_embeddings", True),
        "mlp": "geglu",
        "norm_in_fp32": True,
        "qkv_bias": k.flag("attention_bias", False),
        "out_bias": True,
        "linear_bias": True,
        "mixers": tuple("rglru" if t == "recurrent" else "attention" for t in types),
        "rglru": {
            "width": hidden if width is None else width,
            "heads": heads,
            "conv_kernel": _int(k, "conv1d_width", d, "rglru.conv_kernel"),
        },
    }


# RwkvConfig's defaults (configuration_rwkv.py, transformers 5.25.0); attention_hidden_size and intermediate_size
# default to hidden_size and 4 x hidden_size
_RWKV = {"vocab_size": 50277, "hidden_size": 4096, "num_hidden_layers": 32}
# Keys of RWKV-7's files, which some projects save as model_type rwkv; transformers' RwkvForCausalLM is RWKV-4
_RWKV7_KEYS = ("decay_low_rank_dim", "a_low_rank_dim", "v_low_rank_dim", "gate_low_rank_dim")


def _rwkv(k: Keys) -> dict[str, Any]:
    """RwkvForCausalLM (modeling_rwkv.py, transformers 5.25.0: RWKV-4, arXiv 2305.13048): in every layer two
    LayerNorms (ln1, ln2), time mixing over attention_hidden_size channels (RWKVSpec) and channel mixing, whose key
    (hidden -> intermediate_size) and value (back) are a squared-ReLU MLP without biases and whose receptance gate
    RWKVSpec holds; the first layer's pre_ln normalises the embedding (embedding_norm); ln_out; untied by default."""
    for key in _RWKV7_KEYS:
        if key in k.cfg:
            said = f"{k._key(key)}: an RWKV-7 key; model_type rwkv is RWKV-4 (transformers' RwkvForCausalLM)"
            raise InputError(k.where, f"{said}, which has no low-rank projections")
    hidden = _int(k, "hidden_size", _RWKV, "hidden")
    width = k.integer("attention_hidden_size", default=None, field="rwkv.width")
    ffn = k.integer("intermediate_size", default=None, field="ffn")
    layers = _int(k, "num_hidden_layers", _RWKV, "layers")
    return {
        "hidden": hidden,
        "layers": layers,
        "heads": 1,  # a placeholder no formula reads: attention_layers is 0
        "vocab": _int(k, "vocab_size", _RWKV, "vocab"),
        "tied_embeddings": k.flag("tie_word_embeddings", False),
        "mixers": ("rwkv",) * layers,
        "rwkv": {"width": hidden if width is None else width},
        "ffn": 4 * hidden if ffn is None else ffn,
        "mlp": "relu",
        "norm": "layernorm",
        "embedding_norm": True,
    }


# Zamba2Config's defaults (configuration_zamba2.py, transformers 5.25.0: Zamba2-2.7B's shapes), its layers_block_type
# the class's pattern: hybrid layers at 6, 12, ..., 42, 47 and 51 of 54
_ZAMBA2 = {"vocab_size": 32000, "hidden_size": 2560, "mamba_d_state": 64, "mamba_d_conv": 4, "mamba_expand": 2,
           "mamba_ngroups": 1, "n_mamba_heads": 8, "chunk_size": 256, "num_attention_heads": 32, "num_mem_blocks": 1,
           "adapter_rank": 128}  # fmt: skip
_ZAMBA2_TYPES = ["mamba"] + (["mamba"] * 5 + ["hybrid"]) * 7 + ["mamba"] * 4 + ["hybrid"] + ["mamba"] * 3 + ["hybrid"]
_ZAMBA2_TYPES += ["mamba"] * 2


def _shared_block_layers(k: Keys, default: list[str], count: int) -> dict[str, Any]:
    """Zamba's and Zamba2's layers from layers_block_type (mamba, or linear_attention as transformers 5.25.0 names
    it, or hybrid: one layer per entry, num_hidden_layers its length): a Mamba layer, or a hybrid layer that runs
    a shared block first, held by the first hybrid layer to run it (the first `count`: the models' get_layers and
    _tied_weights_keys tie the rest to them)."""
    types = k.get("layers_block_type", "layer_types", default=default)
    if not isinstance(types, list) or not types or any(t not in ("mamba", "linear_attention", "hybrid") for t in types):
        key = (
            "layer_types" if k.cfg.get("layers_block_type") is None and "layer_types" in k.cfg else "layers_block_type"
        )
        said = f"{k._key(key)}: a list of mamba, linear_attention or hybrid, got {types!r}"
        raise InputError(k.where, said[:200])
    given = k.integer("num_hidden_layers", default=len(types), field="layers")
    if given != len(types):
        said = f"{k._key('num_hidden_layers')} ({given}) must be the length of layers_block_type ({len(types)})"
        raise InputError(k.where, f"{said}, one layer per entry as the model builds them")
    hybrid = [i for i, t in enumerate(types) if t == "hybrid"]
    holders = set(hybrid[:count])
    mixers = tuple("mamba" if i not in hybrid else SHARED_BLOCK if i in holders else REUSED_BLOCK for i in range(given))
    return {"layers": given, "mixers": mixers, "mlp_free_layers": tuple(range(given))}


def _shared_block_attention(k: Keys, hidden: int, heads: int, kv_default: int, ffn: int) -> dict[str, Any]:
    """The fields of Zamba's and Zamba2's shared block's attention and MLP (SharedBlockSpec), and the layers' shape:
    heads of attention_head_dim (head_dim), else 2 hidden / heads; a norm per Mamba layer, no dense MLP of their
    own; the MLP gated, gelu unless hidden_act says silu; tied. The block reads the hidden state and the embedding
    concatenated, so an attention_hidden_size other than 2 hidden (which both classes take from the file) is
    refused: such a block cannot run."""
    width = k.integer("attention_hidden_size", default=None)
    if width is not None and width != 2 * hidden:
        said = f"{k._key('attention_hidden_size')} ({width}) must be 2 x hidden_size ({2 * hidden})"
        raise InputError(k.where, f"{said}: the shared block reads the hidden state and the embedding side by side")
    kv_heads = k.integer("num_key_value_heads", default=kv_default, field="kv_heads")
    head_dim = k.integer("attention_head_dim", "head_dim", default=None, field="head_dim")
    return {
        "hidden": hidden,
        "heads": heads,
        "kv_heads": kv_default if kv_heads is None else kv_heads,
        "head_dim": 2 * hidden // heads if head_dim is None else head_dim,
        "ffn": ffn,
        "mlp": "swiglu" if k.text("hidden_act", "gelu") in ("silu", "swish") else "geglu",
        "layer_norms": 1,
        "tied_embeddings": k.flag("tie_word_embeddings", True),
    }


def _zamba2(k: Keys) -> dict[str, Any]:
    """Zamba2ForCausalLM (modeling_zamba2.py, transformers 5.25.0; arXiv 2411.15242): a Mamba-2 layer in every layer
    (an RMSNorm, the mixer of mamba_expand x hidden in n_mamba_heads heads; its convolution always biased, its
    projections by add_bias_linear); before the mixer of each hybrid layer (_shared_block_layers) a shared
    transformer block (SharedBlockSpec: num_mem_blocks of them, taken in turn; _shared_block_attention), its output
    through the layer's own linear layer; the MLP of intermediate_size (4 x hidden where it is 0 or absent)."""
    d = _ZAMBA2
    count = _count(k, "num_mem_blocks", d, "shared_block.count")
    layers = _shared_block_layers(k, _ZAMBA2_TYPES, count)
    hidden = _int(k, "hidden_size", d, "hidden")
    heads = _count(k, "num_attention_heads", d, "heads")
    inner = _mamba_inner(k, "mamba_expand", d["mamba_expand"], hidden)
    mamba_heads = _count(k, "n_mamba_heads", d, "ssm.heads")
    if inner % mamba_heads:
        said = f"{k._key('n_mamba_heads')} ({mamba_heads}) must divide mamba_expand x hidden_size ({inner})"
        raise InputError(k.where, f"{said}: Zamba2MambaMixer's heads split its channels")
    bias = k.flag("add_bias_linear", False)
    ffn = k.integer("intermediate_size", default=None, field="ffn")
    return {
        **layers,
        **_shared_block_attention(k, hidden, heads, heads, ffn or 4 * hidden),  # Zamba2Config: ffn or 4 x hidden
        "vocab": _int(k, "vocab_size", d, "vocab"),
        "linear_bias": bias,
        "ssm": {
            "version": 2,
            "inner": inner,
            "heads": mamba_heads,
            "state": _int(k, "mamba_d_state", d, "ssm.state"),
            "groups": _int(k, "mamba_ngroups", d, "ssm.groups"),
            "conv_kernel": _int(k, "mamba_d_conv", d, "ssm.conv_kernel"),
            "chunk": _int(k, "chunk_size", d, "ssm.chunk"),
            "conv_bias": True,  # Zamba2MambaMixer's conv1d: bias=True, whatever use_conv_bias says
            "bias": bias,
        },
        "shared_block": {
            "count": count,
            "adapter_rank": _int(k, "adapter_rank", d, "shared_block.adapter_rank"),
            "attention_adapters": k.flag("use_shared_attention_adapter", False),
        },
    }


# ZambaConfig's defaults (configuration_zamba.py, transformers 5.25.0: Zamba-7B-v1's shapes)
_ZAMBA = {"vocab_size": 32000, "hidden_size": 3712, "intermediate_size": 14848, "num_hidden_layers": 76,
          "num_attention_heads": 16, "num_key_value_heads": 16, "n_mamba_heads": 2, "mamba_d_state": 16,
          "mamba_d_conv": 4, "mamba_expand": 2, "attn_layer_period": 6, "attn_layer_offset": 4}  # fmt: skip


def _zamba(k: Keys) -> dict[str, Any]:
    """ZambaForCausalLM (modeling_zamba.py, transformers 5.25.0; Zamba-7B, arXiv 2405.16712): a Mamba-1 layer in
    every layer (an RMSNorm; its mixer of mamba_expand x hidden split in n_mamba_heads heads, whose per-head x and
    dt projections hold as many weights as one Mamba-1 mixer's); before the mixer of each hybrid layer
    (_shared_block_layers; by default two Mamba layers, a hybrid one, then a hybrid one wherever i %
    attn_layer_period == attn_layer_offset of the rest) one shared transformer block (heads of attention_head_dim,
    2 hidden / heads by default) and the layer's own linear layer, no adapters; the MLP of intermediate_size,
    without biases."""
    d = _ZAMBA
    layers = _int(k, "num_hidden_layers", d, "layers")
    period, offset = _count(k, "attn_layer_period", d), _int(k, "attn_layer_offset", d)
    rest = ["hybrid" if i % period == offset else "mamba" for i in range(max(0, layers - 3))]
    pattern = _shared_block_layers(k, ["mamba", "mamba", "hybrid", *rest][:layers], 1)
    hidden = _int(k, "hidden_size", d, "hidden")
    heads = _count(k, "num_attention_heads", d, "heads")
    inner = _mamba_inner(k, "mamba_expand", d["mamba_expand"], hidden)
    mamba_heads = _count(k, "n_mamba_heads", d)
    if inner % mamba_heads:
        said = f"{k._key('n_mamba_heads')} ({mamba_heads}) must divide mamba_expand x hidden_size ({inner})"
        raise InputError(k.where, f"{said}: ZambaMambaMixer splits its channels between the heads")
    rank = k.get("mamba_dt_rank", default="auto")
    rank = math.ceil(hidden / 16) if rank == "auto" else rank
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise InputError(k.where, f"{k._key('mamba_dt_rank')}: expected a whole number or 'auto', got {rank!r}"[:200])
    ffn = _int(k, "intermediate_size", d, "ffn")
    return {
        **pattern,
        **_shared_block_attention(k, hidden, heads, _ZAMBA["num_key_value_heads"], ffn),
        "vocab": _int(k, "vocab_size", d, "vocab"),
        "ssm": {
            "version": 1,
            "inner": inner,
            "state": _int(k, "mamba_d_state", d, "ssm.state"),
            "conv_kernel": _int(k, "mamba_d_conv", d, "ssm.conv_kernel"),
            "dt_rank": rank,
            "conv_bias": k.flag("mamba_conv_bias", True),
            "bias": k.flag("mamba_proj_bias", False),
        },
        "shared_block": {"count": 1},
    }


# xLSTMConfig's defaults (configuration_xlstm.py, transformers 5.25.0: xLSTM-7B's shapes)
_XLSTM = {"vocab_size": 50304, "hidden_size": 4096, "num_hidden_layers": 32, "num_heads": 8, "chunk_size": 64,
          "ffn_round_up_to_multiple_of": 64}  # fmt: skip


def _xlstm(k: Keys) -> dict[str, Any]:
    """xLSTMForCausalLM (modeling_xlstm.py, transformers 5.25.0, its own classes; xLSTM 7B, arXiv 2503.13427):
    num_blocks (else num_hidden_layers) layers of an RMSNorm, an mLSTM layer (MLSTMSpec: q and k of
    int(hidden x qk_dim_factor), v of int(hidden x v_dim_factor)), an RMSNorm and a SwiGLU MLP of hidden x
    ffn_proj_factor rounded up to a multiple of ffn_round_up_to_multiple_of, biased by use_bias; out_norm; an output
    head of its own."""
    d = _XLSTM
    hidden = _int(k, "hidden_size", d, "hidden")
    embedding = k.integer("embedding_dim", default=None)
    if embedding is not None and embedding != hidden:  # xLSTMModel sizes its embedding by it, its blocks by hidden
        said = f"{k._key('embedding_dim')} ({embedding}) must be hidden_size ({hidden})"
        raise InputError(k.where, f"{said}: the embedding feeds blocks of hidden_size")
    layers = k.integer("num_blocks", "num_hidden_layers", default=d["num_hidden_layers"], field="layers")
    qk = int(hidden * k.positive("qk_dim_factor", 0.5))
    v = int(hidden * k.positive("v_dim_factor", 1.0))
    multiple = _count(k, "ffn_round_up_to_multiple_of", d)
    # round_up_to_next_multiple_of (configuration_xlstm.py) on the float product, as xLSTMFeedForward calls it
    ffn = int((hidden * k.positive("ffn_proj_factor", 2.667) + multiple - 1) // multiple * multiple)
    bias = k.flag("use_bias", False)
    if k.text("weight_mode", "single") not in ("single", "fused"):
        raise InputError(k.where, f"{k._key('weight_mode')}: single or fused, got {k.cfg.get('weight_mode')!r}")
    heads = _count(k, "num_heads", d, "mlstm.heads")
    if qk < 1 or v < 1 or qk % heads or v % heads:  # xLSTMLayer reshapes q, k and v into num_heads heads
        said = f"int({k._key('qk_dim_factor')} x hidden_size) ({qk}) and int({k._key('v_dim_factor')} x hidden_size)"
        raise InputError(k.where, f"{said} ({v}): whole multiples of {k._key('num_heads')} ({heads})")
    return {
        "hidden": hidden,
        "layers": layers,
        "heads": 1,  # a placeholder no formula reads: attention_layers is 0
        "vocab": _int(k, "vocab_size", d, "vocab"),
        "tied_embeddings": False,  # xLSTMForCausalLM declares no tied weights: lm_head is its own, whatever the file
        "mixers": ("mlstm",) * layers,
        "ffn": ffn,
        "mlp": "swiglu",
        "linear_bias": bias,
        "mlstm": {
            "heads": heads,
            "qk_dim": qk,
            "v_dim": v,
            "chunk": _int(k, "chunk_size", d, "mlstm.chunk"),
            "bias": bias,
        },
    }


# Each single-reader family's reader (hybrid_architecture)
_READERS = {
    "mamba": _mamba,
    "falcon_mamba": _mamba,
    "mamba2": _mamba2,
    "nemotron_h": _nemotron_h,
    "jamba": _jamba,
    "falcon_h1": _falcon_h1,
    "granitemoehybrid": _granite_hybrid,
    "kimi_linear": _kimi_linear,
    "glm5_next_text": _glm5_next,
    "qwen4_exp_text": _qwen4_exp,
    "bailing_hybrid": _bailing_hybrid,
    "minimax": _minimax,
    "bamba": _bamba,
    "olmo_hybrid": _olmo_hybrid,
    "lfm3": _lfm3,
    "jet_nemotron": _jet_nemotron,
    "qwen3_next": _qwen3_next,
    "recurrent_gemma": _recurrent_gemma,
    "rwkv": _rwkv,
    "zamba2": _zamba2,
    "zamba": _zamba,
    "xlstm": _xlstm,
}
