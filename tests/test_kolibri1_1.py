"""Aleph Alpha's Kolibri-1.1 (model_type kolibri1_1: configuration_kolibri1_1.py, modular_kolibri1_1.py, transformers
5.25.0): Kolibri-1's layers, with indexed-attention layers that read another layer's keys and values and dense
first layers of their own width. Its counts are held to what transformers builds (resolved/transformers-5.25.json,
test_hf_configs.py: the class defaults give 75,112,665,344 with the routers' correction biases); here what the
configuration and modeling code say of its layers."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import estimate_refusal, spec_from_config, transformers_cases

from dpcost.engine.activations import kv_cache_bytes
from dpcost.engine.params import attention_parameters

DEFAULTS, SMALL = transformers_cases("kolibri1_1")


def test_the_default_layout_shares_the_indexed_layers_keys_and_values(tmp_path: Path) -> None:
    """__post_init__: indexed attention in every fifth layer (4, 9, ..., 49); of those ten, the 2nd, 3rd and 10th read
    the 1st's keys and values, the 7th to 9th the 6th's. A layer that reads another's builds no k_proj, v_proj or
    k_norm (Kolibri1_1Attention), and keeps no cache of its own."""
    a = spec_from_config(tmp_path, DEFAULTS).architecture
    assert a is not None
    shared = [i for i in range(a.layers) if a.mixer(i) == "kv-shared attention"]
    assert shared == [9, 14, 34, 39, 44, 49]
    h, q, kv = 2560, 48 * 128, 4 * 128
    assert attention_parameters(a, "attention") - attention_parameters(a, "kv-shared attention") == 2 * h * kv + 128
    growth = kv_cache_bytes(a, 2, 1) - kv_cache_bytes(a, 1, 1)
    assert growth == (50 - 6) * 2 * kv * 2  # every layer that owns its cache, K and V in bf16 (the window not yet full)
    assert q == 6144


def test_the_first_two_layers_are_dense_of_their_own_width(tmp_path: Path) -> None:
    """Kolibri1_1DecoderLayer: a Kolibri1_1MLP of mlp_only_intermediate_size (3,584) in mlp_only_layers ([0, 1])."""
    a = spec_from_config(tmp_path, DEFAULTS).architecture
    assert a is not None and a.moe is not None
    assert a.moe.dense_layers == (0, 1) and a.ffn == 3584


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"num_hidden_layers": 60}, "kv_source_layers: required with more than 10 indexed_attention layers"),
        ({"kv_source_layers": [0, 1, 1, 1, 4, 5, 1, 4]}, "kv_source_layers: layer 3 (sliding_attention) reads"),
        ({"mlp_only_layers": [0, 8]}, "mlp_only_layers: layer indices from 0 to 7"),
        ({"mlp_only_layers": 0}, "mlp_only_layers: expected a list of layer indices"),
        ({"sliding_window": None}, "sliding_window: a window of 1 token or more"),
        ({"sliding_window": 0}, "sliding_window: a window of 1 token or more"),
    ],
)
def test_what_the_configuration_class_rejects_is_refused(tmp_path: Path, change: dict, said: str) -> None:  # type: ignore[type-arg]
    """Kolibri1_1Config: its default sharing covers ten indexed layers; a layer reads a layer of its own kind that owns
    its cache; mlp_only_layers are layer indices; sliding layers need a window."""
    cfg = {**(DEFAULTS if "num_hidden_layers" in change else SMALL), **change}
    if "num_hidden_layers" in change:
        cfg.pop("kv_source_layers")
        cfg.pop("layer_types")
    assert said in estimate_refusal(tmp_path, cfg)
