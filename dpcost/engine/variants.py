"""Data parallelism that communicates less (issue 22): what each variant sends per step, on which tier, what it
adds to memory and compute, and the step it gives, against the plain plan `estimate` costed.

Volumes per step, for M parameters on N data-parallel GPUs (g per node, R replicas), each from its source:
- plain: the ZeRO stage's collectives as `estimate` schedules them (gradients all-reduced, or reduce-scattered and the
  parameters all-gathered: twice per micro-batch at stage 3).
- ZeRO++ (Wang et al. 2023, arXiv 2306.10209; DeepSpeed's zero_quantized_weights, zero_hpz_partition_size,
  zero_quantized_gradients): qwZ gathers the weights in int8 (half of 16-bit); hpZ keeps a secondary copy of the
  parameters sharded within the node, so the backward's gather never leaves it (its memory: 16-bit weights / g);
  qgZ reduces int4 gradients by a hierarchical all-to-all, inside the node then across (a quarter of 16-bit). The
  paper's statement: stage 3's 3M of cross-node traffic (16-bit) becomes 0.75M, 4x less.
- PowerSGD (Vogels et al. 2019; torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook): each m x n gradient
  matrix as two all-reduces of its rank-r factors, (m + n) r values, fp32; vectors all-reduced whole. Memory: the
  error feedback (one fp32 gradient) and the factors; compute: P = M Q, Q = M^T P and M = P Q^T, 6 m n r FLOPs per
  matrix, plus Gram-Schmidt on P (2 m r^2).
- 1-bit Adam and 0/1 Adam (Tang et al. 2021, Lu et al. 2022; deepspeed/runtime/comm/nccl.py compressed_allreduce):
  after a warm-up at full volume, 1 bit per value and a scale per rank chunk, moved by an all-to-all (workers to
  servers) and an all-gather (servers back); error feedback on both sides (4 M + 4 M / N bytes). 0/1 Adam also skips
  the exchange on local steps: at its steady state one sync every local_step_clipper (16) steps.
- fp8 gradients (Peng et al. 2023, FP8-LM): the gradient collectives at 1 byte per value plus an fp32 scale per block
  of 128 values (`estimate --grad-dtype fp8 --grad-block 128` itself).
- DiLoCo (Douillard et al. 2023, arXiv 2311.08105): R replicas, each a data-parallel group of its own (a site, or
  --shard-group GPUs), run H inner steps alone, then all-reduce their fp32 parameter deltas and take an outer
  Nesterov step: the step is the inner step plus 1/H of the outer all-reduce. Memory: the outer copy of the
  parameters and the outer momentum, fp32, sharded as the inner plan shards. Streaming DiLoCo (Douillard et al.
  2025, arXiv 2501.18512) syncs 1/F of the model every H/F steps, overlapped with the inner steps that follow.
- hybrid sharding: `estimate` itself with --shard-group, a replica per node or per site.

The step of a variant: `estimate`'s compute, and its data-parallel calls hidden as the plain plan's were: the time the
plain plan hid behind compute (its communication less what it left exposed) hides the variant's too; what exceeds
it is exposed. The variant's calls are priced whole by NCCL's model (collectives.py, p2p.py); a variant that runs on
the plain plan's buckets or units (ZeRO++, PowerSGD) keeps what `estimate`'s schedule adds to the whole messages
(each bucket's latency), one that replaces them with its own calls (1-bit and 0/1 Adam's single compressed
all-reduce, DiLoCo's outer all-reduce) has only its own.
What dpcost cannot know is each variant's effect on convergence: the README cites the published findings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field, replace
from typing import TYPE_CHECKING

from dpcost.engine.collectives import CollectiveTime, fastest
from dpcost.engine.memory import Group, StageMemory, with_held
from dpcost.engine.p2p import all_to_all
from dpcost.engine.placement import Placement, place_group
from dpcost.frozen import frozen
from dpcost.specs import ModelArchitecture, ModelSpec, TopologySpec

if TYPE_CHECKING:
    from dpcost.engine.report import EstimateReport
    from dpcost.options import Options

__all__ = [
    "INT4",
    "ONE_BIT",
    "Call",
    "VariantCost",
    "diloco_bytes_per_step",
    "matrix_shapes",
    "one_bit_bytes",
    "powersgd_values",
    "price",
    "zeropp_cross_node_volume",
]

ONE_BIT = 1 / 8  # bytes per value of 1-bit Adam's signs
INT4 = 0.5  # bytes per value of qgZ's gradients
FP8_BLOCK = 128  # values per fp32 scale of fp8 gradients
ZERO_ONE_SYNC_EVERY = 16  # 0/1 Adam's local_step_clipper: its steady-state sync interval (DeepSpeed's default)


@frozen
class Call:
    """One data-parallel call of a variant: op, bytes per rank, its group, how many per step (1/H for DiLoCo)."""

    op: str  # all_reduce, reduce_scatter, all_gather, all_to_all
    size: float
    group: int | tuple[int, ...]  # contiguous ranks, or the members (every g-th rank: across nodes or sites)
    per_step: float = 1.0
    blocking: bool = False  # nothing overlaps it (DiLoCo's outer sync without streaming)


@frozen
class Priced:
    seconds: float  # per step, every call
    blocking_seconds: float  # per step, of the calls nothing overlaps
    tier_bytes: dict[str, float]  # bytes per GPU per step on each tier


@frozen
class VariantCost:
    """One row of the comparison."""

    name: str
    flags: str  # the estimate flags that cost it alone
    comm_seconds: float  # its data-parallel calls per step, scaled to estimate's schedule
    exposed_seconds: float
    step_seconds: float
    memory_bytes: float  # per GPU
    added_memory_bytes: float
    added_compute_seconds: float
    efficiency: float  # compute / step
    note: str
    memory_for: str = ""  # what the added memory holds
    held: StageMemory | None = None  # the stage it runs on with what it adds (memory.with_held); None if nothing
    recompute: str = ""  # the recomputation of the plan it changes, where it holds more
    tier_bytes: dict[str, float] = field(default_factory=dict)  # bytes per GPU per step on each tier
    top_tier: str = ""  # the tier the rows are compared on, and this row's bytes per GPU per step over it:
    top_tier_bytes: float = 0.0  # set for all of them at once by over_slowest


def _time(topology: TopologySpec, call: Call) -> CollectiveTime:
    members = list(call.group) if isinstance(call.group, tuple) else list(range(call.group))
    p: Placement = place_group(topology, members)
    if call.op == "all_to_all":
        return all_to_all(topology, p, call.size)
    return fastest(topology, call.op, p, call.size)


def price(topology: TopologySpec, calls: Sequence[Call]) -> Priced:
    """Each call as NCCL runs it (collectives.fastest; all-to-all as p2p.py), summed per step."""
    seconds = blocking = 0.0
    tiers: dict[str, float] = {}
    for call in calls:
        t = _time(topology, call)
        seconds += t.seconds * call.per_step
        blocking += t.seconds * call.per_step if call.blocking else 0.0
        for tier in t.tiers:
            tiers[tier.tier] = tiers.get(tier.tier, 0.0) + tier.bytes_per_gpu * call.per_step
    return Priced(seconds, blocking, tiers)


def stage_calls(
    params: float, zero: int, grad_bytes: float, weight_bytes: float, dp: int, micro_batches: int
) -> list[Call]:
    """The plain plan's data-parallel calls per step, whole messages: stage 0-1 all-reduce the gradients (stage 1
    then gathers the updated parameters), stage 2 reduce-scatters them and gathers once, stage 3 gathers for every
    micro-batch's forward and backward."""
    if zero == 0:
        return [Call("all_reduce", params * grad_bytes, dp)]
    gathers = 2 * micro_batches if zero == 3 else 1
    reduce = "all_reduce" if zero == 1 else "reduce_scatter"
    return [Call(reduce, params * grad_bytes, dp), Call("all_gather", params * weight_bytes, dp, gathers)]


def zeropp_calls(
    params: float, parts: frozenset[str], grad_bytes: float, weight_bytes: float, dp: int, node: int, micro_batches: int
) -> list[Call]:
    """ZeRO-3 with ZeRO++'s parts (module docstring): qwZ's int8 forward gathers, hpZ's backward gathers within the
    node, qgZ's int4 gradients by all-to-all inside the node, then across nodes on the node's share."""
    forward = params * (1.0 if "qwz" in parts else weight_bytes)
    backward_group = min(node, dp) if "hpz" in parts else dp
    calls = [
        Call("all_gather", forward, dp, micro_batches),
        Call("all_gather", params * weight_bytes, backward_group, micro_batches),
    ]
    if "qgz" in parts:
        g = min(node, dp)
        calls += [Call("all_to_all", params * INT4, g), Call("all_to_all", params * INT4 / g, across(dp, g))]
    else:
        calls.append(Call("reduce_scatter", params * grad_bytes, dp))
    return calls


def across(dp: int, g: int) -> tuple[int, ...]:
    """One rank of every group of g (ranks 0, g, 2g, ...): the phase of a hierarchical call between nodes or sites,
    which every rank of a group runs at once on its own share."""
    return tuple(range(0, dp, g))


def zeropp_cross_node_volume(parts: frozenset[str], params: float = 1.0) -> float:
    """Bytes per parameter that leave a node per micro-batch-free step of ZeRO-3, 16-bit weights and gradients, in the
    ZeRO++ paper's accounting: forward gather, backward gather, gradient reduce-scatter, M each; qwZ halves the first,
    hpZ removes the second, qgZ quarters the third (the paper's 3M -> 0.75M)."""
    forward = 0.5 if "qwz" in parts else 1.0
    backward = 0.0 if "hpz" in parts else 1.0
    gradients = 0.25 if "qgz" in parts else 1.0
    return (forward + backward + gradients) * params


def matrix_shapes(a: ModelArchitecture) -> list[tuple[int, int]]:
    """Every weight matrix of the model as (rows, columns) (what PowerSGD factors): the embedding and output head,
    each layer's projections and experts, and Gemma 4's per-layer embedding table, its projection and each layer's
    per-layer gate and projection."""
    h, per_layer = a.hidden, a.per_layer_input
    shapes = [(a.vocab, h)] + ([] if a.tied_embeddings else [(h, a.output_vocab)])
    if per_layer is not None:
        shapes += [(per_layer.vocab, a.layers * per_layer.width), (h, a.layers * per_layer.width)]
    for mixer, mlp, ffn in a.layer_kinds:
        if "attention" in mixer and a.mla is None:
            v = a.attention_of(mixer)
            q, kv = v.heads * v.d_head, v.n_kv_heads * v.d_head
            values = [] if v.values_from_keys else [(h, v.n_kv_heads * v.d_value)]
            shapes += [(h, q), *([(h, kv), *values] if a.computes_kv(mixer) else []), (v.heads * v.d_value, h)]
        if mlp == "dense":
            shapes += [(h, ffn)] * (2 if a.gated_mlp else 1) + [(ffn, h)]
        if per_layer is not None:
            shapes += [(h, per_layer.width), (per_layer.width, h)]
        if mlp == "moe" and a.moe is not None:
            io = a.moe.expert_io(h)
            per = [(io, a.moe.ffn)] * (2 if a.gated_mlp else 1) + [(a.moe.ffn, io)]
            latent = [(h, io), (io, h)] if a.moe.latent else []
            shapes += per * a.moe.experts + [(h, a.moe.experts)] + latent
    return shapes


def powersgd_values(shapes: Sequence[tuple[int, int]], rank: int) -> float:
    """Values PowerSGD all-reduces per step: (m + n) r per m x n matrix, in two all-reduces (P, then Q); a matrix
    whose factors would not be at least 2x smaller is all-reduced whole (PowerSGDState.min_compression_rate = 2)."""
    total = 0.0
    for m, n in shapes:
        factors = (m + n) * rank
        total += factors if factors * 2 <= m * n else m * n
    return total


def one_bit_bytes(params: float, ranks: int) -> float:
    """Bytes each rank sends per synchronising step of 1-bit Adam's compressed all-reduce: its signs to every server
    (all-to-all, (N-1)/N of M/8) and the servers' signs back (all-gather, the same), plus an fp32 scale per chunk."""
    if ranks == 1:
        return 0.0
    return 2 * (ranks - 1) / ranks * (params * ONE_BIT + 4.0)


def diloco_bytes_per_step(params: float, sync_every: int, outer_bytes: float = 4.0) -> float:
    """Bytes of parameter deltas each replica exchanges per inner step: the model in the outer dtype every H steps."""
    return params * outer_bytes / sync_every


# ------------------------------------------------------------------------------------------------ the comparison


def wants_variant(options: Options) -> bool:
    """Options that ask for a variant of the plain plan."""
    c = options.communication
    return bool(c.zeropp) or c.compression is not None or c.sync_every is not None


def plain(options: Options) -> Options:
    """The options without any variant: the plan `estimate` costs as it always has."""
    communication = options.communication.model_copy(
        update={"zeropp": (), "compression": None, "sync_every": None, "streaming": 1}
    )
    return options.model_copy(update={"communication": communication})


def slowest_tier(topology: TopologySpec, tier_bytes: dict[str, float]) -> str:
    """The lowest of the crossed tiers of the lowest per-GPU bandwidth (TierSpec.effective_bandwidth): one slow
    link (between sites), or, where the network's tiers run at one speed (a non-blocking fat tree), its first,
    whose links every byte that leaves a node crosses (the bytes of the tiers above nest in it: collectives.py,
    p2p.py), the cross-node traffic ZeRO++'s paper counts."""
    crossed = [t for t in topology.tiers if tier_bytes.get(t.name, 0.0) > 0]
    if not crossed:
        return topology.tiers[0].name
    slowest = min(t.effective_bandwidth for t in crossed)
    return next(t.name for t in crossed if t.effective_bandwidth <= slowest * 1.001)


def over_slowest(topology: TopologySpec, rows: Sequence[VariantCost]) -> list[VariantCost]:
    """Every row's bytes over the tier that is slowest for the plain plan (the first row), so that all are compared
    on the same links."""
    if not rows:
        return []
    tier = slowest_tier(topology, rows[0].tier_bytes)
    return [replace(r, top_tier=tier, top_tier_bytes=r.tier_bytes.get(tier, 0.0)) for r in rows]


def _replica_size(topology: TopologySpec, options: Options) -> int:
    """DiLoCo's replica: --shard-group GPUs, else the domain of the tier below the highest one DP spans (a site on a
    fabric with a tier between sites, else a node)."""
    dp = options.dp
    if options.plan.shard_group is not None:
        return options.plan.shard_group
    sizes = [t.size for t in topology.tiers if t.size is not None and t.size < dp]
    return max(sizes) if sizes else dp


def _base(model: ModelSpec, topology: TopologySpec, options: Options, **plan: object) -> tuple[Options, EstimateReport]:
    """The plain plan a variant changes: its options and their report."""
    from dpcost.engine.estimate import estimate

    o = plain(options)
    if plan:
        o = o.model_copy(update={"plan": o.plan.model_copy(update=plan)})
    return o, estimate(model, topology, o)


def _held(
    model: ModelSpec, topology: TopologySpec, options: Options, report: EstimateReport, column: Group, held: float
) -> StageMemory:
    """The memory of the plan `report` costed, at its stage and recomputation, with a variant's `held` bytes in
    `column` through the whole step."""
    from dpcost.engine.prepare import prepare, stage_table

    p = prepare(model, topology, options)
    return with_held(stage_table(model, topology, p, report.setup.recompute)[report.setup.zero_stage], column, held)


def _shape(report: EstimateReport) -> tuple[float, int, float, float, int]:
    """(parameters, ZeRO stage, gradient bytes, weight bytes, micro-batches) of a costed plain plan."""
    s = report.setup
    params = float(report.model.params_total)
    grad_bytes = report.communication.gradient_bytes / params
    weight = 2.0  # 16-bit weights gathered (the recipes' bf16 parameters)
    return params, s.zero_stage, grad_bytes, weight, s.accumulation


def _row(
    name: str,
    flags: str,
    topology: TopologySpec,
    base: EstimateReport,
    base_calls: Sequence[Call],
    calls: Sequence[Call],
    held: StageMemory | None = None,
    added_compute: float = 0.0,
    note: str = "",
    same_schedule: bool = True,
    memory_for: str = "",
) -> VariantCost:
    """A variant priced against the plain plan it changes (module docstring: the same hidden time)."""
    t = base.time
    assert t is not None
    priced = price(topology, calls)
    # what estimate's schedule adds to the whole messages (bucket and unit latencies) stays, when the variant runs
    # on the same buckets or units; a variant that replaces them with its own calls has only its own
    schedule = max(0.0, t.comm_seconds - price(topology, base_calls).seconds) if same_schedule else 0.0
    overlapped = priced.seconds - priced.blocking_seconds + schedule
    blocking = priced.blocking_seconds
    hidden = t.comm_seconds - t.exposed_comm_seconds
    exposed = max(0.0, overlapped - hidden) + blocking
    step = t.step_seconds - t.exposed_comm_seconds + exposed + added_compute
    memory = held.total if held is not None else base.summary.memory_bytes
    return VariantCost(
        name, flags, overlapped + blocking, exposed, step, memory,
        memory - base.summary.memory_bytes, added_compute, t.compute_seconds / step, note, memory_for, held,
        base.setup.recompute, priced.tier_bytes,
    )  # fmt: skip


def _as_is(name: str, flags: str, topology: TopologySpec, report: EstimateReport, note: str = "") -> VariantCost:
    """A variant `estimate` costs itself (hybrid sharding, fp8 gradients): its own report's numbers."""
    t = report.time
    assert t is not None
    params, zero, grad, weight, micro = _shape(report)
    dp, group = report.setup.dp, report.communication.shard_group
    calls = stage_calls(params, zero, grad, weight, dp, micro)
    if group:
        calls = [
            Call("reduce_scatter", params * grad, group),
            Call("all_reduce", params * grad / group, across(dp, group)),
        ]
    priced = price(topology, calls)
    return VariantCost(
        name, flags, t.comm_seconds, t.exposed_comm_seconds, t.step_seconds,
        report.summary.memory_bytes, 0.0, 0.0, t.compute_seconds / t.step_seconds, note,
        tier_bytes=priced.tier_bytes,
    )  # fmt: skip


def zeropp_variant(
    model: ModelSpec, topology: TopologySpec, options: Options, parts: frozenset[str]
) -> tuple[VariantCost, VariantCost]:
    """(ZeRO-3 plain, ZeRO-3 with ZeRO++'s parts): hpZ's secondary copy is 16-bit weights over the node."""
    base_options, base = _base(model, topology, options, zero=3)
    params, _, grad, weight, micro = _shape(base)
    dp, node = options.dp, topology.tiers[0].size or 1
    base_calls = stage_calls(params, 3, grad, weight, dp, micro)
    calls = zeropp_calls(params, parts, grad, weight, dp, node, micro)
    secondary = params * weight / min(node, dp)
    held = _held(model, topology, base_options, base, "params", secondary) if "hpz" in parts else None
    label = "ZeRO++ " + "+".join(sorted(parts))
    flags = f"--zero 3 --zeropp {','.join(sorted(parts))}"
    return (
        _row("ZeRO-3", "--zero 3", topology, base, base_calls, base_calls),
        _row(
            label,
            flags,
            topology,
            base,
            base_calls,
            calls,
            held,
            note="int8/int4 quantization error",
            memory_for="hpZ's secondary 16-bit parameter shard over the node" if held else "",
        ),
    )


def compression_variant(
    model: ModelSpec, topology: TopologySpec, options: Options, kind: str
) -> tuple[VariantCost, VariantCost]:
    """(ZeRO-0 plain, ZeRO-0 with the compression): PowerSGD and 1-bit Adam are DDP-style all-reduce replacements."""
    base_options, base = _base(model, topology, options, zero=0, shard_group=None)
    params, _, grad, weight, micro = _shape(base)
    dp = options.dp
    base_calls = stage_calls(params, 0, grad, weight, dp, micro)
    t = base.time
    assert t is not None
    if kind == "powersgd":
        a = model.architecture
        if a is None:
            raise ValueError("PowerSGD factors each weight matrix: the model needs its architecture")
        rank = options.communication.powersgd_rank
        shapes = matrix_shapes(a)
        matrix_params = float(sum(m * n for m, n in shapes))
        factors = powersgd_values(shapes, rank)
        calls = [Call("all_reduce", factors * 4.0 / 2, dp, 2), Call("all_reduce", (params - matrix_params) * grad, dp)]
        flops = sum(6.0 * m * n * rank + 2.0 * m * rank * rank for m, n in shapes)
        # the FLOP rate the plan's compute sustains: 6 N (active) per token of one GPU's share of the step
        rate = 6.0 * base.model.params_active * base.setup.tokens_per_step / base.setup.dp / t.compute_seconds
        compute = flops / rate if rate else 0.0
        held = _held(model, topology, base_options, base, "grads", params * 4.0 + factors * 4.0)
        return (
            _row("DDP", "--zero 0", topology, base, base_calls, base_calls),
            _row(f"PowerSGD rank {rank}", f"--zero 0 --compression powersgd --rank {rank}", topology, base, base_calls,
                 calls, held, compute, "after start_powerSGD_iter (1,000) full-volume steps",
                 memory_for="the error feedback (an fp32 gradient) and the P and Q factors"),
        )  # fmt: skip
    interval = ZERO_ONE_SYNC_EVERY if kind == "01-adam" else 1
    per_rank = params * ONE_BIT + 4.0
    calls = [Call("all_to_all", per_rank, dp, 1 / interval), Call("all_gather", per_rank, dp, 1 / interval)]
    held = _held(model, topology, base_options, base, "optimizer", params * 4.0 * (1 + 1 / dp))
    name = "1-bit Adam" if kind == "1bit-adam" else "0/1 Adam"
    note = "after freeze_step full-volume warm-up steps" + (
        ", one sync every 16 steps at its steady state" if interval > 1 else ""
    )
    return (
        _row("DDP", "--zero 0", topology, base, base_calls, base_calls),
        _row(
            name,
            f"--zero 0 --compression {kind}",
            topology,
            base,
            base_calls,
            calls,
            held,
            note=note,
            same_schedule=False,
            memory_for="the worker's and the server's error feedback, fp32",
        ),
    )


def diloco_variant(
    model: ModelSpec, topology: TopologySpec, options: Options, sync_every: int, streaming: int = 1
) -> VariantCost:
    """DiLoCo: the inner step on one replica, plus its outer all-reduce of fp32 deltas every H steps (module
    docstring); Streaming DiLoCo hides each fragment's sync behind the H/F inner steps after it."""
    from dpcost.engine.estimate import estimate

    replica = _replica_size(topology, options)
    dp = options.dp
    if dp % replica:
        raise ValueError(f"--sync-every: replicas of {replica} GPUs do not divide DP {dp}")
    replicas = dp // replica
    batch = options.batch
    if batch.global_batch is not None:  # each replica's inner step takes its share of the global batch
        if batch.global_batch % replicas:
            raise ValueError(f"--global-batch {batch.global_batch} does not split over {replicas} replicas")
        batch = batch.model_copy(update={"global_batch": batch.global_batch // replicas})
    inner_options = (
        plain(options)
        .with_dp(replica)
        .model_copy(update={"plan": options.plan.model_copy(update={"shard_group": None}), "batch": batch})
    )
    inner = estimate(model, topology, inner_options)
    t = inner.time
    assert t is not None
    params = float(inner.model.params_total)
    sharded = inner.setup.zero_stage >= 1
    share = params / replica if sharded else params
    outer = price(topology, [Call("all_reduce", 4.0 * share / streaming, across(dp, replica))])
    fragment, every = outer.seconds, sync_every / streaming
    exposed = fragment / every if streaming == 1 else max(0.0, fragment - every * t.step_seconds) / every
    added = 8.0 * share  # outer parameters and outer momentum, fp32
    held = _held(model, topology, inner_options, inner, "optimizer", added)
    step = t.step_seconds + exposed
    name = f"DiLoCo H={sync_every}" + (f", streaming F={streaming}" if streaming > 1 else "")
    flags = f"--sync-every {sync_every}" + (f" --streaming {streaming}" if streaming > 1 else "")
    return VariantCost(
        name, flags, fragment * streaming / sync_every,
        exposed, step, held.total, added, 0.0, t.compute_seconds / step,
        f"{replicas} replicas of {replica} GPUs; inner steps within a replica",
        "the outer fp32 parameters and Nesterov momentum" + (f", over the replica's {replica} GPUs" if sharded else ""),
        held, inner.setup.recompute, {k: v * streaming / sync_every for k, v in outer.tier_bytes.items()},
    )  # fmt: skip


def requested(model: ModelSpec, topology: TopologySpec, options: Options) -> list[VariantCost]:
    """The variant the options ask for (--zeropp, --compression, --sync-every), beside the plain plan it changes."""
    from dpcost.errors import InputError

    c = options.communication
    asked = [name for name, on in (("zeropp", c.zeropp), ("compression", c.compression), ("sync_every", c.sync_every))
             if on]  # fmt: skip
    if len(asked) > 1:
        raise InputError(asked[1], f"one variant at a time (also given: {asked[0]}); --compare-variants shows them all")
    if not options.parallel.trivial:
        raise InputError(asked[0], "variants of a TP/CP/PP/EP layout are not costed yet: cost them as pure DP")
    if options.plan.mode != "train":
        raise InputError(asked[0], "serving exchanges no gradients: the variants of data parallelism are for training")
    if c.sync_every is not None and c.streaming > c.sync_every:
        raise InputError("streaming", f"{c.streaming} fragments cannot each sync within --sync-every {c.sync_every}")
    try:
        if c.zeropp:
            return over_slowest(topology, zeropp_variant(model, topology, options, frozenset(c.zeropp)))
        if c.compression is not None:
            return over_slowest(topology, compression_variant(model, topology, options, c.compression))
        assert c.sync_every is not None
        from dpcost.engine.estimate import estimate

        return over_slowest(topology, [
            _as_is("plain DP", "", topology, estimate(model, topology, plain(options))),
            diloco_variant(model, topology, options, c.sync_every, c.streaming),
        ])  # fmt: skip
    except ValueError as exc:
        raise InputError(asked[0], str(exc)) from None


def compare(model: ModelSpec, topology: TopologySpec, options: Options) -> list[VariantCost]:
    """One row per variant on the same model, topology and batch: plain DP, hybrid sharding, ZeRO++, fp8 gradients,
    PowerSGD, 1-bit and 0/1 Adam, DiLoCo and Streaming DiLoCo (at --sync-every, default 100)."""
    from dpcost.engine.estimate import estimate

    base = plain(options)
    rows = [_as_is("plain DP", "", topology, estimate(model, topology, base))]
    replica = _replica_size(topology, options)
    if replica < options.dp:
        hybrid = base.model_copy(update={"plan": base.plan.model_copy(update={"shard_group": replica})})
        rows.append(_as_is(f"hybrid sharding ({replica} per replica)", f"--shard-group {replica}", topology,
                           estimate(model, topology, hybrid)))  # fmt: skip
    rows.append(zeropp_variant(model, topology, options, frozenset({"hpz", "qwz", "qgz"}))[1])
    fp8 = base.model_copy(
        update={"precision": base.precision.model_copy(update={"grad_dtype": "fp8", "grad_block": FP8_BLOCK})}
    )
    note = f"1 byte per value and an fp32 scale per {FP8_BLOCK}"
    flags = f"--grad-dtype fp8 --grad-block {FP8_BLOCK}"
    rows.append(_as_is("fp8 gradients", flags, topology, estimate(model, topology, fp8), note))
    if model.architecture is not None:
        rows.append(compression_variant(model, topology, options, "powersgd")[1])
    rows.append(compression_variant(model, topology, options, "1bit-adam")[1])
    rows.append(compression_variant(model, topology, options, "01-adam")[1])
    h = options.communication.sync_every or 100
    if replica < options.dp:
        rows.append(diloco_variant(model, topology, options, h))
        rows.append(
            diloco_variant(
                model,
                topology,
                options,
                h,
                options.communication.streaming if options.communication.streaming > 1 else 4,
            )
        )
    return over_slowest(topology, rows)
