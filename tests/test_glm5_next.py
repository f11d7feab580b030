"""GLM-5.3's text model (model_type glm5_next_text, under GLM-5.3-Flash's glm5_next wrapper; configuration_glm5_next.py
and modeling_glm5_next.py, transformers 5.25.0): Kimi Delta Attention and NoPE latent attention under a pooled
indexer, with DeepSeek-V4's hyper-connections in every layer. Its counts are held to what transformers builds
(resolved/transformers-5.25.json, test_hf_configs.py: the class defaults give 313,326,816,766 parameters and 12,096
router correction biases); here what the configuration and modeling code say of its layers."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from conftest import estimate_refusal, spec_from_config, transformers_cases

from dpcost.engine.activations import kv_cache_bytes
from dpcost.engine.params import count_params, hyper_connection_parameters, hyper_head_parameters, indexer_parameters

DEFAULTS, SMALL, LISTED, ONE_STREAM = transformers_cases("glm5_next")


def _with(cfg: dict, **text: object) -> dict:  # type: ignore[type-arg]
    """`cfg` (a wrapper as transformers writes it) with its text model's keys changed."""
    out = copy.deepcopy(cfg)
    out["text_config"].update(text)
    return out


def test_every_fourth_layer_from_the_fourth_attends_through_the_latent(tmp_path: Path) -> None:
    """Glm5NextTextConfig.__post_init__: indexed_attention where idx % 4 == 3, linear_attention (KDA) elsewhere, so
    layer 0 is KDA; 45 layers give 11 of latent attention, each with its own indexer (indexer_types all full)."""
    a = spec_from_config(tmp_path, DEFAULTS).architecture
    assert a is not None
    assert [i for i in range(a.layers) if a.mixer(i) == "attention"] == list(range(3, 45, 4))
    assert a.attention_layers == a.indexer_layers == 11


def test_the_released_files_deepseek_sparse_attention_layers_are_its_indexed_ones(tmp_path: Path) -> None:
    """zai-org/GLM-5.3-Flash's config.json at revision eb9eb20 (as a public test fixture transcribes it:
    teilomillet/kvfit tests/fixtures/model_configs/zai-org--GLM-5.3-Flash.json) names its eleven latent-attention
    layers deepseek_sparse_attention in layer_types, where transformers 5.25.0's class says indexed_attention: the same
    layers, every fourth from the fourth, counted alike (its linear_attn_config lists them as full_attn_layers)."""
    types = ["deepseek_sparse_attention" if i % 4 == 3 else "linear_attention" for i in range(45)]
    named = count_params(spec_from_config(tmp_path, _with(DEFAULTS, layer_types=types)))
    assert named == count_params(spec_from_config(tmp_path, DEFAULTS))


def test_the_pooled_indexer_holds_deepseek_s_weights_and_its_pool_tables(tmp_path: Path) -> None:
    """Glm5NextTextIndexer: wq_b (1,536 -> 32 x 128), wk (4,096 -> 128), k_norm's LayerNorm (weight and bias),
    weights_proj (4,096 -> 32), index_kpool_compress_ape (16 x 128) and index_kpool_compress_gate (128 x 4,096)."""
    a = spec_from_config(tmp_path, DEFAULTS).architecture
    assert a is not None
    assert indexer_parameters(a) == 1536 * 32 * 128 + 4096 * 128 + 2 * 128 + 4096 * 32 + 16 * 128 + 128 * 4096


def test_hyper_connections_are_deepseek_v4_s_and_the_head_is_a_mean(tmp_path: Path) -> None:
    """Glm5NextTextHyperConnection: fn ((2 + m) m x m hidden), base ((2 + m) m) and scale (3), two a layer;
    Glm5NextTextHyperHead averages the m streams and holds nothing. hc_mult 4 at 4,096."""
    a = spec_from_config(tmp_path, DEFAULTS).architecture
    assert a is not None
    assert hyper_connection_parameters(a) == 24 * 4 * 4096 + 24 + 3
    assert hyper_head_parameters(a) == 0


def test_a_single_stream_still_builds_the_hyper_connections(tmp_path: Path) -> None:
    """Glm5NextTextDecoderLayer builds attn_hc and ffn_hc whatever hc_mult is: at 1, fn is 3 x hidden (the harness
    case with hc_mult 1, held exact in test_hf_configs.py)."""
    a = spec_from_config(tmp_path, ONE_STREAM).architecture
    assert a is not None and a.hyper_connected
    assert hyper_connection_parameters(a) == 3 * 256 + 3 + 3


def test_a_token_adds_the_latent_and_the_indexer_s_packed_entry_to_the_cache(tmp_path: Path) -> None:
    """DynamicIndexedLayer keeps the 512-wide latent (qk_rope_head_dim 0: no rotary part) and the indexer's packed
    key, gate scores and validity flag (2 x 128 + 1), both in the model's dtype: 11 x (512 + 257) x 2 bytes."""
    a = spec_from_config(tmp_path, DEFAULTS).architecture
    assert a is not None
    assert kv_cache_bytes(a, 2, 1) - kv_cache_bytes(a, 1, 1) == 11 * (512 + 257) * 2


def test_a_file_without_text_config_is_the_text_model_top_level(tmp_path: Path) -> None:
    """Glm5NextConfig.__post_init__: "if self.text_config is None: self.text_config = kwargs"."""
    flat = {**{k: v for k, v in DEFAULTS["text_config"].items() if k != "model_type"}, "model_type": "glm5_next"}
    assert (
        count_params(spec_from_config(tmp_path, flat)).total == count_params(spec_from_config(tmp_path, DEFAULTS)).total
    )


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"indexer_types": ["full", "full", "shared", "full", "shared", "shared"]}, "indexer_types: layer 4 is shared"),
        ({"indexer_types": ["full", "shared", "full", "full", "full", "full"]}, "indexer_types: layer 1 is shared"),
        ({"qk_rope_head_dim": 64}, "qk_rope_head_dim: 0 (its latent attention has no RoPE)"),
        ({"num_key_value_heads": 2}, "num_key_value_heads: 4, as num_attention_heads"),
        ({"index_topk": 30}, "index_topk: a multiple of index_kpool (4)"),
    ],
)
def test_what_transformers_cannot_build_or_run_is_refused_by_key(
    tmp_path: Path,
    change: dict,
    said: str,  # type: ignore[type-arg]
) -> None:
    """A shared indexer layer reuses the top-k the layer just before it returned, which only a full latent-attention
    layer returns (a KDA layer and a shared one return none, and Glm5NextTextModel.forward raises); the rest are
    Glm5NextTextConfig.validate_architecture's checks."""
    assert f"text_config.{said}" in estimate_refusal(tmp_path, _with(LISTED, **change))
