#!/usr/bin/env python3
"""What transformers' eager attention keeps per attention score, family by family: writes
resolved/eager-attention.json.

    python eager_attention_with_transformers.py $(python -c \
        'from dpcost.hf_config import SUPPORTED_MODEL_TYPES as S; print(*S)') gemma2:no-softcap \
        > resolved/eager-attention.json

(the family list from dpcost's venv). Needs torch and transformers (not dpcost's dependencies; run with transformers
5.25.0 and torch 2.13.0 CPU). For each model_type, builds its class's default config (AutoConfig.for_model) made
small (hidden 64, 2 layers, 4 heads of 16, vocab 128) with every attention dropout 0, as AutoModelForCausalLM (the
encoders without a causal-LM class as AutoModelForMaskedLM) with
attn_implementation "eager" in bf16, runs a training forward at 32, 64, 128 and 256 tokens under
torch.autograd.graph.saved_tensors_hooks, recording the storage of every non-parameter tensor saved while a module
whose class name ends in "Attention" runs (once per storage), and solves bytes = c + a x tokens + b x tokens^2 through
the first three and the last three: b over the attention modules that ran is the bytes a token pair (a query and a
key) over a layer's heads (a module's run: a shared layer counts at each run), and over the config's query heads
the bytes per score; the two solutions agree where the
growth is quadratic. Per-layer lists of the class's default (layer_types, ...) are cut to the two layers.
`gemma2:no-softcap` is Gemma 2 with attn_logit_softcapping null. A family whose default config does not build this
way is recorded with its error. Each entry keeps the config it measured, which tests/test_eager_attention.py reads
with dpcost and holds its count to.
"""

from __future__ import annotations

import json
import sys
import warnings
from typing import Any

SMALL = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4,
         "head_dim": 16, "intermediate_size": 128, "vocab_size": 128}  # fmt: skip
DROPOUTS = ("attention_dropout", "attn_pdrop", "attention_probs_dropout_prob", "attn_dropout")
VARIANTS = {"no-softcap": {"attn_logit_softcapping": None}}
MASKED_LM = {"distilbert", "mpnet", "modernbert", "esm", "albert"}  # no causal-LM class: built as masked LMs


def saved_by_attention(model: Any, tokens: int) -> tuple[int, int]:
    """Bytes of the non-parameter tensors saved while an attention module runs, once per storage, and how many
    times the innermost attention modules (BERT's BertSelfAttention inside BertAttention) ran: ALBERT's and Dory's
    shared layers run one module more than once."""
    import torch

    weights = {p.data_ptr() for p in model.parameters()}
    saved: dict[int, int] = {}
    depth = [0]
    ran = [0]

    def pack(t: torch.Tensor) -> torch.Tensor:
        if depth[0] and t.data_ptr() not in weights:
            saved[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    def named_attention(m: Any) -> bool:
        return type(m).__name__.endswith("Attention")

    attention = [m for m in model.modules() if named_attention(m)]
    innermost = {id(m) for m in attention if not any(named_attention(c) for c in m.modules() if c is not m)}

    def enter(m: Any, *_: Any) -> None:
        depth[0] += 1
        ran[0] += id(m) in innermost

    def leave(m: Any, *_: Any) -> None:
        depth[0] -= 1

    hooks = [m.register_forward_pre_hook(enter) for m in attention]
    hooks += [m.register_forward_hook(leave) for m in attention]
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(input_ids=torch.randint(1, 100, (1, tokens)), use_cache=False)
    for hook in hooks:
        hook.remove()
    return sum(saved.values()), ran[0]


def quadratic(points: list[tuple[int, int]]) -> float:
    """b in bytes = c + a x tokens + b x tokens^2 through three (tokens, bytes) points (divided differences)."""
    (x0, y0), (x1, y1), (x2, y2) = points
    return ((y2 - y1) / (x2 - x1) - (y1 - y0) / (x1 - x0)) / (x2 - x0)


def measure(family: str) -> dict[str, Any]:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM

    model_type, _, variant = family.partition(":")
    config = AutoConfig.for_model(model_type)
    text = config.get_text_config()
    layers = getattr(text, "num_hidden_layers", None)
    for key, value in {**SMALL, **VARIANTS.get(variant, {})}.items():
        if hasattr(text, key):
            setattr(text, key, value)
    for key, value in vars(text).items():  # per-layer lists (layer_types, ...) cut to the layers kept
        if isinstance(value, list) and layers and len(value) == layers:
            setattr(text, key, value[: SMALL["num_hidden_layers"]])
    for key in DROPOUTS:
        if isinstance(getattr(text, key, None), float):
            setattr(text, key, 0.0)
    if model_type in MASKED_LM and getattr(text, "pad_token_id", 0) is None:  # ESM's embeddings mask by it
        text.pad_token_id = 1
    for key in ("pad_token_id", "bos_token_id", "eos_token_id"):
        if isinstance(getattr(text, key, None), int) and getattr(text, key) >= SMALL["vocab_size"]:
            setattr(text, key, 0)
    auto = AutoModelForMaskedLM if model_type in MASKED_LM else AutoModelForCausalLM
    model = auto.from_config(config, attn_implementation="eager").to(torch.bfloat16).train()
    runs = [(n, *saved_by_attention(model, n)) for n in (32, 64, 128, 256)]
    layers_run = runs[-1][2]
    points = [(n, size) for n, size, _ in runs]
    return {
        "config": config.to_dict(),
        "attention_runs": layers_run,
        # bytes a token pair, in one attention layer, over all its heads; and over the config's query heads
        "bytes_per_token_pair": round(quadratic(points[1:]) / layers_run, 3),
        "check": round(quadratic(points[:3]) / layers_run, 3),
        "bytes_per_score": round(quadratic(points[1:]) / layers_run / text.num_attention_heads, 3),
    }


def main() -> None:
    import torch
    import transformers

    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    families: dict[str, Any] = {}
    for family in sys.argv[1:]:
        try:
            families[family] = measure(family)
        except Exception as error:  # a class default that does not build small is recorded, not fatal
            families[family] = {"error": f"{type(error).__name__}: {str(error).splitlines()[0][:160]}"}
    out = {"transformers": transformers.__version__, "torch": torch.__version__, "families": families}
    json.dump(out, sys.stdout, indent=1, default=str)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
