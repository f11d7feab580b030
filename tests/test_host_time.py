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


def _step(
    model: ModelSpec, layout: Layout, host: float, topology: str = "dgx-b200", batch: int = 512, **given: object
) -> LayoutStep:
    return layout_step(
        model, load_topology(topology), layout, micro_batch=1, global_batch=batch, seq_len=4096, mfu=0.5,
        compute_model=given.pop("compute_model", "ops"), compute_dtype="fp8",
        peak=load_topology(topology).gpu.peak("fp8"), moe_host_seconds=host, **given,  # type: ignore[arg-type]
    )  # fmt: skip


def test_the_wait_is_the_host_time_of_the_moe_layers_beyond_the_compute() -> None:
    """48 MoE layers at 7 ms each issue in 336 ms: a micro-batch whose compute takes 100 ms waits 236 ms more, and
    one whose compute takes longer than the host's issue waits for nothing."""
    assert host_wait_seconds(0.100, 48, 7e-3) == pytest.approx(0.236)
    assert host_wait_seconds(0.400, 48, 7e-3) == 0.0
    assert host_wait_seconds(0.100, 0, 7e-3) == 0.0
    assert host_wait_seconds(0.100, 48, 0.0) == 0.0


def _gpu_seconds(r: LayoutStep) -> float:
    """What the GPUs spend on one micro-batch slot of the paced stage: its compute, the model-parallel calls left
    exposed, the compute slowed beside the overlapped ones, and the slowest GPU's lag."""
    slots = r.micro_batches + (r.layout.pp - 1)
    return r.forward + r.backward + (sum(r.exposed.values()) + r.slowed) / r.micro_batches + r.slowest_gpu / slots


def test_each_micro_batch_takes_the_host_time_of_its_48_moe_layers(qwen3: ModelSpec) -> None:
    """Qwen3-30B-A3B's 48 layers are all MoE, and once a layer the host waits for the GPU: it cannot launch ahead,
    so a micro-batch takes no less than 48 x 7 ms, and its GPU work (compute, the exposed all-to-alls, the slowest
    GPU's lag) runs under that. On a B200 at 4,096 tokens it is shorter, so each of the 64 micro-batches takes the
    host's time exactly; the GPU's own work is what it was without the host."""
    layout = Layout(dp=8, ep=8)
    eager, graphed = _step(qwen3, layout, 7e-3), _step(qwen3, layout, 0.0)
    assert (eager.forward, eager.backward, eager.exposed) == (graphed.forward, graphed.backward, graphed.exposed)
    assert graphed.host_wait == 0.0 and eager.micro_batches == 64 and eager.moe_host_seconds == 7e-3
    assert _gpu_seconds(graphed) < 48 * 7e-3
    assert _gpu_seconds(eager) + eager.host_wait / 64 == pytest.approx(48 * 7e-3)
    assert eager.step - graphed.step - (eager.jitter - graphed.jitter) == pytest.approx(eager.host_wait)


def test_the_wait_fills_the_pipelines_bubble_slots(qwen3: ModelSpec) -> None:
    """Under PP 2 each stage holds 24 MoE layers, which launch in 24 x 7 ms: longer than either stage's GPU work, so
    every micro-batch slot is the host's, the bubble's (PP - 1) / V slot too (layout_step.bubble_seconds), where
    without the host it was the slower stage's work."""
    layout = Layout(pp=2, dp=4, ep=4)
    eager, graphed = _step(qwen3, layout, 7e-3), _step(qwen3, layout, 0.0)
    m = eager.micro_batches
    assert _gpu_seconds(graphed) < 24 * 7e-3
    assert _gpu_seconds(eager) + eager.host_wait / m == pytest.approx(24 * 7e-3)
    bubble_lag = eager.slowest_gpu / (m + 1)  # the slowest GPU's lag in the one bubble slot
    assert eager.bubble + bubble_lag == pytest.approx(24 * 7e-3)
    assert graphed.bubble + graphed.slowest_gpu / (m + 1) == pytest.approx(_gpu_seconds(graphed))


@pytest.mark.parametrize("compute_model", ["ops", "flops"])
def test_the_stage_with_more_moe_layers_paces_a_host_bound_pipeline(qwen3: ModelSpec, compute_model: str) -> None:
    """25 MoE layers on the first stage and 23 with the output head on the last: without the host the last stage,
    with the most compute, paces the pipeline; with it the first, whose 25 layers take the host longer to launch, op
    by op and at one rate alike."""
    layout = Layout(pp=2, dp=4, ep=4)
    eager = _step(qwen3, layout, 7e-3, last_stage_layers=23, compute_model=compute_model)
    graphed = _step(qwen3, layout, 0.0, last_stage_layers=23, compute_model=compute_model)
    assert (graphed.paced_stage, eager.paced_stage) == (1, 0)
    assert _gpu_seconds(eager) + eager.host_wait / eager.micro_batches == pytest.approx(25 * 7e-3)


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
    given = cli_report("estimate", *PRESET, "--moe-host-time", "20ms")
    assert given["layout"]["moe_host_seconds"] == pytest.approx(0.020)
    assert given["time"]["step_seconds"] > cli_report("estimate", *PRESET)["time"]["step_seconds"]


def test_a_time_without_its_unit_is_refused_in_one_line() -> None:
    code, out, err = run_cli("estimate", *PRESET, "--moe-host-time", "7")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "--moe-host-time" in err


def test_pure_data_parallelism_refuses_a_host_time_it_does_not_price() -> None:
    """Without a layout nothing prices the MoE layers' host time: a time is refused, not ignored; 0, what a Megatron
    script with full-iteration CUDA graphs reads as, is what pure data parallelism prices, and stands."""
    code, out, err = run_cli("estimate", "--model", "mixtral-8x7b", "--dp", "8", "--moe-host-time", "5ms")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "--moe-host-time" in err and "--ep" in err
    assert cli_report("estimate", "--model", "mixtral-8x7b", "--dp", "8", "--moe-host-time", "0")["summary"]


def test_a_host_bound_plan_is_told_what_would_help() -> None:
    """Megatron-Core's MoE README: "Reduce kernel launches | Decrease TP size or increase micro-batch size", and CUDA
    graphs; the warning says so where the host holds more than a tenth of the step."""
    r = cli_report("estimate", *PRESET)
    advice = {w["code"]: w["message"] for w in r["warnings"]}
    assert "--micro-batch" in advice["moe-host-bound"] and "CUDA graphs" in advice["moe-host-bound"]
    graphed = cli_report("estimate", *PRESET, "--moe-host-time", "0")
    assert "moe-host-bound" not in {w["code"] for w in graphed["warnings"]}


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
        ("--cuda-graph-modules full_iteration", "0"),
        ("--cuda-graph-scope full_iteration", "0"),
        ("--cuda-graph-impl transformer_engine --cuda-graph-modules attn moe_router", None),
        ("--cuda-graph-impl local", None),
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


@pytest.mark.parametrize(
    ("flags", "host"),
    [
        ("alltoall --moe-expert-capacity-factor 1.0 --moe-pad-expert-input-to-capacity", "0"),
        ("flex --moe-flex-dispatcher-backend hybridep --moe-expert-rank-capacity-factor 1.5", "0"),
        ("alltoall --moe-expert-rank-capacity-factor 1.5", None),
        ("flex --moe-expert-rank-capacity-factor 1.5", None),
    ],
)  # fmt: skip
def test_a_dispatcher_that_needs_no_count_from_the_device_does_not_wait(
    tmp_path: Path, flags: str, host: str | None
) -> None:
    """Drop and pad sets each expert's tokens to its capacity on the host, and HybridEP's rank budget sizes its
    buffers statically (token_dispatcher.py at d98e8a64dd: preprocess returns before any sync point; "None means no
    up-bound, will cause a CPU sync"): read as --moe-host-time 0. The budget does nothing for the alltoall
    dispatcher, nor for DeepEP, the flex dispatcher's default backend (transformer_config.py)."""
    script = tmp_path / "m.sh"
    launch = "torchrun --nproc_per_node 8 pretrain_gpt.py --bf16 --use-distributed-optimizer --micro-batch-size 1 "
    launch += "--global-batch-size 64 --seq-length 4096 --expert-model-parallel-size 8 "
    script.write_text(f"{launch}--moe-token-dispatcher-type {flags}\n")
    r = cli_report("estimate", "--from", str(script), "--model", "mixtral-8x7b")
    expected = MOE_LAYER_HOST_SECONDS if host is None else 0.0
    assert r["layout"]["moe_host_seconds"] == expected


def test_a_data_parallel_megatron_script_with_full_iteration_graphs_still_reads(tmp_path: Path) -> None:
    """A pure data-parallel Megatron launch with full-iteration CUDA graphs reads as --moe-host-time 0 and is costed,
    not refused."""
    script = tmp_path / "m.sh"
    script.write_text(
        "torchrun --nproc_per_node 8 pretrain_gpt.py --bf16 --use-distributed-optimizer --micro-batch-size 1 "
        "--global-batch-size 64 --seq-length 4096 --cuda-graph-impl full_iteration\n"
    )
    r = cli_report("estimate", "--from", str(script), "--model", "llama-8b")
    assert any(s["became"] == "--moe-host-time 0" for s in r["from_config"]["settings"])
    assert r["summary"]["step_seconds"] > 0
