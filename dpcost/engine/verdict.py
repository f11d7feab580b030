"""The verdict a report leads with: the plan, whether it fits, the step that counts, what binds it, and the warning
to read first. Every figure is one the report already holds; this module only chooses and words them."""

from __future__ import annotations

from collections.abc import Sequence

from dpcost.engine.advice import headline
from dpcost.engine.report import Advice, Bound, Memory, Serving, Setup, Summary, Time
from dpcost.engine.step import BUBBLE, HOST_LISTS, HOST_WAIT
from dpcost.units import fmt_bytes, fmt_seconds

__all__ = ["bound", "bound_reason", "fastest_that_fits", "serving_summary", "training_summary"]


def bound(compute: float, exposed: float, bubble: float = 0.0, host: float = 0.0) -> Bound:
    """What the step spends most of its time on: compute, the communication it waits for, a pipeline's bubble or
    the host (that launches a layout's MoE layers, or builds DeepSpeed's list collectives) (the breakdown's terms,
    which sum to the step; the losses at scale are none of them)."""
    if host > max(compute, exposed, bubble):
        return "host"
    if bubble > max(compute, exposed):
        return "pipeline bubble"
    return "communication" if exposed > compute else "compute"


def bound_reason(t: Time) -> str:
    """Why the step is bound as it is, in words that hold whatever the schedule overlaps."""
    if t.bound == "pipeline bubble":
        bubble = sum(term.seconds for term in t.breakdown if term.term == BUBBLE)
        return (
            f"{fmt_seconds(bubble)} idle in the pipeline's bubble ({bubble / t.step_seconds:.0%} of the step), "
            f"{fmt_seconds(t.compute_seconds)} computing, {fmt_seconds(t.exposed_comm_seconds)} waiting on collectives"
        )
    if t.bound == "host":
        host = sum(term.seconds for term in t.breakdown if term.term == HOST_WAIT)
        lists = sum(term.seconds for term in t.breakdown if term.term == HOST_LISTS)
        what = "to build each list collective" if lists > host else "to launch the MoE layers"
        return (
            f"{fmt_seconds(max(host, lists))} waiting for the host {what} ({max(host, lists) / t.step_seconds:.0%} of "
            f"the step), {fmt_seconds(t.compute_seconds)} computing"
        )
    if t.comm_seconds == 0:
        return "nothing to communicate"
    if t.bound == "communication":
        return (
            f"{fmt_seconds(t.exposed_comm_seconds)} waiting on collectives, {fmt_seconds(t.compute_seconds)} computing"
        )
    if t.exposed_comm_seconds <= 1e-9 * t.step_seconds:
        return "communication hides behind the compute"
    return (
        f"{fmt_seconds(t.exposed_comm_seconds)} of communication left exposed "
        f"({t.exposed_comm_seconds / t.step_seconds:.0%} of the step)"
    )


def _chosen(setup: Setup, fits: bool) -> str:
    """What dpcost chose for the user (the ZeRO stage, the recomputation or both), and on what ground."""
    if setup.zero_stage_chosen and setup.recompute_chosen:
        what = "both chosen"
    elif setup.zero_stage_chosen:
        what = "ZeRO stage chosen"
    elif setup.recompute_chosen:
        what = "recompute chosen"
    else:
        return ""
    return f" ({what}: {'the fastest that fits' if fits else 'nothing fits, the nearest miss'})"


def _schedule(setup: Setup) -> str:
    return "generic schedule" if setup.framework == "none" else f"as {setup.framework} runs it"


def training_summary(setup: Setup, memory: Memory, time: Time, warnings: Sequence[Advice]) -> Summary:
    """A training plan's verdict: the costed stage's memory against HBM and time.step_seconds."""
    row = memory.stages[setup.zero_stage]
    plan = (
        f"ZeRO-{setup.zero_stage}, recompute {setup.recompute}{_chosen(setup, row.fits)}, {_schedule(setup)}"
        + (f", offload {setup.offload}" if setup.offload != "none" else "")
        + f"; micro-batch {setup.micro_batch} x accum {setup.accumulation} x DP {setup.dp}"
    )
    fit = "fits" if row.fits else "does NOT fit"
    return Summary(
        verdict=f"{fit}: {fmt_bytes(row.total_bytes)} of {fmt_bytes(memory.hbm_bytes)} per GPU; "
        f"{fmt_seconds(time.step_seconds)} per step, {time.bound}-bound",
        plan=plan,
        fits=row.fits,
        memory_bytes=row.total_bytes,
        hbm_bytes=memory.hbm_bytes,
        headroom_bytes=max(0, memory.hbm_bytes - row.total_bytes),
        shortfall_bytes=max(0, row.total_bytes - memory.hbm_bytes),
        max_micro_batch=row.max_micro_batch,
        step_seconds=time.step_seconds,
        tokens_per_second=time.tokens_per_second,
        mfu=time.mfu,
        scaling_efficiency=time.scaling_efficiency,
        bound=time.bound,
        bound_reason=bound_reason(time),
        top_warning=headline(warnings),
    )


def serving_summary(setup: Setup, serving: Serving, hbm_bytes: int, warnings: Sequence[Advice]) -> Summary:
    """A serving plan's verdict: one replica's memory against one GPU's HBM, and the decode rate of all replicas.
    A replica that needs several GPUs does not fit (pure DP keeps a whole replica on each GPU)."""
    gpus = serving.gpus_per_replica
    if serving.fits:
        fit = "fits on one GPU"
    elif serving.replicas == 0:
        fit = f"does NOT fit: one replica needs {gpus} GPUs, --dp {setup.dp} holds none"
    else:
        fit = f"does NOT fit on one GPU: {gpus} per replica"
    memory = serving.per_gpu_bytes if serving.fits else serving.total_bytes
    return Summary(
        verdict=f"{fit}: {fmt_bytes(memory)} per replica, {fmt_bytes(hbm_bytes)} per GPU; "
        f"{serving.tokens_per_second:,.0f} tokens/s decoding, {serving.bound}-bound",
        plan=f"{serving.replicas} replica{'' if serving.replicas == 1 else 's'} of {gpus} "
        f"GPU{'' if gpus == 1 else 's'} on {setup.dp} GPUs, {setup.micro_batch} "
        f"sequence{'' if setup.micro_batch == 1 else 's'} of {setup.seq_len} tokens each",
        fits=serving.fits,
        memory_bytes=memory,
        hbm_bytes=hbm_bytes,
        headroom_bytes=max(0, hbm_bytes - memory),
        shortfall_bytes=max(0, memory - hbm_bytes),
        max_micro_batch=None,
        step_seconds=None,
        tokens_per_second=serving.tokens_per_second,
        mfu=None,
        scaling_efficiency=None,
        bound=serving.bound,
        bound_reason="decoding reads every weight and the KV cache once per token"
        if serving.bound.startswith("memory")
        else "decoding does more math per token than its bytes can hide",
        top_warning=headline(warnings),
    )


def fastest_that_fits(summaries: Sequence[Summary]) -> int:
    """The index of a sweep's best row: the most tokens/s among the plans that fit; if none fits, the smallest
    shortfall (the nearest miss)."""
    fitting = [i for i, v in enumerate(summaries) if v.fits]
    if fitting:
        return max(fitting, key=lambda i: summaries[i].tokens_per_second)
    return min(range(len(summaries)), key=lambda i: summaries[i].shortfall_bytes)
