"""Point-to-point traffic: NCCL's send/recv, and the all-to-all built from it.

NCCL has no all-to-all kernel: frameworks (torch.distributed.all_to_all_single, Megatron's MoE token dispatcher)
and nccl-tests' alltoall_perf post one ncclSend and one ncclRecv per peer inside ncclGroupStart/ncclGroupEnd, and
NCCL runs the group's transfers together on its peer-to-peer channels, over NVLink to peers in the same NVLink
domain and through the NIC to the others (NCCL's docs, "Point-to-point communication"; nccl-tests
src/alltoall.cu). So with S bytes per rank (nccl-tests' size: S / N to each of the N peers, itself included):
- each GPU sends (N - 1) / N x S; of that, (m_k - 1) / N x S stays inside its tier-k domain, where m_k is the
  group's ranks per tier-k domain, and (N - m_k) / N x S leaves it, over the tier above;
- every tier carries its bytes at its per-GPU bandwidth (collectives.level_bandwidth: efficiency,
  oversubscription and the fabric's losses) and the tiers work at once, so the slowest sets the time;
- the latency is one exchange: the call overhead and one Simple step of the widest tier crossed (NCCL's
  hwLatencies, as for a ring's step; the peers' transfers overlap, so no per-peer term is charged).
nccl-tests reports busbw = algbw x (N - 1) / N for alltoall. A send/recv between two ranks moves its S bytes over
the tier that separates them, with the same step latency; across nodes on the channels NCCL gives one send
(nccl_channels.send_channels), each at most NCCL's own figure for a channel on the network,
NCCL_P2P_PER_CHANNEL_NET_BW = 14 GB/s (graph/paths.cc), which it sizes them by. nccl-tests' sendrecv_perf
(src/sendrecv.cu) has every rank send S to the next and receive S from the one before in one group, so the pair
that crosses the widest tier sets its time (busbw = algbw).

Not modelled: the per-peer cost of many small transfers (NCCL splits each peer's bytes over a few channels, and
thousands of peers queue on them), PXN's rerouting of off-rail traffic through the NVLink peer on the
destination's rail, which moves the same bytes over the same tiers, and a channel's own limit over NVLink (NCCL gives
an NVLink peer two channels per link and no figure per channel; an A100's reach about 14 GB/s each at mid sizes,
tests/reference/nccl-tests/a100-1n-sendrecv-liplus.csv).
"""

from __future__ import annotations

import math
from dataclasses import replace

from dpcost.engine.collectives import CollectiveChoice, CollectiveTime, TierTraffic, hop_latency, level_bandwidth
from dpcost.engine.nccl_channels import P2P_PER_CHANNEL_NET_GBS, peer_channels, send_channels
from dpcost.engine.placement import Placement, place, place_group
from dpcost.specs import TopologySpec

__all__ = [
    "POINT_TO_POINT",
    "all_to_all",
    "all_to_all_choice",
    "domains_per_token",
    "ring_send_recv",
    "send_recv",
    "send_recv_choice",
    "sendrecv_channels",
]

# The ops NCCL runs as grouped send/recv, priced here: no algorithm to pick or force, Simple whatever the protocol
POINT_TO_POINT = ("all_to_all", "send_recv")
# ncclConfig_t.maxP2pPeers that nccl-tests' sendrecv sets (src/sendrecv.cu, 5dc0670, from v2.18.3, when built against
# NCCL 2.30 or later): "Ring sendrecv uses two distinct peers per rank"
SENDRECV_MAX_PEERS = 2
SENDRECV_TESTS_RELEASE = (2, 18, 3)
MAX_P2P_PEERS_RELEASE = (2, 30)  # the NCCL release whose ncclConfig_t has maxP2pPeers


def _latency(topology: TopologySpec, p: Placement) -> float:
    """The call overhead and one Simple step across the widest tier the ranks span."""
    widest = p.levels[-1] if len(p.levels) > 1 else p.levels[0]
    return topology.call_overhead + hop_latency(topology, widest.tier, widest.scale_up, "ring", "simple")


def domains_per_token(top_k: int, experts: int, domains: int) -> float:
    """Expected NVLink domains that hold at least one of a token's top-k experts, the experts spread evenly over
    `domains` and a token's k drawn uniformly without repeats (Megatron's moe_router_force_load_balancing, which
    the published benchmarks run): D = N (1 - C(E - E/N, k) / C(E, k))."""
    if domains <= 1:
        return 1.0
    outside = experts - experts / domains  # the experts of the other domains, for any one domain
    missed = math.comb(round(outside), top_k) / math.comb(experts, top_k)
    return domains * (1.0 - missed)


def all_to_all(
    topology: TopologySpec,
    p: Placement,
    size: float,
    network_share: float = 1.0,
    routed: tuple[int, int] | None = None,
) -> CollectiveTime:
    """All-to-all of `size` bytes per rank over the placed group (module docstring).

    `network_share` below 1: an MoE dispatch that sends each token over the network once per node it targets, not
    once per expert, then forwards its copies over NVLink to their experts' GPUs (DeepSeek-V3's node-limited
    routing with DeepEP, arXiv 2412.19437 sections 2.1.2 and 3.2.2): the network tiers carry that share of the
    bytes, and the NVLink domain every copy that goes to another GPU of it. `routed` (top-k, experts): the same
    once-per-domain dispatch without a limit on the domains (DeepEP, HybridEP: "IB communication between peer GPUs,
    then each rank distributes the received inter-node data locally", docs/sources/moe-dispatch.md): the share is
    the domains a token reaches (domains_per_token) over its k copies."""
    n = p.ranks
    if n == 1 or size == 0:
        return CollectiveTime("all_to_all", "none", "-", n, size, 0.0, 0.0, 0.0, ())
    held = [min(float(n), lv.domain) for lv in p.levels]  # the group's ranks per domain of each tier
    if routed is not None and held[0] < n:
        top_k, experts = routed
        network_share = domains_per_token(top_k, experts, round(n / held[0])) / top_k
    traffic = []
    forwarded = network_share < 1.0  # every copy reaches its expert's GPU over NVLink, not only the local ones
    if held[0] > 1:
        inside = (held[0] - 1) / (held[0] if forwarded else n) * size
        traffic.append(TierTraffic(p.levels[0].tier.name, inside, inside / level_bandwidth(topology, p, p.levels[0])))
    for k in range(1, len(p.levels)):
        # every byte that leaves a tier-(k-1) domain crosses tier k's links
        leaving = (n - held[k - 1]) / n * size * network_share
        bw = level_bandwidth(topology, p, p.levels[k])
        traffic.append(TierTraffic(p.levels[k].tier.name, leaving, leaving / bw, nested=k > 1))
    latency = _latency(topology, p)
    bandwidth = max(t.seconds for t in traffic)
    return CollectiveTime(
        "all_to_all", "p2p", "simple", n, size, latency + bandwidth, latency, bandwidth, tuple(traffic)
    )


def all_to_all_choice(topology: TopologySpec, ranks: int, size: float) -> CollectiveChoice:
    """nccl-tests' alltoall_perf on `ranks` contiguous ranks: the all-to-all (no other algorithm to weigh)."""
    call = all_to_all(topology, place(topology, ranks), size)
    return CollectiveChoice(call, (call,))


def send_recv(
    topology: TopologySpec,
    p: Placement,
    size: float,
    comm: Placement | None = None,
    per_peer: int | None = None,
    release: tuple[int, int] | None = None,
) -> CollectiveTime:
    """One send/recv of `size` bytes between the two ranks of `p`, in communicator `comm` (default: those two):
    over NVLink inside a domain, else through the NIC and every network tier up to the one that holds both, the
    slowest setting the time, and through the NIC on at most `per_peer` channels (default: the communicator's,
    nccl_channels.peer_channels) of 14 GB/s each (module docstring); `release`: the NCCL release the channels follow
    (default 2.30's)."""
    if p.ranks != 2:
        raise ValueError(f"a send/recv pairs two ranks, got {p.ranks}")
    crossed = p.levels[:1] if p.nodes == 1 else p.levels[1:]
    seconds_at = [size / level_bandwidth(topology, p, lv) for lv in crossed]
    if p.nodes > 1:
        comm = p if comm is None else comm
        per_peer = peer_channels(topology, comm, release=release) if per_peer is None else per_peer
        channels = send_channels(topology, comm, size, per_peer, release)
        seconds_at[0] = max(seconds_at[0], size / (channels * P2P_PER_CHANNEL_NET_GBS * 1e9))
    traffic = tuple(
        TierTraffic(lv.tier.name, size, s, nested=k > 0)
        for k, (lv, s) in enumerate(zip(crossed, seconds_at, strict=True))
    )
    seconds = max(seconds_at)
    latency = _latency(topology, p)
    return CollectiveTime("send_recv", "p2p", "simple", 2, size, latency + seconds, latency, seconds, traffic)


def sendrecv_channels(topology: TopologySpec, comm: Placement) -> int:
    """The channels per peer of nccl-tests' sendrecv on NCCL 2.30 or later: the communicator's, with the maxP2pPeers
    of 2 nccl-tests sets (nccl_channels.peer_channels)."""
    return peer_channels(topology, comm, max_peers=SENDRECV_MAX_PEERS)


def ring_send_recv(
    topology: TopologySpec,
    ranks: int,
    size: float,
    per_peer: int | None = None,
    release: tuple[int, int] | None = None,
) -> CollectiveTime:
    """nccl-tests' sendrecv_perf on `ranks` contiguous ranks: every rank sends `size` bytes to the next and receives
    as many from the one before, the pair from the last rank to the first, across the widest tier the ranks span,
    setting the time (module docstring). `per_peer`: the run's channels per peer (default: NCCL 2.30's with
    nccl-tests' maxP2pPeers of 2); `release`: the run's NCCL release, for its chunk size."""
    if ranks < 2:
        raise ValueError(f"a send/recv ring needs two ranks or more, got {ranks}")
    comm = place(topology, ranks)
    pair = place_group(topology, [0, ranks - 1])
    per_peer = sendrecv_channels(topology, comm) if per_peer is None else per_peer
    call = send_recv(topology, pair, size, comm, per_peer, release)
    return replace(call, ranks=ranks)


def send_recv_choice(
    topology: TopologySpec,
    ranks: int,
    size: float,
    per_peer: int | None = None,
    release: tuple[int, int] | None = None,
) -> CollectiveChoice:
    """nccl-tests' sendrecv_perf on `ranks` contiguous ranks: the send/recv ring (no other algorithm to weigh)."""
    call = ring_send_recv(topology, ranks, size, per_peer, release)
    return CollectiveChoice(call, (call,))
