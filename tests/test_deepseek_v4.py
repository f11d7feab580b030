"""DeepSeek-V4 (model_type deepseek_v4) as transformers 5.24.0 builds and masks it.

What transformers says: resolved/deepseek-v4.json, written by hf-configs/deepseek_v4_with_transformers.py (the
parameters DeepseekV4ForCausalLM builds from each reference config, summed by part; the compressed entries each
query's mask leaves open in its compressors). Where a figure is a closed form, it is the one docs/sources/deepseek-v4.md
states, written out here from the shapes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dpcost.catalog import load_model
from dpcost.cli import app
from dpcost.engine.activations import kv_cache_bytes, layer_tensors
from dpcost.engine.attention_keys import compressed_entries
from dpcost.engine.compute import attention_flops
from dpcost.engine.params import count_params
from dpcost.errors import InputError
from dpcost.specs import CSA, HCA, ModelArchitecture

CONFIGS = Path(__file__).parent / "reference" / "hf-configs"
RESOLVED = json.loads((CONFIGS / "resolved" / "deepseek-v4.json").read_text())
FLASH, PRO = CONFIGS / "deepseek-v4-flash.json", CONFIGS / "deepseek-v4-pro.json"


def _arch(path: Path) -> ModelArchitecture:
    a = load_model(str(path)).architecture
    assert a is not None
    return a


@pytest.mark.parametrize("name", ["deepseek-v4-flash.json", "deepseek-v4-pro.json"])
def test_parameters_by_part_are_what_transformers_builds(name: str) -> None:
    """Every part, to the parameter: attention (query latent, one key-value head, grouped output projection, sinks),
    compressors and indexers, hyper-connections, norms, experts, routers, embedding and head."""
    expected = RESOLVED["parameters"][name]
    c = count_params(load_model(str(CONFIGS / name)))
    assert RESOLVED["transformers"] == "5.24.0"
    assert dict(c.components) == {k: v for k, v in expected.items() if k != "total"}
    assert c.total == expected["total"]


@pytest.mark.parametrize("case", RESOLVED["small"], ids=lambda c: f"hc{c['config']['hc_mult']}")
def test_small_configs_count_what_transformers_builds(case: dict, tmp_path: Path) -> None:  # type: ignore[type-arg]
    """One residual stream still builds the hyper-connections; intermediate_size and num_local_experts are the
    class's names for the experts' width and count; layer kinds and rates from layer_types and compress_rates."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(case["config"]))
    assert count_params(load_model(str(path))).total == case["parameters"]


def test_the_layers_attend_as_compress_ratios_say_cut_to_the_layer_count() -> None:
    """Flash: two window-only layers, then sparse (4) and heavy (128) in turn, its 44th entry (the MTP module's) cut;
    Pro: two heavy layers first. Every layer has the 128-key window; four residual streams."""
    flash, pro = _arch(FLASH), _arch(PRO)
    assert flash.mixers[:4] == ("attention", "attention", CSA, HCA) and flash.mixers[-1] == CSA
    assert len(flash.mixers) == 43 and flash.mixers.count(CSA) == 21 and flash.mixers.count(HCA) == 20
    assert pro.mixers[:3] == (HCA, HCA, CSA) and pro.mixers.count(CSA) == 30 and pro.mixers.count(HCA) == 31
    assert all(flash.local_span(i) is not None and flash.local_span(i).size == 128 for i in range(43))  # type: ignore[union-attr]
    assert flash.residual_streams == 4 and flash.kv_heads == 1 and flash.values_from_keys


@pytest.mark.parametrize("case", RESOLVED["visible_entries"], ids=lambda c: f"T{c['seq_len']}")
def test_compressed_entries_are_those_transformers_masks_leave_open(case: dict) -> None:  # type: ignore[type-arg]
    """The mean over queries of the entries each may read: every closed window (heavy), at most the indexer's top k
    (sparse), as the compressors' own block_bias says."""
    t = case["seq_len"]
    heavy, sparse = case["heavily_compressed_attention"], case["compressed_sparse_attention"]
    assert compressed_entries(t, case["hca_rate"]) == pytest.approx(sum(heavy) / t)
    assert compressed_entries(t, case["csa_rate"], case["index_topk"]) == pytest.approx(sum(sparse) / t)


def test_attention_flops_read_the_window_and_the_open_entries() -> None:
    """PaLM's 2 H (d_qk + d_v) per key at twice the mean a query reads: the window's keys (query i sees min(i + 1,
    W), counted as areas) and the entries transformers' masks leave open; the sparse layer's indexer scores every
    closed window's entry with each index head (2 H_I d_I per entry). A small V4 at T = 64, rates 4 and 16, top 100
    (no cap)."""
    case = next(c for c in RESOLVED["visible_entries"] if c["seq_len"] == 64)
    t, window, heads, d, index_heads, index_dim = 64, 8, 4, 32, 2, 16
    a = ModelArchitecture(
        hidden=64, layers=2, heads=heads, kv_heads=1, head_dim=d, values_from_keys=True, attention_sinks=True,
        vocab=64, moe={"experts": 4, "active": 2, "ffn": 32, "shared": 1}, mixers=(CSA, HCA),
        local_attention={"size": window}, residual_streams=2,
        compressed_attention={"q_lora_rank": 16, "o_groups": 2, "o_lora_rank": 16, "csa_rate": 4, "hca_rate": 16,
                              "index_heads": index_heads, "index_head_dim": index_dim, "index_topk": 100},
    )  # fmt: skip
    # the window's mask pairs less half its edges, the area count FlashAttention-2 uses (test_local_attention.py)
    window_keys = (sum(min(i + 1, window) for i in range(t)) - window / 2) / t
    sparse, heavy = sum(case["compressed_sparse_attention"]) / t, sum(case["heavily_compressed_attention"]) / t
    per_key = 2 * heads * 2 * d
    expected = per_key * 2 * (window_keys + sparse) + per_key * 2 * (window_keys + heavy)
    expected += 2 * index_heads * index_dim * 2 * sparse  # top 100 keeps every open entry here
    assert attention_flops(a, t) == pytest.approx(expected)


def test_decoding_a_token_reads_the_window_and_the_cached_entries() -> None:
    """Flash decoding at 1,048,576 tokens: every layer's 128 window keys, a sparse layer's indexer's 512 of its
    262,144 entries (which the indexer scores, 2 H_I d_I each), a heavy layer's 8,192 entries; 2 H (d_qk + d_v) a
    key, d_qk = d_v = 512 (the key serves as the value)."""
    per_key = 2 * 64 * 1024
    expected = per_key * (43 * 128 + 21 * 512 + 20 * 8_192) + 21 * 2 * 64 * 128 * 262_144
    assert attention_flops(_arch(FLASH), 1_048_576, decode=True) == expected


def test_the_cache_holds_the_window_and_the_entries() -> None:
    """Flash at 1,048,576 tokens, bf16: 43 windows of 128 keys of 512 (the key serves as the value), 21 sparse layers'
    262,144 entries of 512 with their indexer keys of 128, 20 heavy layers' 8,192 entries of 512."""
    expected = 2 * (43 * 128 * 512 + 21 * 262_144 * (512 + 128) + 20 * 8_192 * 512)
    assert kv_cache_bytes(_arch(FLASH), 1_048_576, 1) == expected


def test_a_layer_keeps_its_streams_and_its_input_is_them() -> None:
    """Each hyper-connection keeps its n input streams (n h bf16), and the block's input, which every checkpointing
    policy keeps, is the n streams."""
    a = _arch(FLASH)
    tensors = layer_tensors(a, True, mixer=CSA)
    streams = [t for t in tensors.tensors if "input streams" in t.name]
    assert [t.bytes_per_token for t in streams] == [2 * 4 * 4096] * 2
    assert tensors.hidden == 4 * 4096


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"compress_ratios": [0, 3]}, "compress_ratios: one of 0, 4 or 128"),
        ({"compress_ratios": [0, 4]}, "compress_ratios: one of 0, 4 or 128 for each of the 43 layers"),
        ({"layer_types": ["sliding_attention", "full_attention"]}, "layer_types: one of sliding_attention"),
        ({"compress_rates": {"csa": 4}}, "compress_rates: names no compressed_sparse_attention or heavily"),
        (
            {"compress_rates": {"compressed_sparse_attention": 8}},
            "compress_rates: names no heavily_compressed_attention",
        ),
        (
            {"compress_rates": {"compressed_sparse_attention": 0, "heavily_compressed_attention": 128}},
            "compress_rates.compressed_sparse_attention: a whole number",
        ),
        ({"mlp_layer_types": ["dense"] * 43}, "mlp_layer_types: hash_moe or moe for each of the 43 layers"),
        ({"head_dim": None}, "head_dim: a whole number, got null"),
        ({"hc_mult": 0}, "hc_mult: must be more than 0"),
        ({"o_groups": 7}, "o_groups (7) must divide"),
        ({"mlp_bias": True}, "mlp_bias: the released files say false"),
    ],
)
def test_hostile_keys_are_refused_by_name(tmp_path: Path, change: dict, key: str) -> None:  # type: ignore[type-arg]
    cfg = json.loads(FLASH.read_text()) | change
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    with pytest.raises(InputError, match=key.replace("(", r"\(").replace(")", r"\)")):
        load_model(str(path))


def test_a_layout_is_refused_in_one_line_and_pure_data_parallelism_runs() -> None:
    runner = CliRunner()
    refused = runner.invoke(app, ["estimate", "-m", str(FLASH), "--dp", "64", "--tp", "8", "-t", "dgx-b200"])
    assert refused.exit_code == 2
    assert refused.stderr.strip().count("\n") == 0 and "--tp" in refused.stderr
    assert "compressed attention" in refused.stderr
    ran = runner.invoke(app, ["estimate", "-m", str(FLASH), "--dp", "64", "-t", "dgx-b200", "--format", "json"])
    assert ran.exit_code == 0, ran.stderr
    assert json.loads(ran.stdout)["setup"]["compute_model"] == "flops"


def test_show_model_says_how_it_attends() -> None:
    shown = CliRunner().invoke(app, ["show", "model", str(FLASH)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.stderr
    assert "21 layers also read an entry per 4 older tokens (an indexer keeps 512), 20 one per 128" in shown.stdout
    assert "hyper-connections" in shown.stdout and "compressors and indexers" in shown.stdout
