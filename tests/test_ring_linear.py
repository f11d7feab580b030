"""Ring-linear 2.0 (model_type bailing_moe_linear, inclusionAI's remote BailingMoeLinearV2ForCausalLM; as vLLM's
bailing_moe_linear.py and bailing_linear_attn.py build it): Ling 2.0's layers, with lightning attention where
is_linear_layer says, (i + 1) % layer_group_size != 0. Its total and active counts are held to the card's and the
report's in test_hf_configs.py (tests/reference/hf-configs/ring-mini-linear-2.0.json)."""

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


def test_a_group_of_zero_is_all_softmax(tmp_path: Path) -> None:
    """is_linear_layer: layer_group_size 0 makes no layer linear; the model reads as Ling 2.0."""
    a = spec_from_config(tmp_path, dict(RING, layer_group_size=0)).architecture
    assert a is not None and a.deltanet is None and {a.mixer(i) for i in range(a.layers)} == {"attention"}


def test_a_layout_is_refused_by_name(tmp_path: Path) -> None:
    """Lightning attention has no per-op times and no Megatron-Core layout here: EP is refused, pure DP costed."""
    assert "lightning attention" in estimate_refusal(tmp_path, RING, "--ep", "8")
