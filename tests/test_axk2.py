"""SK Telecom's A.X K2 (model_type axk2: configuration_axk2.py, modular_axk2.py, transformers 5.25.0): DeepSeek-V3.2's
layers with one fused projection to the queries and an output gate, and gated norms. Its counts are held to what
transformers builds (resolved/transformers-5.25.json, test_hf_configs.py: the class defaults, A.X-K2-Light's
shapes, give 20,314,500,992 with the routers' correction biases); here what the modeling code says of its layers."""

from __future__ import annotations

from pathlib import Path

from conftest import estimate_refusal, spec_from_config, transformers_cases

from dpcost.engine.params import attention_parameters, count_params, indexer_parameters

DEFAULTS, SMALL = transformers_cases("axk2")


def test_one_projection_makes_the_queries_and_the_gate(tmp_path: Path) -> None:
    """AXK2Attention: q_a_proj (2,048 -> 384) and its norm, q_gate_proj over the latent and its normed copy (768 ->
    32 heads x (96 + 64)), kv_a_proj_with_mqa (2,048 -> 128 + 32) and its norm, kv_b_proj (128 -> 32 x (64 + 64)),
    o_proj (32 x 64 -> 2,048); no q_b_proj, no biases; and DeepSeek-V3.2's indexer in every layer."""
    a = spec_from_config(tmp_path, DEFAULTS).architecture
    assert a is not None
    h, q, kv, heads, nope, rope, v = 2048, 384, 128, 32, 64, 32, 64
    mla = h * q + q + 2 * q * heads * (nope + rope + v) + h * (kv + rope) + kv + kv * heads * (nope + v) + heads * v * h
    assert attention_parameters(a, "attention") == mla + indexer_parameters(a)


def test_norms_are_gated_after_the_input_and_before_the_experts(tmp_path: Path) -> None:
    """AXK2DecoderLayer: input_layernorm is an AXK2GatedRMSNorm in every layer (a gate MLP 2,048 -> 16 -> 2,048, no
    biases), post_attention_layernorm in the MoE layers only (all but layer 0 by default)."""
    components = dict(count_params(spec_from_config(tmp_path, DEFAULTS)).components)
    assert components["norm gates"] == 2 * 2048 * 16 * (48 + 47)


def test_a_query_without_a_latent_is_refused(tmp_path: Path) -> None:
    """AXK2Config.validate_architecture: "A.X-K2 requires a positive q_lora_rank"."""
    assert "q_lora_rank: a whole number from 1" in estimate_refusal(tmp_path, {**SMALL, "q_lora_rank": None})


def test_layouts_and_per_op_times_refuse_it_by_name(tmp_path: Path) -> None:
    """Neither Megatron's MLA nor the per-op model has A.X K2's gated norms or fused query gate: a layout or
    --compute-model ops is refused, saying so; pure data parallelism with the flops model costs it."""
    said = "gated norms and a query gate fused into the query projection"
    assert said in estimate_refusal(tmp_path, SMALL, "--tp", "2", "--sequence-parallel")
    assert said in estimate_refusal(tmp_path, SMALL, "--compute-model", "ops")
