"""Megatron-Core's MoE layers wait for the host that launches them (engine/host.py): their dispatcher syncs host and
device once a layer (token_dispatcher.py at d98e8a64dd), so a layer takes at least the host's time to issue it."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import cli_report, run_cli

from dpcost.catalog import load_model, load_topology
from dpcost.engine.host import MOE_LAYER_HOST_SECONDS, host_wait_seconds
from dpcost.engine.layout import Layout
from dpcost.engine.layout_estimate import LayoutStep, layout_step
from dpcost.engine.step import HOST_WAIT
from dpcost.specs import ModelSpec

QWEN3_30B = Path(__file__).parent / "reference" / "hf-configs" / "qwen3-30b-a3b.json"
# Megatron-Bridge's Qwen3 30B-A3B B200 preset at micro-batch 1: EP 8 over one DGX B200, 512 x 4,096 tokens, FP8
PRESET = ["--model", str(QWEN3_30B), "--topology", "dgx-b200", "--dp", "8", "--ep", "8", "--micro-batch", "1"]
PRESET += ["--global-batch", "512", "--seq-len", "4096", "--compute-dtype", "fp8", "--framework", "megatron"]


@pytest.fixture(scope="module")
def qwen3() -> ModelSpec:
    return load_model(str(QWEN3_30B))


def _step(model: ModelSpec, layout: Layout, host: float, topology: str = "dgx-b200", batch: int = 512) -> LayoutStep:
    return layout_step(
        model, load_topology(topology), layout, micro_batch=1, global_batch=batch, seq_len=4096, mfu=0.5,
        compute_model="ops", compute_dtype="fp8", peak=load_topology(topology).gpu.peak("fp8"),
        moe_host_seconds=host,
    )  # fmt: skip


def test_the_wait_is_the_host_time_of_the_moe_layers_beyond_the_compute() -> None:
    """48 MoE layers at 7 ms each issue in 336 ms: a micro-batch whose compute takes 100 ms waits 236 ms more, and
    one whose compute takes longer than the host's issue waits for nothing."""
    assert host_wait_seconds(0.100, 48, 7e-3) == pytest.approx(0.236)
    assert host_wait_seconds(0.400, 48, 7e-3) == 0.0
    assert host_wait_seconds(0.100, 0, 7e-3) == 0.0
    assert host_wait_seconds(0.100, 48, 0.0) == 0.0


def test_each_micro_batch_waits_for_its_48_moe_layers(qwen3: ModelSpec) -> None:
    """Qwen3-30B-A3B's 48 layers are all MoE: one micro-batch of 4,096 tokens on a B200 computes for less than 48 x
    7 ms, so each of the 64 micro-batches waits the rest, and the step grows by that (and by the jitter the longer
    pipeline drifts by). The compute itself does not change."""
    layout = Layout(dp=8, ep=8)
    eager, graphed = _step(qwen3, layout, 7e-3), _step(qwen3, layout, 0.0)
    assert (eager.forward, eager.backward) == (graphed.forward, graphed.backward)
    assert graphed.host_wait == 0.0 and eager.micro_batches == 64
    per_micro_batch = 48 * 7e-3 - (graphed.forward + graphed.backward)
    assert per_micro_batch > 0
    assert eager.host_wait == pytest.approx(64 * per_micro_batch)
    assert eager.step - graphed.step - (eager.jitter - graphed.jitter) == pytest.approx(eager.host_wait)
    assert eager.moe_host_seconds == 7e-3


def test_the_wait_fills_the_pipelines_bubble_slots(qwen3: ModelSpec) -> None:
    """Under PP 2 each stage holds 24 MoE layers, which issue in 24 x 7 ms: longer than either stage computes, so
    every stage's micro-batch slot is the host's, and the bubble's (PP - 1) / V slot is that, where without the host
    it was the slower stage's compute (layout_step.bubble_seconds)."""
    layout = Layout(pp=2, dp=4, ep=4)
    eager, graphed = _step(qwen3, layout, 7e-3), _step(qwen3, layout, 0.0)
    wait = eager.host_wait / eager.micro_batches
    assert eager.forward + eager.backward + wait == pytest.approx(24 * 7e-3)
    assert eager.bubble - graphed.bubble == pytest.approx(24 * 7e-3 - (graphed.forward + graphed.backward))


def test_a_dense_model_waits_for_nothing() -> None:
    """Without MoE layers no dispatcher syncs: Llama 3 8B's step is the same whatever the MoE host time."""
    llama = load_model("llama-8b")
    layout = Layout(tp=2, dp=4)
    assert _step(llama, layout, 0.5, "dgx-h100", 64).step == _step(llama, layout, 0.0, "dgx-h100", 64).step
    assert _step(llama, layout, 0.5, "dgx-h100", 64).host_wait == 0.0


def test_the_report_names_the_wait_and_calls_the_step_host_bound() -> None:
    """The preset's step is mostly the host's: the breakdown holds the wait as a term of its own, the verdict says
    host-bound, and the layout section gives the host time it was costed at."""
    r = cli_report("estimate", *PRESET)
    terms = {t["term"]: t["seconds"] for t in r["time"]["breakdown"]}
    assert terms[HOST_WAIT] > terms["compute"]
    assert sum(terms.values()) == pytest.approx(r["time"]["step_seconds"])
    assert r["time"]["bound"] == "host" and r["layout"]["moe_host_seconds"] == MOE_LAYER_HOST_SECONDS
    assert r["summary"]["bound_reason"].startswith(f"{fmt(terms[HOST_WAIT])} waiting for the host")


def fmt(seconds: float) -> str:
    from dpcost.units import fmt_seconds

    return fmt_seconds(seconds)


def test_full_iteration_cuda_graphs_take_the_host_away() -> None:
    """--moe-host-time 0 (full-iteration CUDA graphs): no wait, and compute binds; a time is read with its unit."""
    r = cli_report("estimate", *PRESET, "--moe-host-time", "0")
    assert HOST_WAIT not in {t["term"] for t in r["time"]["breakdown"]}
    assert r["time"]["bound"] != "host" and r["layout"]["moe_host_seconds"] == 0.0
    given = cli_report("estimate", *PRESET, "--moe-host-time", "12ms")
    assert given["layout"]["moe_host_seconds"] == pytest.approx(0.012)
    assert given["time"]["step_seconds"] > cli_report("estimate", *PRESET)["time"]["step_seconds"]


def test_a_time_without_its_unit_is_refused_in_one_line() -> None:
    code, out, err = run_cli("estimate", *PRESET, "--moe-host-time", "7")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "--moe-host-time" in err


def test_a_dense_layout_states_no_host_time() -> None:
    r = cli_report("estimate", "--model", "llama-8b", "--tp", "2", "--dp", "4", "--global-batch", "64")
    assert "moe_host_seconds" not in r["layout"]
    assert HOST_WAIT not in {t["term"] for t in r["time"]["breakdown"]}


@pytest.mark.parametrize(
    ("flags", "host"),
    [
        ("--cuda-graph-impl full_iteration", "0"),
        ("--cuda-graph-impl local --cuda-graph-scope full_iteration", "0"),
        ("--enable-cuda-graph --cuda-graph-modules full_iteration", "0"),
        ("--cuda-graph-impl transformer_engine --cuda-graph-modules attn moe_router", None),
    ],
)
def test_megatrons_full_iteration_cuda_graphs_are_read_as_no_host_time(
    tmp_path: Path, flags: str, host: str | None
) -> None:
    """--cuda-graph-impl full_iteration, or the older local graphs of scope full_iteration that Megatron-LM migrates
    to it (arguments.py _normalize_cuda_graph_modules_args at d98e8a64dd), set --moe-host-time 0; graphs of parts of
    a layer are listed as not priced."""
    script = tmp_path / "m.sh"
    launch = "torchrun --nproc_per_node 8 pretrain_gpt.py --bf16 --use-distributed-optimizer --micro-batch-size 1 "
    launch += "--global-batch-size 64 --seq-length 4096 --expert-model-parallel-size 8 "
    script.write_text(f"{launch}--moe-token-dispatcher-type alltoall {flags}\n")
    r = cli_report("estimate", "--from", str(script), "--model", "mixtral-8x7b")
    settings = {s["key"]: s for s in r["from_config"]["settings"]}
    cuda = [s for key, s in settings.items() if "cuda-graph" in key]
    assert cuda
    if host is None:
        assert all(s["became"] == "" and "eager" in s["note"] for s in cuda)
        assert r["layout"]["moe_host_seconds"] == MOE_LAYER_HOST_SECONDS
    else:
        assert any(s["became"] == f"--moe-host-time {host}" for s in cuda)
        assert r["layout"]["moe_host_seconds"] == 0.0
