"""`estimate`: one data-parallel plan, costed end to end (communication, memory, time) into a frozen Report.

This module only combines: parameter counts (params.py), collectives (collectives.py), memory (memory.py,
activations.py), FLOPs (compute.py) and the step timeline (step.py). Each number's formula lives there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from dpcost.engine.activations import RECOMPUTE, activation_memory, kv_cache_bytes
from dpcost.engine.availability import ALGORITHMS, forcible
from dpcost.engine.collectives import CollectiveChoice, bus_factor, collective, fastest
from dpcost.engine.compute import DEFAULT_MFU, FlopsPerToken, attention_flops, flops_per_token
from dpcost.engine.memory import (
    CONTEXT_BYTES,
    FRAGMENTATION,
    OPTIMIZER_STATE_BYTES,
    RECIPES,
    Recipe,
    StageMemory,
    buffers,
    model_states,
    offload_applies,
    stage_memory,
)
from dpcost.engine.params import ParamCount, count_params
from dpcost.engine.placement import check_ranks, place
from dpcost.engine.step import Call, StepPlan, StepTime, Unit, step_time
from dpcost.errors import InputError
from dpcost.specs import ModelArchitecture, ModelSpec, TopologySpec

__all__ = [
    "DTYPE_BYTES",
    "CollectiveRow",
    "Communication",
    "Inference",
    "Memory",
    "Options",
    "Report",
    "Setup",
    "Timing",
    "check_dp",
    "decode_flops_per_token",
    "decode_weight_bytes",
    "estimate",
    "memory_by_stage",
]

DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
DEFAULT_BUCKET_BYTES = 25 * 2**20  # PyTorch DDP bucket_cap_mb=25, in MiB
DEFAULT_SEQ_LEN = 4096
MAX_BUCKETS = 1_000_000  # per pass: each is a call the timeline schedules
# The recipe's own gradient dtype (what its reduce-scatter/all-reduce moves) when --grad-dtype is not given.
RECIPE_GRAD_DTYPE = {"zero-paper": "fp16", "deepspeed": "bf16", "megatron": "fp32"}


@dataclass(frozen=True)
class Options:
    """Everything `dpcost estimate` can be told; None means 'choose for me' and the Report says what it chose."""

    dp: int
    zero: int | None = None
    grad_dtype: str | None = None
    micro_batch: int = 1
    seq_len: int | None = None  # 4096, or the model's learned-position limit if smaller
    accumulation: int | None = None
    global_batch: int | None = None
    mfu: float = DEFAULT_MFU
    mode: Literal["train", "inference"] = "train"
    recompute: str | None = None
    flash_attention: bool = True
    recipe: str = "zero-paper"
    optimizer: str = "adamw"
    offload: str = "none"
    bucket_bytes: float = DEFAULT_BUCKET_BYTES
    algorithm: str | None = None
    skew: float = 0.0
    keep_full_grads: bool = False
    batch: int = 1  # inference: concurrent sequences per replica


@dataclass(frozen=True)
class Setup:
    model: str
    model_title: str
    params_total: float
    params_active: float
    params_active_excl_embedding: float  # without the input embedding and position table (params.py)
    params_mtp: float
    topology: str
    gpu: str
    dp: int
    nodes: int
    gpus_per_node: int
    mode: str
    zero_stage: int
    zero_chosen: bool
    grad_dtype: str
    micro_batch: int
    accumulation: int
    seq_len: int
    global_batch: int
    tokens_per_step: int
    recompute: str
    recompute_chosen: bool
    flash_attention: bool
    recipe: str
    optimizer: str
    offload: str
    bucket_bytes: float
    mfu: float
    skew: float
    keep_full_grads: bool


@dataclass(frozen=True)
class CollectiveRow:
    op: str
    purpose: str
    message_bytes: float  # one occurrence, e.g. the whole gradient
    bytes_sent_per_rank: float  # per occurrence, nccl-tests' bus volume: 2(N-1)/N x S for an all-reduce
    occurrences: int
    calls: int  # per step
    seconds: float  # per step, as bucketed calls
    algorithms: tuple[tuple[str, int], ...]  # (algorithm/protocol, calls per step) its calls ran with
    single_call: CollectiveChoice  # the whole message as one call: algorithm, per-tier traffic, alternatives


@dataclass(frozen=True)
class Communication:
    gradient_bytes: float
    primitives: str
    collectives: tuple[CollectiveRow, ...]
    bytes_sent_per_rank: float  # per step
    seconds_per_step: float
    frequency: str


@dataclass(frozen=True)
class Memory:
    stages: tuple[StageMemory, ...]
    hbm: float
    recipe: str
    recompute: str
    activations_note: str


@dataclass(frozen=True)
class Timing:
    forward: float  # one micro-batch
    backward: float  # one micro-batch, recomputation included
    compute: float  # per step, all micro-batches
    comm: float  # per step, every call summed
    overlapped: float  # ideal: each window max(compute, comm)
    bucketed: float  # the framework schedule
    serial: float
    step: float  # = bucketed
    exposed_comm: float
    bound: str
    tokens_per_second: float
    mfu: float
    scaling_efficiency: float
    straggler_seconds: float
    step_detail: StepTime | None  # the phases, for the Python API


@dataclass(frozen=True)
class Inference:
    weights_bytes: float
    kv_cache_bytes: float
    overhead_bytes: float
    total_bytes: float  # per replica
    per_gpu_bytes: float
    fits: bool  # on one GPU: pure data parallelism
    gpus_per_replica: int
    replicas: int
    tokens_per_second_per_replica: float
    tokens_per_second: float
    bound: str


@dataclass(frozen=True)
class Report:
    setup: Setup
    communication: Communication
    memory: Memory
    time: Timing | None
    inference: Inference | None
    warnings: tuple[str, ...] = field(default=())


def check_dp(topology: TopologySpec, dp: int, where: str = "dp") -> None:
    """A DP size this topology can hold (collectives.check_ranks), as an input error naming the flag."""
    try:
        check_ranks(topology, dp)
    except ValueError as exc:
        raise InputError(where, str(exc)) from None


def _validate(o: Options) -> None:
    def positive(name: str, value: int | None) -> None:
        if value is not None and value < 1:
            raise InputError(name, f"must be a positive integer, got {value}")

    for name in ("micro_batch", "seq_len", "accumulation", "global_batch", "batch"):
        positive(name, getattr(o, name))
    for name, limit in (("micro_batch", 10**6), ("seq_len", 10**7), ("accumulation", 10**6), ("batch", 10**6)):
        value = getattr(o, name)
        if value is not None and value > limit:
            raise InputError(name, f"{value} is beyond {limit:,}; check the number")
    if o.global_batch is not None and o.global_batch > 10**12:
        raise InputError("global_batch", f"{o.global_batch} is beyond 10^12 sequences; check the number")
    if o.zero is not None and o.zero not in (0, 1, 2, 3):
        raise InputError("zero", f"ZeRO stage must be 0, 1, 2 or 3, got {o.zero}")
    if o.grad_dtype is not None and o.grad_dtype not in DTYPE_BYTES:
        raise InputError("grad_dtype", f"must be one of {', '.join(DTYPE_BYTES)}, got {o.grad_dtype!r}")
    if not 0.001 <= o.mfu <= 1:
        raise InputError("mfu", f"must be a fraction of peak from 0.001 to 1, got {o.mfu}")
    if o.recompute is not None and o.recompute not in RECOMPUTE:
        raise InputError("recompute", f"must be one of {', '.join(RECOMPUTE)} or auto, got {o.recompute!r}")
    if o.recipe not in RECIPES:
        raise InputError("recipe", f"must be one of {', '.join(RECIPES)}, got {o.recipe!r}")
    if o.optimizer not in OPTIMIZER_STATE_BYTES:
        raise InputError("optimizer", f"must be one of {', '.join(OPTIMIZER_STATE_BYTES)}, got {o.optimizer!r}")
    if o.offload not in ("none", "optimizer", "params"):
        raise InputError("offload", f"must be none, optimizer or params, got {o.offload!r}")
    if o.zero is not None and o.offload != "none" and not offload_applies(o.offload, o.zero):
        need = "ZeRO-3" if o.offload == "params" else "ZeRO 1-3"
        raise InputError("offload", f"{o.offload} offload needs {need} (DeepSpeed's rule), got --zero {o.zero}")
    if o.bucket_bytes <= 0:
        raise InputError("bucket_size", "must be a positive size such as 25MiB")
    if o.algorithm is not None and o.algorithm not in ALGORITHMS:
        raise InputError("algorithm", f"must be one of {', '.join(ALGORITHMS)}, got {o.algorithm!r}")
    if not 0 <= o.skew <= 10:
        raise InputError(
            "skew", f"must be a fraction from 0 to 10 (0.05 = the slowest rank computes 5% longer), got {o.skew}"
        )
    if o.mode not in ("train", "inference"):
        raise InputError("mode", f"must be train or inference, got {o.mode!r}")


def _recipe(o: Options, grad_dtype: str) -> Recipe:
    """The recipe with its communicated gradient in `grad_dtype`. Megatron keeps its fp32 main grads when the
    gradients are reduced in bf16: they become an optimizer-side state, sharded with it (Megatron-LM docs,
    distributed optimizer: 20 bytes per parameter, or 4 + 16/d)."""
    base = RECIPES[o.recipe]
    if base.name == "megatron" and DTYPE_BYTES[grad_dtype] < 4:
        main = next(c for c in base.components if c.communicated)
        kept = replace(main, group="optimizer", shard_from=1, communicated=False)
        reduced = replace(
            main, bytes_per_param=float(DTYPE_BYTES[grad_dtype]), label=f"{grad_dtype} grads (communicated)"
        )
        components = (*tuple(c for c in base.components if not c.communicated), reduced, kept)
        return replace(base, components=components)
    components = tuple(
        replace(c, bytes_per_param=float(DTYPE_BYTES[grad_dtype]), label=f"{grad_dtype} grads (communicated)")
        if c.communicated
        else c
        for c in base.components
    )
    return replace(base, components=components)


def _units(counts: ParamCount, spec: ModelSpec, seq_len: int) -> tuple[Unit, ...]:
    """The pieces the step timeline schedules, in forward order, each with its share of a pass's FLOPs:
    embedding, transformer blocks and output head; a model given only as a parameter count is cut into
    blocks of its largest layer (one block if that is not given)."""
    a = spec.architecture
    if a is None or not counts.blocks:
        n = math.ceil(counts.total / spec.largest_layer_params) if spec.largest_layer_params else 1
        return tuple(Unit(counts.total / n, 1 / n) for _ in range(n))
    attention_per_layer = attention_flops(a, seq_len) / a.layers
    head_matmul = counts.embedding if a.tied_embeddings else counts.lm_head
    flops = [0.0] + [2 * b.active + attention_per_layer for b in counts.blocks] + [2 * head_matmul]
    params = [counts.embedding + a.learned_positions * a.hidden]
    params += [b.params for b in counts.blocks]
    params += [counts.total - sum(params)]  # output head and final norm
    total = sum(flops)
    return tuple(Unit(p, f / total) for p, f in zip(params, flops, strict=True))


@dataclass(frozen=True)
class _Training:
    """What the options come to before any costing: the resolved options, counts, recipe and batching."""

    o: Options
    seq_len: int
    counts: ParamCount
    recipe: Recipe
    grad_dtype: str
    grad_bytes: float
    weight_bytes: float
    accumulation: int
    micro_batch: int
    warnings: tuple[str, ...]


def _resolve(model: ModelSpec, topology: TopologySpec, options: Options) -> tuple[Options, int, ParamCount]:
    """Validated options with the sequence length filled in (4096, or the model's learned-position limit)."""
    a = model.architecture
    default_seq = (
        min(DEFAULT_SEQ_LEN, a.learned_positions) if a is not None and a.learned_positions else DEFAULT_SEQ_LEN
    )
    seq_len = options.seq_len or default_seq
    o = replace(options, seq_len=seq_len)
    _validate(o)
    check_dp(topology, o.dp)
    if a is not None and a.learned_positions and seq_len > a.learned_positions:
        raise InputError(
            "seq_len", f"{model.name} has {a.learned_positions} learned positions; use <= {a.learned_positions}"
        )
    return o, seq_len, count_params(model)


def _training(o: Options, seq_len: int, counts: ParamCount) -> _Training:
    grad_dtype = o.grad_dtype or RECIPE_GRAD_DTYPE[o.recipe]
    recipe = _recipe(o, grad_dtype)
    grad_bytes = float(DTYPE_BYTES[grad_dtype])
    weight_bytes = next(c.bytes_per_param for c in recipe.components if c.group == "params")
    accumulation, micro_batch, warnings = _batching(o)
    buckets = counts.total * grad_bytes / o.bucket_bytes
    if buckets > MAX_BUCKETS:
        raise InputError(
            "bucket_size",
            f"{o.bucket_bytes:.3g}-byte buckets cut the {counts.total * grad_bytes / 1e9:,.1f} GB gradient into more "
            f"than {MAX_BUCKETS:,} calls per pass; use at least {counts.total * grad_bytes / MAX_BUCKETS:,.0f} bytes",
        )
    return _Training(
        o, seq_len, counts, recipe, grad_dtype, grad_bytes, weight_bytes, accumulation, micro_batch, tuple(warnings)
    )


def _stages(model: ModelSpec, topology: TopologySpec, t: _Training, recompute: str) -> tuple[StageMemory, ...]:
    """Memory per GPU at every ZeRO stage with one recomputation choice (memory.py, activations.py)."""
    o, counts, a = t.o, t.counts, model.architecture
    if a is None and model.largest_layer_params is None:
        raise InputError(
            "largest_layer_params",
            "required with only a parameter count: ZeRO-3 gathers one block at a time, and without its size the "
            "whole model would be gathered; give the largest transformer block (12 h^2 for a GPT layer of width h)",
        )
    largest_layer = model.largest_layer_params or counts.largest_module
    # One ZeRO-3 unit for buffers and timeline: the largest piece the timeline gathers (_units: embedding,
    # each block, output head), unless the user gave its size.
    gather_unit = model.largest_layer_params or max(u.params for u in _units(counts, model, t.seq_len))
    if a is not None:
        act = activation_memory(a, t.seq_len, t.micro_batch, recompute, o.flash_attention).total
        per_sample = act / t.micro_batch
    else:
        act, per_sample = 0.0, 0.0
    rows = []
    for stage in range(4):
        states = model_states(counts.total, o.dp, stage, t.recipe, o.optimizer, o.offload)
        buf = buffers(stage, t.recipe, t.grad_bytes, counts.total, o.bucket_bytes, gather_unit, largest_layer)
        if o.keep_full_grads and stage >= 2 and t.accumulation > 1:
            buf = replace(buf, kept_grads=t.grad_bytes * counts.total * (1 - 1 / o.dp))
        rows.append(stage_memory(stage, states, act, per_sample, buf, topology.gpu.hbm))
    return tuple(rows)


def _memory(
    model: ModelSpec, topology: TopologySpec, t: _Training, rows: tuple[StageMemory, ...], rc: str, chosen: bool = False
) -> Memory:
    note = "" if model.architecture else "no architecture given: activations not counted"
    if chosen:
        note = f"recompute={rc} chosen (auto): the least recomputation with which a stage fits, as estimate chooses"
    return Memory(stages=rows, hbm=topology.gpu.hbm, recipe=t.recipe.title, recompute=rc, activations_note=note)


def memory_by_stage(model: ModelSpec, topology: TopologySpec, options: Options) -> Memory:
    """The stage table alone (`dpcost memory`): no step is timed. Recomputation is `options.recompute`, or (auto,
    as `estimate` defaults) the least that lets some stage fit, full recomputation if none does."""
    o, seq_len, counts = _resolve(model, topology, options)
    t = _training(o, seq_len, counts)
    if o.recompute is not None or model.architecture is None:
        recompute = o.recompute or "none"
        return _memory(model, topology, t, _stages(model, topology, t, recompute), recompute)
    for recompute in RECOMPUTE:
        rows = _stages(model, topology, t, recompute)
        if any(r.fits for r in rows):
            break
    return _memory(model, topology, t, rows, recompute, chosen=True)


def estimate(model: ModelSpec, topology: TopologySpec, options: Options) -> Report:
    """Cost one plan: `options.dp` replicas of `model` on `topology`."""
    o, seq_len, counts = _resolve(model, topology, options)
    if o.mode == "inference":
        return _inference(model, topology, o, counts, seq_len)
    _check_forced(o, topology)
    t = _training(o, seq_len, counts)
    a = model.architecture
    grad_dtype, grad_bytes, weight_bytes = t.grad_dtype, t.grad_bytes, t.weight_bytes
    accumulation, micro_batch, warnings = t.accumulation, t.micro_batch, list(t.warnings)
    if note := place(topology, o.dp).partial_note:
        warnings.append(note)
    global_batch = micro_batch * accumulation * o.dp

    def stages_with(recompute: str) -> tuple[StageMemory, ...]:
        return _stages(model, topology, t, recompute)

    cache: dict[tuple[str, float], Call] = {}

    def call(op: str, size: float) -> Call:
        key = (op, size)
        if key not in cache:
            best = fastest(topology, op, o.dp, size, o.algorithm)
            cache[key] = Call(best.seconds, best.label)
        return cache[key]

    units = _units(counts, model, seq_len)

    def timeline(stage: int, recompute: str) -> tuple[StepTime, float, float, FlopsPerToken]:
        """The step timeline, forward and backward of one micro-batch (FLOPs at the --mfu rate), and the FLOPs."""
        flops = flops_per_token(counts, a, seq_len, recompute, o.flash_attention)
        tokens_mb = micro_batch * seq_len
        rate = topology.gpu.bf16_dense * o.mfu
        t_fwd = flops.forward * tokens_mb / rate
        t_bwd = (flops.backward + flops.recompute) * tokens_mb / rate
        plan = StepPlan(
            stage=stage,
            accumulation=accumulation,
            forward=t_fwd * (1.0 + o.skew),
            backward=t_bwd * (1.0 + o.skew),
            units=units,
            grad_bytes=grad_bytes,
            weight_bytes=weight_bytes,
            bucket_bytes=o.bucket_bytes,
            keep_full_grads=o.keep_full_grads,
            overlap_param_gather=o.recipe == "megatron",
        )
        return step_time(plan, call), t_fwd, t_bwd, flops

    # ---- the plan: the fastest (stage, recomputation) that fits, unless the user fixed them
    allowed = [st for st in range(4) if o.offload == "none" or offload_applies(o.offload, st)]
    allowed = [st for st in allowed if _runs_forced(o, topology, st)]
    stage_choices = [o.zero] if o.zero is not None else allowed
    recompute_choices = [o.recompute] if o.recompute is not None else (list(RECOMPUTE) if a else ["none"])
    by_recompute = {rc: stages_with(rc) for rc in recompute_choices}
    fitting = [(st, rc) for st in stage_choices for rc in recompute_choices if by_recompute[rc][st].fits]
    if fitting:
        timed = {plan: timeline(*plan) for plan in fitting}
        stage, recompute = min(fitting, key=lambda p: (timed[p][0].step, p[0], RECOMPUTE.index(p[1])))
        steps, t_fwd, t_bwd, flops = timed[(stage, recompute)]
    else:
        stage = o.zero if o.zero is not None else stage_choices[-1]
        recompute = o.recompute or recompute_choices[-1]
        steps, t_fwd, t_bwd, flops = timeline(stage, recompute)
    rows = by_recompute[recompute]
    tokens_mb = micro_batch * seq_len
    rows_comm = tuple(
        CollectiveRow(
            op=t.op,
            purpose=t.purpose,
            message_bytes=t.message_bytes,
            bytes_sent_per_rank=bus_factor(t.op, o.dp) * t.message_bytes,
            occurrences=t.occurrences,
            calls=t.calls,
            seconds=t.seconds,
            algorithms=t.algorithms,
            single_call=collective(topology, t.op, o.dp, t.message_bytes, o.algorithm),
        )
        for t in steps.traffic
    )
    gradient_bytes = counts.total * grad_bytes
    comm = Communication(
        gradient_bytes=gradient_bytes,
        primitives="AllReduce" if stage == 0 else "ReduceScatter + AllGather",
        collectives=rows_comm,
        bytes_sent_per_rank=sum(r.bytes_sent_per_rank * r.occurrences for r in rows_comm),
        seconds_per_step=steps.comm,
        frequency=_frequency(stage, accumulation, o.keep_full_grads),
    )
    compute_alone = accumulation * (t_fwd + t_bwd)
    step = steps.step
    tokens = global_batch * seq_len
    window = sum(p.compute * p.repeats for p in steps.phases if p.comm > 0)
    timing = Timing(
        forward=t_fwd,
        backward=t_bwd,
        compute=steps.compute,
        comm=steps.comm,
        overlapped=steps.ideal,
        bucketed=steps.step,
        serial=steps.serial,
        step=step,
        exposed_comm=steps.exposed,
        bound="communication" if steps.comm > window else "compute",
        tokens_per_second=tokens / step,
        mfu=flops.model * tokens_mb * accumulation / (step * topology.gpu.bf16_dense),
        scaling_efficiency=compute_alone / step,
        straggler_seconds=steps.compute - compute_alone,
        step_detail=steps,
    )
    memory = _memory(model, topology, t, rows, recompute)
    setup = _setup(
        model,
        topology,
        o,
        counts,
        seq_len,
        mode="train",
        zero_stage=stage,
        zero_chosen=o.zero is None,
        grad_dtype=grad_dtype,
        micro_batch=micro_batch,
        accumulation=accumulation,
        global_batch=global_batch,
        tokens_per_step=tokens,
        recompute=recompute,
        recompute_chosen=o.recompute is None,
        recipe=o.recipe,
        optimizer=o.optimizer,
        offload=o.offload,
        bucket_bytes=o.bucket_bytes,
        skew=o.skew,
        keep_full_grads=o.keep_full_grads,
    )
    full: StageMemory | None = None
    if a is not None and recompute != "full" and not rows[stage].fits:
        full = (by_recompute.get("full") or stages_with("full"))[stage]
    warnings += _training_warnings(setup, counts, model, rows, timing, comm, topology, o, full)
    return Report(setup, comm, memory, timing, None, tuple(warnings))


def _setup(
    model: ModelSpec, topology: TopologySpec, o: Options, counts: ParamCount, seq_len: int, **plan: Any
) -> Setup:
    """The fields every report shares; `plan` carries the mode's own."""
    return Setup(
        model=model.name,
        model_title=model.title,
        params_total=counts.total,
        params_active=counts.active,
        params_active_excl_embedding=counts.active_excl_embedding,
        params_mtp=counts.mtp,
        topology=topology.name,
        gpu=topology.gpu.name,
        dp=o.dp,
        nodes=math.ceil(o.dp / topology.domain_size),
        gpus_per_node=min(o.dp, topology.domain_size),
        seq_len=seq_len,
        flash_attention=o.flash_attention,
        mfu=o.mfu,
        **plan,
    )


STAGE_OPS = {0: ("all_reduce",), 1: ("reduce_scatter", "all_gather"), 2: ("reduce_scatter", "all_gather")}
STAGE_OPS[3] = STAGE_OPS[1]


def _runs_forced(o: Options, topology: TopologySpec, stage: int) -> bool:
    """A forced --algorithm exists for every collective this stage issues (Tree is all-reduce only, as in NCCL)."""
    p = place(topology, o.dp)
    return o.algorithm is None or all(o.algorithm in forcible(op, p) for op in STAGE_OPS[stage])


def _check_forced(o: Options, topology: TopologySpec) -> None:
    """Refuse an --algorithm that no plan could run, or that the fixed --zero stage's collectives lack."""
    if o.algorithm is None or o.dp == 1:
        return
    p = place(topology, o.dp)
    stages = [o.zero] if o.zero is not None else [0, 1, 2, 3]
    if any(_runs_forced(o, topology, st) for st in stages):
        return
    op = next(op for st in stages for op in STAGE_OPS[st] if o.algorithm not in forcible(op, p))
    raise InputError(
        "algorithm",
        f"{o.algorithm} is not available for {op} on {o.dp} GPUs of {topology.name} "
        f"({p.nodes} NVLink domains); available: {', '.join(forcible(op, p))}",
    )


def _batching(o: Options) -> tuple[int, int, list[str]]:
    """(accumulation, micro-batch, warnings): B = b x a x D (the seed's global batch)."""
    warnings: list[str] = []
    if o.global_batch is None:
        return o.accumulation or 1, o.micro_batch, warnings
    per_step = o.micro_batch * o.dp
    if o.accumulation is not None:
        if o.micro_batch * o.accumulation * o.dp != o.global_batch:
            raise InputError(
                "global_batch",
                f"{o.global_batch} != micro-batch {o.micro_batch} x accumulation {o.accumulation} x DP {o.dp}; "
                "give --global-batch or --accum, not both",
            )
        return o.accumulation, o.micro_batch, warnings
    if o.global_batch % per_step == 0:
        return o.global_batch // per_step, o.micro_batch, warnings
    if o.global_batch % o.dp == 0:
        per_rank = o.global_batch // o.dp
        micro = max(d for d in range(1, min(per_rank, o.micro_batch) + 1) if per_rank % d == 0)
        warnings.append(
            f"global batch {o.global_batch} over DP {o.dp} is {per_rank} sequences per GPU: micro-batch {micro} "
            f"x {per_rank // micro} accumulation steps instead of micro-batch {o.micro_batch}"
        )
        return per_rank // micro, micro, warnings
    raise InputError(
        "global_batch",
        f"{o.global_batch} sequences cannot be split evenly over DP {o.dp}; use a multiple of {o.dp}",
    )


def _frequency(stage: int, accumulation: int, keep_full: bool) -> str:
    if accumulation == 1:
        return "every step (1 micro-batch)"
    if stage == 3 and keep_full:
        return (
            f"gradients once per step, after the last of {accumulation} micro-batches; parameters gathered "
            f"every micro-batch ({accumulation} per step)"
        )
    if stage <= 1 or keep_full:
        return f"once per step, after the last of {accumulation} micro-batches"
    return f"every micro-batch ({accumulation} per step)"


def _gb(x: float) -> str:
    return f"{x / 1e9:,.1f} GB"


def _training_warnings(
    setup: Setup,
    counts: ParamCount,
    model: ModelSpec,
    rows: tuple[StageMemory, ...],
    timing: Timing,
    comm: Communication,
    topology: TopologySpec,
    o: Options,
    full_recompute: StageMemory | None,
) -> list[str]:
    out: list[str] = []
    hbm = topology.gpu.hbm
    chosen = rows[setup.zero_stage]
    first_fit = next((r.stage for r in rows if r.fits), None)
    if not rows[0].fits:
        out.append(
            f"does not fit without sharding: ZeRO-0 (plain DDP) needs {_gb(rows[0].total)} per GPU "
            f"({_gb(rows[0].model_states)} of model states alone), the {topology.gpu.name} has {_gb(hbm)}"
            + (f"; ZeRO-{first_fit} is the first stage that fits" if first_fit is not None else "")
        )
    if not chosen.fits:
        largest = chosen.largest_micro_batch(setup.micro_batch)
        if full_recompute is not None and full_recompute.fits:
            hint = f"; with --recompute full it needs {_gb(full_recompute.total)} and fits"
        elif largest >= 1:
            hint = f"; micro-batch {largest} fits"
        elif first_fit is not None and first_fit > setup.zero_stage:
            hint = f"; ZeRO-{first_fit} fits (--zero {first_fit})"
        else:
            hint = "; no micro-batch fits: shard the model further (TP/PP/EP)"
        out.append(
            f"out of memory: ZeRO-{setup.zero_stage} needs {_gb(chosen.total)} per GPU, more than the "
            f"{_gb(hbm)} of HBM{hint}"
        )
    a = model.architecture
    if a is not None and a.moe is not None:
        out.append(
            f"MoE under pure DP: all {a.moe.experts} routed experts' states live on every replica "
            "(no expert parallelism here), which is why only ZeRO sharding can make it fit; ZeRO-3 gathers a "
            f"whole MoE block ({counts.largest_block / 1e9:.1f}B parameters) at a time"
        )
    if timing.bound == "communication":
        out.append(
            f"communication-bound: {timing.comm:.3g} s of collectives per step cannot hide behind "
            f"{timing.compute:.3g} s of compute; the step waits {timing.exposed_comm:.3g} s on the network"
        )
    elif timing.exposed_comm > 0.1 * timing.step:
        out.append(
            f"{timing.exposed_comm / timing.step:.0%} of the step is exposed communication "
            f"(the last gradient buckets cannot hide behind the backward pass)"
        )
    if o.global_batch is None and setup.dp > 1:
        out.append(
            f"global batch = micro-batch {setup.micro_batch} x accumulation {setup.accumulation} x DP {setup.dp} "
            f"= {setup.global_batch:,} sequences ({setup.tokens_per_step / 1e6:.3g}M tokens); it grows with DP: "
            "retune learning rate and warmup, or pass --global-batch to hold it"
        )
    if o.skew > 0:
        out.append(
            f"stragglers: the slowest rank computes {o.skew:.0%} longer and every collective waits for it "
            f"({timing.straggler_seconds:.3g} s per step)"
        )
    if o.offload != "none":
        moved = rows[setup.zero_stage].cpu
        out.append(
            f"offload ({o.offload}) keeps {_gb(moved)} per GPU, {_gb(moved * setup.gpus_per_node)} per node, in host "
            "memory; the PCIe traffic and the CPU optimizer step it costs are not in the step time"
        )
    if counts.mtp:
        out.append(
            f"the multi-token-prediction module ({counts.mtp / 1e9:.1f}B parameters) is not counted; "
            "dpcost trains the main model"
        )
    return out


def decode_flops_per_token(counts: ParamCount, a: ModelArchitecture | None, seq_len: int) -> float:
    """FLOPs of one decode step for one sequence: 2 per weight the new token multiplies (active parameters
    without the input lookups, the output projection included even when tied to the embedding) plus its
    attention over the whole context, 2 L H (d_qk + d_v) T (PaLM appendix B, for one query token)."""
    head = counts.embedding if a is not None and a.tied_embeddings else 0.0
    flops = 2.0 * (counts.active_excl_embedding + head)
    if a is not None:
        flops += attention_flops(a, seq_len)  # one new token attends to all T tokens of the context
    return flops


def decode_weight_bytes(counts: ParamCount, a: ModelArchitecture | None, batch: int) -> float:
    """bf16 weight bytes one decode step reads from HBM: every weight but the input lookup tables (a row per
    token; the embedding is read whole only as a tied output head), and of each MoE layer's routed experts the
    expected number that `batch` tokens touch when routed uniformly, E (1 - (1 - k/E)^B)."""
    tied = a is not None and a.tied_embeddings
    weights = 2.0 * (counts.total - counts.positions - (0.0 if tied else counts.embedding))
    if a is None or a.moe is None:
        return weights
    routed = dict(counts.components)["routed experts"]
    untouched = (1 - a.moe.active / a.moe.experts) ** batch
    return weights - 2.0 * routed * untouched


def _inference(model: ModelSpec, topology: TopologySpec, o: Options, counts: ParamCount, seq_len: int) -> Report:
    """Serving: replicas answer independent requests, so DP exchanges no gradients and moves zero bytes.

    Memory per replica = bf16 weights + KV cache (seq_len x batch), split over the fewest GPUs (a power of two,
    as tensor/pipeline degrees are) on which each keeps the runtime allowance too. Decode throughput per replica
    = batch / max(compute time, time to read the weights it touches and the KV cache from HBM) per token step,
    with k GPUs giving k times the bandwidth and FLOP/s (ideal model parallelism, outside this tool)."""
    a = model.architecture
    weights = 2.0 * counts.total
    kv = kv_cache_bytes(a, seq_len, o.batch) if a else 0.0
    hbm = topology.gpu.hbm
    gpus = 1
    while (weights + kv) / gpus * (1 + FRAGMENTATION) + CONTEXT_BYTES > hbm and gpus < 1 << 20:
        gpus *= 2
    per_gpu = (weights + kv) / gpus * (1 + FRAGMENTATION) + CONTEXT_BYTES
    flops = decode_flops_per_token(counts, a, seq_len) * o.batch
    t_compute = flops / (topology.gpu.bf16_dense * o.mfu * gpus)
    t_memory = (decode_weight_bytes(counts, a, o.batch) + kv) / (topology.gpu.hbm_bandwidth * gpus)
    per_replica = o.batch / max(t_compute, t_memory)
    replicas = o.dp // gpus
    inference = Inference(
        weights_bytes=weights,
        kv_cache_bytes=kv,
        overhead_bytes=gpus * per_gpu - weights - kv,
        total_bytes=gpus * per_gpu,
        per_gpu_bytes=per_gpu,
        fits=gpus == 1,
        gpus_per_replica=gpus,
        replicas=replicas,
        tokens_per_second_per_replica=per_replica,
        tokens_per_second=per_replica * replicas,
        bound="memory bandwidth" if t_memory >= t_compute else "compute",
    )
    empty = Communication(0.0, "none", (), 0.0, 0.0, "never: replicas exchange no gradients")
    memory = Memory((), topology.gpu.hbm, "inference (bf16 weights + KV cache)", "none", "")
    setup = _setup(
        model,
        topology,
        o,
        counts,
        seq_len,
        mode="inference",
        zero_stage=0,
        zero_chosen=False,
        grad_dtype="-",
        micro_batch=o.batch,
        accumulation=1,
        global_batch=o.batch * replicas,
        tokens_per_step=o.batch * replicas,  # one decode step: a token per sequence
        recompute="none",
        recompute_chosen=False,
        recipe="-",
        optimizer="-",
        offload="none",
        bucket_bytes=0.0,
        skew=0.0,
        keep_full_grads=False,
    )
    warnings = ["inference: data-parallel replicas serve independent requests and exchange no gradients (0 bytes)"]
    ignored = [
        flag
        for flag, value in (
            ("--zero", o.zero),
            ("--accum", o.accumulation),
            ("--global-batch", o.global_batch),
            ("--recompute", o.recompute),
        )
        if value is not None
    ]
    if o.offload != "none":
        ignored.append("--offload")
    if ignored:
        warnings.append(f"{', '.join(ignored)} apply to training and are ignored in inference mode")
    if gpus > 1:
        warnings.append(
            f"one replica needs {_gb(weights + kv)} of weights and KV cache, more than one {topology.gpu.name} holds "
            f"({_gb(hbm)}): {gpus} GPUs per replica (tensor/pipeline parallelism, outside this tool)"
            + (f", {replicas} replicas on {o.dp} GPUs" if replicas else f"; --dp {o.dp} cannot hold even one replica")
        )
    return Report(setup, empty, memory, None, inference, tuple(warnings))
