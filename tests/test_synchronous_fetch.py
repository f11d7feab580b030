"""DeepSpeed's ZeRO-3 before v0.6.0, --zero3-fetch synchronous (dpcost/engine/synchronous_fetch.py): each parameter
gathered in a call of its own, prefetched a unit ahead, each gradient reduce-scattered in a call of its own, and each
list call's host loop over the ranks on the critical path."""

from __future__ import annotations

import pytest
from conftest import cli_report as report
from conftest import run_cli as run

from dpcost.catalog import load_model
from dpcost.engine.params import block_vectors
from dpcost.engine.step import HOST_LISTS, Call, StepPlan, Unit, step_time
from dpcost.engine.synchronous_fetch import (
    LIST_HOST_SECONDS_PER_RANK,
    PERSISTENCE_ELEMENTS,
    gathered_tensors,
    reduced_tensors,
)

# Two equal units: two matrices of 6e5 and 4e5 elements, and three 1e4-element norm weights and biases lumped as one
UNIT = Unit(1.03e6, 0.5, (6e5, 4e5, 3e4), vectors=3)


def _plan(**kw: object) -> StepPlan:
    base = dict(stage=3, accumulation=1, forward=1.0, backward=2.0, units=(UNIT, UNIT), grad_bytes=2.0,
                weight_bytes=2.0, bucket_bytes=0.0, ranks=100, synchronous_fetch=True,
                list_host_seconds=1e-5)  # fmt: skip
    base.update(kw)
    return StepPlan(**base)  # type: ignore[arg-type]


def call(op: str, size: float) -> Call:
    return Call(1e-3 + size / 1e9, "ring/simple")  # 1 ms latency, 1 GB/s


def test_the_persistence_threshold_is_deepspeeds() -> None:
    """stage3.py persistent_parameters: `param.ds_numel < self.persistence_threshold` stays whole (1e5 by default,
    zero/constants.py at v0.3.16 and v0.5.10); the rest is gathered."""
    assert PERSISTENCE_ELEMENTS == 100_000
    assert gathered_tensors((1e5, 99_999.0), 0) == ((1e5, 1),)
    assert reduced_tensors((6e5, 4e5, 3e4), 3) == ((6e5, 1), (4e5, 1), (1e4, 3))
    assert gathered_tensors((6e5, 4e5, 3e4), 3) == ((6e5, 1), (4e5, 1))


def test_a_compute_bound_step_is_the_first_gather_the_host_and_the_compute_and_the_last_reduction() -> None:
    """Per unit and pass the two matrices are gathered, a call each (1 ms + 2 x elements / 1 GB/s: 4.0 ms a unit),
    the next unit's beside this one's compute; after each unit's backward every tensor is reduce-scattered, the
    three persistent ones too (4.0 ms + 3 x 1.02 ms); before each unit's compute the host spends 100 ranks x 10 us
    on each of its calls' lists (2 calls forward, 7 backward). Compute-bound, a pass is its first gather, each unit's
    host time and compute, and the last unit's reductions."""
    gather, reductions, lists = 4.0e-3, 4.0e-3 + 3 * 1.02e-3, 1e-3
    forward = gather + 2 * (0.5 + 2 * lists)
    backward = gather + 2 * (1.0 + 7 * lists) + reductions
    t = step_time(_plan(), call)
    assert t.step == pytest.approx(forward + backward, rel=1e-12)
    assert t.host == pytest.approx(2 * (2 + 7) * lists, rel=1e-12)
    assert t.serial == pytest.approx(3.0 + 4 * gather + 2 * reductions + t.host, rel=1e-12)
    calls = {(x.op, x.purpose): x.calls for x in t.traffic}
    assert calls == {("all_gather", "parameters (forward)"): 4, ("all_gather", "parameters (backward)"): 4,
                     ("reduce_scatter", "gradients"): 10}  # fmt: skip


def test_the_host_loop_is_on_the_critical_path() -> None:
    """Without it the compute-bound step is shorter by the host's time alone: nothing hides it."""
    with_loop, without = step_time(_plan(), call), step_time(_plan(list_host_seconds=0.0), call)
    assert with_loop.step - without.step == pytest.approx(with_loop.host, rel=1e-9) and without.host == 0


@pytest.mark.parametrize(("model", "vectors"), [("llama-8b", 2), ("gpt3-175b", 10)])
def test_a_blocks_small_tensors_are_its_norms_and_biases(model: str, vectors: int) -> None:
    """As the HF modules hold them: Llama's two RMSNorm weights, no bias; GPT-3's two LayerNorms' weights and biases,
    and a bias on q, k, v, the output projection and both MLP matrices."""
    a = load_model(model).architecture
    assert a is not None
    assert block_vectors(a, False) == vectors


FLAGS = ["--model", "llama-8b", "--dp", "64", "--framework", "deepspeed", "--zero", "3"]


def test_prefetched_is_the_default() -> None:
    given = report("estimate", *FLAGS, "--zero3-fetch", "prefetched")
    default = report("estimate", *FLAGS)
    assert given["time"] == default["time"] and given["memory"] == default["memory"]


def test_the_host_waits_a_rank_for_every_call_of_the_step() -> None:
    """The report's host term is every call it lists (a tensor a call), each 64 ranks x the fitted time a rank; the
    memory is the prefetched fetch's."""
    r = report("estimate", *FLAGS, "--zero3-fetch", "synchronous")
    default = report("estimate", *FLAGS)
    calls = sum(c["calls"] for c in r["communication"]["collectives"])
    host = {b["term"]: b["seconds"] for b in r["time"]["breakdown"]}[HOST_LISTS]
    assert host == pytest.approx(calls * 64 * LIST_HOST_SECONDS_PER_RANK, rel=1e-9)
    assert r["time"]["step_seconds"] > r["time"]["compute_seconds"] + host  # nothing hides the host's time
    assert r["memory"] == default["memory"] and HOST_LISTS not in str(default["time"]["breakdown"])


@pytest.mark.parametrize(
    ("extra", "flag"),
    [
        (["--framework", "fsdp"], "--zero3-fetch"),  # not DeepSpeed's
        (["--zero", "2"], "--zero3-fetch"),
        (["--tp", "2"], "--zero3-fetch"),  # a layout: Megatron's
    ],
)
def test_the_fetch_is_deepspeeds_zero_3_alone(extra: list[str], flag: str) -> None:
    args = [*FLAGS, "--zero3-fetch", "synchronous", *extra]
    code, out, err = run("estimate", *args)
    assert code == 2 and out == "" and err.count("\n") == 1 and flag in err


def test_the_host_time_prices_the_synchronous_fetch_alone() -> None:
    code, _out, err = run("estimate", *FLAGS, "--list-host-time", "5us")
    assert code == 2 and err.count("\n") == 1 and "--list-host-time" in err and "--zero3-fetch synchronous" in err
    slow = report("estimate", *FLAGS, "--zero3-fetch", "synchronous", "--list-host-time", "20us")
    fast = report("estimate", *FLAGS, "--zero3-fetch", "synchronous", "--list-host-time", "0us")
    assert slow["time"]["step_seconds"] > fast["time"]["step_seconds"]


def test_a_plan_search_keeps_the_fetch_for_deepspeeds_plans_alone() -> None:
    """`plan --zero3-fetch synchronous` searches every framework and layout: the fetch is DeepSpeed's on pure DP, and
    the other candidates are searched without it (else each would be refused)."""
    from dpcost.catalog import load_topology
    from dpcost.engine.search import candidates
    from dpcost.options import Options

    base = Options(dp=1, zero3_fetch="synchronous", list_host_time=1e-5, global_batch=512, seq_len=4096)
    found = list(candidates(load_model("llama-8b"), load_topology("dgx-h100"), 64, base))
    deepspeed = [o for _, o in found if o.plan.framework == "deepspeed" and not o.megatron_layout]
    others = [o for _, o in found if o.plan.framework != "deepspeed" or o.megatron_layout]
    assert deepspeed and others
    assert all(o.communication.zero3_fetch == "synchronous" and o.compute.list_host_time == 1e-5 for o in deepspeed)
    assert all(o.communication.zero3_fetch is None and o.compute.list_host_time is None for o in others)
