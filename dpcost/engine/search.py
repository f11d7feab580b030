"""The best plans for a cluster (`dpcost plan`): every layout the model and the GPUs allow, pruned by memory
before any time is priced, then costed by `estimate` and ranked by step time at the fixed global batch.

What is searched, and why each range (docs/plan.md says the same for users):
- TP: powers of two up to the NVLink domain, dividing the attention heads and the KV heads (Megatron-Core asserts
  both divide), with sequence parallelism whenever TP > 1 (it moves the same bytes and splits the norms' activations;
  MoE with TP needs it);
- CP: powers of two while the sequence splits into 2 x CP equal chunks (Megatron's load-balanced causal split) and
  each CP rank keeps at least MIN_CP_TOKENS tokens (two chunks of half that);
- PP: powers of two up to half the layers, uneven ends where PP does not divide them; V = 2 interleaved chunks where
  it does;
- EP (MoE only): powers of two dividing the experts, within DP x CP (Megatron-Core carves EP out of it);
- DP: the rest. Rank order: Megatron-Core's default, and with PP > 1 also PP inside DP where TP x CP leave room in a
  domain;
- pure DP (no other dimension): each framework (ddp, fsdp, deepspeed, megatron) with the ZeRO stage and
  recomputation `estimate` chooses (`--zero auto --recompute auto`), FSDP also hybrid-sharded within 1, 4 and 16
  NVLink domains; a layout runs Megatron's distributed optimizer (ZeRO-1) with the least recomputation that fits,
  and, where that is full recomputation or nothing fits, as Megatron-FSDP (optim_grads_params, ZeRO-3) too, in a
  second pass when the plans that fit are fewer than asked for or the best recomputes every layer (Megatron-FSDP
  shards the weights and gradients as well, so it only buys memory);
- micro-batches of 1, 2, 4 and 8 sequences, with the accumulation the global batch leaves;
- buckets: the framework's; the best plans are priced again at a quarter and four times it, kept where faster.

Pruning, before a plan is costed: a layout whose weights and main gradients alone (state_bytes_floor per parameter
of its shard, at ZeRO-3 also over DP x CP) exceed the memory; one whose smaller micro-batch did not fit at that ZeRO
stage; one whose step cannot beat the worst of the best plans so far even with its matmuls at the fastest rate its
compute model allows, its TP and EP calls that overlap nothing, and its pipeline bubble (at ZeRO-3, nor with its
all-gather stream alone: fsdp_gather_seconds); then a layout whose memory, as `estimate` decides it
(`layout_recompute`: Megatron's formula), does not fit. `estimate` costs the rest, and a plan that does not fit is
never kept.
"""

from __future__ import annotations

import time as clock
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from dpcost.engine.activations import ACT_BYTES
from dpcost.engine.availability import plan_environment
from dpcost.engine.collectives import fastest
from dpcost.engine.compute import attention_flops, flops_per_token
from dpcost.engine.cost import PlanCost, costed
from dpcost.engine.layout import DEFAULT_ORDER, Layout
from dpcost.engine.layout_estimate import call_seconds, placements
from dpcost.engine.layout_report import (
    check_wgrad_deferral,
    layout_recompute,
    least_gathered_bytes,
    state_bytes_floor,
)
from dpcost.engine.layout_step import layout_calls, mamba_layout_refusal
from dpcost.engine.ops import has_layer_ops
from dpcost.engine.params import count_params, routed_expert
from dpcost.engine.placement import Placement, job_view
from dpcost.engine.prepare import (
    check_compute_dtype,
    check_unfused_softmax,
    compute_model_for,
    matmul_share,
    seq_len_for,
)
from dpcost.engine.report import EstimateReport, PlanResult, PlanRow, SearchCounts
from dpcost.errors import InputError
from dpcost.frozen import frozen
from dpcost.options import Options
from dpcost.specs import ModelSpec, TopologySpec
from dpcost.units import fmt_seconds

__all__ = [
    "MICRO_BATCHES",
    "Found",
    "PlanSearch",
    "ahead_of_next",
    "candidates",
    "overlapped_calls_bound",
    "plan_result",
    "search",
    "states_lower_bound",
    "step_lower_bound",
]

MICRO_BATCHES = (1, 2, 4, 8)
MIN_CP_TOKENS = 1024  # the least of the sequence a CP rank keeps, as searched: a choice of range, not a measurement
PURE_DP_FRAMEWORKS = ("fsdp", "deepspeed", "megatron", "ddp")
HYBRID_DOMAINS = (1, 4, 16)  # FSDP's shard group, in NVLink domains
BUCKET_SCALES = (0.25, 4.0)
PP_INSIDE_DP = "tp-cp-ep-pp-dp"


def _powers_of_two(limit: int) -> list[int]:
    out, v = [], 1
    while v <= limit:
        out.append(v)
        v *= 2
    return out


def _domain(topology: TopologySpec) -> int:
    """GPUs per NVLink domain: the first tier's size."""
    return topology.tiers[0].size or 1


@frozen
class Shape:
    """One layout's sizes, before its options are built."""

    tp: int = 1
    cp: int = 1
    pp: int = 1
    ep: int = 1
    dp: int = 1
    virtual_stages: int = 1
    order: str = DEFAULT_ORDER

    @property
    def trivial(self) -> bool:
        return (self.tp, self.cp, self.pp, self.ep) == (1, 1, 1, 1)


def layout_shapes(model: ModelSpec, topology: TopologySpec, gpus: int, seq_len: int) -> Iterator[Shape]:
    """Every TP x CP x PP x EP x DP (x V, x order) the module docstring allows on `gpus` GPUs; none for a model
    given by its parameter count alone (a layout splits its layers and heads), nor for a hybrid whose layers have no
    per-op times; a Mamba-2 hybrid's without CP, TP dividing its mixer's heads and groups (prepare.check_hybrid)."""
    a = model.architecture
    if a is None or not has_layer_ops(a):
        return
    kv = a.kv_heads or a.heads
    domain = _domain(topology)
    tps = [t for t in _powers_of_two(domain)
           if (not a.attention_layers or (a.heads % t == 0 and (kv % t == 0 or a.mla is not None)))
           and mamba_layout_refusal(a, t, 1) is None]  # fmt: skip
    cps = [c for c in _powers_of_two(gpus) if seq_len % (2 * c) == 0 and seq_len // (2 * c) >= MIN_CP_TOKENS // 2]
    cps = [c for c in cps if mamba_layout_refusal(a, 1, c) is None]
    pps = _powers_of_two(max(1, a.layers // 2))
    experts = a.moe.experts if a.moe is not None else 1
    for tp in tps:
        for cp in cps:
            for pp in pps:
                if gpus % (tp * cp * pp):
                    continue
                dp = gpus // (tp * cp * pp)
                for ep in (e for e in _powers_of_two(experts) if experts % e == 0 and (dp * cp) % e == 0):
                    vs = (1, 2) if pp > 1 and a.layers % (2 * pp) == 0 else (1,)
                    orders = [DEFAULT_ORDER]
                    if pp > 1 and dp > 1 and tp * cp < domain and cp == ep:  # else expert-DP != DP: refused
                        orders.append(PP_INSIDE_DP)
                    for v in vs:
                        for order in orders:
                            yield Shape(tp, cp, pp, ep, dp, v, order)


def states_lower_bound(model: ModelSpec, shape: Shape, bytes_per_parameter: float) -> float:
    """Bytes per GPU no layout of this shape can go below: its share of the weights and main gradients
    (`bytes_per_parameter`: layout_report.state_bytes_floor), the dense part over TP x PP and the experts over
    EP x TP x PP, the mean of the stages (the most loaded holds at least as much)."""
    experts = _expert_params(model)
    dense = count_params(model).total - experts
    return bytes_per_parameter * (dense / (shape.tp * shape.pp) + experts / (shape.tp * shape.ep * shape.pp))


def _expert_params(model: ModelSpec) -> float:
    """The routed experts' parameters in every MoE layer (params.routed_expert)."""
    a = model.architecture
    if a is None or a.moe is None:
        return 0.0
    return float(a.moe_layers * a.moe.experts * routed_expert(a))


def step_lower_bound(
    model: ModelSpec,
    topology: TopologySpec,
    options: Options,
    gpus: int,
    seq_len: int,
    recompute: str = "none",
    places: dict[tuple[Layout, str], Placement] | None = None,
) -> float:
    """Seconds no plan with this pipeline can beat: m micro-batch slots plus the (PP - 1) / V of the 1F1B bubble
    (layout_step.bubble_seconds), each slot at least
    - the step's matmul FLOPs (the model's, and what `recompute` re-runs) spread evenly over every GPU at the
      matmul rate its compute model allows at most (every matmul at --mfu under `flops`; op by op at the
      sustained large-matmul share, which no shape exceeds), over m. Attention's FLOPs are left out: PaLM counts
      the whole score square, the flash kernel its causal half;
    - plus the TP and EP calls that overlap no compute (exposed_calls_seconds), which layout_step adds whole, and
      what the overlapped ones cannot hide (overlapped_calls_bound).
    `places`: a cache of group placements, shared across one search."""
    global_batch = options.batch.global_batch or 1
    a = model.architecture
    fpt = flops_per_token(count_params(model), a, seq_len, recompute, True)
    attention = attention_flops(a, seq_len) if a is not None else 0.0
    matmuls = fpt.model + fpt.recompute - (4 if recompute == "full" else 3) * attention
    share = matmul_share(topology.gpu, options.compute, compute_model_for(model, options.compute))
    compute = matmuls * global_batch * seq_len / (gpus * topology.gpu.peak(options.compute.compute_dtype) * share)
    par = options.parallel
    m = _micro_batches(options)
    slots = m + (par.pp - 1) / par.virtual_stages
    calls = _tp_ep_calls(model, topology, options, seq_len, recompute, places)
    alone = sum(total for total, _, overlapped in calls if not overlapped)
    return slots * (alone + _slot_bound([(t, h) for t, h, overlapped in calls if overlapped], compute / m))


def exposed_calls_seconds(
    model: ModelSpec,
    topology: TopologySpec,
    options: Options,
    seq_len: int,
    recompute: str,
    places: dict[tuple[Layout, str], Placement] | None = None,
) -> float:
    """Seconds per micro-batch of the layout's TP and EP calls that overlap nothing (layout_step.layout_calls,
    priced by layout_estimate.call_seconds on their groups as `estimate` prices them): a micro-batch's slot holds
    them whole (layout_step.exposed_per_micro_batch). 0 for a layout that is not valid (estimate refuses it)."""
    calls = _tp_ep_calls(model, topology, options, seq_len, recompute, places)
    return sum(total for total, _, overlapped in calls if not overlapped)


def overlapped_calls_bound(
    model: ModelSpec,
    topology: TopologySpec,
    options: Options,
    seq_len: int,
    recompute: str,
    compute: float,
    places: dict[tuple[Layout, str], Placement] | None = None,
) -> float:
    """Least seconds of a micro-batch's slot, before the calls that overlap nothing, for a micro-batch computing at
    least `compute` seconds: c + the sum of max(0, T - h c) over the overlapped TP and EP calls (T a call's seconds
    per micro-batch, h the share of the compute it hides behind: layout_step.exposed_per_micro_batch) is at least c,
    and at least T + (1 - h) c for each call and sum(T) + (1 - sum(h)) c for all, each of which grows with c where h
    (or sum(h)) is at most 1: so each holds at c = `compute`."""
    calls = _tp_ep_calls(model, topology, options, seq_len, recompute, places)
    return _slot_bound([(total, hides) for total, hides, overlapped in calls if overlapped], compute)


def _slot_bound(overlapped: list[tuple[float, float]], compute: float) -> float:
    """overlapped_calls_bound of the calls (seconds per micro-batch, share of the compute they hide behind)."""
    bounds = [compute] + [total + (1 - hides) * compute for total, hides in overlapped if hides <= 1]
    shares = sum(hides for _, hides in overlapped)
    if overlapped and shares <= 1:
        bounds.append(sum(total for total, _ in overlapped) + (1 - shares) * compute)
    return max(bounds)


def _tp_ep_calls(
    model: ModelSpec,
    topology: TopologySpec,
    options: Options,
    seq_len: int,
    recompute: str,
    places: dict[tuple[Layout, str], Placement] | None,
) -> list[tuple[float, float, bool]]:
    """The layout's TP and EP calls, each as (seconds per micro-batch, the share of the micro-batch's compute it
    hides behind, whether it overlaps compute); none for a layout that is not valid (estimate refuses it)."""
    a = model.architecture
    par = options.parallel
    layout = _layout_of(options)
    if a is None or (par.tp == 1 and par.ep == 1) or layout is None:
        return []
    calls = layout_calls(
        a,
        layout,
        options.batch.micro_batch,
        seq_len,
        ACT_BYTES,  # layout_step's activations
        sequence_parallel=par.sequence_parallel,
        recompute_full=recompute == "full",
        tp_overlap=par.tp_comm_overlap,
        ep_overlap=par.ep_comm_overlap,
        cp_impl=par.cp_impl,
        virtual_stages=par.virtual_stages,
        ep_node_limit=par.ep_node_limit,
        ep_dispatcher=par.ep_dispatcher,
    )
    chosen = [c for c in calls if c.group in ("tp", "ep", "etp", "etp-ep")]
    if not chosen:
        return []
    env = plan_environment(topology, options)
    groups = {kind: _placed(env, layout, kind, places) for kind in {c.group for c in chosen}}
    return [(c.per_micro_batch * call_seconds(env, groups, c), c.hides_behind, c.overlapped) for c in chosen]


def fsdp_gather_seconds(
    model: ModelSpec,
    topology: TopologySpec,
    options: Options,
    places: dict[tuple[Layout, str], Placement] | None = None,
) -> float:
    """Seconds no Megatron-FSDP (ZeRO-3) plan of this layout can beat on its all-gather stream: every micro-batch
    gathers each layer's parameters for its forward and again for its backward (layout_estimate._data_parallel),
    here a stage's share of the dense weights (the mean of the stages: the most loaded holds at least as much) at
    the fewest bytes any weight's gather moves (least_gathered_bytes), as one call over the DP x CP
    group, whose time is no more than that of the per-layer calls it stands for."""
    layout = _layout_of(options)
    if layout is None or layout.dp * layout.cp == 1:
        return 0.0
    dense = (count_params(model).total - _expert_params(model)) / (layout.tp * layout.pp)
    env = plan_environment(topology, options)
    group = _placed(env, layout, "dp-cp", places)
    gather = fastest(env, "all_gather", group, dense * least_gathered_bytes(options)).seconds
    return 2 * _micro_batches(options) * gather


def _layout_of(options: Options) -> Layout | None:
    """The options' layout, or None where its sizes are not one (estimate refuses it)."""
    par = options.parallel
    try:
        return Layout(tp=par.tp, cp=par.cp, pp=par.pp, dp=options.dp, ep=par.ep, etp=par.etp, order=par.order)
    except ValueError:
        return None


def _placed(
    env: TopologySpec, layout: Layout, kind: str, places: dict[tuple[Layout, str], Placement] | None
) -> Placement:
    """The placement estimate costs `layout`'s groups of `kind` with (layout_estimate.placements), kept in `places`
    across one search."""
    known = {} if places is None else places
    if (layout, kind) not in known:
        known[(layout, kind)] = placements(env, layout)[kind]
    return known[(layout, kind)]


def _micro_batches(options: Options) -> int:
    """m: the micro-batches each pipeline runs per step, B / (DP x b)."""
    return max(1, (options.batch.global_batch or 1) // (options.dp * options.batch.micro_batch))


def candidates(model: ModelSpec, topology: TopologySpec, gpus: int, base: Options) -> Iterator[tuple[Shape, Options]]:
    """Every plan searched (module docstring), as estimate's options over `base`."""
    seq_len = _seq_len(model, base)
    global_batch = base.batch.global_batch
    # one compute model for every plan, so that pure DP and layouts compare
    chosen = compute_model_for(model, base.compute)
    base = base.model_copy(update={"compute": base.compute.model_copy(update={"compute_model": chosen})})
    # DeepSpeed's ZeRO-3 fetch is DeepSpeed's, on pure DP alone (prepare.check_zero3_fetch); the MoE layers' host
    # time is a layout's (prepare.check_pipeline_only): the options each kind of candidate takes from `base`
    without_fetch = base.communication.model_copy(update={"zero3_fetch": None})
    pure_dp_compute = base.compute.model_copy(update={"moe_host_time": None})
    deepspeed_dp = {"compute": pure_dp_compute}
    other_dp = {"communication": without_fetch, "compute": pure_dp_compute.model_copy(update={"list_host_time": None})}
    layout = {"communication": without_fetch, "compute": base.compute.model_copy(update={"list_host_time": None})}
    for shape in [Shape(dp=gpus), *(s for s in layout_shapes(model, topology, gpus, seq_len) if not s.trivial)]:
        for mb in MICRO_BATCHES:
            if global_batch is not None and global_batch % (shape.dp * mb):
                continue
            batch = base.batch.model_copy(update={"micro_batch": mb, "seq_len": seq_len, "accumulation": None})
            parallel = base.parallel.model_copy(
                update={
                    "tp": shape.tp,
                    "cp": shape.cp,
                    "pp": shape.pp,
                    "ep": shape.ep,
                    "etp": None,
                    "virtual_stages": shape.virtual_stages,
                    "order": shape.order,
                    "sequence_parallel": shape.tp > 1,
                    # a pipeline option (Megatron refuses it without one): layouts without PP compute in the backward
                    "defer_embedding_wgrad": base.parallel.defer_embedding_wgrad if shape.pp > 1 else None,
                }
            )
            if shape.trivial and base.parallel.mtp_layers:
                continue  # MTP modules train in a Megatron layout only (prepare.check_pipeline_only)
            if shape.trivial:
                for framework in PURE_DP_FRAMEWORKS:
                    groups: list[int | None] = [None]
                    if framework == "fsdp":
                        groups += [n * _domain(topology) for n in HYBRID_DOMAINS if n * _domain(topology) < gpus]
                    for group in groups:
                        plan = base.plan.model_copy(
                            update={"framework": framework, "shard_group": group, "zero": None, "recompute": None}
                        )
                        own = deepspeed_dp if framework == "deepspeed" else other_dp
                        update = {"dp": gpus, "plan": plan, "batch": batch, "parallel": parallel, **own}
                        yield shape, base.model_copy(update=update)
                continue
            plan = base.plan.model_copy(
                update={"framework": "megatron", "zero": 1, "recompute": None, "shard_group": None}
            )
            yield shape, base.model_copy(update={"dp": shape.dp, "plan": plan, "batch": batch, "parallel": parallel,
                                                 **layout})  # fmt: skip


def _seq_len(model: ModelSpec, base: Options) -> int:
    return seq_len_for(model, base)


@frozen
class Found:
    """A plan that fits, costed."""

    options: Options
    report: EstimateReport


@dataclass
class PlanSearch:
    """What the search found and how much it looked at."""

    gpus: int
    memory_limit: float
    global_batch: int = 0  # sequences per step, as searched (0: each plan's own)
    seq_len: int = 0
    best: list[Found] = field(default_factory=list)
    candidates: int = 0
    invalid: int = 0  # refused by the layout's own rules (estimate's InputError)
    over_memory: int = 0  # pruned by states_lower_bound or Megatron's formula, or timed and found not to fit
    slower: int = 0  # pruned by step_lower_bound
    priced: int = 0
    seconds: float = 0.0
    reasons: dict[str, int] = field(default_factory=dict)


def search(
    model: ModelSpec,
    topology: TopologySpec,
    gpus: int,
    base: Options,
    top: int = 5,
    memory_limit: float | None = None,
    accept: Callable[[EstimateReport], bool] = lambda _r: True,
    progress: Callable[[int, int], None] | None = None,
) -> PlanSearch:
    """The `top` fastest plans that fit (`memory_limit` bytes per GPU, the HBM by default) and that `accept`
    passes, fastest first."""
    start = clock.perf_counter()
    topology = job_view(topology, gpus)
    check_compute_dtype(topology, base)  # the search's bounds read the peak before any plan is prepared
    check_wgrad_deferral(model, base)  # refused in every layout the search would try
    check_unfused_softmax(base)  # with flash attention, likewise
    limit = memory_limit or topology.gpu.hbm
    if limit < topology.gpu.hbm:  # a plan "fits" in the limit: every automatic choice (ZeRO, recompute) holds it
        topology = topology.model_copy(update={"gpu": topology.gpu.model_copy(update={"hbm": limit})})
    seq_len = _seq_len(model, base)
    every = list(candidates(model, topology, gpus, base))
    if not every:
        raise InputError(
            "--global-batch",
            f"{base.batch.global_batch:,} sequences split evenly over no plan's data-parallel size on {gpus:,} GPUs "
            "(micro-batch x DP must divide it): give a multiple of the GPUs",
        )
    found = PlanSearch(gpus, limit, base.batch.global_batch or 0, seq_len, candidates=len(every))
    best: list[Found] = []

    def worst() -> float:
        return _step(best[-1]) if len(best) >= top else float("inf")

    # Memory never falls as the micro-batch grows: stage 0 holds b x min(PP, m) micro-batches' activations,
    # m = B / (DP x b), under each recomputation policy. So the smallest micro-batch of a layout that does not fit
    # at a ZeRO stage rules out the larger ones at that stage (the rank order changes no memory).
    smallest_miss: dict[tuple[int, ...], int] = {}
    places: dict[tuple[Layout, str], Placement] = {}

    def refused(exc: Exception) -> None:
        """A plan estimate or its memory refuses by the layout's own rules: counted under the flag it names."""
        found.invalid += 1
        key = str(exc).split(":", 1)[0]
        found.reasons[key] = found.reasons.get(key, 0) + 1

    def missed(key: tuple[int, ...], micro_batch: int) -> None:
        found.over_memory += 1
        smallest_miss[key] = min(micro_batch, smallest_miss.get(key, micro_batch))

    def price(options: Options, miss: tuple[int, ...] | None = None) -> None:
        """Cost one plan and keep it among the best if it fits; a layout's `miss` key records it when it does not."""
        nonlocal best
        try:
            cost, report_of = costed(model, topology, options)
        except (InputError, ValueError) as exc:
            refused(exc)
            return
        found.priced += 1
        if not cost.fits or cost.memory_bytes > limit:
            if miss is None:
                found.over_memory += 1
            else:
                missed(miss, options.batch.micro_batch)
            return
        if len(best) >= top and _rank_of(cost) >= _rank(best[-1]):
            return  # it would rank below the kept plans: no report to build
        report = report_of()
        if accept(report):
            best = _insert(best, Found(options, report), top)

    def layout(shape: Shape, options: Options, stage: int) -> bool:
        """Cost a layout at ZeRO `stage` unless a bound sets it aside; True where it fits only by recomputing every
        layer, or not at all (where Megatron-FSDP may do better: the second pass)."""
        sizes = (shape.tp, shape.cp, shape.pp, shape.ep, shape.dp, shape.virtual_stages, stage)
        mb = options.batch.micro_batch
        floor = states_lower_bound(model, shape, state_bytes_floor(options))
        if stage == 3:  # Megatron-FSDP shards the weights and gradients over DP x CP too
            floor /= shape.dp * shape.cp
            options = options.model_copy(update={"plan": options.plan.model_copy(update={"zero": 3})})
        if floor > limit or mb >= smallest_miss.get(sizes, mb + 1):
            found.over_memory += 1
            return True
        if step_lower_bound(model, topology, options, gpus, seq_len, places=places) >= worst():
            found.slower += 1
            return False
        if stage == 3 and fsdp_gather_seconds(model, topology, options, places) >= worst():
            found.slower += 1
            return False
        try:
            recompute = layout_recompute(model, topology, options)
        except (InputError, ValueError) as exc:
            refused(exc)
            return False
        if recompute is None:
            missed(sizes, mb)
            return True
        # a layout that fits only by re-running its forward: bound it with that work too
        if (
            recompute != "none"
            and step_lower_bound(model, topology, options, gpus, seq_len, recompute, places) >= worst()
        ):
            found.slower += 1
        else:
            price(options, sizes)
        return recompute == "full"

    pressed: list[tuple[Shape, Options]] = []  # layouts the distributed optimizer fits only fully recomputed, or not
    for i, (shape, options) in enumerate(every):
        if progress is not None:
            progress(i, len(every))
        if shape.trivial:
            price(options)
        elif layout(shape, options, 1):
            pressed.append((shape, options))
    # Megatron-FSDP (optim_grads_params) only buys memory: it is tried for those layouts when the plans that fit
    # are fewer than asked for, or the best of them recomputes every layer
    if len(best) < top or (best and best[0].report.setup.recompute == "full"):
        found.candidates += len(pressed)
        for shape, options in pressed:
            layout(shape, options, 3)
    found.best = _refine_buckets(model, topology, best, limit, accept)
    found.priced += len(best) * len(BUCKET_SCALES)
    if progress is not None:
        progress(len(every), len(every))
    found.seconds = clock.perf_counter() - start
    return found


def _step(found: Found) -> float:
    """The plan's step (every plan searched trains, so it has one)."""
    step = found.report.summary.step_seconds
    return float("inf") if step is None else step


def _rank(found: Found) -> tuple[float, int]:
    """Fastest first; of equal steps, the one with less memory."""
    return _step(found), found.report.summary.memory_bytes


def _rank_of(cost: PlanCost) -> tuple[float, int]:
    """A costed plan's place in `_rank`'s order (its report's summary reads the same figures)."""
    return float("inf") if cost.step_seconds is None else cost.step_seconds, cost.memory_bytes


def _ranked(plans: list[Found]) -> list[Found]:
    return sorted(plans, key=_rank)


def _insert(best: list[Found], new: Found, top: int) -> list[Found]:
    return _ranked([*best, new])[:top]


def _refine_buckets(
    model: ModelSpec, topology: TopologySpec, best: list[Found], limit: float, accept: Callable[[EstimateReport], bool]
) -> list[Found]:
    """Each best plan at a quarter and four times its framework's bucket, kept where faster (and still fitting)."""
    out = []
    for f in best:
        chosen = f
        bucket = f.report.setup.bucket_bytes
        for scale in BUCKET_SCALES if bucket else ():
            comm = f.options.communication.model_copy(update={"bucket_bytes": bucket * scale})
            options = f.options.model_copy(update={"communication": comm})
            try:
                cost, report_of = costed(model, topology, options)
            except (InputError, ValueError):
                continue
            if not cost.fits or cost.memory_bytes > limit or _rank_of(cost)[0] >= _step(chosen):
                continue  # kept only where faster
            report = report_of()
            if accept(report):
                chosen = Found(options, report)
        out.append(chosen)
    return _ranked(out)


def ahead_of_next(this: EstimateReport, after: EstimateReport) -> str:
    """Why `this` beats `after`, from their step breakdowns: the terms the next plan loses most on, and those it
    gains most on, if any (_main_changes)."""
    assert this.time is not None and after.time is not None
    mine = {b.term: b.seconds for b in this.time.breakdown}
    theirs = {b.term: b.seconds for b in after.time.breakdown}
    changes = sorted(((theirs.get(k, 0.0) - mine.get(k, 0.0), k) for k in mine.keys() | theirs.keys()), reverse=True)
    gap = after.time.step_seconds - this.time.step_seconds
    if gap <= 0:
        return "as fast as the next, with less memory"
    text = f"{fmt_seconds(gap)} faster than the next"
    if loses := _main_changes([(d, k) for d, k in changes if d > 0]):
        text += ", which spends " + _and([f"{fmt_seconds(d)} more on {k}" for d, k in loses])
    if gains := _main_changes([(-d, k) for d, k in reversed(changes) if d < 0]):
        text += ", for " + _and([f"{fmt_seconds(d)} less {k}" for d, k in gains])
    # the terms left unnamed, net, so that what is named and this add up to the gap
    rest = gap - sum(d for d, _ in loses) + sum(d for d, _ in gains)
    if abs(rest) >= 0.01 * gap:
        text += f"; {fmt_seconds(abs(rest))} {'more' if rest > 0 else 'less'} on the other terms, net"
    return text


def _main_changes(changes: list[tuple[float, str]]) -> list[tuple[float, str]]:
    """The largest of `changes` (seconds, term; largest first) that make up 90% of their sum, at most three."""
    total, out = sum(d for d, _ in changes), []
    for d, k in changes[:3]:
        out.append((d, k))
        if sum(x for x, _ in out) >= 0.9 * total:
            break
    return out


def _and(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def plan_result(
    model: ModelSpec, topology: TopologySpec, found: PlanSearch, model_args: list[str], topology_arg: str
) -> PlanResult:
    """The search as `dpcost plan` reports it (report.PlanResult)."""
    from dpcost.engine.estimate import model_info, topology_info

    rows = []
    for rank, f in enumerate(found.best, 1):
        r, s = f.report, f.report.summary
        assert r.time is not None and s.step_seconds is not None and s.mfu is not None
        layout = r.layout
        nxt = found.best[rank].report if rank < len(found.best) else None
        as_chosen = {"zero": r.setup.zero_stage, "recompute": r.setup.recompute}
        chosen = f.options.model_copy(update={"plan": f.options.plan.model_copy(update=as_chosen)})
        command = " ".join(["dpcost", "estimate", *model_args, "-t", topology_arg, *chosen.flags()])
        rows.append(
            PlanRow(
                rank=rank,
                tp=layout.tp if layout else 1,
                cp=layout.cp if layout else 1,
                pp=layout.pp if layout else 1,
                dp=r.setup.dp,
                ep=layout.ep if layout else 1,
                virtual_stages=layout.virtual_stages if layout else 1,
                order=layout.order if layout else DEFAULT_ORDER,
                framework=r.setup.framework or "generic",
                zero_stage=r.setup.zero_stage,
                shard_group=f.options.plan.shard_group,
                recompute=r.setup.recompute,
                micro_batch=r.setup.micro_batch,
                accumulation=r.setup.accumulation,
                bucket_bytes=r.setup.bucket_bytes,
                step_seconds=s.step_seconds,
                tokens_per_second=s.tokens_per_second,
                mfu=s.mfu,
                memory_bytes=s.memory_bytes,
                headroom_bytes=max(0, int(found.memory_limit) - s.memory_bytes),
                bound=s.bound,
                bound_reason=s.bound_reason,
                ahead_of_next=ahead_of_next(r, nxt) if nxt is not None else "",
                command=command,
            )
        )
    first = found.best[0].report if found.best else None
    seq_len = first.setup.seq_len if first else found.seq_len
    global_batch = first.setup.global_batch if first else found.global_batch
    if rows:
        best = rows[0]
        verdict = (
            f"best of {found.candidates:,} plans: TP {best.tp} x CP {best.cp} x PP {best.pp} x DP {best.dp}"
            + (f" (EP {best.ep})" if best.ep > 1 else "")
            + f", {fmt_seconds(best.step_seconds)} per step, MFU {best.mfu:.1%}, {best.bound}-bound"
        )
    else:
        limit = f"{found.memory_limit / 1e9:.1f} GB"
        verdict = f"no plan of {found.candidates:,} fits in {limit} per GPU and holds the limits"
    return PlanResult(
        model=model_info(model),
        topology=topology_info(topology),
        gpus=found.gpus,
        global_batch=global_batch,
        seq_len=seq_len,
        memory_limit_bytes=int(found.memory_limit),
        verdict=verdict,
        plans=rows,
        searched=SearchCounts(
            candidates=found.candidates,
            invalid=found.invalid,
            over_memory=found.over_memory,
            slower=found.slower,
            priced=found.priced,
            seconds=found.seconds,
        ),
    )
