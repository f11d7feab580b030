#!/usr/bin/env python3
"""What transformers' SDPA attention keeps besides Q, K, V and one context tensor, family by family: writes
resolved/attention-layout.json.

    python attention_layout_with_transformers.py > resolved/attention-layout.json

Needs torch and transformers (not dpcost's dependencies; run with transformers 5.25.0 and torch 2.13.0 CPU).

For every family with a causal-LM class whose defaults build small (autocast_activations_with_transformers.small_config:
hidden 256, 4 heads, every dropout 0, attn_implementation="sdpa"), one bf16 forward in training mode over 64 tokens,
each family in its own process, watching the first layer's first F.scaled_dot_product_attention call:
- "context_copied": autograd keeps SDPA's output, and the linear layer reading the context (its values, heads side
  by side) reads another storage: a copy. SDPA's kernels lay their
  output out as the query is laid out (the flash kernels allocate it empty_like the query transposed to
  tokens-first). A query made by the rotary's arithmetic on a view of the projection keeps the projection's
  tokens-first layout, and transpose(1, 2).contiguous() then returns the output itself; a query made by torch.cat
  (the partial-rotary path) is heads-first, and the output projection reads a copy: autograd keeps both.
- "value_storage_beyond_qkv": the bytes per token, per unit of hidden, of the storage V is a view of, beyond Q, K and V
  where they share it. A fused QKV projection whose Q and K are rotated into new tensors leaves V a view of the whole
  fused output, which SDPA keeps. Where it is not 0, the small config it was measured on is kept beside it.
A family whose attention is not SDPA (BLOOM's, eager only) or that does not build small is recorded with its reason.

tests/test_attention_layout.py holds dpcost's eager account (activations._attention) to it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from autocast_activations_with_transformers import HIDDEN, SMALL, build, family_sweep, small_config

TOKENS = 64


def layout(family: str) -> dict[str, Any]:
    """The first SDPA call's storages, and whether a linear layer read its output's."""
    import torch
    from torch.overrides import TorchFunctionMode

    torch.manual_seed(0)
    model = build(family, 1).to(torch.bfloat16).train()
    seen: dict[str, Any] = {}
    kept: set[int] = set()

    def storage(t: torch.Tensor) -> int:
        return t.untyped_storage().data_ptr()

    class Watch(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            out = func(*args, **(kwargs or {}))
            if func is torch.nn.functional.scaled_dot_product_attention and "output" not in seen:
                q, k, v = args[:3]
                whole = v.untyped_storage()
                held = torch.zeros(whole.nbytes() // v.element_size(), dtype=torch.bool)
                for t in (q, k, v):  # the elements each view reaches (an expanded K or V reaches one head's)
                    if storage(t) == storage(v):
                        held.as_strided(t.shape, t.stride(), t.storage_offset()).fill_(True)
                beyond = whole.nbytes() - int(held.sum()) * v.element_size()
                flat = out.detach().transpose(1, 2).reshape(-1)
                seen.update(output=storage(out), flat=flat, beyond=beyond / TOKENS / HIDDEN, readers=set())
            elif func in (torch.nn.functional.linear, torch.addmm) and "output" in seen:
                x = args[1] if func is torch.addmm else args[0]
                same = isinstance(x, torch.Tensor) and x.numel() == seen["flat"].numel()
                if same and torch.equal(x.detach().reshape(-1), seen["flat"]):  # the context, as the layer reads it
                    seen["readers"].add(storage(x))
            return out

    def pack(t: torch.Tensor) -> torch.Tensor:
        kept.add(storage(t))
        return t

    with Watch(), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(input_ids=torch.randint(0, SMALL["vocab_size"], (1, TOKENS)), use_cache=False)
    if "output" not in seen:
        return {"error": "no scaled_dot_product_attention call"}
    readers = seen["readers"]
    copied = seen["output"] in kept and bool(readers) and seen["output"] not in readers
    found = {"context_copied": copied, "value_storage_beyond_qkv": seen["beyond"]}
    return found | ({"config": small_config(family, 1).to_dict()} if seen["beyond"] else {})


if __name__ == "__main__":
    family_sweep(__file__, layout)
