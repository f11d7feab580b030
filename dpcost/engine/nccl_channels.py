"""How many channels NCCL runs a call on: one CUDA thread block each, so one SM each for as long as the call runs.

NCCL 2.30.7's rules, with their sources and the counts public NCCL_DEBUG logs print, are in
docs/sources/nccl-channels.md:
- a communicator's Ring/Tree channels (comm->nChannels): its ring graph search (search.cc ncclTopoCompute: the
  (channels, speed) pair that moves the most, trying speeds from the start of speedArrayIntra or speedArrayInter),
  doubled by ncclTopoDupChannels where the speed allows (search.cc:1036-1049), doubled again by ncclTopoPostset
  (connect.cc:460), and once more on Hopper and later across nodes while under 16 (connect.cc:480-483);
- its NVLS channels (comm->nvlsChannels): a constant by GPU generation, tuned for Blackwell across nodes by NIC
  speed (transport/nvls.cc:155-157, 164-219);
- a call's channels (enqueue.cc topoGetAlgoInfo, 2070-2096): NVLS and NVLSTree take the NVLS channels (an NVLS call
  across nodes at most the ring's), and Ring, Tree and PAT drop one while the bytes are fewer than
  channels x threads x the protocol's bytes per thread;
- a send's or receive's (graph/paths.cc ncclTopoGetNchannels and ncclTopoComputeP2pChannels, enqueue.cc
  addP2pToPlan): the channels per peer, across nodes sized by NCCL's own figure for one channel on the network
  (NCCL_P2P_PER_CHANNEL_NET_BW, 14 GB/s) since 2.29, and as many of them as the bytes fill half-chunks and chunks.

Not modelled: NCCL_MIN/MAX_NCHANNELS and NCCL_MIN/MAX_CTAS, the doubling for unpack network devices
(GPUDirect-TCPX, connect.cc:485-490), and CollNet's own channel tuning (CollNet calls are counted as the ring's).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from dpcost.engine.memo import per_object
from dpcost.engine.nccl_tables import SPEED_ARRAY_INTER
from dpcost.engine.placement import Placement
from dpcost.specs import GPUSpec, TopologySpec

__all__ = [
    "bytes_per_channel",
    "call_channels",
    "compute_slowdown",
    "nvls_channels",
    "p2p_channels",
    "p2p_chunk",
    "peer_channels",
    "ring_channels",
    "send_channels",
]

GB = 1e9
MAX_CHANNELS = 64  # device.h:91
MAX_SEARCH_CHANNELS = MAX_CHANNELS // 2  # init.cc:1176-1178: the ring graph is searched for at most half

# topo.h:21-24: the bandwidth NCCL gives one NVLink (GB/s), and the link's nominal rate per direction, by generation
NVLINK_GBS = {"ampere": 20.0, "hopper": 20.6, "blackwell": 40.1}
NVLINK_NOMINAL_GBS = {"ampere": 25.0, "hopper": 25.0, "blackwell": 50.0}

# search.cc:1051-1065: the per-channel speeds the search tries inside a node, by compute capability (below sm90,
# sm90, sm100 and later); across nodes it tries nccl_tables.SPEED_ARRAY_INTER
SPEED_ARRAY_INTRA = (
    (40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0),
    (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0),
    (90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0),
)
SEARCH_KEEPS_TRYING = 0.49  # search.cc: a slower speed is tried while it is above 0.49 of the best found

NVLS_CHANNELS_SM90 = 16  # transport/nvls.cc:155-157
NVLS_CHANNELS_SM100 = 32
NVLS_CHANNELS_SM100_NVL = 24

# device.h:93-114, tuning.cc:244-256: the threads of one channel; comm.h:49-51, tuning.cc:588-593: the bytes each
# thread must have before NCCL adds a channel (Ring LL's times the ranks)
MAX_THREADS = {"ll": 512, "ll128": 640, "simple": 512}
THREAD_THRESHOLD = {"ll": 8, "ll128": 8, "simple": 64}

_ARCH_ROW = {"ampere": 0, "hopper": 1, "blackwell": 2}
ASSUMED_SMS = 132  # an H100's, for a GPU whose topology does not give its SM count
P2P_PER_CHANNEL_NET_GBS = 14  # graph/paths.cc:918 NCCL_P2P_PER_CHANNEL_NET_BW
P2P_PEERS_PER_ROUND = 8  # include/device.h:391 NCCL_MAX_DEV_WORK_P2P_PER_BATCH
# init.cc:818-820: the chunk one send moves per step: NCCL_P2P_NET_CHUNKSIZE across nodes (doubled on Arm hosts with
# Blackwell GPUs since 2.29, init.cc:830-834), NCCL_P2P_NVL_CHUNKSIZE inside an NVLink domain
P2P_NET_CHUNK = 128 * 1024
P2P_NVL_CHUNK = 512 * 1024
# The release that reworked point-to-point: per-peer channels by the NIC's bandwidth (release notes 2.29.2: "Improves
# the default number of channels per net peer for all-to-all, send, and recv"; before it, two per network peer), and
# the doubled chunk on Arm hosts with Blackwell GPUs
P2P_REWORK_RELEASE = (2, 29)


def _nccl_nvlink_gbs(topology: TopologySpec) -> float:
    """A GPU's NVLink bandwidth as NCCL's topology counts it: its links (the tier's rate over one link's nominal
    rate) times NCCL's per-link figure (topo.h:21-24): 18 x 20.6 = 370.8 GB/s on an H100, 12 x 20 on an A100."""
    arch = topology.gpu.arch
    links = topology.tiers[0].bandwidth / GB / NVLINK_NOMINAL_GBS[arch]
    return links * NVLINK_GBS[arch]


def _searched(
    speeds: tuple[float, ...], start_below: float, channels_at: Callable[[float], int], total: float
) -> tuple[int, float]:
    """The ring search's answer (search.cc ncclTopoCompute, pass 1): from the first speed at most `start_below`
    (maxBw), every speed down to 0.49 of the best found, keeping the (channels, speed) that moves the most, the
    first of equals; done once it moves `total` (totalBw)."""
    best = (0, 0.0)
    for speed in (s for s in speeds if s <= start_below):
        if best[0] and speed / best[1] <= SEARCH_KEEPS_TRYING:
            break
        n = min(channels_at(speed), MAX_SEARCH_CHANNELS)
        if n * speed > best[0] * best[1]:
            best = (n, speed)
        if n * speed >= total:
            break
    return best if best[0] else (1, speeds[-1])


def search_channels(topology: TopologySpec, p: Placement) -> tuple[int, float]:
    """The ring graph's search channels and their speed (GB/s). Inside a node each channel passes through every
    GPU at its speed, so NVLink holds floor(NVLink / speed) of them (H100: 6 at 60 GB/s; H800: 4 at 40; A100: 6 at
    40; B200: 8 at 90). Across nodes each enters and leaves through a NIC, one per GPU, which holds floor(NIC / speed)
    of them, and they pass through the node's other GPUs over NVLink (H100 with 8 x 400G: 8 at 48 GB/s)."""
    arch = topology.gpu.arch
    nvlink = _nccl_nvlink_gbs(topology)
    if p.nodes <= 1:
        row = SPEED_ARRAY_INTRA[_ARCH_ROW[arch]]
        return _searched(row, nvlink, lambda s: int(nvlink // s), nvlink)
    nics = max(1, math.floor(p.ppn))
    nic = p.rails[0].tier.bandwidth / GB
    through = (nics - 1) / nics  # the share of channels a GPU passes on over NVLink (the rest leave by its NIC)

    def channels_at(speed: float) -> int:
        by_nvlink = int(nvlink // (speed * through)) if through > 0 else MAX_SEARCH_CHANNELS
        return min(nics * int(nic // speed), by_nvlink)

    # done once the channels move the GPU's own NVLink bandwidth (totalBw, search.cc:30-37)
    return _searched(SPEED_ARRAY_INTER[_ARCH_ROW[arch]], nic, channels_at, nvlink)


def ring_channels(topology: TopologySpec, p: Placement) -> int:
    """comm->nChannels, the most CTAs a Ring or Tree call of this group runs on: the search's channels, doubled where
    ncclTopoDupChannels allows (a speed of at least 25 GB/s, and on Hopper and later at least 50 or at most 4
    channels), doubled by ncclTopoPostset, and on Hopper and later across nodes doubled while under 16 at more than
    45 GB/s a channel. H100 and A100: 24 on one node; H100 with 8 x 400G NICs: 16 across nodes; B200: 32. The
    topology's `channels` where it states them; else worked out once per topology and group shape (a plan search
    asks for every call)."""
    given = topology.channels and (topology.channels.one_node if p.nodes <= 1 else topology.channels.across_nodes)
    if given:
        return given
    known = _ring_channels_of(topology)
    key = (p.nodes, p.ppn)
    if key not in known:
        known[key] = _ring_channels(topology, p)
    return known[key]


@per_object
def _ring_channels_of(topology: TopologySpec) -> dict[tuple[int, float], int]:
    return {}


def _ring_channels(topology: TopologySpec, p: Placement) -> int:
    n, speed = search_channels(topology, p)
    later_than_ampere = topology.gpu.arch != "ampere"
    if speed >= 25.0 and not (later_than_ampere and speed < 50.0 and n > 4):
        doubled = min(2 * n, MAX_SEARCH_CHANNELS)
        speed /= math.ceil(doubled / n)
        n = doubled
    n = min(MAX_CHANNELS, 2 * n)
    if later_than_ampere and p.nodes > 1 and speed > 45.0 and n < 16:
        n *= 2
    return n


def nvls_channels(topology: TopologySpec, p: Placement) -> int:
    """comm->nvlsChannels: 16 on Hopper; on Blackwell 24 in one NVLink domain, across domains 32, or 24 where NICs
    of at least 48 GB/s (96 GB/s with up to 8 GPUs a domain) serve more than two domains (transport/nvls.cc); the
    topology's `channels.nvls` where it gives them."""
    if topology.channels and topology.channels.nvls:
        return topology.channels.nvls
    if topology.gpu.arch != "blackwell":
        return NVLS_CHANNELS_SM90
    if p.nodes <= 1:
        return NVLS_CHANNELS_SM100_NVL
    nic = p.rails[0].tier.bandwidth / GB
    if p.nodes == 2 and nic >= 48.0:
        return NVLS_CHANNELS_SM100
    if nic >= 96.0:  # NCCL reads the fewest GPUs any node holds (minLocalRanks)
        return NVLS_CHANNELS_SM100_NVL if math.floor(p.ppn) <= 8 else NVLS_CHANNELS_SM100
    return NVLS_CHANNELS_SM100_NVL if nic >= 48.0 else NVLS_CHANNELS_SM100


def call_channels(topology: TopologySpec, p: Placement, algorithm: str, protocol: str, size: float) -> int:
    """The CTAs one call runs on (enqueue.cc:2070-2096): NVLSTree the NVLS channels, NVLS too (across nodes at most
    the ring's); Ring and Tree the ring's, one fewer while size < channels x threads x bytes per thread; PAT, which
    has no thread count there (tuning.cc:244-256), all of the ring's."""
    if p.ranks <= 1 or size <= 0:
        return 0
    ring = ring_channels(topology, p)
    if algorithm == "nvls_tree":
        return nvls_channels(topology, p)
    if algorithm == "nvls":
        nvls = nvls_channels(topology, p)
        return min(nvls, ring) if p.nodes > 1 else nvls
    if algorithm not in ("ring", "tree", "hierarchical"):
        return ring
    return max(1, min(ring, int(size // bytes_per_channel(p, algorithm, protocol))))


def bytes_per_channel(p: Placement, algorithm: str, protocol: str) -> float:
    """The bytes a Ring or Tree call needs per channel before NCCL keeps another (enqueue.cc:2092-2096):
    threads x bytes per thread, Ring LL's times the ranks (tuning.cc:588-593): 32 KiB for Simple."""
    threshold = THREAD_THRESHOLD.get(protocol, 64) * (p.ranks if algorithm == "ring" and protocol == "ll" else 1)
    return MAX_THREADS.get(protocol, 512) * threshold


def p2p_channels(topology: TopologySpec, p: Placement) -> int:
    """comm->p2pnChannels, the channels an all-to-all's transfers to every peer spread over: the ring's, rounded up
    to a power of two (graph/paths.cc:977-990)."""
    if p.ranks <= 1:
        return 0
    return _pow2_up(ring_channels(topology, p))


def peer_channels(
    topology: TopologySpec, p: Placement, max_peers: int | None = None, release: tuple[int, int] | None = None
) -> int:
    """comm->p2pnChannelsPerPeer, the channels a send and receive to one peer run on (graph/paths.cc:920-1004 at
    2.30.7): inside one node two per NVLink, up to the p2p channels; across nodes one per NIC or one per 14 GB/s of
    it (NCCL_P2P_PER_CHANNEL_NET_BW), 4 for a 400 Gb/s NIC, the fewest over all peers, then halved while they times
    ceil(max_peers / 8) exceed the p2p channels (998-1000), so that every peer's transfers fit one round.
    `max_peers`: the communicator's ranks, unless its config sets fewer (ncclConfig_t.maxP2pPeers, 2.30 and later:
    nccl-tests' sendrecv sets 2 from v2.18.3). `release` (major, minor) before 2.29 (paths.cc:836-851 at 2.28.9):
    across nodes two, halved while twice the ranks exceed four times the ring's channels (and at least one per NIC the
    GPU needs, one here)."""
    if p.ranks <= 1:
        return 0
    p2p = p2p_channels(topology, p)
    if p.nodes <= 1:
        links = _nccl_nvlink_gbs(topology) / NVLINK_GBS[topology.gpu.arch]
        return min(_pow2_up(2 * max(1, int(links))), p2p)
    if release is not None and release < P2P_REWORK_RELEASE:
        legacy = 2  # comm->p2pnChannels is still the ring's there, not yet a power of two
        while legacy * p.ranks > 4 * ring_channels(topology, p) and legacy > 1:
            legacy //= 2
        return min(legacy, p2p)
    nic = p.rails[0].tier.bandwidth / GB
    per_peer = _pow2_up(max(1, math.ceil(int(nic) / P2P_PER_CHANNEL_NET_GBS)))
    rounds = math.ceil((p.ranks if max_peers is None else max_peers) / P2P_PEERS_PER_ROUND)
    while per_peer * rounds > p2p and per_peer > 1:
        per_peer //= 2
    return per_peer


def p2p_chunk(topology: TopologySpec, p: Placement, release: tuple[int, int] | None = None) -> int:
    """comm->p2pChunkSize (init.cc:829-839 at 2.30.7): 128 KiB across NVLink domains, 512 KiB inside one; from 2.29
    (`release` (major, minor) where a run names one) doubled across domains on Arm hosts with Blackwell GPUs (GB200
    and GB300: "GBx platforms only have 4 GPUs per host, which reduces the aggregation factor")."""
    if p.nodes <= 1:
        return P2P_NVL_CHUNK
    doubled = topology.host_cpu == "arm" and topology.gpu.arch == "blackwell"
    return P2P_NET_CHUNK * (2 if doubled and (release is None or release >= P2P_REWORK_RELEASE) else 1)


def send_channels(
    topology: TopologySpec, p: Placement, size: float, per_peer: int, release: tuple[int, int] | None = None
) -> int:
    """The channels one send of `size` bytes on communicator `p` runs on (enqueue.cc:909-929 and 1143-1146 at
    2.30.7, the same in 2.28.9): at most the per-peer channels halved until the ranks fit the p2p channels, and no
    more than the bytes fill half-chunks (eighth-chunks inside an NVLink domain; p2p_chunk, of `release`); then
    doubled, up to `per_peer`, while a channel's part is over a chunk (32 chunks inside an NVLink domain)."""
    if size <= 0:
        return 1
    fewest = per_peer
    while fewest * p.ranks > p2p_channels(topology, p) and fewest > 1:
        fewest //= 2
    chunk = p2p_chunk(topology, p, release)
    least, most = (chunk // 2, chunk) if p.nodes > 1 else (chunk // 8, 32 * chunk)
    channels = min(fewest, math.ceil(size / least))
    part = max(least, math.ceil(size / channels))
    while part > most and channels <= per_peer // 2:
        channels *= 2
        part = math.ceil(size / channels)
    return channels


def _pow2_up(n: int) -> int:
    return 1 << (n - 1).bit_length() if n > 1 else 1


def compute_slowdown(gpu: GPUSpec, ctas: float, given: float | None = None) -> float:
    """How much longer compute takes beside a communication kernel: its CTAs (one per channel, enqueue.cc
    ncclLaunchKernel) each hold an SM while it runs, so the compute gets S - c of the GPU's S SMs and takes
    S / (S - c) as long, c / (S - c) more (16 of an H100's 132: 13.8%; docs/sources/overlap-and-jitter.md). S is an
    H100's 132 where the topology does not give it; `given` (--overlap-slowdown) holds for every call."""
    if given is not None:
        return given
    sms = gpu.sms or ASSUMED_SMS
    return ctas / (sms - ctas) if ctas < sms else 1.0
