"""RWKV-4 (model_type rwkv; Peng et al. 2023, arXiv 2305.13048): in every layer time mixing (key, value and receptance
of the token-shifted input, the WKV recurrence, an output matmul) and channel mixing (a squared-ReLU MLP gated by a
receptance), under two LayerNorms (modeling_rwkv.py, transformers 5.25.0). Its counts are held to what transformers
builds (resolved/transformers-5.25.json, test_hf_configs.py: RWKV/rwkv-4-169m-pile's shapes give 169,342,464, the
"169m" of its name); here what the modeling code says of its state, its
matmuls and what its backward keeps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import HF_RESOLVED, estimate_refusal, spec_from_config, transformers_cases

from dpcost.engine.activations import layer_tensors, recurrent_state_bytes
from dpcost.engine.params import block_tensors
from dpcost.specs import ModelArchitecture

DEFAULT = transformers_cases("rwkv")[0]


def _arch(tmp_path: Path, **changes: object) -> ModelArchitecture:
    a = spec_from_config(tmp_path, {**DEFAULT, **changes}).architecture
    assert a is not None
    return a


def test_a_sequence_s_state_is_the_model_s_five_state_tensors(tmp_path: Path) -> None:
    """RwkvModel.forward allocates five state tensors of (batch, hidden_size, layers): the two token shifts' last
    inputs in the model's dtype and the WKV numerator, denominator and running maximum in float32. Per sequence of
    the 7B default: 32 layers x (2 x 4096 x 2 + 3 x 4096 x 4) bytes, whatever the context."""
    a = _arch(tmp_path)
    assert recurrent_state_bytes(a, 2) == 32 * (2 * 4096 * 2 + 3 * 4096 * 4)


def test_a_layer_s_weights_are_its_seven_linear_layers_and_its_vectors(tmp_path: Path) -> None:
    """RwkvSelfAttention's key, value and receptance (hidden -> attention_hidden_size) and output (back), and
    RwkvFeedForward's key (hidden -> intermediate_size), value (back) and receptance (hidden -> hidden), none biased;
    the rest are vectors: time_decay and time_first (attention_hidden_size each), five time_mix (hidden each) and
    the two LayerNorms' weights and biases."""
    h, w, f = 1024, 512, 3000
    a = _arch(tmp_path, hidden_size=h, attention_hidden_size=w, intermediate_size=f)
    sizes = block_tensors(a, False, mixer="rwkv")
    matrices = [h * w, h * w, h * w, w * h, h * h, h * f, f * h]
    assert sorted(sizes[:-1]) == sorted(matrices)
    assert sizes[-1] == 2 * w + 5 * h + 2 * 2 * h


def test_what_the_backward_keeps_is_what_autograd_saves(tmp_path: Path) -> None:
    """resolved/rwkv-saved.json: saved-tensor hooks on transformers 5.25.0's bf16 RwkvBlock (h 256, w 384, f 640), its
    WKV kernel saving what RwkvLinearAttention's save_for_backward lists, keep 13,056 bytes a token of activations in
    a layer past the first (26 h + 10 w + 4 f). dpcost's eager account of the layer is that. Not counted, as for every
    family: the LayerNorms' mean and rstd (8 bytes a token), and the first layer's pre_ln input (2 h bytes a token
    once per model, as BLOOM's embedding norm)."""
    measured = json.loads((HF_RESOLVED / "rwkv-saved.json").read_text())
    a = _arch(tmp_path, hidden_size=measured["hidden"], attention_hidden_size=measured["attention_hidden_size"],
              intermediate_size=measured["intermediate_size"])  # fmt: skip
    kept = sum(t.bytes_per_token for t in layer_tensors(a, False, kernels="eager", mixer="rwkv").tensors if t.saved)
    assert kept == measured["layer 1"]["activations_bytes_per_token"]


def test_the_layer_makes_seven_matmuls_in_forward_order(tmp_path: Path) -> None:
    """nn.Linear calls in RwkvBlock.forward's order (torchtitan's per-op policy counts aten.mm in order): time
    mixing's key, value, receptance and output, then channel mixing's key, value and receptance."""
    a = _arch(tmp_path)
    names = {t.matmul: t.name for t in layer_tensors(a, False, mixer="rwkv").tensors if t.matmul}
    assert list(names) == [1, 2, 3, 4, 5, 6, 7]
    assert names[3] == "RWKV receptance (sigmoid's input)"
    assert names[7] == "RWKV channel mixing's receptance (sigmoid's input)"


def test_an_rwkv_7_file_is_refused_by_its_key(tmp_path: Path) -> None:
    assert "a_low_rank_dim: an RWKV-7 key" in estimate_refusal(tmp_path, {**DEFAULT, "a_low_rank_dim": 64})


@pytest.mark.parametrize("flag", [("--tp", "2"), ("--compute-model", "ops")])
def test_layouts_and_per_op_times_are_refused_by_what_they_lack(tmp_path: Path, flag: tuple[str, str]) -> None:
    assert "RWKV time mixing" in estimate_refusal(tmp_path, DEFAULT, *flag)
