"""RecurrentGemma (model_type recurrent_gemma; Griffin, De et al. 2024, arXiv 2402.19427): layers whose temporal block
is a recurrent block (two input projections, a depthwise convolution, the RG-LRU and an output projection) or local
attention, cycling through block_types (modeling_recurrent_gemma.py, transformers 5.25.0). Its counts are held to
what transformers builds (resolved/transformers-5.25.json, test_hf_configs.py); here what the modeling code says of
its cache, its matmuls and its layers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import HF_RESOLVED, estimate_refusal, spec_from_config, transformers_cases

from dpcost.catalog import load_model
from dpcost.engine.activations import layer_tensors, recurrent_state_bytes
from dpcost.specs import ModelArchitecture

DEFAULT = transformers_cases("recurrent_gemma")[0]


def _arch(tmp_path: Path, **changes: object) -> ModelArchitecture:
    a = spec_from_config(tmp_path, {**DEFAULT, **changes}).architecture
    assert a is not None
    return a


def test_block_types_cycle_over_the_layers(tmp_path: Path) -> None:
    """RecurrentGemmaConfig.layers_block_type repeats block_types: the 2B's 26 layers are recurrent, recurrent,
    attention, ... (attention at 2, 5, ..., 23), each attention layer in a window of attention_window_size."""
    a = _arch(tmp_path)
    attention = [i for i in range(a.layers) if a.mixer(i) == "attention"]
    assert attention == list(range(2, 26, 3))
    assert all(a.mixer(i) == "rglru" for i in range(a.layers) if i not in attention)
    assert all(a.local_span(i) is not None and a.local_span(i).size == 2048 for i in attention)


def test_a_sequence_caches_each_recurrent_block_s_window_and_fp32_state(tmp_path: Path) -> None:
    """RecurrentGemmaRecurrentBlock keeps conv1d_state, linear_x's last conv1d_width - 1 steps of lru_width channels,
    in the model's dtype, and RecurrentGemmaRglru its recurrent_states of lru_width in float32 ("recurrent_states
    always computed in full precision"): per sequence, 18 recurrent layers x (2560 x 3 x 2 + 2560 x 4) bytes."""
    a = _arch(tmp_path)
    assert recurrent_state_bytes(a, 2) == 18 * (2560 * 3 * 2 + 2560 * 4)


def test_the_recurrent_block_makes_three_matmuls(tmp_path: Path) -> None:
    """linear_y, linear_x and linear_out are nn.Linear (aten.mm, which torchtitan's per-op policy counts); the RG-LRU's
    gates run as torch.baddbmm over their blocks, not aten.mm."""
    a = _arch(tmp_path)
    tensors = layer_tensors(a, False, mixer="rglru").tensors
    names = {t.matmul: t.name for t in tensors if t.matmul}
    assert list(names) == [1, 2, 3, 4, 5, 6]  # the block's three, then the MLP's gate, up and down
    assert [names[i] for i in (1, 2, 3)] == ["RG-LRU linear_y output", "RG-LRU linear_x output",
                                               "RG-LRU linear_out output"]  # fmt: skip


def test_files_saved_by_transformers_4_name_the_pattern_block_types(tmp_path: Path) -> None:
    """transformers 4's RecurrentGemmaConfig kept the pattern as _block_types, which its saved files carry (ports
    that load google/recurrentgemma-2b read that key): it sets the layers as block_types does."""
    cfg = {k: v for k, v in DEFAULT.items() if k != "block_types"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**cfg, "_block_types": ["recurrent", "attention"]}))
    a = load_model(str(path)).architecture
    assert a is not None
    assert [a.mixer(i) for i in range(4)] == ["rglru", "attention", "rglru", "attention"]


def test_the_recurrent_block_keeps_what_autograd_saves(tmp_path: Path) -> None:
    """resolved/recurrent-gemma-saved.json: saved-tensor hooks on transformers 5.25.0's bf16 recurrent block
    (w = 384) keep 38.05 w bytes a token besides its input; the 0.05 is the convolution's padded steps. dpcost's
    eager account of the block (layer_tensors, its rglru tensors) is 38 w."""
    measured = json.loads((HF_RESOLVED / "recurrent-gemma-saved.json").read_text())  # fmt: skip
    a = _arch(tmp_path, lru_width=measured["lru_width"], hidden_size=measured["hidden"],
              num_attention_heads=measured["heads"], num_key_value_heads=measured["heads"])  # fmt: skip
    kept = sum(t.bytes_per_token for t in layer_tensors(a, False, kernels="eager", mixer="rglru").tensors
               if t.saved and t.name.startswith("RG-LRU"))  # fmt: skip
    assert kept / measured["lru_width"] == pytest.approx(measured["saved_bytes_per_token_without_input_per_width"],
                                                         rel=0.005)  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"block_types": ["recurrent", "mlp"]}, "block_types: a list of recurrent or attention"),
        ({"lru_width": 2505}, "lru_width (2505) must be a multiple of num_attention_heads (10)"),
    ],
)
def test_what_it_cannot_build_is_refused_by_key(tmp_path: Path, changes: dict, said: str) -> None:  # type: ignore[type-arg]
    assert said in estimate_refusal(tmp_path, {**DEFAULT, **changes})


def test_layouts_and_per_op_times_are_refused_by_what_they_lack(tmp_path: Path) -> None:
    assert "RG-LRU recurrent blocks" in estimate_refusal(tmp_path, DEFAULT, "--tp", "2")
