"""What an eager pre-norm keeps an element of its input, family by family: dpcost's norm_bytes held to saved-tensor
hooks on transformers 5.25.0 (tests/reference/hf-configs/resolved/norm-bytes.json)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import family_configs, spec_from_config

from dpcost.engine.activations import norm_bytes
from dpcost.errors import InputError

HF = Path(__file__).parent / "reference" / "hf-configs"
MEASURED = json.loads((HF / "resolved" / "norm-bytes.json").read_text())["families"]

# Where the first layer's first norm is not the norm dpcost's spec describes, and why
NORMED_OTHERWISE = {
    "olmo": "OlmoLayerNorm runs F.layer_norm on an fp32 copy of its input, which it keeps (4), where dpcost's "
    "parameter-free LayerNorm keeps its 16-bit input (2)",
    "axk2": "its first norm is gated (AXK2GatedRMSNorm) and keeps its gate's tensors too (12.25): not traced",
    "dory": "its first norm is an L2 norm in fp32 (DoryL2Norm: 4), read as a parameter-free LayerNorm (2)",
    "roberta-prelayernorm": "the probe took its attention module (RobertaPreLayerNormAttention, named with 'Norm') "
    "for the layer's first norm",
}


def test_an_eager_norm_keeps_what_transformers_keeps(tmp_path):
    """A LayerNorm keeps its 16-bit input (2 bytes an element); Llama's RMSNorm its fp32 copy and the 16-bit
    normalised product its weight multiplies (4 + 2); Gemma's, OLMo 2's, gpt-oss's and Qwen3-Next's multiply their
    weight in fp32 and cast after, keeping an fp32 product (4 + 4: specs.norm_in_fp32); Cohere's LayerNorm, written
    in fp32 ops, keeps x - mean twice and that product (12)."""
    configs = family_configs(MEASURED)
    compared = {}
    for family, found in MEASURED.items():
        if "error" in found or configs[family] is None:
            continue
        try:
            arch = spec_from_config(tmp_path, configs[family]).architecture
        except InputError:
            continue
        compared[family] = (norm_bytes(arch, "eager"), found["bytes_per_element"], found["class"])
    assert len(compared) >= 85
    differ = {family for family, (ours, measured, _) in compared.items() if ours != measured}
    assert {family: compared.get(family) for family in differ ^ set(NORMED_OTHERWISE)} == {}
    assert {measured for _, measured, _ in compared.values()} >= {2.0, 6.0, 8.0, 12.0}
