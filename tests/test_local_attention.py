"""Sliding-window and chunked attention layers: which layers, and what they attend to, keep and cost.

Which layers: transformers 5.24.0's own reading of every config.json in tests/reference/hf-configs
(resolved/local-attention.json, written by local_attention_with_transformers.py). What they attend to: the masks
transformers builds (masking_utils.py: a sliding window keeps key j for query i where i - size < j <= i; a chunk,
where both fall in the same chunk of `size`), counted here pair by pair.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpcost.catalog import load_model
from dpcost.engine.activations import kv_cache_bytes
from dpcost.engine.attention_keys import cached_keys, causal_keys
from dpcost.engine.compute import attention_flops
from dpcost.engine.ops import layer_ops
from dpcost.errors import InputError
from dpcost.specs import LocalAttentionSpec, ModelArchitecture

CONFIGS = Path(__file__).parent / "reference" / "hf-configs"
RESOLVED = json.loads((CONFIGS / "resolved" / "local-attention.json").read_text())


def _read_by_transformers() -> list[tuple[str, dict | None]]:  # type: ignore[type-arg]
    return [(name, v) for name, v in RESOLVED["files"].items() if not (v and "not read" in v)]


@pytest.mark.parametrize(("name", "expected"), _read_by_transformers())
def test_each_config_attends_locally_where_transformers_says(name: str, expected: dict | None) -> None:  # type: ignore[type-arg]
    a = load_model(str(CONFIGS / name)).architecture
    assert a is not None
    local = a.local_attention
    if expected is None:
        assert local is None
        return
    assert local is not None
    assert (local.kind, local.size) == (expected["kind"], expected["size"])
    assert [i for i in range(a.layers) if a.local_span(i) is not None] == expected["layers"]


def test_the_resolution_covers_the_local_families() -> None:
    """The reference holds windows and chunks of every kind dpcost reads: every layer (Mistral's family), every
    other (Gemma 2, gpt-oss), five of six (Gemma 3), three of four (OLMo 3, Cohere 2), Llama 4's chunks, GPT-Neo's
    local layers, and MiMo-V2-Flash's window of sliding_window_size + 1."""
    files = RESOLVED["files"]
    assert RESOLVED["transformers"] == "5.24.0"
    assert files["gpt-oss-120b.json"]["layers"] == list(range(0, 36, 2))
    assert files["gemma-3-27b.json"]["size"] == 1024 and len(files["gemma-3-27b.json"]["layers"]) == 52
    assert files["llama-4-scout.json"]["kind"] == "chunked" and files["llama-4-scout.json"]["size"] == 8192
    assert files["mimo-v2-flash.json"]["size"] == 129
    assert files["phi-3-medium.json"]["layers"] == list(range(40))
    assert files["mistral-large-2407.json"] is None  # "sliding_window": null
    assert files["gpt-neo-125m.json"]["layers"] == list(range(1, 12, 2))


def _mask_pairs(seq: int, local: LocalAttentionSpec | None) -> int:
    """(query, key) pairs transformers' causal mask keeps, with its sliding-window or chunked overlay."""
    pairs = 0
    for q in range(seq):
        for k in range(q + 1):
            if local is None:
                pairs += 1
            elif local.kind == "sliding":
                pairs += k > q - local.size
            else:
                pairs += k // local.size == q // local.size
    return pairs


@pytest.mark.parametrize(
    ("seq", "local"),
    [
        (64, None),
        (64, LocalAttentionSpec(kind="sliding", size=16)),
        (64, LocalAttentionSpec(kind="sliding", size=64)),
        (64, LocalAttentionSpec(kind="sliding", size=100)),
        (70, LocalAttentionSpec(kind="chunked", size=16)),
        (64, LocalAttentionSpec(kind="chunked", size=16)),
    ],
)
def test_the_keys_a_query_attends_to_are_the_masks_pairs_less_half_the_diagonal(
    seq: int, local: LocalAttentionSpec | None
) -> None:
    """The causal count FlashAttention-2 uses is the area under the mask, T^2 / 2: each row's diagonal entry counts
    half. A window's band has the same half-entry on each of its two edges from row W on (W / 2 in all), a chunk on
    its diagonal only (T / 2)."""
    pairs = _mask_pairs(seq, local)
    edge = seq / 2 if local is None or local.kind == "chunked" else min(seq, local.size) / 2
    assert seq * causal_keys(seq, local) == pytest.approx(pairs - edge, abs=1e-9)


def test_a_cache_keeps_at_most_its_window_or_chunk() -> None:
    window = LocalAttentionSpec(kind="sliding", size=1024)
    assert cached_keys(32768, window) == 1024 and cached_keys(512, window) == 512
    assert cached_keys(32768, None) == 32768


def test_gemma_3_keeps_a_window_in_five_of_six_layers() -> None:
    """Gemma 3 27B at 32k tokens: 10 global layers keep 32,768 keys and values, 52 sliding ones 1,024; 16 KV heads
    of 128 each way, bf16 (config.json; transformers' DynamicSlidingWindowLayer holds min(seq, window))."""
    a = load_model(str(CONFIGS / "gemma-3-27b.json")).architecture
    assert a is not None
    per_token_layer = 16 * (128 + 128) * 2
    assert kv_cache_bytes(a, 32768, 2) == per_token_layer * (10 * 32768 + 52 * 1024) * 2


def test_decoding_reads_a_sliding_layers_window_only() -> None:
    """gpt-oss-120b decoding at 32k: 18 full layers read 32,768 keys, 18 sliding ones 128; 64 heads of 64."""
    a = load_model(str(CONFIGS / "gpt-oss-120b.json")).architecture
    assert a is not None
    assert attention_flops(a, 32768, decode=True) == 2 * 64 * (64 + 64) * (18 * 32768 + 18 * 128)


def test_a_window_no_shorter_than_the_sequence_changes_nothing() -> None:
    a = load_model(str(CONFIGS / "gpt-oss-120b.json")).architecture
    assert a is not None
    wide = LocalAttentionSpec(kind="sliding", size=4096)
    assert layer_ops(a, True, 4096, 4096, "fused", local=wide) == layer_ops(a, True, 4096, 4096, "fused")


def test_a_sliding_layers_flash_attention_computes_its_band() -> None:
    """gpt-oss-120b, 4,096 tokens, window 128: the flash kernel's forward counts the band's area, 4096 x 128 -
    128^2 / 2 per sequence, where a full layer counts 4096^2 / 2."""
    a = load_model(str(CONFIGS / "gpt-oss-120b.json")).architecture
    assert a is not None and a.local_attention is not None
    t = 4096
    ops = {op.name: op for op in layer_ops(a, True, t, t, "fused", local=a.local_attention)}
    assert ops["attention"].flops == 2 * 64 * (64 + 64) * (t * 128 - 128**2 / 2)


def test_local_layers_must_be_attention_layers() -> None:
    with pytest.raises(ValueError, match=r"local_attention\.layers"):
        ModelArchitecture(
            hidden=512, layers=4, heads=8, vocab=1000, ffn=1024,
            local_attention={"size": 128, "layers": (1, 7)},
        )  # fmt: skip


@pytest.mark.parametrize(
    ("name", "key", "value", "said"),
    [
        ("gpt-oss-20b.json", "sliding_window", "wide", "sliding_window: expected a whole number"),
        ("gpt-oss-20b.json", "layer_types", "sliding", "layer_types: one of full_attention, sliding_attention"),
        ("gemma-3-1b.json", "sliding_window_pattern", 0, "sliding_window_pattern: a whole number of layers above 0"),
        ("gemma-3-1b.json", "sliding_window_pattern", [6], "sliding_window_pattern: a whole number"),
        ("gpt-neo-125m.json", "attention_layers", 5, "attention_layers: one of global, local per layer"),
        ("gpt-neo-125m.json", "attention_types", "x", "attention_types: \\[\\[kinds, repeats\\]"),
        ("mimo-v2-flash.json", "sliding_window_size", -129, "sliding_window_size: must be more than 0, got -129"),
        ("llama-4-scout.json", "text_config.no_rope_layers", 7, "text_config.no_rope_layers: 0 or 1 per layer"),
        ("llama-4-scout.json", "text_config.no_rope_layer_interval", 0, "no_rope_layer_interval: must be more than 0"),
    ],
)
def test_a_malformed_window_or_layer_list_is_refused_naming_the_key(
    tmp_path: Path, name: str, key: str, value: object, said: str
) -> None:
    cfg = json.loads((CONFIGS / name).read_text())
    *outer, last = key.split(".")
    target = cfg
    for part in outer:
        target = target[part]
    target[last] = value
    if key == "attention_types":
        del cfg["attention_layers"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    with pytest.raises(InputError, match=said):
        load_model(str(path))


def _cudnn_rows() -> list[dict[str, str]]:
    from conftest import read_reference_csv

    return read_reference_csv("compute-rates/attention-cudnn-sdpa.csv")


def _predicted_over_measured(row: dict[str, str], topology: str) -> float:
    """dpcost's forward + backward seconds for one benchmark call (cuDNN's kernel) over the measured ones."""
    from dpcost.catalog import load_topology
    from dpcost.engine.ops import Op, times
    from dpcost.engine.rates import rates_for

    gpu = load_topology(topology).gpu
    seq, heads = int(row["seq_len"]), int(row["q_heads"])
    d_qk, d_v = int(row["head_dim_qk"]), int(row["head_dim_vo"])
    local = LocalAttentionSpec(size=int(row["sliding_window"])) if row["sliding_window"] else None
    keys = causal_keys(seq, local)
    flops = 2.0 * int(row["batch"]) * seq * keys * heads * (d_qk + d_v)
    banded = local is not None and seq > local.size
    op = Op("attention", "core_attn", "attention", flops, 0.0, 1, 2.5 * flops, 0.0, 3,
            span=2 * keys, head_dim=(d_qk + d_v) / 2, banded=banded)  # fmt: skip
    t = times([op], rates_for(gpu), gpu.bf16_dense, gpu.bf16_dense, gpu.hbm_bandwidth, seq, "cudnn")
    return (t.forward_seconds + t.backward_seconds) / ((float(row["fwd_ms"]) + float(row["bwd_ms"])) / 1e3)


@pytest.mark.parametrize(
    ("gpu", "topology", "window"), [("NVIDIA H200", "hgx-h200", 1024), ("NVIDIA GB200", "gb200-nvl72", 128)]
)
def test_a_window_costs_against_a_full_layer_what_cudnns_benchmark_measures(
    gpu: str, topology: str, window: int
) -> None:
    """cuDNN's SDPA training benchmark (attention-cudnn-sdpa.csv) times gpt-oss's sliding-window attention and Llama
    3.1's full causal attention on the same GPU. dpcost prices a step's kernels, not a burst's, so its time is the
    measured one times a factor; a window's factor is within 15% of the full layer's at 4k-16k tokens, where pricing
    the band's keys alone (without its query block's, rates.attention_query_tile) read the 128-key window at half the
    full layer's factor on GB200."""
    rows = [r for r in _cudnn_rows() if r["gpu"] == gpu and r["seq_len"] in ("4096", "8192", "16384")]
    full = [_predicted_over_measured(r, topology) for r in rows if r["config"] == "llama3.1"]
    banded = [_predicted_over_measured(r, topology) for r in rows if r["sliding_window"] == str(window)]
    assert len(full) == len(banded) == 3
    for f, b in zip(full, banded, strict=True):
        assert b == pytest.approx(f, rel=0.15)


def test_mla_attention_costs_against_a_full_layer_what_cudnns_benchmark_measures() -> None:
    """The head-dim shares come from Hopper's sweeps (rates.ATTENTION_HEAD_DIM); cuDNN's benchmark on GB200 times
    DeepSeek-V3's MLA shape (keys 192, values 128: head dim 160 to dpcost) beside Llama 3.1's 128: its factor stays
    within 15% of Llama's at 4k-16k tokens."""
    rows = [r for r in _cudnn_rows() if r["gpu"] == "NVIDIA GB200" and r["seq_len"] in ("4096", "8192", "16384")]
    full = [_predicted_over_measured(r, "gb200-nvl72") for r in rows if r["config"] == "llama3.1"]
    mla = [_predicted_over_measured(r, "gb200-nvl72") for r in rows if r["config"] == "dsv3"]
    assert len(full) == len(mla) == 3
    for f, m in zip(full, mla, strict=True):
        assert m == pytest.approx(f, rel=0.15)


def test_gb300s_attention_runs_as_much_faster_than_gb200s_as_cudnns_benchmark_measures() -> None:
    """gb300-nvl72's cuDNN attention share is Blackwell's times GB300's speed over GB200's in cuDNN's benchmark
    (Llama 3.1 and DeepSeek-V3 causal shapes, 2k-32k tokens, geometric mean), at the same BF16 peak."""
    import math

    from dpcost.catalog import load_topology
    from dpcost.engine.rates import ARCH_RATES, rates_for

    seconds = {(r["gpu"], r["config"], r["seq_len"]): float(r["fwd_ms"]) + float(r["bwd_ms"]) for r in _cudnn_rows()}
    ratios = [
        seconds[("NVIDIA GB200", config, seq)] / seconds[("NVIDIA GB300", config, seq)]
        for config in ("llama3.1", "dsv3")
        for seq in ("2048", "4096", "8192", "16384", "32768")
    ]
    faster = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    gb300, gb200 = load_topology("gb300-nvl72").gpu, load_topology("gb200-nvl72").gpu
    assert gb300.bf16_dense == gb200.bf16_dense
    share = rates_for(gb300).attention["cudnn"] / ARCH_RATES["blackwell"].attention["cudnn"]
    assert share == pytest.approx(faster, abs=0.001)


SYNTHETIC = json.loads((CONFIGS / "resolved" / "local-attention-synthetic.json").read_text())


@pytest.mark.parametrize("case", SYNTHETIC["cases"], ids=lambda c: json.dumps(c["config"], sort_keys=True)[:90])
def test_each_family_rule_resolves_as_transformers_does(case: dict) -> None:  # type: ignore[type-arg]
    """Small configs that switch what the real files leave alone (use_sliding_window, max_window_layers,
    sliding_window_pattern, a window null or absent), resolved by transformers 5.24.0 (resolved/
    local-attention-synthetic.json, local_attention_with_transformers.py --synthetic)."""
    from dpcost.catalog import model_from_hf_config

    a = model_from_hf_config(dict(case["config"]), "config.json").architecture
    assert a is not None
    expected = case["transformers"]
    if expected is None:
        assert a.local_attention is None
        return
    assert a.local_attention is not None and a.local_attention.size == expected["size"]
    assert [i for i in range(a.layers) if a.local_span(i) is not None] == expected["layers"]


def test_context_parallelism_is_refused_for_attention_sinks() -> None:
    """Transformer Engine has no attention backend for learned sinks under p2p or all-gather context parallelism
    (get_attention_backend's softmax-type table: FusedAttention takes sinks under CP only with the a2a exchange,
    FlashAttention never, the unfused path no CP), which is what Megatron-Core runs: gpt-oss at --cp 2 is refused
    naming --cp (and so `dpcost plan` counts such layouts among those its rules refuse)."""
    from conftest import run_cli

    model = str(CONFIGS / "gpt-oss-120b.json")
    code, _, err = run_cli("estimate", "-m", model, "--cp", "2", "--pp", "4", "--ep", "8", "--dp", "8")
    assert code == 2 and "--cp" in err and "attention sinks" in err
    code, _, err = run_cli("estimate", "-m", model, "--cp", "1", "--pp", "4", "--ep", "8", "--dp", "16")
    assert code == 0, err
