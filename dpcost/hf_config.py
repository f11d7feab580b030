"""Hugging Face config.json in dpcost's vocabulary: one key map per model family, following each family's
transformers `configuration_<family>.py` defaults. Pure: a parsed config in, architecture fields out (catalog.py
reads the file and validates the spec)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from functools import partial
from typing import Any, get_args

from dpcost.errors import InputError, nearest
from dpcost.specs import KV_SHARED, MAX_LAYERS, NOPE, Activation, GateClamp

__all__ = ["SUPPORTED_MODEL_TYPES", "Keys", "architecture_of", "in_users_words", "per_layer"]


_MISSING = object()


# The other spelling of a key that a family's configuration class accepts (its attribute_map, transformers 5.24.0):
# a file saved by transformers 5 writes the second (Qwen3-MoE's num_local_experts), the released ones often the
# first. Keys.get reads either.
_ATTRIBUTE_MAPS: dict[str, dict[str, str]] = {
    "deepseek_v2": {"num_experts": "n_routed_experts"},
    "deepseek_v3": {"num_local_experts": "n_routed_experts", "num_mtp_layers": "num_nextn_predict_layers"},
    "deepseek_v32": {"num_local_experts": "n_routed_experts"},
    "dots1": {"num_local_experts": "n_routed_experts"},
    "ernie4_5_moe": {"num_experts": "moe_num_experts", "num_experts_per_tok": "moe_k"},
    "ernie4_5_vl_moe_text": {"num_experts": "moe_num_experts", "num_experts_per_tok": "moe_k"},
    "kolibri1": {"num_experts": "num_local_experts"},
    "kolibri1_1": {"num_experts": "num_local_experts"},
    "axk1": {"num_local_experts": "n_routed_experts"},
    "axk2": {"num_local_experts": "n_routed_experts"},
    "flex_olmo": {"num_local_experts": "num_experts"},
    "glm4_moe": {"num_local_experts": "n_routed_experts", "num_mtp_layers": "num_nextn_predict_layers"},
    "glm4_moe_lite": {"num_local_experts": "n_routed_experts"},
    "glm4v_moe_text": {"num_local_experts": "n_routed_experts"},
    "glm_moe_dsa": {"num_local_experts": "n_routed_experts"},
    "gpt_oss": {"num_experts": "num_local_experts"},
    "hunyuan_v1_moe": {"num_experts_per_tok": "moe_topk", "num_local_experts": "num_experts"},
    "hy_v3": {"num_local_experts": "num_experts"},
    "hy_v4": {"num_local_experts": "n_routed_experts"},
    "hy_v4_vl_text": {"num_local_experts": "n_routed_experts"},
    "ergo": {"local_attention_window": "sliding_window"},
    "dots3_note_text": {"num_local_experts": "n_routed_experts"},
    "inkling2_text": {"sliding_window": "sliding_window_size", "num_local_experts": "n_routed_experts",
                      "sconv_kernel_size": "conv_kernel_size", "model_max_length": "max_position_embeddings",
                      "intermediate_size": "moe_intermediate_size", "routed_scaling_factor": "route_scale"},
    "inkling_text": {"num_local_experts": "n_routed_experts", "sliding_window": "sliding_window_size",
                     "sconv_kernel_size": "conv_kernel_size", "model_max_length": "max_position_embeddings"},
    "jamba": {"num_local_experts": "num_experts"},
    "kimi_linear": {"num_local_experts": "num_experts", "num_experts_per_tok": "num_experts_per_token",
                    "n_shared_experts": "num_shared_experts"},
    "mimo_v2_flash": {"num_local_experts": "n_routed_experts"},
    "minimax_m2": {"num_experts": "num_local_experts"},
    "minimax_m3_vl_text": {"num_experts": "num_local_experts"},
    "mistral4": {"num_local_experts": "n_routed_experts"},
    "mixtral": {"num_experts": "num_local_experts"},
    "nemotron_h": {"num_local_experts": "n_routed_experts"},
    "olmoe": {"num_local_experts": "num_experts"},
    "qwen3_moe": {"num_experts": "num_local_experts"},
    "qwen3_vl_moe_text": {"num_experts": "num_local_experts"},
    "solar_open": {"num_local_experts": "n_routed_experts"},
    "molmo2_text": {"qkv_bias": "attention_bias"},
    "minicpm5_moe": {"num_local_experts": "n_routed_experts"},
    "mistral_large4_text": {"num_local_experts": "n_routed_experts"},
    # Sarvam-30B's and Param2's Glm4MoeConfig subclasses also read their original configs' names
    **{family: {"num_local_experts": "n_routed_experts", "num_experts": "n_routed_experts",
                "num_shared_experts": "n_shared_experts", "use_qkv_bias": "attention_bias",
                "num_mtp_layers": "num_nextn_predict_layers"} for family in ("sarvam_moe", "param2moe")},
}  # fmt: skip


# The attribute_map names that lose to the canonical one when a file gives both (transformers 5.25.0, measured by
# building each class from both spellings at once: an alias the class also declares as a field is set first and
# then overwritten; every other alias is set after the fields, and wins)
_ALIAS_LOSES = {("deepseek_v3", "num_mtp_layers"), ("glm4_moe", "num_mtp_layers"), ("sarvam_moe", "num_mtp_layers"),
                ("param2moe", "num_mtp_layers"), ("kimi_linear", "num_local_experts"),
                ("kimi_linear", "num_experts_per_tok"), ("kimi_linear", "n_shared_experts"),
                ("qwen3_moe", "num_experts"), ("qwen3_vl_moe_text", "num_experts"),
                ("kolibri1", "num_experts"), ("kolibri1_1", "num_experts")}  # fmt: skip


def _spellings(family: str, key: str) -> tuple[str, ...]:
    """`key` and the spellings its family's attribute_map pairs with it, in the order transformers lets them win."""
    aliases = _ATTRIBUTE_MAPS.get(family, {})
    canonical = aliases.get(key, key)
    named = [alias for alias, c in aliases.items() if c == canonical]
    winning = [alias for alias in named if (family, alias) not in _ALIAS_LOSES]
    return tuple(dict.fromkeys([*winning, canonical, *named, key]))


# The largest number a config's field is read as: 2^53, beyond which a float holds no whole number exactly. No
# config's size comes near it, and a bound at reading keeps the readers' arithmetic (a ratio x a width) finite.
LARGEST_READ = 2**53


class Keys:
    """One config.json mapping read in its own vocabulary: every error names the key as the file spells it
    (`text_config.hidden_size` when nested) and says what dpcost accepts."""

    def __init__(self, cfg: dict[str, Any], where: str, family: str, prefix: str = "") -> None:
        self.cfg, self.where, self.family, self.prefix = cfg, where, family, prefix
        self.used: dict[str, str] = {}  # our architecture field -> the key it came from, for error messages

    def _key(self, key: str) -> str:
        return f"{self.prefix}{key}"

    def get(self, *keys: str, default: Any = _MISSING, field: str = "") -> Any:
        """The first of `keys` (or the other spelling its family's class accepts) present and not null, else `default`
        (transformers' config-class default)."""
        keys = tuple(dict.fromkeys(spelled for key in keys for spelled in _spellings(self.family, key)))
        for key in keys:
            if self.cfg.get(key) is not None:
                if field:
                    self.used[field] = self._key(key)
                return self.cfg[key]
        if default is _MISSING:
            spelled = " or ".join(self._key(k) for k in keys)
            raise InputError(self.where, f"{spelled}: required field is missing (a {self.family} config gives it)")
        if field:
            self.used.setdefault(field, self._key(keys[0]))
        return default

    def integer(self, *keys: str, default: Any = _MISSING, field: str = "") -> Any:
        value = self.get(*keys, default=default, field=field)
        if value is None:
            return None
        spelled = (s for key in keys for s in _spellings(self.family, key))  # as get reads them: the alias too
        key = next((k for k in spelled if self.cfg.get(k) is not None), keys[0])
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputError(self.where, f"{self._key(key)}: expected a whole number, got {value!r}"[:200])
        if field == "layers" and not 0 < value <= MAX_LAYERS:
            # bounded before any per-layer list is built from it (a list of 10**19 layers cannot be made)
            raise InputError(
                self.where, f"{self._key(key)}: a whole number of layers from 1 to {MAX_LAYERS:,}, got {value}"[:200]
            )
        if abs(value) > LARGEST_READ:
            said = f"{self._key(key)}: expected a whole number of at most {LARGEST_READ:,}, got {value}"
            raise InputError(self.where, said[:200])
        return value

    def positive(self, key: str, default: float, field: str = "") -> float:
        """A positive real number (a ratio such as Mamba's expand), else `default` when absent or null; `field`, the
        architecture field a width computed from it sets (named in that width's errors)."""
        value = self.cfg.get(key)
        if field:
            self.used.setdefault(field, self._key(key))
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= LARGEST_READ:
            said = f"{self._key(key)}: expected a positive number of at most {LARGEST_READ:,}, got {value!r}"
            raise InputError(self.where, said[:200])
        return float(value)

    def flag(self, key: str, default: bool) -> bool:
        key = next((k for k in _spellings(self.family, key) if self.cfg.get(k) is not None), key)
        value = self.cfg.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise InputError(self.where, f"{self._key(key)}: expected true or false, got {value!r}"[:200])
        return value

    def layers(self, key: str) -> tuple[int, ...]:
        value = self.cfg.get(key)
        value = [] if value is None else value
        if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise InputError(self.where, f"{self._key(key)}: expected a list of layer indices, got {value!r}"[:200])
        return tuple(value)

    def text(self, key: str, default: str) -> str:
        value = self.cfg.get(key)
        return default if value is None else str(value)


# Families: model_type -> (family key map, transformers' configuration file whose defaults it follows).
# Each reader takes the shapes a family's config.json gives and the defaults its config class fills in when a
# key is absent (tie_word_embeddings above all: PretrainedConfig defaults it to true, and Gemma, GPT-2, OPT,
# BLOOM and Falcon rely on that; Llama, Mistral, Qwen, Phi-3, OLMo 2, GPT-NeoX, GPT-J, DeepSeek and gpt-oss
# set it false).
_LLAMA_LIKE = {
    # model_type: (default kv heads (None = heads), default head_dim (None = hidden/heads), qkv bias, qk norm)
    "llama": (None, None, False, "none"),  # configuration_llama.py
    "mistral": (8, None, False, "none"),  # configuration_mistral.py
    # configuration_ministral.py / modeling_ministral.py (5.24.0): Mistral's layers; head_dim must be given (the
    # class keeps None and its attention fails without one)
    "ministral": (8, None, False, "none"),
    # configuration_ministral3.py / modeling_ministral3.py (5.24.0): Mistral's layers, head_dim 128 unless given
    "ministral3": (8, 128, False, "none"),
    "mixtral": (8, None, False, "none"),  # configuration_mixtral.py
    "qwen2": (32, None, True, "none"),  # configuration_qwen2.py; Qwen2Attention: q/k/v bias=True
    "qwen2_moe": (16, None, True, "none"),  # configuration_qwen2_moe.py
    "qwen3": (32, 128, False, "head"),  # configuration_qwen3.py; q_norm/k_norm over head_dim
    # configuration_qwen3_moe.py / modeling_qwen3_moe.py (5.24.0): the class has no head_dim; the attention takes
    # getattr(config, "head_dim", hidden / heads)
    "qwen3_moe": (4, None, False, "head"),
    "phi3": (None, None, False, "none"),  # configuration_phi3.py (fused qkv_proj, gate_up_proj: same shapes)
    # configuration_phi4_multimodal.py / modeling_phi4_multimodal.py (5.25.0): Phi-3's layers, 8 KV heads unless
    # given, its keys top-level; its embed_tokens_extend (the image and audio encoders) is left out
    "phi4_multimodal": (8, None, False, "none"),
    # configuration_exaone.py (5.24.0: EXAONE 3.0 and 3.5): LlamaForCausalLM's layers, 8 KV heads unless given; its
    # released files name the layers num_layers (the class's attribute_map)
    "exaone": (8, None, False, "none"),
    # configuration_cwm.py / modeling_cwm.py (5.24.0: Meta's CWM): Llama's layers without attention biases, 8 KV heads
    # and head_dim 128 unless given; sliding windows by layer_types, else every layer but each fourth from the first
    "cwm": (8, 128, False, "none"),
    # configuration_iquestcoder.py (5.24.0): LlamaForCausalLM's layers, 8 KV heads and head_dim 128 unless given
    "iquestcoder": (8, 128, False, "none"),
    # configuration_flex_olmo.py / modeling_flex_olmo.py (5.24.0): OLMoE's attention and experts (num_experts of
    # intermediate_size, a router without bias), q/k norms over all heads, two norms a layer
    "flex_olmo": (None, None, False, "full"),
    # configuration_granitemoeshared.py / modeling_granitemoeshared.py (5.24.0): GraniteMoE's layers and, where
    # shared_intermediate_size is set, a gated shared MLP of that width beside the experts
    "granitemoeshared": (None, None, False, "none"),
    # configuration_granite_swa.py / modeling_granite_swa.py (5.24.0): Granite's layers with a sink per head, 4 KV heads
    # unless given, tied by default; sliding windows of 128 by layer_types, else all but every fourth from the first
    "granite_swa": (4, None, False, "none"),
    # configuration_granitemoe_swa.py / modeling_granitemoe_swa.py (5.24.0): GraniteMoeShared's layers with Granite
    # SWA's attention (a sink per head) and windows
    "granitemoe_swa": (None, None, False, "none"),
    # configuration_hyperclovax.py / modeling_hyperclovax.py (5.24.0: HyperCLOVA X SEED): Granite's layers with
    # head_dim hidden / heads unless given and, with use_post_norm (true by default), a norm after each sub-layer too
    "hyperclovax": (None, None, False, "none"),
    # configuration_mellum.py / modeling_mellum.py (5.24.0: JetBrains' Mellum): Qwen3-MoE's layers (q/k norms per
    # head, biases on q, k, v and o by attention_bias), experts in every layer but those mlp_layer_types calls dense,
    # sliding windows only where layer_types says; its MTP layer (num_mtp_layers) is not built by transformers
    "mellum": (4, 128, False, "head"),
    # configuration_laguna.py / modeling_laguna.py (5.24.0): AFMoE's attention (q/k norms per head, biases by
    # attention_bias) with a softplus gate per head (gating true or "per-head": g_proj hidden -> heads) or per channel
    # (hidden -> heads x head_dim), heads per layer by num_attention_heads_per_layer (_laguna_heads), a dense
    # first layer (mlp_layer_types), then experts with an ungated shared MLP and an e_score_correction_bias parameter
    "laguna": (8, 128, False, "head"),
    # Baichuan and Baichuan 2 (baichuan-inc's remote modeling_baichuan.py, 7B and 13B): Llama's shapes with q, k and v
    # fused in W_pack (hidden -> 3 x hidden), no biases anywhere, one KV head per head, an untied head (NormHead in
    # Baichuan 2: a weight of vocab x hidden); the 13B's ALiBi holds no weights
    "baichuan": (None, None, False, "none"),
    # MiniCPM 1-4 (openbmb's remote configuration_minicpm.py / modeling_minicpm.py): Llama's layers (attention_bias on
    # q, k, v and o), tied by default; scale_emb, dim_model_base and scale_depth scale activations, and MiniCPM4's
    # InfLLM v2 attention keeps the weights; MiniCPM-MoE's experts by num_experts (below)
    "minicpm": (None, None, False, "none"),
    # Orion (OrionStarAI's remote modeling_orion.py, as vLLM's orion.py ports it): Llama's layers with LayerNorms
    # (weight and bias) in place of the RMSNorms, the final one too; no biases on q, k, v or o; untied
    "orion": (None, None, False, "none"),
    # DeepSeekMoE 16B (deepseek-ai's remote modeling_deepseek.py, model_type deepseek): Llama's attention (biases on q,
    # k, v and o by attention_bias), a dense MLP of intermediate_size in the first first_k_dense_replace layers, then
    # n_routed_experts experts of moe_intermediate_size, n_shared_experts folded into one shared MLP, a router
    # without bias (MoEGate); every layer an MoE past the dense ones (moe_layer_freq 1; any other is refused)
    "deepseek": (None, None, False, "none"),
    # Ling and Ring (inclusionAI's remote configuration_bailing_moe.py / modeling_bailing_moe.py, model_type
    # bailing_moe; Ling 2.0's BailingMoeV2ForCausalLM under the same model_type, bailing_moe_v2 in Megatron-Bridge's):
    # q, k and v fused in query_key_value (biases by use_qkv_bias), with use_qk_norm an RMSNorm over head_dim for q and
    # one for k, dense (o) biased by use_bias, two RMSNorms a layer; a dense MLP of intermediate_size in the first
    # first_k_dense_replace layers, then num_experts experts of moe_intermediate_size, num_shared_experts folded into
    # one shared MLP (moe_shared_expert_intermediate_size wide each, else moe_intermediate_size), a router without bias
    # and, with moe_router_enable_expert_bias, an expert_bias parameter; untied by default; the MTP layers of
    # num_nextn_predict_layers are not counted (their shape is in no file dpcost reads)
    "bailing_moe": (None, None, False, "none"),
    "bailing_moe_v2": (None, None, False, "none"),
    # Ring-linear 2.0 (inclusionAI's remote configuration_bailing_moe_linear_v2.py and
    # modeling_bailing_moe_linear_v2.py, BailingMoeLinearV2ForCausalLM): Ling 2.0's layers, with lightning attention
    # (_ring_linear) in every layer but each layer_group_size-th and those past the last whole group
    "bailing_moe_linear": (None, None, False, "none"),
    # configuration_bitnet.py / modeling_bitnet.py (5.24.0: BitNet b1.58): Llama's attention with a norm over its
    # output before o_proj (attn_sub_norm: three norms a layer), 5 KV heads unless given, a gated relu2 MLP with a norm
    # over its intermediate before down_proj (ffn_sub_norm), no MLP biases; trained with full-precision latent weights
    "bitnet": (5, None, False, "none"),
    # InternLM 1 (internlm's remote modeling_internlm.py, model_type internlm): Llama's layers with one KV head per head
    # and biases on q, k, v and o by `bias` (true unless the file says), none on the MLP or the head
    "internlm": (None, None, False, "none"),
    # openPangu-Embedded (Huawei's remote configuration_openpangu_dense.py / modeling_openpangu_dense.py, model_type
    # PanguEmbedded): Llama's layers, 8 KV heads unless given, biases on q, k, v and o by `bias` (true unless the file
    # says), none on the MLP; untied by default
    "PanguEmbedded": (8, None, False, "none"),
    # configuration_jais2.py / modeling_jais2.py (5.24.0: Jais 2): Llama's attention with biases on q, k, v and o by
    # attention_bias, a 2-matrix relu2 MLP with biases by mlp_bias (both true by default), LayerNorms with biases
    "jais2": (None, None, False, "none"),
    # configuration_nanochat.py / modeling_nanochat.py (5.24.0): Llama's attention with q/k norms and every norm
    # without a weight, a 2-matrix relu2 MLP without biases
    "nanochat": (None, None, False, "none"),
    # configuration_cohere2_moe.py / modeling_cohere2_moe.py (5.24.0): Cohere 2's parallel layer (one weight-only
    # norm) with num_experts experts of intermediate_size and num_shared_experts folded into one shared MLP in the
    # sparse layers, a dense MLP of prefix_dense_intermediate_size (else intermediate_size) in the dense ones
    # (mlp_layer_types, else the first first_k_dense_replace), a router without bias; head_dim 128 unless given, tied
    "cohere2_moe": (None, 128, False, "none"),
    # configuration_afmoe.py / modeling_afmoe.py (5.24.0: Arcee's Trinity): gated attention (gate_proj: hidden -> heads
    # x head_dim) with q/k norms per head and biases by attention_bias on q, k, v and o, four norms a layer, dense
    # MLPs in the first num_dense_layers and then experts with num_shared_experts folded into one shared MLP, an
    # expert_bias parameter; sliding windows by layer_types, else all but every global_attn_every_n_layers-th
    "afmoe": (None, 128, False, "head"),
    # configuration_exaone_moe.py / modeling_exaone_moe.py (5.24.0: K-EXAONE): EXAONE 4's attention (q/k norms per head,
    # no biases), 32 KV heads unless given, two norms a layer, dense MLPs by mlp_layer_types (else the first
    # first_k_dense_replace layers), experts with num_shared_experts folded into one shared MLP; the routers'
    # e_score_correction_bias is a buffer; sliding windows as EXAONE 4's
    "exaone_moe": (32, None, False, "head"),
    # configuration_hy_v3.py / modeling_hy_v3.py (5.24.0: Tencent's Hunyuan 3): q/k norms per head, biases by
    # attention_bias on q, k, v and o, 8 KV heads and head_dim 128 unless given, dense MLPs by mlp_layer_types (else the
    # first layer), experts (num_experts, or num_local_experts) with num_shared_experts folded into one shared MLP;
    # the correction bias is a buffer
    "hy_v3": (8, 128, False, "head"),
    # configuration_solar_open.py / modeling_solar_open.py (5.24.0: Upstage's Solar Open): q/k/v biases by
    # attention_bias (o_proj none), 8 KV heads and head_dim 128 unless given, experts in every layer (n_routed_experts,
    # or num_local_experts) with n_shared_experts folded into one shared MLP, no dense MLP; the correction bias a buffer
    "solar_open": (8, 128, False, "none"),
    # configuration_flint.py / modeling_flint.py (5.24.0): Qwen3-MoE's layers (q/k norms per head, experts by
    # decoder_sparse_step and mlp_only_layers, [0, 1] by default) with biases by attention_bias on q, k, v and o, a sink
    # per head, a shared expert without a gate, and sliding windows but in the first two layers, every fourth from
    # the second and the last (layer_types else)
    "flint": (4, 128, False, "head"),
    "olmo2": (None, None, False, "full"),  # configuration_olmo2.py; q_norm/k_norm over all heads
    "olmo3": (None, None, False, "full"),  # configuration_olmo3.py / modeling_olmo3.py: OLMo 2's layers and norms
    "gpt_oss": (8, 64, True, "none"),  # configuration_gpt_oss.py; attention_bias=True
    # configuration_granite.py: Llama's shapes; its embedding, residual, attention and logits multipliers scale
    # activations, not weights
    "granite": (None, None, False, "none"),
    "olmoe": (None, None, False, "full"),  # configuration_olmoe.py; OlmoeAttention: q_norm/k_norm over all heads
    # configuration_granitemoe.py / modeling_granitemoe.py: Granite's attention; num_local_experts gated experts of
    # intermediate_size in every layer (input_linear holds gate and up), a router without bias, no shared expert
    "granitemoe": (None, None, False, "none"),
    # configuration_nemotron.py / modeling_nemotron.py: a 2-matrix relu2 MLP (up, down), LayerNorm1P with a bias,
    # q and o heads x head_dim wide (Minitron-8B: 48 x 128 over a hidden of 4096)
    "nemotron": (None, None, False, "none"),
    # configuration_phimoe.py / modeling_phimoe.py (transformers 23925e16 / c4cdd1a0): Mixtral's experts under
    # LayerNorms with biases; attention_bias puts biases on q, k, v and o, lm_head_bias one on the head
    "phimoe": (8, None, False, "none"),
    # configuration_arcee.py / modeling_arcee.py (transformers 5.24.0): Llama's attention, a 2-matrix relu2 MLP (up,
    # down) with biases by mlp_bias
    "arcee": (None, None, False, "none"),
    # configuration_apertus.py / modeling_apertus.py (5.24.0): q_norm/k_norm over head_dim always, a 2-matrix xIELU
    # MLP without biases (mlp_bias is not read) whose xIELU holds alpha_p and alpha_n (activations.py XIELUActivation)
    "apertus": (None, None, False, "head"),
    # configuration_apertus1p5.py / modeling_apertus1p5.py (5.24.0: Apertus 1.5's text model, under text_config):
    # Apertus's layers over a vocabulary of 266752 (text, visual and audio codes) unless given, the output head pruned
    # to output_vocab_size rows where set (released untied)
    "apertus1p5_text": (None, None, False, "head"),
    # configuration_cohere.py / modular_cohere.py: one CohereLayerNorm (a weight, no bias) per layer under which
    # attention and the gated MLP run in parallel; with use_qk_norm, q and k normed per head, each head's own weights
    "cohere": (None, None, False, "none"),
    # configuration_cohere2.py / modeling_cohere2.py (5.24.0): Cohere's parallel layer under one weight-only norm;
    # head_dim hidden / heads unless given; no q/k norm (use_qk_norm is not read); tied by default
    "cohere2": (None, None, False, "none"),
    # configuration_cohere_compass.py / modular_cohere_compass.py (5.25.0: Cohere's North vision models, under
    # text_config): Cohere 2's layers, tied by default, every layer attending in full unless layer_types says
    "cohere_compass_text": (None, None, False, "none"),
    # configuration_stablelm.py / modeling_stablelm.py (5.24.0): LayerNorms with biases (one per layer under
    # use_parallel_residual, which runs attention and MLP side by side), q/k/v biases by use_qkv_bias, head_dim
    # hidden / heads (a head_dim key is not read), KV heads 32 unless given, with qk_layernorm a bias-free LayerNorm
    # per head over q and k (qk_norm_bias false)
    "stablelm": (32, None, False, "none"),
    # modeling_hunyuan_v1_dense.py / modeling_hunyuan_v1_moe.py (5.24.0): Llama's layers with q/k RMSNorms over
    # head_dim always built; head_dim must be given (the class has none; attention_head_dim in Tencent's remote
    # files); use_qk_norm, use_cla and mlp_bias are not read
    "hunyuan_v1_dense": (None, None, False, "head"),
    "hunyuan_v1_moe": (None, None, False, "head"),
    # configuration_helium.py / modeling_helium.py (5.24.0): Llama's layers, q/k/v biases by attention_bias, o_proj
    # hidden -> hidden without a bias; the MLP's biases by mlp_bias (false as released)
    "helium": (20, 128, False, "none"),
    # XiaomiMiMo's remote MiMoForCausalLM (a Qwen2ForCausalLM, q/k/v biases) with num_nextn_predict_layers
    # MiMoMTPLayers: five norms, input_proj 2h -> h, one Qwen2 attention and MLP (mtp_layers, counted apart)
    "mimo": (32, None, True, "none"),
    "olmo": (None, None, False, "none"),  # modeling_olmo.py: LayerNorms without weight or bias (OlmoLayerNorm)
    "smollm3": (None, None, False, "none"),  # configuration_smollm3.py: Llama's layers; NoPE layers hold no weights
    # InternLM2 (remote code, configuration_internlm2.py): Llama's shapes, fused wqkv and w1/w3/w2; q/k/v biases by
    # `bias`, whose class default is true (released files set false)
    "internlm2": (None, None, False, "none"),
    # configuration_glm.py / modeling_glm.py (5.24.0; THUDM's glm-4-9b-*-hf): 2 KV heads of 128 by default, q/k/v
    # biases by attention_bias (default true), o_proj without, a fused gate_up MLP without biases, 2 norms per layer
    "glm": (2, 128, False, "none"),
    # configuration_internlm3.py (5.24.0; built as LlamaForCausalLM): qkv_bias (alias of attention_bias) biases
    # q/k/v and o, bias (alias of mlp_bias) the MLP; 2 KV heads of 128 by default
    "internlm3": (2, 128, False, "none"),
    # configuration_seed_oss.py: q/k/v biases by attention_bias, o_proj's by attention_out_bias (false as released)
    "seed_oss": (None, None, False, "none"),
    # modeling_glm4.py: 4 RMSNorms per layer (before and after attention and MLP), q/k/v biases, fused gate_up
    "glm4": (None, None, False, "none"),
    "ernie4_5": (None, None, False, "none"),  # modeling_ernie4_5.py: every linear's bias by use_bias
    # configuration_ernie4_5_moe.py / modeling_ernie4_5_moe.py (transformers 001f85b3 / 01187e21): ERNIE 4.5's layers;
    # MoE from moe_layer_start_index to moe_layer_end_index every moe_layer_interval layers, moe_num_shared_experts
    # shared experts, an fp32 router and its e_score_correction_bias; its MTP block is not loaded (not counted)
    "ernie4_5_moe": (4, None, False, "none"),
    # configuration_ernie4_5_vl_moe.py / modeling_ernie4_5_vl_moe.py (5.25.0: ERNIE-4.5-VL, under text_config):
    # ERNIE 4.5's layers (biases by use_bias), dense MLPs by mlp_layer_types (else the first), and MoE blocks of
    # modality-isolated experts: moe_num_experts text experts of moe_intermediate_size[0], top moe_k, one shared MLP
    # of moe_num_shared_experts x that width, and as many vision experts of moe_intermediate_size[1] with their own
    # router (MoESpec.vision_experts); each router's correction bias a parameter; tied by default
    "ernie4_5_vl_moe_text": (4, None, False, "none"),
    # modeling_exaone4.py: RMSNorms after attention and after the MLP (none before), q_norm/k_norm over head_dim
    "exaone4": (None, None, False, "head"),
    # configuration_qwen2_5_vl.py / qwen2_vl: Qwen2's text model (its keys top-level, or under text_config)
    "qwen2_5_vl": (None, None, True, "none"),
    "qwen2_vl": (None, None, True, "none"),
    # configuration_qwen3_vl.py / configuration_qwen3_vl_moe.py (transformers 000c33fd / 4fa4a23e): Qwen3's layers
    # (q_norm/k_norm over head_dim); KV heads default to 32 and 16, the MoE text model's head_dim to hidden/heads
    "qwen3_vl_text": (32, 128, False, "head"),
    "qwen3_vl_moe_text": (16, None, False, "head"),
    # configuration_glm4v.py / modeling_glm4v.py (5.24.0): GLM-4's text layers (4 RMSNorms, fused gate_up), q/k/v
    # biases whatever attention_bias says, o_proj without, head_dim hidden / heads (a head_dim key is not read)
    "glm4v_text": (2, None, True, "none"),
    # configuration_glm_ocr.py / modular_glm_ocr.py (5.25.0: zai-org/GLM-OCR): GLM-4V's text layers, but q/k/v
    # without biases (GlmOcrTextAttention), which reads head_dim (else hidden / heads), and 8 KV heads by default
    "glm_ocr_text": (8, None, False, "none"),
    # configuration_cosmos3_edge.py / modular_cosmos3_edge.py (5.25.0): Llama's attention with CLIP's MLP (fc1 and
    # fc2 biased by mlp_bias, relu2: two matrices), 8 KV heads of 128 by default
    "cosmos3_edge_text": (8, 128, False, "none"),
    # configuration_aria.py / modeling_aria.py (5.25.0: Rhymes' Aria, under text_config): Llama's attention (biases on
    # q, k, v and o by attention_bias) and in every layer moe_num_experts SiLU-gated experts of intermediate_size, top
    # moe_topk, a router without bias, moe_num_shared_experts folded into one shared MLP; untied by default
    "aria_text": (None, None, False, "none"),
    # Rhymes' own Aria files (rhymes-ai/Aria's moe_lm.py, text_config model_type aria_moe_lm): the same layers under
    # LlamaConfig's keys, the experts' width (and the shared MLP's per expert) in moe_intermediate_size; the
    # file's intermediate_size builds nothing. transformers' convert_aria_weights_to_hf.py loads them one for one
    "aria_moe_lm": (None, None, False, "none"),
    # configuration_emu3.py / modeling_emu3.py (5.25.0: BAAI's Emu3, under text_config): Llama's layers (biases on q,
    # k, v and o by attention_bias, on the MLP by mlp_bias), 8 KV heads unless given, untied by default
    "emu3_text_model": (8, None, False, "none"),
    # configuration_chameleon.py / modeling_chameleon.py (5.25.0: Meta's Chameleon): Llama's layers (biases on q, k, v
    # and o by attention_bias, on the MLP by mlp_bias) with q and k normed by LayerNorms of weight and bias per head
    # (ChameleonLayerNorm of (heads, head_dim) and (kv_heads, head_dim)) in RMSNorm layers, 32 KV heads unless given,
    # head_dim hidden / heads
    # (a head_dim key is not read), untied; swin_norm moves the norms, not their weights; its VQ image tokenizer
    # (vqmodel) is not counted
    "chameleon": (32, None, False, "full"),
    # configuration_kolibri1.py / modular_kolibri1.py (5.25.0: Aleph Alpha's Kolibri-1): EXAONE 4's attention (q/k
    # norms per head, no biases), 4 KV heads of 128 unless given, GLM-4's four norms a layer, and in every layer
    # num_experts experts of moe_intermediate_size with one shared MLP of shared_expert_intermediate_size and a
    # router whose e_score_correction_bias is a buffer; sliding windows of 513 by layer_types, else all but every
    # fifth layer
    "kolibri1": (4, 128, False, "head"),
    # configuration_kolibri1_1.py / modular_kolibri1_1.py (5.25.0: Aleph Alpha's Kolibri-1.1): Kolibri-1's layers with
    # weightless indexers in its indexed_attention layers, which read another's keys and values where
    # kv_source_layers says (_kolibri1_1_layers), and dense MLPs of mlp_only_intermediate_size in mlp_only_layers
    "kolibri1_1": (4, 128, False, "head"),
    # configuration_beam.py / modular_beam.py (5.25.0): Qwen3-MoE's attention (q/k norms per head, biases on q, k, v
    # and o by attention_bias) with a sigmoid gate per channel (gate_proj hidden -> heads x head_dim) and a gate bias
    # per head, four norms a layer, dense MLPs by mlp_layer_types (else the first three) and then num_experts experts
    # without a shared one, a router whose e_score_correction_bias is a buffer; 8 KV heads of 128 unless given;
    # sliding windows of 512 by layer_types, else all but every sixth layer and the last
    "beam": (8, 128, False, "head"),
}
# Where a family's configuration class defaults a key otherwise than Llama's (tie_word_embeddings and
# attention_bias false): configuration_cohere.py, configuration_smollm3.py, configuration_ernie4_5.py,
# configuration_glm4.py, InternLM2's configuration_internlm2.py (whose attention bias is named `bias`).
# Whose attention projections take bias=False whatever attention_bias says (modeling_mistral.py, modeling_ministral.py,
# modeling_ministral3.py, modeling_mixtral.py, modeling_phi3.py, modeling_exaone4.py, modeling_exaone_moe.py), that
# has no attention_bias (modeling_cwm.py, Baichuan's modeling_baichuan.py, modular_kolibri1.py), or whose biases
# follow use_bias alone (modeling_ernie4_5.py, _moe), or whose q/k/v are unbiased whatever it says (modular_glm_ocr.py)
_UNBIASED = ("mistral", "ministral", "ministral3", "cwm", "mixtral", "phi3", "phi4_multimodal", "exaone4",
             "exaone_moe", "ernie4_5",
             "ernie4_5_moe", "baichuan", "bailing_moe", "bailing_moe_v2", "bailing_moe_linear", "glm_ocr_text",
             "kolibri1", "kolibri1_1",
             "ernie4_5_vl_moe_text")  # fmt: skip
# Whose MLP takes bias=config.mlp_bias (transformers 5.24.0's modeling files; EXAONE 3, IQuest-Coder and InternLM3 are
# built as LlamaForCausalLM): every other family's MLP has no bias whatever mlp_bias says
_READS_MLP_BIAS = ("llama", "granite", "granite_swa", "helium", "arcee", "cwm", "jais2", "seed_oss", "smollm3",
                   "nemotron", "hyperclovax", "exaone", "iquestcoder", "internlm3", "cosmos3_edge_text",
                   "emu3_text_model", "chameleon")  # fmt: skip
_LLAMA_LIKE_DEFAULTS: dict[str, dict[str, bool]] = {
    "cohere": {"tie_word_embeddings": True},
    "cohere2": {"tie_word_embeddings": True},
    "cohere_compass_text": {"tie_word_embeddings": True},
    "cohere2_moe": {"tie_word_embeddings": True},
    "minicpm": {"tie_word_embeddings": True},
    "granite_swa": {"tie_word_embeddings": True},
    "jais2": {"attention_bias": True, "mlp_bias": True},
    "smollm3": {"tie_word_embeddings": True},
    "ernie4_5": {"tie_word_embeddings": True},
    "ernie4_5_moe": {"tie_word_embeddings": True},
    "ernie4_5_vl_moe_text": {"tie_word_embeddings": True},
    "glm4": {"attention_bias": True},
    "glm": {"attention_bias": True},
    "internlm2": {"bias": True},
    "internlm": {"bias": True},
    "PanguEmbedded": {"bias": True},
}
# The config class's defaults for the shapes, for a text_config nested in a wrapper, where transformers builds the
# text model from the class with the file's keys over its defaults: LlamaConfig's (configuration_llama.py; LLaVA-1.5
# names only what differs from them, its vocabulary, and so is Llama 2 7B's shape) and MistralConfig's
# (configuration_mistral.py; Pixtral 12B's text_config leaves out num_attention_heads, 32 there). A top-level config
# must name its shapes: one without them is more likely cut short than meant as the class's default model.
_NESTED_SHAPE_DEFAULTS = {
    "llama": {
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "vocab_size": 32000,
    },
    "mistral": {
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "vocab_size": 32000,
    },
    "aria_moe_lm": {  # AriaMoELMConfig is LlamaConfig's, whose shape defaults it keeps
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "vocab_size": 32000,
    },
    "aria_text": {  # AriaTextConfig's
        "hidden_size": 4096,
        "intermediate_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "vocab_size": 32000,
    },
    "ernie4_5_vl_moe_text": {  # Ernie4_5_VLMoeTextConfig's (ERNIE-4.5-VL-28B-A3B)
        "hidden_size": 2560,
        "intermediate_size": 12288,
        "num_hidden_layers": 28,
        "num_attention_heads": 20,
        "vocab_size": 103424,
    },
    "emu3_text_model": {  # Emu3TextConfig's
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "vocab_size": 184622,
    },
    "qwen2": {  # Qwen2Config's (configuration_qwen2.py, 5.25.0): Qwen2-Audio's text_config names none of these
        "hidden_size": 4096,
        "intermediate_size": 22016,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "vocab_size": 151936,
    },
    "cohere2": {  # Cohere2Config's (configuration_cohere2.py, 5.25.0): Aya Vision 8B's text_config has no vocab_size
        "hidden_size": 8192,
        "intermediate_size": 22528,
        "num_hidden_layers": 40,
        "num_attention_heads": 64,
        "vocab_size": 256000,
    },
}
# Every key's default, as transformers' GemmaConfig, Gemma2Config and Gemma3TextConfig give it (configuration_gemma.py,
# configuration_gemma2.py at 008e574, configuration_gemma3.py at 008f5c8; docs/sources/hf-defaults.md): a config.json
# may name only what differs (google/gemma-3-4b-it's text_config names three keys).
_GEMMA: dict[str, dict[str, int]] = {
    "gemma": {"hidden_size": 3072, "intermediate_size": 24576, "num_hidden_layers": 28, "num_attention_heads": 16,
              "num_key_value_heads": 16, "head_dim": 256, "vocab_size": 256000},
    "gemma2": {"hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26, "num_attention_heads": 8,
               "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 256000},
    # configuration_vaultgemma.py / modeling_vaultgemma.py (5.24.0): Gemma 2's defaults and layers less the norms
    # after attention and after the MLP (2 per block)
    "vaultgemma": {"hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26, "num_attention_heads": 8,
                   "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 256000},
    "gemma3_text": {"hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26, "num_attention_heads": 8,
                    "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 262208},
}  # fmt: skip
# Every key's default, as transformers' Glm4MoeConfig (configuration_glm4_moe.py at c7ec229) and MiniMaxM2Config
# (configuration_minimax_m2.py at ea9df1d) give it (docs/sources/hf-defaults.md). Glm4MoeConfig has no head_dim key:
# Glm4MoeAttention takes getattr(config, "head_dim", hidden_size // num_attention_heads).
_GLM4_MOE = {
    "vocab_size": 151552,
    "hidden_size": 4096,
    "intermediate_size": 10944,
    "num_hidden_layers": 46,
    "num_attention_heads": 96,
    "num_key_value_heads": 8,
    "moe_intermediate_size": 1408,
    "num_experts_per_tok": 8,
    "n_shared_experts": 1,
    "n_routed_experts": 128,
    "first_k_dense_replace": 1,
}
# Dots1Config's defaults (configuration_dots1.py, transformers 5.24.0); n_routed_experts, n_shared_experts and
# num_experts_per_tok have none (a file gives them)
# Glm4MoeConfig's subclasses that transformers builds as Glm4MoeForCausalLM, with their own defaults (and head_dim,
# use_qk_norm and tie_word_embeddings fields): SarvamMoEConfig (configuration_sarvam_moe.py, 5.25.0: sarvam-30b) and
# Param2MoeConfig (configuration_param2moe.py, 5.25.0: Param2-17B-A2.4B)
_GLM4_MOE_SUBCLASSES = {
    "sarvam_moe": {**_GLM4_MOE, "vocab_size": 262144, "intermediate_size": 8192, "num_hidden_layers": 19,
                   "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 64, "moe_intermediate_size": 1024,
                   "num_experts_per_tok": 6, "use_qk_norm": True, "tie_word_embeddings": False},
    "param2moe": {**_GLM4_MOE, "vocab_size": 128000, "hidden_size": 2048, "intermediate_size": 9216,
                  "num_hidden_layers": 21, "num_attention_heads": 32, "head_dim": 64, "tie_word_embeddings": True,
                  "moe_intermediate_size": 2048, "num_experts_per_tok": 6, "n_shared_experts": 2,
                  "n_routed_experts": 64, "use_qk_norm": True},
}  # fmt: skip
_DOTS1 = {"vocab_size": 152064, "hidden_size": 4608, "intermediate_size": 10944, "moe_intermediate_size": 1408,
          "num_hidden_layers": 62, "num_attention_heads": 32, "num_key_value_heads": 32,
          "first_k_dense_replace": 0}  # fmt: skip
_MINIMAX_M2 = {
    "vocab_size": 200064,
    "hidden_size": 3072,
    "intermediate_size": 1536,
    "num_hidden_layers": 62,
    "num_attention_heads": 48,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "num_experts_per_tok": 8,
    "num_local_experts": 256,
}
# Every weight-shaping key's default, as transformers' GlmMoeDsaConfig gives it (configuration_glm_moe_dsa.py, 5.24.0)
_GLM_MOE_DSA = {"vocab_size": 154880, "hidden_size": 6144, "intermediate_size": 12288, "moe_intermediate_size": 2048,
                "num_hidden_layers": 78, "num_attention_heads": 64, "n_shared_experts": 1, "n_routed_experts": 256,
                "kv_lora_rank": 512, "q_lora_rank": 2048, "qk_rope_head_dim": 64, "v_head_dim": 256,
                "qk_nope_head_dim": 192, "num_experts_per_tok": 8, "first_k_dense_replace": 3, "index_topk": 2048,
                "index_head_dim": 128, "index_n_heads": 32}  # fmt: skip
# Mistral4Config's defaults (configuration_mistral4.py, 5.24.0): DeepSeek-V3's MLA and MoE keys (no router bias,
# no MTP); head_dim is overwritten by qk_nope_head_dim + qk_rope_head_dim and shapes nothing
_MISTRAL4 = {"vocab_size": 131072, "hidden_size": 4096, "intermediate_size": 12288, "moe_intermediate_size": 2048,
             "num_hidden_layers": 36, "num_attention_heads": 32, "n_shared_experts": 1, "n_routed_experts": 128,
             "kv_lora_rank": 256, "q_lora_rank": 1024, "qk_rope_head_dim": 64, "v_head_dim": 128,
             "qk_nope_head_dim": 64, "num_experts_per_tok": 4, "first_k_dense_replace": 0}  # fmt: skip
# MistralLarge4TextConfig's defaults (configuration_mistral_large4.py, 5.25.0: Mistral-Large-4-1T-A52B's shapes):
# DeepSeek-V3.2's MLA keys without a query latent, its indexer's, a dense first layer
_MISTRAL_LARGE4 = {"vocab_size": 204800, "hidden_size": 6144, "intermediate_size": 24576, "moe_intermediate_size": 6144,
                   "num_hidden_layers": 72, "num_attention_heads": 64, "n_shared_experts": 1, "n_routed_experts": 128,
                   "kv_lora_rank": 512, "qk_rope_head_dim": 64, "v_head_dim": 128, "qk_nope_head_dim": 64,
                   "num_experts_per_tok": 4, "first_k_dense_replace": 1, "index_topk": 2048, "index_head_dim": 128,
                   "index_n_heads": 32}  # fmt: skip
# AXK1Config's defaults (configuration_axk1.py, 5.25.0: SK Telecom's A.X K1), DeepSeek-V3's keys
_AXK1 = {"vocab_size": 163840, "hidden_size": 7168, "intermediate_size": 18432, "moe_intermediate_size": 2048,
         "num_hidden_layers": 61, "num_attention_heads": 64, "n_shared_experts": 1, "n_routed_experts": 192,
         "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 64, "v_head_dim": 128,
         "qk_nope_head_dim": 128, "num_experts_per_tok": 8}  # fmt: skip
# Glm4MoeLiteConfig's defaults (configuration_glm4_moe_lite.py, 5.24.0: GLM-4.7-Flash), DeepSeek-V3's keys
# AXK2Config's defaults (configuration_axk2.py, transformers 5.25.0: SK Telecom's A.X-K2-Light)
_AXK2 = {"vocab_size": 163840, "hidden_size": 2048, "intermediate_size": 5120, "moe_intermediate_size": 512,
         "num_hidden_layers": 48, "num_attention_heads": 32, "n_shared_experts": 1, "n_routed_experts": 128,
         "kv_lora_rank": 128, "q_lora_rank": 384, "qk_rope_head_dim": 32, "v_head_dim": 64, "qk_nope_head_dim": 64,
         "num_experts_per_tok": 8, "index_topk": 2048, "index_head_dim": 128, "index_n_heads": 16,
         "gated_norm_rank": 16}  # fmt: skip
# HYV4Config's defaults (configuration_hy_v4.py, transformers 5.25.0: Tencent's Hy4-preview)
_HY_V4 = {"vocab_size": 120832, "hidden_size": 2816, "intermediate_size": 6912, "moe_intermediate_size": 768,
          "num_hidden_layers": 34, "num_attention_heads": 32, "n_routed_experts": 256, "n_shared_experts": 1,
          "num_experts_per_tok": 8, "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 192,
          "qk_rope_head_dim": 64, "v_head_dim": 256, "index_topk": 2048, "index_head_dim": 128, "index_n_heads": 16,
          "hc_mult": 4}  # fmt: skip
# HYV4VLTextConfig's defaults (configuration_hy_v4_vl.py, 5.25.0): Hy4's layers at the VL model's larger shapes
_HY_V4_VL = {
    **_HY_V4,
    "hidden_size": 6144,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 78,
    "num_attention_heads": 64,
    "q_lora_rank": 2048,
    "index_n_heads": 32,
}
_GLM4_MOE_LITE = {"vocab_size": 154880, "hidden_size": 2048, "intermediate_size": 10240, "moe_intermediate_size": 1536,
                  "num_hidden_layers": 47, "num_attention_heads": 20, "n_shared_experts": 1, "n_routed_experts": 64,
                  "kv_lora_rank": 512, "q_lora_rank": 768, "qk_rope_head_dim": 64, "v_head_dim": 256,
                  "qk_nope_head_dim": 192, "num_experts_per_tok": 4}  # fmt: skip
# MiniCPM3Config's defaults (configuration_minicpm3.py, 5.24.0: openbmb/MiniCPM3-4B's shapes): DeepSeek-V2's MLA over a
# dense MLP in every layer, tied; v_head_dim hidden / heads unless given
_MINICPM3 = {"vocab_size": 73448, "hidden_size": 2560, "intermediate_size": 6400, "num_hidden_layers": 62,
             "num_attention_heads": 40, "kv_lora_rank": 256, "q_lora_rank": 768, "qk_nope_head_dim": 64,
             "qk_rope_head_dim": 32}  # fmt: skip
# YoutuConfig's defaults (configuration_youtu.py, 5.24.0): DeepSeek-V3's MLA over a dense MLP in every layer, tied
_YOUTU = {"vocab_size": 128256, "hidden_size": 2048, "intermediate_size": 6144, "num_hidden_layers": 32,
          "num_attention_heads": 16, "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 64,
          "v_head_dim": 128, "qk_nope_head_dim": 128}  # fmt: skip
# SarvamMLAConfig's defaults (configuration_sarvam_mla.py, 5.24.0): DeepseekV3ForCausalLM's layers, one dense layer
_SARVAM_MLA = {"vocab_size": 262144, "hidden_size": 4096, "intermediate_size": 16384, "moe_intermediate_size": 2048,
               "num_hidden_layers": 32, "num_attention_heads": 64, "n_shared_experts": 1, "n_routed_experts": 128,
               "kv_lora_rank": 512, "qk_rope_head_dim": 64, "v_head_dim": 128, "qk_nope_head_dim": 128,
               "num_experts_per_tok": 8, "first_k_dense_replace": 1}  # fmt: skip
# the names sarvamai's released files use for DeepSeek-V3's keys (SarvamMLAConfig.attribute_map)
_SARVAM_KEYS = {"n_routed_experts": ("num_experts",), "n_shared_experts": ("num_shared_experts",),
                "num_nextn_predict_layers": ("num_mtp_layers",)}  # fmt: skip
_DEEPSEEK = ("deepseek_v2", "deepseek_v3", "kimi_k2", "deepseek_v32", "glm_moe_dsa", "mistral4", "glm4_moe_lite",
             "minicpm3", "youtu", "sarvam_mla", "deepseek_ocr2_text", "axk1", "mistral_large4_text",
             "hy_v4", "hy_v4_vl_text", "axk2")  # fmt: skip
# Multimodal files that keep their text model under language_config: DeepSeek-OCR's (deepseek_vl_v2, remote code:
# DeepSeek-VL2's layout) holds a DeepseekV2 decoder there; DeepSeek-VL v1's and Janus's (multi_modality:
# deepseek-ai/Janus janus/models/modeling_vlm.py, MultiModalityCausalLM builds
# LlamaForCausalLM(LlamaConfig(**language_config)) beside its vision and generation towers) a Llama
_LANGUAGE_CONFIG = {"deepseek_vl_v2": "deepseek_v2", "multi_modality": "llama"}
_FALCON = ("falcon", "RefinedWeb", "RefinedWebModel")
_GPT = ("gpt2", "gptj", "gpt_neox", "opt", "bloom", "phi", "phi-msft", "starcoder2", "gpt_bigcode", "gpt_neo",
        "codegen", "mpt", "openai-gpt", "xglm", "biogpt", "ctrl", "persimmon", "kosmos_2_text_model",
        "gpt_neox_japanese")  # fmt: skip
# The shape defaults of the GPT-era classes that give them all (configuration_gpt_neo.py, configuration_codegen.py,
# configuration_mpt.py, transformers 5.24.0; configuration_openai.py, configuration_xglm.py, configuration_biogpt.py,
# configuration_ctrl.py, configuration_persimmon.py, 5.25.0); the others' files must name their shapes
_GPT_DEFAULTS: dict[str, dict[str, int]] = {
    "gpt_neo": {"hidden": 2048, "layers": 24, "heads": 16, "vocab": 50257},
    "codegen": {"hidden": 4096, "layers": 28, "heads": 16, "vocab": 50400},
    "mpt": {"hidden": 2048, "layers": 24, "heads": 16, "vocab": 50368},
    "openai-gpt": {"hidden": 768, "layers": 12, "heads": 12, "vocab": 40478},
    "xglm": {"hidden": 1024, "layers": 24, "heads": 16, "vocab": 256008},
    "biogpt": {"hidden": 1024, "layers": 24, "heads": 16, "vocab": 42384},
    "ctrl": {"hidden": 1280, "layers": 48, "heads": 16, "vocab": 246534},
    "persimmon": {"hidden": 4096, "layers": 36, "heads": 64, "vocab": 262144},
    "gpt_neox_japanese": {
        "hidden": 2560,
        "layers": 32,
        "heads": 32,
        "vocab": 32000,
    },  # configuration_gpt_neox_japanese.py
    "kosmos_2_text_model": {"hidden": 2048, "layers": 24, "heads": 32, "vocab": 65037},  # configuration_kosmos2.py
}
# XGLM names its heads attention_heads (XGLMConfig.attribute_map maps num_attention_heads to it)
_HEADS_KEYS = ("num_attention_heads", "n_head", "num_heads", "n_heads", "attention_heads")
# The BERT-style encoders (transformers 5.25.0, each family's configuration_*.py): their classes' shape defaults
# (vocab_size, hidden_size, num_hidden_layers, num_attention_heads, intermediate_size, max_position_embeddings,
# type_vocab_size; BertGenerationConfig has no segment table)
_BERT_DEFAULTS: dict[str, tuple[int, int, int, int, int, int, int]] = {
    "bert": (30522, 768, 12, 12, 3072, 512, 2),
    "roberta": (50265, 768, 12, 12, 3072, 512, 2),
    "xlm-roberta": (30522, 768, 12, 12, 3072, 512, 2),
    "camembert": (30522, 768, 12, 12, 3072, 512, 2),
    "data2vec-text": (30522, 768, 12, 12, 3072, 512, 2),
    "ernie": (30522, 768, 12, 12, 3072, 512, 2),
    "roberta-prelayernorm": (50265, 768, 12, 12, 3072, 512, 2),
    "xlm-roberta-xl": (250880, 2560, 36, 32, 10240, 514, 1),
    "megatron-bert": (29056, 1024, 24, 16, 4096, 512, 2),
    "bert-generation": (50358, 1024, 24, 16, 4096, 512, 0),
    "distilbert": (30522, 768, 6, 12, 3072, 512, 0),
    "mpnet": (30527, 768, 12, 12, 3072, 512, 0),
    "esm": (0, 768, 12, 12, 3072, 1026, 0),  # EsmConfig has no vocabulary of its own: a file must give it
}
# DistilBertConfig's names for the keys: its own, which its files write, and BERT's three that its attribute_map
# takes (and prefers where a file gives both); intermediate_size and hidden_act it does not read
_DISTILBERT_KEYS = {"hidden_size": ("hidden_size", "dim"), "num_hidden_layers": ("num_hidden_layers", "n_layers"),
                    "num_attention_heads": ("num_attention_heads", "n_heads"), "intermediate_size": ("hidden_dim",),
                    "hidden_act": ("activation",)}  # fmt: skip
# The families whose positions count from padding_idx + 1 (create_position_ids_from_input_ids: RoBERTa's and MPNet's
# embeddings), whose classes default pad_token_id to 1; the others' default to 0
_BERT_PADDING_OFFSET = ("roberta", "xlm-roberta", "camembert", "data2vec-text", "roberta-prelayernorm",
                        "xlm-roberta-xl", "mpnet", "esm")  # fmt: skip
# Where each family keeps its LayerNorms besides the two in every layer: after the embedding (post-norm layers, and
# RoBERTa-PreLayerNorm's), after the last layer (pre-norm layers)
_BERT_PRE_NORM = ("roberta-prelayernorm", "xlm-roberta-xl", "megatron-bert", "esm")
_BERT_NO_EMBEDDING_NORM = ("xlm-roberta-xl", "megatron-bert")  # and ESM's but with emb_layer_norm_before

_ARCHITECTURES = {
    "LlamaForCausalLM": "llama",
    "DeciLMForCausalLM": "nemotron-nas",  # Llama-3.1-Nemotron-51B's model_type deci, the same blocks
    "MistralForCausalLM": "mistral",
    "MixtralForCausalLM": "mixtral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen2MoeForCausalLM": "qwen2_moe",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "Phi3ForCausalLM": "phi3",
    "Olmo2ForCausalLM": "olmo2",
    "GptOssForCausalLM": "gpt_oss",
    "GraniteForCausalLM": "granite",
    "OlmoeForCausalLM": "olmoe",
    "Olmo3ForCausalLM": "olmo3",
    "GraniteMoeForCausalLM": "granitemoe",
    "NemotronForCausalLM": "nemotron",
    "PhimoeForCausalLM": "phimoe",
    "PhiMoEForCausalLM": "phimoe",
    "ArceeForCausalLM": "arcee",
    "ApertusForCausalLM": "apertus",
    "Apertus1p5ForConditionalGeneration": "apertus1p5",
    "Apertus1p5TextForCausalLM": "apertus1p5_text",
    "CohereForCausalLM": "cohere",
    "Cohere2ForCausalLM": "cohere2",
    "HunYuanDenseV1ForCausalLM": "hunyuan_v1_dense",
    "HunYuanMoEV1ForCausalLM": "hunyuan_v1_moe",
    "HeliumForCausalLM": "helium",
    "MiMoForCausalLM": "mimo",
    "Dots1ForCausalLM": "dots1",
    "Starcoder2ForCausalLM": "starcoder2",
    "OlmoForCausalLM": "olmo",
    "InternLM2ForCausalLM": "internlm2",
    "SmolLM3ForCausalLM": "smollm3",
    "SeedOssForCausalLM": "seed_oss",
    "Glm4ForCausalLM": "glm4",
    "Ernie4_5ForCausalLM": "ernie4_5",
    "Ernie4_5_MoeForCausalLM": "ernie4_5_moe",
    "Exaone4ForCausalLM": "exaone4",
    "Qwen2_5_VLForConditionalGeneration": "qwen2_5_vl",
    "Qwen2VLForConditionalGeneration": "qwen2_vl",
    "Mistral3ForConditionalGeneration": "mistral3",
    "MistralLarge4ForConditionalGeneration": "mistral_large4",
    "MuseSparkForConditionalGeneration": "muse_spark",
    "Step3p5ForCausalLM": "step3p5",
    "Step3p7ForConditionalGeneration": "step3p7",
    "MuseGlimmerForConditionalGeneration": "muse_glimmer",
    "Qwen3VLForConditionalGeneration": "qwen3_vl",
    "Qwen3VLMoeForConditionalGeneration": "qwen3_vl_moe",
    "Glm4vForConditionalGeneration": "glm4v",
    "Glm4vMoeForConditionalGeneration": "glm4v_moe",
    "GPTBigCodeForCausalLM": "gpt_bigcode",
    "DbrxForCausalLM": "dbrx",
    "GemmaForCausalLM": "gemma",
    "Gemma2ForCausalLM": "gemma2",
    "Gemma3ForCausalLM": "gemma3_text",
    "Gemma3ForConditionalGeneration": "gemma3",
    "Llama4ForCausalLM": "llama4_text",
    "Llama4ForConditionalGeneration": "llama4",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "DeepseekV32ForCausalLM": "deepseek_v32",
    "DeepseekV4ForCausalLM": "deepseek_v4",
    "MinistralForCausalLM": "ministral",
    "GlmForCausalLM": "glm",
    "InternLM3ForCausalLM": "internlm3",
    "Glm4MoeLiteForCausalLM": "glm4_moe_lite",
    "MiniCPM3ForCausalLM": "minicpm3",
    "ExaoneForCausalLM": "exaone",
    "CwmForCausalLM": "cwm",
    "YoutuForCausalLM": "youtu",
    "SarvamMLAForCausalLM": "sarvam_mla",
    "FlexOlmoForCausalLM": "flex_olmo",
    "GraniteMoeSharedForCausalLM": "granitemoeshared",
    "AfmoeForCausalLM": "afmoe",
    "ExaoneMoeForCausalLM": "exaone_moe",
    "KimiLinearForCausalLM": "kimi_linear",
    "ExaoneMoEForCausalLM": "exaone_moe",
    "HYV3ForCausalLM": "hy_v3",
    "SolarOpenForCausalLM": "solar_open",
    "SarvamMoEForCausalLM": "sarvam_moe",  # sarvamai/sarvam-30b's remote code
    "MiniCPM5MoEForCausalLM": "minicpm5_moe",  # the spelling MiniCPM5MoeConfig renames
    "MiniCPM5MoeForCausalLM": "minicpm5_moe",
    "Param2MoEForCausalLM": "param2moe",  # bharatgenai's remote code
    "FlintForCausalLM": "flint",
    "GraniteSWAForCausalLM": "granite_swa",
    "ChatGLMModel": "chatglm",
    "InternLMForCausalLM": "internlm",
    "PanguEmbeddedForCausalLM": "PanguEmbedded",
    "BitNetForCausalLM": "bitnet",
    "DeepseekForCausalLM": "deepseek",
    "BailingMoeForCausalLM": "bailing_moe",
    "BailingMoeV2ForCausalLM": "bailing_moe",
    "BailingMoeLinearV2ForCausalLM": "bailing_moe_linear",
    "MiniCPMForCausalLM": "minicpm",
    "BaichuanForCausalLM": "baichuan",
    "BaiChuanForCausalLM": "baichuan",
    "ChatGLMForConditionalGeneration": "chatglm",
    "MellumForCausalLM": "mellum",
    "LagunaForCausalLM": "laguna",
    "HyperCLOVAXForCausalLM": "hyperclovax",
    "LongcatFlashForCausalLM": "longcat_flash",
    "LongcatFlashNgramForCausalLM": "longcat_flash_ngram",
    "GraniteMoeSWAForCausalLM": "granitemoe_swa",
    "VaultGemmaForCausalLM": "vaultgemma",
    "Jais2ForCausalLM": "jais2",
    "NanoChatForCausalLM": "nanochat",
    "Cohere2MoeForCausalLM": "cohere2_moe",
    "Ministral3ForCausalLM": "ministral3",
    "Mistral4ForCausalLM": "mistral4",
    "GlmMoeDsaForCausalLM": "glm_moe_dsa",
    "HYV4ForCausalLM": "hy_v4",
    "HYV4VLForConditionalGeneration": "hy_v4_vl",
    "InklingForCausalLM": "inkling_text",
    "InklingForConditionalGeneration": "inkling_mm_model",
    "ErgoForCausalLM": "ergo",
    "Inkling2ForCausalLM": "inkling2_text",
    "ZayaForCausalLM": "zaya",
    "Dots3NoteForCausalLM": "dots3_note_text",
    "Dots3NoteForConditionalGeneration": "dots3_note",
    "Inkling2ForConditionalGeneration": "inkling2",
    "AXK2ForCausalLM": "axk2",
    "BailingHybridForCausalLM": "bailing_hybrid",
    "Qwen4ExpForCausalLM": "qwen4_exp_text",
    "Qwen4ExpForConditionalGeneration": "qwen4_exp",
    "Glm5NextForConditionalGeneration": "glm5_next",
    "Glm4MoeForCausalLM": "glm4_moe",
    "MiniMaxM2ForCausalLM": "minimax_m2",
    "MiniMaxForCausalLM": "minimax",
    "MiniMaxM3SparseForConditionalGeneration": "minimax_m3_vl",
    "MiniMaxM3VLForCausalLM": "minimax_m3_vl_text",
    "MiniMaxM3ForCausalLM": "minimax_m3_vl_text",  # MiniMaxAI/MiniMax-M3's own file: model_type minimax_m3, its keys
    "BambaForCausalLM": "bamba",
    "OlmoHybridForCausalLM": "olmo_hybrid",
    "Lfm3ForCausalLM": "lfm3",
    "JetNemotronForCausalLM": "jet_nemotron",
    # MiniMax's own files (model_type minimax_text_01, minimax_m1: remote code; vLLM's minimax_text_01.py runs both as
    # the same layers, lightning or softmax by attn_type_list, and an MoE)
    "MiniMaxText01ForCausalLM": "minimax",
    "MiniMaxM1ForCausalLM": "minimax",
    "GPT2LMHeadModel": "gpt2",
    "GPTJForCausalLM": "gptj",
    "GPTNeoForCausalLM": "gpt_neo",
    "CodeGenForCausalLM": "codegen",
    "MptForCausalLM": "mpt",
    "MPTForCausalLM": "mpt",
    "StableLmForCausalLM": "stablelm",
    "GPTNeoXForCausalLM": "gpt_neox",
    "GPTNeoXJapaneseForCausalLM": "gpt_neox_japanese",
    "ModernBertDecoderForCausalLM": "modernbert-decoder",
    "ModernBertForMaskedLM": "modernbert",
    "AlbertForMaskedLM": "albert",
    "DoryForCausalLM": "dory",
    "BertForMaskedLM": "bert",
    "BertLMHeadModel": "bert",
    "RobertaForMaskedLM": "roberta",
    "XLMRobertaForMaskedLM": "xlm-roberta",
    "CamembertForMaskedLM": "camembert",
    "PhiForCausalLM": "phi",
    "OPTForCausalLM": "opt",
    "BloomForCausalLM": "bloom",
    "JetMoeForCausalLM": "jetmoe",
    "JetMoEForCausalLM": "jetmoe",
    "LaraMiniForCausalLM": "lara_mini",
    "BeamForCausalLM": "beam",
    "Kolibri1ForCausalLM": "kolibri1",
    "Kolibri1_1ForCausalLM": "kolibri1_1",
    "AXK1ForCausalLM": "axk1",
    "RecurrentGemmaForCausalLM": "recurrent_gemma",
    "RwkvForCausalLM": "rwkv",
    "Zamba2ForCausalLM": "zamba2",
    "ZambaForCausalLM": "zamba",
    "xLSTMForCausalLM": "xlstm",
    # BAAI's remote-code Emu3 files (model_type Emu3): the text model's keys top-level, transformers' Emu3ForCausalLM
    "Emu3ForCausalLM": "emu3_text_model",
    "OpenAIGPTLMHeadModel": "openai-gpt",
    "XGLMForCausalLM": "xglm",
    "BioGptForCausalLM": "biogpt",
    "CTRLLMHeadModel": "ctrl",
    "PersimmonForCausalLM": "persimmon",
    "FalconForCausalLM": "falcon",
    "RWForCausalLM": "falcon",
    "QWenLMHeadModel": "qwen",
    "MambaForCausalLM": "mamba",
    "FalconMambaForCausalLM": "falcon_mamba",
    "Mamba2ForCausalLM": "mamba2",
    "NemotronHForCausalLM": "nemotron_h",
    "JambaForCausalLM": "jamba",
    "FalconH1ForCausalLM": "falcon_h1",
    "Qwen3NextForCausalLM": "qwen3_next",
    "GraniteMoeHybridForCausalLM": "granitemoehybrid",
    "MiMoV2FlashForCausalLM": "mimo_v2_flash",
    "Lfm2ForCausalLM": "lfm2",
    "Lfm2MoeForCausalLM": "lfm2_moe",
    "Gemma4ForConditionalGeneration": "gemma4",
    "Exaone4_5_ForConditionalGeneration": "exaone4_5",
    "Gemma4ForCausalLM": "gemma4_text",
    "Gemma4UnifiedForCausalLM": "gemma4_unified_text",
    "Gemma3nForCausalLM": "gemma3n_text",
    "Qwen3_5ForConditionalGeneration": "qwen3_5",
    "Qwen3_5MoeForConditionalGeneration": "qwen3_5_moe",
    "Qwen3_5ForCausalLM": "qwen3_5_text",
    "Qwen3_5MoeForCausalLM": "qwen3_5_moe_text",
}
# Multimodal classes whose files keep their text model's keys top-level (no text_config) and that build that family's
# layers from them, beside a vision tower and projector dpcost does not count: LLaVA's original releases
# (haotian-liu/LLaVA llava/model/language_model/llava_llama.py and llava_mistral.py: LlavaLlamaForCausalLM subclasses
# LlamaForCausalLM, builds LlavaLlamaModel(LlavaMetaModel, LlamaModel) from the file and an untied lm_head),
# LLaVA-NeXT's (LLaVA-VL/LLaVA-NeXT llava_qwen.py and llava_mixtral.py, over Qwen2 and Mixtral, tied as the file
# says), and Microsoft's Phi-3-vision and Phi-3.5-vision (remote modeling_phi3_v.py: Phi3VModel holds Phi-3's
# embedding, layers and norm, its vision_embed_tokens sharing the embedding)
_FLAT_MULTIMODAL = {
    "LlavaLlamaForCausalLM": "llama",
    "LlavaMistralForCausalLM": "mistral",
    "LlavaMixtralForCausalLM": "mixtral",
    "LlavaQwenForCausalLM": "qwen2",
    "Phi3VForCausalLM": "phi3",
}
# MiniCPM-V's own files (model_type minicpmv, remote code): the language model its MiniCPMV builds from the keys
# top-level, by the file's `version`, as vLLM's minicpmv.py reads them (get_version_by_config; each
# MiniCPMV<version>.init_llm): MiniCPM (2.0), Llama (2.5, 4.0), Qwen2 (2.6), Qwen3 (4.5); a file without a version is
# 2.0 where hidden_size is 2,304 and query_num 64, else 2.5
_MINICPMV_TEXT = {"2.0": "minicpm", "2.5": "llama", "2.6": "qwen2", "4.0": "llama", "4.5": "qwen3"}
# model_types whose architectures entry names a class dpcost counts, but another model: BlinkDL's RWKV-5 files keep
# transformers' RWKV-4 class name (auto_map modeling_rwkv5.RwkvForCausalLM)
_NOT_THE_ARCHITECTURE = {
    "rwkv5": "RWKV-5's time mixing adds a gate (hidden x hidden), a bonus per channel (time_faaaa) and a GroupNorm "
    "(ln_x) to RWKV-4's (mlc-llm's rwkv5_model.py RWKV5_Attention), and its remote code names its class "
    "RwkvForCausalLM as RWKV-4's; dpcost counts RWKV-4 (model_type rwkv), not RWKV-5",
}
_NESTED = {
    "llama4": "llama4_text",
    "gemma3": "gemma3_text",
    "mistral3": "mistral",
    "qwen3_vl": "qwen3_vl_text",
    "qwen3_vl_moe": "qwen3_vl_moe_text",
    "glm4v": "glm4v_text",
    "glm4v_moe": "glm4v_moe_text",
    "qwen3_5": "qwen3_5_text",
    "qwen3_5_moe": "qwen3_5_moe_text",
    "gemma4": "gemma4_text",
    "gemma3n": "gemma3n_text",
    "gemma4_unified": "gemma4_unified_text",
    "exaone4_5": "exaone4",
    "apertus1p5": "apertus1p5_text",
    "minimax_m3_vl": "minimax_m3_vl_text",
    "granite_docling": "granite",
    "hunyuan_vl": "hunyuan_v1_dense",  # HunYuanVLTextConfig is HunYuanDenseV1Config's, tied by default
    "granite4_vision": "granite",  # Granite4VisionTextConfig is GraniteConfig, its text model GraniteModel
    "glm_ocr": "glm_ocr_text",
    "qwen2_5_omni_thinker": "qwen2",
    "qwen3_omni_moe_thinker": "qwen3_vl_moe_text",
    "aria": "aria_text",
    "emu3": "emu3_text_model",
    "cohere_compass": "cohere_compass_text",
    "ernie4_5_vl_moe": "ernie4_5_vl_moe_text",
    "kosmos-2": "kosmos_2_text_model",
    "mistral_large4": "mistral_large4_text",
    "muse_spark": "muse_spark_text",
    "muse_glimmer": "muse_glimmer_text",
    "step3p7": "step3p5",
    "glm5_next": "glm5_next_text",
    "qwen4_exp": "qwen4_exp_text",
    "hy_v4_vl": "hy_v4_vl_text",
    "inkling_mm_model": "inkling_text",
    "inkling2": "inkling2_text",
    "dots3_note": "dots3_note_text",
}  # multimodal wrappers: the text model's keys
# Wrappers whose configuration class builds its own text config whatever text_config's model_type says
# (Step3p7Config.__post_init__ pops it; Glm5NextConfig builds Glm5NextTextConfig: transformers 5.25.0)
_TEXT_CLASS_FIXED = ("step3p7", "glm5_next")
# Wrappers whose configuration class takes a file without text_config as its text model's keys (Glm5NextConfig:
# "if self.text_config is None: self.text_config = kwargs"; Dots3NoteConfig: "Published checkpoints store the text
# configuration at the top level", transformers 5.25.0)
_FLAT_WRAPPERS = ("glm5_next", "dots3_note")
# A wrapper's text model_type that its configuration class renames (configuration_exaone4_5.py: exaone4_5_text is
# Exaone4Config; transformers 5.25.0's GraniteDoclingTextConfig is GraniteConfig and its text model GraniteModel)
_TEXT_ALIASES = {"exaone4_5_text": "exaone4", "granite_docling_text": "granite", "qwen2_5_omni_text": "qwen2",
                 "qwen3_omni_moe_text": "qwen3_vl_moe_text", "hunyuan_vl_text": "hunyuan_v1_dense",
                 "granite4_vision_text": "granite"}  # fmt: skip
# Omni models: the thinker (thinker_config) holds the text model (its text_config) that dpcost counts, beside the
# talker, the audio and vision towers
_OMNI = {"qwen2_5_omni": "qwen2_5_omni_thinker", "qwen3_omni_moe": "qwen3_omni_moe_thinker"}
# Wrappers whose class ties the output head by its own tie_word_embeddings, not its text_config's, and that key's
# default in the wrapper's class (transformers 5.25.0: the Omni thinkers', GraniteDoclingConfig's, PaddleOCRVLConfig's,
# Gemma4UnifiedConfig's;
# PreTrainedModel.get_expanded_tied_weights_keys reads the model's own config)
_WRAPPER_TIES = {"qwen2_5_omni_thinker": False, "qwen3_omni_moe_thinker": False, "granite_docling": True,
                 "paddleocr_vl": True, "gemma4_unified": True, "fuyu": False, "aria": False, "emu3": False,
                 "cohere_compass": False, "ernie4_5_vl_moe": True, "mistral_large4": False,
                 "muse_glimmer": False, "step3p7": False, "glm5_next": False,
                 "hy_v4_vl": False, "qwen4_exp": False, "dots3_note": False}  # fmt: skip
# Multimodal files whose text model is another family's, its keys top-level (the released files) or under text_config
# (as transformers 5 writes them): PaddleOCR-VL's language model is ERNIE-4.5-0.3B's (PaddleOCRTextConfig keeps
# Ernie4_5Config's keys and defaults, PaddleOCRTextModel its layers; transformers 5.25.0)
# Fuyu's language model is Persimmon's (FuyuConfig's text_config defaults; its vision_embed_tokens, a linear layer
# from patches, is the vision encoder left out); Baidu's own ERNIE-4.5-VL files (model_type ernie4_5_moe_vl) keep the
# text model's keys top-level, as convert_ernie4_5_vl_moe_to_hf.py reads them into text_config
_READ_AS = {"paddleocr_vl": "ernie4_5", "fuyu": "persimmon", "ernie4_5_moe_vl": "ernie4_5_vl_moe_text"}
_GLM_MINIMAX = ("glm4_moe", "glm4v_moe_text", "dots1", *_GLM4_MOE_SUBCLASSES, "minimax_m2")  # _glm4_moe, _minimax_m2
# State-space and hybrid families, read by hf_hybrid.py (the one list of them)
_HYBRID = (
    "mamba",
    "jet_nemotron",
    "falcon_mamba",
    "mamba2",
    "jamba",
    "nemotron_h",
    "qwen3_next",
    "falcon_h1",
    "granitemoehybrid",
    "qwen3_5_text",
    "qwen3_5_moe_text",
    "lfm2",
    "lfm2_moe",
    "kimi_linear",
    "minimax",
    "bamba",
    "olmo_hybrid",
    "lfm3",
    "recurrent_gemma",
    "lara_mini",
    "rwkv",
    "zamba2",
    "zamba",
    "xlstm",
    "glm5_next_text",
    "bailing_hybrid",
    "qwen4_exp_text",
)
SUPPORTED_MODEL_TYPES = tuple(
    sorted(
        {*_LLAMA_LIKE, *_GEMMA, *_NESTED, "llama4_text", "gemma4_text", "mimo_v2_flash", *_DEEPSEEK, *_GLM_MINIMAX,
         *_FALCON, *_GPT, "qwen", "dbrx", *_HYBRID, "deepseek_v4", "longcat_flash", "longcat_flash_ngram",
         "minimax_m3_vl_text", "chatglm",
         "nemotron-nas", "minicpm5_moe", "mllama_text_model", "gemma3n_text", "molmo2_text", "gemma4_unified_text",
         "jetmoe", "muse_spark_text", "muse_glimmer_text", "step3p5", "inkling_text", "ergo", "inkling2_text", "zaya",
         "dots3_note_text", "modernbert-decoder", "modernbert", "albert", "dory", "phi3small", "telechat",
         *_BERT_DEFAULTS,
         *_READ_AS,
         *_LANGUAGE_CONFIG}
    )
)  # fmt: skip


def _flat_multimodal_class(cfg: dict[str, Any]) -> str | None:
    """The multimodal class (_FLAT_MULTIMODAL, or MiniCPM-V's by its version) a file without text_config names, if
    any."""
    if cfg.get("model_type") == "minicpmv":
        return f"MiniCPM-V {_minicpmv_version(cfg)}"
    architectures = cfg.get("architectures")
    if isinstance(cfg.get("text_config"), dict) or not isinstance(architectures, list):
        return None
    return next((a for a in architectures if isinstance(a, str) and a in _FLAT_MULTIMODAL), None)


def _minicpmv_version(cfg: dict[str, Any]) -> str:
    """A MiniCPM-V file's version as vLLM's get_version_by_config reads it (_MINICPMV_TEXT)."""
    version = cfg.get("version")
    if version is None:
        return "2.0" if cfg.get("hidden_size") == 2304 and cfg.get("query_num") == 64 else "2.5"
    return str(version)


def _family(cfg: dict[str, Any], where: str) -> str:
    """The family of a config.json: its model_type, else its architectures entry."""
    model_type = cfg.get("model_type")
    if model_type is not None and not isinstance(model_type, str):
        raise InputError(where, f"model_type: expected a name such as 'llama', got {model_type!r}"[:200])
    if model_type in SUPPORTED_MODEL_TYPES:
        return str(model_type)
    if model_type == "minicpmv":
        version = _minicpmv_version(cfg)
        if version not in _MINICPMV_TEXT:
            known = ", ".join(_MINICPMV_TEXT)
            said = f"version: MiniCPM-V {version!r}"[:120]
            raise InputError(where, f"{said} is not one dpcost reads; it reads {known}")
        return _MINICPMV_TEXT[version]
    if model_type in _NOT_THE_ARCHITECTURE:
        raise InputError(where, f"model_type {model_type!r} is not a family dpcost can count: "
                                f"{_NOT_THE_ARCHITECTURE[model_type]}")  # fmt: skip
    architectures = cfg.get("architectures") or []
    if isinstance(architectures, list):
        for name in architectures:
            if isinstance(name, str) and (name in _ARCHITECTURES or name in _FLAT_MULTIMODAL):
                return _ARCHITECTURES.get(name) or _FLAT_MULTIMODAL[name]
    if cfg.get("is_encoder_decoder") is True:  # T5, BART, Whisper: no family name or spelling would make it one
        said = f"model_type {model_type!r}" if model_type else f"the config (architectures {architectures!r})"
        said = said[:200]
        raise InputError(where, f"{said} is not a family dpcost can count: an encoder-decoder (is_encoder_decoder: "
                                "true); dpcost counts decoder-only and encoder-only models")  # fmt: skip
    known = ", ".join(SUPPORTED_MODEL_TYPES)
    if not model_type:
        named = f", and its architectures {architectures!r}"[:200] + " name none dpcost knows" if architectures else ""
        raise InputError(
            where, f'the config has no model_type{named}: add "model_type" with its family, one of {known}'
        )
    said = f"model_type {model_type!r}"
    if architectures:
        said += f" (architectures {architectures!r})"
    closest = nearest(model_type, SUPPORTED_MODEL_TYPES, n=3)
    near = f" (the nearest it can: {', '.join(closest)})" if closest else ""
    raise InputError(
        where, f"{said[:200]} is not a family dpcost can count{near}; supported model_type values: {known}"
    )


def _llama_like(k: Keys, family: str) -> dict[str, Any]:
    kv_default, head_dim_default, qkv_bias, qk_norm = _LLAMA_LIKE[family]
    defaults = _LLAMA_LIKE_DEFAULTS.get(family, {})
    bias_key = {"internlm2": "bias", "internlm": "bias", "PanguEmbedded": "bias", "stablelm": "use_qkv_bias",
                "internlm3": "qkv_bias"}.get(family, "attention_bias")  # fmt: skip
    shape: dict[str, int] = _NESTED_SHAPE_DEFAULTS.get(family, {}) if k.prefix else {}
    if family == "apertus1p5_text":
        shape = {"vocab_size": 266752}
    hidden = k.integer("hidden_size", default=shape.get("hidden_size", _MISSING), field="hidden")
    layer_keys = ("num_hidden_layers", "num_layers") if family == "exaone" else ("num_hidden_layers",)
    layers = k.integer(*layer_keys, default=shape.get("num_hidden_layers", _MISSING), field="layers")
    heads = k.integer("num_attention_heads", default=shape.get("num_attention_heads", _MISSING), field="heads")
    arch: dict[str, Any] = {
        "hidden": hidden,
        "layers": layers,
        "heads": heads,
        "kv_heads": k.integer("num_key_value_heads", default=kv_default or heads, field="kv_heads"),
        "vocab": k.integer("vocab_size", default=shape.get("vocab_size", _MISSING), field="vocab"),
        "tied_embeddings": k.flag("tie_word_embeddings", defaults.get("tie_word_embeddings", False)),
        "qkv_bias": qkv_bias or (family not in _UNBIASED and k.flag(bias_key, defaults.get(bias_key, False))),
        "qk_norm": qk_norm,
    }
    if family in ("glm4v_text", "stablelm", "chameleon"):
        head_dim = None
    elif family.startswith("hunyuan") or family == "ministral":  # their attention fails without one
        head_dim = k.integer("head_dim", "attention_head_dim", field="head_dim")
    else:
        head_dim = k.integer("head_dim", default=head_dim_default, field="head_dim")
    if head_dim is not None:
        arch["head_dim"] = head_dim
    if family == "gpt_oss":
        arch["linear_bias"] = True  # o_proj and every expert's gate_up/down projections carry biases
        arch["attention_sinks"] = True  # modeling_gpt_oss.py GptOssAttention: sinks of num_attention_heads
        if k.get("swiglu_limit", default=None) is not None:  # GptOssExperts: gate and up clamped to +-limit
            arch["activation_clamp"] = k.positive("swiglu_limit", 7.0)
        arch["rope_mscale"] = _gpt_oss_rope_mscale(k)
    # (Hunyuan 3's dense and shared MLPs read mlp_bias, its experts not: refused below)
    mlp_bias_key = "bias" if family == "internlm3" else "mlp_bias"
    if family in _READS_MLP_BIAS and k.flag(mlp_bias_key, defaults.get(mlp_bias_key, False)):
        arch["linear_bias"] = True
        if family not in ("gpt_oss", "internlm3"):  # mlp_bias biases the MLP alone: o_proj's is attention_bias's
            arch.setdefault("out_bias", False)
    if family == "apertus1p5_text" and k.get("output_vocab_size", default=None) is not None:
        rows = k.integer("output_vocab_size", field="head_vocab")
        if not 1 <= rows <= arch["vocab"]:
            said = f"{k._key('output_vocab_size')}: 1 to vocab_size ({arch['vocab']}) rows, got {rows}"
            raise InputError(k.where, said)
        if rows != arch["vocab"]:
            if arch["tied_embeddings"]:
                said = f"{k._key('output_vocab_size')}: a pruned head is untied (tie_word_embeddings false), got {rows}"
                raise InputError(k.where, said)
            arch["head_vocab"] = rows
    if family == "olmo":
        arch["norm"] = "layernorm_np"
    if family in ("nemotron", "jais2", "orion"):
        arch["norm"] = "layernorm"
    if family == "nanochat":
        arch["norm"] = "layernorm_np"  # NanoChatRMSNorm (Llama 4's L2 norm) holds no weight
    if family in _TWO_MATRIX_ACTIVATIONS:  # relu2 and xIELU: two matrices, as ReLU's
        arch.update(mlp_activation(k, "hidden_act", _TWO_MATRIX_ACTIVATIONS[family]), mlp="relu")
    if family in ("apertus", "apertus1p5_text"):
        arch["activation_scalars"] = 2
    biased_out = ("llama", "qwen3", "olmo2", "olmo3", "nemotron", "phimoe", "arcee", "apertus", "apertus1p5_text",
                  "cohere", "cohere2", "cohere_compass_text",
                  "cohere2_moe", "hunyuan_v1_dense", "hunyuan_v1_moe", "internlm3", "exaone", "iquestcoder", "afmoe",
                  "hy_v3", "flint", "granite", "granitemoe", "granitemoeshared", "granite_swa", "granitemoe_swa",
                  "jais2", "nanochat", "hyperclovax", "olmo", "olmoe", "flex_olmo", "qwen3_moe", "smollm3",
                  "qwen3_vl_text", "qwen3_vl_moe_text", "mellum", "laguna", "minicpm", "deepseek",
                  "bitnet", "internlm", "PanguEmbedded", "cosmos3_edge_text", "aria_text", "aria_moe_lm",
                  "emu3_text_model", "beam",
                  "chameleon")  # fmt: skip
    if family in biased_out and k.flag(bias_key, defaults.get(bias_key, False)):
        arch["out_bias"] = True  # their attention_bias covers o_proj too (Mistral's does not: bias=False there)
    if family == "seed_oss" and k.flag("attention_out_bias", False):
        arch["out_bias"] = True
    if family == "phimoe":
        arch.update(norm="layernorm", head_bias=k.flag("lm_head_bias", False))
    if family in ("glm4", "glm4v_text", "glm_ocr_text"):
        arch["layer_norms"] = 4
    if family in ("ernie4_5", "ernie4_5_moe") and k.flag("use_bias", False):
        arch.update(qkv_bias=True, linear_bias=True)
    if family == "helium" and heads * arch["head_dim"] != hidden:
        raise InputError(k.where, f"{k._key('head_dim')}: Helium's o_proj is hidden x hidden, so heads x head_dim "
                         f"must be hidden_size ({hidden}), got {heads} x {arch['head_dim']}")  # fmt: skip
    if family == "baichuan" and hidden != 4096:
        # Baichuan 13B and Baichuan 2 13B run ALiBi, the 7Bs RoPE: their modeling files differ, not their keys, and
        # vLLM tells them apart by width (model_executor/models/baichuan.py, BaichuanForCausalLM)
        arch["alibi"] = True
    if family == "mimo":
        arch["mtp_layers"] = k.integer("num_nextn_predict_layers", default=0, field="mtp_layers")
    if family in _COHERE_LAYER_NORM:  # CohereLayerNorm: a LayerNorm's mean and variance, a weight and no bias
        arch["norm"] = "layernorm_nb"
    if family in ("cohere2", "cohere2_moe", "cohere_compass_text"):
        arch["layer_norms"] = 1
    if family == "stablelm":
        arch.update(norm="layernorm", layer_norms=1 if k.flag("use_parallel_residual", False) else 2)
        if k.flag("qk_layernorm", False):  # StableLmLayerNormPerHead: a bias-free LayerNorm per head
            arch.update(qk_norm="full", qk_norm_bias=False)
    if family == "chameleon":
        arch["qk_norm_bias"] = True
    if family == "cohere":
        arch["layer_norms"] = 1
        if k.flag("use_qk_norm", False):
            arch["qk_norm"] = "full"  # weights of (heads, head_dim) and (kv_heads, head_dim): every head its own
    if family in ("kolibri1", "kolibri1_1"):  # Kolibri1SparseMoeBlock in every layer, under Glm4DecoderLayer's 4 norms
        arch["layer_norms"] = 4
        arch["moe"] = {
            "experts": k.integer("num_experts", default=384, field="moe.experts"),
            "active": k.integer("num_experts_per_tok", default=6, field="moe.active"),
            "ffn": k.integer("moe_intermediate_size", default=512, field="moe.ffn"),
            "shared": 1,
            "shared_ffn": k.integer("shared_expert_intermediate_size", default=512, field="moe.shared_ffn"),
            "router_bias": True,
        }
        if family == "kolibri1_1":  # kv-shared indexed layers; a dense MLP of its own width in mlp_only_layers
            _, mixers = _kolibri1_1_layers(k, layers)
            if set(mixers) != {"attention"}:
                arch["mixers"] = tuple(mixers)
            listed = k.get("mlp_only_layers", default=None) is not None
            dense = k.layers("mlp_only_layers") if listed else tuple(i for i in (0, 1) if i < layers)
            if any(not 0 <= i < layers for i in dense):
                said = f"layer indices from 0 to {layers - 1}, got {list(dense)!r}"
                raise InputError(k.where, f"{k._key('mlp_only_layers')}: {said}"[:200])
            arch["moe"]["dense_layers"] = dense
            if dense:
                arch["ffn"] = k.integer("mlp_only_intermediate_size", default=3584, field="ffn")
        return arch
    if family in ("aria_text", "aria_moe_lm"):  # a MoE layer in every layer; mlp_bias biases its shared MLP alone
        if k.flag("mlp_bias", False):
            raise InputError(k.where, f"{k._key('mlp_bias')}: Aria's shared MLP takes biases and its experts none, "
                             "which dpcost does not count apart; false (as released) is counted")  # fmt: skip
        width_key = "moe_intermediate_size" if family == "aria_moe_lm" else "intermediate_size"
        ffn = k.integer(width_key, default=4096, field="moe.ffn")
        arch["ffn"] = ffn
        arch["moe"] = {
            "experts": k.integer("moe_num_experts", default=8, field="moe.experts"),
            "active": k.integer("moe_topk", default=2, field="moe.active"),
            "ffn": ffn,
        }
        shared = _shared_experts(k, 2)
        if shared:
            arch["moe"].update(shared=1, shared_ffn=ffn * shared)
        return arch
    if family == "hunyuan_v1_moe":  # HunYuanMoEV1Moe in every layer: experts and one shared MLP of intermediate_size
        ffn = k.integer("intermediate_size", default=11008, field="moe.ffn")
        arch["ffn"] = ffn
        arch["moe"] = {
            "experts": k.integer("num_experts", "num_local_experts", default=1, field="moe.experts"),
            "active": _uniform(k, "moe_topk", "num_experts_per_tok", default=1, field="moe.active"),
            "ffn": ffn,
            "shared": 1,
        }
        return arch
    if family == "bitnet":
        arch.update(layer_norms=3, mlp_norm=True)
    if family == "hyperclovax" and k.flag("use_post_norm", True):
        arch["layer_norms"] = 4  # input, post_norm1, post_attention, post_norm2
    if family in ("granite_swa", "granitemoe_swa"):
        arch["attention_sinks"] = True  # GraniteSWAAttention.sinks, one per head
    if family in ("mixtral", "gpt_oss", "olmoe", "granitemoe", "phimoe", "flex_olmo", "granitemoeshared",
                  "granitemoe_swa"):  # fmt: skip
        by_num_experts = family in ("olmoe", "flex_olmo")
        arch["moe"] = {
            # OlmoeSparseMoeBlock, GraniteMoeMoE: experts of intermediate_size, a router without bias, no shared one
            "experts": k.integer("num_experts" if by_num_experts else "num_local_experts", field="moe.experts"),
            "active": k.integer("num_experts_per_tok", "experts_per_token", field="moe.active"),
            "ffn": k.integer("intermediate_size", field="moe.ffn"),
            "router_bias": family == "gpt_oss",  # gpt-oss's router is a Linear with bias
        }
        shared = k.integer("shared_intermediate_size", default=0, field="moe.shared_ffn")
        if family in ("granitemoeshared", "granitemoe_swa") and shared:
            arch["moe"].update(shared=1, shared_ffn=shared)
        return arch
    if family == "deepseek" and k.get("n_routed_experts", default=None) is not None:
        if k.integer("moe_layer_freq", default=1) != 1:
            said = f"{k._key('moe_layer_freq')}: only 1 (an MoE in every layer past first_k_dense_replace) is counted"
            raise InputError(k.where, f"{said}, got {k.cfg['moe_layer_freq']!r}"[:200])
        arch["ffn"] = k.integer("intermediate_size", field="ffn")
        arch["moe"] = dense_then_experts(
            k,
            layers,
            experts=k.integer("n_routed_experts", field="moe.experts"),
            active=k.integer("num_experts_per_tok", field="moe.active"),
            ffn=k.integer("moe_intermediate_size", field="moe.ffn"),
            shared=k.integer("n_shared_experts", default=0, field="moe.shared"),
            first=k.integer("first_k_dense_replace", default=0, field="moe.first_dense_layers"),
            by_types=False,
        )
        return arch
    if family in ("bailing_moe", "bailing_moe_v2", "bailing_moe_linear"):
        if k.flag("use_bias", False):  # the class defaults it true; every released file sets it false
            said = "true (a bias on the attention's output, and in some ports on every expert) is not counted"
            raise InputError(k.where, f"{k._key('use_bias')}: {said}; Ling's and Ring's released files set it false")
        arch["qkv_bias"] = k.flag("use_qkv_bias", False)
        if k.flag("use_qk_norm", False):
            arch["qk_norm"] = "head"
        arch["ffn"] = k.integer("intermediate_size", field="ffn")
        expert_ffn = k.integer("moe_intermediate_size", field="moe.ffn")
        arch["moe"] = dense_then_experts(
            k,
            layers,
            experts=k.integer("num_experts", field="moe.experts"),
            active=k.integer("num_experts_per_tok", field="moe.active"),
            ffn=expert_ffn,
            shared=0,  # its width is its own (below)
            first=k.integer("first_k_dense_replace", default=0, field="moe.first_dense_layers"),
            by_types=False,
        )
        shared = k.integer("num_shared_experts", default=0, field="moe.shared")
        if shared and k.flag("moe_router_enable_shared_expert", True):
            width = k.integer("moe_shared_expert_intermediate_size", default=expert_ffn, field="moe.shared_ffn")
            arch["moe"].update(shared=1, shared_ffn=width * shared)
        arch["moe"]["router_bias"] = k.flag("moe_router_enable_expert_bias", False)  # the gate's expert_bias
        if family == "bailing_moe_linear":
            arch.update(_ring_linear(k, layers, arch["heads"], arch.get("head_dim") or arch["hidden"] // arch["heads"]))
        return arch
    if family == "minicpm" and k.integer("num_experts", default=0) > 0:
        # MiniCPM-MoE (openbmb's remote modeling_minicpm.py, as vLLM's minicpm.py and mlc-llm's minicpm_model.py port
        # it: MiniCPMDecoderLayer takes MiniCPMMoE for its MLP wherever num_experts is set): a router (hidden ->
        # num_experts, no bias) over gated experts of intermediate_size, num_experts_per_tok of them a token
        arch["moe"] = {
            "experts": k.integer("num_experts", field="moe.experts"),
            "active": k.integer("num_experts_per_tok", field="moe.active"),
            "ffn": k.integer("intermediate_size", field="moe.ffn"),
        }
        return arch
    if family == "laguna":
        _laguna_heads(k, arch, layers)
        gating = k.get("gating", default=True)
        if gating is True or gating == "per-head":
            arch["head_gate"] = True
        else:
            arch["attention_gate"] = True  # a gate per channel: g_proj hidden -> heads x head_dim
    if family == "beam":
        arch.update(attention_gate=True, attention_gate_head_bias=True, layer_norms=4)
        arch["ffn"] = k.integer("intermediate_size", default=20480, field="ffn")
        arch["moe"] = dense_then_experts(  # mlp_layer_types, else BeamConfig.__post_init__'s first three dense
            k,
            layers,
            experts=k.integer("num_experts", default=256, field="moe.experts"),
            active=k.integer("num_experts_per_tok", default=8, field="moe.active"),
            ffn=k.integer("moe_intermediate_size", default=2560, field="moe.ffn"),
            shared=0,
            first=3,
        )
        arch["moe"]["router_bias"] = True
        return arch
    if family in ("mellum", "laguna"):
        laguna = family == "laguna"
        arch["ffn"] = k.integer("intermediate_size", default=8192 if laguna else 7168, field="ffn")
        arch["moe"] = dense_then_experts(  # mlp_layer_types, else Laguna's dense first layer (Mellum: none)
            k,
            layers,
            experts=k.integer("num_experts", default=256 if laguna else 64, field="moe.experts"),
            active=k.integer("num_experts_per_tok", default=8, field="moe.active"),
            ffn=k.integer("moe_intermediate_size", default=512 if laguna else 896, field="moe.ffn"),
            shared=0,  # Laguna's shared MLP has a width of its own, set below
            first=1 if laguna else 0,
        )
        arch["moe"]["router_bias"] = laguna  # LagunaTopKRouter.e_score_correction_bias, a parameter
        shared = k.integer("shared_expert_intermediate_size", default=512, field="moe.shared_ffn") if laguna else 0
        if shared:
            arch["moe"].update(shared=1, shared_ffn=shared)
        return arch
    if family == "solar_open":  # SolarOpenMoE in every layer: no dense MLP, no intermediate_size read
        arch["moe"] = dense_then_experts(
            k,
            layers,
            experts=k.integer("n_routed_experts", "num_local_experts", default=128, field="moe.experts"),
            active=k.integer("num_experts_per_tok", default=8, field="moe.active"),
            ffn=k.integer("moe_intermediate_size", default=1280, field="moe.ffn"),
            shared=k.integer("n_shared_experts", default=1, field="moe.shared"),
            first=0,
            by_types=False,
        )
        return arch
    arch["ffn"] = k.integer("intermediate_size", default=shape.get("intermediate_size", _MISSING), field="ffn")
    if family in ("exaone_moe", "hy_v3"):
        hy = family == "hy_v3"
        if hy and k.flag("mlp_bias", False):
            said = "true (biases on the dense and shared MLPs, not the experts, as modeling_hy_v3.py builds them)"
            raise InputError(k.where, f"{k._key('mlp_bias')}: {said} is not counted")
        arch["moe"] = dense_then_experts(
            k,
            layers,
            experts=k.integer("num_experts", "num_local_experts", default=192 if hy else 64, field="moe.experts"),
            active=k.integer("num_experts_per_tok", default=8, field="moe.active"),
            ffn=k.integer("moe_intermediate_size", default=1536 if hy else 1024, field="moe.ffn"),
            shared=k.integer("num_shared_experts", default=1, field="moe.shared"),
            first=1 if hy else k.integer("first_k_dense_replace", default=1, field="moe.first_dense_layers"),
        )
        return arch
    if family == "cohere2_moe":
        arch["moe"] = dense_then_experts(
            k,
            layers,
            experts=k.integer("num_experts", default=8, field="moe.experts"),
            active=k.integer("num_experts_per_tok", default=2, field="moe.active"),
            ffn=arch["ffn"],
            shared=k.integer("num_shared_experts", default=0, field="moe.shared"),
            first=k.integer("first_k_dense_replace", default=0, field="moe.first_dense_layers"),
        )
        arch["ffn"] = k.integer("prefix_dense_intermediate_size", default=None, field="ffn") or arch["ffn"]
        return arch
    if family == "afmoe":
        arch.update(attention_gate=True, layer_norms=4)
        arch["moe"] = dense_then_experts(
            k,
            layers,
            experts=k.integer("num_experts", default=64, field="moe.experts"),
            active=k.integer("num_experts_per_tok", default=6, field="moe.active"),
            ffn=k.integer("moe_intermediate_size", default=1408, field="moe.ffn"),
            shared=k.integer("num_shared_experts", default=2, field="moe.shared"),
            first=k.integer("num_dense_layers", default=1, field="moe.first_dense_layers"),
            by_types=False,
        )
        arch["moe"]["router_bias"] = True  # AfmoeSparseMoeBlock.expert_bias, a parameter (requires_grad False)
        return arch
    flint = family == "flint"
    if flint:
        arch["attention_sinks"] = True  # FlintAttention.sinks, one per head
    if family in ("qwen2_moe", "qwen3_moe", "qwen3_vl_moe_text", "flint") and k.get("num_experts", default=0):
        shared = k.integer("shared_expert_intermediate_size", default=1024 if flint else 0, field="moe.shared_ffn")
        listed = not flint or k.cfg.get("mlp_only_layers") is not None
        dense = k.layers("mlp_only_layers") if listed else tuple(i for i in (0, 1) if i < layers)  # Flint's default
        arch["moe"] = {
            "experts": k.integer("num_experts", field="moe.experts"),
            "active": k.integer("num_experts_per_tok", field="moe.active"),
            "ffn": k.integer("moe_intermediate_size", field="moe.ffn"),
            "every": k.integer("decoder_sparse_step", default=1, field="moe.every"),
            "dense_layers": dense,
        }
        if shared:
            arch["moe"].update(shared=1, shared_ffn=shared, shared_gate=not flint)  # Flint adds it without a gate
    if family == "ernie4_5_vl_moe_text":
        if k.flag("use_bias", False):
            raise InputError(k.where, f"{k._key('use_bias')}: true biases the attention, dense and shared MLPs but not "
                             "the experts (modeling_ernie4_5_vl_moe.py), which dpcost does not count apart; false (as "
                             "released) is counted")  # fmt: skip
        widths = k.get("moe_intermediate_size", default=[1536, 512])
        if not (isinstance(widths, list) and len(widths) == 2 and all(type(w) is int and w > 0 for w in widths)):
            said = f"{k._key('moe_intermediate_size')}: the text and the vision experts' widths, two whole numbers"
            raise InputError(k.where, f"{said}, got {widths!r}"[:200])
        experts = _ernie_vl_experts(k)
        baidu = k.cfg.get("model_type") == "ernie4_5_moe_vl"  # Baidu's own file: its keys, converted as transformers'
        shared = _shared_experts(k, 0 if baidu else 2)
        arch["moe"] = dense_then_experts(  # mlp_layer_types, else Ernie4_5_VLMoeTextConfig's dense first layer
            k,
            layers,
            experts=experts,
            active=k.integer("moe_k", default=6, field="moe.active"),
            ffn=widths[0],
            shared=shared,  # Baidu's files may leave it out; the conversion writes null as 0, the class's default 2
            first=1,
        )
        if baidu and k.get("mlp_layer_types", default=None) is None:
            arch["moe"].update(first_dense_layers=0, dense_layers=_ernie_vl_legacy_dense_layers(k, layers))
        arch["moe"].update(router_bias=True, vision_experts=experts, vision_ffn=widths[1])
    if family == "ernie4_5_moe" and k.get("moe_num_experts", default=64):
        start = k.integer("moe_layer_start_index", default=1, field="moe.first_dense_layers")
        end = k.integer("moe_layer_end_index", default=-1)
        end = layers - 1 if end == -1 else end
        shared_experts = k.integer("moe_num_shared_experts", default=2, field="moe.shared")
        moe_ffn = k.integer("moe_intermediate_size", default=1536, field="moe.ffn")
        arch["moe"] = {
            "experts": k.integer("moe_num_experts", default=64, field="moe.experts"),
            "active": k.integer("moe_k", default=6, field="moe.active"),
            "ffn": moe_ffn,
            "first_dense_layers": start,
            "every": k.integer("moe_layer_interval", default=1, field="moe.every"),
            "dense_layers": tuple(range(max(end + 1, start), layers)),
            "router_bias": True,  # Ernie4_5_MoeStatics.e_score_correction_bias, a parameter per expert
        }
        if shared_experts:
            arch["moe"].update(shared=1, shared_ffn=moe_ffn * shared_experts)
    return arch


def _shared_experts(k: Keys, default: int) -> int:
    """moe_num_shared_experts (Aria's, ERNIE-4.5-VL's): the expert widths their one shared MLP spans, 0 for none."""
    shared = int(k.integer("moe_num_shared_experts", default=default, field="moe.shared"))
    if shared < 0:
        raise InputError(k.where, f"{k._key('moe_num_shared_experts')}: a whole number from 0, got {shared}")
    return shared


def _ernie_vl_experts(k: Keys) -> int:
    """ERNIE-4.5-VL's experts per modality: moe_num_experts, which Baidu's files give per modality, [text, vision]:
    its first entry, as convert_ernie4_5_vl_moe_to_hf.py takes it ("the same for both modalities")."""
    value = k.get("moe_num_experts", default=64, field="moe.experts")
    if isinstance(value, list) and value:
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        got = k.cfg.get("moe_num_experts")
        said = f"{k._key('moe_num_experts')}: a whole number from 1, or one per modality ([text, vision]), got {got!r}"
        raise InputError(k.where, said[:200])
    return value


def _ernie_vl_legacy_dense_layers(k: Keys, layers: int) -> tuple[int, ...]:
    """The dense layers of Baidu's own ERNIE-4.5-VL files (model_type ernie4_5_moe_vl), as
    convert_ernie4_5_vl_moe_to_hf.py derives mlp_layer_types: a layer is sparse where (i + 1) % moe_layer_interval is
    0 and i lies from the least moe_layer_start_index to the greatest moe_layer_end_index (per modality, or one
    number). No end, or -1, is the last layer, as ERNIE 4.5's own code reads it (the script's max() would make a
    lone -1 end every MoE layer before the first, and it reads no file without the key)."""

    def bound(key: str, default: int, pick: Any) -> int:
        value = k.get(key, default=default)
        values = value if isinstance(value, list) else [value]
        if not values or any(isinstance(v, bool) or not isinstance(v, int) for v in values):
            raise InputError(k.where, f"{k._key(key)}: a layer index, or one per modality, got {value!r}"[:200])
        return int(pick(values))

    start, end = bound("moe_layer_start_index", 1, min), bound("moe_layer_end_index", -1, max)
    end = layers - 1 if end < 0 else end
    interval = k.integer("moe_layer_interval", default=1, field="moe.every")
    if interval < 1:
        raise InputError(k.where, f"{k._key('moe_layer_interval')}: a whole number from 1, got {interval}")
    return tuple(i for i in range(layers) if not ((i + 1) % interval == 0 and start <= i <= end))


def _uniform(k: Keys, *keys: str, default: int, field: str) -> int:
    """A whole number a config may also give per layer, as a list (Hunyuan's moe_topk): all its entries equal."""
    value = k.get(*keys, default=default, field=field)
    if isinstance(value, list) and value and all(v == value[0] for v in value):
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, int):
        key = next((key for key in keys if key in k.cfg), keys[0])
        said = f"{k._key(key)}: expected a whole number, or one repeated per layer, got {value!r}"
        raise InputError(k.where, said[:200])
    return value


def dimensions(k: Keys, d: dict[str, int]) -> dict[str, Any]:
    """Hidden size, layers, heads, KV heads, vocabulary and (where the family has a default for it) head_dim from
    transformers' usual keys, each key left out at the family's default in `d`."""
    out: dict[str, Any] = {
        "hidden": k.integer("hidden_size", default=d["hidden_size"], field="hidden"),
        "layers": k.integer("num_hidden_layers", default=d["num_hidden_layers"], field="layers"),
        "heads": k.integer("num_attention_heads", default=d["num_attention_heads"], field="heads"),
        "kv_heads": k.integer("num_key_value_heads", default=d["num_key_value_heads"], field="kv_heads"),
        "vocab": k.integer("vocab_size", default=d["vocab_size"], field="vocab"),
    }
    if "head_dim" in d:
        out["head_dim"] = k.integer("head_dim", default=d["head_dim"], field="head_dim")
    return out


def _gemma(k: Keys, family: str) -> dict[str, Any]:
    """GemmaForCausalLM, Gemma2, Gemma3 text: a gated GELU MLP (GeGLU, gate/up/down), tied embeddings by default,
    head_dim given; Gemma 2 and 3 wrap each sub-layer in two norms (4 per block), Gemma 3 adds q/k norms. Their
    RMSNorm multiplies its weight in fp32 before casting (modeling_gemma.py GemmaRMSNorm)."""
    d = _GEMMA[family]
    return {
        **dimensions(k, d),
        "ffn": k.integer("intermediate_size", default=d["intermediate_size"], field="ffn"),
        "tied_embeddings": k.flag("tie_word_embeddings", True),
        "mlp": "geglu",
        "qkv_bias": k.flag("attention_bias", False),
        "out_bias": k.flag("attention_bias", False),  # GemmaAttention's o_proj takes attention_bias too
        "layer_norms": 2 if family in ("gemma", "vaultgemma") else 4,
        "qk_norm": "head" if family == "gemma3_text" else "none",
        "norm_in_fp32": True,
    }


# Gemma4TextConfig's defaults (configuration_gemma4.py, transformers 5.24.0 and 5.25.0); global_head_dim is a
# keyword its __post_init__ pops with 512 when absent
_GEMMA4 = {"vocab_size": 262144, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 30,
           "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "global_head_dim": 512,
           "hidden_size_per_layer_input": 256, "vocab_size_per_layer_input": 262144}  # fmt: skip


def _kv_shared_layers(k: Keys, types: list[str], default: int) -> int:
    """num_kv_shared_layers of Gemma 4 and Gemma 3n, checked as their configs' kv_sharing_modes check it: fewer than
    the layers, and each layer type among the last ones made earlier by a layer of its own."""
    layers, shared = len(types), k.integer("num_kv_shared_layers", default=default)
    if not 0 <= shared < layers:
        raise InputError(k.where, f"{k._key('num_kv_shared_layers')}: {shared}: from 0 to {layers - 1} "
                         "(num_hidden_layers - 1); every layer sharing a cache is an assistant model that reads "
                         "another model's, which dpcost does not cost")  # fmt: skip
    if not set(types[layers - shared :]) <= set(types[: layers - shared]):
        raise InputError(k.where, f"{k._key('num_kv_shared_layers')}: {shared}: each kind of layer among the "
                         f"last {shared} needs one before them whose keys and values it reuses")  # fmt: skip
    return int(shared)


def _gemma4_global_shape(k: Keys, types: list[str], head_dim: int, kv_heads: int) -> tuple[int, int] | None:
    """The full-attention layers' head_dim and KV heads from per_layer_config, the sparse map of layer index to the
    attributes that differ there (PretrainedConfig's HeterogeneousConfigMixin; Gemma4TextConfig writes it from
    global_head_dim and num_global_key_value_heads since transformers 5.25.0, and Gemma4TextAttention reads each
    layer's head_dim and num_key_value_heads from it). None without the key. dpcost counts one shape for every
    full-attention layer: overrides of other keys, of sliding layers, or that differ between full layers are
    refused by key."""
    given = k.get("per_layer_config", default=None)
    if given is None:
        return None
    key = k._key("per_layer_config")
    if not isinstance(given, dict):
        raise InputError(k.where, f"{key}: a mapping of layer index to the keys that differ there, got {given!r}"[:300])
    shapes: dict[int, tuple[int, int]] = {}
    for index, override in given.items():
        i = int(index) if isinstance(index, int | str) and str(index).isdigit() else -1
        if not 0 <= i < len(types) or not isinstance(override, dict):
            said = f"{key}: {index!r}: a layer index from 0 to {len(types) - 1} mapped to the keys that differ there"
            raise InputError(k.where, said[:300])
        if set(override) - {"head_dim", "num_key_value_heads"} or types[i] != "full_attention":
            said = (
                f"{key}.{index}: {override!r}: dpcost counts head_dim and num_key_value_heads of full-attention layers"
            )
            raise InputError(k.where, said[:300])
        h, kv = override.get("head_dim", head_dim), override.get("num_key_value_heads", kv_heads)
        if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (h, kv)):
            raise InputError(k.where, f"{key}.{index}: {override!r}: positive whole numbers"[:300])
        shapes[i] = (h, kv)
    full = [i for i, t in enumerate(types) if t == "full_attention"]
    found = {shapes.get(i, (head_dim, kv_heads)) for i in full}
    if len(found) > 1:
        said = f"{key}: full-attention layers of different shapes {sorted(found)} are not counted by dpcost"
        raise InputError(k.where, said[:300])
    return found.pop()


def _gemma4(k: Keys) -> dict[str, Any]:
    """Gemma4TextModel (modeling_gemma4.py, transformers 5.24.0): Gemma 3's layers (GeGLU, 4 norms, per-head q/k
    norms; v_norm has no weight) with full-attention layers of their own shape among sliding ones. layer_types (else
    five sliding to one full, the last layer full) marks them; they attend with global_head_dim and, where
    attention_k_eq_v, num_global_key_value_heads KV heads and no v_proj (global_attention). With enable_moe_block
    every layer adds experts beside its dense MLP: the dense MLP counts as one shared expert of intermediate_size,
    the router's scale (hidden) and per_expert_scale (experts) as shared_gate and router_bias (the same
    parameters), and 3 more norms. The E-series' per-layer embeddings (hidden_size_per_layer_input, whose default
    is 256; 0 in the 26B and 31B) are per_layer_input; the last num_kv_shared_layers layers are kv-shared (no k_proj,
    v_proj or k_norm: transformers 5.5.2 on; 5.5.0 and 5.5.1 built them), with twice intermediate_size where
    use_double_wide_mlp (E2B). Gemma 4 Unified's text model (gemma4_unified_text, transformers 5.25.0:
    google/gemma-4-12B-it) is these layers without per-layer embeddings or experts (its class drops their keys)."""
    d = _GEMMA4
    unified = k.family == "gemma4_unified_text"
    dims = dimensions(k, d)
    layers = dims["layers"]
    per_layer_width = (
        0
        if unified
        else k.integer(
            "hidden_size_per_layer_input", default=d["hidden_size_per_layer_input"], field="per_layer_input.width"
        )
    )
    if per_layer_width < 0:
        raise InputError(k.where, f"{k._key('hidden_size_per_layer_input')}: {per_layer_width}: 0 (no per-layer "
                         "embeddings, as the 26B and 31B give) or more")  # fmt: skip
    types = per_layer(k, "layer_types", layers, {"sliding_attention", "full_attention"})
    if types is None:
        types = ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(layers)]
    types = [*types[:-1], "full_attention"]  # Gemma4TextConfig forces the last layer to full attention
    shared = _kv_shared_layers(k, types, default=0)
    own = ["global attention" if t == "full_attention" else "attention" for t in types]
    mixers = [m if i < layers - shared else KV_SHARED + m for i, m in enumerate(own)]
    values_from_keys = k.flag("attention_k_eq_v", False)
    global_kv = k.integer("num_global_key_value_heads", default=None, field="global_attention.kv_heads")
    global_head_dim = k.integer("global_head_dim", default=d["global_head_dim"], field="global_attention.head_dim")
    # per_layer_config takes the global KV heads only with attention_k_eq_v (configuration_gemma4.py)
    global_kv = global_kv if values_from_keys and global_kv is not None else dims["kv_heads"]
    shape = _gemma4_global_shape(k, types, dims["head_dim"], dims["kv_heads"])
    if shape is not None:  # written since 5.25.0 in place of global_head_dim and num_global_key_value_heads
        global_head_dim, global_kv = shape
    arch: dict[str, Any] = {
        **dims,
        "ffn": k.integer("intermediate_size", default=d["intermediate_size"], field="ffn"),
        "tied_embeddings": k.flag("tie_word_embeddings", True),
        "mlp": "geglu",
        "qkv_bias": k.flag("attention_bias", False),
        **({"out_bias": True} if k.flag("attention_bias", False) else {}),
        "layer_norms": 4,
        "qk_norm": "head",
        "norm_in_fp32": True,  # Gemma4RMSNorm: normed_output * self.weight.float(), then cast
        "stores_last_kv": True,  # Gemma4TextConfig.kv_sharing_modes: the last of each kind "store"s, read or not
        "mixers": tuple(mixers),
        "global_attention": {"head_dim": global_head_dim, "kv_heads": global_kv, "values_from_keys": values_from_keys},
    }
    if per_layer_width:
        arch["per_layer_input"] = {
            "width": per_layer_width,
            "vocab": k.integer("vocab_size_per_layer_input", default=d["vocab_size_per_layer_input"],
                               field="per_layer_input.vocab"),
        }  # fmt: skip
    moe = not unified and k.flag("enable_moe_block", False)
    if shared and k.flag("use_double_wide_mlp", False):
        if moe:  # the dense MLP beside the experts is double-wide there too
            raise InputError(k.where, f"{k._key('use_double_wide_mlp')}: true with enable_moe_block and kv-shared "
                             "layers (a dense MLP twice as wide beside their experts) is not counted by dpcost; "
                             "allowed: false, as every released Gemma 4 gives with experts")  # fmt: skip
        arch["kv_shared_ffn"] = 2 * arch["ffn"]
    if moe:
        arch["layer_norms"] = 7  # pre_feedforward_layernorm_2, post_feedforward_layernorm_1 and _2
        arch["moe"] = {
            "experts": k.integer("num_experts", field="moe.experts"),
            "active": k.integer("top_k_experts", field="moe.active"),
            "ffn": k.integer("moe_intermediate_size", field="moe.ffn"),
            "shared": 1,
            "shared_ffn": arch["ffn"],
            "shared_gate": True,
            "router_bias": True,
        }
    return arch


# Gemma3nTextConfig's defaults (configuration_gemma3n.py, transformers 5.25.0: google/gemma-3n-E4B's text model)
_GEMMA3N = {"vocab_size": 262400, "hidden_size": 2048, "intermediate_size": 16384, "num_hidden_layers": 35,
            "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 256, "vocab_size_per_layer_input": 262144,
            "hidden_size_per_layer_input": 256, "altup_num_inputs": 4, "num_kv_shared_layers": 15,
            "laurel_rank": 64}  # fmt: skip


def _gemma3n_layer_types(k: Keys, layers: int) -> list[str]:
    """layer_types, else Gemma3nTextConfig's: every fifth layer full attention, the others sliding."""
    types = per_layer(k, "layer_types", layers, {"sliding_attention", "full_attention"})
    return types or ["full_attention" if (i + 1) % 5 == 0 else "sliding_attention" for i in range(layers)]


def _gemma3n(k: Keys) -> dict[str, Any]:
    """Gemma3nTextModel (modeling_gemma3n.py, transformers 5.25.0; Gemma3nTextConfig's defaults are E4B's): Gemma 4
    E-series' layers (GeGLU, 4 norms, q/k norms per head, a weightless v_norm, per-layer embeddings of
    hidden_size_per_layer_input from a table of vocab_size_per_layer_input rows, the last num_kv_shared_layers
    layers without k_proj, v_proj or k_norm) with sliding and full attention of one shape (layer_types, else every
    fifth full), an MLP width per layer where intermediate_size is a list, and AltUp's altup_num_inputs copies of
    the hidden state with a LAuReL residual of laurel_rank (AltUpSpec). activation_sparsity_pattern holds nothing:
    its top-k masks the gate's output."""
    d = _GEMMA3N
    dims = dimensions(k, d)
    layers = dims["layers"]
    widths = k.get("intermediate_size", default=d["intermediate_size"], field="ffn")
    if isinstance(widths, list):
        if len(widths) != layers or not all(isinstance(w, int) and not isinstance(w, bool) and w > 0 for w in widths):
            said = f"{k._key('intermediate_size')}: a positive width, or one per layer ({layers}), got {widths!r}"
            raise InputError(k.where, said[:300])
        uniform = len(set(widths)) == 1
    elif isinstance(widths, bool) or not isinstance(widths, int) or widths <= 0:
        raise InputError(k.where, f"{k._key('intermediate_size')}: a positive width, got {widths!r}"[:300])
    types = _gemma3n_layer_types(k, layers)
    shared = _kv_shared_layers(k, types, default=d["num_kv_shared_layers"])
    inputs = k.integer("altup_num_inputs", default=d["altup_num_inputs"], field="altup.inputs")
    rank = k.integer("laurel_rank", default=d["laurel_rank"], field="altup.laurel_rank")
    per_layer_width = k.integer(
        "hidden_size_per_layer_input", default=d["hidden_size_per_layer_input"], field="per_layer_input.width"
    )
    arch: dict[str, Any] = {
        **dims,
        "tied_embeddings": k.flag("tie_word_embeddings", True),
        "mlp": "geglu",
        "qkv_bias": k.flag("attention_bias", False),
        **({"out_bias": True} if k.flag("attention_bias", False) else {}),
        "layer_norms": 4,
        "qk_norm": "head",
        "norm_in_fp32": True,  # Gemma3nRMSNorm: normed_output * self.weight.float(), then cast
        "mixers": tuple("attention" if i < layers - shared else KV_SHARED + "attention" for i in range(layers)),
        "altup": {"inputs": inputs, "laurel_rank": rank},
        "per_layer_input": {
            "width": per_layer_width,
            "vocab": k.integer("vocab_size_per_layer_input", default=d["vocab_size_per_layer_input"],
                               field="per_layer_input.vocab"),
        },
    }  # fmt: skip
    if isinstance(widths, list) and not uniform:
        arch["ffn_widths"] = tuple(widths)
    else:
        arch["ffn"] = widths[0] if isinstance(widths, list) else widths
    return arch


# MiMoV2FlashConfig's defaults (configuration_mimo_v2_flash.py, transformers 5.24.0)
_MIMO_V2_FLASH = {"vocab_size": 152576, "hidden_size": 4096, "intermediate_size": 16384, "num_hidden_layers": 48,
                  "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 192, "v_head_dim": 128,
                  "moe_intermediate_size": 2048, "n_routed_experts": 256, "num_experts_per_tok": 8}  # fmt: skip


def _mimo_v2_flash(k: Keys) -> dict[str, Any]:
    """MiMoV2FlashForCausalLM (modeling_mimo_v2_flash.py, transformers 5.24.0): sliding-window layers with twice
    num_key_value_heads KV heads (hard-coded; swa_num_key_value_heads is not read) and a learned sink per head, and
    full-attention layers (layer_types, else layer 0 and every sixth) with num_key_value_heads and no sinks; keys
    of head_dim, values of v_head_dim, q/k/v biases by attention_bias, o_proj never biased; a dense MLP in the
    layers mlp_layer_types calls dense (else layer 0), elsewhere DeepSeek-V3's MoE without a shared expert (routing
    score biases stored in the checkpoint). Its MTP modules are not built by transformers and not counted."""
    d = _MIMO_V2_FLASH
    dims = dimensions(k, d)
    layers, kv = dims["layers"], dims["kv_heads"]
    types = per_layer(k, "layer_types", layers, {"sliding_attention", "full_attention"})
    if types is None:
        types = ["full_attention" if i == 0 or (i + 1) % 6 == 0 else "sliding_attention" for i in range(layers)]
    kinds = per_layer(k, "mlp_layer_types", layers, {"dense", "sparse"}) or ["dense"] + ["sparse"] * (layers - 1)
    return {
        **dims,
        "kv_heads": 2 * kv,
        "v_head_dim": k.integer("v_head_dim", default=d["v_head_dim"], field="v_head_dim"),
        "ffn": k.integer("intermediate_size", default=d["intermediate_size"], field="ffn"),
        "tied_embeddings": k.flag("tie_word_embeddings", False),
        "qkv_bias": k.flag("attention_bias", False),
        "out_bias": False,
        "attention_sinks": True,
        "mixers": tuple("global attention" if t == "full_attention" else "attention" for t in types),
        "global_attention": {"head_dim": dims["head_dim"], "kv_heads": kv},
        "moe": {
            "experts": k.integer("n_routed_experts", default=d["n_routed_experts"], field="moe.experts"),
            "active": k.integer("num_experts_per_tok", default=d["num_experts_per_tok"], field="moe.active"),
            "ffn": k.integer("moe_intermediate_size", default=d["moe_intermediate_size"], field="moe.ffn"),
            "dense_layers": tuple(i for i, t in enumerate(kinds) if t == "dense"),
            "router_bias": True,
        },
    }


def _llama4(k: Keys) -> dict[str, Any]:
    """Llama4TextConfig: MoE layers every interleave_moe_layer_step (or listed in moe_layers), each with one
    shared expert of intermediate_size beside the routed ones; the other layers have a dense MLP of
    intermediate_size_mlp. NoPE layers and the weightless L2 qk-norm change no count."""
    layers = k.integer("num_hidden_layers", default=48, field="layers")
    heads = k.integer("num_attention_heads", default=40, field="heads")
    moe: dict[str, Any] = {
        "experts": k.integer("num_local_experts", default=16, field="moe.experts"),
        "active": k.integer("num_experts_per_tok", default=1, field="moe.active"),
        "shared": 1,
        "ffn": k.integer("intermediate_size", default=8192, field="moe.ffn"),
        "every": k.integer("interleave_moe_layer_step", default=1, field="moe.every"),
        "every_expert": True,  # Llama4TextMoe: hidden_states.repeat(num_experts, 1) times the scores, through all
    }
    listed = k.layers("moe_layers")
    if listed:
        moe["every"] = 1
        moe["dense_layers"] = tuple(i for i in range(layers) if i not in listed)
    return {
        "hidden": k.integer("hidden_size", default=5120, field="hidden"),
        "layers": layers,
        "heads": heads,
        "kv_heads": k.integer("num_key_value_heads", default=8, field="kv_heads"),
        "head_dim": k.integer("head_dim", default=128, field="head_dim"),
        "ffn": k.integer("intermediate_size_mlp", default=16384, field="ffn"),
        "vocab": k.integer("vocab_size", default=202048, field="vocab"),
        "tied_embeddings": k.flag("tie_word_embeddings", False),
        "qkv_bias": k.flag("attention_bias", False),
        "out_bias": k.flag("attention_bias", False),  # Llama4TextAttention's o_proj takes attention_bias too
        "moe": moe,
    }


def _deepseek(k: Keys, family: str = "deepseek_v3") -> dict[str, Any]:
    """DeepseekV2Config / DeepseekV3Config (Kimi K2 ships the V3 keys): MLA, first_k_dense_replace dense layers,
    n_shared_experts beside the routed ones, num_nextn_predict_layers MTP modules (counted apart).

    Mistral Small 4 (mistral4) and GLM-4.7-Flash (glm4_moe_lite) are DeepSeek-V3's layers under their own classes'
    defaults (_MISTRAL4: a router without bias, no MTP; _GLM4_MOE_LITE: dense layers by mlp_layer_types, else layer 0).
    GLM-5 (glm_moe_dsa: configuration_glm_moe_dsa.py / modeling_glm_moe_dsa.py, transformers 5.24.0) is DeepSeek-V3.2's
    layer under its own defaults (_GLM_MOE_DSA): MLA and the lightning indexer, whose k_norm is a LayerNorm with a
    bias; an indexer only in the layers indexer_types calls "full" (else index_topk_pattern's F, else every
    index_topk_freq-th layer from index_skip_topk_offset), the "shared" ones reusing the last full layer's top-k;
    mlp_layer_types (else first_k_dense_replace) for the dense layers; an e_score_correction_bias in every MoE layer
    (a buffer transformers keeps out of parameters(), stored in the checkpoint). Its MTP layer (model.layers.78,
    num_nextn_predict_layers) is ignored by transformers on load and counted apart here, with its own indexer.
    A.X K1 (axk1: configuration_axk1.py / modular_axk1.py, 5.25.0) is DeepSeek-V3's layers under its own defaults
    (_AXK1) with a norm over each MoE block's output (AXK1MoE.post_mlp_layernorm), dense layers by mlp_layer_types
    (else below first_k_dense_replace, 1, or off moe_layer_freq's multiples) and no MTP layer (its class has no
    num_mtp_layers). MiniCPM3 (minicpm3: configuration_minicpm3.py / modeling_minicpm3.py, 5.24.0) is DeepSeek-V2's MLA
    over a dense MLP in every layer under its own defaults (_MINICPM3): tied, v_head_dim hidden / heads unless given;
    Youtu (youtu) the same under _YOUTU; Sarvam's MLA models (sarvam_mla) DeepseekV3ForCausalLM's under _SARVAM_MLA,
    their files' own names for three keys (_SARVAM_KEYS).

    Hy4 (hy_v4: configuration_hy_v4.py / modular_hy_v4.py, 5.25.0) is GLM-5's layer under its own defaults (_HY_V4)
    with an output gate per channel (gate_proj, hidden -> heads x v_head_dim), a learned sink per head, and hc_mult
    residual streams through Hy4's hyper-connections (hyper_form "independent") collapsed by DeepSeek-V4's head; an
    indexer where indexer_types says full (else in layer 0 and every fourth from layer 1); a dense MLP where
    mlp_layer_types says (else layer 0 alone); no MTP layer. Hy4-VL's text model (hy_v4_vl_text, under the hy_v4_vl
    wrapper, which ties the head by its own tie_word_embeddings) is the same under larger defaults (_HY_V4_VL).
    A.X K2 (axk2: configuration_axk2.py / modular_axk2.py, 5.25.0) is DeepSeek-V3.2's layer under its own defaults
    (_AXK2) with q_gate_proj for q_b_proj (MLASpec.query_gate) and gated norms (norm_gate_rank), dense layers as A.X
    K1's, and no MTP layer.

    Without MLA, where a file says use_mla false (DeepSeek-OCR's decoder: its remote modeling_deepseekv2.py builds an
    "mha_" Llama attention) or is DeepSeek-OCR 2's text model (deepseek_ocr2_text: DeepseekOcr2TextAttention is
    LlamaAttention, its class drops the MLA keys and first_k_dense_replace, and places dense layers by mlp_layer_types
    alone; transformers 5.25.0), the attention has num_key_value_heads (else num_attention_heads) KV heads of hidden /
    heads."""
    hy4 = family in ("hy_v4", "hy_v4_vl_text")
    glm = family in ("glm_moe_dsa", "glm4_moe_lite", "mistral_large4_text") or hy4
    ocr2 = family == "deepseek_ocr2_text"
    mla = not ocr2 and k.get("use_mla", default=True) is not False
    defaults = {
        "axk1": _AXK1,
        "axk2": _AXK2,
        "glm_moe_dsa": _GLM_MOE_DSA,
        "hy_v4": _HY_V4,
        "hy_v4_vl_text": _HY_V4_VL,
        "mistral_large4_text": _MISTRAL_LARGE4,
        "mistral4": _MISTRAL4,
        "glm4_moe_lite": _GLM4_MOE_LITE,
        "minicpm3": _MINICPM3,
        "youtu": _YOUTU,
        "sarvam_mla": _SARVAM_MLA,
    }
    d: dict[str, Any] = defaults.get(family, {})
    aliases = _SARVAM_KEYS if family == "sarvam_mla" else {}

    def integer(key: str, field: str = "", default: Any = _MISSING) -> Any:
        return k.integer(key, *aliases.get(key, ()), default=d.get(key, default), field=field)

    layers = integer("num_hidden_layers", "layers")
    arch: dict[str, Any] = {
        "hidden": integer("hidden_size", "hidden"),
        "layers": layers,
        "heads": integer("num_attention_heads", "heads"),
        "ffn": integer("intermediate_size", "ffn"),
        "vocab": integer("vocab_size", "vocab"),
        "tied_embeddings": k.flag("tie_word_embeddings", family in ("minicpm3", "youtu")),
        "qkv_bias": k.flag("attention_bias", False),
        "out_bias": k.flag("attention_bias", False),  # o_proj's bias is attention_bias's too
    }
    if family == "minicpm3" and k.flag("mlp_bias", False):  # MiniCPM3MLP takes bias=config.mlp_bias
        arch["linear_bias"] = True
    if k.get("n_routed_experts", *aliases.get("n_routed_experts", ()), default=d.get("n_routed_experts")) is not None:
        freq = k.integer("moe_layer_freq", default=1)
        if freq != 1 and not hy4 and family not in ("axk1", "axk2", "mistral_large4_text"):  # Hy4's, Mistral's: none
            raise InputError(
                k.where,
                f"{k._key('moe_layer_freq')}: only 1 (MoE in every layer after "
                f"first_k_dense_replace) is supported, got {freq}",
            )
        # MistralLarge4TextConfig.__post_init__ re-routes num_experts over n_routed_experts
        rerouted = family == "mistral_large4_text" and k.cfg.get("num_experts") is not None
        arch["moe"] = {
            "experts": k.integer("num_experts", field="moe.experts")
            if rerouted
            else integer("n_routed_experts", "moe.experts"),
            "active": integer("num_experts_per_tok", "moe.active"),
            "shared": integer("n_shared_experts", "moe.shared", 0),
            "ffn": integer("moe_intermediate_size", "moe.ffn"),
            "first_dense_layers": integer("first_k_dense_replace", "moe.first_dense_layers", 0),
            # V3's e_score_correction_bias; Mistral 4's softmax router has none
            "router_bias": (glm and family != "mistral_large4_text")
            or family in ("axk1", "axk2")
            or (family != "mistral4" and k.text("topk_method", "") == "noaux_tc"),
        }
        kinds = per_layer(k, "mlp_layer_types", layers, {"dense", "sparse"}) if glm or ocr2 else None
        if kinds is None and ocr2:
            said = (
                f"{k._key('mlp_layer_types')}: dense or sparse per layer ({layers}); DeepseekOcr2TextConfig reads no "
            )
            raise InputError(k.where, said + "first_k_dense_replace and builds no model without it")
        if kinds is None and (family == "glm4_moe_lite" or hy4):  # their classes read no first_k_dense_replace:
            kinds = ["dense"] + ["sparse"] * (layers - 1)  # layer 0 dense
        if kinds is None and family == "mistral_large4_text":  # the first first_k_dense_replace layers dense
            first = min(integer("first_k_dense_replace", "moe.first_dense_layers"), layers)
            kinds = ["dense"] * first + ["sparse"] * (layers - first)
        if family in ("axk1", "axk2"):
            kinds = per_layer(k, "mlp_layer_types", layers, {"dense", "sparse"})
            if kinds is None:  # AXK1Config.__post_init__'s rule, and AXK2Config's
                first = integer("first_k_dense_replace", "moe.first_dense_layers", 1)
                if freq < 1:
                    raise InputError(k.where, f"{k._key('moe_layer_freq')}: a whole number from 1, got {freq}")
                kinds = ["sparse" if i >= first and i % freq == 0 else "dense" for i in range(layers)]
            arch["moe"]["output_norm"] = family == "axk1"
        if kinds is not None:
            arch["moe"].update(first_dense_layers=0, dense_layers=tuple(i for i, t in enumerate(kinds) if t == "dense"))
    if not mla:
        heads = arch["heads"]
        kv_heads = integer("num_key_value_heads", "kv_heads", None)
        # heads of 0 are left to the spec's validation, which names the key
        arch.update(kv_heads=kv_heads if kv_heads is not None else heads, head_dim=arch["hidden"] // max(heads, 1))
        arch["mtp_layers"] = 0 if ocr2 else integer("num_nextn_predict_layers", "mtp_layers", 0)
        return arch
    arch["mla"] = {
        # written as null: no query latent, whatever the class's default (DeepSeek-V2-Lite's; MiniCPM3's class has 768)
        "q_lora_rank": None
        if ("q_lora_rank" in k.cfg and k.cfg["q_lora_rank"] is None) or family == "mistral_large4_text"
        else integer("q_lora_rank", "mla.q_lora_rank", None),
        "kv_lora_rank": integer("kv_lora_rank", "mla.kv_lora_rank"),
        "qk_nope_head_dim": integer("qk_nope_head_dim", "mla.qk_nope_head_dim"),
        "qk_rope_head_dim": integer("qk_rope_head_dim", "mla.qk_rope_head_dim"),
        "v_head_dim": integer("v_head_dim", "mla.v_head_dim", arch["hidden"] // arch["heads"])
        if family == "minicpm3"
        else integer("v_head_dim", "mla.v_head_dim"),
    }
    if not hy4 and family not in ("mistral4", "axk1", "axk2", "mistral_large4_text"):  # their classes build no MTP
        arch["mtp_layers"] = integer("num_nextn_predict_layers", "mtp_layers", 0)
    # DeepseekV32Config's defaults (configuration_deepseek_v32.py, v5.24.0) where GLM's give none
    if family == "axk2":  # AXK2Attention: q_gate_proj; AXK2GatedRMSNorm's gates
        if arch["mla"]["q_lora_rank"] is None:
            raise InputError(k.where, f"{k._key('q_lora_rank')}: a whole number from 1 (A.X K2's query gate and "
                             "indexer read the query latent)")  # fmt: skip
        arch["mla"]["query_gate"] = True
        arch["norm_gate_rank"] = integer("gated_norm_rank", "norm_gate_rank")
    if family in ("deepseek_v32", "glm_moe_dsa", "axk2") or hy4:
        arch["indexer"] = {
            "heads": integer("index_n_heads", "indexer.heads", 64),
            "head_dim": integer("index_head_dim", "indexer.head_dim", 128),
            "topk": integer("index_topk", "indexer.topk", 2048),
        }
    if family == "glm_moe_dsa":
        arch["indexer"]["layers"] = _glm_indexer_layers(k, layers)
    if hy4:  # HYV4Config.__post_init__'s indexers (HYV4VLTextConfig's too): layer 0 and every fourth from layer 1
        own = ["full" if i == 0 or (i - 1) % 4 == 0 else "shared" for i in range(layers)]
        arch["indexer"]["layers"] = _glm_indexer_layers(k, layers, own)
        streams = integer("hc_mult", "residual_streams")
        if streams <= 0:
            raise InputError(k.where, f"{k._key('hc_mult')}: a whole number of residual streams from 1, got {streams}")
        arch.update(attention_gate=True, attention_sinks=True, residual_streams=streams, hyper_form="independent")
    if family == "mistral_large4_text":
        arch.update(_mistral_large4_attention(k, layers))
        arch["indexer"] = {
            "form": "hidden",
            "heads": integer("index_n_heads", "indexer.heads"),
            "head_dim": integer("index_head_dim", "indexer.head_dim"),
            "topk": integer("index_topk", "indexer.topk"),
            "layers": _glm_indexer_layers(k, layers),
        }
    return arch


def kv_source_layers(k: Keys, layers: int, default: list[int]) -> list[int]:
    """kv_source_layers (else `default`): per layer, itself or an earlier layer that owns its cache, whose keys and
    values it reads (Mistral Large 4's and Kolibri 1.1's configuration classes check the same)."""
    sources = k.get("kv_source_layers", default=default)
    if (
        not isinstance(sources, list)
        or len(sources) != layers
        or any(isinstance(s, bool) or not isinstance(s, int) or not 0 <= s <= i or sources[s] != s
               for i, s in enumerate(sources))
    ):  # fmt: skip
        said = f"{k._key('kv_source_layers')}: per layer ({layers}), itself or an earlier layer that owns its cache"
        raise InputError(k.where, f"{said}, got {sources!r}"[:300])
    return sources


def _kolibri1_1_layers(k: Keys, layers: int) -> tuple[list[str], list[str]]:
    """Kolibri 1.1's layer kinds and mixers (Kolibri1_1Config.__post_init__ and validate_architecture, transformers
    5.25.0): layer_types' indexed_attention and sliding_attention (else indexed in every fifth layer); each indexed
    layer reads the keys and values of the layer kv_source_layers names (else, of its first ten indexed layers, the
    2nd, 3rd and 10th the 1st's and the 7th to 9th the 6th's), holding no k_proj, v_proj or k_norm where it is
    another's (mixer "kv-shared attention"); the sliding layers own theirs."""
    types = per_layer(k, "layer_types", layers, {"indexed_attention", "sliding_attention"})
    if types is None:
        types = ["indexed_attention" if (i + 1) % 5 == 0 else "sliding_attention" for i in range(layers)]
    indexed = [i for i, t in enumerate(types) if t == "indexed_attention"]
    default = list(range(layers))
    defaults = (0, 0, 0, 3, 4, 5, 5, 5, 5, 0)
    if len(indexed) > len(defaults) and k.get("kv_source_layers", default=None) is None:
        said = f"required with more than {len(defaults)} indexed_attention layers (the class's own layout covers ten)"
        raise InputError(k.where, f"{k._key('kv_source_layers')}: {said}, got {len(indexed)}")
    for i, source in zip(indexed, defaults, strict=False):
        default[i] = indexed[source]
    sources = kv_source_layers(k, layers, default)
    for i, source in enumerate(sources):
        if types[source] != types[i]:
            said = f"layer {i} ({types[i]}) reads the keys and values of layer {source} ({types[source]}); "
            said += "a layer reads its own kind's"
            raise InputError(k.where, f"{k._key('kv_source_layers')}: {said}")
    return types, [("" if sources[i] == i else KV_SHARED) + "attention" for i in range(layers)]


def _mistral_large4_attention(k: Keys, layers: int) -> dict[str, Any]:
    """Mistral Large 4's attention layers (MistralLarge4TextConfig.__post_init__ and MistralLarge4TextAttention,
    transformers 5.25.0): without RoPE where no_rope_layers says 0 (else every no_rope_layer_interval-th layer, 4 by
    default: "nope attention"), sharing an earlier layer's latent where kv_source_layers names one (the layer holds
    no kv_a_proj_with_mqa nor its norm: "kv-shared"); a learned softmax scale and bias per head in every layer and
    a learned scale of the rotary frequencies."""
    rope = k.get("no_rope_layers", default=None)
    if rope is None:
        interval = k.integer("no_rope_layer_interval", default=4)
        if interval < 1:
            raise InputError(k.where, f"{k._key('no_rope_layer_interval')}: a whole number from 1, got {interval}")
        rope = [int((i + 1) % interval != 0) for i in range(layers)]
    # the attention reads no_rope_layers[layer_idx] as a truth value: a longer list's tail is never read
    if (
        not isinstance(rope, list)
        or len(rope) < layers
        or any(isinstance(v, bool) or not isinstance(v, int) for v in rope)
    ):
        said = f"{k._key('no_rope_layers')}: a whole number per layer ({layers}), 0 for no RoPE, got {rope!r}"
        raise InputError(k.where, said[:300])
    sources = kv_source_layers(k, layers, list(range(layers)))
    for i, source in enumerate(sources):  # the attention reads shared_kv_states["rope"] or ["nope"], by its own kind
        if bool(rope[source]) != bool(rope[i]):
            kinds = ("without" if not rope[i] else "with", "with" if rope[source] else "without")
            said = f"{k._key('kv_source_layers')}: layer {i} ({kinds[0]} RoPE) reads the latent of layer {source}"
            raise InputError(
                k.where, f"{said} ({kinds[1]} RoPE, {k._key('no_rope_layers')}); a layer shares its own kind's"
            )
    mixers = tuple(("" if sources[i] == i else KV_SHARED) + ("attention" if rope[i] else NOPE) for i in range(layers))
    out: dict[str, Any] = {"softmax_scaling": True, "rope_alpha": True}
    if set(mixers) != {"attention"}:  # every layer with RoPE and its own cache: DeepSeek-V3.2's layers
        out["mixers"] = mixers
    return out


# LongcatFlashConfig's defaults (configuration_longcat_flash.py, transformers 5.24.0: LongCat-Flash-Chat's shapes)
_LONGCAT_FLASH = {"vocab_size": 131072, "hidden_size": 6144, "num_layers": 28, "num_attention_heads": 64,
                  "ffn_hidden_size": 12288, "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
                  "qk_rope_head_dim": 64, "v_head_dim": 128, "moe_topk": 12, "n_routed_experts": 512,
                  "zero_expert_num": 256, "expert_ffn_hidden_size": 2048}  # fmt: skip


def _longcat_flash(k: Keys) -> dict[str, Any]:
    """LongcatFlashForCausalLM (modeling_longcat_flash.py, transformers 5.24.0; LongCat-Flash, arXiv 2509.01322):
    num_layers blocks of two MLA sub-layers (always a query latent), two dense MLPs of ffn_hidden_size and one
    shortcut-connected MoE of n_routed_experts experts of expert_ffn_hidden_size, whose router also scores
    zero_expert_num zero-computation experts (identities). Counted as 2 x num_layers layers of MLA and a dense MLP,
    every second with the MoE beside it (the dense MLP as an ungated shared expert). A token's experts that compute
    are moe_topk x n_routed / (n_routed + zero) on average (8 of 12 as released: the paper's 27B average active).
    transformers 5.24.0 allocates gate_up_proj for the zero experts too, which its forward never reads; the
    checkpoints hold n_routed_experts' weights (560B as released), and dpcost counts those."""
    d = _LONGCAT_FLASH

    def integer(key: str, field: str = "", default: Any = _MISSING) -> Any:
        return k.integer(key, default=d.get(key, default), field=field)

    if k.get("num_layers", default=None) is None and k.get("num_hidden_layers", default=None) is not None:
        blocks = k.integer("num_hidden_layers", field="layers") // 2  # the class's setter: num_layers = value // 2
    else:
        blocks = integer("num_layers", "layers")
    routed, zero, topk = integer("n_routed_experts", "moe.experts"), integer("zero_expert_num"), integer("moe_topk")
    if routed <= 0:
        raise InputError(k.where, f"{k._key('n_routed_experts')}: must be more than 0, got {routed}")
    if zero < 0:
        raise InputError(k.where, f"{k._key('zero_expert_num')}: must be 0 or more, got {zero}")
    hidden, heads = integer("hidden_size", "hidden"), integer("num_attention_heads", "heads")
    ffn = integer("ffn_hidden_size", "ffn")
    moe: dict[str, Any] = {
        "experts": routed,
        "active": max(1, min(routed, round(topk * routed / (routed + zero)))),
        "ffn": integer("expert_ffn_hidden_size", "moe.ffn"),
        "every": 2,
        "shared": 1,
        "shared_ffn": ffn,
        "router_bias": k.flag("router_bias", False),  # the classifier's bias; e_score_correction_bias is a buffer
    }
    if zero:
        moe["router_outputs"] = routed + zero
    return {
        "hidden": hidden,
        "layers": 2 * blocks,
        "heads": heads,
        "ffn": ffn,
        "vocab": integer("vocab_size", "vocab"),
        "tied_embeddings": k.flag("tie_word_embeddings", False),
        "qkv_bias": k.flag("attention_bias", False),
        "out_bias": k.flag("attention_bias", False),
        "moe": moe,
        "mla": {
            "q_lora_rank": integer("q_lora_rank", "mla.q_lora_rank"),
            "kv_lora_rank": integer("kv_lora_rank", "mla.kv_lora_rank"),
            "qk_nope_head_dim": integer("qk_nope_head_dim", "mla.qk_nope_head_dim"),
            "qk_rope_head_dim": integer("qk_rope_head_dim", "mla.qk_rope_head_dim"),
            "v_head_dim": integer("v_head_dim", "mla.v_head_dim"),
        },
    }


def _ring_linear(k: Keys, layers: int, heads: int, head_dim: int) -> dict[str, Any]:
    """Ring-linear 2.0's lightning attention (BailingMoeV2LinearAttention, as vLLM's bailing_linear_attn.py and
    MaxText's port build it): query_key_value of num_attention_heads query, key and value heads alike (no grouping),
    their q and k norms by use_qk_norm, g_proj (hidden -> heads x head_dim), a group RMSNorm over heads x head_dim and
    dense back. It runs in every layer but those inclusionAI's decoder layer gives softmax attention (Ling 2.0's):
    each layer_group_size-th, and any past the last whole group ((i + 1) % g == 0 or i >= layers // g x g, as
    public transcriptions of modeling_bailing_moe_linear_v2.py read). Its chunked recurrence runs in chunks of 64
    (chunk_simple_gla)."""
    group = k.integer("layer_group_size", field="mixers")
    if group < 1:
        raise InputError(k.where, f"{k._key('layer_group_size')}: 1 or more (layers a group), got {group}")
    if k.flag("use_qkv_bias", False):  # vLLM biases the lightning layers' query_key_value too
        said = "true (biases on every layer's query_key_value, the lightning ones' included) is not counted"
        raise InputError(k.where, f"{k._key('use_qkv_bias')}: {said}; Ring-linear's released files set it false")
    linear = [(i + 1) % group != 0 and i < layers // group * group for i in range(layers)]
    if not any(linear):
        return {}
    return {
        "mixers": tuple("deltanet" if lin else "attention" for lin in linear),
        "deltanet": lightning_mixer(heads, head_dim, qk_norms=k.flag("use_qk_norm", False)),
    }


def lightning_mixer(heads: int, head_dim: int, **more: Any) -> dict[str, Any]:
    """Lightning attention's DeltaNetSpec (MiniMax's, Ring-linear's): as many key and value heads as query heads, all
    of head_dim, and `more` (its chunk, its q and k norms)."""
    return {"form": "lightning", "key_heads": heads, "value_heads": heads, "key_dim": head_dim, "value_dim": head_dim,
            **more}  # fmt: skip


def _longcat_ngrams(k: Keys) -> dict[str, int]:
    """LongCat-Flash-Lite's n-gram tables (model_type longcat_flash_ngram: LongcatFlashNgramModel of meituan-longcat's
    remote modeling_longcat_ngram.py, LongCat-Flash's layers with NgramEmbedding in place of the token embedding;
    NgramInputSpec): emb_split_num x (emb_neighbor_num - 1) tables of hidden_size // that many columns, the i-th of
    int(ngram_vocab_size_ratio x vocab_size + 2i + 1) rows. Its MTP layers (model.mtp) are not built, and not
    counted."""
    k.get("ngram_vocab_size_ratio", field="ngram_input.base_rows")  # required: the class's None builds no table
    ratio = k.positive("ngram_vocab_size_ratio", default=0.0)
    vocab = k.integer("vocab_size", default=_LONGCAT_FLASH["vocab_size"])
    if not 1 <= ratio * vocab <= 10**13:
        said = f"{ratio!r} x vocab_size must make from 1 to 10**13 rows a table (m in NgramEmbedding)"
        raise InputError(k.where, f"{k._key('ngram_vocab_size_ratio')}: {said}")
    neighbors = k.integer("emb_neighbor_num", field="ngram_input.tables")
    splits = k.integer("emb_split_num", field="ngram_input.tables")
    if neighbors < 2 or splits < 1:
        said = f"{k._key('emb_neighbor_num')} 2 or more and {k._key('emb_split_num')} 1 or more"
        raise InputError(k.where, f"{said} (emb_split_num x (emb_neighbor_num - 1) tables), got {neighbors}, {splits}")
    tables, hidden = splits * (neighbors - 1), k.integer("hidden_size", default=_LONGCAT_FLASH["hidden_size"])
    if hidden < tables:
        raise InputError(k.where, f"{k._key('hidden_size')}: {hidden} is fewer columns than its {tables} n-gram tables")
    return {"tables": tables, "base_rows": int(ratio * vocab), "width": hidden // tables}


def dense_then_experts(
    k: Keys, layers: int, *, experts: int, active: int, ffn: int, shared: int, first: int, by_types: bool = True
) -> dict[str, Any]:
    """An MoE whose dense layers are mlp_layer_types' "dense" ones where the file lists them (`by_types`: the class
    reads the key), else the first `first` (K-EXAONE, Hunyuan 3, Kimi Linear; AFMoE, Solar Open by count alone), with
    `shared` shared experts of `ffn` folded into one MLP of ffn x shared, as their MoE blocks build it."""
    kinds = per_layer(k, "mlp_layer_types", layers, {"dense", "sparse"}) if by_types else None
    moe: dict[str, Any] = {
        "experts": experts,
        "active": active,
        "ffn": ffn,
        "first_dense_layers": 0 if kinds is not None else min(first, layers),
        "dense_layers": tuple(i for i, t in enumerate(kinds) if t == "dense") if kinds is not None else (),
    }
    if shared:
        moe.update(shared=1, shared_ffn=ffn * shared)
    return moe


def per_layer(k: Keys, key: str, layers: int, allowed: set[str], listed: Any = None) -> list[str] | None:
    """A config's per-layer list of kinds (mlp_layer_types, indexer_types; `listed` where the key was spelled
    otherwise), checked; None where it is absent."""
    listed = k.get(key, default=None) if listed is None else listed
    if listed is None:
        return None
    if (
        not isinstance(listed, list)
        or len(listed) != layers
        or any(not isinstance(t, str) or t not in allowed for t in listed)
    ):
        said = f"{k._key(key)}: one of {', '.join(sorted(allowed))} per layer ({layers}), got {listed!r}"
        raise InputError(k.where, said[:300])
    return listed


def indexer_kinds(k: Keys, layers: int, default: list[str] | None = None) -> tuple[list[str], str]:
    """Each layer's indexer, full (its own) or shared (an earlier layer's top-k), and the key that said so:
    indexer_types, else `default` (a class's own rule: Hy4's), else index_topk_pattern ("F" and "S" a layer, or a
    list), else every index_topk_freq-th layer from index_skip_topk_offset (GlmMoeDsaConfig.__post_init__ and
    Glm5NextTextConfig.__post_init__, transformers 5.25.0)."""
    kinds = {"full", "shared"}
    types = per_layer(k, "indexer_types", layers, kinds)
    if types is not None:
        return types, "indexer_types"
    if default is not None:
        return default, "indexer_types"
    pattern = k.get("index_topk_pattern", default=None)
    if pattern is not None:  # "FSSF...", or a list
        spelled = [{"F": "full", "S": "shared"}.get(c, c) for c in pattern] if isinstance(pattern, str) else pattern
        listed = per_layer(k, "index_topk_pattern", layers, kinds, spelled)
        assert listed is not None
        return listed, "index_topk_pattern"
    freq = max(k.integer("index_topk_freq", default=1), 1)
    offset = k.integer("index_skip_topk_offset", default=2)
    return ["full" if max(i - offset + 1, 0) % freq == 0 else "shared" for i in range(layers)], "indexer_types"


def _glm_indexer_layers(k: Keys, layers: int, default: list[str] | None = None) -> tuple[int, ...]:
    """The layers with an indexer of their own (indexer_kinds), as GlmMoeDsaConfig.__post_init__ decides them (and
    Hy4's class, by its `default`); () when every one has (IndexerSpec.layers)."""
    types, key = indexer_kinds(k, layers, default)
    if types[0] != "full":  # a shared layer reuses the top-k of the last full layer before it
        said = f"{k._key(key)}: the first layer must be full, since a shared layer reuses an earlier full layer's"
        raise InputError(k.where, f"{said} top-k, got {types[0]!r}")
    full = tuple(i for i, t in enumerate(types) if t == "full")
    return () if len(full) == layers else full


# MiniMaxM3VLTextConfig's defaults (configuration_minimax_m3_vl.py, transformers 5.24.0: MiniMax-M3's shapes)
_MINIMAX_M3 = {"vocab_size": 200064, "hidden_size": 6144, "intermediate_size": 3072, "num_hidden_layers": 60,
               "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 128, "num_experts_per_tok": 4,
               "num_local_experts": 128, "dense_intermediate_size": 12288, "shared_intermediate_size": 3072,
               "index_n_heads": 4, "index_head_dim": 128, "index_block_size": 128,
               "index_topk_blocks": 16}  # fmt: skip
# the names MiniMax's files give the indexer's keys, under sparse_attention_config (MiniMaxM3VLTextConfig)
_MINIMAX_M3_SPARSE = {"index_n_heads": "sparse_num_index_heads", "index_head_dim": "sparse_index_dim",
                      "index_block_size": "sparse_block_size", "index_topk_blocks": "sparse_topk_blocks"}  # fmt: skip


def _minimax_m3(k: Keys) -> dict[str, Any]:
    """MiniMaxM3VLForCausalLM's text model (modeling_minimax_m3_vl.py, transformers 5.24.0; MiniMax-M3): MiniMax-M2's
    attention with per-head q/k norms, a block indexer (q_proj, k_proj, per-head norms) in the layers layer_types
    calls minimax_m3_sparse (else sparse_attention_config's sparse_attention_freq; else none), whose attention
    reads index_topk_blocks blocks of index_block_size keys, the local ones among them; a dense MLP of
    dense_intermediate_size in the layers mlp_layer_types calls dense (else moe_layer_freq's 0s; else none), experts
    of intermediate_size with an ungated shared MLP of shared_intermediate_size elsewhere (the router's correction
    bias a buffer); two norms a layer, untied by default."""
    d = _MINIMAX_M3
    sparse_cfg = k.get("sparse_attention_config", default={})
    if not isinstance(sparse_cfg, dict):
        raise InputError(k.where, f"{k._key('sparse_attention_config')}: expected a mapping, got {sparse_cfg!r}"[:200])

    def index(key: str) -> int:
        legacy = sparse_cfg.get(_MINIMAX_M3_SPARSE[key])
        if k.get(key, default=None) is None and legacy is not None:
            if isinstance(legacy, bool) or not isinstance(legacy, int) or legacy <= 0:
                said = f"{k._key('sparse_attention_config')}.{_MINIMAX_M3_SPARSE[key]}: a whole number above 0"
                raise InputError(k.where, f"{said}, got {legacy!r}"[:200])
            return legacy
        return int(k.integer(key, default=d[key], field=f"indexer.{key}"))

    dims = dimensions(k, d)
    layers = dims["layers"]
    types = per_layer(k, "layer_types", layers, {"full_attention", "minimax_m3_sparse"})
    if types is None and sparse_cfg.get("sparse_attention_freq") is not None:
        freq = sparse_cfg["sparse_attention_freq"]
        if not isinstance(freq, list) or len(freq) != layers or any(v not in (0, 1) for v in freq):
            said = f"{k._key('sparse_attention_config')}.sparse_attention_freq: 0 or 1 per layer ({layers})"
            raise InputError(k.where, f"{said}, got {freq!r}"[:300])
        types = ["minimax_m3_sparse" if v else "full_attention" for v in freq]
    kinds = per_layer(k, "mlp_layer_types", layers, {"dense", "sparse"})
    if kinds is None and k.get("moe_layer_freq", default=None) is not None:
        freq = k.get("moe_layer_freq")
        if not isinstance(freq, list) or len(freq) != layers or any(v not in (0, 1) for v in freq):
            said = f"{k._key('moe_layer_freq')}: 0 (dense) or 1 (experts) per layer ({layers}), got {freq!r}"
            raise InputError(k.where, said[:300])
        kinds = ["sparse" if v else "dense" for v in freq]
    sparse_layers = tuple(i for i, t in enumerate(types or []) if t == "minimax_m3_sparse")
    shared = k.integer("shared_intermediate_size", default=d["shared_intermediate_size"], field="moe.shared_ffn")
    arch: dict[str, Any] = {
        **dims,
        "ffn": k.integer("dense_intermediate_size", default=d["dense_intermediate_size"], field="ffn"),
        "tied_embeddings": k.flag("tie_word_embeddings", False),
        "qk_norm": "head",
        "moe": {
            "experts": k.integer("num_local_experts", default=d["num_local_experts"], field="moe.experts"),
            "active": k.integer("num_experts_per_tok", default=d["num_experts_per_tok"], field="moe.active"),
            "ffn": k.integer("intermediate_size", default=d["intermediate_size"], field="moe.ffn"),
            "dense_layers": tuple(i for i, t in enumerate(kinds or []) if t == "dense"),
        },
    }
    if shared:
        arch["moe"].update(shared=1, shared_ffn=shared)
    if sparse_layers:
        arch["indexer"] = {
            "form": "block",
            "heads": index("index_n_heads"),
            "head_dim": index("index_head_dim"),
            "topk": index("index_topk_blocks") * index("index_block_size"),
            "layers": () if len(sparse_layers) == layers else sparse_layers,
        }
    return arch


def _chatglm(k: Keys) -> dict[str, Any]:
    """ChatGLM2, ChatGLM3 and GLM-4-9B-chat as THUDM's remote modeling_chatglm.py builds them (ChatGLMForConditional-
    Generation; docs/sources/hf-defaults.md): per layer an input norm, query_key_value (hidden -> heads x kv_channels
    + 2 x multi_query_group_num x kv_channels under multi_query_attention), biased by add_qkv_bias or
    add_bias_linear, dense (-> hidden, biased by add_bias_linear), a second norm and a SwiGLU MLP (dense_h_to_4h
    hidden -> 2 x ffn_hidden_size, dense_4h_to_h back, biased by add_bias_linear); RMSNorm under rmsnorm, else
    LayerNorm; a final norm under post_layer_norm; word_embeddings and a separate output_layer of
    padded_vocab_size rows. ChatGLM-6B (GLM-1: inner_hidden_size, 2-D positions) and p-tuning's prefix encoder
    (pre_seq_len) are refused by key."""
    if k.get("inner_hidden_size", default=None) is not None and k.get("ffn_hidden_size", default=None) is None:
        raise InputError(k.where, f"{k._key('inner_hidden_size')}: ChatGLM-6B's first-generation GLM layers are not "
                         "counted by dpcost; ChatGLM2, ChatGLM3 and GLM-4 (ffn_hidden_size) are")  # fmt: skip
    if k.get("pre_seq_len", default=None) is not None:
        raise InputError(k.where, f"{k._key('pre_seq_len')}: p-tuning's prefix encoder is not counted; null is")
    if not k.flag("post_layer_norm", True):
        raise InputError(k.where, f"{k._key('post_layer_norm')}: false (no final norm) is not counted; true is")
    heads = k.integer("num_attention_heads", default=32, field="heads")
    linear_bias = k.flag("add_bias_linear", False)
    arch: dict[str, Any] = {
        "hidden": k.integer("hidden_size", default=4096, field="hidden"),
        "layers": k.integer("num_layers", "num_hidden_layers", default=28, field="layers"),
        "heads": heads,
        "kv_heads": k.integer("multi_query_group_num", default=1, field="kv_heads")
        if k.flag("multi_query_attention", False)
        else heads,
        "head_dim": k.integer("kv_channels", default=128, field="head_dim"),
        "ffn": k.integer("ffn_hidden_size", default=13696, field="ffn"),
        "vocab": k.integer("padded_vocab_size", "vocab_size", default=65024, field="vocab"),
        "tied_embeddings": False,  # output_layer is a Linear of its own, whatever tie_word_embeddings says
        "qkv_bias": linear_bias or k.flag("add_qkv_bias", False),
        "out_bias": linear_bias,
        "linear_bias": linear_bias,
    }
    if not k.flag("rmsnorm", True):
        arch["norm"] = "layernorm"
    return arch


# A Nemotron-NAS block's keys that change what it holds or computes, and the value under which a block is read as
# Llama's (AttentionConfig and FFNConfig of block_config.py: null or false)
_NAS_REFUSED = {
    "attention": ("replace_with_linear", "sparsify", "window_length", "num_sink_tokens", "unshifted_sink",
                  "use_prefill_window_in_sink_attention", "mamba", "llama4"),
    "ffn": ("replace_with_linear", "sparsify", "moe"),
}  # fmt: skip


def _ffn_mult_width(ffn_mult: float, hidden: int) -> int:
    """A Nemotron-NAS block's MLP width from its ffn_mult: int(2 x ffn_mult x hidden / 3) rounded up to a multiple of
    256 (_ffn_mult_to_intermediate_size, the model's own modeling_decilm.py as NeMo Automodel and vLLM repeat it)."""
    width = int(2 * ffn_mult * hidden / 3)
    return width + (-width) % 256


def _nemotron_nas(k: Keys) -> dict[str, Any]:
    """Llama-3.1/3.3-Nemotron (model_type nemotron-nas, DeciLMForCausalLM): Llama's layers as a neural architecture
    search left each one in block_configs (NVIDIA-NeMo/Automodel decilm/layers.py Block @973123ec, matching the Hub
    checkpoints' keys): a block's attention is Llama's with num_attention_heads / n_heads_in_group KV heads and its
    input norm, or is absent with its norm (no_op); its MLP is a SwiGLU of ffn_mult's width (_ffn_mult_width) with
    its post-attention norm, or absent with its norm (no_op). Blocks that replace a sub-layer by a linear layer,
    sparsify it, or attend within a window, and KV heads that differ between blocks, are refused by key."""
    hidden = k.integer("hidden_size", field="hidden")
    layers = k.integer("num_hidden_layers", field="layers")
    heads = k.integer("num_attention_heads", field="heads")
    blocks = k.get("block_configs")
    if not isinstance(blocks, list) or len(blocks) != layers or not all(isinstance(b, dict) for b in blocks):
        said = f"{k._key('block_configs')}: one block (attention and ffn) per layer ({layers}), got {blocks!r}"
        raise InputError(k.where, said[:300])
    mixers: list[str] = []
    widths: list[int] = []
    groups: set[int] = set()
    for i, block in enumerate(blocks):
        where = f"{k._key('block_configs')}[{i}]"
        parts = {part: block.get(part) or {} for part in ("attention", "ffn")}
        for part, config in parts.items():
            if not isinstance(config, dict):
                raise InputError(k.where, f"{where}.{part}: a mapping of its keys, got {config!r}"[:300])
            for key in _NAS_REFUSED[part]:
                if config.get(key) not in (None, False):
                    said = f"{where}.{part}.{key}: {config[key]!r}: such blocks are not counted by dpcost; null is"
                    raise InputError(k.where, said[:300])
            if not isinstance(config.get("no_op", False), bool):
                raise InputError(
                    k.where, f"{where}.{part}.no_op: expected true or false, got {config['no_op']!r}"[:300]
                )
        attention, ffn = parts["attention"], parts["ffn"]
        if ffn.get("gated", True) is not True:  # FFNConfig.gated: true (SwiGLU) by default
            said = f"{where}.ffn.gated: {ffn['gated']!r}: an ungated MLP is not counted by dpcost; true is"
            raise InputError(k.where, said[:300])
        if block.get("parallel_blocks") not in (None, [], {}):
            said = f"{where}.parallel_blocks: blocks of parallel branches are not counted by dpcost; null is"
            raise InputError(k.where, said[:300])
        if attention.get("no_op"):
            mixers.append("none")
        else:
            group = attention.get("n_heads_in_group")
            if isinstance(group, bool) or not isinstance(group, int) or group < 1 or heads % group:
                said = f"{where}.attention.n_heads_in_group: a divisor of num_attention_heads ({heads}), got {group!r}"
                raise InputError(k.where, said[:300])
            mixers.append("attention")
            groups.add(group)
        if ffn.get("no_op"):
            widths.append(0)
            continue
        mult = ffn.get("ffn_mult")
        if isinstance(mult, bool) or not isinstance(mult, int | float) or not 0 < mult < 1e6:
            raise InputError(k.where, f"{where}.ffn.ffn_mult: a positive number, got {mult!r}"[:300])
        widths.append(_ffn_mult_width(mult, hidden))
    if len(groups) > 1:
        said = f"n_heads_in_group of {sorted(groups)}: KV heads that differ between blocks are not counted by dpcost"
        raise InputError(k.where, f"{k._key('block_configs')}: {said}")
    if not groups:
        raise InputError(k.where, f"{k._key('block_configs')}: every block's attention is no_op; dpcost counts a "
                         "model with at least one attention layer")  # fmt: skip
    linear_bias = k.flag("mlp_bias", False)
    return {
        "hidden": hidden,
        "layers": layers,
        "heads": heads,
        "kv_heads": heads // groups.pop(),
        "head_dim": k.integer("head_dim", default=hidden // max(heads, 1), field="head_dim"),
        "vocab": k.integer("vocab_size", field="vocab"),
        "tied_embeddings": k.flag("tie_word_embeddings", False),
        "qkv_bias": k.flag("attention_bias", False),
        "out_bias": k.flag("attention_bias", False),
        "linear_bias": linear_bias,
        "mixers": tuple(mixers),
        "mlp_free_layers": tuple(i for i, w in enumerate(widths) if w == 0),
        "ffn_widths": tuple(widths),
    }


def _glm4_moe(k: Keys, family: str = "glm4_moe") -> dict[str, Any]:
    """Glm4MoeForCausalLM (GLM-4.5, GLM-4.5-Air, GLM-4.6), as transformers builds it: configuration_glm4_moe.py at
    c7ec229ad64cdcf0176f669969c66c9a652e7f38, modeling_glm4_moe.py at a0699c971daff96403489086fcfd07469d20b17f (the
    same weights as modular_glm4_moe.py at 0e97420c9957149b80ff57632148e8ce80203b48).

    Every weight, and the field that counts it: q/k/v_proj (hidden -> heads x head_dim, kv_heads x head_dim) with
    biases when attention_bias, o_proj always without (qkv_bias); head_dim is getattr(config, "head_dim",
    hidden_size // num_attention_heads), the class having no such key; q_norm and k_norm, RMSNorms over head_dim,
    when use_qk_norm (qk_norm "head"). Layers below first_k_dense_replace have a gated MLP of intermediate_size
    (ffn); the others a Glm4MoeMoE: n_routed_experts gated MLPs of moe_intermediate_size (moe.experts, moe.ffn), one
    shared MLP of moe_intermediate_size x n_shared_experts (moe.shared 1, moe.shared_ffn), a router weight
    (n_routed_experts x hidden) and its e_score_correction_bias buffer (n_routed_experts, kept in the checkpoint:
    moe.router_bias). Two RMSNorms per layer and a final one; embedding and lm_head untied unless
    tie_word_embeddings. The MTP layer the checkpoints ship (model.layers.{num_hidden_layers}.*, which Glm4MoeModel
    ignores on load) is num_nextn_predict_layers, counted apart as DeepSeek's: one MoE block, eh_proj, enorm, hnorm
    and shared_head.norm. Approximated: nothing in the main model; in the MTP count, the layer's shared_head.head
    (vocab x hidden, 775,946,240 parameters for GLM-4.5, 620,756,992 for GLM-4.5-Air) is taken as the output head and
    not counted again, as for DeepSeek-V3, though the checkpoints may store a copy. Sarvam-30B (sarvam_moe) and
    Param2 (param2moe) are this model under their classes' defaults (_GLM4_MOE_SUBCLASSES) and key names."""
    vision, dots = family == "glm4v_moe_text", family == "dots1"
    # Glm4vMoeTextConfig (configuration_glm4v_moe.py, 5.24.0): GLM-4.5's defaults but vocab_size 151424 and
    # attention_bias true; its attention has no q_norm/k_norm, and no MTP layer (num_nextn_predict_layers: 0).
    # Dots1 (modeling_dots1.py, 5.24.0): q_norm/k_norm over head_dim always, attention_bias on q, k, v and o,
    # experts and shared ones as GLM-4.5's, no MTP layer; its class gives no default for the expert keys.
    d: dict[str, Any] = {**_GLM4_MOE, "vocab_size": 151424} if vision else _DOTS1 if dots else _GLM4_MOE
    d = _GLM4_MOE_SUBCLASSES.get(family, d)
    dims = dimensions(k, d)
    hidden, heads = dims["hidden"], dims["heads"]
    head_dim = k.integer("head_dim", default=d.get("head_dim"), field="head_dim")
    shared = k.integer("n_shared_experts", default=d.get("n_shared_experts", _MISSING), field="moe.shared")
    moe_ffn = k.integer("moe_intermediate_size", default=d["moe_intermediate_size"], field="moe.ffn")
    moe: dict[str, Any] = {
        "experts": k.integer("n_routed_experts", default=d.get("n_routed_experts", _MISSING), field="moe.experts"),
        "active": k.integer("num_experts_per_tok", default=d.get("num_experts_per_tok", _MISSING), field="moe.active"),
        "ffn": moe_ffn,
        "first_dense_layers": k.integer(
            "first_k_dense_replace", default=d["first_k_dense_replace"], field="moe.first_dense_layers"
        ),
        "router_bias": True,  # Glm4MoeTopkRouter's e_score_correction_bias
    }
    if shared < 0:
        raise InputError(k.where, f"{k._key('n_shared_experts')}: expected 0 or more, got {shared}")
    if shared:  # one Glm4MoeMLP of moe_intermediate_size x n_shared_experts (0 builds an empty one)
        moe.update(shared=1, shared_ffn=moe_ffn * shared)
    arch = {
        **dims,
        "head_dim": head_dim if head_dim is not None else hidden // heads if heads > 0 else None,
        "ffn": k.integer("intermediate_size", default=d["intermediate_size"], field="ffn"),
        "tied_embeddings": k.flag("tie_word_embeddings", d.get("tie_word_embeddings", False)),
        "qkv_bias": k.flag("attention_bias", vision),
        "qk_norm": "head" if dots or (not vision and k.flag("use_qk_norm", d.get("use_qk_norm", False))) else "none",
        "moe": moe,
        "mtp_layers": 0 if dots else k.integer("num_nextn_predict_layers", default=0, field="mtp_layers"),
    }
    if dots and arch["qkv_bias"]:
        arch["out_bias"] = True
    return arch


# MiniCPM5MoeConfig's defaults (configuration_minicpm5_moe.py, transformers 5.25.0: openbmb/MiniCPM5-15B-A2.5B), and
# Glm4MoeConfig's for what it does not set (attention_bias false, one shared expert, tie_word_embeddings false)
_MINICPM5_MOE = {"vocab_size": 130560, "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 28,
                 "num_attention_heads": 32, "num_key_value_heads": 2, "head_dim": 128, "n_routed_experts": 160,
                 "num_experts_per_tok": 16, "moe_intermediate_size": 512, "n_shared_experts": 1}  # fmt: skip


def _minicpm5_moe(k: Keys) -> dict[str, Any]:
    """MiniCPM5MoeForCausalLM (MiniCPM5-MoE), as transformers 5.25.0 builds it (modular_minicpm5_moe.py): Llama's
    attention with a sigmoid gate per channel from the query projection (q_gate_proj: hidden -> 2 x heads x head_dim,
    attention_gate), biased with k, v and o by attention_bias, no q/k norms; two norms a layer; dense MLPs of
    intermediate_size where mlp_layer_types says (else the first first_k_dense_replace, 1), elsewhere DeepSeek-V3's
    MoE: n_routed_experts of moe_intermediate_size, top num_experts_per_tok, one shared MLP of moe_intermediate_size
    x n_shared_experts, a router with its e_score_correction_bias; no MTP. A null num_key_value_heads or head_dim
    is the class's heads or hidden_size / heads; use_gated_attention false is refused, as the class refuses it."""
    d = _MINICPM5_MOE
    if k.get("use_gated_attention", default=True) is False:
        raise InputError(k.where, f"{k._key('use_gated_attention')}: false is refused by MiniCPM5MoeConfig; true is")
    dims = dimensions(k, d)
    hidden, heads, layers = dims["hidden"], dims["heads"], dims["layers"]
    if "num_key_value_heads" in k.cfg and k.cfg["num_key_value_heads"] is None:
        dims["kv_heads"] = heads
    if "head_dim" in k.cfg and k.cfg["head_dim"] is None:
        dims["head_dim"] = hidden // heads if heads > 0 else None
    moe_ffn = k.integer("moe_intermediate_size", default=d["moe_intermediate_size"], field="moe.ffn")
    shared = k.integer("n_shared_experts", default=d["n_shared_experts"], field="moe.shared")
    if shared < 0:
        raise InputError(k.where, f"{k._key('n_shared_experts')}: expected 0 or more, got {shared}")
    moe = dense_then_experts(
        k,
        layers,
        experts=k.integer("n_routed_experts", default=d["n_routed_experts"], field="moe.experts"),
        active=k.integer("num_experts_per_tok", default=d["num_experts_per_tok"], field="moe.active"),
        ffn=moe_ffn,
        shared=shared,
        first=k.integer("first_k_dense_replace", default=1, field="moe.first_dense_layers"),
    )
    biased = k.flag("attention_bias", False)
    return {
        **dims,
        "ffn": k.integer("intermediate_size", default=d["intermediate_size"], field="ffn"),
        "tied_embeddings": k.flag("tie_word_embeddings", False),
        "qkv_bias": biased,
        "out_bias": biased,
        "attention_gate": True,
        "attention_gate_bias": biased,
        "moe": {**moe, "router_bias": True},
    }


_MLLAMA_CROSS = (3, 8, 13, 18, 23, 28, 33, 38)  # MllamaTextConfig.__post_init__'s cross_attention_layers


def _mllama_text(k: Keys) -> dict[str, Any]:
    """Llama 3.2 Vision's text model (mllama_text_model: MllamaForCausalLM, modeling_mllama.py, transformers 5.25.0;
    MllamaTextConfig's defaults are the 11B's): Llama's layers, but those cross_attention_layers names (default the
    11B's eight, _MLLAMA_CROSS; an index past the last layer names none) are MllamaCrossAttentionDecoderLayers
    (mixer "cross": params.cross_attention_parameters, with the layer's two norms and its MLP), which a text-only
    batch skips whole; embed_tokens has vocab_size + 8 rows, lm_head vocab_size. tie_word_embeddings true would tie
    tables of different sizes: refused."""
    d = {"hidden_size": 4096, "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 8,
         "vocab_size": 128256}  # fmt: skip
    dims = dimensions(k, d)
    layers, vocab = dims["layers"], dims["vocab"]
    if k.flag("tie_word_embeddings", False):
        said = f"{k._key('tie_word_embeddings')}: true would tie lm_head ({vocab} rows) to embed_tokens ({vocab + 8})"
        raise InputError(k.where, f"{said}; false is what Llama 3.2 Vision ships")
    given = k.get("cross_attention_layers", default=None)
    listed = _MLLAMA_CROSS if given is None else k.layers("cross_attention_layers")
    if any(i < 0 for i in listed):
        said = f"{k._key('cross_attention_layers')}: layer indices from 0, got {list(listed)!r}"
        raise InputError(k.where, said[:300])
    cross = {i for i in listed if i < layers}  # MllamaTextModel builds layer i as one where i is listed
    return {
        **dims,
        "vocab": vocab + 8,  # MllamaTextModel.embed_tokens: nn.Embedding(vocab_size + 8, hidden_size)
        "head_vocab": vocab,
        "ffn": k.integer("intermediate_size", default=14336, field="ffn"),
        "mixers": tuple("cross" if i in cross else "attention" for i in range(layers)),
    }


# Molmo2TextConfig's defaults (configuration_molmo2.py, transformers 5.25.0: allenai/Molmo2-8B's text model)
_MOLMO2_TEXT = {"hidden_size": 4096, "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
                "head_dim": 128, "vocab_size": 151936}  # fmt: skip


def _molmo2_text(k: Keys) -> dict[str, Any]:
    """Molmo 2's text model (molmo2_text: Molmo2TextModel, modular_molmo2.py, transformers 5.25.0): Llama's layers
    with OLMo 2's attention, q/k/v biased by attention_bias (its files' qkv_bias), o_proj unbiased, q_norm and k_norm
    per head (qk_norm_type qwen3) or over the whole projection (olmo), two norms a layer (before or, under
    norm_after, after each sub-layer); embed_tokens has vocab_size + additional_vocab_size rows, lm_head vocab_size."""
    d = _MOLMO2_TEXT
    dims = dimensions(k, d)
    norm = k.get("qk_norm_type", default="qwen3")
    if norm not in ("qwen3", "olmo"):
        raise InputError(
            k.where, f"{k._key('qk_norm_type')}: qwen3 or olmo (as Molmo2TextConfig allows), got {norm!r}"[:200]
        )
    extra = k.integer("additional_vocab_size", default=128, field="vocab")
    if extra < 0:
        raise InputError(k.where, f"{k._key('additional_vocab_size')}: 0 or more, got {extra}")
    return {
        **dims,
        "vocab": dims["vocab"] + extra,
        "head_vocab": dims["vocab"],
        "ffn": k.integer("intermediate_size", default=12288, field="ffn"),
        "tied_embeddings": k.flag("tie_word_embeddings", False),
        "qkv_bias": k.flag("attention_bias", False),
        "out_bias": False,
        "qk_norm": "head" if norm == "qwen3" else "full",
    }


def _minimax_m2(k: Keys) -> dict[str, Any]:
    """MiniMaxM2ForCausalLM (MiniMax-M2), as transformers builds it: configuration_minimax_m2.py and
    modeling_minimax_m2.py at ea9df1d3bd9784aa7e6abd8f4be29551dd58d6d8.

    Every weight, and the field that counts it: q/k/v/o_proj without biases (head_dim given, default 128); q_norm, an
    RMSNorm over all query heads (heads x head_dim), and k_norm over all KV heads (kv_heads x head_dim), built in
    every layer whatever use_qk_norm says (qk_norm "full"). Every layer's MLP is a MiniMaxM2SparseMoeBlock:
    num_local_experts (alias num_experts) gated experts of intermediate_size, stored as gate_up_proj and down_proj
    (moe.experts, moe.ffn), a router weight (experts x hidden) and an e_score_correction_bias buffer (experts, in
    the checkpoint: moe.router_bias); no shared expert and no dense layer (transformers reads neither
    shared_intermediate_size nor any dense-layer key). Two RMSNorms per layer and a final one; embedding and lm_head
    untied unless tie_word_embeddings. use_mtp, num_mtp_modules and mtp_transformer_layers are not keys of the
    class: transformers builds no MTP module and MiniMax's released M2.x checkpoints hold none, so none is counted.
    Nothing is approximated."""
    d = _MINIMAX_M2
    return {
        **dimensions(k, d),
        "tied_embeddings": k.flag("tie_word_embeddings", False),
        "qk_norm": "full",
        "moe": {
            "experts": k.integer(
                "num_local_experts", "num_experts", default=d["num_local_experts"], field="moe.experts"
            ),
            "active": k.integer("num_experts_per_tok", default=d["num_experts_per_tok"], field="moe.active"),
            "ffn": k.integer("intermediate_size", default=d["intermediate_size"], field="moe.ffn"),
            "router_bias": True,  # MiniMaxM2SparseMoeBlock's e_score_correction_bias
        },
    }


def mlp_activation(k: Keys, key: str, default: str, runs: dict[str, str] | None = None) -> dict[str, Any]:
    """A 2-matrix MLP's activation as the file names it under `key` (else its class's default), and as the modeling
    file runs that name (`runs`; ACT2FN's own name by default): `activation` where it is one dpcost knows (a name it
    does not know is left as a fused GELU), and the MLP's kind."""
    name = k.text(key, default)
    name = (runs or {}).get(name, name)
    return {"mlp": "relu" if name in ("relu", "relu2") else "gelu"} | (
        {"activation": name} if name in get_args(Activation) else {}
    )


# The Llama-like families with a 2-matrix MLP (up, down) of ACT2FN[config.hidden_act], and its class's default
# (configuration_*.py, transformers 5.25.0); Apertus's ApertusMLP runs xIELU, the others relu2
_TWO_MATRIX_ACTIVATIONS = {
    "nemotron": "relu2",
    "jais2": "relu2",
    "nanochat": "relu2",
    "arcee": "relu2",
    "cosmos3_edge_text": "relu2",
    "apertus": "xielu",
    "apertus1p5_text": "xielu",
}
# The GPT-style families whose training forward drops out the embedding, each sub-layer's output and the attention
# probabilities at one rate by default (0.1: configuration_gpt2.py resid_pdrop, embd_pdrop and attn_pdrop; GPTBigCode's
# and GPT-1's alike; XGLM's and Kosmos-2's dropout and attention_dropout; BioGPT's hidden_dropout_prob and
# attention_probs_dropout_prob): the file's sub-layer rate, read as dpcost's one dropout
_GPT_DROPOUT = {
    "gpt2": "resid_pdrop",
    "gpt_bigcode": "resid_pdrop",
    "openai-gpt": "resid_pdrop",
    "xglm": "dropout",
    "kosmos_2_text_model": "dropout",
    "biogpt": "hidden_dropout_prob",
}
# OpenAIGPTMLP runs ACT_FNS[config.afn] (modeling_openai.py, 5.25.0), whose "gelu" is gelu_new
_OPENAI_GPT_ACT_FNS = {"relu": "relu", "silu": "silu", "gelu": "gelu_new", "swish": "silu"}


# Where each GPT-style family's MLP reads its activation's name (ACT2FN[config.<key>] in its modeling file), and its
# config class's default (configuration_*.py, transformers 5.25.0)
_GPT_ACTIVATIONS = {
    "gpt2": ("activation_function", "gelu_new"),
    "gptj": ("activation_function", "gelu_new"),
    "codegen": ("activation_function", "gelu_new"),
    "gpt_neo": ("activation_function", "gelu_new"),
    "gpt_bigcode": ("activation_function", "gelu_pytorch_tanh"),
    "opt": ("activation_function", "relu"),
    "xglm": ("activation_function", "gelu"),
    "kosmos_2_text_model": ("activation_function", "gelu"),
    "gpt_neox": ("hidden_act", "gelu"),
    "gpt_neox_japanese": ("hidden_act", "gelu"),
    "phi": ("hidden_act", "gelu_new"),
    "phi-msft": ("activation_function", "gelu_new"),
    "starcoder2": ("hidden_act", "gelu_pytorch_tanh"),
    "biogpt": ("hidden_act", "gelu"),
    "persimmon": ("hidden_act", "relu2"),
    "openai-gpt": ("afn", "gelu"),
}


def _gpt_style(k: Keys, family: str) -> dict[str, Any]:
    """GPT-2, GPT-J, CodeGen, GPT-Neo, GPT-NeoX, OPT, BLOOM, MPT, Phi (1, 1.5, 2) and StarCoder2: LayerNorm with
    bias (MPT's without), plain 2-matrix MLPs, their own key names."""
    d = _GPT_DEFAULTS.get(family, {})
    kosmos = family == "kosmos_2_text_model"  # Kosmos2TextConfig names them embed_dim and layers (its attribute_map
    # takes hidden_size and num_hidden_layers too)
    hidden_keys = ("embed_dim", "hidden_size") if kosmos else ("hidden_size", "n_embd", "n_embed", "d_model")
    layer_keys = (
        ("layers", "num_hidden_layers") if kosmos else ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
    )
    hidden = k.integer(*hidden_keys, default=d.get("hidden", _MISSING), field="hidden")
    arch: dict[str, Any] = {
        "hidden": hidden,
        "layers": k.integer(*layer_keys, default=d.get("layers", _MISSING), field="layers"),
        "heads": k.integer(*_HEADS_KEYS, default=d.get("heads", _MISSING), field="heads"),
        "vocab": k.integer("vocab_size", default=d.get("vocab", _MISSING), field="vocab"),
        "norm": "layernorm",
        "mlp": "gelu",
        "qkv_bias": True,
        "linear_bias": True,
    }
    if family == "gpt2":  # configuration_gpt2.py: n_inner None = 4 x n_embd; tied (PretrainedConfig default)
        arch.update(
            ffn=k.integer("n_inner", default=None, field="ffn") or 4 * hidden,
            tied_embeddings=k.flag("tie_word_embeddings", True),
            learned_positions=k.integer("n_positions", "max_position_embeddings", field="learned_positions"),
        )
    elif family in ("gptj", "codegen"):
        # configuration_gptj.py / modeling_gptj.py, configuration_codegen.py / modeling_codegen.py (5.24.0): attention
        # and MLP in parallel under one ln_1; q/k/v and out_proj without biases, fc_in/fc_out with; an lm_head bias;
        # untied by default (CodeGen's vocab_size defaults to 50400)
        arch.update(
            ffn=k.integer("n_inner", default=None, field="ffn") or 4 * hidden,
            tied_embeddings=k.flag("tie_word_embeddings", False),
            qkv_bias=False,
            out_bias=False,
            head_bias=True,
            layer_norms=1,
        )
    elif family == "gpt_neo":
        # configuration_gpt_neo.py / modeling_gpt_neo.py (5.24.0): GPT-2's block with q/k/v unbiased and out_proj
        # biased, MLP of intermediate_size (None: 4 x hidden), learned positions, tied by default; local and global
        # attention layers hold the same weights
        arch.update(
            ffn=k.integer("intermediate_size", default=None, field="ffn") or 4 * hidden,
            tied_embeddings=k.flag("tie_word_embeddings", True),
            learned_positions=k.integer("max_position_embeddings", default=2048, field="learned_positions"),
            qkv_bias=False,
        )
    elif family == "mpt":
        # configuration_mpt.py / modeling_mpt.py (5.24.0): LayerNorms without bias (one weight per element), Wqkv
        # and out_proj unbiased (always multi-head), an MLP of 4 x d_model (expansion_ratio, no_bias
        # and learned_pos_emb are not read: ALiBi, no position table), tied by default
        arch.update(
            ffn=4 * hidden,
            tied_embeddings=k.flag("tie_word_embeddings", True),
            norm="layernorm_nb",
            qkv_bias=False,
            linear_bias=False,
            alibi=True,  # MptModel builds its ALiBi biases whatever attn_config says
        )
    elif family == "gpt_neox_japanese":  # modeling_gpt_neox_japanese.py (5.25.0): GPT-NeoX's blocks without biases
        # but the LayerNorms' and the last layer's output projection's (dense_bias), an MLP of
        # int(hidden_size x intermediate_multiple_size), tied by default
        multiple = k.get("intermediate_multiple_size", default=4)
        if isinstance(multiple, bool) or not isinstance(multiple, int | float) or not 0 < multiple < 1e6:
            said = f"{k._key('intermediate_multiple_size')}: a positive multiple of hidden_size, got {multiple!r}"
            raise InputError(k.where, said[:200])
        arch.update(ffn=int(hidden * multiple), tied_embeddings=k.flag("tie_word_embeddings", True), qkv_bias=False,
                    linear_bias=False, out_bias=False, last_out_bias=True)  # fmt: skip
    elif family == "gpt_neox":  # configuration_gpt_neox.py: tie_word_embeddings=False, attention_bias=True
        arch.update(
            ffn=k.integer("intermediate_size", field="ffn"),
            tied_embeddings=k.flag("tie_word_embeddings", False),
            qkv_bias=k.flag("attention_bias", True),
            parallel_residual=k.flag("use_parallel_residual", True),  # GPTNeoXLayer: x + attn(ln1(x)) + mlp(ln2(x))
        )
    elif family == "opt":  # configuration_opt.py: ffn_dim, ReLU, learned positions, tied by default
        proj = k.integer("word_embed_proj_dim", default=hidden)
        if proj != hidden:
            raise InputError(
                k.where,
                f"{k._key('word_embed_proj_dim')}: only equal to hidden_size ({hidden}) is supported, "
                f"got {proj} (OPT-350m's projected embedding)",
            )
        bias = k.flag("enable_bias", True)
        arch.update(
            ffn=k.integer("ffn_dim", field="ffn"),
            tied_embeddings=k.flag("tie_word_embeddings", True),
            # OPTLearnedPositionalEmbedding keeps 2 rows more than max_position_embeddings (its offset, modeling_opt.py)
            learned_positions=k.integer("max_position_embeddings", default=2048, field="learned_positions") + 2,
            position_offset=2,
            qkv_bias=bias,
            linear_bias=bias,
        )
    elif family == "phi":
        # configuration_phi.py / modeling_phi.py (PhiDecoderLayer): attention and the fc1/fc2 MLP in parallel under
        # one input_layernorm; q, k, v and dense with biases; per-head LayerNorms of q and k when qk_layernorm;
        # untied; lm_head with a bias (bias=True, modeling_phi.py PhiForCausalLM)
        arch.update(
            head_bias=True,
            ffn=k.integer("intermediate_size", field="ffn"),
            kv_heads=k.integer("num_key_value_heads", default=arch["heads"], field="kv_heads"),
            tied_embeddings=k.flag("tie_word_embeddings", False),
            layer_norms=1,
            qk_norm="head" if k.flag("qk_layernorm", False) else "none",
        )
    elif family == "phi-msft":
        # Phi-1, 1.5 and 2's remote-code files (Microsoft's MixFormer modeling_phi.py): Phi's weights under other names
        # (transformers' convert_phi_weights_to_hf.py loads them one for one, strict, into PhiForCausalLM: Wqkv and
        # out_proj as q, k, v and dense, ln as input_layernorm, lm_head.ln and lm_head.linear as the final LayerNorm
        # and the biased head) and keys: n_head_kv null is a KV head per head, n_inner null 4 x n_embd (the script's
        # PhiConfig widths, 8,192 and 10,240 for Phi-1.5's 2,048 and Phi-2's 2,560)
        arch.update(
            head_bias=True,
            ffn=k.integer("n_inner", default=None, field="ffn") or 4 * hidden,
            kv_heads=k.integer("n_head_kv", default=None, field="kv_heads") or arch["heads"],
            tied_embeddings=k.flag("tie_word_embeddings", False),
            layer_norms=1,
        )
    elif family == "gpt_bigcode":
        # configuration_gpt_bigcode.py / modeling_gpt_bigcode.py (SantaCoder, StarCoder): GPT-2's layers with one K/V
        # head when multi_query (default true), learned positions, tied by default
        arch.update(
            ffn=k.integer("n_inner", default=None, field="ffn") or 4 * hidden,
            kv_heads=1 if k.flag("multi_query", True) else arch["heads"],
            tied_embeddings=k.flag("tie_word_embeddings", True),
            learned_positions=k.integer("n_positions", "max_position_embeddings", field="learned_positions"),
        )
    elif family == "starcoder2":
        # configuration_starcoder2.py / modeling_starcoder2.py: LayerNorm with bias, GQA, a 2-matrix c_fc/c_proj MLP,
        # every linear's bias by use_bias (default true), tied by default
        bias = k.flag("use_bias", True)
        arch.update(
            ffn=k.integer("intermediate_size", field="ffn"),
            kv_heads=k.integer("num_key_value_heads", default=2, field="kv_heads"),  # Starcoder2Config's default
            tied_embeddings=k.flag("tie_word_embeddings", True),
            qkv_bias=bias,
            linear_bias=bias,
        )
    elif family == "openai-gpt":
        # configuration_openai.py / modeling_openai.py (5.25.0: GPT-1): GPT-2's Conv1D block (c_attn, c_proj, c_fc of
        # 4 x n_embd, all biased) with its norms after each sub-layer (post-norm, ln_1 and ln_2) and no final norm,
        # learned positions (n_positions), tied; afn names the MLP's activation
        arch.update(
            ffn=4 * hidden,
            tied_embeddings=k.flag("tie_word_embeddings", True),
            learned_positions=k.integer(
                "n_positions", "max_position_embeddings", default=512, field="learned_positions"
            ),
            final_norm=False,
        )
    elif kosmos:
        # configuration_kosmos2.py / modeling_kosmos2.py (5.25.0: Kosmos-2's text model, under text_config): XGLM's
        # blocks with a LayerNorm over the attention's output before out_proj (inner_attn_ln) and one over the MLP's
        # intermediate before fc2 (ffn_layernorm), sinusoidal positions (a buffer); tied unless both its text model's
        # config and its wrapper's say not (Kosmos2ForConditionalGeneration ties by its own config, and its text model,
        # a Kosmos2TextForCausalLM, by the text config)
        if k.flag("add_cross_attention", False):
            said = (
                f"{k._key('add_cross_attention')}: true adds cross-attention to an encoder, which dpcost does not count"
            )
            raise InputError(k.where, said + "; false (as released) is counted")
        arch.update(
            ffn=k.integer("ffn_dim", default=8192, field="ffn"),
            tied_embeddings=k.flag("tie_word_embeddings", True),
            layer_norms=3,
            mlp_norm=True,
        )
    elif family in ("xglm", "biogpt"):
        # configuration_xglm.py / modeling_xglm.py, configuration_biogpt.py / modeling_biogpt.py (5.25.0): pre-norm
        # blocks with biased q, k, v, out_proj and fc1/fc2, a final layer_norm, the embedding scaled by sqrt(hidden)
        # (a multiplier, no weight), tied; XGLM's positions are sinusoidal (a buffer), BioGPT's a learned table with
        # 2 rows more than max_position_embeddings (BioGptLearnedPositionalEmbedding's offset)
        arch.update(  # XGLMConfig names the MLP's width ffn_dim, BioGptConfig intermediate_size
            ffn=k.integer("ffn_dim" if family == "xglm" else "intermediate_size", default=4096, field="ffn"),
            tied_embeddings=k.flag("tie_word_embeddings", True),
        )
        if family == "biogpt":
            positions = k.integer("max_position_embeddings", default=1024, field="learned_positions")
            arch["learned_positions"], arch["position_offset"] = positions + 2, 2
    elif family == "ctrl":
        # configuration_ctrl.py / modeling_ctrl.py (5.25.0: Salesforce's CTRL): pre-norm blocks of Wq, Wk, Wv and
        # dense, a ReLU MLP of dff (every linear biased), a final layernorm, sinusoidal positions (a buffer); the
        # lm_head's weight tied to the embedding, its bias its own
        arch.update(
            ffn=k.integer("dff", default=8192, field="ffn"),
            mlp="relu",
            activation="relu",  # nn.ReLU
            tied_embeddings=k.flag("tie_word_embeddings", True),
            head_bias=True,
        )
    elif family == "persimmon":
        # configuration_persimmon.py / modeling_persimmon.py (5.25.0: Adept's Persimmon, Fuyu's language model): a
        # fused query_key_value and dense with biases, with qk_layernorm a LayerNorm over one head's dimension for q
        # and one for k (weight and bias), a relu2 MLP of intermediate_size with biases, untied by default
        arch.update(
            ffn=k.integer("intermediate_size", default=16384, field="ffn"),
            tied_embeddings=k.flag("tie_word_embeddings", False),
            qk_norm="head" if k.flag("qk_layernorm", True) else "none",
        )
    else:  # bloom, configuration_bloom.py: 4h MLP, a LayerNorm after the embedding, ALiBi, tied; its own GELU
        arch.update(ffn=4 * hidden, tied_embeddings=k.flag("tie_word_embeddings", True), embedding_norm=True,
                    activation="bloom_gelu", alibi=True)  # fmt: skip
    if family in _GPT_ACTIVATIONS:
        runs = _OPENAI_GPT_ACT_FNS if family == "openai-gpt" else None
        arch.update(mlp_activation(k, *_GPT_ACTIVATIONS[family], runs=runs))
    if family in _GPT_DROPOUT:
        arch["dropout"] = _dropout(k, _GPT_DROPOUT[family], 0.1)
    return arch


def _falcon(k: Keys, family: str) -> dict[str, Any]:
    """FalconConfig (and the older RefinedWeb/RWForCausalLM keys): a 4h GELU MLP (ffn_hidden_size), multi-query
    attention unless new_decoder_architecture gives num_kv_heads groups, attention and MLP in parallel under one
    norm (two, ln_attn and ln_mlp, in the new architecture), bias=False, tied embeddings by default."""
    hidden = k.integer("hidden_size", "n_embed", field="hidden")
    heads = k.integer("num_attention_heads", "n_head", field="heads")
    new = k.flag("new_decoder_architecture", family == "RefinedWeb")
    if new:
        kv = k.integer("num_kv_heads", "n_head_kv", default=heads, field="kv_heads")
    elif k.flag("multi_query", True):
        kv = 1
    else:
        kv = heads
    parallel = k.flag("parallel_attn", True)
    # FalconDecoderLayer: side by side, the new decoder's ln_attn and ln_mlp both read the layer's input
    # (num_ln_in_parallel_attn, 2 when null), else one input_layernorm serves both
    two_side_by_side = parallel and new and k.integer("num_ln_in_parallel_attn", default=None) in (None, 2)
    bias = k.flag("bias", False)
    return {
        "hidden": hidden,
        "layers": k.integer("num_hidden_layers", "n_layer", field="layers"),
        "heads": heads,
        "kv_heads": kv,
        "ffn": k.integer("ffn_hidden_size", default=4 * hidden, field="ffn"),
        "vocab": k.integer("vocab_size", default=65024, field="vocab"),
        "tied_embeddings": k.flag("tie_word_embeddings", True),
        "norm": "layernorm",
        **mlp_activation(k, "activation", "gelu"),  # FalconMLP: get_activation(config.activation)
        "qkv_bias": bias,
        "linear_bias": bias,
        "layer_norms": 2 if two_side_by_side or not parallel else 1,
        "parallel_residual": two_side_by_side,
        "alibi": k.flag("alibi", False),  # Falcon-RW's; the rest rotate Q and K
    }


def _section(k: Keys, name: str) -> Keys:
    """The keys of a nested section (DBRX's and MPT's attn_config), absent or null read as empty."""
    section = k.cfg.get(name)
    section = {} if section is None else section
    if not isinstance(section, dict):
        raise InputError(k.where, f"{k._key(name)}: expected an object of {name} keys, got {section!r}"[:200])
    return Keys(section, k.where, k.family, f"{k.prefix}{name}.")


def _dbrx(k: Keys) -> dict[str, Any]:
    """DBRX (configuration_dbrx.py, modeling_dbrx.py): d_model, n_heads, n_layers; attn_config.kv_n_heads K/V heads;
    ffn_config's moe_num_experts gated experts of ffn_hidden_size, moe_top_k per token, a router without bias; fused
    Wqkv and out_proj without bias; LayerNorms without bias (one weight per element, as counted for RMSNorm);
    never tied (DbrxConfig refuses it)."""
    attn, ffn = _section(k, "attn_config"), _section(k, "ffn_config")
    heads = k.integer("n_heads", field="heads")
    arch = {
        "hidden": k.integer("d_model", field="hidden"),
        "layers": k.integer("n_layers", field="layers"),
        "heads": heads,
        "kv_heads": attn.integer("kv_n_heads", default=1, field="kv_heads"),
        "vocab": k.integer("vocab_size", field="vocab"),
        "tied_embeddings": False,
        "moe": {
            "experts": ffn.integer("moe_num_experts", default=4, field="moe.experts"),
            "active": ffn.integer("moe_top_k", default=1, field="moe.active"),
            "ffn": ffn.integer("ffn_hidden_size", default=3584, field="moe.ffn"),
            "expert_loop": True,  # DbrxExperts.forward runs DbrxExpertGLU once for each expert hit
        },
    }
    k.used.update(attn.used | ffn.used)
    return arch


def _qwen1(k: Keys) -> dict[str, Any]:
    """Qwen (1): intermediate_size is the fused gate+up width, 2 x the MLP's; q/k/v carry biases."""
    return {
        "hidden": k.integer("hidden_size", field="hidden"),
        "layers": k.integer("num_hidden_layers", field="layers"),
        "heads": k.integer("num_attention_heads", field="heads"),
        "ffn": k.integer("intermediate_size", field="ffn") // 2,
        "vocab": k.integer("vocab_size", field="vocab"),
        "tied_embeddings": k.flag("tie_word_embeddings", False),
        "qkv_bias": True,
    }


def _phi3_small(k: Keys) -> dict[str, Any]:
    """Microsoft's Phi-3-small (remote configuration_phi3_small.py and modeling_phi3_small.py, model_type phi3small):
    pre-norm layers of two LayerNorms (weight and bias); q, k and v fused in query_key_value and the output `dense`,
    both biased whatever attention_bias says (nn.Linear's default), num_key_value_heads KV heads of hidden / heads;
    a gated GELU MLP (up_proj hidden -> 2 x intermediate_size, GEGELU, down_proj back), both biased; a final
    LayerNorm; the head tied by PretrainedConfig's default (the released files set none). intermediate_size is
    ff_intermediate_size, else ff_dim_multiplier x (hidden // 3) x 2, rounded up to 256 under gegelu_pad_to_256.
    Phi3SmallConfig's defaults are the 7B's shapes. Every other layer's attention is block-sparse
    (dense_attention_every_n_layers), costed as dense causal attention."""
    hidden = k.integer("hidden_size", default=4096, field="hidden")
    multiplier = k.integer("ff_dim_multiplier", default=None)
    if "ff_intermediate_size" in k.cfg and k.cfg["ff_intermediate_size"] is None:  # the class default's, else 14336
        if multiplier is None:
            raise InputError(k.where, f"{k._key('ff_dim_multiplier')}: required where ff_intermediate_size is null")
        ffn = k.integer("ff_dim_multiplier", field="ffn") * (hidden // 3) * 2
        ffn = -(-ffn // 256) * 256 if k.flag("gegelu_pad_to_256", True) else ffn
    elif multiplier is not None:  # Phi3SmallConfig.__init__ raises likewise
        raise InputError(k.where, f"{k._key('ff_dim_multiplier')}: Phi-3-small takes it only beside "
                                  "ff_intermediate_size: null")  # fmt: skip
    else:
        ffn = k.integer("ff_intermediate_size", default=14336, field="ffn")
    return {
        "hidden": hidden,
        "layers": k.integer("num_hidden_layers", default=32, field="layers"),
        "heads": k.integer("num_attention_heads", default=32, field="heads"),
        "kv_heads": k.integer("num_key_value_heads", default=8, field="kv_heads"),
        "ffn": ffn,
        "mlp": "geglu",
        "vocab": k.integer("vocab_size", default=100352, field="vocab"),
        "tied_embeddings": k.flag("tie_word_embeddings", True),
        "norm": "layernorm",
        "qkv_bias": True,
        "linear_bias": True,
    }


def _telechat(k: Keys) -> dict[str, Any]:
    """China Telecom's TeleChat (Tele-AI/Telechat models/7B and 12B: configuration_telechat.py and
    modeling_telechat.py, model_type telechat): Llama's layers with query and key_value unbiased (one KV head per
    head), the output `dense` biased, a SwiGLU MLP whose down_proj alone is biased, RMSNorms, and one after the
    embedding under embed_layernorm; the head tied unless tie_word_embeddings says otherwise (PretrainedConfig's
    default: the 7B's file names none, the 12B's says false). TelechatConfig's defaults are the 7B's shapes, and its
    n_embed, where given, is the width."""
    return {
        "hidden": k.integer("n_embed", "hidden_size", default=4096, field="hidden"),
        "layers": k.integer("n_layer", "num_hidden_layers", default=30, field="layers"),
        "heads": k.integer("n_head", "num_attention_heads", default=32, field="heads"),
        "ffn": k.integer("ffn_hidden_size", default=12288, field="ffn"),
        "vocab": k.integer("vocab_size", default=160256, field="vocab"),
        "tied_embeddings": k.flag("tie_word_embeddings", True),
        "out_bias": True,
        "mlp_out_bias": True,
        "embedding_norm": k.flag("embed_layernorm", False),
    }


def _wrapped_family(cfg: dict[str, Any], key: str = "text_config") -> str | None:
    """The family of the text model of a multimodal wrapper dpcost has no map of its own for (LLaVA, Idefics3,
    InternVL, ...): its text_config's model_type (or `key`'s), where that is a family dpcost counts."""
    text = cfg.get(key)
    if cfg.get("model_type") in SUPPORTED_MODEL_TYPES or not isinstance(text, dict):
        return None
    inner = text.get("model_type")
    return inner if isinstance(inner, str) and inner in SUPPORTED_MODEL_TYPES and inner not in _NESTED else None


def _nested_family(wrapper: str, text: dict[str, Any], where: str) -> str:
    """The family of a wrapper's text model: its text_config's model_type where it names one (Mistral3's may be
    mistral, ministral3 or mistral4), else the wrapper's usual one (_NESTED)."""
    inner = text.get("model_type")
    inner = _TEXT_ALIASES.get(inner, inner) if isinstance(inner, str) else inner
    if inner is None or wrapper in _TEXT_CLASS_FIXED:
        return _NESTED[wrapper]
    if isinstance(inner, str) and inner in SUPPORTED_MODEL_TYPES and inner not in _NESTED:
        return inner
    known = ", ".join(SUPPORTED_MODEL_TYPES)
    said = f"text_config.model_type: {inner!r}"[:200]
    raise InputError(where, f"{said} is not a family dpcost can count; supported model_type values: {known}")


def _text_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """A wrapper's text_config; where it has no tie_word_embeddings of its own, the top level's (Qwen3-VL-8B's and
    -30B-A3B's files say it only there, and their checkpoints store lm_head, where transformers 5's
    Qwen3VLMoeTextConfig would default the text model to tied)."""
    text: dict[str, Any] = cfg["text_config"]
    if "tie_word_embeddings" not in text and "tie_word_embeddings" in cfg:
        text = {**text, "tie_word_embeddings": cfg["tie_word_embeddings"]}
    return text


# Families whose attention layers all slide when config.json gives a window (the modeling file passes
# config.sliding_window to every layer, or the config class makes every layer_types entry sliding), and the window
# transformers 5.24.0's config class defaults to.
_EVERY_LAYER_SLIDES = {"mistral": 4096, "ministral": 4096, "ministral3": None, "mixtral": None, "phi3": None,
                       "phi4_multimodal": None,
                       "phimoe": None, "starcoder2": None, "qwen3_moe": 4096}  # fmt: skip


def _gpt_oss_rope_mscale(k: Keys) -> float:
    """YaRN's cos/sin scale for gpt-oss: its rope_scaling (or rope_parameters), else what transformers' GptOssConfig
    fills in, YaRN with factor 32 (configuration_gpt_oss.py __post_init__); 0.1 ln(factor) + 1 for YaRN
    (Megatron-Core yarn_rotary_pos_embedding.py _yarn_get_mscale, without mscale keys), 1 for any other kind."""
    rope = k.cfg.get("rope_scaling") or k.cfg.get("rope_parameters")
    if rope is None:
        rope = {"rope_type": "yarn", "factor": 32.0}
    if not isinstance(rope, dict):
        raise InputError(k.where, f"{k._key('rope_scaling')}: expected a mapping, got {rope!r}"[:200])
    if (rope.get("rope_type") or rope.get("type")) != "yarn":
        return 1.0
    factor = rope.get("factor", 1.0)
    if isinstance(factor, bool) or not isinstance(factor, int | float) or not 0 < factor < float("inf"):
        raise InputError(k.where, f"{k._key('rope_scaling')}.factor: expected a positive number, got {factor!r}"[:200])
    return 1.0 if factor <= 1 else 0.1 * math.log(factor) + 1.0


# Families whose layer i slides unless (i + 1) % period == 0: (default window, default period, whether the config
# class reads sliding_window_pattern for the period).
_PERIODIC = {"gemma2": (4096, 2, False), "vaultgemma": (4096, 2, False), "gpt_oss": (128, 2, False),
             "olmo3": (4096, 4, False), "gemma3_text": (4096, 6, True), "cohere2": (4096, 4, True),
             "exaone4": (4096, 4, True), "exaone_moe": (4096, 4, True), "cohere2_moe": (4096, 4, True),
             "kolibri1": (513, 5, False), "beam": (512, 6, False)}  # fmt: skip
# Families whose layers from max_window_layers on slide where use_sliding_window: (default max_window_layers).
_FROM_MAX_WINDOW_LAYERS = {"qwen2": 28, "qwen3": 28, "qwen2_5_vl": 80, "qwen2_vl": 80, "mimo": 28, "dots1": 62}
# Families whose layer i slides unless i % period == 0 (the first layer global): (default window, period).
_PERIODIC_FROM_FIRST = {"cwm": (8192, 4), "granite_swa": (128, 4), "granitemoe_swa": (128, 4)}
# Families whose period is a key of their own: (default window, default period, its key).
_PERIOD_KEY = {"afmoe": (1024, 4, "global_attn_every_n_layers")}
# Families whose layers slide only where layer_types says (all full without it): their default window.
_LISTED_ONLY = {"mellum": 1024, "laguna": 512, "cohere_compass_text": 4096}
_USES_FLAG = {"qwen2", "qwen3", "qwen2_moe", "qwen3_moe", "qwen2_5_vl", "qwen2_vl", "mimo"}


def _period(k: Keys, default: int, key: str = "sliding_window_pattern") -> Any:
    """sliding_window_pattern: a whole number of layers (every period-th attends globally), or EXAONE 4's letters
    ("LLLG": L local, G global)."""
    period = k.get(key, default=default)
    if isinstance(period, str) and period and set(period) <= {"L", "G"}:
        return period
    if isinstance(period, int) and not isinstance(period, bool) and period > 0:
        return period
    said = f"{k._key(key)}: a whole number of layers above 0, or letters L and G, got {period!r}"
    raise InputError(k.where, said[:200])


def _gpt_neo_local_layers(k: Keys, layers: int) -> list[int]:
    """GPT-Neo's "local" layers: attention_layers, else attention_types expanded (GPTNeoConfig)."""
    listed = k.get("attention_layers", default=None)
    if listed is None:
        groups = k.get("attention_types", default=[[["global", "local"], layers // 2]])
        well_formed = isinstance(groups, list) and all(
            isinstance(g, list) and len(g) == 2 and isinstance(g[0], list) and isinstance(g[1], int)
            and not isinstance(g[1], bool) and g[1] >= 0 for g in groups
        )  # fmt: skip
        if not well_formed:
            said = f"{k._key('attention_types')}: [[kinds, repeats], ...] as GPTNeoConfig reads it, got {groups!r}"
            raise InputError(k.where, said[:200])
        listed = [kind for group, times in groups for _ in range(times) for kind in group]
    kinds = per_layer(k, "attention_layers", layers, {"global", "local"}, listed=listed)
    assert kinds is not None
    return [i for i, kind in enumerate(kinds) if kind == "local"]


def _llama4_chunked_layers(k: Keys, layers: int) -> list[int]:
    """Llama 4's chunked layers: layer_types, else the layers no_rope_layers marks as using RoPE (1), else three of
    every no_rope_layer_interval (Llama4TextConfig)."""
    listed = per_layer(k, "layer_types", layers, {"chunked_attention", "full_attention"})
    if listed is not None:
        return [i for i, kind in enumerate(listed) if kind == "chunked_attention"]
    rope = k.get("no_rope_layers", default=None) or None  # an empty list is the default too (Llama4TextConfig)
    if rope is not None and (not isinstance(rope, list) or len(rope) != layers or any(v not in (0, 1) for v in rope)):
        said = f"{k._key('no_rope_layers')}: 0 or 1 per layer ({layers}), got {rope!r}"
        raise InputError(k.where, said[:300])
    if rope is None:
        interval = k.integer("no_rope_layer_interval", default=4)
        if interval <= 0:
            raise InputError(k.where, f"{k._key('no_rope_layer_interval')}: must be more than 0, got {interval}")
        rope = [int((i + 1) % interval != 0) for i in range(layers)]
    return [i for i, uses_rope in enumerate(rope) if uses_rope]


def _sliding_layers(k: Keys, family: str, layers: int) -> list[int]:
    """The sliding layers of a family that takes them from layer_types, else from its config class's rule
    (_EVERY_LAYER_SLIDES, _PERIODIC, _FROM_MAX_WINDOW_LAYERS, Qwen2-MoE's own)."""
    listed = per_layer(k, "layer_types", layers, {"sliding_attention", "full_attention"})
    if listed is not None:
        return [i for i, kind in enumerate(listed) if kind == "sliding_attention"]
    if family in _EVERY_LAYER_SLIDES:
        return list(range(layers))
    if family in _LISTED_ONLY:
        return []
    if family == "cohere2_moe":  # Cohere2MoeConfig: the first first_k_dense_replace layers by a pattern of their own
        first = k.integer("first_k_dense_replace", default=0)
        head, rest = _period(k, 1, "prefix_dense_sliding_window_pattern"), _period(k, 4)
        if isinstance(head, str) or isinstance(rest, str):
            raise InputError(k.where, f"{k._key('sliding_window_pattern')}: a whole number of layers for Cohere 2 MoE")
        return [i for i in range(layers) if (i < first and (i + 1) % head) or (i >= first and (i - first + 1) % rest)]
    if family in _PERIODIC:
        _, default, reads_pattern = _PERIODIC[family]
        period = _period(k, default) if reads_pattern else default
        if isinstance(period, str):
            return [i for i in range(layers) if period[i % len(period)] == "L"]
        last = layers - 1 if family == "beam" else layers  # BeamConfig.__post_init__: the last layer attends in full
        return [i for i in range(layers) if (i + 1) % period and i != last]
    if family in _PERIODIC_FROM_FIRST:
        return [i for i in range(layers) if i % _PERIODIC_FROM_FIRST[family][1]]
    if family == "flint":  # FlintConfig.__post_init__: global in the first two, every fourth from 1, and the last
        return [i for i in range(layers) if not (i < 2 or i % 4 == 1 or i == layers - 1)]
    if family in _PERIOD_KEY:
        _, default, key = _PERIOD_KEY[family]
        period = k.integer(key, default=default)
        if period <= 0:
            raise InputError(k.where, f"{k._key(key)}: a whole number of layers above 0, got {period}")
        return [i for i in range(layers) if (i + 1) % period]
    top = k.integer("max_window_layers", default=28 if family == "qwen2_moe" else _FROM_MAX_WINDOW_LAYERS[family])
    if family == "qwen2_moe":
        return [i for i in range(layers) if (i + 1) % 2 and i < top]
    return [i for i in range(layers) if i >= top]


def _local_attention(k: Keys, family: str, arch: dict[str, Any]) -> dict[str, Any] | None:
    """The layers that attend in a sliding window or a chunk, and its size, as transformers 5.24.0 builds them:
    config.json's layer_types where it lists them, else each family's config class default (_EVERY_LAYER_SLIDES,
    _PERIODIC, _FROM_MAX_WINDOW_LAYERS; Qwen2-MoE's odd layers below max_window_layers; Gemma 4's and
    MiMo-V2-Flash's layers read as "attention" beside their "global attention" ones; Llama 4's chunked layers;
    GPT-Neo's "local" ones of window_size). None where no layer attends locally."""
    layers: int = arch["layers"]
    mixers = arch.get("mixers") or ("attention",) * layers
    kind = "sliding"
    if family == "gpt_neo":
        local = _gpt_neo_local_layers(k, layers)
        size = k.integer("window_size", default=256, field="local_attention.size")
    elif family == "llama4_text":
        kind, size = "chunked", k.integer("attention_chunk_size", default=8192, field="local_attention.size")
        local = _llama4_chunked_layers(k, layers)
    elif family == "lfm3":  # Lfm3Config: the sliding_attention layers attend in a window of sliding_window
        from dpcost.hf_hybrid import lfm3_layer_types

        size = k.integer("sliding_window", default=256, field="local_attention.size")
        local = [i for i, t in enumerate(lfm3_layer_types(k, layers)) if t == "sliding_attention"]
    elif family == "jet_nemotron":  # the swa layers: a window of efficient_attention_config.swa.window_size
        from dpcost.hf_hybrid import jet_nemotron_layer_types, jet_nemotron_section

        local = [i for i, t in enumerate(jet_nemotron_layer_types(k, layers)) if t == "swa"]
        if not local:
            return None
        size = jet_nemotron_section(k, "swa").integer("window_size", field="local_attention.size")
    elif family == "lara_mini":  # LaraMiniAttention: a window of sliding_window in the sliding_attention layers
        from dpcost.hf_hybrid import lara_mini_layer_types

        size = k.integer("sliding_window", default=512, field="local_attention.size")
        local = [i for i, t in enumerate(lara_mini_layer_types(k, layers)) if t == "sliding_attention"]
    elif family == "recurrent_gemma":  # every attention block attends in a window (RecurrentGemmaConfig)
        size = k.integer("attention_window_size", "sliding_window", default=2048, field="local_attention.size")
        local = [i for i, mixer in enumerate(mixers) if mixer == "attention"]
    elif family == "gemma3n_text":
        size = k.integer("sliding_window", default=512, field="local_attention.size")
        local = [i for i, t in enumerate(_gemma3n_layer_types(k, layers)) if t == "sliding_attention"]
    elif family in ("muse_spark_text", "muse_glimmer_text"):  # full attention every fourth layer from the last
        size = k.integer("sliding_window", default=2048, field="local_attention.size")
        types = k.get("layer_types", default=None)
        if types is None:
            types = ["full_attention" if (layers - 1 - i) % 4 == 0 else "sliding_attention" for i in range(layers)]
        listed = per_layer(k, "layer_types", layers, {"full_attention", "sliding_attention"}, types) or []
        if size is None or "sliding_attention" not in listed:
            return None
        local = [i for i, t in enumerate(listed) if t == "sliding_attention"]
    elif family == "step3p5":  # Step3p7Attention: a window of sliding_window in the sliding_attention layers
        size = k.integer("sliding_window", default=None, field="local_attention.size")
        if size is not None and size <= 0:
            raise InputError(k.where, f"{k._key('sliding_window')}: a window of 1 token or more, got {size}")
        types = _step3p5_padded(k, "layer_types", layers, {"full_attention", "sliding_attention"}) or []
        if size is None or "sliding_attention" not in types:
            return None
        local = [i for i, t in enumerate(types) if t == "sliding_attention"]
    elif family == "ergo":  # ErgoAttention: a window of sliding_window in the sliding_attention layers
        size = k.integer("sliding_window", default=_ERGO["sliding_window"], field="local_attention.size")
        local = [i for i, t in enumerate(_ergo_layer_types(k, layers)) if t == "sliding_attention"]
    elif family in ("modernbert-decoder", "modernbert"):  # a window of local_attention // 2 in the sliding layers
        # null is the class's "no window" (local_attention: int | None), not its default
        written = k.cfg.get("local_attention", _MODERNBERT_DECODER["local_attention"])
        local_attention = None if written is None else k.integer("local_attention", default=written)
        types = _modernbert_decoder_layer_types(k, layers)
        if not local_attention or "sliding_attention" not in types:  # sliding_window -1: no window
            return None
        size = local_attention // 2
        if size <= 0:
            said = f"a window of local_attention // 2, 1 token or more, got {local_attention}"
            raise InputError(k.where, f"{k._key('local_attention')}: {said}")
        local = [i for i, t in enumerate(types) if t == "sliding_attention"]
    elif family == "dots3_note_text":  # Dots3NoteTextAttention: a window of sliding_window, sliding_attention layers
        types = _dots3_layer_types(k, layers)
        if "sliding_attention" not in types:
            return None
        size = k.integer("sliding_window", "sliding_window_size", default=512, field="local_attention.size")
        local = [i for i, t in enumerate(types) if t == "sliding_attention"]
    elif family == "zaya":  # ZayaAttention: a window of sliding_window in the hybrid_sliding layers
        types = _zaya_layer_types(k, layers)
        if "hybrid_sliding" not in types:
            return None
        size = k.integer("sliding_window", field="local_attention.size")  # ZayaConfig requires it for such layers
        local = [i for i, t in enumerate(types) if t == "hybrid_sliding"]
    elif family == "inkling2_text":  # Inkling2SlidingAttention: a window of sliding_window_size, hybrid_sliding layers
        size = k.integer("sliding_window_size", default=_INKLING2["sliding_window_size"], field="local_attention.size")
        local = [i for i, mixer in enumerate(mixers) if mixer == "attention"]
    elif family == "inkling_text":  # InklingAttention: a window of sliding_window_size in the hybrid_sliding layers
        size = k.integer("sliding_window_size", default=_INKLING["sliding_window_size"], field="local_attention.size")
        local = [i for i, t in enumerate(_inkling_layer_types(k, layers)) if t == "hybrid_sliding"]
    elif family == "kolibri1_1":  # Kolibri1_1Attention: a window of sliding_window in the sliding_attention layers
        types, _ = _kolibri1_1_layers(k, layers)
        if "sliding_attention" not in types:
            return None
        written = k.cfg.get("sliding_window", 513)
        if type(written) is not int or written <= 0:  # Kolibri1_1Config rejects sliding layers without a window
            said = f"a window of 1 token or more for the sliding_attention layers, got {written!r}"
            raise InputError(k.where, f"{k._key('sliding_window')}: {said}"[:200])
        size = k.integer("sliding_window", default=513, field="local_attention.size")
        local = [i for i, t in enumerate(types) if t == "sliding_attention"]
    elif family in ("gemma4_text", "gemma4_unified_text", "mimo_v2_flash"):
        default = {"gemma4_text": 512, "gemma4_unified_text": 1024}.get(family, 129)
        size = k.integer("sliding_window", default=default, field="local_attention.size")
        if family == "mimo_v2_flash" and k.get("sliding_window_size", default=None) is not None:
            # "SGLang attends to sliding_window_size previous tokens plus the query" (configuration_mimo_v2_flash.py)
            size = k.integer("sliding_window_size", field="local_attention.size")
            if size <= 0:
                raise InputError(k.where, f"{k._key('sliding_window_size')}: must be more than 0, got {size}")
            size += 1
        local = [i for i, mixer in enumerate(mixers) if mixer.removeprefix(KV_SHARED) == "attention"]
    else:
        window: int | None
        if family in _EVERY_LAYER_SLIDES:
            window = _EVERY_LAYER_SLIDES[family]
        elif family in _PERIODIC:
            window = _PERIODIC[family][0]
        elif family in _PERIODIC_FROM_FIRST:
            window = _PERIODIC_FROM_FIRST[family][0]
        elif family in _PERIOD_KEY:
            window = _PERIOD_KEY[family][0]
        elif family in _LISTED_ONLY:
            window = _LISTED_ONLY[family]
        elif family == "flint":
            window = 513
        elif family in _FROM_MAX_WINDOW_LAYERS or family == "qwen2_moe":
            window = 4096
        else:
            return None
        if family in _USES_FLAG and not k.flag("use_sliding_window", False):
            return None
        # a window written as null is none (Mistral 7B v0.2 on), where an absent one is the config class's default
        if "sliding_window" in k.cfg and k.cfg["sliding_window"] is None:
            return None
        size = k.integer("sliding_window", default=window, field="local_attention.size")
        if size is None or size <= 0:  # Qwen2-MoE writes 0 for none
            return None
        local = _sliding_layers(k, family, layers)
    attention = [i for i in local if "attention" in mixers[i]]
    if not attention:
        return None
    every_layer = len(attention) == sum("attention" in m for m in mixers)
    return {"kind": kind, "size": size, "layers": () if every_layer else tuple(attention)}


# The readers of a single family each, by model_type
# MuseSparkTextConfig's defaults (configuration_muse_spark.py, transformers 5.25.0: Muse-Spark-Open-816B-A42B's shapes)
_MUSE_SPARK = {"vocab_size": 202048, "hidden_size": 8192, "intermediate_size": 16384, "num_hidden_layers": 62,
               "num_attention_heads": 128, "num_key_value_heads": 16, "head_dim": 64, "moe_intermediate_size": 4096,
               "num_local_experts": 256, "num_experts_per_tok": 8, "moe_hidden_size": 4096}  # fmt: skip
# MuseGlimmerTextConfig's defaults (configuration_muse_glimmer.py, 5.25.0: Muse-Glimmer-30B's shapes)
_MUSE_GLIMMER = {"vocab_size": 202048, "hidden_size": 6656, "intermediate_size": 19968, "num_hidden_layers": 52,
                 "num_attention_heads": 32, "num_key_value_heads": 2, "head_dim": 128}  # fmt: skip


def _muse(k: Keys) -> dict[str, Any]:
    """Meta's Muse text models (modeling_muse_spark.py, modeling_muse_glimmer.py, transformers 5.25.0): attention of
    head_dim heads with q, k, v and o biased by attention_bias, an output gate of its own projection (gate_proj,
    hidden -> heads x head_dim, as Qwen3-Next's gate: attention_gate) and weightless q/k and output norms; four norms a
    layer; sliding windows by layer_types (_local_attention). Muse Glimmer (muse_glimmer_text): a SwiGLU MLP of
    intermediate_size in every layer, tied by its wrapper's tie_word_embeddings. Muse Spark (muse_spark_text): the
    post-attention norm without a weight and two residual gates a layer; an MoE in the layers mlp_layer_types calls
    sparse (all by default), its num_local_experts experts working in moe_hidden_size (pre_expert_proj and
    post_expert_proj, with a norm of that width before them and one after: LatentMoE, latent_norms 2) under a
    router over the hidden state with a correction bias per expert, else the SwiGLU MLP; an output head of its own
    (MuseSparkForConditionalGeneration ties nothing)."""
    spark = k.family == "muse_spark_text"
    d = _MUSE_SPARK if spark else _MUSE_GLIMMER

    def integer(key: str, field: str = "") -> Any:
        return k.integer(key, default=d[key], field=field)

    layers = integer("num_hidden_layers", "layers")
    bias = k.flag("attention_bias", False)
    arch: dict[str, Any] = {
        "hidden": integer("hidden_size", "hidden"),
        "layers": layers,
        "heads": integer("num_attention_heads", "heads"),
        "kv_heads": integer("num_key_value_heads", "kv_heads"),
        "head_dim": integer("head_dim", "head_dim"),
        "ffn": integer("intermediate_size", "ffn"),
        "vocab": integer("vocab_size", "vocab"),
        "tied_embeddings": not spark and k.flag("tie_word_embeddings", False),
        "qkv_bias": bias,
        "out_bias": bias,
        "attention_gate": True,
        "layer_norms": 4,
    }
    if not spark:
        return arch
    arch.update(weightless_norms=1, residual_gates=2)
    kinds = per_layer(k, "mlp_layer_types", layers, {"dense", "sparse"}) or ["sparse"] * layers
    if "sparse" in kinds:
        arch["moe"] = {
            "experts": integer("num_local_experts", "moe.experts"),
            "active": integer("num_experts_per_tok", "moe.active"),
            "ffn": integer("moe_intermediate_size", "moe.ffn"),
            "latent": integer("moe_hidden_size", "moe.latent"),
            "latent_norms": 2,
            "router_bias": True,  # MuseSparkTopkRouter's e_score_correction_bias, a buffer the checkpoint holds
            "dense_layers": tuple(i for i, t in enumerate(kinds) if t == "dense"),
        }
    return arch


# Step3p7TextConfig's defaults (configuration_step3p7.py, transformers 5.25.0: model_type step3p5, StepFun's
# Step-3.5-Flash and Step-3.7-Flash text models)
_STEP3P5 = {"vocab_size": 128815, "hidden_size": 4096, "intermediate_size": 11264, "num_hidden_layers": 45,
            "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128, "num_experts_per_tok": 8,
            "n_routed_experts": 288, "moe_intermediate_size": 1280, "share_expert_dim": 1280}  # fmt: skip


def _step3p5_heads(k: Keys, types: list[str]) -> tuple[int, int, str]:
    """The query heads of Step 3.5's full and sliding layers, and the key that gave the sliding ones':
    num_attention_heads, and for the sliding ones
    num_sliding_attention_heads, else the released files' attention_other_setting.num_attention_heads. A
    per_layer_config the file holds (as transformers writes it) replaces both rules: the layers it names take its
    heads, the others num_attention_heads (Step3p7TextConfig.__post_init__ sets it only where the file gives none;
    its keys are layer numbers, zero-padded as to_dict writes them past layer 9)."""
    full = k.integer("num_attention_heads", default=_STEP3P5["num_attention_heads"], field="heads")
    overrides = k.get("per_layer_config", default=None)
    if overrides is None:
        key, sliding = "num_sliding_attention_heads", k.get("num_sliding_attention_heads", default=None)
        other = k.get("attention_other_setting", default=None)
        if sliding is None and other is not None:
            if not isinstance(other, dict):
                raise InputError(k.where, f"{k._key('attention_other_setting')}: a mapping, got {other!r}"[:200])
            key, sliding = "attention_other_setting.num_attention_heads", other.get("num_attention_heads", full)
        if sliding is not None and (type(sliding) is not int or sliding <= 0):
            raise InputError(k.where, f"{k._key(key)}: a whole number of heads from 1, got {sliding!r}"[:200])
        return full, sliding or full, key if sliding else "num_attention_heads"
    if not isinstance(overrides, dict):
        said = f"{k._key('per_layer_config')}: a mapping of layer to settings, got {overrides!r}"
        raise InputError(k.where, said[:200])
    heads = [full] * len(types)
    for name, layer in overrides.items():
        number = int(name) if isinstance(name, str) and name.isdigit() else None
        if number is None or number >= len(types):
            said = f"{k._key('per_layer_config')}: layer numbers from 0 to {len(types) - 1}, got {name!r}"
            raise InputError(k.where, said[:200])
        if not isinstance(layer, dict) or set(layer) - {"num_attention_heads"}:
            said = f"{k._key('per_layer_config')}.{name}: num_attention_heads alone (the key dpcost counts), got "
            raise InputError(k.where, f"{said}{layer!r}"[:200])
        heads[number] = layer.get("num_attention_heads", full)
    full_heads, sliding_heads = _heads_by_layer_type(k, "per_layer_config", heads, types)
    return full_heads, sliding_heads, "per_layer_config"


def _laguna_heads(k: Keys, arch: dict[str, Any], layers: int) -> None:
    """Laguna's query heads, num_attention_heads_per_layer[i] in layer i where the file gives the list
    (LagunaDecoderLayer, modeling_laguna.py, transformers 5.24.0; q_proj, o_proj and g_proj take the layer's count,
    k_proj and v_proj the shared KV heads): the sliding layers' count as the attention's heads and, where the full
    layers' count differs, those layers as "global attention" of their own (Laguna XS.2: 48 heads in its 10 full
    layers, 64 in its 30 sliding ones)."""
    listed = k.get("num_attention_heads_per_layer", default=None)
    if listed is None:
        return
    key = k._key("num_attention_heads_per_layer")
    if not isinstance(listed, list) or len(listed) != layers:
        raise InputError(k.where, f"{key}: a head count per layer ({layers}), got {listed!r}"[:300])
    types = per_layer(k, "layer_types", layers, {"full_attention", "sliding_attention"}) or ["full_attention"] * layers
    full_heads, sliding_heads = _heads_by_layer_type(k, "num_attention_heads_per_layer", listed, types)
    arch["heads"] = sliding_heads if "sliding_attention" in types else full_heads
    k.used["heads"] = key
    if full_heads != sliding_heads:  # both kinds are there: an absent kind takes the other's count
        arch["mixers"] = tuple("global attention" if t == "full_attention" else "attention" for t in types)
        arch["global_attention"] = {"head_dim": arch["head_dim"], "kv_heads": arch["kv_heads"], "heads": full_heads}
        k.used["global_attention.heads"] = key
        k.used["global_attention.kv_heads"] = k.used.get("kv_heads", k._key("num_key_value_heads"))


def _heads_by_layer_type(k: Keys, key: str, heads: list[Any], types: list[str]) -> tuple[int, int]:
    """The query heads of the full and of the sliding layers from a per-layer list of head counts (`key`: Laguna's
    num_attention_heads_per_layer, Step 3.5's per_layer_config): one count for every layer of a kind, where a kind
    absent takes the other's. Layers of one kind at different widths are refused: the spec holds one width a kind."""
    wrong = next((h for h in heads if type(h) is not int or h <= 0), None)
    if wrong is not None:
        raise InputError(k.where, f"{k._key(key)}: a whole number of heads from 1 for each layer, got {wrong!r}"[:200])
    by_kind = {kind: {h for h, t in zip(heads, types, strict=True) if t == kind} for kind in set(types)}
    for kind, counts in by_kind.items():
        if len(counts) > 1:
            said = f"one head count for every {kind} layer (layers of one kind at different widths are not counted), "
            said += f"got {sorted(map(str, counts))}"
            raise InputError(k.where, f"{k._key(key)}: {said}"[:200])
    one: dict[str, int] = {kind: next(iter(counts)) for kind, counts in by_kind.items()}
    full_count = one.get("full_attention") or one["sliding_attention"]
    return full_count, one.get("sliding_attention", full_count)


def _step3p5_padded(k: Keys, key: str, layers: int, allowed: set[str]) -> list[str] | None:
    """A per-layer list of Step 3.5's (layer_types, mlp_layer_types), with the entries the released files add for
    their num_nextn_predict_layers MTP layers cut off, as Step3p7TextConfig.__post_init__ cuts them."""
    listed = k.get(key, default=None)
    nextn = k.integer("num_nextn_predict_layers", default=0)  # the key __post_init__ pops (not num_mtp_layers)
    if isinstance(listed, list) and nextn and len(listed) == layers + nextn:
        listed = listed[:layers]
    return per_layer(k, key, layers, allowed, listed)


def _step3p5_dense_layers(k: Keys, layers: int) -> tuple[int, ...]:
    """Step 3.5's dense-MLP layers: mlp_layer_types' dense ones, else those the released files' moe_layers_enum
    (a comma-separated string or a list of layer indices) leaves out, else the first three
    (Step3p7TextConfig.__post_init__)."""
    kinds = _step3p5_padded(k, "mlp_layer_types", layers, {"dense", "sparse"})
    if kinds is not None:
        return tuple(i for i, t in enumerate(kinds) if t == "dense")
    listed = k.get("moe_layers_enum", default=None)
    if listed is None:
        return tuple(range(min(3, layers)))
    items = listed.split(",") if isinstance(listed, str) else listed
    try:
        sparse = {int(i) for i in items if str(i).strip()} if isinstance(items, list) else None
    except (TypeError, ValueError):
        sparse = None
    if sparse is None:
        said = f"layer indices, as a list or comma-separated, got {listed!r}"
        raise InputError(k.where, f"{k._key('moe_layers_enum')}: {said}"[:200])
    return tuple(i for i in range(layers) if i not in sparse)


def _step3p5(k: Keys) -> dict[str, Any]:
    """StepFun's Step 3.5 text model (model_type step3p5: Step3p7TextConfig and Step3p7TextModel,
    modeling_step3p7.py, transformers 5.25.0; Step-3.5-Flash and Step-3.7-Flash): attention with q/k norms per head
    and a sigmoid gate per head (g_proj hidden -> heads), biased by attention_bias; full or sliding layers by
    layer_types, the sliding ones with heads of their own (_step3p5_heads) and a window of sliding_window; a dense
    MLP in the layers _step3p5_dense_layers gives, experts with one ungated shared MLP of share_expert_dim in the
    rest, under a router whose correction bias the checkpoint holds; the released files' names (num_attention_groups,
    moe_num_experts, moe_top_k, share_expert_dims) before transformers' own, as its attribute_map reads them, and
    num_local_experts ignored, as the class ignores it. The MTP layers (num_nextn_predict_layers) are not built by
    transformers, and not counted."""
    d = _STEP3P5
    layers = k.integer("num_hidden_layers", default=d["num_hidden_layers"], field="layers")
    gating = k.get("gating", default=True)
    if gating is not True and gating != "per-head":
        said = 'true or "per-head" (a gate per head); Step3p7Attention\'s forward cannot apply another'
        raise InputError(k.where, f"{k._key('gating')}: {said}, got {gating!r}"[:200])
    if k.flag("mlp_bias", False):
        said = "true (biases on the dense and shared MLPs, not the experts, as modeling_step3p7.py builds them)"
        raise InputError(k.where, f"{k._key('mlp_bias')}: {said} is not counted")
    types = _step3p5_padded(k, "layer_types", layers, {"full_attention", "sliding_attention"})
    types = types or ["full_attention"] * layers
    full_heads, sliding_heads, sliding_key = _step3p5_heads(k, types)
    kv_heads = k.integer("num_attention_groups", "num_key_value_heads", default=d["num_key_value_heads"],
                         field="kv_heads")  # fmt: skip
    if "sliding_attention" in types:  # the base attention's heads are the sliding layers': say their key
        k.used["heads"] = k._key(sliding_key)
    k.used["global_attention.heads"] = k._key("num_attention_heads")
    k.used["global_attention.kv_heads"] = k.used["kv_heads"]
    head_dim = k.integer("head_dim", default=d["head_dim"], field="head_dim")
    bias = k.flag("attention_bias", False)
    both = "full_attention" in types and "sliding_attention" in types
    arch: dict[str, Any] = {
        "hidden": k.integer("hidden_size", default=d["hidden_size"], field="hidden"),
        "layers": layers,
        "heads": sliding_heads if "sliding_attention" in types else full_heads,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "ffn": k.integer("intermediate_size", default=d["intermediate_size"], field="ffn"),
        "vocab": k.integer("vocab_size", default=d["vocab_size"], field="vocab"),
        "tied_embeddings": k.flag("tie_word_embeddings", False),
        "qk_norm": "head",
        "qkv_bias": bias,
        "out_bias": bias,
        "head_gate": True,
    }
    if both and full_heads != sliding_heads:
        arch["mixers"] = tuple("global attention" if t == "full_attention" else "attention" for t in types)
        arch["global_attention"] = {"head_dim": head_dim, "kv_heads": kv_heads, "heads": full_heads}
    dense = _step3p5_dense_layers(k, layers)
    if len(dense) < layers:
        arch["moe"] = {
            "experts": k.integer("moe_num_experts", "n_routed_experts", default=d["n_routed_experts"],
                                 field="moe.experts"),
            "active": k.integer("moe_top_k", "num_experts_per_tok", default=d["num_experts_per_tok"],
                                field="moe.active"),
            "ffn": k.integer("moe_intermediate_size", default=d["moe_intermediate_size"], field="moe.ffn"),
            "shared": 1,
            "shared_ffn": k.integer("share_expert_dims", "share_expert_dim", default=d["share_expert_dim"],
                                    field="moe.shared_ffn"),
            "router_bias": True,  # Step3p7SparseMoeBlock's e_score_correction_bias, a buffer the checkpoint holds
            "dense_layers": dense,
        }  # fmt: skip
    return arch


# InklingTextConfig's defaults (configuration_inkling.py, transformers 5.25.0: Thinking Machines' Inkling)
_INKLING = {"vocab_size": 201024, "hidden_size": 6144, "num_hidden_layers": 66, "num_attention_heads": 64,
            "num_key_value_heads": 8, "head_dim": 128, "swa_num_attention_heads": 64, "swa_num_key_value_heads": 16,
            "swa_head_dim": 128, "sliding_window_size": 512, "d_rel": 16, "rel_extent": 1024, "conv_kernel_size": 4,
            "intermediate_size": 24576, "moe_intermediate_size": 3072, "n_routed_experts": 256,
            "num_experts_per_tok": 6, "n_shared_experts": 2}  # fmt: skip


def _inkling_layer_types(k: Keys, layers: int) -> list[str]:
    """Each of Inkling's layers, hybrid (full attention) or hybrid_sliding: layer_types, else sliding in the layers
    local_layer_ids lists, else in all but every sixth (InklingTextConfig.__post_init__; ids past the last layer are
    ignored, as there)."""
    types = per_layer(k, "layer_types", layers, {"hybrid", "hybrid_sliding"})
    if types is not None:
        return types
    ids = k.get("local_layer_ids", default=None)
    if ids is None:
        return ["hybrid" if (i + 1) % 6 == 0 else "hybrid_sliding" for i in range(layers)]
    if not isinstance(ids, list) or any(type(i) is not int for i in ids):
        raise InputError(k.where, f"{k._key('local_layer_ids')}: a list of layer numbers, got {ids!r}"[:200])
    return ["hybrid_sliding" if i in set(ids) else "hybrid" for i in range(layers)]


def _inkling_attention_shapes(k: Keys, types: list[str], d: dict[str, int]) -> tuple[list[int], list[int]]:
    """Inkling's and Inkling 2's full (hybrid) and sliding (hybrid_sliding) layers' query heads, KV heads and
    head_dim: num_attention_heads, num_key_value_heads and head_dim, and their swa_ keys. Each is read as the field
    it gives, for messages: the sliding layers' are the base attention where any layer slides, the full ones'
    global_attention's."""
    sliding = "hybrid_sliding" in types
    full = [k.integer(key, default=d[key], field=("global_attention." if sliding else "") + field)
            for key, field in (("num_attention_heads", "heads"), ("num_key_value_heads", "kv_heads"),
                               ("head_dim", "head_dim"))]  # fmt: skip
    swa = [k.integer(key, default=d[key], field=field if sliding else "")
           for key, field in (("swa_num_attention_heads", "heads"), ("swa_num_key_value_heads", "kv_heads"),
                              ("swa_head_dim", "head_dim"))]  # fmt: skip
    return full, swa


def _inkling_widths(k: Keys) -> tuple[int, int]:
    """Inkling's (dense MLP, expert) widths: intermediate_size and moe_intermediate_size, except in files that give
    dense_intermediate_size, whose intermediate_size is the experts' (InklingTextConfig.__post_init__, #49416)."""
    d = _INKLING
    if k.get("dense_intermediate_size", default=None) is None:
        dense = k.integer("intermediate_size", default=d["intermediate_size"], field="ffn")
        return dense, k.integer("moe_intermediate_size", default=d["moe_intermediate_size"], field="moe.ffn")
    experts = k.integer("intermediate_size", default=d["intermediate_size"], field="moe.ffn")
    return k.integer("dense_intermediate_size", field="ffn"), experts


def _inkling(k: Keys) -> dict[str, Any]:
    """Thinking Machines' Inkling text model (model_type inkling_text: InklingTextConfig and InklingTextModel,
    modeling_inkling.py, transformers 5.25.0): an embedding followed by an RMSNorm; in every layer attention with
    q/k norms per head, no biases, relative position logits (RelativeLogitsSpec: r_proj and a bank of rel_extent
    distances, a sliding layer's window long) and short convolutions on its keys and values, full (hybrid) or
    sliding (hybrid_sliding: _inkling_layer_types) with heads of their own (swa_num_attention_heads,
    swa_num_key_value_heads, swa_head_dim) in a window of sliding_window_size; a short convolution on each
    sub-layer's output; a dense SwiGLU MLP with a learned scale in the first dense_mlp_idx layers (or as
    mlp_layer_types lists them), else n_routed_experts experts and n_shared_experts shared ones of
    moe_intermediate_size, all weighed by one router (router_weighs_shared) with a learned scale and a correction bias
    over the routed ones, which the checkpoint holds. The output head is never tied (InklingForCausalLM's
    _tied_weights_keys is empty). The MTP layers are not built by transformers, and not counted."""
    d = _INKLING
    layers = k.integer("num_hidden_layers", default=d["num_hidden_layers"], field="layers")
    types = _inkling_layer_types(k, layers)
    full, sliding = _inkling_attention_shapes(k, types, d)
    heads, kv_heads, head_dim = sliding if "hybrid_sliding" in types else full
    full_heads, full_kv, full_dim = full
    dense_ffn, expert_ffn = _inkling_widths(k)
    arch: dict[str, Any] = {
        "hidden": k.integer("hidden_size", default=d["hidden_size"], field="hidden"),
        "layers": layers,
        "heads": heads,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "ffn": dense_ffn,
        "vocab": k.integer("vocab_size", default=d["vocab_size"], field="vocab"),
        "tied_embeddings": False,
        "qk_norm": "head",
        "embedding_norm": True,
        "activation_scalars": 1,  # InklingMLP's global_scale
        "relative_logits": {"rank": k.integer("d_rel", default=d["d_rel"], field="relative_logits.rank"),
                            "extent": k.integer("rel_extent", default=d["rel_extent"], field="relative_logits.extent")},
        "sconv_kernel": k.integer("conv_kernel_size", default=d["conv_kernel_size"], field="sconv_kernel"),
    }  # fmt: skip
    if "hybrid" in types and "hybrid_sliding" in types:
        arch["mixers"] = tuple("global attention" if t == "hybrid" else "attention" for t in types)
        arch["global_attention"] = {"head_dim": full_dim, "kv_heads": full_kv, "heads": full_heads}
    kinds = per_layer(k, "mlp_layer_types", layers, {"dense", "sparse"})
    if kinds is None:
        first = k.integer("dense_mlp_idx", default=0)
        kinds = ["dense" if i < first else "sparse" for i in range(layers)]
    if "sparse" in kinds:
        experts = k.integer("n_routed_experts", default=d["n_routed_experts"], field="moe.experts")
        shared = k.integer("n_shared_experts", default=d["n_shared_experts"], field="moe.shared")
        if shared < 1:
            said = "1 or more: InklingTopkRouter cuts the shared experts' scores off the end of its own, and cannot"
            raise InputError(k.where, f"{k._key('n_shared_experts')}: {said} route without them, got {shared}")
        arch["moe"] = {
            "experts": experts,
            "active": k.integer("num_experts_per_tok", default=d["num_experts_per_tok"], field="moe.active"),
            "ffn": expert_ffn,
            "shared": shared,
            "shared_ffn": expert_ffn,
            "router_weighs_shared": True,
            "router_scale": True,
            "router_bias": True,  # InklingTopkRouter's e_score_correction_bias, a buffer the checkpoint holds
            "dense_layers": tuple(i for i, t in enumerate(kinds) if t == "dense"),
        }
    return arch


# ErgoConfig's defaults (configuration_ergo.py, transformers 5.25.0: Amazon's Ergo)
_ERGO = {"vocab_size": 262144, "hidden_size": 8192, "num_hidden_layers": 64, "num_attention_heads": 64,
         "num_key_value_heads": 8, "first_dense_intermediate_size": 32768, "num_dense_blocks": 1,
         "moe_intermediate_size": 4096, "shared_intermediate_size": 8192, "num_experts": 256, "num_experts_per_tok": 8,
         "sliding_window": 512, "global_attention_every_n_layers": 4}  # fmt: skip


def _ergo_layer_types(k: Keys, layers: int) -> list[str]:
    """Each of Ergo's layers, full_attention or sliding_attention: layer_types, else full in every
    global_attention_every_n_layers-th (ErgoConfig.__post_init__)."""
    types = per_layer(k, "layer_types", layers, {"full_attention", "sliding_attention"})
    if types is not None:
        return types
    every = k.integer("global_attention_every_n_layers", default=_ERGO["global_attention_every_n_layers"])
    if every == 0:  # __post_init__ takes (i + 1) % every, a negative period as Python's % does
        said = f"{k._key('global_attention_every_n_layers')}: a period other than 0 (it divides), got 0"
        raise InputError(k.where, said)
    return ["sliding_attention" if (i + 1) % every else "full_attention" for i in range(layers)]


def _ergo(k: Keys) -> dict[str, Any]:
    """Amazon's Ergo (model_type ergo: ErgoConfig and ErgoForCausalLM, modeling_ergo.py, transformers 5.25.0): fused
    q/k/v projections to heads of hidden / num_attention_heads (a head_dim key is not read) with q/k norms per head, no
    biases; full or sliding layers by layer_types (else full every global_attention_every_n_layers-th) in a window
    of sliding_window; four norms a layer and a learned gate (a hidden-wide vector) on each of its two residual adds;
    squared-ReLU MLPs of two matrices, dense in the first num_dense_blocks layers (or as mlp_layer_types lists them)
    at first_dense_intermediate_size, else num_experts experts and one shared expert, each with a norm over its output
    (the routed ones' weights per expert: MoESpec.expert_norms), under a router whose correction bias the checkpoint
    holds. The output head is never tied (ErgoForCausalLM names no tied weights)."""
    d = _ERGO
    layers = k.integer("num_hidden_layers", default=d["num_hidden_layers"], field="layers")
    heads = k.integer("num_attention_heads", default=d["num_attention_heads"], field="heads")
    hidden = k.integer("hidden_size", default=d["hidden_size"], field="hidden")
    if hidden < 1:
        raise InputError(k.where, f"{k._key('hidden_size')}: a width of 1 or more, got {hidden}")
    if not 1 <= heads <= hidden:  # ErgoAttention's head_dim, hidden_size // num_attention_heads, would be 0 or fail
        said = f"{k._key('num_attention_heads')}: from 1 to hidden_size ({hidden}), got {heads}"
        raise InputError(k.where, said)
    arch: dict[str, Any] = {
        "hidden": hidden,
        "layers": layers,
        "heads": heads,
        "kv_heads": k.integer("num_key_value_heads", default=d["num_key_value_heads"], field="kv_heads"),
        "head_dim": hidden // heads,  # ErgoAttention: config.hidden_size // config.num_attention_heads
        "ffn": k.integer("first_dense_intermediate_size", default=d["first_dense_intermediate_size"], field="ffn"),
        "mlp": "relu",  # relu2: two matrices, as ReLU
        "activation": "relu2",  # ErgoMLP: ACT2FN["relu2"]
        "vocab": k.integer("vocab_size", default=d["vocab_size"], field="vocab"),
        "tied_embeddings": False,
        "qk_norm": "head",
        "layer_norms": 4,
        "norm_in_fp32": True,  # ErgoRMSNorm: F.rms_norm in fp32 with the fp32 weight, then cast
        "residual_gates": 2,
    }
    kinds = per_layer(k, "mlp_layer_types", layers, {"dense", "sparse"})
    if kinds is None:
        first = k.integer("num_dense_blocks", default=d["num_dense_blocks"])
        kinds = ["dense" if i < first else "sparse" for i in range(layers)]
    if "sparse" in kinds:
        arch["moe"] = {
            "experts": k.integer("num_experts", default=d["num_experts"], field="moe.experts"),
            "active": k.integer("num_experts_per_tok", default=d["num_experts_per_tok"], field="moe.active"),
            "ffn": k.integer("moe_intermediate_size", default=d["moe_intermediate_size"], field="moe.ffn"),
            "shared": 1,
            "shared_ffn": k.integer("shared_intermediate_size", default=d["shared_intermediate_size"],
                                    field="moe.shared_ffn"),
            "expert_norms": True,
            "router_bias": True,  # ErgoTopkRouter's e_score_correction_bias, a buffer the checkpoint holds
            "dense_layers": tuple(i for i, t in enumerate(kinds) if t == "dense"),
        }  # fmt: skip
    return arch


# Inkling2TextConfig's defaults (configuration_inkling2.py, transformers 5.25.0: Inkling-2-Small's shapes)
_INKLING2 = {"vocab_size": 201024, "unpadded_vocab_size": 200058, "hidden_size": 4608, "num_hidden_layers": 48,
             "num_attention_heads": 48, "num_key_value_heads": 8, "head_dim": 128, "swa_num_attention_heads": 48,
             "swa_num_key_value_heads": 8, "swa_head_dim": 128, "sliding_window_size": 1024, "d_rel": 16,
             "rel_extent": 1024, "conv_kernel_size": 4, "moe_intermediate_size": 2304, "n_routed_experts": 384,
             "num_experts_per_tok": 8, "n_layers_per_attn_res_block": 6}  # fmt: skip


def _inkling2(k: Keys) -> dict[str, Any]:
    """Thinking Machines' Inkling 2 text model (model_type inkling2_text: Inkling2TextConfig and Inkling2TextModel,
    modeling_inkling2.py, transformers 5.25.0): Inkling's embedding norm, relative logits (their mixing weights
    scaled per head and channel) and convolutions on keys, values and sub-layer outputs, with full (hybrid) or sliding
    (hybrid_sliding) layers by layer_types, else full every sixth; queries scaled per head and channel before they are
    clipped, keys clipped and values normed without weights, an output gate per channel (gate_proj), a sink logit per
    head from each token (sink_proj); the full layers' queries, keys and values each read their own attention
    residual under its own norm, and their key and value convolutions take per-token taps too; every sub-layer's
    input an attention residual over blocks of n_layers_per_attn_res_block layers; experts only, under a router
    whose correction bias the checkpoint holds; an output head of unpadded_vocab_size rows, never tied."""
    d = _INKLING2
    layers = k.integer("num_hidden_layers", default=d["num_hidden_layers"], field="layers")
    types = per_layer(k, "layer_types", layers, {"hybrid", "hybrid_sliding"})
    types = types or ["hybrid" if (i + 1) % 6 == 0 else "hybrid_sliding" for i in range(layers)]
    sliding = "hybrid_sliding" in types
    full, swa = _inkling_attention_shapes(k, types, d)
    heads, kv_heads, head_dim = swa if sliding else full
    vocab = k.integer("vocab_size", default=d["vocab_size"], field="vocab")
    rows = k.integer("unpadded_vocab_size", default=d["unpadded_vocab_size"], field="head_vocab")
    experts = k.integer("n_routed_experts", default=d["n_routed_experts"], field="moe.experts")
    arch: dict[str, Any] = {
        "hidden": k.integer("hidden_size", default=d["hidden_size"], field="hidden"),
        "layers": layers,
        "heads": heads,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "vocab": vocab,
        "head_vocab": rows,
        "tied_embeddings": False,
        "embedding_norm": True,
        "norm_in_fp32": True,  # Inkling2RMSNorm: (weight * x in fp32), then cast
        "attention_gate": True,  # o_proj.gate_proj: a sigmoid gate per channel from the layer's input
        "sink_projection": True,
        "query_scale": True,
        "relative_logits": {"rank": k.integer("d_rel", default=d["d_rel"], field="relative_logits.rank"),
                            "extent": k.integer("rel_extent", default=d["rel_extent"], field="relative_logits.extent"),
                            "scaled": True},
        "sconv_kernel": k.integer("conv_kernel_size", default=d["conv_kernel_size"], field="sconv_kernel"),
        "attention_residual_block": k.integer("n_layers_per_attn_res_block", default=d["n_layers_per_attn_res_block"],
                                              field="attention_residual_block"),
        "mixers": tuple("global attention" if t == "hybrid" else "attention" for t in types),
        "global_attention": {"heads": full[0], "kv_heads": full[1], "head_dim": full[2], "input_norms": 3,
                             "dynamic_convs": True},
        "moe": {
            "experts": experts,
            "active": k.integer("num_experts_per_tok", default=d["num_experts_per_tok"], field="moe.active"),
            "ffn": k.integer("moe_intermediate_size", default=d["moe_intermediate_size"], field="moe.ffn"),
            "router_bias": True,  # Inkling2TopKRouter's e_score_correction_bias, a buffer the checkpoint holds
        },
    }  # fmt: skip
    if "hybrid" not in types:  # no full layer: nothing holds global_attention's shapes
        del arch["mixers"], arch["global_attention"]
    return arch


# ZayaConfig's defaults (configuration_zaya.py, transformers 5.25.0: Zyphra's ZAYA1-8B)
_ZAYA = {"vocab_size": 262272, "hidden_size": 2048, "num_hidden_layers": 40, "num_attention_heads": 8,
         "num_key_value_heads": 2, "head_dim": 128, "moe_intermediate_size": 2048, "num_experts": 16,
         "router_hidden_size": 256, "cca_time0": 2, "cca_time1": 2}  # fmt: skip


def _zaya_layer_types(k: Keys, layers: int) -> list[str]:
    """Each of ZAYA's layers, hybrid (full attention) or hybrid_sliding: layer_types, else all hybrid."""
    return per_layer(k, "layer_types", layers, {"hybrid", "hybrid_sliding"}) or ["hybrid"] * layers


# Keys of Zyphra's legacy Megatron-style ZAYA files (ZAYA1-base, ZAYA1-8B-legacy), which transformers 5.25.0 does not
# read: num_hidden_layers counts the attention and the MoE layers apart (2 per native layer), ffn_hidden_size is
# twice moe_intermediate_size (gate and up), num_query_groups the KV heads, zaya_mlp_expansion the router's width,
# cca_num_q_heads the query heads where given, kv_channels head_dim and moe_router_topk the experts per token
# (sglang's ZAYA checkpoint-loading tests set the native and legacy schemas of one tiny model side by side)
_ZAYA_LEGACY = ("ffn_hidden_size", "num_query_groups", "zaya_mlp_expansion", "cca", "moe_router_topk")


def _zaya_legacy(k: Keys) -> dict[str, Any]:
    """A legacy ZAYA file (_ZAYA_LEGACY) read as the native model it is: its keys in the native ones' place, then
    _zaya."""
    runs = k.integer("num_hidden_layers", default=2 * _ZAYA["num_hidden_layers"])
    if runs <= 0 or runs % 2:
        said = "an even number of layers (an attention and an MoE layer for each of ZAYA's layers)"
        raise InputError(k.where, f"{k._key('num_hidden_layers')}: {said}, got {runs}")
    ffn = k.integer("ffn_hidden_size", default=2 * _ZAYA["moe_intermediate_size"])
    if ffn <= 0 or ffn % 2:
        raise InputError(k.where, f"{k._key('ffn_hidden_size')}: the experts' gate and up widths, even, got {ffn}")
    native = {key: value for key, value in k.cfg.items() if key not in ("num_hidden_layers", "num_key_value_heads")}
    native.update(
        num_hidden_layers=runs // 2,
        moe_intermediate_size=ffn // 2,
        num_key_value_heads=k.integer("num_query_groups", "num_key_value_heads", default=_ZAYA["num_key_value_heads"]),
        num_attention_heads=k.integer("cca_num_q_heads", "num_attention_heads", default=_ZAYA["num_attention_heads"]),
        head_dim=k.integer("head_dim", "kv_channels", default=_ZAYA["head_dim"]),
        router_hidden_size=k.integer("zaya_mlp_expansion", default=_ZAYA["router_hidden_size"]),
        num_experts_per_tok=k.integer("moe_router_topk", "num_experts_per_tok", default=1),
    )
    return _zaya(Keys(native, k.where, k.family, k.prefix))


def _zaya(k: Keys) -> dict[str, Any]:
    """Zyphra's ZAYA (model_type zaya: ZayaConfig and ZayaForCausalLM, modeling_zaya.py, transformers 5.25.0): in every
    layer compressed convolutional attention (CCASpec: q, k and a value split between the current and the previous
    token, biased by attention_bias, the queries and keys convolved and the keys scaled per KV head) and num_experts
    experts of moe_intermediate_size, one of them per token (a skip expert beside them holds nothing), under an MLP
    router (router_hidden_size) whose balancing biases, one per expert and the skip, the checkpoint holds; a learned
    scale and bias on both terms of each residual add and on the embedding; two norms a layer; tied by default, the
    head biased by lm_head_bias; full or sliding layers by layer_types."""
    d = _ZAYA
    if "moe_intermediate_size" not in k.cfg and any(key in k.cfg for key in _ZAYA_LEGACY):
        return _zaya_legacy(k)
    active = k.integer("num_experts_per_tok", default=1, field="moe.active")
    if active != 1:  # ZayaConfig.validate_architecture
        said = f"{k._key('num_experts_per_tok')}: 1 (ZAYA routes each token to one expert), got {active}"
        raise InputError(k.where, said)
    bias = k.flag("attention_bias", False)
    experts = k.integer("num_experts", default=d["num_experts"], field="moe.experts")
    kv_heads = k.integer("num_key_value_heads", default=d["num_key_value_heads"], field="kv_heads")
    head_dim = k.integer("head_dim", default=d["head_dim"], field="head_dim")
    if (kv_heads * head_dim) % 2:  # ZayaCCAProjection halves the value width between two projections
        said = f"{k._key('num_key_value_heads')} x {k._key('head_dim')}: an even value width (ZAYA takes half of it "
        raise InputError(k.where, f"{said}from the previous token), got {kv_heads} x {head_dim}")
    return {
        "hidden": k.integer("hidden_size", default=d["hidden_size"], field="hidden"),
        "layers": k.integer("num_hidden_layers", default=d["num_hidden_layers"], field="layers"),
        "heads": k.integer("num_attention_heads", default=d["num_attention_heads"], field="heads"),
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "vocab": k.integer("vocab_size", default=d["vocab_size"], field="vocab"),
        "tied_embeddings": k.flag("tie_word_embeddings", True),
        "head_bias": k.flag("lm_head_bias", False),
        "qkv_bias": bias,
        "out_bias": bias,
        "cca": {"depthwise": k.integer("cca_time0", default=d["cca_time0"], field="cca.depthwise"),
                "grouped": k.integer("cca_time1", default=d["cca_time1"], field="cca.grouped")},
        "residual_scaling": True,
        "moe": {
            "experts": experts,
            "active": 1,
            "ffn": k.integer("moe_intermediate_size", default=d["moe_intermediate_size"], field="moe.ffn"),
            "router_outputs": experts + 1,  # the skip expert's score
            "router_mlp": k.integer("router_hidden_size", default=d["router_hidden_size"], field="moe.router_mlp"),
            "router_bias": True,  # ZayaRouter's balancing_biases, a buffer the checkpoint holds
        },
    }  # fmt: skip


# Dots3NoteTextConfig's defaults (configuration_dots3_note.py, transformers 5.25.0: rednote's dots3-note), and the
# sliding layers' latent attention its __post_init__ fills in from the released files' swa_ keys
_DOTS3 = {"vocab_size": 152064, "hidden_size": 5120, "intermediate_size": 13824, "moe_intermediate_size": 1536,
          "num_hidden_layers": 46, "num_attention_heads": 128, "n_shared_experts": 1, "n_routed_experts": 256,
          "kv_lora_rank": 512, "q_lora_rank": 1024, "qk_rope_head_dim": 64, "v_head_dim": 128,
          "qk_nope_head_dim": 128, "num_experts_per_tok": 8, "index_topk": 2048, "index_head_dim": 128,
          "index_n_heads": 64, "shared_experts_intermediate_size": 1536}  # fmt: skip
_DOTS3_SLIDING = {"num_attention_heads": 64, "q_lora_rank": 1024, "kv_lora_rank": 1024, "head_dim": 256,
                  "qk_nope_head_dim": 192, "v_head_dim": 128}  # fmt: skip
_DOTS3_SHAPE_KEYS = {"num_attention_heads", "num_key_value_heads", "q_lora_rank", "kv_lora_rank", "head_dim",
                     "qk_nope_head_dim", "v_head_dim", "qk_rope_head_dim"}  # fmt: skip


def _dots3_layer_types(k: Keys, layers: int) -> list[str]:
    """Each of dots3's layers, as Dots3NoteTextConfig.__post_init__ resolves them: layer_types, else indexed in the
    first two and every fourth from layer 1 and sliding in the rest (all full where use_sliding_window is false);
    the released files' use_dsa renames full_attention to indexed_attention (the default where the file has no
    per_layer_config key, even a null one) or back."""
    use_dsa = k.get("use_dsa", default=None if "per_layer_config" in k.cfg else True)
    types = per_layer(k, "layer_types", layers, {"full_attention", "indexed_attention", "sliding_attention"})
    if types is None:
        full = "full_attention" if use_dsa is False else "indexed_attention"
        slides = k.flag("use_sliding_window", True)
        types = [full if not slides or i < 2 or i % 4 == 1 else "sliding_attention" for i in range(layers)]
    if use_dsa is not None:
        old, new = ("full_attention", "indexed_attention") if use_dsa else ("indexed_attention", "full_attention")
        types = [new if t == old else t for t in types]
    return types


_Dots3Shape = dict[str, tuple[Any, str]]  # an attention key's value, and the key (as the file spells it) that gave it


def _dots3_layer_shapes(k: Keys, types: list[str]) -> list[_Dots3Shape]:
    """Each layer's attention keys where they are not the top level's, as Dots3NoteTextConfig resolves them: the
    file's per_layer_config entries where it has the key (null or empty: none), else, for the sliding layers, the
    released files' swa_ keys over _DOTS3_SLIDING (__post_init__)."""
    if "per_layer_config" not in k.cfg:
        swa = {key: (k.get(f"swa_{key}", default=v), k._key(f"swa_{key}")) for key, v in _DOTS3_SLIDING.items()}
        head_dim, nope = swa["head_dim"][0], swa["qk_nope_head_dim"][0]
        rope = k.get("swa_qk_rope_head_dim", default=None)
        if rope is None:
            rope = head_dim - nope if type(head_dim) is int and type(nope) is int else head_dim
        swa["qk_rope_head_dim"] = (rope, k._key("swa_qk_rope_head_dim"))
        swa["num_key_value_heads"] = (k.get("swa_num_key_value_heads", default=64), k._key("swa_num_key_value_heads"))
        return [swa if t == "sliding_attention" else {} for t in types]
    given = k.cfg["per_layer_config"] or {}
    where = k._key("per_layer_config")
    if not isinstance(given, dict):
        raise InputError(k.where, f"{where}: a mapping of layer to settings, got {given!r}"[:200])
    shapes: list[_Dots3Shape] = [{} for _ in types]
    for name, entry in given.items():
        layer = int(name) if isinstance(name, int | str) and str(name).isdigit() else None
        if layer is None or layer >= len(types) or not isinstance(entry, dict) or set(entry) - _DOTS3_SHAPE_KEYS:
            said = f"layer numbers from 0 to {len(types) - 1}, each with attention shapes ("
            said += f"{', '.join(sorted(_DOTS3_SHAPE_KEYS))}; dpcost counts no other key per layer)"
            raise InputError(k.where, f"{where}: {said}, got {name!r}: {entry!r}"[:300])
        shapes[layer] = {key: (value, f"{where}.{name}.{key}") for key, value in entry.items()}
    return shapes


def _dots3_mla(k: Keys, shape: _Dots3Shape, field: str) -> tuple[int, dict[str, Any]]:
    """(heads, MLA) of one of dots3's layers: `shape`'s keys over the top-level ones, checked as
    Dots3NoteTextConfig.validate_architecture checks each kind of layer (as many KV heads as query heads)."""

    def size(key: str) -> int:
        if key not in shape:
            return int(k.integer(key, default=_DOTS3[key], field=f"{field}.{key}" if field else ""))
        value, said = shape[key]
        if type(value) is not int or not 0 < value <= 10_000_000:
            raise InputError(k.where, f"{said}: a whole number from 1 to 10,000,000, got {value!r}"[:200])
        return value

    mla = {"q_lora_rank": size("q_lora_rank"), "kv_lora_rank": size("kv_lora_rank"),
           "qk_nope_head_dim": size("qk_nope_head_dim"), "qk_rope_head_dim": size("qk_rope_head_dim"),
           "v_head_dim": size("v_head_dim"), "rope_key_norm": True}  # fmt: skip
    heads = size("num_attention_heads")
    kv_heads, said = shape.get("num_key_value_heads") or (
        k.integer("num_key_value_heads", default=128),
        k._key("num_key_value_heads"),
    )
    if kv_heads != heads:
        raise InputError(k.where, f"{said}: as many KV heads as query heads in each kind of dots3 layer "
                                  f"({heads}), got {kv_heads!r}"[:200])  # fmt: skip
    return heads, mla


def _dots3_moe_layers(k: Keys, layers: int) -> list[str]:
    """Each layer's MLP, dense or sparse: mlp_layer_types, else sparse from first_k_dense_replace on where
    moe_layer_freq says (a flag per layer, or every moe_layer_freq-th by Python's %: __post_init__, which reads it
    only there)."""
    kinds = per_layer(k, "mlp_layer_types", layers, {"dense", "sparse"})
    if kinds is not None:
        return kinds
    first = k.integer("first_k_dense_replace", default=1)
    freq = k.get("moe_layer_freq", default=1)

    def sparse(i: int) -> bool:
        if i < first:
            return False
        if isinstance(freq, list) and i < len(freq):
            return bool(freq[i])
        if isinstance(freq, int | float) and not isinstance(freq, list) and freq != 0:
            return i % freq == 0
        said = f"{k._key('moe_layer_freq')}: a period other than 0 or a flag per layer ({layers}), got {freq!r}"
        raise InputError(k.where, said[:200])

    return ["sparse" if sparse(i) else "dense" for i in range(layers)]


def _dots3(k: Keys) -> dict[str, Any]:
    """rednote's dots3 text model (model_type dots3_note_text: Dots3NoteTextConfig and Dots3NoteTextModel,
    modeling_dots3_note.py, transformers 5.25.0): DeepSeek's latent attention (a query latent, q_lora_rank required)
    with an RMSNorm over the shared rotary key and a sigmoid gate per head (g_proj), biased by attention_bias; layers
    indexed (DeepSeek-V3.2's indexer), full or sliding by _dots3_layer_types, each layer's latent attention shaped by
    _dots3_layer_shapes (one shape for the sliding layers, another for the rest), a window of sliding_window; a dense
    MLP where _dots3_moe_layers says, else experts and one shared MLP of n_shared_experts x
    shared_experts_intermediate_size, under a router whose correction bias the checkpoint holds; untied by default."""
    d = _DOTS3
    layers = k.integer("num_hidden_layers", default=d["num_hidden_layers"], field="layers")
    types = _dots3_layer_types(k, layers)
    if "q_lora_rank" in k.cfg and k.cfg["q_lora_rank"] is None:  # validate_architecture: MLA queries need a latent
        raise InputError(k.where, f"{k._key('q_lora_rank')}: a query latent's width (dots3 requires one), got null")
    if k.integer("n_shared_experts", default=d["n_shared_experts"]) < 1:  # validate_architecture
        raise InputError(k.where, f"{k._key('n_shared_experts')}: 1 or more (dots3 requires a shared expert)")
    sliding = "sliding_attention" in types
    shapes = _dots3_layer_shapes(k, types)
    by_kind: dict[bool, set[tuple[int, tuple[tuple[str, Any], ...]]]] = {}
    index_dim = k.integer("index_head_dim", default=d["index_head_dim"])
    for t, shape in zip(types, shapes, strict=True):
        field = "" if t == "sliding_attention" else "global_attention.mla" if sliding else "mla"
        heads, mla = _dots3_mla(k, shape, field)
        by_kind.setdefault(t == "sliding_attention", set()).add((heads, tuple(mla.items())))
        head_dim = shape["head_dim"][0] if "head_dim" in shape else k.integer("head_dim", default=256)
        if t == "sliding_attention" and head_dim != mla["qk_nope_head_dim"] + mla["qk_rope_head_dim"]:
            said = "head_dim must equal qk_nope_head_dim + qk_rope_head_dim in the sliding layers"
            raise InputError(k.where, f"{shape.get('head_dim', (0, k._key('head_dim')))[1]}: {said}, got {head_dim}")
        if t == "indexed_attention" and mla["qk_rope_head_dim"] > index_dim:
            said = f"at most index_head_dim ({index_dim}) in the indexed layers (validate_architecture)"
            raise InputError(k.where, f"{k._key('qk_rope_head_dim')}: {said}, got {mla['qk_rope_head_dim']}")
    if any(len(kinds) > 1 for kinds in by_kind.values()):
        said = "one attention shape for the sliding layers and one for the others (layers of one kind at different "
        raise InputError(k.where, f"{k._key('per_layer_config')}: {said}widths are not counted)")
    (full_heads, full_mla), *_ = ((h, dict(m)) for h, m in by_kind.get(False, by_kind.get(True, set())))
    bias = k.flag("attention_bias", False)
    arch: dict[str, Any] = {
        "hidden": k.integer("hidden_size", default=d["hidden_size"], field="hidden"),
        "layers": layers,
        "heads": full_heads,
        "ffn": k.integer("intermediate_size", default=d["intermediate_size"], field="ffn"),
        "vocab": k.integer("vocab_size", default=d["vocab_size"], field="vocab"),
        "tied_embeddings": k.flag("tie_word_embeddings", False),
        "qkv_bias": bias,
        "out_bias": bias,
        "head_gate": True,  # g_proj: hidden -> heads
        "mla": full_mla,
    }
    if sliding:
        ((heads, sliding_mla),) = by_kind[True]
        arch.update(heads=heads, mla=dict(sliding_mla))
        if False in by_kind:
            arch["mixers"] = tuple("attention" if t == "sliding_attention" else "global attention" for t in types)
            arch["global_attention"] = {"heads": full_heads, "mla": full_mla, "head_dim": 1, "kv_heads": 1}
    indexed = tuple(i for i, t in enumerate(types) if t == "indexed_attention")
    if indexed:
        arch["indexer"] = {
            "heads": k.integer("index_n_heads", default=d["index_n_heads"], field="indexer.heads"),
            "head_dim": k.integer("index_head_dim", default=d["index_head_dim"], field="indexer.head_dim"),
            "topk": k.integer("index_topk", default=d["index_topk"], field="indexer.topk"),
            "layers": indexed,
        }
    kinds = _dots3_moe_layers(k, layers)
    if "sparse" in kinds:
        shared = k.integer("n_shared_experts", default=d["n_shared_experts"], field="moe.shared")
        width = k.integer("moe_shared_expert_intermediate_size", "shared_experts_intermediate_size",
                          default=d["shared_experts_intermediate_size"], field="moe.shared_ffn")  # fmt: skip
        arch["moe"] = {
            "experts": k.integer("n_routed_experts", default=d["n_routed_experts"], field="moe.experts"),
            "active": k.integer("num_experts_per_tok", default=d["num_experts_per_tok"], field="moe.active"),
            "ffn": k.integer("moe_intermediate_size", default=d["moe_intermediate_size"], field="moe.ffn"),
            "router_bias": True,  # Dots3NoteTextTopkRouter's e_score_correction_bias, a buffer the checkpoint holds
            "dense_layers": tuple(i for i, t in enumerate(kinds) if t == "dense"),
            **({"shared": 1, "shared_ffn": shared * width} if width > 0 else {}),
        }
    return arch


# ModernBertDecoderConfig's defaults (configuration_modernbert_decoder.py, transformers 5.25.0: the Ettin decoders'
# 150M shapes)
_MODERNBERT_DECODER = {"vocab_size": 50368, "hidden_size": 768, "intermediate_size": 1152, "num_hidden_layers": 22,
                       "num_attention_heads": 12, "local_attention": 128}  # fmt: skip


def _modernbert_decoder_layer_types(k: Keys, layers: int) -> list[str]:
    """Each ModernBERT-decoder layer, full_attention or sliding_attention: layer_types, else full every
    global_attn_every_n_layers-th from layer 0 (ModernBertDecoderConfig.__post_init__; the Hub's files still give
    it)."""
    types = per_layer(k, "layer_types", layers, {"full_attention", "sliding_attention"})
    if types is not None:
        return types
    every = k.integer("global_attn_every_n_layers", default=3)
    if every == 0:
        raise InputError(k.where, f"{k._key('global_attn_every_n_layers')}: a period other than 0 (it divides), got 0")
    return ["sliding_attention" if i % every else "full_attention" for i in range(layers)]


def _modernbert_decoder(k: Keys) -> dict[str, Any]:
    """ModernBERT-decoder (model_type modernbert-decoder: ModernBertDecoderForCausalLM, modeling_modernbert_decoder.py,
    transformers 5.25.0; the Ettin decoders): LayerNorms (biased by norm_bias) after the embedding, before the
    attention (none in layer 0, which reads the embedding's: that one is counted as layer 0's) and before the MLP, and
    at the end; q, k, v and o of hidden x hidden, biased by attention_bias; a GeGLU MLP (Wi makes the
    input and its gate) biased by mlp_bias; full layers every global_attn_every_n_layers-th, the others sliding in a
    window of local_attention // 2; a prediction head (dense, biased by classifier_bias, and a norm) before the
    output matrix, which is tied and biased by decoder_bias."""
    d = _MODERNBERT_DECODER
    hidden = k.integer("hidden_size", default=d["hidden_size"], field="hidden")
    heads = k.integer("num_attention_heads", default=d["num_attention_heads"], field="heads")
    attention_bias, mlp_bias = k.flag("attention_bias", False), k.flag("mlp_bias", False)
    vocab = k.integer("vocab_size", default=d["vocab_size"], field="vocab")
    _check_padding_row(k, k.integer("pad_token_id", default=None), vocab)  # where a file gives one
    arch: dict[str, Any] = {
        "hidden": hidden,
        "layers": k.integer("num_hidden_layers", default=d["num_hidden_layers"], field="layers"),
        "heads": heads,
        "ffn": k.integer("intermediate_size", default=d["intermediate_size"], field="ffn"),
        "mlp": "geglu",
        "vocab": vocab,
        "tied_embeddings": k.flag("tie_word_embeddings", True),
        "norm": "layernorm" if k.flag("norm_bias", False) else "layernorm_nb",  # LayerNorms, biased by norm_bias
        # the embedding's norm is counted as layer 0's attention norm, which that layer does not hold (Identity)
        "qkv_bias": attention_bias,
        "out_bias": attention_bias,
        "head_bias": k.flag("decoder_bias", True),
        "head_transform": "dense_biased" if k.flag("classifier_bias", False) else "dense",
    }
    if mlp_bias:  # Wi and Wo: linear_bias where out_bias says o_proj's own
        arch["linear_bias"] = True
    return arch


def _table_rows(k: Keys, key: str, default: int, field: str = "") -> int:
    """Rows of a lookup table every token indexes (row 0 at least): 1 or more."""
    rows = int(k.integer(key, default=default, field=field))
    if rows < 1:
        raise InputError(k.where, f"{k._key(key)}: a table of 1 row or more (each token reads row 0), got {rows}")
    return rows


def _check_padding_row(k: Keys, pad: int | None, vocab: int) -> None:
    """pad_token_id, where there is one, must be a row of the embedding (nn.Embedding's padding_idx)."""
    if pad is not None and vocab >= 1 and not 0 <= pad < vocab:
        raise InputError(k.where, f"{k._key('pad_token_id')}: a row of the embedding, 0 to {vocab - 1}, got {pad}")


def _dropout(k: Keys, key: str, default: float) -> float:
    """A dropout probability from a file: from 0 to below 1, as nn.Dropout takes it in training."""
    value = k.get(key, default=default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1:
        raise InputError(k.where, f"{k._key(key)}: a probability from 0 to below 1, got {value!r}"[:200])
    return float(value)


def _bert_style(k: Keys, family: str) -> dict[str, Any]:
    """BERT and the encoders built like it, as their ForCausalLM class builds them (modeling_bert.py BertLMHeadModel,
    modeling_roberta.py, modeling_xlm_roberta.py, modeling_camembert.py, modeling_data2vec_text.py, modeling_ernie.py,
    modeling_roberta_prelayernorm.py, modeling_xlm_roberta_xl.py, modeling_megatron_bert.py, and
    modeling_bert_generation.py BertGenerationDecoder; transformers 5.25.0): a token, a learned position
    (max_position_embeddings rows) and a segment table (type_vocab_size rows; ERNIE's task-type table beside it with
    use_task_id); every linear layer and LayerNorm biased; a 2-matrix MLP of intermediate_size; LayerNorms after each
    sub-layer and the embedding (post-norm), or before them and after the last layer (_BERT_PRE_NORM); a prediction
    head (dense, its activation and a LayerNorm; BertGeneration has none) before the output matrix, tied by default,
    and its bias. Attention is bidirectional unless is_decoder (the released files do not set it: masked language
    models). DistilBERT (modeling_distilbert.py DistilBertForMaskedLM) is the same under its own key names and
    without segment tables; MPNet (modeling_mpnet.py MPNetForMaskedLM) adds a bias per head for each of
    relative_attention_num_buckets relative distances, held once by the encoder, and has no segment tables. The
    RoBERTa-style families' positions start after padding_idx (_BERT_PADDING_OFFSET). ESM (modeling_esm.py
    EsmForMaskedLM: ESM-1b, ESM-2) has pre-norm layers with a final norm (emb_layer_norm_after), an embedding norm
    only with emb_layer_norm_before, rotary positions where position_embedding_type says so, no segment table, and a
    contact prediction head its masked-LM training does not run. Their training forward drops out the hidden state
    before each residual add, and the attention probabilities, at hidden_dropout_prob (0.1 in the BERT and RoBERTa
    classes and files)."""
    vocab, hidden, layers, heads, ffn, positions, types = _BERT_DEFAULTS[family]
    names = _DISTILBERT_KEYS if family == "distilbert" else {}

    def integer(key: str, default: int, field: str) -> int:
        return int(k.integer(*names.get(key, (key,)), default=default, field=field))

    if k.flag("add_cross_attention", False):
        said = f"{k._key('add_cross_attention')}: true adds cross-attention to an encoder, which dpcost does not count"
        raise InputError(k.where, said + "; false (as released) is counted")
    esm = family == "esm"
    if esm and k.flag("is_folding_model", False):
        said = f"{k._key('is_folding_model')}: true is ESMFold, whose folding trunk dpcost does not count"
        raise InputError(k.where, said + "; an ESM language model's file (false) is counted")
    position_kind = k.text("position_embedding_type", "absolute") if esm else "absolute"
    if position_kind not in ("absolute", "rotary"):
        said = f"{k._key('position_embedding_type')}: absolute or rotary (EsmEmbeddings), got {position_kind!r}"
        raise InputError(k.where, said[:200])
    types = _table_rows(k, "type_vocab_size", types) if types else 0
    if family == "ernie" and k.flag("use_task_id", False):
        types += _table_rows(k, "task_type_vocab_size", 3)
    vocab = k.integer("vocab_size", default=_MISSING if esm else vocab, field="vocab")
    # MPNetEmbeddings' padding row is 1 whatever pad_token_id says
    pad = 1 if family == "mpnet" else k.integer("pad_token_id", default=1 if family in _BERT_PADDING_OFFSET else 0)
    if family == "mpnet" and vocab == 1:
        raise InputError(k.where, f"{k._key('vocab_size')}: 2 rows or more (MPNet's padding row is row 1), got 1")
    _check_padding_row(k, pad, vocab)
    offset = pad + 1 if family in _BERT_PADDING_OFFSET else 0
    rows = k.integer("max_position_embeddings", default=positions, field="learned_positions")
    if position_kind == "rotary":  # no table: the rotary embedding reads no row
        rows = offset = 0
    elif rows < 1 or rows <= offset:
        need = f"more than the {offset} rows before the first position (pad_token_id + 1)" if offset else "1 or more"
        raise InputError(k.where, f"{k._key('max_position_embeddings')}: {need}, got {rows}")
    dropout = _dropout(k, "dropout" if family == "distilbert" else "hidden_dropout_prob", 0.1)
    pre_norm = family in _BERT_PRE_NORM
    # EsmIntermediate runs ESM's own GELU, gelu_python's arithmetic, whatever hidden_act says (modeling_esm.py gelu)
    hidden_act = names.get("hidden_act", ("hidden_act",))[0]
    activation = {"activation": "gelu_python", "mlp": "gelu"} if esm else mlp_activation(k, hidden_act, "gelu")
    arch: dict[str, Any] = {
        "hidden": integer("hidden_size", hidden, "hidden"),
        "layers": integer("num_hidden_layers", layers, "layers"),
        "heads": integer("num_attention_heads", heads, "heads"),
        "ffn": integer("intermediate_size", ffn, "ffn"),
        "vocab": vocab,
        **activation,
        "norm": "layernorm",
        "qkv_bias": True,
        "linear_bias": True,
        "tied_embeddings": k.flag("tie_word_embeddings", True),
        "learned_positions": rows,
        "position_offset": offset,
        "dropout": dropout,
        "token_types": types,
        "embedding_norm": k.flag("emb_layer_norm_before", False) if esm else family not in _BERT_NO_EMBEDDING_NORM,
        "final_norm": pre_norm,
        "head_transform": "none" if family == "bert-generation" else "dense_biased",
        "head_bias": True,
        "bidirectional": not k.flag("is_decoder", False),
    }
    if family == "mpnet":  # its attention always buckets distances into 32, reading rows up to 31
        buckets = k.integer("relative_attention_num_buckets", default=32)
        if buckets < 32:
            said = f"{k._key('relative_attention_num_buckets')}: 32 or more (MPNetAttention's 32 buckets)"
            raise InputError(k.where, f"{said}, got {buckets}")
        arch["relative_position_buckets"] = buckets
    if esm:
        arch["contact_head"] = True
    return arch


# AlbertConfig's defaults (configuration_albert.py, transformers 5.25.0: albert-xxlarge-v2's shapes)
_ALBERT = {"vocab_size": 30000, "embedding_size": 128, "hidden_size": 4096, "num_hidden_layers": 12,
           "num_hidden_groups": 1, "num_attention_heads": 64, "intermediate_size": 16384, "inner_group_num": 1,
           "max_position_embeddings": 512, "type_vocab_size": 2, "pad_token_id": 0}  # fmt: skip


def _albert_runs(layers: int, groups: int, inner: int) -> list[int]:
    """The held layer each run is: AlbertTransformer runs group int(i / (layers / groups)) for layer i, each group
    its inner_group_num layers in turn."""
    return [int(i / (layers / groups)) * inner + j for i in range(layers) for j in range(inner)]


def _layer_weights(runs: list[int]) -> list[int]:
    """ModelArchitecture.layer_weights from the held layer each run is: the first run of a held layer holds its
    weights, and the later runs read them; empty where every layer runs once."""
    holder: dict[int, int] = {}
    weights = [holder.setdefault(held, i) for i, held in enumerate(runs)]
    return weights if any(w != i for i, w in enumerate(weights)) else []


def _albert(k: Keys) -> dict[str, Any]:
    """ALBERT (model_type albert: AlbertForMaskedLM, modeling_albert.py, transformers 5.25.0; Lan et al. 2020): BERT's
    post-norm layers, biased, in num_hidden_groups groups of inner_group_num layers that the num_hidden_layers
    layers run in turn (layer_weights: a group's weights are held once); token, position and segment tables
    embedding_size wide under their LayerNorm, mapped to hidden by a biased linear layer; a prediction head from
    hidden to embedding_size (dense, activation, LayerNorm) before the tied output matrix and its bias."""

    def integer(key: str, field: str = "") -> int:
        return int(k.integer(key, default=_ALBERT[key], field=field))

    layers, groups, inner = integer("num_hidden_layers"), integer("num_hidden_groups"), integer("inner_group_num")
    for key, value in (("num_hidden_layers", layers), ("inner_group_num", inner)):
        if not 1 <= value <= MAX_LAYERS:
            raise InputError(k.where, f"{k._key(key)}: a whole number from 1 to {MAX_LAYERS:,}, got {value}"[:200])
    if not 1 <= groups <= layers:  # more groups than layers: some group no layer runs
        said = f"{k._key('num_hidden_groups')}: from 1 to num_hidden_layers ({layers}), each group run, got {groups}"
        raise InputError(k.where, said)
    if layers * inner > MAX_LAYERS:
        said = f"{k._key('inner_group_num')}: {layers} x {inner} layers run, more than {MAX_LAYERS:,}"
        raise InputError(k.where, said)
    vocab, types = integer("vocab_size", "vocab"), _table_rows(k, "type_vocab_size", _ALBERT["type_vocab_size"])
    rows = _table_rows(k, "max_position_embeddings", _ALBERT["max_position_embeddings"], "learned_positions")
    _check_padding_row(k, integer("pad_token_id"), vocab)
    dropout = _dropout(k, "hidden_dropout_prob", 0.0)
    runs = _albert_runs(layers, groups, inner)
    return {
        "hidden": integer("hidden_size", "hidden"),
        "layers": len(runs),
        "heads": integer("num_attention_heads", "heads"),
        "ffn": integer("intermediate_size", "ffn"),
        "vocab": vocab,
        **mlp_activation(k, "hidden_act", "gelu_new"),
        "norm": "layernorm",
        "qkv_bias": True,
        "linear_bias": True,
        "tied_embeddings": k.flag("tie_word_embeddings", True),
        "learned_positions": rows,
        "token_types": types,
        "embedding_width": integer("embedding_size", "embedding_width"),
        "embedding_norm": True,
        "final_norm": False,
        "head_transform": "dense_biased",
        "head_bias": True,
        "dropout": dropout,
        "bidirectional": True,
        "layer_weights": _layer_weights(runs),
    }


# DoryConfig's defaults (configuration_dory.py, transformers 5.25.0: NVIDIA-Nemotron-Labs-Dory1.0-4B's shapes)
_DORY = {"vocab_size": 131072, "hidden_size": 2560, "intermediate_size": 7168, "num_hidden_layers": 36,
         "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 256, "sliding_window": 1024,
         "n_input_layers": 8, "n_output_layers": 8, "n_recurrent_loops": 2}  # fmt: skip


def _dory_runs(k: Keys) -> tuple[list[int], list[str]]:
    """Dory's layers in the order a token runs them, as the held layer each is, and each held layer's kind, as
    DoryConfig.__post_init__ resolves them: the released files list attention and MLP blocks apart (an "mlp" entry
    after each layer's; every count then halves); n_recurrent_layers defaults to what the input and output layers
    leave; layer_types to a full layer every fourth. DoryModel runs the input layers, the recurrent ones
    n_recurrent_loops times, then the output layers."""

    def integer(key: str) -> int:
        return int(k.integer(key, default=_DORY.get(key), field="layers" if key == "num_hidden_layers" else ""))

    layers, first, last, loops = (integer(key) for key in ("num_hidden_layers", "n_input_layers", "n_output_layers",
                                                           "n_recurrent_loops"))  # fmt: skip
    recurrent = k.integer("n_recurrent_layers", default=None)
    types = k.get("layer_types", default=None)
    if types is not None and (not isinstance(types, list) or not all(isinstance(t, str) for t in types)):
        raise InputError(k.where, f"{k._key('layer_types')}: a list of layer kinds, got {types!r}"[:200])
    if types is not None and "mlp" in types:  # attention and MLP blocks listed apart: each pair is one layer
        types, layers, first, last = types[::2], layers // 2, first // 2, last // 2
        recurrent = None if recurrent is None else recurrent // 2
    if types is None:
        types = ["full_attention" if (i + 1) % 4 == 0 else "sliding_attention" for i in range(layers)]
    recurrent = layers - first - last if recurrent is None else recurrent
    if len(types) != layers or not set(types) <= {"full_attention", "sliding_attention"}:
        said = f"{k._key('layer_types')}: full_attention or sliding_attention for each of {layers} layers"
        raise InputError(k.where, f"{said}, got {types!r}"[:200])
    if min(first, last, recurrent) < 0 or first + recurrent + last != layers:
        said = f"{k._key('n_input_layers')} + n_recurrent_layers + n_output_layers must equal num_hidden_layers"
        raise InputError(k.where, f"{said} ({layers}), got {first} + {recurrent} + {last}")
    if loops < 1 or first + last + loops * recurrent > MAX_LAYERS:
        said = f"{k._key('n_recurrent_loops')}: 1 or more passes, {MAX_LAYERS:,} layers run at most in all"
        raise InputError(k.where, f"{said}, got {loops} passes of {recurrent} layers"[:200])
    looped = [first + j for _ in range(loops) for j in range(recurrent)]
    return [*range(first), *looped, *range(first + recurrent, layers)], types


def _dory(k: Keys) -> dict[str, Any]:
    """Dory (model_type dory: DoryForCausalLM, modeling_dory.py, transformers 5.25.0; NVIDIA's looped nGPT): Gemma 2's
    four norms a layer, all weightless L2 projections onto the unit sphere, as are the per-head q/k norms, the
    norms inside the attention and MLP and the final one; gated attention (gate_proj per query channel) and a
    SwiGLU MLP, biased by attention_bias and mlp_bias; nGPT's learned scales (ngpt_scales); the recurrent layers run
    n_recurrent_loops times (layer_weights), each run keeping its own KV cache unless recurrent_kv_cache_mode is
    last_loop; full or sliding layers by layer_types, a window of sliding_window; untied by default, with a logit
    scale per vocabulary row."""
    runs, types = _dory_runs(k)
    mode = k.text("recurrent_kv_cache_mode", "per_loop")
    if mode not in ("per_loop", "last_loop"):
        raise InputError(k.where, f"{k._key('recurrent_kv_cache_mode')}: per_loop or last_loop, got {mode!r}"[:200])
    d = _DORY
    attention_bias, mlp_bias = k.flag("attention_bias", False), k.flag("mlp_bias", False)
    arch: dict[str, Any] = {
        "hidden": k.integer("hidden_size", default=d["hidden_size"], field="hidden"),
        "layers": len(runs),
        "heads": k.integer("num_attention_heads", default=d["num_attention_heads"], field="heads"),
        "kv_heads": k.integer("num_key_value_heads", default=d["num_key_value_heads"], field="kv_heads"),
        "head_dim": k.integer("head_dim", default=d["head_dim"], field="head_dim"),
        "ffn": k.integer("intermediate_size", default=d["intermediate_size"], field="ffn"),
        "vocab": k.integer("vocab_size", default=d["vocab_size"], field="vocab"),
        "tied_embeddings": k.flag("tie_word_embeddings", False),
        "norm": "layernorm_np",
        "layer_norms": 4,
        "qk_norm": "head",
        "attention_gate": True,
        "qkv_bias": attention_bias,
        "out_bias": attention_bias,
        "ngpt_scales": True,
        "reused_layers_read_cache": mode == "last_loop",
        "layer_weights": _layer_weights(runs),
    }
    if mlp_bias:
        arch["linear_bias"] = True
    sliding = [i for i, held in enumerate(runs) if types[held] == "sliding_attention"]
    if sliding:
        size = k.integer("sliding_window", default=d["sliding_window"], field="local_attention.size")
        arch["local_attention"] = {"size": size, "layers": sliding}
    return arch


def _modernbert(k: Keys) -> dict[str, Any]:
    """ModernBERT (model_type modernbert: ModernBertForMaskedLM, modeling_modernbert.py, transformers 5.25.0;
    answerdotai's encoders): ModernBERT-decoder's layers, head and defaults (_modernbert_decoder), attending both ways,
    its sliding layers to the keys within local_attention // 2 of each query on either side
    (create_bidirectional_sliding_window_mask)."""
    return {**_modernbert_decoder(k), "bidirectional": True}


# JetMoeConfig's defaults (configuration_jetmoe.py, transformers 5.25.0; JetMoE-8B has 24 layers)
_JETMOE = {"vocab_size": 32000, "hidden_size": 2048, "num_hidden_layers": 12, "num_key_value_heads": 16,
           "kv_channels": 128, "intermediate_size": 5632, "num_local_experts": 8, "num_experts_per_tok": 2}  # fmt: skip
# Other names of JetMoE's keys: jetmoe/jetmoe-8b's remote code's (its configuration_jetmoe.py), as its files write
# them, and head_dim (JetMoeConfig.attribute_map's name for kv_channels)
_JETMOE_REMOTE = {"intermediate_size": ("ffn_hidden_size",), "num_local_experts": ("moe_num_experts",),
                  "num_experts_per_tok": ("moe_top_k",), "num_hidden_layers": ("num_layers",),
                  "kv_channels": ("head_dim",)}  # fmt: skip


def _jetmoe(k: Keys) -> dict[str, Any]:
    """JetMoeForCausalLM (modeling_jetmoe.py, transformers 5.25.0: JetMoE-8B): in every layer a mixture of attention
    heads (JetMoeMoA: num_local_experts experts, each a query projection to num_key_value_heads x kv_channels and an
    output projection back, top num_experts_per_tok of them per token, over one key-value projection; a router and an
    output bias) and a mixture of SwiGLU experts of intermediate_size with its router and output bias; no other
    biases, two norms a layer, tied by default. Its class sets num_attention_heads to KV heads x experts per token.
    JetMoE's own remote-code files (JetMoEForCausalLM) name three keys otherwise (_JETMOE_REMOTE), read where the
    transformers name is absent."""

    def integer(key: str, field: str = "") -> int:
        return int(k.integer(key, *_JETMOE_REMOTE.get(key, ()), default=_JETMOE[key], field=field))

    if k.flag("glu", True) is False:  # the remote code's non-gated experts: transformers builds gated ones
        raise InputError(k.where, f"{k._key('glu')}: false (experts without a gate) is not counted; true is")
    kv_heads, active = integer("num_key_value_heads", "kv_heads"), integer("num_experts_per_tok", "moe.active")
    experts = integer("num_local_experts", "moe.experts")
    for key, value in (("num_key_value_heads", kv_heads), ("num_experts_per_tok", active)):
        if value < 1:
            raise InputError(k.where, f"{k._key(key)}: a whole number from 1, got {value}")
    return {
        "hidden": integer("hidden_size", "hidden"),
        "layers": integer("num_hidden_layers", "layers"),
        "heads": kv_heads * active,
        "kv_heads": kv_heads,
        "head_dim": integer("kv_channels", "head_dim"),
        "vocab": integer("vocab_size", "vocab"),
        "tied_embeddings": k.flag("tie_word_embeddings", True),
        "attention_experts": experts,
        "moe": {
            "experts": experts,
            "active": active,
            "ffn": integer("intermediate_size", "moe.ffn"),
            "output_bias": True,
        },
    }


_ONE_FAMILY_READERS: dict[str, Callable[[Keys], dict[str, Any]]] = {
    "jetmoe": _jetmoe,
    "llama4_text": _llama4,
    "gemma4_text": _gemma4,
    "gemma4_unified_text": _gemma4,
    "gemma3n_text": _gemma3n,
    "molmo2_text": _molmo2_text,
    "mimo_v2_flash": _mimo_v2_flash,
    "minimax_m2": _minimax_m2,
    "longcat_flash": _longcat_flash,
    "longcat_flash_ngram": lambda k: _longcat_flash(k) | {"ngram_input": _longcat_ngrams(k)},
    "minimax_m3_vl_text": _minimax_m3,
    "chatglm": _chatglm,
    "qwen": _qwen1,
    "phi3small": _phi3_small,
    "telechat": _telechat,
    "dbrx": _dbrx,
    "nemotron-nas": _nemotron_nas,
    "minicpm5_moe": _minicpm5_moe,
    "mllama_text_model": _mllama_text,
    "muse_spark_text": _muse,
    "muse_glimmer_text": _muse,
    "step3p5": _step3p5,
    "inkling_text": _inkling,
    "ergo": _ergo,
    "inkling2_text": _inkling2,
    "zaya": _zaya,
    "dots3_note_text": _dots3,
    "modernbert-decoder": _modernbert_decoder,
    "modernbert": _modernbert,
    "albert": _albert,
    "dory": _dory,
}
_ONE_FAMILY_READERS.update({family: partial(_bert_style, family=family) for family in _BERT_DEFAULTS})


def architecture_of(cfg: dict[str, Any], where: str) -> tuple[dict[str, Any], Keys, str]:
    outer = ""
    omni = cfg.get("model_type")
    if isinstance(omni, str) and omni in _OMNI and isinstance(cfg.get("thinker_config"), dict):
        cfg, outer = {"model_type": _OMNI[omni], **cfg["thinker_config"]}, "thinker_config."
    wrapped = _wrapped_family(cfg)
    # Remote-code wrappers that build their language model from llm_config alone, tied as it says: OpenGVLab's
    # InternVLChatModel (modeling_internvl_chat.py: LlamaForCausalLM, InternLM2ForCausalLM or Qwen2ForCausalLM of
    # config.llm_config, by its architectures[0]), inclusionAI's Ming (BailingMM, a bailing_moe llm_config)
    llm = None if wrapped else _wrapped_family(cfg, "llm_config")
    wrapper = str(cfg.get("model_type"))
    outer_tie = cfg.get("tie_word_embeddings")
    original_text = cfg.get("text_config")
    family = wrapped or llm or _family(cfg, where)
    flat = None if wrapped or llm else _flat_multimodal_class(cfg)
    prefix = ""
    # Qwen-VL's and Qwen-Audio's files (model_type qwen, remote code) hold their encoder's keys in `visual` or `audio`
    towers = [key for key in ("visual", "audio") if family == "qwen" and isinstance(cfg.get(key), dict)]
    wrapper_family = family in (*_NESTED, "qwen2_5_vl", "qwen2_vl", *_READ_AS, *_LANGUAGE_CONFIG, "chameleon",
                                "phi4_multimodal")  # fmt: skip
    multimodal = (wrapped or llm or flat) is not None or bool(towers) or wrapper_family
    if wrapped:
        cfg, prefix = _text_config(cfg), "text_config."
    elif llm:
        cfg, prefix, family = cfg["llm_config"], "llm_config.", llm
    elif family in _LANGUAGE_CONFIG:
        if not isinstance(cfg.get("language_config"), dict):
            raise InputError(where, f"language_config: a {family} config keeps its language model's keys there")
        cfg, prefix, family = cfg["language_config"], "language_config.", _LANGUAGE_CONFIG[family]
    elif family in _READ_AS:
        if isinstance(cfg.get("text_config"), dict):
            cfg, prefix = cfg["text_config"], "text_config."
        family = _READ_AS[family]
    elif family in ("qwen2_5_vl", "qwen2_vl"):
        # the released files keep the text model's keys top-level; transformers 5 writes them under text_config
        if isinstance(cfg.get("text_config"), dict):
            cfg, prefix = cfg["text_config"], "text_config."
    elif family in _NESTED:
        text = cfg.get("text_config")
        if family in _FLAT_WRAPPERS and text is None:  # the text model's keys top-level
            family = _NESTED[family]
        elif not isinstance(text, dict):
            raise InputError(where, f"{outer}text_config: a {family} config keeps its text model's keys there")
        else:
            cfg, prefix, family = _text_config(cfg), "text_config.", _nested_family(family, text, where)
    elif "hidden_size" not in cfg and isinstance(cfg.get("text_config"), dict) and "hidden_size" in cfg["text_config"]:
        # a wrapper's file whose top-level model_type names its text model (mlc-llm's copy of Ministral-3-3B-2512:
        # ministral3 over Mistral3ForConditionalGeneration's text_config): the text model's keys are there
        cfg, prefix, multimodal = _text_config(cfg), "text_config.", True
    if outer_tie is not None and not isinstance(outer_tie, bool):
        raise InputError(where, f"tie_word_embeddings: expected true or false, got {outer_tie!r}"[:200])
    if wrapper == "kosmos-2":  # tied where either its wrapper or its text model ties, each true by default (_gpt_style)
        own = original_text.get("tie_word_embeddings") if isinstance(original_text, dict) else None
        cfg = {**cfg, "tie_word_embeddings": outer_tie is not False or own is not False}
    if wrapper in _WRAPPER_TIES:
        tied = outer_tie if isinstance(outer_tie, bool) else _WRAPPER_TIES[wrapper]
        cfg = {**cfg, "tie_word_embeddings": tied}
    note = "text model only: the vision encoder is not counted" if multimodal else ""
    if towers:
        note = f"text model only: its {towers[0]} encoder (the file's `{towers[0]}` section) is not counted"
    if flat:
        note = (
            f"text model only ({flat}'s {family} layers, its keys top-level): its vision tower and projector are not "
            "counted"
        )
    if outer:
        note = "text model only (the thinker's text_config): the talker and the audio and vision towers are not counted"
    if wrapped or llm:
        note = (
            f"text model only ({wrapper}'s {prefix.rstrip('.')}, a {wrapped or llm} model): its vision or audio "
            "encoder and projector are not counted"
        )
    k = Keys(cfg, where, family, outer + prefix)
    if family in _LLAMA_LIKE:
        arch = _llama_like(k, family)
    elif family in _GEMMA:
        arch = _gemma(k, family)
    elif family in _ONE_FAMILY_READERS:
        arch = _ONE_FAMILY_READERS[family](k)
    elif family in _DEEPSEEK:
        arch = _deepseek(k, family)
    elif family == "deepseek_v4":
        from dpcost.hf_deepseek_v4 import deepseek_v4_architecture

        arch = deepseek_v4_architecture(k)
    elif family in ("glm4_moe", "glm4v_moe_text", "dots1", *_GLM4_MOE_SUBCLASSES):
        arch = _glm4_moe(k, family)
    elif family in _FALCON:
        arch = _falcon(k, family)
    elif family in _HYBRID:
        from dpcost.hf_hybrid import hybrid_architecture

        arch = hybrid_architecture(k, family)
    else:
        arch = _gpt_style(k, family)
    local = _local_attention(k, family, arch)
    if local is not None:
        arch["local_attention"] = local
    arch.update(_eager_attention(k, family))
    if family in _GATE_CLAMPS:
        arch["gate_clamp"] = _GATE_CLAMPS[family]
    arch.update({"fused_qkv": True} if family in _FUSED_QKV else {})
    arch.update({"fused_gate_up": True} if family in _FUSED_GATE_UP else {})
    arch.update({"context_copied": True} if family in _CONTEXT_COPIED else {})
    arch.update({"clip_qkv": True} if _clips_qkv(k, family) else {})
    arch.update({"norm_in_fp32": True} if family in _NORM_WEIGHT_IN_FP32 else {})
    if family in ("zamba", "zamba2"):
        note = "shared transformer blocks held once, run by each hybrid layer: active parameters count each run"
    return arch, k, note


# The families whose gated MLPs clamp their halves, by whose code clamps them (specs.GateClamp): each clamps whatever
# its swiglu_limit, its config class's default where the key is absent (7.0, 10.0). Step-3.7's and Ling's per-layer
# limits are not read.
_GATE_CLAMPS: dict[str, GateClamp] = {
    "gpt_oss": "gpt_oss",
    "minimax_m3_vl_text": "minimax_m3_vl",
    "deepseek_v4": "deepseek_v4",
    "glm5_next_text": "deepseek_v4",  # Glm5NextTextMLP and Glm5NextTextExperts: DeepseekV4's clamps
    "hy_v4": "hy_v4",
    "hy_v4_vl_text": "hy_v4",
}

# The families that project Q, K and V with one linear layer, and a dense gated MLP's gate and up with one (specs:
# fused_qkv, fused_gate_up), as the linear layers reading each norm's output show on transformers 5.25.0
# (tests/reference/hf-configs/resolved/autocast-activations.json, readers); the remote-code families as the modeling
# files their entries above cite build them (THUDM's query_key_value and dense_h_to_4h, _chatglm; Qwen's c_attn,
# _qwen1; InternLM2's wqkv and Baichuan's W_pack, their _LLAMA_LIKE comments).
_FUSED_QKV = frozenset((
    "gpt2", "openai-gpt", "gpt_bigcode", "gpt_neox", "gpt_neox_japanese", "bloom", *_FALCON, "phi3", "codegen",
    "mpt", "dbrx", "persimmon", "ergo", "phi4_multimodal", "modernbert", "chatglm", "qwen",
    "internlm2", "baichuan", "phi3small", "phi-msft",
))  # fmt: skip
# (Granite's MoE families: their shared MLP's input_linear; MiniMax-M3's: its dense and shared MLPs' gate_up_proj)
_FUSED_GATE_UP = frozenset((
    "phi3", "phi4_multimodal", "glm", "glm4", "glm4v", "glm4v_text", "glm_ocr", "glm_ocr_text", "minimax_m3_vl",
    "minimax_m3_vl_text", "granitemoeshared", "granitemoehybrid", "granitemoe_swa", "modernbert",
    "modernbert-decoder", "chatglm", "phi3small",
))  # fmt: skip

# The families whose attention clamps its projections' output where clip_qkv is set, and the section it sits in
# (transformers 5.25.0: modeling_dbrx.py and modeling_mpt.py clamp the fused Wqkv output; modeling_olmo.py and
# modeling_olmoe.py each projection's, in place)
_CLIP_QKV_SECTION = {"dbrx": "attn_config", "mpt": "attn_config", "olmo": None, "olmoe": None}


def _clips_qkv(k: Keys, family: str) -> bool:
    """Whether the config sets clip_qkv (a positive number; null, or MPT's 0, its `if self.clip_qkv:`: no clamp)
    for a family whose attention reads it."""
    if family not in _CLIP_QKV_SECTION:
        return False
    name = _CLIP_QKV_SECTION[family]
    keys = k if name is None else _section(k, name)
    clip = keys.get("clip_qkv", default=None, field="clip_qkv")
    k.used.update(keys.used)
    if clip is None or (family == "mpt" and clip == 0 and not isinstance(clip, bool)):
        return False
    if isinstance(clip, bool) or not isinstance(clip, int | float) or not 0 < clip <= 1e30:
        allowed = "a positive number up to 1e30 or null" + (" (0: no clamp)" if family == "mpt" else "")
        raise InputError(k.where, f"{keys._key('clip_qkv')}: expected {allowed}, got {clip!r}"[:200])
    return True


# The families whose queries reach SDPA laid out per head, so that the output projection reads a copy of its output
# (specs: context_copied), as measured on transformers 5.25.0 (tests/reference/hf-configs/resolved/
# attention-layout.json, context_copied): those whose rotary ends in torch.cat (the partial-rotary path: Phi's,
# GPT-NeoX's, Phi-3's, GLM's), or whose queries are so concatenated (GLM-4.7-Flash's MLA, ZAYA's); then those
# the sweep could not see, measured one by one with the same hooks (Laguna, whose gate multiplies the copy; Qwen3-Next
# with a full-attention first layer), and those whose modeling files run GLM-4's or Qwen3-Next's rotary or an MLA
# with equal head dims (Mistral Large 3 and 4: flash applies), read, not measured
_CONTEXT_COPIED = frozenset((
    "glm", "glm4", "glm4_moe", "glm4_moe_lite", "glm_moe_dsa", "gpt_neox", "minimax_m2", "minimax_m3_vl_text",
    "nemotron", "param2moe", "persimmon", "phi", "phi3", "phi4_multimodal", "sarvam_moe", "stablelm", "zaya",
    "laguna", "qwen3_next",
    "glm4v_text", "glm4v_moe_text", "glm_ocr_text", "qwen3_5_text", "qwen3_5_moe_text", "bamba", "recurrent_gemma",
    "mistral4", "mistral_large4_text",
))  # fmt: skip

# The families whose RMSNorm multiplies its weight in fp32 and casts after, as Gemma's does ((w * x).to(dtype), or
# x * (1 + w.float())), keeping an fp32 product (specs: norm_in_fp32), as measured on transformers 5.25.0
# (tests/reference/hf-configs/resolved/norm-bytes.json: 8 bytes an element, where Llama's keeps 6; Helium's and
# Step 3.5's and 3.7's, which the sweep did not build, measured one by one); and Cohere's LayerNorm, written in fp32
# ops, which ends so too (12)
_COHERE_LAYER_NORM = ("cohere", "cohere2", "cohere2_moe", "cohere_compass_text")
_NORM_WEIGHT_IN_FP32 = frozenset((
    "afmoe", "beam", "deepseek_v4", "flex_olmo", "flint", "gpt_oss", "minimax_m3_vl_text", "nemotron_h", "olmo2",
    "olmo3", "olmo_hybrid", "qwen3_5_text", "qwen3_5_moe_text", "qwen3_next",
    "helium", "step3p5", "step3p7",
    *_COHERE_LAYER_NORM,
))  # fmt: skip

# The families whose eager attention takes its softmax in the scores' 16 bits, where Llama's eager_attention_forward
# takes it in fp32 (activations._eager_scores), as measured for each family's class defaults
# (tests/reference/hf-configs/resolved/eager-attention.json: BertSelfAttention's, GPT-2's, GPT-1's, CTRL's, BioGPT's,
# GPT-NeoX-Japanese's, gpt-oss's, Llama 4's, XGLM's, ALBERT's, DistilBERT's, MPNet's, ESM's) or, where those do not
# build small, as their modeling files write it (Kosmos-2's and MiMo-V2-Flash's softmax(attn_weights, dim=-1) on bf16)
_EAGER_16BIT_SOFTMAX = frozenset((
    "bert", "bert-generation", "camembert", "data2vec-text", "ernie", "megatron-bert", "roberta",
    "roberta-prelayernorm", "xlm-roberta", "xlm-roberta-xl", "gpt2", "openai-gpt", "ctrl", "biogpt",
    "gpt_neox_japanese", "gpt_oss", "llama4", "llama4_text", "xglm", "albert", "distilbert", "mpnet", "esm",
    "kosmos_2_text_model", "mimo_v2_flash",
))  # fmt: skip
# 16-bit copies of the score square a family's eager attention keeps besides its softmax, as measured: Granite's sinks
# (modeling_granite_swa.py: logsumexp keeps its input), XGLM's clamp (torch.max against the dtype's minimum keeps it)
_EAGER_SCORE_COPIES = {"granite_swa": 1, "granitemoe_swa": 1, "xglm": 1}


def _eager_attention(k: Keys, family: str) -> dict[str, Any]:
    """How the family's eager attention keeps the score square (_EAGER_16BIT_SOFTMAX, _EAGER_SCORE_COPIES); Gemma 2's
    logit soft-capping (attn_logit_softcapping, 50.0 when absent, none when null) keeps tanh's 16-bit output too."""
    copies = _EAGER_SCORE_COPIES.get(family, 0)
    if family in ("gemma2", "vaultgemma") and k.cfg.get("attn_logit_softcapping", 50.0) is not None:
        copies += 1
    return ({"eager_softmax_16bit": True} if family in _EAGER_16BIT_SOFTMAX else {}) | (
        {"eager_score_copies": copies} if copies else {}
    )


def in_users_words(message: str, used: dict[str, str]) -> str:
    """A validation message about our fields, said with the config.json keys they came from. Each field is said
    once: a key put in is held as a placeholder until the end, so that a key spelled like another field (Inkling's
    head_dim, which global_attention.head_dim came from, beside the field head_dim) is not renamed again."""
    keys = sorted(used.items(), key=lambda kv: -len(kv[0]))
    for n, (field, _) in enumerate(keys):
        held = f"\x00{n}\x00"  # the key's place, which no field's pattern matches
        message = message.replace(f"architecture.{field}:", f"{held}:")
        message = re.sub(rf"(?<![\w.-]){re.escape(field)}(?![\w-])", held, message)
        if field.split(".")[-1] not in used:  # a top-level field of that name is said by its own key
            message = re.sub(rf"(?<![\w.-]){re.escape(field.split('.')[-1])}(?![\w-])", held, message)
    message = re.sub(r"architecture[\w.]*: ", "", message)
    return re.sub("\x00(\\d+)\x00", lambda m: keys[int(m.group(1))][1], message)
