"""Zamba2 (model_type zamba2; Glorioso et al. 2024, arXiv 2411.15242): a Mamba-2 layer in every layer and, in the hybrid
ones, a shared transformer block run before the mixer (modeling_zamba2.py, transformers 5.25.0); and Zamba (zamba,
arXiv 2405.16712), Mamba-1 layers and one shared block without adapters (modeling_zamba.py). Their counts are held to
what transformers builds (resolved/transformers-5.25.json, test_hf_configs.py: Zamba-7B-v1's shapes give
7,232,490,496); here what the modeling code says of the sharing, the cache and the layers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import HF_RESOLVED, estimate_refusal, spec_from_config, transformers_cases

from dpcost.catalog import load_model
from dpcost.engine.activations import kv_cache_bytes, layer_tensors, recurrent_state_bytes
from dpcost.engine.params import count_params, shared_block_parameters
from dpcost.specs import REUSED_BLOCK, SHARED_BLOCK, ModelSpec

DEFAULT = transformers_cases("zamba2")[0]
HYBRID = [6, 12, 18, 24, 30, 36, 42, 47, 51]  # Zamba2Config's default layers_block_type

# What Zamba2Config.__post_init__ derives from the shapes, which to_dict writes and a file's value overrides: left out
# where a test changes the shapes
DERIVED = ("attention_hidden_size", "attention_head_dim", "head_dim", "kv_channels", "mamba_headdim")


def _spec(tmp_path: Path, **changes: object) -> ModelSpec:
    return spec_from_config(tmp_path, {**{k: v for k, v in DEFAULT.items() if k not in DERIVED}, **changes})


def test_the_first_layers_to_run_each_block_hold_it(tmp_path: Path) -> None:
    """Zamba2Model.get_layers ties each hybrid layer's shared_transformer to that of the first hybrid layer to run
    the same block (num_mem_blocks of them, taken in turn): with two blocks, layers 6 and 12 hold them."""
    a = _spec(tmp_path, num_mem_blocks=2).architecture
    assert a is not None
    assert [i for i in range(a.layers) if a.mixer(i) == SHARED_BLOCK] == [6, 12]
    assert [i for i in range(a.layers) if a.mixer(i) == REUSED_BLOCK] == HYBRID[2:]


def test_each_run_of_a_shared_block_is_active_but_its_weights_count_once(tmp_path: Path) -> None:
    """A token runs the shared block in each of the 9 hybrid layers, so its FLOPs and decode reads count it 9 times,
    while the model holds it num_mem_blocks times: active exceeds total by the other runs."""
    spec = _spec(tmp_path, num_mem_blocks=2)
    a, counts = spec.architecture, count_params(spec)
    assert a is not None
    assert counts.active - counts.total == pytest.approx((len(HYBRID) - 2) * shared_block_parameters(a))


def test_every_hybrid_layer_caches_its_own_keys_and_values(tmp_path: Path) -> None:
    """Each Zamba2Attention run caches its layer_idx's keys and values, of num_key_value_heads heads of
    2 hidden / num_attention_heads (Zamba2Config.attention_head_dim): per token of one sequence, 9 layers x 2 x 32 x
    160 x 2 bytes; and each layer's Mamba-2 state and window as a Mamba-2 model's."""
    a = _spec(tmp_path).architecture
    assert a is not None
    tokens = 4096
    cache = kv_cache_bytes(a, tokens, 1) - recurrent_state_bytes(a)
    assert cache == len(HYBRID) * 2 * 32 * 160 * 2 * tokens


@pytest.mark.parametrize("adapters", [False, True])
def test_what_a_run_of_the_block_keeps_is_what_autograd_saves(tmp_path: Path, adapters: bool) -> None:
    """resolved/zamba2-saved.json: saved-tensor hooks on transformers 5.25.0's bf16 Zamba2AttentionDecoderLayer and
    the layer's linear layer (h 256, 8 heads, ffn 640, rank 32), attention saving what flash attention keeps, hold
    15,968 bytes a token without the attention adapters and 16,160 with them, the RMSNorms' statistics apart.
    dpcost's eager account of the block (the hybrid layer's tensors but its Mamba-2 layer's) is that."""
    measured = json.loads((HF_RESOLVED / "zamba2-saved.json").read_text())
    shapes = {"hidden_size": measured["hidden"], "num_attention_heads": measured["heads"],
              "num_key_value_heads": measured["heads"], "intermediate_size": measured["intermediate_size"],
              "adapter_rank": measured["adapter_rank"], "n_mamba_heads": 8,
              "use_shared_attention_adapter": adapters}  # fmt: skip
    a = _spec(tmp_path, **shapes).architecture
    assert a is not None
    tensors = layer_tensors(a, False, kernels="eager", mixer=SHARED_BLOCK, mlp=False).tensors
    block = [t for t in tensors if t.saved and not t.name.startswith(("SSM", "attention norm"))]
    name = "with attention adapters" if adapters else "without attention adapters"
    assert sum(t.bytes_per_token for t in block) == measured[name]["activations_bytes_per_token"]


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"num_hidden_layers": 53}, "num_hidden_layers (53) must be the length of layers_block_type (54)"),
        ({"layers_block_type": ["mamba", "attention"], "num_hidden_layers": 2}, "a list of mamba, linear_attention"),
        ({"num_mem_blocks": 0}, "num_mem_blocks: a whole number from 1, got 0"),
        ({"n_mamba_heads": 0}, "n_mamba_heads: a whole number from 1, got 0"),
        # both classes take it from the file, but the block reads the hidden state and the embedding side by side
        ({"attention_hidden_size": 2048}, "attention_hidden_size (2048) must be 2 x hidden_size (5120)"),
        # said by the attention's own key, though n_mamba_heads is read as ssm.heads (hf_config.in_users_words)
        ({"num_attention_heads": 8}, "num_attention_heads (8) must be a multiple of num_key_value_heads (32)"),
    ],
)
def test_what_it_cannot_build_is_refused_by_key(tmp_path: Path, changes: dict, said: str) -> None:  # type: ignore[type-arg]
    assert said in estimate_refusal(tmp_path, {**DEFAULT, **changes})


def test_the_files_legacy_layer_names_read_as_transformers_reads_them(tmp_path: Path) -> None:
    """Zyphra's files name the Mamba layers "mamba", which remap_legacy_layer_types (configuration_utils.py) reads as
    linear_attention: the same model."""
    legacy = ["mamba" if t == "linear_attention" else t for t in DEFAULT["layers_block_type"]]
    assert count_params(_spec(tmp_path, layers_block_type=legacy)).total == count_params(_spec(tmp_path)).total


@pytest.mark.parametrize("flag", [("--tp", "2"), ("--compute-model", "ops")])
def test_layouts_and_per_op_times_are_refused_by_what_they_lack(tmp_path: Path, flag: tuple[str, str]) -> None:
    assert "transformer blocks shared across layers" in estimate_refusal(tmp_path, DEFAULT, *flag)


def test_zamba_s_default_layers_are_two_mamba_then_a_hybrid_one_every_sixth(tmp_path: Path) -> None:
    """ZambaConfig's default layers_block_type: two Mamba layers, a hybrid one, then a hybrid one where i % 6 == 4 of
    the 73 that follow (i counted from 0 after the first three): layers 2, 7, 13, ..., 73, all running the one
    shared block that layer 2 holds."""
    zamba = transformers_cases("zamba")[0]
    path = tmp_path / "config.json"
    path.write_text(json.dumps({k: v for k, v in zamba.items() if k != "layers_block_type"}))
    a = load_model(str(path)).architecture
    assert a is not None and a.ssm is not None and a.ssm.version == 1
    hybrid = [i for i in range(a.layers) if "attention" in a.mixer(i)]
    assert hybrid == [2, *range(7, 76, 6)]
    assert [a.mixer(i) for i in hybrid] == [SHARED_BLOCK] + [REUSED_BLOCK] * (len(hybrid) - 1)


def test_zamba_s_class_gives_16_key_value_heads_whatever_the_heads(tmp_path: Path) -> None:
    """ZambaConfig.num_key_value_heads defaults to 16 (configuration_zamba.py), not to num_attention_heads: 32 heads
    make a grouped-query block (one of the harness's cases)."""
    zamba = transformers_cases("zamba")[-1]
    path = tmp_path / "config.json"
    path.write_text(json.dumps({k: v for k, v in zamba.items() if k != "num_key_value_heads"}))
    a = load_model(str(path)).architecture
    assert a is not None and (a.heads, a.kv_heads) == (32, 16)
