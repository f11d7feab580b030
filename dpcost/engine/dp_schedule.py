"""A data-parallel step's schedule as data: the stretches of compute a step runs, in order, each with the collectives
issued beside it (or after it, on the compute stream), and how many times per step. One function writes it for every
ZeRO stage and framework; `step.step_time` prices it, and the report's primitives and frequency, and the check that
a forced --algorithm can run a stage, read it.

Per stage (ZeRO paper, section 7; tests/reference/zero-paper-table1.csv): stage 0 all-reduces gradients;
stages 1-2 reduce-scatter gradients and all-gather the updated parameters once per step (after the optimizer
step as DeepSpeed does, or during the next forward as Megatron's --overlap-param-gather does), except FSDP's
SHARD_GRAD_OP, which gathers per unit every micro-batch; stage 3 all-gathers parameters in forward and again in
backward and reduce-scatters gradients: 1.5x the volume. With accumulation over a micro-batches, stages 0-1
communicate once per step (DDP no_sync), after the last backward; stages 2-3 reduce-scatter every micro-batch
unless full gradients are kept (`keep_full_grads`, which costs a full unsharded gradient of memory).
"""

from __future__ import annotations

from functools import cache

from dpcost.frozen import frozen

__all__ = [
    "AFTER_UNIT",
    "BACKWARD",
    "BEFORE_PASS",
    "BEFORE_UNIT",
    "BUCKETS",
    "FORWARD",
    "FORWARD_BACKWARD",
    "NO_COMPUTE",
    "OPTIMIZER",
    "Collective",
    "Stretch",
    "collective_ops",
    "dp_schedule",
    "frequency",
    "primitives",
]

# what a stretch computes
FORWARD, BACKWARD, FORWARD_BACKWARD, OPTIMIZER, NO_COMPUTE = (
    "forward",
    "backward",
    "forward + backward",
    "optimizer",
    "",
)

# when a collective's calls go
BUCKETS = "in buckets, as the backward makes the gradients ready"
AFTER_UNIT = "after each unit's backward"
BEFORE_UNIT = "before each unit, the next one prefetched"
BEFORE_PASS = "before the pass, on the compute stream"  # in the framework's gather calls, or unit by unit

GRADIENTS = "gradients"


@frozen
class Collective:
    """One kind of call in a stretch: the NCCL collective, what it moves, and when its calls go."""

    op: str
    purpose: str
    when: str


@frozen
class Stretch:
    """A stretch of compute, repeated `repeats` times per step, and the collectives issued with it; `overlapped`:
    they run on their own stream beside the compute (else on the compute stream, nothing hidden)."""

    name: str
    compute: str
    repeats: int
    calls: tuple[Collective, ...] = ()
    overlapped: bool = True


@cache  # a pure function of its switches: every plan of a search shares a handful
def dp_schedule(
    stage: int,
    accumulation: int,
    *,
    per_unit: bool = False,
    keep_full_grads: bool = False,
    overlap_param_gather: bool = False,
    overlap_grad_reduce: bool = True,
    bucket_op: str = "reduce_scatter",
) -> tuple[Stretch, ...]:
    """The step of one ZeRO stage over `accumulation` micro-batches, as the framework runs it (module docstring;
    the framework's switches: frameworks.py)."""
    a = accumulation
    out: list[Stretch] = []

    def add(name: str, compute: str, repeats: int, *calls: Collective, overlapped: bool = True) -> None:
        if repeats > 0:
            out.append(Stretch(name, compute, repeats, calls, overlapped))

    def updated_parameters() -> None:
        if overlap_param_gather:  # Megatron: gathered block by block as the next forward reaches them
            add(
                "forward + all_gather (overlapped)",
                FORWARD,
                1,
                Collective("all_gather", "updated parameters", BEFORE_UNIT),
            )
        else:  # DeepSpeed: at the end of the optimizer step, before the next forward can start
            gather = Collective("all_gather", "updated parameters", BEFORE_PASS)
            add("optimizer all_gather, then forward", FORWARD, 1, gather, overlapped=False)

    def bucketed(op: str, repeats: int) -> None:
        add(f"backward + {op}", BACKWARD, repeats, Collective(op, GRADIENTS, BUCKETS), overlapped=overlap_grad_reduce)

    def per_unit_reductions(op: str, repeats: int, gathered: bool = False) -> None:
        """Each unit's gradients reduced after its backward, its parameters gathered first when `gathered`."""
        gathers = (Collective("all_gather", "parameters (backward)", BEFORE_UNIT),) if gathered else ()
        reduce = Collective(op, GRADIENTS, AFTER_UNIT)
        if overlap_grad_reduce:
            add("backward + " + ("all_gather + " if gathered else "") + op, BACKWARD, repeats, *gathers, reduce)
        else:  # the reductions after the pass, on the compute stream
            add("backward + all_gather" if gathered else "backward", BACKWARD, repeats, *gathers)
            add(f"{op} (not overlapped)", NO_COMPUTE, repeats, reduce, overlapped=False)

    kept_once = 1 if keep_full_grads else a  # how many micro-batches reduce, when full gradients may be kept
    if stage in (0, 1):
        op = "all_reduce" if stage == 0 else ("reduce_scatter" if per_unit else bucket_op)
        add("forward + backward (no_sync)", FORWARD_BACKWARD, a - 1)
        if stage == 1:
            updated_parameters()
        else:
            add("forward", FORWARD, 1)
        if per_unit:
            per_unit_reductions(op, 1)
        else:
            bucketed(op, 1)
    elif stage == 2 and per_unit and overlap_param_gather:
        # Megatron-FSDP optim_grads: a full replica of the parameters, the updated ones gathered unit by unit during
        # the next forward; each unit's gradients reduce-scattered after its backward every micro-batch, no_sync or
        # not (megatron_fsdp.py grad_reduce_every_bprop: frameworks.MEGATRON_FSDP)
        updated_parameters()
        add("forward", FORWARD, a - 1)
        per_unit_reductions("reduce_scatter", a)
    elif stage == 2 and per_unit:
        # FSDP SHARD_GRAD_OP. Under no_sync (full gradients kept) the parameters stay unsharded after the first
        # forward's gather (torch/distributed/fsdp/_runtime_utils.py@v2.5.0 _should_free_in_backward)
        add("forward + all_gather", FORWARD, kept_once, Collective("all_gather", "parameters (forward)", BEFORE_UNIT))
        add("forward (parameters kept unsharded)", FORWARD, a - kept_once)
        add("backward (full gradients kept)", BACKWARD, a - kept_once)
        per_unit_reductions("reduce_scatter", kept_once)
    elif stage == 2:
        updated_parameters()
        add("forward", FORWARD, a - 1)
        add("backward (full gradients kept)", BACKWARD, a - kept_once)
        bucketed(bucket_op, kept_once)
    else:
        add("forward + all_gather", FORWARD, a, Collective("all_gather", "parameters (forward)", BEFORE_UNIT))
        again = Collective("all_gather", "parameters (backward)", BEFORE_UNIT)
        add("backward + all_gather", BACKWARD, a - kept_once, again)
        per_unit_reductions("reduce_scatter", kept_once, gathered=True)
    add("optimizer step", OPTIMIZER, 1)
    return tuple(out)


_NCCL_ORDER = ("all_reduce", "reduce_scatter", "all_gather")


def collective_ops(schedule: tuple[Stretch, ...]) -> tuple[str, ...]:
    """The collectives a schedule issues, all-reduce, reduce-scatter, all-gather in that order."""
    issued = {c.op for s in schedule for c in s.calls}
    return tuple(op for op in _NCCL_ORDER if op in issued)


def primitives(schedule: tuple[Stretch, ...]) -> str:
    """The schedule's collectives, named as NCCL's."""
    names = {"all_reduce": "AllReduce", "reduce_scatter": "ReduceScatter", "all_gather": "AllGather"}
    return " + ".join(names[op] for op in collective_ops(schedule))


def _times_per_step(schedule: tuple[Stretch, ...], gathers: bool) -> int:
    """How many times per step the gradients are reduced, or (`gathers`) a forward gathers the parameters."""
    if gathers:
        return sum(s.repeats for s in schedule if s.compute == FORWARD and any(c.op == "all_gather" for c in s.calls))
    return sum(s.repeats for s in schedule if any(c.purpose == GRADIENTS for c in s.calls))


def frequency(schedule: tuple[Stretch, ...], accumulation: int) -> str:
    """How often the schedule communicates, in words: its gradient reductions and its parameter gathers, each once
    per step or every micro-batch."""
    a = accumulation
    if a == 1:
        return "every step (1 micro-batch)"
    reduced, gathered = _times_per_step(schedule, gathers=False), _times_per_step(schedule, gathers=True)
    every = f"every micro-batch ({a} per step)"
    once = f"once per step, after the last of {a} micro-batches"
    if gathered in (0, reduced):
        return once if reduced == 1 else every
    return f"gradients {once if reduced == 1 else every}; parameters gathered " + (
        "once per step" if gathered == 1 else every
    )
