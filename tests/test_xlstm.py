"""xLSTM (model_type xlstm; Beck et al. 2025, arXiv 2503.13427, xLSTM 7B): in every block an RMSNorm, an mLSTM layer, an
RMSNorm and a SwiGLU MLP (modeling_xlstm.py, transformers 5.25.0, its own classes). Its counts are held to what
transformers builds (resolved/transformers-5.25.json, test_hf_configs.py: xLSTM-7B's shapes give 6,865,424,896);
here what the modeling code says of its head, its state and what its backward keeps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import HF_RESOLVED, estimate_refusal, spec_from_config, transformers_cases

from dpcost.engine.activations import layer_tensors, recurrent_state_bytes
from dpcost.engine.params import count_params
from dpcost.specs import ModelArchitecture

DEFAULT = transformers_cases("xlstm")[0]
SAVED = json.loads((HF_RESOLVED / "xlstm-saved.json").read_text())["layers"]


def _arch(tmp_path: Path, **changes: object) -> ModelArchitecture:
    """The default case with `changes`; without embedding_dim, which xLSTMConfig sets to hidden_size and to_dict
    writes, where a change sets the width."""
    base = {k: v for k, v in DEFAULT.items() if k != "embedding_dim" or "hidden_size" not in changes}
    a = spec_from_config(tmp_path, {**base, **changes}).architecture
    assert a is not None
    return a


def test_the_output_head_is_its_own_whatever_the_file_says(tmp_path: Path) -> None:
    """xLSTMForCausalLM declares no _tied_weights_keys, so transformers builds lm_head apart even where
    tie_word_embeddings is true (one of the harness's cases)."""
    counts = count_params(spec_from_config(tmp_path, {**DEFAULT, "tie_word_embeddings": True}))
    assert counts.lm_head == counts.embedding == 50304 * 4096


def test_a_sequence_s_state_is_each_layer_s_memory_normaliser_and_stabiliser(tmp_path: Path) -> None:
    """xLSTMCache holds per layer c (heads x qk_head_dim x v_head_dim), n (heads x qk_head_dim) and m (heads x 1), in
    the embeddings' dtype: xLSTM-7B, 32 layers x 8 x (256 x 512 + 256 + 1) x 2 bytes per sequence."""
    a = _arch(tmp_path)
    assert recurrent_state_bytes(a, 2) == 32 * 8 * (256 * 512 + 256 + 1) * 2


@pytest.mark.parametrize("shape", SAVED, ids=lambda s: f"h{s['hidden_size']}-H{s['num_heads']}-C{s['chunk_size']}")
def test_what_the_layer_keeps_is_what_autograd_saves(tmp_path: Path, shape: dict[str, float]) -> None:
    """resolved/xlstm-saved.json: saved-tensor hooks on transformers 5.25.0's bf16 xLSTMLayer in training (its native
    chunkwise kernel) at twelve shapes; dpcost's account of the layer, with its input (the norm's output), is within
    0.5% of each."""
    keys = ("hidden_size", "num_heads", "chunk_size", "qk_dim_factor", "v_dim_factor")
    a = _arch(tmp_path, **{k: shape[k] for k in keys})
    tensors = layer_tensors(a, False, kernels="eager", mixer="mlstm").tensors
    kept = sum(t.bytes_per_token for t in tensors if t.saved and t.name.startswith("mLSTM"))
    assert kept + 2 * shape["hidden_size"] == pytest.approx(shape["saved_bytes_per_token"], rel=0.005)


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"weight_mode": "split"}, "weight_mode: single or fused"),
        ({"ffn_round_up_to_multiple_of": 0}, "ffn_round_up_to_multiple_of: a whole number from 1, got 0"),
        # xLSTMModel sizes the embedding by embedding_dim and the blocks by hidden_size
        ({"embedding_dim": 2048}, "embedding_dim (2048) must be hidden_size (4096)"),
        ({"qk_dim_factor": 0.3}, "int(qk_dim_factor x hidden_size) (1228)"),
    ],
)
def test_what_it_cannot_build_is_refused_by_key(tmp_path: Path, changes: dict, said: str) -> None:  # type: ignore[type-arg]
    assert said in estimate_refusal(tmp_path, {**DEFAULT, **changes})


@pytest.mark.parametrize("flag", [("--tp", "2"), ("--compute-model", "ops")])
def test_layouts_and_per_op_times_are_refused_by_what_they_lack(tmp_path: Path, flag: tuple[str, str]) -> None:
    assert "mLSTM layers" in estimate_refusal(tmp_path, DEFAULT, *flag)
