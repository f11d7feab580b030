#!/usr/bin/env python3
"""The sliding-window and chunked attention layers transformers builds from each config.json here.

    python local_attention_with_transformers.py > resolved/local-attention.json

Needs transformers (not a dpcost dependency; written with transformers 5.24.0, no torch needed: only the config
classes run). Each file is read by AutoConfig.for_model, whose config class fills in what the file leaves out
(sliding_window, layer_types) as its __post_init__ does. A layer attends locally where the resolved layer_types
says sliding_attention or chunked_attention; GPT-Neo's where attention_layers says local (window_size); Mistral,
Mixtral, Phi-3, PhiMoE, StarCoder2, Ministral 3 and Qwen3-MoE have no layer_types and pass config.sliding_window
to every layer (their modeling files), so every layer where it is set. Files whose config class needs remote code
are listed with the error.
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


def main() -> None:
    warnings.filterwarnings("ignore")
    import transformers

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
