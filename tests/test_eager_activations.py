"""The MLP activations transformers runs by name, and what eager PyTorch keeps of each: held to saved-tensor hooks on
transformers 5.25.0 (tests/reference/hf-configs/resolved/eager-activations.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_args

import pytest

from dpcost.catalog import load_model
from dpcost.engine.activations import EAGER_ACTIVATIONS, FUSED_ACTIVATION, EagerActivation, layer_tensors
from dpcost.engine.ops import layer_ops
from dpcost.specs import Activation

HF = Path(__file__).parent / "reference" / "hf-configs"
MEASURED = json.loads((HF / "resolved" / "eager-activations.json").read_text())


def test_every_name_transformers_runs_is_accepted():
    """ACT2CLS's names, but prelu (a module with a weight, which refuses a bf16 input in the measurement)."""
    runnable = {name for name, kept in MEASURED["activations"].items() if "error" not in kept}
    assert set(get_args(Activation)) == runnable
    assert set(EAGER_ACTIVATIONS) == runnable


@pytest.mark.parametrize("name", sorted(EAGER_ACTIVATIONS))
def test_what_each_activation_keeps_and_moves(name):
    measured = MEASURED["activations"][name]
    assert EAGER_ACTIVATIONS[name] == EagerActivation(
        measured["keeps_input"],
        measured["other_bytes_per_element"],
        measured["forward_bytes_per_element"],
        measured["forward_kernels"],
        measured["backward_bytes_per_element"],
        measured["backward_kernels"],
    )


def test_a_fused_kernel_is_what_f_gelu_runs():
    """One kernel each way: the forward reads x and writes y (4 bytes), gelu_backward reads x and the gradient and
    writes the input's gradient (6)."""
    assert EagerActivation(True, 0, 4, 1, 6, 1) == FUSED_ACTIVATION
    assert EAGER_ACTIVATIONS["silu"] == EAGER_ACTIVATIONS["gelu_pytorch_tanh"] == FUSED_ACTIVATION


def _mlp_bytes_per_width(model, kernels: str) -> float:
    """The MLP's saved bytes per token in units of its width: the first matmul's output to the down projection's
    input (not the norm before it, which Megatron's kernels fuse into the MLP, nor the dropout after it)."""
    a = model.architecture
    tensors = layer_tensors(a, moe_layer=False, kernels=kernels).tensors
    inside = [t for t in tensors if t.name.startswith("MLP ") and "norm" not in t.name and "dropout" not in t.name]
    return sum(t.bytes_per_token for t in inside if t.saved) / a.ffn


def test_gpt2_mlp_keeps_what_transformers_keeps():
    """GPT2MLP (gelu_new) in bf16 keeps 10 bytes per element of its width beyond its input: c_fc's output, tanh's
    output, 0.5x, 1 + tanh and the product c_proj reads. A fused GELU would keep 4."""
    measured = MEASURED["gpt2_mlp"]["saved_bytes_per_token_without_input_per_width"]
    gpt2 = load_model(str(HF / "gpt2.json"))
    assert gpt2.architecture.activation == "gelu_new" == MEASURED["gpt2_mlp"]["activation"]
    assert _mlp_bytes_per_width(gpt2, "eager") == measured == 10
    # Megatron's fused bias-GELU and torch.compile's partitioner keep the first matmul's output (and the fused one
    # the GELU's output): Korthikanti's 4 bytes, and 2
    assert _mlp_bytes_per_width(gpt2, "fused") == 4
    assert _mlp_bytes_per_width(gpt2, "compiled") == 2


def test_relu_keeps_only_its_output():
    """nn.ReLU keeps its output, which fc2 reads too: OPT's MLP keeps one tensor of its width, not two."""
    opt = load_model(str(HF / "opt-30b.json"))
    assert opt.architecture.activation == "relu"
    assert _mlp_bytes_per_width(opt, "eager") == 2
    assert _mlp_bytes_per_width(opt, "fused") == 4


@pytest.mark.parametrize(
    ("config", "activation"),
    [
        ({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 100,
          "n_positions": 32}, "gelu_new"),
        ({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 100, "n_positions": 32,
          "activation_function": "quick_gelu"}, "quick_gelu"),
        ({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 100, "n_positions": 32,
          "activation_function": "not_an_activation"}, None),
        ({"model_type": "phi", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
          "intermediate_size": 128, "vocab_size": 100}, "gelu_new"),
        ({"model_type": "gpt_bigcode", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 100,
          "n_positions": 32}, "gelu_pytorch_tanh"),
        ({"model_type": "persimmon", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
          "intermediate_size": 128, "vocab_size": 100}, "relu2"),
        ({"model_type": "falcon", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
          "vocab_size": 100}, "gelu"),
        ({"model_type": "albert", "vocab_size": 100}, "gelu_new"),
        ({"model_type": "esm", "vocab_size": 33, "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
          "intermediate_size": 128, "hidden_act": "gelu", "pad_token_id": 1}, "gelu_python"),
    ],
)  # fmt: skip
def test_activation_read_as_the_modeling_file_runs_it(tmp_path, config, activation):
    """The name under the key each MLP reads (ACT2FN[config.activation_function], [config.hidden_act], ...), the
    class's default when absent; ESM's own erf GELU whatever hidden_act says; a name transformers does not know,
    none (a fused GELU)."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert load_model(str(path)).architecture.activation == activation


def test_gelu_new_runs_its_own_kernels_in_eager_pytorch():
    """GPT-2's gelu_new under eager PyTorch: eight forward kernels moving 36 bytes an element and eleven backward
    moving 56, where F.gelu runs one each way (4 and 6 bytes). The activation op counts the fused kernel; the rest
    is its own op, and neither Megatron's fused kernels nor torch.compile run it."""
    gpt2 = load_model(str(HF / "gpt2.json")).architecture
    tokens = 1024
    ops = {op.name: op for op in layer_ops(gpt2, False, tokens, tokens, "eager")}
    own = ops["MLP gelu_new's own kernels (eager)"]
    measured = MEASURED["activations"]
    for field, kernels in (("forward", own.kernels), ("backward", own.backward_kernels)):
        assert kernels == measured["gelu_new"][f"{field}_kernels"] - measured["gelu"][f"{field}_kernels"]
    assert own.bytes == (36 - 4) * gpt2.ffn * tokens
    assert own.backward_bytes == (56 - 6) * gpt2.ffn * tokens
    for kernels in ("fused", "compiled"):
        assert not [op for op in layer_ops(gpt2, False, tokens, tokens, kernels) if "own kernels" in op.name]
