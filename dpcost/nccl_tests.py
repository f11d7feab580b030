"""Parse real nccl-tests measurements: the tools' own text output, or a CSV of the same columns.

Text output is what `all_reduce_perf -b 8 -e 16G -f 2 -g 8` prints (github.com/NVIDIA/nccl-tests), known by
its table header (`#  size  count  type  redop  root  time  algbw  busbw  #wrong  time ...`; the header says
which columns a version prints). Rank lines give the ranks and hosts; each row gives the out-of-place and the
in-place time. The collective is the one nccl-tests' `# Collective test starting: all_reduce_perf` line names,
else a `# op: all_reduce` line, else the `<op>_perf[_mpi]` command line echoed in the log, else the file name;
a log none of them names is refused (add the `# op:` line). The rows must read as that op (redop, root, count).
A time outside 0.1 us .. 1 hour, or a size beyond 2**50 bytes, is refused with its line; 0-byte rows are skipped.

The CSV form has the header
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
# nccl-tests prints one call's time in us, two decimals. No collective completes in under 0.1 us (launching a
# kernel takes microseconds), and a call of over an hour is a hung run, not a measurement.
MIN_TIME_US = 0.1
MAX_TIME_US = 3600e6


def _number(text: str | None, what: str) -> float:
    try:
        value = float(text) if text is not None else math.nan
    except ValueError:
        raise ValueError(f"{what}: expected a number, got {text!r}"[:200]) from None
    if text is None or not text.strip():
        raise ValueError(f"{what}: missing")
    if not math.isfinite(value):
        raise ValueError(f"{what}: expected a finite number, got {text[:30]!r}")
    return value


def _positive(text: str | None, what: str) -> float:
    value = _number(text, what)
    if value <= 0:
        raise ValueError(f"{what}: must be positive, got {text!r}"[:200])
    return value


def _time_us(text: str | None, what: str) -> float:
    value = _positive(text, what)
    if not MIN_TIME_US <= value <= MAX_TIME_US:
        raise ValueError(f"{what}: {text!r} us is outside 0.1 us .. 1 hour, not a time of one collective"[:200])
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
    numbered = [(n, ln) for n, ln in enumerate(text.splitlines(), 1) if ln.strip() and not ln.lstrip().startswith("#")]
    reader = csv.DictReader(io.StringIO("\n".join(ln for _, ln in numbered)))
    fields = set(reader.fieldnames or ())
    missing = {"op", "ranks", "size_bytes", "time_us"} - fields
    if missing:
        raise ValueError(f"CSV header lacks {', '.join(sorted(missing))} (op,ranks,gpus_per_node,size_bytes,time_us)")
    comments = "\n".join(ln for ln in text.splitlines() if ln.lstrip().startswith("#"))
    forced_all = _forced_algorithm(comments)
    groups: dict[tuple[int, int | None, str | None], list[Measurement]] = {}
    for row in reader:
        where = f"line {numbered[reader.line_num - 1][0]}"
        if None in row or any(row.get(f) is None for f in ("op", "ranks", "size_bytes", "time_us")):
            raise ValueError(
                f"{where}: has {len([v for v in row.values() if v is not None])} cells for "
                f"{len(reader.fieldnames or ())} columns"
            )
        op = (row.get("op") or "").strip()
        if op not in OPS:
            raise ValueError(f"{where}: op {op[:30]!r} is not one of {', '.join(OPS)}")
        size = _whole(row.get("size_bytes"), f"{where}: size_bytes")
        time_us = _time_us(row.get("time_us"), f"{where}: time_us")
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
# Every nccl-tests program, to tell "a log of a collective dpcost does not model" from "no op named".
_PROGRAMS = (*OPS, "alltoallv", "alltoall", "gather", "scatter", "sendrecv", "hypercube")
_PROGRAM = re.compile(r"\b(" + "|".join(_PROGRAMS) + r")_perf(?:_mpi)?\b")
_STARTING = re.compile(r"^\s*#\s*Collective test starting:\s*(\S*)", re.MULTILINE)
_OP_LINE = re.compile(r"^\s*#\s*op:(.*)$", re.MULTILINE | re.IGNORECASE)
_NAME_OPS = {"allreduce": "all_reduce", "reducescatter": "reduce_scatter", "allgather": "all_gather"}
_NO_OP = (
    f"cannot tell which collective this log measured (no 'Collective test starting' or <op>_perf line, and the "
    f"file name names none): add a line '# op: all_reduce' (or {', '.join(OPS[1:])})"
)
_WORD_BYTES = {
    **dict.fromkeys(("int8", "uint8", "char", "f8e4m3", "f8e5m2"), 1),
    **dict.fromkeys(("half", "bfloat16"), 2),
    **dict.fromkeys(("int32", "uint32", "int", "float"), 4),
    **dict.fromkeys(("int64", "uint64", "double"), 8),
}


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _program_op(word: str, where: str) -> str | None:
    """The collective an nccl-tests program name measures; None for a name that is no nccl-tests program."""
    m = _PROGRAM.search(word)
    if m is None:
        return None
    if m.group(1) not in OPS:
        raise ValueError(f"{where}: a log of {m.group(0)}; dpcost reads {', '.join(OPS)}")
    return m.group(1)


def _one(found: dict[str, int], what: str) -> str | None:
    if len(found) > 1:
        raise ValueError(f"{what}: several collectives ({', '.join(found)}); keep one run per file")
    return next(iter(found), None)


def _which_op(text: str, name: str) -> tuple[str, str]:
    """The collective a log measured, and where that was read: nccl-tests' own line, a '# op:' line, the command
    line, the file name, in that order."""
    started: dict[str, int] = {}
    for m in _STARTING.finditer(text):
        line = _line_of(text, m.start())
        op = _program_op(m.group(1), f"line {line}")
        if op is not None:
            started.setdefault(op, line)
    declared: dict[str, int] = {}
    for m in _OP_LINE.finditer(text):
        line, value = _line_of(text, m.start()), m.group(1).strip()
        if value not in OPS:
            raise ValueError(f"line {line}: '# op: {value[:30]}' names no collective dpcost reads ({', '.join(OPS)})")
        declared.setdefault(value, line)
    op = _one(started, "the log's 'Collective test starting' lines")
    said = _one(declared, "the log's '# op:' lines")
    if op and said and op != said:
        raise ValueError(
            f"line {declared[said]}: '# op: {said}' contradicts line {started[op]}, where nccl-tests ran {op}"
        )
    if op:
        return op, f"its 'Collective test starting' line (line {started[op]})"
    if said:
        return said, f"its '# op:' line (line {declared[said]})"
    echoed: dict[str, int] = {}
    for m in _PROGRAM.finditer(text):
        echoed.setdefault(m.group(0).removesuffix("_mpi"), _line_of(text, m.start()))
    if len(echoed) > 1:
        raise ValueError(
            f"names several nccl-tests programs ({', '.join(echoed)}): add a line '# op: <the one it ran>'"
        )
    if echoed:
        program, line = next(iter(echoed.items()))
        return str(_program_op(program, f"line {line}")), f"its command line (line {line})"
    squashed = re.sub(r"[^a-z0-9]", "", name.lower())
    named = {_NAME_OPS.get(w, w): 0 for w in re.findall("allreduce|reducescatter|allgather|broadcast|reduce", squashed)}
    op = _one(named, "the file name")
    if op is None:
        raise ValueError(_NO_OP)
    return op, "the file name"


@dataclass(frozen=True)
class _Row:
    line: int
    size: int
    count: int
    dtype: str
    redop: str | None  # None: no redop column (nccl-tests before 2022 printed one only for reducing ops)
    root: int | None  # None: no root column
    times: tuple[tuple[str, float], ...]  # (column, time_us), without N/A cells


def _header(line: str) -> list[str] | None:
    """The column names of an nccl-tests table header line (`#  size  count  type ...  time  algbw  busbw ...`)."""
    if not line.lstrip().startswith("#"):
        return None
    cells = line.strip().lstrip("#").split()
    if cells[:3] != ["size", "count", "type"] or "algbw" not in cells or "busbw" not in cells:
        return None
    if not any(c in ("time", "cputime") for c in cells):
        return None
    return cells[:-1] if cells[-1] == "timestamp" else cells  # a timestamp holds spaces; it is the last column


def _table_row(cells: list[str], header: list[str], header_line: int, line: int) -> _Row | None:
    """One data row under `header`; None for a 0-byte row (a collective too small to split over the ranks)."""
    if len(cells) < len(header):
        raise ValueError(f"line {line}: {len(cells)} columns where the header on line {header_line} has {len(header)}")
    if len(cells[0]) > 16 or int(cells[0]) > MAX_SIZE:
        raise ValueError(f"line {line}: size {cells[0][:30]} is beyond 2**50 bytes")
    if not (cells[1].isascii() and cells[1].isdigit() and len(cells[1]) <= 16):
        raise ValueError(f"line {line}: count {cells[1][:30]!r} is not a whole number up to 2**50")
    size = int(cells[0])
    if size == 0:
        return None
    columns = [i for i, c in enumerate(header) if c in ("time", "cputime")][:2]
    times = tuple(
        (column, _time_us(cells[i], f"line {line}: {column} time"))
        for column, i in zip(("out-of-place", "in-place"), columns, strict=False)
        if cells[i] != "N/A"  # a column nccl-tests did not run
    )
    root = cells[header.index("root")] if "root" in header else None
    return _Row(
        line,
        size,
        int(cells[1]),
        cells[2],
        cells[header.index("redop")] if "redop" in header else None,
        int(root) if root is not None and re.fullmatch(r"-?\d{1,9}", root) else None,
        times,
    )


def _misread(row: _Row, op: str, ranks: int | None) -> str | None:
    """Why the row cannot be an `op` row as nccl-tests prints one (redop, root, count), or None."""
    reduces = row.redop is not None and row.redop != "none"
    if reduces != (op not in ("all_gather", "broadcast")):
        shown = f"redop {row.redop}" if row.redop is not None else "no redop column"
        ops = "all_reduce, reduce_scatter and reduce" if reduces else "all_gather and broadcast"
        return f"{shown}, as nccl-tests prints for {ops}"
    if row.root is not None and (row.root >= 0) != (op in ("broadcast", "reduce")):
        return f"root {row.root}: nccl-tests prints a root >= 0 for broadcast and reduce only"
    word = _WORD_BYTES.get(row.dtype)
    if word and row.count:
        per_rank = row.size != row.count * word
        if per_rank != (op in ("all_gather", "reduce_scatter")) and (per_rank or (ranks or 1) > 1):
            if per_rank:
                ratio = row.size / (row.count * word)
                return f"size = {ratio:g} x count x {word} B, a per-rank count, as all_gather and reduce_scatter print"
            return f"size = count x {word} B, a whole-buffer count, as all_reduce, broadcast and reduce print"
    return None


def _parse_log(text: str, name: str) -> Measurements:
    hosts: list[str] = []
    device = None
    rows: list[_Row] = []
    header: list[str] | None = None
    header_line = 0
    for number, line in enumerate(text.splitlines(), start=1):
        rank = _RANK.match(line.strip())
        if rank:
            hosts.append(rank.group("host"))
            device = rank.group("dev").strip() or device
            continue
        columns = _header(line)
        if columns is not None:
            header, header_line = columns, number
            continue
        cells = line.split()
        if header is None or not cells or not (cells[0].isascii() and cells[0].isdigit()):
            continue  # comments, NCCL's and MPI's own lines
        row = _table_row(cells, header, header_line, number)
        if row is not None:
            rows.append(row)
    if header is None:
        started = re.search(r"^#\s*(nThread|Using devices)", text, re.MULTILINE) or hosts
        raise ValueError(
            "no nccl-tests data rows: the log ends before its table header ('#  size  count  type ... time  algbw')"
            if started
            else "not an nccl-tests log (no '#  size  count  type ... time  algbw  busbw' table header) "
            "and not a CSV (no 'op,ranks,...' header)"
        )
    if not any(r.times for r in rows):
        raise ValueError(f"no nccl-tests data rows under the table header on line {header_line}")
    op, source = _which_op(text, name)
    nodes = len(set(hosts))
    if nodes and len(hosts) % nodes:
        raise ValueError(f"{len(hosts)} ranks over {nodes} hosts: dpcost needs the same number of GPUs on each")
    seen: dict[tuple[int, str], int] = {}
    measured = []
    for row in rows:
        why = _misread(row, op, len(hosts) or None)
        if why is not None:
            fix = "" if source.startswith("its 'Collective") else "; if that is wrong, add a line '# op: <op>'"
            raise ValueError(f"line {row.line}: not a row of {op} ({why}); {op} came from {source}{fix}")
        for column, time_us in row.times:
            first = seen.setdefault((row.size, column), row.line)
            if first != row.line:
                raise ValueError(
                    f"line {row.line}: {row.size} bytes ({column}) measured again (first on line {first}); "
                    "keep one run per file"
                )
            measured.append(Measurement(op, row.size, time_us, column))
    return Measurements(
        name=name,
        ranks=len(hosts) or None,
        gpus_per_node=len(hosts) // nodes if nodes else None,
        algorithm=_forced_algorithm(text),
        device=device,
        rows=tuple(measured),
        protocol=_forced_protocol(text),
        nvls=_nvls_enabled(text),
        topology=_topology_hint(text),
    )
