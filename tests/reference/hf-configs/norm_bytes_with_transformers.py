#!/usr/bin/env python3
"""What each family's first pre-norm keeps, in bytes an element of its input, in bf16: writes
resolved/norm-bytes.json.

    python norm_bytes_with_transformers.py > resolved/norm-bytes.json

Needs torch and transformers (not dpcost's dependencies; run with transformers 5.25.0 and torch 2.13.0 CPU).

For every family with a causal-LM class whose defaults build small (autocast_activations_with_transformers.
small_config), one bf16 forward in training mode over 64 tokens, each family in its own process: the storages autograd
keeps while the first layer's first norm module runs (its input, which the layer's first linear layers read too, and
the norm's own fp32 copies), per element of that input, without the per-token statistics. Llama's RMSNorm keeps its
input's fp32 copy and the 16-bit normalised product the weight multiplies (4 + 2 = 6); Gemma's and OLMo 2's multiply
their weight in fp32 and cast after, keeping an fp32 product (4 + 4 = 8); a LayerNorm keeps its 16-bit input (2).
The norm's module class is recorded beside it. A family that does not build small is recorded with its reason.

tests/test_norm_bytes.py holds dpcost/engine/activations.py's norm_bytes (specs.norm, norm_in_fp32) to it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from autocast_activations_with_transformers import SMALL, build, family_sweep

TOKENS = 64


def norm_bytes(family: str) -> dict[str, Any]:
    """The bytes the first layer's first norm keeps an element of its input, and its class."""
    import torch

    torch.manual_seed(0)
    model = build(family, 1).to(torch.bfloat16).train()
    weights = {p.untyped_storage().data_ptr() for p in model.parameters()}
    layer = next(
        m[0]
        for name, m in model.named_modules()
        if isinstance(m, torch.nn.ModuleList) and len(m) == 1 and name.endswith(("layers", "h", "blocks", "layer"))
    )
    norm = next((m for name, m in layer.named_children() if "norm" in type(m).__name__.lower()), None)
    if norm is None:
        return {"error": "no norm among the first layer's children"}
    kept: dict[int, int] = {}
    state = {"inside": False, "elements": 0}

    def pack(t: torch.Tensor) -> torch.Tensor:
        ptr = t.untyped_storage().data_ptr()
        # a tensor over the tokens, not the statistics (one number a token) nor the weight's own copies (Gemma's 1 + w)
        if state["inside"] and ptr not in weights and TOKENS in t.shape and t.numel() > TOKENS:
            kept[ptr] = t.untyped_storage().nbytes()
        return t

    def enter(module: Any, args: Any) -> None:
        if not state["elements"]:
            state.update(inside=True, elements=args[0].numel())

    def leave(module: Any, args: Any, out: Any) -> None:
        state["inside"] = False

    norm.register_forward_pre_hook(enter)
    norm.register_forward_hook(leave)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(input_ids=torch.randint(0, SMALL["vocab_size"], (1, TOKENS)), use_cache=False)
    # the norm's input: the layer's input, which its readers keep whatever the norm does
    return {"class": type(norm).__name__, "bytes_per_element": sum(kept.values()) / state["elements"]}


if __name__ == "__main__":
    family_sweep(__file__, norm_bytes)
