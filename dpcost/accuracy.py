"""Predictions set beside real nccl-tests measurements, and their error by message-size band.

The headline figure is the geometric mean of the relative error |predicted - measured| / measured over the
measured points of a band (out-of-place and in-place columns each count as a point), as analytical collective
simulators report it. Bands: 1 MiB <= size < 64 MiB, and size >= 64 MiB (SMALL_BAND, below 1 MiB, on request).

A prediction is what nccl-tests would print for the call (`nccl_tests_seconds`): the call's time, a chain's
(broadcast, reduce) as back-to-back calls overlap along it, or the host's launches when one thread drives several GPUs
and those take longer.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Sequence
from dataclasses import replace

from dpcost.engine.collectives import CollectiveChoice, CollectiveTime, bus_factor, fastest
from dpcost.engine.nccl_channels import peer_channels
from dpcost.engine.p2p import (
    MAX_P2P_PEERS_RELEASE,
    POINT_TO_POINT,
    SENDRECV_TESTS_RELEASE,
    all_to_all_choice,
    ring_send_recv,
    sendrecv_channels,
)
from dpcost.engine.placement import place
from dpcost.frozen import frozen
from dpcost.nccl_tests import Measurements
from dpcost.specs import TopologySpec

__all__ = [
    "BANDS",
    "DISTURBED_DROP",
    "LAUNCH_PER_GPU",
    "SMALL_BAND",
    "BandError",
    "Point",
    "as_run",
    "as_timed_by",
    "band_errors",
    "disturbance",
    "guess_topology",
    "launches_bound",
    "line_rate_points",
    "nccl_tests_seconds",
    "predict",
]

MIB = 2**20
BANDS = (("1-64 MiB", 1 * MIB, 64 * MIB), (">=64 MiB", 64 * MIB, math.inf))
SMALL_BAND = ("< 1 MiB", 0, 1 * MIB)
# Host time a thread spends per GPU it drives, per call: nccl-tests' -g G puts G GPUs in one thread, whose
# ncclGroupEnd launches each device's kernel in turn (nccl#347), so a call takes at least G launches and back-to-back
# iterations run no faster. The slope of nccl-tests#123's Ring times over -g 2..8 on one DGX A100
# (tests/reference/nccl/nccl-tests-123-gpus-per-thread.csv; docs/sources/nccl-tuning.md).
LAUNCH_PER_GPU = 3.96e-6
ERROR_FLOOR = 1e-4  # an exact hit counts as 0.01% so that the geometric mean stays defined
# A run is disturbed where doubling the message (at >= 64 KiB) cuts its time to this share or less: a collective
# cannot move twice the bytes in much less time, so something else (a noisy neighbour, a cold path) set the smaller
# call's time. Set between the two groups of public runs in tests/reference/: the lowest ratio of the rest is 0.72
# (an algorithm or protocol switch), that of the four whose headers or rows show noise is 0.30-0.57.
DISTURBED_DROP = 0.65


@frozen
class Point:
    op: str
    size_bytes: int
    column: str
    measured_us: float
    predicted_us: float
    algorithm: str

    @property
    def error(self) -> float:
        """Signed relative error of the prediction."""
        return self.predicted_us / self.measured_us - 1


@frozen
class BandError:
    band: str
    points: int
    geomean: float
    median: float
    worst: float


def as_run(topology: TopologySpec, m: Measurements) -> TopologySpec:
    """The topology as the run saw it: without NVLink SHARP when the run turned it off (NCCL_NVLS_ENABLE=0)."""
    if m.nvls or topology.tiers[0].in_network_reduction is None:
        return topology
    tiers = [topology.tiers[0].model_copy(update={"in_network_reduction": None}), *topology.tiers[1:]]
    return topology.model_copy(update={"tiers": tiers})


def nccl_tests_seconds(
    call: CollectiveTime, m: Measurements | None = None, launch_per_gpu: float = LAUNCH_PER_GPU
) -> float:
    """What nccl-tests prints for one call of run `m` (its defaults without one). Each rank issues its `iters`
    calls back to back, with no barrier between them, and prints their mean time, averaged over the ranks
    (src/common.cu BenchTime; -a 1 by default). A chain's calls (Ring broadcast and reduce) overlap along it: a
    rank forwards one call while the ranks after it still take the one before, so each further call adds only its
    period (CollectiveTime.period_seconds), and the first call's latency beyond it, its ranks finishing one hop
    after another, averages half the chain's. Then the host's launches on
    the GPUs one thread drives (LAUNCH_PER_GPU x nGpus), where those take longer: the host launches the next call
    while one runs, so the longer of the two sets the pace. Under CUDA graphs (-G) one graph launch covers many
    calls, and the launches are left out."""
    seconds = call.seconds
    if call.period_seconds:
        iters = m.iters if m is not None else 20
        seconds = call.period_seconds + (call.seconds - call.period_seconds) / (2 * iters)
    if m is None or not launches_bound(m):
        return seconds
    return max(seconds, m.gpus_per_thread * launch_per_gpu)


def as_timed_by(choice: CollectiveChoice, m: Measurements | None = None) -> CollectiveChoice:
    """A call's prediction with every algorithm's time as nccl-tests would print it for run `m` (its defaults
    without one)."""

    def timed(c: CollectiveTime) -> CollectiveTime:
        return replace(c, seconds=nccl_tests_seconds(c, m))

    return replace(choice, best=timed(choice.best), candidates=tuple(timed(c) for c in choice.candidates))


def launches_bound(m: Measurements) -> bool:
    """Whether nccl-tests' host launches can set this run's times: one thread drives several GPUs, without CUDA
    graphs."""
    return m.gpus_per_thread > 1 and not m.cuda_graphs


def predict(
    m: Measurements, topology: TopologySpec, algorithm: str | None = None, launch_per_gpu: float = LAUNCH_PER_GPU
) -> list[Point]:
    """Predict every measured row with the run's ranks and, if the file says it set them, its algorithm (or the
    algorithms NCCL_ALGO leaves) and protocol (NCCL_PROTO) or NVLS off (NCCL_NVLS_ENABLE=0), as nccl-tests times it
    (nccl_tests_seconds)."""
    if m.ranks is None:
        raise ValueError(f"{m.name}: the number of ranks is unknown")
    forced = algorithm or m.algorithm
    topology = as_run(topology, m)
    cache: dict[tuple[str, int], tuple[float, str]] = {}
    out = []
    for row in m.rows:
        key = (row.op, row.size_bytes)
        if key not in cache:
            if row.op == "all_to_all":  # grouped send/recv: NCCL_ALGO does not apply
                best = all_to_all_choice(topology, m.ranks, row.size_bytes).best
            elif row.op == "send_recv":
                if m.ranks < 2:
                    raise ValueError(
                        f"{m.name}: sendrecv_perf on 1 rank sends to itself; dpcost prices 2 ranks or more"
                    )
                per_peer = sendrecv_per_peer(m, topology, m.ranks)
                best = ring_send_recv(topology, m.ranks, row.size_bytes, per_peer, m.nccl_release)
            else:
                best = fastest(topology, row.op, m.ranks, row.size_bytes, forced, m.protocol, m.nccl_algo)
            cache[key] = (
                nccl_tests_seconds(best, m, launch_per_gpu) * 1e6,
                f"{best.algorithm}/{best.protocol}",
            )
        us, alg = cache[key]
        out.append(Point(row.op, row.size_bytes, row.column, row.time_us, us, alg))
    return out


def sendrecv_per_peer(m: Measurements, topology: TopologySpec, ranks: int) -> int | None:
    """The channels per peer run `m`'s sendrecv ran on over `ranks` ranks: as its NCCL_DEBUG=INFO log prints them;
    else by the NCCL release it names (nccl_channels.peer_channels: two per network peer before 2.29; the ranks'
    rounds of 8 peers in 2.29, and in later releases unless nccl-tests 2.18.3 or later, built against them, set
    maxP2pPeers to 2); None for a run that names neither (NCCL 2.30's, with nccl-tests' maxP2pPeers of 2:
    p2p.ring_send_recv)."""
    if m.p2p_per_peer is not None:
        return m.p2p_per_peer
    if m.nccl_release is None:
        return None
    comm = place(topology, ranks)
    headers = m.headers_release or m.nccl_release
    tests = m.tests_release is not None and m.tests_release >= SENDRECV_TESTS_RELEASE
    if tests and min(headers, m.nccl_release) >= MAX_P2P_PEERS_RELEASE:
        return sendrecv_channels(topology, comm)
    return peer_channels(topology, comm, release=m.nccl_release)


def disturbance(m: Measurements) -> str:
    """Why a run's times cannot be those of an undisturbed collective, or "" (DISTURBED_DROP)."""
    for op in m.ops:
        for column in dict.fromkeys(r.column for r in m.rows):
            times = {r.size_bytes: r.time_us for r in m.rows if r.op == op and r.column == column}
            for size, t in sorted(times.items()):
                doubled = times.get(2 * size)
                if size >= 64 * 1024 and doubled is not None and doubled <= DISTURBED_DROP * t:
                    return f"{op} {column}: {2 * size} B took {doubled / t:.2f}x the time of {size} B"
    return ""


def line_rate_points(m: Measurements, topology: TopologySpec) -> list[Point]:
    """The naive figure: nccl-tests' bus bytes at the line rate, no latency. Inside one NVLink domain the rate is
    NVLink's per GPU; across domains, every GPU's NIC at its line rate carries the ring (one ring per rail), up to
    NVLink's; an all-to-all's and a send/recv's bytes leave through each GPU's own NIC, so their rate there is one
    NIC's. busbw = line rate, the number a cluster is sold on."""
    if m.ranks is None:
        raise ValueError(f"{m.name}: the number of ranks is unknown")
    nvlink = topology.tiers[0]
    ppn = min(m.ranks, nvlink.size or m.ranks)
    across = m.ranks > ppn and len(topology.tiers) > 1
    rates = {"ring": nvlink.bandwidth, "p2p": nvlink.bandwidth}
    if across:
        nic = topology.tiers[1].bandwidth
        rates = {"ring": min(nvlink.bandwidth, ppn * nic), "p2p": nic}
    out = []
    for row in m.rows:
        rate = rates["p2p" if row.op in POINT_TO_POINT else "ring"]
        seconds = bus_factor(row.op, m.ranks) * row.size_bytes / rate
        out.append(Point(row.op, row.size_bytes, row.column, row.time_us, max(seconds * 1e6, 1e-3), "line rate"))
    return out


def band_errors(points: Sequence[Point], bands: Sequence[tuple[str, float, float]] = BANDS) -> list[BandError]:
    out = []
    for name, lo, hi in bands:
        errors = [abs(p.error) for p in points if lo <= p.size_bytes < hi]
        if not errors:
            continue
        geo = math.exp(statistics.fmean(math.log(max(e, ERROR_FLOOR)) for e in errors))
        out.append(BandError(name, len(errors), geo, statistics.median(errors), max(errors)))
    return out


_GUESSES = (  # first match wins: the more specific name first
    ("gb300", "gb300-nvl72"),
    ("gb200", "gb200-nvl72"),
    ("b300", "dgx-b300"),
    ("b200", "dgx-b200"),
    ("h200", "hgx-h200"),
    ("h800", "hgx-h800"),
    ("h100", "dgx-h100"),
    (r"a100\S*40gb", "dgx-a100-40gb"),  # A100-SXM4-40GB, as nvidia-smi and nccl-tests name it
    ("a100", "dgx-a100"),
)


def guess_topology(m: Measurements) -> str | None:
    """The catalog topology for a run: the file's `# dpcost-topology:` line, else its GPU name or file name."""
    if m.topology:
        return m.topology
    text = f"{m.device or ''} {m.name}".lower()
    for needle, name in _GUESSES:
        if re.search(needle, text):
            return name
    return None
