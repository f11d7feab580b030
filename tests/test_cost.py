"""The cost core (engine/cost.py): a plan's plain numbers are the ones its report's summary prints, for every kind
of plan a search or a batch caller costs, and the batch APIs return them plan by plan."""

from __future__ import annotations

import subprocess
import sys

import pytest

import dpcost
from dpcost import Options, load_model, load_topology
from dpcost.engine.cost import PlanCost, cost_many, plan_cost
from dpcost.engine.estimate import estimate, estimate_many
from dpcost.errors import InputError

PLANS: dict[str, tuple[str, str, Options]] = {
    "ZeRO and recomputation chosen": ("llama-70b", "dgx-h100", Options(dp=512)),
    "ZeRO-3, full recomputation": ("llama-70b", "dgx-h100", Options(dp=64, zero=3, recompute="full")),
    "ZeRO-1, DeepSpeed's buckets": ("llama-8b", "dgx-h100", Options(dp=16, zero=1, framework="deepspeed")),
    "DDP, does not fit": ("llama-70b", "dgx-h100", Options(dp=8, zero=0, recompute="none")),
    "FSDP hybrid sharding": ("llama-70b", "dgx-h100", Options(dp=64, framework="fsdp", zero=3, shard_group=8)),
    "op-by-op compute, accumulation": ("llama-8b", "dgx-a100", Options(dp=32, global_batch=256, compute_model="ops")),
    "a variant beside the plain plan": ("llama-8b", "dgx-h100", Options(dp=64, zero=3, zeropp="hpz,qwz")),
    "Meta's 405B layout": (
        "llama-405b",
        "dgx-h100",
        Options(dp=128, tp=8, pp=16, global_batch=2048, seq_len=8192, sequence_parallel=True),
    ),
    "DeepSeek-V3's layout": (
        "deepseek-v3",
        "hgx-h800",
        Options(dp=128, pp=16, ep=64, global_batch=15360, seq_len=4096, first_stage_layers=4, last_stage_layers=1),
    ),
    "serving": ("llama-8b", "dgx-h100", Options(dp=8, mode="inference")),
}


@pytest.mark.parametrize("name", list(PLANS))
def test_a_plans_cost_is_its_reports_summary(name: str) -> None:
    model, topology, options = PLANS[name]
    m, t = load_model(model), load_topology(topology)
    report, cost = estimate(m, t, options), plan_cost(m, t, options)
    s = report.summary
    assert cost == PlanCost(
        step_seconds=s.step_seconds,
        tokens_per_second=s.tokens_per_second or 0.0,
        mfu=s.mfu,
        memory_bytes=s.memory_bytes,
        fits=s.fits,
        zero_stage=report.setup.zero_stage,
        recompute=report.setup.recompute,
    )


def test_training_costs_carry_a_step_and_serving_costs_none() -> None:
    m, t = load_model("llama-8b"), load_topology("dgx-h100")
    train = plan_cost(m, t, Options(dp=8))
    serve = plan_cost(m, t, Options(dp=8, mode="inference"))
    assert train.step_seconds is not None and train.step_seconds > 0 and train.mfu is not None
    assert serve.step_seconds is None and serve.mfu is None and serve.tokens_per_second > 0


def test_the_batch_apis_cost_plan_by_plan_in_order() -> None:
    m, t = load_model("llama-70b"), load_topology("dgx-h100")
    plans = [Options(dp=2**k, zero=3, recompute="full") for k in range(3, 9)]
    costs = cost_many(m, t, plans)
    reports = estimate_many(m, t, plans)
    assert [c.step_seconds for c in costs] == [r.summary.step_seconds for r in reports]
    assert [c.memory_bytes for c in costs] == [r.summary.memory_bytes for r in reports]
    # ZeRO-3's states shrink as DP grows (the ZeRO paper's 16 bytes per parameter / DP)
    assert [c.memory_bytes for c in costs] == sorted((c.memory_bytes for c in costs), reverse=True)


def test_the_package_exports_the_cost_core() -> None:
    assert dpcost.plan_cost is plan_cost and dpcost.cost_many is cost_many and dpcost.PlanCost is PlanCost


def test_the_cost_core_builds_no_report() -> None:
    """Issue 20: the report is built once, at the end. Costing pure data-parallel training plans in bulk (a fixed
    plan, the automatic choice, hybrid sharding) never imports the report's classes; asking for one report does."""
    code = (
        "import sys\n"
        "from dpcost import Options, cost_many, load_model, load_topology\n"
        "from dpcost.engine.cost import costed\n"
        "m, t = load_model('llama-70b'), load_topology('dgx-h100')\n"
        "plans = [Options(dp=64, zero=3, recompute='full'), Options(dp=512), Options(dp=64, zero=3, shard_group=8)]\n"
        "cost_many(m, t, plans)\n"
        "before = 'dpcost.engine.report' in sys.modules\n"
        "costed(m, t, plans[0])[1]()\n"
        "print(before, 'dpcost.engine.report' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert run.stdout.split() == ["False", "True"], run.stderr


REFUSED: dict[str, tuple[str, Options]] = {
    "a global batch DP does not divide": ("llama-8b", Options(dp=64, global_batch=100)),
    "a shard group at ZeRO-0": ("llama-70b", Options(dp=64, zero=0, shard_group=8)),
    "FSDP at ZeRO-1": ("llama-8b", Options(dp=64, framework="fsdp", zero=1)),
    "a variant of a serving plan": ("llama-8b", Options(dp=64, mode="inference", zeropp="hpz")),
    "a variant of a layout": ("llama-70b", Options(dp=8, tp=8, sequence_parallel=True, compression="powersgd")),
    "ZeRO++ under DDP, which has no ZeRO-3": ("llama-8b", Options(dp=64, framework="ddp", zeropp="hpz")),
    "two variants at once": ("llama-8b", Options(dp=64, zeropp="hpz", compression="powersgd")),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_a_plan_estimate_refuses_is_refused_by_its_cost_alike(name: str) -> None:
    model, options = REFUSED[name]
    m, t = load_model(model), load_topology("dgx-h100")
    with pytest.raises(InputError) as refused:
        estimate(m, t, options)
    with pytest.raises(InputError) as also:
        plan_cost(m, t, options)
    assert str(also.value) == str(refused.value)
