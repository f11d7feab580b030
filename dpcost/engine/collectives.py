"""Collective time on a tiered fabric: alpha-beta costs per algorithm and protocol, the fastest one chosen.

The model is NCCL's own (src/graph/tuning.cc; ../shared/reference/nccl-tuner.md): for each algorithm and
protocol, time = call overhead + base latency + per-step latencies + bytes / bandwidth, and the fastest is
chosen. What dpcost adds is the topology: every tier has its own per-GPU bandwidth (after efficiency and
oversubscription) and its own step latency, and each algorithm puts a known number of bytes on each tier.

Bandwidth terms (N ranks, S bytes; Patarasuk & Yuan 2009 for the ring, NCCL for tree/NVLS/CollNet):
- ring: every one of the ring's N hops carries V = 2(N-1)/N * S (all-reduce), (N-1)/N * S (reduce-scatter,
  all-gather) or S (broadcast, reduce). Hops that leave a tier-k domain share the tier-k ports of all N
  GPUs (one ring per rail), so tier k carries hops_k / N * V per GPU; the tiers work as one pipeline and the
  slowest sets the time.
- tree (all-reduce): a chain inside each NVLink domain (2S per GPU) pipelined with a double binary tree
  across domains that moves 2(D-1)/D * S per domain over its g rails; NCCL's 0.92 tree factor.
- hierarchical: reduce-scatter inside the domain, all-reduce of S/g across domains (one ring per rail),
  all-gather back; recursively for every tier. Phases run one after the other.
- nvls: NVLink SHARP inside one NVSwitch domain: each GPU sends and receives (1 + 1/N) * S.
- nvls_tree: NVLS inside domains pipelined with the tree across them (NCCL's NVLSTree).
- collnet: SHARP on the fabric: each rail sends S/g once and gets the reduced S/g back, pipelined with a
  reduce-scatter/all-gather inside the domain (NCCL's CollNet).

Protocols: Simple (full bandwidth), LL128 (x0.92), LL (half the bandwidth and at most NCCL's llMaxBw bus
bandwidth for the GPU generation and node count), each with its own per-step latency from the tier.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from dpcost.specs import TierSpec, TopologySpec

__all__ = [
    "ALGORITHMS",
    "OPS",
    "PROTOCOLS",
    "CollectiveChoice",
    "CollectiveTime",
    "TierTraffic",
    "algorithms_for",
    "bus_factor",
    "collective",
    "collective_time",
]

Op = Literal["all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce"]
Protocol = Literal["ll", "ll128", "simple"]
OPS: tuple[Op, ...] = ("all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce")
PROTOCOLS: tuple[Protocol, ...] = ("ll", "ll128", "simple")
ALGORITHMS = ("ring", "tree", "hierarchical", "nvls", "nvls_tree", "collnet")

# NCCL tuning constants (src/graph/tuning.cc, ncclTunerConstantsDefaults; ../shared/reference/nccl-tuner.md).
BASE_LATENCY = {  # seconds per call, by algorithm family and protocol
    "ring": {"ll": 6.6e-6, "ll128": 14.0e-6, "simple": 8.4e-6},
    "tree": {"ll": 6.8e-6, "ll128": 14.0e-6, "simple": 8.4e-6},
}
PROTOCOL_BANDWIDTH = {"ll": 0.5, "ll128": 0.92, "simple": 1.0}
TREE_BANDWIDTH = 0.92  # NCCL's tree all-reduce correction
# llMaxBws: the most bus bandwidth LL reaches, by GPU generation, for 1, 2 and >= 4 nodes (bytes/s).
LL_MAX_BUSBW = {
    "ampere": (87.7e9, 22.5e9, 19.0e9),
    "hopper": (141.0e9, 45.0e9, 35.0e9),
    "blackwell": (282.0e9, 90.0e9, 70.0e9),
}


@dataclass(frozen=True)
class TierTraffic:
    """What one algorithm puts on one tier: bytes each GPU sends over that tier's links, and their time."""

    tier: str
    bytes_per_gpu: float
    seconds: float
    nested: bool = False  # bytes that also crossed a lower network tier (a spine hop passes the NIC too)


@dataclass(frozen=True)
class CollectiveTime:
    op: str
    algorithm: str
    protocol: str
    ranks: int
    size_bytes: float
    seconds: float
    latency_seconds: float  # call overhead + base + per-step latencies
    bandwidth_seconds: float  # the bytes-over-bandwidth part
    tiers: tuple[TierTraffic, ...]
    calls: int = 1

    @property
    def algbw(self) -> float:
        """nccl-tests' algorithm bandwidth: size / time (bytes/s)."""
        return self.size_bytes / self.seconds if self.seconds > 0 else 0.0

    @property
    def busbw(self) -> float:
        """nccl-tests' bus bandwidth (doc/PERFORMANCE.md): algbw times the op's bus factor."""
        return self.algbw * bus_factor(self.op, self.ranks)

    @property
    def bytes_sent_per_gpu(self) -> float:
        """What each GPU sends: NVLink plus its NIC; upper network tiers carry those same bytes again."""
        return sum(t.bytes_per_gpu for t in self.tiers if not t.nested)


@dataclass(frozen=True)
class CollectiveChoice:
    """The fastest algorithm, as NCCL would pick it, with the best time of every other one beside it."""

    best: CollectiveTime
    candidates: tuple[CollectiveTime, ...]  # one per applicable algorithm, fastest first


def bus_factor(op: str, ranks: int) -> float:
    """nccl-tests: busbw = algbw x 2(n-1)/n (all-reduce), (n-1)/n (reduce-scatter, all-gather), 1 otherwise."""
    if ranks <= 1:
        return 0.0 if op in ("all_reduce", "reduce_scatter", "all_gather") else 1.0
    if op == "all_reduce":
        return 2 * (ranks - 1) / ranks
    if op in ("reduce_scatter", "all_gather"):
        return (ranks - 1) / ranks
    return 1.0


# ------------------------------------------------------------------------------------------------ placement


@dataclass(frozen=True)
class _Level:
    """A tier as one collective sees it: `domain` ranks share one domain of it (the last may be unbounded)."""

    tier: TierSpec
    domain: float


def _levels(topology: TopologySpec, ranks: int) -> list[_Level]:
    """The tiers a collective over the first `ranks` GPUs spans, lowest first, up to the one that holds them all."""
    out: list[_Level] = []
    for tier in topology.tiers:
        domain = float(tier.size) if tier.size is not None else math.inf
        out.append(_Level(tier, domain))
        if domain >= ranks:
            break
    return out


def _domains(ranks: int, domain: float) -> int:
    return 1 if domain >= ranks else math.ceil(ranks / domain)


def _steps_per_level(ranks: int, levels: Sequence[_Level], per_rank: int) -> list[int]:
    """Ring steps whose hop crosses exactly level k: NCCL's nsteps split into intra/inter, for every tier.

    With per_rank = 2 (all-reduce) there are 2(N-1) steps, 2(D_k - 1) of them leaving a tier-k domain.
    """
    crossing = [per_rank * (_domains(ranks, lv.domain) - 1) for lv in levels]
    steps = [per_rank * (ranks - 1) - crossing[0]]
    steps += [crossing[k - 1] - crossing[k] for k in range(1, len(levels))]
    return steps


def _hop_share(ranks: int, levels: Sequence[_Level]) -> list[float]:
    """Fraction of the ring's N hops that use each tier's links (network tiers nest: a hop that leaves a
    scalable unit also passes its NIC; the NVLink tier carries only the hops inside a domain)."""
    leaving = [_domains(ranks, lv.domain) if _domains(ranks, lv.domain) > 1 else 0 for lv in levels]
    share = [(ranks - leaving[0]) / ranks]
    share += [leaving[k - 1] / ranks for k in range(1, len(levels))]
    return share


def _ll_cap(topology: TopologySpec, ranks: int) -> float:
    nodes = _domains(ranks, float(topology.domain_size))
    caps = LL_MAX_BUSBW[topology.gpu.arch]
    return caps[0] if nodes == 1 else caps[1] if nodes == 2 else caps[2]


def _with_protocol(
    op: str, ranks: int, size: float, proto: Protocol, tiers: list[TierTraffic], ll_cap: float
) -> tuple[float, list[TierTraffic]]:
    """Scale a Simple-protocol bandwidth time to `proto`; LL is also held under its bus-bandwidth cap."""
    factor = PROTOCOL_BANDWIDTH[proto]
    scaled = [replace(t, seconds=t.seconds / factor) for t in tiers]
    seconds = max((t.seconds for t in scaled), default=0.0)
    if proto == "ll":
        seconds = max(seconds, bus_factor(op, ranks) * size / ll_cap)
    return seconds, scaled


# ------------------------------------------------------------------------------------------------ algorithms


def _ring_traffic(
    op: str, ranks: int, size: float, levels: Sequence[_Level], first_network: int = 1
) -> list[TierTraffic]:
    """Per-tier bytes of a ring; levels above `first_network` nest inside it (their bytes crossed it too)."""
    hop_bytes = bus_factor(op, ranks) * size
    return [
        TierTraffic(lv.tier.name, share * hop_bytes, share * hop_bytes / lv.tier.effective_bandwidth, k > first_network)
        for k, (lv, share) in enumerate(zip(levels, _hop_share(ranks, levels), strict=True))
        if share > 0
    ]


def _ring(
    topology: TopologySpec, op: str, ranks: int, size: float, levels: Sequence[_Level], proto: Protocol
) -> CollectiveTime:
    """Ring (pipelined chain for broadcast/reduce): NCCL's latency base + (nsteps - nInter) intra + nInter inter."""
    per_rank = 2 if op == "all_reduce" else 1
    steps = _steps_per_level(ranks, levels, per_rank)
    latency = topology.call_overhead + BASE_LATENCY["ring"][proto]
    latency += sum(n * getattr(lv.tier.latency, proto) for n, lv in zip(steps, levels, strict=True))
    bw_seconds, tiers = _with_protocol(
        op, ranks, size, proto, _ring_traffic(op, ranks, size, levels), _ll_cap(topology, ranks)
    )
    return CollectiveTime(op, "ring", proto, ranks, size, latency + bw_seconds, latency, bw_seconds, tuple(tiers))


def _rail_levels(levels: Sequence[_Level]) -> list[_Level]:
    """The tiers above the NVLink domain, seen by one rail (one GPU per domain)."""
    g = levels[0].domain
    return [_Level(lv.tier, lv.domain / g) for lv in levels[1:]]


def _tree_depth_latency(domains: int, levels: Sequence[_Level], proto: Protocol) -> float:
    """Sum over network tiers of log2(children) x that tier's step latency: one way down a binary tree."""
    total = 0.0
    below = domains
    for lv in levels:
        above = _domains(domains, lv.domain)
        children = below / above
        if children > 1:
            total += math.ceil(math.log2(children)) * getattr(lv.tier.latency, proto)
        below = above
    return total


def _inter_domain(size: float, domains: int, g: int, levels: Sequence[_Level]) -> list[TierTraffic]:
    """All-reduce volume across domains on g rails: 2(D-1)/D x S/g per GPU, spread over tiers like a ring."""
    rail = _rail_levels(levels)
    return _ring_traffic("all_reduce", domains, size / g, rail, first_network=0)


def _tree(
    topology: TopologySpec, ranks: int, size: float, levels: Sequence[_Level], proto: Protocol, nvls: bool
) -> CollectiveTime:
    """NCCL Tree (chain in the domain + double binary tree across) or NVLSTree (NVLS in the domain)."""
    g = int(min(ranks, levels[0].domain))
    domains = _domains(ranks, levels[0].domain)
    first = levels[0].tier
    traffic: list[TierTraffic] = []
    if nvls:
        assert first.in_network_reduction is not None
        intra_bytes = (1 + 1 / g) * size
        intra_bw = first.bandwidth * first.in_network_reduction.efficiency
        traffic.append(TierTraffic(first.name, intra_bytes, intra_bytes / intra_bw))
        latency = topology.call_overhead + _nvls_latency(first)
    else:
        if g > 1:
            intra_bytes = 2 * size
            traffic.append(TierTraffic(first.name, intra_bytes, intra_bytes / first.effective_bandwidth))
        latency = topology.call_overhead + BASE_LATENCY["tree"][proto] + 2 * (g - 1) * getattr(first.latency, proto)
    if domains > 1:
        traffic += _inter_domain(size, domains, g, levels)
        latency += 2 * _tree_depth_latency(domains, _rail_levels(levels), "simple" if nvls else proto)
    if nvls:
        bw_seconds = max(t.seconds for t in traffic)
    else:
        traffic = [replace(t, seconds=t.seconds / TREE_BANDWIDTH) for t in traffic]
        bw_seconds, traffic = _with_protocol("all_reduce", ranks, size, proto, traffic, _ll_cap(topology, ranks))
    name = "nvls_tree" if nvls and domains > 1 else "nvls" if nvls else "tree"
    protocol = "simple" if nvls else proto
    return CollectiveTime(
        "all_reduce", name, protocol, ranks, size, latency + bw_seconds, latency, bw_seconds, tuple(traffic)
    )


def _nvls_latency(tier: TierSpec) -> float:
    """NVLS adds a multicast round trip through the NVSwitch (NCCL: 25 us per NVLS hop on NVLink)."""
    assert tier.in_network_reduction is not None
    return tier.in_network_reduction.latency


def _collnet(topology: TopologySpec, ranks: int, size: float, levels: Sequence[_Level]) -> CollectiveTime:
    """NCCL CollNet with SHARP: reduce-scatter/all-gather in the domain, one SHARP all-reduce of S/g per rail."""
    g = int(min(ranks, levels[0].domain))
    first = levels[0].tier
    traffic: list[TierTraffic] = []
    if g > 1:
        intra = 2 * (g - 1) / g * size
        traffic.append(TierTraffic(first.name, intra, intra / first.effective_bandwidth))
    latency = topology.call_overhead + BASE_LATENCY["ring"]["simple"] + 2 * (g - 1) * first.latency.simple
    sharp_latency = 0.0
    for k, lv in enumerate(levels[1:]):
        reduction = lv.tier.in_network_reduction
        assert reduction is not None
        rail_bytes = size / g
        bw = lv.tier.bandwidth * reduction.efficiency / lv.tier.oversubscription
        traffic.append(TierTraffic(lv.tier.name, rail_bytes, rail_bytes / bw, nested=k > 0))
        sharp_latency = max(sharp_latency, reduction.latency)
    latency += sharp_latency
    bw_seconds = max(t.seconds for t in traffic)
    return CollectiveTime(
        "all_reduce", "collnet", "simple", ranks, size, latency + bw_seconds, latency, bw_seconds, tuple(traffic)
    )


def _best_ring(topology: TopologySpec, op: str, ranks: int, size: float, levels: Sequence[_Level]) -> CollectiveTime:
    return min((_ring(topology, op, ranks, size, levels, p) for p in PROTOCOLS), key=lambda c: c.seconds)


def _hierarchical(topology: TopologySpec, op: str, ranks: int, size: float, levels: Sequence[_Level]) -> CollectiveTime:
    """Reduce-scatter in the domain, the op across domains on S/g, all-gather in the domain; recursive.

    One tier: the plain ring. Every phase is its own NCCL call with its own best protocol."""
    if len(levels) == 1:
        return replace(_best_ring(topology, op, ranks, size, levels), algorithm="hierarchical")
    g = int(levels[0].domain)
    domains = _domains(ranks, levels[0].domain)
    inner_levels = [_Level(lv.tier, lv.domain / g) for lv in levels[1:]]
    inside = [levels[0]]
    phases: list[CollectiveTime] = []
    if op == "all_reduce":
        phases.append(_best_ring(topology, "reduce_scatter", g, size, inside))
        phases.append(_hierarchical(topology, "all_reduce", domains, size / g, inner_levels))
        phases.append(_best_ring(topology, "all_gather", g, size, inside))
    elif op == "reduce_scatter":
        phases.append(_best_ring(topology, "reduce_scatter", g, size, inside))
        phases.append(_hierarchical(topology, "reduce_scatter", domains, size / g, inner_levels))
    elif op == "all_gather":
        phases.append(_hierarchical(topology, "all_gather", domains, size / g, inner_levels))
        phases.append(_best_ring(topology, "all_gather", g, size, inside))
    else:
        raise ValueError(f"no hierarchical {op}")
    merged: dict[str, TierTraffic] = {}
    for phase in phases:
        for t in phase.tiers:
            old = merged.get(t.tier)
            merged[t.tier] = (
                t if old is None else TierTraffic(t.tier, old.bytes_per_gpu + t.bytes_per_gpu, old.seconds + t.seconds)
            )
    protocols = "/".join(dict.fromkeys(p.protocol for p in phases))
    return CollectiveTime(
        op,
        "hierarchical",
        protocols,
        ranks,
        size,
        sum(p.seconds for p in phases),
        sum(p.latency_seconds for p in phases),
        sum(p.bandwidth_seconds for p in phases),
        tuple(merged.values()),
        calls=sum(p.calls for p in phases),
    )


# ------------------------------------------------------------------------------------------------ public


def algorithms_for(topology: TopologySpec, op: str, ranks: int) -> tuple[str, ...]:
    """The algorithms that exist for `op` on `ranks` GPUs of this topology (NCCL's availability rules)."""
    levels = _levels(topology, ranks)
    if op not in ("all_reduce", "reduce_scatter", "all_gather"):
        return ("ring",)
    if op != "all_reduce":
        return ("ring", "hierarchical") if len(levels) > 1 else ("ring",)
    out = ["ring", "tree"]
    if len(levels) > 1:
        out.append("hierarchical")
    first = levels[0].tier.in_network_reduction
    if first is not None and first.kind == "nvls":
        out.append("nvls_tree" if len(levels) > 1 else "nvls")
    if len(levels) > 1 and all(lv.tier.in_network_reduction is not None for lv in levels[1:]):
        out.append("collnet")
    return tuple(out)


def collective_time(topology: TopologySpec, op: str, ranks: int, size: float, algorithm: str) -> CollectiveTime:
    """The time of one algorithm (its best protocol) for `op` of `size` bytes over `ranks` GPUs."""
    if op not in OPS:
        raise ValueError(f"unknown op {op!r}")
    if ranks < 1 or size < 0:
        raise ValueError("ranks must be >= 1 and size >= 0")
    if ranks == 1 or size == 0:
        return CollectiveTime(op, "none", "-", ranks, size, 0.0, 0.0, 0.0, ())
    available = algorithms_for(topology, op, ranks)
    if algorithm == "hierarchical" and op in ("all_reduce", "reduce_scatter", "all_gather"):
        available += ("hierarchical",)  # on one tier it is the ring; algorithms_for leaves the duplicate out
    if algorithm not in available:
        raise ValueError(f"{algorithm} is not available for {op} on {ranks} GPUs of {topology.name}")
    levels = _levels(topology, ranks)
    if algorithm == "ring":
        return _best_ring(topology, op, ranks, size, levels)
    if algorithm == "hierarchical":
        return _hierarchical(topology, op, ranks, size, levels)
    if algorithm == "tree":
        return min((_tree(topology, ranks, size, levels, p, nvls=False) for p in PROTOCOLS), key=lambda c: c.seconds)
    if algorithm in ("nvls", "nvls_tree"):
        return _tree(topology, ranks, size, levels, "simple", nvls=True)
    return _collnet(topology, ranks, size, levels)


def collective(
    topology: TopologySpec, op: str, ranks: int, size: float, algorithm: str | None = None
) -> CollectiveChoice:
    """Every applicable algorithm's time; the fastest is `best` unless `algorithm` forces one."""
    if ranks == 1 or size == 0:
        none = collective_time(topology, op, ranks, size, "ring")
        return CollectiveChoice(none, (none,))
    candidates = sorted(
        (collective_time(topology, op, ranks, size, a) for a in algorithms_for(topology, op, ranks)),
        key=lambda c: c.seconds,
    )
    best = candidates[0] if algorithm is None else collective_time(topology, op, ranks, size, algorithm)
    return CollectiveChoice(best, tuple(candidates))
