#!/usr/bin/env python3
"""What autograd keeps of each of transformers' MLP activations in eager PyTorch, and what each runs: writes
resolved/eager-activations.json.

    python eager_activations_with_transformers.py > resolved/eager-activations.json

Needs torch and transformers (not dpcost's dependencies; run with transformers 5.25.0 and torch 2.13.0 CPU). For every
name in transformers.activations.ACT2CLS, runs ACT2FN[name] in training mode on a bf16 tensor x (itself the output of an
op, as a matmul's output is) under torch.autograd.graph.saved_tensors_hooks and records, once per storage: whether x is
kept, whether the output is kept, and the bytes per element of x of everything else kept. Then what it runs, forward and
backward (the backward of a gradient of y), under a TorchDispatchMode: the aten kernels that move data (views such as
detach left out) and the bytes they read and write, per element (each input read once, each output written once;
one-element tensors launch a kernel but their bytes are left out; the backward through torch.autograd.grad, so no
gradient is accumulated into a leaf). BLOOM's own GELU (BloomGelu, a torch.autograd.Function) is measured beside them as
bloom_gelu. Then GPT-2's MLP whole (GPT2MLP, gelu_new, resid_pdrop 0) in bf16: the bytes per token it keeps less its
input, in units of its width. Then the gated MLPs whose halves transformers clamps (swiglu_limit): each experts class's
_apply_gate on a bf16 gate_up tensor (the grouped matmul's output, both halves, 2 x width), beside an unclamped
SwiGLU's F.silu(gate) * up on the same chunked halves, per element of the width: whether gate_up is kept, what else is
kept besides the output (which the down projection keeps), and what the forward and backward run. Then Llama 4's MoE
block (Llama4TextMoe, which runs every expert on every token) in bf16: the bytes per token its routed experts keep (the
saved tensors with a row per expert and token), and all it keeps, its input's 2 x hidden included.
tests/test_eager_activations.py holds dpcost/engine/activations.py's EAGER_ACTIVATIONS and EAGER_GATE_CLAMPS, and its
eager account of an MLP, to these.
"""

from __future__ import annotations

import json
import sys
import warnings
from typing import Any

# no kernel: views (torch's own tag where the op has one) and allocations
NO_KERNEL = {"detach", "view", "alias", "_unsafe_view", "expand", "t", "transpose", "empty", "empty_like"}


def traffic(run: Any, elements: int) -> tuple[float, int]:
    """Bytes per element the aten kernels `run()` dispatches read and write, and how many it launches."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    def size(value: Any) -> int:
        tensors = value if isinstance(value, list | tuple) else [value]
        return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor) and t.numel() > 1)

    moved = [0, 0]

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            out = func(*args, **(kwargs or {}))
            if not getattr(func, "is_view", False) and func.__name__.split(".")[0] not in NO_KERNEL:
                moved[0] += size(list(args)) + size(list((kwargs or {}).values())) + size(out)
                moved[1] += 1
            return out

    with Count():
        run()
    return moved[0] / elements, moved[1]


def measure(activation: Any, elements: int, halves: int = 1) -> dict[str, Any]:
    """What autograd keeps of `activation` on a bf16 tensor, and what its forward and backward run, per element of its
    output: `elements` of them, `halves` x as many in (a gated MLP's gate and up)."""
    import torch

    shape = (elements // 64, 64 * halves) if halves > 1 else (elements,)
    x = torch.randn(shape, dtype=torch.bfloat16, requires_grad=True) * 1.0
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        saved[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = activation(x)
    ends = {x.untyped_storage().data_ptr(), y.untyped_storage().data_ptr()}
    other = sum(size for pointer, size in saved.items() if pointer not in ends)
    inputs = torch.randn(shape, dtype=torch.bfloat16, requires_grad=True) * 1.0
    out: list[torch.Tensor] = []
    forward = traffic(lambda: out.append(activation(inputs)), elements)
    gradient = torch.randn_like(out[0])
    backward = traffic(lambda: torch.autograd.grad(out[0], inputs, gradient), elements)
    return {
        "keeps_input": x.untyped_storage().data_ptr() in saved,
        "keeps_output": y.untyped_storage().data_ptr() in saved,
        # whole bytes per element; xIELU also keeps its two scalar parameters' products (a few bytes in all)
        "other_bytes_per_element": round(other / elements, 2),
        "forward_bytes_per_element": round(forward[0], 2),
        "forward_kernels": forward[1],
        "backward_bytes_per_element": round(backward[0], 2),
        "backward_kernels": backward[1],
    }


def clamped_gates() -> dict[str, Any]:
    """Each experts class's _apply_gate (a small instance of it, default limits), by the model_type that defines it,
    and an unclamped SwiGLU as the baseline."""
    import importlib

    import torch.nn.functional as F

    def experts(model_type: str, cls: str, config: str, **sizes: int) -> Any:
        modeling = importlib.import_module(f"transformers.models.{model_type}.modeling_{model_type}")
        configuration = importlib.import_module(f"transformers.models.{model_type}.configuration_{model_type}")
        return getattr(modeling, cls)(getattr(configuration, config)(hidden_size=64, **sizes))._apply_gate

    def swiglu(gate_up: Any) -> Any:
        gate, up = gate_up.chunk(2, dim=-1)
        return F.silu(gate) * up

    return {
        "swiglu": swiglu,
        "gpt_oss": experts("gpt_oss", "GptOssExperts", "GptOssConfig", intermediate_size=64, num_local_experts=2),
        "minimax_m3_vl": experts(
            "minimax_m3_vl", "MiniMaxM3VLExperts", "MiniMaxM3VLTextConfig", intermediate_size=64, num_local_experts=2
        ),
        "deepseek_v4": experts(
            "deepseek_v4", "DeepseekV4Experts", "DeepseekV4Config", moe_intermediate_size=64, n_routed_experts=2
        ),
        "glm5_next": experts(
            "glm5_next", "Glm5NextTextExperts", "Glm5NextTextConfig", moe_intermediate_size=64, n_routed_experts=2
        ),
        "hy_v4": experts("hy_v4", "HYV4Experts", "HYV4Config", moe_intermediate_size=64),
    }


def llama4_moe() -> dict[str, Any]:
    """What Llama4TextMoe keeps per token: its routed experts' tensors (a row per expert and token, but the router
    scores' one column) and all."""
    import torch
    from transformers.models.llama4.configuration_llama4 import Llama4TextConfig
    from transformers.models.llama4.modeling_llama4 import Llama4TextMoe

    hidden, ffn, experts, tokens = 64, 128, 8, 256
    config = Llama4TextConfig(
        hidden_size=hidden, intermediate_size=ffn, num_local_experts=experts, num_experts_per_tok=1
    )
    moe = Llama4TextMoe(config).to(torch.bfloat16).train()
    weights = {p.untyped_storage().data_ptr() for p in moe.parameters()}
    saved: dict[int, tuple[int, int]] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        if t.untyped_storage().data_ptr() not in weights:
            saved[t.untyped_storage().data_ptr()] = (t.untyped_storage().nbytes(), t.shape[0])
        return t

    x = torch.randn(1, tokens, hidden, dtype=torch.bfloat16, requires_grad=True) * 1.0
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        moe(x)
    routed = sum(size for size, rows in saved.values() if rows in (experts, experts * tokens) and size > tokens * 32)
    return {
        "hidden": hidden,
        "ffn": ffn,
        "experts": experts,
        "top_k": 1,
        "routed_bytes_per_token": routed / tokens,
        "saved_bytes_per_token": sum(size for size, _ in saved.values()) / tokens,
    }


def main() -> None:
    import torch
    import transformers
    from transformers import GPT2Config
    from transformers.activations import ACT2CLS, ACT2FN
    from transformers.models.bloom.modeling_bloom import BloomGelu
    from transformers.models.gpt2.modeling_gpt2 import GPT2MLP

    warnings.filterwarnings("ignore")
    elements = 4096
    activations = {}
    for name in sorted(ACT2CLS):
        try:
            activations[name] = measure(ACT2FN[name], elements)
        except RuntimeError as error:  # prelu's weight is fp32 and refuses a bf16 input
            activations[name] = {"error": str(error).splitlines()[0]}
    activations["bloom_gelu"] = measure(BloomGelu().train(), elements)
    clamped = {name: measure(gate, elements, halves=2) for name, gate in clamped_gates().items()}

    hidden, width, batch, seq = 256, 1024, 2, 64
    mlp = GPT2MLP(width, GPT2Config(n_embd=hidden, resid_pdrop=0.0)).to(torch.bfloat16).train()
    weights = {p.data_ptr() for p in mlp.parameters()}
    x = torch.randn(batch, seq, hidden, dtype=torch.bfloat16, requires_grad=True) * 1.0
    saved_mlp: dict[int, int] = {}

    def pack_mlp(t: torch.Tensor) -> torch.Tensor:
        if t.data_ptr() not in weights:
            saved_mlp[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack_mlp, lambda t: t):
        mlp(x)
    per_token = sum(saved_mlp.values()) / (batch * seq)
    out = {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "activations": activations,
        "gpt2_mlp": {
            "activation": "gelu_new",
            "hidden": hidden,
            "width": width,
            "saved_bytes_per_token_without_input_per_width": (per_token - 2 * hidden) / width,
        },
        "clamped_gates": clamped,
        "llama4_moe": llama4_moe(),
    }
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
