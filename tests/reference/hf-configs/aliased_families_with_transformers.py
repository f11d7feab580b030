#!/usr/bin/env python3
"""Families whose layers are another family's, under their own keys and defaults: what transformers builds from
their configuration classes (and Llama's own biases, which they borrow). Writes resolved/aliased-families.json.

    python aliased_families_with_transformers.py > resolved/aliased-families.json
    python aliased_families_with_transformers.py sarvam_moe param2moe minicpm5_moe gemma3n_text paddleocr_vl \
        granite_docling glm_ocr qwen2_5_omni_thinker qwen3_omni_moe_thinker molmo2 deepseek_ocr2 hunyuan_vl \
        granite4_vision cosmos3_edge gemma4_text gemma4_unified openai-gpt xglm biogpt ctrl persimmon fuyu \
        aria_text aria emu3_text_model emu3 chameleon stablelm recurrent_gemma axk1 kolibri1 beam lara_mini \
        cohere_compass_text cohere_compass ernie4_5_vl_moe qwen3_next phi4_multimodal jetmoe kosmos-2 rwkv \
        zamba2 zamba xlstm mistral_large4 muse_spark muse_glimmer step3p7 glm5_next hy_v4 bailing_hybrid \
        qwen4_exp_text qwen4_exp kolibri1_1 axk2 hy_v4_vl inkling_text inkling_mm_model ergo inkling2_text inkling2 \
        zaya dots3_note_text dots3_note gpt_neox_japanese modernbert-decoder bert roberta xlm-roberta camembert \
        data2vec-text ernie roberta-prelayernorm xlm-roberta-xl megatron-bert bert-generation distilbert mpnet \
        modernbert esm albert dory \
        > resolved/transformers-5.25.json

Needs torch and transformers (not dpcost's dependencies; written with transformers 5.24.0 and torch 2.14.1 CPU; the
families named on the command line, Sarvam's and Param2's Glm4MoeConfig subclasses, MiniCPM5-MoE, Gemma 3n and
the text models of PaddleOCR-VL, Granite Docling, GLM-OCR, the Omni thinkers, Molmo 2, DeepSeek-OCR 2,
HunyuanVL, Granite 4 Vision, Cosmos 3 Edge, Gemma 4 as 5.25.0 writes it and Gemma 4 Unified, and GPT-1, XGLM,
BioGPT, CTRL, Persimmon and Fuyu's Persimmon, Aria's and Emu3's text models, Chameleon and StableLM's q/k
norms, RecurrentGemma, A.X K1, Kolibri-1, Beam, Lara 4 Mini, Cohere's North (cohere_compass),
ERNIE-4.5-VL's text model, Qwen3-Next's attention biases, Phi-4-multimodal's language model,
JetMoE, Kosmos-2's text model, RWKV-4, Zamba2 and Zamba, xLSTM, Mistral Large 4's, Muse Spark's, Muse
Glimmer's, Step 3.5's and GLM-5.3's text models, Hy4, Ling's hybrid, Qwen4-Exp's text model, Kolibri-1.1,
A.X K2, Hy4-VL's text model and Inkling's, Ergo, Inkling 2's text model, ZAYA, dots3's text model and
GPT-NeoX-Japanese and ModernBERT-decoder, and the BERT-style encoders' causal-LM classes (DistilBERT's and
MPNet's masked-LM classes), ModernBERT's, ESM's and ALBERT's, and Dory, with transformers 5.25.0).
For each family, configs that start from its configuration class's defaults (the flagship's shapes, as the classes'
docstrings say: EXAONE-3.0-7.8B, openbmb/MiniCPM3-4B, facebook/cwm, IQuest-Coder, FlexOlmo, Youtu-LLM, Sarvam,
Arcee's Trinity) and switch the keys dpcost reads otherwise than the family it borrows from: the released files'
names for a key (EXAONE's num_layers), biases, tying, a query latent or none, the sliding layers. Each is kept as
the class writes it (to_dict, less ids and rope tables), with the parameters the family's ForCausalLM class builds
from it (on the meta device, no weights) and, where it has them, its resolved sliding (or Llama 4's chunked) layers
and window.
"""

from __future__ import annotations

import json
import sys
import warnings

# A small Inkling text model: two shapes of attention (full and sliding), experts and a shared one; and Inkling 2's
INKLING_SMALL = {"vocab_size": 1000, "hidden_size": 256, "num_hidden_layers": 6, "num_attention_heads": 4,
                 "num_key_value_heads": 2, "head_dim": 64, "swa_num_attention_heads": 8, "swa_num_key_value_heads": 4,
                 "swa_head_dim": 32, "sliding_window_size": 64, "d_rel": 8, "rel_extent": 128, "conv_kernel_size": 3,
                 "n_routed_experts": 8, "num_experts_per_tok": 2, "n_shared_experts": 1, "moe_intermediate_size": 64,
                 "intermediate_size": 512}  # fmt: skip
DOTS3_SMALL = {"vocab_size": 1000, "hidden_size": 256, "intermediate_size": 512, "moe_intermediate_size": 64,
               "num_hidden_layers": 6, "num_attention_heads": 4, "num_key_value_heads": 4, "n_routed_experts": 8,
               "num_experts_per_tok": 2, "kv_lora_rank": 32, "q_lora_rank": 48, "qk_rope_head_dim": 16,
               "v_head_dim": 32, "qk_nope_head_dim": 32, "index_topk": 32, "index_head_dim": 32, "index_n_heads": 2,
               "shared_experts_intermediate_size": 96, "sliding_window": 64, "pad_token_id": 0, "bos_token_id": 1,
               "eos_token_id": 2}  # fmt: skip
INKLING2_SMALL = {"vocab_size": 1000, "unpadded_vocab_size": 990, "hidden_size": 256, "num_hidden_layers": 6,
                  "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "swa_num_attention_heads": 8,
                  "swa_num_key_value_heads": 4, "swa_head_dim": 32, "sliding_window_size": 64, "d_rel": 8,
                  "rel_extent": 128, "conv_kernel_size": 3, "n_routed_experts": 8, "num_experts_per_tok": 2,
                  "moe_intermediate_size": 64, "n_layers_per_attn_res_block": 2, "eos_token_id": 1}  # fmt: skip
ESM_650M = {"vocab_size": 33, "hidden_size": 1280, "num_hidden_layers": 33, "num_attention_heads": 20,
            "intermediate_size": 5120, "max_position_embeddings": 1026, "pad_token_id": 1, "mask_token_id": 32,
            "token_dropout": True, "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}  # fmt: skip
BERT_SMALL = {"vocab_size": 1000, "hidden_size": 256, "num_hidden_layers": 3, "num_attention_heads": 4,
              "intermediate_size": 512, "max_position_embeddings": 128}  # fmt: skip
# what the class writes beside the keys, which no file needs: ids, rope tables, dtypes, transformers' bookkeeping
DROPPED = {
    "rope_parameters",
    "transformers_version",
    "architectures",
    "id2label",
    "label2id",
    "dtype",
    "torch_dtype",
    "bos_token_id",
    "eos_token_id",
    "pad_token_id",
    "return_dict",
    "output_hidden_states",
    "chunk_size_feed_forward",
    "problem_type",
    "tokenizer_class",
    "is_encoder_decoder",
    "tie_encoder_decoder",
    "output_attentions",
}
# the keys a family's released files spell otherwise (its class's attribute_map): EXAONE 3's num_layers; Sarvam's
# expert counts (sarvamai/sarvam-105b), in the cases that switch them
RELEASED_NAMES = {
    "exaone": {"num_hidden_layers": "num_layers"},
    "sarvam_mla": {"n_routed_experts": "num_experts", "n_shared_experts": "num_shared_experts"},
    "qwen3_moe": {"num_local_experts": "num_experts"},
    **{family: {"n_routed_experts": "num_experts", "n_shared_experts": "num_shared_experts",
                "attention_bias": "use_qkv_bias"} for family in ("sarvam_moe", "param2moe")},
}  # fmt: skip
# Cohere's North text models build a rotary embedding per layer kind (CohereCompassRotaryEmbedding), so their
# configs name one for each
COMPASS_ROPE = {
    kind: {"rope_type": "default", "rope_theta": 10000.0} for kind in ("full_attention", "sliding_attention")
}
CASES: dict[str, list[dict[str, object]]] = {
    # Llama itself where mlp_bias and attention_bias differ: o_proj's bias is attention_bias's, the MLP's mlp_bias's
    "llama": [
        {"mlp_bias": True, "num_hidden_layers": 4},
        {"attention_bias": True, "num_hidden_layers": 4},
    ],
    "exaone": [
        {},
        {"num_layers": 30, "hidden_size": 2560, "intermediate_size": 7168, "num_attention_heads": 32,
         "num_key_value_heads": 8, "vocab_size": 102400, "tie_word_embeddings": True},
        {"attention_bias": True, "mlp_bias": True, "head_dim": 96},
    ],
    "minicpm3": [
        {},
        {"q_lora_rank": None, "v_head_dim": 96, "tie_word_embeddings": False},
        {"hidden_size": 1024, "num_hidden_layers": 8, "num_attention_heads": 16, "kv_lora_rank": 128},
        {"attention_bias": True, "mlp_bias": True, "num_hidden_layers": 4},
    ],
    "iquestcoder": [
        {},
        {"attention_bias": True, "num_hidden_layers": 8},
    ],
    "flex_olmo": [
        {},
        {"num_experts": 16, "num_experts_per_tok": 2, "num_key_value_heads": 8, "tie_word_embeddings": True},
    ],
    "granitemoeshared": [
        {"shared_intermediate_size": 1024},
        {},
    ],
    "youtu": [
        {},
        {"q_lora_rank": None, "tie_word_embeddings": False},
    ],
    "sarvam_mla": [
        {},
        {"n_routed_experts": 64, "n_shared_experts": 2, "first_k_dense_replace": 2, "q_lora_rank": 1024},
    ],
    "afmoe": [
        {},
        {"attention_bias": True, "num_shared_experts": 0, "num_dense_layers": 2, "num_hidden_layers": 8,
         "layer_types": ["sliding_attention", "full_attention"] * 4, "sliding_window": 512, "num_key_value_heads": 4},
        {"global_attn_every_n_layers": 3, "num_hidden_layers": 9, "num_shared_experts": 1, "tie_word_embeddings": True},
    ],
    "exaone_moe": [
        {},
        {"num_hidden_layers": 6, "mlp_layer_types": ["dense", "sparse", "sparse", "dense", "sparse", "sparse"],
         "num_shared_experts": 2, "num_key_value_heads": 8, "head_dim": 96, "sliding_window_pattern": 3},
        {"num_hidden_layers": 4, "first_k_dense_replace": 2, "num_shared_experts": 0, "tie_word_embeddings": True},
    ],
    "hy_v3": [
        {},
        {"num_hidden_layers": 5, "attention_bias": True, "num_shared_experts": 2, "num_key_value_heads": 4,
         "mlp_layer_types": ["dense", "dense", "sparse", "sparse", "sparse"], "head_dim": 96, "num_local_experts": 32},
    ],
    "solar_open": [
        {},
        {"num_hidden_layers": 6, "attention_bias": True, "n_shared_experts": 2, "num_local_experts": 32,
         "num_key_value_heads": 4, "head_dim": 96, "tie_word_embeddings": True},
    ],
    "flint": [
        {},
        {"num_hidden_layers": 7, "attention_bias": True, "mlp_only_layers": [3], "shared_expert_intermediate_size": 0,
         "layer_types": ["sliding_attention", "full_attention"] * 3 + ["full_attention"], "sliding_window": 256},
        {"num_hidden_layers": 6, "decoder_sparse_step": 2, "num_key_value_heads": 8, "head_dim": 64},
    ],
    "kimi_linear": [
        {},
        {"num_hidden_layers": 6, "first_k_dense_replace": 2, "q_lora_rank": 768, "n_shared_experts": 2,
         "linear_attn_config": {"full_attn_layers": [3, 6], "kda_layers": [1, 2, 4, 5], "num_heads": 16,
                                "head_dim": 64, "short_conv_kernel_size": 3}},
        {"num_hidden_layers": 5, "layer_types": ["linear_attention", "full_attention"] * 2 + ["linear_attention"],
         "mlp_layer_types": ["dense", "sparse", "dense", "sparse", "sparse"], "tie_word_embeddings": True},
    ],
    # attention_bias and mlp_bias where a family's modeling file reads them otherwise than Llama's, or not at all
    "granite": [{"attention_bias": True, "mlp_bias": True, "num_hidden_layers": 4}],
    "granitemoe": [{"attention_bias": True, "mlp_bias": True, "num_hidden_layers": 4}],
    "gemma2": [{"attention_bias": True, "num_hidden_layers": 4}],
    "olmoe": [{"attention_bias": True, "mlp_bias": True, "num_hidden_layers": 4}],
    "mixtral": [{"attention_bias": True, "mlp_bias": True, "num_hidden_layers": 4}],
    "qwen2": [{"mlp_bias": True, "num_hidden_layers": 4}],
    "exaone4": [{"attention_bias": True, "mlp_bias": True, "num_hidden_layers": 4}],
    "helium": [{"mlp_bias": True, "num_hidden_layers": 4}],
    "llama4_text": [{"attention_bias": True, "num_hidden_layers": 4}],
    "deepseek_v3": [{"attention_bias": True, "num_hidden_layers": 5}],
    # Qwen3-MoE as transformers 5 writes it (num_local_experts, no head_dim) and as Qwen's files do
    "qwen3_moe": [
        {},
        {"num_experts": 64, "head_dim": 128, "num_hidden_layers": 6, "attention_bias": True},
    ],
    "granite_swa": [
        {},
        {"attention_bias": True, "mlp_bias": True, "num_hidden_layers": 6, "tie_word_embeddings": False},
        {"layer_types": ["full_attention", "sliding_attention", "sliding_attention", "full_attention"],
         "num_hidden_layers": 4, "sliding_window": 256},
    ],
    "granitemoe_swa": [
        {},
        {"shared_intermediate_size": 1024, "attention_bias": True, "num_hidden_layers": 6},
    ],
    "vaultgemma": [
        {},
        {"attention_bias": True, "num_hidden_layers": 5, "tie_word_embeddings": False},
    ],
    "jais2": [
        {},
        {"attention_bias": False, "mlp_bias": False, "num_key_value_heads": 2, "num_hidden_layers": 4},
        {"attention_bias": False, "num_hidden_layers": 3, "tie_word_embeddings": True},
    ],
    "nanochat": [
        {},
        {"attention_bias": True, "mlp_bias": True, "num_key_value_heads": 2, "num_hidden_layers": 4},
    ],
    "cohere2_moe": [
        {},
        {"num_hidden_layers": 6, "first_k_dense_replace": 2, "prefix_dense_intermediate_size": 4096,
         "num_shared_experts": 2, "prefix_dense_sliding_window_pattern": 2, "num_key_value_heads": 8},
        {"num_hidden_layers": 5, "attention_bias": True, "sliding_window_pattern": 2, "tie_word_embeddings": False},
    ],
    # LongCat-Flash: the class's defaults are LongCat-Flash-Chat's shapes (560B as released)
    "longcat_flash": [
        {},
        {"num_layers": 3, "attention_bias": True, "zero_expert_num": 0, "moe_topk": 4, "tie_word_embeddings": True},
        {"num_layers": 2, "n_routed_experts": 16, "zero_expert_num": 8, "expert_ffn_hidden_size": 512,
         "hidden_size": 1024, "ffn_hidden_size": 2048, "num_attention_heads": 8, "q_lora_rank": 256,
         "kv_lora_rank": 128},
    ],
    # MiniMax: the class's defaults, and MiniMax-Text-01's shapes (456B: a softmax layer every eighth)
    "minimax": [
        {},
        {"hidden_size": 6144, "intermediate_size": 9216, "num_hidden_layers": 80, "num_attention_heads": 64,
         "num_key_value_heads": 8, "head_dim": 128, "num_local_experts": 32, "num_experts_per_tok": 2,
         "vocab_size": 200064, "layer_types": ["full_attention" if (i + 1) % 8 == 0 else "linear_attention"
                                               for i in range(80)]},
        {"num_hidden_layers": 4, "head_dim": 64, "num_key_value_heads": 4, "tie_word_embeddings": True},
    ],
    "hyperclovax": [
        {},
        {"use_post_norm": False, "attention_bias": True, "mlp_bias": True, "num_hidden_layers": 4,
         "tie_word_embeddings": True},
        {"head_dim": 64, "num_key_value_heads": 8, "num_hidden_layers": 3},
    ],
    # Bamba: Mamba-2 with attention where attn_layer_indices says
    "bamba": [
        {"attn_layer_indices": [3, 7, 11]},
        {"attn_layer_indices": [1], "num_hidden_layers": 4, "attention_bias": True, "mlp_bias": True,
         "mamba_proj_bias": True, "mamba_conv_bias": False, "tie_word_embeddings": True},
        {"num_hidden_layers": 3, "mamba_n_groups": 2, "mamba_n_heads": 64},
    ],
    # OLMo hybrid: gated DeltaNet with OLMo 3's attention every fourth layer
    "olmo_hybrid": [
        {},
        {"num_hidden_layers": 6, "attention_bias": True, "num_key_value_heads": 6, "linear_num_value_heads": 60,
         "linear_key_head_dim": 64, "tie_word_embeddings": True},
        {"num_hidden_layers": 3, "linear_value_head_dim": 100, "linear_conv_kernel_dim": 3,
         "layer_types": ["full_attention", "linear_attention", "linear_attention"]},
    ],
    # LFM3: short convolutions, sliding and full attention with a gate per head, sandwich norms
    "lfm3": [
        {},
        {"num_hidden_layers": 6, "use_attention_gate": False, "use_sandwich_norm": False, "attention_bias": True,
         "conv_bias": True, "tie_word_embeddings": False},
        {"num_hidden_layers": 5, "layer_types": ["conv", "sliding_attention", "full_attention", "conv",
                                                 "sliding_attention"], "sliding_window": 512, "head_dim": 64},
    ],
    # Apertus 1.5's text model: Apertus's layers, a vocabulary of text, visual and audio codes, a pruned head
    "apertus1p5_text": [
        {},
        {"output_vocab_size": 131072, "tie_word_embeddings": False, "num_hidden_layers": 4},
        {"tie_word_embeddings": True, "num_hidden_layers": 3, "hidden_size": 1024, "num_attention_heads": 8,
         "intermediate_size": 4096},
    ],
    # Apertus itself: xIELU's two learned scalars a layer
    "apertus": [{"num_hidden_layers": 4}],
    # MiniMax-M3's text model: the class's defaults (no sparse layer named), and block indexers by layer_types or by
    # the released files' sparse_attention_config
    "minimax_m3_vl_text": [
        {},
        {"num_hidden_layers": 4, "layer_types": ["minimax_m3_sparse", "full_attention", "minimax_m3_sparse",
                                                 "full_attention"],
         "mlp_layer_types": ["dense", "sparse", "sparse", "sparse"], "tie_word_embeddings": True},
        {"num_hidden_layers": 3, "sparse_attention_config": {"sparse_attention_freq": [1, 1, 0],
                                                             "sparse_num_index_heads": 8, "sparse_index_dim": 64},
         "moe_layer_freq": [0, 1, 1], "num_local_experts": 16},
    ],
    # Laguna: a gate per head (or per channel), heads per layer, experts with an expert bias; Mellum: Qwen3-MoE's layers
    "laguna": [
        {},
        {"num_hidden_layers": 4, "gating": "per-element", "attention_bias": True,
         "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
         "mlp_layer_types": ["dense", "dense", "sparse", "sparse"], "tie_word_embeddings": True},
        {"num_hidden_layers": 3, "num_attention_heads_per_layer": [32, 32, 32], "shared_expert_intermediate_size": 1024,
         "sliding_window": 256, "layer_types": ["sliding_attention", "sliding_attention", "full_attention"]},
    ],
    "mellum": [
        {},
        {"num_hidden_layers": 4, "attention_bias": True,
         "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
         "mlp_layer_types": ["dense", "sparse", "sparse", "sparse"], "tie_word_embeddings": True, "num_mtp_layers": 1},
    ],
    # BitNet b1.58: norms inside the attention and the MLP
    "bitnet": [
        {},
        {"num_hidden_layers": 4, "attention_bias": True, "mlp_bias": True, "tie_word_embeddings": True,
         "num_key_value_heads": 4},
    ],
    # Glm4MoeConfig's subclasses built as Glm4MoeForCausalLM: Sarvam-30B and Param2, under their released files' names
    "sarvam_moe": [
        {},
        {"n_routed_experts": 32, "n_shared_experts": 2, "attention_bias": True, "num_hidden_layers": 5,
         "first_k_dense_replace": 2, "use_qk_norm": False},
    ],
    "param2moe": [
        {},
        {"n_routed_experts": 16, "n_shared_experts": 1, "attention_bias": True, "num_hidden_layers": 4,
         "tie_word_embeddings": False, "head_dim": 128},
    ],
    # Gemma 3n's text model: the class's defaults (E4B), E2B's shapes (as its config.json names them), and a list
    # of MLP widths
    "gemma3n_text": [
        {},
        {"num_hidden_layers": 30, "intermediate_size": [8192] * 30, "num_kv_shared_layers": 10},
        {"num_hidden_layers": 6, "intermediate_size": [4096, 4096, 8192, 8192, 4096, 4096], "num_kv_shared_layers": 2,
         "altup_num_inputs": 2, "laurel_rank": 32, "hidden_size_per_layer_input": 128, "tie_word_embeddings": False,
         "layer_types": ["sliding_attention", "full_attention"] * 3},
    ],
    # Gemma 4 as transformers 5.25.0 writes it (per_layer_config in place of global_head_dim), and Gemma 4 Unified's
    # text model (the 12B's: no per-layer embeddings, no experts)
    "gemma4_text": [
        {"num_hidden_layers": 6, "hidden_size_per_layer_input": 0},
        {"num_hidden_layers": 7, "hidden_size_per_layer_input": 64, "attention_k_eq_v": True,
         "num_global_key_value_heads": 1, "global_head_dim": 256},
    ],
    "gemma4_unified": [{}, {"text_config": {"num_hidden_layers": 6, "tie_word_embeddings": False}}],
    # MiniCPM5-MoE: gated attention, dense layers by mlp_layer_types, DeepSeek-V3's MoE
    "minicpm5_moe": [
        {},
        {"num_hidden_layers": 4, "mlp_layer_types": ["dense", "sparse", "dense", "sparse"], "attention_bias": True,
         "n_shared_experts": 2, "n_routed_experts": 16, "tie_word_embeddings": True},
        {"num_hidden_layers": 3, "num_key_value_heads": 8, "head_dim": 64, "n_shared_experts": 0},
    ],
    # PaddleOCR-VL's text model (ERNIE-4.5-0.3B's) and Granite Docling's (Granite's): their wrappers' defaults
    # (their wrappers tie the head by their own tie_word_embeddings, true by default, not by the text model's)
    "paddleocr_vl": [{}, {"text_config": {"tie_word_embeddings": False, "num_hidden_layers": 2}}],
    "granite_docling": [
        {},
        {"text_config": {"tie_word_embeddings": False, "num_hidden_layers": 2}},
        {"tie_word_embeddings": False, "text_config": {"tie_word_embeddings": True, "num_hidden_layers": 2}},
    ],
    # Omni thinkers' text models: Qwen2.5-Omni's (Qwen2's layers; its text_config's tie_word_embeddings true, which
    # the thinker does not follow) and Qwen3-Omni's (Qwen3-VL-MoE's layers) at Qwen3-Omni-30B-A3B's widths
    "qwen2_5_omni_thinker": [{}],
    "qwen3_omni_moe_thinker": [
        {"text_config": {"hidden_size": 2048, "num_hidden_layers": 4, "num_attention_heads": 32,
                         "num_key_value_heads": 4, "head_dim": 128, "vocab_size": 151936, "moe_intermediate_size": 768,
                         "num_experts": 128, "num_experts_per_tok": 8, "intermediate_size": 6144}},
    ],
    # Molmo 2's text model: OLMo 2's attention (q/k norms per head or whole), extra embedding rows
    "molmo2": [
        {},
        {"text_config": {"num_hidden_layers": 3, "qk_norm_type": "olmo", "attention_bias": True, "norm_after": True,
                         "additional_vocab_size": 64, "tie_word_embeddings": False}},
    ],
    # DeepSeek-OCR 2's text model: DeepSeek-V2's MoE with Llama's attention, dense layers by mlp_layer_types (its
    # class has no default for them), at DeepSeek-OCR's decoder shapes (DeepSeek3B-MoE-A570M)
    "deepseek_ocr2": [
        {"text_config": {"hidden_size": 1280, "intermediate_size": 6848, "moe_intermediate_size": 896,
                         "n_routed_experts": 64, "n_shared_experts": 2, "num_attention_heads": 10,
                         "num_key_value_heads": 10, "num_experts_per_tok": 6, "num_hidden_layers": 12,
                         "vocab_size": 129280, "topk_method": "greedy",
                         "mlp_layer_types": ["dense"] + ["sparse"] * 11}},
    ],
    # HunyuanVL's text model: Hunyuan dense's layers (its class gives no head_dim, which the attention needs)
    "hunyuan_vl": [
        {"text_config": {"head_dim": 128, "rope_parameters": {"rope_type": "dynamic", "alpha": 1000.0,
                                                               "rope_theta": 10000.0, "factor": 1.0}}},
        {"text_config": {"head_dim": 128, "num_hidden_layers": 3, "hidden_size": 1024, "num_attention_heads": 16,
                         "num_key_value_heads": 8, "vocab_size": 120818,
                         "rope_parameters": {"rope_type": "dynamic", "alpha": 1000.0, "rope_theta": 10000.0,
                                             "factor": 1.0}}},
    ],
    # Granite 4 Vision's text model: Granite's (its class builds nothing without a deepstack_layer_map and a
    # downsample_rate)
    "granite4_vision": [{"deepstack_layer_map": [[-1, 0]], "downsample_rate": "1/4"}],
    # Cosmos 3 Edge's text model: Llama's attention with CLIP's two-matrix MLP
    "cosmos3_edge": [
        {},
        {"text_config": {"num_hidden_layers": 3, "attention_bias": True, "mlp_bias": True, "num_key_value_heads": 4}},
    ],
    # GLM-OCR: GLM-4V's text layers with unbiased q, k and v, whatever attention_bias says
    "glm_ocr": [
        {},
        {"text_config": {"num_hidden_layers": 4, "attention_bias": True, "num_key_value_heads": 4}},
        {"text_config": {"num_hidden_layers": 3, "hidden_size": 1536, "num_attention_heads": 16, "head_dim": 128}},
    ],
    "cwm": [
        {},
        {"num_key_value_heads": 4, "sliding_window": 4096, "num_hidden_layers": 10,
         "layer_types": ["full_attention", "sliding_attention"] * 5},
        {"mlp_bias": True, "head_dim": 96},
    ],
    # GPT-era families under their own keys (5.25.0): GPT-1 (post-norm, no final norm), XGLM (attention_heads,
    # sinusoidal positions), BioGPT (a learned table with 2 spare rows), CTRL (a biased head tied to the embedding),
    # Persimmon (a LayerNorm over one head for q and for k) and Fuyu's Persimmon
    "openai-gpt": [{}, {"afn": "relu", "n_layer": 2, "n_positions": 1024, "tie_word_embeddings": False}],
    "xglm": [{}, {"num_layers": 2, "d_model": 512, "attention_heads": 8, "ffn_dim": 1536}],
    "biogpt": [{}, {"num_hidden_layers": 2, "max_position_embeddings": 2048, "tie_word_embeddings": False}],
    "ctrl": [{}, {"n_layer": 2, "dff": 4096, "tie_word_embeddings": False}],
    "persimmon": [{}, {"qk_layernorm": False, "num_hidden_layers": 2, "tie_word_embeddings": True}],
    "fuyu": [{}, {"text_config": {"num_hidden_layers": 2, "hidden_size": 2048, "num_attention_heads": 16}}],
    # Aria's text model: Llama's attention with experts and a shared MLP of moe_num_shared_experts x intermediate_size
    # in every layer; Emu3's: Llama's layers, 8 KV heads by default
    "aria_text": [{}, {"num_hidden_layers": 2, "attention_bias": True, "moe_num_shared_experts": 0,
                       "num_key_value_heads": 8, "tie_word_embeddings": True}],
    "aria": [{"text_config": {"num_hidden_layers": 2, "moe_num_experts": 64, "moe_topk": 6, "intermediate_size": 1664,
                              "hidden_size": 2560, "num_attention_heads": 20, "vocab_size": 100352}}],
    "emu3_text_model": [{}, {"num_hidden_layers": 2, "attention_bias": True, "mlp_bias": True}],
    "emu3": [{"text_config": {"num_hidden_layers": 2}}],
    # Chameleon: LayerNorms of weight and bias per head on q and k in RMSNorm layers; StableLM's per-head q/k
    # LayerNorms are bias-free in LayerNorm layers
    # (its model reads vocabulary_map's image token)
    "chameleon": [{"vocabulary_map": {"<image>": 8711}},
                  {"num_hidden_layers": 2, "num_key_value_heads": 8, "attention_bias": True, "mlp_bias": True,
                   "swin_norm": True, "head_dim": 64, "tie_word_embeddings": True,
                   "vocabulary_map": {"<image>": 8711}}],
    "stablelm": [{"qk_layernorm": True, "num_hidden_layers": 2, "num_key_value_heads": 8}],
    # RecurrentGemma (Griffin): recurrent blocks and local attention cycling through block_types, a GeGLU MLP of
    # intermediate_size / 2 with biases; its defaults, and another width, pattern, window and kernel
    "recurrent_gemma": [{}, {"num_hidden_layers": 5, "lru_width": 1280, "num_key_value_heads": 1,
                             "attention_bias": True, "block_types": ["recurrent", "attention"],
                             "attention_window_size": 512, "conv1d_width": 3, "tie_word_embeddings": False,
                             "intermediate_size": 6000}],
    # A.X K1: DeepSeek-V3's layers with a norm over each MoE block's output; its defaults, dense layers listed, and
    # derived from first_k_dense_replace and moe_layer_freq
    "axk1": [{}, {"num_hidden_layers": 4, "mlp_layer_types": ["dense", "sparse", "dense", "sparse"],
                  "attention_bias": True, "n_shared_experts": 2},
             {"num_hidden_layers": 6, "first_k_dense_replace": 2, "moe_layer_freq": 2, "tie_word_embeddings": True}],
    # Kolibri-1: EXAONE 4's attention under GLM-4's four norms, experts and a shared MLP in every layer, windows but
    # in every fifth layer; its defaults, and other widths with listed layers
    "kolibri1": [{}, {"num_hidden_layers": 3, "num_key_value_heads": 8, "shared_expert_intermediate_size": 1024,
                      "layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
                      "sliding_window": 1024, "tie_word_embeddings": True},
                 {"num_hidden_layers": 2, "num_experts": 8}],
    # Beam: gated attention (a gate per channel, a bias per head) under four norms, three dense layers then experts;
    # its defaults, and listed dense layers with biases
    "beam": [{}, {"num_hidden_layers": 4, "mlp_layer_types": ["dense", "sparse", "dense", "sparse"],
                  "attention_bias": True, "num_experts": 16, "tie_word_embeddings": True}],
    # Lara 4 Mini: Qwen3.5's DeltaNet with Qwen3's attention in full and sliding layers, experts and an ungated shared
    # MLP; its defaults, and listed layers, another window, untied
    "lara_mini": [{}, {"num_hidden_layers": 4, "sliding_window": 256, "tie_word_embeddings": False,
                       "layer_types": ["sliding_attention", "linear_attention", "full_attention", "linear_attention"],
                       "shared_expert_intermediate_size": 1024},
                  {"num_hidden_layers": 5, "attention_bias": True}],
    # Qwen3-Next's attention_bias biases q (with its gate's rows), k, v and o
    "qwen3_next": [{"num_hidden_layers": 4, "attention_bias": True}],
    # Cohere's North vision models: Cohere 2's text layers, all attending in full unless layer_types says; the wrapper
    # ties by its own config (false by default)
    "cohere_compass_text": [{"rope_parameters": COMPASS_ROPE},
                            {"num_hidden_layers": 4, "sliding_window": 2048, "tie_word_embeddings": False,
                             "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention",
                                             "full_attention"], "rope_parameters": COMPASS_ROPE}],
    "cohere_compass": [{"text_config": {"num_hidden_layers": 2, "rope_parameters": COMPASS_ROPE}},
                       {"text_config": {"num_hidden_layers": 2, "rope_parameters": COMPASS_ROPE},
                        "tie_word_embeddings": True}],
    # ERNIE-4.5-VL's text model: modality-isolated text and vision experts in its MoE layers; its defaults (the
    # 28B-A3B's), and listed dense layers, other widths, untied
    "ernie4_5_vl_moe": [{}, {"tie_word_embeddings": False,
                             "text_config": {"num_hidden_layers": 3, "mlp_layer_types": ["dense", "sparse", "dense"],
                                             "moe_intermediate_size": [1024, 256], "moe_num_shared_experts": 1,
                                             "moe_num_experts": 16, "moe_k": 4}}],
    # Phi-4-multimodal's language model: Phi-3's layers (its image and audio encoders, embed_tokens_extend, left out)
    "phi4_multimodal": [{}, {"num_hidden_layers": 3, "tie_word_embeddings": True, "num_key_value_heads": 4}],
    # JetMoE: a mixture of attention heads and of SwiGLU experts in every layer; its defaults, and JetMoE-8B's depth
    # with other experts, untied
    "jetmoe": [{}, {"num_hidden_layers": 24, "num_local_experts": 4, "num_experts_per_tok": 1,
                    "tie_word_embeddings": False}],
    # Kosmos-2's text model: XGLM's blocks with LayerNorms inside the attention and the MLP; its defaults, and
    # another width, untied
    "kosmos-2": [{}, {"text_config": {"layers": 3, "embed_dim": 1024, "attention_heads": 16, "ffn_dim": 2048},
                      "tie_word_embeddings": False}],
    # RWKV-4: time mixing and channel mixing in every layer, pre_ln in the first; its defaults, RWKV-4 169M's shapes
    # (RWKV/rwkv-4-169m-pile), and a narrower recurrence with another MLP width, tied
    "rwkv": [{}, {"hidden_size": 768, "num_hidden_layers": 12, "attention_hidden_size": 768,
                  "intermediate_size": 3072, "context_length": 1024},
             {"hidden_size": 1024, "num_hidden_layers": 3, "attention_hidden_size": 512, "intermediate_size": 3000,
              "vocab_size": 1000, "tie_word_embeddings": True}],
    # Zamba2: a Mamba-2 layer in every layer and, in the hybrid ones, a shared transformer block (num_mem_blocks of
    # them, in turn) with each layer's own adapters and linear layer; its defaults (Zamba2-2.7B's shapes, one block),
    # two blocks with attention adapters, GQA, biases and another pattern, more blocks than hybrid layers, and heads
    # of the file's attention_head_dim with intermediate_size 0 (4 x hidden, as Zamba2Config reads it). Tied
    # throughout: transformers 5.25.0 ties the layers' shared blocks by _tied_weights_keys only where it ties the
    # embedding, so with tie_word_embeddings false it builds a copy of the block in every hybrid layer
    "zamba2": [{}, {"hidden_size": 1024, "num_mem_blocks": 2, "use_shared_attention_adapter": True,
                    "adapter_rank": 64, "num_key_value_heads": 8, "add_bias_linear": True, "intermediate_size": 3000,
                    "n_mamba_heads": 16, "mamba_ngroups": 2, "vocab_size": 1000, "num_hidden_layers": 7,
                    "layers_block_type": ["mamba", "hybrid", "mamba", "hybrid", "hybrid", "mamba", "hybrid"]},
               {"hidden_size": 512, "num_mem_blocks": 3, "num_attention_heads": 8, "vocab_size": 1000,
                "num_hidden_layers": 3, "layers_block_type": ["hybrid", "mamba", "hybrid"]},
               {"hidden_size": 256, "num_attention_heads": 8, "attention_head_dim": 32, "adapter_rank": 16,
                "vocab_size": 1000, "num_hidden_layers": 6, "intermediate_size": 0,
                "layers_block_type": ["mamba", "hybrid", "mamba", "hybrid", "mamba", "hybrid"]}],
    # Zamba: a Mamba-1 layer in every layer and one shared transformer block in the hybrid ones, no adapters; its
    # defaults (Zamba-7B-v1's shapes), another pattern by attn_layer_period and attn_layer_offset, GQA, a head_dim
    # of its own, four Mamba heads and biases switched, and 32 heads over the class's 16 KV heads
    "zamba": [{}, {"hidden_size": 512, "num_hidden_layers": 9, "num_attention_heads": 8, "num_key_value_heads": 4,
                   "attention_head_dim": 96, "intermediate_size": 1500, "n_mamba_heads": 4, "mamba_dt_rank": 20,
                   "mamba_conv_bias": False, "mamba_proj_bias": True, "attn_layer_period": 3, "attn_layer_offset": 1,
                   "vocab_size": 1000},
              {"hidden_size": 256, "num_hidden_layers": 9, "num_attention_heads": 32, "vocab_size": 1000}],
    # xLSTM: an mLSTM layer and a SwiGLU MLP in every block; its defaults (xLSTM-7B's shapes), and another width
    # with biases, other factors, the fused weights and a tied head
    "xlstm": [{}, {"hidden_size": 768, "num_hidden_layers": 3, "num_heads": 4, "use_bias": True, "qk_dim_factor": 0.25,
                   "v_dim_factor": 0.75, "ffn_proj_factor": 1.3, "ffn_round_up_to_multiple_of": 32,
                   "weight_mode": "fused", "tie_word_embeddings": True, "vocab_size": 1000}],
    # Mistral Large 4's text model: DeepSeek-V3.2's MLA without a query latent, every fourth layer without RoPE, an
    # indexer from the hidden state; its defaults (Mistral-Large-4-1T-A52B's shapes), and a small one with shared
    # latents, listed NoPE and indexer layers, dense layers by mlp_layer_types and biases
    "mistral_large4": [{}, {"text_config": {"hidden_size": 512, "num_hidden_layers": 6, "num_attention_heads": 8,
                                            "num_key_value_heads": 8, "intermediate_size": 1024,
                                            "moe_intermediate_size": 256, "n_routed_experts": 8, "vocab_size": 1000,
                                            "kv_lora_rank": 64, "index_n_heads": 4, "index_head_dim": 32,
                                            "no_rope_layers": [1, 1, 0, 0, 1, 1],
                                            "kv_source_layers": [0, 0, 2, 2, 4, 4],
                                            "indexer_types": ["full", "shared", "full", "full", "shared", "full"],
                                            "mlp_layer_types": ["dense", "dense", "sparse", "sparse", "sparse",
                                                                "sparse"],
                                            "attention_bias": True}}],
    # Muse Spark's text model: gated attention, four norms (one weightless) and two residual gates a layer, experts in
    # a latent width with norms around them; its defaults (Muse-Spark-Open-816B-A42B's shapes), and a small one with
    # dense layers listed, biases and its own windows
    "muse_spark": [{}, {"text_config": {"hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8,
                                        "num_key_value_heads": 2, "head_dim": 64, "intermediate_size": 1024,
                                        "moe_intermediate_size": 128, "num_local_experts": 8,
                                        "num_experts_per_tok": 2, "moe_hidden_size": 256, "vocab_size": 1000,
                                        "mlp_layer_types": ["dense", "sparse", "dense", "sparse"],
                                        "attention_bias": True, "sliding_window": 128},
                        "audio_config": {"out_hidden_size": 512}}],
    # Muse Glimmer's text model: Muse Spark's attention and four norms over a SwiGLU MLP in every layer; its defaults
    # (Muse-Glimmer-30B's shapes), and a small one with biases, its own windows, tied by its wrapper
    "muse_glimmer": [{}, {"text_config": {"hidden_size": 512, "num_hidden_layers": 5, "num_attention_heads": 8,
                                          "num_key_value_heads": 2, "head_dim": 64, "intermediate_size": 1024,
                                          "vocab_size": 1000, "attention_bias": True, "sliding_window": 64},
                          "tie_word_embeddings": True}],
    # Step 3.5's text model (Step-3.5-Flash and Step-3.7-Flash) under its wrapper: gated attention with more query heads
    # in its sliding layers, experts beside an ungated shared MLP; its defaults, a small one with full and sliding
    # layers and dense ones listed, tied by the wrapper, one with biases, every layer sliding and the experts placed
    # by the released files' moe_layers_enum, and one whose empty per_layer_config keeps num_attention_heads in every
    # layer, over num_sliding_attention_heads
    "step3p7": [{}, {"text_config": {"hidden_size": 512, "num_hidden_layers": 6, "num_attention_heads": 8,
                                     "num_sliding_attention_heads": 12, "num_key_value_heads": 2, "head_dim": 64,
                                     "intermediate_size": 1024, "n_routed_experts": 16, "num_experts_per_tok": 4,
                                     "moe_intermediate_size": 128, "share_expert_dim": 256, "vocab_size": 1000,
                                     "layer_types": ["full_attention", "sliding_attention", "sliding_attention",
                                                     "sliding_attention", "full_attention", "sliding_attention"],
                                     "sliding_window": 128,
                                     "mlp_layer_types": ["dense", "sparse", "sparse", "dense", "sparse", "sparse"]},
                     "vision_config": {"width": 64, "layers": 1, "heads": 2}, "tie_word_embeddings": True},
                    {"text_config": {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
                                     "num_key_value_heads": 4, "head_dim": 32, "intermediate_size": 512,
                                     "moe_num_experts": 8, "moe_top_k": 2, "moe_intermediate_size": 64,
                                     "share_expert_dim": 96, "vocab_size": 500, "attention_bias": True,
                                     "layer_types": ["sliding_attention"] * 4, "sliding_window": 64,
                                     "moe_layers_enum": "1,3"},
                     "vision_config": {"width": 64, "layers": 1, "heads": 2}},
                    {"text_config": {"hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4,
                                     "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 96,
                                     "moe_intermediate_size": 16, "n_routed_experts": 4, "num_experts_per_tok": 2,
                                     "share_expert_dim": 32, "vocab_size": 300,
                                     "mlp_layer_types": ["dense", "sparse", "sparse", "sparse"],
                                     "layer_types": ["full_attention", "sliding_attention", "sliding_attention",
                                                     "full_attention"],
                                     "sliding_window": 8, "num_sliding_attention_heads": 8, "per_layer_config": {}},
                     "vision_config": {"width": 64, "layers": 1, "heads": 2}}],
    # GLM-5.3's text model (GLM-5.3-Flash) under its wrapper: Kimi Delta Attention and NoPE latent attention with a
    # pooled indexer, hyper-connections in every layer; its defaults, a small one, one with listed layer, indexer and
    # MLP kinds, biases, a value width of its own, tied by the wrapper, and one of a single residual stream
    "glm5_next": [{}, {"text_config": {"vocab_size": 32000, "pad_token_id": 0, "hidden_size": 1024,
                                       "num_hidden_layers": 8,
                                       "num_attention_heads": 8, "num_key_value_heads": 8, "n_routed_experts": 16,
                                       "num_experts_per_tok": 4, "n_shared_experts": 2, "linear_num_heads": 8,
                                       "linear_head_dim": 64, "hc_mult": 2, "moe_intermediate_size": 256,
                                       "intermediate_size": 2048, "q_lora_rank": 256, "kv_lora_rank": 128,
                                       "qk_nope_head_dim": 64, "v_head_dim": 64, "index_n_heads": 4,
                                       "index_head_dim": 32, "index_topk": 64, "index_kpool": 8},
                       "vision_config": {"depth": 1, "hidden_size": 64, "num_heads": 2, "intermediate_size": 128,
                                         "out_hidden_size": 1024, "projection_intermediate_size": 256}},
                  {"text_config": {"vocab_size": 1000, "pad_token_id": 0, "hidden_size": 256, "num_hidden_layers": 6,
                                   "num_attention_heads": 4, "num_key_value_heads": 4, "n_routed_experts": 8,
                                   "num_experts_per_tok": 2, "linear_attn_config": {"num_heads": 4, "head_dim": 32,
                                                                                    "short_conv_kernel_size": 3},
                                   "hc_mult": 3, "moe_intermediate_size": 64, "intermediate_size": 512,
                                   "q_lora_rank": 64, "kv_lora_rank": 32, "qk_nope_head_dim": 32, "v_head_dim": 48,
                                   "index_n_heads": 2, "index_head_dim": 16, "index_topk": 32, "index_kpool": 4,
                                   "layer_types": ["linear_attention", "full_attention", "indexed_attention",
                                                   "linear_attention", "indexed_attention", "indexed_attention"],
                                   "indexer_types": ["full", "full", "shared", "full", "full", "shared"],
                                   "mlp_layer_types": ["sparse", "dense", "sparse", "dense", "sparse", "sparse"],
                                   "attention_bias": True},
                   "vision_config": {"depth": 1, "hidden_size": 64, "num_heads": 2, "intermediate_size": 128,
                                     "out_hidden_size": 256, "projection_intermediate_size": 128},
                   "tie_word_embeddings": True},
                  {"text_config": {"vocab_size": 1000, "pad_token_id": 0, "hidden_size": 256, "num_hidden_layers": 4,
                                   "num_attention_heads": 4, "num_key_value_heads": 4, "n_routed_experts": 4,
                                   "num_experts_per_tok": 1, "n_shared_experts": 0, "linear_num_heads": 4,
                                   "linear_head_dim": 32, "hc_mult": 1, "moe_intermediate_size": 64,
                                   "intermediate_size": 512, "q_lora_rank": 64, "kv_lora_rank": 32,
                                   "qk_nope_head_dim": 32, "v_head_dim": 32, "index_n_heads": 2, "index_head_dim": 16,
                                   "index_topk": 32, "index_kpool": 8, "index_kpool_always_select_tail": False},
                   "vision_config": {"depth": 1, "hidden_size": 64, "num_heads": 2, "intermediate_size": 128,
                                     "out_hidden_size": 256, "projection_intermediate_size": 128}}],
    # Hy4 (Tencent's Hy4-preview): GLM-5's layer with a gated output, sinks and Hy4's hyper-connections; its defaults,
    # a small one with listed indexer and MLP kinds, biases, other widths, tied, and one of a single residual stream
    "hy_v4": [{}, {"vocab_size": 1000, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2, "hidden_size": 256,
                   "num_hidden_layers": 6, "num_attention_heads": 4, "num_key_value_heads": 4, "q_lora_rank": 64,
                   "kv_lora_rank": 32, "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 48,
                   "n_routed_experts": 8, "num_experts_per_tok": 2, "n_shared_experts": 2,
                   "moe_intermediate_size": 64, "intermediate_size": 512, "index_n_heads": 2, "index_head_dim": 32,
                   "index_topk": 32, "hc_mult": 2, "attention_bias": True, "tie_word_embeddings": True,
                   "indexer_types": ["full", "shared", "full", "shared", "shared", "full"],
                   "mlp_layer_types": ["dense", "dense", "sparse", "sparse", "dense", "sparse"]},
              {"vocab_size": 1000, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2, "hidden_size": 256,
               "num_hidden_layers": 5, "num_attention_heads": 4, "num_key_value_heads": 4, "q_lora_rank": 64,
               "kv_lora_rank": 32, "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 32,
               "n_routed_experts": 4, "num_experts_per_tok": 1, "moe_intermediate_size": 64,
               "intermediate_size": 512, "index_n_heads": 2, "index_head_dim": 32, "index_topk": 32, "hc_mult": 1}],
    # inclusionAI's Ling hybrid: KDA with full-rank gates and MLA with a gate per head; its defaults, a small one with
    # the files' key names, a query latent and biases, and one with listed layer and MLP kinds
    "bailing_hybrid": [{}, {"vocab_size": 1000, "pad_token_id": 0, "eos_token_id": 1, "hidden_size": 256,
                            "num_hidden_layers": 6, "num_attention_heads": 4, "head_dim": 32, "intermediate_size": 512,
                            "moe_intermediate_size": 64, "kv_lora_rank": 32, "q_lora_rank": 48,
                            "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 24, "n_group": 1,
                            "topk_group": 1, "num_experts": 8, "num_experts_per_token": 2, "num_shared_experts": 2,
                            "layer_group_size": 3, "short_conv_kernel_size": 3, "attention_bias": True},
                       {"vocab_size": 1000, "pad_token_id": 0, "eos_token_id": 1, "hidden_size": 256,
                        "num_hidden_layers": 5, "num_attention_heads": 4, "head_dim": 48, "intermediate_size": 512,
                        "moe_intermediate_size": 64, "kv_lora_rank": 32, "qk_nope_head_dim": 32,
                        "qk_rope_head_dim": 16, "v_head_dim": 32, "n_group": 1, "topk_group": 1, "num_experts": 4,
                        "layer_types": ["linear_attention", "full_attention", "linear_attention", "full_attention",
                                        "full_attention"],
                        "num_experts_per_token": 2, "mlp_layer_types": ["sparse", "dense", "sparse", "sparse", "dense"],
                        "tie_word_embeddings": True}],
    # Qwen4-Exp's text model: Qwen3.5-MoE's layers without norms, low-rank gated residual streams and a QSA indexer in
    # its attention layers; its defaults with the indexer's keys (which have none), a small one with biases, another
    # pattern and more streams, tied; and its wrapper, whose own tie_word_embeddings ties
    "qwen4_exp_text": [{"indexer_n_heads": 16, "indexer_kv_heads": 1, "indexer_head_dim": 128, "indexer_budget": 2048,
                        "indexer_compress_ratio": 64, "partial_rotary_factor": 0.25},
                       {"vocab_size": 1000, "hidden_size": 256, "num_hidden_layers": 6, "num_attention_heads": 4,
                        "num_key_value_heads": 2, "head_dim": 64, "linear_num_key_heads": 2,
                        "linear_num_value_heads": 4, "linear_key_head_dim": 32, "linear_value_head_dim": 48,
                        "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 64,
                        "shared_expert_intermediate_size": 96, "hc_count": 3, "hc_lowrank": 16,
                        "attention_bias": True, "tie_word_embeddings": True, "full_attention_interval": 3,
                        "indexer_n_heads": 2, "indexer_kv_heads": 1, "indexer_head_dim": 64, "indexer_budget": 64,
                        "indexer_compress_ratio": 16},
                       {"vocab_size": 1000, "eos_token_id": 1, "hidden_size": 256, "num_hidden_layers": 4,
                        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "linear_num_key_heads": 2,
                        "linear_num_value_heads": 4, "num_experts": 4, "num_experts_per_tok": 1,
                        "moe_intermediate_size": 64, "shared_expert_intermediate_size": 64, "hc_lowrank": 8,
                        "ple_layer_ids": [3, 1], "ngram_vocab_size_base": 1000, "ple_embed_dim": 128,
                        "heads_per_ngram": 4, "ple_conv_kernel_size": 3, "make_ngram_vocab_size_divisible_by": 64,
                        "indexer_n_heads": 2, "indexer_kv_heads": 1, "indexer_head_dim": 64, "indexer_budget": 32,
                        "indexer_compress_ratio": 8}],
    # Kolibri-1.1 (Aleph Alpha): Kolibri-1's layers with weightless indexers in every fifth layer, most of which read
    # another's keys and values, and dense first layers of their own width; its defaults, and a small one with listed
    # layer kinds, sharing, dense layers and a window
    "kolibri1_1": [{}, {"vocab_size": 1000, "hidden_size": 256, "num_hidden_layers": 8, "num_attention_heads": 8,
                        "num_key_value_heads": 2, "head_dim": 32, "num_experts": 8, "num_experts_per_tok": 2,
                        "moe_intermediate_size": 64, "shared_expert_intermediate_size": 96, "index_num_heads": 2,
                        "layer_types": ["sliding_attention", "indexed_attention", "indexed_attention",
                                        "sliding_attention", "indexed_attention", "sliding_attention",
                                        "indexed_attention", "indexed_attention"],
                        "index_layers": [1, 4], "kv_source_layers": [0, 1, 1, 3, 4, 5, 1, 4],
                        "mlp_only_layers": [0, 5], "mlp_only_intermediate_size": 320, "sliding_window": 64}],
    # A.X K2 (SK Telecom): DeepSeek-V3.2's layers with a fused query gate and gated norms; its defaults (A.X-K2-Light's
    # shapes), and a small one with biases, listed dense layers and grouped routing
    "axk2": [{}, {"vocab_size": 1000, "hidden_size": 256, "num_hidden_layers": 5, "num_attention_heads": 4,
                  "num_key_value_heads": 4, "q_lora_rank": 48, "kv_lora_rank": 32, "qk_nope_head_dim": 32,
                  "qk_rope_head_dim": 16, "v_head_dim": 24, "n_routed_experts": 8, "num_experts_per_tok": 2,
                  "n_shared_experts": 2, "moe_intermediate_size": 64, "intermediate_size": 512, "index_n_heads": 2,
                  "index_head_dim": 32, "index_topk": 32, "gated_norm_rank": 8, "attention_bias": True,
                  "mlp_layer_types": ["dense", "sparse", "dense", "sparse", "sparse"], "n_group": 2,
                  "topk_group": 1, "bos_token_id": 1, "eos_token_id": 2, "tie_word_embeddings": True}],
    # Hy4-VL's text model: Hy4's layers under larger defaults; its defaults, and a small one under its wrapper, tied
    "hy_v4_vl": [{}, {"text_config": {"vocab_size": 1000, "hidden_size": 256, "num_hidden_layers": 4,
                                  "num_attention_heads": 4, "num_key_value_heads": 4, "q_lora_rank": 64,
                                  "kv_lora_rank": 32, "qk_nope_head_dim": 32, "qk_rope_head_dim": 64, "v_head_dim": 32,
                                  "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 64,
                                  "intermediate_size": 512, "index_n_heads": 2, "index_head_dim": 32,
                                  "index_topk": 32, "hc_mult": 2, "pad_token_id": 0, "bos_token_id": 1,
                                  "eos_token_id": 2},
                  "vision_config": {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 2,
                                    "num_hidden_layers": 1, "out_hidden_size": 256},
                  "tie_word_embeddings": True}],
    "qwen4_exp": [{"text_config": {"vocab_size": 1000, "hidden_size": 256, "num_hidden_layers": 4,
                                   "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
                                   "linear_num_key_heads": 2, "linear_num_value_heads": 4, "num_experts": 4,
                                   "num_experts_per_tok": 2, "moe_intermediate_size": 64,
                                   "shared_expert_intermediate_size": 64, "hc_lowrank": 8,
                                   "layer_types": ["linear_attention", "full_attention", "linear_attention",
                                                   "full_attention"],
                                   "indexer_n_heads": 2, "indexer_kv_heads": 1, "indexer_head_dim": 64,
                                   "indexer_budget": 32, "indexer_compress_ratio": 8},
                   "vision_config": {"depth": 1, "hidden_size": 64, "num_heads": 2, "intermediate_size": 128,
                                     "out_hidden_size": 256},
                   "tie_word_embeddings": True}],
    # Thinking Machines' Inkling: attention with relative logits and convolved keys and values, full or sliding with
    # heads of their own, convolved sub-layer outputs, experts with shared ones weighed by one router; its defaults,
    # small ones with listed sliding and dense layers, the files' dense_intermediate_size, full layers alone (and a
    # tie flag its class ignores), sliding layers alone; and the multimodal wrapper's text model
    "inkling_text": [{}, {**INKLING_SMALL, "local_layer_ids": [0, 2, 3],
                          "mlp_layer_types": ["dense", "sparse", "sparse", "dense", "sparse", "sparse"]},
                     {**INKLING_SMALL, "dense_intermediate_size": 320, "dense_mlp_idx": 2, "n_shared_experts": 2},
                     {**INKLING_SMALL, "layer_types": ["hybrid"] * 6, "tie_word_embeddings": True},
                     {**INKLING_SMALL, "layer_types": ["hybrid_sliding"] * 6, "dense_mlp_idx": 6}],
    # Amazon's Ergo: four norms and two residual gates a layer, squared-ReLU MLPs, experts and a shared one each
    # normed on their output; its defaults, small ones with two dense layers and a full layer every third, with
    # listed kinds and a head width hidden / heads leaves over, and dense layers alone (and a tie flag it ignores)
    "ergo": [{}, {"vocab_size": 1000, "hidden_size": 256, "num_hidden_layers": 6, "num_attention_heads": 4,
                  "num_key_value_heads": 2, "first_dense_intermediate_size": 512, "num_dense_blocks": 2,
                  "moe_intermediate_size": 64, "shared_intermediate_size": 96, "num_experts": 8,
                  "num_experts_per_tok": 2, "sliding_window": 64, "global_attention_every_n_layers": 3},
             {"vocab_size": 1000, "hidden_size": 250, "num_hidden_layers": 5, "num_attention_heads": 4,
              "num_key_value_heads": 1, "first_dense_intermediate_size": 320, "moe_intermediate_size": 48,
              "shared_intermediate_size": 64, "num_experts": 4, "num_experts_per_tok": 1,
              "layer_types": ["sliding_attention", "full_attention", "full_attention", "sliding_attention",
                              "sliding_attention"], "mlp_layer_types": ["dense", "sparse", "dense", "sparse", "sparse"],
              "local_attention_window": 32},
             {"vocab_size": 1000, "hidden_size": 256, "num_hidden_layers": 3, "num_attention_heads": 4,
              "num_key_value_heads": 4, "first_dense_intermediate_size": 512, "num_dense_blocks": 3,
              "tie_word_embeddings": True}],
    # Inkling 2: Inkling's attention with scaled and clipped queries, gated outputs, sinks from each token, and
    # attention residuals over blocks of layers; its defaults, small ones with a full layer every third and blocks of
    # two, full layers alone (with the attribute_map's names and a tie flag it ignores), sliding ones alone; and the
    # multimodal wrapper's text model
    "inkling2_text": [{}, {**INKLING2_SMALL, "layer_types": ["hybrid_sliding", "hybrid_sliding", "hybrid"] * 2},
                      {**INKLING2_SMALL, "layer_types": ["hybrid"] * 6, "n_layers_per_attn_res_block": 4,
                       "tie_word_embeddings": True},
                      {**INKLING2_SMALL, "num_hidden_layers": 5, "layer_types": ["hybrid_sliding"] * 5,
                       "n_layers_per_attn_res_block": 1}],
    "inkling2": [{"text_config": {**INKLING2_SMALL, "num_hidden_layers": 3,
                                  "layer_types": ["hybrid_sliding", "hybrid", "hybrid_sliding"]},
                  "vision_config": {"hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
                                    "projection_hidden_dim": 128, "text_hidden_size": 256}}],
    # Zyphra's ZAYA: compressed convolutional attention, scaled residuals, one expert a token under an MLP router;
    # its defaults (ZAYA1-8B's), a small one with biases, other taps and sliding layers, and one untied
    "zaya": [{}, {"vocab_size": 1000, "hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 8,
                  "num_key_value_heads": 2, "head_dim": 32, "moe_intermediate_size": 64, "num_experts": 4,
                  "router_hidden_size": 16, "cca_time0": 3, "cca_time1": 2, "attention_bias": True,
                  "lm_head_bias": True, "sliding_window": 64,
                  "layer_types": ["hybrid_sliding", "hybrid", "hybrid_sliding", "hybrid"]},
             {"vocab_size": 1000, "hidden_size": 256, "num_hidden_layers": 3, "num_attention_heads": 4,
              "num_key_value_heads": 4, "head_dim": 64, "moe_intermediate_size": 96, "num_experts": 8,
              "router_hidden_size": 32, "tie_word_embeddings": False}],
    # rednote's dots3: DeepSeek-V3.2's latent attention and indexer with a rotary-key norm and a gate per head, sliding
    # layers of their own latent shapes; its defaults, small ones from the released files' swa_ keys and moe_layer_freq,
    # without the indexer (use_dsa false) and with biases, without sliding layers; a full layer without an indexer
    # beside sliding ones of another query latent, every layer's latent set per layer; and the multimodal wrapper
    "dots3_note_text": [{}, {**DOTS3_SMALL, "swa_num_attention_heads": 2, "swa_num_key_value_heads": 2,
                             "swa_kv_lora_rank": 48, "swa_head_dim": 40,
                             "swa_qk_nope_head_dim": 24, "swa_v_head_dim": 16, "swa_q_lora_rank": 32,
                             "first_k_dense_replace": 2, "moe_layer_freq": 1, "n_shared_experts": 2},
                        {**DOTS3_SMALL, "use_dsa": False, "attention_bias": True, "tie_word_embeddings": True,
                         "mlp_layer_types": ["dense", "sparse", "sparse", "dense", "sparse", "sparse"]},
                        {**DOTS3_SMALL, "use_sliding_window": False, "shared_experts_intermediate_size": 64},
                        {**DOTS3_SMALL, "layer_types": ["indexed_attention", "sliding_attention", "full_attention"] * 2,
                         "head_dim": 48, "per_layer_config": {i: {"q_lora_rank": 24} for i in (1, 4)}},
                        {**DOTS3_SMALL, "use_sliding_window": False,
                         "per_layer_config": {i: {"kv_lora_rank": 48} for i in range(6)}}],
    "dots3_note": [{"text_config": {**DOTS3_SMALL, "num_hidden_layers": 4}, "vision_config": {"adapter_out_dim": 256},
                    "audio_config": {"adapter_out_dim": 256}}],
    # GPT-NeoX-Japanese: GPT-NeoX's blocks without biases but the norms' and the last layer's output projection's;
    # its defaults (abeja's 2.7B shapes) and a small untied one of another MLP multiple
    "gpt_neox_japanese": [{}, {"vocab_size": 1000, "hidden_size": 256, "num_hidden_layers": 3, "num_attention_heads": 4,
                               "intermediate_multiple_size": 2, "tie_word_embeddings": False}],
    # ModernBERT-decoder (the Ettin decoders): LayerNorms without biases, GeGLU MLPs, sliding layers, a prediction head
    # before a tied and biased output matrix; its defaults, one with every bias and a full layer every second, and one
    # untied without a decoder bias
    "modernbert-decoder": [{}, {"vocab_size": 1000, "hidden_size": 256, "intermediate_size": 384,
                                "num_hidden_layers": 4, "num_attention_heads": 4, "norm_bias": True,
                                "attention_bias": True, "mlp_bias": True, "classifier_bias": True,
                                "global_attn_every_n_layers": 2, "local_attention": 64, "pad_token_id": 0,
                                "bos_token_id": 1, "eos_token_id": 2, "cls_token_id": 1, "sep_token_id": 2},
                           {"vocab_size": 1000, "hidden_size": 256, "intermediate_size": 384, "num_hidden_layers": 3,
                            "num_attention_heads": 4, "tie_word_embeddings": False, "decoder_bias": False,
                            "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2, "cls_token_id": 1,
                            "sep_token_id": 2}],
    # The BERT-style encoders, as their ForCausalLM classes build them: each class's defaults, and the released
    # shapes of bert-large-uncased, roberta-base, roberta-large, xlm-roberta-large and camembert-base (type_vocab_size
    # 1 and 514 positions in the RoBERTa files), then the keys dpcost reads otherwise: untied, ReLU, a decoder's
    # causal attention, ERNIE's task-type table
    "bert": [{}, {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096},
             {**BERT_SMALL, "tie_word_embeddings": False, "hidden_act": "relu", "is_decoder": True}],
    "roberta": [{}, {"max_position_embeddings": 514, "type_vocab_size": 1, "layer_norm_eps": 1e-05},
                {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096,
                 "max_position_embeddings": 514, "type_vocab_size": 1, "layer_norm_eps": 1e-05}],
    "xlm-roberta": [{}, {"vocab_size": 250002, "hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
                         "intermediate_size": 4096, "max_position_embeddings": 514, "type_vocab_size": 1,
                         "layer_norm_eps": 1e-05}],
    "camembert": [{}, {"vocab_size": 32005, "max_position_embeddings": 514, "type_vocab_size": 1,
                       "layer_norm_eps": 1e-05}],
    "data2vec-text": [{}, {**BERT_SMALL, "type_vocab_size": 1, "tie_word_embeddings": False}],
    "ernie": [{}, {**BERT_SMALL, "use_task_id": True, "task_type_vocab_size": 5}],
    "roberta-prelayernorm": [{}, {**BERT_SMALL, "type_vocab_size": 1, "tie_word_embeddings": False}],
    "xlm-roberta-xl": [{}, {**BERT_SMALL, "type_vocab_size": 1, "max_position_embeddings": 514}],
    "megatron-bert": [{}, {**BERT_SMALL, "tie_word_embeddings": False}],
    "bert-generation": [{}, {**BERT_SMALL, "tie_word_embeddings": False}],
    # DistilBERT and MPNet, which have no causal-LM class: their masked-LM classes; distilbert-base-uncased's shapes
    # are the class's, all-mpnet-base-v2's and mpnet-base's 514 positions
    "distilbert": [{}, {"vocab_size": 1000, "dim": 256, "n_layers": 3, "n_heads": 4, "hidden_dim": 512,
                        "activation": "relu", "tie_word_embeddings": False, "sinusoidal_pos_embds": True}],
    # ModernBERT (answerdotai's encoders): ModernBERT-decoder's layers attending both ways; its defaults (the base
    # model's shapes), and one with every bias and a full layer every second, untied
    "modernbert": [{}, {"vocab_size": 1000, "hidden_size": 256, "intermediate_size": 384, "num_hidden_layers": 4,
                        "num_attention_heads": 4, "norm_bias": True, "attention_bias": True, "mlp_bias": True,
                        "classifier_bias": True, "global_attn_every_n_layers": 2, "local_attention": 64,
                        "tie_word_embeddings": False, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
                        "cls_token_id": 1, "sep_token_id": 2}],
    # ESM (protein language models; EsmConfig has no vocabulary of its own): esm2_t33_650M_UR50D's shapes (rotary, no
    # embedding norm) and esm1b_t33_650M_UR50S's (absolute positions after the padding row, an embedding norm), and a
    # small untied one
    "esm": [{**ESM_650M, "position_embedding_type": "rotary", "emb_layer_norm_before": False},
            {**ESM_650M, "position_embedding_type": "absolute", "emb_layer_norm_before": True},
            {"vocab_size": 33, "hidden_size": 256, "num_hidden_layers": 3, "num_attention_heads": 4,
             "intermediate_size": 512, "pad_token_id": 1, "position_embedding_type": "rotary",
             "tie_word_embeddings": False, "hidden_dropout_prob": 0.0}],
    # ALBERT: its defaults (albert-xxlarge-v2's shapes), albert-base-v2's and albert-large-v2's, and a small one of two
    # groups of two layers over five run layers, untied, ReLU
    "albert": [{}, {"hidden_size": 768, "num_attention_heads": 12, "intermediate_size": 3072, "hidden_act": "gelu_new"},
               {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096},
               {"vocab_size": 1000, "embedding_size": 64, "hidden_size": 256, "num_hidden_layers": 5,
                "num_hidden_groups": 2, "inner_group_num": 2, "num_attention_heads": 4, "intermediate_size": 512,
                "hidden_act": "relu", "tie_word_embeddings": False, "type_vocab_size": 3}],
    # Dory (NVIDIA's looped nGPT): its defaults (Dory1.0-4B's shapes), and a small one looping its middle twice more,
    # one cache for the loops, biases, tied; the class writes both as released files list them (attention and MLP
    # blocks apart)
    "dory": [{}, {"vocab_size": 1000, "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 6,
                  "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "n_input_layers": 1,
                  "n_output_layers": 2, "n_recurrent_loops": 3, "recurrent_kv_cache_mode": "last_loop",
                  "attention_bias": True, "mlp_bias": True, "tie_word_embeddings": True, "sliding_window": 64}],
    "mpnet": [{}, {"max_position_embeddings": 514, "layer_norm_eps": 1e-05},
              {**BERT_SMALL, "relative_attention_num_buckets": 48, "tie_word_embeddings": False}],
    "inkling_mm_model": [{"text_config": {**INKLING_SMALL, "num_hidden_layers": 3},
                          "vision_config": {"hidden_size": 64, "n_layers": 1, "num_attention_heads": 2},
                          "tie_word_embeddings": True}],
}  # fmt: skip
# ForCausalLM classes that hold an image input beside the text model: FuyuForCausalLM's vision_embed_tokens (a linear
# layer from patches), which dpcost leaves out as a vision encoder
IMAGE_INPUT_IN_CAUSAL_LM = {"fuyu", "phi4_multimodal"}
# Models that hold an image tokenizer or encoders beside their text layers: ChameleonModel's vqmodel (a VQ-VAE),
# Phi4MultimodalModel's embed_tokens_extend (its image and audio encoders), left out too
IMAGE_TOKENIZER = (".vqmodel.", ".embed_tokens_extend.")
# Wrappers that AutoModelForCausalLM also maps, to a text-only class reading the text config's tie flag, where the
# released checkpoints are the image-text class, which ties by the wrapper's own (Qwen4-Exp: modeling_auto.py's
# "VLM compatibility" entry): built as that class
IMAGE_TEXT_FIRST = {"qwen4_exp"}
# Encoders without a causal-LM class: their masked-LM class
MASKED_LM = {"distilbert", "mpnet", "modernbert", "esm", "albert"}
# Text configs the auto classes do not map (auto_mappings.py maps Emu3ForCausalLM under "emu3"): their own class
TEXT_CLASSES = {"emu3_text_model": "Emu3ForCausalLM"}


def run_order(text: object) -> list[int]:
    """The layers in the order a token runs them: each once, but Dory's recurrent layers n_recurrent_loops times
    (DoryModel.forward, modeling_dory.py, 5.25.0)."""
    layers = text.num_hidden_layers  # type: ignore[attr-defined]
    loops = getattr(text, "n_recurrent_loops", None)
    if loops is None:
        return list(range(layers))
    first, recurrent = text.n_input_layers, text.n_recurrent_layers  # type: ignore[attr-defined]
    middle = [first + j for _ in range(loops) for j in range(recurrent)]
    return [*range(first), *middle, *range(first + recurrent, layers)]


def unused_parameters(model: object) -> int:
    """Parameters a class allocates and its forward never reads: LongcatFlashExperts' gate_up_proj has rows for
    the zero-computation experts too (total_experts), which forward sends through an identity; the checkpoints hold
    only n_routed_experts' (modeling_longcat_flash.py, 5.24.0). And a BERT-style head's own `bias` where
    tie_word_embeddings is false: the class ties it to decoder.bias only when it ties the embedding
    (_tied_weights_keys), and forward reads decoder.bias (BertLMPredictionHead, modeling_bert.py, 5.25.0)."""
    unused = 0
    for module in model.modules():  # type: ignore[attr-defined]
        if type(module).__name__ == "LongcatFlashExperts" and module.gate_up_proj is not None:
            _, rows, columns = module.gate_up_proj.shape
            unused += (module.total_experts - module.num_routed_experts) * rows * columns
        decoder, bias = getattr(module, "decoder", None), getattr(module, "bias", None)
        held = getattr(decoder, "bias", None) is not None and type(bias).__name__ == "Parameter"
        if held and bias is not decoder.bias:
            unused += bias.numel()
    return unused


def text_parameters(model: object) -> int:
    """A multimodal model's text model and output head: what dpcost counts of a wrapper's file."""
    named = model.named_parameters()  # type: ignore[attr-defined]
    text = ("language_model.", "text_model.", "lm_head.")
    if any(part in name for name, _ in model.named_parameters() for part in IMAGE_TOKENIZER):  # type: ignore[attr-defined]
        return sum(p.numel() for name, p in named if not any(part in name for part in IMAGE_TOKENIZER))
    return sum(p.numel() for name, p in named if any(part in name for part in text))


def main() -> None:
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText, AutoModelForMaskedLM
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    warnings.filterwarnings("ignore")
    out = []
    chosen = sys.argv[1:] or list(CASES)
    for family, changes in ((f, CASES[f]) for f in chosen):
        for change in changes:
            config = CONFIG_MAPPING[family](**change)
            with torch.device("meta"):
                if family in MASKED_LM:
                    model = AutoModelForMaskedLM.from_config(config)
                elif family in TEXT_CLASSES:
                    model = getattr(transformers, TEXT_CLASSES[family])(config)
                elif family in IMAGE_TEXT_FIRST:
                    model = AutoModelForImageTextToText.from_config(config)
                else:
                    try:
                        model = AutoModelForCausalLM.from_config(config)
                    except ValueError:  # a multimodal wrapper without a text-only class: its text model is counted
                        model = AutoModelForImageTextToText.from_config(config)
            kept = {k: v for k, v in config.to_dict().items() if k not in DROPPED}
            for ours, theirs in RELEASED_NAMES.get(family, {}).items():  # as the released files name them
                if ours in kept and (ours in change or theirs in change):
                    kept[theirs] = kept.pop(ours)
            text = config.get_text_config(decoder=True)  # a wrapper's text model: its layers attend in windows
            types = getattr(text, "layer_types", None) or []
            types = [types[i] for i in run_order(text)] if types else types  # Dory's looped layers, as they run
            local_kinds = ("sliding_attention", "chunked_attention", "hybrid_sliding")  # Inkling's: hybrid_sliding
            sliding = [i for i, t in enumerate(types) if t in local_kinds]
            chunked = "chunked_attention" in types
            window = text.attention_chunk_size if chunked else getattr(text, "sliding_window", 0)
            heads = ("ForCausalLM", "LMHeadModel", "GenerationDecoder", "ForMaskedLM")
            text_only = type(model).__name__.endswith(heads)
            text_only = text_only and family not in IMAGE_INPUT_IN_CAUSAL_LM
            out.append({
                "config": kept,
                "class": type(model).__name__,
                "parameters": sum(p.numel() for p in model.parameters()) if text_only else text_parameters(model),
                # persistent buffers a checkpoint also holds: routers' e_score_correction_bias (ZAYA's balancing_biases)
                "routing_biases": sum(
                    b.numel() for name, b in model.named_buffers()
                    if name.endswith(("e_score_correction_bias", "balancing_biases"))
                ),
                "unused": unused_parameters(model),
                "sliding": {"size": window, "layers": sliding} if sliding else None,
            })  # fmt: skip
    json.dump({"transformers": __import__("transformers").__version__, "cases": out}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
