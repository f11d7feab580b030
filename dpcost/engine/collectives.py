"""Collective time on a tiered fabric: NCCL's algorithms and protocols priced per tier, the fastest one chosen.

The model follows NCCL's own tuner (src/graph/tuning.cc; docs/sources/nccl-tuning.md; its constants in
nccl_tables.py): per algorithm and protocol, time = call overhead + base latency + per-step latencies + bytes
over bandwidth, and the fastest of the algorithms NCCL would weigh (availability.py) is the call's time, unless
the topology's tuner plugin picks the algorithm and protocol (tuner_plugin.py: aws-ofi-nccl on AWS). Where a NIC
reports NCCL another latency than its network steps take (a tier's `reported_latency`: AWS's EFA plugin), NCCL
picks with the reported one and the call is priced with the tier's own (_as_nccl_sees). What
dpcost adds is the topology: every tier has its own per-GPU bandwidth (after efficiency and oversubscription)
and its own step latency, and each algorithm puts a known number of bytes on each tier.

Bandwidth terms (N ranks on D NVLink domains of g GPUs, S bytes; Patarasuk & Yuan 2009 for the ring):
- ring: every one of the ring's N hops carries V = 2(N-1)/N x S (all-reduce), (N-1)/N x S (reduce-scatter,
  all-gather) or S (broadcast, reduce). Hops that leave a tier-k domain share the tier-k ports of all N GPUs
  (one ring per rail), so tier k carries hops_k / N x V per GPU; the tiers work as one pipeline and the
  slowest sets the time.
- tree (all-reduce): a chain inside each NVLink domain (2S per GPU) pipelined with a double binary tree across
  domains. The busiest domain sends and receives S through its g rails at two domains, 1.5S at three and 2S
  beyond (tree_domain_load, from NCCL's ncclGetDtree; NCCL's tuner likewise rates Tree and NVLSTree by NVLink
  bandwidth up to 2 nodes and halves NVLSTree's network bandwidth above). Beyond 2 nodes the
  bus bandwidth stays under NCCL's per-channel cap, search channels x perChMaxTreeBw (tuning.cc:330-335).
- nvls: NVLink SHARP inside one NVSwitch domain: each GPU sends and receives (1 + 1/N) x S (all-reduce) or
  (N-1)/N x S (reduce-scatter, all-gather), at the tier's NVLS efficiency over N ranks
  (InNetworkReduction.efficiency_over: less per doubling beyond 8 in a rack-scale domain).
- nvls_tree: NVLS inside the domains pipelined with the tree across them (NCCL's NVLSTree).
- collnet: SHARP on the fabric: each rail sends S/g once and gets the reduced S/g back, pipelined with a
  reduce-scatter/all-gather inside the domain (NCCL's CollNet).
- pat: one GPU per node, reduce-scatter/all-gather (NCCL's PAT): the ring's volume at NCCL's 0.75 rate, with
  log2(N) latency steps.
- hierarchical (what-if, only when forced): reduce-scatter inside the domain, the op across domains on S/g
  (one ring per rail), all-gather back; recursively for every tier. Phases run one after the other.

Network tiers lose `topology.scaling_loss` of their bandwidth per doubling of the nodes beyond two, and a call
that crosses a switch tier (spans more than one domain of the tier below it) loses that tier's `crossing_loss`
once (fabric terms that calibration fits; see the topology YAMLs for each default's source). Protocols: Simple (full
bandwidth), LL128 (x0.92), LL (a fraction of the bandwidth and at most NCCL's llMaxBw), each with its own
per-step latency from the tier.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Literal, TypeVar

from dpcost.engine import corrections
from dpcost.engine import nccl_tables as nccl
from dpcost.engine.availability import ALGORITHMS, forcible, nccl_candidates, require
from dpcost.engine.memo import per_object
from dpcost.engine.nccl_channels import bytes_per_channel, ring_channels, search_channels
from dpcost.engine.placement import Level, Placement, hop_share, place, spanned, steps_per_level
from dpcost.engine.tuner_plugin import plugin_choice
from dpcost.frozen import frozen
from dpcost.specs import PROTOCOLS, Protocol, TierSpec, TopologySpec, allowed_protocols, nccl_algo_enabled

__all__ = [
    "ALGORITHMS",
    "OPS",
    "PROTOCOLS",
    "CollectiveChoice",
    "CollectiveTime",
    "Group",
    "TierTraffic",
    "algorithms_for",
    "bus_factor",
    "collective",
    "collective_time",
    "crossing_factor",
    "fastest",
    "hop_latency",
    "level_bandwidth",
    "tree_domain_load",
]

Op = Literal["all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce"]
OPS: tuple[Op, ...] = ("all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce")
CHAINS: tuple[Op, ...] = ("broadcast", "reduce")  # NCCL runs them as a pipelined chain along the ring
US = 1e-6
GB = 1e9


@frozen
class TierTraffic:
    """What one algorithm puts on one tier: bytes each GPU sends over that tier's links, and their time."""

    tier: str
    bytes_per_gpu: float
    seconds: float
    nested: bool = False  # bytes that also crossed a lower network tier (a spine hop passes the NIC too)

    def at_rate(self, share: float) -> TierTraffic:
        """The same bytes at `share` of the rate they were timed at (a protocol's or a correction's)."""
        return TierTraffic(self.tier, self.bytes_per_gpu, self.seconds / share, self.nested)


@frozen
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
    what_if: bool = False  # an algorithm NCCL does not run for this call, priced because it was forced
    # a chain's (Ring broadcast, reduce): the time between calls issued back to back, which overlap along it, each
    # rank forwarding one call while the ranks after it still take the one before: NCCL's base latency, its slowest
    # hop and its bytes (nccl-tests' timing loop, accuracy.nccl_tests_seconds); 0 where calls do not overlap
    period_seconds: float = 0.0

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

    @property
    def label(self) -> str:
        """algorithm/protocol, as the step rows name a call."""
        return f"{self.algorithm}/{self.protocol}" + (" (what-if)" if self.what_if else "")


@frozen
class CollectiveChoice:
    """The call as NCCL runs it (collective()), with every applicable algorithm's time beside it."""

    best: CollectiveTime
    candidates: tuple[CollectiveTime, ...]  # NCCL's candidates in the order it weighs them, then the what-ifs
    note: str = ""  # how the ranks were placed, when they leave NVLink domains part-filled


def bus_factor(op: str, ranks: int) -> float:
    """nccl-tests: busbw = algbw x 2(n-1)/n (all-reduce), (n-1)/n (reduce-scatter, all-gather, all-to-all), 1
    otherwise."""
    if ranks <= 1:
        return 0.0 if op in ("all_reduce", "reduce_scatter", "all_gather", "all_to_all") else 1.0
    if op == "all_reduce":
        return 2 * (ranks - 1) / ranks
    if op in ("reduce_scatter", "all_gather", "all_to_all"):
        return (ranks - 1) / ranks
    return 1.0


# ------------------------------------------------------------------------------------------------ the fabric


def network_factor(topology: TopologySpec, nodes: int) -> float:
    """Network bandwidth kept at `nodes` nodes: (1 - scaling_loss) per doubling beyond two."""
    return (1 - topology.scaling_loss) ** max(0.0, math.log2(nodes) - 1) if nodes > 2 else 1.0


def crossing_factor(p: Placement) -> float:
    """Network bandwidth kept by a call that crosses switch tiers: (1 - crossing_loss) for every network tier
    above the first that the ranks reach (they span more than one domain of the tier below it)."""
    kept = 1.0
    for lv in p.levels[2:]:
        kept *= 1 - lv.tier.crossing_loss
    return kept


def level_bandwidth(topology: TopologySpec, p: Placement, lv: Level) -> float:
    """A level's per-GPU bandwidth for this call: efficiency, oversubscription, and the fabric's scaling and
    crossing losses."""
    bw = lv.tier.effective_bandwidth
    return bw if lv.scale_up else bw * network_factor(topology, p.nodes) * crossing_factor(p)


def hop_latency(topology: TopologySpec, tier: TierSpec, first: bool, algorithm: str, proto: str) -> float:
    """Seconds for one `algorithm` step across `tier` with `proto`: NCCL's hwLatencies for the tier's link
    (corrections.py where public runs contradict them) times the topology's calibrated latency_scale, plus the
    tier's own hop_latency, twice for Simple, as NCCL adds a NIC's latency (tuning.cc:384-391). A tier's explicit
    `latency`/`tree_latency` table replaces Ring's/Tree's."""
    table = tier.latency if algorithm == "ring" else tier.tree_latency if algorithm == "tree" else None
    if table is not None:
        return float(getattr(table, proto))
    link = tier.link or ("nvlink" if first else "net")
    seconds = corrections.hw_latency(link, algorithm, proto) * US * topology.latency_scale
    if link == "net":
        seconds += tier.hop_latency * (2 if proto == "simple" else 1)
    return seconds


def _step(topology: TopologySpec, lv: Level, algorithm: str, proto: str) -> float:
    return hop_latency(topology, lv.tier, lv.scale_up, algorithm, proto)


def _base(topology: TopologySpec, algorithm: str, proto: str) -> float:
    """The per-call part: dpcost's call overhead (launch and completion) plus NCCL's baseLatencies."""
    return topology.call_overhead + nccl.base_latency(algorithm, proto) * US * topology.latency_scale


def _ll_cap(topology: TopologySpec, nodes: int) -> float:
    """NCCL's llMaxBws: the most bus bandwidth LL reaches, by GPU generation and node count (bytes/s)."""
    return nccl.ll_max_busbw(topology.gpu.arch, topology.host_cpu, nodes) * GB


@frozen
class _ProtocolTerms:
    """What one protocol adds to a Ring or Tree call of one group, which no size changes."""

    protocol: Protocol
    latency: float  # seconds: Tree's whole latency; Ring's without the call overhead (its plateau scales the rest)
    keep: float  # the share of Simple's bus bandwidth the protocol keeps (nccl.protocol_bandwidth)
    channel_bytes: float  # bytes per channel before NCCL keeps another (nccl_channels.bytes_per_channel); 0: no cut
    channels_busbw: float = math.inf  # Tree beyond two domains: the most bus bandwidth its channels reach, bytes/s
    # a chain's (broadcast, reduce) latency between back-to-back calls: NCCL's base and its slowest hop, as NCCL's
    # model writes a Ring Broadcast or Reduce whose channels are the same (tuning.cc:395-397); the call overhead
    # (launch, completion) overlaps the call before (CollectiveTime.period_seconds); 0 for the other ops
    chain: float = 0.0


def _channel_cut_at(links: int, channel_bytes: float, size: float) -> float:
    """How much longer a small call's bytes take on the channels NCCL leaves it: Ring and Tree drop channels while
    the bytes are fewer than channels x threads x bytes per thread (enqueue.cc:2092-2096; `channel_bytes`,
    nccl_channels.bytes_per_channel), so a call keeps about size / that many. Only a cut below the ring graph's
    channels costs bandwidth, as those sit on `links` distinct links (_channel_links). Counted continuously (NCCL's
    whole channels make a sawtooth in which a larger call can finish sooner): below the graph's channels the bytes
    take as long as one channel's."""
    used = max(1.0, size / channel_bytes)
    return links / used if used < links else 1.0


def _fastest_protocol(
    terms: Sequence[_ProtocolTerms], priced: Sequence[tuple[float, float, float]]
) -> tuple[_ProtocolTerms, float, float, float]:
    """The protocol whose (latency, bandwidth seconds, kept share) is fastest, the first of equals (as min() of
    NCCL's protocol order)."""
    best = 0
    for k in range(1, len(priced)):
        if priced[k][0] + priced[k][1] < priced[best][0] + priced[best][1]:
            best = k
    return (terms[best], *priced[best])


# ------------------------------------------------------------------------------------------------ algorithms


@frozen
class _RingPrice:
    """A ring's price for one group and op at any size: what no size changes, found once (_ring_price); `at` adds a
    size's bytes."""

    op: str
    ranks: int
    bus: float  # bus_factor(op, ranks): each hop's bytes per byte of the message
    tiers: tuple[tuple[str, float, float, bool], ...]  # each level's name, share of the hops, bandwidth, nested
    via: tuple[str, float] | None  # a tier every hop also crosses: its name and bandwidth
    plateau_bytes: float  # where Simple's latency takes NCCL's plateau (inf: never)
    ll_cap: float  # LL's bus-bandwidth ceiling, bytes/s
    overhead: float  # the call overhead, added after the plateau
    links: int  # the channels' distinct links (_channel_links); 0 for a phase of the hierarchical what-if
    protocols: tuple[_ProtocolTerms, ...]

    def at(self, size: float) -> CollectiveTime:
        """The fastest protocol's time for `size` bytes: NCCL's latency base + (nsteps - nInter) intra + nInter
        inter; each level carries its share of the ring's hop bytes, the slowest level sets the time."""
        hop_bytes = self.bus * size
        traffic = [(name, share * hop_bytes, share * hop_bytes / bw, nested) for name, share, bw, nested in self.tiers]
        if self.via is not None:
            carried = sum(b for _, b, _, nested in traffic if not nested)
            traffic = [(name, b, seconds, True) for name, b, seconds, _ in traffic]
            traffic.insert(0, (self.via[0], carried, carried / self.via[1], False))
        priced = []
        for terms in self.protocols:
            latency = terms.latency
            if terms.protocol == "simple" and size >= self.plateau_bytes:
                latency *= nccl.RING_PLATEAU
            latency += self.overhead
            bw_seconds = max((seconds / terms.keep for _, _, seconds, _ in traffic), default=0.0)
            if terms.protocol == "ll":
                bw_seconds = max(bw_seconds, hop_bytes / self.ll_cap)
            if self.links:
                bw_seconds *= _channel_cut_at(self.links, terms.channel_bytes, size)
            priced.append((latency, bw_seconds, terms.keep))
        terms, latency, bw_seconds, keep = _fastest_protocol(self.protocols, priced)
        tiers = tuple(TierTraffic(name, b, seconds / keep, nested) for name, b, seconds, nested in traffic)
        # calls overlap along a chain while one fits the LL FIFO between two ranks: no rank then waits for the one
        # after it; past one channel's FIFO the public runs show the chain's whole latency again, so the overlap
        # stops there, read from them (docs/sources/nccl-tuning.md i)
        overlap = terms.chain and terms.protocol == "ll" and size <= nccl.LL_FIFO_DATA_BYTES
        period = terms.chain + bw_seconds if overlap else 0.0
        return CollectiveTime(
            self.op, "ring", terms.protocol, self.ranks, size, latency + bw_seconds, latency, bw_seconds, tiers,
            period_seconds=period,
        )  # fmt: skip


def _ring_levels(
    topology: TopologySpec, p: Placement, ranks: int, levels: Sequence[Level]
) -> tuple[tuple[str, float, float, bool], ...]:
    """Each level a ring's hops use: its name, share of the hops, bandwidth, and whether its bytes also crossed a
    lower network level (levels above the first network level nest inside it)."""
    first_network = 1 if levels[0].scale_up else 0
    return tuple(
        (lv.tier.name, share, level_bandwidth(topology, p, lv), k > first_network)
        for k, (lv, share) in enumerate(zip(levels, hop_share(ranks, levels), strict=True))
        if share > 0
    )


def _ring_price(
    topology: TopologySpec,
    p: Placement,
    op: str,
    ranks: int,
    levels: Sequence[Level],
    protocols: Sequence[Protocol],
    via: TierSpec | None = None,
) -> _RingPrice:
    """Ring (pipelined chain for broadcast/reduce) over `ranks` of `p` on `levels` with each of `protocols`: the
    steps, the levels' shares and every latency, which no size changes.

    `via`: a tier every hop also crosses (the NIC, for a phase that runs across scalable units)."""
    per_rank = 2 if op == "all_reduce" else 1
    steps = steps_per_level(ranks, levels, per_rank)
    nodes = spanned(ranks, levels[0].domain) if levels[0].scale_up else ranks
    own_call = ranks == p.ranks  # not a phase of the hierarchical what-if
    chain = op in CHAINS
    terms = []
    for proto in protocols:
        base = _base(topology, "ring", proto) - topology.call_overhead
        hops = _ring_step_latencies(topology, levels, steps, nodes, proto)
        terms.append(
            _ProtocolTerms(
                proto,
                base + sum(n * lat for n, lat in hops),
                nccl.protocol_bandwidth("ring", proto),
                bytes_per_channel(p, "ring", proto) if own_call else 0.0,
                chain=base + max((lat for n, lat in hops if n), default=0.0) if chain else 0.0,
            )
        )
    crossed = None
    if via is not None and via is not levels[0].tier:
        crossed = via.name, via.effective_bandwidth * network_factor(topology, p.nodes) * crossing_factor(p)
    return _RingPrice(
        op,
        ranks,
        bus_factor(op, ranks),
        _ring_levels(topology, p, ranks, levels),
        crossed,
        _plateau_bytes(topology, p, ranks) if op == "all_reduce" and nodes > 1 else math.inf,
        _ll_cap(topology, nodes),
        topology.call_overhead,
        _channel_links(topology, p) if own_call else 0,
        tuple(terms),
    )


def _ring(topology: TopologySpec, p: Placement, op: str, size: float, protocols: Sequence[Protocol]) -> CollectiveTime:
    """The group's own ring call with the fastest of `protocols`, from its price found once per topology."""
    price = _kept(
        _ring_prices(topology), p, (op, tuple(protocols)),
        lambda: _ring_price(topology, p, op, p.ranks, p.levels, protocols),
    )  # fmt: skip
    return price.at(size)


def _ring_step_latencies(
    topology: TopologySpec, levels: Sequence[Level], steps: Sequence[int], nodes: int, proto: str
) -> list[tuple[int, float]]:
    """Each level's (steps, latency of one) in NCCL's ring latency beyond the base: (nsteps - nInter) x
    max(intraLat, netOverhead) + nInter x interLat, with every tier's steps at its own latency (tuning.cc:393-413).
    With one GPU per node the network steps take Tree's latency, as NCCL does."""
    out = []
    for k, (n, lv) in enumerate(zip(steps, levels, strict=True)):
        if lv.scale_up:
            lat = _step(topology, lv, "ring", proto)
            if nodes > 1:
                lat = max(lat, nccl.net_overhead(topology.host_cpu, proto) * US * topology.latency_scale)
        else:
            lat = _step(topology, lv, "tree" if not levels[0].scale_up and k == 0 else "ring", proto)
        out.append((n, lat))
    return out


def _channel_links(topology: TopologySpec, p: Placement) -> int:
    """The distinct links a Ring or Tree call's channels run on: half the communicator's channels, as
    ncclTopoPostset doubles the ring graph's onto the same links (connect.cc:460); see _channel_cut_at."""
    return max(1, ring_channels(topology, p) // 2)


def _plateau_bytes(topology: TopologySpec, p: Placement, ranks: int) -> float:
    """Where NCCL's multi-node Ring/Simple all-reduce latency takes its 1.4x "plateau effect": nBytes / (nChannels x
    nRanks) >= 64 (tuning.cc:647-650), with the communicator's channels (nccl_channels.ring_channels)."""
    return nccl.RING_PLATEAU_BYTES * ring_channels(topology, p) * ranks


def _tree_depth_latency(
    topology: TopologySpec, domains: int, rail: Sequence[Level], algorithm: str, proto: Protocol
) -> float:
    """One way down a binary tree over `domains`: at each network level, log2 of the most children any one
    domain of it holds, times that level's step latency for `algorithm` (Tree or NVLSTree)."""
    total = 0.0
    below = 1.0  # size of the sub-domains, in NVLink domains
    for lv in rail:
        children = min(spanned(domains, below), lv.domain / below)
        if children > 1:
            total += math.floor(math.log2(children) + 1e-9) * _step(topology, lv, algorithm, proto)
        below = lv.domain
        if below >= domains:
            break
    return total


def tree_domain_load(nodes: int, as_tuner_weighs: bool = False) -> float:
    """What the busiest domain sends (and receives) in NCCL's double binary tree all-reduce over `nodes` domains, in
    units of S: each tree carries S/2, once up and once down every edge, and both trees run on each search channel's
    NIC (connect.cc, connectTrees: channels c and c + nChannels), so a domain's two trees add. ncclGetDtree
    (trees.cc) gives 1 at two domains, 1.5 at three (both trees chains) and 2 beyond (a domain with two children
    in one tree).

    `as_tuner_weighs`: NCCL's tuner rates every tree's bandwidth beyond two nodes by bwInter (tuning.cc: Tree's
    algbw half its busbw, NVLSTree's network rate doubled only at nNodes <= 2), 2S at three nodes too: it weighs
    the bandwidth there as at four (its latency terms take log2i(3) = 1, as dpcost's do)."""
    if nodes <= 2:
        return 1.0
    return 1.5 if nodes == 3 and not as_tuner_weighs else 2.0


def _tree_network_bytes(
    levels: Sequence[tuple[str, float, float, bool]], load: float, rail_bytes: float
) -> list[tuple[str, float, float, bool]]:
    """Bytes a double binary tree across NVLink domains puts on each network tier per GPU (each of the g rails
    carries `rail_bytes`, S/g, times the busiest domain's `load`: tree_domain_load), with their seconds; `levels`
    as _ring_levels gives the rails'. Upper tiers carry the edges that leave their sub-domains, as a ring's hops
    would."""
    hop_bytes = load * rail_bytes
    return [(name, share * hop_bytes, share * hop_bytes / bw, nested) for name, share, bw, nested in levels]


def _tree_channels_busbw(topology: TopologySpec, p: Placement, proto: Protocol) -> float:
    """The most bus bandwidth NCCL's Tree reaches across nodes (bytes/s): the tree graph's channels, as many as the
    ring search finds (init.cc: the tree graph takes the ring graph's nChannels; nccl_channels.search_channels: one
    per NIC at the speed the NIC carries, fewer where NVLink cannot carry them through a node of many GPUs, as a
    72-GPU NVL72 rack, which NCCL counts as one node, holds 16), times perChMaxTreeBw for the GPU generation and node
    count (tuning.cc:330-335). On B200 beyond two nodes that is 8 x 24 GB/s, half of what the rails carry."""
    cap = nccl.tree_channel_cap(topology.gpu.arch, proto, p.nodes)
    if cap is None:
        return math.inf
    channels, _ = search_channels(topology, p)
    return channels * cap * GB


@frozen
class _NvlsTreePrice:
    """NVLSTree's price for one group at any size (NVLS in the domain, a double binary tree across), or NVLS alone
    in one domain: Simple only. What no size changes, found once (_nvls_tree_price); `at` adds a size's bytes."""

    ranks: int
    nodes: int
    domain: tuple[str, float]  # the NVLink tier's name and NVLS bandwidth (its rate x the reduction's efficiency)
    domain_share: float  # 1 + 1/g: each GPU sends and receives (1 + 1/N) x S through the switch
    network: tuple[tuple[str, float, float, bool], ...]  # the tree across domains (_ring_levels); () in one domain
    load: float  # tree_domain_load: the busiest domain's network bytes, in units of S
    per_domain: float
    latency: float
    arch: str  # for nccl.nvls_tree_correction
    host_cpu: str

    def at(self, size: float) -> CollectiveTime:
        intra_bytes = self.domain_share * size
        traffic = [TierTraffic(self.domain[0], intra_bytes, intra_bytes / self.domain[1])]
        if self.nodes > 1:
            network = _tree_network_bytes(self.network, self.load, size / self.per_domain)
            traffic += [TierTraffic(*t) for t in network]
            keep = nccl.nvls_tree_correction(size, self.arch, self.host_cpu)
            traffic = [t.at_rate(keep) for t in traffic]
        bw_seconds = max(t.seconds for t in traffic)
        name = "nvls_tree" if self.nodes > 1 else "nvls"
        return CollectiveTime(
            "all_reduce", name, "simple", self.ranks, size, self.latency + bw_seconds, self.latency, bw_seconds,
            tuple(traffic),
        )  # fmt: skip


def _nvls_tree_price(topology: TopologySpec, p: Placement, as_tuner_weighs: bool) -> _NvlsTreePrice:
    """NVLSTree (or NVLS) over `p`: the switch's rate, the tree's levels and the latency, which no size changes
    (`as_tuner_weighs`: tree_domain_load's)."""
    g = p.ppn
    first = p.levels[0].tier
    reduction = first.in_network_reduction
    assert reduction is not None  # availability offers NVLS only where the tier declares it
    latency = topology.call_overhead + reduction.latency * topology.latency_scale
    if p.nodes > 1:
        latency += 2 * _tree_depth_latency(topology, p.nodes, p.rails, "nvls_tree", "simple")
    return _NvlsTreePrice(
        p.ranks,
        p.nodes,
        (first.name, first.bandwidth * reduction.efficiency_over(g)),
        1 + 1 / g,
        _ring_levels(topology, p, p.nodes, p.rails) if p.nodes > 1 else (),
        tree_domain_load(p.nodes, as_tuner_weighs),
        g,
        latency,
        topology.gpu.arch,
        topology.host_cpu,
    )


def _nvls_tree(topology: TopologySpec, p: Placement, size: float, as_tuner_weighs: bool) -> CollectiveTime:
    """NVLSTree or NVLS all-reduce of `size` bytes over the group, from its price found once per topology."""
    price = _kept(
        _nvls_tree_prices(topology), p, (as_tuner_weighs,), lambda: _nvls_tree_price(topology, p, as_tuner_weighs)
    )
    return price.at(size)


@frozen
class _TreePrice:
    """A Tree all-reduce's price for one group at any size: what no size changes, found once (_tree_price); `at`
    adds a size's bytes and NCCL's treeCorrectionFactor for it."""

    ranks: int
    nodes: int
    intra: tuple[str, float] | None  # the chain inside the domain: its tier's name and bandwidth (None: one GPU)
    network: tuple[tuple[str, float, float, bool], ...]  # the tree across domains, as a ring's levels (_ring_levels)
    load: float  # tree_domain_load: the busiest domain's network bytes, in units of S
    per_domain: float  # GPUs per domain (ppn): each rail carries S / per_domain
    ll_cap: float
    links: int
    protocols: tuple[_ProtocolTerms, ...]

    def at(self, size: float) -> CollectiveTime:
        """The fastest protocol's time for `size` bytes: a chain in the domain (2S per GPU) pipelined with a double
        binary tree across (_tree_network_bytes), at NCCL's Tree rate and correction for the size."""
        traffic: list[tuple[str, float, float, bool]] = []
        if self.intra is not None:
            traffic.append((self.intra[0], 2 * size, 2 * size / self.intra[1], False))
        if self.network:
            traffic += _tree_network_bytes(self.network, self.load, size / self.per_domain)
        priced = []
        for terms in self.protocols:
            keep = terms.keep * (nccl.TREE_ALLREDUCE * nccl.tree_correction(size, terms.protocol))
            bw_seconds = max((seconds / keep for _, _, seconds, _ in traffic), default=0.0)
            if terms.protocol == "ll":
                bw_seconds = max(bw_seconds, 2 * size / self.ll_cap)
            if self.nodes > 2:
                bw_seconds = max(bw_seconds, 2 * size / terms.channels_busbw)
            bw_seconds *= _channel_cut_at(self.links, terms.channel_bytes, size)
            priced.append((terms.latency, bw_seconds, keep))
        terms, latency, bw_seconds, keep = _fastest_protocol(self.protocols, priced)
        tiers = tuple(TierTraffic(name, b, seconds / keep, nested) for name, b, seconds, nested in traffic)
        return CollectiveTime(
            "all_reduce", "tree", terms.protocol, self.ranks, size, latency + bw_seconds, latency, bw_seconds, tiers
        )


def _tree_price(
    topology: TopologySpec, p: Placement, protocols: Sequence[Protocol], as_tuner_weighs: bool
) -> _TreePrice:
    """NCCL Tree over `p` with each of `protocols`: the levels' shares and every latency, which no size changes
    (`as_tuner_weighs`: tree_domain_load's)."""
    g = p.ppn
    first = p.levels[0].tier
    terms = []
    for proto in protocols:
        latency = _base(topology, "tree", proto) + 2 * (math.floor(g) - 1) * _step(topology, p.levels[0], "tree", proto)
        if p.nodes > 1:
            latency += 2 * _tree_depth_latency(topology, p.nodes, p.rails, "tree", proto)
        keep = nccl.protocol_bandwidth("tree", proto, p.nodes)
        cap = _tree_channels_busbw(topology, p, proto) if p.nodes > 2 else math.inf
        terms.append(_ProtocolTerms(proto, latency, keep, bytes_per_channel(p, "tree", proto), cap))
    return _TreePrice(
        p.ranks,
        p.nodes,
        (first.name, first.effective_bandwidth) if g > 1 else None,
        _ring_levels(topology, p, p.nodes, p.rails) if p.nodes > 1 else (),
        tree_domain_load(p.nodes, as_tuner_weighs),
        g,
        _ll_cap(topology, p.nodes),
        _channel_links(topology, p),
        tuple(terms),
    )


def _tree(
    topology: TopologySpec, p: Placement, size: float, protocols: Sequence[Protocol], as_tuner_weighs: bool
) -> CollectiveTime:
    """The group's Tree all-reduce with the fastest of `protocols`, from its price found once per topology."""
    price = _kept(
        _tree_prices(topology), p, (*protocols, as_tuner_weighs),
        lambda: _tree_price(topology, p, protocols, as_tuner_weighs),
    )  # fmt: skip
    return price.at(size)


def _nvls_scatter_gather(topology: TopologySpec, p: Placement, op: str, size: float) -> CollectiveTime:
    """NVLS reduce-scatter / all-gather inside one NVSwitch domain: each GPU moves (N-1)/N x S through the
    switch at the NVLS efficiency, one switch round trip of latency."""
    first = p.levels[0].tier
    reduction = first.in_network_reduction
    assert reduction is not None
    moved = (p.ranks - 1) / p.ranks * size
    traffic = (TierTraffic(first.name, moved, moved / (first.bandwidth * reduction.efficiency_over(p.ppn))),)
    latency = topology.call_overhead + reduction.latency
    bw = traffic[0].seconds
    return CollectiveTime(op, "nvls", "simple", p.ranks, size, latency + bw, latency, bw, traffic)


def _collnet(topology: TopologySpec, p: Placement, op: str, size: float) -> CollectiveTime:
    """NCCL CollNet with SHARP: a reduce-scatter/all-gather ring in the domain pipelined with one SHARP operation
    per rail. Each NIC sends its S/g once; the switches reduce, so a level above carries one stream per rail
    per domain below it: D_(k-1) x S / N per GPU of its ports."""
    levels = p.levels
    g = p.ppn
    first = levels[0].tier
    traffic: list[TierTraffic] = []
    volume = size if op == "all_reduce" else size / 2  # RS or AG is one half of the SHARP all-reduce
    if g > 1:
        intra = (2 if op == "all_reduce" else 1) * (g - 1) / g * size
        traffic.append(TierTraffic(first.name, intra, intra / first.effective_bandwidth))
    sharp_latency = 0.0
    below = levels[0].domain
    for k, lv in enumerate(levels[1:]):
        reduction = lv.tier.in_network_reduction
        assert reduction is not None  # availability offers CollNet only where every network tier declares it
        per_gpu = volume / g if k == 0 else spanned(p.ranks, below) * volume / p.ranks
        bw = lv.tier.bandwidth * reduction.efficiency / lv.tier.oversubscription
        traffic.append(TierTraffic(lv.tier.name, per_gpu, per_gpu / bw, nested=k > 0))
        sharp_latency = max(sharp_latency, reduction.latency)
        below = lv.domain
    intra = 2 * (
        min(1.0, g - 1) * _step(topology, levels[0], "collnet_direct", "simple") + (g - 1) * nccl.COLLNET_ARITY_US * US
    )
    latency = topology.call_overhead + intra + sharp_latency
    bw_seconds = max(t.seconds for t in traffic)
    return CollectiveTime(
        op, "collnet", "simple", p.ranks, size, latency + bw_seconds, latency, bw_seconds, tuple(traffic)
    )


def _pat(topology: TopologySpec, p: Placement, op: str, size: float, proto: Protocol) -> CollectiveTime:
    """NCCL's PAT (one GPU per node, Simple): the ring's bytes at NCCL's 0.75 rate; latency
    base + log2(nodes) x interLat / 3.5 + 2.8 us per rank (tuning.cc:429-434, the per-rank part NCCL's own)."""
    ring = _ring(topology, p, op, size, ("simple",))
    tiers = tuple(t.at_rate(nccl.PAT) for t in ring.tiers)
    bw = max(t.seconds for t in tiers)
    network = next(lv for lv in p.levels if not lv.scale_up)
    inter = _step(topology, network, "tree", proto)
    latency = _base(topology, "pat", proto) + math.floor(math.log2(p.nodes)) * inter / nccl.PAT_LOG_DIVISOR
    latency += nccl.PAT_PER_RANK_US * US * p.ranks * topology.latency_scale
    return CollectiveTime(op, "pat", proto, p.ranks, size, latency + bw, latency, bw, tiers)


def _best_ring(
    topology: TopologySpec,
    p: Placement,
    op: str,
    ranks: int,
    size: float,
    levels: Sequence[Level],
    via: TierSpec | None = None,
) -> CollectiveTime:
    return _ring_price(topology, p, op, ranks, levels, PROTOCOLS, via).at(size)


def _hierarchical(
    topology: TopologySpec,
    p: Placement,
    op: str,
    ranks: int,
    size: float,
    levels: Sequence[Level],
    via: TierSpec | None = None,
) -> CollectiveTime:
    """Reduce-scatter in the domain, the op across domains on S/g, all-gather in the domain; recursive.

    One tier: the plain ring. Every phase is its own NCCL call with its own best protocol; phases above the
    first network tier also cross the NICs (`via`)."""
    if len(levels) == 1:
        return replace(_best_ring(topology, p, op, ranks, size, levels, via), algorithm="hierarchical")
    g = int(levels[0].domain)
    domains = spanned(ranks, levels[0].domain)
    inner = [Level(lv.tier, lv.domain / g) for lv in levels[1:]]
    inner_via = via or (levels[1].tier if levels[0].scale_up else levels[0].tier)
    inside = [levels[0]]
    phases: list[CollectiveTime] = []
    if op in ("all_reduce", "reduce_scatter"):
        phases.append(_best_ring(topology, p, "reduce_scatter", g, size, inside, via))
    phases.append(_hierarchical(topology, p, op, domains, size / g, inner, inner_via))
    if op in ("all_reduce", "all_gather"):
        phases.append(_best_ring(topology, p, "all_gather", g, size, inside, via))
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
        "/".join(dict.fromkeys(ph.protocol for ph in phases)),
        ranks,
        size,
        sum(ph.seconds for ph in phases),
        sum(ph.latency_seconds for ph in phases),
        sum(ph.bandwidth_seconds for ph in phases),
        tuple(merged.values()),
        calls=sum(ph.calls for ph in phases),
    )


_PRICES_PER_TOPOLOGY = 1 << 16


@per_object
def _prices(topology: TopologySpec) -> dict[tuple[object, ...], tuple[CollectiveTime, tuple[TierSpec, ...]]]:
    """The calls priced on one topology, by what a price depends on (memo.py): a search, a sweep or a calibration
    fit asks for the same (group, op, size) many times."""
    return {}


_Kept = TypeVar("_Kept")


def _kept(
    cache: dict[tuple[object, ...], tuple[_Kept, tuple[TierSpec, ...]]],
    p: Placement,
    call: tuple[object, ...],
    compute: Callable[[], _Kept],
) -> _Kept:
    """`compute()` once per placement and `call` in a topology's cache (emptied at _PRICES_PER_TOPOLOGY entries).
    A tier counts by its identity: the entry holds the tiers, so no other tier can take their ids while it is kept."""
    key = (*p.shape, *call)
    found = cache.get(key)
    if found is None:
        if len(cache) >= _PRICES_PER_TOPOLOGY:
            cache.clear()
        found = cache[key] = (compute(), tuple(lv.tier for lv in p.levels))
    return found[0]


@per_object
def _ring_prices(topology: TopologySpec) -> dict[tuple[object, ...], tuple[_RingPrice, tuple[TierSpec, ...]]]:
    """Each group's ring price (every size's) on one topology: an nccl-tests log or a search prices many sizes."""
    return {}


@per_object
def _tree_prices(topology: TopologySpec) -> dict[tuple[object, ...], tuple[_TreePrice, tuple[TierSpec, ...]]]:
    """Each group's Tree price (every size's) on one topology."""
    return {}


@per_object
def _nvls_tree_prices(topology: TopologySpec) -> dict[tuple[object, ...], tuple[_NvlsTreePrice, tuple[TierSpec, ...]]]:
    """Each group's NVLSTree price (every size's) on one topology."""
    return {}


@per_object
def _choices(topology: TopologySpec) -> dict[tuple[object, ...], tuple[CollectiveChoice, tuple[TierSpec, ...]]]:
    """`collective`'s answers on one topology (memo.py): a report's rows, a sweep's and a search's plans ask for the
    same (group, op, size) again."""
    return {}


def _price(
    topology: TopologySpec,
    p: Placement,
    op: str,
    size: float,
    algorithm: str,
    protocol: str | None = None,
    as_tuner_weighs: bool = False,
) -> CollectiveTime:
    """One algorithm's time with its fastest protocol, or with `protocol` where that one is forced (NCCL_PROTO);
    NVLS, NVLSTree, CollNet and PAT run Simple only. Priced once per topology (_prices). `as_tuner_weighs`: a
    tree's bytes as NCCL's tuner rates them (tree_domain_load), to pick by."""
    return _kept(
        _prices(topology), p, (op, size, algorithm, protocol, as_tuner_weighs),
        lambda: _price_uncached(topology, p, op, size, algorithm, protocol, as_tuner_weighs),
    )  # fmt: skip


def _price_uncached(
    topology: TopologySpec,
    p: Placement,
    op: str,
    size: float,
    algorithm: str,
    protocol: str | None,
    as_tuner_weighs: bool,
) -> CollectiveTime:
    protocols = allowed_protocols(protocol)
    if algorithm == "ring":
        return _ring(topology, p, op, size, protocols)
    if algorithm == "hierarchical":
        return replace(_hierarchical(topology, p, op, p.ranks, size, p.levels), what_if=True)
    if algorithm == "tree":
        return _tree(topology, p, size, protocols, as_tuner_weighs)
    if algorithm in ("nvls", "nvls_tree"):
        if op != "all_reduce":
            return _nvls_scatter_gather(topology, p, op, size)
        return _nvls_tree(topology, p, size, as_tuner_weighs)
    if algorithm == "pat":
        return _pat(topology, p, op, size, "simple")
    return _collnet(topology, p, op, size)


# ------------------------------------------------------------------------------------------------ public


Group = int | Placement  # a number of contiguous ranks, or a process group placed by placement.place_group


def _placed(topology: TopologySpec, group: Group) -> Placement:
    return group if isinstance(group, Placement) else place(topology, group)


def algorithms_for(topology: TopologySpec, op: str, group: Group) -> tuple[str, ...]:
    """The algorithms NCCL weighs for `op` on `group` (availability.py)."""
    return nccl_candidates(op, _placed(topology, group))


def collective_time(topology: TopologySpec, op: str, group: Group, size: float, algorithm: str) -> CollectiveTime:
    """The time of one algorithm (its best protocol) for `op` of `size` bytes over `group`."""
    if op not in OPS:
        raise ValueError(f"unknown op {op!r}")
    if size < 0:
        raise ValueError("size must be >= 0")
    p = _placed(topology, group)
    if p.ranks == 1 or size == 0:
        return CollectiveTime(op, "none", "-", p.ranks, size, 0.0, 0.0, 0.0, ())
    require(op, p, algorithm, topology.name)
    return _in_nccls_order(topology, op, p, size, (algorithm,), None)[0]


def _running(protocol: str | None, names: Sequence[str]) -> tuple[str, ...]:
    """The algorithms that can run a forced protocol (NCCL_PROTO): only Ring and Tree have LL and LL128; all of
    them Simple. A forced algorithm that cannot run it is kept, as the run's own NCCL_ALGO."""
    if "simple" in allowed_protocols(protocol):
        return tuple(names)
    return tuple(a for a in names if a in ("ring", "tree")) or tuple(names)


def fastest(
    topology: TopologySpec,
    op: str,
    group: Group,
    size: float,
    algorithm: str | None = None,
    protocol: str | None = None,
    nccl_algo: str | None = None,
) -> CollectiveTime:
    """The call as NCCL runs it: the fastest of its candidates, the topology's tuner plugin's pick where it makes
    one, or the forced algorithm (no what-ifs priced).

    A forced `protocol` (NCCL_PROTO; else the topology's) leaves out the algorithms that cannot run it, as NCCL
    does; so does an NCCL_ALGO setting that leaves several (`nccl_algo`, else the topology's: "^NVLS",
    "Ring,Tree")."""
    p = _placed(topology, group)
    if p.ranks == 1 or size == 0:
        return collective_time(topology, op, p, size, "ring")
    protocol = protocol or topology.protocol
    nccl_algo = nccl_algo or topology.nccl_algo
    if algorithm is not None:
        require(op, p, algorithm, topology.name)
    return _kept(
        _fastest(topology), p, (op, size, algorithm, protocol, nccl_algo),
        lambda: _fastest_uncached(topology, op, p, size, algorithm, protocol, nccl_algo),
    )  # fmt: skip


@per_object
def _fastest(topology: TopologySpec) -> dict[tuple[object, ...], tuple[CollectiveTime, tuple[TierSpec, ...]]]:
    """`fastest`'s answers on one topology (memo.py): every plan of a batch or a search issues the same calls."""
    return {}


def _fastest_uncached(
    topology: TopologySpec,
    op: str,
    p: Placement,
    size: float,
    algorithm: str | None,
    protocol: str | None,
    nccl_algo: str | None,
) -> CollectiveTime:
    plugin = _plugin_pick(topology, op, p, size, algorithm, protocol, nccl_algo)
    if plugin is not None:
        return _price(topology, p, op, size, *plugin)
    names = _running(protocol, (algorithm,) if algorithm is not None else _enabled(op, p, nccl_algo))
    return _in_nccls_order(topology, op, p, size, names, protocol)[0]


def _enabled(op: str, p: Placement, nccl_algo: str | None) -> tuple[str, ...]:
    """NCCL's candidates for the call that an NCCL_ALGO setting leaves on (specs.nccl_algo_enabled; NCCL prices a
    disabled algorithm at no bandwidth, tuning.cc:538); where it leaves none NCCL fails the call, and so does this."""
    names = nccl_candidates(op, p)
    if nccl_algo is None:
        return names
    enabled = nccl_algo_enabled(nccl_algo).get(op)  # None: not a collective NCCL_ALGO names
    kept = tuple(a for a in names if enabled is None or a in enabled)
    if not kept:
        raise ValueError(
            f"NCCL_ALGO={nccl_algo[:60]} leaves no algorithm NCCL runs {op} with on {p.ranks} GPUs "
            f"({p.nodes} NVLink domain{'' if p.nodes == 1 else 's'}): it weighs {', '.join(names)}"
        )
    return kept


def _in_nccls_order(
    topology: TopologySpec, op: str, p: Placement, size: float, names: Sequence[str], protocol: str | None
) -> list[CollectiveTime]:
    """Each of `names` at the protocol NCCL picks for it, priced, NCCL's pick first. NCCL weighs them with the
    latency a tier's NIC reports where it reports another (_as_nccl_sees), except for Ring broadcast and reduce,
    whose steps it prices without it (tuning.cc:393-401), and a tree's bandwidth across three nodes as across four
    (tree_domain_load); elsewhere, and for the hierarchical what-if, by price."""
    seen = _as_nccl_sees(topology) if op not in CHAINS else None
    three = p.nodes == 3 and op == "all_reduce"  # the trees' bytes NCCL's tuner does not see
    if seen is None and not three:
        return sorted((_price(topology, p, op, size, a, protocol) for a in names), key=lambda c: c.seconds)
    by, sp = (seen, _seen_placement(p)) if seen is not None else (topology, p)
    weighed = sorted(
        (_price(by, sp, op, size, a, protocol, three and a in ("tree", "nvls_tree")) for a in names),
        key=lambda c: c.seconds,
    )  # a non-tree's weighed price is its price, kept once
    return [
        _price(topology, p, op, size, c.algorithm, c.protocol if c.algorithm != "hierarchical" else protocol)
        for c in weighed
    ]


@per_object
def _as_nccl_sees(topology: TopologySpec) -> TopologySpec | None:
    """The topology as NCCL's tuner weighs it: each network step at the latency the NIC's plugin reports
    (`reported_latency`, NCCL's graph latencyInter, added per network step: tuning.cc:384-391) in place of the tier's
    own `hop_latency`. None where no tier reports another (every InfiniBand topology): NCCL picks from the prices."""
    if all(t.reported_latency is None or t.reported_latency == t.hop_latency for t in topology.tiers):
        return None
    return topology.model_copy(update={"tiers": [_tier_as_nccl_sees(t) for t in topology.tiers]})


@per_object
def _tier_as_nccl_sees(tier: TierSpec) -> TierSpec:
    """One tier with its steps at the latency its NIC reports, once per tier (a price is kept by its tiers' ids)."""
    return tier if tier.reported_latency is None else tier.model_copy(update={"hop_latency": tier.reported_latency})


def _seen_placement(p: Placement) -> Placement:
    """`p` on the tiers NCCL's tuner sees (_tier_as_nccl_sees of each of its own)."""
    return Placement(p.ranks, p.nodes, tuple(replace(lv, tier=_tier_as_nccl_sees(lv.tier)) for lv in p.levels))


def _plugin_pick(
    topology: TopologySpec,
    op: str,
    p: Placement,
    size: float,
    algorithm: str | None,
    protocol: str | None,
    nccl_algo: str | None = None,
) -> tuple[str, str] | None:
    """The topology's tuner plugin's (algorithm, protocol) for the call (tuner_plugin.py), among the pairs a forced
    algorithm (NCCL_ALGO) or protocol (NCCL_PROTO) leaves; None where the plugin leaves the choice to NCCL."""
    if topology.tuner_plugin is None:
        return None
    names = (algorithm,) if algorithm is not None else _running(protocol, _enabled(op, p, nccl_algo))
    return plugin_choice(topology.tuner_plugin, op, p.ranks, p.nodes, size, names, protocol)


def collective(
    topology: TopologySpec,
    op: str,
    group: Group,
    size: float,
    algorithm: str | None = None,
    protocol: str | None = None,
    nccl_algo: str | None = None,
) -> CollectiveChoice:
    """Every applicable algorithm's time; `best` is the call as `fastest` runs it: the fastest of NCCL's (of those
    an NCCL_ALGO setting, `nccl_algo`, leaves), the tuner plugin's pick, or the forced algorithm. A forced
    `protocol` (NCCL_PROTO; else the topology's) prices every algorithm in it and leaves out those that cannot run
    it, as `fastest`. Answered once per topology (_choices)."""
    p = _placed(topology, group)
    nccl_algo = nccl_algo or topology.nccl_algo
    return _kept(
        _choices(topology), p, (op, size, algorithm, protocol, nccl_algo),
        lambda: _collective(topology, op, p, size, algorithm, protocol, nccl_algo),
    )  # fmt: skip


def _collective(
    topology: TopologySpec,
    op: str,
    p: Placement,
    size: float,
    algorithm: str | None,
    protocol: str | None,
    nccl_algo: str | None = None,
) -> CollectiveChoice:
    if p.ranks == 1 or size == 0:
        none = collective_time(topology, op, p, size, "ring")
        return CollectiveChoice(none, (none,))
    protocol = protocol or topology.protocol
    if algorithm is not None:
        require(op, p, algorithm, topology.name)
    nccl_times = _in_nccls_order(topology, op, p, size, _running(protocol, nccl_candidates(op, p)), protocol)
    extra = [a for a in forcible(op, p) if a not in nccl_candidates(op, p)] if len(p.levels) > 1 else []
    what_ifs = [_price(topology, p, op, size, a) for a in extra]
    candidates = (*nccl_times, *what_ifs)
    if algorithm is None:  # the call as fastest runs it: the plugin's pick, or NCCL's of what NCCL_ALGO leaves
        best = fastest(topology, op, p, size, None, protocol, nccl_algo)
    elif (plugin := _plugin_pick(topology, op, p, size, algorithm, protocol)) is not None:
        best = _price(topology, p, op, size, *plugin)
    else:
        best = next((c for c in candidates if c.algorithm == algorithm), None) or _price(
            topology, p, op, size, algorithm, protocol
        )
    return CollectiveChoice(best, candidates, p.partial_note)
