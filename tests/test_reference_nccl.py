"""Predictions against real nccl-tests runs nobody here produced (tests/reference/nccl-tests/).

These are regression guards at the accuracy the catalog reaches today (benchmarks/accuracy.py prints the full
picture). The 2 x DGX H100 log is noisy between 8 KiB and 1 GiB (its in-place and out-of-place columns differ by
up to 2x, and the ring-forced run on the same hardware is 2-5x faster there); its guard covers >= 2 GiB only.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REFERENCE

from dpcost.accuracy import band_errors, disturbance, guess_topology, line_rate_points, predict
from dpcost.catalog import load_measurements, load_topology
from dpcost.errors import InputError
from dpcost.nccl_tests import parse_measurements

NCCL = REFERENCE / "nccl-tests"


def test_parse_the_unedited_log() -> None:
    m = load_measurements(str(NCCL / "dgx-h100-x2-all_reduce.log"))
    assert (m.ranks, m.gpus_per_node, m.ops) == (16, 8, ("all_reduce",))
    assert m.device == "NVIDIA H100 80GB HBM3"
    assert m.algorithm is None
    assert len(m.rows) == 2 * 32  # 8 B .. 16 GiB, out-of-place and in-place
    first = m.rows[0]
    assert (first.size_bytes, first.time_us, first.column) == (8, 172.7, "out-of-place")
    assert m.rows[-1].time_us == 68483 and m.rows[-1].column == "in-place"


def test_parse_csvs() -> None:
    ring = load_measurements(str(NCCL / "h100-ndr-x2-ring-all_reduce.csv"))
    assert (ring.ranks, ring.gpus_per_node, ring.algorithm) == (16, 8, "ring")
    b200 = load_measurements(str(NCCL / "b200-x1-reduce_scatter_all_gather.csv"))
    assert b200.ops == ("all_gather", "reduce_scatter")
    assert guess_topology(b200) == "dgx-b200"
    assert guess_topology(ring) == "dgx-h100"


def test_older_nccl_tests_output_without_root_column() -> None:
    text = (
        "# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n"
        "#  Rank  0 Pid   1 on node1 device  0 [0x07] NVIDIA A100-SXM4-80GB\n"
        "#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
        "     1048576        262144     float     sum    25.10   41.78   73.11  5e-07    24.90   42.11   73.69  5e-07\n"
    )
    m = parse_measurements(text, "a100-all_reduce_perf.txt")
    assert [(r.size_bytes, r.time_us) for r in m.rows] == [(1048576, 25.10), (1048576, 24.90)]


@pytest.mark.parametrize(
    "text", ["hello\n", "op,ranks\nall_reduce,16\n", "op,ranks,size_bytes,time_us\nall_reduce,x,1,2\n"]
)
def test_malformed_measurements(tmp_path: Path, text: str) -> None:
    p = tmp_path / "m.csv"
    p.write_text(text)
    with pytest.raises(InputError):
        load_measurements(str(p))


def test_a_byte_order_mark_is_not_part_of_the_csv(tmp_path: Path) -> None:
    p = tmp_path / "excel.csv"
    p.write_bytes(b"\xef\xbb\xbfop,ranks,size_bytes,time_us\nall_reduce,16,1048576,150\n")
    assert load_measurements(str(p)).rows[0].time_us == 150


def _errors(name: str, topology: str) -> dict[str, float]:
    m = load_measurements(str(NCCL / name))
    return {b.band: b.geomean for b in band_errors(predict(m, load_topology(topology)))}


def test_b200_one_node_accuracy() -> None:
    errors = _errors("b200-x1-reduce_scatter_all_gather.csv", "dgx-b200")
    assert errors[">=64 MiB"] <= 0.10
    assert errors["1-64 MiB"] <= 0.25


def test_h100_two_node_ring_accuracy() -> None:
    errors = _errors("h100-ndr-x2-ring-all_reduce.csv", "dgx-h100")
    assert errors[">=64 MiB"] <= 0.10
    assert errors["1-64 MiB"] <= 0.25


def test_h100_two_node_default_large_messages() -> None:
    """NCCL picks NVLSTree across two nodes; >= 2 GiB every point within 20% of the measured time."""
    m = load_measurements(str(NCCL / "dgx-h100-x2-all_reduce.log"))
    points = [p for p in predict(m, load_topology("dgx-h100")) if p.size_bytes >= 2**31]
    assert len(points) == 8
    assert all(p.algorithm == "nvls_tree/simple" for p in points)
    assert max(abs(p.error) for p in points) <= 0.20


def test_a_run_whose_time_falls_as_the_message_doubles_is_disturbed() -> None:
    """The 2 x DGX H100 log takes 0.35x the time at 256 KiB that it took at 128 KiB: no collective moves twice the
    bytes that much faster. A healthy log (its ring-forced twin) is not flagged."""
    assert disturbance(load_measurements(str(NCCL / "dgx-h100-x2-all_reduce.log"))) == (
        "all_reduce out-of-place: 262144 B took 0.35x the time of 131072 B"
    )
    assert disturbance(load_measurements(str(NCCL / "h100-ndr-x2-ring-all_reduce.csv"))) == ""


def test_the_naive_figure_is_the_bus_bytes_at_the_line_rate() -> None:
    """Across two DGX H100 nodes every GPU's 400G NIC carries the ring: busbw = 8 x 50 GB/s = 400 GB/s; one 1 GiB
    all-reduce over 16 ranks is 2 x 15/16 GiB on the bus, 5.03 ms."""
    ring = load_measurements(str(NCCL / "h100-ndr-x2-ring-all_reduce.csv"))
    h100 = load_topology("dgx-h100")
    point = next(p for p in line_rate_points(ring, h100) if p.size_bytes == 2**30)
    assert point.predicted_us == pytest.approx(2 * 15 / 16 * 2**30 / 400e9 * 1e6, rel=1e-12)
    one_node = parse_measurements(
        "op,ranks,gpus_per_node,size_bytes,time_us\nall_reduce,8,8,1073741824,5000\n", "one-node.csv"
    )
    assert line_rate_points(one_node, h100)[0].predicted_us == pytest.approx(2 * 7 / 8 * 2**30 / 450e9 * 1e6)


def test_the_per_iteration_columns_of_nccl_tests_2_19_are_read_past() -> None:
    """nccl-tests 2.19's -I 1 prints i_min, i_max, i_p99 and i_cv% after each column's #wrong (src/util.cu
    writeResultHeader at v2.19.6): the times read are the same as without them."""
    lines = (NCCL / "h200-2n-all_gather-gcpa3ultra.log").read_text().splitlines()
    per_iter = []
    for line in lines:
        cells = line.split()
        if line.lstrip().startswith("#") and cells[1:4] == ["size", "count", "type"]:
            extra = ["i_min", "i_max", "i_p99", "i_cv%"]
            per_iter.append(" ".join(["#", *cells[1:10], *extra, *cells[10:14], *extra]))
        elif cells and cells[0].isdigit() and len(cells) == 13:
            per_iter.append(
                " ".join([*cells[:9], cells[5], cells[5], cells[5], "1.2", *cells[9:13], *cells[9:10] * 3, "0.9"])
            )
        else:
            per_iter.append(line)
    plain = parse_measurements("\n".join(lines), "run.log")
    read = parse_measurements("\n".join(per_iter), "run.log")
    assert read.rows == plain.rows and len(read.rows) == 48
