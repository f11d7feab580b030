"""The host's share of a step: Megatron-Core's MoE layers wait for the CPU that launches their kernels.

A dropless MoE layer learns on the GPU how many tokens each expert gets, and its dispatcher needs those counts on the
host to size its buffers and its all-to-all (megatron/core/transformer/moe/token_dispatcher.py at d98e8a64dd):
MoEAlltoAllTokenDispatcher.preprocess sets a `cuda_sync_point` ("before_ep_alltoall" with EP or TP above 1,
"before_finish" without) where `_maybe_dtoh_and_synchronize` waits on the device; `_DeepepManager.dispatch` takes the
counts back from DeepEP's fused dispatch as a host list; `_HybridEPManager` sizes its buffers with a CPU sync unless
`moe_expert_rank_capacity_factor` bounds them ("None means no up-bound, will cause a CPU sync"). So once a layer, the
host waits for the GPU to drain, and the GPU then runs no faster than eager PyTorch, Transformer Engine and the
router's Python launch the layer's work: where a layer's kernels are short (few tokens per expert, a small micro-batch,
a fast GPU) the GPU idles between launches. Megatron-Bridge's documentation names it ("CUDA graphs mainly solve
launch-bound training steps where GPU compute is fast enough that repeated host-driver submission overhead becomes
noticeable", docs/training/cuda-graphs.md).

Priced per micro-batch on each pipeline stage (host_wait_seconds): its MoE layers (MTP's too) take at least
`moe_host_seconds` each, forward and backward together; what the host adds is that, less the stage's compute, or
nothing where the compute is longer. The stage that paces the pipeline is the one whose compute and wait are the
longest, and the wait fills its bubble slots as its compute does.

Not priced: the other layers' host time (without a sync the host runs ahead of them), the forward that recomputation
re-runs, and the partial CUDA graphs of Transformer Engine's scopes (attn, moe_router, moe_preprocess), which take
part of the host's work away. Megatron's full-iteration CUDA graphs (--cuda-graph-impl full_iteration, with
moe_expert_rank_capacity_factor sizing HybridEP without a sync: Megatron-Bridge v0.6.0
perf_recipes/qwen/common.py _enable_hybridep_full_iteration_mxfp8) replay the whole step without the host: priced
with `--moe-host-time 0`. Nor for any framework but Megatron-Core, nor for pure data parallelism (no layout).

MOE_LAYER_HOST_SECONDS is fitted, as nothing published gives a layer's host time: the value of
benchmarks/large_runs.py's FIT_HOST_GRID (0 to 16 ms in steps of 1 ms) with the least geomean error over its
in-sample runs (runs.csv; `large_runs.py --fit-host`), 7 ms: 5.23% against 5.43% without it. The fit is shallow:
7 to 12 ms all read 5.23-5.38%, as only the runs whose MoE layers compute for less than that move, in sample three
Megatron-Bridge 25.11 Qwen3-235B rows.
It is checked out of sample, on the held-out Megatron-Bridge and NeMo tables, in the README. `--moe-host-time`
replaces it.
"""

from __future__ import annotations

__all__ = ["MOE_LAYER_HOST_SECONDS", "host_wait_seconds"]

# A Megatron-Core MoE layer's host time, forward and backward of one micro-batch (module docstring: fitted)
MOE_LAYER_HOST_SECONDS = 7e-3


def host_wait_seconds(compute_seconds: float, moe_layers: int, moe_host_seconds: float) -> float:
    """Seconds one micro-batch of a stage waits for the host beyond its compute: its `moe_layers` MoE layers at
    `moe_host_seconds` each, less the `compute_seconds` (forward and backward) the GPU spends on the stage."""
    return max(0.0, moe_layers * moe_host_seconds - compute_seconds)
