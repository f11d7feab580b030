"""Where public nccl-tests runs disagree with NCCL's tuner in absolute time, and what dpcost uses instead.

NCCL's tuner only has to rank algorithms for one call, so its constants can be off in absolute time and still
choose well. dpcost predicts time, so it keeps NCCL's structure (nccl_tables.py) and corrects two hop latencies
that public multi-node runs contradict by a wide margin. Both are fitted to the eight public H100 InfiniBand runs
in tests/reference/nccl-tests/ (h100-2n/4n/8n-all_reduce-nccltests309*, h100-ndr-x2-ring-all_reduce.csv,
h100-128n-all_reduce-ring-nccltests322.csv; benchmarks/fit_corrections.py reproduces the fit), rounded, and
scaled like every other latency by a topology's calibrated `latency_scale`.
"""

from __future__ import annotations

from functools import cache

from dpcost.engine import nccl_tables as nccl

__all__ = ["NET_LL128_FACTOR", "NVLS_TREE_NET_US", "hw_latency"]

# LL128 across the network: NCCL rates a Ring hop at 4.0 us and a Tree hop at 8.5 us; the public 2-8 node runs
# (1-16 MiB, Ring forced and default) take as long as if each hop cost about four times that, i.e. about what a
# Simple hop costs. LL128's flags must reach the peer through the proxy and the NIC like Simple's chunks.
NET_LL128_FACTOR = 4.0
# NVLSTree: NCCL rates each level of the inter-node tree at 20.9 us (tuning.cc hwLat NET NVLS_TREE); public
# default all-reduce runs on 2, 4 and 8 nodes reach full bandwidth only past 256 MiB, an extra 150-300 us that
# grows with the tree's depth: about 100 us per level up and down.
NVLS_TREE_NET_US = 80.0


@cache  # a handful of (link, algorithm, protocol), asked for at every step of every priced call
def hw_latency(link: str, algorithm: str, protocol: str) -> float:
    """NCCL's hwLatencies (us), with the two network hops above replaced by what public runs show."""
    if link == "net" and algorithm == "nvls_tree":
        return NVLS_TREE_NET_US
    value = nccl.hw_latency(link, algorithm, protocol)
    if link == "net" and protocol == "ll128":
        return value * NET_LL128_FACTOR
    return value
