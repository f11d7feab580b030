#!/usr/bin/env python3
"""What clamping the query, key and value projections (clip_qkv) keeps, for the families whose transformers code
does it: writes resolved/clip-qkv.json.

    python clip_qkv_with_transformers.py > resolved/clip-qkv.json

Needs torch and transformers (not dpcost's dependencies; run with transformers 5.25.0 and torch 2.13.0 CPU).

For DBRX, MPT, OLMo and OLMoE (the modeling files that read clip_qkv), one bf16 forward in training mode over 64
tokens of a one-layer model on autocast_activations_with_transformers' small config (hidden 256, 4 heads; 2
key/value heads where the config has num_key_value_heads, DBRX's attn_config keeping its one) with clip_qkv 8, each
family in its own process: the bytes of the distinct storages the clamps' backward nodes keep (`_saved_self` of
every Clamp node in the autograd graph) per token per unit of hidden, and, where the family also builds without
clip_qkv, the bytes the whole forward keeps beyond that run's (saved_bytes): both must agree, or the clamp changed
what else is kept; and the config measured. DBRX and MPT clamp the fused projection's output out
of place, and the clamp keeps its input; OLMo and OLMoE clamp each projection's output in place (clamp_), and
autograd keeps a copy of each as it was (the in-place op's original self). DBRX's default sections do not follow
the small config: its attn_config has no rope_theta, which its attention reads (set to dbrx-instruct's 500,000),
and its ffn_config keeps hidden_size 2048 and ffn_hidden_size 3584 (set to the small config's hidden and FFN
widths).

tests/test_clip_qkv.py holds dpcost's eager account (activations._attention) to it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from autocast_activations_with_transformers import FFN, HIDDEN, SMALL, build, family_sweep, saved_bytes, small_config

TOKENS = 64
CLIP = 8.0
FAMILIES = ("dbrx", "mpt", "olmo", "olmoe")


def clipped_config(family: str, clip: float | None) -> Any:
    """The family's small one-layer config with clip_qkv set (on attn_config where it has one)."""
    config = small_config(family, 1)
    if family != "dbrx" and getattr(config, "num_key_value_heads", None) is not None:  # DBRX's: attn_config's
        config.num_key_value_heads = 2
    section = getattr(config, "attn_config", None) or config
    section.clip_qkv = clip
    if family == "dbrx":
        if getattr(section, "rope_theta", None) is None:
            section.rope_theta = 500000
        config.ffn_config.hidden_size, config.ffn_config.ffn_hidden_size = HIDDEN, FFN
    return config


def kept_by_clamps(family: str) -> float:
    """The bytes the Clamp nodes' saved inputs hold, per token per unit of hidden."""
    import torch

    torch.manual_seed(0)
    model = build(family, 1, clipped_config(family, CLIP)).to(torch.bfloat16).train()
    logits = model(input_ids=torch.randint(0, SMALL["vocab_size"], (1, TOKENS)), use_cache=False).logits
    storages: dict[int, int] = {}
    seen, todo = set(), [logits.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if node.name().startswith("Clamp"):
            saved = node._saved_self
            storages[saved.untyped_storage().data_ptr()] = saved.untyped_storage().nbytes()
        todo += [child for child, _ in node.next_functions]
    return sum(storages.values()) / TOKENS / HIDDEN


def clamp_bytes(family: str) -> dict[str, Any]:
    found: dict[str, Any] = {"kept_by_clamps": kept_by_clamps(family)}
    try:
        kept = [saved_bytes(family, 1, TOKENS, False, config=clipped_config(family, c)) for c in (CLIP, None)]
        found["kept_beyond_unclipped"] = (kept[0] - kept[1]) / TOKENS / HIDDEN
    except RuntimeError as error:  # DBRX's clamp takes no None bounds (transformers 5.25.0): it always clamps
        found["kept_beyond_unclipped"] = {"error": str(error).splitlines()[0][:160]}
    return found | {"config": clipped_config(family, CLIP).to_dict()}


if __name__ == "__main__":
    family_sweep(__file__, clamp_bytes, FAMILIES)
