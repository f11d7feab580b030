"""rednote's dots3 text model (model_type dots3_note_text, and dots3_note's text_config; configuration_dots3_note.py
and modeling_dots3_note.py, transformers 5.25.0). Its counts are held to what transformers builds
(resolved/transformers-5.25.json, test_hf_configs.py: the class defaults give 279,551,718,016 parameters and 11,520
router correction biases); here what the configuration code says of the keys the released files write, and what
dpcost refuses."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import estimate_refusal, spec_from_config, transformers_cases

from dpcost.engine.params import count_params

DEFAULTS, SWA_KEYS, NO_DSA, NO_SLIDING, UNINDEXED_FULL, PER_LAYER = transformers_cases("dots3_note_text")
(WRAPPED,) = transformers_cases("dots3_note")


def _total(tmp_path: Path, cfg: dict) -> float:  # type: ignore[type-arg]
    return count_params(spec_from_config(tmp_path, cfg)).total


def test_the_released_files_keys_resolve_as_transformers_resolves_them(tmp_path: Path) -> None:
    """The released files give the sliding layers' latent attention as swa_ keys, the MoE layers as
    first_k_dense_replace and moe_layer_freq, and the indexer's presence as use_dsa, which
    Dots3NoteTextConfig.__post_init__ turns into per_layer_config, mlp_layer_types and layer_types; written so, each
    counts what transformers built from the keys it resolved them to; the sliding layers' KV heads default to 64 there,
    which must equal their query heads."""
    assert SWA_KEYS["per_layer_config"]["2"]["kv_lora_rank"] == 48
    released = {k: v for k, v in SWA_KEYS.items() if k not in ("per_layer_config", "mlp_layer_types", "layer_types")}
    released.update(swa_num_attention_heads=2, swa_num_key_value_heads=2, swa_kv_lora_rank=48, swa_head_dim=40,
                    swa_qk_nope_head_dim=24, swa_v_head_dim=16, swa_q_lora_rank=32, first_k_dense_replace=2,
                    moe_layer_freq=1)  # fmt: skip
    assert _total(tmp_path, released) == _total(tmp_path, SWA_KEYS)
    unpaired = {k: v for k, v in released.items() if k != "swa_num_key_value_heads"}  # its default, 64, is not 2
    assert "swa_num_key_value_heads: as many KV heads as query heads" in estimate_refusal(tmp_path, unpaired)
    legacy = {k: v for k, v in NO_DSA.items() if k != "layer_types"}
    legacy["use_dsa"] = False  # full_attention layers, no indexer
    assert _total(tmp_path, legacy) == _total(tmp_path, NO_DSA)


def test_the_defaults_layers_by_hand(tmp_path: Path) -> None:
    """46 layers: indexed in the first two and every fourth from layer 1 (5, 9, ..., 45), sliding in the other 33, a
    window of 512; the indexer in the indexed ones alone; the full layers' latent attention 128 heads of kv_lora_rank
    512, the sliding ones' 64 heads of 1,024."""
    a = spec_from_config(tmp_path, DEFAULTS).architecture
    assert a is not None and a.indexer is not None and a.local_attention is not None
    indexed = (0, 1, *range(5, 46, 4))
    assert a.indexer.layers == indexed and len(a.local_attention.layers) == 46 - len(indexed) == 33
    assert (a.heads, a.mla.kv_lora_rank) == (64, 1024)  # type: ignore[union-attr]
    full = a.attention_of("global attention")
    assert (full.heads, full.mla.kv_lora_rank) == (128, 512)  # type: ignore[union-attr]


def test_per_layer_config_as_transformers_reads_it(tmp_path: Path) -> None:
    """The key's presence decides: a file with per_layer_config (even null or empty) takes no swa_ defaults, so its
    sliding layers attend with the top-level shapes, and use_dsa is not assumed; an entry may shape any layer (all
    of them where no layer slides); and a full layer without an indexer beside sliding layers of another query
    latent counts its own shapes (the harness's cases hold both)."""
    flat = {k: v for k, v in UNINDEXED_FULL.items() if k != "per_layer_config"}
    written = _total(tmp_path, {**flat, "per_layer_config": {}})
    assert _total(tmp_path, {**flat, "per_layer_config": None}) == written
    overridden = {**flat, "per_layer_config": {"1": {"q_lora_rank": 24}, "4": {"q_lora_rank": 24}}}
    assert _total(tmp_path, overridden) == _total(tmp_path, UNINDEXED_FULL) != written
    assert PER_LAYER["per_layer_config"]["0"] == {"kv_lora_rank": 48}


def test_the_published_wrapper_file_is_its_text_model_top_level(tmp_path: Path) -> None:
    """Dots3NoteConfig: "Published checkpoints store the text configuration at the top level": a dots3_note file
    without text_config counts as its text model."""
    flat = {**WRAPPED["text_config"], "model_type": "dots3_note"}
    assert _total(tmp_path, flat) == _total(tmp_path, WRAPPED)


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"n_shared_experts": 0}, "n_shared_experts: 1 or more"),
        ({"q_lora_rank": None}, "q_lora_rank: a query latent's width"),
        ({"num_key_value_heads": 2}, "num_key_value_heads: as many KV heads as query heads"),
        ({"moe_layer_freq": "2", "mlp_layer_types": None}, "moe_layer_freq: a period other than 0 or a flag"),
    ],
)
def test_what_transformers_refuses_is_refused_in_one_line(tmp_path: Path, change: dict, said: str) -> None:  # type: ignore[type-arg]
    """Dots3NoteTextConfig.validate_architecture: a shared expert, a query latent, and as many KV heads as query heads
    in each kind of layer; __post_init__ takes moe_layer_freq as a period (Python's %) or a flag per layer."""
    assert said in estimate_refusal(tmp_path, {**NO_SLIDING, **change})


@pytest.mark.parametrize("flags", [("--tp", "2", "--sequence-parallel"), ("--compute-model", "ops")])
def test_layouts_and_per_op_times_refuse_it_by_name(tmp_path: Path, flags: tuple[str, ...]) -> None:
    """Megatron's MLA has one shape for every layer and no norm over the rotary key: layouts and the per-op model
    say so."""
    assert "latent attention of other shapes" in estimate_refusal(tmp_path, SWA_KEYS, *flags)
