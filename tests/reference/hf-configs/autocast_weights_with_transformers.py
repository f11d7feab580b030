#!/usr/bin/env python3
"""What a decoder layer keeps under torch.autocast with fp32 weights (PyTorch AMP, as DDP and Hugging Face's Trainer
with bf16=True run it): writes resolved/autocast-weights.json.

    python autocast_weights_with_transformers.py > resolved/autocast-weights.json

Needs torch and transformers (not dpcost's dependencies; run with transformers 5.25.0 and torch 2.13.0 CPU). Runs
one LlamaDecoderLayer (hidden 256, intermediate 688, 4 heads, SDPA) in training mode under
torch.autocast("cpu", dtype=torch.bfloat16) on fp32 weights and an fp32 input, and again in plain bf16, at two
sequence lengths, with saved-tensor hooks (each storage once, the parameters themselves left out). What does not grow
with the tokens is given in units of the layer's linear weights in bf16 (2 bytes each of 4 h^2 + 3 h f): autocast's
cached 16-bit weight copies, which the linear layers save for their backward. What grows is given in bytes per token
per unit of hidden, for both runs. CPU autocast casts the same ops to bf16 as CUDA's for this layer (linear, matmul,
SDPA); its fp32 list differs, which this layer's ops do not reach (its RMSNorm upcasts itself).
tests/test_memory.py holds dpcost's autocast weight copies (memory.cast_weights) to it.
"""

from __future__ import annotations

import json
import sys
import warnings
from typing import Any

HIDDEN, FFN, HEADS, SHORT, LONG = 256, 688, 4, 128, 256


def saved_bytes(autocast: bool, tokens: int) -> int:
    """Bytes autograd keeps of one layer's forward over `tokens` tokens, its parameters left out."""
    import torch
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding

    config = LlamaConfig(hidden_size=HIDDEN, intermediate_size=FFN, num_attention_heads=HEADS,
                         num_key_value_heads=HEADS, num_hidden_layers=1, vocab_size=100)  # fmt: skip
    config._attn_implementation = "sdpa"
    dtype = torch.float32 if autocast else torch.bfloat16
    layer = LlamaDecoderLayer(config, 0).to(dtype).train()
    rope = LlamaRotaryEmbedding(config)
    weights = {p.untyped_storage().data_ptr() for p in layer.parameters()}
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        if t.untyped_storage().data_ptr() not in weights:
            saved[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    x = torch.randn(1, tokens, HIDDEN, dtype=dtype, requires_grad=True) * 1.0
    positions = torch.arange(tokens)[None]
    hooks = torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t)
    with hooks, torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        cos, sin = rope(x, positions)
        layer(x, position_embeddings=(cos, sin), attention_mask=None, position_ids=positions)
    return sum(saved.values())


def split(autocast: bool) -> dict[str, Any]:
    short, long = saved_bytes(autocast, SHORT), saved_bytes(autocast, LONG)
    per_token = (long - short) / (LONG - SHORT)
    linear_weights = 2 * (4 * HIDDEN * HIDDEN + 3 * HIDDEN * FFN)
    return {
        "constant_per_bf16_linear_weights": (short - per_token * SHORT) / linear_weights,
        "bytes_per_token_per_hidden": per_token / HIDDEN,
    }


def main() -> None:
    import torch
    import transformers

    warnings.filterwarnings("ignore")
    out = {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "layer": {"hidden": HIDDEN, "intermediate": FFN, "heads": HEADS, "attention": "sdpa"},
        "autocast_fp32_weights": split(True),
        "bf16": split(False),
    }
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
