"""Poolside's Laguna (model_type laguna; configuration_laguna.py and modeling_laguna.py, transformers 5.24.0): each
layer's query heads are num_attention_heads_per_layer[i] (LagunaDecoderLayer), so q_proj, o_proj and the per-head gate
g_proj take the layer's count while k_proj and v_proj keep the shared KV heads. Laguna XS.2 has 48 heads in its 10 full
layers and 64 in its 30 sliding ones (tests/reference/hf-configs/laguna-xs.2.json; its total is held to the published
33.4B in test_hf_configs.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from conftest import REFERENCE, estimate_refusal, spec_from_config

from dpcost.engine.compute import attention_flops
from dpcost.engine.params import attention_parameters, count_params

XS2 = json.loads((REFERENCE / "hf-configs" / "laguna-xs.2.json").read_text())
HIDDEN, HEAD_DIM, KV_HEADS = 2048, 128, 8


def _layer(heads: int) -> int:
    """LagunaAttention at `heads` query heads: q_proj and o_proj (hidden x heads x head_dim each), k_proj and v_proj
    (hidden x KV heads x head_dim each), g_proj per head (hidden x heads), q_norm and k_norm (head_dim each)."""
    return 2 * HIDDEN * heads * HEAD_DIM + 2 * HIDDEN * KV_HEADS * HEAD_DIM + HIDDEN * heads + 2 * HEAD_DIM


def test_each_layer_holds_its_own_heads_query_output_and_gate(tmp_path: Path) -> None:
    a = spec_from_config(tmp_path, XS2).architecture
    assert a is not None
    full = [i for i in range(40) if i % 4 == 0]
    assert [i for i in range(a.layers) if a.mixer(i) == "global attention"] == full
    assert attention_parameters(a, "global attention") == _layer(48)
    assert attention_parameters(a, "attention") == _layer(64)
    components = dict(count_params(spec_from_config(tmp_path, XS2)).components)
    assert components["attention"] == 10 * _layer(48) + 30 * _layer(64)


def test_the_score_matmuls_run_at_each_layer_s_heads(tmp_path: Path) -> None:
    """PaLM's 2 H (d_qk + d_v) T per layer and token, T twice the keys a query sees on average: 48 heads over T / 2
    keys in the full layers (FlashAttention-2's causal half), 64 over (2 T W - W^2) / 2T in the sliding ones (W =
    512, T = 4,096)."""
    a = spec_from_config(tmp_path, XS2).architecture
    assert a is not None
    seq = 4096
    causal = seq / 2
    window = (2 * seq * 512 - 512**2) / (2 * seq)
    expected = 2 * 2 * HEAD_DIM * (10 * 48 * 2 * causal + 30 * 64 * 2 * window)
    assert attention_flops(a, seq) == pytest.approx(expected, rel=1e-9)


def test_one_count_for_every_layer_reads_as_before(tmp_path: Path) -> None:
    """A list that repeats one count is the plain attention of that many heads: no global layers."""
    uniform = dict(XS2, num_attention_heads_per_layer=[64] * 40)
    a = spec_from_config(tmp_path, uniform).architecture
    assert a is not None and a.heads == 64 and a.global_attention is None


def test_layers_of_one_kind_at_two_widths_are_refused(tmp_path: Path) -> None:
    """The spec holds one width for the full layers and one for the sliding ones: a file that varies the heads
    within a kind is refused by name, exit code 2."""
    mixed = copy.deepcopy(XS2)
    mixed["num_attention_heads_per_layer"][1] = 72
    err = estimate_refusal(tmp_path, mixed)
    assert "num_attention_heads_per_layer" in err and "sliding_attention" in err


def test_a_head_count_that_is_not_a_whole_number_is_refused_as_such(tmp_path: Path) -> None:
    """A true or a 0 in the list is not a head count: the refusal says so, naming the key."""
    for wrong in (True, 0, 64.0):
        heads = [64] * 40
        heads[1] = wrong
        err = estimate_refusal(tmp_path, dict(XS2, num_attention_heads_per_layer=heads))
        assert "num_attention_heads_per_layer: a whole number of heads from 1" in err


def test_a_list_of_the_wrong_length_is_refused(tmp_path: Path) -> None:
    """LagunaConfig.validate_architecture: its length must equal num_hidden_layers."""
    err = estimate_refusal(tmp_path, dict(XS2, num_attention_heads_per_layer=[48, 64]))
    assert "num_attention_heads_per_layer" in err and "(40)" in err
