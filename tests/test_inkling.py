"""Thinking Machines' Inkling text model (model_type inkling_text, and inkling_mm_model's text_config;
configuration_inkling.py and modeling_inkling.py, transformers 5.25.0). Its counts are held to what transformers
builds (resolved/transformers-5.25.json, test_hf_configs.py: the class defaults give 975,340,270,146 parameters and
16,896 router correction biases); its decode state to what transformers' cache holds (test_hybrids.py); here what
the configuration and modeling code say of the keys the released files write, and what dpcost refuses."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from conftest import estimate_refusal, spec_from_config, transformers_cases

from dpcost.engine.activations import layer_tensors
from dpcost.engine.params import count_params

DEFAULTS, LISTED, DENSE_WIDTH, FULL, SLIDING = transformers_cases("inkling_text")
(WRAPPED,) = transformers_cases("inkling_mm_model")


def _total(tmp_path: Path, cfg: dict) -> float:  # type: ignore[type-arg]
    return count_params(spec_from_config(tmp_path, cfg)).total


def test_the_released_files_keys_resolve_as_transformers_resolves_them(tmp_path: Path) -> None:
    """The checkpoints' files write dense_intermediate_size (then intermediate_size is the experts' width) and
    dense_mlp_idx (the leading dense layers), which InklingTextConfig.__post_init__ turns into intermediate_size,
    moe_intermediate_size and mlp_layer_types; local_layer_ids (the sliding layers) in place of layer_types; and
    sconv_kernel_size and sliding_window, the attribute_map's names. Written so, each case counts what transformers
    built from the keys it resolved them to."""
    released = {k: v for k, v in DENSE_WIDTH.items() if k not in ("mlp_layer_types", "moe_intermediate_size")}
    released.update(dense_intermediate_size=DENSE_WIDTH["intermediate_size"], dense_mlp_idx=2,
                    intermediate_size=DENSE_WIDTH["moe_intermediate_size"])  # fmt: skip
    assert DENSE_WIDTH["mlp_layer_types"][:3] == ["dense", "dense", "sparse"]
    assert _total(tmp_path, released) == _total(tmp_path, DENSE_WIDTH)

    listed = {k: v for k, v in LISTED.items() if k != "layer_types"}
    assert listed["local_layer_ids"] == [0, 2, 3]
    assert _total(tmp_path, listed) == _total(tmp_path, LISTED)

    renamed = {k: v for k, v in LISTED.items() if k not in ("conv_kernel_size", "sliding_window_size")}
    renamed.update(sconv_kernel_size=LISTED["conv_kernel_size"], sliding_window=LISTED["sliding_window_size"])
    spec = spec_from_config(tmp_path, renamed)
    assert spec.architecture is not None and spec.architecture.local_attention is not None
    assert (spec.architecture.sconv_kernel, spec.architecture.local_attention.size) == (3, 64)
    assert count_params(spec).total == _total(tmp_path, LISTED)


def test_the_head_is_never_tied_and_the_wrapper_counts_its_text_model(tmp_path: Path) -> None:
    """InklingForCausalLM and InklingForConditionalGeneration keep embed and unembed apart (_tied_weights_keys is
    empty), whatever tie_word_embeddings says; the wrapper's file counts as its text_config alone, the vision and
    audio towers left out."""
    assert FULL["tie_word_embeddings"] is True and WRAPPED["tie_word_embeddings"] is True
    untied = {k: v for k, v in FULL.items() if k != "tie_word_embeddings"}
    assert _total(tmp_path, FULL) == _total(tmp_path, untied)
    text = copy.deepcopy(WRAPPED["text_config"])
    assert _total(tmp_path, WRAPPED) == _total(tmp_path, text)


def test_the_defaults_relative_logits_and_convolutions_by_hand(tmp_path: Path) -> None:
    """The class defaults' layer 0 (sliding: 64 heads, 16 KV heads of 128, a window of 512) and layer 5 (full: 64
    heads, 8 KV heads of 128): r_proj 6,144 x 64 x 16 in each, the bank 16 x 512 and 16 x 1,024, k_sconv and v_sconv
    4 taps over 2,048 and 1,024 channels each, attn_sconv and mlp_sconv 4 taps over 6,144 each (modeling_inkling.py)."""
    a = spec_from_config(tmp_path, DEFAULTS).architecture
    assert a is not None and a.mixer(0) == "attention" and a.mixer(5) == "global attention"
    from dpcost.engine.params import key_value_convolution_parameters, relative_logits_parameters

    assert relative_logits_parameters(a, "attention") == 6144 * 64 * 16 + 16 * 512
    assert relative_logits_parameters(a, "global attention") == 6144 * 64 * 16 + 16 * 1024
    assert key_value_convolution_parameters(a, "attention") == 4 * 2 * 16 * 128
    assert key_value_convolution_parameters(a, "global attention") == 4 * 2 * 8 * 128
    parts = dict(count_params(spec_from_config(tmp_path, DEFAULTS)).components)
    assert parts["sub-layer output convolutions"] == 66 * 2 * 4 * 6144


def test_a_layer_keeps_its_convolutions_fp32_inputs_and_r_proj_output(tmp_path: Path) -> None:
    """Each InklingShortConvolution casts its input to fp32 and keeps it for the depthwise convolution's backward:
    per token 4 bytes x (the keys' and values' channels, the attention's output, the MLP's output); r_proj's output
    (heads x d_rel in bf16) is kept for the bank's matmul. Inkling's sliding layer of the class defaults: 4 x (2,048
    + 2,048 + 6,144 + 6,144) and 2 x 64 x 16 bytes."""
    a = spec_from_config(tmp_path, DEFAULTS).architecture
    assert a is not None
    kept = {t.name: t.bytes_per_token for t in layer_tensors(a, True, mixer="attention").tensors}
    assert kept["key and value convolutions' inputs (fp32)"] == 4 * (2048 + 2048)
    assert kept["attention output convolution's input (fp32)"] == 4 * 6144
    assert kept["MLP output convolution's input (fp32)"] == 4 * 6144
    assert kept["relative logits' weights (r_proj output)"] == 2 * 64 * 16


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"n_shared_experts": 0}, "n_shared_experts: 1 or more"),
        ({"layer_types": ["hybrid", "sliding_attention", "hybrid", "hybrid", "hybrid", "hybrid"]}, "layer_types:"),
        ({"local_layer_ids": "0,1"}, "local_layer_ids: a list of layer numbers"),
        ({"num_key_value_heads": 3}, "num_attention_heads (4) must be a multiple of num_key_value_heads (3)"),
        ({"swa_num_key_value_heads": 3}, "swa_num_attention_heads (8) must be a multiple of swa_num_key_value_heads"),
        ({"head_dim": 0}, ": head_dim: must be more than 0, got 0"),  # not swa_head_dim, the field head_dim's key
        ({"conv_kernel_size": None, "sconv_kernel_size": "abc"}, "sconv_kernel_size: expected a whole number"),
    ],
)
def test_what_transformers_cannot_build_or_run_is_refused_in_one_line(
    tmp_path: Path,
    change: dict,
    said: str,  # type: ignore[type-arg]
) -> None:
    """InklingTopkRouter cuts the shared experts' scores off the end of its own (scores[..., :-n_shared_experts]):
    with none it has nothing to route; layer_types takes hybrid or hybrid_sliding per layer; local_layer_ids is a list
    of ints (strict dataclass fields). A kind's query heads must be a multiple of its KV heads, and the message names
    that kind's keys: the full layers' head_dim is said as head_dim, though the sliding layers' field of that name
    comes from swa_head_dim, and a key the file spells by its attribute_map name is said so."""
    cfg = {k: v for k, v in LISTED.items() if not (k == "layer_types" and "local_layer_ids" in change)}
    assert said in estimate_refusal(tmp_path, {**cfg, **change})


@pytest.mark.parametrize("flags", [("--tp", "2", "--sequence-parallel"), ("--compute-model", "ops")])
def test_layouts_and_per_op_times_refuse_it_by_name(tmp_path: Path, flags: tuple[str, ...]) -> None:
    """Layouts (Megatron's layers) and the per-op model have neither the relative logits nor the convolutions."""
    assert "relative position logits and short convolutions" in estimate_refusal(tmp_path, LISTED, *flags)
