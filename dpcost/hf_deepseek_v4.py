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
- mixture of experts in every layer: n_routed_experts (num_local_experts) of moe_intermediate_size
  (intermediate_size), num_experts_per_tok of them per token, and one shared expert of that width
  (DeepseekV4SparseMoeBlock builds one DeepseekV4MLP whatever n_shared_experts says); its hash-routed layers
  (num_hash_layers, mlp_layer_types) hold the same router weight; the routers' e_score_correction_bias and tid2eid
  are buffers, not parameters;
- hc_mult residual streams (manifold-constrained hyper-connections): each layer's two mixers and the model's head,
  built whatever hc_mult is, 1 included.
The MTP module of num_nextn_predict_layers is not built by transformers, and its shapes are not in the config: it is
not counted. A value the class would refuse (a null where it wants a number, a list of the wrong kinds or too
short) is refused here by its key, with what is allowed; so are mlp_bias true, which transformers builds (biases on
the shared expert) but dpcost does not count, and degenerate sizes of 0, which the class takes but cannot run."""

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

    def integer(key: str, field: str = "", alias: str = "") -> int:
        """A positive whole number, else the class's default when absent; written as null, refused (the class's
        strict fields take no None). `alias`: the attribute_map name transformers reads first."""
        for name in (alias, key):
            if name and name in k.cfg and k.cfg[name] is None:
                raise InputError(k.where, f"{k._key(name)}: a whole number, got null")
        names = (alias, key) if alias else (key,)
        value: int = k.integer(*names, default=_DEFAULTS[key], field=field)
        if value <= 0:
            raise InputError(k.where, f"{k._key(key)}: must be more than 0, got {value}")
        return value

    if k.flag("mlp_bias", False):
        raise InputError(k.where, f"{k._key('mlp_bias')}: the released files say false; true (biases on the shared "
                         "expert, as transformers builds it) is not counted")  # fmt: skip
    layers = integer("num_hidden_layers", "layers")
    heads = integer("num_attention_heads", "heads")
    # DeepseekV4Config.attribute_map: intermediate_size and num_local_experts set these
    ffn = integer("moe_intermediate_size", "moe.ffn", alias="intermediate_size")
    rates = _compress_rates(k)
    _check_mlp_layer_types(k, layers)
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
            "experts": integer("n_routed_experts", "moe.experts", alias="num_local_experts"),
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


def _check_mlp_layer_types(k: Keys, layers: int) -> None:
    """mlp_layer_types as the class checks it (hash_moe or moe for each layer, cut to num_hidden_layers); both kinds
    hold the same weights, so the list changes no count."""
    kinds = k.get("mlp_layer_types", default=None)
    if kinds is None:
        return
    if not isinstance(kinds, list) or len(kinds) < layers or any(t not in ("hash_moe", "moe") for t in kinds):
        said = f"{k._key('mlp_layer_types')}: hash_moe or moe for each of the {layers} layers, got {kinds!r}"
        raise InputError(k.where, said[:300])


def _compress_rates(k: Keys) -> dict[str, int]:
    """Tokens per compressed entry by kind: compress_rates as given (other keys in it ignored, as the class does), with
    compress_rate_csa / compress_rate_hca folded in; without it 4 and 128 (DeepseekV4Config.default_compress_rates).
    Given, it must name both kinds: the model's compressors and caches read both."""
    kinds = ("compressed_sparse_attention", "heavily_compressed_attention")
    rates: dict[str, Any] = {"compressed_sparse_attention": 4, "heavily_compressed_attention": 128}
    given = k.get("compress_rates", default=None)
    if given is not None:
        if not isinstance(given, dict):
            said = f"{k._key('compress_rates')}: a mapping of {' and '.join(kinds)} to tokens per entry, got {given!r}"
            raise InputError(k.where, said[:300])
        rates = {name: given[name] for name in kinds if name in given}
    for key, name in (
        ("compress_rate_csa", "compressed_sparse_attention"),
        ("compress_rate_hca", "heavily_compressed_attention"),
    ):
        if k.get(key, default=None) is not None:
            rates[name] = k.integer(key)
    missing = [name for name in kinds if name not in rates]
    if missing:
        raise InputError(k.where, f"{k._key('compress_rates')}: names no {' or '.join(missing)} rate; give both"[:200])
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
