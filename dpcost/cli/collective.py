"""`dpcost collective`: predicted collective time in nccl-tests' vocabulary, optionally beside a real run."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from dpcost.cli.core import Format, FormatOpt, OutputOpt, app, emit
from dpcost.cli.options import TopologyOpt, number, whole
from dpcost.errors import InputError

if TYPE_CHECKING:
    from dpcost.nccl_tests import Measurements
    from dpcost.specs import TopologySpec

FACTOR = "a number above 1, such as 2"


def _switch(flag: str, value: str | None) -> bool | None:
    """on/off (true/false, 1/0) as the plan options take them."""
    if value is None:
        return None
    words = {"on": True, "true": True, "1": True, "yes": True, "off": False, "false": False, "0": False, "no": False}
    if value.strip().lower() not in words:
        raise InputError(flag, f"must be on or off, got {value!r}")
    return words[value.strip().lower()]


def _sendrecv_line(topo: TopologySpec, ranks: int, per_peer: int | None, m: Measurements | None) -> str:
    """What a send_recv prediction assumed: nccl-tests' ring of sends, and the channels each one runs on."""
    from dpcost.engine.p2p import sendrecv_channels
    from dpcost.engine.placement import place

    ring = "send_recv: nccl-tests' sendrecv_perf, each rank sending to the next and receiving from the one before"
    comm = place(topo, ranks)
    if comm.nodes <= 1:
        return ring + " over NVLink"
    if m is not None and m.p2p_per_peer is not None:
        why = f"as {m.name}'s NCCL log prints them"
    elif per_peer is not None and m is not None and m.nccl_release is not None:
        why = f"NCCL {m.nccl_release[0]}.{m.nccl_release[1]}'s, the release {m.name} names"
    else:
        per_peer = sendrecv_channels(topo, comm)
        why = "NCCL 2.30's, with nccl-tests' maxP2pPeers of 2"
    return (
        f"{ring}; across nodes the pair from the last rank to the first sets the time, on {per_peer} "
        f"channel{'' if per_peer == 1 else 's'} per peer ({why}) of at most 14 GB/s each (NCCL_P2P_PER_CHANNEL_NET_BW)"
    )


def _sizes(sizes: str | None, min_bytes: str, max_bytes: str, factor: float) -> list[int]:
    from dpcost.units import UnitError, parse_message_size

    try:
        if sizes is not None:
            out = [int(parse_message_size(s)) for s in sizes.split(",") if s.strip()]
            if not out or min(out) <= 0:
                raise InputError("sizes", f"give positive sizes of a byte or more, such as 64M,1G; got {sizes!r}")
            return out
    except UnitError as exc:
        raise InputError("sizes", str(exc)) from None
    bounds = []
    for flag, text in (("min_bytes", min_bytes), ("max_bytes", max_bytes)):
        try:
            bounds.append(int(parse_message_size(text)))
        except UnitError as exc:
            raise InputError(flag, str(exc)) from None
    lo, hi = bounds
    if lo <= 0 or hi < lo:
        raise InputError("min_bytes", f"need 1 <= --min-bytes <= --max-bytes, got {min_bytes!r} and {max_bytes!r}")
    if not math.isfinite(factor) or factor <= 1:
        raise InputError("factor", f"must be {FACTOR}, got {factor}")
    n = math.floor(math.log(hi / lo) / math.log(factor) + 1e-9) + 1
    if n > 10_000:
        raise InputError("factor", f"{n} sizes is too many; raise --factor or narrow the range")
    return [round(lo * factor**i) for i in range(n)]


@app.command()
def collective(
    op: Annotated[
        str | None,
        typer.Option(
            "--op",
            metavar="all_reduce|reduce_scatter|all_gather|broadcast|reduce|all_to_all|send_recv",
            help="The collective [default: all_reduce, or the compared run's].",
        ),
    ] = None,
    topology: TopologyOpt = "dgx-h100",
    ranks: Annotated[
        int | None,
        typer.Option(
            "--ranks",
            "-n",
            metavar="N",
            parser=whole("--ranks"),
            help="GPUs in the collective [default: 16, or the compared run's].",
        ),
    ] = None,
    min_bytes: Annotated[
        str, typer.Option("--min-bytes", metavar="SIZE", help="nccl-tests' -b: 8, 64K, 16M, 1G (binary).")
    ] = "8",
    max_bytes: Annotated[
        str, typer.Option("--max-bytes", metavar="SIZE", help="nccl-tests' -e: the largest size.")
    ] = "16G",
    factor: Annotated[
        float,
        typer.Option(
            "--factor",
            metavar="X",
            parser=number("--factor", FACTOR),
            help="nccl-tests' -f: size multiplier between rows.",
        ),
    ] = 2.0,
    sizes: Annotated[
        str | None, typer.Option("--sizes", metavar="SIZE,...", help="Explicit sizes, e.g. 64M,1G.")
    ] = None,
    algorithm: Annotated[
        str | None,
        typer.Option(
            "--algorithm",
            metavar="ring|tree|hierarchical|nvls|nvls_tree|collnet|pat",
            help="Force a collective algorithm (hierarchical is a what-if NCCL does not run) [default: NCCL's choice].",
        ),
    ] = None,
    protocol: Annotated[
        str | None,
        typer.Option(
            "--protocol",
            metavar="ll|ll128|simple",
            help="Force NCCL's protocol (NCCL_PROTO) [default: the compared run's, the topology's, or NCCL's choice].",
        ),
    ] = None,
    nvls: Annotated[
        str | None,
        typer.Option(
            "--nvls", metavar="on|off", help="NVLS/NVLSTree allowed (NCCL_NVLS_ENABLE) [default: the topology's]."
        ),
    ] = None,
    collnet: Annotated[
        str | None,
        typer.Option(
            "--collnet", metavar="on|off", help="CollNet/SHARP allowed (NCCL_COLLNET_ENABLE) [default: the topology's]."
        ),
    ] = None,
    compare: Annotated[
        Path | None, typer.Option("--compare", help="An nccl-tests log, -J JSON or CSV: adds measured time and error.")
    ] = None,
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
) -> None:
    """Predicted collective time in nccl-tests' vocabulary (size, time, algbw, busbw), optionally beside a real run."""
    from dpcost.accuracy import LAUNCH_PER_GPU, as_timed_by, launches_bound, sendrecv_per_peer
    from dpcost.catalog import load_measurements, load_topology
    from dpcost.engine.availability import ALGORITHMS, environment
    from dpcost.engine.collectives import CHAINS, PROTOCOLS
    from dpcost.engine.collectives import collective as run
    from dpcost.engine.p2p import POINT_TO_POINT, all_to_all_choice, send_recv_choice
    from dpcost.engine.prepare import check_dp
    from dpcost.nccl_tests import OPS
    from dpcost.render.collectives import collective_rows, collective_table

    topo = environment(load_topology(topology), _switch("nvls", nvls), _switch("collnet", collnet))
    if algorithm is not None and algorithm not in ALGORITHMS:
        raise InputError("algorithm", f"must be one of {', '.join(ALGORITHMS)}, got {algorithm!r}")
    if protocol is not None and protocol not in PROTOCOLS:
        raise InputError("protocol", f"must be one of {', '.join(PROTOCOLS)}, got {protocol!r}")
    measured: dict[tuple[str, int], dict[str, float]] = {}
    ops = [op or "all_reduce"]
    ranks_from, algorithm_from = "ranks", "algorithm"
    run_as: list[str] = []  # what the compared run's environment forced, as assumption lines
    nccl_algo = None  # the compared run's NCCL_ALGO, where it leaves NCCL several algorithms
    if compare is not None:
        if sizes is not None:
            raise InputError("sizes", "--compare takes its sizes from the measured file; give one or the other")
        m = load_measurements(str(compare))
        if ranks is None:
            if m.ranks is None:
                raise InputError(
                    "compare",
                    f"{compare.name}: the number of ranks is unknown (no '# Rank' lines): give --ranks, or add a line "
                    "'# ranks: N' to the file",
                )
            ranks, ranks_from = m.ranks, f"--compare {compare.name} (its ranks)"
        if op is not None and op not in m.ops:
            raise InputError("op", f"{compare.name} measures {', '.join(m.ops)}, not {op}")
        ops = [op] if op else list(m.ops)
        if algorithm is None and m.algorithm is not None:
            algorithm, algorithm_from = m.algorithm, f"--compare {compare.name} (its NCCL_ALGO)"
        if algorithm is None and m.nccl_algo is not None:
            nccl_algo, algorithm_from = m.nccl_algo, f"--compare {compare.name} (its NCCL_ALGO)"
        if protocol is None and m.protocol is not None:
            protocol = m.protocol
            run_as.append(f"protocol: {protocol} (--compare {compare.name} (its NCCL_PROTO))")
        if nvls is None and not m.nvls and topo.nvls:
            topo = environment(topo, nvls=False)
            run_as.append(f"NVLS off (--compare {compare.name} (its NCCL_NVLS_ENABLE=0))")
        for row in m.rows:
            measured.setdefault((row.op, row.size_bytes), {})[row.column] = row.time_us
        if m.gpus_per_node and m.gpus_per_node > topo.domain_size:
            raise InputError(
                "compare",
                f"{compare.name} has {m.gpus_per_node} GPUs per node, {topo.name}'s NVLink domains {topo.domain_size}",
            )
    if protocol is not None and not any(line.startswith("protocol:") for line in run_as):
        run_as.append(f"protocol: {protocol} (--protocol)")
    elif protocol is None and topo.protocol is not None:
        run_as.append(f"protocol: {topo.protocol} ({topo.name}'s protocol, its NCCL_PROTO)")
    if any(o not in OPS for o in ops):  # the ops an nccl-tests file may hold, all_to_all among them
        raise InputError("op", f"must be one of {', '.join(OPS)}, got {op!r}")
    grouped_ops = [o for o in POINT_TO_POINT if o in ops]
    if grouped_ops and algorithm is not None:
        raise InputError(
            algorithm_from,
            f"{grouped_ops[0]} runs as NCCL's grouped send/recv, which has no algorithm to force ({algorithm})",
        )
    if grouped_ops and any(line.startswith("protocol:") for line in run_as):
        run_as.append(f"{' and '.join(grouped_ops)}: NCCL's grouped send/recv, priced on Simple whatever the protocol")
    ranks = 16 if ranks is None else ranks
    check_dp(topo, ranks, where=ranks_from)
    if "send_recv" in ops and ranks < 2:
        raise InputError(ranks_from, f"send_recv sends from each rank to the next: give 2 ranks or more, got {ranks}")
    run_by = m if compare is not None else None  # nccl-tests' defaults without a compared run
    per_peer = sendrecv_per_peer(run_by, topo, ranks) if run_by is not None and "send_recv" in ops else None
    release = run_by.nccl_release if run_by is not None else None
    sendrecv_line = [_sendrecv_line(topo, ranks, per_peer, run_by)] if "send_recv" in ops else []
    choices = []
    for o in ops:
        wanted = (
            sorted(s for (mo, s) in measured if mo == o) if measured else _sizes(sizes, min_bytes, max_bytes, factor)
        )
        for size in wanted:
            try:
                if o == "all_to_all":
                    choice = all_to_all_choice(topo, ranks, size)
                elif o == "send_recv":
                    choice = send_recv_choice(topo, ranks, size, per_peer, release)
                else:
                    choice = run(topo, o, ranks, size, algorithm, protocol, nccl_algo)
            except ValueError as exc:
                raise InputError(algorithm_from, str(exc)) from None
            choices.append(as_timed_by(choice, run_by))
    rows = collective_rows(choices, measured or None)
    table = collective_table(rows)
    table.title = (
        f"{'/'.join(ops)} on {ranks} GPUs of {topo.name}"
        + (f" vs {compare.name}" if compare else "")
        + ": times in us, algbw and busbw in GB/s (nccl-tests' definitions)"
    )
    from dpcost.render.assumptions import common

    how = (
        f"forced {algorithm} ({algorithm_from})"
        if algorithm
        else "NCCL's fastest candidate for each size"
        + (f" among those NCCL_ALGO={nccl_algo} leaves ({algorithm_from})" if nccl_algo else "")
        + (
            f", except where the topology's tuner plugin ({topo.tuner_plugin}) picks the algorithm and protocol"
            if topo.tuner_plugin is not None and (protocol or topo.protocol) is None
            else ""
        )
    )
    emit(
        [table],
        fmt.value,
        lambda: [r.model_dump(mode="json") for r in rows],
        output=output,
        assumptions=lambda: [
            f"topology: {topo.name}, {topo.gpu.name}; {ranks} GPUs ({ranks_from})",
            f"algorithm: {how}",
            *run_as,
            *sendrecv_line,
            "busbw: nccl-tests' definition (doc/PERFORMANCE.md): algbw x 2(n-1)/n for all-reduce, x (n-1)/n for "
            + ("reduce-scatter, all-gather and all-to-all" if "all_to_all" in ops else "reduce-scatter and all-gather"),
            *(
                [
                    f"times as nccl-tests prints them: {compare.name} drives {run_by.gpus_per_thread} GPUs from one "
                    f"thread, whose launches take {run_by.gpus_per_thread} x {LAUNCH_PER_GPU * 1e6:.2f} us a call at "
                    "least (docs/sources/nccl-tuning.md h)"
                ]
                if run_by is not None and compare is not None and launches_bound(run_by)
                else []
            ),
            *(
                [
                    f"{' and '.join(o for o in ops if o in CHAINS)}: as nccl-tests times "
                    f"{run_by.iters if run_by else 20} calls issued back to back, which overlap along the chain while "
                    "one fits the LL FIFO between two ranks: each further call costs NCCL's base latency, one hop and "
                    "its bytes (docs/sources/nccl-tuning.md i); one call alone takes the chain's whole latency"
                ]
                if any(o in CHAINS for o in ops)
                else []
            ),
            *common(),
        ],
    )
