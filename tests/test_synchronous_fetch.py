"""DeepSpeed's ZeRO-3 of v0.3 to v0.5.4, --zero3-fetch synchronous (dpcost/engine/synchronous_fetch.py): unit by unit,
each parameter gathered in a call of its own after the host has built its list, again for the recomputation, then
the compute, then each gradient reduce-scattered in a call of its own; nothing beside anything."""

from __future__ import annotations

import pytest
from conftest import cli_report as report
from conftest import run_cli as run

from dpcost.catalog import load_model
from dpcost.engine.params import block_matrices, block_vectors
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


def test_each_unit_is_its_lists_its_gathers_its_compute_and_its_reductions_one_after_the_other() -> None:
    """Per unit and fetch the two matrices are gathered, a call each (1 ms + 2 x elements / 1 GB/s: 4.0 ms a unit),
    each after the host's 100 ranks x 10 us on its list (2 ms a unit), then the unit computes (0.5 s forward, 1.0 s
    backward), then every tensor's gradient is reduce-scattered, the three persistent ones too (4.0 ms + 3 x 1.02 ms),
    their lists (5 ms) built while the backward runs."""
    gather, reductions, lists = 4.0e-3, 4.0e-3 + 3 * 1.02e-3, 2e-3
    forward = 2 * (lists + gather + 0.5)
    backward = 2 * (lists + gather + 1.0 + reductions)
    t = step_time(_plan(), call)
    assert t.step == pytest.approx(forward + backward, rel=1e-12)
    assert t.serial == pytest.approx(forward + backward, rel=1e-12)
    assert t.host == pytest.approx(4 * lists, rel=1e-12) and t.exposed == pytest.approx(t.comm, rel=1e-12)
    calls = {(x.op, x.purpose): x.calls for x in t.traffic}
    assert calls == {("all_gather", "parameters (forward)"): 4, ("all_gather", "parameters (backward)"): 4,
                     ("reduce_scatter", "gradients"): 10}  # fmt: skip


def test_the_recomputation_fetches_each_block_again() -> None:
    """Under full recomputation the recomputed forward's hooks fetch a block again before the backward's fetch (the
    reuse distance keeps nothing: its trace is off by one, deepspeedai/DeepSpeed#1069); the embedding and the head,
    outside the checkpoints (Unit.linear False), are fetched once."""
    once, again = step_time(_plan(), call), step_time(_plan(regathers=True), call)
    assert again.step - once.step == pytest.approx(2 * (2e-3 + 4.0e-3), rel=1e-9)
    calls = {(x.op, x.purpose): x.calls for x in again.traffic}
    assert calls[("all_gather", "parameters (backward)")] == 8
    head = Unit(1.03e6, 0.5, (6e5, 4e5, 3e4), vectors=3, linear=False)
    ends = step_time(_plan(units=(UNIT, head), regathers=True), call)
    assert ends.step - once.step == pytest.approx(2e-3 + 4.0e-3, rel=1e-9)


def test_the_cli_fetches_the_blocks_again_under_full_recomputation() -> None:
    """Llama 8B: 32 blocks of 7 matrices each (Unit.tensors), and the embedding and head of one each, so a fetch is
    226 calls; under --recompute full the backward's are the blocks' twice and the ends' once."""
    calls = {}
    for policy in ("none", "full"):
        r = report("estimate", *FLAGS, "--zero3-fetch", "synchronous", "--recompute", policy)
        calls[policy] = {c["purpose"]: c["calls"] for c in r["communication"]["collectives"] if c["op"] == "all_gather"}
    assert calls["none"] == {"parameters (forward)": 226, "parameters (backward)": 226}
    assert calls["full"] == {"parameters (forward)": 226, "parameters (backward)": 2 * 32 * 7 + 2}


def test_the_reductions_lists_wait_only_where_the_backward_is_shorter() -> None:
    """The host builds the reductions' lists (5 calls x 1 ms a unit) while the unit's backward runs: a backward of
    1 ms a unit leaves 4 ms of them to wait for."""
    short = step_time(_plan(backward=0.002), call)
    assert short.host == pytest.approx(4 * 2e-3 + 2 * 4e-3, rel=1e-9)


@pytest.mark.parametrize(
    ("model", "matrices", "vectors"), [("llama-8b", 7, 2), ("gpt3-175b", 4, 8), ("qwen-72b", 5, 3)]
)
def test_a_blocks_tensors_are_its_modules(model: str, matrices: int, vectors: int) -> None:
    """As the modules hold them: Llama's q, k, v, o, gate, up and down projections and two RMSNorm weights; GPT-3's
    fused QKV (Megatron's query_key_value, GPT-2's c_attn), dense, fc1 and fc2 (their biases) and two LayerNorms'
    weights and biases; Qwen (1)'s c_attn with its one bias, c_proj, w1, w2 and mlp.c_proj, and two RMSNorm
    weights."""
    a = load_model(model).architecture
    assert a is not None
    assert len(block_matrices(a, False)) == matrices and block_vectors(a, False) == vectors


FLAGS = ["--model", "llama-8b", "--dp", "64", "--framework", "deepspeed", "--zero", "3"]


def test_prefetched_is_the_default() -> None:
    given = report("estimate", *FLAGS, "--zero3-fetch", "prefetched")
    default = report("estimate", *FLAGS)
    assert given["time"] == default["time"] and given["memory"] == default["memory"]


def test_the_host_waits_a_rank_for_every_call_of_the_step() -> None:
    """The report's host term holds every gather it lists (a tensor a call), each 64 ranks x the fitted time a rank,
    and at most every reduction's too (their lists are built while the backward runs). The memory is the prefetched
    fetch's."""
    r = report("estimate", *FLAGS, "--zero3-fetch", "synchronous")
    default = report("estimate", *FLAGS)
    per_call = 64 * LIST_HOST_SECONDS_PER_RANK
    gathers = sum(c["calls"] for c in r["communication"]["collectives"] if c["op"] == "all_gather")
    calls = sum(c["calls"] for c in r["communication"]["collectives"])
    host = {b["term"]: b["seconds"] for b in r["time"]["breakdown"]}[HOST_LISTS]
    assert gathers * per_call * (1 - 1e-9) <= host <= calls * per_call * (1 + 1e-9)
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


def test_a_fused_qkv_is_one_tensor_of_q_k_and_v() -> None:
    """Phi-3 style: one qkv_proj of hidden x (q + 2 kv) under grouped-query attention (fused_qkv), in place of three."""
    a = load_model("llama-8b").architecture
    assert a is not None
    fused = a.model_copy(update={"fused_qkv": True})
    q, kv = a.heads * a.d_head, a.n_kv_heads * a.d_head
    assert block_matrices(fused, False)[0] == a.hidden * (q + 2 * kv)
    assert block_matrices(fused, False)[1:] == block_matrices(a, False)[3:]
