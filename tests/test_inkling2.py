"""Thinking Machines' Inkling 2 text model (model_type inkling2_text, and inkling2's text_config;
configuration_inkling2.py and modeling_inkling2.py, transformers 5.25.0). Its counts are held to what transformers
builds (resolved/transformers-5.25.json, test_hf_configs.py: the class defaults, Inkling-2-Small's shapes, give
593,718,478,848 parameters and 18,432 router correction biases); its decode state to what transformers' cache holds
(test_hybrids.py); here what the modeling code says of its parts, and the keys a file may write."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import estimate_refusal, spec_from_config, transformers_cases

from dpcost.engine.activations import layer_tensors
from dpcost.engine.params import (
    attention_parameters,
    attention_residual_parameters,
    count_params,
    layer_norm_parameters,
)

DEFAULTS, MIXED, FULL, SLIDING = transformers_cases("inkling2_text")
(WRAPPED,) = transformers_cases("inkling2")


def _total(tmp_path: Path, cfg: dict) -> float:  # type: ignore[type-arg]
    return count_params(spec_from_config(tmp_path, cfg)).total


def test_the_attribute_maps_names_resolve_as_transformers_resolves_them(tmp_path: Path) -> None:
    """Inkling2TextConfig.attribute_map reads intermediate_size as the experts' width (moe_intermediate_size), and
    sliding_window and sconv_kernel_size as sliding_window_size and conv_kernel_size."""
    renamed = {k: v for k, v in MIXED.items() if k not in ("moe_intermediate_size", "sliding_window_size",
                                                            "conv_kernel_size")}  # fmt: skip
    renamed.update(intermediate_size=64, sliding_window=64, sconv_kernel_size=3)
    assert _total(tmp_path, renamed) == _total(tmp_path, MIXED)


def test_the_head_has_the_unpadded_rows_and_is_never_tied(tmp_path: Path) -> None:
    """Inkling2ForCausalLM's lm_head has unpadded_vocab_size rows (200,058 by default) beside an embedding of
    vocab_size (201,024), and names no tied weights, whatever tie_word_embeddings says."""
    c = count_params(spec_from_config(tmp_path, DEFAULTS))
    assert (c.embedding, c.lm_head) == (201_024 * 4608, 200_058 * 4608)
    assert FULL["tie_word_embeddings"] is True
    assert _total(tmp_path, FULL) == _total(tmp_path, {k: v for k, v in FULL.items() if k != "tie_word_embeddings"})
    assert _total(tmp_path, WRAPPED) == _total(tmp_path, WRAPPED["text_config"])


def test_the_defaults_attention_residual_queries_and_full_layer_by_hand(tmp_path: Path) -> None:
    """48 layers, full every sixth (5, 11, ..., 47: 8 of them): a query for each layer's MLP input (48), for each
    attention input but the first layer's (39 sliding layers with one, 8 full with three), and for the final
    norm's input: 112 queries of 4,608. A full layer's attention beside a sliding one's of the same heads: per-token
    taps for its key and value convolutions (weight_proj 4,608 -> 8 x 4, twice), a bank of 1,024 distances where the
    sliding one's covers its window of 1,024 (no difference), and two more input norms (4,608 each)."""
    a = spec_from_config(tmp_path, DEFAULTS).architecture
    assert a is not None and a.mixer(5) == "global attention" and a.mixer(4) == "attention"
    assert attention_residual_parameters(a) == 112 * 4608
    dynamic = 2 * 4608 * 8 * 4
    assert attention_parameters(a, "global attention") - attention_parameters(a, "attention") == dynamic
    norms = layer_norm_parameters(a, "global attention", "moe") - layer_norm_parameters(a, "attention", "moe")
    assert norms == 2 * 4608


def test_a_full_layer_keeps_its_key_and_value_inputs_and_taps(tmp_path: Path) -> None:
    """A full layer keeps what a sliding one of the same heads does, and: its key and value input norms' inputs and
    outputs (k_proj's and v_proj's inputs, 2 x 4,608 each under fused kernels) and its convolutions' per-token taps
    (fp32, 2 x 8 x 4); both keep each token's sink logits (48 heads, bf16)."""
    a = spec_from_config(tmp_path, DEFAULTS).architecture
    assert a is not None
    full = {t.name: t.bytes_per_token for t in layer_tensors(a, True, mixer="global attention").tensors}
    sliding = {t.name: t.bytes_per_token for t in layer_tensors(a, True, mixer="attention").tensors}
    assert set(full) - set(sliding) == {
        "key and value input norms input",
        "key and value input norms output",
        "key and value convolutions' per-token taps (fp32)",
    }
    assert full["key and value input norms output"] == 2 * 2 * 4608
    assert full["key and value convolutions' per-token taps (fp32)"] == 4 * 2 * 8 * 4
    assert sliding["sink logits (sink_proj output)"] == 2 * 48


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"n_layers_per_attn_res_block": 0}, "n_layers_per_attn_res_block"),
        ({"layer_types": ["hybrid", "full_attention"] * 3}, "layer_types: one of hybrid, hybrid_sliding per layer"),
    ],
)
def test_bad_keys_are_refused_in_one_line(tmp_path: Path, change: dict, said: str) -> None:  # type: ignore[type-arg]
    """A block of no layers, and layer kinds Inkling2TextModel does not build, are refused by their keys."""
    assert said in estimate_refusal(tmp_path, {**MIXED, **change})


@pytest.mark.parametrize("flags", [("--tp", "2", "--sequence-parallel"), ("--compute-model", "ops")])
def test_layouts_and_per_op_times_refuse_it_by_name(tmp_path: Path, flags: tuple[str, ...]) -> None:
    """Megatron's layers have no attention residuals: layouts and the per-op model say so."""
    assert "attention residuals over blocks of layers" in estimate_refusal(tmp_path, MIXED, *flags)


def test_eager_keeps_the_dynamic_convolutions_windows_and_fp32_norms(tmp_path: Path) -> None:
    """Eager, Inkling2DynamicShortConvolution keeps the unfolded windows of its fp32 input and the taps broadcast over
    them, kernel x channels x 4 bytes each (a helper's saved-tensor hooks on a bf16 layer of 2 KV heads of 8 and
    kernel 3 read 768 bytes a token for the keys and values: 2 x 2 x 3 x 16 x 4); and Inkling2RMSNorm multiplies its
    weight in fp32 before the cast, so an eager norm keeps 8 bytes a channel."""
    a = spec_from_config(tmp_path, DEFAULTS).architecture
    assert a is not None and a.norm_in_fp32
    layer = layer_tensors(a, True, kernels="eager", mixer="global attention")
    eager = {t.name: t.bytes_per_token for t in layer.tensors}
    assert eager["key and value convolutions' windows and broadcast taps (fp32)"] == 4 * 2 * 4 * (8 * 128 * 2)
    assert eager["key and value input norms input"] == 8 * 2 * 4608
