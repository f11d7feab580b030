#!/usr/bin/env python3
"""What eager PyTorch moves over the score square when it runs transformers' eager attention: writes
resolved/eager-attention-traffic.json.

    python eager_attention_traffic_with_transformers.py > resolved/eager-attention-traffic.json

Needs torch and transformers (not dpcost's dependencies; run with transformers 5.25.0 and torch 2.13.0 CPU). Runs, in
training mode on bf16 queries, keys and values with a causal (batch, 1, s, s) mask, the eager attention functions of
four families: Llama's eager_attention_forward (its softmax in fp32, cast back), GPT-2's (its softmax in the scores' 16
bits), Gemma 2's (Llama's, with the logits soft-capped at 50: divided, tanh, multiplied) and gpt-oss's (GPT-2's, with a
sink logit per head concatenated to the scores, the row's max subtracted, and the sink's column sliced off). For each,
the aten kernels of the forward and of the backward (the gradient of the output, through torch.autograd.grad) and the
bytes they read and write, counted as eager_activations_with_transformers.traffic counts them, at two sequence lengths:
the part that grows as s^2 is the score square's, given per score (batch x heads x s x s; the mask's read is 2 bytes
over the heads). A bf16 softmax in fp32 runs as a cast, the softmax and a cast back on CUDA too (aten softmax fuses the
upcast only for fp16).
tests/test_eager_attention.py holds dpcost/engine/ops.py's eager attention op to it.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any

HEADS, HEAD_DIM, SHORT, LONG = 4, 16, 64, 128


def per_score(attention: Any) -> dict[str, float | int]:
    """Bytes per score forward and backward (the s^2 part), and the kernels each launches, of `attention(q, k, v,
    mask)`."""
    import torch

    sys.path.insert(0, str(Path(__file__).parent))
    from eager_activations_with_transformers import traffic

    moved = []
    for s in (SHORT, LONG):
        q, k, v = (torch.randn(1, HEADS, s, HEAD_DIM, dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
        mask = torch.triu(torch.full((s, s), float("-inf")), 1).to(torch.bfloat16)[None, None]
        out: list[Any] = []
        forward = traffic(lambda: out.append(attention(q, k, v, mask)), 1)  # noqa: B023
        gradient = torch.randn_like(out[0])
        backward = traffic(lambda: torch.autograd.grad(out[0], (q, k, v), gradient, allow_unused=True), 1)  # noqa: B023
        moved.append((forward, backward))
    (f1, b1), (f2, b2) = moved

    def squared(short: float, long: float) -> float:  # a s^2 + c s through both lengths: a, per score
        return (long - short * LONG / SHORT) / (HEADS * (LONG**2 - SHORT**2 * LONG / SHORT))

    return {
        "forward_bytes_per_score": round(squared(f1[0], f2[0]), 4),
        "forward_kernels": f2[1],
        "backward_bytes_per_score": round(squared(b1[0], b2[0]), 4),
        "backward_kernels": b2[1],
    }


def main() -> None:
    import torch
    import transformers
    from transformers.models.gemma2.modeling_gemma2 import eager_attention_forward as gemma2
    from transformers.models.gpt2.modeling_gpt2 import eager_attention_forward as gpt2
    from transformers.models.gpt_oss.modeling_gpt_oss import eager_attention_forward as gpt_oss
    from transformers.models.llama.modeling_llama import eager_attention_forward as llama

    warnings.filterwarnings("ignore")

    class Module(torch.nn.Module):
        num_key_value_groups = 1

    module = Module().train()
    sinks = Module().train()
    sinks.sinks = torch.nn.Parameter(torch.zeros(HEADS, dtype=torch.bfloat16))
    scaling = HEAD_DIM**-0.5
    out = {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "heads": HEADS,
        "llama": per_score(lambda q, k, v, mask: llama(module, q, k, v, mask, scaling)[0]),
        "gpt2": per_score(lambda q, k, v, mask: gpt2(module, q, k, v, mask, scaling)[0]),
        "gpt_oss_sinks": per_score(lambda q, k, v, mask: gpt_oss(sinks, q, k, v, mask, scaling)[0]),
        "gemma2_softcap": per_score(
            lambda q, k, v, mask: gemma2(module, q, k, v, mask, scaling=scaling, softcap=50.0)[0]
        ),
    }
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
