"""ModernBERT-decoder (model_type modernbert-decoder; configuration_modernbert_decoder.py and
modeling_modernbert_decoder.py, transformers 5.25.0; the Ettin decoders). Its counts are held to what transformers
builds (resolved/transformers-5.25.json, test_hf_configs.py: the class defaults, the 150M decoder's shapes, give
149,655,232 parameters); here what its configuration says of the keys a file may write."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import estimate_refusal, spec_from_config, transformers_cases

from dpcost.engine.params import count_params

DEFAULTS, BIASED, UNTIED = transformers_cases("modernbert-decoder")


def test_the_hub_s_period_key_and_the_window_resolve_as_transformers_resolves_them(tmp_path: Path) -> None:
    """Files on the Hub still give global_attn_every_n_layers (full attention in layers 0, n, 2n, ...), which
    ModernBertDecoderConfig.__post_init__ turns into layer_types; the sliding layers' window is local_attention // 2
    (64 for 128), and no window at all where local_attention is null."""
    hub = {k: v for k, v in BIASED.items() if k != "layer_types"}
    assert hub["global_attn_every_n_layers"] == 2
    a = spec_from_config(tmp_path, hub).architecture
    assert a is not None and a.local_attention is not None
    assert (a.local_attention.layers, a.local_attention.size) == ((1, 3), 32)
    assert count_params(spec_from_config(tmp_path, hub)).total == count_params(spec_from_config(tmp_path, BIASED)).total
    none = spec_from_config(tmp_path, {**DEFAULTS, "local_attention": None}).architecture
    assert none is not None and none.local_attention is None


def test_the_defaults_head_by_hand(tmp_path: Path) -> None:
    """The prediction head's dense layer (768 x 768, no classifier_bias) and norm (768, no norm_bias) before the
    tied output matrix and its bias (50,368): 590,592 + 50,368 beside the embedding."""
    c = count_params(spec_from_config(tmp_path, DEFAULTS))
    parts = dict(c.components)
    assert parts["output head's dense layer and norm"] == 768 * 768 + 768
    assert c.lm_head == 50_368


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"global_attn_every_n_layers": 0, "layer_types": None}, "global_attn_every_n_layers: a period other than 0"),
        ({"local_attention": 1}, "local_attention: a window of local_attention // 2, 1 token or more"),
    ],
)
def test_what_transformers_cannot_build_is_refused_in_one_line(tmp_path: Path, change: dict, said: str) -> None:  # type: ignore[type-arg]
    """__post_init__ takes layer_id % global_attn_every_n_layers (0 divides by zero); a local_attention of 1 gives a
    window of 0."""
    assert said in estimate_refusal(tmp_path, {**BIASED, **change})
