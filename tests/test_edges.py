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


@pytest.mark.parametrize(
    ("args", "field", "expected"),
    [
        (["--mfu", "40%"], ("setup", "mfu"), 0.4),
        (["--seq-len", "8k"], ("setup", "seq_len"), 8000),
        (["--seq-len", "8Ki"], ("setup", "seq_len"), 8192),
        (["--accum", "2", "--micro-batch", "1e0"], ("setup", "accumulation"), 2),
        (["--overlap-slowdown", "10%"], ("setup", "overlap_slowdown"), 0.1),
        (["--sync-jitter", "2ms"], ("setup", "sync_jitter"), 0.002),
    ],
)
def test_one_grammar_for_numbers_in_flags(args: list[str], field: tuple[str, str], expected: float) -> None:
    doc = json.loads(ok("estimate", "--model", "llama-8b", "--dp", "8", *args, "-f", "json"))
    assert doc[field[0]][field[1]] == pytest.approx(expected)


def test_dp_takes_the_grammar_too() -> None:
    assert json.loads(ok("estimate", "--model", "llama-8b", "--dp", "1Ki", "-f", "json"))["setup"]["dp"] == 1024
    rows = json.loads(ok("sweep", "--model", "llama-8b", "--dp", "8..1Ki", "-f", "json"))
    assert [r["dp"] for r in rows] == [8, 16, 32, 64, 128, 256, 512, 1024]


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["check", "--model", "llama-70b", "--dp", "512", "--max-memory", "70"], ["--max-memory", "70GB or 70GiB"]),
        (["check", "--model", "llama-70b", "--dp", "512", "--max-step-time", "7.5"], ["--max-step-time", "7.5s"]),
        (["check", "--model", "llama-70b", "--dp", "512", "--max-exposed-comm", "100"], ["100s or 100ms"]),
        (["estimate", "--model", "llama-8b", "--dp", "8", "--bucket-size", "25"], ["--bucket-size", "25GB or"]),
        (["estimate", "--model", "llama-8b", "--dp", "8", "--sync-jitter", "0.9"], ["--sync-jitter", "0.9ms"]),
        (["estimate", "--model", "llama-8b", "--dp", "8", "--mfu", "40"], ["--mfu", "at most 1 (100%)", "40%"]),
        (["estimate", "--model", "llama-8b", "--dp", "8", "--seq-len", "4096.5"], ["--seq-len", "8Ki (8192)"]),
        (["estimate", "--model", "llama-8b", "--dp", "8", "--accum", "two"], ["--accum", "integer"]),
        (["estimate", "--model", "llama-8b", "--dp", "8x"], ["--dp", "integer"]),
        (["collective", "--ranks", "sixteen"], ["--ranks", "integer"]),
    ],
)
def test_a_number_written_wrong_says_how_to_write_it(args: list[str], needles: list[str]) -> None:
    _one_line_error(args, *needles)
    assert "should be" not in run(*args)[2]  # pydantic's wording never reaches the user


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        ("scenarios:\n  a: 1\n", ["scenarios: expected a list"]),
        ("scenarios: []\n", ["scenarios: needs at least 1 item"]),
        ("scenarios:\n  - {name: x, model: llama-8b, dp: 8, limits: {max_memory: 70}}\n", ["70GB or 70GiB"]),
        ("scenarios:\n  - {name: x, model: llama-8b, dp: 8, limits: {require_fit: maybe}}\n", ["true or false"]),
        ("scenarios:\n  - {name: x, model: llama-8b, dp: 8.5}\n", ["dp: expected an integer"]),
        ("scenarios:\n  - {name: x, model: llama-8b, dp: 8, mfu: 40}\n", ["--mfu", "40%"]),
    ],
)
def test_a_plan_file_speaks_the_same_grammar(tmp_path: Path, text: str, needles: list[str]) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(text)
    _one_line_error(["check", str(plan)], str(plan), *needles)
    assert "should be" not in run("check", str(plan))[2]


def test_a_plan_file_takes_units_percentages_and_suffixes(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "scenarios:\n  - name: x\n    model: llama-8b\n    dp: 1Ki\n    mfu: 45%\n    seq-len: 8Ki\n"
        "    limits: {max_memory: 80GB, max_step_time: 10s, min_efficiency: 50%, min_tokens_per_s: 1M}\n"
    )
    doc = json.loads(ok("check", str(plan), "-f", "json"))
    scenario = doc["scenarios"][0]
    assert scenario["dp"] == 1024
    limits = {c["check"]: c["limit"] for c in scenario["checks"]}
    assert limits == {"max_memory": 80e9, "max_step_time": 10.0, "min_efficiency": 0.5, "min_tokens_per_s": 1e6}


def test_junit_to_stdout_needs_the_report_elsewhere(tmp_path: Path) -> None:
    """`--junit -` after a JSON report on stdout made the JSON unreadable."""
    plan = str(Path(__file__).resolve().parents[1] / "examples" / "capacity-plan.yaml")
    _one_line_error(["check", plan, "--junit", "-", "-f", "json"], "--junit", "--output FILE")
    code, out, _ = run("check", plan, "--junit", "-", "-o", str(tmp_path / "r.json"))
    assert code == 0 and out.startswith("<?xml")


def test_annotations_keep_a_json_report_on_stdout_clean(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under GitHub Actions, `-o -` is stdout too: the ::error lines go to stderr beside a JSON report."""
    from typer.testing import CliRunner

    from dpcost.cli import app

    plan = str(Path(__file__).resolve().parents[1] / "examples" / "capacity-plan-failing.yaml")
    result = CliRunner().invoke(app, ["check", plan, "-f", "json", "-o", "-"], env={"GITHUB_ACTIONS": "true"})
    assert result.exit_code == 1
    assert json.loads(result.stdout)["passed"] is False
    assert "::error" in result.stderr


def test_a_plain_number_flag_says_so() -> None:
    _one_line_error(["collective", "--factor", "two"], "--factor: must be a number above 1")


@pytest.mark.parametrize(
    "args",
    [
        ["check", "PLAN", "--junit", "SAME", "-o", "SAME"],
        ["sweep", "--model", "llama-8b", "--dp", "8", "--plot", "SAME.svg", "-o", "SAME.svg"],
        ["calibrate", "LOG", "--save-topology", "SAME", "-o", "SAME"],
    ],
)
def test_two_outputs_never_share_a_file(tmp_path: Path, args: list[str]) -> None:
    """The second write replaced the first (a fitted topology overwritten by its report)."""
    root = Path(__file__).resolve().parents[1]
    files = {
        "PLAN": str(root / "examples" / "capacity-plan.yaml"),
        "LOG": str(root / "examples" / "nccl-tests-h100-2n-all_reduce.log"),
        "SAME": str(tmp_path / "same.out"),
        "SAME.svg": str(tmp_path / "same.svg"),
    }
    _one_line_error([files.get(a, a) for a in args], "also --output's file")
    assert not any(tmp_path.iterdir())  # refused before anything was written


def test_a_plot_path_is_checked_before_costing(tmp_path: Path) -> None:
    _one_line_error(
        ["sweep", "--model", "llama-8b", "--dp", "8..4096", "--plot", str(tmp_path / "no" / "x.svg")], "--plot"
    )
    code, out, _ = run("sweep", "--model", "llama-8b", "--dp", "8..4096", "--plot", str(tmp_path / "no" / "x.svg"))
    assert code == 2 and out == ""  # no table printed first


def test_brief_leaves_the_chart_out() -> None:
    assert "efficiency" in ok("sweep", "--model", "llama-8b", "--dp", "8,16", "--chart")
    brief = ok("sweep", "--model", "llama-8b", "--dp", "8,16", "--chart", "--brief")
    assert brief.startswith("Verdict, DP 16") and "\n\n" not in brief.strip()


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["check", "--model", "llama-8b", "--dp", "8", "--min-efficiency", "85"], ["--min-efficiency", "40%"]),
        (["check", "--model", "llama-8b", "--dp", "8", "--max-step-time", "2e6s"], ["beyond 1e6s"]),
    ],
)
def test_more_numbers_written_wrong(args: list[str], needles: list[str]) -> None:
    _one_line_error(args, *needles)


def test_times_and_counts_read_as_people_write_them() -> None:
    doc = json.loads(ok("estimate", "--model", "llama-8b", "--dp", "8", "--sync-jitter", "900\u03bcs", "-f", "json"))
    assert doc["setup"]["sync_jitter"] == pytest.approx(900e-6)  # Greek mu as well as the micro sign
    limits = json.loads(
        ok(
            "check",
            "--model",
            "llama-8b",
            "--dp",
            "8",
            "--max-step-time",
            "2h",
            "--min-tokens-per-s",
            "4Ki",
            "-f",
            "json",
        )
    )["scenarios"][0]["checks"]
    assert {c["check"]: c["limit"] for c in limits} == {"max_step_time": 7200.0, "min_tokens_per_s": 4096.0}


def test_an_error_never_dumps_a_document_or_a_python_repr(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text("scenarios:\n  - {name: a, model: llama-8b, dp: 8, seq_len: 1024, seq-len: 2048}\n")
    _, _, err = run("check", str(plan))
    assert "given twice" in err and "{" not in err
    plan.write_text("scenarios:\n  - {name: a, model: llama-8b, dp: 8, seq-len: 2019-01-01}\n")
    _, _, err = run("check", str(plan))
    assert "got 2019-01-01" in err and "datetime" not in err


@pytest.mark.parametrize(("text", "said"), [("", "an empty file"), ("- a\n", "a list"), ("hello\n", "text")])
def test_a_file_that_is_not_a_mapping_says_what_it_is(tmp_path: Path, text: str, said: str) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(text)
    _one_line_error(["check", str(plan)], f"expected a mapping of fields at the top, got {said}")
