#!/usr/bin/env python3
"""The sliding-window and chunked attention layers transformers builds from each config.json here.

    python local_attention_with_transformers.py > resolved/local-attention.json
    python local_attention_with_transformers.py --synthetic > resolved/local-attention-synthetic.json

Needs transformers (not a dpcost dependency; written with transformers 5.24.0, no torch needed: only the config
classes run). Each file is read by AutoConfig.for_model, whose config class fills in what the file leaves out
(sliding_window, layer_types) as its __post_init__ does. A layer attends locally where the resolved layer_types
says sliding_attention or chunked_attention; GPT-Neo's where attention_layers says local (window_size); Mistral,
Mixtral, Phi-3, PhiMoE, StarCoder2, Ministral 3 and Qwen3-MoE have no layer_types and pass config.sliding_window
to every layer (their modeling files), so every layer where it is set. Files whose config class needs remote code
are listed with the error. --synthetic does the same for small configs that switch what the real files leave
alone (use_sliding_window, max_window_layers, sliding_window_pattern, a window set or null or absent), one per
family rule dpcost reads, and keeps each config beside transformers' answer.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

EVERY_LAYER = {"mistral", "mixtral", "phi3", "phimoe", "starcoder2", "qwen3_moe", "ministral3"}


def local_layers(path: Path) -> dict[str, object] | None:
    from transformers import AutoConfig

    config = AutoConfig.for_model(**json.loads(path.read_text()))
    text = config.get_text_config()
    layers = getattr(text, "num_hidden_layers", None) or text.num_layers
    types = getattr(text, "layer_types", None) or []
    window = getattr(text, "sliding_window", None)
    if text.model_type == "gpt_neo":
        return {"kind": "sliding", "size": text.window_size,
                "layers": [i for i, t in enumerate(text.attention_layers) if t == "local"]}  # fmt: skip
    local = [i for i, t in enumerate(types) if t in ("sliding_attention", "chunked_attention")]
    if local:
        chunked = "chunked_attention" in types
        return {"kind": "chunked" if chunked else "sliding",
                "size": text.attention_chunk_size if chunked else window, "layers": local}  # fmt: skip
    if text.model_type in EVERY_LAYER and window:
        return {"kind": "sliding", "size": window, "layers": list(range(layers))}
    return None


SHAPE = {"hidden_size": 256, "num_hidden_layers": 12, "num_attention_heads": 4, "num_key_value_heads": 2,
         "intermediate_size": 512, "vocab_size": 1000}  # fmt: skip


def synthetic_configs() -> list[dict[str, object]]:
    """Small configs, one per combination of the keys each family's rule reads."""
    cases: list[dict[str, object]] = []
    for family in ("qwen2", "qwen3", "qwen2_moe", "qwen3_moe"):
        extra: dict[str, object] = {"head_dim": 64} if family.startswith("qwen3") else {}
        if "moe" in family:
            extra |= {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 128}
        if family == "qwen2_moe":
            extra["shared_expert_intermediate_size"] = 128
        for use in (True, False):
            for first in (0, 5, 28):
                for window in (None, 512):
                    case = {**SHAPE, "model_type": family, **extra, "use_sliding_window": use,
                            "max_window_layers": first}  # fmt: skip
                    cases.append(case | ({"sliding_window": window} if window else {}))
    for family in ("mistral", "mixtral", "phi3", "starcoder2"):
        extra = {"num_local_experts": 4, "num_experts_per_tok": 2} if family == "mixtral" else {}
        cases += [{**SHAPE, "model_type": family, **extra, **window}
                  for window in ({"sliding_window": None}, {}, {"sliding_window": 300})]  # fmt: skip
    for family in ("gemma2", "gpt_oss", "olmo3"):
        extra = {"head_dim": 64} | ({"num_local_experts": 4, "num_experts_per_tok": 2} if family == "gpt_oss" else {})
        cases += [
            {**SHAPE, "model_type": family, **extra},
            {**SHAPE, "model_type": family, **extra, "sliding_window": 100},
        ]
    for family, patterns in (("gemma3_text", (None, 3, 6)), ("cohere2", (None, 2, 4)), ("exaone4", (None, 3))):
        extra = {} if family == "cohere2" else {"head_dim": 64}
        cases += [{**SHAPE, "model_type": family, **extra, **({"sliding_window_pattern": p} if p else {})}
                  for p in patterns]  # fmt: skip
    return cases


def resolved(config_dict: dict[str, object]) -> dict[str, object] | None:
    from transformers import AutoConfig

    config = AutoConfig.for_model(**config_dict)
    types = getattr(config, "layer_types", None) or []
    window = getattr(config, "sliding_window", None)
    local = [i for i, t in enumerate(types) if t == "sliding_attention"]
    if local and window:
        return {"kind": "sliding", "size": window, "layers": local}
    if config.model_type in EVERY_LAYER and window:
        return {"kind": "sliding", "size": window, "layers": list(range(config.num_hidden_layers))}
    return None


def main() -> None:
    warnings.filterwarnings("ignore")
    import transformers

    if "--synthetic" in sys.argv[1:]:
        pairs = [{"config": c, "transformers": resolved(c)} for c in synthetic_configs()]
        json.dump({"transformers": transformers.__version__, "cases": pairs}, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return
    out: dict[str, object] = {"transformers": transformers.__version__, "files": {}}
    for path in sorted(Path(__file__).parent.glob("*.json")):
        try:
            out["files"][path.name] = local_layers(path)  # type: ignore[index]
        except Exception as error:  # remote-code families: say so and go on
            out["files"][path.name] = {"not read": f"{type(error).__name__}"}  # type: ignore[index]
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
