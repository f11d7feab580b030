#!/usr/bin/env python3
"""What transformers builds and masks for DeepSeek-V4: resolved/deepseek-v4.json.

    python deepseek_v4_with_transformers.py > resolved/deepseek-v4.json

Needs torch and transformers (not dpcost's dependencies; written with transformers 5.24.0 and torch 2.14.1 CPU).
- `parameters`: for deepseek-v4-flash.json and deepseek-v4-pro.json, DeepseekV4ForCausalLM built on the meta device
  (no weights), its parameters summed by the part they belong to (the groups dpcost's `show model` prints).
- `small`: small configs that switch hc_mult (1 included), the attribute_map's names (intermediate_size,
  num_local_experts) and the layer kinds, each with the parameters transformers builds from it.
- `visible_entries`: for a small config, how many compressed entries each query may attend to, read from the
  masks the compressors themselves return (DeepseekV4HCACompressor's block_bias: every closed window; the CSA
  compressor's: the indexer's top k of them), for sequences of several lengths and rates; the keys of the window
  are transformers' sliding-window mask and are not repeated here.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent

GROUPS = (  # (dpcost's component, a parameter name's marker), first match wins
    ("compressors and indexers", ".self_attn.compressor."),
    ("attention", ".self_attn."),
    ("hyper-connections", "_hc."),
    ("hyper-connections", "hc_head."),
    ("routed experts", ".mlp.experts."),
    ("shared experts", ".mlp.shared_experts."),
    ("routers", ".mlp.gate."),
    ("norms", "layernorm."),
    ("norms", "model.norm."),
    ("embedding", "embed_tokens."),
    ("output head", "lm_head."),
)


def config(cfg: dict):  # type: ignore[no-untyped-def]
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    cfg = {k: v for k, v in cfg.items() if k not in ("model_type", "quantization_config")}
    return CONFIG_MAPPING["deepseek_v4"](**cfg)


def parameters(path: Path) -> dict[str, int]:
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config(json.loads(path.read_text())))
    parts: dict[str, int] = {"total": 0}
    for name, p in model.named_parameters():
        group = next(g for g, marker in GROUPS if marker in name)
        parts[group] = parts.get(group, 0) + p.numel()
        parts["total"] += p.numel()
    return parts


# small configs that switch what the released files leave alone: one residual stream (the hyper-connections are still
# built), the attribute_map's names for the experts' width and count, layer kinds from layer_types
SMALL = {"hidden_size": 64, "num_hidden_layers": 6, "num_attention_heads": 4, "head_dim": 32, "q_lora_rank": 16,
         "o_groups": 2, "o_lora_rank": 16, "index_n_heads": 2, "index_head_dim": 16, "index_topk": 8,
         "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "vocab_size": 64,
         "qk_rope_head_dim": 8, "sliding_window": 8}  # fmt: skip
VARIANTS = [
    {"hc_mult": 1},
    {"hc_mult": 3, "intermediate_size": 48, "num_local_experts": 6},
    {"hc_mult": 2,
     "layer_types": ["sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"] * 2,
     "compress_rates": {"compressed_sparse_attention": 2, "heavily_compressed_attention": 16}},
]  # fmt: skip


def small_parameters(change: dict) -> int:  # type: ignore[type-arg]
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config({**SMALL, **change}))
    return sum(p.numel() for p in model.parameters())


def visible_entries(seq_len: int, csa_rate: int, hca_rate: int, topk: int) -> dict[str, list[int]]:
    """Per query, the compressed entries its mask leaves open, in a sparse and a heavily compressed layer."""
    import torch
    from transformers.models.deepseek_v4 import modeling_deepseek_v4 as v4

    small = config({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "head_dim": 32,
                    "q_lora_rank": 16, "o_groups": 2, "o_lora_rank": 16, "index_n_heads": 2, "index_head_dim": 16,
                    "index_topk": topk, "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                    "vocab_size": 64, "hc_mult": 2, "qk_rope_head_dim": 8, "sliding_window": 8,
                    "compress_rates": {"compressed_sparse_attention": csa_rate,
                                       "heavily_compressed_attention": hca_rate},
                    "layer_types": ["compressed_sparse_attention", "heavily_compressed_attention"]})  # fmt: skip
    torch.manual_seed(0)
    hidden = torch.randn(1, seq_len, 64)
    q_residual = torch.randn(1, seq_len, 16)
    positions = torch.arange(seq_len).unsqueeze(0)
    out = {}
    for name, cls in (("compressed_sparse_attention", v4.DeepseekV4CSACompressor),
                      ("heavily_compressed_attention", v4.DeepseekV4HCACompressor)):  # fmt: skip
        module = cls(small)
        for p in module.parameters():
            torch.nn.init.normal_(p, std=0.02)
        with torch.no_grad():
            _, bias = module(hidden, q_residual, positions, None, 0)
        open_ = [0] * seq_len if bias is None else (bias[0, 0] == 0).sum(-1).tolist()
        out[name] = [int(n) for n in open_]
    return out


def main() -> None:
    warnings.filterwarnings("ignore")
    doc = {
        "transformers": __import__("transformers").__version__,
        "parameters": {f: parameters(HERE / f) for f in ("deepseek-v4-flash.json", "deepseek-v4-pro.json")},
        "small": [
            {"config": {"model_type": "deepseek_v4", **SMALL, **v}, "parameters": small_parameters(v)} for v in VARIANTS
        ],
        "visible_entries": [
            {"seq_len": t, "csa_rate": m, "hca_rate": mh, "index_topk": k, **visible_entries(t, m, mh, k)}
            for t, m, mh, k in ((37, 4, 8, 3), (64, 4, 16, 100), (50, 2, 5, 7))
        ],
    }
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
