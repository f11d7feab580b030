"""Zyphra's ZAYA (model_type zaya; configuration_zaya.py and modeling_zaya.py, transformers 5.25.0). Its counts are
held to what transformers builds (resolved/transformers-5.25.json, test_hf_configs.py: the class defaults, ZAYA1-8B's
shapes, give 8,840,488,784 parameters and 680 router balancing biases); its decode state to what transformers' cache
holds (test_hybrids.py); here what the modeling code says of its parts, and what dpcost refuses."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import estimate_refusal, spec_from_config, transformers_cases

from dpcost.engine.params import cca_parameters, count_params, router_state_scale_parameters

DEFAULTS, SMALL, UNTIED = transformers_cases("zaya")


def test_zaya1_8b_s_shapes_give_its_published_size(tmp_path: Path) -> None:
    """Zyphra gives ZAYA1-base 8.3B parameters, 760M active (its announcement; 8.4B in the ZAYA1-8B release): without
    the tied embedding (262,272 x 2,048) the class defaults' shapes give 8.30B, 754M of them active (one expert a
    token; the skip expert holds nothing)."""
    c = count_params(spec_from_config(tmp_path, DEFAULTS))
    assert c.lm_head == 0 and c.embedding == 262_272 * 2048
    assert round((c.total - c.embedding) / 1e8) == 83
    assert round(c.active_excl_embedding / 1e6) == 754


def test_the_convolutions_and_router_by_hand(tmp_path: Path) -> None:
    """The class defaults: (8 + 2) x 128 = 1,280 query and key channels, conv_qk_depthwise 1,280 x 2 taps with a bias
    each, conv_qk_grouped 1,280 x 128 x 2 with a bias each, and a key scale per KV head (2); router_states_scale
    (256) in the 39 layers after the first."""
    a = spec_from_config(tmp_path, DEFAULTS).architecture
    assert a is not None
    assert cca_parameters(a) == 1280 * 3 + 1280 * (128 * 2 + 1) + 2
    assert router_state_scale_parameters(a) == 39 * 256


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"num_experts_per_tok": 2}, "num_experts_per_tok: 1 (ZAYA routes each token to one expert), got 2"),
        ({"sliding_window": None}, "sliding_window: required field is missing"),
        ({"layer_types": ["hybrid", "sliding_attention", "hybrid", "hybrid"]}, "layer_types: one of hybrid"),
        ({"num_key_value_heads": 1, "head_dim": 33}, "an even value width"),
    ],
)
def test_what_transformers_refuses_is_refused_in_one_line(tmp_path: Path, change: dict, said: str) -> None:  # type: ignore[type-arg]
    """ZayaConfig.validate_architecture: one expert a token, a window where layer_types has sliding layers; the
    layer kinds ZayaModel builds (hybrid, hybrid_sliding); and a value width ZayaCCAProjection can halve (it builds
    v_proj_current and v_proj_delayed of kv_heads x head_dim // 2 each, and an odd width fails its forward)."""
    assert said in estimate_refusal(tmp_path, {**SMALL, **change})


@pytest.mark.parametrize("flags", [("--tp", "2", "--sequence-parallel"), ("--compute-model", "ops")])
def test_layouts_and_per_op_times_refuse_it_by_name(tmp_path: Path, flags: tuple[str, ...]) -> None:
    """Megatron's layers have neither ZAYA's convolutions nor its scaled residuals nor its router MLP."""
    assert "compressed convolutional attention" in estimate_refusal(tmp_path, UNTIED, *flags)


def test_eager_keeps_the_fp32_residual_terms_and_the_router_mlp_s_inputs(tmp_path: Path) -> None:
    """A helper's saved-tensor hooks on an eager bf16 ZayaDecoderLayer (hidden 64, router_hidden_size 32) read 512
    bytes a token for the two residual scalings' fp32 (residual + residual_bias), 2 x 4 x hidden, and 580 for the
    router MLP, 9 bf16 router-wide tensors and a scalar; fused kernels keep the branches and the fp32 mid-layer
    residual's extra half instead, and six router-wide tensors."""
    a = spec_from_config(tmp_path, DEFAULTS).architecture
    assert a is not None
    from dpcost.engine.activations import layer_tensors

    eager = {t.name: t.bytes_per_token for t in layer_tensors(a, True, kernels="eager").tensors}
    fused = {t.name: t.bytes_per_token for t in layer_tensors(a, True, kernels="fused").tensors}
    assert eager["residuals plus their biases (fp32)"] == 2 * 4 * 2048
    assert eager["router MLP's intermediates"] == 9 * 2 * 256
    assert fused["mid-layer residual's fp32 half"] == 2 * 2048 and fused["router MLP's intermediates"] == 6 * 2 * 256


def test_the_legacy_megatron_style_files_count_as_the_native_model(tmp_path: Path) -> None:
    """Zyphra's legacy ZAYA files (ZAYA1-base, ZAYA1-8B-legacy: transformers 5.25.0 does not read them) count an
    attention and an MoE layer apart in num_hidden_layers and give ffn_hidden_size = 2 x moe_intermediate_size,
    num_query_groups, zaya_mlp_expansion (the router's width) and moe_router_topk: the same tiny model written in
    both schemas (as sglang's loading tests write it) counts the same, and ZAYA1-8B-legacy's keys give the native
    model's 8.30B without the embedding, 754M active."""
    native = {
        "model_type": "zaya",
        "vocab_size": 64,
        "hidden_size": 16,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 8,
        "moe_intermediate_size": 16,
        "num_experts": 2,
        "num_experts_per_tok": 1,
        "router_hidden_size": 8,
        "cca_time0": 2,
        "cca_time1": 2,
    }
    legacy = {"model_type": "zaya", "vocab_size": 64, "hidden_size": 16, "ffn_hidden_size": 32,
              "num_hidden_layers": 4, "num_experts": 2, "num_attention_heads": 4, "num_query_groups": 2,
              "num_key_value_heads": 2, "head_dim": 8, "cca_time0": 2, "cca_time1": 2, "moe_router_topk": 1,
              "zaya_mlp_expansion": 8}  # fmt: skip
    tiny = count_params(spec_from_config(tmp_path, native)).total
    assert count_params(spec_from_config(tmp_path, legacy)).total == tiny
    eight_b = {"model_type": "zaya", "cca": True, "ffn_hidden_size": 4096, "hidden_size": 2048, "kv_channels": 128,
               "moe_router_topk": 1, "num_attention_heads": 8, "num_experts": 16, "num_hidden_layers": 80,
               "num_key_value_heads": 2, "num_query_groups": 2, "vocab_size": 262272}  # fmt: skip
    c = count_params(spec_from_config(tmp_path, eight_b))
    assert c == count_params(spec_from_config(tmp_path, DEFAULTS))
    assert "num_hidden_layers: an even number of layers" in estimate_refusal(
        tmp_path, {**eight_b, "num_hidden_layers": 79}
    )
