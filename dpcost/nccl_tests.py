"""Parse real nccl-tests measurements: the tools' own text output, its -J JSON, or a CSV of the same columns.

Text output is what `all_reduce_perf -b 8 -e 16G -f 2 -g 8` prints (github.com/NVIDIA/nccl-tests), known by
its table header (`#  size  count  type  redop  root  time  algbw  busbw  #wrong  time ...`; the header says
which columns a version prints). Rank lines give the ranks and hosts; each row gives the out-of-place and the
in-place time. A launcher's label before each line (mpirun --tag-output's `[1,0]<stdout>:`, srun --label's `0: `, a
host or a timestamp) is taken off first: whatever stands before the table header's `#`. Under NCCL_DEBUG=INFO,
NCCL's own lines from another thread can cut a row (`... -1gcn151:1904979:1905073 [0] NCCL INFO ...`, the row's
rest on a later line of numbers): the row is joined again, where the log's own NCCL lines name the host that tells
where its last cell ends. A job that ran several programs (`all_reduce_perf; all_gather_perf; ...`) gives a run of
each, cut at nccl-tests' `# Collective test starting` lines (else its `# nThread` lines); a program dpcost does not
read (scatter) is left out beside ones it does. The collective is the one
nccl-tests' `# Collective test starting: all_reduce_perf` line names,
else a `# op: all_reduce` line, else the `<op>_perf[_mpi]` command line echoed in the log, else the file name;
the rows must read as that op (redop, root, count). A time outside 0.1 us .. 1 hour, or a size beyond 2**50 bytes,
is refused with its line; 0-byte rows are skipped.

When nothing names the collective (raw output, cut from the `# nThread` line down), the table says which, as
nccl-tests prints each program's rows (src/<op>.cu and src/common.cu; n = the number of `# Rank` lines, w = the
type's size):

    program          redop     root   size            busbw / algbw   in-place #wrong
    all_reduce       sum ..    -1     count x w       2(n-1)/n
    reduce_scatter   sum ..    -1     n x count x w   (n-1)/n
    all_gather       none      -1     n x count x w   (n-1)/n
    broadcast        none      >= 0   count x w       1
    reduce           sum ..    >= 0   count x w       1
    sendrecv         sum ..    -1     count x w       1               N/A (no in-place check)
    alltoall         none      -1     n x count x w   (n-1)/n         N/A (no in-place check)
    alltoallv        none      -1     (any)           (n-1)/n         N/A (its size is the largest rank's)
    scatter, gather  none      >= 0   n x count x w   (n-1)/n
    hypercube        (empty)   -1     n x count x w   1

Every row of the table must read as one program, or the log is refused. Older versions printed less: before
August 2022 each program printed only its own columns (a redop column for all_reduce, reduce_scatter, reduce and
alltoall, a root column for broadcast, reduce and scatter); until September 2022 the non-reducing ones printed an
empty redop cell, as hypercube still does; before June 2020 all_gather and reduce_scatter printed busbw = algbw.

The redop, root and count columns tell most of the seven collectives dpcost reads apart (alltoall is read as
dpcost's all_to_all, sendrecv as send_recv; the count needs the ranks: without `# Rank` lines a table whose size is
count x w is refused).
Programs that print the same redop, root and count are told apart by what else nccl-tests prints, never guessed:
- alltoall prints all_gather's; nccl-tests does not check its in-place result (alltoall.cu: "We don't support
  in-place alltoall"), so its in-place #wrong is N/A where the out-of-place one is a number. A run without
  validation (`-c 0`: N/A in both) prints the two alike, and is refused unless named. alltoallv, which dpcost does
  not read, prints alltoall's where its count is not 0.
- sendrecv prints all_reduce's; nccl-tests does not check its in-place result (sendrecv.cu: "We don't support
  in-place sendrecv"; N/A since a0a1491, 2022-09, as alltoall's), and its busbw is its algbw, where all_reduce's is
  2(n-1)/n times it (read to the digits printed). At 2 ranks without validation the two print alike, and such a
  table is refused.
A table refused as ambiguous, or read as a program it is not, is named by a line `# op: all_reduce`, which wins
over the table as every name does. A log cut without its `# Rank` lines states its ranks in a line
`# ranks: 16, gpus per node: 8` (the second part optional), unless its count column gives them (all_gather,
reduce_scatter and alltoall print size = ranks x count x the type's size); so does one whose list was cut short
(`...`), which its busbw / algbw tells (nccl-tests prints it for the true count: 2(n-1)/n for all_reduce, (n-1)/n
for all_gather, reduce_scatter and alltoall), and which is refused, naming the count that ratio gives, until the
line is added.

The JSON that nccl-tests writes with `-J file.json` (2.17.3 and later: docs/sources/nccl-tests-json.md) holds the
same records as its stdout, written by the same calls: it is read as that log, its rows from `results`, its ranks
from `config.devices` (one entry a process, each running nthreads x ngpus ranks), its collective from `args[0]`,
its forced algorithm, protocol and NVLS from `env`.

The CSV form has the header
`op,ranks,gpus_per_node,size_bytes,time_us[,algorithm][,column][,algbw_GBps,busbw_GBps]`; one CSV may hold
several runs (rank counts, forced algorithms). A comment that records NCCL_ALGO= (the log's environment echo, or a
`#` line of the CSV) is read as NCCL reads it (specs.nccl_algo_enabled): where it leaves the run's collective one
algorithm, that one is the run's forced algorithm; where several but not all ("^NVLS", "Ring,Tree"), the setting is
kept, and NCCL's fastest of those is predicted. Pure: text in, rows out (catalog.py reads the file).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterable
from dataclasses import replace

from dpcost.frozen import frozen

__all__ = ["Measurement", "Measurements", "parse_measurements", "parse_runs"]

OPS = ("all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce", "all_to_all", "send_recv")
# nccl-tests' program for each op dpcost reads (src/<program>.cu): the names agree but for alltoall and sendrecv.
PROGRAM_OF = {**{op: op for op in OPS[:-2]}, "all_to_all": "alltoall", "send_recv": "sendrecv"}
_OP_OF = {program: op for op, program in PROGRAM_OF.items()}


@frozen
class Measurement:
    op: str
    size_bytes: int
    time_us: float
    column: str  # "out-of-place" or "in-place"


@frozen
class Measurements:
    name: str
    ranks: int | None
    gpus_per_node: int | None
    algorithm: str | None  # dpcost's name of the one algorithm the run forced its collective to, if it says
    device: str | None
    rows: tuple[Measurement, ...]
    protocol: str | None = None  # the protocol the run forced (NCCL_PROTO), if it says
    nvls: bool = True  # False when the run turned NVLink SHARP off (NCCL_NVLS_ENABLE=0)
    # the run's NCCL_ALGO where it leaves NCCL several algorithms for its collective, not all ("^NVLS", "Ring,Tree")
    nccl_algo: str | None = None
    topology: str | None = None  # a `# dpcost-topology: NAME` comment: the catalog topology the file was run on
    gpus_per_thread: int = 1  # nccl-tests' -g: the GPUs one thread drives (`# nThread T nGpus G`)
    cuda_graphs: bool = False  # nccl-tests' -G: iterations launched as CUDA graphs (`graph: N`, N > 0)
    iters: int = 20  # the calls nccl-tests times back to back per size: -n x -m (`iters: N`, `agg iters: M`)
    # what NCCL_DEBUG=INFO printed: "<n> coll channels, ..., <m> nvls channels, ..., <k> p2p channels per peer" (the
    # fewest, as every rank keeps)
    coll_channels: int | None = None
    nvls_channels: int | None = None
    p2p_per_peer: int | None = None
    # (major, minor) of the NCCL library the run used ("NCCL version 2.29.7", nccl-tests' "nccl-library=22907"), and
    # of nccl-tests itself and the NCCL headers it was built with ("# nccl-tests version 2.18.5 nccl-headers=23007")
    nccl_release: tuple[int, int] | None = None
    tests_release: tuple[int, int, int] | None = None
    headers_release: tuple[int, int] | None = None

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
    """The NCCL_PROTO a log's environment echo sets: one protocol or several (specs.nccl_proto), else None."""
    m = re.search(r"NCCL_PROTO=([A-Za-z0-9]+(?:,[A-Za-z0-9]+)*)", text)  # prose may follow it with a comma
    if not m:
        return None
    from dpcost.specs import nccl_proto  # only where a log sets it: parsing stays free of the specs' import

    try:
        return str(nccl_proto(m.group(1)))
    except ValueError:
        said = f"NCCL_PROTO={m.group(1)[:30]} is not LL, LL128, Simple or a comma-separated list of them"
        raise ValueError(said) from None


def _topology_hint(text: str) -> str | None:
    m = re.search(r"#\s*dpcost-topology:\s*([a-z0-9][a-z0-9._-]*)", text)
    return m.group(1) if m else None


def _channel_lines(text: str) -> str:
    """The lines that speak of channels: NCCL_DEBUG=INFO prints a few hundred others a rank, which the searches below
    need not scan digit by digit (a 128-rank log is several MB). Taken once a log; the searches read them."""
    return "\n".join(line for line in text.splitlines() if "channels" in line)


def _fewest_printed(pattern: str, lines: str) -> int | None:
    """The fewest channels `pattern` finds in `lines` (_channel_lines), as every rank keeps the minimum over all ranks
    (init.cc:1435-1446); none where it says none."""
    counts = [n for n in map(int, re.findall(pattern, lines)) if 0 < n <= 64]  # MAXCHANNELS
    return min(counts) if counts else None


def _printed_channels(lines: str, what: str) -> int | None:
    """The channels NCCL_DEBUG=INFO says the communicator has ("16 coll channels", "16 nvls channels")."""
    return _fewest_printed(rf"\b(\d{{1,2}}) {what} channels\b", lines)


def _printed_per_peer(lines: str) -> int | None:
    """The p2p channels per peer NCCL_DEBUG=INFO says the communicator has ("4 p2p channels per peer")."""
    return _fewest_printed(r"\b(\d{1,2}) p2p channels per peer\b", lines)


_NCCL_VERSION = re.compile(r"\bNCCL version (\d{1,2})\.(\d{1,3})\.\d{1,3}\b")
_LIBRARY_CODE = re.compile(r"\bnccl-library=(\d{5,6})\b")
_HEADERS_CODE = re.compile(r"\bnccl-headers=(\d{5,6})\b")
_TESTS_VERSION = re.compile(r"#\s*nccl-tests version (\d{1,2})\.(\d{1,3})\.(\d{1,3})\b")


def _release_of_code(m: re.Match[str] | None) -> tuple[int, int] | None:
    """(major, minor) of an NCCL_VERSION_CODE: major x 10000 + minor x 100 + patch (nccl.h, 2.9 and later)."""
    return divmod(int(m.group(1)) // 100, 100) if m else None


def _nccl_release(text: str) -> tuple[int, int] | None:
    """The NCCL library's (major, minor): NCCL's own "NCCL version 2.29.7+cuda12.9" line, else nccl-tests'
    "nccl-library=22907"."""
    m = _NCCL_VERSION.search(text)
    return (int(m.group(1)), int(m.group(2))) if m else _release_of_code(_LIBRARY_CODE.search(text))


def _tests_release(text: str) -> tuple[int, int, int] | None:
    m = _TESTS_VERSION.search(text)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def _nvls_enabled(text: str) -> bool:
    return re.search(r"NCCL_NVLS_ENABLE=0\b", text) is None


# an NCCL_ALGO setting in a log's environment echo or prose, up to what cannot be in one (a bracket, a quote)
_NCCL_ALGO = re.compile(r"NCCL_ALGO=[\"']?([\^A-Za-z0-9_,;:]*)")


def _algorithms_set(text: str, ops: Iterable[str]) -> tuple[str | None, str | None]:
    """(the one algorithm, else the setting) the run's NCCL_ALGO leaves its collectives (specs.nccl_algo_enabled):
    one forces it; several but not all are kept as the setting, for NCCL to choose among; none is set, or every
    algorithm left, gives (None, None). NCCL_ALGO does not apply to alltoall's and sendrecv's send/recv."""
    m = _NCCL_ALGO.search(text)
    if m is None:
        return None, None
    from dpcost.specs import NCCL_ALGO_NAMES, nccl_algo_enabled  # only where a log sets it, as _forced_protocol

    setting = m.group(1).strip(",;:")
    enabled = nccl_algo_enabled(setting)
    left = {op: enabled[op] for op in ops if op in enabled}
    if len(set(left.values())) > 1:
        raise ValueError(
            f"NCCL_ALGO={setting[:60]} leaves {', '.join(left)} different algorithms: keep one collective per file"
        )
    if not left or next(iter(left.values())) == frozenset(NCCL_ALGO_NAMES.values()):
        return None, None
    names = next(iter(left.values()))
    return (next(iter(names)), None) if len(names) == 1 else (None, setting)


_RANKS_LINE = re.compile(r"^\s*#\s*ranks:\s*(\d+)(?:\s*,\s*gpus per node:\s*(\d+))?\s*$", re.MULTILINE | re.IGNORECASE)


def _declared_ranks(text: str) -> tuple[int, int | None] | None:
    """A `# ranks: 16, gpus per node: 8` line (the second part optional): the ranks of a log cut without its
    `# Rank` lines."""
    m = _RANKS_LINE.search(text)
    if m is None:
        return None
    ranks, per_node = int(m.group(1)), int(m.group(2)) if m.group(2) else None
    if ranks < 1 or (per_node is not None and (per_node < 1 or ranks % per_node)):
        raise ValueError(
            f"line {_line_of(text, m.start())}: '# ranks: {ranks}' with {per_node} GPUs per node: the ranks must be "
            "a positive multiple of the GPUs per node"
        )
    return ranks, per_node


_THREADS = re.compile(r"#\s*nThread\s+\d+\s+nGpus\s+(\d+)")
_GRAPHS = re.compile(r"#\s*nThread\b.*\bgraph:\s*(\d+)")
_ITERS = re.compile(r"#\s*nThread\b.*?(?<!warmup )(?<!agg )\biters:\s*(\d+)")  # not "warmup iters", "agg iters"
_AGG_ITERS = re.compile(r"#\s*nThread\b.*?\bagg iters:\s*(\d+)")


def _header_count(pattern: re.Pattern[str], text: str, default: int, most: int, refusal: str) -> int:
    """A count nccl-tests' `# nThread` line prints (the first group of `pattern`), else its default; one outside
    1..`most` is refused with `refusal`, formatted with the count."""
    m = pattern.search(text)
    count = int(m.group(1)) if m else default
    if not 1 <= count <= most:
        raise ValueError(refusal.format(count))
    return count


def _gpus_per_thread(text: str) -> int:
    """nccl-tests' -g: the GPUs one thread drives (`nGpus G`), 1 where the line is missing."""
    return _header_count(
        _THREADS, text, 1, 1024, "nGpus {} per thread: nccl-tests' -g is between 1 and the GPUs of one node"
    )


def _cuda_graphs(text: str) -> bool:
    m = _GRAPHS.search(text)
    return bool(m and int(m.group(1)) > 0)


def _iters(text: str) -> int:
    """The calls nccl-tests times per size: -n as its `# nThread` line prints it (`iters: 20`, else its default, 20)
    times -m (`agg iters: 1`), which its BenchTime divides the elapsed time by (src/common.cu)."""
    iters = _header_count(_ITERS, text, 20, 10_000_000, "iters {}: nccl-tests' -n is from 1 to 10,000,000")
    return iters * _header_count(_AGG_ITERS, text, 1, 10_000, "agg iters {}: nccl-tests' -m is from 1 to 10,000")


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
    """Every run in the text: a log is one run per program it ran (_sections); a CSV is one run per (ranks, GPUs
    per node, algorithm)."""
    if _is_csv(text):
        return _parse_csv(text, name)
    if text.lstrip().startswith("{"):
        return [_parse_json(text, name)]
    sections = _sections(_without_line_labels(text))
    if len(sections) == 1:
        return [_parse_log(sections[0], name)]
    runs, unread = [], []
    for number, section in enumerate(sections, start=1):
        try:
            run = _parse_log(section, name)
        except UnreadProgram as exc:  # a program dpcost does not read, beside ones it does: left out
            unread.append(f"section {number}: {exc}")
            continue
        except ValueError as exc:
            raise ValueError(f"section {number} of {len(sections)}: {exc}") from None
        runs.append(replace(run, name=f"{name} [{run.ops[0]}]"))
    if not runs:
        raise ValueError(unread[0])
    return runs


# Where a program's output begins when one job runs several (`all_reduce_perf; all_gather_perf; ...`): nccl-tests'
# own "# Collective test starting" line, else its "# nThread" line.
_STARTS = (
    re.compile(r"^\s*#\s*Collective test starting:", re.MULTILINE),
    re.compile(r"^\s*#\s*nThread\b", re.MULTILINE),
)


def _sections(text: str) -> list[str]:
    """The log cut into one part per program where it holds several tables, each part with the lines before the
    first program (a '# dpcost-topology:' or '# ranks:' line, the job's environment) ahead of it."""
    if sum(1 for line in text.splitlines() if _header(line) is not None) < 2:
        return [text]
    for start in _STARTS:
        starts = [m.start() for m in start.finditer(text)]
        if len(starts) >= 2:
            preamble = text[: starts[0]]
            return [preamble + text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]
    return [text]


# The table header with whatever a launcher printed before it on the line: OpenMPI's --tag-output "[1,0]<stdout>:",
# srun --label's "0: ", pdsh's "host: ", a timestamp.
_LABELLED_HEADER = re.compile(r"^(?P<label>[^#\n]*?)#\s*size\s+count\s+type\b", re.MULTILINE)


def _without_line_labels(text: str) -> str:
    """The log as nccl-tests printed it: the label before the table header's '#' taken off every line that starts
    with it, its digits free to differ from line to line (ranks, hosts, times). Indentation alone is no label."""
    found = _LABELLED_HEADER.search(text)
    if found is None or not found.group("label").strip():
        return text
    label = re.compile(re.sub(r"\d+", r"\\d+", re.escape(found.group("label").strip())) + r"\s?")
    return "\n".join(
        label.sub("", line.lstrip(), count=1) if label.match(line.lstrip()) else line for line in text.splitlines()
    )


def _algorithm_cell(text: str | None, where: str) -> str | None:
    from dpcost.specs import NCCL_ALGO_NAMES

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
    groups: dict[tuple[int, int | None, str | None], list[Measurement]] = {}
    for row in reader:
        where = f"line {numbered[reader.line_num - 1][0]}"
        if None in row or any(row.get(f) is None for f in ("op", "ranks", "size_bytes", "time_us")):
            raise ValueError(
                f"{where}: has {len([v for v in row.values() if v is not None])} cells for "
                f"{len(reader.fieldnames or ())} columns"
            )
        op = (row.get("op") or "").strip()
        op = _OP_OF.get(op, op)
        if op not in OPS:
            raise ValueError(f"{where}: op {op[:30]!r} is not one of {', '.join(OPS)}")
        size = _whole(row.get("size_bytes"), f"{where}: size_bytes")
        time_us = _time_us(row.get("time_us"), f"{where}: time_us")
        ranks = _whole(row.get("ranks"), f"{where}: ranks")
        per_node = _whole(row["gpus_per_node"], f"{where}: gpus_per_node") if row.get("gpus_per_node") else None
        algorithm = _algorithm_cell(row.get("algorithm"), where)
        column = (row.get("column") or "out-of-place").strip()
        groups.setdefault((ranks, per_node, algorithm), []).append(Measurement(op, size, time_us, column))
    if not groups:
        raise ValueError("no measurement rows")
    runs = []
    for (ranks, per_node, cell), rows in groups.items():
        _no_repeats(rows)
        algorithm, setting = (cell, None) if cell else _algorithms_set(comments, {r.op for r in rows})
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
                setting,
                _topology_hint(comments),
                _gpus_per_thread(comments),
                _cuda_graphs(comments),
                _iters(comments),
                p2p_per_peer=_printed_per_peer(_channel_lines(comments)),
                nccl_release=_nccl_release(comments),
                tests_release=_tests_release(comments),
                headers_release=_release_of_code(_HEADERS_CODE.search(comments)),
            )
        )
    return runs


# nccl-tests' rank line (src/common.cu); older versions print no "Group N" (v2.0.0, 2021: "#   Rank  0 Pid 25 on
# host device  0 [0x10] A100-SXM4-40GB")
_RANK = re.compile(
    r"#\s*Rank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(?P<host>\S+)\s+device\s+\d+\s+\[[^\]]*\]\s*(?P<dev>.*)"
)
# Every nccl-tests program, to tell "a log of a collective dpcost does not model" from "no op named".
_PROGRAMS = (*PROGRAM_OF.values(), "alltoallv", "gather", "scatter", "sendrecv", "hypercube")
_PROGRAM = re.compile(r"\b(" + "|".join(_PROGRAMS) + r")_perf(?:_mpi)?\b")
_STARTING = re.compile(r"^\s*#\s*Collective test starting:\s*(\S*)", re.MULTILINE)
_OP_LINE = re.compile(r"^\s*#\s*op:(.*)$", re.MULTILINE | re.IGNORECASE)
_NAME_OPS = {
    "allreduce": "all_reduce",
    "reducescatter": "reduce_scatter",
    "allgather": "all_gather",
    "alltoall": "all_to_all",
    "sendrecv": "send_recv",
}
_NO_OP = "cannot tell which collective this log measured"
_NUMBER = re.compile(r"[-+]?(\d+(?:\.(\d*))?|\.\d+)(?:[eE]([-+]?\d+))?")
_WORD_BYTES = {
    **dict.fromkeys(("int8", "uint8", "char", "f8e4m3", "f8e5m2"), 1),
    **dict.fromkeys(("half", "bfloat16"), 2),
    **dict.fromkeys(("int32", "uint32", "int", "float"), 4),
    **dict.fromkeys(("int64", "uint64", "double"), 8),
}


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


class UnreadProgram(ValueError):
    """A log of an nccl-tests program dpcost does not read (sendrecv, scatter, ...)."""


def _program_op(word: str, where: str) -> str | None:
    """The collective an nccl-tests program name measures; None for a name that is no nccl-tests program."""
    m = _PROGRAM.search(word)
    if m is None:
        return None
    if m.group(1) not in _OP_OF:
        raise UnreadProgram(f"{where}: a log of {m.group(0)}; dpcost reads {', '.join(OPS)}")
    return _OP_OF[m.group(1)]


def _one(found: dict[str, int], what: str) -> str | None:
    if len(found) > 1:
        raise ValueError(f"{what}: several collectives ({', '.join(found)}); keep one run per file")
    return next(iter(found), None)


def _which_op(text: str, name: str) -> tuple[str, str] | None:
    """The collective a log names, and where that was read: nccl-tests' own line, a '# op:' line, the command
    line, the file name, in that order; None when none of them names one."""
    started: dict[str, int] = {}
    for m in _STARTING.finditer(text):
        line = _line_of(text, m.start())
        op = _program_op(m.group(1), f"line {line}")
        if op is not None:
            started.setdefault(op, line)
    declared: dict[str, int] = {}
    for m in _OP_LINE.finditer(text):
        line, words = _line_of(text, m.start()), m.group(1).split()
        value = words[0].strip(".,;()") if words else ""  # the op, then any remark: '# op: all_gather (float32)'
        value = _OP_OF.get(value, value)
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
    words = re.findall("allreduce|reducescatter|allgather|alltoall|sendrecv|broadcast|reduce", squashed)
    named = {_NAME_OPS.get(w, w): 0 for w in words}
    op = _one(named, "the file name")
    return (op, "the file name") if op is not None else None


@frozen
class _Row:
    at: str  # where it was read, for a message: "line 12" of a log, "results[3]" of a -J document
    size: int
    count: int
    dtype: str
    redop: str | None  # None: no redop column (nccl-tests before 2022 printed one only for reducing ops); "": empty
    root: int | None  # None: no root column
    times: tuple[tuple[str, float], ...]  # (column, time_us), without N/A cells
    bandwidths: tuple[tuple[str, str], ...] = ()  # (algbw, busbw) as printed, out-of-place then in-place
    wrong: tuple[str, ...] = ()  # the #wrong cells as printed, out-of-place then in-place


def _header(line: str) -> list[str] | None:
    """The column names of an nccl-tests table header line (`#  size  count  type ...  time  algbw  busbw ...`; the
    `#` may be lost where a page rendered the log, as dstack's docs print it)."""
    cells = line.strip().lstrip("#").split()
    if not cells:
        return None
    if cells[:3] != ["size", "count", "type"] or "algbw" not in cells or "busbw" not in cells:
        return None
    if not any(c in ("time", "cputime") for c in cells):
        return None
    return cells[:-1] if cells[-1] == "timestamp" else cells  # a timestamp holds spaces; it is the last column


def _table_row(cells: list[str], header: list[str], header_line: int, line: int) -> _Row | None:
    """One data row under `header`; None for a 0-byte row (a collective too small to split over the ranks)."""
    if len(cells) == len(header) - 1 and "redop" in header:
        at = header.index("redop")
        if at < len(cells) and _NUMBER.fullmatch(cells[at]):  # an empty redop cell: the next column's number
            cells = [*cells[:at], "", *cells[at:]]
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
    algbw, busbw = ([i for i, c in enumerate(header) if c == name][:2] for name in ("algbw", "busbw"))
    wrong = [i for i, c in enumerate(header) if c in ("#wrong", "error")][:2]
    return _Row(
        f"line {line}",
        size,
        int(cells[1]),
        cells[2],
        cells[header.index("redop")] if "redop" in header else None,
        int(root) if root is not None and re.fullmatch(r"-?\d{1,9}", root) else None,
        times,
        tuple((cells[a], cells[b]) for a, b in zip(algbw, busbw, strict=False)),
        tuple(cells[i] for i in wrong),
    )


def _misread(row: _Row, op: str, ranks: int | None) -> str | None:
    """Why the row cannot be an `op` row as nccl-tests prints one (redop, root, count), or None."""
    reduces = row.redop not in (None, "none", "")
    before_redops = op == "send_recv" and row.redop is None  # sendrecv printed no redop column before 2022-08
    if reduces != (op not in ("all_gather", "broadcast", "all_to_all")) and not before_redops:
        shown = "no redop column" if row.redop is None else f"redop {row.redop}" if row.redop else "an empty redop"
        ops = "all_reduce, reduce_scatter and reduce" if reduces else "all_gather, broadcast and alltoall"
        return f"{shown}, as nccl-tests prints for {ops}"
    if row.root is not None and (row.root >= 0) != (op in ("broadcast", "reduce")):
        return f"root {row.root}: nccl-tests prints a root >= 0 for broadcast and reduce only"
    if op == "all_to_all" and row.redop == "none" and len(row.wrong) == 2 and row.wrong[1] != "N/A":
        return f"in-place #wrong {row.wrong[1]}: nccl-tests does not check alltoall in place, and prints N/A"
    word = _WORD_BYTES.get(row.dtype)
    if word and row.count:
        per_rank = row.size != row.count * word
        if per_rank != (op in ("all_gather", "reduce_scatter", "all_to_all")) and (per_rank or (ranks or 1) > 1):
            if per_rank:
                ratio = row.size / (row.count * word)
                return (
                    f"size = {ratio:g} x count x {word} B, a per-rank count, as all_gather, reduce_scatter and "
                    "alltoall print"
                )
            return f"size = count x {word} B, a whole-buffer count, as all_reduce, broadcast and reduce print"
    return None


# What each nccl-tests program prints in a row (the module docstring's table), as sets of programs.
_ALL = frozenset(_PROGRAMS)
_ROOTED = frozenset({"broadcast", "reduce", "scatter", "gather"})  # print a root >= 0; the others -1
_WHOLE = frozenset({"all_reduce", "broadcast", "reduce", "sendrecv"})  # size = count x w
_PER_RANK = frozenset({"reduce_scatter", "all_gather", "alltoall", "scatter", "gather", "hypercube"})  # n x count x w
_REDOP = {  # by the redop cell: an op's name, `none`, empty (2022-08..09; hypercube), no column (before 2022-08)
    "op": frozenset({"all_reduce", "reduce_scatter", "reduce", "sendrecv"}),
    "none": frozenset({"all_gather", "broadcast", "alltoall", "alltoallv", "scatter", "gather"}),
    "": frozenset({"all_gather", "broadcast", "alltoall", "scatter", "gather", "hypercube"}),
    None: frozenset({"all_gather", "broadcast", "sendrecv", "hypercube", "scatter", "gather"}),
}
# in-place #wrong N/A where out-of-place is a number (since a0a1491, 2022-09)
_NO_INPLACE_CHECK = frozenset({"alltoall", "alltoallv", "sendrecv"})
_BUS_FACTORS = {  # busbw / algbw at n ranks
    "all_reduce": ("2(n-1)/n",),
    **dict.fromkeys(("reduce_scatter", "all_gather"), ("(n-1)/n",)),  # 1 before June 2020, without a root column
    **dict.fromkeys(("broadcast", "reduce", "sendrecv", "hypercube"), ("1",)),
    **dict.fromkeys(("alltoall", "alltoallv", "scatter", "gather"), ("(n-1)/n",)),
}


def _factor(kind: str, ranks: int) -> float:
    return {"2(n-1)/n": 2 * (ranks - 1) / ranks, "(n-1)/n": (ranks - 1) / ranks}.get(kind, 1.0)


_SHOWN = (*PROGRAM_OF.values(), "alltoallv", "gather", "scatter", "sendrecv", "hypercube")


def _programs(names: frozenset[str] | set[str]) -> str:
    return " or ".join(p for p in _SHOWN if p in names)


def _count_ratio(row: _Row) -> float | None:
    """size / (count x the type's size): 1 for a whole-buffer count, the ranks for a per-rank one."""
    word = _WORD_BYTES.get(row.dtype)
    return row.size / (row.count * word) if word and row.count else None


def _shows(row: _Row) -> str:
    """What a row prints that tells the programs apart, for a message."""
    redop = "no redop column" if row.redop is None else f"redop {row.redop}" if row.redop else "an empty redop cell"
    shown = [redop, "no root column" if row.root is None else f"root {row.root}"]
    ratio = _count_ratio(row)
    if ratio is not None:
        shown.append(f"size = {'' if ratio == 1 else f'{ratio:.4g} x '}count x {_WORD_BYTES[row.dtype]} B")
    elif row.count == 0:
        shown.append("count 0")
    if len(row.wrong) == 2 and row.wrong[0] != "N/A" and row.wrong[1] == "N/A":
        shown.append("in-place #wrong N/A")
    for algbw, busbw in row.bandwidths[:1]:
        if _half_unit(algbw) is not None and _half_unit(busbw) is not None and 1 <= float(algbw) < math.inf:
            shown.append(f"busbw = {float(busbw) / float(algbw):.3g} x algbw")
    return ", ".join(shown)


def _reads_as(row: _Row, ranks: int | None) -> frozenset[str]:
    """The nccl-tests programs that print a row like this one (redop, root, count, #wrong)."""
    programs = _REDOP[row.redop if row.redop in (None, "none", "") else "op"]
    programs = programs & _ROOTED if row.root is not None and row.root >= 0 else programs - _ROOTED
    if row.root is None:
        programs -= {"alltoallv"}  # added in 2026, with the root column
    word = _WORD_BYTES.get(row.dtype)
    ratio = _count_ratio(row)
    if word and not row.count:
        programs &= {"alltoallv"}  # its count is per peer, 0 for a traffic matrix; its size is the largest rank's
    elif ratio == 1 and ranks not in (None, 1):
        programs -= _PER_RANK
    elif ratio is not None and ratio > 1 and ratio == int(ratio) and ranks in (None, ratio):
        programs -= _WHOLE
    elif ratio is not None and ratio != 1:
        programs &= {"alltoallv"}
    if len(row.wrong) == 2 and row.wrong[0] != "N/A":
        if row.wrong[1] == "N/A":
            programs &= _NO_INPLACE_CHECK
        elif row.redop == "none":  # since nccl-tests printed `none`, alltoall has not checked in-place runs
            programs -= _NO_INPLACE_CHECK
    return programs


def _half_unit(text: str) -> float | None:
    """Half the last printed digit of a number: how far the printed value may be from the one nccl-tests had."""
    m = _NUMBER.fullmatch(text)
    if m is None or len(m.group(3) or "") > 5:
        return None
    exponent = int(m.group(3) or 0) - len(m.group(2) or "")
    if abs(exponent) > 300:  # beyond a float's range (1e999 GB/s): no run prints it, and it bounds nothing
        return None
    return 0.5 * 10.0**exponent


def _bus_factor_fits(row: _Row, factor: float) -> bool:
    """Whether every (algbw, busbw) the row prints is busbw = factor x algbw, to the digits printed."""
    for algbw, busbw in row.bandwidths:
        alg_unit, bus_unit = _half_unit(algbw), _half_unit(busbw)
        if alg_unit is None or bus_unit is None:
            continue
        alg, bus = float(algbw), float(busbw)
        if not (math.isfinite(alg) and math.isfinite(bus)):
            continue
        if abs(bus - factor * alg) > bus_unit + factor * alg_unit + 1e-9 * max(1.0, abs(bus)):
            return False
    return True


def _bus_factors(program: str, row: _Row) -> tuple[str, ...]:
    """busbw / algbw as `program` prints it in a row like this one (older versions printed it differently)."""
    if program in ("all_gather", "reduce_scatter") and row.root is None:  # nccl-tests before June 2020
        return (*_BUS_FACTORS[program], "1")
    return _BUS_FACTORS[program]


def _table_op(rows: list[_Row], ranks: int | None) -> str:
    """The collective the table itself shows, when nothing names it; refused unless exactly one reads."""
    programs, since = _ALL, rows[0]
    for row in rows:
        here = _reads_as(row, ranks)
        if not here:
            at = f", at {ranks} ranks" if ranks else ""
            raise ValueError(f"{row.at}: no nccl-tests program prints such a row ({_shows(row)}{at})")
        if not programs & here:
            raise ValueError(
                f"the table's rows disagree on the collective: {row.at} reads as {_programs(here)} "
                f"({_shows(row)}), {since.at} as {_programs(programs)} ({_shows(since)}); "
                "keep one run per file"
            )
        programs, since = programs & here, row if programs - here else since
    if len(programs) > 1 and ranks:  # told apart by busbw / algbw, which nccl-tests sets per program
        fits = {
            p
            for p in programs
            if all(any(_bus_factor_fits(r, _factor(f, ranks)) for f in _bus_factors(p, r)) for r in rows)
        }
        programs = frozenset(fits) or programs
    if len(programs) == 1 and next(iter(programs)) in _OP_OF:
        return _OP_OF[next(iter(programs))]
    supported = [_OP_OF[p] for p in PROGRAM_OF.values() if p in programs]
    if not supported:
        raise ValueError(
            f"its table reads as a log of {_programs(programs)} ({_shows(rows[0])}); dpcost reads {', '.join(OPS)}"
            f": if it is one of those, add a line '# op: <op>'"
        )
    if ranks is None and programs & _WHOLE and programs & _PER_RANK:
        why = "no '# Rank' lines give the number of ranks, which its count column needs"
    elif ranks == 1 and programs & _WHOLE and programs & _PER_RANK:
        why = "at 1 rank a per-rank count is the whole buffer's"
    elif {"all_gather", "alltoall"} <= programs and all(r.redop == "" for r in rows):
        why = "nccl-tests of August-September 2022 printed them alike, with an empty redop cell"
    elif {"all_gather", "alltoall"} <= programs and any(len(r.wrong) == 2 for r in rows):
        why = "nccl-tests prints them alike when it does not validate, -c 0"
    elif {"all_gather", "alltoall"} <= programs:
        why = "without an in-place #wrong column nccl-tests prints them alike"
    elif {"all_reduce", "sendrecv"} <= programs and ranks == 2:
        why = "at 2 ranks nccl-tests prints them alike, busbw = algbw"
    else:
        why = "nccl-tests prints their rows alike"
    raise ValueError(
        f"{_NO_OP}: nothing in it names one, and its table reads as {_programs(programs)} ({why}): "
        f"add a line '# op: {supported[0]}' if it is {supported[0]}"
    )


def _ranks_from_counts(rows: list[_Row], op: str) -> int | None:
    """The ranks a per-rank count gives where no line states them: all_gather, reduce_scatter and alltoall print
    size = ranks x count x the type's size (src/<op>.cu GetCollByteCount); None for another op, or rows that
    disagree."""
    if PROGRAM_OF.get(op) not in _PER_RANK:
        return None
    ratios = {_count_ratio(row) for row in rows}
    if len(ratios) != 1:
        return None
    ratio = ratios.pop()
    return int(ratio) if ratio is not None and ratio >= 2 and ratio == int(ratio) else None


def _table_op_of(rows: list[_Row], listed: int | None, declared: int | None) -> str:
    """_table_op at the ranks the '# Rank' lines list, else at a '# ranks:' line's (a list cut short)."""
    try:
        return _table_op(rows, listed if listed is not None else declared)
    except ValueError:
        if listed is None or declared is None or declared == listed:
            raise
        return _table_op(rows, declared)


def _bus_ranks_fit(rows: list[_Row], op: str, ranks: int) -> bool:
    """Whether every row's busbw / algbw is the one nccl-tests prints for `op` at `ranks` ranks, to the digits
    printed (src/<op>.cu getBw): a rank list cut short (`...`) gives another count."""
    program = PROGRAM_OF.get(op)
    if program is None or ranks < 2:
        return True
    return all(any(_bus_factor_fits(r, _factor(f, ranks)) for f in _bus_factors(program, r)) for r in rows)


def _ranks_from_bus(rows: list[_Row], op: str) -> int | None:
    """The ranks a table's busbw / algbw implies (2(n-1)/n or (n-1)/n), read from its largest algbw, whose digits
    say it best; None where the factor does not depend on the ranks, or no row prints one."""
    kind = _BUS_FACTORS.get(PROGRAM_OF.get(op, ""), ("1",))[0]
    printed = [(float(a), float(b)) for r in rows for a, b in r.bandwidths if _half_unit(a) and _half_unit(b)]
    printed = [(a, b) for a, b in printed if math.isfinite(a) and math.isfinite(b) and a > 0]
    if kind == "1" or not printed:
        return None
    algbw, busbw = max(printed)
    whole = 2.0 if kind == "2(n-1)/n" else 1.0
    gap = whole - busbw / algbw  # whole / n
    return round(whole / gap) if gap > 0 else None


_NCCL_TAG = r"(\S+):\d+:\d+ \[\d+\] NCCL "  # how NCCL begins its own lines: host:pid:tid [dev] NCCL INFO ...
_NCCL_LINE = re.compile("^" + _NCCL_TAG, re.MULTILINE)  # one of them on a line of its own
_GLUED = re.compile(_NCCL_TAG)  # one of them anywhere, maybe inside a row


def _unglued(line: str, hosts: set[str]) -> str:
    """A line cut where one of NCCL's own log lines (NCCL_DEBUG=INFO, written by another thread) begins inside it:
    nccl-tests' row up to there, its rest on a later line. The log line starts with a host the log's own NCCL lines
    name, which tells where the row's last cell ends (`-1gcn151:...`: root -1, host gcn151)."""
    found = _GLUED.search(line)
    if found is None or not line[: found.start()].strip():
        return line
    token = found.group(1)
    host = max((h for h in hosts if token.endswith(h) and len(h) < len(token)), key=len, default=None)
    return line[: found.end(1) - len(host)] if host else line


def _continues(cells: list[str]) -> bool:
    """A line of numbers alone (times, bandwidths, #wrong, N/A): the rest of a row NCCL's log line cut."""
    return bool(cells) and not cells[0].isdigit() and all(_NUMBER.fullmatch(c) or c == "N/A" for c in cells)


def _parse_log(text: str, name: str) -> Measurements:
    hosts: list[str] = []
    device = None
    rows: list[_Row] = []
    header: list[str] | None = None
    header_line = 0
    hosts_logging = set(_NCCL_LINE.findall(text))
    split: tuple[int, list[str]] | None = None  # a row NCCL's log split: its line and the cells so far
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
        unglued = _unglued(line, hosts_logging) if hosts_logging else line
        cells = unglued.split()
        if split is not None and _continues(cells):
            number, cells = split[0], split[1] + cells
            if header is not None and len(cells) < len(header):
                split = (number, cells)
                continue
            split = None
        elif header is None or not cells or not (cells[0].isascii() and cells[0].isdigit()):
            continue  # comments, NCCL's and MPI's own lines
        elif unglued != line and len(cells) < len(header):
            split = (number, cells)
            continue
        if header is None:
            continue
        row = _table_row(cells, header, header_line, number)
        if row is not None:
            rows.append(row)
    if split is not None:
        raise ValueError(f"line {split[0]}: a row one of NCCL's log lines cut, whose rest does not follow")
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
    return _read_table(name, text, rows, hosts, device, _which_op(text, name), _declared_ranks(text))


def _read_table(
    name: str,
    text: str,
    rows: list[_Row],
    hosts: list[str],
    device: str | None,
    named: tuple[str, str] | None,
    declared: tuple[int, int | None] | None,
) -> Measurements:
    """A table's run, whatever format it was read from: `hosts` one per rank listed, `named` the collective and where
    it was named (else the table says which), `declared` a '# ranks:' line's (ranks, GPUs per node), and what the
    run's environment and nccl-tests' header lines in `text` say (its forced algorithm, protocol, NVLS, -g, -n x -m,
    -G, the channels NCCL printed, the releases)."""
    nodes = len(set(hosts))
    if nodes and len(hosts) % nodes:
        raise ValueError(f"{len(hosts)} ranks over {nodes} hosts: dpcost needs the same number of GPUs on each")
    ranks, per_node = len(hosts) or None, len(hosts) // nodes if nodes else None
    op, source = named or (
        _table_op_of(rows, ranks, declared[0] if declared else None),
        "its table (redop, root, count)",
    )
    listed = ranks
    if ranks is None and declared is None:
        ranks = _ranks_from_counts(rows, op)
    if declared is not None:
        if ranks is not None and declared[0] != ranks and _bus_ranks_fit(rows, op, ranks):
            raise ValueError(f"'# ranks: {declared[0]}' contradicts its {ranks} '# Rank' lines")
        ranks, per_node = declared[0], declared[1] or per_node  # a list cut short gives way to the line
    seen: dict[tuple[int, str], _Row] = {}
    measured = []
    for row in rows:
        why = _misread(row, op, ranks)
        if why is not None:
            fix = "" if source.startswith("its 'Collective") else "; if that is wrong, add a line '# op: <op>'"
            raise ValueError(f"{row.at}: not a row of {op} ({why}); {op} came from {source}{fix}")
        for column, time_us in row.times:
            first = seen.setdefault((row.size, column), row)
            if first.at != row.at and first.dtype != row.dtype:  # nccl-tests -d all: a row per datatype
                raise ValueError(
                    f"{row.at}: {row.size} bytes ({column}) measured again in {row.dtype} (first in "
                    f"{first.dtype} on {first.at}); keep one datatype per file (nccl-tests -d {first.dtype})"
                )
            if first.at != row.at:
                raise ValueError(
                    f"{row.at}: {row.size} bytes ({column}) measured again (first on {first.at}); keep one run per file"
                )
            measured.append(Measurement(op, row.size, time_us, column))
    if declared is None and listed is not None and not _bus_ranks_fit(rows, op, listed):
        about = _ranks_from_bus(rows, op)
        cut = f"about {about} ranks" if about else "another number of ranks"
        raise ValueError(
            f"its busbw / algbw is that of {cut}, not of the {listed} its '# Rank' lines list (a list cut short?): "
            f"add a line '# ranks: {about or 'N'}, gpus per node: G'"
        )
    algorithm, setting = _algorithms_set(text, {r.op for r in measured})
    channels = _channel_lines(text)
    return Measurements(
        name=name,
        ranks=ranks,
        gpus_per_node=per_node,
        algorithm=algorithm,
        device=device,
        rows=tuple(measured),
        protocol=_forced_protocol(text),
        nvls=_nvls_enabled(text),
        nccl_algo=setting,
        topology=_topology_hint(text),
        gpus_per_thread=_gpus_per_thread(text),
        cuda_graphs=_cuda_graphs(text),
        iters=_iters(text),
        coll_channels=_printed_channels(channels, "coll"),
        nvls_channels=_printed_channels(channels, "nvls"),
        p2p_per_peer=_printed_per_peer(channels),
        nccl_release=_nccl_release(text),
        tests_release=_tests_release(text),
        headers_release=_release_of_code(_HEADERS_CODE.search(text)),
    )


# nccl-tests' -J document (nccl-tests 2.17.3 on; src/util.cu at v2.19.6): the records its stdout prints, written by the
# same calls (writeDeviceReport, writeBenchmarkLinePreamble/Body/Terminator), without the table's rounding:
# {"version", "args": argv, "env": ["K=V", ...], "nccl_version": code, "config": {"nthreads", "ngpus", "iterations",
# "aggregated_iterations", "graph", ..., "devices": [{"hostname", "device_info", ...}: one a process, its first GPU's]},
# "results": [{"size", "count", "type", "redop", "root": "%6i", "out_of_place": {"time" or "cpu_time", "alg_bw",
# "bus_bw", "nwrong"}, "in_place": {...}, "experiment_name"}, ...]}. Bandwidths are written "%lf", six decimals.
_JSON_COLUMNS = (("out-of-place", "out_of_place"), ("in-place", "in_place"))
# the environment a run's reading depends on (_algorithms_set, _forced_protocol, _nvls_enabled)
_JSON_ENV = ("NCCL_ALGO", "NCCL_PROTO", "NCCL_NVLS_ENABLE")


def _json_whole(value: object, what: str, least: int = 0, most: int = MAX_SIZE) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
        raise ValueError(f"{what}: expected a whole number from {least} to {most:,}, got {value!r}"[:200])
    return value


def _json_cell(value: object, what: str) -> str:
    """A number as the -J writer printed it ("%lf"; NaN as "nan"), for the checks that read printed digits."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"{what}: expected a number, got {value!r}"[:200])
    if isinstance(value, str):
        return value if value.strip().lower() == "nan" else f"{_number(value, what):.6f}"
    return f"{float(value):.6f}" if math.isfinite(value) else "nan"


def _json_row(index: int, record: object) -> _Row | None:
    """One of -J's results as the row nccl-tests printed beside it; None for a 0-byte one."""
    at = f"results[{index}]"
    if not isinstance(record, dict):
        raise ValueError(
            f"{at}: expected an object with size, count, type, redop, root and times, got {record!r}"[:200]
        )
    size = _json_whole(record.get("size"), f"{at}: size")
    count = _json_whole(record.get("count"), f"{at}: count")
    dtype, redop, root = record.get("type"), record.get("redop"), record.get("root")
    for key, value in (("type", dtype), ("redop", redop), ("root", root)):
        if not isinstance(value, str) or len(value) > 30:
            raise ValueError(f"{at}: {key}: expected a short string as nccl-tests writes it, got {value!r}"[:200])
    assert isinstance(dtype, str) and isinstance(redop, str) and isinstance(root, str)
    if not re.fullmatch(r"\s*-?\d{1,9}\s*", root):
        raise ValueError(f"{at}: root {root!r} is not a rank (nccl-tests writes -1 where there is none)")
    if size == 0:
        return None
    times, bandwidths, wrong = [], [], []
    for column, key in _JSON_COLUMNS:
        body = record.get(key)
        if body is None:  # in_place absent: the run stopped in this row (a failed run's JSON is still closed:
            wrong.append("N/A")  # common.cu, jsonOutputFinalize), its out-of-place time measured
            continue
        if not isinstance(body, dict):
            raise ValueError(
                f"{at}: {key}: expected an object with time, alg_bw, bus_bw and nwrong, got {body!r}"[:200]
            )
        time = body.get("time", body.get("cpu_time"))
        if isinstance(time, bool) or not isinstance(time, int | float):
            raise ValueError(f"{at}: {key}: time: expected a number of microseconds, got {time!r}"[:200])
        times.append((column, _time_us(repr(float(time)), f"{at}: {column} time")))
        bandwidths.append((_json_cell(body.get("alg_bw"), f"{at}: {key}: alg_bw"),
                           _json_cell(body.get("bus_bw"), f"{at}: {key}: bus_bw")))  # fmt: skip
        nwrong = body.get("nwrong")
        wrong.append("N/A" if nwrong is None else _json_cell(nwrong, f"{at}: {key}: nwrong").rstrip("0").rstrip("."))
    return _Row(at, size, count, dtype, redop, int(root), tuple(times), tuple(bandwidths), tuple(wrong))


def _json_named(doc: dict[str, object], name: str) -> tuple[str, str] | None:
    """The collective a -J document names: its program (args[0]), else its experiment name (nccl-tests 2.20's
    "AllReduce"), else the file name; None when none of them names one (the table then says)."""
    args = doc.get("args")
    if isinstance(args, list) and args and isinstance(args[0], str):
        op = _program_op(args[0].rsplit("/", 1)[-1], "args[0]")
        if op is not None:
            return op, f"its program ({args[0][-60:]})"
    results = doc.get("results")
    experiment = (
        results[0].get("experiment_name")
        if isinstance(results, list) and results and isinstance(results[0], dict)
        else None
    )
    if isinstance(experiment, str) and experiment.strip():
        op = _NAME_OPS.get(re.sub(r"[^a-z]", "", experiment.lower()))
        if op is None and experiment.strip().lower() in OPS:
            op = experiment.strip().lower()
        if op is not None:
            return op, f"its experiment_name ({experiment[:30]})"
    return _which_op("", name)


def _parse_json(text: str, name: str) -> Measurements:
    """nccl-tests' -J output: the ranks from its config's devices, one a process (writeDeviceReport keeps each
    process's first `#  Rank` line: parseRankInfo), each running nthreads x ngpus ranks; the rows from its results;
    the forced algorithm, protocol and NVLS from its environment; the GPUs a thread drives, the iterations and CUDA
    graphs from its config."""
    try:
        doc = json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deep to be nccl-tests' -J output") from None
    except ValueError as exc:
        raise ValueError(f"not valid JSON ({exc})"[:200]) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise ValueError(
            "a JSON document without a 'results' list: not nccl-tests' -J output (nccl-tests 2.17.3 and later)"
        )
    config = doc.get("config", {})
    if not isinstance(config, dict):
        raise ValueError("config must be an object, as nccl-tests writes it")
    devices = config.get("devices", [])
    if not isinstance(devices, list):
        raise ValueError("config.devices must be a list, as nccl-tests writes it")
    gpus_per_thread = _json_whole(config.get("ngpus", 1), "config: ngpus", 1, 1024)
    per_process = _json_whole(config.get("nthreads", 1), "config: nthreads", 1, 1024) * gpus_per_thread
    hosts, device = [], None
    for index, entry in enumerate(devices):
        host = entry.get("hostname") if isinstance(entry, dict) else None
        if not isinstance(host, str) or not host:
            raise ValueError(f"config.devices[{index}]: expected an object with a hostname, got {entry!r}"[:200])
        hosts.extend([host] * per_process)
        info = entry.get("device_info")
        device = info.strip() if isinstance(info, str) and info.strip() else device
    rows = [row for index, record in enumerate(doc["results"]) if (row := _json_row(index, record)) is not None]
    if not any(row.times for row in rows):
        raise ValueError("no results with a time in its 'results' list")
    env_list = doc.get("env", [])
    env = (
        [e for e in env_list if isinstance(e, str) and e.split("=", 1)[0] in _JSON_ENV]
        if isinstance(env_list, list)
        else []
    )
    run = _read_table(name, "\n".join(env), rows, hosts, device, _json_named(doc, name), None)
    iters = _json_whole(config.get("iterations", 20), "config: iterations", 1, 10_000_000)
    aggregated = _json_whole(config.get("aggregated_iterations", 1), "config: aggregated_iterations", 1, 10_000)
    code = doc.get("nccl_version")
    return replace(  # what the log's header lines say, from the config and the version code
        run,
        gpus_per_thread=gpus_per_thread,
        cuda_graphs=_json_whole(config.get("graph", 0), "config: graph", 0, 10_000_000) > 0,
        iters=iters * aggregated,
        nccl_release=_release_of_code(re.match(r"(\d{5,6})$", str(code))) if code is not None else None,
    )
