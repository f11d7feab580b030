#!/usr/bin/env python3
"""What autograd keeps of one RWKV-4 layer: writes resolved/rwkv-saved.json.

    python rwkv_saved_with_transformers.py > resolved/rwkv-saved.json

Needs torch and transformers (not dpcost's dependencies; run with transformers 5.25.0 and torch 2.14.1 CPU). Builds
RwkvBlock (modeling_rwkv.py) in bf16 and runs its forward in training mode under
torch.autograd.graph.saved_tensors_hooks, counting the storage of every tensor saved for the backward that is not a
parameter, once per storage. On a GPU RwkvSelfAttention runs the WKV CUDA kernel (RwkvLinearAttention), whose
forward keeps what save_for_backward lists: -exp(time_decay) in fp32, time_first, the key, the value and its
output, in bf16 for a bf16 model. There is no GPU here, so the kernel is stood in for by a function that computes
the reference recurrence (rwkv_linear_attention_cpu) without a graph and saves that same list; the rest of the layer
runs as transformers writes it. Reported per token: the tensors of one (batch, seq, width) shape, the LayerNorms'
mean and rstd (bf16 on the CPU, fp32 on a GPU), and the per-layer constants (1 - time_mix, -exp(time_decay))
spread over the tokens. tests/test_rwkv.py holds dpcost's account of the layer to it.
"""

from __future__ import annotations

import json
import sys
import warnings


def saved_per_token(block: object, batch: int, seq: int) -> dict[str, float]:
    """Bytes a token of what a bf16 block's forward saves for its backward: activations (one row per token), the
    LayerNorms' statistics (one number per token) and constants (anything else), each storage once."""
    import torch

    block = block.to(torch.bfloat16).train()  # type: ignore[attr-defined]
    weights = {p.data_ptr() for p in block.parameters()}  # type: ignore[attr-defined]
    x = torch.randn(batch, seq, block.config.hidden_size, dtype=torch.bfloat16, requires_grad=True)  # type: ignore[attr-defined]
    saved: dict[int, torch.Tensor] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        if t.data_ptr() not in weights:
            saved.setdefault(t.untyped_storage().data_ptr(), t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        block(x, state=None, use_cache=False)  # type: ignore[operator]
    tokens = batch * seq
    totals = {"activations": 0, "norm_statistics": 0, "constants": 0}
    for t in saved.values():
        rows = t.numel() // t.shape[-1] if t.dim() else 1
        kind = "constants" if rows != tokens else "norm_statistics" if t.shape[-1] == 1 else "activations"
        totals[kind] += t.untyped_storage().nbytes()
    return {f"{kind}_bytes_per_token": total / tokens for kind, total in totals.items()}


def main() -> None:
    import torch
    import transformers
    from transformers import RwkvConfig
    from transformers.models.rwkv import modeling_rwkv

    class KernelSaves(torch.autograd.Function):
        """RwkvLinearAttention's forward as far as autograd sees it: its output and what it saves."""

        @staticmethod
        def forward(ctx, time_decay, time_first, key, value):  # type: ignore[no-untyped-def]
            with torch.no_grad():
                output, _ = modeling_rwkv.rwkv_linear_attention_cpu(time_decay, time_first, key, value)
            ctx.save_for_backward(-torch.exp(time_decay.float().contiguous()), time_first, key, value, output)
            return output

        @staticmethod
        def backward(ctx, grad):  # type: ignore[no-untyped-def]
            raise NotImplementedError

    def kernel(time_decay, time_first, key, value, state=None, return_state=False):  # type: ignore[no-untyped-def]
        return KernelSaves.apply(time_decay, time_first, key, value), None

    warnings.filterwarnings("ignore")
    hidden, width, ffn, batch, seq = 256, 384, 640, 2, 64
    config = RwkvConfig(
        hidden_size=hidden, attention_hidden_size=width, intermediate_size=ffn, num_hidden_layers=2, vocab_size=100
    )
    modeling_rwkv.rwkv_linear_attention = kernel
    # the first layer also normalises the embedding (pre_ln)
    layers = {f"layer {i}": saved_per_token(modeling_rwkv.RwkvBlock(config, i), batch, seq) for i in (0, 1)}
    out = {
        "transformers": transformers.__version__,
        "hidden": hidden,
        "attention_hidden_size": width,
        "intermediate_size": ffn,
        "batch": batch,
        "seq": seq,
        **layers,
    }
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
