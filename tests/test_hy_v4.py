"""Tencent's Hy4 (model_type hy_v4: configuration_hy_v4.py, modular_hy_v4.py, transformers 5.25.0): GLM-5's latent
attention and indexer with a gated output and sinks, and hyper-connections without DeepSeek-V4's mixing matrix. Its
counts are held to what transformers builds (resolved/transformers-5.25.json, test_hf_configs.py: the class defaults,
Hy4-preview's shapes, give 58,278,201,581 with the routers' correction biases); here what the modeling code says of
its layers."""

from __future__ import annotations

from pathlib import Path

from conftest import estimate_refusal, spec_from_config, transformers_cases

from dpcost.engine.params import attention_parameters, count_params, hyper_connection_parameters, hyper_head_parameters

DEFAULTS, SMALL, ONE_STREAM = transformers_cases("hy_v4")


def test_hyper_connections_hold_pre_and_post_weights_without_mixing(tmp_path: Path) -> None:
    """HYV4HyperConnection: fn (2n x n hidden), base (2n) and scale (2), two a layer; HYV4HyperHead keeps
    DeepSeek-V4's collapse: hc_fn (n x n hidden), hc_base (n), hc_scale (1). n = 4 streams of 2,816."""
    a = spec_from_config(tmp_path, DEFAULTS).architecture
    assert a is not None
    assert hyper_connection_parameters(a) == 8 * 4 * 2816 + 8 + 2
    assert hyper_head_parameters(a) == 4 * 4 * 2816 + 4 + 1


def test_a_single_stream_still_builds_them(tmp_path: Path) -> None:
    """HYV4DecoderLayer builds attn_hc and ffn_hc whatever hc_mult is: at 1, fn is 2 x hidden (256)."""
    a = spec_from_config(tmp_path, ONE_STREAM).architecture
    assert a is not None and a.hyper_connected
    assert hyper_connection_parameters(a) == 2 * 256 + 2 + 2


def test_attention_gates_each_value_channel_and_holds_a_sink_per_head(tmp_path: Path) -> None:
    """HYV4Attention adds gate_proj (hidden -> heads x v_head_dim, no bias) and sinks (one per head) to GLM-5's
    attention; a layer without an indexer of its own (shared) differs from one with it by the indexer alone."""
    a = spec_from_config(tmp_path, DEFAULTS).architecture
    assert a is not None and a.mla is not None
    h, heads, q, kv, nope, rope, v = 2816, 32, 1536, 512, 192, 64, 256
    mla = h * q + q + q * heads * (nope + rope) + h * (kv + rope) + kv + kv * heads * (nope + v) + heads * v * h
    indexer = q * 16 * 128 + h * 128 + 2 * 128 + h * 16
    assert attention_parameters(a, "attention") == mla + h * heads * v + heads + indexer


def test_indexers_sit_in_layer_0_and_every_fourth_from_layer_1(tmp_path: Path) -> None:
    """HYV4Config.__post_init__: indexer_types full where i == 0 or (i - 1) % 4 == 0, shared elsewhere."""
    a = spec_from_config(tmp_path, DEFAULTS).architecture
    assert a is not None and a.indexer is not None
    assert a.indexer.layers == (0, *range(1, 34, 4))


def test_only_mlp_layer_types_places_the_dense_layers(tmp_path: Path) -> None:
    """HYV4Config reads no first_k_dense_replace: layer 0 alone is dense unless mlp_layer_types says otherwise."""
    base = count_params(spec_from_config(tmp_path, DEFAULTS)).total
    assert count_params(spec_from_config(tmp_path, {**DEFAULTS, "first_k_dense_replace": 3})).total == base


def test_num_local_experts_wins_over_n_routed_experts(tmp_path: Path) -> None:
    """HYV4Config.attribute_map's num_local_experts is not a field: set after them, it overwrites n_routed_experts."""
    both = count_params(spec_from_config(tmp_path, {**SMALL, "n_routed_experts": 4, "num_local_experts": 6})).total
    assert both == count_params(spec_from_config(tmp_path, {**SMALL, "n_routed_experts": 6})).total


def test_hy4_vl_s_text_model_is_hy4_s_layers_at_larger_shapes(tmp_path: Path) -> None:
    """HYV4VLTextConfig keeps HYV4Config's keys and __post_init__ with larger defaults (6,144 wide, 78 layers, 64
    heads): the same count as Hy4 given those shapes."""
    larger = {"hidden_size": 6144, "intermediate_size": 18432, "moe_intermediate_size": 2048, "num_hidden_layers": 78,
              "num_attention_heads": 64, "q_lora_rank": 2048, "index_n_heads": 32}  # fmt: skip
    vl = count_params(spec_from_config(tmp_path, {"model_type": "hy_v4_vl", "text_config": {}})).total
    assert vl == count_params(spec_from_config(tmp_path, {"model_type": "hy_v4", **larger})).total


def test_a_shared_first_indexer_is_refused(tmp_path: Path) -> None:
    """A shared layer reuses the previous layer's top-k; the first has none (HYV4Attention.forward raises)."""
    kinds = ["shared", *SMALL["indexer_types"][1:]]
    assert "indexer_types: the first layer must be full" in estimate_refusal(
        tmp_path, {**SMALL, "indexer_types": kinds}
    )
