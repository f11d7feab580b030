"""`estimate`: one data-parallel plan, costed end to end into an EstimateReport (report.py, the JSON contract).

This module only combines: the resolved inputs (prepare.py), the choice of stage and recomputation (plan.py),
collectives (collectives.py), serving (serving.py) and advice (advice.py); a plan with TP, CP, PP or EP goes to
layout_report.py. Each number's formula lives there. The cost core (cost.py) costs a plan to its parts once:
`plan_cost` reads its plain numbers from them, and `estimate` builds the report from them here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, cast

from dpcost.engine import advice, variants
from dpcost.engine.availability import environment
from dpcost.engine.collectives import CollectiveChoice, bus_factor, collective
from dpcost.engine.cost import TrainingParts, costed
from dpcost.engine.dp_schedule import frequency, primitives
from dpcost.engine.memory import StageMemory
from dpcost.engine.params import ParamCount, count_params
from dpcost.engine.placement import Placement, place
from dpcost.engine.plan import (
    Timed,
    dp_group_for,
    orthogonalized_flops,
    recompute_policies,
    sharding_groups,
)
from dpcost.engine.prepare import Prepared, StageMemories, check_dp, matmul_share, prepare, stage_table
from dpcost.engine.report import (
    GROUPED_KV_NOTE,
    AlgorithmTime,
    BreakdownTerm,
    CallsByAlgorithm,
    CollectiveUse,
    Communication,
    ComputeBreakdown,
    ComputePart,
    ComputePartName,
    EstimateReport,
    GroupRow,
    Memory,
    ModelInfo,
    Serving,
    Setup,
    StageRow,
    TierBytes,
    TierUse,
    Time,
    TopologyInfo,
    VariantRow,
    WholeMessage,
)
from dpcost.engine.serving import replica
from dpcost.engine.step import Traffic
from dpcost.engine.utilization import (
    hardware_flops_per_step,
    hardware_flops_utilization,
    mean_layer_seconds,
    model_flops_per_step,
    model_flops_utilization,
    single_gpu_step_seconds,
    step_flops_by_part,
    step_seconds_by_part,
)
from dpcost.engine.verdict import bound, serving_summary, training_summary
from dpcost.errors import InputError
from dpcost.options import DEFAULT_MFU, Options
from dpcost.specs import ModelSpec, TopologySpec

__all__ = [
    "EstimateReport",
    "Options",
    "check_dp",
    "collective_use",
    "compare_variants",
    "estimate",
    "estimate_many",
    "group_row",
    "inference_report",
    "memory_by_stage",
    "model_info",
    "model_info_of",
    "setup_info",
    "topology_info",
    "training_report",
    "whole_message_of",
    "with_variants",
]


def estimate(model: ModelSpec, topology: TopologySpec, options: Options) -> EstimateReport:
    """Cost one plan: `options.dp` replicas of `model` on `topology`, as the run's NCCL environment leaves it. With a
    variant asked for (--zeropp, --compression, --sync-every), the plain plan with its `variants` beside it."""
    return costed(model, topology, options)[1]()


def with_variants(plain: EstimateReport, rows: list[variants.VariantCost]) -> EstimateReport:
    """The plain plan's report with each variant's row beside it."""
    return plain.model_copy(update={"variants": [variant_row(r) for r in rows]})


def variant_row(v: variants.VariantCost) -> VariantRow:
    """engine/variants.py's cost as the report's row."""
    return VariantRow(
        name=v.name,
        flags=v.flags,
        top_tier=v.top_tier,
        top_tier_bytes=int(v.top_tier_bytes),
        comm_seconds=v.comm_seconds,
        exposed_comm_seconds=v.exposed_seconds,
        step_seconds=v.step_seconds,
        memory_bytes=int(v.memory_bytes),
        added_memory_bytes=int(v.added_memory_bytes),
        added_memory_for=v.memory_for,
        memory=stage_row(v.held, v.held.micro_batch) if v.held is not None else None,
        recompute=v.recompute if v.held is not None else None,
        added_compute_seconds=v.added_compute_seconds,
        scaling_efficiency=v.efficiency,
        note=v.note,
    )


def compare_variants(model: ModelSpec, topology: TopologySpec, options: Options) -> EstimateReport:
    """The plain plan with every variant's row (engine/variants.py compare)."""
    base = variants.plain(options)
    report = estimate(model, topology, base)
    if not base.parallel.trivial or base.plan.mode != "train":
        raise InputError("compare_variants", "variants of data parallelism are compared for pure-DP training plans")
    return with_variants(report, variants.compare(model, environment(topology, None, None), options))


def estimate_many(model: ModelSpec, topology: TopologySpec, plans: Iterable[Options]) -> list[EstimateReport]:
    """Cost many plans of one model on one topology: each as `estimate` does, sharing what a spec's frozen inputs
    give once (collective prices, parameter counts, placements: engine/memo.py) across them."""
    return [estimate(model, topology, options) for options in plans]


def memory_by_stage(model: ModelSpec, topology: TopologySpec, options: Options) -> Memory:
    """The stage table alone (`dpcost memory`): no step is timed. Recomputation is the option's, or (auto, as
    `estimate` defaults) the least that lets some stage fit, full recomputation if none does."""
    p = prepare(model, topology, options)
    if p.o.megatron_layout:
        from dpcost.engine.layout_report import layout_memory_table

        return layout_memory_table(model, topology, p)
    fixed: str | None = p.o.plan.recompute
    if fixed is not None or model.architecture is None:
        recompute = fixed or "none"
        return _memory(model, topology, p, stage_table(model, topology, p, recompute), recompute)
    memories = StageMemories(model, topology, p)
    for recompute in recompute_policies(p):
        rows = memories.table(recompute)
        if any(r.fits for r in rows):
            break
    note = f"recompute={recompute} chosen (auto): the least recomputation with which a stage fits, as estimate chooses"
    return _memory(model, topology, p, rows, recompute, note)


# ------------------------------------------------------------------------------------------------ the parts


def topology_info(topology: TopologySpec) -> TopologyInfo:
    """The topology as a report names it."""
    return TopologyInfo(name=topology.name, gpu=topology.gpu.name, hbm_bytes=int(topology.gpu.hbm))


def model_info(model: ModelSpec) -> ModelInfo:
    """The model as a report names it, with its derived counts."""
    return model_info_of(model, count_params(model))


def model_info_of(model: ModelSpec, counts: ParamCount) -> ModelInfo:
    return ModelInfo(
        name=model.name,
        title=model.title,
        params_total=int(counts.total),
        params_active=int(counts.active),
        params_active_excl_embedding=int(counts.active_excl_embedding),
        params_mtp=int(counts.mtp),
    )


def stage_row(m: StageMemory, micro_batch: int) -> StageRow:
    """One row of the stage table: the stage's memory at its peak phase, and the largest micro-batch that fits."""
    return StageRow(
        stage=m.stage,
        params_bytes=int(m.params),
        grads_bytes=int(m.grads),
        optimizer_bytes=int(m.optimizer),
        activations_bytes=int(m.activations),
        transient_bytes=int(m.transient),
        buffers_bytes=int(m.buffers),
        allocated_bytes=int(m.allocated),
        fragmentation_bytes=int(m.fragmentation),
        reserved_bytes=int(m.reserved),
        context_bytes=int(m.context),
        overhead_bytes=int(m.overhead),
        total_bytes=int(m.total),
        peak_phase=m.peak.phase,
        cpu_bytes=int(m.cpu),
        fits=m.fits,
        max_micro_batch=m.largest_micro_batch(micro_batch),
    )


def _memory(
    model: ModelSpec, topology: TopologySpec, p: Prepared, rows: tuple[StageMemory, ...], rc: str, note: str = ""
) -> Memory:
    if not note and model.architecture is None:
        note = "no architecture given: activations not counted"
    grouped = not p.o.compute.repeat_kv and p.o.compute.flash_attention  # without flash, eager attention copies
    if model.architecture is not None and p.kernels == "eager" and grouped:
        note = f"{note}; {GROUPED_KV_NOTE}" if note else GROUPED_KV_NOTE
    return Memory(
        hbm_bytes=int(topology.gpu.hbm),
        recipe=p.recipe.title,
        recompute=rc,
        note=note,
        stages=[stage_row(m, p.micro_batch) for m in rows],
    )


def whole_message_of(c: CollectiveChoice) -> WholeMessage:
    b = c.best
    return WholeMessage(
        algorithm=b.algorithm,
        protocol=b.protocol,
        seconds=b.seconds,
        latency_seconds=b.latency_seconds,
        bandwidth_seconds=b.bandwidth_seconds,
        algbw=b.algbw,
        busbw=b.busbw,
        tiers=[
            TierUse(tier=t.tier, bytes_per_gpu=int(t.bytes_per_gpu), seconds=t.seconds, nested=t.nested)
            for t in b.tiers
        ],
        alternatives=[
            AlgorithmTime(algorithm=x.algorithm, protocol=x.protocol, seconds=x.seconds, what_if=x.what_if)
            for x in c.candidates
        ],
        note=c.note,
    )


def collective_use(
    op: str,
    purpose: str,
    ranks: int,
    message: float,
    t: Traffic,
    seconds: float,
    algorithms: tuple[tuple[str, int], ...],
    whole: WholeMessage,
) -> CollectiveUse:
    """One kind of collective's row: `t`'s calls of `message` bytes over `ranks` ranks, the `seconds` they took
    and the algorithms they ran (most calls first), with the whole message priced on the group (`whole`)."""
    return CollectiveUse(
        op=op,
        purpose=purpose,
        bytes=int(message),
        bytes_sent_per_rank=int(bus_factor(op, ranks) * message),
        occurrences=t.occurrences,
        calls=t.calls,
        algorithm=algorithms[0][0].split("/")[0] if algorithms else "none",
        calls_by_algorithm=[CallsByAlgorithm(algorithm=name, calls=n) for name, n in algorithms],
        seconds=seconds,
        whole_message=whole,
    )


def _communication(topology: TopologySpec, p: Prepared, chosen: Timed) -> Communication:
    """The step's collectives, each with its whole message priced on its group (plan.sharding_groups: under hybrid
    sharding the gathers and reduce-scatters stay in the shard group, and each reduced shard is all-reduced across
    the replicas, a row of its own); with hybrid sharding also the bytes each GPU sends per step over each tier."""
    o = p.o
    shard, replicas = sharding_groups(topology, o)
    everyone = place(topology, o.dp)
    rows: list[CollectiveUse] = []
    per_tier: dict[str, float] = {}
    # by op, group (alive through the call: its id) and bytes; ZeRO-3's two gathers priced once
    priced: dict[tuple[str, int, float], tuple[CollectiveChoice, WholeMessage]] = {}

    def row(op: str, purpose: str, group: Placement, message: float, t: Traffic, seconds: float,
            algorithms: tuple[tuple[str, int], ...]) -> None:  # fmt: skip
        key = (op, id(group), message)
        if key not in priced:
            choice = collective(topology, op, group, message, o.communication.algorithm)
            priced[key] = choice, whole_message_of(choice)
        choice, whole = priced[key]
        for tier in choice.best.tiers:
            if not tier.nested:
                per_tier[tier.tier] = per_tier.get(tier.tier, 0.0) + tier.bytes_per_gpu * t.occurrences
        rows.append(collective_use(op, purpose, group.ranks, message, t, seconds, algorithms, whole))

    for t in chosen.steps.traffic:
        group = dp_group_for(t.op, everyone, shard)
        if replicas is not None and t.op == "reduce_scatter":  # its calls are each a reduce-scatter, then an all-reduce
            row(t.op, t.purpose, group, t.message_bytes, t, *t.part(0))
            row("all_reduce", f"{t.purpose}, shards across replicas", replicas, t.message_bytes / shard.ranks, t,
                *t.part(1))  # fmt: skip
        else:
            row(t.op, t.purpose, group, t.message_bytes, t, t.seconds, t.algorithms)
    return Communication(
        primitives=primitives(chosen.steps.schedule),
        frequency=frequency(chosen.steps.schedule, p.accumulation),
        gradient_bytes=int(p.counts.total * p.grad_bytes),
        bytes_sent_per_rank=sum(r.bytes_sent_per_rank * r.occurrences for r in rows),
        seconds_per_step=chosen.steps.comm,
        collectives=rows,
        bytes_per_tier=[TierBytes(tier=k, bytes_per_gpu=int(v)) for k, v in per_tier.items()] if replicas else None,
        shard_group=shard.ranks if replicas is not None else None,
        groups=None if replicas is None else [group_row("shard", shard), group_row("replica", replicas)],
    )


def group_row(kind: str, group: Placement) -> GroupRow:
    """A process group as the report's group tables show it (NCCL's view: ranks, ranks per node, nodes, tiers)."""
    return GroupRow(
        group=kind, ranks=group.ranks, ranks_per_domain=group.ppn, domains=group.nodes, tiers=group.tiers_crossed
    )


def _time(p: Prepared, chosen: Timed, tokens: int, mfu: float) -> Time:
    steps = chosen.steps
    compute_alone = p.accumulation * (chosen.forward + chosen.backward) + chosen.optimizer
    return Time(
        forward_seconds=chosen.forward,
        backward_seconds=chosen.backward,
        compute_seconds=steps.compute,
        comm_seconds=steps.comm,
        ideal_seconds=steps.ideal,
        step_seconds=steps.step,
        serial_seconds=steps.serial,
        exposed_comm_seconds=steps.exposed,
        losses_seconds=steps.losses,
        bound=bound(steps.compute, steps.exposed, host=steps.host),
        tokens_per_second=tokens / steps.step,
        mfu=mfu,
        scaling_efficiency=compute_alone / steps.step,
        straggler_seconds=steps.compute - compute_alone,
        breakdown=[BreakdownTerm(term=t.term, seconds=t.seconds) for t in steps.breakdown],
    )


def _compute(model: ModelSpec, topology: TopologySpec, p: Prepared, chosen: Timed) -> ComputeBreakdown | None:
    """--compute-model ops: the per-op model's micro-batch regrouped by part, and MFU and HFU (utilization.py)."""
    c, a = chosen.compute, model.architecture
    if c is None or a is None:
        return None
    accumulation, opt = p.accumulation, chosen.optimizer
    seconds = step_seconds_by_part(c, accumulation, opt)
    flops = step_flops_by_part(c, accumulation, orthogonalized_flops(model, p, chosen.stage))
    layer = mean_layer_seconds(c, a.layers)
    alone = single_gpu_step_seconds(c, accumulation, opt)
    model_flops = model_flops_per_step(chosen.flops, p.micro_batch, p.seq_len, accumulation)
    hardware = hardware_flops_per_step(chosen.flops, p.micro_batch, p.seq_len, accumulation)
    peak = topology.gpu.peak(p.o.compute.compute_dtype)
    step = chosen.steps.step
    return ComputeBreakdown(
        parts=[
            ComputePart(
                part=cast(ComputePartName, part),  # utilization.py's keys are ops.PARTS, ComputePartName's words
                layer_forward_seconds=layer.forward.get(part, 0.0),
                layer_backward_seconds=layer.backward.get(part, 0.0),
                layer_recompute_seconds=layer.recompute.get(part, 0.0),
                seconds_per_step=seconds[part],
                share=seconds[part] / alone,
                flops_per_step=flops[part],
            )
            for part in seconds
        ],
        single_gpu_step_seconds=alone,
        model_flops_per_step=model_flops,
        hardware_flops_per_step=hardware,
        peak_flops=peak,
        mfu=model_flops_utilization(model_flops, step, peak),
        hfu=hardware_flops_utilization(hardware, step, peak),
        single_gpu_mfu=model_flops_utilization(model_flops, alone, peak),
        single_gpu_hfu=hardware_flops_utilization(hardware, alone, peak),
    )


def setup_info(topology: TopologySpec, p: Prepared, **plan: Any) -> Setup:
    """The fields every report shares; `plan` carries the mode's own."""
    o = p.o
    fields: dict[str, Any] = {
        "dp": o.dp,
        "nodes": math.ceil(o.dp / topology.domain_size),
        "gpus_per_node": min(o.dp, topology.domain_size),
        "seq_len": p.seq_len,
        "flash_attention": o.compute.flash_attention,
        "mfu": matmul_share(topology.gpu, o.compute, o.compute.chosen_model),
        "compute_model": o.compute.chosen_model,
        "compute_dtype": o.compute.compute_dtype,
        "overlap_slowdown": o.compute.overlap_slowdown or 0.0,  # a training step passes its calls' own
        "sync_jitter": o.compute.sync_jitter,
    }
    return Setup(**{**fields, **plan})


# ------------------------------------------------------------------------------------------------ training


def training_report(model: ModelSpec, topology: TopologySpec, p: Prepared, parts: TrainingParts) -> EstimateReport:
    o, a = p.o, model.architecture
    memories, chosen, global_batch, tokens = parts.memories, parts.chosen, parts.global_batch, parts.tokens
    stage, recompute = chosen.stage, chosen.recompute
    time = _time(p, chosen, tokens, parts.mfu)
    setup = setup_info(
        topology,
        p,
        mode="train",
        zero_stage=stage,
        zero_stage_chosen=o.plan.zero is None,
        overlap_slowdown=chosen.steps.overlap_slowdown,
        grad_dtype=p.grad_dtype,
        micro_batch=p.micro_batch,
        accumulation=p.accumulation,
        global_batch=global_batch,
        tokens_per_step=tokens,
        recompute=recompute,
        recompute_chosen=o.plan.recompute is None,
        recompute_layers=o.plan.recompute_layers,
        recompute_block=o.plan.recompute_block,
        compile=o.compute.compile,
        loss_impl=p.loss_impl,
        framework=o.plan.framework or "none",
        recipe=p.recipe.name,
        optimizer=o.precision.optimizer,
        offload=o.precision.offload,
        bucket_bytes=int(p.bucket_bytes),
        skew=o.compute.skew,
        keep_full_grads=o.communication.keep_full_grads,
    )
    table = memories.table(recompute)
    full = memories.row(stage, "full") if a is not None and recompute != "full" and not table[stage].fits else None
    notes = list(p.advice)
    if note := place(topology, o.dp).partial_note:
        notes.append(advice.partial_domains(note))
    notes += advice.training(
        setup,
        p.counts,
        model,
        table,
        time,
        topology,
        global_batch_fixed=o.batch.global_batch is not None,
        skew=o.compute.skew,
        offload=o.precision.offload,
        full_recompute=full,
        shard_group=o.plan.shard_group,
        overlappable=not p.recipe.bf16_optimizer,
    )
    memory = _memory(model, topology, p, table, recompute)
    return EstimateReport(
        model=model_info_of(model, p.counts),
        topology=topology_info(topology),
        setup=setup,
        communication=_communication(topology, p, chosen),
        memory=memory,
        time=time,
        compute=_compute(model, topology, p, chosen),
        inference=None,
        warnings=notes,
        summary=training_summary(setup, memory, time, notes),
    )


# ------------------------------------------------------------------------------------------------ serving


def inference_report(model: ModelSpec, topology: TopologySpec, p: Prepared) -> EstimateReport:
    o = p.o
    if model.architecture is not None and model.architecture.bidirectional:
        raise InputError(
            "mode",
            f"{model.name} is an encoder (bidirectional attention, is_decoder false): it generates no tokens, so "
            "there is no decoding to serve; inference is costed for decoders, train for both",
        )
    batch = o.batch.serving_batch
    r = replica(p.counts, model.architecture, topology, p.seq_len, batch, o.compute.mfu or DEFAULT_MFU)
    replicas = o.dp // r.gpus
    serving = Serving(
        weights_bytes=int(r.weights),
        kv_cache_bytes=int(r.kv),
        overhead_bytes=int(r.gpus * r.per_gpu - r.weights - r.kv),
        total_bytes=int(r.gpus * r.per_gpu),
        per_gpu_bytes=int(r.per_gpu),
        fits=r.gpus == 1,
        gpus_per_replica=r.gpus,
        replicas=replicas,
        tokens_per_second_per_replica=r.tokens_per_second,
        tokens_per_second=r.tokens_per_second * replicas,
        bound=r.bound,
    )
    setup = setup_info(
        topology,
        p,
        mode="inference",
        framework="none",
        zero_stage=0,
        zero_stage_chosen=False,
        grad_dtype="-",
        micro_batch=batch,
        accumulation=1,
        global_batch=batch * replicas,
        tokens_per_step=batch * replicas,  # one decode step: a token per sequence
        recompute="none",
        recompute_chosen=False,
        recipe="-",
        optimizer="-",
        offload="none",
        bucket_bytes=0,
        skew=0.0,
        keep_full_grads=False,
    )
    notes = [advice.inference_no_gradients()]
    given = (
        ("--zero", o.plan.zero),
        ("--accum", o.batch.accumulation),
        ("--global-batch", o.batch.global_batch),
        ("--recompute", o.plan.recompute),
        ("--offload", None if o.precision.offload == "none" else o.precision.offload),
        ("--framework", o.plan.framework),
        ("--shard-group", o.plan.shard_group),
        *((f"--{d}", getattr(o.parallel, d) if getattr(o.parallel, d) > 1 else None) for d in ("tp", "cp", "pp", "ep")),
    )
    if ignored := [flag for flag, value in given if value is not None]:
        notes.append(advice.ignored_flags(ignored))
    if r.gpus > 1:
        notes.append(advice.replica_needs_model_parallel(r.weights, r.kv, topology, r.gpus, replicas, o.dp))
    return EstimateReport(
        model=model_info_of(model, p.counts),
        topology=topology_info(topology),
        setup=setup,
        communication=Communication(
            primitives="none",
            frequency="never: replicas exchange no gradients",
            gradient_bytes=0,
            bytes_sent_per_rank=0,
            seconds_per_step=0.0,
            collectives=[],
        ),
        memory=Memory(
            hbm_bytes=int(topology.gpu.hbm), recipe="inference (bf16 weights + KV cache)", recompute="none", stages=[]
        ),
        time=None,
        inference=serving,
        warnings=notes,
        summary=serving_summary(setup, serving, int(topology.gpu.hbm), notes),
    )
