"""The MLP activations transformers runs by name, and what eager PyTorch keeps of each: held to saved-tensor hooks on
transformers 5.25.0 (tests/reference/hf-configs/resolved/eager-activations.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_args

import pytest

from dpcost.catalog import load_model, model_from_hf_config
from dpcost.engine.activations import EAGER_ACTIVATIONS, EagerActivation, layer_tensors
from dpcost.engine.ops import layer_ops
from dpcost.specs import Activation

HF = Path(__file__).parent / "reference" / "hf-configs"
MEASURED = json.loads((HF / "resolved" / "eager-activations.json").read_text())


def test_every_name_transformers_runs_is_accepted():
    """ACT2CLS's names, but prelu (a module with a weight, which refuses a bf16 input in the measurement), and BLOOM's
    own GELU."""
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
        ({"model_type": "openai-gpt", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 100}, "gelu_new"),
        ({"model_type": "openai-gpt", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 100, "afn": "swish"},
         "silu"),
        ({"model_type": "bloom", "n_embed": 64, "n_layer": 2, "num_attention_heads": 4, "vocab_size": 100},
         "bloom_gelu"),
        ({"model_type": "apertus", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
          "intermediate_size": 128, "vocab_size": 100}, "xielu"),
        ({"model_type": "nemotron", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
          "intermediate_size": 128, "vocab_size": 100}, "relu2"),
        ({"model_type": "esm", "vocab_size": 33, "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
          "intermediate_size": 128, "hidden_act": "gelu", "pad_token_id": 1}, "gelu_python"),
    ],
)  # fmt: skip
def test_activation_read_as_the_modeling_file_runs_it(tmp_path, config, activation):
    """The name under the key each MLP reads (ACT2FN[config.activation_function], [config.hidden_act], ...), the
    class's default when absent, as its modeling file runs it: OpenAIGPTMLP's ACT_FNS runs "gelu" as gelu_new and
    "swish" as silu; ESM's own erf GELU whatever hidden_act says; BLOOM's BloomGelu; a name transformers does not
    know, none (a fused GELU)."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert load_model(str(path)).architecture.activation == activation


@pytest.mark.parametrize("config", ["gpt2.json", "bloom.json", "opt-30b.json", "falcon-7b.json"])
def test_an_eager_activation_runs_what_was_measured(config):
    """The MLP's activation op under eager PyTorch moves the bytes and launches the kernels measured for its activation,
    forward and backward (GPT-2's gelu_new: 8 kernels and 36 bytes an element forward, 11 and 56 backward; BLOOM's own
    GELU 9 and 42, 18 and 88; OPT's ReLU and Falcon's F.gelu one kernel each way, 4 and 6 bytes)."""
    arch = load_model(str(HF / config)).architecture
    measured = MEASURED["activations"][arch.activation]
    tokens = 1024
    (op,) = [op for op in layer_ops(arch, False, tokens, tokens, "eager") if op.name == "MLP activation"]
    elements = arch.ffn * tokens
    assert (op.bytes, op.kernels) == (measured["forward_bytes_per_element"] * elements, measured["forward_kernels"])
    backward = (measured["backward_bytes_per_element"] * elements, measured["backward_kernels"])
    assert (op.backward_bytes, op.backward_kernels) == backward


def test_fused_and_compiled_kernels_run_one_activation_kernel():
    """Megatron's fused bias-GELU and torch.compile's fused kernel run GPT-2's gelu_new as one kernel each way (_ACT),
    not the eager ops transformers writes."""
    gpt2 = load_model(str(HF / "gpt2.json")).architecture
    for kernels in ("fused", "compiled"):
        (op,) = [op for op in layer_ops(gpt2, False, 1024, 1024, kernels) if op.name == "MLP activation"]
        assert (op.kernels, op.backward_kernels) == (1, 2)


def test_an_activations_intermediates_are_tensors_of_the_mlp_width():
    """gelu_new's three kept intermediates are three tensors as wide as the MLP, not one three times as wide: the
    largest tensor (the allocator's fragmentation follows it) is the MLP's width."""
    gpt2 = load_model(str(HF / "gpt2.json")).architecture
    own = [t for t in layer_tensors(gpt2, False, kernels="eager").tensors if "intermediate" in t.name]
    assert [t.bytes_per_token for t in own] == [2 * gpt2.ffn] * 3


CLAMPED = [("gpt-oss-20b.json", "gpt_oss"), ("minimax-m3.json", "minimax_m3_vl"),
           ("deepseek-v4-flash.json", "deepseek_v4"), ({"model_type": "glm5_next"}, "glm5_next"),
           ({"model_type": "hy_v4"}, "hy_v4"),
           ({"model_type": "hy_v4_vl", "text_config": {"model_type": "hy_v4_vl_text"}}, "hy_v4")]  # fmt: skip


def _clamped(config):
    return (load_model(str(HF / config)) if isinstance(config, str) else model_from_hf_config(config)).architecture


@pytest.mark.parametrize(("config", "measured_as"), CLAMPED)
def test_a_clamped_expert_keeps_what_transformers_keeps(config, measured_as):
    """A routed expert whose halves transformers clamps keeps, per element of its width, gate_up (4 bytes), what its
    _apply_gate saves besides (gpt-oss's and MiniMax-M3's 8: the clamped gate, the sigmoid's output, up + 1 and the
    gate's product; DeepSeek-V4's, GLM-5 Next's and HY V4's 6: the clamped halves and silu's output) and the product
    the down projection reads (2): 14 and 12 bytes, where an unclamped SwiGLU keeps 8."""
    a = _clamped(config)
    measured = MEASURED["clamped_gates"][measured_as]
    moe = a.moe
    tensors = layer_tensors(a, moe_layer=True, kernels="eager").tensors
    routed = sum(t.bytes_per_token for t in tensors if t.name.startswith("routed experts")) / moe.active
    dispatched_and_weighted = 2 * 2 * moe.expert_io(a.hidden)
    assert measured["keeps_input"] and not measured["keeps_output"]
    expected = 4 + measured["other_bytes_per_element"] + 2
    assert (routed - dispatched_and_weighted) / moe.ffn == expected == (14 if measured_as in GPT_OSS_LIKE else 12)
    unclamped = MEASURED["clamped_gates"]["swiglu"]
    assert 4 + unclamped["other_bytes_per_element"] + 2 == 8
    for kernels in ("fused", "compiled"):  # Megatron's and torch.compile's kernels keep no clamped copy
        assert not [t for t in layer_tensors(a, True, kernels=kernels).tensors if "clamped" in t.name]


GPT_OSS_LIKE = ("gpt_oss", "minimax_m3_vl")


@pytest.mark.parametrize(("config", "measured_as"), CLAMPED)
def test_a_clamped_expert_runs_what_was_measured(config, measured_as):
    """The routed experts' activation ops under eager PyTorch move what the clamped _apply_gate was measured to move
    forward (gpt-oss's 7 kernels and 32 bytes an element of the width, DeepSeek-V4's 4 and 18), and backward its
    kernels and bytes beyond an unclamped SwiGLU's (gpt-oss's interleaved halves 14 kernels and 64 bytes more)."""
    a = _clamped(config)
    measured, unclamped = MEASURED["clamped_gates"][measured_as], MEASURED["clamped_gates"]["swiglu"]
    tokens, moe = 1024, a.moe
    ops = {op.name: op for op in layer_ops(a, True, tokens, tokens, "eager") if op.name.startswith("expert ")}
    activation, clamp = ops["expert activation"], ops["expert gate clamp"]
    elements = moe.ffn * tokens * moe.active
    # once over every routed row: grouped_mm_experts_forward, transformers' default, calls _apply_gate once a layer
    assert activation.bytes + clamp.bytes == measured["forward_bytes_per_element"] * elements
    assert activation.kernels + clamp.kernels == measured["forward_kernels"]
    backward = measured["backward_bytes_per_element"] - unclamped["backward_bytes_per_element"]
    assert clamp.backward_bytes == backward * elements
    assert clamp.backward_kernels == measured["backward_kernels"] - unclamped["backward_kernels"]


@pytest.mark.parametrize(("config", "measured_as"), CLAMPED)
def test_shared_experts_clamp_where_their_mlp_does(config, measured_as):
    """DeepSeek-V4's, GLM-5 Next's and MiniMax-M3's shared experts (DeepseekV4MLP, Glm5NextTextMLP,
    MiniMaxM3VLDenseMLP) clamp as their routed experts do; HY V4's HYV4MLP does not; gpt-oss has none."""
    a = _clamped(config)
    shared = [t for t in layer_tensors(a, True, kernels="eager").tensors if t.name.startswith("shared expert")]
    clamped = [t for t in shared if "clamped" in t.name]
    if measured_as == "gpt_oss":
        assert not shared
    elif measured_as == "hy_v4":
        assert shared and not clamped
    else:
        kept = MEASURED["clamped_gates"][measured_as]["other_bytes_per_element"]
        beyond = kept - MEASURED["clamped_gates"]["swiglu"]["other_bytes_per_element"]
        assert sum(t.bytes_per_token for t in clamped) == beyond * a.moe.shared_width


@pytest.mark.parametrize(
    ("config", "measured_as"), [("minimax-m3.json", "minimax_m3_vl"), ({"model_type": "hy_v4"}, "hy_v4")]
)
def test_a_dense_mlp_clamps_where_its_class_does(config, measured_as):
    """A dense layer's MLP clamps as the routed experts do where its class clamps (MiniMaxM3VLDenseMLP), and runs the
    clamp's kernels; HY V4's dense HYV4MLP runs an unclamped SwiGLU."""
    a = _clamped(config)
    tensors = layer_tensors(a, moe_layer=False, kernels="eager").tensors
    clamped = sum(t.bytes_per_token for t in tensors if t.name.startswith("MLP clamped"))
    ops = [op for op in layer_ops(a, False, 1024, 1024, "eager") if op.name == "MLP gate clamp"]
    if measured_as == "hy_v4":
        assert clamped == 0 and not ops
    else:
        beyond = (MEASURED["clamped_gates"][measured_as]["other_bytes_per_element"]
                  - MEASURED["clamped_gates"]["swiglu"]["other_bytes_per_element"])  # fmt: skip
        assert clamped == beyond * a.ffn
        assert [op.kernels for op in ops] == [
            MEASURED["clamped_gates"][measured_as]["forward_kernels"]
            - MEASURED["clamped_gates"]["swiglu"]["forward_kernels"]
        ]


def test_the_catalogs_deepseek_v4_flash_clamps_as_its_config_does():
    assert load_model("deepseek-v4-flash").architecture.gate_clamp == _clamped("deepseek-v4-flash.json").gate_clamp


def test_llama4s_moe_keeps_every_experts_copy_of_a_token_under_eager():
    """Llama4TextMoe repeats each token once per expert, weighs the copies by the router's scores (zero where not
    routed) and runs every expert on them: its routed experts keep experts x (4 hidden + 8 ffn) bytes a token, the
    weighted input twice and the SwiGLU's four tensors, where top-1 routing keeps one copy. Megatron's and
    torch.compile's kernels route top-k."""
    measured = MEASURED["llama4_moe"]
    config = {"model_type": "llama4_text", "hidden_size": measured["hidden"], "intermediate_size": measured["ffn"],
              "intermediate_size_mlp": 2 * measured["ffn"], "num_local_experts": measured["experts"],
              "num_experts_per_tok": measured["top_k"], "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 100}  # fmt: skip
    a = model_from_hf_config(config).architecture
    assert a.moe is not None and a.moe.every_expert

    top_k = a.model_copy(update={"moe": a.moe.model_copy(update={"every_expert": False})})

    def routed(arch, kernels):
        tensors = layer_tensors(arch, moe_layer=True, kernels=kernels).tensors
        return sum(t.bytes_per_token for t in tensors if t.name.startswith("routed experts"))

    assert routed(a, "eager") == measured["routed_bytes_per_token"]
    assert routed(top_k, "eager") * measured["experts"] == measured["routed_bytes_per_token"] * measured["top_k"]
    assert routed(a, "fused") == routed(top_k, "fused")

    def up_flops(arch, kernels):  # the up projection's matmul, or Megatron's fc1 of gate and up
        (op,) = [
            op for op in layer_ops(arch, True, 1024, 1024, kernels) if op.name in ("expert up", "expert gate and up")
        ]
        return op.flops * op.repeats

    assert up_flops(a, "eager") == measured["experts"] * up_flops(top_k, "eager")
    assert up_flops(a, "fused") == up_flops(top_k, "fused")


def test_dbrx_gates_one_expert_at_a_time():
    """DbrxExperts loops over the experts it hits, each running DbrxExpertGLU (silu, then the product) on its rows: an
    unclamped SwiGLU's kernels once an expert, where transformers' grouped_mm forward runs them once a layer."""
    a = load_model(str(HF / "dbrx-instruct.json")).architecture
    assert a.moe is not None and a.moe.expert_loop
    (op,) = [op for op in layer_ops(a, True, 1024, 1024, "eager") if op.name == "expert activation"]
    assert op.kernels == MEASURED["clamped_gates"]["swiglu"]["forward_kernels"] * a.moe.experts
    qwen = load_model(str(HF / "qwen3-30b-a3b.json")).architecture
    (op,) = [op for op in layer_ops(qwen, True, 1024, 1024, "eager") if op.name == "expert activation"]
    assert op.kernels == MEASURED["clamped_gates"]["swiglu"]["forward_kernels"]


def test_llama4s_moe_blocks_take_their_share_of_every_experts_compute():
    """FSDP's schedule splits a pass's compute over the blocks by their FLOPs: under eager kernels a Maverick MoE block
    runs all 128 experts, so its share against a dense block's follows the two layers' ops (within their attention
    counts' difference), and without every_expert the top-1 share."""
    from dpcost.engine.params import count_params
    from dpcost.engine.prepare import units

    model = load_model(str(HF / "llama-4-maverick.json"))
    a, seq = model.architecture, 4096
    dense = next(i for i, kind in enumerate(a.layer_kinds) if kind[1] != "moe")
    moe = next(i for i, kind in enumerate(a.layer_kinds) if kind[1] == "moe")

    def ops_ratio(kernels):
        def flops(moe_layer):
            return sum(op.flops * op.repeats for op in layer_ops(a, moe_layer, seq, seq, kernels))

        return flops(True) / flops(False)

    for every_expert, kernels in ((True, "eager"), (False, "fused")):
        blocks = units(count_params(model), model, seq, every_expert)[1:]
        ratio = blocks[moe].compute_share / blocks[dense].compute_share
        assert ratio == pytest.approx(ops_ratio(kernels), rel=0.1)


@pytest.mark.parametrize("kernels", ["eager", "fused"])
def test_routed_experts_keep_one_tensor_of_each_kind(kernels):
    """A MoE layer's routed copies run as grouped matmuls over every copy of the rank's tokens (transformers'
    grouped_mm_experts_forward, Megatron-Core's TEGroupedMLP): the dispatched inputs are one tensor of top-k x hidden
    a token, the first grouped matmul's output (gate and up) one of top-k x 2 ffn, not the copy's tensors summed into
    one. The largest tensor, which the backward's gradient buffers and the allocator's blocks follow, is theirs."""
    a = load_model(str(HF / "deepseek-v3.json")).architecture
    moe = a.moe
    routed = [t for t in layer_tensors(a, moe_layer=True, kernels=kernels).tensors if t.name.startswith("routed")]
    by_name = {t.name.split(" (")[0]: t.bytes_per_token for t in routed}
    assert by_name["routed experts' dispatched inputs"] == moe.active * 2 * a.hidden
    assert by_name["routed experts' first matmul outputs"] == moe.active * 2 * 2 * moe.ffn
    assert max(t.bytes_per_token for t in routed) == moe.active * 2 * max(a.hidden, 2 * moe.ffn)
