"""The host's share of a step: Megatron-Core's MoE layers wait for the CPU that launches their kernels.

A dropless MoE layer learns on the GPU how many tokens each expert gets, and its dispatcher needs those counts on the
host to size its buffers and its all-to-all (megatron/core/transformer/moe/ at d98e8a64dd):
MoEAlltoAllTokenDispatcher.preprocess sets a `cuda_sync_point` (token_dispatcher.py; where depends on EP, TP, a
capacity factor and the permute fusion, EP 1 included), at which `_maybe_dtoh_and_synchronize` waits on the device;
DeepEP's fused dispatch returns the counts as a host list ("the CPU will wait for GPU's signal to arrive, so this is
not compatible with CUDA graph", fused_a2a.py); `_HybridEPManager` sizes its buffers with a CPU sync ("None means no
up-bound, will cause a CPU sync") unless drop-and-pad or `moe_expert_rank_capacity_factor` bounds them. So once a
layer the host waits for the GPU to drain, and the GPU then runs no faster than eager PyTorch, Transformer Engine
and the router's Python launch the layer's work: where a layer's kernels are short (few tokens per expert, a small
micro-batch, a fast GPU) the GPU idles between launches. Megatron-Core's MoE README lists this "CPU Overhead
Bottleneck" ("gaps between GPU kernels where CPU cannot launch kernels fast enough"; its remedies: partial CUDA graphs,
a smaller TP, a larger micro-batch).

Priced per micro-batch on each pipeline stage (host_wait_seconds): its MoE layers (MTP's too) take at least
`moe_host_seconds` each, forward and backward together, and the GPU's own slot (its compute, the calls it leaves
exposed, the compute slowed beside the overlapped ones, the slowest GPU's lag) runs under that; what the host adds is
the rest, or nothing where the GPU's slot is longer. The stage whose compute, or host time, is the longest paces the
pipeline, and the wait fills its bubble slots as its compute does.

Not priced: the other layers' host time (without a sync the host runs ahead of them), the forward that recomputation
re-runs, and the partial CUDA graphs of Transformer Engine's scopes (attn, moe_router, moe_preprocess), which take
part of the host's work away. Megatron's full-iteration CUDA graphs (--cuda-graph-impl full_iteration, with
moe_expert_rank_capacity_factor sizing HybridEP without a sync: Megatron-Bridge v0.6.0
perf_recipes/qwen/common.py _enable_hybridep_full_iteration_mxfp8) replay the whole step without the host, and a
dispatcher that needs no count from the device (drop-and-pad, HybridEP's static budget) leaves it nothing to wait
for: priced with `--moe-host-time 0`. Nor for any framework but Megatron-Core, nor for pure data parallelism (no
layout), which refuses a time above 0.

MOE_LAYER_HOST_SECONDS is fitted, as nothing published gives a layer's host time: the value of
benchmarks/large_runs.py's FIT_HOST_GRID (0 to 16 ms in steps of 1 ms) with the least geomean error over its
in-sample runs (runs.csv; `large_runs.py --fit-host`), 13 ms: 5.17% against 5.43% without it. It rests on little:
only runs whose MoE layers' GPU slot is shorter than the host time move, in sample three Megatron-Bridge 25.11
Qwen3-235B rows, two eager (H100, B200: -27% and -46% without it, -1% and +4% with it) and one whose preset graphs the
attention, the router and the preprocessing (GB200: -6% to +53%, those graphs not priced); the curve is ragged
(7-11 ms 5.39-5.43%, 12-15 ms 5.17-5.35%). It is checked out of sample, on the held-out Megatron-Bridge and NeMo
tables, in the README. `--moe-host-time` replaces it.
"""

from __future__ import annotations

__all__ = ["MOE_LAYER_HOST_SECONDS", "host_wait_seconds"]

# A Megatron-Core MoE layer's host time, forward and backward of one micro-batch (module docstring: fitted)
MOE_LAYER_HOST_SECONDS = 13e-3


def host_wait_seconds(compute_seconds: float, moe_layers: int, moe_host_seconds: float) -> float:
    """Seconds one micro-batch of a stage waits for the host beyond its compute: its `moe_layers` MoE layers at
    `moe_host_seconds` each, less the `compute_seconds` (forward and backward) the GPU spends on the stage."""
    return max(0.0, moe_layers * moe_host_seconds - compute_seconds)
