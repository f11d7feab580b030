#!/usr/bin/env python3
"""The Ultra-Scale Playbook's benchmark runs, held out: nanotron on 1-64 nodes of 8 H100 (EFA), every layout of
DP x TP x PP with ZeRO 0 or 1 at a global batch of 1M tokens, against dpcost's tokens/s per GPU and its verdict on
whether the run fits.

    python benchmarks/ultrascale_runs.py [--markdown] [--worst N]

Data: tests/reference/ultrascale-playbook/ (runs.csv, read off the playbook's figure by extract.py; the models
nanotron built, models/*.yaml; README.md gives the runs' settings, nanotron's scripts/scaling_benchmarks.py on its
base config, and says what the figure does not). Gathered after dpcost's models were built and
nothing set from it. Each run is costed as it was configured:

    dpcost estimate --model MODEL --topology aws-p5 --dp D --tp T --pp P --micro-batch B --global-batch G
        --seq-len 4096 --zero Z --framework megatron --attention-kernel flash2 --recompute none --bucket-size 50MiB
        [--sequence-parallel] [ZeRO 1 with DP above 1: --overlap-comm false --grad-reduce all-reduce]

Every run is costed as Megatron runs it, whose kernels are nanotron's kind (huggingface/nanotron @0e0a27ea,
models/llama.py: bf16 weights without autocast, TritonRMSNorm, flash-attn's rotary, a vocab-parallel cross-entropy; its
TP is Megatron's column and row split, sequence parallel in its REDUCE_SCATTER mode, which the benchmark ran; its PP
runs one-forward-one-backward, on the stages nanotron balances by cost, as a --pipeline-layout where its head is on the
last stage: nanotron_layout), but for attention: flash-attn's varlen kernel, FlashAttention-2 (its pyproject pins
flash-attn >=2.5,<2.7), not Transformer Engine's cuDNN. Not modelled: its SwiGLU runs eager (GLUActivation keeps the
SiLU's output besides, which the fits verdicts leave out; three kernels forward, four back), its copies of q, k and v
around rotary and attention, its residual adds outside the norm, and the host's time issuing each layer's calls, which
sets its tensor-parallel steps (docs/sources/host-overhead.md). Its data parallelism, with the benchmark's
accumulate_grad_in_fp32 (trainer.py and helpers.py at that commit):
- ZeRO 0: PyTorch DDP with the config's bucket_cap_mb, 25, whose comm hook (gradient_accumulator.py
  get_fp32_accum_hook) all-reduces the fp32 gradients it accumulates during the last backward: 25 MiB of bf16
  gradients is 50 MiB of fp32 ones a bucket, Megatron's DDP at --bucket-size 50MiB.
- ZeRO 1: no DDP (init_model's make_ddp is false with fp32 accumulation and a ZeRO stage): after the last backward
  the trainer all-reduces the whole fp32 gradient buffer (sync_gradients_across_dp with reduce_scatter=False), and
  after the optimizer step ZeroDistributedOptimizer all-gathers the updated bf16 parameters, neither overlapped:
  `--overlap-comm false` (Megatron's one bucket) with `--grad-reduce all-reduce`.
No recomputation (the benchmark's recompute_layer was off). nanotron's linear layers are its own, not Transformer
Engine's: none of TE's placeholder weight gradients, and after every micro-batch its fp32 accumulator adds each bf16
weight gradient into the fp32 buffer (gradient_accumulator.py:204-223), as Megatron's hook does without fusion
(`--no-grad-accumulation-fusion`; ops.main_grad_accumulation). The GPU's H100 topology with
EFA is `aws-p5`. Beside each, the naive figure: every model FLOP (PaLM's 6N + 12LHQT) at 40% of the dense BF16
peak. Errors are predicted / measured - 1; summaries are the geometric mean of |error| and the median signed error.
A run whose printed GBS is not DP x MBS x GradAcc is left out, and so is a failure of a configuration that also ran
(a retry).
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from dpcost.catalog import load_model, load_topology
from dpcost.engine.estimate import estimate
from dpcost.engine.utilization import naive_tokens_per_second
from dpcost.errors import InputError
from dpcost.options import Options
from dpcost.specs import ModelSpec

HERE = Path(__file__).resolve().parent.parent / "tests" / "reference" / "ultrascale-playbook"
SEQ_LEN = 4096  # the playbook: "a sequence length of 4,096 and a global batch size of 1M tokens"
TOPOLOGY = "aws-p5"
MODELS = {"1B": "nanotron-1b", "3B": "nanotron-3b", "8B": "nanotron-8b", "80B": "nanotron-80b"}
BUCKET_BYTES = 50 * 2**20  # DDP's bucket_cap_mb 25 over bf16 gradients, reduced as fp32 (module docstring)


@dataclass(frozen=True)
class Run:
    model: str  # the figure's column: 1B, 3B, 8B, 80B
    nodes: int
    dp: int
    tp: int
    pp: int
    micro_batch: int
    grad_accum: int
    global_batch: int  # as printed
    zero: int
    ran: bool
    tokens_per_s_per_gpu: float | None
    memory_gb: float | None

    @property
    def gpus(self) -> int:
        return self.dp * self.tp * self.pp

    @property
    def layout(self) -> str:
        return f"DP{self.dp} TP{self.tp} PP{self.pp} mbs{self.micro_batch} x{self.grad_accum} ZeRO-{self.zero}"

    @property
    def kind(self) -> str:
        """Which dimensions besides DP the run splits the model over."""
        return {(False, False): "DP only", (True, False): "TP", (False, True): "PP", (True, True): "TP x PP"}[
            (self.tp > 1, self.pp > 1)
        ]

    @property
    def key(self) -> tuple[str, int, int, int, int, int, int]:
        return (self.model, self.dp, self.tp, self.pp, self.micro_batch, self.grad_accum, self.zero)


def read_runs(path: Path = HERE / "runs.csv") -> list[Run]:
    def number(text: str) -> float | None:
        return float(text) if text else None

    with path.open(encoding="utf-8") as f:
        return [
            Run(
                model=r["model"],
                nodes=int(r["nodes"]),
                dp=int(r["dp"]),
                tp=int(r["tp"]),
                pp=int(r["pp"]),
                micro_batch=int(r["micro_batch"]),
                grad_accum=int(r["grad_accum"]),
                global_batch=int(r["global_batch"]),
                zero=int(r["zero"]),
                ran=r["status"] == "ran",
                tokens_per_s_per_gpu=number(r["tokens_per_s_per_gpu"]),
                memory_gb=number(r["gpu_memory_gb"]),
            )
            for r in csv.DictReader(line for line in f if not line.startswith("#"))
        ]


def usable(runs: Iterable[Run]) -> tuple[list[Run], dict[str, int]]:
    """The runs the benchmark compares, and how many of each kind it leaves out."""
    runs = list(runs)
    ran = {r.key for r in runs if r.ran}
    kept, left = [], {"printed GBS is not DP x MBS x GradAcc": 0, "a failure of a configuration that also ran": 0}
    for r in runs:
        if r.dp * r.micro_batch * r.grad_accum != r.global_batch:
            left["printed GBS is not DP x MBS x GradAcc"] += 1
        elif not r.ran and r.key in ran:
            left["a failure of a configuration that also ran"] += 1
        else:
            kept.append(r)
    return kept, left


@cache
def model_spec(name: str) -> ModelSpec:
    return load_model(str(HERE / "models" / f"{MODELS[name]}.yaml"))


def nanotron_block_stages(model: ModelSpec, pp: int) -> list[int]:
    """The pipeline stage of each of nanotron's blocks (models/base.py:216-233 at 0e0a27ea): its blocks in order
    (embedding, layers, final norm, output head), each costed by get_block_compute_costs (models/llama.py:913-925: a
    layer 4 x heads x head_dim x hidden + 3 x ffn x hidden, the head vocab x hidden, the rest 0); a block goes to the
    current stage, which moves on once the blocks' cumulative cost passes (stage + 1) / PP of the total."""
    a = model.architecture
    assert a is not None
    layer = 4 * a.hidden * a.hidden + 3 * a.ffn * a.hidden  # heads x head_dim = hidden
    costs = [0] + [layer] * a.layers + [0, a.vocab * a.hidden]
    total, cumulative, stage, stages = sum(costs), 0, 0, []
    for cost in costs:
        cumulative += cost
        stages.append(stage)
        if cumulative > total * (stage + 1) / pp:
            stage += 1
    return stages


def nanotron_stage_layers(model: ModelSpec, pp: int) -> list[int]:
    """The decoder layers nanotron puts on each pipeline stage (nanotron_block_stages)."""
    layers = [0] * pp
    for stage in nanotron_block_stages(model, pp)[1:-2]:
        layers[stage] += 1
    return layers


def nanotron_layout(model: ModelSpec, pp: int) -> str | None:
    """nanotron's split as a --pipeline-layout (E and its layers on stage 0, ..., L on the last), where it can be
    written so: its output head on the last stage; else None, the even split, which differs from nanotron's (its
    last stages left without a block)."""
    if pp == 1 or nanotron_block_stages(model, pp)[-1] != pp - 1:
        return None
    stages = [f"t*{n}" if n else "" for n in nanotron_stage_layers(model, pp)]
    return "|".join(["E" + stages[0], *stages[1:-1], stages[-1] + "L"])


def split_note(costed: list[Costed]) -> str:
    """How many pipelined runs that ran are costed with nanotron's stage split, and how many with the even one."""
    piped = [c.run for c in costed if c.run.pp > 1]
    own = sum(nanotron_layout(model_spec(r.model), r.pp) is not None for r in piped)
    return (
        f"Pipelined runs that ran, costed with nanotron's own stage split: {own}; with dpcost's even split, where "
        f"nanotron's leaves its last stages without a block: {len(piped) - own}."
    )


def options(r: Run) -> Options:
    sharded = r.zero == 1 and r.dp > 1  # nanotron's ZeRO-1 all-reduces after the backward, unoverlapped (docstring)
    return Options(
        dp=r.dp,
        tp=r.tp,
        pp=r.pp,
        micro_batch=r.micro_batch,
        global_batch=r.global_batch,
        seq_len=SEQ_LEN,
        zero=r.zero,
        framework="megatron",
        attention_kernel="flash2",  # flash-attn's varlen kernel (docstring)
        recompute="none",
        sequence_parallel=r.tp > 1,
        bucket_bytes=BUCKET_BYTES,
        grad_accumulation_fusion=False,  # nanotron's linear layers are its own: no Transformer Engine placeholders
        overlap_comm=False if sharded else None,
        grad_reduce="all-reduce" if sharded else None,
        pipeline_layout=nanotron_layout(model_spec(r.model), r.pp),  # nanotron's split where it can be written
    )


@dataclass(frozen=True)
class Costed:
    run: Run
    tokens_per_s_per_gpu: float
    fits: bool
    naive: float

    @property
    def error(self) -> float:
        assert self.run.tokens_per_s_per_gpu
        return self.tokens_per_s_per_gpu / self.run.tokens_per_s_per_gpu - 1

    @property
    def naive_error(self) -> float:
        assert self.run.tokens_per_s_per_gpu
        return self.naive / self.run.tokens_per_s_per_gpu - 1


def cost(r: Run) -> Costed:
    topology = load_topology(TOPOLOGY)
    report = estimate(model_spec(r.model), topology, options(r))
    assert report.time is not None
    naive = naive_tokens_per_second(model_spec(r.model), topology.gpu, SEQ_LEN)
    return Costed(r, report.time.tokens_per_second / r.gpus, report.fits, naive)


def geomean(errors: Iterable[float]) -> float:
    logs = [math.log(max(abs(e), 1e-4)) for e in errors]
    return math.exp(statistics.fmean(logs)) if logs else math.nan


def group_rows(costed: list[Costed], by: Callable[[Costed], str]) -> list[str]:
    groups: dict[str, list[Costed]] = {}
    for c in costed:
        groups.setdefault(by(c), []).append(c)
    out = []
    for name, cs in groups.items():
        errors, naive = [c.error for c in cs], [c.naive_error for c in cs]
        out.append(
            f"| {name} | {len(cs)} | {geomean(errors):.1%} | {statistics.median(errors):+.1%} | {geomean(naive):.1%} "
            f"| {statistics.median(naive):+.1%} |"
        )
    return out


def ranks(values: list[float]) -> list[int]:
    order = sorted(range(len(values)), key=values.__getitem__)
    out = [0] * len(values)
    for position, i in enumerate(order):
        out[i] = position
    return out


def cells(costed: list[Costed]) -> dict[tuple[str, int], list[Costed]]:
    """The runs by (model, nodes): the playbook's heatmap cells, in its order."""
    out: dict[tuple[str, int], list[Costed]] = {}
    for c in sorted(costed, key=lambda c: (list(MODELS).index(c.run.model), c.run.nodes)):
        out.setdefault((c.run.model, c.run.nodes), []).append(c)
    return out


def measured(c: Costed) -> float:
    assert c.run.tokens_per_s_per_gpu is not None
    return c.run.tokens_per_s_per_gpu


def best_table(costed: list[Costed]) -> list[str]:
    """Per cell: the measured best layout (the heatmap's) costed by dpcost, and the layout dpcost would pick among
    those that ran, with what it measured; Spearman's rank correlation of predicted and measured over the cell."""
    out = [
        "| model | nodes | runs | measured best | tok/s/GPU | dpcost | error | naive error | dpcost's pick "
        "| its measured tok/s/GPU | of the best | Spearman |",
        "|---|---:|---:|---|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    bests = []
    for (model, nodes), cs in cells(costed).items():
        best = max(cs, key=measured)
        pick = max(cs, key=lambda c: c.tokens_per_s_per_gpu)
        bests.append(best)
        rho = statistics.correlation(ranks([measured(c) for c in cs]), ranks([c.tokens_per_s_per_gpu for c in cs]))
        out.append(
            f"| {model} | {nodes} | {len(cs)} | {best.run.layout} | {measured(best):,.0f} "
            f"| {best.tokens_per_s_per_gpu:,.0f} | {best.error:+.1%} | {best.naive_error:+.1%} | {pick.run.layout} "
            f"| {measured(pick):,.0f} | {measured(pick) / measured(best):.2f} | {rho:+.2f} |"
        )
    out += [
        "",
        f"The {len(bests)} best runs: dpcost {geomean(c.error for c in bests):.1%} (geomean of abs. error; median "
        f"{statistics.median(c.error for c in bests):+.1%}), naive {geomean(c.naive_error for c in bests):.1%} "
        f"(median {statistics.median(c.naive_error for c in bests):+.1%}).",
    ]
    return out


def markdown(costed: list[Costed], failed: list[tuple[Run, bool]], left: dict[str, int], worst: int) -> str:
    head = (
        "| runs | n | dpcost (geomean of abs. error) | dpcost median signed | naive (40% MFU) | naive median signed |"
    )
    rule = "|---|---:|---:|---:|---:|---:|"
    out = ["The best run of each cell (model x nodes), and the run dpcost would pick of those that ran:", ""]
    out += [*best_table(costed), "", "Every run that ran, tokens/s per GPU, by model:", "", head, rule]
    out += group_rows(costed, lambda c: c.run.model)
    out += group_rows(costed, lambda c: "all")
    out += ["", "By what besides DP splits the model:", "", head, rule]
    out += group_rows(sorted(costed, key=lambda c: ("DP only", "TP", "PP", "TP x PP").index(c.run.kind)),
                      lambda c: c.run.kind)  # fmt: skip
    out += ["", "By nodes:", "", head, rule]
    out += group_rows(sorted(costed, key=lambda c: c.run.nodes), lambda c: f"{c.run.nodes} nodes")
    ran_fits = sum(c.fits for c in costed)
    failed_fits = sum(fits for _, fits in failed)
    out += [
        "",
        "Whether it fits (a failed run crashed or ran out of memory; the figure does not say which):",
        "",
        "| measured | runs | dpcost: fits | dpcost: does not fit |",
        "|---|---:|---:|---:|",
        f"| ran | {len(costed)} | {ran_fits} | {len(costed) - ran_fits} |",
        f"| failed | {len(failed)} | {failed_fits} | {len(failed) - failed_fits} |",
        "",
        "Left out: " + "; ".join(f"{why} ({n})" for why, n in left.items()) + ".",
        "",
        split_note(costed),
        "",
        f"Worst {worst} by the factor they are off (|log(predicted / measured)|):",
        "",
        "| model | nodes | layout | measured tok/s/GPU | dpcost | error | naive error |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for c in sorted(costed, key=lambda c: -abs(math.log(c.tokens_per_s_per_gpu / (c.run.tokens_per_s_per_gpu or 1))))[
        :worst
    ]:
        out.append(
            f"| {c.run.model} | {c.run.nodes} | {c.run.layout} | {c.run.tokens_per_s_per_gpu:,.0f} "
            f"| {c.tokens_per_s_per_gpu:,.0f} | {c.error:+.1%} | {c.naive_error:+.1%} |"
        )
    return "\n".join(out)


def collectives_table() -> list[str]:
    """The cluster's own collectives (collectives.csv: the playbook's median and 5th-95th percentile bandwidth of a
    256MB call on 1-64 nodes) beside dpcost's bus bandwidth for the same call on `aws-p5` (`dpcost collective`)."""
    from typer.testing import CliRunner

    from dpcost.cli import app

    out = [
        "| op | nodes | measured median (GB/s) | 5th-95th percentile | dpcost busbw on aws-p5 | dpcost / median |",
        "|---|---:|---:|---|---:|---:|",
    ]
    with (HERE / "collectives.csv").open(encoding="utf-8") as f:
        for r in csv.DictReader(f):
            args = ["collective", "--op", r["op"], "-t", TOPOLOGY, "-n", r["ranks"], "--sizes", "256M", "-f", "csv"]
            result = CliRunner().invoke(app, args)
            assert result.exit_code == 0, result.output
            busbw = float(list(csv.DictReader(result.stdout.splitlines()))[-1]["busbw_GBps"])
            median = float(r["median_GBps"])
            out.append(
                f"| {r['op']} | {r['nodes']} | {median:,.1f} | {float(r['p5_GBps']):,.1f}-{float(r['p95_GBps']):,.1f} "
                f"| {busbw:,.1f} | {busbw / median:.2f} |"
            )
    return out


def report(worst: int = 5) -> str:
    """The benchmark's tables (the README's)."""
    runs, left = usable(read_runs())
    costed, failed = [], []
    for r in runs:
        try:
            if r.ran:
                costed.append(cost(r))
            else:
                failed.append((r, estimate(model_spec(r.model), load_topology(TOPOLOGY), options(r)).fits))
        except InputError as exc:  # dpcost refuses the layout (pipeline stages the layers do not fill)
            why = f"dpcost refuses the layout ({exc.where})"
            left[why] = left.get(why, 0) + 1
    text = markdown(costed, failed, left, worst)
    return (
        text
        + "\n\nThe cluster's collectives, as the playbook measured them, beside dpcost's:\n\n"
        + "\n".join(collectives_table())
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--markdown", action="store_true", help="the README's tables (the default output too)")
    ap.add_argument("--worst", type=int, default=5, help="list the N runs dpcost reads worst")
    args = ap.parse_args(argv)
    print(report(args.worst))
    return 0


if __name__ == "__main__":
    sys.exit(main())
