#!/usr/bin/env python3
"""Whether transformers' SDPA attention reads grouped-query K and V as they are or copied to every query head, family
by family, without and with a padding mask: writes resolved/grouped-kv.json.

    python grouped_kv_with_transformers.py > resolved/grouped-kv.json

Needs torch and transformers (not dpcost's dependencies; run with transformers 5.25.0 and torch 2.13.0 CPU).

For every family with a causal-LM class whose defaults build small (autocast_activations_with_transformers.small_config,
then 2 key/value heads for its 4 query heads where the config has num_key_value_heads; attn_implementation="sdpa"),
one bf16 forward in training mode over 64 tokens, each family in its own process, watching the first layer's first
F.scaled_dot_product_attention call: the heads of its query, and the heads of its key by the distinct elements it
reaches (an expand()ed view reaches its grouped heads only). It runs with no attention mask; with one padded
position; where the config has a sliding window or an attention chunk (`window_key`), with no mask and a window of
32 tokens (transformers keeps a local layer's mask where the window is no longer than the sequence:
masking_utils._ignore_causal_mask_sdpa); and where it has head_dim, with no mask and heads 512 wide.
transformers' sdpa_attention_forward passes K and V grouped (enable_gqa) when there is no mask and their head dims
are equal and at most 256 (integrations/sdpa_attention.py use_gqa_in_sdpa, for CUDA; on CPU the same rule runs),
else copies them out (repeat_kv); a family's own attention code may do either.
A family whose attention is not SDPA or that does not build small is recorded with its reason.

tests/test_grouped_kv.py holds dpcost's `--no-repeat-kv` account (activations._attention) to it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from autocast_activations_with_transformers import SMALL, family_sweep, small_config

TOKENS = 64
KV_HEADS = 2
WINDOW = 32
WIDE_HEAD = 512  # beyond use_gqa_in_sdpa's 256
WINDOW_KEYS = ("sliding_window", "attention_chunk_size")


def grouped_config(family: str) -> Any:
    """The small one-layer config with fewer key/value heads than query heads, where the family has the key."""
    config = small_config(family, 1)
    if getattr(config, "num_key_value_heads", None) is not None:
        config.num_key_value_heads = KV_HEADS
    return config


def global_head_dim(config: Any) -> Any:
    """The config's head_dim, None where it has none or sets it per layer (Gemma 4's)."""
    try:
        return getattr(config, "head_dim", None)
    except Exception:  # transformers' AmbiguousGlobalPerLayerAttributeError
        return None


def window_key(config: Any) -> str | None:
    """The config's sliding-window or chunk size key, where it has one set."""
    return next(
        (key for key in WINDOW_KEYS if isinstance(getattr(config, key, None), int) and getattr(config, key)), None
    )


def heads_into_sdpa(family: str, padded: bool, windowed: bool = False, wide: bool = False) -> dict[str, int] | None:
    """The query's heads and the key's distinct heads at the first SDPA call (None: no call); `windowed`: the
    window or chunk set to 32 tokens; `wide`: head_dim 512."""
    import torch
    from torch.overrides import TorchFunctionMode
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    config = grouped_config(family)
    if windowed:
        setattr(config, window_key(config), WINDOW)
    if wide:
        config.head_dim = WIDE_HEAD
    model = AutoModelForCausalLM.from_config(config, attn_implementation="sdpa").to(torch.bfloat16).train()
    seen: dict[str, int] = {}

    class Watch(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            if func is torch.nn.functional.scaled_dot_product_attention and not seen:
                q, k = args[:2]
                reached = torch.zeros(k.untyped_storage().nbytes() // k.element_size(), dtype=torch.bool)
                reached.as_strided(k.shape, k.stride(), k.storage_offset()).fill_(True)
                per_head = k.shape[0] * k.shape[2] * k.shape[3]
                seen.update(query_heads=int(q.shape[1]), key_heads=int(reached.sum()) // per_head)
            return func(*args, **(kwargs or {}))

    ids = torch.randint(1, SMALL["vocab_size"], (1, TOKENS))
    mask = torch.ones(1, TOKENS, dtype=torch.long)
    if padded:
        mask[0, 0] = 0  # one left-padded position: the causal mask can no longer be left to is_causal
    with Watch():
        model(input_ids=ids, attention_mask=mask if padded else None, use_cache=False)
    return seen or None


def grouped(family: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    config = grouped_config(family)
    key = window_key(config)
    modes = {"without mask": (False, False, False), "with padding mask": (True, False, False)}
    if key is not None:
        modes[f"without mask, {key} {WINDOW}"] = (False, True, False)
    if isinstance(global_head_dim(config), int):
        modes[f"without mask, head_dim {WIDE_HEAD}"] = (False, False, True)
    for mode, (padded, windowed, wide) in modes.items():
        try:
            heads = heads_into_sdpa(family, padded, windowed, wide)
        except Exception as error:  # a family that cannot take a padding mask, say: recorded, not fatal
            found[mode] = {"error": (str(error).splitlines() or [type(error).__name__])[0][:160]}
            continue
        if heads is None:
            return {"error": "no scaled_dot_product_attention call"}
        found[mode] = heads
    return found | {"config": config.to_dict()} | ({"window_key": key} if key else {})


if __name__ == "__main__":
    family_sweep(__file__, grouped)
