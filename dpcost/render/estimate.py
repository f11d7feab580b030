"""`dpcost estimate` as tables: setup, communication per step and per tier, memory by stage, time, serving."""

from __future__ import annotations

import math
from collections.abc import Sequence

from dpcost.engine.advice import CODES
from dpcost.engine.report import (
    GROUPED_KV_NOTE,
    CallsByAlgorithm,
    ComputeBreakdown,
    EstimateReport,
    GroupRow,
    LayoutReport,
    Setup,
    Summary,
    Time,
    WholeMessage,
)
from dpcost.engine.step import BUBBLE, HOST_LISTS, HOST_WAIT, SLOWEST_GPU
from dpcost.render.memory import stage_table
from dpcost.render.table import Table, gb, pct
from dpcost.units import fmt_bandwidth, fmt_bytes, fmt_count, fmt_flops, fmt_seconds

__all__ = [
    "compute_share_chart",
    "compute_table",
    "estimate_tables",
    "tier_table",
    "verdict_head",
    "verdict_rows",
    "verdict_table",
]

Report = EstimateReport


def verdict_table(report: Report, title: str = "Verdict") -> Table:
    """The answer first (report.summary): fits or not and the step that counts, then the plan, memory, speed, what
    binds the step and the warning to read first."""
    v = report.summary
    return Table(f"{title}: {verdict_head(v)}", ["", "value"], verdict_rows(v), verdict=True)


def verdict_head(v: Summary) -> str:
    """Fits or not, and the step that counts (serving: the decode rate)."""
    fit = "fits" if v.fits else "does NOT fit"
    if v.step_seconds is None:
        return f"{fit}, {v.tokens_per_second:,.0f} tokens/s decoding"
    return f"{fit}, {fmt_seconds(v.step_seconds)} per step, {v.bound}-bound"


def verdict_rows(v: Summary) -> list[list[str]]:
    """The verdict's rows, from the summary alone (estimate, each check scenario and sweep's best row)."""
    free = f"{gb(v.headroom_bytes)} free" if v.fits else f"{gb(v.shortfall_bytes)} over"
    if v.step_seconds is not None:
        largest = f"max micro-batch {v.max_micro_batch}" if v.max_micro_batch else "no micro-batch fits"
        memory = f"{gb(v.memory_bytes)} of {gb(v.hbm_bytes)} per GPU, {free}; {largest}"
        speed = (
            f"{v.tokens_per_second:,.0f} tokens/s, MFU {pct(v.mfu or 0.0)}, scaling efficiency "
            f"{pct(v.scaling_efficiency or 0.0)}"
        )
    else:
        memory = f"{gb(v.memory_bytes)} per replica against {gb(v.hbm_bytes)} per GPU, {free}"
        speed = f"{v.tokens_per_second:,.0f} tokens/s decoding, every replica together"
    rows = [["plan", v.plan], ["memory", memory], ["speed", speed], ["bound", f"{v.bound}: {v.bound_reason}"]]
    if (w := v.top_warning) is not None:
        rows.append(["warning", f"{w.code}: {w.action or CODES[w.code]}"])
    return rows


def estimate_tables(report: Report) -> list[Table]:
    s = report.setup
    tables = [verdict_table(report), _setup_table(report)]
    if s.mode == "inference":
        tables.append(_inference_table(report))
    else:
        if report.layout is not None:
            tables.extend(layout_tables(report.layout))
        if report.communication.groups is not None:
            tables.append(_sharding_groups_table(report))
        tables.append(_communication_table(report))
        tables.extend(_tier_tables(report))
        memory = stage_table(report.memory, s.zero_stage, report.variants or ())
        if report.layout is not None:  # which stage the rows are, and Megatron's own figure for the layout
            memory.notes.append(report.memory.note)
        tables.append(memory)
        tables.append(_time_table(report))
        tables.append(_breakdown_table(report))
        if report.compute is not None:
            tables.append(compute_table(report.compute, s.accumulation, report.time))
    if report.warnings:
        rows = [[str(i), w.code, w.message] for i, w in enumerate(report.warnings, 1)]
        tables.append(Table("Warnings", ["#", "code", "warning"], rows))
    return tables


def _recompute(s: Setup, chosen: str, note: str) -> str:
    """The checkpointing policy and what the activations' count rests on: attention kernel, K and V grouped,
    compile, loss path."""
    every = f" on 1 block in {s.recompute_layers}" if s.recompute_layers > 1 else ""
    if s.recompute_block is not None:
        every = f" of the first {s.recompute_block} layers of each pipeline chunk"
    parts = [f"{s.recompute}{every}{chosen}"]
    parts += ["flash attention"] if s.flash_attention else []
    parts += ["K and V read grouped"] if GROUPED_KV_NOTE in note else []
    parts += ["torch.compile"] if s.compile else []
    return ", ".join([*parts, f"{s.loss_impl} loss"])


def _setup_table(r: Report) -> Table:
    s, m = r.setup, r.model
    fits = bool(r.memory.stages) and r.memory.stages[s.zero_stage].fits
    chosen = rc = ""
    if s.zero_stage_chosen:
        chosen = " (chosen: the fastest plan that fits)" if fits else " (chosen: no stage fits, the most sharded shown)"
    if s.recompute_chosen:
        rc = " (chosen: the fastest plan that fits)" if fits else " (chosen: nothing fits, the most saving shown)"
    params = (
        f"{fmt_count(m.params_total)} total, {fmt_count(m.params_active)} active per token "
        f"({fmt_count(m.params_active_excl_embedding)} without the input embedding)"
    )
    trained = r.layout.mtp_layers if r.layout is not None else None
    if trained:
        modules = "module" if trained == 1 else f"{trained} modules"
        params += f" (+{fmt_count(m.params_mtp)} MTP {modules}, trained on the last pipeline stage)"
    elif m.params_mtp:
        params += f" (+{fmt_count(m.params_mtp)} MTP module, not trained here)"
    rows = [
        ["model", f"{m.title} ({m.name})"],
        ["parameters", params],
        ["topology", f"{r.topology.name}: {r.topology.gpu}"],
        ["data parallel", _data_parallel(r)],
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
            ["activation recompute", _recompute(s, rc, r.memory.note)],
            [
                "global batch B = b x a x D",
                f"{s.micro_batch} x {s.accumulation} x {s.dp} = {s.global_batch:,} sequence"
                + ("" if s.global_batch == 1 else "s"),
            ],
            ["tokens per step", f"{s.tokens_per_step:,} ({s.seq_len} per sequence)"],
            ["MFU input", f"{s.mfu:.0%} of dense BF16 peak on every FLOP executed (recomputation included)"]
            if s.compute_model == "flops"
            else ["matmul efficiency", f"{s.mfu:.0%} of the dense peak on every matmul (--mfu, else the GPU's own)"],
        ]
    else:
        rows += [
            [
                "batch per replica",
                f"{s.micro_batch} sequence{'' if s.micro_batch == 1 else 's'} of {s.seq_len} tokens",
            ]
        ]
    return Table("Setup", ["", "value"], rows)


def _data_parallel(r: Report) -> str:
    """The DP group's GPUs and nodes; under a layout, the replicas, what each is, and where one DP group sits."""
    s, lay = r.setup, r.layout
    if lay is None:
        return gpus_on_nodes(s.dp, s.nodes, s.gpus_per_node)
    return (
        f"{s.dp} replicas of {lay.gpus // s.dp} GPUs (TP x CP x PP) = {lay.gpus:,} GPUs on {lay.nodes:,} nodes; "
        f"a DP group spans {s.nodes} node{'s' if s.nodes > 1 else ''} x {s.gpus_per_node}"
    )


def gpus_on_nodes(dp: int, nodes: int, per_node: int) -> str:
    """'512 GPUs = 64 nodes x 8', or where the last node is not full, how the GPUs are spread and costed."""
    if dp == nodes * per_node:
        return f"{dp} GPUs = {nodes} node{'s' if nodes > 1 else ''} x {per_node}"
    return (
        f"{dp} GPUs on {nodes} nodes of {per_node}, part-filled: costed as {dp / nodes:.3g} per node, spread "
        f"evenly ({nodes * per_node} would fill them)"
    )


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
        drop=["whole message", "sent per rank", "calls/step", "algorithm (its calls)", "message", "carries"],
    )
    for row in c.collectives:
        t.rows.append(
            [
                row.op,
                row.purpose + (f" x{row.occurrences}" if row.occurrences > 1 else ""),
                gb(row.bytes),
                gb(row.bytes_sent_per_rank),
                _algorithms(row.calls_by_algorithm),
                fmt_seconds(row.whole_message.seconds),
                str(row.calls),
                fmt_seconds(row.seconds),
            ]
        )
    if r.layout is not None:
        stage = max(r.layout.stages, key=lambda st: st.params)
        volume = (
            f"gradient volume, the most loaded stage's shard x {r.setup.grad_dtype} = {gb(c.gradient_bytes)} "
            f"(stage {stage.stage}: {fmt_count(stage.params)} parameters per GPU)"
        )
    else:
        volume = (
            f"gradient volume |theta| x {r.setup.grad_dtype} = {fmt_count(r.model.params_total)} x "
            f"{c.gradient_bytes / r.model.params_total:g} B = {gb(c.gradient_bytes)}"
        )
    t.notes.append(
        f"{volume}; each rank sends {gb(c.bytes_sent_per_rank)} per step; "
        f"{fmt_seconds(c.seconds_per_step)} of collectives per step"
    )
    if c.shard_group is not None and c.bytes_per_tier is not None:
        tiers = ", ".join(f"{b.tier} {gb(b.bytes_per_gpu)}" for b in c.bytes_per_tier)
        t.notes.append(
            f"hybrid sharding: states sharded within groups of {c.shard_group} GPUs, replicated across "
            f"{r.setup.dp // c.shard_group}; each reduced shard is all-reduced across the replicas; per GPU per step: "
            f"{tiers}"
        )
    t.notes.append(
        "whole message: the time of one call carrying all of it, for scale; the step issues the calls counted"
    )
    if c.collectives:
        first = c.collectives[0].whole_message
        others = ", ".join(
            f"{x.algorithm}{' (what-if)' if x.what_if else ''} {fmt_seconds(x.seconds)}"
            for x in first.alternatives
            if (x.algorithm, x.protocol) != (first.algorithm, first.protocol)
        )
        if others:
            t.notes.append(f"{c.collectives[0].op} of the whole message, other algorithms: {others}")
        if first.note:
            t.notes.append(first.note)
    return t


def _groups_table(title: str, groups: list[GroupRow]) -> Table:
    """Process groups as NCCL sees them: ranks, ranks per NVLink domain, domains, the tiers crossed."""
    t = Table(title, ["group", "ranks", "per NVLink domain", "domains", "crosses"], right={1, 2, 3})
    for g in groups:
        t.rows.append([g.group, str(g.ranks), f"{g.ranks_per_domain:g}", str(g.domains), ", ".join(g.tiers) or "-"])
    return t


def _sharding_groups_table(r: Report) -> Table:
    """Hybrid sharding's two groups (plan.sharding_groups): N consecutive ranks shard, every N-th rank replicates."""
    c = r.communication
    assert c.groups is not None and c.shard_group is not None
    t = _groups_table(
        f"Hybrid sharding: {r.setup.dp} GPUs = {r.setup.dp // c.shard_group} replicas x shard groups of "
        f"{c.shard_group}",
        c.groups,
    )
    t.notes.append(
        "shard: consecutive ranks that split the states, gather the parameters and reduce-scatter the gradients; "
        "replica: one rank of each shard group, which all-reduces its gradient shard"
    )
    return t


def _order_source(order: str) -> str:
    from dpcost.engine.layout import DEFAULT_ORDER

    return "Megatron-Core's default" if order == DEFAULT_ORDER else "as --order gives it"


def layout_tables(lay: LayoutReport) -> list[Table]:
    """The layout: GPUs = TP x CP x PP x DP, each group as placed, the model-parallel calls, the stages."""
    head = f"Layout: {lay.gpus:,} GPUs = TP {lay.tp} x CP {lay.cp} x PP {lay.pp} x DP {lay.dp}" + (
        f"; experts ETP {lay.expert_tp} x EP {lay.ep} x expert-DP {lay.expert_dp} x PP {lay.pp}" if lay.ep > 1 else ""
    )
    groups = _groups_table(head, lay.groups)
    groups.notes.append(
        f"rank order {lay.order} (fastest first, {_order_source(lay.order)}); pp: two neighbouring stages; dp-cp: "
        "the dense gradients' group"
        + ("; ep, etp, edp: the experts' groups" if any(g.group in ("ep", "etp", "edp") for g in lay.groups) else "")
    )
    calls = Table(
        f"Model-parallel calls per micro-batch ({lay.micro_batches} micro-batch{'' if lay.micro_batches == 1 else 'es'}"
        " per step)",
        ["dim", "carries", "op", "message", "calls", "each", "overlapped"],
        right={3, 4, 5},
    )
    for c in lay.calls:
        calls.rows.append(
            [
                c.dimension.upper(),
                c.purpose,
                c.op,
                gb(c.message_bytes),
                str(c.calls_per_micro_batch),
                fmt_seconds(c.seconds_per_call),
                "yes" if c.overlapped else "no",
            ]
        )
    exposed = ", ".join(f"{e.term.upper()} {fmt_seconds(e.seconds)}" for e in lay.exposed) or "none"
    calls.notes.append(
        f"exposed per step: {exposed}; pipeline bubble {fmt_seconds(lay.bubble_seconds)} "
        f"((PP - 1) / V = {(lay.pp - 1) / lay.virtual_stages:g} micro-batch slots)"
        + ("; sequence parallel" if lay.sequence_parallel else "")
        + ("; TP overlapped with the matmuls" if lay.tp_comm_overlap else "")
        + ("; PP's send/recv overlapped with the next chunk" if lay.pp > 1 and lay.pp_comm_overlap else "")
        + ("; PP's send/recv on the PP group's communicator" if lay.pp > 1 and lay.pp_send_comm == "group" else "")
    )
    if lay.moe_host_seconds is not None:
        calls.notes.append(
            f"each MoE layer takes at least {fmt_seconds(lay.moe_host_seconds)} a micro-batch, forward and backward: "
            "the host's time to launch it, as its dispatcher syncs host and device (--moe-host-time)"
        )
    tables = [groups, calls]
    if lay.pp > 1:
        stages = Table(
            "Pipeline stages, per GPU",
            ["stage", "layers", "parameters", "forward GFLOP per token", "memory"],
            right={1, 2, 3, 4},
        )
        for st in lay.stages:
            marks = [
                m
                for m, on in (("paces", st.stage == lay.paced_stage), ("most memory", st.stage == lay.memory_stage))
                if on
            ]
            stages.rows.append(
                [
                    f"{st.stage} ({', '.join(marks)})" if marks else str(st.stage),
                    str(st.layers),
                    fmt_count(st.params),
                    f"{st.forward_flops_per_token / 1e9:.2f}",
                    gb(st.memory_bytes),
                ]
            )
        tables.append(stages)
    return tables


def _algorithms(used: Sequence[CallsByAlgorithm]) -> str:
    """The algorithm/protocol a row's calls ran with: one name, or each with its number of calls."""
    if len(used) == 1:
        return used[0].algorithm
    return ", ".join(f"{u.algorithm} x{u.calls}" for u in used)


def _tier_tables(r: Report) -> list[Table]:
    """Where each distinct collective spends its time; ops with the same traffic share one table."""
    groups: dict[tuple[object, ...], list[str]] = {}
    calls: dict[tuple[object, ...], tuple[WholeMessage, float]] = {}
    for row in r.communication.collectives:
        best = row.whole_message
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
        calls[key] = (best, row.bytes)
    return [
        tier_table(best, f"{' / '.join(groups[key])} of {gb(size)} as one call on {r.topology.name}, per tier")
        for key, (best, size) in calls.items()
    ]


def tier_table(best: WholeMessage, title: str) -> Table:
    t = Table(title, ["tier", "bytes per GPU", "time", ""], right={1, 2})
    slowest = max(best.tiers, key=lambda x: x.seconds)
    for tier in best.tiers:
        t.rows.append(
            [
                tier.tier,
                gb(tier.bytes_per_gpu),
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


def _time_table(r: Report) -> Table:
    t = r.time
    assert t is not None
    a = r.setup.accumulation
    bound = f"{r.summary.bound}: {r.summary.bound_reason}"
    bubble = " + bubble" if any(term.term == BUBBLE for term in t.breakdown) else ""
    host = " + host wait" if any(term.term == HOST_WAIT for term in t.breakdown) else ""
    lists = " + host lists" if any(term.term == HOST_LISTS for term in t.breakdown) else ""
    rows = [
        ["forward (one micro-batch)", fmt_seconds(t.forward_seconds)],
        [
            "backward (one micro-batch)",
            fmt_seconds(t.backward_seconds) + (" incl. recompute" if r.setup.recompute != "none" else ""),
        ],
        [f"compute per step ({a} micro-batch{'es' if a > 1 else ''})", fmt_seconds(t.compute_seconds)],
        ["communication per step (serial sum)", fmt_seconds(t.comm_seconds)],
        [f"step, ideal overlap: max(T_compute{lists}, T_comm){bubble}", fmt_seconds(t.ideal_seconds)],
        ["step, as scheduled, with losses at scale", fmt_seconds(t.step_seconds)],
        [f"step, serial: T_compute + T_comm{bubble}{host}{lists}", fmt_seconds(t.serial_seconds)],
        ["exposed communication", fmt_seconds(t.exposed_comm_seconds)],
        ["lost at scale (overlap slowdown, jitter, slowest GPU)", fmt_seconds(t.losses_seconds)],
        ["bound by", bound],
        ["throughput", f"{t.tokens_per_second:,.0f} tokens/s"],
        ["MFU", pct(t.mfu)],
        ["scaling efficiency vs. 1 GPU", pct(t.scaling_efficiency)],
    ]
    if r.setup.skew:
        rows.append(["straggler delay per step", fmt_seconds(t.straggler_seconds)])
    return Table("Time per step", ["", "value"], rows)


def _framework(r: Report) -> str:
    s = r.setup
    if s.framework == "none":
        return f"the generic plan ({fmt_bytes(s.bucket_bytes, binary=True)} buckets, per-block gathers)"
    if s.framework in ("fsdp", "megatron-fsdp"):
        return f"{s.framework} (per-unit gathers and reduce-scatters)"
    return f"{s.framework} ({fmt_bytes(s.bucket_bytes, binary=True)} buckets)"


def _breakdown_table(r: Report) -> Table:
    """The step as a sum: why a plan loses against its compute."""
    t = r.time
    assert t is not None
    table = Table("Where the step goes", ["", "per step", "share"], right={1, 2})
    for term in t.breakdown:
        table.rows.append([term.term, fmt_seconds(term.seconds), pct(term.seconds / t.step_seconds)])
    table.rows.append(["step", fmt_seconds(t.step_seconds), pct(1.0)])
    s = r.setup
    waits = (
        f"the pipeline's flush waits once per step for the slowest of all {r.layout.gpus:,} GPUs"
        if r.layout is not None
        else f"a wait on a collective costs the slowest of {s.dp} ranks' lateness beyond its prefetch slack"
    )
    slowest = any(b.term == SLOWEST_GPU and b.seconds > 0 for b in t.breakdown)
    rates = "busy GPUs do not sustain one rate, and every one waits for the slowest (engine/rates.py); "
    table.notes.append(
        f"scheduled as {_framework(r)} runs it; losses at scale: compute slowed {s.overlap_slowdown:.0%} while "
        f"collectives overlap it (the SMs their kernels hold); each rank drifts {fmt_seconds(s.sync_jitter)} per "
        f"sqrt(s) of compute, and {waits}; {rates if slowest else ''}docs/frameworks.md"
    )
    return table


def _figure(x: float) -> str:
    """Three significant figures, trailing zeros kept and no exponent: 2.25, 4.50, 0.455, 232, 1,234."""
    if x == 0:
        return "0"
    return f"{x:,.{max(0, 2 - math.floor(math.log10(abs(x))))}f}"


def compute_table(c: ComputeBreakdown, accumulation: int, time: Time | None) -> Table:
    """--compute-model ops: where one GPU's compute goes by part, per layer and per step, with MFU and HFU; the
    markdown report draws the shares under it (compute_share_chart), the html report as SVG (charts.py)."""
    columns = [
        "part",
        "forward ms/layer",
        "backward ms/layer",
        "recompute ms/layer",
        "s per step",
        "share",
        "TFLOP executed",
    ]
    t = Table("Compute, op by op", columns, right=set(range(1, 7)), drop=columns[:0:-1])
    total = [0.0, 0.0, 0.0]
    for part in c.parts:
        per_layer = (part.layer_forward_seconds, part.layer_backward_seconds, part.layer_recompute_seconds)
        total = [a + b for a, b in zip(total, per_layer, strict=True)]
        layer_cells = ["-"] * 3 if part.part == "optimizer" else [_figure(1e3 * v) for v in per_layer]
        t.rows.append(
            [part.part, *layer_cells, _figure(part.seconds_per_step), pct(part.share), _tflop(part.flops_per_step)]
        )
    t.rows.append(
        [
            "total",
            *(_figure(1e3 * v) for v in total),
            _figure(c.single_gpu_step_seconds),
            pct(1.0),
            _tflop(sum(part.flops_per_step for part in c.parts)),
        ]
    )
    step = f" ({fmt_seconds(time.step_seconds)})" if time is not None else ""
    t.notes += [
        f"MFU {pct(c.mfu)}, HFU {pct(c.hfu)}: model FLOPs (PaLM's 6N + 12LHQT, {_tflop(c.model_flops_per_step)} "
        f"TFLOP per GPU per step) and hardware FLOPs (with the recomputation's, {_tflop(c.hardware_flops_per_step)} "
        f"TFLOP) over the step as scheduled{step} x the {fmt_flops(c.peak_flops)} dense peak (Korthikanti et al. "
        "2022, section 6)",
        f"single-GPU step: {fmt_seconds(c.single_gpu_step_seconds)} of compute with no communication, MFU "
        f"{pct(c.single_gpu_mfu)}, HFU {pct(c.single_gpu_hfu)}",
        f"per layer: one micro-batch through the mean of the model's layers; per step: "
        f"{accumulation} micro-batch{'es' if accumulation > 1 else ''}, the embedding, the head and the loss "
        "included, and the optimizer step once; TFLOP executed as the kernels count them (flash attention's causal "
        "half, its backward's recomputed scores), recomputation included; memory-bound ops and the optimizer are "
        "priced by the bytes they move"
        + (", and Muon's Newton-Schulz matmuls at the step by their FLOPs" if optimizer_flops(c) else ""),
    ]
    t.figure = compute_share_chart(c)
    return t


def optimizer_flops(c: ComputeBreakdown) -> float:
    """The optimizer's FLOPs in the compute table: Muon's Newton-Schulz matmuls, else none."""
    return sum(part.flops_per_step for part in c.parts if part.part == "optimizer")


def _tflop(flops: float) -> str:
    """TFLOP to one decimal; '-' for a part priced by its bytes alone."""
    return f"{flops / 1e12:,.1f}" if flops else "-"


def compute_share_chart(c: ComputeBreakdown, width: int = 40) -> str:
    """Each part's share of one GPU's compute per step as a text bar chart, on a scale from 0 to 100%."""
    label = max(len(part.part) for part in c.parts)
    lines = [f"share of one GPU's compute per step ({fmt_seconds(c.single_gpu_step_seconds)}), bars from 0 to 100%"]
    for part in c.parts:
        bar = "#" * (max(1, round(part.share * width)) if part.share > 0 else 0)
        lines.append(
            f"  {part.part:<{label}} |{bar:<{width}}| {pct(part.share):>6} {fmt_seconds(part.seconds_per_step)}"
        )
    return "\n".join(lines) + "\n"


def _inference_table(r: Report) -> Table:
    i = r.inference
    assert i is not None
    rows = [
        ["gradient collectives", "none: replicas exchange no gradients (0 bytes per step)"],
        ["weights (bf16)", gb(i.weights_bytes)],
        [f"KV cache ({r.setup.micro_batch} x {r.setup.seq_len} tokens)", gb(i.kv_cache_bytes)],
        ["overhead", gb(i.overhead_bytes)],
        [
            "memory per replica",
            gb(i.total_bytes) + (f" ({gb(i.per_gpu_bytes)} per GPU)" if i.gpus_per_replica > 1 else ""),
        ],
        ["fits on one GPU", "yes" if i.fits else f"NO: {i.gpus_per_replica} GPUs per replica"],
        ["replicas", f"{i.replicas} on {r.setup.dp} GPUs"],
        ["decode throughput per replica", f"{i.tokens_per_second_per_replica:,.0f} tokens/s ({i.bound}-bound)"],
        ["aggregate throughput", f"{i.tokens_per_second:,.0f} tokens/s ({i.replicas} x per replica)"],
    ]
    return Table("Inference", ["", "value"], rows)
