"""`dpcost check`: limits on plans for CI, and every exit code of the CLI through CliRunner."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from dpcost.cli import app

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PASSING = EXAMPLES / "capacity-plan.yaml"
FAILING = EXAMPLES / "capacity-plan-failing.yaml"
ENV = {"COLUMNS": "200", "NO_COLOR": "1", "GITHUB_ACTIONS": ""}


def run(*args: str, **env: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env={**ENV, **env})
    return result.exit_code, result.stdout, result.stderr


def schema(kind: str) -> jsonschema.Draft202012Validator:
    code, out, _ = run("schema", kind)
    assert code == 0
    doc = json.loads(out)
    jsonschema.Draft202012Validator.check_schema(doc)
    return jsonschema.Draft202012Validator(doc)


def test_one_plan_every_limit_with_its_value() -> None:
    code, out, err = run(
        "check", "--model", "llama-70b", "--dp", "512", "--require-fit", "--max-memory", "60GB",
        "--max-step-time", "7.5s", "--min-efficiency", "80%", "--max-exposed-comm", "50ms",
        "--min-tokens-per-s", "300K",
    )  # fmt: skip
    assert code == 0, err
    for line in (
        "--require-fit      must fit                     yes   pass",
        "--max-memory       <= 60.0 GB               59.0 GB   pass",
        "--max-step-time    <= 7.50 s                 4.30 s   pass",
        "--min-efficiency   >= 80.0%                   82.0%   pass",
        "--max-exposed-comm <= 50.0 ms               37.7 ms   pass",
        "--min-tokens-per-s >= 300.0K tokens/s   488.3K tokens/s   pass",
    ):
        assert " ".join(line.split()) in " ".join(out.split()), line
    assert "every check passed" in out


def test_the_values_are_the_estimates() -> None:
    doc = json.loads(run("check", "--model", "llama-70b", "--dp", "512", "--max-step-time", "3600s", "-f", "json")[1])
    est = json.loads(run("estimate", "--model", "llama-70b", "--dp", "512", "-f", "json")[1])
    (check,) = doc["scenarios"][0]["checks"]
    assert check["value"] == est["time"]["step_seconds"] and check["limit"] == 3600.0


def test_a_failed_check_exits_1_and_says_which() -> None:
    code, out, _ = run("check", "--model", "llama-70b", "--dp", "512", "--min-efficiency", "0.95")
    assert code == 1
    assert "FAIL" in out and "failed: llama-70b at DP 512" in out
    code, out, _ = run("check", "--model", "llama-70b", "--dp", "512", "--zero", "0")  # no limit: must fit
    assert code == 1 and "--require-fit" in out and "FAIL" in out


def test_a_plan_that_holds_exits_0() -> None:
    code, out, err = run("check", str(PASSING))
    assert code == 0, err
    assert "3 scenario(s), 10 check(s), 0 failed" in out


def test_a_plan_with_one_failing_scenario_names_it_everywhere(tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    code, out, err = run("check", str(FAILING), "--junit", str(junit))
    assert code == 1, err
    rows = [ln.split() for ln in out.splitlines() if "FAIL" in ln]
    assert rows and all(r[0] == "mixtral-short-sequences" for r in rows)
    assert "failed: mixtral-short-sequences" in out
    # JSON
    code, out, _ = run("check", str(FAILING), "--format", "json")
    assert code == 1
    doc = json.loads(out)
    schema("check").validate(doc)
    assert doc["passed"] is False and doc["failed"] == ["mixtral-short-sequences"]
    by_name = {s["name"]: s for s in doc["scenarios"]}
    assert by_name["llama-70b-dp512"]["passed"] is True
    failed = [c["check"] for c in by_name["mixtral-short-sequences"]["checks"] if not c["passed"]]
    assert failed == ["min_efficiency", "max_exposed_comm"]
    # JUnit: one test case per scenario and check, the failures under the failing scenario
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites" and root.get("tests") == "5" and root.get("failures") == "2"
    cases = root.findall("testsuite/testcase")
    assert len(cases) == 5
    failures = [c for c in cases if c.find("failure") is not None]
    assert {c.get("classname") for c in failures} == {"dpcost.check.mixtral-short-sequences"}
    assert "mixtral-short-sequences" in failures[0].find("failure").get("message")  # type: ignore[union-attr]
    assert "wrote" in err


def test_github_actions_annotations() -> None:
    code, out, _ = run("check", str(FAILING), GITHUB_ACTIONS="true")
    assert code == 1
    lines = [ln for ln in out.splitlines() if ln.startswith("::error ")]
    assert len(lines) == 2
    assert lines[0].startswith(
        f"::error file={FAILING},title=dpcost check%3A mixtral-short-sequences --min-efficiency::"
    )
    assert "20.4%25 breaks the limit >= 80.0%25" in lines[0]
    # with a JSON document on stdout the annotations go to stderr and the JSON stays valid
    result = CliRunner().invoke(app, ["check", str(FAILING), "-f", "json"], env={**ENV, "GITHUB_ACTIONS": "true"})
    json.loads(result.stdout)
    assert result.stderr.count("::error ") == 2
    assert "::error" not in run("check", str(FAILING))[1]  # not under GitHub Actions


def test_csv_yaml_markdown_html_of_a_check() -> None:
    code, out, _ = run("check", str(FAILING), "-f", "csv")
    lines = out.splitlines()
    assert code == 1 and lines[0] == "scenario,model,topology,dp,zero_stage,check,flag,unit,limit,value,passed"
    assert lines[1].startswith("llama-70b-dp512,llama-70b,dgx-h100,512,3,require_fit,--require-fit,bool,true,true,true")
    assert yaml.safe_load(run("check", str(FAILING), "-f", "yaml")[1])["failed"] == ["mixtral-short-sequences"]
    assert "| mixtral-short-sequences |" in run("check", str(FAILING), "-f", "markdown")[1]
    assert '<td class="no">FAIL</td>' in run("check", str(FAILING), "-f", "html")[1]


def test_the_plan_files_validate_against_the_plan_schema() -> None:
    validator = schema("plan")
    for path in (PASSING, FAILING):
        validator.validate(yaml.safe_load(path.read_text()))
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({"scenarios": [{"name": "x", "model": "llama-8b", "dp": 8, "frobnicate": 1}]})


def _plan(tmp_path: Path, text: str) -> str:
    path = tmp_path / "plan.yaml"
    path.write_text(text)
    return str(path)


def test_plan_options_by_flag_or_field_name(tmp_path: Path) -> None:
    plan = _plan(
        tmp_path,
        "scenarios:\n"
        "  - {name: a, model: llama-8b, dp: 64, micro-batch: 2, accum: 2}\n"
        "  - {name: b, model: llama-8b, dp: 64, options: {micro_batch: 2, accumulation: 2}}\n",
    )
    code, out, err = run("check", plan, "-f", "json", "--max-step-time", "3600s")
    assert code == 0, err
    a, b = json.loads(out)["scenarios"]
    assert a["checks"] == b["checks"]


BAD_PLANS = [
    ("scenarios: []\n", ["scenarios", "at least 1"]),
    ("scenarios:\n  - {name: a, model: llama-7b, dp: 8}\n", ["scenario 'a': model", "unknown model 'llama-7b'"]),
    ("scenarios:\n  - {name: a, model: llama-8b, dp: 8, zero: 7}\n", ["scenario 'a'", "--zero"]),
    ("scenarios:\n  - {name: a, model: llama-8b, dp: 8, microbatch: 2}\n", ["scenarios.0", "microbatch"]),
    ("scenarios:\n  - {name: a, model: llama-8b, dp: 8, limits: {max_memory: lots}}\n", ["max_memory", "80GB"]),
    ("scenarios:\n  - {name: a, model: llama-8b, dp: 8, limits: {max_step: 1s}}\n", ["max_step", "max_step_time"]),
    ("scenarios:\n  - {name: a, model: llama-8b, dp: 8}\n  - {name: a, model: llama-8b, dp: 16}\n", ["unique"]),
    (
        "scenarios:\n  - {name: a, model: llama-8b, dp: 8, mode: inference, limits: {max_step_time: 1s}}\n",
        ["scenario 'a'", "max_step_time", "inference"],
    ),
    ("name: [oops\n", ["malformed YAML"]),
    ("scenarios:\n  - {name: a, model: llama-8b, dp: 8, options: [1]}\n", ["scenarios.0", "mapping"]),
    ("scenarios:\n  - {name: a, model: llama-8b, dp: 8, zero: 2, options: {zero: 3}}\n", ["'zero'", "twice"]),
    ("scenarios:\n  - {name: a, model: llama-8b, dp: 8, micro-batch: 2, micro_batch: 4}\n", ["twice"]),
    ("scenarios:\n  - {name: a, model: llama-8b, dp: 8, limits: [1]}\n", ["limits"]),
    ("defaults: {limits: foo}\nscenarios:\n  - {name: a, model: llama-8b, dp: 8}\n", ["limits"]),
    ("defaults: {microbatch: 2}\nscenarios:\n  - {name: a, model: llama-8b, dp: 8}\n", ["defaults", "microbatch"]),
    ("scenarios:\n  - {name: a, model: llama-8b, dp: true}\n", ["dp"]),
]


@pytest.mark.parametrize(("text", "needles"), BAD_PLANS)
def test_a_bad_plan_is_bad_input(tmp_path: Path, text: str, needles: list[str]) -> None:
    code, out, err = run("check", _plan(tmp_path, text))
    assert code == 2, (code, out, err)
    assert err.count("\n") == 1 and err.startswith("dpcost: error: ") and "Traceback" not in err
    for needle in needles:
        assert needle in err, (needle, err)


# ------------------------------------------------------------------------------------------------ exit codes


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["check"], ["--model", "PLAN"]),
        (["check", str(PASSING), "--model", "llama-8b"], ["--model", "not both"]),
        (["check", str(PASSING), "--micro-batch", "2"], ["--micro-batch", "capacity-plan.yaml"]),
        (["check", "--model", "llama-8b", "--dp", "8", "--max-memory", "lots"], ["--max-memory", "80GB"]),
        (["check", "--model", "llama-8b", "--dp", "8", "--min-efficiency", "150%"], ["--min-efficiency"]),
        (["check", "--model", "llama-8b", "--dp", "8", "--max-step-time", "nan"], ["--max-step-time", "'nan'"]),
        (
            ["check", "--model", "llama-8b", "--dp", "8", "--mode", "inference", "--max-step-time", "1s"],
            ["--max-step-time", "inference"],
        ),
        (["check", "/nonexistent/plan.yaml"], ["PLAN", "no such file"]),
        (["check", str(PASSING), "--junit", "/nonexistent/dir/junit.xml"], ["--junit", "cannot write"]),
        (["estimate", "--model", "x" * 3000, "--dp", "8"], ["--model", "not a usable file name", "characters)"]),
        (["estimate", "--model", "llama-8b", "--dp", "8", "--output", "/nonexistent/x.md"], ["--output"]),
        (["estimate", "--model", "llama-8b", "--dp", "8", "-o", "/"], ["--output", "cannot write"]),
        (["collective", "--factor", "nan"], ["--factor", "above 1"]),
        (["collective", "--factor", "inf"], ["--factor"]),
        (["collective", "--compare", "y" * 3000], ["--compare", "not a usable file name"]),
        (["estimate", "--model", "llama-8b", "--dp", "8", "--skew", "nan"], ["--skew"]),
        (["estimate", "--model", "llama-8b", "--dp", "8", "--mfu", "inf"], ["--mfu"]),
        (["sweep", "--model", "llama-8b", "--dp", "8", "--plot", "/nonexistent/x.svg"], ["--plot"]),
        (["schema", "estimate", "--output", "/nonexistent/s.json"], ["--output"]),
        (["estimate", "--model", "llama-8b", "--dp", "8", "--format", "pdf"], ["--format", "html"]),
    ],
)
def test_bad_input_exits_2_naming_it(args: list[str], needles: list[str]) -> None:
    code, out, err = run(*args)
    assert code == 2, (code, out, err)
    assert err.count("\n") == 1 and err.startswith("dpcost: error: ") and "Traceback" not in err
    assert len(err) < 400, err  # long values are cut
    for needle in needles:
        assert needle in err, (needle, err)


def test_exit_codes_0_1_2_3(monkeypatch: pytest.MonkeyPatch) -> None:
    assert run("estimate", "--model", "llama-8b", "--dp", "8")[0] == 0
    assert run("--version")[0] == 0 and run("--version")[1].startswith("dpcost ")
    assert run("estimate", "--model", "llama-70b", "--dp", "512", "--zero", "0", "--check")[0] == 1
    assert run("check", str(FAILING))[0] == 1
    assert run("estimate", "--model", "llama-8b")[0] == 2

    def broken(*_args: object, **_kwargs: object) -> None:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr("dpcost.engine.estimate.estimate", broken)
    code, _, err = run("estimate", "--model", "llama-8b", "--dp", "8")
    assert code == 3 and "internal error (ZeroDivisionError: a bug)" in err and "report it" in err


def test_a_limit_of_zero_is_a_limit() -> None:
    """0 is a limit like any other: `--max-exposed-comm 0` fails a plan that exposes any communication."""
    code, out, _ = run("check", "--model", "llama-70b", "--dp", "2048", "--max-exposed-comm", "0", "-f", "json")
    assert code == 1
    (check,) = json.loads(out)["scenarios"][0]["checks"]
    assert check["check"] == "max_exposed_comm" and check["limit"] == 0.0 and check["value"] > 0


def test_a_plan_file_refuses_the_single_plan_flags() -> None:
    code, _, err = run("check", str(PASSING), "--topology", "dgx-a100")
    assert code == 2 and "--topology" in err


def test_defaults_merge_options_and_files_are_found_beside_the_plan(tmp_path: Path) -> None:
    folder = tmp_path / "plans"
    folder.mkdir()
    (folder / "tiny.yaml").write_text((Path(__file__).parents[1] / "models" / "llama-8b.yaml").read_text())
    plan = folder / "plan.yaml"
    plan.write_text(
        "defaults: {options: {zero: 2}, limits: {max_memory: 85GB}}\n"
        "scenarios:\n  - {name: a, model: tiny.yaml, dp: 8, options: {micro-batch: 2},\n"
        "     limits: {max_step_time: 3600s}}\n"
    )
    code, out, err = run("check", str(plan), "-f", "json")  # from another folder: the model is beside the plan
    assert code == 0, err
    (scenario,) = json.loads(out)["scenarios"]
    assert scenario["zero_stage"] == 2
    assert [c["check"] for c in scenario["checks"]] == ["max_memory", "max_step_time"]


def test_junit_xml_stays_well_formed_with_odd_names(tmp_path: Path) -> None:
    plan = _plan(tmp_path, 'scenarios:\n  - {name: "odd \\uFFFE <&> name", model: llama-8b, dp: 8}\n')
    junit = tmp_path / "junit.xml"
    code, _, err = run("check", plan, "--junit", str(junit))
    assert code == 0, err
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("name") == "odd \ufffd <&> name"


def test_junit_replaces_exactly_what_xml_does_not_allow() -> None:
    """XML 1.0's Char production: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]; every other
    code point is replaced. Checked at every code point to U+11000 and at every range's ends above it."""
    from dpcost.render.checks import NOT_XML

    def allowed(c: int) -> bool:
        return c in (0x9, 0xA, 0xD) or 0x20 <= c <= 0xD7FF or 0xE000 <= c <= 0xFFFD or 0x10000 <= c <= 0x10FFFF

    for c in [*range(0x11000), 0x10FFFE, 0x10FFFF, 0x7FFFF, 0x80000]:
        assert (NOT_XML.match(chr(c)) is None) == allowed(c), hex(c)


LAYOUTS = EXAMPLES / "capacity-plan-layouts.yaml"


def test_a_layout_scenario_is_named_by_its_layout_and_gpus(tmp_path: Path) -> None:
    """Meta's 405B layout (TP8 x PP16 x DP128) is 16,384 GPUs, not DP's 128: the table, JSON, CSV and JUnit say so;
    a pure-DP scenario keeps its old form (no `layout` key, no layout columns)."""
    code, out, _ = run("check", str(LAYOUTS))
    assert code == 0
    assert "llama-405b TP8 CP1 PP16 DP128 (16,384 GPUs) on dgx-h100" in out
    assert "deepseek-v3 TP1 CP1 PP16 DP128 EP64 (2,048 GPUs) on hgx-h800" in out
    doc = json.loads(run("check", str(LAYOUTS), "-f", "json")[1])
    schema("check").validate(doc)
    meta = doc["scenarios"][0]
    assert meta["dp"] == 128
    assert meta["layout"] == {"gpus": 16384, "tp": 8, "cp": 1, "pp": 16, "ep": 1, "virtual_stages": 1}
    assert "layout" not in json.loads(run("check", str(PASSING), "-f", "json")[1])["scenarios"][0]
    header = run("check", str(LAYOUTS), "-f", "csv")[1].splitlines()[0]
    assert header == "scenario,model,topology,dp,gpus,tp,cp,pp,ep,zero_stage,check,flag,unit,limit,value,passed"
    junit = tmp_path / "junit.xml"
    assert run("check", str(LAYOUTS), "--junit", str(junit))[0] == 0
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties == {"model": "llama-405b", "topology": "dgx-h100", "dp": "128", "gpus": "16384", "tp": "8",
                          "cp": "1", "pp": "16", "ep": "1"}  # fmt: skip


def test_one_layout_plan_from_flags_is_named_by_its_layout() -> None:
    code, out, _ = run("check", "--model", "llama-405b", "--tp", "8", "--pp", "16", "--dp", "128",
                       "--max-step-time", "1s")  # fmt: skip
    assert code == 1 and "failed: llama-405b TP8 CP1 PP16 DP128" in out
