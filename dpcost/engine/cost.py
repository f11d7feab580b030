"""The cost core: a plan's cost as plain numbers, what a search ranks and prunes by, without the report.

`costed` costs a plan to its parts once (TrainingParts here for pure data parallelism, layout_report.LayoutParts
for a layout): `plan_cost` reads their plain numbers (PlanCost), and `estimate.estimate` builds the report from the
same parts, so a plan's cost and its report's summary read the same figures; a search builds the report only for
the plans it keeps. A pure data-parallel training plan costs without importing the report (report.py, advice.py,
estimate.py), whose classes load when a report is asked for, or where the figures come from one: a serving plan's,
a variant's, a layout's, and a plan with a note of advice (prepare.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from dpcost.engine import variants
from dpcost.engine.availability import environment, plan_environment
from dpcost.engine.placement import job_view
from dpcost.engine.plan import (
    MicroBatchTime,
    Timed,
    call_time,
    candidates,
    check_forced,
    choose,
    least_step,
    least_step_beside,
    micro_batch_time,
    slowest_gpu_loss,
    timeline,
)
from dpcost.engine.prepare import Prepared, StageMemories, prepare
from dpcost.engine.utilization import model_flops_per_step, model_flops_utilization
from dpcost.frozen import frozen
from dpcost.options import Options
from dpcost.specs import ModelSpec, TopologySpec

if TYPE_CHECKING:
    from dpcost.engine.report import EstimateReport

__all__ = ["PlanCost", "TrainingParts", "cost_many", "costed", "plan_cost", "training_parts"]


@frozen
class PlanCost:
    """One plan: its step and throughput, and the memory per GPU of the ZeRO stage it is costed at (a report's
    `summary`: step_seconds, tokens_per_second, mfu, memory_bytes, fits; `setup`: zero_stage, recompute)."""

    step_seconds: float | None  # None: a serving plan, which has no training step
    tokens_per_second: float
    mfu: float | None
    memory_bytes: int
    fits: bool
    zero_stage: int
    recompute: str


def plan_cost(model: ModelSpec, topology: TopologySpec, options: Options) -> PlanCost:
    """What `estimate` would report for the plan as plain numbers: the same step, memory and fit, from the same
    parts, without building the report. A variant's plan costs as the plain plan it is listed beside."""
    return costed(model, topology, options)[0]


def cost_many(model: ModelSpec, topology: TopologySpec, plans: Iterable[Options]) -> list[PlanCost]:
    """`plan_cost` of many plans of one model on one topology, sharing what a spec's frozen inputs give once
    (collective prices, parameter counts, placements: engine/memo.py) across them."""
    return [plan_cost(model, topology, options) for options in plans]


def costed(model: ModelSpec, topology: TopologySpec, options: Options) -> tuple[PlanCost, Callable[[], EstimateReport]]:
    """The plan's cost, and its report to build from the same parts (estimate.py; a search builds only the reports
    it keeps)."""
    par = options.parallel
    topology = job_view(topology, options.dp * par.tp * par.cp * par.pp)
    if variants.wants_variant(options):
        cost, plain = costed(model, topology, variants.plain(options))
        rows = variants.requested(model, environment(topology, None, None), options)  # refuses what cannot be costed

        def plain_with_variants() -> EstimateReport:
            from dpcost.engine.estimate import with_variants  # the report's module, imported when one is asked for

            return with_variants(plain(), rows)

        return cost, plain_with_variants
    topology, p = _prepared(model, topology, options)
    if p.o.plan.mode == "inference":
        from dpcost.engine.estimate import inference_report  # a serving plan's figures are its report's

        served = inference_report(model, topology, p)
        s = served.summary
        return PlanCost(None, s.tokens_per_second or 0.0, None, s.memory_bytes, s.fits, 0, "none"), lambda: served
    check_forced(p, topology)
    if p.o.megatron_layout:
        from dpcost.engine.layout_report import layout_parts, layout_training  # a layout's: not a pure-DP start's

        layout = layout_parts(model, topology, p)
        return layout.cost(), lambda: layout_training(model, topology, p, layout)
    parts = training_parts(model, topology, p)

    def report() -> EstimateReport:
        from dpcost.engine.estimate import training_report

        return training_report(model, topology, p, parts)

    return parts.cost(), report


def _prepared(model: ModelSpec, topology: TopologySpec, options: Options) -> tuple[TopologySpec, Prepared]:
    """The topology as the run's NCCL environment leaves it (--nvls, --collnet, --nccl-algo), and the plan's resolved
    inputs."""
    topology = plan_environment(topology, options)
    return topology, prepare(model, topology, options)


@frozen
class TrainingParts:
    """A pure data-parallel plan, costed: the (ZeRO stage, recomputation) chosen with its step, and its memory by
    stage and policy (the rows the choice read; `memories.table(policy)` computes the rest)."""

    chosen: Timed
    memories: StageMemories
    global_batch: int
    tokens: int
    mfu: float

    def cost(self) -> PlanCost:
        """The plan's plain numbers: as the report's summary reads them (verdict.training_summary)."""
        row = self.memories.row(self.chosen.stage, self.chosen.recompute)
        step = self.chosen.steps.step
        return PlanCost(step, self.tokens / step, self.mfu, int(row.total), row.fits, self.chosen.stage,
                        self.chosen.recompute)  # fmt: skip


def training_parts(model: ModelSpec, topology: TopologySpec, p: Prepared) -> TrainingParts:
    """The fastest (stage, recomputation) that fits (plan.choose), timed, with the memory it was chosen by."""
    o, a = p.o, model.architecture
    memories = StageMemories(model, topology, p)
    call = call_time(topology, o)
    stages, recomputes = candidates(p, topology, a is not None)
    micro: dict[str, MicroBatchTime] = {}  # each policy's micro-batch, shared by every stage

    def micro_batch(recompute: str) -> MicroBatchTime:
        if recompute not in micro:
            micro[recompute] = micro_batch_time(model, topology, p, recompute)
        return micro[recompute]

    timed_at: dict[int, Timed] = {}  # by stage: its first candidate timed

    def timed(stage: int, recompute: str) -> Timed:
        found = timeline(model, topology, p, stage, recompute, call, micro_batch(recompute))
        timed_at.setdefault(stage, found)
        return found

    def least(stage: int, recompute: str) -> float:
        micro = micro_batch(recompute)
        bound = least_step(topology, p, micro)
        known = timed_at.get(stage)
        if known is None or known.recompute == recompute:
            return bound
        beside = least_step_beside(known, micro, slowest_gpu_loss(topology, p, micro))
        return beside if beside > bound else bound

    chosen = choose(stages, recomputes, memories.fits, timed, least)
    global_batch = p.micro_batch * p.accumulation * o.dp
    model_flops = model_flops_per_step(chosen.flops, p.micro_batch, p.seq_len, p.accumulation)
    mfu = model_flops_utilization(model_flops, chosen.steps.step, topology.gpu.peak(o.compute.compute_dtype))
    return TrainingParts(chosen, memories, global_batch, global_batch * p.seq_len, mfu)
