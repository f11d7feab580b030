"""StepFun's Step 3.5 text model (model_type step3p5, under Step-3.7-Flash's step3p7 wrapper; configuration_step3p7.py
and modeling_step3p7.py, transformers 5.25.0). Its counts are held to what transformers builds
(resolved/transformers-5.25.json, test_hf_configs.py: the class defaults give 195,843,833,088 parameters and 12,096
router correction biases); here what the configuration and modeling code say of the keys the released files write."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from conftest import estimate_refusal, spec_from_config, transformers_cases

from dpcost.engine.params import attention_parameters, count_params
from dpcost.specs import ModelSpec

DEFAULTS, SMALL, SLIDING, EMPTY_PER_LAYER = transformers_cases("step3p7")


def _spec(tmp_path: Path, cfg: dict) -> ModelSpec:  # type: ignore[type-arg]
    return spec_from_config(tmp_path, cfg)


def _released(cfg: dict, **text: object) -> dict:  # type: ignore[type-arg]
    """`cfg` (a wrapper as transformers writes it) with its text model's keys changed."""
    out = copy.deepcopy(cfg)
    out["text_config"].update(text)
    return out


def test_the_released_files_names_resolve_as_transformers_resolves_them(tmp_path: Path) -> None:
    """Step-3.7-Flash's file writes num_attention_groups, moe_num_experts, moe_top_k and share_expert_dims
    (Step3p7TextConfig.attribute_map), the sliding layers' heads in attention_other_setting, the MoE layers in
    moe_layers_enum, and layer_types one entry longer per MTP layer (num_nextn_predict_layers), which
    __post_init__ cuts off. Written so, the small case counts what transformers built from its resolved keys."""
    raw = copy.deepcopy(SMALL)
    text = raw["text_config"]
    for key in ("per_layer_config", "num_sliding_attention_heads", "mlp_layer_types", "num_key_value_heads",
                "n_routed_experts", "num_experts_per_tok", "share_expert_dim"):  # fmt: skip
        text.pop(key)
    text.update(
        num_attention_groups=2,
        moe_num_experts=16,
        moe_top_k=4,
        share_expert_dims=256,
        attention_other_setting={"attention_type": "sliding_attention", "num_attention_heads": 12},
        moe_layers_enum="1,2,4,5,6",  # layer 6 is the MTP layer's
        layer_types=[*text["layer_types"], "full_attention"],
        num_nextn_predict_layers=1,
    )
    assert count_params(_spec(tmp_path, raw)).total == count_params(_spec(tmp_path, SMALL)).total


def test_a_full_layers_heads_that_do_not_group_are_refused_by_their_keys(tmp_path: Path) -> None:
    """The full layers' query heads (num_attention_heads) must be a multiple of the KV heads they share with the
    sliding layers (num_key_value_heads): the one-line refusal names those two keys, not dpcost's fields."""
    bad = _released(SMALL, num_attention_heads=9)
    said = estimate_refusal(tmp_path, bad)
    assert "text_config.num_attention_heads (9) must be a multiple of text_config.num_key_value_heads (2)" in said


def test_step_3_5_flash_s_own_file_is_the_text_model_top_level(tmp_path: Path) -> None:
    """Step-3.5-Flash's config.json is the text model's keys alone (model_type step3p5, Step3p5ForCausalLM, untied
    by default): the same count as under Step-3.7-Flash's wrapper, which ties nothing unless it says so."""
    bare = dict(DEFAULTS["text_config"])
    assert bare["model_type"] == "step3p5"
    assert count_params(_spec(tmp_path, bare)).total == count_params(_spec(tmp_path, DEFAULTS)).total


def test_an_alias_wins_over_the_canonical_key_and_num_local_experts_is_ignored(tmp_path: Path) -> None:
    """attribute_map: moe_num_experts is set after n_routed_experts, so it wins; num_local_experts is both a field
    (128) and a name of n_routed_experts, whose default (288) is what the class builds."""
    base = count_params(_spec(tmp_path, SMALL)).total
    ignored = _released(SMALL, num_local_experts=7)
    assert count_params(_spec(tmp_path, ignored)).total == base
    aliased = _released(SMALL, n_routed_experts=9, moe_num_experts=16)
    assert count_params(_spec(tmp_path, aliased)).total == base


def test_sliding_layers_hold_their_own_query_heads(tmp_path: Path) -> None:
    """Step3p7DecoderLayer builds each layer's attention from per_layer_config: the sliding ones with 12 heads of 64,
    the full ones with 8; q, o and the per-head gate g_proj follow the heads, k and v the 2 KV heads."""
    a = _spec(tmp_path, SMALL).architecture
    assert a is not None
    h, d, kv = 512, 64, 2

    def attention(heads: int) -> int:
        return h * heads * d + 2 * h * kv * d + heads * d * h + h * heads + 2 * d  # q, k, v, o, g_proj, q/k norms

    assert attention_parameters(a, a.mixer(0)) == attention(8)
    assert attention_parameters(a, a.mixer(1)) == attention(12)


def test_a_written_per_layer_config_wins_over_the_sliding_heads_key(tmp_path: Path) -> None:
    """__post_init__ sets per_layer_config only where the file gives none (kwargs.setdefault): a file as transformers
    writes it keeps its per-layer heads whatever num_sliding_attention_heads says."""
    changed = _released(SMALL, num_sliding_attention_heads=16)
    assert count_params(_spec(tmp_path, changed)).total == count_params(_spec(tmp_path, SMALL)).total


def test_per_layer_config_keys_are_layer_numbers_however_padded(tmp_path: Path) -> None:
    """transformers reads per_layer_config's keys with int() (heterogeneity/configuration_utils.py), and to_dict
    zero-pads them past layer 9: "01" is layer 1."""
    overrides = {"1": {"num_attention_heads": 8}, "2": {"num_attention_heads": 8}}
    padded = {"01": {"num_attention_heads": 8}, "02": {"num_attention_heads": 8}}
    plain = count_params(_spec(tmp_path, _released(EMPTY_PER_LAYER, per_layer_config=overrides))).total
    assert count_params(_spec(tmp_path, _released(EMPTY_PER_LAYER, per_layer_config=padded))).total == plain
    assert plain > count_params(_spec(tmp_path, EMPTY_PER_LAYER)).total  # the empty mapping keeps 4 heads


def test_the_wrapper_builds_step_s_text_model_whatever_text_config_names(tmp_path: Path) -> None:
    """Step3p7Config.__post_init__ pops text_config's model_type and builds Step3p7TextConfig."""
    renamed = _released(SMALL, model_type="llama")
    assert count_params(_spec(tmp_path, renamed)).total == count_params(_spec(tmp_path, SMALL)).total


def test_step_3_5_flash_s_shapes_give_its_published_size(tmp_path: Path) -> None:
    """Step-3.5-Flash is published as 196B parameters, 11B active: 45 layers of 4,096, full attention (64 heads)
    in every fourth from the first and 96 heads in the sliding rest, 288 experts of 1,280 (8 active) beside a shared
    one from layer 3, a vocabulary of 128,896; the body alone, without the embedding and the head."""
    flash = _released(
        DEFAULTS,
        vocab_size=128896,
        sliding_window=512,
        num_sliding_attention_heads=96,
        layer_types=["full_attention" if i % 4 == 0 else "sliding_attention" for i in range(45)],
    )
    flash["text_config"].pop("per_layer_config")
    counted = count_params(_spec(tmp_path, flash))
    body = counted.total - counted.embedding - counted.lm_head
    active_body = counted.active - counted.embedding - counted.lm_head
    assert round(body / 1e9) == 196 and round(active_body / 1e9) == 11


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("gating", "per-channel", 'gating: true or "per-head"'),
        ("mlp_bias", True, "mlp_bias: true (biases on the dense and shared MLPs"),
        ("per_layer_config", {"1": {"head_dim": 32}}, "per_layer_config.1: num_attention_heads alone"),
        ("per_layer_config", {"1": {"num_attention_heads": 4}}, "per_layer_config: one head count for every sliding"),
        ("moe_layers_enum", "1,x", "moe_layers_enum: layer indices"),
        ("sliding_window", 0, "sliding_window: a window of 1 token or more"),
        ("per_layer_config", {"9": {"num_attention_heads": 8}}, "per_layer_config: layer numbers from 0 to 5"),
        ("moe_layers_enum", [None], "moe_layers_enum: layer indices"),
    ],
)
def test_what_transformers_cannot_run_or_dpcost_does_not_count_is_refused_by_key(
    tmp_path: Path, key: str, value: object, said: str
) -> None:
    """A per-channel gate (g_proj hidden -> heads x head_dim) cannot be applied by Step3p7Attention.forward, which
    views the gate per head; mlp_bias puts biases on the dense and shared MLPs but not the experts; the other
    values are ones the configuration class cannot resolve."""
    cfg = _released(SMALL, **{key: value})
    if key == "moe_layers_enum":
        cfg["text_config"].pop("mlp_layer_types")
    assert f"text_config.{said}" in estimate_refusal(tmp_path, cfg)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ({"num_sliding_attention_heads": 0}, "num_sliding_attention_heads: a whole number of heads from 1"),
        ({"num_mtp_layers": 1, "layer_types": ["full_attention"] * 5}, "layer_types: one of"),
    ],
)
def test_what_the_configuration_class_rejects_is_refused(tmp_path: Path, text: dict, said: str) -> None:  # type: ignore[type-arg]
    """Zero sliding heads divide by zero in Step3p7Attention; __post_init__ cuts the MTP layers' entries off the
    per-layer lists for num_nextn_predict_layers alone, so a list padded for num_mtp_layers is one too long."""
    cfg = copy.deepcopy(EMPTY_PER_LAYER)
    cfg["text_config"].pop("per_layer_config")
    cfg["text_config"].update(text)
    assert f"text_config.{said}" in estimate_refusal(tmp_path, cfg)
