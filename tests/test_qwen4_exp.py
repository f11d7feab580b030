"""Qwen4-Exp's text model (model_type qwen4_exp_text, and its qwen4_exp wrapper: configuration_qwen4_exp.py and
modeling_qwen4_exp.py, transformers 5.25.0): Qwen3.5-MoE's layers without norms, residual streams through low-rank
gated hyper-connections, a QSA indexer in the attention layers and per-layer n-gram embeddings. Its counts are held
to what transformers builds (resolved/transformers-5.25.json, test_hf_configs.py: the class defaults with the
indexer's keys give 67,366,196,352); here what the configuration and modeling code say of its layers."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import estimate_refusal, spec_from_config, transformers_cases

from dpcost.engine.activations import kv_cache_bytes
from dpcost.engine.params import count_params, hyper_connection_parameters, hyper_head_parameters, indexer_parameters

DEFAULTS, SMALL, PLE = transformers_cases("qwen4_exp_text")
QSA = {k: DEFAULTS[k] for k in ("indexer_n_heads", "indexer_kv_heads", "indexer_head_dim", "indexer_budget",
                                "indexer_compress_ratio")}  # fmt: skip


def test_no_norm_stands_before_a_sub_layer_or_the_head(tmp_path: Path) -> None:
    """Qwen4ExpTextDecoderLayer holds no input_layernorm or post_attention_layernorm, Qwen4ExpTextModel no final
    norm: each hyper-connection's hc_norm does their work."""
    components = dict(count_params(spec_from_config(tmp_path, DEFAULTS)).components)
    assert components["norms"] == 0


def test_hyper_connections_gate_through_a_low_rank(tmp_path: Path) -> None:
    """Qwen4ExpTextGatedResidual: hc_norm (4 x 2,048), input_mix_weight_down (8,192 -> 320), _up (320 -> 8,192) and
    block_inject_weight (8,192 -> 4), two a layer; hyper_connection_mixer is one without block_inject."""
    a = spec_from_config(tmp_path, DEFAULTS).architecture
    assert a is not None
    wide = 4 * 2048
    assert hyper_connection_parameters(a) == wide + 2 * wide * 320 + wide * 4
    assert hyper_head_parameters(a) == wide + 2 * wide * 320


def test_the_qsa_indexer_fuses_its_queries_and_key(tmp_path: Path) -> None:
    """Qwen4ExpTextIndexer: index_qk_proj (2,048 -> (16 + 1) x 128), q_layernorm and k_layernorm (128 each)."""
    a = spec_from_config(tmp_path, DEFAULTS).architecture
    assert a is not None and a.indexer is not None
    assert indexer_parameters(a) == 2048 * 17 * 128 + 2 * 128
    assert a.indexer.topk == 2048 + 64 - 1  # the budget's blocks and the incomplete tail (_select_tokens)


def test_a_token_adds_its_keys_values_and_indexer_key_to_the_cache(tmp_path: Path) -> None:
    """DynamicIndexedLayer keeps K and V (2 KV heads of 256) and the indexer's raw key (128) per token, in the
    model's dtype, in each of the 10 indexed layers."""
    a = spec_from_config(tmp_path, DEFAULTS).architecture
    assert a is not None
    assert kv_cache_bytes(a, 2, 1) - kv_cache_bytes(a, 1, 1) == 10 * (2 * 2 * 256 + 128) * 2


def test_n_gram_tables_take_their_heads_prime_sizes(tmp_path: Path) -> None:
    """Qwen4ExpTextNGramEmbedding: the p-th table's 16 heads are the 16p+1-th .. 16p+16-th primes from
    ngram_vocab_size_base (20,000,000), padded to a multiple of 128; transformers 5.25.0 builds (320,001,536, 128)
    and (320,005,120, 128) for ple_layer_ids [1, 2] at the class defaults. A lookup: out of the active count."""
    cfg = {"model_type": "qwen4_exp_text", "num_hidden_layers": 4, "ple_layer_ids": [2, 1], "eos_token_id": 1, **QSA}
    spec = spec_from_config(tmp_path, cfg)
    assert spec.architecture is not None and spec.architecture.ngram_embedding is not None
    assert spec.architecture.ngram_embedding.rows == (320001536, 320005120)
    counted = count_params(spec)
    assert counted.per_layer_embedding == (320001536 + 320005120) * 128
    assert counted.active_excl_embedding < counted.total - counted.per_layer_embedding


def test_the_released_files_full_attention_is_indexed_attention(tmp_path: Path) -> None:
    """__post_init__: "The real checkpoint contains full_attention entries for layers that are actually using an
    indexer"."""
    types = ["linear_attention", "linear_attention", "linear_attention", "full_attention"] * 10
    indexed = ["indexed_attention" if t == "full_attention" else t for t in types]
    released = count_params(spec_from_config(tmp_path, {**DEFAULTS, "layer_types": types}))
    assert released.total == count_params(spec_from_config(tmp_path, {**DEFAULTS, "layer_types": indexed})).total


def test_the_wrapper_ties_by_its_own_flag(tmp_path: Path) -> None:
    """Qwen4ExpForConditionalGeneration ties lm_head to the language model's embedding by the wrapper's
    tie_word_embeddings (false by default), whatever text_config says."""
    text = {**SMALL, "tie_word_embeddings": True}
    untied = count_params(spec_from_config(tmp_path, {"model_type": "qwen4_exp", "text_config": text}))
    assert untied.lm_head == untied.embedding
    tied = count_params(spec_from_config(tmp_path, {"model_type": "qwen4_exp", "text_config": text,
                                                    "tie_word_embeddings": True}))  # fmt: skip
    assert tied.lm_head == 0


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"ple_layer_ids": [3]}, "ple_layer_ids: linear_attention layers only"),
        ({"indexer_kv_heads": 2}, "indexer_kv_heads: 1"),
        ({"indexer_budget": 100}, "indexer_budget: a positive multiple of indexer_compress_ratio (16)"),
        ({"hc_count": 1}, "hc_count: 2 or more residual streams"),
        ({"full_attention_interval": 0, "layer_types": None}, "full_attention_interval: a whole number from 1"),
        ({"indexer_head_dim": None}, "indexer_head_dim: required field is missing"),
        ({"ple_layer_ids": [1], "heads_per_ngram": 5001, "ple_embed_dim": 20004}, "heads_per_ngram and ple_layer_"),
    ],
)
def test_what_transformers_refuses_is_refused_by_key(tmp_path: Path, change: dict, said: str) -> None:  # type: ignore[type-arg]
    """Qwen4ExpTextConfig.validate_architecture's checks (PLE on linear_attention layers, one indexer key head, a
    budget of whole blocks, more than one stream, every QSA key given); and a bound of dpcost's own on the primes it
    looks for."""
    assert said in estimate_refusal(tmp_path, {**SMALL, **change})
