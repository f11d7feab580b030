"""`estimate`: one data-parallel plan, costed end to end into an EstimateReport (report.py, the JSON contract).

This module only combines: the resolved inputs (prepare.py), the choice of stage and recomputation (plan.py),
collectives (collectives.py), serving (serving.py) and advice (advice.py). Each number's formula lives there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from dpcost.engine import advice, variants
from dpcost.engine.availability import environment
from dpcost.engine.collectives import CollectiveChoice, bus_factor, collective
from dpcost.engine.frameworks import FRAMEWORKS
from dpcost.engine.layout import Layout
from dpcost.engine.layout_estimate import LayoutStep, call_seconds, layout_step
from dpcost.engine.layout_memory import LayoutMemory, MemoryLayout, layout_memory_for
from dpcost.engine.layout_step import BUBBLE, pp_overlapped, stage_layer_counts
from dpcost.engine.memory import StageMemory, context_bytes
from dpcost.engine.params import ParamCount, count_params, mtp_layer
from dpcost.engine.placement import Placement, check_ranks, place
from dpcost.engine.plan import (
    Timed,
    call_time,
    candidates,
    check_forced,
    choose,
    recompute_policies,
    sharding_groups,
    stage_ops,
    timeline,
)
from dpcost.engine.prepare import DTYPE_BYTES, Prepared, check_dp, matmul_share, prepare, stage_table
from dpcost.engine.report import (
    Advice,
    AlgorithmTime,
    BreakdownTerm,
    CallsByAlgorithm,
    CollectiveUse,
    Communication,
    ComputeBreakdown,
    ComputePart,
    EstimateReport,
    GroupRow,
    LayoutCallRow,
    LayoutReport,
    Memory,
    ModelInfo,
    PipelineStageRow,
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
from dpcost.engine.step import COMPUTE, EXPOSED, JITTER, SLOWDOWN
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
from dpcost.options import DEFAULT_MFU, Options, Parallel
from dpcost.specs import ModelSpec, TopologySpec

__all__ = [
    "EstimateReport",
    "Options",
    "check_dp",
    "compare_variants",
    "estimate",
    "estimate_many",
    "layout_recompute",
    "memory_by_stage",
    "model_info",
    "topology_info",
]


def estimate(model: ModelSpec, topology: TopologySpec, options: Options) -> EstimateReport:
    """Cost one plan: `options.dp` replicas of `model` on `topology`, as the run's NCCL environment leaves it. With a
    variant asked for (--zeropp, --compression, --sync-every), the plain plan with its `variants` beside it."""
    if variants.wants_variant(options):
        report = estimate(model, topology, variants.plain(options))
        rows = variants.requested(model, environment(topology, None, None), options)
        return report.model_copy(update={"variants": [variant_row(r) for r in rows]})
    topology = environment(topology, options.communication.nvls, options.communication.collnet)
    p = prepare(model, topology, options)
    if p.o.plan.mode == "inference":
        return _inference(model, topology, p)
    check_forced(p.o, topology)
    if not p.o.parallel.trivial:
        return _layout_training(model, topology, p)
    return _training(model, topology, p)


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
    rows = variants.compare(model, environment(topology, None, None), options)
    return report.model_copy(update={"variants": [variant_row(r) for r in rows]})


def estimate_many(model: ModelSpec, topology: TopologySpec, plans: Iterable[Options]) -> list[EstimateReport]:
    """Cost many plans of one model on one topology: each as `estimate` does, sharing what a spec's frozen inputs
    give once (collective prices, parameter counts, placements: engine/memo.py) across them."""
    return [estimate(model, topology, options) for options in plans]


def memory_by_stage(model: ModelSpec, topology: TopologySpec, options: Options) -> Memory:
    """The stage table alone (`dpcost memory`): no step is timed. Recomputation is the option's, or (auto, as
    `estimate` defaults) the least that lets some stage fit, full recomputation if none does."""
    p = prepare(model, topology, options)
    if not p.o.parallel.trivial:
        return _layout_memory_table(model, topology, p)
    fixed: str | None = p.o.plan.recompute
    if fixed is not None or model.architecture is None:
        recompute = fixed or "none"
        return _memory(model, topology, p, stage_table(model, topology, p, recompute), recompute)
    for recompute in recompute_policies(p):
        rows = stage_table(model, topology, p, recompute)
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
    return _model(model, count_params(model))


def _model(model: ModelSpec, counts: ParamCount) -> ModelInfo:
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
    return Memory(
        hbm_bytes=int(topology.gpu.hbm),
        recipe=p.recipe.title,
        recompute=rc,
        note=note,
        stages=[stage_row(m, p.micro_batch) for m in rows],
    )


def _whole_message(c: CollectiveChoice) -> WholeMessage:
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


def _frequency(stage: int, accumulation: int, keep_full: bool, per_unit: bool) -> str:
    if accumulation == 1:
        return "every step (1 micro-batch)"
    if stage == 3 and keep_full:
        return (
            f"gradients once per step, after the last of {accumulation} micro-batches; parameters gathered "
            f"every micro-batch ({accumulation} per step)"
        )
    if stage == 2 and per_unit:
        return f"parameters gathered every micro-batch ({accumulation} per step); gradients " + (
            f"once per step, after the last of {accumulation}" if keep_full else "every micro-batch too"
        )
    if stage <= 1 or keep_full:
        return f"once per step, after the last of {accumulation} micro-batches"
    return f"every micro-batch ({accumulation} per step)"


def _primitives(o: Options, stage: int) -> str:
    """The stage's collectives as the framework issues them (plan.stage_ops), named as NCCL's."""
    names = {"all_reduce": "AllReduce", "reduce_scatter": "ReduceScatter", "all_gather": "AllGather"}
    return " + ".join(names[op] for op in stage_ops(o, stage))


def _communication(topology: TopologySpec, p: Prepared, chosen: Timed) -> Communication:
    """The step's collectives, each with its whole message priced on its group (plan.sharding_groups: under hybrid
    sharding the gathers and reduce-scatters stay in the shard group, and each reduced shard is all-reduced across
    the replicas); with hybrid sharding also the bytes each GPU sends per step over each tier."""
    o = p.o
    shard, replicas = sharding_groups(topology, o)
    everyone = place(topology, o.dp)
    rows: list[CollectiveUse] = []
    per_tier: dict[str, float] = {}
    for t in chosen.steps.traffic:
        group = everyone if t.op == "all_reduce" else shard
        whole = collective(topology, t.op, group, t.message_bytes, o.communication.algorithm)
        sent = bus_factor(t.op, group.ranks) * t.message_bytes
        parts = [whole.best]
        if replicas is not None and t.op == "reduce_scatter":
            across = collective(topology, "all_reduce", replicas, t.message_bytes / shard.ranks).best
            sent += bus_factor("all_reduce", replicas.ranks) * t.message_bytes / shard.ranks
            parts.append(across)
        for part in parts:
            for tier in part.tiers:
                if not tier.nested:
                    per_tier[tier.tier] = per_tier.get(tier.tier, 0.0) + tier.bytes_per_gpu * t.occurrences
        rows.append(
            CollectiveUse(
                op=t.op,
                purpose=t.purpose,
                bytes=int(t.message_bytes),
                bytes_sent_per_rank=int(sent),
                occurrences=t.occurrences,
                calls=t.calls,
                algorithm=t.algorithms[0][0].split("/")[0] if t.algorithms else "none",
                calls_by_algorithm=[CallsByAlgorithm(algorithm=name, calls=n) for name, n in t.algorithms],
                seconds=t.seconds,
                whole_message=_whole_message(whole),
            )
        )
    return Communication(
        primitives=_primitives(o, chosen.stage),
        frequency=_frequency(chosen.stage, p.accumulation, o.communication.keep_full_grads, p.per_unit),
        gradient_bytes=int(p.counts.total * p.grad_bytes),
        bytes_sent_per_rank=sum(r.bytes_sent_per_rank * r.occurrences for r in rows),
        seconds_per_step=chosen.steps.comm,
        collectives=rows,
        bytes_per_tier=[TierBytes(tier=k, bytes_per_gpu=int(v)) for k, v in per_tier.items()] if replicas else None,
        shard_group=shard.ranks if replicas is not None else None,
    )


def _time(topology: TopologySpec, p: Prepared, chosen: Timed, tokens: int) -> Time:
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
        bound=bound(steps.compute, steps.exposed),
        tokens_per_second=tokens / steps.step,
        mfu=model_flops_utilization(
            model_flops_per_step(chosen.flops, p.micro_batch, p.seq_len, p.accumulation),
            steps.step,
            topology.gpu.peak(p.o.compute.compute_dtype),
        ),
        scaling_efficiency=compute_alone / steps.step,
        straggler_seconds=steps.compute - compute_alone,
        breakdown=[BreakdownTerm(term=t.term, seconds=t.seconds) for t in steps.breakdown],
    )


def _compute(topology: TopologySpec, p: Prepared, chosen: Timed, layers: int) -> ComputeBreakdown | None:
    """--compute-model ops: the per-op model's micro-batch regrouped by part, and MFU and HFU (utilization.py)."""
    c = chosen.compute
    if c is None:
        return None
    a, opt = p.accumulation, chosen.optimizer
    seconds = step_seconds_by_part(c, a, opt)
    flops = step_flops_by_part(c, a)
    layer = mean_layer_seconds(c, layers)
    alone = single_gpu_step_seconds(c, a, opt)
    model = model_flops_per_step(chosen.flops, p.micro_batch, p.seq_len, a)
    hardware = hardware_flops_per_step(chosen.flops, p.micro_batch, p.seq_len, a)
    peak = topology.gpu.peak(p.o.compute.compute_dtype)
    step = chosen.steps.step
    return ComputeBreakdown(
        parts=[
            ComputePart(
                part=part,
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
        model_flops_per_step=model,
        hardware_flops_per_step=hardware,
        peak_flops=peak,
        mfu=model_flops_utilization(model, step, peak),
        hfu=hardware_flops_utilization(hardware, step, peak),
        single_gpu_mfu=model_flops_utilization(model, alone, peak),
        single_gpu_hfu=hardware_flops_utilization(hardware, alone, peak),
    )


def _setup(topology: TopologySpec, p: Prepared, **plan: object) -> Setup:
    """The fields every report shares; `plan` carries the mode's own."""
    o = p.o
    fields: dict[str, object] = {
        "dp": o.dp,
        "nodes": math.ceil(o.dp / topology.domain_size),
        "gpus_per_node": min(o.dp, topology.domain_size),
        "seq_len": p.seq_len,
        "flash_attention": o.compute.flash_attention,
        "mfu": matmul_share(topology.gpu, o.compute, o.compute.chosen_model),
        "compute_model": o.compute.chosen_model,
        "compute_dtype": o.compute.compute_dtype,
        "overlap_slowdown": p.overlap_slowdown,
        "sync_jitter": o.compute.sync_jitter,
    }
    return Setup.model_validate({**fields, **plan})


# ------------------------------------------------------------------------------------------------ training


def _training(model: ModelSpec, topology: TopologySpec, p: Prepared) -> EstimateReport:
    o, a = p.o, model.architecture
    tables: dict[str, tuple[StageMemory, ...]] = {}

    def rows(recompute: str) -> tuple[StageMemory, ...]:
        if recompute not in tables:
            tables[recompute] = stage_table(model, topology, p, recompute)
        return tables[recompute]

    call = call_time(topology, o)
    stages, recomputes = candidates(p, topology, a is not None)
    chosen = choose(
        stages,
        recomputes,
        lambda st, rc: rows(rc)[st].fits,
        lambda st, rc: timeline(model, topology, p, st, rc, call),
    )
    stage, recompute = chosen.stage, chosen.recompute
    global_batch = p.micro_batch * p.accumulation * o.dp
    tokens = global_batch * p.seq_len
    time = _time(topology, p, chosen, tokens)
    setup = _setup(
        topology,
        p,
        mode="train",
        zero_stage=stage,
        zero_stage_chosen=o.plan.zero is None,
        grad_dtype=p.grad_dtype,
        micro_batch=p.micro_batch,
        accumulation=p.accumulation,
        global_batch=global_batch,
        tokens_per_step=tokens,
        recompute=recompute,
        recompute_chosen=o.plan.recompute is None,
        recompute_layers=o.plan.recompute_layers,
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
    table = rows(recompute)
    full = rows("full")[stage] if a is not None and recompute != "full" and not table[stage].fits else None
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
    )
    memory = _memory(model, topology, p, table, recompute)
    return EstimateReport(
        model=_model(model, p.counts),
        topology=topology_info(topology),
        setup=setup,
        communication=_communication(topology, p, chosen),
        memory=memory,
        time=time,
        compute=_compute(topology, p, chosen, a.layers) if a is not None else None,
        inference=None,
        warnings=notes,
        summary=training_summary(setup, memory, time, notes),
    )


# ------------------------------------------------------------------------------------------------ layouts


LAYOUT_RECIPE = "Megatron-LM theoretical_memory_usage: bf16 weights, fp32 gradients, Adam (over DP at stage 1)"


def _layout(o: Options, topology: TopologySpec) -> Layout:
    """The options' layout, refused in the words of the flag that breaks it."""
    par = o.parallel
    try:
        layout = Layout(tp=par.tp, cp=par.cp, pp=par.pp, dp=o.dp, ep=par.ep, etp=par.etp, order=par.order)
    except ValueError as exc:
        flag, _, message = str(exc).partition(": ")
        raise InputError(flag.lstrip("-").replace("-", "_"), message) from None
    try:
        check_ranks(topology, layout.gpus)
    except ValueError as exc:
        raise InputError("dp", f"TP x CP x PP x DP = {layout.gpus} GPUs: {exc}") from None
    if par.virtual_stages > 1 and par.pp == 1:
        raise InputError("virtual_stages", "interleaving needs pipeline stages: give --pp 2 or more")
    try:
        pp_overlapped(par.virtual_stages, par.pp_comm_overlap)
    except ValueError as exc:
        raise InputError("pp_comm_overlap", str(exc).partition(": ")[2]) from None
    return layout


def _stage_layer_counts(model: ModelSpec, o: Options) -> list[int]:
    """Decoder layers per pipeline stage (layout_step.stage_layer_counts), the first and last stage's as the
    options give them, refused in the words of the flag that breaks the split."""
    par = o.parallel
    assert model.architecture is not None  # _check_layout_plan
    flag = "first_stage_layers" if par.first_stage_layers is not None else "last_stage_layers"
    given = par.first_stage_layers is not None or par.last_stage_layers is not None
    if given and par.virtual_stages > 1:
        raise InputError(flag, "an uneven first or last stage is not costed with interleaving (--virtual-stages)")
    try:
        return stage_layer_counts(model.architecture.layers, par.pp, par.first_stage_layers, par.last_stage_layers)
    except ValueError as exc:
        raise InputError(flag, f"{model.name}'s {model.architecture.layers} layers: {exc}") from None


# What a layout is costed with (Megatron-LM's schedule and memory accounting): each plan option's values it runs.
LAYOUT_RUNS: dict[str, tuple[object, ...]] = {
    "framework": (None, "megatron"),
    "zero": (None, 0, 1),
    "recompute": (None, "none", "selective", "full"),
    "grad_dtype": (None, "fp32", "bf16", "fp16"),
}


def _layout_grad_dtype(o: Options) -> str:
    """The layout's gradient buffer and reduction dtype: Megatron-LM's --bf16 default, fp32
    (arguments.py: accumulate_allreduce_grads_in_fp32), unless --grad-dtype gives the parameters' 16-bit dtype
    (--grad-reduce-in-bf16, Megatron-Core's grad_reduce_in_fp32=False; fp16 under --fp16)."""
    return o.precision.grad_dtype or "fp32"


def _check_layout_plan(model: ModelSpec, o: Options) -> None:
    """What a layout is costed with (LAYOUT_RUNS: none, selective or full recomputation, ZeRO 0 or 1), and what
    Megatron-Core itself refuses (heads or KV heads TP does not divide; MoE with TP above 1 but no sequence
    parallelism)."""
    if model.architecture is None:
        raise InputError("model", f"{model.name}: a TP/CP/PP/EP layout needs the model's architecture")
    if o.plan.framework not in LAYOUT_RUNS["framework"]:
        raise InputError("framework", f"a TP/CP/PP/EP layout is costed as Megatron-LM runs it, not {o.plan.framework}")
    if o.plan.zero not in LAYOUT_RUNS["zero"]:
        raise InputError("zero", f"a layout runs Megatron's DDP (0) or distributed optimizer (1), not {o.plan.zero}")
    if o.precision.grad_dtype not in LAYOUT_RUNS["grad_dtype"]:
        raise InputError(
            "grad_dtype",
            f"a layout reduces gradients as Megatron-Core does, in fp32 (grad_reduce_in_fp32) or the 16-bit "
            f"parameters' bf16 or fp16, not {o.precision.grad_dtype}",
        )
    if o.plan.recompute not in LAYOUT_RUNS["recompute"]:
        raise InputError(
            "recompute", f"a layout runs Megatron's none, selective or full recomputation, not {o.plan.recompute}"
        )
    a, tp = model.architecture, o.parallel.tp
    if a.heads % tp:
        raise InputError("tp", f"{tp} does not divide {model.name}'s {a.heads} attention heads (Megatron splits them)")
    if a.mla is None and a.n_kv_heads % tp:
        raise InputError(
            "tp", f"{tp} does not divide {model.name}'s {a.n_kv_heads} KV heads (Megatron's num_query_groups % TP)"
        )
    if o.parallel.ep > 1 and (model.architecture.moe is None):
        raise InputError("ep", f"{model.name} has no experts to split")
    if model.architecture.moe is not None and o.parallel.tp > 1 and not o.parallel.sequence_parallel:
        raise InputError(
            "sequence_parallel",
            "Megatron-Core trains MoE layers with TP above 1 only with sequence parallelism (moe_layer.py): add it",
        )
    if o.parallel.cp > 1 and a.attention_sinks:
        # Transformer Engine's get_attention_backend (dot_product_attention/utils.py at d0067d0, its softmax-type
        # table): FlashAttention takes no sinks, FusedAttention takes them under context parallelism only with the
        # a2a exchange, and the unfused path runs no context parallelism
        raise InputError(
            "cp",
            f"{model.name}'s attention sinks have no attention backend under context parallelism's p2p or all-gather "
            "exchange (Transformer Engine's get_attention_backend): give --cp 1",
        )
    _stage_layer_counts(model, o)


def _layout_memory(
    model: ModelSpec, topology: TopologySpec, p: Prepared, layout: Layout, stage: int, recompute: str, m: int | None
) -> tuple[StageRow, LayoutMemory]:
    """Memory per GPU of the most loaded pipeline stage, as Megatron's theoretical_memory_usage accounts it
    (layout_memory.py): bf16 weights, fp32 gradients and Adam's fp32 states (over DP with the distributed
    optimizer), and the activations its micro-batches in flight hold; plus the CUDA context (memory.py)."""
    par = p.o.parallel
    assert model.architecture is not None  # _check_layout_plan
    counts = _stage_layer_counts(model, p.o)
    uneven = len(set(counts)) > 1
    spec = MemoryLayout(
        tp=layout.tp,
        cp=layout.cp,
        pp=layout.pp,
        dp=layout.dp,
        ep=layout.ep,
        etp=layout.etp,
        virtual_stages=par.virtual_stages,
        sequence_parallel=par.sequence_parallel,
        recompute=recompute,
        distributed_optimizer=stage == 1,
        grad_bytes=DTYPE_BYTES[_layout_grad_dtype(p.o)],
        attention_scores=not p.o.compute.flash_attention and recompute != "selective",
        first_stage_layers=counts[0] if uneven and layout.pp > 1 else None,
        last_stage_layers=counts[-1] if uneven and layout.pp > 1 else None,
    )
    try:
        held = layout_memory_for(model, spec, p.seq_len, p.micro_batch, m, par.mtp_layers)
    except ValueError as exc:
        raise InputError("pp", f"{model.name}: {exc}") from None
    worst = held.most_loaded
    params, grads = 2 * worst.parameters, spec.grad_bytes * worst.parameters
    optimizer = worst.weight_and_optimizer - params - grads
    context = context_bytes(topology.gpu)
    allocated = worst.total
    total = allocated + context
    hbm = topology.gpu.hbm
    states = worst.weight_and_optimizer + context
    per_sequence = worst.activations / p.micro_batch
    largest = int((hbm - states) // per_sequence) if per_sequence > 0 and hbm > states else 0
    row = StageRow(
        stage=stage,
        params_bytes=int(params),
        grads_bytes=int(grads),
        optimizer_bytes=int(optimizer),
        activations_bytes=int(worst.activations),
        transient_bytes=0,
        buffers_bytes=0,
        allocated_bytes=int(allocated),
        fragmentation_bytes=0,
        reserved_bytes=int(allocated),
        context_bytes=int(context),
        overhead_bytes=int(context),
        total_bytes=int(total),
        peak_phase="backward",
        cpu_bytes=0,
        fits=total <= hbm,
        max_micro_batch=largest,
    )
    return row, held


def _layout_memory_rows(
    model: ModelSpec,
    topology: TopologySpec,
    p: Prepared,
    layout: Layout,
    microbatches: int | None,
    zero_stages: tuple[int, ...] = (0, 1),
) -> tuple[str, dict[int, tuple[StageRow, LayoutMemory]]]:
    """The recomputation costed (the option's, else the least of none, selective and full with which the plan's
    stage fits, full when none does) and memory per GPU at `zero_stages`, ZeRO 0 (Megatron's DDP) and 1 (its
    distributed optimizer), with it; `microbatches` per step bound the ones in flight (None: the pipeline full,
    as Megatron's formula assumes)."""
    o = p.o
    stage = 1 if o.plan.zero is None else o.plan.zero

    def rows(recompute: str) -> dict[int, tuple[StageRow, LayoutMemory]]:
        return {st: _layout_memory(model, topology, p, layout, st, recompute, microbatches) for st in zero_stages}

    if o.plan.recompute is not None:
        return o.plan.recompute, rows(o.plan.recompute)
    for recompute in LAYOUT_RUNS["recompute"][1:]:
        held = rows(str(recompute))
        if held[stage][0].fits:
            break
    return str(recompute), held


def layout_recompute(model: ModelSpec, topology: TopologySpec, options: Options) -> str | None:
    """The recomputation `estimate` would cost a TP/CP/PP/EP layout with, or None when the layout does not fit at
    its ZeRO stage with it, decided as `estimate` decides it (the same memory rows, which layout_memory keeps),
    without timing the step."""
    topology = environment(topology, options.communication.nvls, options.communication.collnet)
    p = prepare(model, topology, options)
    _check_layout_plan(model, p.o)
    layout = _layout(p.o, topology)
    stage = 1 if p.o.plan.zero is None else p.o.plan.zero
    recompute, rows = _layout_memory_rows(model, topology, p, layout, p.accumulation, (stage,))
    return recompute if rows[stage][0].fits else None


def _layout_memory_table(model: ModelSpec, topology: TopologySpec, p: Prepared) -> Memory:
    """`dpcost memory` with a layout: Megatron's accounting of the most loaded pipeline stage, at ZeRO 0 and 1."""
    _check_layout_plan(model, p.o)
    layout = _layout(p.o, topology)
    recompute, rows = _layout_memory_rows(model, topology, p, layout, None)
    worst = rows[1][1].most_loaded
    return Memory(
        hbm_bytes=int(topology.gpu.hbm),
        recipe=LAYOUT_RECIPE,
        recompute=recompute,
        note=f"a TP {layout.tp} x CP {layout.cp} x PP {layout.pp} x DP {layout.dp} layout: the most loaded pipeline "
        f"stage, {worst.stage} of {layout.pp}, per GPU",
        stages=[row for row, _ in rows.values()],
    )


def _layout_training(model: ModelSpec, topology: TopologySpec, p: Prepared) -> EstimateReport:
    """One layout, costed end to end (layout_estimate.py for the step, layout_memory.py for memory)."""
    o, par = p.o, p.o.parallel
    _check_layout_plan(model, o)
    layout = _layout(o, topology)
    stage = 1 if o.plan.zero is None else o.plan.zero
    m = p.accumulation
    recompute, chosen_rows = _layout_memory_rows(model, topology, p, layout, m)
    global_batch = p.micro_batch * m * o.dp
    tokens = global_batch * p.seq_len
    peak = topology.gpu.peak(o.compute.compute_dtype)
    compute_model = o.compute.chosen_model  # op by op: a layout's GEMMs at their TP shards (docs/layouts.md)
    mfu = matmul_share(topology.gpu, o.compute, compute_model)
    r = layout_step(
        model,
        topology,
        layout,
        micro_batch=p.micro_batch,
        global_batch=global_batch,
        seq_len=p.seq_len,
        mfu=mfu,
        peak=peak,
        recompute=recompute,
        recompute_modules=frozenset(o.plan.recompute_modules),
        grad_dtype=_layout_grad_dtype(o),
        sequence_parallel=par.sequence_parallel,
        tp_overlap=par.tp_comm_overlap,
        ep_overlap=par.ep_comm_overlap,
        ep_node_limit=par.ep_node_limit,
        ep_dispatcher=par.ep_dispatcher,
        pp_overlap=par.pp_comm_overlap,
        cp_impl=par.cp_impl,
        virtual_stages=par.virtual_stages,
        distributed_optimizer=stage == 1,
        dp_overlap=o.communication.overlap_comm is not False,
        overlap_slowdown=p.overlap_slowdown,
        sync_jitter=o.compute.sync_jitter,
        compute_model=compute_model,
        compute_dtype=o.compute.compute_dtype,
        flash=o.compute.flash_attention,
        first_stage_layers=par.first_stage_layers,
        last_stage_layers=par.last_stage_layers,
        mtp_layers=par.mtp_layers,
    )
    dp_group = r.groups["dp-cp"]
    setup = _setup(
        topology,
        p,
        mode="train",
        zero_stage=stage,
        zero_stage_chosen=o.plan.zero is None,
        grad_dtype=_layout_grad_dtype(o),
        micro_batch=p.micro_batch,
        accumulation=m,
        global_batch=global_batch,
        tokens_per_step=tokens,
        recompute=recompute,
        recompute_chosen=o.plan.recompute is None,
        recompute_layers=o.plan.recompute_layers,
        compile=o.compute.compile,
        loss_impl="vocab-parallel",
        framework="megatron",
        recipe="megatron",
        optimizer=o.precision.optimizer,
        offload=o.precision.offload,
        bucket_bytes=int(FRAMEWORKS["megatron"].bucket(dp_group.ranks, 4.0)),
        skew=o.compute.skew,
        keep_full_grads=False,
    )
    setup = setup.model_copy(
        update={
            "nodes": dp_group.nodes,
            "gpus_per_node": int(dp_group.ppn),
            "compute_model": compute_model,
            "mfu": mfu,
        }
    )
    time = _layout_time(r, tokens)
    memory = Memory(
        hbm_bytes=int(topology.gpu.hbm),
        recipe=LAYOUT_RECIPE,
        recompute=recompute,
        note=f"the most loaded pipeline stage, {chosen_rows[stage][1].most_loaded.stage} of {layout.pp}, per GPU",
        stages=[row for row, _ in chosen_rows.values()],
    )
    communication = _layout_communication(topology, r, dp_group, stage)
    notes = list(p.advice) + _layout_advice(r, topology, par.virtual_stages)
    if ignored := _layout_ignores(o):
        notes.append(
            advice.ignored_flags(ignored, "do not apply to a TP/CP/PP/EP layout, costed as Megatron-LM runs it")
        )
    info = _model(model, p.counts)
    if par.mtp_layers:
        assert model.architecture is not None  # _check_layout_plan
        info = info.model_copy(update={"params_mtp": int(par.mtp_layers * mtp_layer(model.architecture).params)})
    return EstimateReport(
        model=info,
        topology=topology_info(topology),
        setup=setup,
        communication=communication,
        memory=memory,
        time=time,
        compute=None,
        inference=None,
        layout=_layout_report(topology, r, par, chosen_rows[stage][1]),
        warnings=notes,
        summary=training_summary(setup, memory, time, notes),
    )


# The flags a layout's costing does not read (it runs Megatron's own settings), each with whether it was given.
LAYOUT_IGNORES: dict[str, Callable[[Options], bool]] = {
    "--skew": lambda o: o.compute.skew != 0,
    "--offload": lambda o: o.precision.offload != "none",
    "--recompute-layers": lambda o: o.plan.recompute_layers != 1,
    "--grad-block": lambda o: o.precision.grad_block is not None,
    "--recipe": lambda o: o.precision.recipe is not None,
    "--optimizer": lambda o: o.precision.optimizer != "adamw",
    "--bucket-size": lambda o: o.communication.bucket_bytes is not None,
    "--first-bucket-size": lambda o: o.communication.first_bucket_bytes is not None,
    "--gather-dtype": lambda o: o.communication.gather_dtype is not None,
    "--algorithm": lambda o: o.communication.algorithm is not None,
    "--protocol": lambda o: o.communication.protocol is not None,
    "--keep-full-grads": lambda o: o.communication.keep_full_grads,
    "--compile": lambda o: o.compute.compile,
    "--loss-impl": lambda o: o.compute.loss_impl is not None,
}


def _layout_ignores(o: Options) -> list[str]:
    """The flags a layout's costing does not read, where they were given."""
    return [flag for flag, given in LAYOUT_IGNORES.items() if given(o)]


def _layout_advice(r: LayoutStep, topology: TopologySpec, virtual: int) -> list[Advice]:
    """Where the layout loses time it need not: TP across NVLink domains, a large bubble."""
    out = []
    tp = r.groups["tp"]
    if r.layout.tp > 1 and tp.nodes > 1:
        out.append(advice.tp_across_domains(r.layout.tp, tp.nodes, topology.domain_size))
    if r.bubble > 0.1 * r.step:
        out.append(advice.pipeline_bubble(r.bubble, r.step, r.layout.pp, r.micro_batches, virtual))
    return out


def _layout_time(r: LayoutStep, tokens: int) -> Time:
    """The layout's step as Time: compute, each dimension's exposed calls, DP's terms, the bubble, the jitter."""
    compute = r.micro_batches * (r.forward + r.backward) + r.optimizer
    terms = [BreakdownTerm(term=COMPUTE, seconds=compute)]
    terms += [BreakdownTerm(term=f"{EXPOSED}{dim.upper()} calls", seconds=s) for dim, s in r.exposed.items()]
    # DP's overlap slowdown and the model-parallel calls' as one term: the compute any overlapped call slows
    terms += [
        BreakdownTerm(term=t.term, seconds=t.seconds + (r.slowed if t.term == SLOWDOWN else 0.0)) for t in r.dp_terms
    ]
    if r.slowed > 0 and all(t.term != SLOWDOWN for t in r.dp_terms):
        terms.append(BreakdownTerm(term=SLOWDOWN, seconds=r.slowed))
    terms.append(BreakdownTerm(term=BUBBLE, seconds=r.bubble))
    terms.append(BreakdownTerm(term=JITTER, seconds=r.jitter))
    exposed = sum(t.seconds for t in terms if t.term.startswith(EXPOSED))
    losses = sum(t.seconds for t in terms if t.term in (SLOWDOWN, JITTER))
    return Time(
        forward_seconds=r.forward,
        backward_seconds=r.backward,
        compute_seconds=compute,
        comm_seconds=r.comm,
        ideal_seconds=max(compute, r.comm) + r.bubble,
        step_seconds=r.step,
        serial_seconds=compute + r.comm + r.bubble,
        exposed_comm_seconds=exposed,
        losses_seconds=losses,
        bound=bound(compute, exposed),
        tokens_per_second=tokens / r.step,
        mfu=r.mfu,
        scaling_efficiency=compute / r.step,
        straggler_seconds=0.0,
        breakdown=terms,
    )


def _layout_communication(topology: TopologySpec, r: LayoutStep, dp_group: Placement, stage: int) -> Communication:
    """Data parallelism's collectives on the DP x CP group, each with its whole message priced on that group."""
    rows = [
        CollectiveUse(
            op=t.op,
            purpose=t.purpose,
            bytes=int(t.message_bytes),
            bytes_sent_per_rank=int(bus_factor(t.op, dp_group.ranks) * t.message_bytes),
            occurrences=t.occurrences,
            calls=t.calls,
            algorithm=t.algorithms[0][0].split("/")[0] if t.algorithms else "none",
            calls_by_algorithm=[CallsByAlgorithm(algorithm=name, calls=n) for name, n in t.algorithms],
            seconds=t.seconds,
            whole_message=_whole_message(collective(topology, t.op, dp_group, t.message_bytes)),
        )
        for t in r.dp_traffic
    ]
    held = r.stages[r.held_stage]
    return Communication(
        primitives="ReduceScatter + AllGather" if stage == 1 else "AllReduce",
        frequency=f"once per step, after the last of {r.micro_batches} micro-batches, on the DP x CP group",
        gradient_bytes=int(held.dense_params * 4),
        bytes_sent_per_rank=sum(row.bytes_sent_per_rank * row.occurrences for row in rows),
        seconds_per_step=sum(t.seconds for t in r.dp_traffic),
        collectives=rows,
    )


def _layout_report(topology: TopologySpec, r: LayoutStep, par: Parallel, held: LayoutMemory) -> LayoutReport:
    layout = r.layout
    groups = []
    for kind, g in r.groups.items():
        if g.ranks == 1:
            continue
        groups.append(
            GroupRow(group=kind, ranks=g.ranks, ranks_per_domain=g.ppn, domains=g.nodes, tiers=g.tiers_crossed)
        )
    calls = [
        LayoutCallRow(
            dimension=c.dimension,
            purpose=c.purpose,
            op=c.op,
            group=c.group,
            message_bytes=int(c.message_bytes),
            calls_per_micro_batch=c.per_micro_batch,
            seconds_per_call=call_seconds(topology, r.groups, c),
            overlapped=c.overlapped,
        )
        for c in r.calls
    ]
    memory = {s.stage: s.total for s in held.stages}
    stages = [
        PipelineStageRow(
            stage=s.index,
            layers=s.layers,
            params=int(s.dense_params + s.expert_params),
            forward_flops_per_token=s.forward_flops,
            memory_bytes=int(memory.get(s.index, 0.0)),
        )
        for s in r.stages
    ]
    return LayoutReport(
        gpus=layout.gpus,
        tp=layout.tp,
        cp=layout.cp,
        pp=layout.pp,
        dp=layout.dp,
        ep=layout.ep,
        expert_tp=layout.expert_tp,
        expert_dp=layout.expert_dp,
        order=layout.order,
        virtual_stages=par.virtual_stages,
        micro_batches=r.micro_batches,
        sequence_parallel=par.sequence_parallel,
        tp_comm_overlap=par.tp_comm_overlap,
        pp_comm_overlap=pp_overlapped(par.virtual_stages, par.pp_comm_overlap),
        cp_impl=par.cp_impl,
        bubble_seconds=r.bubble,
        paced_stage=r.paced_stage,
        memory_stage=held.most_loaded.stage,
        groups=groups,
        calls=calls,
        exposed=[BreakdownTerm(term=dim, seconds=s) for dim, s in r.exposed.items()],
        stages=stages,
        mtp_layers=par.mtp_layers or None,
    )


# ------------------------------------------------------------------------------------------------ serving


def _inference(model: ModelSpec, topology: TopologySpec, p: Prepared) -> EstimateReport:
    o = p.o
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
    setup = _setup(
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
        notes.append(advice.replica_needs_model_parallel(r.weights + r.kv, topology, r.gpus, replicas, o.dp))
    return EstimateReport(
        model=_model(model, p.counts),
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
