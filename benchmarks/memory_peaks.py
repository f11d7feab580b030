#!/usr/bin/env python3
"""dpcost's memory per GPU against published *measured* peaks (issue 16).

    python benchmarks/memory_peaks.py [--markdown] [--left-out]

For every point in tests/reference/memory-peaks/measured-peaks.csv (in sample) and holdout-peaks.csv (out of
sample) that dpcost can cost today (full-parameter training with data parallelism only: no tensor, pipeline or
context parallelism, no LoRA/QLoRA, no offload, a recipe dpcost has, a model it can load, and a source specific
enough to hold a model to), dpcost costs the run through its Python API with the row's framework, ZeRO stage, GPUs,
micro-batch, sequence length, recomputation, torch.compile, loss path and recipe, and takes the figure the source
measured (PREDICTED: allocated, reserved, or the device's total with the CUDA/NCCL context) as its prediction.
Beside it: the ZeRO paper's model states alone (16 bytes per parameter sharded by stage, no activations). Errors are
predicted / measured - 1; per source, the geometric mean of |error| as the project's other benchmarks define it
(benchmarks/accuracy.py, training_scaling.py) and the worst point. --markdown prints the README's table
(tests/test_memory_peaks.py keeps the README equal to it); --left-out lists every point left out and why.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpcost import Options, estimate, load_model, load_topology
from dpcost.catalog import model_from_hf_config
from dpcost.engine.params import count_params
from dpcost.specs import ModelSpec
from dpcost.training_configs import hf_auto_bucket_elements
from dpcost.training_configs.torchtitan import torchtitan_2024_layout

REFERENCE = Path(__file__).resolve().parent.parent / "tests" / "reference"
CSV = REFERENCE / "memory-peaks" / "measured-peaks.csv"
# Gathered by another session after dpcost's memory model was built against CSV, and not looked at while building
# it: the out-of-sample set (memory-peaks/README.md, "Held-out set").
HOLDOUT = REFERENCE / "memory-peaks" / "holdout-peaks.csv"
HF_CONFIGS = REFERENCE / "hf-configs"
PEAK_CONFIGS = REFERENCE / "memory-peaks" / "configs"

UNIT_BYTES = {"GiB": 2**30, "GB": 10**9, "MiB": 2**20, "MB": 10**6}
GIB = 2**30
# torchao's tables print 'Peak Memory (GB)', but benchmarks/float8/training/parse_torchtitan_logs.py takes the
# maximum of torchtitan's 'memory: X GiB' lines: the numbers are GiB (memory-peaks/README.md, and each row's notes).
PRINTED_GB_MEANS_GIB = frozenset({"ao-float8-h100", "ao-float8-mi300x", "ao-mx-b200"})
# In sample: every source of measured-peaks.csv. dpcost's memory model (the checkpointing policies, the loss paths,
# the phases, the allocator's fragmentation) was built while comparing with them, and the Ampere context
# (CONTEXT_BYTES) is meg-llmaction's nvidia-smi minus reserved. Out of sample: holdout-peaks.csv.
ERROR_FLOOR = 1e-4  # as dpcost/accuracy.py: an exact hit counts as 0.01% so that the geometric mean stays defined

# The model as the CSV names it -> a catalog name or a config.json in tests/reference/hf-configs/.
MODELS = {
    "llama-3.1-8b": "llama-8b",
    "llama-3-8b": "llama-8b",  # Llama 3 8B has Llama 3.1 8B's shapes; only the RoPE scaling and context differ
    "llama-3.1-70b": "llama-70b",
    "llama-3.1-405b": "llama-405b",
    "llama-3.2-3b": str(HF_CONFIGS / "llama-3.2-3b.json"),
    "qwen3-8b": str(HF_CONFIGS / "qwen3-8b.json"),
    "qwen3-32b": str(HF_CONFIGS / "qwen3-32b.json"),  # torchtitan's qwen3 '32B' flavor has its shapes
    "deepseek-v3-16b": str(HF_CONFIGS / "deepseek-v2-lite.json"),  # torchtitan's deepseek_v3 '16B' flavor: its shapes
    "gpt-j-6b": str(HF_CONFIGS / "gpt-j-6b.json"),
    "tiny-llama-1.1b": str(PEAK_CONFIGS / "tiny-llama-1.1b.json"),
    "gpt2-xl": str(PEAK_CONFIGS / "gpt2-xl.json"),
    "Qwen2.5-14B": str(PEAK_CONFIGS / "qwen2.5-14b.json"),
    "llama-2-7b": str(PEAK_CONFIGS / "llama-2-7b.json"),
    "llama-2-70b": "llama2-70b",
}
# Megatron-LM's GPT-2 345M is defined by its arguments (printed in the run's log, summarised in the CSV's model
# column), not by a Hub config: GPT-2's keys (hf-configs/gpt2.json) with 24 layers, hidden 1024, 16 heads, the
# vocabulary padded to 50304 (--make-vocab-size-divisible-by 128) and Megatron's default dropout of 0.1
# (--hidden-dropout, --attention-dropout; the log's dump shows attention dropout 0.1).
MEGATRON_GPT2_345M = {"n_layer": 24, "n_embd": 1024, "n_head": 16, "vocab_size": 50304, "n_positions": 1024}
MEGATRON_DROPOUT = 0.1

# The GPU as the CSV names it -> the catalog topology. The memory prediction reads of the topology only the GPU's
# generation, for the GEMM libraries' workspaces (engine/workspaces.py; the capacity decides whether it fits;
# tests/test_memory_peaks.py checks that every prediction under dgx-h100 differs by those alone), so a GPU without its
# own topology takes one of its generation, nearest in capacity: A800 (an A100 80GB with NVLink capped) -> dgx-a100,
# torchtitan's 96 GB Grand Teton H100 -> dgx-h100 (80 GB); and MI300X (192 GB) -> dgx-b200 (180 GB), whose 8 MiB
# cuBLAS workspaces stand for ROCm's 128 MiB hipBLAS ones (PyTorch's default on gfx94x), which dpcost does not price.
TOPOLOGIES = (("mi300x", "dgx-b200"), ("b200", "dgx-b200"), ("h200", "hgx-h200"), ("h100", "dgx-h100"))
TOPOLOGIES += (("a800", "dgx-a100"), ("a100", "dgx-a100"), ("h800", "dgx-h100"))
# Consumer and workstation cards, and GPUs a source does not name: the prediction compared is allocated or reserved
# memory, which no topology changes; dgx-a100 only gives it a capacity.
TOPOLOGIES += (("4090", "dgx-a100"), ("a6000", "dgx-a100"), ("", "dgx-a100"))

# Sources whose runs store the s^2 attention scores: Megatron-LM's 2023 legacy GPT model with its fused masked
# softmax and attention dropout, no flash attention (the log's argument dump; notes of the allocated/reserved rows).
NO_FLASH_ATTENTION = frozenset({"meg-llmaction"})
# PyTorch Lightning's DeepSpeedStrategy passes its own ZeRO defaults, reduce_bucket_size=200_000_000 elements
# (lightning/pytorch/strategies/deepspeed.py, DeepSpeedStrategy.__init__; pytorch_lightning's before it): the
# 16-bit buckets of its rows are 2e8 x 2 bytes, not DeepSpeed's 5e8.
LIGHTNING_REDUCE_BUCKET_ELEMENTS = 200_000_000
# Runs from before PyTorch 2.0 (March 2023; clpl-gpt2xl's script is of August 2022, its torch not stated): torch.optim
# stepped parameter by parameter (foreach became the default in 2.0, pytorch/pytorch#92306), and zero_grad() zeroed
# the gradients in place rather than freeing them (set_to_none's default became True in 2.0, pytorch/pytorch#92731;
# Lightning's optimizer_zero_grad calls zero_grad() with it). DeepSpeed's runs manage their gradients themselves.
BEFORE_TORCH_2 = frozenset({"clpl-gpt2xl"})
# Sources whose Megatron-LM predates Transformer Engine's placeholder weight-gradient cache (TE ba5dc5dde, 2025-04-08,
# "Enable reuse of dummy wgrad tensor"; Megatron's output layer took from it from e7c55de99e, 2025-08-01): costed
# with --no-grad-accumulation-fusion, which leaves the placeholders out.
BEFORE_TE_PLACEHOLDERS = frozenset({"meg-llmaction"})

KINDS = {"max_reserved": "reserved", "max_allocated": "allocated", "max_active": "active", "nvidia_smi": "nvidia-smi"}
KINDS["unknown"] = "unknown"


@dataclass(frozen=True)
class Peak:
    """One row of the CSV, with what dpcost needs to cost it, or why it cannot."""

    number: int  # 1-based row number among the CSV's data rows
    sample: str  # "in sample" (measured-peaks.csv) or "out of sample" (holdout-peaks.csv)
    source: str
    version: str  # the framework and its version, as the source states them (the first of the versions given)
    model: str
    gpus: int
    gpu: str
    framework: str  # dpcost's --framework
    stage: int
    micro_batch: int
    seq_len: int
    accumulation: int
    recompute: str  # dpcost's --recompute (torchtitan's per-op SAC is 'op')
    compile: bool
    loss_impl: str  # dpcost's --loss-impl, from the row's loss_impl column
    recipe: str | None  # dpcost's --recipe: bf16 for pure-bf16 rows, else the framework's
    optimizer: str
    compute_dtype: str
    gather_dtype: str | None
    grad_dtype: str | None
    flash_attention: bool
    placeholders: bool  # Transformer Engine keeps placeholder weight gradients (layout_memory.dummy_wgrad_bytes)
    measured_bytes: float
    kind: str
    left_out: str  # why dpcost cannot cost it today ("" when it can)
    tp: int = 1
    pp: int = 1
    cp: int = 1  # context parallelism: the notes' `cp=N` (memory-peaks/README.md), not a column
    bucket_bytes: float | None = None  # the run's gradient bucket, where its framework sets one of its own
    optimizer_impl: str | None = None  # how its torch.optim steps, where the framework's default is not what ran
    grads_between_steps: str = "freed"  # PyTorch's .grad between steps (zero_grad's set_to_none)
    virtual_stages: int = 1  # stages per pipeline rank (torchtitan's Interleaved1F1B: 2)
    pipeline_layout: str | None = None  # the layers of each pipeline stage, as --pipeline-layout writes them


def _int(text: str, default: int = 0) -> int:
    return int(text) if text.strip() else default


def _words(notes: str) -> set[str]:
    """The filter words memory-peaks/README.md names, found in a row's notes as words."""
    found = {w for w in ("tp", "pp", "lora", "qlora", "fp8", "suspect") if re.search(rf"\b{w}\b", notes)}
    found |= {w for w in ("cp=", "offload", "weak point") if w in notes}
    return found


def context_parallel(notes: str) -> int:
    """The row's CP degree, from the `cp=N` its notes give (memory-peaks/README.md's filter words), else 1."""
    found = re.search(r"\bcp=(\d+)", notes)
    return int(found.group(1)) if found else 1


def _framework(row: dict[str, str]) -> tuple[str, int]:
    """dpcost's --framework and ZeRO stage for the row's framework and sharding."""
    sharding, framework = row["sharding"].lower(), row["framework"].lower()
    if "reshard_after_forward_policy 'never'" in sharding:  # as dpcost's torchtitan reader maps it (docs/from.md)
        return "fsdp", 2
    if sharding.startswith(("fsdp2-full", "fsdp1-full", "thunder-zero3")):
        return "fsdp", 3
    if sharding.startswith("zero"):
        return "deepspeed", int(sharding[4])
    if "megatron" in framework:  # ZeRO-1 with its distributed optimizer, else DDP
        return "megatron", 1 if "use_distributed_optimizer True" in row["optimizer"] else 0
    return ("ddp", 0) if sharding.startswith("ddp") else ("fsdp", 0)


def left_out(row: dict[str, str]) -> str:
    """Why dpcost cannot cost a row today, or "" (the first reason that applies)."""
    words = _words(row["notes"])
    if "cp=" in words and (_framework(row)[0] != "fsdp" or "moe" in row["model"].lower()):
        return "context parallelism outside PyTorch FSDP's dense decoders (--framework fsdp --cp)"
    if (words & {"pp"} or row["pp"] != "1") and not (_framework(row)[0] == "megatron" or _torchtitan_dense(row)):
        return "pipeline parallelism outside Megatron-LM and torchtitan's dense decoders (--framework fsdp --pp)"
    if (words & {"tp"} or row["tp"] != "1") and _framework(row)[0] not in ("megatron", "fsdp"):
        return "tensor parallelism outside Megatron-LM and PyTorch FSDP"
    if words & {"lora", "qlora"} or row["precision"].startswith("nf4"):
        return "LoRA or QLoRA, not full-parameter training"
    if row["precision"].startswith("fp32"):
        return "fp32 training: dpcost counts 16-bit activations"
    if row["compile"] == "thunder":
        return "Lightning Thunder's compiler: dpcost models eager PyTorch and torch.compile"
    if row["recompute"] == "selective":
        return "selective checkpointing of an unstated kind (per-op or per-layer)"
    optimizer = row["optimizer"].lower()
    if "4bit" in optimizer or "no momentum" in optimizer:
        return "an optimizer dpcost does not price (4-bit AdamW, SGD without momentum)"
    if "offload" in words or "offload" in row["recompute"]:
        return "CPU offload (of activations, or of parameters and optimizer states)"
    if "weak point" in words:
        return "weak point: too loosely specified to hold a model to (memory-peaks/README.md)"
    if "suspect" in words:
        return "suspect: below the 8 bytes/parameter a full AdamW finetune needs"
    if "optimizer_in_bwd" in row["optimizer"]:
        return "optimizer step fused into the backward (torchtune optimizer_in_bwd): dpcost has no such schedule"
    if not row["recompute"]:
        return "activation checkpointing not stated"
    if not row["seq_len"] or not row["micro_batch"]:
        return "sequence length or micro-batch not stated"
    if row["model"].split(" (")[0] not in (*MODELS, "gpt2-345m"):
        return "no model spec dpcost can load"
    if _topology(row["gpu"]) is None:
        return "no catalog topology for the GPU"
    return ""


def _torchtitan_dense(row: dict[str, str]) -> bool:
    """A torchtitan run of a dense decoder under FSDP2, as --framework fsdp costs its TP, CP and PP."""
    moe = "moe" in row["model"].lower() or re.search(r"\bMoE\b", row["notes"]) is not None
    return row["framework"] == "torchtitan" and _framework(row)[0] == "fsdp" and not moe


def _topology(gpu: str) -> str | None:
    return next((t for key, t in TOPOLOGIES if key in gpu.lower()), None)


def _version(row: dict[str, str]) -> str:
    """'torchtitan 9dec370' from 'torchtitan 9dec370; torch 1963fc8; ...'; the framework alone if no version."""
    first = row["framework_version"].split(";")[0].split(" (")[0].strip()
    return first or row["framework"].split(" (")[0]


def _optimizer(text: str) -> str:
    return "adam8bit" if "8bit" in text.replace("-", "") else "adamw"


def _measured_bytes(row: dict[str, str]) -> float:
    """The published number in bytes; a percentage is of the device capacity the gpu column states in GiB."""
    unit = "GiB" if row["source_id"] in PRINTED_GB_MEANS_GIB else row["measured_unit"]
    if unit == "%":
        capacity = re.search(r"([0-9.]+) GiB", row["gpu"])
        assert capacity, row["gpu"]
        return float(row["measured_value"]) / 100 * float(capacity.group(1)) * GIB
    return float(row["measured_value"]) * UNIT_BYTES[unit]


def peaks(path: Path = CSV) -> list[Peak]:
    """Every row of a peaks CSV (its '#' provenance lines skipped, as tests/conftest.py read_reference_csv does)."""
    lines = [ln for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    out = []
    for number, row in enumerate(csv.DictReader(lines), 1):
        framework, stage = _framework(row)
        gpus, micro_batch = int(row["gpus"]), _int(row["micro_batch"], 1)
        tp, pp, cp = _int(row["tp"], 1), _int(row["pp"], 1), context_parallel(row["notes"])
        dp = max(1, gpus // (tp * pp * cp))
        global_batch = _int(row["global_batch"])
        accumulation = global_batch // (micro_batch * dp) if global_batch % (micro_batch * dp) == 0 else 1
        chunks, split = 1, None
        if framework == "fsdp" and pp > 1 and _version(row) == "torchtitan 9dec370":
            # torchtitan at 9dec370: the local batch split into PP micro-batches (pipeline_parallel_microbatches
            # unset), no resharding after the forward (ZeRO-2), two stages per rank under Interleaved1F1B
            stage, micro_batch, accumulation = 2, micro_batch // pp, pp
            chunks = 2 if "Interleaved" in row["notes"] else 1
            layers = model_spec(row["model"].split(" (")[0]).architecture.layers  # type: ignore[union-attr]
            split = torchtitan_2024_layout(layers, pp * chunks)
        precision, notes = row["precision"], row["notes"]
        grad_dtype = "bf16" if "reduce/buffer bf16" in precision else None
        if framework == "megatron" and "accumulate_allreduce_grads_in_fp32 False" in notes:
            grad_dtype = "fp16" if precision.startswith("fp16") else "bf16"  # the contiguous 16-bit grad buffer
        model_name, bucket = row["model"].split(" (")[0], None
        if framework == "deepspeed" and "DeepSpeedStrategy" in row["framework"]:
            bucket = LIGHTNING_REDUCE_BUCKET_ELEMENTS * 2.0
        elif framework == "deepspeed" and "'auto' (HF: h^2" in row["sharding"] and model_name in MODELS:
            bucket = hf_auto_bucket_elements(model_spec(model_name)) * 2.0  # the Trainer's "auto"
        out.append(
            Peak(
                number=number,
                sample="out of sample" if path == HOLDOUT else "in sample",
                version=_version(row),
                source=row["source_id"],
                model=model_name,
                gpus=gpus,
                gpu=row["gpu"],
                framework=framework,
                stage=stage,
                micro_batch=micro_batch,
                seq_len=_int(row["seq_len"]),
                accumulation=max(accumulation, 1),
                recompute="op" if row["recompute"] == "selective-op" else row["recompute"],
                compile=row["compile"] in ("true", "thunder"),
                loss_impl=loss_impl(row),
                recipe="bf16" if precision.startswith("bf16-pure") else None,
                optimizer=_optimizer(row["optimizer"]),
                compute_dtype="fp8" if precision.startswith(("fp8", "mxfp8")) else "bf16",
                gather_dtype="fp8" if "float8 all-gather" in precision else None,
                grad_dtype=grad_dtype,
                flash_attention=row["source_id"] not in NO_FLASH_ATTENTION,
                placeholders=row["source_id"] not in BEFORE_TE_PLACEHOLDERS,
                measured_bytes=_measured_bytes(row),
                kind=KINDS[row["measured_kind"]],
                left_out=left_out(row),
                tp=tp,
                pp=pp,
                cp=cp,
                bucket_bytes=bucket,
                optimizer_impl="for-loop" if row["source_id"] in BEFORE_TORCH_2 else None,
                grads_between_steps="kept"
                if row["source_id"] in BEFORE_TORCH_2 and framework != "deepspeed"
                else "freed",
                virtual_stages=chunks,
                pipeline_layout=split,
            )
        )
    return out


def loss_impl(row: dict[str, str]) -> str:
    """dpcost's --loss-impl for the row's loss column (memory-peaks/README.md: each source's loss path)."""
    text = row["loss_impl"].lower()
    if ("chunked" in text and "torchtune" in text) or "cewithchunkedoutputloss" in text:
        return "chunked"
    if ("compile" in text and "not compiled" not in text) or "loss is torch.compile'd" in row["notes"]:
        return "fused"
    if "bf16 logits" in text or "fp16 logits" in text or "chunked_cross_entropy" in text:
        return "bf16"
    if "loss parallel" in text:  # torchtitan's loss_parallel under TP: torch's sharded cross-entropy (loss.py)
        return "loss-parallel"
    if "vocab-parallel" in text:
        return "vocab-parallel"
    return "upcast"


def model_spec(name: str) -> ModelSpec:
    if name == "gpt2-345m":
        cfg = {**json.loads((HF_CONFIGS / "gpt2.json").read_text()), **MEGATRON_GPT2_345M}
        spec = model_from_hf_config(cfg, "hf-configs/gpt2.json with Megatron-LM's GPT-2 345M arguments", "gpt2-345m")
        assert spec.architecture is not None
        arch = spec.architecture.model_copy(update={"dropout": MEGATRON_DROPOUT})
        return spec.model_copy(update={"architecture": arch})
    return load_model(MODELS[name])


def zero_paper_model_states(params: float, n: int, stage: int) -> float:
    """Bytes per GPU of the model states alone, as the ZeRO paper counts them (Rajbhandari et al. 2020, section 5
    and Figure 1): fp16 weights 2, fp16 gradients 2 and K = 12 bytes of optimizer states (fp32 master weights,
    momentum, variance) per parameter Psi; stage 1 shards the optimizer states over the N ranks (4 Psi + 12 Psi/N),
    stage 2 the gradients too (2 Psi + 14 Psi/N), stage 3 the weights too (16 Psi/N). No activations, buffers or
    allocator overhead."""
    per_param = {0: 16.0, 1: 4 + 12 / n, 2: 2 + 14 / n, 3: 16 / n}[stage]
    return per_param * params


# Which of dpcost's figures each measured kind is: torch.cuda's max allocated (and max active, which differs from it
# by at most the blocks freed on another stream), max reserved, or the device's total as nvidia-smi shows it. A peak of
# unknown kind is compared with reserved, what training logs most often print.
PREDICTED = {
    "allocated": "allocated_bytes",
    "active": "allocated_bytes",
    "reserved": "reserved_bytes",
    "nvidia-smi": "total_bytes",
    "unknown": "reserved_bytes",
}


def predict(p: Peak, topology: str | None = None) -> float:
    """dpcost's memory per GPU for the run, as the source measured it (PREDICTED), in bytes: its stage's row of
    `dpcost estimate` with the run's options (run_options)."""
    name = topology or _topology(p.gpu)
    assert name is not None
    report = estimate(model_spec(p.model), load_topology(name), run_options(p))
    stage = next(s for s in report.memory.stages if s.stage == p.stage)
    return float(getattr(stage, PREDICTED[p.kind]))


def run_options(p: Peak) -> Options:
    """The run as dpcost's options. A torchtitan run with TP, CP or PP is costed as FSDP holds its share of the model
    and of the sequence (`--framework fsdp --tp --cp --pp`: engine/fsdp_layout.py, fsdp_pipeline.py), another TP or PP
    run as a layout (`dpcost estimate --tp --pp`: Megatron's theoretical memory of its most loaded stage)."""
    shared: dict[str, Any] = {
        "zero": p.stage,
        "micro_batch": p.micro_batch,
        "accumulation": p.accumulation,
        "seq_len": p.seq_len,
        "flash_attention": p.flash_attention,
    }
    if p.tp * p.cp * p.pp > 1 and p.framework == "fsdp":
        return Options(
            dp=p.gpus // (p.tp * p.cp * p.pp), tp=p.tp, cp=p.cp, pp=p.pp, virtual_stages=p.virtual_stages,
            pipeline_layout=p.pipeline_layout, framework="fsdp", recompute=p.recompute, compile=p.compile,
            loss_impl=p.loss_impl, compute_dtype=p.compute_dtype, gather_dtype=p.gather_dtype, **shared,
        )  # fmt: skip
    if p.tp * p.pp > 1:
        return Options(
            dp=p.gpus // (p.tp * p.pp), tp=p.tp, pp=p.pp, framework="megatron",
            recompute="selective" if p.recompute == "selective" else "none",
            grad_accumulation_fusion=p.placeholders, **shared,
        )  # fmt: skip
    return Options(
        dp=p.gpus, framework=p.framework, recompute=p.recompute, compile=p.compile, loss_impl=p.loss_impl,
        recipe=p.recipe, optimizer=p.optimizer, compute_dtype=p.compute_dtype, gather_dtype=p.gather_dtype,
        grad_dtype=p.grad_dtype, grad_accumulation_fusion=p.placeholders, bucket_bytes=p.bucket_bytes,
        optimizer_impl=p.optimizer_impl, grads_between_steps=p.grads_between_steps, **shared,
    )  # fmt: skip


@dataclass(frozen=True)
class Row:
    peak: Peak
    predicted: float
    baseline: float

    @property
    def error(self) -> float:
        return self.predicted / self.peak.measured_bytes - 1

    @property
    def baseline_error(self) -> float:
        return self.baseline / self.peak.measured_bytes - 1


def compare(all_peaks: list[Peak]) -> tuple[list[Row], list[Peak]]:
    """dpcost and the baseline for every point dpcost can cost, and the points left out."""
    rows = []
    for p in all_peaks:
        if p.left_out:
            continue
        params = count_params(model_spec(p.model)).total
        rows.append(Row(p, predict(p), zero_paper_model_states(params, p.gpus, p.stage)))
    return rows, [p for p in all_peaks if p.left_out]


def geomean(xs: list[float]) -> float:
    """The geometric mean of |errors| as benchmarks/accuracy.py and training_scaling.py take it."""
    return math.exp(sum(math.log(max(abs(x), ERROR_FLOOR)) for x in xs) / len(xs))


def conditions(p: Peak) -> str:
    fw = {"fsdp": f"FSDP ZeRO-{p.stage}", "megatron": "Megatron DDP", "ddp": "DDP"}.get(p.framework, p.framework)
    parts = [fw, f"b{p.micro_batch} s{p.seq_len}", "per-op SAC" if p.recompute == "op" else f"AC {p.recompute}"]
    if p.tp * p.pp > 1:
        parts[0] += f" TP{p.tp} PP{p.pp} DP{p.gpus // (p.tp * p.pp * p.cp)}"
    if p.cp > 1:
        parts[0] += f" CP{p.cp}" + ("" if p.tp * p.pp > 1 else f" DP{p.gpus // p.cp}")
    if p.recipe:
        parts.append(f"{p.recipe} recipe")
    parts.append(f"{p.loss_impl} loss")
    if p.compile:
        parts.append("compile")
    if p.compute_dtype == "fp8":
        parts.append("fp8 + fp8 gather" if p.gather_dtype == "fp8" else "fp8")
    if not p.flash_attention:
        parts.append("no flash")
    return ", ".join(parts)


def label(p: Peak) -> str:
    """A point's number in its file: 7 in measured-peaks.csv, h7 in holdout-peaks.csv."""
    return f"{'h' if p.sample == 'out of sample' else ''}{p.number}"


def _worst(rows: list[Row], baseline: bool = False) -> str:
    row = max(rows, key=lambda r: abs(r.baseline_error if baseline else r.error))
    return f"{row.baseline_error if baseline else row.error:+.1%} (#{label(row.peak)})"


def markdown(rows: list[Row], left: list[Peak]) -> str:
    out = [
        "| # | source | framework | model | GPUs | conditions | measured | dpcost | dpcost error | 16 B/param error |",
        "|---:|---|---|---|---:|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        p = r.peak
        out.append(
            f"| {label(p)} | {p.source} | {p.version} | {p.model} | {p.gpus} | {conditions(p)} "
            f"| {p.measured_bytes / GIB:.2f} GiB {p.kind} | {r.predicted / GIB:.2f} GiB | {r.error:+.1%} "
            f"| {r.baseline_error:+.1%} |"
        )
    out.append("")
    out.append(
        "| source | peak measured | points | dpcost error (geomean) | dpcost worst | 16 B/param error (geomean) "
        "| 16 B/param worst | sample |"
    )
    out.append("|---|---|---:|---:|---:|---:|---:|---|")
    groups: dict[tuple[str, str], list[Row]] = {}
    for sample in ("in sample", "out of sample"):
        members = [r for r in rows if r.peak.sample == sample]
        for r in members:
            groups.setdefault((r.peak.source, sample), []).append(r)
        if members:
            groups[("all", sample)] = members
            no_fp8 = [r for r in members if r.peak.compute_dtype != "fp8"]
            if len(no_fp8) < len(members):
                groups[("all but fp8", sample)] = no_fp8
    for (source, sample), members in groups.items():
        if not members:
            continue
        kinds = ", ".join(dict.fromkeys(r.peak.kind for r in members))
        out.append(
            f"| {source} | {kinds} | {len(members)} | {geomean([r.error for r in members]):.1%} "
            f"| {_worst(members)} | {geomean([r.baseline_error for r in members]):.1%} "
            f"| {_worst(members, baseline=True)} | {sample} |"
        )
    out.append("")
    total = len(rows) + len(left)
    out.append(f"Left out ({len(left)} of {total} points, as published dpcost cannot cost them):")
    reasons: dict[str, dict[str, int]] = {}
    for p in left:
        by_source = reasons.setdefault(p.left_out, {})
        key = f"{p.source}{' (held out)' if p.sample == 'out of sample' else ''}"
        by_source[key] = by_source.get(key, 0) + 1
    for why, by_source in reasons.items():
        sources = ", ".join(f"{s} ({n})" for s, n in by_source.items())
        out.append(f"- {why}: {sources}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--markdown", action="store_true", help="the README's tables")
    ap.add_argument("--left-out", action="store_true", help="also list every point left out and why")
    args = ap.parse_args(argv)
    all_peaks = peaks(CSV) + peaks(HOLDOUT)
    rows, left = compare(all_peaks)
    if args.markdown:
        print(markdown(rows, left))
        return 0
    header = ("#", "source", "model", "GPUs", "conditions", "peak", "measured", "dpcost", "error", "16 B/param")
    print("{:>3s} {:17s} {:15s} {:>4s}  {:40s} {:10s} {:>10s} {:>10s} {:>8s} {:>10s}".format(*header))
    for r in rows:
        p = r.peak
        print(
            f"{label(p):>3s} {p.source:17s} {p.model:15s} {p.gpus:4d}  {conditions(p):40s} {p.kind:10s} "
            f"{p.measured_bytes / GIB:6.2f} GiB {r.predicted / GIB:6.2f} GiB {r.error:+8.1%} {r.baseline_error:+10.1%}"
        )
    print()
    print(markdown(rows, left).split("\n\n", 1)[1])
    if args.left_out:
        print()
        for p in left:
            print(f"{label(p):>3s} {p.source:17s} {p.model:24s} {p.gpus:4d}  {p.left_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
