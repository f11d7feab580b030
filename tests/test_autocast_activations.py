"""What a decoder layer keeps under torch.autocast on fp32 weights (--framework ddp), against plain bf16: dpcost's
count held to saved-tensor hooks on transformers 5.25.0, and the linear layers it says read each norm to those that
do (tests/reference/hf-configs/resolved/autocast-activations.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import family_configs, spec_from_config

from dpcost.engine.activations import _attention_readers, _mlp_readers, layer_tensors
from dpcost.engine.checkpointing import kept_per_token
from dpcost.errors import InputError

HF = Path(__file__).parent / "reference" / "hf-configs"
MEASURED = json.loads((HF / "resolved" / "autocast-activations.json").read_text())
LAYERS = MEASURED["layers_bytes_per_token_per_hidden"]
READERS = MEASURED["readers"]
# Where a layer grows under autocast by other than dpcost's count: what transformers keeps beyond it (bytes a token per
# unit of hidden). GPT-J's and GLM-4's rotary tables, which each layer makes and keeps (four and two, rotary_dim wide),
# turn fp32: a tenth of a byte at real widths. Falcon's 1.5, not traced.
KEPT_BEYOND = {"gptj": 2.0, "glm4": 1.0, "falcon": 1.5}


# Where the linear layers measured reading a norm are not dpcost's count, and why
_LINEAR_ATTENTION = "linear attention's own input projections (q, k, v and gates: 2 to 6 of them), counted as one"
_ATTENTION_GATE = "a projection of its own for the attention output's gate (gate_proj; Laguna's g_proj), not counted"
_INSIDE = "its norms sit inside its attention and MLP modules, where the probe hooks only the layer's own children"
_OTHER_KIND = "the probe's one-layer model starts with another kind of layer than the config (MoE, attention)"
_NO_GRAD = "its indexer's wk and weights_proj read the norm too, under torch.no_grad: they keep nothing"
READ_OTHERWISE = {
    "bailing_hybrid": _LINEAR_ATTENTION,
    "lara_mini": _LINEAR_ATTENTION,
    "qwen3_5_text": _LINEAR_ATTENTION,
    "qwen3_5_moe_text": _LINEAR_ATTENTION,
    "qwen3_next": _LINEAR_ATTENTION,
    "axk2": _NO_GRAD,
    "deepseek_v32": _NO_GRAD,
    "glm_moe_dsa": _NO_GRAD,
    "beam": _ATTENTION_GATE,
    "laguna": _ATTENTION_GATE,
    "hy_v4": _ATTENTION_GATE + "; " + _NO_GRAD,
    "dory": _ATTENTION_GATE + "; its looped layer runs twice, each run casting anew",
    "megatron-bert": _INSIDE,
    "roberta-prelayernorm": _INSIDE,
    "xlm-roberta-xl": _INSIDE,
    "llama4_text": _OTHER_KIND,
    "lfm2": _OTHER_KIND,
    "deepseek_v4": "its compressed attention (q_a_proj, kv_proj and its compressor's two), costed as fused kernels",
    "ergo": "it casts each norm's output to its branch dtype itself, once (.to(branch_dtype)), which its MoE reads",
    "inkling_text": "its relative logits' r_proj reads the norm too; its MLP's convolution reads the MLP norm's output",
    "jetmoe": "its mixture of attention heads routes the norm's output (its router and kv_proj read it)",
    "kolibri1": "its router reads a norm of its own (post_self_attn_layernorm)",
    "modernbert-decoder": "its first layer has no attention norm (an identity)",
    "zaya": "its attention's current and delayed value projections both read the norm",
}


def _kept(arch, autocast: bool) -> float:
    """dpcost's bytes a token per unit of hidden that one eager layer (the first) keeps without recomputation."""
    mixer, mlp, width = arch.layer_kinds[0]
    layer = layer_tensors(arch, mlp == "moe", True, "eager", mixer, mlp != "none", width, autocast)
    return layer.saved_bytes(1, 1) / arch.hidden


@pytest.mark.parametrize("family", sorted(LAYERS))
def test_a_layer_grows_under_autocast_as_measured(tmp_path, family):
    """The fp32 residual each pre-norm keeps, an RMSNorm's fp32 product, and a 16-bit cast for each linear layer
    reading a norm (2 bytes each, where 16 bits share one output): Llama's 10 bytes, GPT-2's fused c_attn 4."""
    arch = spec_from_config(tmp_path, LAYERS[family]["config"]).architecture
    grown = _kept(arch, True) - _kept(arch, False)
    measured = LAYERS[family]["autocast"] - LAYERS[family]["bf16"]
    assert measured - grown == pytest.approx(KEPT_BEYOND.get(family, 0.0), abs=0.05)


@pytest.mark.parametrize(
    "family",
    ["llama", "mistral", "qwen2", "gemma", "gpt2", "starcoder2", "stablelm", "phi", "phi3", "gpt_neox", "olmo2"],
)
def test_a_layer_keeps_what_autocast_keeps(tmp_path, family):
    """Where dpcost's bf16 count is transformers' (these families), its autocast count is too, within 0.1 byte (the
    norms' per-token statistics, which dpcost leaves out). StableLM, Phi and Phi-3 keep a copy of attention's output
    (context_copied), Phi-3 and GPT-NeoX their fused projection's Q and K in V's storage, and GPT-NeoX's two norms
    read one input, kept once (parallel_residual): tests/test_attention_layout.py. OLMo 2's RMSNorms, its q/k norms
    and post-norms, keep an fp32 product, as Gemma's do (norm_in_fp32: tests/test_norm_bytes.py)."""
    arch = spec_from_config(tmp_path, LAYERS[family]["config"]).architecture
    for autocast, key in ((False, "bf16"), (True, "autocast")):
        assert _kept(arch, autocast) == pytest.approx(LAYERS[family][key], abs=0.1)


def test_a_checkpointed_layer_keeps_its_fp32_input(tmp_path):
    """Full recomputation keeps each layer's input, the residual stream, fp32 under autocast: as transformers'
    gradient checkpointing of Llama keeps it (2 and 4 bytes a token per unit of hidden)."""
    arch = spec_from_config(tmp_path, LAYERS["llama"]["config"]).architecture
    measured = MEASURED["llama_checkpointed_layer_bytes_per_token_per_hidden"]
    for autocast, key in ((False, "bf16"), (True, "autocast")):
        layer = layer_tensors(arch, False, True, "eager", autocast=autocast)
        assert kept_per_token(layer, "full", 1, 1) / arch.hidden == measured[key]


def _readers_compared(tmp_path: Path) -> dict[str, tuple[list[int], list[int]]]:
    """For each measured family dpcost reads: the linear layers it says read the first layer's norms (the attention
    norm's, then the MLP norm's), and those measured, in the order the norms ran."""
    compared = {}
    for family, cfg in family_configs(READERS).items():
        found = READERS[family]
        if cfg is None or not isinstance(found, dict) or not found:
            continue
        try:
            arch = spec_from_config(tmp_path, cfg).architecture
        except InputError:
            continue
        mixer, mlp, _ = arch.layer_kinds[0]
        moe, runs_mlp = mlp == "moe", mlp != "none"
        ours = [_attention_readers(arch, mixer) + (_mlp_readers(arch, moe) if runs_mlp and arch.layer_norms < 2 else 0)]
        if runs_mlp and arch.layer_norms >= 2:
            ours.append(_mlp_readers(arch, moe))
        compared[family] = (ours, [len(names) for names in found.values()])
    return compared


def test_the_linear_layers_reading_each_norm_are_those_transformers_runs(tmp_path):
    """Q, K and V one linear layer or three (fused_qkv), gate and up one or two (fused_gate_up), MLA's two
    down-projections, an MoE layer's router and shared experts: as counted on each family's first layer."""
    compared = _readers_compared(tmp_path)
    assert len(compared) >= 85 and set(READ_OTHERWISE) <= set(compared)
    differ = {family for family, (ours, measured) in compared.items() if ours != measured}
    unexplained = {family: compared.get(family) for family in differ ^ set(READ_OTHERWISE)}
    assert not unexplained
