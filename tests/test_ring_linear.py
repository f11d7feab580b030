"""Ring-linear 2.0 (model_type bailing_moe_linear, inclusionAI's remote BailingMoeLinearV2ForCausalLM): Ling 2.0's
layers, with lightning attention (vLLM's bailing_linear_attn.py builds the same layer) in all but the layers its decoder
layer keeps softmax: (i + 1) % layer_group_size == 0, or past the last whole group. Its total and active counts are held
to the card's and the report's in test_hf_configs.py (tests/reference/hf-configs/ring-mini-linear-2.0.json)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import REFERENCE, estimate_refusal, spec_from_config

from dpcost.engine.params import count_params

RING = json.loads((REFERENCE / "hf-configs" / "ring-mini-linear-2.0.json").read_text())
HIDDEN, HEADS, KV_HEADS, HEAD_DIM = 2048, 16, 4, 128


def test_every_fifth_layer_keeps_softmax_attention(tmp_path: Path) -> None:
    a = spec_from_config(tmp_path, RING).architecture
    assert a is not None
    assert [i for i in range(a.layers) if a.mixer(i) == "attention"] == [4, 9, 14, 19]


def test_the_lightning_layer_holds_the_sources_weights(tmp_path: Path) -> None:
    """BailingMoELinearAttention: query_key_value (hidden -> 3 x heads x head_dim, as many key and value heads as
    query heads), query_layernorm and key_layernorm (head_dim each, use_qk_norm), g_proj (hidden -> heads x head_dim,
    no bias), g_norm (heads x head_dim) and dense (-> hidden, no bias: use_bias false). The softmax layers are Ling's:
    query_key_value of (16 + 2 x 4) heads, the norms, dense."""
    width = HEADS * HEAD_DIM
    lightning = HIDDEN * 3 * width + 2 * HEAD_DIM + HIDDEN * width + width + width * HIDDEN
    softmax = HIDDEN * (HEADS + 2 * KV_HEADS) * HEAD_DIM + 2 * HEAD_DIM + width * HIDDEN
    components = dict(count_params(spec_from_config(tmp_path, RING)).components)
    assert components["lightning attention mixers"] == 16 * lightning
    assert components["attention"] == 4 * softmax


def test_layers_past_the_last_whole_group_keep_softmax(tmp_path: Path) -> None:
    """22 layers in groups of 5: softmax in 4, 9, 14 and 19, and in 20 and 21, past the last whole group. A group
    longer than the model leaves no linear layer: it reads as Ling 2.0."""
    a = spec_from_config(tmp_path, dict(RING, num_hidden_layers=22)).architecture
    assert a is not None
    assert [i for i in range(a.layers) if a.mixer(i) == "attention"] == [4, 9, 14, 19, 20, 21]
    whole = spec_from_config(tmp_path, dict(RING, layer_group_size=50)).architecture
    assert whole is not None and whole.deltanet is None


def test_a_group_of_zero_and_qkv_biases_are_refused(tmp_path: Path) -> None:
    """The decoder layer divides by layer_group_size; biases on the lightning layers' query_key_value are not
    counted."""
    assert "layer_group_size" in estimate_refusal(tmp_path, dict(RING, layer_group_size=0))
    assert "use_qkv_bias" in estimate_refusal(tmp_path, dict(RING, use_qkv_bias=True))


def test_a_layout_is_refused_by_name(tmp_path: Path) -> None:
    """Lightning attention has no per-op times and no Megatron-Core layout here: EP is refused, pure DP costed."""
    assert "lightning attention" in estimate_refusal(tmp_path, RING, "--ep", "8")
