"""NCCL's tuning constants, as NVIDIA/nccl src/graph/tuning.cc writes them, in its order, at one version.

Every table below is NCCL's own (microseconds, GB/s), transcribed in the source's order; the logic that uses them
is described in docs/sources/nccl-tuning.md and coded in collectives.py. tests/test_nccl_tables.py holds these
tables to the provenance-stamped transcription in tests/reference/nccl/tuning-tables.json. To follow a newer NCCL,
update both, and the version below.
"""

from __future__ import annotations

import math

__all__ = ["NCCL_VERSION"]

NCCL_VERSION = "2.30.7-1"
NCCL_SOURCE = "NVIDIA/nccl:src/graph/tuning.cc@v2.30.7-1 (commit 73cf112295c33aee2b895f329f592f2a9b4b0f97)"

# Index orders (src/include/plugin/nccl_tuner.h)
ALGORITHM_ORDER = ("tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat")
PROTOCOL_ORDER = ("ll", "ll128", "simple")
LINK_ORDER = ("nvlink", "pci", "net")
ARCH_ORDER = ("volta", "ampere", "hopper", "blackwell")  # compCapIndex
SCALE_ORDER = ("N1", "N2", "N4")  # 1 node, 2 nodes, more

# fmt: off
# tuning.cc:138-144 nvlsEfficiency[compCapIndex]
NVLS_EFFICIENCY = (0.0, 0.0, 0.85, 0.74)

# tuning.cc:149-155 baseLatencies[algorithm][protocol], us
BASE_LAT = (
    (6.8, 14.0, 8.4), (6.6, 14.0, 8.4), (0, 0, 0), (0, 0, 0), (0, 0, 0), (0, 0, 0), (8.0, 8.0, 8.0),
)
# tuning.cc:156-176 hwLatencies[link][algorithm][protocol], us per hop
HW_LAT = (
    ((0.6, 1.25, 4.0), (0.6, 1.9, 3.4), (0, 0, 3.7), (0, 0, 2.8), (0, 0, 25), (0, 0, 25), (0, 0, 4.0)),  # NVLINK
    ((1.0, 1.9, 4.0), (1.0, 2.5, 5.7), (0, 0, 3.7), (0, 0, 2.8), (0, 0, 0), (0, 0, 0), (0, 0, 4.0)),  # PCI
    ((5.0, 8.5, 14), (2.7, 4.0, 14.0), (0, 0, 31), (0, 0, 30), (0, 0, 18), (0, 0, 20.9), (0, 0, 14)),  # NET
)
# tuning.cc:177-183 llMaxBws[index1][N1, N2, N4], GB/s of bus bandwidth; index1 = compCapIndex on one node,
# else 0 (Intel or other CPU) or 1 (AMD)
LL_MAX_BWS = ((39.0, 39.0, 20.4), (87.7, 22.5, 19.0), (141.0, 45.0, 35.0), (282.0, 90.0, 70.0))
# tuning.cc:184-211 per-channel caps [compCapIndex][N1, N2, N4], GB/s
PER_CH_MAX_RING_LL128_BWS = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 36.7), (40.0, 40.0, 40.0))
PER_CH_MAX_TREE_LL128_BWS = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 29.0), (55.6, 31.67, 20.0))
PER_CH_MAX_TREE_BWS = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0), (70.0, 42.8, 24.0))
PER_CH_MAX_NVLS_TREE_BWS = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (0.0, 57.7, 45.5), (0.0, 96.0, 80.0))
# tuning.cc:620-627 treeCorrectionFactor[protocol][floor(log2(bytes / 64))]
TREE_CORRECTION_FACTOR = (
    (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0),
    (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0),
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9),
)
# search.cc:1052-1065 the per-channel bandwidths the graph search tries across nodes (speedArrayInter), GB/s,
# by compute capability: below sm90, sm90, sm100 and later
SPEED_ARRAY_INTER = (
    (48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2, 0.24, 0.12),
    (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12),
    (96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24,
     0.12),
)
# fmt: on

# Constants written inline in ncclTopoTuneModel / ncclTopoGetAlgoTime (tuning.cc line numbers at 2.30.7)
NET_OVERHEAD_US = {"intel": 1.0, "amd": 2.0, "arm": 1.0}  # :228-233, x3 for Simple (:408)
NET_OVERHEAD_SIMPLE = 3
RING_LL = 0.5  # :327 Ring LL keeps half the bus bandwidth, then min(llMaxBw)
RING_LL128 = 0.92  # :328-329 "120.0/128.0"
TREE_ALLREDUCE = 0.92  # :330-331
TREE_LL = 1 / 3.8  # :332
TREE_LL128_ONE_NODE = 7 / 9  # :333-335
TREE_LL128_NODES = 120 / 128
PAT = 0.75  # :337
RING_PLATEAU = 1.4  # :647-650 multi-node Ring/Simple all-reduce latency ("plateau effect of ring")
RING_PLATEAU_BYTES = 64  # ... once nBytes / (nChannels x nRanks) >= 64 (nccl_channels.ring_channels)
PAT_LOG_DIVISOR = 3.5  # :432
PAT_PER_RANK_US = 2.8  # :433
COLLNET_ARITY_US = 0.4  # :419-421

# The LL protocol's FIFO between two ranks of a channel, in data bytes (src/include/device.h:26,97-98 at v2.30.7-1):
# NCCL_STEPS steps of NCCL_LL_LINES_PER_THREAD x NCCL_LL_MAX_NTHREADS lines, each line 8 bytes of data beside its
# flags; a sender waits for its receiver only when NCCL_STEPS steps ahead (src/device/prims_ll.h:76)
LL_FIFO_DATA_BYTES = 8 * 8 * 512 * 8


def _a(algorithm: str) -> int:
    return ALGORITHM_ORDER.index(algorithm)


def _p(protocol: str) -> int:
    return PROTOCOL_ORDER.index(protocol)


def _scale(nodes: int) -> int:
    return 0 if nodes <= 1 else 1 if nodes == 2 else 2


def base_latency(algorithm: str, protocol: str) -> float:
    """baseLatencies[algorithm][protocol] (us)."""
    return BASE_LAT[_a(algorithm)][_p(protocol)]


def hw_latency(link: str, algorithm: str, protocol: str) -> float:
    """hwLatencies[link][algorithm][protocol]: one hop (us)."""
    return HW_LAT[LINK_ORDER.index(link)][_a(algorithm)][_p(protocol)]


def ll_max_busbw(arch: str, cpu: str, nodes: int) -> float:
    """llMaxBws: LL's bus bandwidth ceiling (GB/s), by GPU generation on one node, by CPU vendor across nodes."""
    row = ARCH_ORDER.index(arch) if nodes <= 1 else (1 if cpu == "amd" else 0)
    return LL_MAX_BWS[row][_scale(nodes)]


def protocol_bandwidth(family: str, protocol: str, nodes: int = 2) -> float:
    """The share of Simple's bus bandwidth a protocol keeps (tuning.cc:327-337)."""
    if protocol == "simple":
        return 1.0
    if family == "ring":
        return RING_LL if protocol == "ll" else RING_LL128
    if protocol == "ll":
        return TREE_LL
    return TREE_LL128_ONE_NODE if nodes <= 1 else TREE_LL128_NODES


def tree_correction(size: float, protocol: str) -> float:
    """treeCorrectionFactor for a Tree all-reduce of `size` bytes (64 B - 256 MiB; 1 elsewhere)."""
    index = int(math.log2(size / 64)) if size >= 64 else -1
    return TREE_CORRECTION_FACTOR[_p(protocol)][index] if 0 <= index < 23 else 1.0


def nvls_tree_correction(size: float, arch: str, cpu: str) -> float:
    """A Blackwell NVLSTree all-reduce on an x86 host takes treeCorrectionFactor[Simple][log2(size / 64)] too, for
    log sizes 0-23 (tuning.cc ncclTopoGetAlgoTime: `minCompCap >= 100 && cpuArch == NCCL_TOPO_CPU_ARCH_X86`)."""
    if arch != "blackwell" or cpu not in ("intel", "amd"):
        return 1.0
    index = int(math.log2(size / 64)) if size >= 64 else -1
    return TREE_CORRECTION_FACTOR[_p("simple")][index] if 0 <= index < 24 else 1.0


def tree_channel_cap(arch: str, protocol: str, nodes: int) -> float | None:
    """perChMaxTreeBws / perChMaxTreeLL128Bws: the bus bandwidth one Tree channel reaches (GB/s), by GPU generation
    and node count (tuning.cc:330-335, `busBw = min(busBw * .92, nChannels * perChMaxTreeBw)`); LL has llMaxBw."""
    if protocol == "ll":
        return None
    table = PER_CH_MAX_TREE_BWS if protocol == "simple" else PER_CH_MAX_TREE_LL128_BWS
    return table[ARCH_ORDER.index(arch)][_scale(nodes)]


def net_overhead(cpu: str, protocol: str) -> float:
    """Per-step floor of a multi-node ring's intra-node steps (us): the proxy's network overhead."""
    return NET_OVERHEAD_US[cpu] * (NET_OVERHEAD_SIMPLE if protocol == "simple" else 1)
