"""What an eager pre-norm keeps an element of its input, family by family: dpcost's norm_bytes held to saved-tensor
hooks on transformers 5.25.0 (tests/reference/hf-configs/resolved/norm-bytes.json)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import family_configs, spec_from_config

from dpcost.engine.activations import ACT_BYTES, norm_bytes
from dpcost.engine.loss import loss_memory
from dpcost.errors import InputError
from dpcost.hf_config import _NORM_WEIGHT_IN_FP32, SUPPORTED_MODEL_TYPES

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


def test_every_family_measured_keeping_an_fp32_product_is_counted_so():
    """Those the comparison above cannot read (no config among the references) are held by name: every family dpcost
    reads that was measured keeping 8 bytes is flagged, or reads its flag from its own config reader (Gemma's)."""
    eight = {family for family, found in MEASURED.items() if found.get("bytes_per_element") == 8.0}
    by_reader = {"gemma", "gemma2", "gemma3_text", "gemma4_text", "gemma4_unified_text", "vaultgemma", "ergo",
                 "lara_mini"}  # fmt: skip
    assert (eight & set(SUPPORTED_MODEL_TYPES)) - by_reader <= _NORM_WEIGHT_IN_FP32


def test_the_final_norm_keeps_what_the_layers_norms_keep(tmp_path):
    """OLMo 2's final norm is its layers' Olmo2RMSNorm (modeling_olmo2.py): 8 bytes an element eager, not Llama's 6,
    and a fused one keeps its 16-bit input."""
    olmo2 = spec_from_config(tmp_path, family_configs(["olmo2"])["olmo2"]).architecture
    llama_like = olmo2.model_copy(update={"norm_in_fp32": False})
    for kernels, more in (("eager", 2.0), ("fused", 0.0)):
        grown = loss_memory(olmo2, 1, 1, kernels=kernels).kept - loss_memory(llama_like, 1, 1, kernels=kernels).kept
        assert grown == more * olmo2.hidden
    assert norm_bytes(olmo2, "fused") == ACT_BYTES
