"""Nemotron-NAS (Llama-3.1/3.3-Nemotron, model_type nemotron-nas): Llama's layers as a neural architecture search left
them, each block's attention and MLP kept, dropped (no_op) or narrowed (ffn_mult). The counts follow NVIDIA-NeMo/
Automodel's decilm/layers.py Block (@973123ec, keyed as the Hub checkpoints are) and the model's own
_ffn_mult_to_intermediate_size; Llama-3.3-Nemotron-Super-49B-v1's file is in tests/reference/hf-configs."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from conftest import run_cli
from pydantic import ValidationError

from dpcost.catalog import load_model
from dpcost.engine.activations import kv_cache_bytes, layer_tensors
from dpcost.engine.params import count_params
from dpcost.specs import ModelArchitecture

SUPER = Path(__file__).parent / "reference" / "hf-configs" / "llama-3.3-nemotron-super-49b.json"


def _super() -> ModelArchitecture:
    a = load_model(str(SUPER)).architecture
    assert a is not None
    return a


def test_super_counts_its_checkpoint() -> None:
    """49,867,145,216: the checkpoint's bf16 parameters as a public log of work on the model confirms them."""
    assert count_params(load_model(str(SUPER))).total == 49_867_145_216


def test_ffn_mult_widths_round_up_to_256() -> None:
    """_ffn_mult_to_intermediate_size: int(2 x ffn_mult x 8192 / 3), rounded up to a multiple of 256. ffn_mult 5.25
    is the parent's width, Llama 3.3 70B's intermediate_size of 28,672; 1.0 gives int(5461.33) = 5461 -> 5632."""
    a = _super()
    mult_of = {5.25: 28672, 2.625: 14336, 3.28125: 17920, 1.3125: 7168, 1.0: 5632, 0.5: 2816}
    blocks = json.loads(SUPER.read_text())["block_configs"]
    assert a.ffn_widths == tuple(mult_of[b["ffn"]["ffn_mult"]] for b in blocks)


def test_a_full_block_is_llama_70bs_block() -> None:
    """A block that kept its attention (n_heads_in_group 8: 8 KV heads of 64) and its whole MLP (ffn_mult 5.25) is the
    parent model's layer: the same weights and, per token, the same saved activations."""
    nas, llama = _super(), load_model("llama-70b")
    parent = count_params(llama).blocks[0]
    full = next(i for i, kind in enumerate(nas.layer_kinds) if kind == ("attention", "dense", 28672))
    assert count_params(load_model(str(SUPER))).blocks[full].params == parent.params
    assert llama.architecture is not None
    ours = layer_tensors(nas, False, ffn=28672).saved_bytes(4096, 1)
    assert ours == layer_tensors(llama.architecture, False).saved_bytes(4096, 1)


def test_a_block_without_attention_holds_its_mlp_and_one_norm() -> None:
    """no_op attention builds neither the attention nor its input norm: the block is post_attention_layernorm and a
    SwiGLU MLP, 3 x 8192 x width + 8192."""
    a, counts = _super(), count_params(load_model(str(SUPER)))
    for i, (mixer, _, width) in enumerate(a.layer_kinds):
        if mixer == "none":
            assert counts.blocks[i].params == 3 * 8192 * width + 8192
    assert sum(1 for mixer, *_ in a.layer_kinds if mixer == "none") == 31


def test_only_attention_blocks_cache_keys_and_values() -> None:
    """49 of the 80 blocks attend: the cache is 49/80 of Llama 3.3 70B's (the same 8 KV heads of 128)."""
    llama = load_model("llama-70b").architecture
    assert llama is not None
    assert kv_cache_bytes(_super(), 4096, 1) == kv_cache_bytes(llama, 4096, 1) * 49 / 80


def _with_block(tmp_path: Path, i: int, part: str, **keys: object) -> str:
    cfg = json.loads(SUPER.read_text())
    cfg["block_configs"][i] = copy.deepcopy(cfg["block_configs"][i])
    cfg["block_configs"][i][part].update(keys)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return str(path)


@pytest.mark.parametrize(
    ("part", "keys", "said"),
    [
        ("attention", {"replace_with_linear": True}, "block_configs[0].attention.replace_with_linear"),
        ("ffn", {"replace_with_linear": True}, "block_configs[0].ffn.replace_with_linear"),
        ("attention", {"window_length": 4096}, "block_configs[0].attention.window_length"),
        ("attention", {"n_heads_in_group": 4}, "n_heads_in_group of [4, 8]"),
        ("attention", {"n_heads_in_group": 7}, "block_configs[0].attention.n_heads_in_group: a divisor"),
        ("ffn", {"ffn_mult": -1}, "block_configs[0].ffn.ffn_mult: a positive number"),
        ("ffn", {"no_op": "yes"}, "block_configs[0].ffn.no_op: expected true or false"),
        ("ffn", {"gated": False}, "block_configs[0].ffn.gated: False: an ungated MLP is not counted"),
    ],
)
def test_blocks_it_does_not_count_are_refused_by_key(tmp_path: Path, part: str, keys: dict, said: str) -> None:  # type: ignore[type-arg]
    code, _, err = run_cli("estimate", "--model", _with_block(tmp_path, 0, part, **keys), "--dp", "8")
    assert code == 2 and said in err and len(err.strip().splitlines()) == 1, err


def test_layouts_and_per_op_times_are_refused_by_what_they_lack() -> None:
    for extra in (["--tp", "8"], ["--compute-model", "ops"]):
        code, _, err = run_cli("estimate", "--model", str(SUPER), "--dp", "8", *extra)
        assert code == 2 and "MLP widths that differ from layer to layer" in err, err


def test_pure_data_parallelism_is_costed() -> None:
    code, out, _ = run_cli("estimate", "--model", str(SUPER), "--dp", "64", "--format", "json")
    assert code == 0
    assert json.loads(out)["model"]["params_total"] == 49_867_145_216


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"ffn": 1024, "ffn_widths": (1024, 1024)}, "in place of ffn"),
        ({"ffn_widths": (1024,)}, "one width for each of the 2 layers"),
        ({"ffn_widths": (1024, 0)}, "layer 1: a positive width where a layer has a dense MLP"),
        ({"ffn_widths": (1024, 1024), "mlp_free_layers": (1,)}, "layer 1: a positive width"),
    ],
)
def test_a_spec_gives_one_width_per_layer(fields: dict, said: str) -> None:  # type: ignore[type-arg]
    base = {"hidden": 256, "layers": 2, "heads": 4, "vocab": 1000}
    with pytest.raises(ValidationError, match=said):
        ModelArchitecture(**base, **fields)


def test_an_empty_block_holds_and_keeps_nothing() -> None:
    """Llama-3.1-Nemotron-Ultra-253B-v1: 81 of its 162 blocks are no_op in both halves. Such a block builds no module
    and returns its input, which is the next block's input: no weights, and nothing of its own kept even under full
    recomputation."""
    ultra = load_model(str(SUPER.with_name("llama-3.1-nemotron-ultra-253b.json")))
    a, counts = ultra.architecture, count_params(ultra)
    assert a is not None
    empty = [i for i, kind in enumerate(a.layer_kinds) if kind == ("none", "none", 0)]
    assert len(empty) == 81 and all(counts.blocks[i].params == 0 for i in empty)
    layer = layer_tensors(a, False, mixer="none", mlp=False)
    assert layer.hidden == 0 and layer.saved_bytes(4096, 1) == 0


def test_a_gated_mlp_is_read_and_parallel_blocks_are_refused(tmp_path: Path) -> None:
    """NeMo's FFNConfig.gated is true (SwiGLU) by default: saying so changes nothing. A block of parallel branches
    (BlockConfig.parallel_blocks) is refused by its key."""
    code, out, _ = run_cli("estimate", "--model", _with_block(tmp_path, 0, "ffn", gated=True), "--dp", "8",
                           "--format", "json")  # fmt: skip
    assert code == 0 and json.loads(out)["model"]["params_total"] == 49_867_145_216
    cfg = json.loads(SUPER.read_text())
    cfg["block_configs"][2]["parallel_blocks"] = [{"attention": {"no_op": True}, "ffn": {"no_op": True}}]
    path = tmp_path / "parallel.json"
    path.write_text(json.dumps(cfg))
    code, _, err = run_cli("estimate", "--model", str(path), "--dp", "8")
    assert code == 2 and "block_configs[2].parallel_blocks" in err, err
