#!/usr/bin/env python3
"""Published large training runs (TP x CP x PP x DP (x EP) layouts) against dpcost's layout step, nothing fitted per
run.

    python benchmarks/large_runs.py [--holdout | --mlperf | --fit-matmul | --fit-host | --fit-list-host]

With --fit-matmul, the first of the three constants these runs fix: the in-step matmul share (engine/rates.py
IN_STEP_MATMUL), the value of FIT_GRID whose in-sample geomean error (runs.csv only) is least, each costed in a
process of its own. With --fit-host, the second: an MoE layer's host time (engine/host.py MOE_LAYER_HOST_SECONDS),
the value of FIT_HOST_GRID with the least in-sample geomean error, likewise. With --fit-list-host, the third: the
host time a rank of a torch list collective under DeepSpeed's synchronous ZeRO-3 fetch (engine/synchronous_fetch.py
LIST_HOST_SECONDS_PER_RANK), from FIT_LIST_HOST_GRID, likewise.

With --holdout, the held-out rows instead of runs.csv: holdout-runs.csv (NVIDIA's performance tables, gathered after
the model was built), dgxc-benchmarking v25.03's NeMo layout series
(tests/reference/training-runs/dgxc-nemo-*.csv, read by dgxc_rows) and the Megatron Core MoE report's Table 11 with the
switches of the commands behind it (large-runs/mcore-moe-report-2603.csv, read by mcore_moe_rows). With --mlperf,
MLPerf Training v5.0 and v5.1's Llama 3.1 405B and 8B results and v3.0-v4.1's GPT-3 175B ones, every submitter
(tests/reference/mlperf/, read by mlperf_rows), held out too: each system's measured step time and the switches its
launch config sets (TP overlap, FP8 parameter gathers, the cross-entropy).

For every configuration of tests/reference/large-runs/runs.csv whose model dpcost can build and whose GPU has a
catalog topology, dpcost costs one step with `layout_estimate.layout_step` on that topology: the row's layout,
micro-batch, global batch, sequence length, recomputation, sequence parallelism and interleaving, with dpcost's
default compute model for a layout (op by op, each GEMM at its TP shard, at the GPU's sustained rates from kernel
benchmarks: engine/rates.py), and beside it at one efficiency for every FLOP (--compute-model flops, --mfu 0.40).
The published number is turned into the same quantity, a step time in seconds, with the source's own definition:

- step_time_s: as printed;
- tokens_per_s_per_gpu: global batch x sequence / (GPUs x tokens/s/GPU), no FLOP count needed;
- tflops_per_gpu of Narayanan et al. (SC'21): their eq. 3, F = 96 B s l h^2 (1 + s / (6h) + V / (16 l h)) FLOPs per
  iteration, which counts the recomputation forward pass (4 passes: hardware FLOPs); step = F / (GPUs x TFLOP/s).
  This, not dpcost's hardware FLOPs, is the conversion: the comparison is of step times, the paper's FLOP count
  only undoes its own division;
- tflops_per_gpu of Llama 3 (Table 4), whose FLOP count is not printed: PaLM's model FLOPs (6N + 12LHQT, what
  dpcost's LayoutStep.model_flops counts), the BF16 MFU column being TFLOP/s over 989;
- mfu_pct of Korthikanti et al. and MegaScale: model FLOPs 72 B s l h^2 (1 + s / (6h) + V / (12 l h)) at the
  A100's 312 TFLOP/s (both tables' iteration times and MFUs multiply out with it); step = F / (GPUs x MFU x peak);
- gpu_hours_per_trillion_tokens (DeepSeek-V3 report): GPU-seconds per token x tokens per step / GPUs, at the final
  batch of 15,360 x 4,096 (the report's figure averages over the batch ramp).

A row's cells map onto layout_step as printed; what a source leaves blank takes the engine's default and the output
flags it: micro-batch 1, sequence parallelism off (on where Megatron requires it: MoE with TP, TP overlap), no
interleaving, and the recomputation `dpcost estimate` chooses, the least of none, selective and full with which the
run fits (it ran, so it fit: SC'21's 529.6B on TP8 x PP35 does not without recomputing); but Megatron-Bridge's as
its presets set it, and none for Llama 3, whose own pipeline schedule keeps other micro-batches in flight than the
1F1B the inference would count. The GPU's catalog topology: A100-80GB and MegaScale's unnamed Ampere GPUs (their
MFUs imply a 312 TFLOP/s peak) -> dgx-a100, H100 -> dgx-h100, H800 -> hgx-h800, B200 -> dgx-b200, B300 -> dgx-b300,
GB200 -> gb200-nvl72, GB300 -> gb300-nvl72; a run larger than dgx-a100's 140-node SuperPOD runs on its tiers with
the last one left unbounded (flagged). FP8 and MXFP8 runs compute on the FP8 dense peak, NVFP4 runs on the FP4
one. What a source says of its own schedule sets the engine's switches: Llama 3's all-gather CP, DeepSeek's
DualPipe hiding the expert all-to-alls,
MegaScale's overlapped TP, Megatron-Bridge's presets (TP and all-to-all overlap, bf16 gradient reduction), the
gradient all-reduce (no distributed optimizer) of Megatron-LM in 2021-22 (SC'21, Korthikanti et al.), Megatron-FSDP
where a Megatron-Bridge table prints FSDP (optim_grads_params, ZeRO-3, as its presets set it); everything else runs
Megatron's distributed optimizer. DeepSpeed's ZeRO-3, Llama 3's FSDP, DualPipe and MegaScale's changed transformer
block are not modelled as such: flagged.

One comparison per configuration: rows that differ only in the metric printed (and the table or sentence it is
printed in) are one configuration; step time is preferred, then tokens/s/GPU, then TFLOP/s, then MFU, then
GPU-hours per trillion tokens. The naive figure beside each: step = 6N x tokens / (GPUs x 40% x peak), N the active
parameters (PaLM's model FLOPs at 40% MFU, no communication, no bubble), on the same peak as dpcost's (FP8 or FP4
where the run computes in it). Errors are predicted / published - 1; the summary is the geometric mean of |error|.
"""

from __future__ import annotations

import csv
import functools
import importlib
import json
import math
import multiprocessing
import re
import statistics
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from dpcost.accuracy import ERROR_FLOOR
from dpcost.catalog import load_model, load_topology, model_from_hf_config
from dpcost.engine import host
from dpcost.engine.availability import environment
from dpcost.engine.checkpointing import DEFAULT_MODULES
from dpcost.engine.estimate import estimate
from dpcost.engine.layout import Layout
from dpcost.engine.layout_estimate import LayoutStep, layout_step
from dpcost.engine.layout_memory import padded_vocab_size
from dpcost.engine.layout_report import layout_recompute
from dpcost.engine.layout_step import pp_overlapped
from dpcost.engine.nccl_channels import P2P_PEERS_PER_ROUND
from dpcost.engine.params import count_params
from dpcost.engine.pipeline_layout import accounted_layout
from dpcost.engine.placement import job_view
from dpcost.engine.prepare import DTYPE_BYTES
from dpcost.engine.rates import matmul_efficiency
from dpcost.errors import InputError
from dpcost.options import DEFAULT_MFU, Options
from dpcost.specs import ModelSpec, TopologySpec

REFERENCE = Path(__file__).resolve().parent.parent / "tests" / "reference"
HERE = REFERENCE / "large-runs"
CSV = HERE / "runs.csv"
HOLDOUT = HERE / "holdout-runs.csv"  # NVIDIA's performance tables, every release runs.csv does not hold (README there)
MODELS = HERE / "models"

# Megatron-Bridge's DeepSeek-V3 recompute_modules by the release's presets and GPU, where they are not mla_up_proj
# (H100: mla_up_proj and mlp throughout): v0.2.0 (7af9601c, the 25.11 tables; configs/deepseek/
# workload_base_configs.py), then the MXFP8 V2 presets the later tables run (deepseek_workload_base_configs.py)
# of v0.3.0 (26.02), v0.4.0 (26.04), v0.4.2 (26.04.01: a8b6cb3d6's B200 preset), v0.5.0 (26.06; v0.6.0, 26.08,
# the same on GB200 and GB300: perf_recipes/deepseek/). Each entry holds from its release to the next.
DEEPSEEK_PRESET_MODULES: tuple[tuple[str, dict[str, frozenset[str]]], ...] = (
    ("25", {"GB300": frozenset({"moe_act"})}),
    ("26.02", {}),
    ("26.04", {"GB200": frozenset({"mlp"})}),
    ("26.04.01", {"GB200": frozenset({"mlp"}), "B200": frozenset({"mla_up_proj", "mlp"})}),
    ("26.06", {"GB300": frozenset(), "B200": frozenset({"mla_up_proj", "mlp"})}),
)


# Megatron-Bridge's DeepSeek-V3 recipe trains one MTP module (recipes/deepseek/deepseek_v3.py: mtp_num_layers 1 in
# v0.2.0 (7af9601c, the 25.11 tables) to v0.6.0 (h100/deepseek_v3.py), which the performance scripts leave), and its
# presets split the pipeline by a layout string (configs/deepseek/deepseek_workload_base_configs.py pp_layout) or the
# recipe's layout_map for (PP, VP), one layout per PP x VP stage count: 16 for PP 16, PP 8 x 2, PP 4 x 4 and PP 2 x 8
# (the embedding and 4 layers, 14 x 4, then 1 layer, MTP and the loss), 8 for PP 8 (layout_map[(8, 1)]) and 32 for
# H100's PP 8 x 4. The 26.02-26.08 tables name the model "DeepSeekV3" alone; their model TFLOP/s per token are those
# of 25.11's "DeepSeek-V3 (w/ MTP)" row, not of its "w/o MTP" rows (test_large_runs).
BRIDGE_DSV3_LAYOUTS = {16: "Et*4|(t*4|)*14tmL", 8: "Et*8|(t*8|)*6t*5mL", 32: "Et|(tt|)*30mL"}
# Kimi K2's (61 layers, no MTP): recipes/kimi/kimi_k2.py _get_kimi_k2_pipeline_layout at v0.3.1-v0.5.0, which
# configs/kimi/kimi_llm_pretrain.py applies by the preset's PP and VP (no preset there sets pp_layout): the same
# splits without MTP, one per stage count (PP 4 alone: 16, 16, 16, 13)
BRIDGE_KIMI_LAYOUTS = {16: "Et*4|(t*4|)*14tL", 8: "Et*8|(t*8|)*6t*5L", 4: "Et*16|t*16|t*16|t*13L"}


def preset_pipeline_split(row: Row, layers: int, pp: int, virtual: int) -> tuple[int, str | None, str]:
    """The MTP modules and pipeline layout the row's run set: MLPerf v6.0's DeepSeek-V3 config
    (MLPERF_V60_DSV3_LAYOUT), and MLPerf's ASYM_PP_EMBED / ASYM_PP_LOSS (Megatron's account-for-embedding/loss split,
    pipeline_layout.accounted_layout); the layout and MTP modules a command gives (mcore_moe_rows); Megatron-Bridge's
    DeepSeek-V3 presets (BRIDGE_DSV3_LAYOUTS) for the tables that say "w/ MTP" and those from 26.02 on, its Kimi K2
    presets (BRIDGE_KIMI_LAYOUTS), and its Llama 3.1 405B recipe, which counts the embedding and the loss as a layer
    each (recipes/llama/llama3.py llama31_405b_pretrain_config, account_for_embedding/loss_in_pipeline_split True from
    v0.2.0 on); none elsewhere. With the flag that says so."""
    source, model = row["source"], row["model"]
    if source.startswith("mlperf-") and "w/ MTP" in model:
        return 1, MLPERF_V60_DSV3_LAYOUT, f"MTP trained; the config's pipeline layout {MLPERF_V60_DSV3_LAYOUT}"
    if row.fields.get("pipeline_layout"):  # the Megatron Core MoE report's commands (mcore_moe_rows)
        layout, mtp = row["pipeline_layout"], int(row["mtp_layers"] or 0)
        return mtp, layout, f"{'MTP trained; ' if mtp else ''}the command's pipeline layout {layout}"
    embedding, loss = (row.fields.get(f"asym_pp_{end}") == "yes" for end in ("embed", "loss"))
    if source.startswith("mbridge-") and model == "Llama 3.1 405B":
        embedding = loss = True
    if (embedding or loss) and pp > 1:
        try:
            layout = accounted_layout(layers, pp, virtual, embedding, loss)
        except ValueError as exc:  # a run Megatron could not have split so: its config cannot have asked for it
            return 0, None, f"the embedding and the loss not counted as layers in the split ({exc})"
        return 0, layout, f"the embedding and the loss counted as a layer each in the pipeline's split: {layout}"
    if source.startswith("mbridge-") and (
        "w/ MTP" in model or (model == "DeepSeek-V3" and bridge_release(source) >= "26")
    ):
        layout = BRIDGE_DSV3_LAYOUTS.get(pp * virtual)
        return 1, layout, (f"MTP trained; Megatron-Bridge's DeepSeek-V3 pipeline layout {layout}" if layout
                           else "MTP trained on the last stage")  # fmt: skip
    if source.startswith("mbridge-") and model == "Kimi_K2" and pp * virtual in BRIDGE_KIMI_LAYOUTS:
        layout = BRIDGE_KIMI_LAYOUTS[pp * virtual]
        return 0, layout, f"Megatron-Bridge's pipeline layout {layout}"
    return 0, None, ""


def bridge_release(source: str) -> str:
    """A Megatron-Bridge table's release ("26.04.01"), which orders as its presets' versions do; "25" for NeMo's
    tables and the 25.x releases, which ran v0.2.0's presets or older."""
    release = source.removeprefix("mbridge-") if source.startswith("mbridge-") else "25"
    return release if release >= "26" else "25"


# The first Megatron-Bridge release (the tables': 26.02 = v0.3.0, 26.02.01 = v0.3.1, 26.04 = v0.4.0, 26.04.01 =
# v0.4.2, 26.06 = v0.5.0, 26.06.01 = v0.5.1, 26.08 = v0.6.0; "25" for v0.2.0) whose presets dispatch a model's tokens
# with the flex dispatcher (DeepEP or HybridEP) on a GPU, and the last where they do ("" for every later one): read
# in every release's presets and the code that applies them (v0.2.0-v0.3.0 qwen3_moe.py
# apply_flex_dispatcher_backend; v0.3.1 the per-GPU perf functions; v0.4.0-v0.5.1 overrides.py, a preset's
# moe_flex_dispatcher_backend or else alltoall; v0.6.0 perf_recipes/), e.g. Qwen3-30B-A3B's H100 presets DeepEP at EP 8
# in v0.3.0 (qwen3_workload_base_configs.py:417) and HybridEP at EP 16 from v0.3.1 (qwen3_llm_pretrain.py:315),
# Nemotron 3 Super's HybridEP from v0.4.0 (nemotron_3_workload_base_configs.py:101). Elsewhere the providers' alltoall
# stands (qwen_provider.py, gpt_oss_provider.py). Where the EP group stays in one NVLink domain the two send the same.
# Every preset's, with its file and line: tests/reference/large-runs/mbridge-moe-dispatchers.csv.
BRIDGE_FLEX: dict[tuple[str, str], tuple[str, str]] = {
    ("Qwen3 30B", "H100"): ("26.02", ""),
    ("Qwen3 30B", "B200"): ("26.02.01", ""),
    ("Qwen3 30B", "B300"): ("26.02", ""),
    ("Qwen3 30B", "GB200"): ("25", ""),
    ("Qwen3 30B", "GB300"): ("25", ""),
    ("Qwen3 235B", "B300"): ("26.04.01", ""),
    ("Qwen3 235B", "GB200"): ("25", ""),
    ("Qwen3 235B", "GB300"): ("25", ""),
    ("GPT OSS 120B", "B200"): ("26.04", "26.04"),  # V2 only, reverted in v0.4.2
    ("GPT OSS 120B", "B300"): ("26.04", ""),  # V2 from v0.4.0
    ("Nemotron_3_Nano", ""): ("26.02.01", ""),
    ("Nemotron_3_Super", ""): ("26.04", ""),
    ("Nemotron_3_Ultra", ""): ("26.08", ""),
}


def bridge_flex_dispatch(source: str, model: str, gpu: str, precision: str, global_batch: str) -> bool:
    """Whether a Megatron-Bridge preset dispatches this model's tokens with the flex dispatcher (BRIDGE_FLEX; every
    DeepSeek-V3 preset does: DeepEP or HybridEP, docs/sources/moe-dispatch.md; 25.09's others, v0.1.0rc4, alltoall).
    GPT-OSS 120B's V2 presets (global batch 1,280) on GB200 in v0.4.0-v0.4.1 and in MXFP8 on GB200 and GB300 from
    v0.5.0, and Qwen3-235B-A22B's B200 MXFP8 V2 preset from v0.5.1, are the exceptions a GPU and release alone do
    not say."""
    if model.startswith("DeepSeek-V3"):
        return True
    if source == "mbridge-25.09":
        return False
    release = bridge_release(source)
    if model.startswith("GPT OSS 120B") and gpu in ("GB200", "GB300"):
        v2 = global_batch == "1280"
        return v2 and ((gpu == "GB200" and release == "26.04") or (precision == "mxfp8" and release >= "26.06"))
    if model.startswith("Qwen3 235B") and gpu == "B200":
        return precision == "mxfp8" and global_batch == "8192" and release >= "26.06.01"
    for (prefix, on), (first, last) in BRIDGE_FLEX.items():
        if model.startswith(prefix) and on in ("", gpu):
            return release >= first and (not last or release <= last)
    return False


def cross_entropy_impl(source: str, model: str) -> str:
    """The cross-entropy a source's runs ran (ops.LOSS_TRAFFIC; docs/sources/cross-entropy.md): Megatron-Core's
    default, unfused (cross_entropy_loss_fusion False in every release), for the configs that leave it and the
    papers' runs (for those not on Megatron-LM, whose loss is not published, that default too); the native fused
    kernel where NeMo 2.0 turns fusion on (its GPTConfig; nemo-25.02, nemo-25.04) and where dgxc's and NeMo 1.0's
    launcher configs set it (dgxc-25.03 but its GPT 175B; nemo-24.07's Llama 3 and Nemotron 8B and 22B); Transformer
    Engine's kernel where every performance script also sets cross_entropy_fusion_impl "te" (NeMo v2.4.0's
    helpers.py:311, nemo-25.07; every Megatron-Bridge release), but v0.6.0's DeepSeek-V4 Flash and Nemotron 3 Ultra
    presets, which keep native."""
    if source.startswith("mbridge-") or source == "nemo-25.07":
        native = source == "mbridge-26.08" and model.startswith(("DeepSeekV4", "Nemotron_3_Ultra"))
        return "vocab-parallel-fused" if native else "vocab-parallel-te"
    if source in ("nemo-25.02", "nemo-25.04") or (source == "dgxc-25.03" and not model.startswith("GPT")):
        return "vocab-parallel-fused"
    if source == "nemo-24.07" and model.startswith(("Llama 3", "Nemotron-8B", "Nemotron-22B")):
        return "vocab-parallel-fused"
    return "vocab-parallel"


def deepseek_preset_modules(source: str, gpu: str) -> frozenset[str]:
    """DeepSeek-V3's recompute_modules in the presets of `source`'s release (DEEPSEEK_PRESET_MODULES)."""
    if gpu == "H100":
        return frozenset({"mla_up_proj", "mlp"})
    release = [by_gpu for start, by_gpu in DEEPSEEK_PRESET_MODULES if bridge_release(source) >= start]
    return (release[-1] if release else {}).get(gpu, frozenset({"mla_up_proj"}))


def gpt_oss_preset_modules(source: str, gpu: str, precision: str, global_batch: str) -> frozenset[str]:
    """GPT-OSS 120B's recompute_modules as Megatron-Bridge's presets run them: layernorm and moe_act on GB200, B200
    and H100 (configs/gpt_oss/ workload base configs, V1 and the V2 presets built on them), in effect from v0.3.0
    (the 26.02 tables), whose utils/overrides.py sets recompute_granularity "selective" with them (v0.2.0's
    helpers.py set the modules alone, which recomputes nothing); none on GB300 and B300, nor in GB200's MXFP8 V2
    preset (global batch 1,280) from v0.5.0 (the 26.06 tables: recompute_modules=[]; v0.6.0 perf_recipes/gpt_oss/
    gb200/gpt_oss.py the same)."""
    release = bridge_release(source)
    if release < "26" or gpu not in ("GB200", "B200", "H100"):
        return frozenset()
    if gpu == "GB200" and precision == "mxfp8" and global_batch == "1280" and release >= "26.06":
        return frozenset()
    return frozenset({"layernorm", "moe_act"})


# Megatron-Bridge's Nemotron 3 recompute_modules by (model, GPU, the table's precision), where its presets name any:
# scripts/performance/configs/nemotronh/ nemotron_3_nano_workload_base_configs.py in v0.3.1 (the 26.02.01 tables)
# and nemotron_3_workload_base_configs.py in v0.4.0-v0.5.1 (26.04-26.06.01): Nano's H100_FP8_CS_V1, Super's
# B300_NVFP4_V1 (= B300_BF16_V1) and B200_FP8_MX_V1 (= BASE_NEMOTRON_3_SUPER_CONFIG_B200), unchanged over those
# releases; v0.6.0's perf_recipes/nemotronh/{gb200,gb300}/nemotronh.py (26.08) for Ultra. utils/overrides.py
# _set_recompute_overrides runs them as recompute_granularity "selective"; every other preset names none, and the
# recipes recompute nothing (recipes/nemotronh/nemotron_3_nano.py recompute_granularity = None; nemotron_3_super.py
# sets none).
# Megatron-Bridge's presets that recompute whole layers, by the block method: Llama 3 8B on H100 in FP8 (current
# scaling) recomputes the first 5 of its 32 layers (LLAMA3_8B_H100_FP8_CS_BASE_CONFIG recompute_num_layers=5 in
# scripts/performance/configs/llama3/workload_base_configs.py at v0.2.0, llama/llama3_workload_base_configs.py at
# v0.3.0-v0.4.0; v0.6.0's perf_recipes/llama/h100/llama3.py the same), which utils/helpers.py set_recompute_overrides
# runs as recompute_granularity "full", recompute_method "block" (--recompute-block).
BRIDGE_RECOMPUTE_BLOCK: dict[tuple[str, str, str], int] = {("Llama 3 8B", "H100", "fp8"): 5}
NEMOTRON3_PRESET_MODULES: dict[tuple[str, str, str], frozenset[str]] = {
    ("Nemotron_3_Nano", "H100", "fp8"): frozenset({"moe", "layernorm", "core_attn", "moe_act"}),
    ("Nemotron_3_Super", "B300", "nvfp4"): frozenset({"moe_act", "layernorm"}),
    ("Nemotron_3_Super", "B200", "mxfp8"): frozenset({"moe_act", "layernorm"}),
    ("Nemotron_3_Ultra", "GB300", "mxfp8"): frozenset({"moe_act"}),
    ("Nemotron_3_Ultra", "GB200", "mxfp8"): frozenset({"moe_act"}),
}


A100_PEAK = 312e12  # the 16-bit dense peak Narayanan et al., Korthikanti et al. and MegaScale divide by

# The model of each `model` cell: a catalog name, a YAML spec of ../tests/reference, or a Hugging Face config.json.
# dgxc's Llama 3.1 405B recipe trains on mock data with the GPT-2 tokenizer (build_model pads its vocabulary)
LLAMA_405B_GPT2_VOCAB = "Llama 3.1 405B (GPT-2 vocabulary)"
# MLPerf Training's llama31_405b: Llama 3.1 405B with the Mixtral 8x22B tokenizer (the NVIDIA implementation's README:
# "we replace the paper's TikTokenizer with the Mixtral 8x22b tokenizer"), 32,000 tokens (MLCommons' reference README,
# "Vocab size | 32,000"; hf-configs/mixtral-8x22b.json); mlperf_rows pads it as the run's TP does
LLAMA_405B_MIXTRAL_VOCAB = "Llama 3.1 405B (Mixtral vocabulary)"
# MLPerf Training's gpt3: GPT-3 175B's shape (96 x 12288, 96 heads), no dropout (the implementations' conf/custom.yaml
# hidden_dropout and attention_dropout 0.0), the reference's 50,257 tokens (padded by mlperf_rows)
GPT3_MLPERF = "GPT-3 175B (MLPerf)"
MODEL_SPECS: dict[str, str] = {
    **{
        f"GPT {size}B": f"large-runs/models/gpt-{size}b.yaml"
        for size in ("1.7", "3.6", "7.5", "18.4", "39.1", "76.1", "145.6", "174.6", "310.1", "529.6")
    },
    "GPT 1008.0B": "large-runs/models/gpt-1008b.yaml",
    "GPT 22B": "large-runs/models/gpt-22b.yaml",  # Korthikanti et al. Table 3
    "GPT 175B": "large-runs/models/gpt-174.6b.yaml",  # Korthikanti's 175B: SC'21's 174.6B shape
    "GPT 530B": "large-runs/models/gpt-529.6b.yaml",
    "GPT 1T": "large-runs/models/gpt-1008b.yaml",
    "GPT 175B (Megatron-LM)": "large-runs/models/megascale-gpt-175b.yaml",
    "GPT 175B (MegaScale)": "large-runs/models/megascale-gpt-175b.yaml",
    "Qwen3 235B-A22B": "large-runs/models/qwen3-235b-a22b.yaml",
    "Nemotron-4 15B": "training-runs/nemotron/nemotron4-15b.yaml",
    "BLOOM 176B": "hf-configs/bloom.json",
    "Llama 3 405B": "llama-405b",  # Llama 3.1 405B's config: the same shape as Llama 3's Table 3
    "Llama 3.1 405B": "llama-405b",
    "Llama 3 70B": "llama-70b",
    "Llama 3.1 70B": "llama-70b",
    "Llama 3.1 8B": "llama-8b",
    "DeepSeek-V3": "deepseek-v3",
    "DeepSeek-V3 (w/ MTP)": "deepseek-v3",
    "DeepSeek-V3 (w/o MTP)": "deepseek-v3",
    # the held-out tables' other models (holdout-runs.csv)
    "Llama 3 8B": "llama-8b",  # Megatron-Bridge's LLAMA3_8B: Llama 3.1 8B's shape
    "Llama 2 70B": "llama2-70b",
    "Llama 2 13B": "hf-configs/llama-2-13b.json",
    "Mixtral 8x7B": "mixtral-8x7b",
    "Mixtral 8x22B": "hf-configs/mixtral-8x22b.json",
    "Qwen3 30B-A3B": "hf-configs/qwen3-30b-a3b.json",
    "GPT OSS 120B": "hf-configs/gpt-oss-120b.json",
    "GPT OSS 20B": "hf-configs/gpt-oss-20b.json",
    "Kimi_K2": "hf-configs/kimi-k2.json",
    "LLAMA4-Scout-LLM": "hf-configs/llama-4-scout.json",
    "Nemotron_3_Nano": "hf-configs/nemotron-3-nano-30b-a3b.json",
    "Nemotron_3_Super": "hf-configs/nemotron-3-super-120b-a12b.json",
    "Nemotron_3_Ultra": "hf-configs/nemotron-3-ultra-550b-a55b.json",
    "Nemotron-4 340B": "training-runs/nemotron/nemotron4-340b.yaml",
    LLAMA_405B_GPT2_VOCAB: "llama-405b",  # build_model: vocab 51,200
    LLAMA_405B_MIXTRAL_VOCAB: "llama-405b",  # build_model: vocab 32,000
    GPT3_MLPERF: "large-runs/models/gpt-174.6b.yaml",  # build_model: vocab 50,257, no dropout
    "Nemotron-8B": "large-runs/models/nemotron3-8b.yaml",
    "Nemotron-22B": "large-runs/models/nemotron3-22b.yaml",
    "Llama 2 7B": "large-runs/models/llama2-7b.yaml",
    "GPT3-5B": "large-runs/models/gpt3-5b.yaml",
    "GPT3-20B": "large-runs/models/gpt3-20b.yaml",
}
UNKNOWN_MODELS = {
    "OPT 175B": "no spec here, and the row cannot be costed as printed: PP not stated, its 2M-token batch (1024 "
    "sequences) does not divide over DP 124, and 147 TFLOP/s is a maximum ('up to'), not a step's throughput",
}

# The row's GPU -> the catalog topology it runs on (the brief's mapping); GPUs without one say why.
TOPOLOGIES = {
    "A100-80GB": "dgx-a100",
    "NVIDIA Ampere (model not named)": "dgx-a100",
    "H100-80GB": "dgx-h100",
    "H100": "dgx-h100",
    "H800": "hgx-h800",
    "B200": "dgx-b200",
    "GB200": "gb200-nvl72",
    "GB300": "gb300-nvl72",
    "B300": "dgx-b300",
    "H100-96GB-HBM2e-500W": "grand-teton-h100-96gb",
    "H200": "hgx-h200",
}
NO_TOPOLOGY: dict[str, str] = {}
# precisions whose matmuls run below 16 bits: the run is costed on that dtype's dense peak (NVFP4: FP4's)
COMPUTE_DTYPE = {"fp8": "fp8", "mxfp8": "fp8", "nvfp4": "nvfp4"}
PEAK_LABEL = {"fp8": "FP8 peak", "nvfp4": "FP4 peak"}

# Preferred metric first (one comparison per configuration).
METRICS = (
    "step_time_s",
    "tokens_per_s_per_gpu",
    "tflops_per_gpu",
    "mfu_pct",
    "gpu_hours_per_trillion_tokens",
)
UNUSED_METRIC = {
    "layer_time_ms": "one transformer layer's forward + backward (Korthikanti Table 4), not a step",
    "days_per_trillion_tokens": "covered by GPU-hours per trillion tokens",
}

# ZeRO-3 runs on DeepSpeed of 2021, which fetched a parameter a call (--zero3-fetch synchronous: synchronous_fetch.py)
SYNCHRONOUS_ZERO3 = ("narayanan2021",)
PRE_FLASH = ("narayanan2021", "korthikanti2022", "bloom-tr11")  # trained before FlashAttention was in Megatron

HOLDOUT_STATEMENT = (
    "held out: gathered after the layout model was built, nothing set from them; the per-op rates are kernel "
    "benchmarks' (engine/rates.py), the matmuls' at the in-step share and the MoE layers' host time fitted in "
    "sample, and --mfu 0.40 is dpcost's default, the same for every row"
)
SUMMARY_STATEMENT = (
    "nothing fitted per run: the per-op rates are kernel benchmarks' (engine/rates.py) and --mfu 0.40 is dpcost's "
    "default, the same for every row (in sample: these runs fixed three constants, the matmuls' in-step share, "
    "rates.IN_STEP_MATMUL, by --fit-matmul, an MoE layer's host time, host.MOE_LAYER_HOST_SECONDS, by "
    "--fit-host, and a list collective's host time a rank, synchronous_fetch.LIST_HOST_SECONDS_PER_RANK, by "
    "--fit-list-host)"
)
# The in-step matmul shares --fit-matmul tries: 0.85 to 0.99 and 1 (the benchmarks' rates as they are).
FIT_GRID = (*(round(0.85 + 0.01 * i, 2) for i in range(15)), 1.0)
# The MoE layers' host times --fit-host tries, in seconds: 0 (none) to 16 ms in steps of 1 ms.
FIT_HOST_GRID = tuple(ms / 1000 for ms in range(17))
# The list collectives' host times a rank --fit-list-host tries, in seconds: 0 (none) to 30 us in steps of 1 us.
FIT_LIST_HOST_GRID = tuple(us / 1e6 for us in range(31))


@dataclass(frozen=True)
class Row:
    """One line of runs.csv, as printed."""

    fields: dict[str, str]

    def __getitem__(self, key: str) -> str:
        return self.fields[key].strip()

    def int_or(self, key: str, default: int | None) -> int | None:
        return int(self[key]) if self[key] else default

    @property
    def metric(self) -> str:
        return self["published_metric"]

    @property
    def value(self) -> float:
        return float(self["published_value"])


@dataclass
class Configuration:
    """Rows of one published configuration: every column before the metric alike, the table aside."""

    rows: list[Row]

    @property
    def first(self) -> Row:
        return self.rows[0]

    def preferred(self) -> Row | None:
        by_metric = {r.metric: r for r in reversed(self.rows)}
        return next((by_metric[m] for m in METRICS if m in by_metric), None)


@dataclass
class Compared:
    source: str
    table: str
    model: str
    gpus: int
    layout: str
    metric: str
    published_value: float
    unit: str
    published_step: float  # seconds
    conversion: str  # how the published number became a step time
    predicted: Predicted
    naive_step: float
    flags: list[str] = field(default_factory=list)

    @property
    def error(self) -> float:
        return self.predicted.step / self.published_step - 1

    @property
    def naive_error(self) -> float:
        return self.naive_step / self.published_step - 1


@dataclass(frozen=True)
class Predicted:
    """dpcost's step for one configuration: from the layout engine, or (pure DP with ZeRO-3) from `estimate`."""

    step: float
    model_flops: float  # per GPU per step
    bubble: float
    exposed: float  # neither compute, bubble nor jitter: exposed calls and what DP adds
    forward: float  # one micro-batch's forward on the stage that paces the pipeline (the DP engine's own)

    @classmethod
    def of_layout(cls, p: LayoutStep) -> Predicted:
        exposed = p.step - p.micro_batches * (p.forward + p.backward) - p.bubble - p.jitter
        return cls(p.step, p.model_flops, p.bubble, exposed, p.forward)


@dataclass(frozen=True)
class LeftOut:
    source: str
    table: str
    model: str
    gpus: str
    gpu: str
    why: str


# ------------------------------------------------------------------------------------------------ reading


def read_rows(path: Path = CSV) -> list[Row]:
    lines = [ln for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    return [Row(dict(r)) for r in csv.DictReader(lines)]


# NVIDIA's dgxc-benchmarking v25.03 NeMo layouts (tests/reference/training-runs/dgxc-nemo-*.csv, whose headers say
# what each recipe sets; NeMo 24.12 on DGX H100): held out beside holdout-runs.csv, step times as printed.
DGXC_SOURCE = "dgxc-25.03"
DGXC_FILES = tuple(
    f"dgxc-nemo-{m}-h100.csv"
    for m in ("llama3.1-8b", "llama3.1-70b", "llama3.1-405b", "nemotron4-15b", "nemotron4-340b", "gpt3-175b")
)
DGXC_MODELS = {
    "llama-8b": "Llama 3.1 8B",
    "llama-70b": "Llama 3.1 70B",
    # its recipe runs mock data with the megatron-gpt2-345m tokenizer (llama3.1/configure.sh): GPT-2's vocabulary
    "llama-405b": LLAMA_405B_GPT2_VOCAB,
    "nemotron4-15b": "Nemotron-4 15B",
    "nemotron4-340b": "Nemotron-4 340B",
    "gpt3-175b": "GPT 175B",  # the shape of NeMo 24.07's GPT 175B rows (gpt-174.6b.yaml)
}
# Interleaving, which the CSVs have no column for: each recipe yaml's virtual_pipeline_model_parallel_size
# (llama3.1/llama3.1_70b.yaml 5, llama3.1_405b.yaml 7, nemotron/nemotron4-340b-synth.yaml 12,
# nemo_megatron/gpt3_175b_hydra.yaml 6, at 1b9bb6b3)
DGXC_VIRTUAL = {"llama-70b": 5, "llama-405b": 7, "nemotron4-340b": 12, "gpt3-175b": 6}


def dgxc_rows() -> list[Row]:
    """The dgxc-benchmarking NeMo series (DGXC_FILES), every GPU count, as holdout rows."""
    rows = []
    for name in DGXC_FILES:
        for f in read_rows(REFERENCE / "training-runs" / name):
            tp = int(f["tp"])
            reduce_dtype = f["grad_reduce_dtype"] or "unset"
            fields = {
                "source": DGXC_SOURCE,
                "table": f["series"],
                "model": DGXC_MODELS[f["model"]],
                "params_b": "",
                "gpus": f["gpus"],
                "gpu": "H100",
                "tp": f["tp"],
                "pp": f["pp"],
                "cp": f["cp"],
                "ep": "",
                "dp": f["dp"],
                "virtual_stages": str(DGXC_VIRTUAL.get(f["model"], 1)),
                "micro_batch": f["micro_batch"],
                "global_batch": f["global_batch"],
                "seq_len": f["seq_len"],
                "sequence_parallel": "yes" if tp > 1 else "",  # every recipe with TP above 1 sets it
                "recompute": f["activation_checkpointing"],
                "precision": f["precision"],
                "published_metric": "step_time_s",
                "published_value": f["step_time_s"],
                "unit": "s",
                "notes": f"training-runs/{name}; {f['sharding']}; grad_reduce_dtype {reduce_dtype}",
            }
            rows.append(Row(fields))
    return rows


# MLPerf Training's results (tests/reference/mlperf/: each system's median optimizer-step time and the launch config
# it ran), held out: v3.0 to v4.1's gpt3, v5.0 and v5.1's llama31_405b and llama31_8b.
MLPERF_FILES = tuple(REFERENCE / "mlperf" / f"{b}-training.csv" for b in ("gpt3", "llama31"))
# v6.0's four LLM benchmarks, read through a fork's pages (its README): more columns (experts, MTP), fewer settings
MLPERF_V60 = REFERENCE / "mlperf" / "v6.0" / "rows.csv"
MLPERF_MODELS = {
    "llama31_405b": LLAMA_405B_MIXTRAL_VOCAB,
    "llama31_8b": "Llama 3.1 8B",
    "gpt3": GPT3_MLPERF,
    "deepseekv3_671b": "DeepSeek-V3 (w/ MTP)",  # conf/model/671b.yaml: the HF config's shape, mtp_num_layers 1
    "gpt_oss_20b": "GPT OSS 20B",
}
# What v6.0's file leaves out, as its implementations default it (conf/custom.yaml in v5.0-v5.1's, the MLPerf README):
# sequence parallelism on, Megatron's native fused cross-entropy, Megatron's DDP bucket, no asymmetric pipeline ends
# but for the 405B configs (ASYM_PP_EMBED=True, ASYM_PP_LOSS=True where the config is in the index)
MLPERF_V60_DEFAULTS = {"sequence_parallel": "yes", "cross_entropy": "native", "bucket_size": ""}
# Every v6.0 deepseekv3_671b config exports PIPELINE_LAYOUT="Et*4|(t*4|)*14tmL" with PP 4 and INTERLEAVED_PIPELINE=4
# (conf/model/671b.yaml pipeline_layout): the embedding and 4 layers, 14 x 4, then 1 layer, the MTP module and the loss
MLPERF_V60_DSV3_LAYOUT = "Et*4|(t*4|)*14tmL"
# v6.0's columns for its MoE benchmarks, which cost() reads beside MLPERF_SETTINGS
MLPERF_V60_MOE = (
    "etp", "moe_dispatcher", "moe_a2a_overlap", "fused_grouped_mlp", "recompute_modules", "fp8_output_proj",
)  # fmt: skip
# The implementations' cross_entropy_fusion_impl (conf/custom.yaml: CE_FUSION_IMPL, fused unless
# CROSS_ENTROPY_LOSS_FUSION is off) as ops.LOSS_TRAFFIC names it
MLPERF_LOSS = {"native": "vocab-parallel-fused", "te": "vocab-parallel-te", "unfused": "vocab-parallel"}
# Columns of the MLPerf file cost() reads beside runs.csv's
MLPERF_SETTINGS = (
    "tp_overlap", "fp8_param_gather", "fp8_recipe", "fp8_attention", "cuda_graph", "cross_entropy", "asym_pp_embed",
    "asym_pp_loss", "bucket_size", "nvls",
)  # fmt: skip
# Megatron-Core closes a DDP bucket once it holds bucket_size parameters, never splitting one
# (param_and_grad_buffer.py), so a bucket_size below a layer's smallest weight makes a bucket of every weight: v5.0's
# 200 and Cisco's 64, which layout_step's even buckets cannot stand for. Buckets of at least this many parameters
# (v5.1's 134,217,728 and the 8B configs' 768,000,000) are costed as set.
MLPERF_EVEN_BUCKETS = 1_000_000


@functools.cache
def tokenizer_vocab(model: str) -> int:
    """The vocabulary `model`'s spec here gives, unpadded (once per model, not once per row)."""
    a = build_model(model).architecture
    assert a is not None
    return a.vocab


def mlperf_recompute(settings: str) -> str:
    """The recomputation a config's activation-checkpointing settings ask for (the file's recompute column: 'none',
    or its ACT_CKPT_* assignments; conf/custom.yaml's activations_checkpoint_granularity, null by default)."""
    found = re.search(r"ACT_CKPT_GRANULARITY=(\w+)", settings)
    return found.group(1) if found and found.group(1) in ("selective", "full") else "none"


def mlperf_rows() -> list[Row]:
    """MLPerf's results (MLPERF_FILES, MLPERF_V60) as held-out rows, step times as measured; a results directory
    whose files repeat an earlier round's (the file's notes: 'duplicate of') is one measurement and is read once."""
    rows = []
    for path, f in ((p, f) for p in (*MLPERF_FILES, MLPERF_V60) for f in read_rows(p)):
        if f["notes"].startswith("duplicate of"):
            continue
        if path == MLPERF_V60:
            f = v60_settings(f)
        fields = {
            "source": f"mlperf-{f['round']}",
            "table": f"{f['submitter']} {f['system']}",
            "model": MLPERF_MODELS[f["benchmark"]],
            "params_b": "",
            "gpus": f["gpus"],
            "gpu": f["gpu"],
            "tp": f["tp"],
            "pp": f["pp"],
            "cp": f["cp"],
            "ep": f.fields.get("ep", ""),
            "dp": f["dp"],
            "virtual_stages": f["vp"],
            "micro_batch": f["micro_batch"],
            "global_batch": f["global_batch"],
            "seq_len": f["seq_len"],
            "sequence_parallel": f["sequence_parallel"],
            "recompute": mlperf_recompute(f["recompute"]),
            "precision": f["precision"],
            "published_metric": "step_time_s",
            "published_value": f["step_time_s"],
            "unit": "s",
            "notes": f"mlperf/{path.name}; {f['notes']}",
            # the output layer as the implementation builds it: NeMo pads the tokenizer's vocabulary to a multiple of
            # 128 x TP (nemo/lightning/base.py get_vocab_size at v2.2.0; megatron_base_model.py for GPT-3)
            "vocab": str(padded_vocab_size(tokenizer_vocab(MLPERF_MODELS[f["benchmark"]]), int(f["tp"] or 1))),
            **{k: f[k] for k in MLPERF_SETTINGS},
            **{k: f.fields.get(k, "") for k in MLPERF_V60_MOE},
        }
        rows.append(Row(fields))
    return rows


def v60_settings(f: Row) -> Row:
    """A v6.0 row in the v5.x files' terms: the settings it has no column for as the implementations default them
    (MLPERF_V60_DEFAULTS), its recompute column (the modules RECOMPUTE_MODULES lists, or none) as Megatron's
    selective recomputation of those modules."""
    fields = {**MLPERF_V60_DEFAULTS, **f.fields}
    modules = f["recompute"] if f["recompute"] not in ("none", "unknown", "") else ""
    fields["recompute"] = "ACT_CKPT_GRANULARITY=selective" if modules else "none"
    fields["recompute_modules"] = modules
    asym = "yes" if f["benchmark"] == "llama31_405b" else "no"
    fields.setdefault("asym_pp_embed", asym)
    fields.setdefault("asym_pp_loss", asym)
    return Row(fields)


# NVIDIA's Megatron Core MoE report (arXiv 2603.07685) Table 11, each run's switches as the command behind it sets
# them (tests/reference/large-runs/mcore-moe-report-2603.csv, whose header says where each comes from): held out
MCORE_MOE = HERE / "mcore-moe-report-2603.csv"
MCORE_SOURCE = "mcore-moe-2603"
MCORE_FLEX_BACKENDS = {"flex-deepep": "DeepEP", "flex-hybridep": "HybridEP"}  # --moe-flex-dispatcher-backend
# The file's columns cost() reads as it reads MLPerf v6.0's (MLPERF_SETTINGS, MLPERF_V60_MOE), and its own three
MCORE_SETTINGS = (
    "etp", "nvls", "tp_overlap", "fp8_param_gather", "fp8_recipe", "cuda_graph", "moe_dispatcher", "moe_a2a_overlap",
    "delay_wgrad", "mtp_layers", "pipeline_layout", "asym_pp_embed", "asym_pp_loss", "cross_entropy", "offload",
)  # fmt: skip


def mcore_moe_rows() -> list[Row]:
    """The Megatron Core MoE report's Table 11 (MCORE_MOE) as held-out rows: its tokens/s per GPU, the step time's
    measure, and its TFLOP/s per GPU beside it; selective recomputation of the modules the command lists (none where
    it lists none), sequence parallelism as both model yamls set it."""
    rows = []
    for f in read_rows(MCORE_MOE):
        modules = f["recompute_modules"].split()
        fields = {
            **{k: f[k] for k in ("source", "table", "model", "gpus", "gpu", "tp", "pp", "cp", "ep", "dp")},
            "params_b": "",
            "virtual_stages": f["vp"],
            **{k: f[k] for k in ("micro_batch", "global_batch", "seq_len", "precision")},
            "sequence_parallel": "yes",
            "recompute": "selective" if modules else "none",
            "recompute_modules": ",".join(modules),
            "notes": f"{MCORE_MOE.name}; {f['config']}; {f['notes']}",
            "fp8_attention": "no",
            "fused_grouped_mlp": "no",
            "fp8_output_proj": "no",
            "bucket_size": "",
            **{k: f[k] for k in MCORE_SETTINGS},
        }
        for metric, column, unit in (
            ("tokens_per_s_per_gpu", "tokens_per_s_per_gpu", "tokens/s/GPU"),
            ("model_tflops_per_gpu", "tflops_per_gpu", "TFLOP/s/GPU"),
        ):
            rows.append(Row({**fields, "published_metric": metric, "published_value": f[column], "unit": unit}))
    return rows


def holdout_rows() -> list[Row]:
    """Every held-out row: NVIDIA's performance tables (holdout-runs.csv), dgxc-benchmarking's NeMo layouts, and the
    Megatron Core MoE report's Table 11."""
    return [*read_rows(HOLDOUT), *dgxc_rows(), *mcore_moe_rows()]


CONFIG_COLUMNS = (
    "source",
    "model",
    "params_b",
    "gpus",
    "gpu",
    "tp",
    "pp",
    "cp",
    "ep",
    "dp",
    "virtual_stages",
    "micro_batch",
    "global_batch",
    "seq_len",
    "sequence_parallel",
    "recompute",
    "precision",
)


def configurations(rows: Iterable[Row]) -> list[Configuration]:
    """Group rows that differ only in their metric (and the table or sentence printing it). Where one group holds
    the same metric twice, its rows are different runs (e.g. DeepSeek's two fabrics, torchtitan's AsyncTP on and
    off): split by table, then row by row."""
    groups: dict[tuple[str, ...], list[Row]] = {}
    for r in rows:
        groups.setdefault(tuple(r[c] for c in CONFIG_COLUMNS), []).append(r)
    out: list[Configuration] = []
    for members in groups.values():
        if len({r.metric for r in members}) == len(members):
            out.append(Configuration(members))
            continue
        by_table: dict[str, list[Row]] = {}
        for r in members:
            by_table.setdefault(r["table"], []).append(r)
        for table_rows in by_table.values():
            if len({r.metric for r in table_rows}) == len(table_rows):
                out.append(Configuration(table_rows))
            else:
                out.extend(Configuration([r]) for r in table_rows)
    return out


def build_model(name: str) -> ModelSpec:
    spec = MODEL_SPECS[name]
    if name in (LLAMA_405B_GPT2_VOCAB, LLAMA_405B_MIXTRAL_VOCAB):
        # GPT-2's 50,257 tokens padded to a multiple of make_vocab_size_divisible_by (128) x TP (8), as Megatron pads
        # them (_vocab_size_with_padding): 51,200; Mixtral's 32,000 as the tokenizer has them
        doc = load_model(spec).model_dump(exclude_unset=True)
        doc["architecture"]["vocab"] = 51200 if name == LLAMA_405B_GPT2_VOCAB else 32000
        return ModelSpec.model_validate(doc)
    if name == GPT3_MLPERF:
        doc = load_model(str(REFERENCE / spec)).model_dump(exclude_unset=True)
        doc["architecture"].update(vocab=50257, dropout=0.0)
        return ModelSpec.model_validate(doc)
    if spec.endswith(".json"):
        path = REFERENCE / spec
        return model_from_hf_config(json.loads(path.read_text()), str(path))
    if spec.endswith(".yaml"):
        return load_model(str(REFERENCE / spec))
    return load_model(spec)


def topology_for(gpu: str, gpus: int) -> tuple[TopologySpec, list[str]]:
    """The GPU's catalog topology as a job of `gpus` holds it (placement.job_view); a run larger than its last tier
    is costed on the same tiers with that tier left unbounded (flagged): the catalog's DGX A100 SuperPOD stops at
    140 nodes, Selene and MegaScale's clusters did not."""
    topology = load_topology(TOPOLOGIES[gpu])
    flags = []
    if gpu == "NVIDIA Ampere (model not named)":
        flags.append("GPU not named: dgx-a100 (the MFUs imply a 312 TFLOP/s peak; 8 x 200G NICs per server)")
    limit = topology.max_gpus
    if limit is not None and gpus > limit:
        last = topology.tiers[-1].model_copy(update={"size": None})
        topology = topology.model_copy(update={"tiers": [*topology.tiers[:-1], last]})
        flags.append(f"{gpus} GPUs > {topology.name}'s {limit}: its {last.name} tier left unbounded")
    return job_view(topology, gpus), flags  # as estimate holds it: the job's GPUs spread evenly over its domains


# ------------------------------------------------------------------------------------------------ conversion


def eq3_flops(model: ModelSpec, batch: int, seq: int) -> float:
    """Narayanan et al. (SC'21) eq. 3: FLOPs per iteration with activation recomputation (4 passes)."""
    a = model.architecture
    assert a is not None
    ell, h, v = a.layers, a.hidden, a.vocab
    return 96 * batch * seq * ell * h**2 * (1 + seq / (6 * h) + v / (16 * ell * h))


def megatron_model_flops(model: ModelSpec, batch: int, seq: int) -> float:
    """Korthikanti et al.'s model FLOPs per iteration (3 passes, no recomputation), which MegaScale's MFU uses too:
    72 B s l h^2 (1 + s / (6h) + V / (12 l h))."""
    a = model.architecture
    assert a is not None
    ell, h, v = a.layers, a.hidden, a.vocab
    return 72 * batch * seq * ell * h**2 * (1 + seq / (6 * h) + v / (12 * ell * h))


def published_step(row: Row, model: ModelSpec, predicted: LayoutStep) -> tuple[float, str]:
    """The published number as a step time (seconds), and how (module docstring)."""
    gpus, batch, seq = int(row["gpus"]), int(row["global_batch"]), int(row["seq_len"])
    metric, value = row.metric, row.value
    if metric == "step_time_s":
        return value, "as printed"
    if metric == "tokens_per_s_per_gpu":
        return batch * seq / (gpus * value), "GBS x seq / (GPUs x tokens/s/GPU)"
    if metric == "tflops_per_gpu" and row["source"] == "narayanan2021":
        return eq3_flops(model, batch, seq) / (gpus * value * 1e12), "eq. 3 FLOPs (4 passes) / (GPUs x TFLOP/s)"
    if metric == "tflops_per_gpu" and row["source"] == "llama3-2024":
        return predicted.model_flops / (value * 1e12), "PaLM model FLOPs per GPU / TFLOP/s (Llama 3 prints no formula)"
    if metric == "mfu_pct" and row["source"] in ("korthikanti2022", "megascale2024"):
        flops = megatron_model_flops(model, batch, seq)
        return flops / (gpus * value / 100 * A100_PEAK), "72Bslh^2(1+s/6h+V/12lh) / (GPUs x MFU x 312 TFLOP/s)"
    if metric == "gpu_hours_per_trillion_tokens":
        return value * 1e3 * 3600 * batch * seq / 1e12 / gpus, "K GPU-hours/1T tokens x tokens per step / GPUs"
    raise ValueError(f"no conversion of {row['source']}'s {metric}")


def naive_step(model: ModelSpec, tokens: float, gpus: int, peak: float) -> float:
    """6N x tokens / (GPUs x 40% x peak): PaLM's model FLOPs at 40% MFU, no communication, no bubble."""
    return 6 * count_params(model).active * tokens / (gpus * DEFAULT_MFU * peak)


# ------------------------------------------------------------------------------------------------ costing


def why_not(config: Configuration) -> str:
    """Why a configuration cannot be costed ('' when it can)."""
    r = config.first
    chosen = config.preferred()
    if r["model"] in UNKNOWN_MODELS:
        return UNKNOWN_MODELS[r["model"]]
    if r["model"] not in MODEL_SPECS:
        return "model not specified here"
    if r["gpu"] in NO_TOPOLOGY:
        return NO_TOPOLOGY[r["gpu"]]
    if r["gpu"] not in TOPOLOGIES:
        return f"no catalog topology for {r['gpu']}"
    if chosen is None:
        metrics = sorted({x.metric for x in config.rows})
        return "; ".join(UNUSED_METRIC.get(m, f"{m}: no conversion to a step time") for m in metrics)
    if not (r["tp"] and r["pp"] and r["dp"]):
        return "the TP x PP split of the model-parallel size is not printed"
    if not r["seq_len"]:
        return "sequence length not printed"
    if not r["global_batch"]:
        return "global batch not printed"
    if not r["precision"] and r["source"] == "mbridge-25.09":
        return "precision not printed (Megatron-Bridge 25.09's tables have no precision column)"
    return ""


def cost(config: Configuration, compute_model: str = "ops") -> Compared:
    """dpcost's layout step for one costable configuration, beside its published step time and the naive one.
    `compute_model` "ops": op by op at the GPU's sustained rates from kernel benchmarks (engine/rates.py)."""
    row = config.preferred()
    assert row is not None
    model = build_model(row["model"])
    if "vocab" in row.fields:  # the padded vocabulary a row's run built (mlperf_rows)
        doc = model.model_dump(exclude_unset=True)
        doc["architecture"]["vocab"] = int(row["vocab"])
        model = ModelSpec.model_validate(doc)
    gpus = int(row["gpus"])
    topology, flags = topology_for(row["gpu"], gpus)
    source = row["source"]
    # MLPerf's NVIDIA implementations (NeMo, Megatron-Core underneath; mlperf_rows): the config's own switches
    mlperf = source.startswith("mlperf-")
    # ... and the Megatron Core MoE report's runs (mcore_moe_rows): the switches its commands set, in the same columns
    mcore = source == MCORE_SOURCE
    configured = mlperf or mcore
    if configured and row["nvls"] == "off" and environment(topology, nvls=False) is not topology:
        topology = environment(topology, nvls=False)
        flags.append("NVLS off (the config's NCCL_NVLS_ENABLE=0)")
    micro = row.int_or("micro_batch", None)
    if micro is None:
        micro = 1
        flags.append("micro-batch not printed: 1")
    recompute = row["recompute"]
    modules = DEFAULT_MODULES  # Megatron's recompute_modules default
    block: int | None = None  # --recompute-block: the first N layers of each chunk alone
    virtual = row.int_or("virtual_stages", 1) or 1
    if source == "llama3-2024" and virtual == 1:
        # Llama 3 section 3.3.2: "an interleaved schedule (Narayanan et al., 2021) with V pipeline stages on one
        # pipeline rank" (its Figure 6 draws two per rank), V not printed: the least interleaving there is
        virtual = 2
        flags.append("virtual stages not printed: 2, the least of the interleaved schedule its section 3.3.2 draws")
    ep = row.int_or("ep", 1) or 1
    tp = int(row["tp"])
    cp = row.int_or("cp", 1) or 1
    pp, dp = int(row["pp"]), int(row["dp"])
    etp = None
    if ep > 1 and configured and row["etp"]:  # v6.0's configs: EXPERT_TENSOR_PARALLEL, its yaml's default 1
        etp = int(row["etp"])
    elif ep > 1 and gpus % (tp * ep * pp):
        etp = 1
        flags.append("ETP 1 (not printed; ETP = TP would not divide the GPUs)")
    layout = Layout(tp=tp, cp=cp, pp=pp, dp=dp, ep=ep, etp=etp)
    dtype = COMPUTE_DTYPE.get(row["precision"], "bf16")
    peak = topology.gpu.peak(dtype) if dtype != "bf16" else None
    if peak is not None:
        flags.append(f"{row['precision']}: {PEAK_LABEL[dtype]}")
    bf16_layers = (0, 0)
    if dtype == "nvfp4" and row["model"] == "Nemotron_3_Super":
        # Megatron-Bridge's bf16_with_nvfp4_mixed for Super and te_quant.cfg (tests/reference/large-runs/README.md)
        bf16_layers = (0, 14)
        flags.append("its last 14 layers in BF16 (the recipe's num_layers_at_end_in_bf16); every layer's attention "
                     "projections, the latent projections and MTP in BF16 too in the run: not modelled")  # fmt: skip
    a = model.architecture
    assert a is not None
    mtp, pipeline_layout, split = preset_pipeline_split(row, a.layers, pp, virtual)
    if split:
        flags.append(split)
    elif virtual > 1 and a.layers % (pp * virtual):
        flags.append(f"{a.layers} layers do not split over PP x VP = {pp * virtual}")
    # What the sources say about their own schedules (README / notes), mapped onto the engine's switches.
    cp_impl = "all_gather" if source == "llama3-2024" else "p2p"  # Llama 3 section 3.3.2
    # MLPerf v6.0's GPT-OSS 20B (NVIDIA's nemo/conf/gpt_oss.yaml): cp_comm_type ${CP_COMM_TYPE,'a2a'}, which none of
    # the configs in the copy sets; and its learned sinks run under CP with a2a alone (TE's attn_forward_func_with_cp)
    if mlperf and row["model"].startswith("GPT OSS"):
        cp_impl = "a2a"
    ep_overlap = row["model"].startswith("DeepSeek-V3") and source.startswith("deepseek")  # DualPipe
    megascale_tp = "overlaps TP/PP/DP communication" in row["notes"]  # MegaScale's own runs
    # Megatron-Bridge 25.11's performance runs (NVIDIA-NeMo/Megatron-Bridge v0.2.0 @7af9601c, the large-runs README):
    # its Llama recipes overlap TP with userbuffers (recipes/llama/llama3.py CommOverlapConfig(tp_comm_overlap=True),
    # kept by scripts/performance/configs/llama*/), and its Qwen3 presets overlap the MoE all-to-alls on H100 and, for
    # Qwen3-235B-A22B, on B200 (configs/qwen3/workload_base_configs.py moe_a2a_overlap=True; Qwen3-30B-A3B's B200
    # preset leaves it off, in v0.3.0 too); the DeepSeek-V3 B200 preset does not. From v0.3.0 (2026-02-26, the 26.02
    # tables on) Qwen3-235B-A22B's B200 presets turn it off (configs/qwen/qwen3_workload_base_configs.py, V1 and V2),
    # and its B300 presets have it on in v0.3.0 alone (the 26.02 tables; off from v0.4.0, 2026-04-16); Qwen3-30B-A3B's
    # H100 presets have it until v0.3.0 (off from the 26.04 tables).
    bridge = source.startswith(("mbridge-", "nemo-"))
    # ... except in NVFP4, where every release's Llama presets turn it off (v0.2.0-v0.5.0 scripts/performance/configs/
    # llama*/llama3*_llm_pretrain.py `tp_comm_overlap = False if precision == "nvfp4"`; v0.6.0 perf_recipes/llama/
    # */llama3*.py nvfp4 configs `tp_comm_overlap = False`): their TP collectives wait on the critical path.
    bridge_llama = bridge and row["model"].startswith("Llama")
    bridge_tp = bridge_llama and row["precision"] != "nvfp4"
    release = bridge_release(source)
    bridge_ep = bridge and (
        (row["model"].startswith("Qwen3 235B") and row["gpu"] == "H100")
        or (row["model"].startswith("Qwen3 30B") and row["gpu"] == "H100" and release < "26.04")
        or (row["model"].startswith("Qwen3 235B") and row["gpu"] == "B200" and release < "26")
        or (row["model"].startswith("Qwen3 235B") and row["gpu"] == "B300" and release.startswith("26.02"))
    )
    # NeMo's Nemotron-4 15B recipe as NVIDIA published it the month of the report (NVIDIA/NeMo-Framework-Launcher
    # @01903770, 2024-02-09, "Made config optimal for Nemotron", launcher_scripts/conf/training/nemotron/
    # nemotron_15b.yaml): sequence_parallel true, ub_tp_comm_overlap True; its distributed_fused_adam overlaps the
    # gradient and parameter syncs (the engine's Megatron schedule) and sets no grad_sync_dtype (fp32, as costed).
    nemo = source == "nemotron4-15b-2024"
    # Megatron-Bridge's DeepSeek-V3 B200 MXFP8 preset from a8b6cb3d6 ("b200 DSv3 better cfg", 2026-04-20, in v0.4.2;
    # deepseek_workload_base_configs.py DEEPSEEK_V3_PRETRAIN_CONFIG_B200_FP8_MX_V2), whose layout the 26.04.01
    # tables' B200 row runs (PP 8, VP 2, EP 32): DeepEP with moe_a2a_overlap=True (recompute_modules: above)
    bridge_b200_v2 = bridge and row["model"].startswith("DeepSeek-V3") and row["gpu"] == "B200" and (pp, ep) == (8, 32)
    # The MXFP8 presets run "full iteration" from v0.5.0 (the 26.06 tables on), the all-to-alls overlapped:
    # DeepSeek-V3's on GB200 and GB300 (global batch 4096, and 15360 on GB300; GB300 recomputing nothing, above);
    # Qwen3-235B-A22B's on GB200 and GB300 (8192); Qwen3-30B-A3B's on GB200, GB300 and B300 (512) (v0.5.0
    # deepseek_ and qwen3_workload_base_configs.py FP8_MX presets, moe_a2a_overlap=True; v0.6.0 perf_recipes/
    # {deepseek,qwen}/common.py _enable_*_full_iteration_mxfp8 set overlap_moe_expert_parallel_comm, and
    # perf_recipes/deepseek/gb300 recompute_modules = [])
    full_iteration_batches = {
        ("DeepSeek-V3", "GB200"): ("4096",),
        ("DeepSeek-V3", "GB300"): ("4096", "15360"),
        ("Qwen3 235B", "GB200"): ("8192",),
        ("Qwen3 235B", "GB300"): ("8192",),
        ("Qwen3 30B", "GB200"): ("512",),
        ("Qwen3 30B", "GB300"): ("512",),
        ("Qwen3 30B", "B300"): ("512",),
    }
    full_iteration = (
        bridge
        and row["precision"] == "mxfp8"
        and release >= "26.06"
        and any(
            row["model"].startswith(model) and row["gpu"] == gpu and row["global_batch"] in batches
            for (model, gpu), batches in full_iteration_batches.items()
        )
    )
    # GPT-OSS 120B's V2 presets (global batch 1280) overlap the all-to-alls on GB200 from v0.4.0 (the 26.04 tables
    # on) and on GB300 in MXFP8 from v0.5.0 (26.06 on) (configs/gpt_oss/gpt_oss_workload_base_configs.py
    # GPT_OSS_120B_PRETRAIN_CONFIG_{GB200_BF16,GB200_FP8_MX,GB300_FP8_MX}_V2 moe_a2a_overlap=True)
    oss_v2 = bridge and row["model"].startswith("GPT OSS 120B") and row["global_batch"] == "1280"
    bridge_oss = oss_v2 and (
        (row["gpu"] == "GB200" and release >= "26.04")
        or (row["gpu"] == "GB300" and row["precision"] == "mxfp8" and release >= "26.06")
    )
    # dgxc-benchmarking v25.03's NeMo recipes (the training-runs/dgxc-nemo-*.csv headers: llama3.1/*.yaml and
    # nemotron/configure.sh at 1b9bb6b3) overlap TP with userbuffers wherever TP is above 1 (ub_tp_comm_overlap)
    dgxc = source == DGXC_SOURCE
    config_tp = configured and row["tp_overlap"] == "yes" and tp > 1
    tp_overlap = megascale_tp or bridge_tp or nemo or (dgxc and tp > 1) or config_tp
    ep_overlap = ep_overlap or bridge_ep or bridge_b200_v2 or bridge_oss or full_iteration
    # The same MXFP8 presets from v0.5.0 run the experts through Transformer Engine's CuTe-DSL grouped MLP
    # (cutedsl_fused_grouped_mlp=True: v0.5.0 deepseek_workload_base_configs.py DEEPSEEK_V3_PRETRAIN_CONFIG_
    # {GB300,GB200}_FP8_MX_V1 and the V2 presets built on them, qwen3_workload_base_configs.py QWEN3_235B_A22B_..._
    # {GB300,GB200}_FP8_MX_V2 and QWEN3_30B_A3B_..._{GB300,GB200,B300}_FP8_MX_V1, gpt_oss_workload_base_configs.py
    # GPT_OSS_120B_..._{GB300,GB200}_FP8_MX_V2; utils/overrides.py turns on the op fuser, perf_plugins.py
    # NVTE_CUTEDSL_FUSED_GROUPED_MLP=1; v0.6.0's perf_recipes the same)
    oss_fused = oss_v2 and row["gpu"] in ("GB200", "GB300") and row["precision"] == "mxfp8" and release >= "26.06"
    # MLPerf v6.0's MoE configs: OVERLAP_MOE_EXPERT_PARALLEL_COMM, MOE_TOKEN_DISPATCHER_TYPE=flex with HybridEP, and
    # USE_TE_OPS with NVTE_CUTEDSL_FUSED_GROUPED_MLP=1 (v6.0/configs; every deepseekv3_671b config sets all three)
    config_moe = configured and ep > 1
    config_ep_overlap = config_moe and row["moe_a2a_overlap"] == "yes"
    ep_overlap = ep_overlap or config_ep_overlap
    fused_mlp = full_iteration or oss_fused or (config_moe and row["fused_grouped_mlp"] == "yes")
    fp8_head = configured and row.fields.get("fp8_output_proj") == "yes"  # v6.0's FP8_OUTPUT_PROJ
    # Sequence parallelism where Megatron itself requires it, printed or not: MoE layers with TP above 1
    # (megatron/core/transformer/moe/moe_layer.py refuses them without it) and TP communication overlap
    # (megatron/training/arguments.py: "Tensor parallel communication/GEMM overlap can happen only when sequence
    # parallelism is enabled"); MegaScale's own runs print it.
    sequence_parallel = row["sequence_parallel"] == "yes" or nemo
    if tp > 1 and not sequence_parallel and (a.moe is not None or tp_overlap):
        sequence_parallel = True
        why = "MoE with TP" if a.moe is not None else "TP overlap"
        flags.append(f"sequence parallel not printed: on, as Megatron requires for {why}")
    # Megatron-LM overlaps the interleaved pipeline's send/recv since 2023 (overlap_p2p_comm: added in f9283c5a,
    # 2023-05, on by default from 4eeff55d, 2023-10); SC'21's and Korthikanti et al.'s runs, and MegaScale's
    # Megatron-LM baseline (its commit 285068c8, 2023-01), waited for them.
    old_megatron = source in ("narayanan2021", "korthikanti2022") or "(Megatron-LM)" in row["model"]
    pp_overlap = False if old_megatron else None
    if old_megatron and virtual > 1:
        flags.append("PP send/recv waited for (Megatron-LM before overlap_p2p_comm)")
    # ... and split each pipeline tensor over TP, gathering it after the receive, wherever sequence parallelism had
    # not split it (scatter_gather_tensors_in_pipeline, on by default until the pipeline moved into Megatron-Core,
    # 3c92fa93, 2023-03: layout_step.pp_calls)
    pp_scatter_gather = old_megatron
    if old_megatron and pp > 1 and tp > 1 and row["sequence_parallel"] != "yes":
        flags.append("PP tensors split over TP and gathered (Megatron-LM's scatter/gather, SC'21 section 4.1)")
    # Megatron batches the pipeline sends it waits for, which PyTorch runs on the PP group's communicator from 1.12
    # (2022-06-28; layout_step.pp_send_communicator). SC'21's and Korthikanti et al.'s papers (2021-04, 2022-05)
    # precede that release; BLOOM's pipeline is DeepSpeed's, which sends with a lone dist.send (a 2-rank
    # communicator); DeepSeek's DualPipe runs in its own framework, whose communicator is not printed.
    pre_batched = source in ("narayanan2021", "korthikanti2022", "bloom-tr11") or source.startswith("deepseek")
    pp_send_comm = "pair" if pre_batched else None
    if pre_batched and pp > P2P_PEERS_PER_ROUND and not pp_overlapped(virtual, pp_overlap):  # where a group's differs
        flags.append("PP sends on 2-rank communicators (PyTorch before 1.12, or not Megatron's batched sends)")
    # Megatron-LM reduced gradients after the last backward and gathered the updated parameters after the optimizer
    # step until --overlap-grad-reduce (2d5220a4, 2023-08) and --overlap-param-gather (f048bf8c, 2023-11):
    # megatron/training.py train_step at a8d172b3 (2021-04, allreduce_gradients) and 285068c8 (2023-01,
    # reduce_model_grads / gather_model_params). DeepSpeed's pipeline engine, BLOOM's, reduces them at the last step of
    # its schedule (deepspeed/runtime/pipe/schedule.py TrainSchedule: ReduceGrads after the last backward, at 3401d251).
    # SC'21's runs predate Megatron-LM's asynchronous backward TP all-reduce (16c90445, 2021-09-02; none at
    # a8d172b3, 2021-04): its backward waits for them as its forward does.
    tp_backward_async = source != "narayanan2021"
    if not tp_backward_async and tp > 1:
        flags.append("TP backward all-reduces waited for (Megatron-LM before 2021-09)")
    # Megatron's delay_wgrad_compute (which Megatron-Core allows only with overlap_moe_expert_parallel_comm,
    # transformer_config.py at d98e8a64dd) has Transformer Engine store each linear's weight-gradient GEMM for later
    # and wait at once for its input gradient's reduce-scatter (module/linear.py at 2.20.0.dev0, d0067d0da), so that
    # reduction waits as the forward's calls do. Megatron-Bridge's performance scripts set it wherever they overlap the
    # all-to-alls (v0.2.0 utils/helpers.py set_moe_a2a_overlap_overrides, v0.3.0-v0.5.1 utils/overrides.py
    # _set_moe_a2a_overlap_overrides; v0.6.0's perf_recipes per recipe, Qwen3-235B-A22B's H100 TP 2 among them), and
    # every MLPerf v6.0 deepseekv3_671b config exports DELAY_WGRAD_COMPUTE=True (its gpt_oss_20b configs do not).
    bridge_overlap = bridge_ep or bridge_b200_v2 or bridge_oss or full_iteration
    config_delayed = source == "mlperf-v6.0" and row["model"].startswith("DeepSeek-V3")
    config_delayed = config_delayed or (mcore and row["delay_wgrad"] == "yes")  # A2A_OVERLAP=1's --delay-wgrad-compute
    if (bridge_overlap or config_delayed) and tp > 1:
        tp_backward_async = False
        flags.append("TP backward reduce-scatters waited for (delay_wgrad_compute: the weight gradients run later)")
    # SC'21's Table 1 script runs its PP-1 models under torch DDP, which overlaps the all-reduce with the backward.
    dp_overlap = not (old_megatron or source == "bloom-tr11") or "--DDP-impl torch" in row["notes"]
    if not dp_overlap and "ZeRO-3" not in row["notes"]:  # DeepSpeed's ZeRO-3 runs are costed by its own schedule
        flags.append("DP gradients reduced after the last backward (no overlap in the run's framework)")
    # Megatron-LM of 2021-2022 all-reduced gradients (no distributed optimizer); the others shard (ZeRO-1/2, FSDP,
    # Megatron's distributed optimizer) or do not say (Megatron-Core's default is taken).
    distributed = source not in ("narayanan2021", "korthikanti2022") or "ZeRO-3" in row["notes"]
    zero3 = "ZeRO-3" in row["notes"] and (tp, cp, pp, ep) == (1, 1, 1, 1)
    if zero3:
        flags.append("pure data parallelism: costed by dpcost estimate --zero 3 --framework deepspeed")
    if zero3 and source in SYNCHRONOUS_ZERO3:
        flags.append("DeepSpeed of 2021: each parameter gathered and reduced on its own, synchronously "
                     "(--zero3-fetch synchronous)")  # fmt: skip
    if "FSDP" in row["notes"] and source == "llama3-2024":
        flags.append("FSDP costed as ZeRO-1")
    # Megatron-FSDP (holdout-runs.csv), as Megatron-Bridge's presets run it: optim_grads_params, ZeRO-3
    # (scripts/performance/utils/overrides.py _set_megatron_fsdp_overrides at 067f987df)
    megatron_fsdp = bool(re.search(r"FSDP [1-9][0-9]* (printed|under)", row["notes"]))
    if megatron_fsdp:
        flags.append("Megatron-FSDP: optim_grads_params (ZeRO-3), as Megatron-Bridge's presets set it")
    zero = 3 if megatron_fsdp else 1 if distributed else 0
    if "no overlap of the gradient all-reduce" in row["notes"]:
        flags.append("gradient all-reduce not overlapped in the run (the engine overlaps it)")
    # Megatron-Bridge's Nemotron 3 Super and Ultra recipes (recipes/nemotronh/nemotron_3_super.py at v0.5.0,
    # recipes/nemotronh/h100/nemotron_3_{super,ultra}.py at v0.6.0) set mtp_num_layers = 2 with
    # mtp_use_repeated_layer: the one MTP block (attention, then LatentMoE) runs twice per micro-batch, each pass with
    # its own logits and loss; the tables' model TFLOP/s count both passes (flop_utils.py hybrid_flops).
    if bridge and row["model"] in ("Nemotron_3_Super", "Nemotron_3_Ultra"):
        mtp = 2
        flags.append(
            "MTP trained: its shared block run twice per micro-batch (Megatron-Bridge's Nemotron 3 recipes: "
            "mtp_num_layers 2, mtp_use_repeated_layer), costed as two MTP modules"
        )
    # DeepSeek's own runs route each token to at most 4 nodes and send it over IB once per node, DeepEP forwarding
    # it over NVLink to its experts (arXiv 2412.19437 sections 2.1.2 and 3.2.2: M = 4)
    node_limit = 4 if source.startswith("deepseek") else None
    # Megatron-Bridge's DeepSeek-V3 presets dispatch with the flex dispatcher: HybridEP on GB200 and GB300 and DeepEP
    # on H100 in v0.2.0 (scripts/performance/configs/deepseek/workload_base_configs.py moe_flex_dispatcher_backend),
    # HybridEP on every GPU from v0.3.0 (deepseek_workload_base_configs.py; v0.4.0's recipe sets it too): a token
    # crosses the network once per node its experts are on (docs/sources/moe-dispatch.md).
    # v0.2.0's B200 preset leaves it to alltoall, at EP 8 inside one node, where the two send the same bytes.
    bridge_flex = bridge and bridge_flex_dispatch(
        source, row["model"], row["gpu"], row["precision"], row["global_batch"]
    )
    config_flex = config_moe and row["moe_dispatcher"].startswith("flex")
    if configured and row["recompute_modules"]:  # v6.0's RECOMPUTE_MODULES, the report's --recompute-modules
        modules = frozenset(row["recompute_modules"].split(","))
        said = "the config's RECOMPUTE_MODULES" if mlperf else "the command's --recompute-modules"
        flags.append(f"selective recompute of {row['recompute_modules']} ({said})")
    if source.startswith("deepseek") and recompute == "selective":
        # arXiv 2412.19437 section 3.2.3: "we recompute all RMSNorm operations and MLA up-projections during
        # back-propagation": Megatron-Core's recompute_modules layernorm and mla_up_proj
        modules = frozenset({"layernorm", "mla_up_proj"})
        flags.append("selective recompute of the RMSNorms and MLA up-projections (its section 3.2.3)")
    if source.startswith("deepseek"):
        flags.append("DualPipe as 1F1B with EP hidden")
        flags.append("node-limited routing (4 nodes per token) with DeepEP's forwarding")
        # arXiv 2412.19437 section 4.2: MTP depth 1; DualPipe puts it beside the embedding and the output head on a
        # split the report does not print
        flags.append("its MTP module (depth 1) not costed: DualPipe's split of it is not printed")
    if any("is a known issue" in r["notes"] for r in config.rows):  # a footnote on the table's row (notes quote it)
        flags.append("the table's footnote calls this run's number a known performance regression")
    if "not restated" in row["notes"]:
        flags.append("layout taken from another table or paper (README)")
    if megascale_tp:
        flags.append("TP overlapped (MegaScale); its parallel block and sliding-window attention not modelled")
    if bridge_tp and tp > 1:
        flags.append("TP overlapped (Megatron-Bridge's Llama recipes)")
    elif bridge_llama and tp > 1:
        flags.append("TP not overlapped (Megatron-Bridge's NVFP4 presets turn it off)")
    if nemo:
        flags.append("sequence parallel, TP overlapped (NeMo's Nemotron-4 15B recipe)")
    if dgxc and tp > 1:
        flags.append("TP overlapped (the recipe's ub_tp_comm_overlap)")
    settings = ("tp_overlap", "nvls", "fp8_attention", "fused_grouped_mlp")
    unknown = [k for k in settings if row.fields.get(k) == "unknown"]
    if unknown:  # v6.0: the file that sets them is not in the index (v6.0/README.md)
        flags.append(f"{', '.join(unknown)} not known (its config is not in the index): the implementation's default")
    if config_tp:
        said = "the config's TP_COMM_OVERLAP" if mlperf else "PR=bf16's --tp-comm-overlap"
        flags.append(f"TP overlapped ({said})")
    # Megatron-Core's MoE layers wait for the host that launches them (engine/host.py), but under full-iteration
    # CUDA graphs: Megatron-Bridge's MXFP8 "full iteration" presets from v0.5.0 (cuda_graph_impl full_iteration:
    # v0.6.0 perf_recipes/{deepseek,qwen}/common.py), its GPT-OSS 120B GB200 and GB300 MXFP8 V2 presets from v0.5.0
    # (gpt_oss_workload_base_configs.py; v0.6.0 perf_recipes/gpt_oss/common.py), and MLPerf v6.0's
    # CUDA_GRAPH_SCOPE=full_iteration configs
    graphed = full_iteration or oss_fused or (configured and row["cuda_graph"] == "full")
    moe_host = 0.0 if graphed else host.MOE_LAYER_HOST_SECONDS
    if a.moe is not None and graphed:
        flags.append("full-iteration CUDA graphs: the MoE layers do not wait for the host")
    elif bridge and row["model"].startswith("Qwen3 235B") and row["gpu"] == "GB200":
        # v0.2.0-v0.4.x configs/qwen/qwen3_workload_base_configs.py: the GB200 presets' cuda_graph_impl
        # "transformer_engine", cuda_graph_scope ["attn", "moe_router", "moe_preprocess"]
        flags.append("the preset's CUDA graphs of the attention, router and preprocessing: not priced, the MoE layers' "
                     "host time costed as eager launches'")  # fmt: skip
    elif a.moe is not None and configured and row["cuda_graph"] != "none":
        flags.append(f"CUDA graphs ({row['cuda_graph']}): the MoE layers' host time costed as eager launches'")
    elif mlperf and row["cuda_graph"] != "none":
        flags.append(f"CUDA graphs ({row['cuda_graph']}): no host time is priced either way")
    if mlperf and row["fp8_attention"] == "yes":
        flags.append("FP8 attention (FP8_DPA) costed as BF16 attention")
    if dgxc and row["model"] == "Nemotron-4 340B":
        flags.append("attention by flash-attn's kernel (NVTE_FUSED_ATTN=0 in its configure.sh), costed as cuDNN's")
    if bridge_ep:
        flags.append("EP all-to-alls overlapped (Megatron-Bridge's Qwen3 presets)")
    if config_flex and layout.ep > topology.tiers[0].size:
        backend = "HybridEP" if mlperf else MCORE_FLEX_BACKENDS[row["moe_dispatcher"]]
        said = "the config's MOE_TOKEN_DISPATCHER" if mlperf else "the command's DISPATCHER"
        flags.append(f"flex dispatcher ({backend}): each token sent once per domain ({said})")
    if config_ep_overlap:
        said = "the config's OVERLAP_MOE_EXPERT_PARALLEL_COMM" if mlperf else "A2A_OVERLAP=1"
        flags.append(f"EP all-to-alls overlapped ({said})")
    if mcore and row["offload"]:
        flags.append(f"{row['offload']} offloaded to the host (the command's): its memory and traffic not modelled")
    if fp8_head:
        flags.append("output layers in MXFP8 (the config's FP8_OUTPUT_PROJ)")
    if config_moe and fused_mlp:
        flags.append("experts through TE's fused grouped MLP (the config's NVTE_CUTEDSL_FUSED_GROUPED_MLP)")
    if bridge_flex and layout.ep > topology.tiers[0].size:
        flags.append("flex dispatcher: each token sent once per node (Megatron-Bridge's presets)")
    if bridge_b200_v2:
        flags.append("EP all-to-alls overlapped (Megatron-Bridge's DeepSeek-V3 B200 MXFP8 preset, a8b6cb3d6)")
    if bridge_oss:
        flags.append("EP all-to-alls overlapped (Megatron-Bridge's GPT-OSS V2 presets)")
    if full_iteration:
        flags.append("EP all-to-alls overlapped (Megatron-Bridge's MXFP8 full-iteration presets from v0.5.0)")
    if full_iteration or oss_fused:
        flags.append("experts through TE's fused grouped MLP (the presets' cutedsl_fused_grouped_mlp from v0.5.0)")
    # Runs from before FlashAttention (arXiv 2205.14135, May 2022) reached Megatron: attention as two matmuls over the
    # score square and a (fused) softmax, which Korthikanti et al.'s selective recomputation re-runs.
    flash = source not in PRE_FLASH
    if not flash:
        flags.append("attention unfused (before FlashAttention)")
    elif recompute == "selective" and modules == DEFAULT_MODULES:
        flags.append("selective recompute: no FLOPs charged (flash attention)")
    if cp_impl == "all_gather" and cp > 1:
        flags.append("CP as all-gather (Llama 3 section 3.3.2)")
    if cp_impl == "a2a" and cp > 1:
        flags.append("CP by all-to-all (gpt_oss.yaml's cp_comm_type a2a)")
    if source == "llama3-2024":
        flags.append("FLOP count not printed: PaLM's, full attention matrix")
    if source == "bloom-tr11":
        flags.append("Omni-Path, 4 links per node, costed as dgx-a100's 8 x HDR")
    # BLOOM's job (examples/training-configs/bigscience-tr11-176b-ml.slurm) runs DeepSpeed's engine at ZeRO stage 0 with
    # bf16: BF16_Optimizer, whose backward adds each micro-batch's bf16 gradients into its fp32 buffer (pipe/engine.py
    # _exec_backward_pass, update_hp_grads, at v0.7.0: ops.bf16_optimizer_grad_update)
    bf16_optimizer = source == "bloom-tr11"
    if bf16_optimizer:
        flags.append(
            "DeepSpeed's BF16_Optimizer: each micro-batch's bf16 gradients added into its fp32 buffer, reduced in bf16"
        )

    # Megatron-Bridge's presets set grad_reduce_in_fp32 = False; SC'21's script runs --fp16 without
    # --accumulate-allreduce-grads-in-fp32, so its gradient buffers are fp16 (megatron/model/distributed.py @d4169684).
    # dgxc's distributed_fused_adam recipes set grad_sync_dtype bf16; its Nemotron-4 15B (mcore_distributed_optim) none.
    # MLPerf's pretrain.py builds its DDP config with grad_reduce_in_fp32=False.
    dgxc_bf16 = dgxc and "grad_reduce_dtype bf16" in row["notes"]
    # BF16_Optimizer all-reduces its fp32 buffer cast to bf16 (prepare.BF16_OPTIMIZER_GRAD_DTYPE)
    grad_dtype = (
        "bf16"
        if bridge or dgxc_bf16 or configured or bf16_optimizer
        else "fp16"
        if "--fp16" in row["notes"]
        else "fp32"
    )
    # Megatron-Bridge's performance scripts run "fp8" rows as fp8_cs and "mxfp8" as fp8_mx (utils/precision.py
    # get_precision_config), whose mixed-precision presets set fp8_param_gather = True (training/mixed_precision.py
    # bf16_with_fp8_current_scaling_mixed, bf16_with_mxfp8_mixed, at v0.2.0 through v0.5.0); the Llama configs and
    # recipes override it at none of those tags. (Some MoE presets turn it off, Kimi's and GPT-OSS's: not read here.)
    fp8_params = (
        source.startswith("mbridge-") and row["model"].startswith("Llama") and row["precision"] in ("fp8", "mxfp8")
    )
    if fp8_params:
        flags.append("FP8 parameter gathers (Megatron-Bridge's fp8_param_gather)")
    # dgxc's configure.sh sets +model.fp8_params with FP8, and fp8_hybrid: Transformer Engine's delayed scaling
    # (amax history 1024), whose casts read a tensor once where current scaling's read it twice (ops.FP8_CASTS)
    if dgxc and row["precision"] == "fp8":
        fp8_params = True
        flags.append("FP8 parameter gathers (the recipe's fp8_params)")
        flags.append("FP8 delayed scaling: its casts costed as current scaling's (one read more)")
    if configured and row["fp8_param_gather"] == "yes" and row["precision"] in ("fp8", "mxfp8"):
        fp8_params = True
        said = "the config's FP8_PARAM_GATHER or FP8_PARAMS" if mlperf else "the command's --fp8-param-gather"
        flags.append(f"FP8 parameter gathers ({said})")
    # MXFP8 (Blackwell's FP8 in these tables): each weight held row- and column-wise, and under the distributed
    # optimizer gathered in bf16 (engine/low_precision_weights.py)
    fp8_recipe = "mxfp8" if row["precision"] == "mxfp8" else "tensorwise"
    if mcore and row["fp8_recipe"] == "blockwise":  # PR=fp8's --fp8-recipe blockwise (DeepSeek-V3's 1x128 / 128x128)
        fp8_recipe = "blockwise"
        flags.append("FP8 blockwise scaling (PR=fp8's --fp8-recipe blockwise)")
    if fp8_params and fp8_recipe == "mxfp8" and zero < 2:
        flags.append("MXFP8 weights: gathered in bf16 through the gradient buffer")
    quantized_weights = "fp8" if fp8_params else None
    # From v0.5.0 (the 26.06 tables) bf16_with_nvfp4_mixed sets fp4_param_gather = True (training/mixed_precision.py);
    # DeepSeek-V3's B200, GPT-OSS 20B's and Nemotron 3 Super's NVFP4 configs turn it off, the Llama configs at none
    # of v0.5.0-v0.6.0 (only those rows are given it here)
    nvfp4_params = bridge and row["model"].startswith("Llama") and row["precision"] == "nvfp4"
    if nvfp4_params and bridge_release(source) >= "26.06":
        if zero >= 2:
            flags.append("NVFP4 parameter gathers under Megatron-FSDP: not modelled, costed in bf16")
        else:
            quantized_weights = "nvfp4"
            flags.append("NVFP4 parameter gathers (Megatron-Bridge's fp4_param_gather, from v0.5.0)")
    bucket_bytes = None
    if mlperf and row["bucket_size"] and int(row["bucket_size"]) >= MLPERF_EVEN_BUCKETS:
        bucket_bytes = int(row["bucket_size"]) * DTYPE_BYTES[grad_dtype]
        flags.append(f"DP buckets of {int(row['bucket_size']):,} parameters (the config's BUCKET_SIZE)")
    elif mlperf and row["bucket_size"]:
        flags.append(f"BUCKET_SIZE {row['bucket_size']}: a bucket per weight in the run, Megatron's default costed")
    if mlperf and row["fp8_recipe"] == "delayed":
        flags.append("FP8 delayed scaling: its casts costed as current scaling's (one read more)")

    def run(virtual_stages: int) -> LayoutStep:
        return layout_step(
            model,
            topology,
            layout,
            micro_batch=micro,
            global_batch=int(row["global_batch"]),
            seq_len=int(row["seq_len"]),
            mfu=DEFAULT_MFU if compute_model == "flops" else matmul_efficiency(topology.gpu, dtype, None),
            peak=peak,
            compute_model=compute_model,
            compute_dtype=dtype,
            recompute=recompute,
            recompute_modules=modules,
            recompute_block=block,
            sequence_parallel=sequence_parallel,
            tp_overlap=tp_overlap,
            tp_backward_async=tp_backward_async,
            ep_overlap=ep_overlap,
            pp_overlap=pp_overlap,
            pp_scatter_gather=pp_scatter_gather,
            pp_send_comm=pp_send_comm,
            ep_node_limit=node_limit,
            ep_dispatcher="flex" if bridge_flex or config_flex else "alltoall",
            cp_impl=cp_impl,
            virtual_stages=virtual_stages,
            zero=zero,
            dp_overlap=dp_overlap,
            flash=flash,
            grad_dtype=grad_dtype,
            mtp_layers=mtp,
            pipeline_layout=pipeline_layout,
            quantized_weights=quantized_weights,
            fp8_recipe=fp8_recipe,
            bf16_layers=bf16_layers,
            loss_impl=MLPERF_LOSS[row["cross_entropy"]] if configured else cross_entropy_impl(source, row["model"]),
            bucket_bytes=bucket_bytes,
            fused_grouped_mlp=fused_mlp,
            fp8_output_proj=fp8_head,
            moe_host_seconds=moe_host,
            bf16_optimizer=bf16_optimizer,
        )

    if not recompute and bridge:
        # Megatron-Bridge v0.2.0's performance presets (7af9601c): no recomputation for Llama, Qwen3 and GPT-OSS
        # (Megatron-Core's default recompute_granularity None; GPT-OSS's recompute_modules are set without
        # "selective", so they do nothing until v0.3.0: gpt_oss_preset_modules), selective for DeepSeek-V3
        # (deepseek_llm_pretrain.py) of the modules configs/deepseek/workload_base_configs.py gives per GPU: moe_act on
        # GB300, mla_up_proj and mlp on H100, mla_up_proj elsewhere; Nemotron 3's as NEMOTRON3_PRESET_MODULES
        recompute = "selective" if row["model"].startswith(("DeepSeek", "GPT OSS", "Nemotron_3_")) else "none"
        if source.startswith("mbridge-"):  # NeMo's own tables ran NeMo 2.0's recipes, not these presets
            block = BRIDGE_RECOMPUTE_BLOCK.get((row["model"], row["gpu"], row["precision"]))
        recompute = "full" if block is not None else recompute
        if recompute == "selective":
            if row["model"].startswith("DeepSeek"):
                modules = deepseek_preset_modules(source, row["gpu"])
            elif row["model"].startswith("GPT OSS"):
                modules = gpt_oss_preset_modules(source, row["gpu"], row["precision"], row["global_batch"])
            else:
                modules = NEMOTRON3_PRESET_MODULES.get((row["model"], row["gpu"], row["precision"]), frozenset())
            recompute = "selective" if modules else "none"  # recompute_modules = []: nothing recomputed
        policy = recompute if block is None else f"full of the first {block} layers (block method)"
        flags.append(f"recompute not printed: {policy}, as Megatron-Bridge's presets set it")
    elif not recompute and source == "llama3-2024":
        # its modified pipeline schedule (section 3.3.2) keeps other micro-batches in flight than the 1F1B whose
        # memory dpcost would infer the recomputation from
        recompute = "none"
        flags.append("recompute not printed: none (Meta's own schedule: not inferred from 1F1B's memory)")
    elif not recompute:
        try:
            recompute = fitting_recompute(
                model, topology, row, layout, micro, virtual, dtype, zero, flash, zero3, sequence_parallel,
                quantized_weights, fp8_recipe,
            )  # fmt: skip
            flags.append(f"recompute not printed: {recompute}, the least that fits")
        except InputError as exc:  # a row estimate refuses as printed (MoE with TP but no SP printed)
            recompute = "none"
            flags.append(f"recompute not printed: none (estimate refuses the row as printed: {exc.where})")
    if zero3:
        predicted = data_parallel(model, topology, row, micro, recompute, compute_model, flash)
    else:
        try:
            predicted = Predicted.of_layout(run(virtual))
        except ValueError as e:
            if virtual == 1:
                raise
            predicted = Predicted.of_layout(run(1))
            flags.append(f"interleaving refused ({e}): costed with virtual_stages 1")
    step, how = published_step(row, model, predicted)
    tokens = int(row["global_batch"]) * int(row["seq_len"])
    naive = naive_step(model, tokens, gpus, peak if peak is not None else topology.gpu.bf16_dense)
    return Compared(
        source=source,
        table=row["table"],
        model=row["model"],
        gpus=gpus,
        layout=layout_text(tp, cp, pp, dp, ep, virtual),
        metric=row.metric,
        published_value=row.value,
        unit=row["unit"],
        published_step=step,
        conversion=how,
        predicted=predicted,
        naive_step=naive,
        flags=flags,
    )


def fitting_recompute(
    model: ModelSpec,
    topology: TopologySpec,
    row: Row,
    layout: Layout,
    micro: int,
    virtual: int,
    dtype: str,
    zero: int,
    flash: bool,
    zero3: bool,
    sequence_parallel: bool,
    quantized_weights: str | None = None,
    fp8_recipe: str = "tensorwise",
) -> str:
    """The recomputation `dpcost estimate` chooses for the run (the least that fits; the last, full, when none
    does), from its memory alone: its weights as `quantized_weights` stores them, held as `fp8_recipe` has them."""
    common = dict(micro_batch=micro, global_batch=int(row["global_batch"]), seq_len=int(row["seq_len"]))
    if zero3:
        options = Options(dp=layout.dp, zero=3, framework="deepspeed", flash_attention=flash, **common)
        return estimate(model, topology, options).setup.recompute
    options = Options(
        dp=layout.dp,
        tp=layout.tp,
        cp=layout.cp,
        pp=layout.pp,
        ep=layout.ep,
        etp=layout.etp,
        virtual_stages=virtual,
        sequence_parallel=sequence_parallel,
        framework="megatron",
        zero=zero,
        compute_dtype=dtype,
        gather_dtype=quantized_weights,
        fp8_recipe=fp8_recipe if "fp8" in (dtype, quantized_weights) else None,
        flash_attention=flash,
        **common,
    )
    try:
        chosen = layout_recompute(model, topology, options)
    except InputError as exc:
        if "interleaving" not in str(exc):
            raise
        # interleaving with uneven stages: cost() falls back to one chunk per stage, as here
        chosen = layout_recompute(
            model,
            topology,
            options.model_copy(update={"parallel": options.parallel.model_copy(update={"virtual_stages": 1})}),
        )
    return chosen or "full"


def data_parallel(
    model: ModelSpec, topology: TopologySpec, row: Row, micro: int, recompute: str, compute_model: str, flash: bool
) -> Predicted:
    """A pure data-parallel ZeRO-3 run as `dpcost estimate --zero 3 --framework deepspeed` costs it (the DP engine:
    parameters gathered in forward and backward, gradients reduce-scattered), its compute by the DP default (one
    --mfu) unless op by op was asked for."""
    synchronous = row["source"] in SYNCHRONOUS_ZERO3
    options = Options(
        dp=int(row["dp"]),
        zero=3,
        framework="deepspeed",
        zero3_fetch="synchronous" if synchronous else None,
        micro_batch=micro,
        global_batch=int(row["global_batch"]),
        seq_len=int(row["seq_len"]),
        recompute=recompute,
        compute_model=compute_model,
        flash_attention=flash,
    )
    r = estimate(model, topology, options)
    t = r.time
    assert t is not None
    model_flops = t.mfu * t.step_seconds * topology.gpu.bf16_dense
    return Predicted(t.step_seconds, model_flops, 0.0, t.exposed_comm_seconds + t.losses_seconds, t.forward_seconds)


def layout_text(tp: int, cp: int, pp: int, dp: int, ep: int, virtual: int) -> str:
    text = f"{tp}x{cp}x{pp}x{dp}" + (f"x{ep}" if ep > 1 else "")
    return text + (f" v{virtual}" if virtual > 1 else "")


def compare(rows: list[Row] | None = None, compute_model: str = "ops") -> tuple[list[Compared], list[LeftOut]]:
    """Every configuration of runs.csv: costed, or left out with why."""
    costed, left = [], []
    for config in configurations(read_rows() if rows is None else rows):
        reason = why_not(config)
        r = config.first
        if reason:
            left.append(LeftOut(r["source"], r["table"], r["model"], r["gpus"], r["gpu"], reason))
            continue
        try:
            costed.append(cost(config, compute_model))
        except (InputError, ValueError) as exc:  # a layout the engine refuses as printed
            left.append(LeftOut(r["source"], r["table"], r["model"], r["gpus"], r["gpu"], f"dpcost refuses it: {exc}"))
    return costed, left


# ------------------------------------------------------------------------------------------------ output


def geomean(errors: Iterable[float]) -> float:
    """Geometric mean of |error|, as benchmarks/accuracy.py takes it (dpcost.accuracy.ERROR_FLOOR)."""
    xs = [max(abs(e), ERROR_FLOOR) for e in errors]
    return math.exp(statistics.fmean(math.log(x) for x in xs)) if xs else math.nan


def exposed_share(p: Predicted) -> float:
    """The share of the predicted step that is neither compute, bubble nor jitter: the model-parallel calls left
    exposed and what data parallelism adds (its exposed collectives and overlap slowdown)."""
    return p.exposed / p.step


def worst(costed: list[Compared], n: int) -> list[Compared]:
    """The n comparisons furthest off as a factor, either way."""
    return sorted(costed, key=lambda c: -abs(math.log(c.predicted.step / c.published_step)))[:n]


def _seconds(x: float) -> str:
    return f"{x:.3g}" if x < 100 else f"{x:.0f}"


def _published(c: Compared) -> str:
    value = f"{c.published_value:g} {c.unit}"
    return value if c.metric == "step_time_s" else f"{value} = {_seconds(c.published_step)} s"


def markdown(costed: list[Compared], left: list[LeftOut], rows: list[Row] | None = None) -> str:
    out = [
        "Published step time (converted with the source's own definition where it printed another quantity) against",
        "dpcost's layout step (its default for a layout: op by op), and the naive 6N x tokens / (GPUs x 40% x peak).",
        "",
        "| source | model | GPUs | layout TPxCPxPPxDP(xEP) | published | predicted (s) | error | naive (s) "
        "| naive error | bubble | exposed comm + DP | flags |",
        "| --- | --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for c in costed:
        p = c.predicted
        out.append(
            f"| {c.source} | {c.model} | {c.gpus} | {c.layout} | {_published(c)} | {_seconds(p.step)} | "
            f"{c.error:+.1%} | {_seconds(c.naive_step)} | {c.naive_error:+.1%} | {p.bubble / p.step:.0%} | "
            f"{exposed_share(p):.0%} | {'; '.join(c.flags)} |"
        )
    statement = HOLDOUT_STATEMENT if rows is not None else SUMMARY_STATEMENT
    out += ["", summary(costed, compare(rows, compute_model="flops")[0]), "", f"**{statement}.**", ""]
    out += ["Worst 5 by the factor they are off (|log(predicted / published)|):", ""]
    for c in worst(costed, 5):
        p = c.predicted
        out.append(
            f"- {c.source} {c.model} on {c.gpus} GPUs ({c.layout}): {c.error:+.1%} (x{1 + c.error:.2f}); bubble "
            f"{p.bubble / p.step:.0%}, exposed comm + DP {exposed_share(p):.0%} of the predicted step"
        )
    out.append("")
    out += ["Conversions used:", ""]
    for how in sorted({(c.source, c.metric, c.conversion) for c in costed}):
        out.append(f"- {how[0]}, {how[1]}: {how[2]}")
    out += ["", f"Not costed ({len(left)} configurations):", "", "| source | table | model | GPUs | GPU | why |"]
    out.append("| --- | --- | --- | ---: | --- | --- |")
    for lo in left:
        out.append(f"| {lo.source} | {lo.table} | {lo.model} | {lo.gpus} | {lo.gpu} | {lo.why} |")
    return "\n".join(out)


def per_run(costed: list[Compared]) -> str:
    """Each configuration's published and predicted step, as the README lists them (markdown's own table carries
    the flags and the shares)."""
    out = [
        "| source | table | model | GPUs | layout TPxCPxPPxDP(xEP) | published | dpcost (s) | error | naive error |",
        "| --- | --- | --- | ---: | --- | --- | ---: | ---: | ---: |",
    ]
    for c in costed:
        out.append(
            f"| {c.source} | {c.table} | {c.model} | {c.gpus} | {c.layout} | {_published(c)} | "
            f"{_seconds(c.predicted.step)} | {c.error:+.1%} | {c.naive_error:+.1%} |"
        )
    return "\n".join(out)


def summary(costed: list[Compared], flops: list[Compared]) -> str:
    """Per source: dpcost's geomean |error| (op by op, its default for a layout), at one --mfu 0.40 for every FLOP
    (`flops`, the same configurations), and the naive figure's; with the median signed errors."""
    out = [
        "| source | configurations | dpcost (op by op) | dpcost at --mfu 0.40 | naive | dpcost median signed "
        "| naive median signed |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    sources = list(dict.fromkeys(c.source for c in costed))
    groups = [*((s, [c for c in costed if c.source == s], [c for c in flops if c.source == s]) for s in sources)]
    for name, members, alike in [*groups, ("all", costed, flops)]:
        label = f"**{name}**" if name == "all" else name
        out.append(
            f"| {label} | {len(members)} | {geomean(c.error for c in members):.1%} | "
            f"{geomean(c.error for c in alike):.1%} | {geomean(c.naive_error for c in members):.1%} | "
            f"{statistics.median(c.error for c in members):+.1%} | "
            f"{statistics.median(c.naive_error for c in members):+.1%} |"
        )
    return "\n".join(out)


# What each fit sets: (the module, its constant, the values tried, what it is, how a value of it is printed)
FITS: dict[str, tuple[str, str, tuple[float, ...], str, Callable[[float], str]]] = {
    "--fit-matmul": ("dpcost.engine.rates", "IN_STEP_MATMUL", FIT_GRID, "in-step matmul share", "{:.2f}".format),
    "--fit-host": (
        "dpcost.engine.host", "MOE_LAYER_HOST_SECONDS", FIT_HOST_GRID, "MoE layer host time",
        lambda v: f"{v * 1e3:.0f} ms",
    ),
    "--fit-list-host": (
        "dpcost.engine.synchronous_fetch", "LIST_HOST_SECONDS_PER_RANK", FIT_LIST_HOST_GRID,
        "list collective host time a rank", lambda v: f"{v * 1e6:.0f} us",
    ),
}  # fmt: skip


def in_sample_error(module: str, constant: str, value: float) -> float:
    """The geomean |error| over runs.csv with `module`'s `constant` at `value` (a fresh process's: the engine's memos
    keep what they were first costed with)."""
    setattr(importlib.import_module(module), constant, value)
    costed, _ = compare()
    return geomean(c.predicted.step / c.published_step - 1 for c in costed)


def fit(flag: str) -> float:
    """The value of the fit's grid (FITS) with the least in-sample geomean error, each costed in a process of its own;
    prints each one's."""
    module, constant, grid, what, shown = FITS[flag]
    with multiprocessing.get_context("spawn").Pool(2, maxtasksperchild=1) as pool:
        errors = pool.starmap(in_sample_error, [(module, constant, value) for value in grid], chunksize=1)
    for value, error in zip(grid, errors, strict=True):
        print(f"{what} {shown(value):>7}: in-sample geomean error {error:.3%}")
    best = grid[errors.index(min(errors))]
    now = getattr(importlib.import_module(module), constant)
    print(f"best: {shown(best)} ({module.replace('.', '/')}.py {constant} = {shown(now)})")
    return best


def main() -> int:
    for flag in FITS:
        if flag in sys.argv[1:]:
            fit(flag)
            return 0
    holdout = "--holdout" in sys.argv[1:]
    rows = mlperf_rows() if "--mlperf" in sys.argv[1:] else holdout_rows() if holdout else None
    costed, left = compare(rows)
    print(markdown(costed, left, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
