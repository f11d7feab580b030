"""tests/reference/large-runs/runs.csv: published runs laid out over TP x PP x CP x EP x DP (issue 19). The file parses,
every row names a documented source, the layouts multiply out to the GPU count, derived cells say so, and spot values
equal what the sources print."""

from __future__ import annotations

import re

import pytest
from conftest import REFERENCE, read_reference_csv

CSV = "large-runs/runs.csv"
COLUMNS = [
    "source",
    "table",
    "model",
    "params_b",
    "gpus",
    "gpu",
    "tp",
    "pp",
    "cp",
    "ep",
    "dp",
    "virtual_stages",
    "micro_batch",
    "global_batch",
    "seq_len",
    "sequence_parallel",
    "recompute",
    "precision",
    "published_metric",
    "published_value",
    "unit",
    "notes",
]
INTEGERS = ("gpus", "tp", "pp", "cp", "ep", "dp", "virtual_stages", "micro_batch", "global_batch", "seq_len")
METRICS = {
    "step_time_s",
    "mfu_pct",
    "hfu_pct",
    "pct_of_peak",
    "tflops_per_gpu",
    "model_tflops_per_gpu",
    "tokens_per_s_per_gpu",
    "layer_time_ms",
    "tokens_per_day_b",
    "tflops_per_gpu_causal",
    "mfu_pct_causal",
    "gpu_hours_per_trillion_tokens",
    "days_per_trillion_tokens",
    "gpu_hours",
}
FLAG = "DOES NOT MULTIPLY OUT"


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    return read_reference_csv(CSV)


def _int(row: dict[str, str], key: str) -> int | None:
    return int(row[key]) if row[key] else None


def _find(rows: list[dict[str, str]], **match: str) -> list[dict[str, str]]:
    return [r for r in rows if all(r[k] == v for k, v in match.items())]


def _value(rows: list[dict[str, str]], metric: str, **match: str) -> float:
    found = _find(rows, published_metric=metric, **match)
    assert len(found) == 1, (metric, match, len(found))
    return float(found[0]["published_value"])


def test_the_csv_parses(rows: list[dict[str, str]]) -> None:
    header = next(ln for ln in (REFERENCE / CSV).read_text().splitlines() if not ln.startswith("#"))
    assert header.split(",") == COLUMNS
    assert len(rows) >= 40
    for r in rows:
        assert None not in r and all(v is not None for v in r.values()), r  # no row longer or shorter than the header
        for key in INTEGERS:
            if r[key]:
                assert int(r[key]) > 0, (key, r)
        float(r["published_value"])
        assert r["published_metric"] in METRICS, r["published_metric"]
        assert r["unit"] and r["table"] and r["model"] and r["gpu"], r
        assert r["sequence_parallel"] in ("", "yes", "no")
        assert r["recompute"] in ("", "none", "selective", "full")


def test_every_row_names_a_documented_source(rows: list[dict[str, str]]) -> None:
    readme = (REFERENCE / "large-runs" / "README.md").read_text()
    documented = set(re.findall(r"^\| ([a-z0-9.-]+) \|", readme, flags=re.MULTILINE))
    sources = {r["source"] for r in rows}
    assert sources <= documented, sources - documented
    for source in sources:  # the README's row count for each source is the CSV's
        n = sum(r["source"] == source for r in rows)
        assert re.search(rf"^\| {re.escape(source)} \|[^|]+\| {n} \|", readme, flags=re.MULTILINE), source
    assert "large-runs/runs.csv" in (REFERENCE / "README.md").read_text()


def test_layouts_multiply_out_to_the_gpu_count(rows: list[dict[str, str]]) -> None:
    """GPUs = TP x PP x CP x DP (EP lives inside DP), wherever TP, PP and DP are given; a blank CP is 1."""
    checked = 0
    for r in rows:
        tp, pp, dp = _int(r, "tp"), _int(r, "pp"), _int(r, "dp")
        if tp is None or pp is None or dp is None or FLAG in r["notes"]:
            continue
        cp = _int(r, "cp") or 1
        assert tp * pp * cp * dp == int(r["gpus"]), r
        ep = _int(r, "ep")
        if ep:  # experts over ETP x EP x EDP = TP x CP x DP (Megatron-Core); ETP, not printed, is at least 1
            assert (tp * cp * dp) % ep == 0, r
        checked += 1
    assert checked >= 150


def test_derived_cells_say_so(rows: list[dict[str, str]]) -> None:
    """A DP size the source does not print is gpus / (tp x pp x cp), and the row's notes give that derivation."""
    for r in rows:
        if "dp derived" in r["notes"]:
            m = re.search(r"dp derived = (\d+)/\S+ = (\d+)", r["notes"])
            assert m and int(m.group(1)) == int(r["gpus"]) and m.group(2) == r["dp"], r
    derived = {r["source"] for r in rows if "dp derived" in r["notes"]}
    assert {"narayanan2021", "megascale2024", "deepseek-v3-2024", "mbridge-25.11"} <= derived
    # where the source prints DP, the row does not claim to derive it
    for source in ("llama3-2024", "bloom-tr11", "nemotron4-15b-2024", "torchtitan-2412"):
        assert not any("dp derived" in r["notes"] for r in rows if r["source"] == source), source


def test_the_flagged_row_is_the_one_whose_batch_does_not_multiply_out(rows: list[dict[str, str]]) -> None:
    flagged = [r for r in rows if FLAG in r["notes"]]
    assert {(r["source"], r["gpu"], r["model"]) for r in flagged} == {("mbridge-25.11", "GB300", "Qwen3 235B-A22B")}
    r = flagged[0]
    ga = int(re.search(r"table prints GA (\d+)", r["notes"]).group(1))  # type: ignore[union-attr]
    assert int(r["global_batch"]) != int(r["dp"]) * int(r["micro_batch"]) * ga


def test_megatron_sc21_table_1(rows: list[dict[str, str]]) -> None:
    """Narayanan et al. 2021 Table 1, the 1T row: TP 8 x PP 64 on 3072 A100, 163 TFLOP/s per GPU, 52% of peak."""
    one_t = {"source": "narayanan2021", "table": "Table 1", "model": "GPT 1008.0B"}
    assert _value(rows, "tflops_per_gpu", **one_t) == 163
    assert _value(rows, "pct_of_peak", **one_t) == 52
    (r, _) = _find(rows, **one_t)
    assert (r["gpus"], r["tp"], r["pp"], r["dp"], r["global_batch"]) == ("3072", "8", "64", "6", "3072")
    table1 = _find(rows, source="narayanan2021", table="Table 1", published_metric="tflops_per_gpu")
    assert len(table1) == 10
    assert [int(r["gpus"]) for r in table1] == [32, 64, 128, 256, 512, 1024, 1536, 1920, 2520, 3072]
    assert [int(r["published_value"]) for r in table1] == [137, 138, 142, 135, 138, 140, 148, 155, 163, 163]
    # the authors' examples/sc21/run_table_1.sh (Megatron-LM d4169684): micro-batch and interleaving per model
    assert [int(r["micro_batch"]) for r in table1] == [16, 16, 16, 8, 4, 2, 2, 1, 1, 1]
    assert [int(r["virtual_stages"] or 1) for r in table1] == [1, 1, 1, 1, 1, 3, 2, 2, 3, 1]
    assert [("--DDP-impl torch" in r["notes"]) for r in table1] == [True] * 4 + [False] * 6


def test_korthikanti_table_5(rows: list[dict[str, str]]) -> None:
    k = {"source": "korthikanti2022", "table": "Table 5", "model": "GPT 530B"}
    assert _value(rows, "step_time_s", recompute="full", **k) == 49.05
    assert _value(rows, "step_time_s", recompute="selective", **k) == 37.83
    assert _value(rows, "mfu_pct", **k) == 56.0
    assert _value(rows, "hfu_pct", **k) == 57.0
    assert _value(rows, "mfu_pct", source="korthikanti2022", model="GPT 1T") == 56.3
    big = {"source": "korthikanti2022", "gpus": "2240", "recompute": "selective"}
    assert _value(rows, "step_time_s", **big) == 39.15
    assert _value(rows, "mfu_pct", **big) == 54.2
    assert _value(rows, "mfu_pct", source="korthikanti2022", gpus="2240", recompute="full") == 42.1


def test_llama3_table_4(rows: list[dict[str, str]]) -> None:
    """Llama 3 405B on 16K H100 with TP 8, PP 16, DP 128: 400 TFLOP/s per GPU, 41% BF16 MFU; 43% on 8K GPUs."""
    sixteen_k = {"source": "llama3-2024", "gpus": "16384", "cp": "1"}
    assert _value(rows, "tflops_per_gpu", **sixteen_k) == 400
    assert _value(rows, "mfu_pct", **sixteen_k) == 41
    assert {(r["tp"], r["pp"], r["dp"]) for r in _find(rows, **sixteen_k)} == {("8", "16", "128")}
    assert _value(rows, "mfu_pct", source="llama3-2024", gpus="8192") == 43
    assert _value(rows, "tflops_per_gpu", source="llama3-2024", cp="16") == 380


def test_deepseek_v3(rows: list[dict[str, str]]) -> None:
    """PP 16 x EP 64 with ZeRO-1 DP on 2,048 H800 (arXiv 2412.19437 §3.2); ISCA'25 Table 4's step on the MPFT."""
    for r in _find(rows, model="DeepSeek-V3", gpu="H800"):
        assert (r["gpus"], r["tp"], r["pp"], r["ep"], r["dp"]) == ("2048", "1", "16", "64", "128")
    assert _value(rows, "gpu_hours_per_trillion_tokens", source="deepseek-v3-2024") == 180
    mpft = {"source": "deepseek-isca2025", "table": "Table 4 (MPFT column)"}
    assert _value(rows, "step_time_s", **mpft) == 19.926
    assert _value(rows, "mfu_pct", **mpft) == 43.73
    assert _value(rows, "tflops_per_gpu", **mpft) == 432


def test_megascale_table_2(rows: list[dict[str, str]]) -> None:
    """MegaScale's 175B on 12,288 GPUs with TP 8 x PP 8: 6.34 s and 55.2% MFU (Megatron-LM: 8.57 s, 41.2%)."""
    ours = {"source": "megascale2024", "gpus": "12288", "model": "GPT 175B (MegaScale)"}
    assert _value(rows, "step_time_s", **ours) == 6.34
    assert _value(rows, "mfu_pct", **ours) == 55.2
    base = {"source": "megascale2024", "gpus": "12288", "model": "GPT 175B (Megatron-LM)"}
    assert _value(rows, "step_time_s", **base) == 8.57
    assert {(r["tp"], r["pp"], r["dp"], r["global_batch"]) for r in _find(rows, **ours)} == {("8", "8", "192", "6144")}


def test_bloom(rows: list[dict[str, str]]) -> None:
    b = {"source": "bloom-tr11", "global_batch": "2048"}
    assert _value(rows, "step_time_s", **b) == 104.70
    assert _value(rows, "tflops_per_gpu", **b) == 149.77
    assert {(r["gpus"], r["tp"], r["pp"], r["dp"], r["micro_batch"]) for r in _find(rows, **b)} == {
        ("384", "4", "12", "8", "2")
    }


def test_jean_zay_topology_reads_the_all_reduce_measured_on_it() -> None:
    """jean-zay-a100-opa.yaml's network efficiency is the one that makes dpcost's 4e9-byte all-reduce over 4 x 8 A100
    take the 1.529 s bigscience's bandwidth bench measured on BLOOM's cluster."""
    from dpcost.catalog import load_topology
    from dpcost.engine.collectives import fastest
    from dpcost.engine.placement import place

    (row,) = read_reference_csv("large-runs/jean-zay/all_reduce_bench-a100-n4.csv")
    topology = load_topology(str(REFERENCE / "large-runs/jean-zay/jean-zay-a100-opa.yaml"))
    assert topology.tiers[1].bandwidth == pytest.approx(50e9 / 8)  # 4 x 100 Gb/s per 8 GPUs, in bytes/s
    ranks, size = int(row["ranks"]), float(row["size_bytes"])
    predicted = fastest(topology, "all_reduce", place(topology, ranks), size).seconds
    assert predicted == pytest.approx(float(row["time_us"]) * 1e-6, rel=0.01)


def test_mlperf_v60_step_times_are_the_median_of_their_logged_steps() -> None:
    """mlperf/v6.0/rows.csv: each system's step time is the median over its result files of each file's median
    per-step train_step_time, the first two logged values dropped where the file's start was read (v6.0/README.md);
    steps/ holds the values read, so every step time, with its min and max, is reproduced from them."""
    import csv
    import statistics

    folder = REFERENCE / "mlperf" / "v6.0"
    lines = [ln for ln in (folder / "rows.csv").read_text().splitlines() if ln and not ln.startswith("#")]
    rows = list(csv.DictReader(lines))
    assert len(rows) == 30
    for r in rows:
        medians = []
        for path in sorted((folder / "steps" / r["submitter"] / r["system"] / r["benchmark"]).glob("*.steps.txt")):
            text = path.read_text()
            values = [float(v) for ln in text.splitlines() if not ln.startswith("#") for v in ln.split()]
            medians.append(statistics.median(values if "START-NOT-READ" in text else values[2:]))
        assert len(medians) == len(r["result_files"].split(";")), r["system"]
        assert statistics.median(medians) == pytest.approx(float(r["step_time_s"]), rel=1e-4), r["system"]
        assert (min(medians), max(medians)) == pytest.approx(
            (float(r["step_time_min_s"]), float(r["step_time_max_s"])), rel=1e-4
        ), r["system"]
