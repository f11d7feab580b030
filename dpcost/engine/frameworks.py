"""Frameworks as they run data parallelism: each a preset of the step's schedule and of its memory accounting.

Every default below is the framework's own, cited as file@version; every one can be overridden by its flag
(--recipe, --grad-dtype, --bucket-size, --first-bucket-size, --overlap-comm true|false); --recipe changes the memory
accounting only.

- ddp: PyTorch DistributedDataParallel (torch/nn/parallel/distributed.py@v2.5.0). ZeRO-0 only. Gradients are
  all-reduced in buckets of bucket_cap_mb=25 MiB, the first bucket capped at 1 MiB (_DEFAULT_FIRST_BUCKET_BYTES) so
  that communication starts early; a bucket takes whole tensors and closes once it reaches its cap, so a tensor
  larger than the cap goes alone (reducer.cpp compute_bucket_assignment_by_size); buckets overlap the backward
  pass. Under torch.autocast the parameters and gradients are fp32: 4 + 4 + 8 (Adam) bytes per parameter, and DDP's
  bucket copy of the gradients (gradient_as_bucket_view=False, the default). torch.optim's AdamW as PyTorch runs it
  by default on CUDA since 2.0: foreach (torch/optim/optimizer.py _default_to_fused_or_foreach).
- fsdp: PyTorch FSDP (torch/distributed/fsdp/fully_sharded_data_parallel.py@v2.5.0; FSDP2 runs the same schedule).
  NO_SHARD (ZeRO-0), SHARD_GRAD_OP (ZeRO-2) and FULL_SHARD (ZeRO-3) over wrapped units (one per transformer block).
  Every unit's parameters are all-gathered before its forward; FULL_SHARD frees them after the forward and gathers
  them again for the backward, SHARD_GRAD_OP keeps them to the end of the backward and so gathers once per
  micro-batch. Gradients are reduce-scattered per unit right after its backward. Mixed precision as llm-foundry and
  torchtitan set it: bf16 parameters for compute (the gathers move 2 bytes per parameter), fp32 reduction (4 bytes).
  Memory: sharded fp32 parameters + fp32 gradients + Adam = 16 bytes per parameter over N, plus the gathered bf16
  units in flight (SHARD_GRAD_OP: the whole model during the backward).
- deepspeed: DeepSpeed ZeRO (deepspeed/runtime/zero/config.py@v0.16.0). Stages 0-3; gradients reduced in
  reduce_bucket_size buckets of 5e8 elements (stage 3 too, cut at unit boundaries), each bucket of stages 1-2 by an
  all-reduce (stage_1_and_2.py allreduce_bucket, with the defaults reduce_scatter=True and
  use_multi_rank_bucket_allreduce=True), the updated parameters of stages 1-2 gathered once per parameter group
  (runtime/utils.py all_gather_into_tensor_dp_groups); overlap_comm False by default for stages 1-2
  (gradient reduction runs on the compute stream: nothing hides) and True for stage 3 (stage3 overrides it); stage-3
  parameters prefetched one unit ahead (stage3_prefetch_bucket_size 5e7 elements). Gradients reduced in the model's
  bf16. Memory: what its ZeRO optimizers and reduce buckets allocate at v0.19.5 (memory.py: recipe deepspeed,
  deepspeed_buckets, step_gradient_copies; docs/sources/deepspeed-memory.md).
- megatron: Megatron-LM's distributed optimizer (megatron/core/distributed/distributed_data_parallel_config.py
  @core_r0.9.0). ZeRO-0 (DDP) or ZeRO-1 (--use-distributed-optimizer); ZeRO 2-3 is Megatron-FSDP (below). Buckets of
  max(40M, 1M x DP) elements; --overlap-grad-reduce and --overlap-param-gather as its pretraining scripts set them
  (parameters gathered during the next forward; modelled block by block, where Megatron gathers per bucket);
  gradients accumulated and reduced in fp32 with bf16 training (accumulate_allreduce_grads_in_fp32). Memory: 18
  bytes per parameter, 6 + 12/d sharded; 20, or 4 + 16/d, with 16-bit gradients (its docs' table).
- Megatron-FSDP (megatron/core/distributed/fsdp/ at Megatron-LM d98e8a64dd, MEGATRON_FSDP): Megatron at ZeRO 2 and 3
  (--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads, optim_grads_params), in a TP/CP/PP/EP layout
  or with --framework megatron alone, costed by the layout engine (Options.megatron_layout). Each TransformerLayer
  is a unit (mcore_fsdp_adapter.py FullyShardedDataParallelV1); parameters, gradients and optimizer states are
  sharded over DP x CP, the experts' over expert-DP (_init_dist_index). optim_grads keeps a full replica of the
  parameters, the updated ones gathered unit by unit during the next forward (distrib_optimizer.py start_param_sync
  with --overlap-param-gather); optim_grads_params gathers each unit before its forward, frees it after, and gathers
  it again for its backward (megatron_fsdp.py _post_forward, _pre_backward_param_unshard), prefetching following
  units until max(1e9, 2 x a unit's elements) / 2 elements are on their way (param_and_grad_buffer.py
  all_gather_params, megatron_fsdp.py suggested_communication_unit_size). Both reduce-scatter each unit's gradients
  after its backward on every micro-batch, no_sync or not (megatron_fsdp.py: grad_reduce_every_bprop), into a
  sharded main gradient in the parameters' dtype (bf16: main_grads_dtype "auto"; grad_reduce_in_fp32 does not reach
  it). The embedding, the output layer and the final norm are in no unit: gathered by their own forward hooks and
  kept through the step (param_and_grad_buffer.py AllGatherPipeline.reset marks them PRESERVED).
Activations and the loss: Megatron runs fused kernels and its vocab-parallel cross-entropy, the others PyTorch's eager
modules and an upcast cross-entropy (activations.py, loss.py). Checkpointing: torchtitan (fsdp) runs per-op SAC or full
per-block checkpointing (torchtitan/config_manager.py, activation_checkpoint.mode); Megatron selective (of its
--recompute-modules) or full; DDP and DeepSpeed models as Hugging Face's gradient_checkpointing_enable runs them,
every decoder layer in full (docs/sources/checkpointing.md).
"""

from __future__ import annotations

from dataclasses import replace

from dpcost.engine.activations import Kernels
from dpcost.frozen import frozen

__all__ = ["FRAMEWORKS", "MEGATRON_FSDP", "MEGATRON_FSDP_PREFETCH_FLOOR", "Framework", "megatron_count_bucket"]

MIB = 2**20


@frozen
class Framework:
    name: str  # also its memory recipe (memory.RECIPES), whose gradient dtype its reduction moves
    title: str
    stages: dict[int, str]  # the ZeRO stages it runs, by its own name for them
    gather_bytes: float | None  # bytes per parameter its gathers move (None: the recipe's weight bytes)
    bucket_elements: float | None  # gradient bucket in elements (None: bucket_bytes)
    bucket_elements_per_rank: float  # Megatron grows its buckets with DP
    bucket_bytes: float | None  # gradient bucket in bytes (DDP's bucket_cap_mb)
    first_bucket_bytes: float  # 0: the first bucket is as large as the others
    per_unit: bool  # reduce (and gather) per wrapped unit rather than in buckets (FSDP)
    gather_calls: int  # stages 1-2: the updated parameters gathered in this many calls, one per group (0: per unit)
    stage3_reduce_buckets: bool  # stage 3: gradients leave in the reduce buckets, not one call per unit
    overlap_grad_reduce: tuple[int, ...]  # stages whose gradient reduction overlaps the backward pass
    overlap_param_gather: bool  # ZeRO-1/2: gather updated parameters during the next forward (Megatron)
    source: str
    loss_impl: str = "upcast"  # how its loss holds the logits (loss.py)
    kernels: Kernels = "eager"  # how its layers run (activations.py): PyTorch ops, or Megatron's fused kernels
    # its attention kernel (rates.py): PyTorch SDPA's FlashAttention-2, or cuDNN's through Transformer Engine
    attention_kernel: str = "flash2"
    recompute: tuple[str, ...] = ("none", "full")  # the checkpointing policies it runs (checkpointing.py)
    bucket_op: str = "reduce_scatter"  # stages 1-2: the collective each gradient bucket runs
    bucket_rule: str = "after"  # how its buckets take whole tensors (step.bucket_edges)
    one_bucket_unoverlapped: bool = False  # without overlap it reduces the whole gradient in one bucket (Megatron)
    optimizer_impl: str = "fused"  # how its AdamW steps (memory.optimizer_intermediates)

    def bucket(self, dp: int, grad_bytes: float) -> float:
        """Bytes per gradient bucket at this DP size and gradient dtype (0: it reduces per unit, no buckets)."""
        if self.bucket_elements is not None:
            return max(self.bucket_elements, self.bucket_elements_per_rank * dp) * grad_bytes
        return self.bucket_bytes or 0.0

    def bucket_ran(self, dp: int, grad_bytes: float, given: float | None, overlapped: bool, whole: float) -> float:
        """Bytes per gradient bucket a step runs: the `whole` gradient (bytes) in one where the framework turns
        bucketing off without overlap, else `given` (--bucket-size), else its own (bucket)."""
        if self.one_bucket_unoverlapped and not overlapped:
            return whole
        return given or self.bucket(dp, grad_bytes)

    def gather_calls_ran(self, overlapped: bool) -> int:
        """Stages 1-2: the calls that gather the updated parameters: its one bucket where it turns bucketing off
        without overlap (bucket_ran), else gather_calls."""
        return 1 if self.one_bucket_unoverlapped and not overlapped else self.gather_calls


FRAMEWORKS = {
    "ddp": Framework(
        name="ddp",
        title="PyTorch DDP",
        stages={0: "DDP"},
        gather_bytes=None,
        bucket_elements=None,
        bucket_elements_per_rank=0.0,
        bucket_bytes=25 * MIB,
        first_bucket_bytes=1 * MIB,
        per_unit=False,
        gather_calls=0,
        stage3_reduce_buckets=False,
        overlap_grad_reduce=(0,),
        overlap_param_gather=False,
        source="torch/nn/parallel/distributed.py@v2.5.0: bucket_cap_mb=25, _DEFAULT_FIRST_BUCKET_BYTES=1 MiB",
        optimizer_impl="foreach",
    ),
    "fsdp": Framework(
        name="fsdp",
        title="PyTorch FSDP",
        stages={0: "NO_SHARD", 2: "SHARD_GRAD_OP", 3: "FULL_SHARD"},
        gather_bytes=2.0,
        bucket_elements=None,
        bucket_elements_per_rank=0.0,
        bucket_bytes=None,
        first_bucket_bytes=0.0,
        per_unit=True,
        gather_calls=0,
        stage3_reduce_buckets=False,
        overlap_grad_reduce=(0, 2, 3),
        overlap_param_gather=False,
        source="torch/distributed/fsdp/fully_sharded_data_parallel.py@v2.5.0: ShardingStrategy; MixedPrecision"
        "(param_dtype=bf16, reduce_dtype=fp32) as llm-foundry and torchtitan configure it",
        recompute=("none", "op", "full"),
    ),
    "deepspeed": Framework(
        name="deepspeed",
        title="DeepSpeed ZeRO",
        stages={0: "stage 0", 1: "stage 1", 2: "stage 2", 3: "stage 3"},
        gather_bytes=None,
        bucket_elements=5e8,
        bucket_elements_per_rank=0.0,
        bucket_bytes=None,
        first_bucket_bytes=0.0,
        per_unit=False,
        gather_calls=1,
        stage3_reduce_buckets=True,
        overlap_grad_reduce=(3,),
        overlap_param_gather=False,
        source="deepspeed/runtime/zero/config.py@v0.16.0: reduce_bucket_size=5e8, overlap_comm=False (stage 3: "
        "True), stage3_prefetch_bucket_size=5e7, reduce_scatter=True, use_multi_rank_bucket_allreduce=True",
        bucket_op="all_reduce",
        bucket_rule="before",
    ),
    "megatron": Framework(
        name="megatron",
        title="Megatron-LM",
        stages={0: "DDP", 1: "distributed optimizer"},
        gather_bytes=None,
        bucket_elements=4e7,
        bucket_elements_per_rank=1e6,
        bucket_bytes=None,
        first_bucket_bytes=0.0,
        per_unit=False,
        gather_calls=0,
        stage3_reduce_buckets=False,
        overlap_grad_reduce=(0, 1),
        overlap_param_gather=True,
        source="megatron/core/distributed/distributed_data_parallel_config.py@core_r0.9.0: bucket_size "
        "max(40000000, 1000000 x dp); --overlap-grad-reduce, --overlap-param-gather; distributed_data_parallel.py: "
        "bucket_size None (one bucket) without overlap_grad_reduce",
        loss_impl="vocab-parallel",
        kernels="fused",
        attention_kernel="cudnn",
        recompute=("none", "selective", "full"),
        one_bucket_unoverlapped=True,
    ),
}

# Megatron-FSDP's sharding strategies (module docstring): a layout's ZeRO stages 2 and 3. Not a pure-DP framework.
MEGATRON_FSDP = replace(
    FRAMEWORKS["megatron"],  # Megatron-LM's kernels, loss, recomputation and memory recipe
    title="Megatron-FSDP",
    stages={0: "no_shard", 1: "optim", 2: "optim_grads", 3: "optim_grads_params"},
    bucket_elements=None,
    bucket_elements_per_rank=0.0,
    per_unit=True,
    overlap_grad_reduce=(0, 1, 2, 3),
    source="megatron/core/distributed/fsdp/src/megatron_fsdp/megatron_fsdp.py at Megatron-LM d98e8a64dd: "
    "data_parallel_sharding_strategy, grad_reduce_every_bprop; param_and_grad_buffer.py",
)
# The least a ZeRO-3 unit's gather prefetches: suggested_communication_unit_size's floor of 1e9 elements, halved
# (megatron_fsdp.py: suggested_AG_prefetch_size = max(1e9, 2 x the mean unit's elements) // 2)
MEGATRON_FSDP_PREFETCH_FLOOR = 1e9 / 2


def megatron_count_bucket(rank_params: float, count: int) -> float:
    """Elements per DP gradient bucket under Megatron's --ddp-num-buckets N: the GPU's parameters (all its model
    chunks', experts included) // N (training.py resolve_ddp_bucket_size at d98e8a64dd; get_model since core_r0.12.0),
    a first pipeline stage's, the only one Megatron buckets (distributed_data_parallel.py). Under 1 element each
    parameter closes its own bucket, as a bucket of 1 cuts them."""
    return float(max(1, int(rank_params) // count))
