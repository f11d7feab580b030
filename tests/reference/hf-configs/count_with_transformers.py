#!/usr/bin/env python3
"""The parameters transformers builds from a config.json: the `transformers` exact counts of README.md.

    python count_with_transformers.py FILE [FILE ...] [--parts] [--text]

Needs torch and transformers (not dpcost's dependencies; used with transformers 5.24.0 and torch 2.13.0 CPU). The
model is built on the meta device, so no weights are allocated: its ForCausalLM class where the family has one,
else its ForConditionalGeneration class (whose vision or audio tower is then counted too: --parts shows them
apart; --text builds the text model alone from a wrapper's text_config). quantization_config is dropped. It
counts parameters only: buffers a checkpoint may also store (routing score biases, rotary frequencies) are not
among them.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path


def built(path: str, text: bool = False):  # type: ignore[no-untyped-def]
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    cfg = json.loads(Path(path).read_text())
    cfg.pop("quantization_config", None)
    if text and isinstance(cfg.get("text_config"), dict):
        cfg = cfg["text_config"]
    config = CONFIG_MAPPING[cfg["model_type"]](**{k: v for k, v in cfg.items() if k not in ("model_type", "auto_map")})
    with torch.device("meta"):
        try:
            return AutoModelForCausalLM.from_config(config)
        except ValueError:
            return AutoModelForImageTextToText.from_config(config)


def main(argv: list[str]) -> None:
    warnings.filterwarnings("ignore")
    parts, text = "--parts" in argv, "--text" in argv
    for path in (a for a in argv if a not in ("--parts", "--text")):
        model = built(path, text)
        print(f"{path}\t{type(model).__name__}\t{sum(p.numel() for p in model.parameters())}")
        if parts:
            groups: dict[str, int] = {}
            for name, p in model.named_parameters():
                key = ".".join(x for x in name.split(".")[:3] if not x.isdigit())
                groups[key] = groups.get(key, 0) + p.numel()
            for key, n in sorted(groups.items()):
                print(f"    {key}\t{n}")


if __name__ == "__main__":
    main(sys.argv[1:])
