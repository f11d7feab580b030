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
    "check_ranks",
    "collective",
    "collective_time",
]

Op = Literal["all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce"]
Protocol = Literal["ll", "ll128", "simple"]
OPS: tuple[Op, ...] = ("all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce")
PROTOCOLS: tuple[Protocol, ...] = ("ll", "ll128", "simple")
ALGORITHMS = ("ring", "tree", "hierarchical", "nvls", "nvls_tree", "collnet")
MAX_RANKS = 10_000_000

# NCCL tuning constants (src/graph/tuning.cc and tuning.h, ncclTunerConstantsDefaults;
# ../shared/reference/nccl-tuner.md). Per-step latencies live in each topology tier (ring and tree tables).
BASE_LATENCY = {  # seconds per call, by algorithm family and protocol
    "ring": {"ll": 6.6e-6, "ll128": 14.0e-6, "simple": 8.4e-6},
    "tree": {"ll": 6.8e-6, "ll128": 14.0e-6, "simple": 8.4e-6},
}
# Bus bandwidth kept by each protocol: ring LL halves it; tree LL keeps 1/3.8; LL128 0.92 (7/9 for a tree on
# one node); Simple all of it.
PROTOCOL_BANDWIDTH = {
    "ring": {"ll": 0.5, "ll128": 0.92, "simple": 1.0},
    "tree": {"ll": 1 / 3.8, "ll128": 0.92, "simple": 1.0},
}
TREE_LL128_ONE_NODE = 7 / 9
TREE_BANDWIDTH = 0.92  # NCCL's tree all-reduce correction
# llMaxBws: the most bus bandwidth LL reaches (bytes/s). On one node NCCL looks at the GPU generation; across
# nodes at the host CPU (Intel and others: 2 nodes, >= 3 nodes; AMD: its own, lower, row).
LL_MAX_BUSBW_ONE_NODE = {"ampere": 87.7e9, "hopper": 141.0e9, "blackwell": 282.0e9}
LL_MAX_BUSBW_NODES = {"intel": (39.0e9, 20.4e9), "arm": (39.0e9, 20.4e9), "amd": (22.5e9, 19.0e9)}
# treeCorrectionFactor: "Trees are not perfectly sticking to the model for medium sizes"; a bandwidth factor
# per protocol for sizes 64 B, 128 B, ... 256 MiB (index log2(size / 64)); 1 elsewhere.
# fmt: off
TREE_CORRECTION = {
    "ll":     (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0),
    "ll128":  (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .5, .6, .6, .7, .7, .8, .9, .9, .92, .92),
    "simple": (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9),
}
# fmt: on


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
    """A tier as one collective sees it: `domain` ranks share one domain of it (the last may be unbounded).

    `scale_up` marks the NVLink tier seen from the GPUs; every other level is reached through the NIC."""

    tier: TierSpec
    domain: float
    scale_up: bool = False


def _levels(topology: TopologySpec, ranks: int) -> list[_Level]:
    """The tiers a collective over the first `ranks` GPUs spans, lowest first, up to the one that holds them all."""
    out: list[_Level] = []
    for i, tier in enumerate(topology.tiers):
        domain = float(tier.size) if tier.size is not None else math.inf
        out.append(_Level(tier, domain, scale_up=i == 0))
        if domain >= ranks:
            break
    return out


def _rail_levels(levels: Sequence[_Level]) -> list[_Level]:
    """The tiers above the NVLink domain, seen by one rail: one rank per domain, domains counted in domains."""
    g = levels[0].domain
    return [_Level(lv.tier, lv.domain / g) for lv in levels[1:]]


def _domains(ranks: int, domain: float) -> int:
    return 1 if domain >= ranks else math.ceil(ranks / domain)


def _evenly_filled(ranks: int, levels: Sequence[_Level]) -> bool:
    """Every spanned domain below the top one is full (what the hierarchical phases assume)."""
    return all(ranks % lv.domain == 0 for lv in levels[:-1])


def _steps_per_level(ranks: int, levels: Sequence[_Level], per_rank: int) -> list[int]:
    """Ring steps whose hop crosses exactly level k: NCCL's nsteps split into intra/inter, for every tier.

    With per_rank = 2 (all-reduce) there are 2(N-1) steps, 2(D_k - 1) of them leaving a tier-k domain."""
    crossing = [per_rank * (_domains(ranks, lv.domain) - 1) for lv in levels]
    steps = [per_rank * (ranks - 1) - crossing[0]]
    steps += [crossing[k - 1] - crossing[k] for k in range(1, len(levels))]
    return steps


def _hop_share(ranks: int, levels: Sequence[_Level]) -> list[float]:
    """Fraction of a ring's N hops that use each level's links.

    The NVLink tier carries the hops that stay inside a domain. A network level carries every hop that leaves
    a domain of the level below it (a hop between scalable units passes the NICs and the leaf uplinks); seen
    from one rail, every hop crosses the first network level."""
    leaving = [_domains(ranks, lv.domain) if _domains(ranks, lv.domain) > 1 else 0 for lv in levels]
    first = (ranks - leaving[0]) / ranks if levels[0].scale_up else 1.0
    return [first] + [leaving[k - 1] / ranks for k in range(1, len(levels))]


def _nodes(ranks: int, levels: Sequence[_Level]) -> int:
    """How many NVLink domains (nodes) a collective spans: NCCL picks its LL cap by this."""
    return _domains(ranks, levels[0].domain) if levels[0].scale_up else ranks


def _ll_cap(topology: TopologySpec, nodes: int) -> float:
    if nodes == 1:
        return LL_MAX_BUSBW_ONE_NODE[topology.gpu.arch]
    two, more = LL_MAX_BUSBW_NODES[topology.host_cpu]
    return two if nodes == 2 else more


def _with_protocol(
    family: str, proto: Protocol, tiers: list[TierTraffic], bus_bytes: float, ll_cap: float, factor: float = 1.0
) -> tuple[float, list[TierTraffic]]:
    """Scale Simple-protocol tier times to `proto` (and an extra bandwidth `factor`); LL also stays under its
    bus-bandwidth cap: time >= bus bytes / llMaxBw."""
    keep = PROTOCOL_BANDWIDTH[family][proto] * factor
    scaled = [replace(t, seconds=t.seconds / keep) for t in tiers]
    seconds = max((t.seconds for t in scaled), default=0.0)
    if proto == "ll":
        seconds = max(seconds, bus_bytes / ll_cap)
    return seconds, scaled


# ------------------------------------------------------------------------------------------------ algorithms


def _ring_traffic(op: str, ranks: int, size: float, levels: Sequence[_Level]) -> list[TierTraffic]:
    """Per-level bytes of a ring. Levels above the first network level nest inside it (their bytes crossed it)."""
    hop_bytes = bus_factor(op, ranks) * size
    first_network = 1 if levels[0].scale_up else 0
    return [
        TierTraffic(lv.tier.name, share * hop_bytes, share * hop_bytes / lv.tier.effective_bandwidth, k > first_network)
        for k, (lv, share) in enumerate(zip(levels, _hop_share(ranks, levels), strict=True))
        if share > 0
    ]


def _ring(
    topology: TopologySpec,
    op: str,
    ranks: int,
    size: float,
    levels: Sequence[_Level],
    proto: Protocol,
    via: TierSpec | None = None,
) -> CollectiveTime:
    """Ring (pipelined chain for broadcast/reduce): NCCL's latency base + (nsteps - nInter) intra + nInter inter.

    `via`: a tier every hop also crosses (the NIC, for a phase that runs across scalable units)."""
    per_rank = 2 if op == "all_reduce" else 1
    steps = _steps_per_level(ranks, levels, per_rank)
    latency = topology.call_overhead + BASE_LATENCY["ring"][proto]
    latency += sum(n * lv.tier.step_latency(proto) for n, lv in zip(steps, levels, strict=True))
    traffic = _ring_traffic(op, ranks, size, levels)
    if via is not None and via is not levels[0].tier:
        carried = sum(t.bytes_per_gpu for t in traffic if not t.nested)
        traffic = [replace(t, nested=True) for t in traffic]
        traffic.insert(0, TierTraffic(via.name, carried, carried / via.effective_bandwidth))
    bus_bytes = bus_factor(op, ranks) * size
    bw_seconds, tiers = _with_protocol("ring", proto, traffic, bus_bytes, _ll_cap(topology, _nodes(ranks, levels)))
    return CollectiveTime(op, "ring", proto, ranks, size, latency + bw_seconds, latency, bw_seconds, tuple(tiers))


def _tree_depth_latency(domains: int, rail: Sequence[_Level], proto: Protocol) -> float:
    """One way down a binary tree over `domains`: at each network level, log2 of the most children any one
    domain of it holds, times that level's tree step latency."""
    total = 0.0
    below = 1.0  # size of the sub-domains, in NVLink domains
    for lv in rail:
        children = min(_domains(domains, below), lv.domain / below)
        if children > 1:
            total += math.ceil(math.log2(children) - 1e-9) * lv.tier.step_latency(proto, tree=True)
        below = lv.domain
        if below >= domains:
            break
    return total


def _tree_correction(size: float, proto: Protocol) -> float:
    index = int(math.log2(size / 64)) if size >= 64 else -1
    table = TREE_CORRECTION[proto]
    return table[index] if 0 <= index < len(table) else 1.0


def _tree(
    topology: TopologySpec, ranks: int, size: float, levels: Sequence[_Level], proto: Protocol, nvls: bool
) -> CollectiveTime:
    """NCCL Tree (chain in the domain + double binary tree across) or NVLSTree (NVLS in the domain).

    Inside the domain: a chain moves 2S per GPU; NVLS moves (1 + 1/g) S. Across domains, each of the g rails
    carries the all-reduce volume 2(D-1)/D x S/g through its NIC, spread over the network levels like a ring."""
    g = int(min(ranks, levels[0].domain))
    domains = _domains(ranks, levels[0].domain)
    first = levels[0].tier
    traffic: list[TierTraffic] = []
    if nvls:
        reduction = first.in_network_reduction
        assert reduction is not None  # algorithms_for offers NVLS only where the tier declares it
        intra_bytes = (1 + 1 / g) * size
        traffic.append(TierTraffic(first.name, intra_bytes, intra_bytes / (first.bandwidth * reduction.efficiency)))
        latency = topology.call_overhead + reduction.latency
    else:
        if g > 1:
            traffic.append(TierTraffic(first.name, 2 * size, 2 * size / first.effective_bandwidth))
        latency = topology.call_overhead + BASE_LATENCY["tree"][proto]
        latency += 2 * (g - 1) * first.step_latency(proto, tree=True)
    if domains > 1:
        rail = _rail_levels(levels)
        traffic += _ring_traffic("all_reduce", domains, size / g, rail)
        latency += 2 * _tree_depth_latency(domains, rail, "simple" if nvls else proto)
    if nvls:
        bw_seconds = max(t.seconds for t in traffic)
        name = "nvls_tree" if domains > 1 else "nvls"
        return CollectiveTime(
            "all_reduce", name, "simple", ranks, size, latency + bw_seconds, latency, bw_seconds, tuple(traffic)
        )
    factor = TREE_BANDWIDTH * _tree_correction(size, proto)
    if proto == "ll128" and domains == 1:
        factor *= TREE_LL128_ONE_NODE / PROTOCOL_BANDWIDTH["tree"]["ll128"]
    bw_seconds, traffic = _with_protocol("tree", proto, traffic, 2 * size, _ll_cap(topology, domains), factor)
    return CollectiveTime(
        "all_reduce", "tree", proto, ranks, size, latency + bw_seconds, latency, bw_seconds, tuple(traffic)
    )


def _collnet(topology: TopologySpec, ranks: int, size: float, levels: Sequence[_Level]) -> CollectiveTime:
    """NCCL CollNet with SHARP: a reduce-scatter/all-gather ring in the domain pipelined with one SHARP all-reduce
    per rail. Each NIC sends its S/g once; the switches reduce, so a level above carries one stream per rail per
    domain below it: D_(k-1) x S / N per GPU of its ports."""
    g = int(min(ranks, levels[0].domain))
    first = levels[0].tier
    traffic: list[TierTraffic] = []
    if g > 1:
        intra = 2 * (g - 1) / g * size
        traffic.append(TierTraffic(first.name, intra, intra / first.effective_bandwidth))
    sharp_latency = 0.0
    below = levels[0].domain
    for k, lv in enumerate(levels[1:]):
        reduction = lv.tier.in_network_reduction
        assert reduction is not None  # algorithms_for offers CollNet only where every network tier declares it
        per_gpu = size / g if k == 0 else _domains(ranks, below) * size / ranks
        bw = lv.tier.bandwidth * reduction.efficiency / lv.tier.oversubscription
        traffic.append(TierTraffic(lv.tier.name, per_gpu, per_gpu / bw, nested=k > 0))
        sharp_latency = max(sharp_latency, reduction.latency)
        below = lv.domain
    latency = topology.call_overhead + 2 * (g - 1) * first.latency.simple + sharp_latency
    bw_seconds = max(t.seconds for t in traffic)
    return CollectiveTime(
        "all_reduce", "collnet", "simple", ranks, size, latency + bw_seconds, latency, bw_seconds, tuple(traffic)
    )


def _best_ring(
    topology: TopologySpec, op: str, ranks: int, size: float, levels: Sequence[_Level], via: TierSpec | None = None
) -> CollectiveTime:
    return min((_ring(topology, op, ranks, size, levels, p, via) for p in PROTOCOLS), key=lambda c: c.seconds)


def _hierarchical(
    topology: TopologySpec, op: str, ranks: int, size: float, levels: Sequence[_Level], via: TierSpec | None = None
) -> CollectiveTime:
    """Reduce-scatter in the domain, the op across domains on S/g, all-gather in the domain; recursive.

    One tier: the plain ring. Every phase is its own NCCL call with its own best protocol; phases above the
    first network tier also cross the NICs (`via`)."""
    if len(levels) == 1:
        return replace(_best_ring(topology, op, ranks, size, levels, via), algorithm="hierarchical")
    g = int(levels[0].domain)
    domains = _domains(ranks, levels[0].domain)
    inner = [_Level(lv.tier, lv.domain / g) for lv in levels[1:]]
    inner_via = via or (levels[1].tier if levels[0].scale_up else levels[0].tier)
    inside = [levels[0]]
    phases: list[CollectiveTime] = []
    if op in ("all_reduce", "reduce_scatter"):
        phases.append(_best_ring(topology, "reduce_scatter", g, size, inside, via))
    phases.append(_hierarchical(topology, op, domains, size / g, inner, inner_via))
    if op in ("all_reduce", "all_gather"):
        phases.append(_best_ring(topology, "all_gather", g, size, inside, via))
    merged: dict[str, TierTraffic] = {}
    for phase in phases:
        for t in phase.tiers:
            old = merged.get(t.tier)
            merged[t.tier] = (
                t
                if old is None
                else TierTraffic(
                    t.tier, old.bytes_per_gpu + t.bytes_per_gpu, old.seconds + t.seconds, old.nested and t.nested
                )
            )
    return CollectiveTime(
        op,
        "hierarchical",
        "/".join(dict.fromkeys(p.protocol for p in phases)),
        ranks,
        size,
        sum(p.seconds for p in phases),
        sum(p.latency_seconds for p in phases),
        sum(p.bandwidth_seconds for p in phases),
        tuple(merged.values()),
        calls=sum(p.calls for p in phases),
    )


# ------------------------------------------------------------------------------------------------ public


def check_ranks(topology: TopologySpec, ranks: int) -> None:
    """Ranks this topology can hold: at most its size, and whole NVLink domains once it spans several."""
    if ranks < 1:
        raise ValueError(f"must be a positive number of GPUs, got {ranks}")
    if ranks > MAX_RANKS:
        raise ValueError(f"{ranks} GPUs is beyond {MAX_RANKS:,}, larger than any machine built")
    if topology.max_gpus is not None and ranks > topology.max_gpus:
        raise ValueError(f"{ranks} GPUs exceed {topology.name}'s {topology.max_gpus}")
    g = topology.domain_size
    if ranks > g and ranks % g:
        raise ValueError(
            f"{ranks} GPUs fill {topology.name}'s {g}-GPU NVLink domains unevenly; use <= {g} or a multiple of {g}"
        )


def algorithms_for(topology: TopologySpec, op: str, ranks: int) -> tuple[str, ...]:
    """The algorithms that exist for `op` on `ranks` GPUs of this topology (NCCL's availability rules; the
    hierarchical phases need every spanned domain full)."""
    levels = _levels(topology, ranks)
    hierarchical = ("hierarchical",) if len(levels) > 1 and _evenly_filled(ranks, levels) else ()
    if op not in ("all_reduce", "reduce_scatter", "all_gather"):
        return ("ring",)
    if op != "all_reduce":
        return ("ring", *hierarchical)
    out = ["ring", "tree", *hierarchical]
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
    if size < 0:
        raise ValueError("size must be >= 0")
    check_ranks(topology, ranks)
    if ranks == 1 or size == 0:
        return CollectiveTime(op, "none", "-", ranks, size, 0.0, 0.0, 0.0, ())
    available = algorithms_for(topology, op, ranks)
    one_tier = len(_levels(topology, ranks)) == 1
    if algorithm == "hierarchical" and one_tier and op in ("all_reduce", "reduce_scatter", "all_gather"):
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
