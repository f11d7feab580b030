"""nccl-tests' -J output (nccl-tests 2.17.3 and later) read as the log the same run prints.

The layout is nccl-tests' own writer's (src/util.cu at v2.19.6, docs/sources/nccl-tests-json.md): argv, the
environment as "K=V" strings, the NCCL library's version code, the config, one device record per rank and one result
per size, written by the calls that print the stdout table, with bandwidths as "%lf".
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import REFERENCE

from dpcost.accuracy import predict
from dpcost.catalog import load_measurements, load_topology
from dpcost.cli import app
from dpcost.nccl_tests import PROGRAM_OF, Measurements, parse_measurements, parse_runs

NCCL = REFERENCE / "nccl-tests"
PER_RANK = {"all_gather", "reduce_scatter", "all_to_all"}


def document(program: str, hosts: list[str], rows: list[tuple[int, float, float]], *, env: tuple[str, ...] = (),
             ngpus: int = 1, iterations: int = 20, graph: int = 0, nccl: int = 22606,
             device: str = "NVIDIA H200") -> dict[str, object]:  # fmt: skip
    """A -J document as src/util.cu writes it: one process on each of `hosts`, each driving `ngpus` GPUs, whose first
    `#  Rank` line is its config.devices entry (writeDeviceReport, parseRankInfo); `rows` are (size, out-of-place us,
    in-place us) of float data."""
    op = {v: k for k, v in PROGRAM_OF.items()}[program]
    n = len(hosts) * ngpus
    # busbw / algbw as each program prints it (src/<op>.cu GetBw)
    factor = (
        2 * (n - 1) / n if op == "all_reduce" else 1.0 if op in ("broadcast", "reduce", "send_recv") else (n - 1) / n
    )

    def body(size: int, us: float) -> dict[str, object]:
        algbw = size / us / 1e3  # GB/s, as nccl-tests computes it (src/common.cu)
        return {"time": us, "alg_bw": float(f"{algbw:f}"), "bus_bw": float(f"{algbw * factor:f}"), "nwrong": 0.0}

    reduces = op in ("all_reduce", "reduce_scatter", "reduce", "send_recv")
    rooted = op in ("broadcast", "reduce")
    return {
        "version": 1,
        "start_time": "2026-07-10 09:00:00",
        "args": [f"./build/{program}_perf", "-b", "8", "-e", "8G", "-f", "2", "-J", "out.json"],
        "env": ["HOME=/root", "PATH=/usr/bin", *env],
        "nccl_version": nccl,
        "config": {
            "nthreads": 1,
            "ngpus": ngpus,
            "minimum_bytes": 8,
            "maximum_bytes": 8 << 30,
            "step_factor": 2,
            "warmup_iters": 5,
            "iterations": iterations,
            "aggregated_iterations": 1,
            "validation": 1,
            "graph": graph,
            "blocking_collectives": False,
            "parallel_init": False,
            "devices": [
                {
                    "rank": process * ngpus,
                    "group": 0,
                    "pid": 1000 + process,
                    "hostname": h,
                    "device": process * ngpus % 8,
                    "device_hex": "0000:8f:00",
                    "device_info": device,
                }
                for process, h in enumerate(hosts)
            ],
        },
        "results": [
            {
                "size": size,
                "count": size // 4 // (n if op in PER_RANK else 1),
                "type": "float",
                "redop": "sum" if reduces else "none",
                "root": f"{0 if rooted else -1:6d}",
                "out_of_place": body(size, oop),
                "in_place": body(size, ip),
                "actual_iterations": iterations,
                "experiment_name": "",
            }
            for size, oop, ip in rows
        ],
        "out_of_bounds": {"count": 0, "okay": True},
        "average_bus_bandwidth": {"bandwidth": 100.0, "okay": "unchecked"},
        "end_time": "2026-07-10 09:01:00",
    }


TWO_HOSTS = ["nccl-test-host-1"] * 8 + ["nccl-test-host-2"] * 8
# three rows of h200-2n-all_gather-gcpa3ultra.log, as its -J file would hold them
GATHER_ROWS = [(1024, 28.70, 27.82), (1073741824, 3126.8, 3084.1), (2147483648, 6218.0, 6097.1)]


def test_a_document_reads_as_the_log_of_the_same_run() -> None:
    m = parse_measurements(json.dumps(document("all_gather", TWO_HOSTS, GATHER_ROWS)), "run.json")
    assert (m.ops, m.ranks, m.gpus_per_node, m.device) == (("all_gather",), 16, 8, "NVIDIA H200")
    assert [(r.size_bytes, r.time_us, r.column) for r in m.rows][:2] == [
        (1024, 28.70, "out-of-place"), (1024, 27.82, "in-place")]  # fmt: skip
    assert (m.gpus_per_thread, m.iters, m.cuda_graphs, m.nccl_release) == (1, 20, False, (2, 26))
    assert (m.algorithm, m.protocol, m.nvls) == (None, None, True)
    log = load_measurements(str(NCCL / "h200-2n-all_gather-gcpa3ultra.log"))
    wanted = {(r.size_bytes, r.column): r.time_us for r in log.rows}
    assert all(wanted[r.size_bytes, r.column] == r.time_us for r in m.rows)


def test_the_environment_config_and_version_are_read() -> None:
    doc = document("all_reduce", ["a"], [(1 << 20, 40.0, 41.0)], env=("NCCL_ALGO=Ring", "NCCL_PROTO=Simple",
                   "NCCL_NVLS_ENABLE=0"), ngpus=8, iterations=50, graph=10, nccl=23004)  # fmt: skip
    m = parse_measurements(json.dumps(doc), "x.json")
    assert (m.algorithm, m.protocol, m.nvls) == ("ring", "simple", False)
    assert (m.gpus_per_thread, m.iters, m.cuda_graphs, m.nccl_release) == (8, 50, True, (2, 30))


def _log_document(m: Measurements) -> dict[str, object]:
    """The -J document of a parsed log: its rows, ranks and hosts as the writer lays them out."""
    assert m.ranks and m.gpus_per_node
    per_process = m.gpus_per_thread  # nccl-tests -g: one process drives that many ranks
    hosts = [f"node{p * per_process // m.gpus_per_node}" for p in range(m.ranks // per_process)]
    times: dict[int, dict[str, float]] = {}
    for row in m.rows:
        times.setdefault(row.size_bytes, {})[row.column] = row.time_us
    rows = [(size, t.get("out-of-place", t.get("in-place", 1.0)), t.get("in-place", 1.0)) for size, t in times.items()]
    doc = document(PROGRAM_OF[m.ops[0]], hosts, rows, ngpus=m.gpus_per_thread)
    for result, t in zip(doc["results"], times.values(), strict=True):  # type: ignore[call-overload]
        for column, key in (("out-of-place", "out_of_place"), ("in-place", "in_place")):
            if column not in t:
                result[key] = None
        if m.ops[0] in ("all_to_all", "send_recv"):  # nccl-tests does not check these in place: nwrong null
            result["in_place"]["nwrong"] = None
    return doc


LOGS = sorted(
    p for p in NCCL.glob("*.log") if len(parse_runs(p.read_text(), p.name)) == 1 and load_measurements(str(p)).ranks
)


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_every_reference_log_reads_the_same_from_its_document(path: Path) -> None:
    log = load_measurements(str(path))
    m = parse_measurements(json.dumps(_log_document(log)), path.stem + ".json")
    assert (m.ops, m.ranks, m.gpus_per_node, m.gpus_per_thread) == (log.ops, log.ranks, log.gpus_per_node,
                                                                    log.gpus_per_thread)  # fmt: skip
    assert sorted(m.rows, key=repr) == sorted(log.rows, key=repr)


def test_a_document_costs_as_its_log(tmp_path: Path) -> None:
    log = load_measurements(str(NCCL / "h200-2n-all_gather-gcpa3ultra.log"))
    doc = tmp_path / "gather.json"
    doc.write_text(json.dumps(_log_document(log)))
    topology = load_topology("gcp-a3-ultra")
    ours = predict(load_measurements(str(doc)), topology)
    theirs = predict(log, topology)
    assert [p.predicted_us for p in ours] == pytest.approx([p.predicted_us for p in theirs])


def test_the_collective_comes_from_the_program_else_the_experiment_else_the_file_name() -> None:
    doc = document("reduce_scatter", TWO_HOSTS, [(1 << 24, 200.0, 201.0)])
    doc["args"] = ["/opt/bench"]
    doc["results"][0]["experiment_name"] = "ReduceScatter"  # type: ignore[index]
    assert parse_measurements(json.dumps(doc), "x.json").ops == ("reduce_scatter",)
    doc["results"][0]["experiment_name"] = ""  # type: ignore[index]
    assert parse_measurements(json.dumps(doc), "reduce_scatter.json").ops == ("reduce_scatter",)
    with pytest.raises(ValueError, match="results\\[0\\]: not a row of all_gather"):
        parse_measurements(json.dumps(doc), "all_gather.json")  # its redop says it reduces


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("{", "not valid JSON"),
        ("[1, 2]", "not an nccl-tests log"),  # a document is an object
        ('{"results": 3}', "without a 'results' list"),
        ('{"results": [5]}', "results\\[0\\]: expected an object"),
        ("[" * 100_000 + "]" * 100_000, "not an nccl-tests log"),
        ('{"a":' * 50_000 + "1" + "}" * 50_000, "nested too deep"),
    ],
)
def test_what_is_not_a_document_is_refused_in_one_line(text: str, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        parse_runs(text, "x.json")


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda r: r.update(size=-1), "results\\[0\\]: size: expected a whole number"),
        (lambda r: r.update(size=True), "results\\[0\\]: size"),
        (lambda r: r.update(root="x"), "results\\[0\\]: root 'x' is not a rank"),
        (lambda r: r["out_of_place"].update(time="fast"), "time: expected a number of microseconds"),
        (lambda r: r["out_of_place"].update(time=0.01), "outside 0.1 us .. 1 hour"),
        (lambda r: r["out_of_place"].update(alg_bw=[1]), "alg_bw: expected a number"),
        (lambda r: r.update(in_place=7), "in_place: expected an object"),
    ],
)
def test_a_bad_result_is_named(change, said: str) -> None:  # type: ignore[no-untyped-def]
    doc = document("all_gather", TWO_HOSTS, GATHER_ROWS)
    change(doc["results"][0])  # type: ignore[index]
    with pytest.raises(ValueError, match=said):
        parse_runs(json.dumps(doc), "x.json")


def test_a_nan_bandwidth_as_the_writer_prints_it_is_read() -> None:
    doc = document("all_gather", TWO_HOSTS, GATHER_ROWS)
    doc["results"][0]["out_of_place"]["bus_bw"] = "nan"  # type: ignore[index]
    assert math.isclose(parse_runs(json.dumps(doc), "x.json")[0].rows[0].time_us, 28.70)


def test_the_cli_compares_a_document_and_refuses_a_bad_one_in_one_line(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    good, bad = tmp_path / "run.json", tmp_path / "bad.json"
    good.write_text(json.dumps(document("all_gather", TWO_HOSTS, GATHER_ROWS)))
    bad.write_text('{"results": [{"size": 8}]}')
    runner = CliRunner()
    done = runner.invoke(app, ["collective", "--compare", str(good), "--topology", "gcp-a3-ultra", "-f", "json"])
    assert done.exit_code == 0, done.output
    assert '"all_gather"' in done.output
    refused = runner.invoke(app, ["collective", "--compare", str(bad), "--topology", "gcp-a3-ultra"])
    assert refused.exit_code == 2
    assert refused.output.strip().count("\n") == 0 and "bad.json" in refused.output


def test_a_log_with_nccls_own_lines_is_read_past_a_specs_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """NCCL_DEBUG=INFO prints a few hundred lines a rank; such a log of a few MB was refused as a spec would be."""
    import dpcost.catalog as catalog
    from dpcost.errors import InputError

    lines = (NCCL / "h100-2n-all_reduce-nccltests309.log").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.lstrip("#").split()[:3] == ["size", "count", "type"])
    info = [
        f"node{r // 8}:{1000 + r}:{2000 + r} [{r % 8}] NCCL INFO Channel {c:02d}/0 : {r}[{r % 8}] -> {(r + 1) % 16}"
        f"[{(r + 1) % 8}] via P2P/CUMEM/read"
        for r in range(16)
        for c in range(32)
        for _ in range(40)
    ]
    big = tmp_path / "info.log"
    big.write_text("\n".join([*lines[:at], *info, *lines[at:]]) + "\n")
    assert big.stat().st_size > catalog.MAX_FILE_BYTES
    m = load_measurements(str(big))
    assert (m.ranks, m.gpus_per_node, len(m.rows)) == (16, 8, 64)
    monkeypatch.setitem(catalog._READ_LIMITS, "measurements", (1 << 20, "nccl-tests output is a few MB"))
    with pytest.raises(InputError, match="larger than 1024 KiB; nccl-tests output"):
        load_measurements(str(big))


def test_the_ranks_are_each_process_times_its_threads_and_gpus() -> None:
    """writeDeviceReport writes config.devices, one entry a process (parseRankInfo reads its first `#  Rank` line),
    each process running nthreads x ngpus ranks: 2 processes of -t 2 -g 4 on two hosts are 16 ranks, 8 a node."""
    doc = document("all_gather", ["host-a", "host-b"], GATHER_ROWS[1:], ngpus=4)
    config = doc["config"]
    assert isinstance(config, dict)
    config["nthreads"] = 2
    for result in doc["results"]:  # type: ignore[attr-defined]
        result["count"] = result["size"] // 4 // 16
        for key in ("out_of_place", "in_place"):
            result[key]["bus_bw"] = float(f"{result[key]['alg_bw'] * 15 / 16:f}")
    m = parse_measurements(json.dumps(doc), "run.json")
    assert (m.ranks, m.gpus_per_node, m.gpus_per_thread) == (16, 8, 4)
    assert "devices" not in doc  # where src/util.cu writes them: inside config
