"""DeepSeek-V4's config.json (model_type deepseek_v4) as transformers 5.24.0 builds the model from it
(configuration_deepseek_v4.py DeepseekV4Config, modeling_deepseek_v4.py DeepseekV4ForCausalLM; the DeepSeek-V4 report,
section 2). What the class reads, and nothing it ignores:
- attention: num_attention_heads queries of head_dim through q_lora_rank, one key-value head (kv_proj; the class
  builds one whatever num_key_value_heads says), sinks, and the grouped output projection (o_groups, o_lora_rank);
  every layer's sliding window of sliding_window keys;
- each layer's attention kind: layer_types (sliding_attention, compressed_sparse_attention,
  heavily_compressed_attention) where given, else compress_ratios (0, 4, 128 per layer, the released files' key),
  else the class default (two heavily compressed layers, then heavily and sparse compressed in turn); a list longer
  than num_hidden_layers is cut to it (the released files carry one more entry, for the MTP module); the rates from
  compress_rates (else compress_rate_csa, compress_rate_hca), 4 and 128 by default;
- the lightning indexer of the CSA layers: index_n_heads, index_head_dim, index_topk;
- mixture of experts in every layer: n_routed_experts of moe_intermediate_size, num_experts_per_tok of them per
  token, and one shared expert of moe_intermediate_size (DeepseekV4SparseMoeBlock builds one DeepseekV4MLP whatever
  n_shared_experts says); its hash-routed layers (num_hash_layers, mlp_layer_types) hold the same router weight;
  the routers' e_score_correction_bias and tid2eid are buffers, not parameters;
- hc_mult residual streams (manifold-constrained hyper-connections), each layer's two mixers and the model's head.
The MTP module of num_nextn_predict_layers is not built by transformers, and its shapes are not in the config: it is
not counted. A value the class would refuse is refused here by its key, with what is allowed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dpcost.errors import InputError
from dpcost.specs import CSA, HCA

if TYPE_CHECKING:
    from dpcost.hf_config import Keys

__all__ = ["deepseek_v4_architecture"]

# DeepseekV4Config's defaults (configuration_deepseek_v4.py, transformers 5.24.0: DeepSeek-V4-Flash's shapes)
_DEFAULTS = {"vocab_size": 129280, "hidden_size": 4096, "moe_intermediate_size": 2048, "num_hidden_layers": 43,
             "num_attention_heads": 64, "head_dim": 512, "q_lora_rank": 1024, "num_experts_per_tok": 6,
             "n_routed_experts": 256, "sliding_window": 128, "o_groups": 8, "o_lora_rank": 1024,
             "index_n_heads": 64, "index_head_dim": 128, "index_topk": 512, "hc_mult": 4}  # fmt: skip
# transformers' layer type names -> dpcost's mixers; compress_ratios' per-layer values -> the same
_MIXER = {"sliding_attention": "attention", "compressed_sparse_attention": CSA, "heavily_compressed_attention": HCA}
_RATIO = {0: "sliding_attention", 4: "compressed_sparse_attention", 128: "heavily_compressed_attention"}


def deepseek_v4_architecture(k: Keys) -> dict[str, Any]:
    """The architecture of a DeepSeek-V4 config.json (module docstring)."""

    def integer(key: str, field: str = "") -> int:
        value: int = k.integer(key, default=_DEFAULTS[key], field=field)
        if value <= 0:
            raise InputError(k.where, f"{k._key(key)}: must be more than 0, got {value}")
        return value

    if k.flag("mlp_bias", False):
        raise InputError(k.where, f"{k._key('mlp_bias')}: DeepSeek-V4's MLPs have no biases (the released files say "
                         "false); true is not counted")  # fmt: skip
    layers = integer("num_hidden_layers", "layers")
    heads = integer("num_attention_heads", "heads")
    ffn = integer("moe_intermediate_size", "moe.ffn")
    rates = _compress_rates(k)
    return {
        "hidden": integer("hidden_size", "hidden"),
        "layers": layers,
        "heads": heads,
        "kv_heads": 1,
        "head_dim": integer("head_dim", "head_dim"),
        "values_from_keys": True,
        "attention_sinks": True,
        "vocab": integer("vocab_size", "vocab"),
        "tied_embeddings": k.flag("tie_word_embeddings", False),
        "moe": {
            "experts": integer("n_routed_experts", "moe.experts"),
            "active": integer("num_experts_per_tok", "moe.active"),
            "ffn": ffn,
            "shared": 1,
        },
        "mixers": tuple(_MIXER[t] for t in _layer_types(k, layers)),
        "local_attention": {"kind": "sliding", "size": integer("sliding_window", "local_attention.size")},
        "compressed_attention": {
            "q_lora_rank": integer("q_lora_rank", "compressed_attention.q_lora_rank"),
            "o_groups": integer("o_groups", "compressed_attention.o_groups"),
            "o_lora_rank": integer("o_lora_rank", "compressed_attention.o_lora_rank"),
            "csa_rate": rates["compressed_sparse_attention"],
            "hca_rate": rates["heavily_compressed_attention"],
            "index_heads": integer("index_n_heads", "compressed_attention.index_heads"),
            "index_head_dim": integer("index_head_dim", "compressed_attention.index_head_dim"),
            "index_topk": integer("index_topk", "compressed_attention.index_topk"),
        },
        "residual_streams": integer("hc_mult", "residual_streams"),
    }


def _layer_types(k: Keys, layers: int) -> list[str]:
    """Each layer's attention kind as DeepseekV4Config.__post_init__ sets it: layer_types, else compress_ratios, else
    two heavily compressed layers and then heavily and sparse compressed in turn; cut to num_hidden_layers."""
    types = k.get("layer_types", default=None)
    if types is not None:
        key, allowed = "layer_types", ", ".join(_MIXER)
        valid = isinstance(types, list) and all(isinstance(t, str) and t in _MIXER for t in types)
    elif (ratios := k.get("compress_ratios", default=None)) is not None:
        key, allowed = "compress_ratios", "0, 4 or 128"
        valid = isinstance(ratios, list) and all(type(r) is int and r in _RATIO for r in ratios)
        types = [_RATIO[r] for r in ratios] if valid else ratios
    else:
        interleave = ["compressed_sparse_attention" if i % 2 else "heavily_compressed_attention" for i in range(layers)]
        return (["heavily_compressed_attention"] * 2 + interleave)[:layers]
    if not valid or len(types) < layers:
        said = f"{k._key(key)}: one of {allowed} for each of the {layers} layers, got {k.get(key)!r}"
        raise InputError(k.where, said[:300])
    return list(types[:layers])


def _compress_rates(k: Keys) -> dict[str, int]:
    """Tokens per compressed entry by kind: compress_rates, with compress_rate_csa / compress_rate_hca folded in,
    4 and 128 by default (DeepseekV4Config.default_compress_rates)."""
    rates = {"compressed_sparse_attention": 4, "heavily_compressed_attention": 128}
    given = k.get("compress_rates", default=None)
    if given is not None:
        if not isinstance(given, dict) or any(name not in rates for name in given):
            said = f"{k._key('compress_rates')}: a mapping of {' and '.join(rates)} to tokens per entry, got {given!r}"
            raise InputError(k.where, said[:300])
        rates.update(given)
    for key, name in (
        ("compress_rate_csa", "compressed_sparse_attention"),
        ("compress_rate_hca", "heavily_compressed_attention"),
    ):
        if k.get(key, default=None) is not None:
            rates[name] = k.integer(key)
    for name, rate in rates.items():
        if type(rate) is not int or not 0 < rate <= 1_000_000:
            raise InputError(
                k.where, f"{k._key('compress_rates')}.{name}: a whole number of tokens, got {rate!r}"[:200]
            )
    return rates
