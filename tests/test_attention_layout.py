"""What transformers' attention keeps besides Q, K, V and one context tensor (a copy of SDPA's output, the fused
projection V is a view of), held to saved-tensor hooks on transformers 5.25.0
(tests/reference/hf-configs/resolved/attention-layout.json); and ALiBi, which rotates nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import family_configs, load_model, run_cli, spec_from_config

from dpcost.engine.activations import layer_tensors
from dpcost.engine.ops import layer_ops
from dpcost.errors import InputError

HF = Path(__file__).parent / "reference" / "hf-configs"
MEASURED = json.loads((HF / "resolved" / "attention-layout.json").read_text())["families"]
LAYERS = json.loads((HF / "resolved" / "autocast-activations.json").read_text())["layers_bytes_per_token_per_hidden"]

# Where dpcost's account differs from what was measured, and why
COPIED_OTHERWISE: dict[str, str] = {
    "laguna": "the sweep's hook missed the copy its per-head gate multiplies; measured one by one, it is kept "
    "(hf_config._CONTEXT_COPIED)",
}
KEPT_OTHERWISE: dict[str, str] = {}
LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers")


def _widened(cfg: dict) -> dict:
    """The measured one-layer config with as many layers as its per-layer lists and first_k_dense_replace say,
    which transformers built and dpcost refuses as inconsistent."""
    lists = [len(v) for v in cfg.values() if isinstance(v, list) and len(v) > 1 and all(isinstance(x, str) for x in v)]
    layers = max([*lists, (cfg.get("first_k_dense_replace") or 0) + 1, 2])
    out = cfg | {key: layers for key in LAYER_KEYS if key in cfg}
    return out | {
        k: v * layers for k, v in cfg.items() if isinstance(v, list) and len(v) == 1 and isinstance(v[0], str)
    }


def _eager_layer(arch):
    """The first layer's tensors under transformers' modeling code (eager kernels) with SDPA."""
    mixer, mlp, width = arch.layer_kinds[0]
    return layer_tensors(arch, mlp == "moe", True, "eager", mixer, mlp != "none", width).tensors


def _compared(tmp_path: Path) -> dict[str, tuple[tuple[bool, float], tuple[bool, float]]]:
    """For each measured family dpcost reads: (copied, bytes kept in V's storage a token per unit of hidden) as dpcost
    counts them on the config measured (or, where nothing was kept there, the class defaults), and as measured."""
    compared = {}
    defaults = family_configs(MEASURED)
    for family, found in MEASURED.items():
        cfg = found.get("config") or defaults[family]
        if "error" in found or cfg is None:
            continue
        try:
            arch = spec_from_config(tmp_path, cfg).architecture
        except InputError:
            try:
                arch = spec_from_config(tmp_path, _widened(cfg)).architecture
            except InputError:
                continue
        tensors = _eager_layer(arch)
        kept = sum(t.bytes_per_token for t in tensors if "kept in V's storage" in t.name) / arch.hidden
        ours = (any(t.name.startswith("attention output, laid out per head") for t in tensors), kept)
        compared[family] = (ours, (found["context_copied"], found["value_storage_beyond_qkv"]))
    return compared


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    return _compared(tmp_path_factory.mktemp("configs"))


def test_the_output_projection_reads_a_copy_where_transformers_copies(compared):
    """A query made by torch.cat (the partial-rotary path: StableLM's, Phi's, GPT-NeoX's, Phi-3's) is laid out per
    head, so is SDPA's output, and transpose(1, 2).contiguous() copies it for the output projection: autograd keeps
    both (specs.context_copied, from hf_config._CONTEXT_COPIED). Llama's q * cos + rotate_half(q) * sin keeps the
    projection's layout, and the output projection reads SDPA's output itself."""
    assert len(compared) >= 80
    differ = {family for family, (ours, measured) in compared.items() if ours[0] != measured[0]}
    assert {family: compared.get(family) for family in differ ^ set(COPIED_OTHERWISE)} == {}
    assert sum(measured[0] for _, measured in compared.values()) >= 15


def test_a_projection_v_is_a_view_of_is_kept_whole_where_transformers_keeps_it(compared):
    """A fused QKV projection whose Q and K are rotated into new tensors leaves V a view of its whole output, which
    attention keeps: Q's and K's widths beyond dpcost's Q, K and V (GPT-NeoX's and Phi-3's 4 bytes a token per unit
    of hidden here); MLA's kv_b_proj output, of which V is a view and K's latent part a copy: heads x qk_nope_head_dim
    more (DeepSeek-V3's 4). Without rotary (GPT-2's c_attn) Q, K and V are all views of it, and nothing is kept
    beyond them."""
    differ = {f for f, (ours, measured) in compared.items() if ours[1] != pytest.approx(measured[1], abs=0.01)}
    assert {family: compared.get(family) for family in differ ^ set(KEPT_OTHERWISE)} == {}
    assert {family for family, (_, measured) in compared.items() if measured[1]} >= {"gpt_neox", "phi3", "deepseek_v3"}


def test_only_eager_kernels_keep_the_copies(tmp_path):
    """Megatron's fused kernels and torch.compile run their own layouts: neither copy is counted there."""
    arch = spec_from_config(tmp_path, LAYERS["phi3"]["config"]).architecture
    for kernels in ("fused", "compiled"):
        names = [t.name for t in layer_tensors(arch, False, True, kernels).tensors]
        assert not [name for name in names if "per head" in name or "V's storage" in name]


@pytest.mark.parametrize(
    ("config", "alibi"),
    [("bloom.json", True), ("mpt-7b.json", True), ("falcon-7b.json", False),
     ({"model_type": "falcon", "alibi": True, "multi_query": False, "hidden_size": 64, "num_attention_heads": 4,
       "num_hidden_layers": 2, "vocab_size": 100}, True),
     ({"model_type": "baichuan", "hidden_size": 5120, "intermediate_size": 13696, "num_attention_heads": 40,
       "num_hidden_layers": 40, "vocab_size": 125696}, True),
     ({"model_type": "baichuan", "hidden_size": 4096, "intermediate_size": 11008, "num_attention_heads": 32,
       "num_hidden_layers": 32, "vocab_size": 125696}, False)],
)  # fmt: skip
def test_alibi_models_rotate_nothing(tmp_path, config, alibi):
    """BLOOM and MPT add ALiBi's biases to the scores (BloomModel's build_alibi_tensor, MptModel's
    build_mpt_alibi_tensor, whatever the config says), as Falcon does with alibi true and Baichuan's 13Bs do (their
    modeling files; vLLM's baichuan.py tells them from the 7Bs by width): no rotary op runs, and the fused
    projection's Q and K are the views attention keeps."""
    spec = load_model(str(HF / config)) if isinstance(config, str) else spec_from_config(tmp_path, config)
    arch = spec.architecture
    assert arch.alibi == alibi and arch.rotary == (not alibi)
    names = [op.name for op in layer_ops(arch, False, 1024, 1024, "eager")]
    assert ("rotary" in names) == (not alibi)
    assert not alibi or not [t for t in _eager_layer(arch) if "V's storage" in t.name]


def test_a_multi_head_falcon_keeps_its_fused_output_with_rotary_not_alibi(tmp_path):
    """The same fused query_key_value: with rotary, Q and K are new tensors and V's view keeps the whole output (Q's
    and K's widths beyond: 4 bytes a token per unit of hidden); with ALiBi, Q, K and V are all views of it."""
    falcon = {"model_type": "falcon", "multi_query": False, "hidden_size": 64, "num_attention_heads": 4,
              "num_hidden_layers": 2, "vocab_size": 100}  # fmt: skip
    for alibi, kept in ((False, 4.0), (True, 0.0)):
        arch = spec_from_config(tmp_path, falcon | {"alibi": alibi}).architecture
        assert sum(t.bytes_per_token for t in _eager_layer(arch) if "V's storage" in t.name) / arch.hidden == kept


def test_alibi_and_a_position_table_are_refused_together(tmp_path):
    path = tmp_path / "model.yaml"
    spec = (Path(__file__).parents[1] / "models" / "gpt3-175b.yaml").read_text()
    path.write_text(spec.replace("  learned_positions: 2048\n", "  learned_positions: 2048\n  alibi: true\n"))
    code, _, err = run_cli("estimate", "--model", str(path), "--dp", "8")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "model.yaml" in err and "alibi" in err and "learned_positions" in err
