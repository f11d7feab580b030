"""The answer first (issue 15): every command that costs a plan leads with a verdict block, at most 8 lines at 80
columns, whose figures are the report's own; --brief prints it alone; JSON carries it as `summary`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli import ENV
from typer.testing import CliRunner

from dpcost.cli import app
from dpcost.render.checks import check_table
from dpcost.render.formats import fit, to_rich

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PLANS = {
    "fits": ["--model", "llama-70b", "--dp", "512"],
    "nothing-fits": ["--model", "deepseek-v3", "--dp", "512"],
    "oom-fixed-stage": ["--model", "llama-405b", "--dp", "8", "--zero", "1", "--recompute", "none"],
    "comm-bound": ["--model", "mixtral-8x7b", "--dp", "256", "--seq-len", "1024"],
    "framework": ["--model", "llama-8b", "--dp", "128", "--framework", "fsdp", "--compute-dtype", "fp8"],
    "inference": ["--model", "llama-8b", "--dp", "64", "--mode", "inference", "--batch", "16"],
    "part-filled": ["--model", "llama-8b", "--dp", "500", "--accum", "4"],
}


def dpcost(*args: str, columns: int = 200) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={**ENV, "COLUMNS": str(columns)})
    assert result.exit_code in (0, 1), result.stderr
    return result.exit_code, result.stdout


def verdict_block(out: str) -> list[str]:
    """The lines before the first blank line: the verdict block."""
    return out.split("\n\n", 1)[0].splitlines()


@pytest.mark.parametrize("columns", [80, 100, 160])
@pytest.mark.parametrize("name", list(PLANS))
def test_estimate_leads_with_a_verdict_of_at_most_8_lines(name: str, columns: int) -> None:
    _, out = dpcost("estimate", *PLANS[name], columns=columns)
    block = verdict_block(out)
    assert block[0].startswith("Verdict: ")
    assert len(block) <= 8, "\n".join(block)
    assert all(len(line.rstrip()) <= columns for line in block)
    keys = [line.split()[0] for line in block[1:] if not line.startswith("   ")]
    assert keys[:4] == ["plan", "memory", "speed", "bound"]


@pytest.mark.parametrize("name", list(PLANS))
def test_the_verdict_says_what_the_report_says(name: str) -> None:
    _, text = dpcost("estimate", *PLANS[name])
    _, raw = dpcost("estimate", *PLANS[name], "--format", "json")
    doc = json.loads(raw)
    block = "\n".join(verdict_block(text))
    fits = doc["inference"]["fits"] if doc["inference"] else doc["memory"]["stages"][doc["setup"]["zero_stage"]]["fits"]
    assert doc["summary"]["fits"] is fits
    assert ("does NOT fit" not in block) is fits
    if doc["time"] is not None:
        # the step that counts is the scheduled step with its losses: the time table's row of that name
        step_row = next(ln for ln in text.splitlines() if "step, as scheduled" in ln)
        assert doc["summary"]["step_seconds"] == doc["time"]["step_seconds"]
        assert step_row.split()[-2] in block.splitlines()[0]
        assert f"{doc['time']['tokens_per_second']:,.0f} tokens/s" in block
        assert f"ZeRO-{doc['setup']['zero_stage']}" in block
    memory = doc["summary"]["memory_bytes"]
    assert doc["summary"]["headroom_bytes"] == max(0, doc["summary"]["hbm_bytes"] - memory)
    assert doc["summary"]["shortfall_bytes"] == max(0, memory - doc["summary"]["hbm_bytes"])


def test_the_top_warning_is_the_one_that_matters_not_the_first() -> None:
    """llama-70b at DP 512: needs-sharding comes first in the list, but ZeRO-3 was chosen and fits; what costs the
    plan time is the 11% lost at scale."""
    doc = json.loads(dpcost("estimate", *PLANS["fits"], "-f", "json")[1])
    assert doc["warnings"][0]["code"] == "needs-sharding"
    assert doc["summary"]["top_warning"]["code"] == "losses-at-scale"
    assert doc["summary"]["top_warning"]["action"].startswith("fewer, larger collectives")
    oom = json.loads(dpcost("estimate", *PLANS["oom-fixed-stage"], "-f", "json")[1])
    assert oom["summary"]["top_warning"]["code"] == "oom"


def test_brief_prints_the_verdict_alone() -> None:
    _, full = dpcost("estimate", *PLANS["fits"])
    _, brief = dpcost("estimate", *PLANS["fits"], "--brief")
    assert brief.strip() == "\n".join(verdict_block(full)).strip()
    assert "Setup" not in brief
    doc = json.loads(dpcost("estimate", *PLANS["fits"], "--brief", "-f", "json")[1])
    whole = json.loads(dpcost("estimate", *PLANS["fits"], "-f", "json")[1])
    assert doc == {"schema_version": 2, "summary": whole["summary"]}


def test_check_leads_with_a_verdict_naming_what_failed() -> None:
    code, out = dpcost("check", str(EXAMPLES / "capacity-plan-failing.yaml"), columns=80)
    assert code == 1
    block = verdict_block(out)
    assert block[0] == "Verdict: 2 of 5 check(s) failed, in mixtral-short-sequences"
    assert any(line.startswith("  mixtral-short-sequences  FAIL (--min-efficiency") for line in block)
    _, brief = dpcost("check", str(EXAMPLES / "capacity-plan-failing.yaml"), "--brief", "-f", "json")
    doc = json.loads(brief)
    assert doc["passed"] is False and set(doc["summaries"]) == {"llama-70b-dp512", "mixtral-short-sequences"}


def test_sweep_leads_with_its_best_row() -> None:
    """The best row: the most tokens/s among the sizes that fit."""
    rows = json.loads(dpcost("sweep", "--model", "llama-70b", "--dp", "8..4096", "-f", "json")[1])
    best = max((r for r in rows if r["fits"]), key=lambda r: r["tokens_per_second"])
    _, out = dpcost("sweep", "--model", "llama-70b", "--dp", "8..4096", columns=80)
    assert verdict_block(out)[0].startswith(f"Verdict, DP {best['dp']} (the most tokens/s of the sizes that fit)")
    doc = json.loads(dpcost("sweep", "--model", "llama-70b", "--dp", "8..4096", "--brief", "-f", "json")[1])
    assert doc["dp"] == best["dp"] and doc["summary"]["tokens_per_second"] == best["tokens_per_second"]


def test_the_check_table_keeps_its_form_at_80_columns() -> None:
    """Names break after their hyphens before the table gives up its columns; the note names what it left out."""
    _, out = dpcost("check", str(EXAMPLES / "capacity-plan.yaml"), columns=80)
    lines = out.splitlines()
    header = next(ln for ln in lines if ln.split()[:2] == ["scenario", "check"])
    assert "limit" in header and "result" in header
    assert all(len(ln.rstrip()) <= 80 for ln in lines)
    assert any(ln.startswith("  llama-70b-dp512   --require-fit") for ln in lines)
    assert "left out to fit 80 columns: plan" in out


def test_fitting_ends_at_every_width() -> None:
    """A breakable column narrowed to its header's width once looped for ever (60 columns)."""
    from dpcost.checks import Limits, report_of
    from dpcost.cli.check import _run_plan

    table = check_table(report_of(_run_plan(EXAMPLES / "capacity-plan.yaml", Limits())))
    for width in range(20, 201, 3):
        fitted = fit(table, width)
        assert fitted.stacked or max(len(h) for h in fitted.headers) <= width
        assert to_rich([table], width)


@pytest.mark.parametrize("framework", ["ddp", "megatron"])
def test_an_oom_action_is_one_dpcost_accepts(framework: str) -> None:
    """DDP and Megatron run no ZeRO-3 (engine/frameworks.py): the action names the frameworks that do, and that plan
    is costed."""
    args = ["estimate", "--model", "llama-70b", "--dp", "512"]
    doc = json.loads(dpcost(*args, "--framework", framework, "-f", "json")[1])
    action = doc["summary"]["top_warning"]["action"]
    assert "--zero 3" not in action and "--framework fsdp or deepspeed does" in action
    code, _ = dpcost(*args, "--framework", "fsdp", "--zero", "3")
    assert code == 0


def test_what_binds_the_step_is_true_whatever_overlaps() -> None:
    """The bound compares compute with the communication the step waits for (they sum, with the losses, to it)."""
    one = json.loads(dpcost("estimate", "--model", "llama-8b", "--dp", "1", "-f", "json")[1])["summary"]
    assert one["bound"] == "compute" and one["bound_reason"] == "nothing to communicate"
    args = ["estimate", "--model", "llama-70b", "--dp", "512", "--zero", "2", "--topology", "dgx-b200"]
    serial = json.loads(dpcost(*args, "--overlap-comm", "false", "-f", "json")[1])
    t = serial["time"]
    assert t["exposed_comm_seconds"] > t["compute_seconds"] and serial["summary"]["bound"] == "communication"
    assert "--overlap-comm true" in serial["summary"]["top_warning"]["action"]
    ds = json.loads(dpcost("estimate", "--model", "llama-8b", "--dp", "64", "--framework", "deepspeed", "--zero", "2",
                           "-f", "json")[1])  # fmt: skip
    assert ds["summary"]["bound"] == "compute" and "left exposed" in ds["summary"]["bound_reason"]


def test_a_replica_on_several_gpus_does_not_fit_and_says_so() -> None:
    args = ["estimate", "--model", "deepseek-v3", "--topology", "dgx-a100", "--mode", "inference"]
    v = json.loads(dpcost(*args, "--dp", "64", "--batch", "64", "-f", "json")[1])["summary"]
    assert v["fits"] is False and v["headroom_bytes"] == 0 and v["shortfall_bytes"] > 0
    none = json.loads(dpcost(*args, "--dp", "8", "--batch", "4k", "-f", "json")[1])["summary"]
    assert "--dp 8 holds none" in none["verdict"] and none["tokens_per_second"] == 0


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ([], "recompute op (both chosen: the fastest that fits)"),
        (["--recompute", "full"], "recompute full (ZeRO stage chosen: the fastest that fits)"),
        (["--zero", "3"], "recompute op (recompute chosen: the fastest that fits)"),
        (["--zero", "3", "--recompute", "full"], "ZeRO-3, recompute full, "),
    ],
)
def test_the_plan_line_names_what_dpcost_chose(given: list[str], says: str) -> None:
    """The plan line says which of the ZeRO stage and the recomputation dpcost chose, so that a flag the user gave
    never reads as overridden: `--recompute full` with the stage left to dpcost names the stage alone."""
    code, out = dpcost("estimate", "--model", "llama-70b", "--dp", "512", *given, "--format", "json")
    assert code == 0, out
    assert says in json.loads(out)["summary"]["plan"]
