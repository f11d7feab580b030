"""Grouped-query K and V, copied to every query head (torchtitan's repeat_kv, dpcost's default) or read grouped by
the kernel (--no-repeat-kv: transformers' SDPA without a mask), held to saved-tensor traces of transformers 5.25.0
(tests/reference/hf-configs/resolved/grouped-kv.json) and to the copies' closed form."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import cli_report, load_model, run_cli, spec_from_config

from dpcost import Options, load_topology
from dpcost.engine.activations import layer_tensors
from dpcost.engine.checkpointing import activation_memory
from dpcost.engine.estimate import memory_by_stage
from dpcost.errors import InputError

HF = Path(__file__).parent / "reference" / "hf-configs"
MEASURED = json.loads((HF / "resolved" / "grouped-kv.json").read_text())["families"]
COPIES = "K and V copied to every query head"
WINDOW, WIDE_HEAD = 32, 512  # the harness's window or chunk, and its wide heads, each measured without a mask


def _copies(arch, repeat_kv: bool, flash: bool = True) -> bool:
    """Whether dpcost's eager first layer keeps K and V copied to every query head."""
    mixer, mlp, width = arch.layer_kinds[0]
    tensors = layer_tensors(arch, mlp == "moe", flash, "eager", mixer, mlp != "none", width, repeat_kv=repeat_kv)
    return any(t.name == COPIES for t in tensors.tensors)


def _compared(tmp_path: Path) -> dict[str, tuple[tuple[bool, bool], tuple[bool, bool]]]:
    """For each family measured in both modes whose config dpcost reads with fewer key/value heads than query heads:
    (copied without a mask, copied with one) as dpcost counts them (--no-repeat-kv, then its default) and as
    measured."""
    compared = {}
    for family, found in MEASURED.items():
        modes = found.get("without mask"), found.get("with padding mask")
        if "error" in found or any(m is None or "error" in m for m in modes):
            continue
        try:
            arch = spec_from_config(tmp_path, found["config"]).architecture
        except InputError:
            continue
        if arch is None or arch.mla is not None or arch.n_kv_heads >= arch.heads:
            continue
        measured = tuple(m["key_heads"] == m["query_heads"] for m in modes)
        compared[family] = ((_copies(arch, False), _copies(arch, True)), measured)
    return compared


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    return _compared(tmp_path_factory.mktemp("configs"))


def test_without_a_mask_transformers_reads_k_and_v_grouped_as_no_repeat_kv_counts(compared):
    """transformers' sdpa_attention_forward passes K and V grouped (enable_gqa) with no mask and head dims up to 256
    (use_gqa_in_sdpa): --no-repeat-kv keeps no copies where it did not copy."""
    assert len(compared) >= 40
    assert {"llama", "mistral", "qwen2", "phi3", "gemma3_text"} <= set(compared)
    differ = {f: (ours[0], measured[0]) for f, (ours, measured) in compared.items() if ours[0] != measured[0]}
    assert differ == {}


def test_with_a_padding_mask_transformers_copies_them_as_dpcost_does_by_default(compared):
    """With a mask, SDPA's GQA would fall back to the math kernel: transformers copies K and V out (repeat_kv), as
    dpcost's default (torchtitan's repeat_kv) counts."""
    differ = {f: (ours[1], measured[1]) for f, (ours, measured) in compared.items() if ours[1] != measured[1]}
    assert differ == {}


def _measured_without_mask(tmp_path: Path, setting: str) -> dict[str, tuple[bool, bool]]:
    """For each family measured without a mask under `setting` (its window or chunk at 32 tokens, or heads 512
    wide) on 64 tokens: whether dpcost's --no-repeat-kv keeps K and V copied there (its activations at 64 tokens
    equal its default's), and whether they were."""
    out = {}
    for family, found in MEASURED.items():
        key = found.get("window_key") if setting == "window" else "head_dim"
        value = WINDOW if setting == "window" else WIDE_HEAD
        mode = found.get(f"without mask, {key} {value}") if key else None
        if mode is None or "error" in mode:
            continue
        try:
            arch = spec_from_config(tmp_path, found["config"] | {key: value}).architecture
        except InputError:
            continue
        if arch is None or arch.mla is not None or arch.n_kv_heads >= arch.heads:
            continue
        if setting == "window" and arch.local_span(0) is None:
            continue
        kept = [activation_memory(arch, 64, 1, kernels="eager", repeat_kv=r).kept for r in (True, False)]
        out[family] = (kept[0] == kept[1], mode["key_heads"] == mode["query_heads"])
    return out


def test_a_window_no_longer_than_the_sequence_keeps_the_mask_and_the_copies(tmp_path):
    """transformers keeps a sliding or chunked layer's mask where its window is no longer than the sequence
    (_ignore_causal_mask_sdpa), and copies K and V for it: --no-repeat-kv copies them there too (keeps_local_mask)."""
    windowed = _measured_without_mask(tmp_path, "window")
    assert {"mistral", "gemma3_text", "llama4_text"} <= set(windowed)
    assert {f: c for f, c in windowed.items() if c[0] != c[1]} == {}


def test_heads_wider_than_256_are_copied_without_a_mask_too(tmp_path):
    """use_gqa_in_sdpa passes K and V grouped only up to head dim 256: at 512 transformers copies them, as
    --no-repeat-kv counts (reads_grouped_kv)."""
    wide = _measured_without_mask(tmp_path, "wide")
    assert {"llama", "qwen3", "mistral"} <= set(wide)
    assert all(measured for _, measured in wide.values())
    assert {f: c for f, c in wide.items() if c[0] != c[1]} == {}


def test_one_key_value_head_is_never_copied(compared):
    """Multi-query attention's expand + reshape is a view (the size-1 head dim merges with the stride-0 one):
    Falcon's and GPT-BigCode's SDPA reads one head, mask or not, and dpcost copies nothing in either mode."""
    single = {f: c for f, c in compared.items() if MEASURED[f]["without mask"]["key_heads"] == 1}
    assert {"falcon", "gpt_bigcode"} <= set(single)
    assert all(c == ((False, False), (False, False)) for c in single.values())


def test_without_flash_a_single_head_is_copied_too(tmp_path):
    """Eager attention's scores are a batched matmul, which copies a stride-0 head dim it cannot merge with the
    micro-batch's (measured on Falcon at micro-batch 2): counted without flash, whatever the flag."""
    arch = spec_from_config(tmp_path, MEASURED["falcon"]["config"]).architecture
    assert arch.n_kv_heads == 1
    assert not _copies(arch, repeat_kv=True, flash=True)
    assert _copies(arch, repeat_kv=True, flash=False) and _copies(arch, repeat_kv=False, flash=False)


def test_the_copies_are_as_wide_as_k_and_v_at_every_query_head():
    """MiMo-V2-Flash's sliding layers: 64 query heads, keys 192 wide and values 128 (mimo-v2-flash.json): the copies
    keep 64 x (192 + 128) elements a token, 2 bytes each."""
    arch = load_model(str(HF / "mimo-v2-flash.json")).architecture
    mixer, mlp, width = arch.layer_kinds[0]
    tensors = layer_tensors(arch, mlp == "moe", True, "eager", mixer, mlp != "none", width).tensors
    assert [t.bytes_per_token for t in tensors if t.name == COPIES] == [2 * 64 * (192 + 128)]


def _activations(model: str, **compute) -> float:
    plan = {"dp": 8, "zero": 3, "recompute": "none", "framework": "fsdp", "seq_len": 8192, "micro_batch": 1}
    rows = memory_by_stage(load_model(model), load_topology("dgx-h100"), Options(**plan, **compute)).stages
    return rows[3].activations_bytes


def test_the_copies_are_k_and_v_at_every_query_head_less_their_grouped_heads():
    """Llama 3 8B (32 query heads, 8 key/value heads of 128): each of 32 layers keeps K and V at 4,096 wide per token
    where the copies are kept, 1,024 wide where they are read grouped, 2 bytes each: 32 x 8,192 x 2 x 2 x 3,072."""
    copied, grouped = _activations("llama-8b"), _activations("llama-8b", repeat_kv=False)
    assert copied - grouped == pytest.approx(32 * 8192 * 2 * 2 * 3072, abs=1)


def test_only_the_global_layers_read_them_grouped_where_the_windows_are_shorter_than_the_sequence():
    """Gemma 3 27B at 8,192 tokens: its 52 sliding layers (window 1,024) keep their masks and copy K and V even under
    --no-repeat-kv; its 10 global layers read them grouped, 16 of 32 heads of 128 each for K and for V, 2 bytes."""
    arch = load_model(str(HF / "gemma-3-27b.json")).architecture
    copied, grouped = (activation_memory(arch, 8192, 1, kernels="eager", repeat_kv=r).kept for r in (True, False))
    assert copied - grouped == pytest.approx(10 * 8192 * 2 * 2 * 16 * 128, abs=1)


def test_fused_kernels_read_k_and_v_grouped_whatever_the_flag():
    """Megatron's fused attention never copies them: the flag changes nothing there."""
    plan = {"dp": 8, "zero": 1, "recompute": "none", "framework": "megatron", "seq_len": 4096}
    model, topology = load_model("llama-8b"), load_topology("dgx-h100")
    rows = [memory_by_stage(model, topology, Options(**plan, repeat_kv=r)).stages[1].activations_bytes for r in (1, 0)]
    assert rows[0] == rows[1]


@pytest.mark.parametrize(
    ("head_dim", "flash", "copied"),
    [(128, True, False), (256, True, False), (512, True, True), (128, False, True)],
)
def test_the_kernel_reads_them_grouped_only_where_transformers_would(tmp_path, head_dim, flash, copied):
    """use_gqa_in_sdpa: K's and V's head dims equal and at most 256; without flash, transformers' eager attention
    copies them (repeat_kv)."""
    cfg = {"model_type": "llama", "hidden_size": 1024, "intermediate_size": 2048, "num_attention_heads": 8,
           "num_key_value_heads": 2, "head_dim": head_dim, "num_hidden_layers": 2, "vocab_size": 1000}  # fmt: skip
    arch = spec_from_config(tmp_path, cfg).architecture
    assert _copies(arch, repeat_kv=False, flash=flash) is copied
    assert _copies(arch, repeat_kv=True, flash=flash) is True


def test_the_report_says_the_kernel_reads_them_grouped():
    doc = cli_report("estimate", "--model", "llama-8b", "--dp", "8", "--framework", "fsdp", "--no-repeat-kv")
    assert doc["memory"]["note"].startswith("K and V read grouped by the flash kernel")
    no_flash = ("--no-repeat-kv", "--no-flash-attention")  # eager attention copies them: nothing to say
    assert (
        cli_report("estimate", "--model", "llama-8b", "--dp", "8", "--framework", "fsdp", *no_flash)["memory"]["note"]
        == ""
    )
    assert cli_report("estimate", "--model", "llama-8b", "--dp", "8", "--framework", "fsdp")["memory"]["note"] == ""
    code, out, _ = run_cli("estimate", "--model", "llama-8b", "--dp", "8", "--framework", "fsdp", "--no-repeat-kv")
    assert code == 0
    assert "flash attention, K and V read grouped, upcast loss" in " ".join(out.split())


def test_a_layout_says_it_ignores_the_flag():
    doc = cli_report("estimate", "--model", "llama-8b", "--dp", "8", "--tp", "2", "--no-repeat-kv")
    assert any("--no-repeat-kv" in w["message"] for w in doc["warnings"])
