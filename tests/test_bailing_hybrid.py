"""inclusionAI's Ling hybrid (model_type bailing_hybrid: configuration_bailing_hybrid.py, modular_bailing_hybrid.py,
transformers 5.25.0): Kimi Delta Attention with full-rank gates beside MLA with a gate per head. Its counts are held
to what transformers builds (resolved/transformers-5.25.json, test_hf_configs.py: the class defaults give
124,414,191,072 parameters and 20,480 router correction biases); here what the configuration and modeling code say."""

from __future__ import annotations

from pathlib import Path

from conftest import spec_from_config, transformers_cases

from dpcost.engine.params import attention_parameters, count_params, deltanet_parameters

DEFAULTS, SMALL, LISTED = transformers_cases("bailing_hybrid")


def test_the_linear_layers_gate_at_full_rank(tmp_path: Path) -> None:
    """BailingHybridDeltaAttention: q, k, v, f_proj (the forget gate) and g_proj (the output gate), hidden -> 32
    heads x 128 each; b_proj (hidden -> heads), A_log (heads), dt_bias (heads x 128), a depthwise conv of 4 over q, k
    and v, the gated norm (128) and o_proj back to 2,560. No g_a/g_b or f_a/f_b low-rank pairs (deleted)."""
    a = spec_from_config(tmp_path, DEFAULTS).architecture
    assert a is not None
    h, width, heads = 2560, 32 * 128, 32
    assert deltanet_parameters(a) == 5 * h * width + h * heads + heads + width + 3 * width * 4 + 128 + width * h


def test_latent_attention_has_a_gate_per_head(tmp_path: Path) -> None:
    """BailingHybridAttention: DeepSeek-V3's MLA without a query latent (q_lora_rank null: q_proj hidden -> heads x
    192) and g_proj (hidden -> heads)."""
    a = spec_from_config(tmp_path, DEFAULTS).architecture
    assert a is not None
    h, heads, kv, nope, rope, v = 2560, 32, 512, 128, 64, 128
    mla = h * heads * (nope + rope) + h * (kv + rope) + kv + kv * heads * (nope + v) + heads * v * h
    assert attention_parameters(a, "attention") == mla + h * heads


def test_the_files_names_win_and_the_head_is_never_tied(tmp_path: Path) -> None:
    """BailingHybridConfig.attribute_map: num_experts, num_experts_per_token and num_shared_experts are read over
    num_local_experts, num_experts_per_tok and n_shared_experts; BailingHybridForCausalLM ties nothing."""
    base = count_params(spec_from_config(tmp_path, SMALL))
    other = {"num_local_experts": 16, "num_experts_per_tok": 4, "n_shared_experts": 3, "tie_word_embeddings": True}
    again = count_params(spec_from_config(tmp_path, {**SMALL, **other}))
    assert (again.total, again.active) == (base.total, base.active)
    assert base.lm_head == base.embedding


def test_the_linear_keys_a_file_gives_win_over_those_they_derive_from(tmp_path: Path) -> None:
    """__post_init__ sets linear_head_dim, linear_num_heads and linear_conv_kernel_dim from head_dim,
    num_attention_heads and short_conv_kernel_size, and then sets head_dim to qk_rope_head_dim; keys the file gives
    are set after it (PreTrainedConfig.__init__), so to_dict's linear_* keys rebuild the same model."""
    base = {k: v for k, v in SMALL.items() if not k.startswith("linear_")}
    derived = count_params(spec_from_config(tmp_path, {**base, "head_dim": 48, "short_conv_kernel_size": 2})).total
    written = {**base, "head_dim": 16, "linear_head_dim": 48, "linear_conv_kernel_dim": 2}
    assert count_params(spec_from_config(tmp_path, written)).total == derived
