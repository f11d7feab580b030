"""Reports -> tables and documents. Formatters return objects or strings; only the CLI prints.

Every report is first laid out as plain `Table`s (title, columns, rows of strings); rich tables, markdown and
CSV are three renderings of the same tables, so a number cannot differ between them. JSON and YAML come from
`*_dict` functions: the stable, documented contract (`schema_version`) that CI checks read.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dpcost.engine.collectives import CollectiveChoice, CollectiveTime, hop_latency
from dpcost.engine.estimate import Report
from dpcost.engine.memory import DeepSpeedEstimate, StageMemory
from dpcost.engine.nccl_tables import NCCL_VERSION
from dpcost.engine.params import count_params
from dpcost.specs import ModelSpec, TopologySpec
from dpcost.units import fmt_bandwidth, fmt_bytes, fmt_count, fmt_flops, fmt_seconds

if TYPE_CHECKING:
    from rich.console import RenderableType

    from dpcost.calibration import Fit

__all__ = [
    "SCHEMA_VERSION",
    "Table",
    "collective_rows",
    "estimate_dict",
    "estimate_tables",
    "memory_tables",
    "model_tables",
    "models_table",
    "to_csv",
    "to_json",
    "to_markdown",
    "to_rich",
    "to_yaml",
    "topologies_table",
    "topology_tables",
]

SCHEMA_VERSION = 1


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    right: set[int] = field(default_factory=set)  # right-aligned (numeric) columns
    notes: list[str] = field(default_factory=list)
    data: list[dict[str, Any]] = field(default_factory=list)  # machine-readable rows (CSV/JSON)


def _us(x: float) -> str:
    """Microseconds as nccl-tests prints them: two decimals below 1000, one above."""
    return f"{x:.2f}" if x < 1000 else f"{x:.1f}"


def _pct(x: float) -> str:
    return f"{x:.1%}"


def _gb(x: float) -> str:
    return fmt_bytes(x)


# ------------------------------------------------------------------------------------------------ estimate


def estimate_tables(report: Report) -> list[Table]:
    s = report.setup
    tables = [_setup_table(report)]
    if s.mode == "inference":
        tables.append(_inference_table(report))
    else:
        tables.append(_communication_table(report))
        tables.extend(_tier_tables(report))
        tables.append(_memory_table(report.memory.stages, s.zero_stage, s.micro_batch, report.memory.recompute))
        tables.append(_time_table(report))
    if report.warnings:
        tables.append(Table("Warnings", ["#", "warning"], [[str(i), w] for i, w in enumerate(report.warnings, 1)]))
    return tables


def _setup_table(r: Report) -> Table:
    s = r.setup
    fits = bool(r.memory.stages) and r.memory.stages[s.zero_stage].fits
    chosen = rc = ""
    if s.zero_chosen:
        chosen = " (chosen: the fastest plan that fits)" if fits else " (chosen: no stage fits, the most sharded shown)"
    if s.recompute_chosen:
        rc = " (chosen: the fastest plan that fits)" if fits else " (chosen: nothing fits, the most saving shown)"
    params = (
        f"{fmt_count(s.params_total)} total, {fmt_count(s.params_active)} active per token "
        f"({fmt_count(s.params_active_excl_embedding)} without the input embedding)"
    )
    if s.params_mtp:
        params += f" (+{fmt_count(s.params_mtp)} MTP module, not trained here)"
    rows = [
        ["model", f"{s.model_title} ({s.model})"],
        ["parameters", params],
        ["topology", f"{s.topology}: {s.gpu}"],
        ["data parallel", f"{s.dp} GPUs = {s.nodes} node(s) x {s.gpus_per_node}"],
        ["mode", s.mode],
    ]
    if s.mode == "train":
        rows += [
            ["ZeRO stage", f"{s.zero_stage}{chosen}"],
            [
                "recipe",
                f"{s.recipe}, {s.optimizer}, gradients in {s.grad_dtype}"
                + (f", offload {s.offload}" if s.offload != "none" else ""),
            ],
            ["activation recompute", f"{s.recompute}{rc}" + (", flash attention" if s.flash_attention else "")],
            [
                "global batch B = b x a x D",
                f"{s.micro_batch} x {s.accumulation} x {s.dp} = {s.global_batch:,} sequences",
            ],
            ["tokens per step", f"{s.tokens_per_step:,} ({s.seq_len} per sequence)"],
            ["MFU input", f"{s.mfu:.0%} of dense BF16 peak on every FLOP executed (recomputation included)"],
        ]
    else:
        rows += [["batch per replica", f"{s.micro_batch} sequences of {s.seq_len} tokens"]]
    return Table("Setup", ["", "value"], rows)


def _communication_table(r: Report) -> Table:
    c = r.communication
    t = Table(
        f"Communication per step: {c.primitives} (ZeRO-{r.setup.zero_stage}), {c.frequency}",
        [
            "collective",
            "carries",
            "message",
            "sent per rank",
            "algorithm (its calls)",
            "whole message",
            "calls/step",
            "per step",
        ],
        right={2, 3, 5, 6, 7},
    )
    for row in c.collectives:
        best = row.single_call.best
        t.rows.append(
            [
                row.op,
                row.purpose + (f" x{row.occurrences}" if row.occurrences > 1 else ""),
                _gb(row.message_bytes),
                _gb(row.bytes_sent_per_rank),
                _algorithms(row.algorithms),
                fmt_seconds(best.seconds),
                str(row.calls),
                fmt_seconds(row.seconds),
            ]
        )
    t.notes.append(
        f"gradient volume |theta| x {r.setup.grad_dtype} = {fmt_count(r.setup.params_total)} x "
        f"{c.gradient_bytes / r.setup.params_total:g} B = {_gb(c.gradient_bytes)}; each rank sends "
        f"{_gb(c.bytes_sent_per_rank)} per step; {fmt_seconds(c.seconds_per_step)} of collectives per step"
    )
    t.notes.append(
        "whole message: the time of one call carrying all of it, for scale; the step issues the calls counted"
    )
    if c.collectives:
        first = c.collectives[0].single_call
        others = ", ".join(
            f"{x.algorithm}{' (what-if)' if x.what_if else ''} {fmt_seconds(x.seconds)}"
            for x in first.candidates
            if x is not first.best
        )
        if others:
            t.notes.append(f"{c.collectives[0].op} of the whole message, other algorithms: {others}")
        if first.note:
            t.notes.append(first.note)
    return t


def _algorithms(used: Sequence[tuple[str, int]]) -> str:
    """The algorithm/protocol a row's calls ran with: one name, or each with its number of calls."""
    if len(used) == 1:
        return used[0][0]
    return ", ".join(f"{name} x{n}" for name, n in used)


def _tier_tables(r: Report) -> list[Table]:
    """Where each distinct collective spends its time; ops with the same traffic share one table."""
    groups: dict[tuple[object, ...], list[str]] = {}
    calls: dict[tuple[object, ...], tuple[CollectiveTime, float]] = {}
    for row in r.communication.collectives:
        best = row.single_call.best
        if not best.tiers:
            continue
        key = (
            best.algorithm,
            best.protocol,
            tuple((t.tier, round(t.bytes_per_gpu)) for t in best.tiers),
            round(best.seconds, 9),
        )
        groups.setdefault(key, [])
        if row.op not in groups[key]:
            groups[key].append(row.op)
        calls[key] = (best, row.message_bytes)
    return [
        tier_table(best, f"{' / '.join(groups[key])} of {_gb(size)} as one call on {r.setup.topology}, per tier")
        for key, (best, size) in calls.items()
    ]


def tier_table(best: CollectiveTime, title: str) -> Table:
    t = Table(title, ["tier", "bytes per GPU", "time", ""], right={1, 2})
    slowest = max(best.tiers, key=lambda x: x.seconds)
    for tier in best.tiers:
        t.rows.append(
            [
                tier.tier,
                _gb(tier.bytes_per_gpu),
                fmt_seconds(tier.seconds),
                "bottleneck" if tier is slowest else "",
            ]
        )
    t.notes.append(
        f"{best.algorithm}/{best.protocol}: {fmt_seconds(best.seconds)} = latency {fmt_seconds(best.latency_seconds)}"
        f" + bandwidth {fmt_seconds(best.bandwidth_seconds)}; algbw {fmt_bandwidth(best.algbw)}, "
        f"busbw {fmt_bandwidth(best.busbw)}"
    )
    return t


def _memory_table(stages: Sequence[StageMemory], chosen: int | None, micro_batch: int, recompute: str) -> Table:
    t = Table(
        f"Memory per GPU by ZeRO stage (activations with recompute={recompute})",
        [
            "stage",
            "params",
            "grads",
            "optimizer",
            "activations",
            "buffers",
            "overhead",
            "total",
            "fits",
            "max micro-batch",
        ],
        right=set(range(1, 8)) | {9},
    )
    for m in stages:
        mark = " <" if m.stage == chosen else ""
        t.rows.append(
            [
                f"{m.stage}{mark}",
                _gb(m.params),
                _gb(m.grads),
                _gb(m.optimizer),
                _gb(m.activations),
                _gb(m.buffers),
                _gb(m.overhead),
                _gb(m.total),
                ("yes" if m.fits else "NO") + f" / {_gb(m.hbm)}",
                str(m.largest_micro_batch(micro_batch)) if m.activations_per_sample else "-",
            ]
        )
    if any(m.cpu for m in stages):
        t.notes.append("offloaded to CPU per GPU: " + ", ".join(f"ZeRO-{m.stage} {_gb(m.cpu)}" for m in stages))
    t.notes.append(
        "buffers: DDP's bucket copy of the gradients (stage 0), two gradient buckets in flight, ZeRO-3's gathered "
        "block (in use + prefetched) with its gradient, and unsharded gradients if kept for accumulation; "
        "overhead: 1 GiB CUDA/NCCL context + 5% fragmentation"
    )
    return t


def _time_table(r: Report) -> Table:
    t = r.time
    assert t is not None
    a = r.setup.accumulation
    bound = {
        "compute": "compute: communication hides behind the backward pass",
        "communication": "communication: collectives take longer than the compute they overlap",
    }[t.bound]
    rows = [
        ["forward (one micro-batch)", fmt_seconds(t.forward)],
        [
            "backward (one micro-batch)",
            fmt_seconds(t.backward) + (" incl. recompute" if r.setup.recompute != "none" else ""),
        ],
        [f"compute per step ({a} micro-batch{'es' if a > 1 else ''})", fmt_seconds(t.compute)],
        ["communication per step (serial sum)", fmt_seconds(t.comm)],
        ["step, ideal overlap: max(T_compute, T_comm)", fmt_seconds(t.overlapped)],
        [
            f"step, bucketed ({fmt_bytes(r.setup.bucket_bytes, binary=True)} buckets, per-block gathers)",
            fmt_seconds(t.bucketed),
        ],
        ["step, serial: T_compute + T_comm", fmt_seconds(t.serial)],
        ["exposed communication (bucketed)", fmt_seconds(t.exposed_comm)],
        ["bound by", bound],
        ["throughput", f"{t.tokens_per_second:,.0f} tokens/s"],
        ["MFU", _pct(t.mfu)],
        ["scaling efficiency vs. 1 GPU", _pct(t.scaling_efficiency)],
    ]
    if r.setup.skew:
        rows.append(["straggler delay per step", fmt_seconds(t.straggler_seconds)])
    return Table("Time per step", ["", "value"], rows)


def _inference_table(r: Report) -> Table:
    i = r.inference
    assert i is not None
    rows = [
        ["gradient collectives", "none: replicas exchange no gradients (0 bytes per step)"],
        ["weights (bf16)", _gb(i.weights_bytes)],
        [f"KV cache ({r.setup.micro_batch} x {r.setup.seq_len} tokens)", _gb(i.kv_cache_bytes)],
        ["overhead", _gb(i.overhead_bytes)],
        [
            "memory per replica",
            _gb(i.total_bytes) + (f" ({_gb(i.per_gpu_bytes)} per GPU)" if i.gpus_per_replica > 1 else ""),
        ],
        ["fits on one GPU", "yes" if i.fits else f"NO: {i.gpus_per_replica} GPUs per replica"],
        ["replicas", f"{i.replicas} on {r.setup.dp} GPUs"],
        ["decode throughput per replica", f"{i.tokens_per_second_per_replica:,.0f} tokens/s ({i.bound}-bound)"],
        ["aggregate throughput", f"{i.tokens_per_second:,.0f} tokens/s ({i.replicas} x per replica)"],
    ]
    return Table("Inference", ["", "value"], rows)


def _stage_dict(m: StageMemory, micro_batch: int) -> dict[str, Any]:
    return {
        "stage": m.stage,
        "params_bytes": int(m.params),
        "grads_bytes": int(m.grads),
        "optimizer_bytes": int(m.optimizer),
        "activations_bytes": int(m.activations),
        "buffers_bytes": int(m.buffers),
        "overhead_bytes": int(m.overhead),
        "total_bytes": int(m.total),
        "cpu_bytes": int(m.cpu),
        "fits": m.fits,
        "max_micro_batch": m.largest_micro_batch(micro_batch),
    }


def _choice_dict(c: CollectiveChoice) -> dict[str, Any]:
    return {
        "algorithm": c.best.algorithm,
        "protocol": c.best.protocol,
        "seconds": c.best.seconds,
        "tiers": [{"tier": t.tier, "bytes_per_gpu": int(t.bytes_per_gpu), "seconds": t.seconds} for t in c.best.tiers],
        "alternatives": {x.algorithm: x.seconds for x in c.candidates},
    }


def estimate_dict(r: Report) -> dict[str, Any]:
    """The JSON/YAML contract of `dpcost estimate` (schema_version 1; README documents every key)."""
    s = r.setup
    out: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "model": {
            "name": s.model,
            "title": s.model_title,
            "params_total": int(s.params_total),
            "params_active": int(s.params_active),
            "params_active_excl_embedding": int(s.params_active_excl_embedding),
            "params_mtp": int(s.params_mtp),
        },
        "topology": {"name": s.topology, "gpu": s.gpu, "hbm_bytes": int(r.memory.hbm)},
        "setup": {
            "mode": s.mode,
            "dp": s.dp,
            "nodes": s.nodes,
            "gpus_per_node": s.gpus_per_node,
            "zero_stage": s.zero_stage,
            "zero_stage_chosen": s.zero_chosen,
            "grad_dtype": s.grad_dtype,
            "micro_batch": s.micro_batch,
            "accumulation": s.accumulation,
            "seq_len": s.seq_len,
            "global_batch": s.global_batch,
            "tokens_per_step": s.tokens_per_step,
            "recompute": s.recompute,
            "recipe": s.recipe,
            "optimizer": s.optimizer,
            "offload": s.offload,
            "bucket_bytes": int(s.bucket_bytes),
            "mfu": s.mfu,
            "skew": s.skew,
        },
        "communication": {
            "primitives": r.communication.primitives,
            "frequency": r.communication.frequency,
            "gradient_bytes": int(r.communication.gradient_bytes),
            "bytes_sent_per_rank": int(r.communication.bytes_sent_per_rank),
            "seconds_per_step": r.communication.seconds_per_step,
            "collectives": [
                {
                    "op": c.op,
                    "purpose": c.purpose,
                    "bytes": int(c.message_bytes),
                    "bytes_sent_per_rank": int(c.bytes_sent_per_rank),
                    "occurrences": c.occurrences,
                    "calls": c.calls,
                    "algorithm": c.algorithms[0][0].split("/")[0] if c.algorithms else "none",
                    "calls_by_algorithm": [{"algorithm": name, "calls": n} for name, n in c.algorithms],
                    "seconds": c.seconds,
                    "single_call": _choice_dict(c.single_call),
                }
                for c in r.communication.collectives
            ],
        },
        "memory": {
            "hbm_bytes": int(r.memory.hbm),
            "recompute": r.memory.recompute,
            "stages": [_stage_dict(m, s.micro_batch) for m in r.memory.stages],
        },
        "time": None,
        "inference": None,
        "warnings": list(r.warnings),
    }
    if r.time is not None:
        t = r.time
        out["time"] = {
            "forward_seconds": t.forward,
            "backward_seconds": t.backward,
            "compute_seconds": t.compute,
            "comm_seconds": t.comm,
            "overlapped_seconds": t.overlapped,
            "bucketed_seconds": t.bucketed,
            "serial_seconds": t.serial,
            "step_seconds": t.step,
            "exposed_comm_seconds": t.exposed_comm,
            "bound": t.bound,
            "tokens_per_second": t.tokens_per_second,
            "mfu": t.mfu,
            "scaling_efficiency": t.scaling_efficiency,
            "straggler_seconds": t.straggler_seconds,
        }
    if r.inference is not None:
        i = r.inference
        out["inference"] = {
            "weights_bytes": int(i.weights_bytes),
            "kv_cache_bytes": int(i.kv_cache_bytes),
            "total_bytes": int(i.total_bytes),
            "per_gpu_bytes": int(i.per_gpu_bytes),
            "fits": i.fits,
            "gpus_per_replica": i.gpus_per_replica,
            "replicas": i.replicas,
            "tokens_per_second_per_replica": i.tokens_per_second_per_replica,
            "tokens_per_second": i.tokens_per_second,
            "bound": i.bound,
        }
    return out


# ------------------------------------------------------------------------------------------------ memory


def memory_tables(
    stages: Sequence[StageMemory],
    micro_batch: int,
    recompute: str,
    deepspeed: Sequence[DeepSpeedEstimate] = (),
) -> list[Table]:
    t = _memory_table(stages, None, micro_batch, recompute)
    t.data = [_stage_dict(m, micro_batch) for m in stages]
    tables = [t]
    if deepspeed:
        ds = Table(
            "DeepSpeed's estimators (model states; GB printed by DeepSpeed are GiB)",
            ["per CPU", "per GPU", "options"],
            right={0, 1},
        )
        for e in deepspeed:
            if e.stage == 2:
                opts = f"ZeRO-2 offload_optimizer={'cpu' if e.offload == 'optimizer' else 'none'}"
            else:
                param = "cpu" if e.offload == "params" else "none"
                optim = "cpu" if e.offload in ("params", "optimizer") else "none"
                opts = f"ZeRO-3 offload_param={param}, offload_optimizer={optim}, zero_init={int(bool(e.zero_init))}"
            ds.rows.append([f"{e.cpu_bytes / 2**30:.2f}GB", f"{e.gpu_bytes / 2**30:.2f}GB", opts])
            ds.data.append(
                {
                    "stage": e.stage,
                    "offload": e.offload,
                    "zero_init": e.zero_init,
                    "per_cpu_bytes": int(e.cpu_bytes),
                    "per_gpu_bytes": int(e.gpu_bytes),
                }
            )
        tables.append(ds)
    return tables


# ------------------------------------------------------------------------------------------------ collectives


def collective_rows(
    choices: Sequence[CollectiveChoice], measured: dict[tuple[str, int], dict[str, float]] | None = None
) -> Table:
    """nccl-tests' vocabulary: size, time (us), algbw, busbw (GB/s), and the chosen algorithm beside the others."""
    algorithms = list(dict.fromkeys(c.algorithm for ch in choices for c in ch.candidates))
    several_ops = len({ch.best.op for ch in choices}) > 1
    columns = ["op"] * several_ops + ["size", "time", "algbw", "busbw", "algorithm", *algorithms]
    measure_cols = sorted({col for m in (measured or {}).values() for col in m}, reverse=True)
    short = {"out-of-place": "oop", "in-place": "ip"}
    for col in measure_cols:
        columns += [f"measured {short.get(col, col)}", f"error {short.get(col, col)}"]
    first = int(several_ops)
    right = {first, first + 1, first + 2, first + 3} | set(range(first + 5, len(columns)))
    t = Table("Collective time (times in us, bandwidths in GB/s)", columns, right=right)
    for ch in choices:
        b = ch.best
        by_alg = {c.algorithm: c.seconds for c in ch.candidates}
        row = [b.op] * several_ops + [
            fmt_bytes(b.size_bytes, binary=True),
            _us(b.seconds * 1e6),
            f"{b.algbw / 1e9:.2f}",
            f"{b.busbw / 1e9:.2f}",
            f"{b.algorithm}/{b.protocol}",
        ]
        row += [_us(by_alg[a] * 1e6) if a in by_alg else "-" for a in algorithms]
        data: dict[str, Any] = {
            "op": b.op,
            "size_bytes": int(b.size_bytes),
            "time_us": b.seconds * 1e6,
            "algbw_GBps": b.algbw / 1e9,
            "busbw_GBps": b.busbw / 1e9,
            "algorithm": b.algorithm,
            "protocol": b.protocol,
        }
        data.update({f"{a}_us": by_alg[a] * 1e6 for a in algorithms if a in by_alg})
        m = (measured or {}).get((b.op, int(b.size_bytes)), {})
        for col in measure_cols:
            if col in m:
                err = b.seconds * 1e6 / m[col] - 1
                row += [_us(m[col]), f"{err:+.1%}"]
                data[f"measured_{col}_us".replace("-", "_")] = m[col]
                data[f"error_{col}".replace("-", "_")] = err
            else:
                row += ["-", "-"]
        t.rows.append(row)
        t.data.append(data)
    return t


# ------------------------------------------------------------------------------------------------ calibration


def _fitted_value(name: str, value: float) -> str:
    if name == "call_overhead":
        return fmt_seconds(value)
    if name == "latency_scale":
        return f"x{value:.3g}"
    return f"{value:.3f}"


def calibration_tables(fit: Fit) -> list[Table]:
    """What `dpcost calibrate` fitted, and each run's error by size band before and after."""
    from dpcost.calibration import PARAMETERS

    params = Table("Fitted parameters", ["parameter", "base", "fitted", "what it is"], right={1, 2})
    for p in PARAMETERS:
        if p.name in fit.fitted:
            base, value = fit.base[p.name], fit.fitted[p.name]
            params.rows.append([p.name, _fitted_value(p.name, base), _fitted_value(p.name, value), p.what])
            params.data.append({"parameter": p.name, "base": base, "fitted": value, "determined": True})
        elif p.name in fit.undetermined:
            params.rows.append([p.name, "-", "kept", fit.undetermined[p.name]])
            params.data.append({"parameter": p.name, "base": None, "fitted": None, "determined": False})
    params.notes.append(f"{fit.points} measured points; loss: soft-L1 of log(predicted / measured), delta 5%")
    runs = Table(
        "Error by run and size band: geomean |predicted - measured| / measured",
        ["run", "ranks", "nodes", "algorithm", "band", "points", "before", "after"],
        right={1, 2, 5, 6, 7},
    )
    for r in fit.runs:
        before = {b.band: b for b in r.before}
        for b in r.after:
            runs.rows.append(
                [
                    r.name,
                    str(r.ranks),
                    str(r.nodes),
                    r.algorithm or "default",
                    b.band,
                    str(b.points),
                    _pct(before[b.band].geomean),
                    _pct(b.geomean),
                ]
            )
            runs.data.append(
                {
                    "run": r.name,
                    "ranks": r.ranks,
                    "nodes": r.nodes,
                    "algorithm": r.algorithm,
                    "band": b.band,
                    "points": b.points,
                    "error_before": before[b.band].geomean,
                    "error_after": b.geomean,
                }
            )
    return [params, runs]


# ------------------------------------------------------------------------------------------------ sweep


def sweep_table(reports: Sequence[Report], fixed_global_batch: bool) -> Table:
    """One row per DP size (weak scaling at a fixed per-GPU batch unless the global batch is held)."""
    first = reports[0].setup
    t = Table(
        f"{first.model_title} on {first.topology}: cost against DP size",
        [
            "DP",
            "nodes",
            "global batch",
            "ZeRO",
            "step",
            "compute",
            "exposed comm",
            "comm (serial)",
            "efficiency",
            "tokens/s",
            "MFU",
            "memory/GPU",
            "fits",
        ],
        right=set(range(0, 12)) - {3},
    )
    for r in reports:
        s, tm = r.setup, r.time
        assert tm is not None
        m = r.memory.stages[s.zero_stage]
        t.rows.append(
            [
                str(s.dp),
                str(s.nodes),
                f"{s.global_batch:,}",
                f"{s.zero_stage} ({s.recompute})",
                fmt_seconds(tm.step),
                fmt_seconds(tm.compute),
                fmt_seconds(tm.exposed_comm),
                fmt_seconds(tm.comm),
                _pct(tm.scaling_efficiency),
                f"{tm.tokens_per_second:,.0f}",
                _pct(tm.mfu),
                _gb(m.total),
                "yes" if m.fits else "NO",
            ]
        )
        t.data.append(
            {
                "dp": s.dp,
                "nodes": s.nodes,
                "global_batch": s.global_batch,
                "accumulation": s.accumulation,
                "zero_stage": s.zero_stage,
                "recompute": s.recompute,
                "step_seconds": tm.step,
                "compute_seconds": tm.compute,
                "exposed_comm_seconds": tm.exposed_comm,
                "comm_seconds": tm.comm,
                "overlapped_seconds": tm.overlapped,
                "serial_seconds": tm.serial,
                "scaling_efficiency": tm.scaling_efficiency,
                "tokens_per_second": tm.tokens_per_second,
                "mfu": tm.mfu,
                "memory_bytes": int(m.total),
                "fits": m.fits,
                "bound": tm.bound,
            }
        )
    batches = {r.setup.global_batch for r in reports}
    if not fixed_global_batch and len(batches) > 1:
        t.notes.append(
            f"the global batch B = b x a x D grows with DP ({min(batches):,} to {max(batches):,} sequences): "
            "optimization changes; pass --global-batch to hold it"
        )
    t.notes.append("efficiency: compute time / step time, against one GPU running the same per-GPU batch")
    return t


def sweep_chart(reports: Sequence[Report], width: int = 50) -> str:
    """A terminal bar chart of scaling efficiency by DP size."""
    lines = ["scaling efficiency"]
    label = max(len(str(r.setup.dp)) for r in reports)
    for r in reports:
        eff = r.time.scaling_efficiency if r.time else 0.0
        bar = "#" * max(1, round(eff * width))
        lines.append(f"  DP {r.setup.dp:>{label}} |{bar:<{width}}| {eff:6.1%}")
    return "\n".join(lines) + "\n"


def sweep_svg(reports: Sequence[Report]) -> str:
    """Two small charts (efficiency, and step time: bucketed, ideal, serial) against log2 DP, as SVG text."""
    dps = [r.setup.dp for r in reports]
    times = [r.time for r in reports if r.time is not None]
    width, height, pad = 360, 240, 44
    lo, hi = math.log2(min(dps)), math.log2(max(dps)) if max(dps) > min(dps) else math.log2(min(dps)) + 1

    def x(dp: int) -> float:
        return pad + (math.log2(dp) - lo) / (hi - lo) * (width - 2 * pad)

    def panel(ox: int, title: str, series: list[tuple[str, list[float], str]], top: float, unit: str) -> list[str]:
        out = [
            f'<g transform="translate({ox},0)">',
            f'<text x="{pad}" y="18" font-size="13">{title}</text>',
            f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="black"/>',
            f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="black"/>',
            f'<text x="4" y="{pad + 4}" font-size="10">{top:.3g}{unit}</text>',
            f'<text x="4" y="{height - pad}" font-size="10">0</text>',
        ]
        for dp in dps:
            out.append(f'<text x="{x(dp) - 8:.1f}" y="{height - pad + 14}" font-size="10">{dp}</text>')
        for i, (name, values, color) in enumerate(series):
            pts = " ".join(
                f"{x(dp):.1f},{height - pad - v / top * (height - 2 * pad):.1f}"
                for dp, v in zip(dps, values, strict=True)
            )
            out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{pts}"/>')
            out.append(f'<text x="{width - pad - 90}" y="{pad + 12 * i}" font-size="10" fill="{color}">{name}</text>')
        out.append(f'<text x="{width / 2 - 30}" y="{height - 8}" font-size="11">DP size (GPUs)</text></g>')
        return out

    eff = [100 * t.scaling_efficiency for t in times]
    steps = [[t.step for t in times], [t.overlapped for t in times], [t.serial for t in times]]
    body = panel(0, "scaling efficiency", [("efficiency", eff, "#1f77b4")], 100.0, "%")
    body += panel(
        width,
        "step time",
        [("bucketed", steps[0], "#d62728"), ("ideal", steps[1], "#2ca02c"), ("serial", steps[2], "#7f7f7f")],
        max(max(s) for s in steps) * 1.05,
        " s",
    )
    head = f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * width}" height="{height}" font-family="sans-serif">'
    return "\n".join([head, '<rect width="100%" height="100%" fill="white"/>', *body, "</svg>"]) + "\n"


# ------------------------------------------------------------------------------------------------ catalog


def models_table(models: Sequence[ModelSpec]) -> Table:
    """`dpcost models`: derived against published counts, and the architecture in brief."""
    t = Table(
        "Models",
        ["name", "model", "total", "active", "active excl. emb.", "published", "layers", "hidden", "attention", "MLP"],
        right={2, 3, 4, 5, 6, 7},
    )
    for m in models:
        c = count_params(m)
        a = m.architecture
        pub = m.published.total if m.published else None
        if a is None:
            attention = mlp = "-"
        else:
            attention = "MLA" if a.mla else "MHA" if a.n_kv_heads == a.heads else f"GQA {a.heads}/{a.n_kv_heads}"
            mlp = a.mlp
            if a.moe:
                mlp = f"MoE {a.moe.active}/{a.moe.experts}" + (f"+{a.moe.shared}" if a.moe.shared else "")
        t.rows.append(
            [
                m.name,
                m.title,
                fmt_count(c.total),
                fmt_count(c.active),
                fmt_count(c.active_excl_embedding),
                fmt_count(pub) if pub else "-",
                str(a.layers) if a else "-",
                str(a.hidden) if a else "-",
                attention,
                mlp,
            ]
        )
        t.data.append(
            {
                "name": m.name,
                "title": m.title,
                "params_total": int(c.total),
                "params_active": int(c.active),
                "params_active_excl_embedding": int(c.active_excl_embedding),
                "published_total": pub,
                "layers": a.layers if a else None,
            }
        )
    return t


def topologies_table(topologies: Sequence[TopologySpec]) -> Table:
    """`dpcost topologies`: each GPU and its tiers in one line."""
    t = Table(
        "Topologies", ["name", "GPU", "HBM", "BF16 dense", "tiers (GPUs per domain: per-GPU bandwidth)"], right={2, 3}
    )
    for topo in topologies:
        tiers = ", ".join(
            f"{x.name} {x.size or 'any'}: {fmt_bandwidth(x.bandwidth)}"
            + (f" 1:{x.oversubscription:g}" if x.oversubscription > 1 else "")
            for x in topo.tiers
        )
        t.rows.append([topo.name, topo.gpu.name, fmt_bytes(topo.gpu.hbm), fmt_flops(topo.gpu.bf16_dense), tiers])
        t.data.append(
            {"name": topo.name, "gpu": topo.gpu.name, "hbm_bytes": topo.gpu.hbm, "tiers": [x.name for x in topo.tiers]}
        )
    return t


def model_tables(m: ModelSpec) -> tuple[list[Table], dict[str, Any]]:
    """`dpcost show model`: the counts against the published ones, and where the parameters are."""
    c = count_params(m)
    t = Table(f"{m.title} ({m.name})", ["", "value"])
    t.rows += [
        ["source", m.source],
        ["total parameters", fmt_count(c.total)],
        ["active per token", f"{fmt_count(c.active)} with the input embedding (Mistral, Qwen, Meta count so)"],
        [
            "active excl. embedding",
            f"{fmt_count(c.active_excl_embedding)} without the input lookup tables (OpenAI, DeepSeek count so)",
        ],
    ]
    if m.published:
        off = c.total / m.published.total - 1
        t.rows.append(
            [
                "published",
                f"{fmt_count(m.published.total)} total"
                + (f", {fmt_count(m.published.active)} active" if m.published.active else "")
                + f" ({m.published.source}); derived is {off:+.2%}",
            ]
        )
        if m.published.note:
            t.rows.append(["note", m.published.note])
    if c.mtp:
        t.rows.append(["MTP module", f"{fmt_count(c.mtp)}, counted apart: not in the total, not trained by dpcost"])
    t.rows.append(["largest block / module", f"{fmt_count(c.largest_block)} / {fmt_count(c.largest_module)}"])
    parts = Table("Where the parameters are", ["component", "parameters", "share"], right={1, 2})
    for label, n in c.components:
        parts.rows.append([label, fmt_count(n), f"{n / c.total:.1%}"])
    doc = {
        "spec": m.model_dump(mode="json", exclude_none=True),
        "params_total": int(c.total),
        "params_active": int(c.active),
        "params_active_excl_embedding": int(c.active_excl_embedding),
        "params_mtp": int(c.mtp),
        "components": {k: int(v) for k, v in c.components},
    }
    return [t, parts], doc


def topology_tables(topo: TopologySpec) -> list[Table]:
    """`dpcost show topology`: the GPU, the sources, and every tier with its effective bandwidth."""
    g = topo.gpu
    t = Table(f"{topo.title} ({topo.name})", ["", "value"])
    t.rows += [
        ["GPU", f"{g.name} ({g.arch})"],
        ["HBM", f"{fmt_bytes(g.hbm)} at {fmt_bandwidth(g.hbm_bandwidth)}"],
        ["dense BF16", fmt_flops(g.bf16_dense)],
        ["call overhead", fmt_seconds(topo.call_overhead)],
        ["hop latencies", f"NCCL {NCCL_VERSION}'s tables x {topo.latency_scale:g}"],
        ["network loss", f"{topo.scaling_loss:.1%} of bandwidth per doubling of nodes beyond two"],
    ]
    t.rows += [["source", s] for s in topo.sources]
    tiers = Table(
        "Tiers (bandwidth per GPU, one direction)",
        [
            "tier",
            "GPUs per domain",
            "bandwidth",
            "efficiency",
            "oversub.",
            "effective",
            "ring step LL/LL128/Simple",
            "in-network reduction",
        ],
        right={1, 2, 3, 4, 5},
    )
    for i, x in enumerate(topo.tiers):
        inr = x.in_network_reduction
        tiers.rows.append(
            [
                x.name,
                str(x.size or "any"),
                fmt_bandwidth(x.bandwidth),
                f"{x.efficiency:.2f}",
                f"1:{x.oversubscription:g}",
                fmt_bandwidth(x.effective_bandwidth),
                " / ".join(fmt_seconds(hop_latency(topo, x, i == 0, "ring", p)) for p in ("ll", "ll128", "simple")),
                f"{inr.kind} (x{inr.efficiency:.2f}, {fmt_seconds(inr.latency)})" if inr else "-",
            ]
        )
    return [t, tiers]


# ------------------------------------------------------------------------------------------------ formats


def to_rich(tables: Iterable[Table]) -> list[RenderableType]:
    """rich Tables (imported here so that json/csv output never loads rich)."""
    from rich import box
    from rich.table import Table as RichTable
    from rich.text import Text

    out: list[RenderableType] = []
    for t in tables:
        # captions wrap to the table's width: give narrow tables with notes room for them
        rt = RichTable(
            title=t.title,
            title_justify="left",
            box=box.SIMPLE_HEAD,
            caption_justify="left",
            min_width=100 if t.notes else None,
        )
        for i, col in enumerate(t.columns):
            prose = i == len(t.columns) - 1 and len(t.columns) <= 3  # key/value tables wrap their last column
            rt.add_column(col, justify="right" if i in t.right else "left", no_wrap=not prose, overflow="fold")
        for row in t.rows:
            styled = [Text(cell, style="bold red") if cell.startswith("NO") else Text(cell) for cell in row]
            rt.add_row(*styled)
        if t.notes:
            rt.caption = "\n".join(t.notes)
        out.append(rt)
    return out


def to_markdown(tables: Iterable[Table]) -> str:
    parts = []
    for t in tables:
        lines = [f"### {t.title}", ""]
        lines.append("| " + " | ".join(c or " " for c in t.columns) + " |")
        lines.append("|" + "|".join("---:" if i in t.right else "---" for i in range(len(t.columns))) + "|")
        for row in t.rows:
            lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
        if t.notes:
            lines.append("")
            lines += [f"{n}  " for n in t.notes]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def to_csv(rows: Sequence[dict[str, Any]]) -> str:
    if not rows:
        return ""
    columns = list(dict.fromkeys(k for r in rows for k in r))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: _csv_value(v) for k, v in r.items()})
    return buf.getvalue()


def _csv_value(v: Any) -> Any:
    if isinstance(v, float):
        return f"{v:.6g}"
    return v


def to_json(doc: Any) -> str:
    """Strict JSON: a NaN or infinity would be a bug upstream, not something to print (allow_nan=False)."""
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"


def to_yaml(doc: Any) -> str:
    import yaml

    return str(yaml.safe_dump(doc, sort_keys=False, width=120))
