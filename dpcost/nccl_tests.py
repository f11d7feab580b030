"""Parse real nccl-tests measurements: the tools' own text output, or a CSV of the same columns.

Text output is what `all_reduce_perf -b 8 -e 16G -f 2 -g 8` prints (github.com/NVIDIA/nccl-tests): rank lines
give the ranks and hosts, each data row gives size, count, type, redop, root, then time/algbw/busbw/#wrong for
the out-of-place and the in-place run. The CSV form has the header
`op,ranks,gpus_per_node,size_bytes,time_us[,algorithm][,column][,algbw_GBps,busbw_GBps]`; one CSV may hold
several runs (rank counts, forced algorithms). A comment that records NCCL_ALGO=<algo> (the log's environment
echo, or a `#` line of the CSV) pins the algorithm the run was forced to use. Pure: text in, rows out (catalog.py
reads the file).
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass

__all__ = ["NCCL_ALGO_NAMES", "Measurement", "Measurements", "parse_measurements", "parse_runs"]

OPS = ("all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce")
NCCL_ALGO_NAMES = {
    "ring": "ring",
    "tree": "tree",
    "nvls": "nvls",
    "nvlstree": "nvls_tree",
    "collnet": "collnet",
    "collnetdirect": "collnet",
    "collnetchain": "collnet",
    "pat": "pat",
}


@dataclass(frozen=True)
class Measurement:
    op: str
    size_bytes: int
    time_us: float
    column: str  # "out-of-place" or "in-place"


@dataclass(frozen=True)
class Measurements:
    name: str
    ranks: int | None
    gpus_per_node: int | None
    algorithm: str | None  # dpcost's name of the algorithm the run forced, if it says
    device: str | None
    rows: tuple[Measurement, ...]
    protocol: str | None = None  # the protocol the run forced (NCCL_PROTO), if it says
    nvls: bool = True  # False when the run turned NVLink SHARP off (NCCL_NVLS_ENABLE=0)
    topology: str | None = None  # a `# dpcost-topology: NAME` comment: the catalog topology the file was run on

    @property
    def ops(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.op for r in self.rows))


MAX_SIZE = 2**50  # 1 PiB: no collective is larger


def _number(text: str | None, what: str) -> float:
    try:
        value = float(text) if text is not None else math.nan
    except ValueError:
        raise ValueError(f"{what}: expected a number, got {text!r}"[:200]) from None
    if text is None or not text.strip():
        raise ValueError(f"{what}: missing")
    if not math.isfinite(value):
        raise ValueError(f"{what}: expected a finite number, got {text!r}")
    return value


def _positive(text: str | None, what: str) -> float:
    value = _number(text, what)
    if value <= 0:
        raise ValueError(f"{what}: must be positive, got {text!r}")
    return value


def _whole(text: str | None, what: str) -> int:
    value = _positive(text, what)
    if value != int(value) or value > MAX_SIZE:
        raise ValueError(f"{what}: expected a whole number up to 2**50, got {text!r}"[:200])
    return int(value)


def _no_repeats(rows: list[Measurement]) -> None:
    seen: set[tuple[str, int, str]] = set()
    for r in rows:
        key = (r.op, r.size_bytes, r.column)
        if key in seen:
            raise ValueError(f"{r.op} of {r.size_bytes} bytes ({r.column}) is measured twice; keep one run per file")
        seen.add(key)


def _forced_protocol(text: str) -> str | None:
    m = re.search(r"NCCL_PROTO=([A-Za-z0-9]+)", text)
    if not m:
        return None
    if m.group(1).lower() not in ("ll", "ll128", "simple"):
        raise ValueError(f"NCCL_PROTO={m.group(1)[:30]} is not one of LL, LL128, Simple")
    return m.group(1).lower()


def _topology_hint(text: str) -> str | None:
    m = re.search(r"#\s*dpcost-topology:\s*([a-z0-9][a-z0-9._-]*)", text)
    return m.group(1) if m else None


def _nvls_enabled(text: str) -> bool:
    return re.search(r"NCCL_NVLS_ENABLE=0\b", text) is None


def _forced_algorithm(text: str) -> str | None:
    m = re.search(r"NCCL_ALGO=([A-Za-z]+)", text)
    if not m:
        return None
    if m.group(1).lower() not in NCCL_ALGO_NAMES:
        raise ValueError(f"NCCL_ALGO={m.group(1)[:30]} is not one of {', '.join(NCCL_ALGO_NAMES)}")
    return NCCL_ALGO_NAMES[m.group(1).lower()]


def _is_csv(text: str) -> bool:
    body = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    return bool(body) and body[0].replace(" ", "").startswith("op,")


def parse_measurements(text: str, name: str = "") -> Measurements:
    """One run in either format; raises ValueError with a one-line reason when neither fits."""
    runs = parse_runs(text, name)
    if len(runs) > 1:
        raise ValueError("one file must describe one set of ranks (dpcost calibrate takes several)")
    return runs[0]


def parse_runs(text: str, name: str = "") -> list[Measurements]:
    """Every run in the text: a log is one run; a CSV is one run per (ranks, GPUs per node, algorithm)."""
    return _parse_csv(text, name) if _is_csv(text) else [_parse_log(text, name)]


def _algorithm_cell(text: str | None, where: str) -> str | None:
    value = (text or "").strip().lower()
    if not value or value in ("default", "auto", "-"):
        return None
    if value not in NCCL_ALGO_NAMES:
        raise ValueError(f"{where}: algorithm {value[:30]!r} is not one of {', '.join(NCCL_ALGO_NAMES)} (or empty)")
    return NCCL_ALGO_NAMES[value]


def _parse_csv(text: str, name: str) -> list[Measurements]:
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    reader = csv.DictReader(io.StringIO("\n".join(lines)))
    fields = set(reader.fieldnames or ())
    missing = {"op", "ranks", "size_bytes", "time_us"} - fields
    if missing:
        raise ValueError(f"CSV header lacks {', '.join(sorted(missing))} (op,ranks,gpus_per_node,size_bytes,time_us)")
    comments = "\n".join(ln for ln in text.splitlines() if ln.lstrip().startswith("#"))
    forced_all = _forced_algorithm(comments)
    groups: dict[tuple[int, int | None, str | None], list[Measurement]] = {}
    for i, row in enumerate(reader, start=2):
        where = f"CSV data row {i}"
        if None in row or any(row.get(f) is None for f in ("op", "ranks", "size_bytes", "time_us")):
            raise ValueError(
                f"{where}: has {len([v for v in row.values() if v is not None])} cells for "
                f"{len(reader.fieldnames or ())} columns"
            )
        op = (row.get("op") or "").strip()
        if op not in OPS:
            raise ValueError(f"{where}: op {op[:30]!r} is not one of {', '.join(OPS)}")
        size = _whole(row.get("size_bytes"), f"{where}: size_bytes")
        time_us = _positive(row.get("time_us"), f"{where}: time_us")
        ranks = _whole(row.get("ranks"), f"{where}: ranks")
        per_node = _whole(row["gpus_per_node"], f"{where}: gpus_per_node") if row.get("gpus_per_node") else None
        algorithm = _algorithm_cell(row.get("algorithm"), where) or forced_all
        column = (row.get("column") or "out-of-place").strip()
        groups.setdefault((ranks, per_node, algorithm), []).append(Measurement(op, size, time_us, column))
    if not groups:
        raise ValueError("no measurement rows")
    runs = []
    for (ranks, per_node, algorithm), rows in groups.items():
        _no_repeats(rows)
        label = name if len(groups) == 1 else f"{name} [{ranks} ranks{', ' + algorithm if algorithm else ''}]"
        runs.append(
            Measurements(
                label,
                ranks,
                per_node,
                algorithm,
                None,
                tuple(rows),
                _forced_protocol(comments),
                _nvls_enabled(comments),
            )
        )
    return runs


_RANK = re.compile(
    r"#\s*Rank\s+\d+\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(?P<host>\S+)\s+device\s+\d+\s+\[[^\]]*\]\s*(?P<dev>.*)"
)


def _parse_log(text: str, name: str) -> Measurements:
    m = re.search(r"\b(" + "|".join(OPS) + r")_perf\b", text) or re.search("(" + "|".join(OPS) + ")", name)
    if not m:
        raise ValueError("not an nccl-tests log (no <op>_perf line) and not a CSV with an 'op' header")
    op = m.group(1)
    hosts: list[str] = []
    device = None
    rows: list[Measurement] = []
    for line in text.splitlines():
        rank = _RANK.match(line.strip())
        if rank:
            hosts.append(rank.group("host"))
            device = rank.group("dev").strip() or device
            continue
        if line.lstrip().startswith("#"):
            continue
        parts = line.split()
        if len(parts) not in (12, 13) or not (parts[0].isascii() and parts[0].isdigit()):
            continue
        first = 5 if len(parts) == 13 else 4  # newer nccl-tests print a `root` column
        size = int(parts[0])
        if size > MAX_SIZE:
            raise ValueError(f"a row's size {parts[0][:30]} is beyond 2**50 bytes")
        for column, idx in (("out-of-place", first), ("in-place", first + 4)):
            try:
                time_us = float(parts[idx])
            except ValueError:
                continue  # "N/A" for ops without an in-place run
            if size > 0 and math.isfinite(time_us) and time_us > 0:
                rows.append(Measurement(op, size, time_us, column))
    if not rows:
        raise ValueError("no nccl-tests data rows found (size count type redop root time algbw busbw ...)")
    _no_repeats(rows)
    nodes = len(set(hosts))
    if nodes and len(hosts) % nodes:
        raise ValueError(f"{len(hosts)} ranks over {nodes} hosts: dpcost needs the same number of GPUs on each")
    return Measurements(
        name=name,
        ranks=len(hosts) or None,
        gpus_per_node=len(hosts) // nodes if nodes else None,
        algorithm=_forced_algorithm(text),
        device=device,
        rows=tuple(rows),
        protocol=_forced_protocol(text),
        nvls=_nvls_enabled(text),
        topology=_topology_hint(text),
    )
