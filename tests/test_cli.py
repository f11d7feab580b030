"""The `dpcost` command through typer's CliRunner, at a fixed console width."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REFERENCE, cli_in_fresh_process
from test_catalog import MODELS, TOPOLOGIES
from typer.testing import CliRunner

from dpcost.cli import app

ENV = {"COLUMNS": "200", "NO_COLOR": "1"}
STAGE_BYTES = ("params_bytes", "grads_bytes", "optimizer_bytes", "activations_bytes", "buffers_bytes", "total_bytes")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env=ENV)
    return result.exit_code, result.stdout, result.stderr


def ok(*args: str) -> str:
    code, out, err = run(*args)
    assert code == 0, err
    return out


def test_the_main_job() -> None:
    out = ok("estimate", "--model", "llama-70b", "--dp", "512")
    for text in (
        "Llama 3.1 70B",
        "70.55B total",
        "512 GPUs = 64 nodes x 8",
        "1 x 1 x 512 = 512 sequences",
        "ReduceScatter + AllGather",
        "141 GB",
        "Memory per GPU by ZeRO stage",
        "NO / 84.9 GB",
        "yes / 84.9 GB",
        "step, ideal overlap",
        "step, as scheduled, with losses at scale",
        "step, serial",
        "bound by",
        "scaling efficiency",
        "does not fit without sharding",
        "leaf",
    ):
        assert text in out, text


def test_stage_0_shows_the_all_reduce() -> None:
    out = ok("estimate", "--model", "llama-8b", "--dp", "64", "--zero", "0")
    assert "AllReduce (ZeRO-0)" in out
    assert "all_reduce" in out


def test_json_contract() -> None:
    doc = json.loads(ok("estimate", "--model", "llama-70b", "--dp", "512", "--format", "json"))
    assert doc["schema_version"] == 2
    assert doc["model"]["name"] == "llama-70b"
    assert isinstance(doc["model"]["params_total"], int) and isinstance(doc["model"]["params_active"], int)
    assert doc["topology"]["name"] == "dgx-h100"
    setup = doc["setup"]
    for key in ("dp", "nodes", "zero_stage", "grad_dtype", "micro_batch", "accumulation", "seq_len", "global_batch"):
        assert key in setup, key
    assert setup["global_batch"] == setup["micro_batch"] * setup["accumulation"] * setup["dp"]
    comm = doc["communication"]
    assert isinstance(comm["gradient_bytes"], int) and comm["seconds_per_step"] > 0
    for c in comm["collectives"]:
        assert {"op", "bytes", "algorithm", "seconds"} <= set(c)
        assert isinstance(c["bytes"], int)
    stages = doc["memory"]["stages"]
    assert [s["stage"] for s in stages] == [0, 1, 2, 3]
    for s in stages:
        assert all(isinstance(s[key], int) for key in STAGE_BYTES), s
        assert isinstance(s["fits"], bool)
    time = doc["time"]
    for key in (
        "forward_seconds",
        "backward_seconds",
        "comm_seconds",
        "ideal_seconds",
        "serial_seconds",
        "step_seconds",
        "scaling_efficiency",
    ):
        assert isinstance(time[key], float), key
    assert time["ideal_seconds"] <= time["step_seconds"] <= time["serial_seconds"]
    assert isinstance(doc["warnings"], list) and doc["warnings"]
    assert all(set(w) == {"code", "message", "action"} for w in doc["warnings"])


def test_yaml_and_markdown() -> None:
    import yaml

    doc = yaml.safe_load(ok("estimate", "--model", "llama-8b", "--dp", "16", "--format", "yaml"))
    assert doc["setup"]["dp"] == 16
    md = ok("estimate", "--model", "llama-8b", "--dp", "16", "--format", "markdown")
    assert "### Memory per GPU by ZeRO stage" in md and "|---" in md


def test_inference_mode() -> None:
    out = ok("estimate", "--model", "llama-8b", "--dp", "64", "--mode", "inference", "--batch", "16")
    assert "replicas exchange no gradients" in out
    assert "memory per replica" in out
    doc = json.loads(ok("estimate", "--model", "llama-8b", "--dp", "64", "--mode", "inference", "--format", "json"))
    assert doc["communication"]["bytes_sent_per_rank"] == 0 and doc["communication"]["collectives"] == []


def test_check_exits_1_when_it_does_not_fit() -> None:
    assert run("estimate", "--model", "llama-70b", "--dp", "512", "--zero", "0", "--check")[0] == 1
    assert run("estimate", "--model", "llama-70b", "--dp", "512", "--check")[0] == 0


def _one_line_error(args: list[str], *needles: str) -> None:
    code, out, err = run(*args)
    assert code == 2, (code, out, err)
    assert err.count("\n") == 1 and err.startswith("dpcost: error: "), err
    assert "Traceback" not in err + out
    for needle in needles:
        assert needle in err, (needle, err)


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["estimate", "--model", "llama-7b", "--dp", "8"], ["--model", "unknown model 'llama-7b'", "llama-70b"]),
        (["estimate", "--model", "llama-70b", "--dp", "8", "--topology", "dgx-h900"], ["--topology", "dgx-h100"]),
        (["estimate", "--model", "/nonexistent/spec.yaml", "--dp", "8"], ["no such file"]),
        (["estimate", "--model", "llama-70b", "--dp", "0"], ["--dp", "positive"]),
        (["estimate", "--model", "llama-70b", "--dp", "-8"], ["--dp"]),
        (
            ["estimate", "--model", "llama-70b", "--dp", "512", "--algorithm", "nvls"],
            ["--algorithm", "nvls is not available for all_reduce", "available: ring, tree, nvls_tree"],
        ),
        (["estimate", "--model", "llama-70b", "--dp", "abc"], ["--dp", "integer"]),
        (["estimate", "--model", "llama-70b", "--dp", "8", "--zero", "7"], ["--zero", "0, 1, 2, 3 or auto"]),
        (["estimate", "--model", "llama-70b", "--dp", "8", "--grad-dtype", "fp13"], ["--grad-dtype", "bf16"]),
        (["estimate", "--model", "llama-70b", "--dp", "8", "--bucket-size", "25 parsecs"], ["--bucket-size", "25MiB"]),
        (["estimate", "--model", "llama-70b", "--dp", "8", "--micro-batch", "-1"], ["--micro-batch", "positive"]),
        (["estimate", "--model", "llama-70b", "--dp", "8", "--mfu", "1.5"], ["--mfu"]),
        (["estimate", "--model", "gpt3-175b", "--dp", "8", "--seq-len", "4096"], ["--seq-len", "2048"]),
        (
            ["estimate", "--model", "llama-70b", "--dp", "64", "--global-batch", "100"],
            ["--global-batch", "multiple of 64"],
        ),
        (["estimate", "--model", "llama-70b", "--dp", "8", "--format", "xml"], ["--format"]),
        (["estimate", "--dp", "8"], ["--model"]),
        (["estimate", "--model", "llama-70b", "--dp", "8", "--frobnicate"], ["--frobnicate"]),
        (["collective", "--ranks", "16", "--sizes", "64Q"], ["--sizes"]),
        (["collective", "--ranks", "16", "--op", "sendrecv"], ["--op", "all_to_all"]),
        (["collective", "--ranks", "16", "--min-bytes", "-8"], ["--min-bytes"]),
        (["collective", "--ranks", "16", "--protocol", "ll256"], ["--protocol", "ll, ll128, simple"]),
        (
            ["collective", "--ranks", "8", "--topology", "dgx-a100", "--algorithm", "nvls", "--sizes", "1G"],
            ["--algorithm", "not available"],
        ),
        (["memory", "--dp", "8"], ["--model", "--params"]),
        (["memory", "--dp", "8", "--params", "lots"], ["--params", "70B"]),
        (["sweep", "--model", "llama-8b", "--dp", "8..x"], ["--dp", "8..4096"]),
        (["show", "model", "nope"], ["unknown model"]),
        # hostile and extreme values: a clear line, never an overflow or a hang
        (["collective", "--min-bytes", "1e300G"], ["--min-bytes", "beyond 1PiB"]),
        (["collective", "--ranks", "0"], ["--ranks", "positive"]),
        (["collective", "--sizes", ""], ["--sizes"]),
        (["estimate", "--model", "llama-8b", "--dp", "8", "--bucket-size", "1e300TB"], ["--bucket-size", "beyond 1EB"]),
        (
            ["estimate", "--model", "llama-8b", "--dp", "8", "--zero", "0", "--bucket-size", "1B"],
            ["--bucket-size", "at least"],
        ),
        (["estimate", "--model", "llama-8b", "--dp", "8", "--mfu", "5e-324"], ["--mfu", "0.001"]),
        (["estimate", "--model", "llama-8b", "--dp", "1" + "0" * 80], ["--dp", "beyond 10,000,000"]),
        (
            ["estimate", "--model", "llama-8b", "--dp", "8", "--zero", "1", "--offload", "params"],
            ["--offload", "ZeRO-3"],
        ),
        (["estimate", "--model", "llama-8b", "--dp", "8", "--recompute", "bogus"], ["--recompute", "or auto"]),
        (["memory", "--dp", "8", "--params", "0"], ["--params", "at least one"]),
        (["memory", "--dp", "8", "--params", "1e300T"], ["--params", "beyond"]),
        (["sweep", "--model", "llama-8b", "--dp", "\u00b2"], ["--dp"]),
        (["estimate", "--model", "", "--dp", "8"], ["--model", "empty value"]),
        (["estimate", "--model", "llama-8b", "--dp", "8", "--sync-jitter", "2parsecs"], ["--sync-jitter", "ms"]),
        (["estimate", "--model", "llama-8b", "--dp", "8", "--framework", "horovod"], ["--framework", "fsdp"]),
        (["estimate", "--model", "llama-8b", "--dp", "8", "--framework", "ddp", "--zero", "3"], ["ZeRO stages 0"]),
        (["estimate", "--model", "llama-8b", "--dp", "8", "--overlap-slowdown", "2"], ["--overlap-slowdown"]),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], needles: list[str]) -> None:
    _one_line_error(args, *needles)


def test_an_error_says_what_was_given_once() -> None:
    result = CliRunner().invoke(app, ["estimate", "--model", "llama-8b", "--dp", "8", "--bucket-size", "2parsecs"])
    assert result.exit_code == 2 and result.stderr.count("got '2parsecs'") == 1


def test_malformed_and_hostile_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [oops\n")
    _one_line_error(["estimate", "--model", str(bad), "--dp", "8"], str(bad), "malformed YAML")
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n")
    _one_line_error(["estimate", "--model", str(bomb), "--dp", "8"], "aliases are not allowed")
    topo = tmp_path / "topo.yaml"
    topo.write_text(
        "name: t\ntitle: T\ngpu: {name: G, arch: hopper, hbm: 80GB, hbm_bandwidth: 3TB/s, bf16_dense: 1PFLOPS}\n"
        "call_overhead: 5us\ntiers: [{name: nv, size: 8, bandwidth: -450GB/s, latency: 3us}]\n"
    )
    _one_line_error(["estimate", "--model", "llama-8b", "--dp", "8", "--topology", str(topo)], "tiers.0.bandwidth")


def test_models_and_topologies_lists() -> None:
    out = ok("models")
    for name in MODELS:
        assert name in out
    assert "MoE 8/256+1" in out and "MLA" in out
    out = ok("topologies")
    for name in TOPOLOGIES:
        assert name in out
    assert "1:7" in out
    rows = list(csv.DictReader(io.StringIO(ok("models", "--format", "csv"))))
    assert len(rows) == len(MODELS)


def test_show() -> None:
    out = ok("show", "model", "deepseek-v3")
    assert "MTP module" in out and "routed experts" in out and "671.0B" in out
    out = ok("show", "topology", "dgx-h100")
    assert "nvls" in out and "49.0 GB/s" in out
    # the slowest of 8 busy H100s: H200's all-8 MSMF runs (msmf-concurrent.csv), 0.61% mean fall, 0.86% spread
    assert "loses 1.8% at 8 GPUs" in " ".join(out.split())
    # a step's matmuls: 708.5 of 989 TFLOP/s (H200's MSMF) x 0.91, the in-step share fitted on published runs
    assert "matmuls in a step 645 TFLOP/s (65.2% of peak: its benchmark's x 0.91 in a step" in " ".join(out.split())
    assert "none measured" in " ".join(ok("show", "topology", "gb200-nvl72").split())
    doc = json.loads(ok("show", "topology", "dgx-b200", "--format", "json"))
    assert doc["name"] == "dgx-b200"


def test_collective_table_and_machine_formats() -> None:
    out = ok(
        "collective",
        "--op",
        "all_reduce",
        "--topology",
        "dgx-h100",
        "--ranks",
        "16",
        "--min-bytes",
        "8",
        "--max-bytes",
        "16G",
    )
    assert "busbw" in out and "GB/s" in out and "nvls_tree" in out and "16.0 GiB" in out
    rows = json.loads(ok("collective", "--ranks", "16", "--sizes", "64M,1G", "--format", "json"))
    assert [r["size_bytes"] for r in rows] == [64 * 2**20, 2**30]
    for r in rows:
        assert {"size_bytes", "time_us", "algbw_GBps", "busbw_GBps", "algorithm"} <= set(r)
        assert r["busbw_GBps"] == pytest.approx(r["algbw_GBps"] * 2 * 15 / 16, rel=1e-9)
    table = list(
        csv.DictReader(
            io.StringIO(ok("collective", "--ranks", "8", "--op", "all_gather", "--sizes", "1G", "--format", "csv"))
        )
    )
    assert table[0]["algorithm"] == "ring" and float(table[0]["time_us"]) > 0


def test_collective_compare_the_unedited_log() -> None:
    log = REFERENCE / "nccl-tests" / "dgx-h100-x2-all_reduce.log"
    out = ok("collective", "--compare", str(log), "--topology", "dgx-h100")
    assert "measured oop" in out and "measured ip" in out and "error oop" in out
    rows = json.loads(ok("collective", "--compare", str(log), "--topology", "dgx-h100", "--format", "json"))
    assert len(rows) == 32
    last = rows[-1]
    assert last["size_bytes"] == 16 * 2**30 and last["measured_us"]["out-of-place"] == 68195
    assert abs(last["error"]["out-of-place"]) < 0.2
    csv_rows = ok("collective", "--compare", str(log), "--topology", "dgx-h100", "--format", "csv").splitlines()
    assert "measured_out_of_place_us" in csv_rows[0] and "error_in_place" in csv_rows[0]


def test_collective_compare_csv_forces_the_runs_algorithm() -> None:
    ring = REFERENCE / "nccl-tests" / "h100-ndr-x2-ring-all_reduce.csv"
    rows = json.loads(ok("collective", "--compare", str(ring), "--format", "json"))
    assert {r["algorithm"] for r in rows} == {"ring"}
    b200 = REFERENCE / "nccl-tests" / "b200-x1-reduce_scatter_all_gather.csv"
    rows = json.loads(ok("collective", "--compare", str(b200), "--topology", "dgx-b200", "--format", "json"))
    assert {r["op"] for r in rows} == {"all_gather", "reduce_scatter"}


def test_memory_command_zero_table_and_deepspeed_view() -> None:
    doc = json.loads(ok("memory", "--params", "7.5B", "--largest-layer-params", "1B", "--dp", "64", "--format", "json"))
    got = [s["params_bytes"] + s["grads_bytes"] + s["optimizer_bytes"] for s in doc["stages"]]
    assert got == pytest.approx([120e9, 4 * 7.5e9 + 12 * 7.5e9 / 64, 2 * 7.5e9 + 14 * 7.5e9 / 64, 16 * 7.5e9 / 64])
    for s in doc["stages"]:
        assert {"stage", "fits", *STAGE_BYTES} <= set(s)
    out = ok("memory", "--params", "7.5B", "--largest-layer-params", "1e9", "--dp", "64", "--recipe", "deepspeed")
    assert "2682.21GB" in out and "15.93GB" in out and "5.69GB" in out
    out = ok("memory", "--model", "llama-70b", "--dp", "512", "--micro-batch", "2", "--recompute", "full")
    assert "max micro-batch" in out


def test_memory_with_only_a_parameter_count_asks_for_the_block_size() -> None:
    """Issue #11: --params 7.5B --dp 64 put ZeRO-3 (the whole model gathered) above ZeRO-2."""
    result = CliRunner().invoke(app, ["memory", "--params", "7.5B", "--dp", "64"])
    assert result.exit_code == 2
    assert result.stderr.startswith("dpcost: error: --largest-layer-params: required")


def test_memory_defaults_to_estimates_recomputation_and_says_so() -> None:
    out = ok("memory", "--model", "llama-70b", "--dp", "512")
    assert "recompute=op" in out and "chosen (auto)" in out


def test_sweep(tmp_path: Path) -> None:
    rows = list(csv.DictReader(io.StringIO(ok("sweep", "--model", "llama-70b", "--dp", "8..64", "--format", "csv"))))
    assert [int(r["dp"]) for r in rows] == [8, 16, 32, 64]
    for key in (
        "step_seconds",
        "compute_seconds",
        "exposed_comm_seconds",
        "scaling_efficiency",
        "tokens_per_second",
        "memory_bytes",
        "fits",
    ):
        assert key in rows[0]
    out = ok("sweep", "--model", "llama-8b", "--dp", "8,64,512", "--chart")
    assert "grows with DP" in out and "scaling efficiency" in out
    code, out, err = run("sweep", "--model", "llama-8b", "--dp", "8,64", "--plot", str(tmp_path / "no" / "x.svg"))
    assert code == 2 and out == "" and "no such folder" in err  # checked before any work is printed
    svg = tmp_path / "sweep.svg"
    code, _, err = run("sweep", "--model", "llama-8b", "--dp", "8,64", "--plot", str(svg))
    assert code == 0 and svg.read_text().startswith("<svg") and "wrote" in err
    _one_line_error(["sweep", "--model", "llama-8b", "--dp", "8", "--plot", str(tmp_path / "x.gif")], "--plot", ".svg")


def test_no_arguments_show_the_help() -> None:
    for args in ([], ["show"]):
        code, out, err = run(*args)
        assert code == 0 and "Usage: " in out and "Commands" in out and err == ""


def test_compare_takes_its_sizes_from_the_file() -> None:
    log = REFERENCE / "nccl-tests" / "dgx-h100-x2-all_reduce.log"
    _one_line_error(["collective", "--compare", str(log), "--sizes", "1G"], "--sizes", "--compare")


def test_default_sequence_fits_learned_positions() -> None:
    doc = json.loads(ok("estimate", "--model", "gpt3-175b", "--dp", "512", "--format", "json"))
    assert doc["setup"]["seq_len"] == 2048


def test_python_m_dpcost_and_version() -> None:
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "dpcost", "models", "--format", "json"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)) == len(MODELS)


def test_the_console_script_imports_only_the_command_it_runs() -> None:
    """Start-up is most of a CI loop: `dpcost estimate` leaves the other commands' modules unimported, and a
    name that is not a command still gets the full app's error."""
    import subprocess
    import sys

    probe = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write(' '.join(sorted(m for m in sys.modules"
        " if m.startswith('dpcost.cli.')))))\n"
        "from dpcost.cli import main\n"
        "sys.argv = ['dpcost'] + sys.argv[1:]\n"
        "main()\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", probe, "estimate", "-m", "llama-8b", "--dp", "8", "--brief"],
        capture_output=True,
        text=True,
    )
    assert ran.returncode == 0 and "fits" in ran.stdout
    loaded = set(ran.stderr.split())
    assert "dpcost.cli.estimate" in loaded and not loaded & {"dpcost.cli.calibrate", "dpcost.cli.plan"}
    typo = subprocess.run([sys.executable, "-c", probe, "estimat"], capture_output=True, text=True)
    assert typo.returncode == 2 and "No such command" in typo.stderr


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_a_reader_that_closes_the_pipe_is_not_a_failed_check(fmt: str) -> None:
    """`dpcost estimate ... | head -1`: the reader stops reading, which is its choice, not a failed check (exit 1)
    nor bad input; dpcost exits 0 quietly (rich's own broken-pipe handler exited 1)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "dpcost", "estimate", "--model", "llama-70b", "--dp", "512", "--format", fmt],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # closed before dpcost writes: its write meets a broken pipe
    assert proc.wait(timeout=120) == 0
    assert proc.stderr.read() == b""


def test_a_cli_run_does_not_import_importlib_metadata() -> None:
    """pydantic's plugin loader imports importlib.metadata at its top, only to answer () with plugins off: the CLI
    stands in for it (dpcost.cli._skip_plugin_loader). With plugins left to the user, the real loader runs."""
    args = ["estimate", "--model", "llama-8b", "--dp", "8", "--format", "json"]
    out, imported = cli_in_fresh_process(args, "importlib.metadata")
    assert out.startswith("{") and not imported
    user_out, user_imported = cli_in_fresh_process(args, "importlib.metadata", {"PYDANTIC_DISABLE_PLUGINS": "1"})
    assert user_out == out and user_imported


def test_the_stand_in_hands_on_any_other_name_to_the_real_loader() -> None:
    code = (
        "import os, sys\n"
        "os.environ['PYDANTIC_DISABLE_PLUGINS'] = '__all__'\n"
        "from dpcost.cli import _skip_plugin_loader\n"
        "_skip_plugin_loader()\n"
        "from pydantic.plugin._loader import get_plugins\n"
        "assert tuple(get_plugins()) == () and 'importlib.metadata' not in sys.modules\n"
        "from pydantic.plugin._loader import PYDANTIC_ENTRY_POINT_GROUP\n"
        "print(PYDANTIC_ENTRY_POINT_GROUP, 'importlib.metadata' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert run.stdout.split() == ["pydantic", "True"], run.stderr


def test_collective_forces_nccls_protocol_and_says_so() -> None:
    """Issue 17: `dpcost collective --protocol` is NCCL_PROTO: every size runs it (NVLS and NVLSTree, Simple only,
    drop out of an LL128 run), and the assumptions name the flag."""
    args = ("collective", "--ranks", "16", "--sizes", "64K,64M,1G", "--protocol", "ll128")
    code, out, err = run(*args, "-f", "json")
    assert code == 0, err
    assert [(r["algorithm"], r["protocol"]) for r in json.loads(out)][-1] == ("ring", "ll128")
    assert {r["protocol"] for r in json.loads(out)} == {"ll128"}
    code, out, err = run(*args, "-f", "markdown")
    assert code == 0 and "- protocol: ll128 (--protocol)" in out.splitlines(), err


@pytest.mark.parametrize(("model", "smaller"), [("llama-70b", False), ("llama-8b", True)])
def test_a_replica_that_needs_model_parallelism_is_told_a_smaller_batch_only_where_its_weights_fit(
    model: str, smaller: bool
) -> None:
    """Llama 3 70B's bf16 weights (141 GB) fill no 80GB GPU whatever the batch; Llama 3 8B's (16 GB) do, and a
    smaller batch's KV cache may then fit beside them."""
    batch = "8" if model == "llama-70b" else "4096"
    doc = json.loads(ok("estimate", "--model", model, "--dp", "64", "--mode", "inference", "--batch", batch,
                        "--format", "json"))  # fmt: skip
    advice = next(w for w in doc["warnings"] if w["code"] == "replica-needs-model-parallel")
    assert ("smaller batch" in advice["action"]) is smaller


def test_the_unfused_softmax_flag_asks_for_attention_that_keeps_scores() -> None:
    """--unfused-softmax-fp32 is what Megatron's unfused softmax keeps: flash attention keeps no scores, and eager
    PyTorch's softmax dtype is the model family's. Each gets one line naming the flag, with exit code 2."""
    base = ["estimate", "--model", "gpt3-175b", "--dp", "8", "--tp", "8", "--pp", "8", "--unfused-softmax-fp32"]
    result = CliRunner().invoke(app, base)
    assert result.exit_code == 2
    assert result.stderr.startswith("dpcost: error: --unfused-softmax-fp32: flash attention keeps no scores")
    result = CliRunner().invoke(app, ["estimate", "--model", "llama-8b", "--dp", "8", "--framework", "ddp",
                                      "--no-flash-attention", "--unfused-softmax-fp32"])  # fmt: skip
    assert result.exit_code == 2
    assert "eager attention keeps the scores as its own kernels do" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    plan = ["--no-flash-attention", "--micro-batch", "1", "--global-batch", "64", "--recompute", "none"]
    fp32 = json.loads(ok(*base, *plan, "--format", "json"))["layout"]["stages"][-1]["memory_bytes"]
    fused = json.loads(ok(*base[:-1], *plan, "--format", "json"))["layout"]["stages"][-1]["memory_bytes"]
    # 1F1B's last stage holds one micro-batch: 12 layers of 12 heads (96 over TP 8) x 2,048^2 scores, 2 bytes each
    # more; what the GPU holds adds the allocator's fragmentation to it
    assert 1.0 <= (fp32 - fused) / (2 * 12 * 12 * 2048**2) < 1.1


def test_grad_reduce_all_reduce_sends_the_whole_gradient_back() -> None:
    """--grad-reduce all-reduce at ZeRO 1 (nanotron's trainer, PyTorch's ZeroRedundancyOptimizer under DDP): a ring
    all-reduce sends 2(n-1)/n of the gradient per rank where a reduce-scatter sends (n-1)/n (Patarasuk and Yuan;
    NCCL's ring), and the updated parameters are gathered as before. Megatron without overlap runs the whole
    gradient as one call. ZeRO 0 and 3, and the frameworks that reduce per wrapped unit, are refused."""
    base = ["estimate", "--model", "llama-8b", "--dp", "64", "--zero", "1", "--framework", "megatron",
            "--overlap-comm", "false", "--format", "json"]  # fmt: skip

    def calls(*extra: str) -> dict[str, dict[str, Any]]:
        doc = json.loads(ok(*base, *extra))["communication"]
        return {c["op"]: c for c in doc["collectives"]}

    scattered, reduced = calls(), calls("--grad-reduce", "all-reduce")
    grads = reduced["all_reduce"]["bytes"]
    assert grads == scattered["reduce_scatter"]["bytes"] and reduced["all_reduce"]["calls"] == 1
    assert reduced["all_reduce"]["bytes_sent_per_rank"] == pytest.approx(2 * 63 / 64 * grads, rel=1e-9)
    assert scattered["reduce_scatter"]["bytes_sent_per_rank"] == pytest.approx(63 / 64 * grads, rel=1e-9)
    assert reduced["all_gather"] == scattered["all_gather"]
    for refused in (["--zero", "3"], ["--zero", "2", "--framework", "fsdp"], ["--zero", "0"]):
        result = CliRunner().invoke(app, ["estimate", "--model", "llama-8b", "--dp", "64", *refused,
                                          "--grad-reduce", "all-reduce"])  # fmt: skip
        assert result.exit_code == 2, refused
        assert result.stderr.startswith("dpcost: error: --grad-reduce: "), result.stderr


def test_grad_reduce_reaches_a_layouts_data_parallel_buckets() -> None:
    """In a TP 2 layout the stage's gradient shard is all-reduced over DP 16 where --grad-reduce all-reduce says
    so: 2 x 15/16 of it sent per rank, twice the reduce-scatter's 15/16."""
    base = ["estimate", "--model", "llama-8b", "--dp", "16", "--tp", "2", "--zero", "1", "--overlap-comm", "false",
            "--global-batch", "64", "--format", "json"]  # fmt: skip
    scattered = json.loads(ok(*base))["communication"]["collectives"]
    reduced = json.loads(ok(*base, "--grad-reduce", "all-reduce"))["communication"]["collectives"]
    (rs,) = [c for c in scattered if c["op"] == "reduce_scatter"]
    (ar,) = [c for c in reduced if c["op"] == "all_reduce"]
    assert ar["bytes"] == rs["bytes"]
    assert ar["bytes_sent_per_rank"] == pytest.approx(2 * rs["bytes_sent_per_rank"], rel=1e-9)
    assert rs["bytes_sent_per_rank"] == pytest.approx(15 / 16 * rs["bytes"], rel=1e-9)


def test_plan_refuses_the_unfused_softmax_with_flash_attention_before_searching() -> None:
    """Every plan the search would try keeps no scores under flash attention: one line and exit 2, not an empty
    table of 417 refused plans."""
    result = CliRunner().invoke(app, ["plan", "--model", "llama-8b", "--gpus", "64", "--unfused-softmax-fp32"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "dpcost: error: --unfused-softmax-fp32: flash attention keeps no scores: give --no-flash-attention, or "
        "--no-unfused-softmax-fp32"
    )


def test_grad_reduce_reaches_the_experts_and_asks_for_its_stage() -> None:
    """The experts' gradients over expert-DP take the same collective at ZeRO 1 (Mixtral, EP 8 x expert-DP 2), and
    --zero left to the automatic choice is refused: the choice could land on ZeRO 0 or 3, where it cannot apply."""
    base = ["estimate", "--model", "mixtral-8x7b", "--dp", "16", "--ep", "8", "--zero", "1", "--global-batch", "64",
            "--format", "json"]  # fmt: skip
    ops = {(c["purpose"], c["op"]) for c in json.loads(ok(*base, "--grad-reduce", "all-reduce"))["communication"]
           ["collectives"]}  # fmt: skip
    assert {("gradients", "all_reduce"), ("expert gradients", "all_reduce")} <= ops
    result = CliRunner().invoke(app, ["estimate", "--model", "llama-8b", "--dp", "16", "--grad-reduce", "all-reduce"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "dpcost: error: --grad-reduce: chooses ZeRO 1-2's gradient collective: give --zero 1 or 2"
    )


def test_attention_kernel_prices_attention_at_that_kernels_rate() -> None:
    """--attention-kernel flash2 under --framework megatron (cuDNN's by default) prices attention at
    FlashAttention-2's measured rate: on Hopper 0.343 of the saturated rate against cuDNN's 0.55
    (tests/reference/compute-rates/attention.csv, engine/rates.py), so attention takes 0.55 / 0.343 as long; the
    matmuls do not move. The generic plan (FlashAttention-2 already) is unchanged by it."""
    base = ["estimate", "--model", "llama-8b", "--dp", "8", "--framework", "megatron", "--zero", "1",
            "--format", "json"]  # fmt: skip

    def parts(*extra: str) -> dict[str, float]:
        doc = json.loads(ok(*base, *extra))["compute"]["parts"]
        return {p["part"]: p["layer_forward_seconds"] for p in doc}

    cudnn, flash2 = parts(), parts("--attention-kernel", "flash2")
    assert flash2["attention"] / cudnn["attention"] == pytest.approx(0.55 / 0.343, rel=1e-9)
    assert flash2["matmuls"] == cudnn["matmuls"]
    assert parts("--attention-kernel", "cudnn") == cudnn
    # a layout's stages too (their ops, layout_estimate._stage_by_ops): slower attention, a slower step
    layout = ["estimate", "--model", "llama-8b", "--dp", "4", "--tp", "2", "--global-batch", "16", "--format", "json"]
    step = {k: json.loads(ok(*layout, "--attention-kernel", k))["time"]["step_seconds"] for k in ("cudnn", "flash2")}
    assert step["flash2"] > step["cudnn"]


def test_a_megatron_scripts_bad_dropout_is_an_input_error(tmp_path: Path) -> None:
    """`--hidden-dropout abc` in a script read with --from: one line naming the file and the flag, exit 2 (it had
    been an internal error, exit 3)."""
    script = tmp_path / "train.sh"
    script.write_text(
        "torchrun pretrain_gpt.py --num-layers 4 --hidden-size 512 --num-attention-heads 8 --vocab-size 1000 "
        "--seq-length 1024 --micro-batch-size 1 --global-batch-size 8 --bf16 --hidden-dropout abc\n"
    )
    result = CliRunner().invoke(app, ["estimate", "--from", str(script), "--dp", "8"])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"dpcost: error: {script}: --hidden-dropout: must be a number from 0 to below 1")
    assert len(result.stderr.strip().splitlines()) == 1
