"""Mistral Large 4 (model_type mistral_large4, its text model mistral_large4_text): DeepSeek-V3.2's layers without a
query latent, every fourth layer without RoPE, layers that may share an earlier layer's latent, an indexer from the
hidden state (modeling_mistral_large4.py, transformers 5.25.0). Its counts are held to what transformers builds
(resolved/transformers-5.25.json, test_hf_configs.py: the class defaults, Mistral-Large-4-1T-A52B's shapes, give
1,050,118,202,912); here what the modeling code says of its layers and its cache."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import estimate_refusal, spec_from_config, transformers_cases

from dpcost.engine.activations import kv_cache_bytes
from dpcost.engine.params import count_params
from dpcost.specs import KV_SHARED, NOPE, ModelSpec

DEFAULT, SMALL = transformers_cases("mistral_large4")


def _spec(tmp_path: Path, cfg: dict, **text: object) -> ModelSpec:  # type: ignore[type-arg]
    return spec_from_config(tmp_path, {**cfg, "text_config": {**cfg["text_config"], **text}})


def test_every_fourth_layer_runs_without_rope_by_default(tmp_path: Path) -> None:
    """MistralLarge4TextConfig.__post_init__: no_rope_layers[i] = int((i + 1) % 4 != 0), so layers 3, 7, ..., 71 run
    without RoPE; their kv_a_proj_with_mqa makes the 512-wide latent alone and kv_b_proj gives each head 128 + 128
    (qk_nope_head_dim + qk_rope_head_dim, then v_head_dim)."""
    a = _spec(tmp_path, DEFAULT).architecture
    assert a is not None
    assert [i for i in range(a.layers) if a.mixer(i) == NOPE] == list(range(3, 72, 4))
    mla = a.attention_of(NOPE).mla
    assert mla is not None and (mla.qk_nope_head_dim, mla.qk_rope_head_dim) == (128, 0)


def test_a_layer_caches_its_latent_and_rope_key_and_its_indexer_keys(tmp_path: Path) -> None:
    """Per token of one sequence: each RoPE layer's latent and rotary key (512 + 64), each NoPE layer's latent alone
    (512), both in bf16, and every indexer layer's key (index_head_dim 128) in the model's dtype (the cache's
    update_indexer keeps what it is given)."""
    a = _spec(tmp_path, DEFAULT).architecture
    assert a is not None
    tokens = 1024
    assert kv_cache_bytes(a, tokens, 1) == tokens * 2 * (54 * 576 + 18 * 512 + 72 * 128)


def test_a_layer_sharing_an_earlier_latent_holds_no_projection_to_it_and_caches_nothing(tmp_path: Path) -> None:
    """kv_source_layers [0, 0, 2, 2, 4, 4]: layers 1, 3 and 5 read the latent of the layer before; they build no
    kv_a_proj_with_mqa (hidden -> latent + rope, biased under attention_bias) nor kv_a_layernorm, and keep no cache
    of their own (kv_sharing_modes "reuse"), while their kv_b_proj expands the latent they read."""
    spec = _spec(tmp_path, SMALL)
    a = spec.architecture
    assert a is not None
    assert [a.mixer(i).startswith(KV_SHARED) for i in range(a.layers)] == [False, True] * 3
    owned = _spec(tmp_path, SMALL, kv_source_layers=list(range(6)))
    # per sharing layer: kv_a_proj_with_mqa (512 x (64 + 64)) with its bias (64 + 64), kv_a_layernorm (64); one of
    # the three runs without RoPE (512 x 64, 64, 64)
    held = 2 * (512 * 128 + 128 + 64) + (512 * 64 + 64 + 64)
    assert count_params(owned).total - count_params(spec).total == held
    owned_a = owned.architecture
    assert owned_a is not None
    assert kv_cache_bytes(owned_a, 10, 1) - kv_cache_bytes(a, 10, 1) == 10 * 2 * (2 * 128 + 64)


def test_the_learned_rotary_scale_is_held_once(tmp_path: Path) -> None:
    """MistralLarge4TextRotaryEmbedding.alpha: one number per rotary frequency, qk_rope_head_dim / 2."""
    components = dict(count_params(_spec(tmp_path, DEFAULT)).components)
    assert components["rotary frequency scale"] == 32


def test_num_experts_is_rerouted_over_n_routed_experts(tmp_path: Path) -> None:
    """MistralLarge4TextConfig.__post_init__ sets n_routed_experts from num_experts where a file gives it, and its
    attribute_map reads num_local_experts as n_routed_experts (a file without n_routed_experts)."""
    rerouted = _spec(tmp_path, SMALL, num_experts=4).architecture
    text = {k: v for k, v in SMALL["text_config"].items() if k != "n_routed_experts"}
    mapped = _spec(tmp_path, {**SMALL, "text_config": text}, num_local_experts=4).architecture
    for a in (rerouted, mapped):
        assert a is not None and a.moe is not None and a.moe.experts == 4


def test_no_rope_layers_is_read_as_a_truth_value_per_layer(tmp_path: Path) -> None:
    """MistralLarge4TextAttention reads no_rope_layers[layer_idx] as a truth value: 2 is RoPE, and a longer list's
    tail is never read."""
    a = _spec(tmp_path, SMALL, no_rope_layers=[2, 2, 0, 0, 1, 1, 0, 0]).architecture
    b = _spec(tmp_path, SMALL).architecture
    assert a is not None and b is not None and a.mixers == b.mixers


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ({"no_rope_layers": [1, 1]}, "no_rope_layers: a whole number per layer (6), 0 for no RoPE"),
        ({"no_rope_layers": [True] * 6}, "no_rope_layers: a whole number per layer (6), 0 for no RoPE"),
        # the attention reads shared_kv_states["rope"] or ["nope"] by its own kind (modeling_mistral_large4.py)
        ({"kv_source_layers": [0, 0, 2, 2, 2, 5]}, "layer 4 (with RoPE) reads the latent of layer 2 (without RoPE"),
        # a shared layer reuses the top-k of the last full layer before it; the first has none to reuse
        ({"indexer_types": ["shared"] * 6}, "indexer_types: the first layer must be full"),
        ({"kv_source_layers": [0, 2, 2, 3, 4, 5]}, "kv_source_layers: per layer (6), itself or an earlier layer"),
        ({"kv_source_layers": [0, 0, 1, 3, 4, 5]}, "kv_source_layers: per layer (6), itself or an earlier layer"),
    ],
)
def test_what_it_cannot_build_is_refused_by_key(tmp_path: Path, text: dict, said: str) -> None:  # type: ignore[type-arg]
    assert said in estimate_refusal(tmp_path, {**SMALL, "text_config": {**SMALL["text_config"], **text}})


def test_layouts_are_refused_by_what_they_lack(tmp_path: Path) -> None:
    assert "latent attention layers without RoPE" in estimate_refusal(tmp_path, DEFAULT, "--tp", "8")
