#!/usr/bin/env python3
"""What autograd keeps of one run of Zamba2's shared transformer block: writes resolved/zamba2-saved.json.

    python zamba2_saved_with_transformers.py > resolved/zamba2-saved.json

Needs torch and transformers (not dpcost's dependencies; run with transformers 5.25.0 and torch 2.14.1 CPU). Builds
Zamba2AttentionDecoderLayer (modeling_zamba2.py) and the hybrid layer's linear layer in bf16 and runs them in
training mode, as Zamba2HybridLayer does, under torch.autograd.graph.saved_tensors_hooks, counting the storage of
every tensor saved for the backward that is not a parameter, once per storage. Attention runs through a stand-in
registered as an attention implementation that saves what flash attention's forward keeps (q, k, v, its output and
the fp32 log-sum-exp); the rest runs as transformers writes it, eagerly. Reported per token, without and with the
attention adapters: the tensors of one row per token, and the RMSNorms' statistics. tests/test_zamba2.py holds
dpcost's account of the block to it.
"""

from __future__ import annotations

import json
import sys
import warnings


def main() -> None:
    import torch
    import transformers
    from transformers import Zamba2Config
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
    from transformers.models.zamba2 import modeling_zamba2

    class FlashSaves(torch.autograd.Function):
        """Flash attention's forward as far as autograd sees it: its output, and what it saves."""

        @staticmethod
        def forward(ctx, q, k, v):  # type: ignore[no-untyped-def]
            with torch.no_grad():
                out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            ctx.save_for_backward(q, k, v, out, torch.empty(q.shape[:3], dtype=torch.float32))
            return out

        @staticmethod
        def backward(ctx, grad):  # type: ignore[no-untyped-def]
            raise NotImplementedError

    def attention(module, query, key, value, attention_mask, **kwargs):  # type: ignore[no-untyped-def]
        return FlashSaves.apply(query, key, value).transpose(1, 2).contiguous(), None

    warnings.filterwarnings("ignore")
    ALL_ATTENTION_FUNCTIONS["flash_saves"] = attention
    hidden, heads, ffn, rank, batch, seq = 256, 8, 640, 32, 2, 64
    tokens = batch * seq
    out: dict[str, object] = {"transformers": transformers.__version__, "hidden": hidden, "heads": heads,
                              "intermediate_size": ffn, "adapter_rank": rank, "batch": batch, "seq": seq}  # fmt: skip
    for adapters in (False, True):
        config = Zamba2Config(
            hidden_size=hidden, num_attention_heads=heads, intermediate_size=ffn, adapter_rank=rank,
            num_hidden_layers=2, layers_block_type=["hybrid", "mamba"], use_shared_attention_adapter=adapters,
            vocab_size=100,
        )  # fmt: skip
        config._attn_implementation = "flash_saves"
        block = modeling_zamba2.Zamba2AttentionDecoderLayer(config, block_id=0).to(torch.bfloat16).train()
        linear = torch.nn.Linear(hidden, hidden, bias=False).to(torch.bfloat16)
        weights = {p.data_ptr() for p in [*block.parameters(), *linear.parameters()]}
        x, embedding = (torch.randn(batch, seq, hidden, dtype=torch.bfloat16, requires_grad=True) for _ in range(2))
        saved: dict[int, torch.Tensor] = {}

        def pack(t: torch.Tensor, weights: set[int] = weights, saved: dict[int, torch.Tensor] = saved) -> torch.Tensor:
            if t.data_ptr() not in weights:
                saved.setdefault(t.untyped_storage().data_ptr(), t)
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            linear(block(x, embedding, layer_idx=0))
        totals = {"activations": 0, "norm_statistics": 0}
        for t in saved.values():
            kind = "norm_statistics" if t.shape[-1] == 1 else "activations"
            totals[kind] += t.untyped_storage().nbytes()
        name = "with attention adapters" if adapters else "without attention adapters"
        out[name] = {f"{kind}_bytes_per_token": total / tokens for kind, total in totals.items()}
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
