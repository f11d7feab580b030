#!/usr/bin/env python3
"""The dtypes transformers' decode cache keeps a hybrid's recurrent state and convolution window in: one bf16
forward (use_cache) of a tiny model of each family, the dtype of every cache layer's recurrent_states and
conv_states, and of MiniMax's linear_cache, and how many elements each holds for the one sequence (Inkling's four
short convolutions' windows in every layer among them), beside the configs they were built from. Writes
resolved/recurrent-state-dtypes.json.

    python recurrent_state_dtypes_with_transformers.py > resolved/recurrent-state-dtypes.json

Needs torch and transformers (not dpcost's dependencies; written with transformers 5.25.0 and torch 2.14.1 CPU,
whose reference PyTorch paths stand in for mamba_ssm's and flash-linear-attention's kernels).
"""

from __future__ import annotations

import json
import sys
import warnings

SMALL = {"vocab_size": 128, "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 2, "intermediate_size": 128, "pad_token_id": 0, "bos_token_id": 1,
         "eos_token_id": 2}  # fmt: skip
CASES: dict[str, dict[str, object]] = {
    "mamba": {"vocab_size": 128, "hidden_size": 64, "num_hidden_layers": 2, "state_size": 8, "pad_token_id": 0},
    "mamba2": {"vocab_size": 128, "hidden_size": 64, "num_hidden_layers": 2, "num_heads": 8, "head_dim": 16,
               "state_size": 8, "n_groups": 1, "pad_token_id": 0},
    "jamba": {**SMALL, "num_experts": 2, "num_experts_per_tok": 1, "expert_layer_period": 2, "attn_layer_period": 2,
              "attn_layer_offset": 1, "mamba_d_state": 8},
    "nemotron_h": {**SMALL, "hybrid_override_pattern": "M*", "mamba_num_heads": 8, "mamba_head_dim": 16,
                   "ssm_state_size": 8, "n_groups": 1},
    "falcon_h1": {**SMALL, "mamba_d_ssm": 64, "mamba_n_heads": 4, "mamba_d_head": 16, "mamba_d_state": 8,
                  "mamba_n_groups": 1},
    "bamba": {**SMALL, "mamba_n_heads": 8, "mamba_d_head": 16, "mamba_d_state": 8, "mamba_n_groups": 1,
              "attn_layer_indices": [1]},
    "granitemoehybrid": {**SMALL, "mamba_n_heads": 8, "mamba_d_head": 16, "mamba_d_state": 8, "mamba_n_groups": 1,
                         "layer_types": ["mamba", "attention"], "num_local_experts": 0},
    "qwen3_next": {**SMALL, "head_dim": 16, "linear_num_key_heads": 2, "linear_num_value_heads": 4,
                   "linear_key_head_dim": 16, "linear_value_head_dim": 16, "num_experts": 4, "num_experts_per_tok": 2,
                   "moe_intermediate_size": 32, "shared_expert_intermediate_size": 32,
                   "layer_types": ["linear_attention", "full_attention"]},
    "minimax": {**SMALL, "num_local_experts": 2, "num_experts_per_tok": 1, "head_dim": 16,
                "layer_types": ["linear_attention", "full_attention"]},
    "inkling_text": {**SMALL, "head_dim": 16, "swa_num_attention_heads": 2, "swa_num_key_value_heads": 1,
                     "swa_head_dim": 32, "sliding_window_size": 8, "d_rel": 4, "rel_extent": 16, "conv_kernel_size": 3,
                     "n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1,
                     "moe_intermediate_size": 32, "local_layer_ids": [0]},
    "inkling2_text": {**SMALL, "head_dim": 16, "swa_num_attention_heads": 2, "swa_num_key_value_heads": 1,
                      "swa_head_dim": 32, "sliding_window_size": 8, "d_rel": 4, "rel_extent": 16,
                      "conv_kernel_size": 3, "n_routed_experts": 4, "num_experts_per_tok": 2,
                      "moe_intermediate_size": 32, "unpadded_vocab_size": 120,
                      "layer_types": ["hybrid_sliding", "hybrid"], "n_layers_per_attn_res_block": 1},
    "zaya": {**SMALL, "head_dim": 16, "num_experts": 4, "moe_intermediate_size": 32, "router_hidden_size": 8,
             "cca_time0": 3, "cca_time1": 2},
}  # fmt: skip


def main() -> None:
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    out, elements = {}, {}
    for family, keys in CASES.items():
        model = AutoModelForCausalLM.from_config(CONFIG_MAPPING[family](**keys), dtype=torch.bfloat16)
        cache = model(torch.randint(3, 100, (1, 6)), use_cache=True).past_key_values
        found: dict[str, set[str]] = {}
        counts: dict[str, int] = {}
        for layer in [cache, *getattr(cache, "layers", [])]:
            for name in ("recurrent_states", "conv_states", "linear_cache"):
                value = getattr(layer, name, None)
                tensors = list(value.values()) if isinstance(value, dict) else value if isinstance(value, list) else []
                for t in tensors:
                    if isinstance(t, torch.Tensor):
                        found.setdefault(name, set()).add(str(t.dtype).removeprefix("torch."))
                        counts[name] = counts.get(name, 0) + t.numel()
        out[family] = {name: sorted(dtypes) for name, dtypes in sorted(found.items())}
        elements[family] = dict(sorted(counts.items()))
    json.dump({"transformers": __import__("transformers").__version__, "model_dtype": "bfloat16", "families": out,
               "elements": elements, "configs": CASES}, sys.stdout, indent=1)  # fmt: skip
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
