"""Issue 15's edges: each crash, parser bug and misleading message a new user or a fuzzer hit, held by a test that
failed before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli import _one_line_error, ok, run


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        # the automatic plan left with no eligible stage was an IndexError (exit 3)
        (["--dp", "8", "--framework", "ddp", "--offload", "optimizer"], ["--offload", "ZeRO 1-3", "ddp runs ZeRO 0"]),
        (["--dp", "8", "--offload", "params", "--algorithm", "tree"], ["--algorithm", "tree cannot run"]),
        (["--dp", "64", "--offload", "params", "--algorithm", "nvls_tree"], ["--algorithm", "ZeRO 3"]),
    ],
)
def test_no_eligible_stage_is_bad_input(args: list[str], needles: list[str]) -> None:
    _one_line_error(["estimate", "--model", "llama-8b", *args], *needles)


@pytest.mark.parametrize("algorithm", ["ring", "tree", "nvls", "nvls_tree"])
def test_one_rank_forces_no_algorithm(algorithm: str) -> None:
    """At DP 1 no collective runs, so a forced algorithm rules out no stage: the plan is the one without it."""
    forced = json.loads(ok("estimate", "--model", "llama-8b", "--dp", "1", "--algorithm", algorithm, "-f", "json"))
    free = json.loads(ok("estimate", "--model", "llama-8b", "--dp", "1", "-f", "json"))
    assert forced["setup"]["zero_stage"] == free["setup"]["zero_stage"]
    assert forced["time"]["step_seconds"] == free["time"]["step_seconds"]


def test_one_rank_loses_nothing_at_scale() -> None:
    """One rank neither waits for another nor overlaps a collective: the losses are 0, not -8.9e-15 s."""
    d = json.loads(ok("estimate", "--model", "llama-405b", "--dp", "1", "--topology", "dgx-b200", "-f", "json"))
    assert d["time"]["losses_seconds"] == 0.0
    assert all(term["seconds"] >= 0 for term in d["time"]["breakdown"])


def test_a_plan_file_reads_a_dotted_catalog_name_as_a_name(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text("scenarios:\n  - name: qwen\n    model: qwen2.5-72b\n    dp: 64\n")
    d = json.loads(ok("check", str(plan), "-f", "json"))
    assert d["scenarios"][0]["model"] == "qwen2.5-72b"


def test_a_plan_file_still_finds_a_spec_beside_it(tmp_path: Path) -> None:
    (tmp_path / "mine.yaml").write_text(Path("models/llama-8b.yaml").read_text())
    plan = tmp_path / "plan.yaml"
    plan.write_text("scenarios:\n  - name: mine\n    model: mine.yaml\n    dp: 8\n")
    code, _, err = run("check", str(plan), "-f", "json")
    assert code == 0, err


def test_a_flag_beside_a_plan_file_is_named_once() -> None:
    _one_line_error(["check", "examples/capacity-plan.yaml", "--dp", "8"], "--dp: capacity-plan.yaml names each")
    _, _, err = run("check", "examples/capacity-plan.yaml", "--dp", "8")
    assert err.count("--dp") == 2  # the flag at fault, then once among the one-plan flags


def test_a_part_filled_last_node_is_said() -> None:
    """500 GPUs on 8-GPU nodes are 63 nodes, the last not full; placement spreads them evenly (placement.py)."""
    out = ok("estimate", "--model", "llama-8b", "--dp", "500")
    assert "500 GPUs on 63 nodes of 8, part-filled: costed as 7.94 per node" in out
    assert "512 GPUs = 64 nodes x 8" in ok("estimate", "--model", "llama-8b", "--dp", "512")
