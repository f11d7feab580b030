"""The choice of ZeRO stage and recomputation: the fastest plan that fits, unless the user fixed them.

`choose` is the search, a plain function of the candidates, their memory verdicts and their step times; `timeline`
times one candidate (compute at the --mfu rate, collectives as NCCL runs them, the framework's schedule).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from dpcost.engine.availability import forcible
from dpcost.engine.checkpointing import RECOMPUTE
from dpcost.engine.collectives import fastest
from dpcost.engine.compute import FlopsPerToken, flops_per_token
from dpcost.engine.dp_schedule import BACKWARD, FORWARD, FORWARD_BACKWARD, collective_ops, dp_schedule
from dpcost.engine.memo import per_object
from dpcost.engine.memory import offload_applies, optimizer_state_bytes
from dpcost.engine.muon import newton_schulz_seconds, orthogonalization_flops
from dpcost.engine.nccl_channels import call_channels, compute_slowdown
from dpcost.engine.ops import (
    MicroBatchCompute,
    Op,
    bf16_optimizer_grad_update,
    bf16_optimizer_step_seconds_on,
    main_grad_accumulation,
    matmul_operands,
    micro_batch_compute,
    optimizer_seconds_on,
)
from dpcost.engine.placement import Placement, place, place_group
from dpcost.engine.prepare import DTYPE_BYTES, Prepared, slowest_gpu_share
from dpcost.engine.rates import matmul_efficiency, rates_for
from dpcost.engine.step import Call, StepPlan, StepTime, slowdown_of, step_time
from dpcost.errors import InputError
from dpcost.frozen import frozen
from dpcost.options import DEFAULT_MFU, Options
from dpcost.specs import ModelArchitecture, ModelSpec, TopologySpec

__all__ = [
    "MicroBatchTime",
    "Timed",
    "call_time",
    "candidates",
    "check_forced",
    "choose",
    "dp_group_for",
    "least_step",
    "least_step_beside",
    "micro_batch_time",
    "recompute_policies",
    "stage_ops",
    "then_across",
    "timeline",
]


def stage_ops(p: Prepared, stage: int) -> tuple[str, ...]:
    """The collectives a stage issues under the framework (dp_schedule.py): DeepSpeed all-reduces its buckets at
    stages 1-2."""
    return collective_ops(
        dp_schedule(stage, 1, per_unit=p.per_unit, overlap_param_gather=p.overlap_param_gather, bucket_op=p.bucket_op)
    )


@frozen
class Timed:
    """One candidate plan, timed: its step, one micro-batch's forward and backward, and its FLOPs per token."""

    stage: int
    recompute: str
    steps: StepTime
    forward: float
    backward: float
    flops: FlopsPerToken
    compute: MicroBatchCompute | None = None  # the per-op model's micro-batch (None: a model without architecture)
    optimizer: float = 0.0  # seconds of the optimizer step, once per step


def runs_forced(p: Prepared, topology: TopologySpec, stage: int) -> bool:
    """A forced --algorithm exists for every collective this stage issues (Tree is all-reduce only, as in NCCL)."""
    o = p.o
    algorithm = o.communication.algorithm
    if algorithm is None or o.dp == 1:
        return True  # one rank communicates nothing: there is no call to force
    group = place(topology, o.dp)
    return all(algorithm in forcible(op, group) for op in stage_ops(p, stage))


def check_forced(p: Prepared, topology: TopologySpec) -> None:
    """Refuse an --algorithm that no plan could run, or that the fixed --zero stage's collectives lack."""
    o = p.o
    algorithm = o.communication.algorithm
    if algorithm is None or o.dp == 1:
        return
    group = place(topology, o.dp)
    stages = [o.plan.zero] if o.plan.zero is not None else [0, 1, 2, 3]
    if any(runs_forced(p, topology, st) for st in stages):
        return
    op = next(op for st in stages for op in stage_ops(p, st) if algorithm not in forcible(op, group))
    raise InputError(
        "algorithm",
        f"{algorithm} is not available for {op} on {o.dp} GPUs of {topology.name} "
        f"({group.nodes} NVLink domain{'' if group.nodes == 1 else 's'}); available: {', '.join(forcible(op, group))}",
    )


def recompute_policies(p: Prepared) -> tuple[str, ...]:
    """The checkpointing policies the framework runs (frameworks.py), or all of them, least recomputation first."""
    policies = p.framework.recompute if p.framework else RECOMPUTE
    return tuple(rc for rc in RECOMPUTE if rc in policies)


def candidates(p: Prepared, topology: TopologySpec, has_architecture: bool) -> tuple[list[int], list[str]]:
    """The stages and recomputations to try: the user's, or every one the framework, the offload and the forced
    algorithm allow. No stage left is bad input, named by the flag that ruled the last ones out."""
    o = p.o
    offload = o.precision.offload
    by_framework = list(p.stages())
    by_offload = [st for st in by_framework if offload == "none" or offload_applies(offload, st)]
    allowed = [st for st in by_offload if runs_forced(p, topology, st)]
    if o.plan.shard_group is not None:  # hybrid sharding shards within its groups: ZeRO-0 has nothing to shard
        allowed = [st for st in allowed if st >= 1]
        if o.plan.zero is None and not allowed:
            runs = f"--framework {p.framework.name}" if p.framework else "this plan"
            raise InputError(
                "--shard-group", f"needs a ZeRO stage that shards (1, 2 or 3); {runs} runs ZeRO {_stages(by_offload)}"
            )
    if o.plan.zero is None and not allowed:
        runs = f"--framework {p.framework.name} runs ZeRO {_stages(by_framework)}" if p.framework else ""
        if not by_offload:
            need = "ZeRO-3" if offload == "params" else "ZeRO 1-3"
            raise InputError("--offload", f"{offload} offload needs {need} (DeepSpeed's rule); {runs}")
        ops = sorted({op for st in by_offload for op in stage_ops(p, st)})
        raise InputError(
            "--algorithm",
            f"{o.communication.algorithm} cannot run {' or '.join(ops)}, which ZeRO {_stages(by_offload)}"
            f"{' with --offload ' + offload if offload != 'none' else ''} needs; force another algorithm or leave "
            "the choice to NCCL",
        )
    stages: list[int] = [o.plan.zero] if o.plan.zero is not None else allowed
    recomputes: list[str] = list(recompute_policies(p)) if has_architecture else ["none"]
    if o.plan.recompute is not None:
        recomputes = [o.plan.recompute]
    return stages, recomputes


def _stages(stages: Sequence[int]) -> str:
    return ", ".join(str(st) for st in stages)


def sharding_groups(topology: TopologySpec, o: Options) -> tuple[Placement, Placement | None]:
    """The group ZeRO shards over, and under hybrid sharding the replica group: the shard group is N consecutive
    ranks (the inner dimension of FSDP2's (replicate, shard) DeviceMesh, and of FSDP's HYBRID_SHARD process
    groups), the replica group one rank of each, every N-th (torch/distributed/fsdp/_init_utils.py
    _init_intra_and_inter_node_groups)."""
    n = o.plan.shard_group
    if n is None or n >= o.dp:
        return place(topology, o.dp), None
    return place(topology, n), place_group(topology, list(range(0, o.dp, n)))


def dp_group_for(op: str, everyone: Placement, shard: Placement) -> Placement:
    """The group a data-parallel collective runs over: an all-reduce (ZeRO-0, nothing sharded) spans all of DP;
    gathers and reduce-scatters stay in the shard group (all of DP without --shard-group; sharding_groups)."""
    return everyone if op == "all_reduce" else shard


def call_time(topology: TopologySpec, o: Options) -> Callable[[str, float], Call]:
    """One NCCL call on the DP group, as NCCL runs it (or forced), kept per topology by (op, bytes) and what else
    its price reads (_dp_calls). Under hybrid sharding a gradient reduce-scatter runs in the shard group and its
    shard (1/N of it) is then all-reduced across the replicas, on the same stream (FSDP's HYBRID_SHARD
    post-backward: reduce-scatter, then all-reduce); gathers stay in the shard group; an all-reduce (ZeRO-0,
    nothing sharded) spans all of DP."""
    shard, replicas = sharding_groups(topology, o)
    everyone = place(topology, o.dp)
    c = o.communication
    known = _dp_calls(topology)
    plan_key = (o.dp, o.plan.shard_group, o.compute.overlap_slowdown, c.algorithm, c.protocol)

    def one(op: str, group: Placement, size: float) -> Call:
        return priced_call(topology, group, op, size, o.compute.overlap_slowdown, c.algorithm, c.protocol)

    def call(op: str, size: float) -> Call:
        key = (*plan_key, op, size)
        found = known.get(key)
        if found is None:
            best = one(op, dp_group_for(op, everyone, shard), size)
            if replicas is not None and op == "reduce_scatter":
                best = then_across(best, one("all_reduce", replicas, size / shard.ranks), op)
            if len(known) >= _DP_CALLS_PER_TOPOLOGY:
                known.clear()
            found = known[key] = best
        return found

    return call


_DP_CALLS_PER_TOPOLOGY = 1 << 16


def then_across(within: Call, across: Call, op: str) -> Call:
    """Two calls one after the other on one stream, as one: a reduce-scatter within a group, then its shard's
    all-reduce across the groups (hybrid sharding; Megatron's distributed-optimizer instances)."""
    label, slowdown = f"{within.algorithm} + {across.algorithm}", slowdown_of([(within, 1), (across, 1)])
    parts = (replace(within, op=op), replace(across, op="all_reduce"))
    return Call(within.seconds + across.seconds, label, slowdown, parts)


@per_object
def _dp_calls(topology: TopologySpec) -> dict[tuple[object, ...], Call]:
    """The DP calls priced on one topology, by the plan's groups (DP, --shard-group), --overlap-slowdown, a forced
    algorithm or protocol, the op and the bytes (memo.py): the plans of a batch, a sweep or a search issue the
    same calls."""
    return {}


def priced_call(
    topology: TopologySpec,
    group: Placement,
    op: str,
    size: float,
    slowdown: float | None = None,
    algorithm: str | None = None,
    protocol: str | None = None,
) -> Call:
    """One call as NCCL runs it (collectives.fastest, or forced), and how much slower compute runs beside it: on the
    SMs its channels leave (nccl_channels.compute_slowdown), or `slowdown` (--overlap-slowdown) for every call."""
    best = fastest(topology, op, group, size, algorithm, protocol)
    ctas = call_channels(topology, group, best.algorithm, best.protocol, size)
    return Call(best.seconds, best.label, compute_slowdown(topology.gpu, ctas, slowdown))


@frozen
class MicroBatchTime:
    """One micro-batch's forward and backward seconds under a recomputation policy, and what they come from."""

    flops: FlopsPerToken
    forward: float
    backward: float
    compute: MicroBatchCompute | None  # the per-op model's (None: every FLOP at the --mfu rate)


def grad_accumulation_add(p: Prepared) -> Op | None:
    """The add of each micro-batch's weight gradients into an accumulator of their own, where the framework runs one:
    Megatron without gradient-accumulation fusion (--no-gradient-accumulation-fusion) into its main gradients
    (ops.main_grad_accumulation), DeepSpeed's BF16_Optimizer into its fp32 buffer (ops.bf16_optimizer_grad_update).
    The other frameworks' adds under accumulation (AccumulateGrad's) are not priced (docs/frameworks.md)."""
    if p.recipe.bf16_optimizer:
        return bf16_optimizer_grad_update(p.counts.total)
    if p.o.compute.grad_accumulation_fusion or p.framework is None or p.framework.name != "megatron":
        return None
    return main_grad_accumulation(p.counts.total, p.grad_bytes)


def micro_batch_time(model: ModelSpec, topology: TopologySpec, p: Prepared, recompute: str) -> MicroBatchTime:
    """Forward and backward of a micro-batch at the --mfu rate (compute.py), or op by op (--compute-model ops,
    ops.py)."""
    o = p.o

    def flops_of() -> FlopsPerToken:
        modules = frozenset(o.plan.recompute_modules)
        return flops_per_token(p.counts, model.architecture, p.seq_len, recompute, o.compute.flash_attention,
                               o.plan.recompute_layers, modules, o.plan.recompute_block)  # fmt: skip

    tokens = p.micro_batch * p.seq_len
    gpu = topology.gpu
    peak = gpu.peak(o.compute.compute_dtype)
    a = model.architecture
    if a is None or o.compute.chosen_model == "flops":  # every FLOP at one efficiency
        flops = flops_of()
        rate = peak * (o.compute.mfu or DEFAULT_MFU)
        return MicroBatchTime(
            flops, flops.forward * tokens / rate, (flops.backward + flops.recompute) * tokens / rate, None
        )
    gemm_bytes, cast = matmul_operands(gpu.arch, o.compute.compute_dtype)
    moe_layers = p.counts.moe_layers
    attention = p.attention_kernel
    modules = frozenset(o.plan.recompute_modules)
    share = matmul_efficiency(gpu, o.compute.compute_dtype, o.compute.mfu)
    every, block, flash, dtype = (
        o.plan.recompute_layers,
        o.plan.recompute_block,
        o.compute.flash_attention,
        o.compute.compute_dtype,
    )
    bf16_layers, autocast, added = o.compute.bf16_layers, p.recipe.autocast, grad_accumulation_add(p)
    fused_mlp, fp8_head = o.compute.fused_grouped_mlp, o.compute.fp8_output_proj
    key = (moe_layers, tokens, p.seq_len, p.kernels, p.loss_impl, gpu, peak, attention, recompute, modules, every,
           block, share, gemm_bytes, flash, dtype, cast, o.compute.mfu, bf16_layers, autocast, added, fused_mlp,
           fp8_head)  # fmt: skip
    known = _compute_of(a)
    found = known.get(key)
    if found is None:  # the key holds every input of flops_per_token but the architecture's counts
        compute = micro_batch_compute(
            a, list(moe_layers), tokens, p.seq_len, p.kernels, p.loss_impl, rates_for(gpu), peak, gpu.bf16_dense,
            gpu.hbm_bandwidth, attention, recompute, modules, every, share, gemm_bytes, flash, (gpu.arch, dtype),
            cast, o.compute.mfu, bf16_layers, autocast, added, fused_mlp, fp8_head, block,
        )  # fmt: skip
        found = known[key] = MicroBatchTime(flops_of(), compute.forward, compute.backward, compute)
    return found


def least_step(topology: TopologySpec, p: Prepared, micro: MicroBatchTime) -> float:
    """A lower bound on the step: its micro-batches' compute, at the --skew the timeline adds, run at the slowest
    GPU's rate. step._breakdown charges every phase at least its compute x s / (1 - s) beyond it, s the rate the
    slowest GPU loses (slowest_gpu_loss): all of it where compute paces the phase, and where the calls do, what no
    longer fits under them after the phase's exposed wait. Its other terms (exposed calls, slowdown, jitter) are at
    least 0."""
    compute = p.accumulation * (micro.forward + micro.backward) * (1.0 + p.o.compute.skew)
    return compute / (1.0 - slowest_gpu_loss(topology, p, micro))


def least_step_beside(known: Timed, micro: MicroBatchTime, loss: float) -> float:
    """A lower bound on the step of another recomputation at `known`'s ZeRO stage, from `known`'s phases.
    step._breakdown charges every phase at least its duration, which is at least its calls' seconds (one stream
    serves them in order: step.gather_reduce_runs, drain), and at least its compute / (1 - loss) (least_step's
    reasoning, phase by phase) plus what the calls beside it slow it by. The stage issues the same calls whatever
    the recomputation; its compute scales phase by phase with the policy's forward and backward (`micro`). The
    wait for the slowest rank (>= 0) is left out."""
    forward, backward = micro.forward / known.forward, micro.backward / known.backward
    scale = {FORWARD: forward, BACKWARD: backward,
             FORWARD_BACKWARD: (micro.forward + micro.backward) / (known.forward + known.backward)}  # fmt: skip
    kinds = {stretch.name: stretch.compute for stretch in known.steps.schedule}
    bound = 0.0
    for phase in known.steps.phases:
        compute = phase.compute * scale.get(kinds[phase.name], 1.0)
        beside = min(compute, phase.comm) if phase.overlapped and phase.comm > 0 else 0.0
        paced = compute / (1.0 - loss) + phase.slowdown * beside
        bound += (paced if paced > phase.comm else phase.comm) * phase.repeats
    return bound


def slowest_gpu_loss(topology: TopologySpec, p: Prepared, micro: MicroBatchTime) -> float:
    """The share of its rate the slowest of the plan's GPUs loses (prepare.slowest_gpu_share), where compute is
    priced op by op; 0 at one --mfu rate."""
    return slowest_gpu_share(topology.gpu, p.o.compute, p.o.dp) if micro.compute is not None else 0.0


def timeline(
    model: ModelSpec,
    topology: TopologySpec,
    p: Prepared,
    stage: int,
    recompute: str,
    call: Callable[[str, float], Call],
    micro: MicroBatchTime | None = None,
) -> Timed:
    """The step of one plan: a micro-batch's forward and backward (micro_batch_time, or `micro` where the caller
    has it) with the optimizer step, stragglers included, scheduled with the collectives the stage issues
    (step.py)."""
    o = p.o
    micro = micro or micro_batch_time(model, topology, p, recompute)
    flops, forward, backward, compute = micro.flops, micro.forward, micro.backward, micro.compute
    optimizer = optimizer_seconds(model, topology, p, stage) if compute is not None else 0.0
    plan = StepPlan(
        stage=stage,
        accumulation=p.accumulation,
        forward=forward * (1.0 + o.compute.skew),
        backward=backward * (1.0 + o.compute.skew),
        units=p.pieces(model),
        grad_bytes=p.grad_bytes,
        weight_bytes=p.weight_bytes,
        unconverted_weight_bytes=p.unconverted_weight_bytes,
        bucket_bytes=p.bucket_bytes,
        keep_full_grads=o.communication.keep_full_grads,
        overlap_param_gather=p.overlap_param_gather,
        first_bucket_bytes=p.first_bucket_bytes,
        per_unit=p.per_unit,
        gather_calls=p.gather_calls,
        bucket_op=p.bucket_op,
        bucket_rule=p.bucket_rule,
        stage3_reduce_bucket_bytes=p.stage3_reduce_bucket_bytes,
        overlap_grad_reduce=p.overlap_grad_reduce(stage),
        ranks=o.dp,
        sync_jitter=o.compute.sync_jitter,
        optimizer=optimizer,
        slowest_gpu=slowest_gpu_loss(topology, p, micro),
        synchronous_fetch=p.synchronous_fetch and stage == 3,
        list_host_seconds=p.list_host_seconds,
        regathers=recompute == "full",
    )
    return Timed(stage, recompute, step_time(plan, call), forward, backward, flops, compute, optimizer)


@per_object
def _compute_of(a: ModelArchitecture) -> dict[tuple[object, ...], MicroBatchTime]:
    """One micro-batch's time op by op and its FLOPs per token, by everything they depend on (memo.py): the plans of
    a batch, a sweep or a search that differ only in DP time the same micro-batch again."""
    return {}


def optimizer_seconds(model: ModelSpec, topology: TopologySpec, p: Prepared, stage: int) -> float:
    """The optimizer step on this GPU's parameters (all of them at stage 0, its 1/DP shard from stage 1), bound
    by HBM bandwidth (ops.optimizer_seconds_on), and Muon's Newton-Schulz iterations of the matrices this GPU
    orthogonalizes (every one at stage 0, its share of the shard group's from stage 1: muon.py); 0 when the
    optimizer runs on the CPU."""
    if offload_applies(p.o.precision.offload, stage):
        return 0.0
    ranks = p.shard_ranks if stage >= 1 else 1
    state = optimizer_state_bytes(p.o.precision.optimizer, p.muon_share(model), p.recipe.muon_momentum_bytes)
    if p.recipe.states_in_weight_dtype:
        state /= 2
    bf16_optimizer = p.recipe.bf16_optimizer and stage == 1  # Adam on views of its fp32 buffer
    read = DTYPE_BYTES["fp32"] if bf16_optimizer else p.grad_bytes
    updates = optimizer_seconds_on(topology.gpu, p.counts.total / ranks, read, p.recipe.name != "bf16", state)
    if bf16_optimizer:  # and its passes over the whole fp32 buffer (every rank's)
        updates += bf16_optimizer_step_seconds_on(topology.gpu, p.counts.total, p.grad_bytes)
    flops = orthogonalized_flops(model, p, stage)
    return updates + newton_schulz_seconds(topology.gpu, flops) if flops else updates


def orthogonalized_flops(model: ModelSpec, p: Prepared, stage: int) -> float:
    """Muon's Newton-Schulz FLOPs on one GPU at the step (muon.orthogonalization_flops): every matrix at ZeRO 0, its
    share of the shard group's from ZeRO 1; none under another optimizer or with the optimizer on the CPU."""
    matrices = p.muon_matrices(model)
    if not matrices or offload_applies(p.o.precision.offload, stage):
        return 0.0
    return orthogonalization_flops(matrices, p.shard_ranks if stage >= 1 else 1)


def choose(
    stages: Sequence[int],
    recomputes: Sequence[str],
    fits: Callable[[int, str], bool],
    time: Callable[[int, str], Timed],
    least: Callable[[int, str], float] | None = None,
) -> Timed:
    """The fastest (stage, recomputation) that fits, ties to the lower stage and the lighter recomputation. If
    none fits: the last stage tried with the most recomputation, so that the report shows the nearest miss.

    `least`: a lower bound on a candidate's step (least_step; least_step_beside once its stage has a timed policy). Once
    a fitting candidate is timed, those whose bound exceeds its step are neither checked for fit nor timed: they cannot
    be chosen."""
    best: Timed | None = None
    best_key: tuple[float, int, int] | None = None
    for st in stages:
        for rc in recomputes:
            # 1e-9: the bound sums the same seconds in another order than the step does
            if best_key is not None and least is not None and least(st, rc) * (1 - 1e-9) > best_key[0]:
                continue
            if not fits(st, rc):
                continue
            timed = time(st, rc)
            key = (timed.steps.step, timed.stage, RECOMPUTE.index(timed.recompute))
            if best_key is None or key < best_key:
                best, best_key = timed, key
    return best if best is not None else time(stages[-1], recomputes[-1])
