#!/usr/bin/env python3
"""What autograd keeps of one RecurrentGemma recurrent block: writes resolved/recurrent-gemma-saved.json.

    python recurrent_gemma_saved_with_transformers.py > resolved/recurrent-gemma-saved.json

Needs torch and transformers (not dpcost's dependencies; run with transformers 5.25.0 and torch 2.14.1 CPU). Builds
RecurrentGemmaRecurrentBlock (modeling_recurrent_gemma.py) in bf16, runs its forward in training mode under
torch.autograd.graph.saved_tensors_hooks, and sums the storage of every tensor saved for the backward that is not a
parameter, once per storage: bytes per token, and the same less the block's input, in units of the recurrence's
width w. tests/test_recurrent_gemma.py holds dpcost's account of the block to it.
"""

from __future__ import annotations

import json
import sys
import warnings


def main() -> None:
    import torch
    import transformers
    from transformers import RecurrentGemmaConfig
    from transformers.models.recurrent_gemma.modeling_recurrent_gemma import RecurrentGemmaRecurrentBlock

    warnings.filterwarnings("ignore")
    hidden, width, heads, batch, seq = 256, 384, 4, 2, 64
    config = RecurrentGemmaConfig(
        hidden_size=hidden, lru_width=width, num_attention_heads=heads, num_hidden_layers=1, vocab_size=100
    )
    block = RecurrentGemmaRecurrentBlock(config, 0).to(torch.bfloat16).train()
    weights = {p.data_ptr() for p in block.parameters()}
    x = torch.randn(batch, seq, hidden, dtype=torch.bfloat16, requires_grad=True)
    positions = torch.arange(seq)[None].expand(batch, seq)
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        if t.data_ptr() not in weights:
            storage = t.untyped_storage()
            saved[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        block(x, positions, None, use_cache=False)
    tokens = batch * seq
    per_token = sum(saved.values()) / tokens
    out = {
        "transformers": transformers.__version__,
        "hidden": hidden,
        "lru_width": width,
        "heads": heads,
        "batch": batch,
        "seq": seq,
        "saved_bytes_per_token": per_token,
        "saved_bytes_per_token_without_input_per_width": (per_token - 2 * hidden) / width,
    }
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
