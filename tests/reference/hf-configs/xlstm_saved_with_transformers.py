#!/usr/bin/env python3
"""What autograd keeps of one xLSTM mLSTM layer, at several shapes: writes resolved/xlstm-saved.json.

    python xlstm_saved_with_transformers.py > resolved/xlstm-saved.json

Needs torch and transformers (not dpcost's dependencies; run with transformers 5.25.0 and torch 2.14.1 CPU, without
the xlstm package, so that transformers' own classes and its native chunkwise kernel run, mlstm_chunkwise_native_
autograd, as they do for a model trained through transformers). Builds xLSTMLayer (modeling_xlstm.py) in bf16 with
mode "train" and runs its forward under torch.autograd.graph.saved_tensors_hooks, counting the storage of every
tensor saved for the backward that is not a parameter, once per storage: bytes per token, with the layer's input
(the norm's output) among them. tests/test_xlstm.py holds dpcost's account of the layer to it.
"""

from __future__ import annotations

import json
import sys
import warnings

# hidden, heads, chunk_size, qk_dim_factor, v_dim_factor, sequence length (batch 2)
SHAPES = [(256, 4, 16, 0.5, 1.0, 64), (256, 4, 32, 0.5, 1.0, 64), (512, 4, 16, 0.5, 1.0, 64),
          (256, 8, 16, 0.5, 1.0, 64), (256, 4, 16, 0.25, 1.0, 64), (256, 4, 16, 0.5, 0.5, 64),
          (384, 2, 16, 0.5, 1.0, 64), (256, 4, 8, 0.5, 1.0, 64), (256, 4, 16, 1.0, 1.0, 64),
          (256, 4, 16, 0.5, 1.0, 128), (256, 4, 64, 0.5, 1.0, 128), (512, 8, 32, 0.5, 0.75, 128)]  # fmt: skip


def main() -> None:
    import torch
    import transformers
    from transformers import xLSTMConfig
    from transformers.models.xlstm import modeling_xlstm

    warnings.filterwarnings("ignore")
    batch = 2
    out = []
    for hidden, heads, chunk, qk_factor, v_factor, seq in SHAPES:
        config = xLSTMConfig(
            hidden_size=hidden, num_heads=heads, num_hidden_layers=1, vocab_size=100, chunk_size=chunk, mode="train",
            qk_dim_factor=qk_factor, v_dim_factor=v_factor,
        )  # fmt: skip
        layer = modeling_xlstm.xLSTMLayer(config).to(torch.bfloat16).train()
        weights = {p.data_ptr() for p in layer.parameters()}
        x = torch.randn(batch, seq, hidden, dtype=torch.bfloat16, requires_grad=True)
        saved: dict[int, torch.Tensor] = {}

        def pack(t: torch.Tensor, weights: set[int] = weights, saved: dict[int, torch.Tensor] = saved) -> torch.Tensor:
            if t.data_ptr() not in weights:
                saved.setdefault(t.untyped_storage().data_ptr(), t)
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            layer(x)
        total = sum(t.untyped_storage().nbytes() for t in saved.values())
        out.append({"hidden_size": hidden, "num_heads": heads, "chunk_size": chunk, "qk_dim_factor": qk_factor,
                    "v_dim_factor": v_factor, "seq": seq, "saved_bytes_per_token": total / (batch * seq)})  # fmt: skip
    json.dump({"transformers": transformers.__version__, "batch": batch, "layers": out}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
