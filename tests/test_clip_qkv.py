"""Clamped Q, K and V projections (clip_qkv: DBRX, MPT, OLMo, OLMoE), held to autograd's saved tensors on
transformers 5.25.0 (tests/reference/hf-configs/resolved/clip-qkv.json): eager, the clamp keeps its input, or
(OLMo's in-place clamp_) a copy of it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import estimate_refusal, load_model, spec_from_config

from dpcost.engine.activations import layer_tensors
from dpcost.engine.checkpointing import activation_memory

HF = Path(__file__).parent / "reference" / "hf-configs"
MEASURED = json.loads((HF / "resolved" / "clip-qkv.json").read_text())["families"]
CLAMPED = "Q, K and V before their clamp (clip_qkv)"


def _unclipped(cfg: dict) -> dict:
    """The config with clip_qkv null, where its family keeps it (attn_config for DBRX and MPT)."""
    if isinstance(cfg.get("attn_config"), dict):
        return cfg | {"attn_config": cfg["attn_config"] | {"clip_qkv": None}}
    return cfg | {"clip_qkv": None}


def _first_layer(arch, kernels: str = "eager"):
    """dpcost's tensors of the first layer."""
    mixer, mlp, width = arch.layer_kinds[0]
    return layer_tensors(arch, mlp == "moe", True, kernels, mixer, mlp != "none", width).tensors


@pytest.mark.parametrize("family", sorted(MEASURED))
def test_the_clamp_keeps_q_k_and_v_as_they_were(tmp_path, family):
    """What the Clamp nodes keep, and (where the family builds without clip_qkv) all the forward keeps beyond it, a
    token per unit of hidden: the fused projection's output (DBRX: 4 heads of 64 and one key/value head, 3 bytes;
    MPT's 4 heads: 6) or OLMo's and OLMoE's three projections' outputs (4 query heads, 2 key/value heads: 4)."""
    found = MEASURED[family]
    clipped = spec_from_config(tmp_path, found["config"]).architecture
    unclipped = spec_from_config(tmp_path, _unclipped(found["config"])).architecture
    assert clipped.clip_qkv and not unclipped.clip_qkv
    hidden = clipped.hidden
    clamp = sum(t.bytes_per_token for t in _first_layer(clipped) if t.name == CLAMPED) / hidden
    assert clamp == pytest.approx(found["kept_by_clamps"])
    beyond = found["kept_beyond_unclipped"]
    if isinstance(beyond, float):
        kept = [sum(t.bytes_per_token for t in _first_layer(a) if t.saved) for a in (clipped, unclipped)]
        assert (kept[0] - kept[1]) / hidden == pytest.approx(beyond)


def test_only_eager_kernels_keep_it(tmp_path):
    """Megatron's fused kernels run no clamp to keep anything for; what torch.compile's partitioner keeps of it is
    not measured, and not counted."""
    clipped = spec_from_config(tmp_path, MEASURED["olmo"]["config"]).architecture
    for kernels in ("fused", "compiled"):
        assert not any(t.name == CLAMPED for t in _first_layer(clipped, kernels))


def test_dbrx_instruct_keeps_its_fused_projection_output_in_every_layer():
    """DBRX Instruct (clip_qkv 8): 40 layers, Wqkv 6,144 + 2 x 1,024 wide, 2 bytes, at 2,048 tokens."""
    arch = load_model(str(HF / "dbrx-instruct.json")).architecture
    assert arch.clip_qkv
    unclipped = arch.model_copy(update={"clip_qkv": False})
    kept = [activation_memory(a, 2048, 1, kernels="eager").kept for a in (arch, unclipped)]
    assert kept[0] - kept[1] == pytest.approx(40 * 2048 * 2 * (6144 + 2 * 1024), abs=1)


def test_a_null_clip_clamps_nothing(tmp_path):
    """mpt-7b.json sets null; MPT's `if self.clip_qkv:` reads 0 as no clamp too."""
    assert not load_model(str(HF / "mpt-7b.json")).architecture.clip_qkv
    cfg = {"model_type": "mpt", "d_model": 256, "n_heads": 4, "n_layers": 2, "vocab_size": 1000}
    assert not spec_from_config(tmp_path, cfg | {"attn_config": {"clip_qkv": 0}}).architecture.clip_qkv
    assert spec_from_config(tmp_path, cfg | {"attn_config": {"clip_qkv": 6}}).architecture.clip_qkv


@pytest.mark.parametrize(
    ("cfg", "key"),
    [({"model_type": "olmo", "clip_qkv": "eight"}, "clip_qkv"),
     ({"model_type": "olmo", "clip_qkv": -1}, "clip_qkv"),
     ({"model_type": "olmo", "clip_qkv": 0}, "clip_qkv"),
     ({"model_type": "olmo", "clip_qkv": 1e31}, "clip_qkv"),
     ({"model_type": "olmo", "clip_qkv": float("nan")}, "clip_qkv"),
     ({"model_type": "olmo", "clip_qkv": float("inf")}, "clip_qkv"),
     ({"model_type": "mpt", "attn_config": {"clip_qkv": True}}, "attn_config.clip_qkv"),
     ({"model_type": "mpt", "attn_config": [8]}, "attn_config"),
     ({"model_type": "mpt", "attn_config": []}, "attn_config"),
     ({"model_type": "dbrx", "attn_config": False}, "attn_config")],
)  # fmt: skip
def test_a_malformed_clip_is_refused_naming_its_key(tmp_path, cfg, key):
    shapes = {"hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 2, "intermediate_size": 512,
              "vocab_size": 1000, "d_model": 256, "n_heads": 4, "n_layers": 2}  # fmt: skip
    message = estimate_refusal(tmp_path, shapes | cfg)
    assert f"{key}:" in message
