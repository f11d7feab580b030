"""Serving: replicas answer independent requests, so DP exchanges no gradients and moves zero bytes.

Memory per replica = bf16 weights + KV cache (seq_len x batch), split over the fewest GPUs (a power of two, as
tensor/pipeline degrees are) on which each keeps the runtime allowance too. Decode throughput per replica =
batch / max(compute time, time to read the weights it touches and the KV cache from HBM, a kv-shared layer reading
its producer's again: activations.kv_read_bytes) per token step, with k
GPUs giving k times the bandwidth and FLOP/s (ideal model parallelism, outside this tool).
"""

from __future__ import annotations

from dpcost.engine.activations import kv_cache_bytes, kv_read_bytes
from dpcost.engine.compute import attention_flops, recurrence_flops
from dpcost.engine.memory import context_bytes
from dpcost.engine.params import ParamCount
from dpcost.frozen import frozen
from dpcost.specs import ModelArchitecture, TopologySpec

__all__ = ["Replica", "decode_flops_per_token", "decode_weight_bytes", "replica"]


def decode_flops_per_token(counts: ParamCount, a: ModelArchitecture | None, seq_len: int) -> float:
    """FLOPs of one decode step for one sequence: 2 per weight the new token multiplies (active parameters
    without the input lookups, the output projection included even when tied to the embedding) plus its
    attention over the keys each layer keeps, 2 L H (d_qk + d_v) T (PaLM appendix B, for one query token; a
    sliding-window or chunked layer reads at most its window or chunk: attention_keys.cached_keys)."""
    head = counts.embedding if a is not None and a.tied_embeddings else 0.0
    flops = 2.0 * (counts.active_excl_embedding + head)
    if a is not None:
        flops += attention_flops(a, seq_len, decode=True)  # one new token attends to the keys each layer keeps
        flops += recurrence_flops(a, decode=True)  # and the recurrent layers step their state once
    return flops


def decode_weight_bytes(counts: ParamCount, a: ModelArchitecture | None, batch: int) -> float:
    """bf16 weight bytes one decode step reads from HBM: every weight but the input lookup tables (a row per
    token; the embedding is read whole only as a tied output head) and what text never runs (Mllama's
    cross-attention, ERNIE-4.5-VL's vision experts), and of each MoE layer's routed experts (and JetMoE's attention
    experts) the expected number that `batch` tokens touch when routed uniformly, E (1 - (1 - k/E)^B). Weights a
    token runs more than once a step (Dory's looped layers, Zamba's shared blocks) are read at each run: a model's
    weights do not stay in the L2 cache between its layers."""
    tied = a is not None and a.tied_embeddings
    reruns = sum(b.active - b.params for b in counts.blocks if b.active > b.params)
    weights = 2.0 * (counts.total - counts.lookups - counts.idle + reruns + (counts.embedding if tied else 0.0))
    if a is None or a.moe is None:
        return weights
    parts = dict(counts.components)
    weights -= 2.0 * parts["routed experts"] * (1 - a.moe.active / a.moe.experts) ** batch
    if a.attention_experts is not None:
        weights -= 2.0 * parts["attention experts"] * (1 - a.moe.active / a.attention_experts) ** batch
    return weights


@frozen
class Replica:
    """One serving replica: its memory, the GPUs it needs, and its decode rate."""

    weights: float
    kv: float
    gpus: int
    per_gpu: float
    tokens_per_second: float
    bound: str


def replica(
    counts: ParamCount, a: ModelArchitecture | None, topology: TopologySpec, seq_len: int, batch: int, mfu: float
) -> Replica:
    """Memory, GPUs and decode throughput of one replica (see the module docstring)."""
    weights = 2.0 * counts.total
    kv = kv_cache_bytes(a, seq_len, batch) if a else 0.0
    gpus = 1
    context = context_bytes(topology.gpu)
    while (weights + kv) / gpus + context > topology.gpu.hbm and gpus < 1 << 20:
        gpus *= 2
    per_gpu = (weights + kv) / gpus + context
    t_compute = decode_flops_per_token(counts, a, seq_len) * batch / (topology.gpu.bf16_dense * mfu * gpus)
    read = kv_read_bytes(a, seq_len, batch) if a else 0.0  # a kv-shared layer reads its producer's cache again
    t_memory = (decode_weight_bytes(counts, a, batch) + read) / (topology.gpu.hbm_bandwidth * gpus)
    bound = "memory bandwidth" if t_memory >= t_compute else "compute"
    return Replica(weights, kv, gpus, per_gpu, batch / max(t_compute, t_memory), bound)
