#!/usr/bin/env python3
"""What a decoder layer keeps under torch.autocast with fp32 weights (PyTorch AMP, as DDP and Hugging Face's Trainer
with bf16=True run it) against plain bf16, and which linear layers read each norm: writes
resolved/autocast-activations.json.

    python autocast_activations_with_transformers.py > resolved/autocast-activations.json

Needs torch and transformers (not dpcost's dependencies; run with transformers 5.25.0 and torch 2.13.0 CPU).

- "layers": for each family in BYTES, its class defaults made small (hidden 256, intermediate 688, 4 heads of 64, every
  dropout 0, SDPA) as AutoModelForCausalLM, run in training mode on 1 and 2 layers and 128 and 256 tokens, under
  torch.autocast("cpu", dtype=torch.bfloat16) on fp32 weights and again in plain bf16, with saved-tensor hooks (each
  storage once, the parameters left out). The second layer's bytes per token, per unit of hidden: what one layer
  keeps, without the embedding, the final norm, the head or tables computed once per model (rotary's). CPU autocast
  casts linear, matmul and SDPA to bf16 as CUDA's does. CUDA's fp32 list has layer_norm, rms_norm, pow and softmax,
  CPU's none of them, which leaves the pre-norms alone (their inputs are fp32 already); what CUDA runs in fp32
  besides, those ops on 16-bit tensors (gelu_new's pow, a LayerNorm over bf16 queries), these CPU runs do not show.
- "llama_checkpointed_layer_bytes_per_token_per_hidden": the same for Llama with transformers' gradient
  checkpointing of every layer: what a checkpointed layer keeps, its input.
- "readers": for every family with a causal-LM class whose defaults build small, the linear layers (F.linear,
  addmm) of its first layer whose input is the output of one of that layer's norms, by norm, in bf16 (each family in
  its own process). Under autocast each of them keeps its own 16-bit cast of that (fp32) output. A family whose
  defaults do not build small is recorded with its error.

tests/test_autocast_activations.py holds dpcost/engine/activations.py's autocast account (_norm, _attention_readers,
_mlp_readers) and hf_config's fused projections to it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

HIDDEN, FFN, HEADS, SHORT, LONG = 256, 688, 4, 128, 256
SMALL = {"hidden_size": HIDDEN, "intermediate_size": FFN, "num_attention_heads": HEADS, "num_key_value_heads": HEADS,
         "vocab_size": 128, "n_embd": HIDDEN, "n_head": HEADS, "n_inner": FFN, "max_position_embeddings": 1024,
         "n_positions": 1024}  # fmt: skip
LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers")
BYTES = ("llama", "mistral", "qwen2", "qwen3", "gemma", "stablelm", "starcoder2", "gpt2", "phi", "phi3", "glm4",
         "gpt_neox", "gptj", "falcon", "olmo2")  # fmt: skip


def small_config(family: str, layers: int) -> Any:
    from transformers import AutoConfig

    config = AutoConfig.for_model(family)
    for key, value in SMALL.items():
        if hasattr(config, key):
            setattr(config, key, value)
    for key in LAYER_KEYS:
        if hasattr(config, key):
            setattr(config, key, layers)
    if getattr(config, "layer_types", None) is not None:
        config.layer_types = config.layer_types[:1] * layers
    for key, value in list(config.to_dict().items()):
        if ("dropout" in key or "pdrop" in key) and isinstance(value, float):
            setattr(config, key, 0.0)
    for key in ("pad_token_id", "bos_token_id", "eos_token_id"):
        if isinstance(getattr(config, key, None), int) and getattr(config, key) >= SMALL["vocab_size"]:
            setattr(config, key, 0)
    return config


def build(family: str, layers: int, config: Any = None) -> Any:
    """The family's causal LM on its small config (or on `config`), with SDPA where it has it."""
    from transformers import AutoModelForCausalLM

    config = config or small_config(family, layers)
    try:
        return AutoModelForCausalLM.from_config(config, attn_implementation="sdpa")
    except ValueError:  # a family without SDPA (BLOOM)
        return AutoModelForCausalLM.from_config(config, attn_implementation="eager")


def saved_bytes(
    family: str, layers: int, tokens: int, autocast: bool, checkpointed: bool = False, config: Any = None
) -> int:
    """Bytes autograd keeps of the model's forward over `tokens` tokens, its parameters left out; `checkpointed`:
    under transformers' gradient checkpointing of every layer; `config`: built on it, not the small one."""
    import torch

    torch.manual_seed(0)
    model = build(family, layers, config).to(torch.float32 if autocast else torch.bfloat16).train()
    if checkpointed:
        model.gradient_checkpointing_enable()
    weights = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        if t.untyped_storage().data_ptr() not in weights:
            saved[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    ids = torch.randint(0, SMALL["vocab_size"], (1, tokens))
    hooks = torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t)
    with hooks, torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        model(input_ids=ids, use_cache=False)
    return sum(saved.values())


def layer_bytes(family: str, autocast: bool, checkpointed: bool = False) -> float:
    """One layer's kept bytes per token per unit of hidden: the second layer's, between two sequence lengths."""
    v = {(n, t): saved_bytes(family, n, t, autocast, checkpointed) for n in (1, 2) for t in (SHORT, LONG)}
    return ((v[2, LONG] - v[2, SHORT]) - (v[1, LONG] - v[1, SHORT])) / (LONG - SHORT) / HIDDEN


def readers(family: str) -> dict[str, list[str]]:
    """The linear layers of the first layer whose input is one of its norms' outputs, by norm: each F.linear call
    (nn.Linear's, and routers' on a bare parameter) or addmm (Conv1D's) whose input is that output or a view of it,
    named by the module that ran it."""
    import torch
    from torch.overrides import TorchFunctionMode

    model = build(family, 1).to(torch.bfloat16).train()
    layer = next(
        m[0]
        for name, m in model.named_modules()
        if isinstance(m, torch.nn.ModuleList) and len(m) == 1 and name.endswith(("layers", "h", "blocks", "layer"))
    )
    outputs: dict[int, str] = {}
    found: dict[str, list[str]] = {}
    running: list[str] = []

    def norm_hook(name: str) -> Any:
        def hook(module: Any, args: Any, out: Any) -> None:
            if isinstance(out, torch.Tensor):
                outputs[out.data_ptr()] = name

        return hook

    def enter(name: str) -> Any:
        return lambda module, args: running.append(name)

    def leave(module: Any, args: Any, out: Any) -> None:
        running.pop()

    class Linears(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            x = args[1] if func is torch.addmm else args[0] if args else None  # addmm(bias, x, w)
            linear = func in (torch.nn.functional.linear, torch.addmm)
            if linear and isinstance(x, torch.Tensor) and x.data_ptr() in outputs:
                found.setdefault(outputs[x.data_ptr()], []).append(running[-1] if running else "?")
            return func(*args, **(kwargs or {}))

    for name, module in layer.named_modules():
        if "norm" in type(module).__name__.lower() and name and "." not in name:
            module.register_forward_hook(norm_hook(name))
        if name:
            module.register_forward_pre_hook(enter(name))
            module.register_forward_hook(leave)
    with Linears():
        model(input_ids=torch.randint(0, SMALL["vocab_size"], (1, 16)), use_cache=False)
    return found


def each_family(script: str, *flags: str, families: Sequence[str] = ()) -> dict[str, Any]:
    """`python script *flags FAMILY` for every family with a causal-LM class (or each of `families`), each in its
    own process, two at a time: the JSON each printed, or {"error": its last line}."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    def one(family: str) -> dict[str, Any]:
        try:
            run = [sys.executable, script, *flags, family]
            done = subprocess.run(run, capture_output=True, text=True, timeout=180)
        except subprocess.TimeoutExpired:
            return {"error": "did not build and run within 180 s"}
        if done.returncode == 0:
            found: dict[str, Any] = json.loads(done.stdout)
            print(family, found, file=sys.stderr, flush=True)
            return found
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]  # a crash leaves none
        return {"error": last[:160]}

    families = families or sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)
    with ThreadPoolExecutor(2) as pool:
        return dict(zip(families, pool.map(one, families), strict=True))


def family_sweep(script: str, measure: Callable[[str], dict[str, Any]], families: Sequence[str] = ()) -> None:
    """A per-family harness's main: given a family, `measure` it in this process and print its JSON; given none, run
    every family (or each of `families`) in its own process (each_family) and print them all, with the versions
    measured on."""
    import torch
    import transformers

    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    if sys.argv[1:]:
        json.dump(measure(sys.argv[1]), sys.stdout)
        return
    found = each_family(script, families=families)
    out = {"transformers": transformers.__version__, "torch": torch.__version__, "families": found}
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


def main() -> None:
    import torch
    import transformers

    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    if sys.argv[1:2] == ["--readers"]:  # one family, in this process
        json.dump(readers(sys.argv[2]), sys.stdout)
        return
    checkpointed = {"bf16": layer_bytes("llama", False, True), "autocast": layer_bytes("llama", True, True)}
    if sys.argv[1:2] == ["--checkpointed"]:  # that part alone
        json.dump(checkpointed, sys.stdout)
        return
    layers = {}
    for family in BYTES:
        layers[family] = {
            "config": small_config(family, 2).to_dict(),
            "bf16": layer_bytes(family, False),
            "autocast": layer_bytes(family, True),
        }
        print(family, layers[family]["bf16"], layers[family]["autocast"], file=sys.stderr, flush=True)
    # readers(family) in its own process; an error kept as the "error: ..." string resolved/ has always held
    found = {
        family: f"error: {got['error']}" if isinstance(got.get("error"), str) else got
        for family, got in each_family(__file__, "--readers").items()
    }
    out = {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "layers_bytes_per_token_per_hidden": layers,
        "llama_checkpointed_layer_bytes_per_token_per_hidden": checkpointed,
        "readers": found,
    }
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
