"""`dpcost check` as a table, as JUnit XML (one test case per scenario and check) and as GitHub Actions
annotations (one `::error` line per failed check)."""

from __future__ import annotations

import re
from typing import Any

from dpcost.checks import CHECKS, CheckReport, CheckResult, ScenarioResult
from dpcost.render.plan import layout_text
from dpcost.render.table import Table
from dpcost.units import fmt_bytes, fmt_count, fmt_seconds

__all__ = ["check_rows", "check_table", "check_verdict", "github_annotations", "junit_xml", "shown"]

WORDS = {
    "require_fit": "fits in memory",
    "max_memory": "memory per GPU (reserved + context)",
    "max_step_time": "step time",
    "min_efficiency": "scaling efficiency",
    "max_exposed_comm": "exposed communication",
    "min_tokens_per_s": "throughput",
    "max_behind_best": "step behind the best plan",
}


def shown(value: float | bool, unit: str) -> str:
    """A limit or a value in the units the other reports print it in."""
    if unit == "bool":
        return "yes" if value else "no"
    if unit == "bytes":
        return fmt_bytes(float(value))
    if unit == "seconds":
        return fmt_seconds(float(value))
    if unit == "fraction":
        return f"{float(value):.1%}"
    return f"{fmt_count(float(value))} tokens/s"


def _limit(c: CheckResult) -> str:
    op = CHECKS[c.check][2]
    return "must fit" if op == "is" else f"{op} {shown(c.limit, c.unit)}"


def _broken(s: ScenarioResult, c: CheckResult) -> str:
    """A failed check in the verdict's list: its flag, the plan's value and the limit it breaks."""
    if c.check == "max_behind_best" and not s.summary.fits:
        return f"{c.flag}: the plan does not fit"
    return f"{c.flag} {shown(c.value, c.unit)}, not {_limit(c)}"


def message(s: ScenarioResult, c: CheckResult) -> str:
    """One failed (or passed) check in words."""
    what = WORDS[c.check]
    if c.check == "require_fit":
        return f"{s.name}: the plan {'fits' if c.passed else 'does not fit'} in GPU memory (ZeRO-{s.zero_stage})"
    if c.check == "max_behind_best" and not s.summary.fits:
        return f"{s.name}: the plan does not fit in GPU memory, so it is behind every plan that does ({c.flag})"
    verdict = "holds" if c.passed else "breaks"
    return f"{s.name}: {what} {shown(c.value, c.unit)} {verdict} the limit {_limit(c)} ({c.flag})"


def check_verdict(report: CheckReport) -> Table:
    """The answer first: pass or fail, then each scenario's verdict and the checks it broke; one scenario's verdict
    in full, as estimate leads with it."""
    from dpcost.render.estimate import verdict_head, verdict_rows

    n = sum(len(s.checks) for s in report.scenarios)
    failed = sum(not c.passed for s in report.scenarios for c in s.checks)
    head = (
        f"every check passed ({n} in {len(report.scenarios)} scenario(s))"
        if not failed
        else (f"{failed} of {n} check(s) failed, in {', '.join(report.failed)}")
    )
    rows = []
    for s in report.scenarios:
        broken = [_broken(s, c) for c in s.checks if not c.passed]
        result = "pass" if s.passed else "FAIL (" + "; ".join(broken) + ")"
        rows.append([s.name, f"{result}; {verdict_head(s.summary)}"])
    if len(report.scenarios) == 1:
        (s,) = report.scenarios
        return Table(f"Verdict: {rows[0][1]}", ["", "value"], verdict_rows(s.summary), verdict=True)
    return Table(f"Verdict: {head}", ["", "value"], rows, verdict=True)


def check_table(report: CheckReport) -> Table:
    n = sum(len(s.checks) for s in report.scenarios)
    failed = sum(not c.passed for s in report.scenarios for c in s.checks)
    t = Table(
        f"dpcost check: {len(report.scenarios)} scenario(s), {n} check(s), {failed} failed",
        ["scenario", "plan", "check", "limit", "value", "result"],
        right={4},
        drop=["plan"],
        breakable=["scenario", "limit", "value"],
    )
    for s in report.scenarios:
        for c in s.checks:
            t.rows.append(
                [
                    s.name,
                    f"{_plan_text(s)} on {s.topology}, ZeRO-{s.zero_stage}",
                    c.flag,
                    _limit(c),
                    shown(c.value, c.unit),
                    "pass" if c.passed else "FAIL",
                ]
            )
    t.data = check_rows(report)
    if report.failed:
        t.notes.append(f"failed: {', '.join(report.failed)}")
    else:
        t.notes.append("every check passed")
    return t


def _plan_text(s: ScenarioResult) -> str:
    """ "llama-70b x512", or with a layout "llama-405b TP8 CP1 PP16 DP128 (16,384 GPUs)"."""
    lay = s.layout
    if lay is None:
        return f"{s.model} x{s.dp}"
    return f"{s.model} {layout_text(lay.tp, lay.cp, lay.pp, s.dp, lay.ep, lay.virtual_stages)} ({lay.gpus:,} GPUs)"


def _layout_columns(s: ScenarioResult) -> dict[str, int]:
    """A layout scenario's sizes, as CSV columns and JUnit properties (none without a layout)."""
    lay = s.layout
    if lay is None:
        return {}
    return {"gpus": lay.gpus, "tp": lay.tp, "cp": lay.cp, "pp": lay.pp, "ep": lay.ep}


def check_rows(report: CheckReport) -> list[dict[str, Any]]:
    """CSV: one row per scenario and check (a layout scenario adds gpus, tp, cp, pp and ep)."""
    return [
        {
            "scenario": s.name,
            "model": s.model,
            "topology": s.topology,
            "dp": s.dp,
            **_layout_columns(s),
            "zero_stage": s.zero_stage,
            "check": c.check,
            "flag": c.flag,
            "unit": c.unit,
            "limit": c.limit,
            "value": c.value,
            "passed": c.passed,
        }
        for s in report.scenarios
        for c in s.checks
    ]


# characters XML 1.0 does not allow (ElementTree writes them anyway): shown as U+FFFD. Named as what is left out of
# XML's Char production (#x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]): the negated class
# took 10 ms to compile, on every `check`
NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def junit_xml(report: CheckReport, suite: str) -> str:
    """JUnit XML as CI systems read it: one <testsuite> per scenario, one <testcase> per check."""
    import xml.etree.ElementTree as ET

    root = ET.Element(
        "testsuites",
        name=suite,
        tests=str(sum(len(s.checks) for s in report.scenarios)),
        failures=str(sum(not c.passed for s in report.scenarios for c in s.checks)),
        errors="0",
    )
    for s in report.scenarios:
        ts = ET.SubElement(
            root,
            "testsuite",
            name=s.name,
            tests=str(len(s.checks)),
            failures=str(sum(not c.passed for c in s.checks)),
            errors="0",
            skipped="0",
        )
        props = ET.SubElement(ts, "properties")
        properties = {"model": s.model, "topology": s.topology, "dp": s.dp, **_layout_columns(s)}
        for key, value in properties.items():
            ET.SubElement(props, "property", name=key, value=str(value))
        for c in s.checks:
            case = ET.SubElement(
                ts, "testcase", classname=f"dpcost.check.{s.name}", name=f"{c.check} {_limit(c)}", time="0"
            )
            if not c.passed:
                failure = ET.SubElement(case, "failure", message=message(s, c), type=c.check)
                failure.text = f"limit {_limit(c)}, value {shown(c.value, c.unit)}"
            else:
                ET.SubElement(case, "system-out").text = f"value {shown(c.value, c.unit)}"
    ET.indent(root)
    text = ET.tostring(root, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + NOT_XML.sub("\ufffd", text) + "\n"


def _escape(text: str, prop: bool = False) -> str:
    """GitHub's workflow-command escaping (actions/toolkit's escapeData / escapeProperty)."""
    out = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return out.replace(":", "%3A").replace(",", "%2C") if prop else out


def github_annotations(report: CheckReport, file: str | None = None) -> str:
    """`::error` workflow commands, one per failed check (GitHub shows them on the run and the diff)."""
    lines = []
    where = f"file={_escape(file, True)}," if file else ""
    for s in report.scenarios:
        for c in s.checks:
            if not c.passed:
                title = _escape(f"dpcost check: {s.name} {c.flag}", True)
                lines.append(f"::error {where}title={title}::{_escape(message(s, c))}")
    return "".join(line + "\n" for line in lines)
