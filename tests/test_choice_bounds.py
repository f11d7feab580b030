"""The automatic (ZeRO stage, recomputation) choice skips candidates by lower bounds: on the step (plan.choose:
least_step, and least_step_beside from a policy timed at the same stage) and on the device total (StageMemories.fits).
Each bound holds by the mechanism it names, and the choice is the one an exhaustive loop of `estimate` calls finds."""

from __future__ import annotations

import pytest

from dpcost import Options, load_model, load_topology
from dpcost.engine.checkpointing import RECOMPUTE
from dpcost.engine.estimate import estimate
from dpcost.engine.plan import (
    call_time,
    least_step,
    least_step_beside,
    micro_batch_time,
    recompute_policies,
    slowest_gpu_loss,
    timeline,
)
from dpcost.engine.prepare import StageMemories, prepare
from dpcost.errors import InputError

# Pure-DP plans across what moves memory and the step: frameworks, recipes, offload, the compute model, skew,
# accumulation, hybrid sharding, a model given only as a parameter count.
PLANS: list[tuple[str, str, dict[str, object]]] = [
    ("llama-70b", "dgx-h100", {"dp": 8}),
    ("llama-70b", "dgx-h100", {"dp": 512}),
    ("llama-70b", "dgx-h100", {"dp": 4096}),
    ("llama-8b", "dgx-h100", {"dp": 8}),
    ("llama-8b", "dgx-h100", {"dp": 64, "global_batch": 512}),
    ("llama-8b", "dgx-a100", {"dp": 32, "compute_model": "ops", "skew": 0.1}),
    ("llama-8b", "dgx-h100", {"dp": 16, "framework": "deepspeed"}),
    ("llama-8b", "dgx-h100", {"dp": 16, "framework": "fsdp", "shard_group": 8}),
    ("llama-8b", "dgx-h100", {"dp": 16, "framework": "megatron"}),
    ("llama-8b", "dgx-h100", {"dp": 16, "grads_between_steps": "kept", "global_batch": 256}),
    ("llama-70b", "dgx-h100", {"dp": 64, "framework": "deepspeed", "offload": "optimizer"}),
    ("mixtral-8x7b", "dgx-h100", {"dp": 64}),
    ("gpt3-175b", "dgx-a100", {"dp": 1024, "compute_model": "flops"}),
]
IDS = [f"{m}-{'-'.join(f'{k}={v}' for k, v in o.items())}" for m, _, o in PLANS]


@pytest.mark.parametrize(("name", "topology", "given"), PLANS, ids=IDS)
def test_the_bounds_hold_at_every_stage_and_policy(name: str, topology: str, given: dict[str, object]) -> None:
    """least_total never exceeds a row's device total (memory.phases' optimizer step holds every model state), nor
    does least_forward_total (its forward holds the states it carries and the kept activations, with buffers and the
    loss's peak >= 0 above them); least_step never exceeds a timed step (each phase loses at least its compute x
    s / (1 - s) to the slowest GPU, and every other term of the step's breakdown beyond compute is >= 0)."""
    model, topo = load_model(name), load_topology(topology)
    p = prepare(model, topo, Options(**given))  # type: ignore[arg-type]
    memories, call = StageMemories(model, topo, p), call_time(topo, p.o)
    checked = 0
    for stage in p.stages():
        for recompute in recompute_policies(p):
            total = memories.row(stage, recompute).total
            assert memories.least_total(stage) <= total
            assert memories.least_forward_total(stage, recompute) <= total
            micro = micro_batch_time(model, topo, p, recompute)
            try:
                timed = timeline(model, topo, p, stage, recompute, call, micro)
            except InputError:
                continue
            assert least_step(topo, p, micro) <= timed.steps.step
            checked += 1
    assert checked >= 4


@pytest.mark.parametrize(("name", "topology", "given"), PLANS, ids=IDS)
def test_the_bound_from_another_policy_holds(name: str, topology: str, given: dict[str, object]) -> None:
    """least_step_beside, from any timed policy at a stage, never exceeds another policy's timed step there: each
    phase lasts at least its calls (one stream), and at least its compute at the slowest GPU's rate plus the
    slowdown of the calls beside it; the calls are the stage's whatever the recomputation."""
    model, topo = load_model(name), load_topology(topology)
    p = prepare(model, topo, Options(**given))  # type: ignore[arg-type]
    call = call_time(topo, p.o)
    pairs = 0
    for stage in p.stages():
        timed = {}
        for recompute in recompute_policies(p):
            micro = micro_batch_time(model, topo, p, recompute)
            try:
                timed[recompute] = (micro, timeline(model, topo, p, stage, recompute, call, micro))
            except InputError:
                continue
        for known_micro, known in timed.values():
            for micro, other in timed.values():
                loss = slowest_gpu_loss(topo, p, known_micro)
                assert least_step_beside(known, micro, loss) <= other.steps.step * (1 + 1e-12)
                pairs += 1
    assert pairs >= 4


@pytest.mark.parametrize(("name", "topology", "given"), PLANS, ids=IDS)
def test_the_choice_is_the_exhaustive_loops(name: str, topology: str, given: dict[str, object]) -> None:
    """estimate's automatic choice is the fastest fitting plan among estimate calls at every stage and policy the
    framework runs, ties to the lower stage and the lighter recomputation; where none fits, the nearest miss: the
    last stage with the most recomputation."""
    model, topo = load_model(name), load_topology(topology)
    chosen = estimate(model, topo, Options(**given)).setup  # type: ignore[arg-type]
    p = prepare(model, topo, Options(**given))  # type: ignore[arg-type]
    fitting, tried = [], []
    for stage in p.stages():
        if given.get("shard_group") and stage == 0:
            continue
        if given.get("offload") == "optimizer" and stage == 0:
            continue
        for recompute in recompute_policies(p):
            tried.append((stage, recompute))
            report = estimate(model, topo, Options(**given, zero=stage, recompute=recompute))  # type: ignore[arg-type]
            if report.summary.fits:
                fitting.append((report.summary.step_seconds, stage, RECOMPUTE.index(recompute), recompute))
    if fitting:
        _, stage, _, recompute = min(fitting)
    else:
        stage, recompute = tried[-1]
    assert (chosen.zero_stage, chosen.recompute) == (stage, recompute)
