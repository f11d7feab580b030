"""Memory per GPU by ZeRO stage: model states from a precision/optimizer recipe, activations, buffers, fit.

Stages (Rajbhandari et al. 2020, "ZeRO", section 5): 0 = DDP, every state replicated; 1 shards optimizer
states; 2 also gradients; 3 also parameters (FSDP FULL_SHARD). A recipe lists the bytes per parameter of each
state and the stage from which it is sharded over the N data-parallel ranks:
- zero-paper: 2 (fp16 weights) + 2 (fp16 grads) + K = 12 (fp32 master, momentum, variance): the paper's
  16 Psi baseline and Table 1 (tests/reference/zero-paper-table1.csv).
- deepspeed: what DeepSpeed's ZeRO optimizers hold (deepspeed v0.19.5, docs/sources/deepspeed-memory.md): bf16
  weights 2, fp32 master 4 and Adam 8; bf16 gradients 2 from the backward to the optimizer step (param.grad at
  stages 0-1, the rank's contiguous partition at stage 2), or, at stage 3, a flat partition of them kept the whole
  run; the fp32 gradients exist only at the optimizer step (step_gradient_copies). Its estimators, which count
  those fp32 gradients all run (18 bytes beyond the weights), are deepspeed_estimates. With fp32 gradient
  accumulation stage 1 is its BF16_Optimizer: an fp32 gradient buffer 4 kept all run beside the bf16 gradients 2
  (prepare.bf16_optimizer_states, bf16_optimizer_reduce_copy).
- megatron: Megatron-LM's distributed optimizer (docs: "distributed optimizer"): bf16 weights 2, fp32 main
  grads 4, fp32 master + Adam 12: 18 bytes replicated, 6 + 12/d with the optimizer sharded (stage 1).
- ddp: PyTorch DDP under torch.autocast: fp32 weights 4 (they are the master copy), fp32 grads 4, Adam 8:
  16 bytes, and DDP's bucket copy of the gradients (buffers()).
- fsdp: PyTorch FSDP with bf16 compute and fp32 reduction: sharded fp32 weights 4, fp32 grads 4, Adam 8 =
  16 bytes over N from SHARD_GRAD_OP on (FSDP shards the weights at rest there too), plus the gathered bf16
  units in flight (buffers()).
- bf16: pure bf16 training (torchtune dtype bf16, litgpt bf16-true): bf16 weights 2, bf16 grads 2, AdamW's two
  states in bf16 4 = 8 bytes per parameter, no fp32 master copy.
PyTorch's gradients (ddp, fsdp, bf16) exist from the backward to the optimizer step only (zero_grad(set_to_none=True));
Megatron's and DeepSpeed's gradient buffers persist, and so does the ZeRO paper's accounting.
Optimizer states per parameter (beyond the fp32 master copy): AdamW 8 (m, v in fp32); SGD with momentum 4;
8-bit Adam 2 (m, v block-quantized to 8 bits: Dettmers et al. 2022); Adafactor ~0 (factored second moment
of O(rows + cols), no first moment by default: Shazeer & Stern 2018); Muon one fp32 momentum, 4, on the matrices it
orthogonalizes, and AdamW's 8 on the rest (engine/muon.py; optimizer_state_bytes).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Literal

from dpcost.engine.memo import cached_property
from dpcost.frozen import frozen
from dpcost.specs import GPUSpec

__all__ = [
    "ADAM_MOMENT_BYTES",
    "CONTEXT_BYTES",
    "FRAGMENTED_TENSORS",
    "OPTIMIZER_STATE_BYTES",
    "RECIPES",
    "Buffers",
    "Recipe",
    "StageMemory",
    "StateComponent",
    "context_bytes",
    "deepspeed_estimates",
    "fragmentation",
    "model_states",
    "offload_applies",
    "optimizer_state_bytes",
    "phases",
    "stage_memory",
    "with_held",
]

Group = Literal["params", "grads", "optimizer"]
# Muon's: AdamW's on the parameters it leaves to AdamW, and on its matrices one of AdamW's two (optimizer_state_bytes)
OPTIMIZER_STATE_BYTES = {"adamw": 8.0, "sgd": 4.0, "adam8bit": 2.0, "adafactor": 0.0, "muon": 8.0}
ADAM_MOMENT_BYTES = OPTIMIZER_STATE_BYTES["adamw"] / 2  # one of AdamW's two fp32 moments: what Muon keeps in place
# Reserved beyond allocated, in multiples of the step's largest transient tensor (fragmentation()).
FRAGMENTED_TENSORS = 1.0
# Device memory outside PyTorch's allocator, per GPU generation (docs/sources/allocator.md); a topology's
# `gpu.context` overrides it:
# - ampere: measured, nvidia-smi minus max reserved of one Megatron-LM run on 4 x A800 (875 MiB;
#   tests/reference/memory-peaks, meg-llmaction);
# - hopper: the CUDA context with lazy loading (~400 MiB, a PyTorch maintainer's figure) plus NCCL's ring buffers
#   (16 channels x 9.1875 MiB = 147 MiB, NCCL 2.30.7 source) and NVLS buffers (256 MiB on H100): ~800 MiB;
# - blackwell: the measured B200 context (612 MiB) plus the ring (147 MiB) and NVLS (384 MiB) buffers: ~1143 MiB.
CONTEXT_BYTES = {"ampere": 875 * 2**20, "hopper": 803 * 2**20, "blackwell": 1143 * 2**20}


@frozen
class StateComponent:
    label: str
    group: Group
    bytes_per_param: float
    shard_from: int  # the first ZeRO stage that shards it
    offload: Literal["optimizer", "params"]  # the --offload choice that moves it to CPU
    gone_from: int = 4  # the first stage from which it is no longer kept (DeepSpeed ZeRO-3's bf16 grads)
    kept_from: int = 0  # the first stage at which it is kept (DeepSpeed ZeRO-3's flat gradient partition)
    communicated: bool = False  # the gradient the collectives move; --grad-dtype sets its bytes
    # When it exists: the whole run (a buffer: Megatron's main_grad, DeepSpeed's partitions, the ZeRO paper's count);
    # from the backward to the optimizer step (PyTorch's .grad under zero_grad(set_to_none=True), its default since
    # 2.0); or at the optimizer step only (Megatron's fp32 copy of 16-bit gradients for its fp32 main parameters:
    # megatron/core/optimizer/optimizer.py, _copy_model_grads_to_main_grads, freed by zero_grad(set_to_none=True)).
    lifetime: Literal["run", "backward", "step"] = "run"


@frozen
class Recipe:
    name: str
    title: str
    source: str
    grad_dtype: str  # what its gradient reduction moves, unless --grad-dtype says otherwise
    components: tuple[StateComponent, ...]
    optimizer_states: bool = True  # whether `components` leaves the optimizer's own states to the optimizer choice
    states_in_weight_dtype: bool = False  # AdamW's/SGD's fp32 states are kept in the 16-bit weights' dtype instead
    # the forward runs under torch.autocast on fp32 weights: eager attention's softmax in fp32 (activations.py); the
    # MLP activations' own ops are counted as measured without it (EAGER_ACTIVATIONS)
    autocast: bool = False
    # Muon's momentum per parameter: the gradient's dtype, fp32 beside fp32 gradients (optimizer_state_bytes)
    muon_momentum_bytes: float = ADAM_MOMENT_BYTES
    # stage 1 runs DeepSpeed's BF16_Optimizer (fp32 gradient accumulation: prepare.bf16_optimizer_states); its
    # reduction and step allocate as bf16_optimizer_reduce_copy says, not as ZeRO-1's (deepspeed_buckets)
    bf16_optimizer: bool = False

    def states(self, optimizer: str, muon_share: float = 0.0) -> tuple[StateComponent, ...]:
        """The components with `optimizer`'s own states (optimizer_state_bytes; `muon_share`: the share of the
        parameters Muon orthogonalizes), where the recipe leaves them to it."""
        if optimizer == "muon" and muon_share and self.optimizer_states:
            extra = optimizer_state_bytes(optimizer, muon_share, self.muon_momentum_bytes)
            extra /= 2 if self.states_in_weight_dtype else 1
            return (*self.components, StateComponent("muon states", "optimizer", extra, 1, "optimizer"))
        return self._states_by_optimizer[optimizer]

    @cached_property
    def _states_by_optimizer(self) -> dict[str, tuple[StateComponent, ...]]:
        """states() for every optimizer, built once per recipe: each plan's memory reads it per ZeRO stage."""
        by_optimizer = {}
        for optimizer, extra in OPTIMIZER_STATE_BYTES.items():
            if self.states_in_weight_dtype and optimizer in ("adamw", "sgd", "muon"):
                extra /= 2
            own = StateComponent(f"{optimizer} states", "optimizer", extra, 1, "optimizer")
            by_optimizer[optimizer] = (
                self.components if not self.optimizer_states or extra == 0 else (*self.components, own)
            )
        return by_optimizer


RECIPES = {
    "zero-paper": Recipe(
        "zero-paper",
        "ZeRO paper (fp16 mixed precision, K = 12)",
        "Rajbhandari et al. 2020, section 3.1",
        "fp16",
        (
            StateComponent("fp16 weights", "params", 2, 3, "params"),
            StateComponent("fp16 grads", "grads", 2, 2, "optimizer", communicated=True),
            StateComponent("fp32 master weights", "optimizer", 4, 1, "optimizer"),
        ),
    ),
    "deepspeed": Recipe(
        "deepspeed",
        "DeepSpeed ZeRO (bf16 weights and grads, fp32 master, Adam)",
        "deepspeed v0.19.5: runtime/fp16/fused_optimizer.py (stage 0), runtime/zero/stage_1_and_2.py, stage3.py",
        "bf16",
        (
            StateComponent("bf16 weights", "params", 2, 3, "params"),
            # param.grad at stages 0-1, on the GPU whatever is offloaded (stage 1 reduces them at the boundary); the
            # rank's partition at stage 2, accumulated on the CPU with the optimizer there (stage_1_and_2.py
            # async_accumulate_grad_in_cpu_via_gpu)
            StateComponent("bf16 grads", "grads", 2, 2, "params", gone_from=2, communicated=True, lifetime="backward"),
            StateComponent(
                "bf16 grad partition",
                "grads",
                2,
                2,
                "optimizer",
                kept_from=2,
                gone_from=3,
                communicated=True,
                lifetime="backward",
            ),
            # stage3.py:711: grad_partitions_flat_buffer, the rank's partition of every gradient, allocated at init
            StateComponent("bf16 grad partition", "grads", 2, 3, "optimizer", kept_from=3, communicated=True),
            StateComponent("fp32 master weights", "optimizer", 4, 1, "optimizer"),
        ),
        # Muon's momentum in the gradient-accumulation dtype at stages 1-2 and the communication dtype at 3, both
        # bf16 by default (stage_1_and_2.py and stage3.py at edaa722, engine.py)
        muon_momentum_bytes=2.0,
    ),
    "ddp": Recipe(
        "ddp",
        "PyTorch DDP under autocast (fp32 weights and grads, Adam)",
        "torch/nn/parallel/distributed.py@v2.5.0; torch.amp autocast keeps fp32 parameters",
        "fp32",
        (
            StateComponent("fp32 weights", "params", 4, 3, "params"),
            StateComponent("fp32 grads", "grads", 4, 2, "optimizer", communicated=True, lifetime="backward"),
        ),
        autocast=True,
    ),
    "fsdp": Recipe(
        "fsdp",
        "PyTorch FSDP (sharded fp32 weights, fp32 reduce, Adam)",
        "torch/distributed/fsdp@v2.5.0: FlatParameter shards in fp32, MixedPrecision(bf16, reduce fp32)",
        "fp32",
        (
            StateComponent("fp32 weights (sharded)", "params", 4, 2, "params"),
            StateComponent("fp32 grads", "grads", 4, 2, "optimizer", communicated=True, lifetime="backward"),
        ),
    ),
    "bf16": Recipe(
        "bf16",
        "pure bf16 (bf16 weights, grads and optimizer states)",
        "torchtune recipes with dtype: bf16 (training.get_dtype); litgpt precision bf16-true; torch.optim.AdamW "
        "keeps exp_avg and exp_avg_sq in the parameters' dtype (torch/optim/adamw.py@v2.5.0, _init_group)",
        "bf16",
        (
            StateComponent("bf16 weights", "params", 2, 3, "params"),
            StateComponent("bf16 grads", "grads", 2, 2, "optimizer", communicated=True, lifetime="backward"),
        ),
        states_in_weight_dtype=True,
    ),
    "megatron": Recipe(
        "megatron",
        "Megatron-LM distributed optimizer (bf16 weights, fp32 main grads)",
        "Megatron-LM docs, distributed optimizer: 18 bytes, or 6 + 12/d",
        "fp32",
        (
            StateComponent("bf16 weights", "params", 2, 3, "params"),
            StateComponent("fp32 main grads", "grads", 4, 2, "optimizer", communicated=True),
            StateComponent("fp32 master weights", "optimizer", 4, 1, "optimizer"),
        ),
    ),
}


@frozen
class ModelStates:
    params: float
    grads: float
    optimizer: float
    cpu: float  # offloaded to host memory, per GPU
    backward_grads: float = 0.0  # the part of `grads` that exists only from the backward to the optimizer step
    step_only: float = 0.0  # the part of `optimizer` that exists only at the optimizer step

    @property
    def total(self) -> float:
        return self.params + self.grads + self.optimizer


def optimizer_state_bytes(optimizer: str, muon_share: float = 0.0, momentum_bytes: float = ADAM_MOMENT_BYTES) -> float:
    """The optimizer's own states per parameter, beyond the fp32 master copy (OPTIMIZER_STATE_BYTES): Muon's one
    momentum of `momentum_bytes` (muon.py: the gradient's dtype, fp32 beside fp32 main gradients; Recipe) on the
    `muon_share` of the parameters it orthogonalizes, AdamW's two on the rest."""
    states = OPTIMIZER_STATE_BYTES[optimizer]
    if optimizer != "muon":
        return states
    return states - (OPTIMIZER_STATE_BYTES["adamw"] - momentum_bytes) * min(muon_share, 1.0)


def offload_applies(offload: str, stage: int) -> bool:
    """DeepSpeed's rule: the optimizer can be offloaded from stage 1, parameters (with it) only at stage 3."""
    return (offload == "optimizer" and stage >= 1) or (offload == "params" and stage == 3)


def _moved_by(component: StateComponent, offload: str) -> bool:
    """Whether `offload`, where it applies (offload_applies), moves the component: params offload moves every
    state, optimizer offload the optimizer's."""
    return offload == "params" or component.offload == "optimizer"


def model_states(
    n_params: float,
    dp: int,
    stage: int,
    recipe: Recipe,
    optimizer: str = "adamw",
    offload: str = "none",
    muon_share: float = 0.0,
) -> ModelStates:
    """Bytes per GPU of weights, gradients and optimizer states (ZeRO paper section 5, by recipe); `offload`
    moves states to host memory where DeepSpeed allows it (offload_applies); `muon_share`: of the parameters, those
    Muon orthogonalizes (optimizer_state_bytes)."""
    if stage not in (0, 1, 2, 3):
        raise ValueError("stage must be 0..3")
    if offload not in ("none", "optimizer", "params"):
        raise ValueError("offload must be none, optimizer or params")
    totals: dict[str, float] = {"params": 0.0, "grads": 0.0, "optimizer": 0.0}
    cpu = backward = step = 0.0
    offloading = offload_applies(offload, stage)
    for c in recipe.states(optimizer, muon_share):
        if stage >= c.gone_from or stage < c.kept_from:
            continue
        nbytes = c.bytes_per_param * n_params / (dp if stage >= c.shard_from else 1)
        if offloading and _moved_by(c, offload):
            cpu += nbytes
        else:
            totals[c.group] += nbytes
            backward += nbytes if c.lifetime == "backward" else 0.0
            step += nbytes if c.lifetime == "step" else 0.0
    return ModelStates(totals["params"], totals["grads"], totals["optimizer"], cpu, backward, step)


@frozen
class Buffers:
    """Working buffers: communication buckets, ZeRO-3's gathered layers, the GEMM libraries' workspaces."""

    buckets: float
    gathered: float
    ddp_copy: float  # DDP's bucket copy of the gradients (gradient_as_bucket_view=False, PyTorch's default)
    kept_grads: float = 0.0  # stages 2-3 accumulating unsharded gradients (keep_full_grads)
    cast_weights: float = 0.0  # autocast's 16-bit copies of the weights, the forward to the backward (cast_weights)
    workspaces: float = 0.0  # the GEMM libraries' workspaces, held all step (workspaces.py)
    held_buckets: float = 0.0  # reduce buckets held the whole step, forward included (DeepSpeed ZeRO-3's ipg buffer)
    step_buckets: float | None = None  # of `buckets`, what the optimizer step still holds (None: all of them)
    step_transient: float = 0.0  # what the optimizer step allocates for itself (step_gradient_copies and
    # optimizer_intermediates)

    @property
    def at_step(self) -> float:
        """What the optimizer step holds beyond the gathered units and the other whole-step buffers."""
        buckets = self.buckets if self.step_buckets is None else self.step_buckets
        return buckets + self.held_buckets + self.step_transient


def buffers(
    stage: int,
    schedule: str,
    recipe: Recipe,
    grad_bytes: float,
    n_params: float,
    bucket_bytes: float,
    gather_unit_params: float,
    largest_layer_params: float,
    gather_bytes: float | None = None,
    buckets_in_flight: int = 2,
    cast_params: float = 0.0,
    workspaces: float = 0.0,
    shard_ranks: int = 1,
    offload: str = "none",
    optimizer: str = "adamw",
    optimizer_impl: str = "fused",
    accumulation: int = 1,
    orthogonalized: float = 0.0,
    sub_group_size: float | None = None,
    largest_parameter: float = 0.0,
    first_parameter: float = 0.0,
) -> Buffers:
    """The transient buffers the step's `schedule` holds (generic, or a framework's: frameworks.py).

    Stage 0 as PyTorch DDP runs it (generic and ddp): DDP copies every gradient into its buckets
    (gradient_as_bucket_view=False, the default; PyTorch DDP docs). Megatron's buckets are views of its
    contiguous gradient buffer, reduced in place, and FSDP reduces per unit: no bucket memory. Otherwise
    `buckets_in_flight`: two when the reduction overlaps the backward (one filling, one being reduced), one when
    it runs on the compute stream (DeepSpeed's ipg bucket without overlap_comm: stage_1_and_2.py). Stage 3: the
    gathered unit in use and the next one prefetched, plus the full gradient of the unit in the backward pass
    (FSDP per-block wrapping); DeepSpeed's estimator (the deepspeed recipe) counts 4 bytes x its largest layer
    instead. FSDP's SHARD_GRAD_OP keeps every unit gathered from its forward to its backward: the whole model in
    the gathered dtype (`gather_bytes`, default the recipe's weight bytes). Under autocast, the 16-bit copies of the
    `cast_params` its matmuls read (cast_weights). And the GEMM libraries' `workspaces` (workspaces.py). DeepSpeed's
    own buckets and step copies: deepspeed_buckets, step_gradient_copies (`shard_ranks`, `offload`: its partition);
    torch.optim's at the step: optimizer_intermediates; Muon's, `orthogonalized`: the bytes it allocates while it
    orthogonalizes its largest matrix (muon.working_set_bytes). DeepSpeed's stage 3 steps a sub-group at a time
    (deepspeed_sub_group: `sub_group_size`, None for DeepSpeed's default, and the `largest_parameter`'s elements);
    below stage 3 its partition's gradient buffer holds the `first_parameter` whole (deepspeed_partition_buffer)."""
    weight_bytes = next(c.bytes_per_param for c in recipe.components if c.group == "params")
    gathered_bytes = gather_bytes or weight_bytes
    ddp_copy = grad_bytes * n_params if stage == 0 and schedule in ("generic", "ddp") else 0.0
    in_place = ddp_copy > 0 or schedule in ("megatron", "fsdp")
    buckets = 0.0 if in_place else buckets_in_flight * bucket_bytes
    share = n_params / shard_ranks if stage >= 1 else n_params  # the optimizer's parameters, as its states'
    sub_group = deepspeed_sub_group(share, sub_group_size, largest_parameter / shard_ranks)
    partition_buffer = deepspeed_partition_buffer(n_params / shard_ranks, first_parameter)  # DeepSpeed, stages 1-2
    if schedule == "deepspeed" and stage == 3:  # it steps one sub-group at a time (stage3.py:1154)
        share = sub_group
    own = 0.0
    if not offload_applies(offload, stage):
        own = optimizer_intermediates(optimizer, optimizer_impl, recipe, share) + orthogonalized
    bf16_optimizer = recipe.bf16_optimizer and stage == 1
    if recipe.name == "deepspeed" and not bf16_optimizer:
        fused_adam = optimizer == "adamw" and optimizer_impl == "fused"
        copies = step_gradient_copies(
            stage, n_params, shard_ranks, offload, sub_group, largest_parameter, fused_adam, partition_buffer
        )
        if stage >= 1 and not offload_applies(offload, stage):  # the optimizer's own bytes come after the cast
            beside = deepspeed_step_beside_fp32_grads(stage, n_params, shard_ranks, sub_group, own, partition_buffer)
            own = max(copies, beside)
        else:
            own += copies
    held, step_buckets = 0.0, None
    if bf16_optimizer:  # the boundary's reduction, which the step phase stands for (Megatron-DeepSpeed's too)
        buckets, step_buckets = 0.0, bf16_optimizer_reduce_copy(grad_bytes, n_params)
        own = max(0.0, own - step_buckets)
    elif schedule == "deepspeed":
        buckets, held = deepspeed_buckets(stage, bucket_bytes, grad_bytes, n_params, buckets_in_flight, accumulation)
        if stage == 2 and accumulation > 1 and not offload_applies(offload, stage):
            # the partition accumulated so far is kept while each later backward fills a new one, which the
            # epilogue adds in (stage_1_and_2.py:1651, independent_gradient_partition_epilogue :914-923)
            buckets += grad_bytes * partition_buffer
        step_buckets = 0.0
        if stage == 1:  # the step phase stands for the boundary's reduction too: whole gradients beside the buckets
            step_buckets, own = buckets, max(0.0, own - (buckets + held))
    gathered = 0.0
    if stage == 3:
        if recipe.name == "deepspeed":  # the module computing, gathered, and its whole gradient until bucketed
            gathered = 4 * largest_layer_params
        else:
            gathered = gather_unit_params * (2 * gathered_bytes + grad_bytes)
    elif stage == 2 and schedule == "fsdp":
        gathered = n_params * gathered_bytes + gather_unit_params * grad_bytes
    return Buffers(
        buckets,
        gathered,
        ddp_copy,
        cast_weights=cast_weights(recipe, stage, cast_params),
        workspaces=workspaces,
        held_buckets=held,
        step_buckets=step_buckets,
        step_transient=own,
    )


def optimizer_intermediates(optimizer: str, impl: str, recipe: Recipe, params_on_rank: float) -> float:
    """Bytes torch.optim's AdamW allocates at the step beyond its states: foreach computes the second moments'
    square roots into a new tensor list before the update (torch/optim/adam.py _multi_tensor_adam,
    `exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)`; PyTorch's docs: "the foreach implementation uses
    ~ sizeof(params) more peak memory than the for-loop version"), one state's bytes a parameter; the fused kernel
    updates in place, and the for-loop holds one parameter's worth at a time (not counted). Other optimizers: none
    counted (SGD's foreach momentum update is in place)."""
    if optimizer != "adamw" or impl != "foreach":
        return 0.0
    per_state = ADAM_MOMENT_BYTES / (2 if recipe.states_in_weight_dtype else 1)
    return per_state * params_on_rank


# deepspeed v0.19.5, runtime/engine.py:157: stage 0 all-reduces its gradients flattened in 5e8-element pieces
DEEPSPEED_STAGE0_BUCKET_ELEMENTS = 5e8
# runtime/zero/config.py:175: stage 3 steps its optimizer over sub-groups of >= 1e9 partitioned elements
DEEPSPEED_SUB_GROUP_ELEMENTS = 1e9
# Bytes an element of the largest 16-bit gradient tensor of a stage 1-2 partition at the step's checks (v0.19.5):
# the overflow check holds the tensor in fp32 (4), its isnan, isinf and their or (1 each), and the or in fp32 (4)
# (zero/stage_1_and_2.py _has_inf_or_nan, :2460-2465), for fp16 always and for bf16 from v0.19.3 (bf16's
# check_grad_overflow, default true: runtime/precision_config.py); then the norm holds it in float64 (8,
# get_grad_norm_direct, :2063)
DEEPSPEED_GRAD_CHECK_BYTES = 11.0


def deepspeed_partition_buffer(partition: float, first_parameter: float) -> float:
    """Elements of rank 0's 16-bit gradient buffer at stages 1-2, of a rank's `partition`: every parameter that
    starts in the partition or crosses its start, whole (zero/stage_1_and_2.py get_partition_info, :1959-1988;
    copy_grads_in_partition sums their numel(), :1643-1651, at v0.19.5), so at least the group's `first_parameter`
    (the embedding, first in a Hugging Face model's and Megatron's order) where the partition is smaller. The last
    parameter's overhang past the partition's end (less than one parameter) is not counted; a rank whose partition
    starts near the end of a large parameter holds up to the partition and that parameter."""
    return max(partition, first_parameter)


def deepspeed_sub_group(partition: float, sub_group_size: float | None, largest_parameter: float) -> float:
    """The most partitioned elements DeepSpeed's stage 3 steps at once, of a rank's `partition`: its parameters in
    order, a sub-group closed once it holds `sub_group_size` or more (zero/stage3.py _create_fp16_sub_groups at
    edaa722; None: DeepSpeed's default, DEEPSPEED_SUB_GROUP_ELEMENTS; 0: each parameter alone), so at least one
    parameter's partition, the `largest_parameter`'s where that is larger. A group's overshoot past the size (less
    than its last parameter) is not counted."""
    size = DEEPSPEED_SUB_GROUP_ELEMENTS if sub_group_size is None else sub_group_size
    return min(partition, max(size, largest_parameter))


def deepspeed_buckets(
    stage: int, bucket_bytes: float, grad_bytes: float, n_params: float, ipg_buffers: int, accumulation: int = 1
) -> tuple[float, float]:
    """DeepSpeed's reduce buffers (v0.19.5), as (held during the backward only, held the whole step): stage 0 flattens
    its gradients at the backward's end 5e8 elements at a time, whatever reduce_bucket_size says (engine.py
    allreduce_no_retain, MEMORY_OPT_ALLREDUCE_SIZE); stages 1-2 allocate
    `ipg_buffers` buckets of reduce_bucket_size at the first gradient hook (two with overlap_comm), free them at the
    backward's end (stage_1_and_2.py setup_buckets, _release_ipg_buffers), and flatten each bucket they all-reduce
    (allreduce_bucket); stage 3 allocates one at init and keeps it (stage3.py:700), and concatenates each bucket it
    reduce-scatters (comm/coalesced_collectives.py reduce_scatter_coalesced). Stage 1 under accumulation frees its
    buckets only at the boundary's epilogue (:939), so they stay through the later micro-batches' forwards. No
    flattened piece exceeds the whole gradient, `n_params` x `grad_bytes`."""
    grads = grad_bytes * n_params
    piece = min(bucket_bytes, grads)
    if stage == 0:
        return min(DEEPSPEED_STAGE0_BUCKET_ELEMENTS * grad_bytes, grads), 0.0
    if stage == 1 and accumulation > 1:
        return piece, ipg_buffers * bucket_bytes
    if stage < 3:
        return ipg_buffers * bucket_bytes + piece, 0.0
    return piece, bucket_bytes


def bf16_optimizer_reduce_copy(grad_bytes: float, n_params: float) -> float:
    """What BF16_Optimizer's reduction allocates (v0.19.5): at the accumulation boundary the engine all-reduces its
    fp32 gradient buffer (engine.py allreduce_gradients, buffered_allreduce_fallback over get_grads_for_reduction,
    in pieces of more than 5e8 elements: allreduce_no_retain); a piece of one tensor is flattened without a copy
    (torch's flatten_dense_tensors), and cast to the communication dtype where that is not fp32 (allreduce_bucket,
    `tensor.to(self.communication_data_type)`, bf16 for a bf16 model: prepare.BF16_OPTIMIZER_GRAD_DTYPE): a copy of the
    whole buffer in `grad_bytes`, the parameters taken as one group. stage_1_and_2.py's buckets do not exist."""
    return grad_bytes * n_params if grad_bytes != 4.0 else 0.0


def step_gradient_copies(
    stage: int,
    n_params: float,
    shard_ranks: int,
    offload: str = "none",
    sub_group: float = DEEPSPEED_SUB_GROUP_ELEMENTS,
    largest_parameter: float = 0.0,
    fused_adam: bool = True,
    partition_buffer: float | None = None,
) -> float:
    """Bytes DeepSpeed's optimizer step allocates beyond the 16-bit gradients the step phase counts (v0.19.5): stage 0
    with DeepSpeed's FusedAdam (`fused_adam`) casts every gradient to fp32 and concatenates the copies
    (fp16/fused_optimizer.py:288, 8 bytes a parameter); with any other optimizer (a torch optimizer the script passes:
    engine.py _configure_fp16_optimizer) FP16_UnfusedOptimizer casts each into its fp32 master's .grad and steps with
    them all (fp16/unfused_optimizer.py:216-222), 4. Stages 1-2 first check the partition's gradient tensors for
    overflow and take their norm, a tensor at a time (DEEPSPEED_GRAD_CHECK_BYTES an element of the largest: the
    `largest_parameter` whole, cut at the partition's edges), then flatten the partition and cast it to fp32
    (zero/stage_1_and_2.py:2334-2335, 2 + 4 bytes a partitioned parameter beside its 2); stage 3 does so a sub-group at
    a time (zero/stage3.py _prepare_fp32_grad_for_sub_group; `sub_group`: its most partitioned elements,
    deepspeed_sub_group), after its gradient norm has cast each parameter's partition to float64 in turn
    (get_grad_norm_direct, `.double()`, at v0.9.5 and v0.19.5), 8 bytes an element of the largest, which sets the step
    with sub_group_size 0. Stage 1's step phase stands for the boundary's reduction, where every gradient is whole (2
    bytes a parameter) beside the buckets; by the step they are gone but for the partition's, copied into one buffer of
    `partition_buffer` elements (deepspeed_partition_buffer; None: the partition; copy_grads_in_partition with
    contiguous_gradients, :1726-1727; param.grad cleared, :945), so the step adds only what exceeds them. None when the
    optimizer runs on the CPU."""
    if offload_applies(offload, stage):
        return 0.0
    partition = n_params / shard_ranks
    if stage == 0:
        return (8.0 if fused_adam else 4.0) * n_params
    if stage == 3:  # the gradient norm's float64 cast of each parameter's partition in turn
        return max(6.0 * min(partition, sub_group), 8.0 * min(partition, largest_parameter / shard_ranks))
    # the overflow check and the gradient norm over the partition's gradient tensors, a tensor at a time: the
    # parameters whole, cut at the partition's edges
    checked = DEEPSPEED_GRAD_CHECK_BYTES * min(partition, largest_parameter)
    if stage == 1:  # beside the partition's buffer, against the whole gradients of the boundary's reduction
        held = partition if partition_buffer is None else partition_buffer
        return max(0.0, 2.0 * held + max(6.0 * partition, checked) - 2.0 * n_params)
    return max(6.0 * partition, checked)


def deepspeed_step_beside_fp32_grads(
    stage: int,
    n_params: float,
    shard_ranks: int,
    sub_group: float,
    optimizer_own: float,
    partition_buffer: float | None = None,
) -> float:
    """Bytes beyond the step phase's 16-bit gradients while DeepSpeed's ZeRO optimizer steps (stages 1-3, on the GPU):
    the fp32 gradients it cast, 4 bytes an element of the rank's partition (at stage 3 of one sub-group, `sub_group`),
    and the optimizer's `optimizer_own` (optimizer_intermediates), the flat 16-bit copy they were cast from being freed
    once the cast returns (zero/stage_1_and_2.py:2335-2336 at v0.19.5, `del flat_grad_partition`, a temporary at
    v0.16.0; stage3.py _prepare_fp32_grad_for_sub_group at edaa722). Below stage 3 the partition's 16-bit gradients are
    one buffer for every parameter group (copy_grads_in_partition, :1643-1659), which the other groups' views keep while
    the first group steps (the Hugging Face Trainer's, with weight decay: nearly every parameter): 2 bytes an element of
    `partition_buffer` (deepspeed_partition_buffer; None: the partition), which stage 2's step phase counts and stage
    1's, counting every gradient whole (gone by then), does not.
    Stage 3 keeps its gradient buffer (stage3.py:711)."""
    if stage == 3:
        return 4.0 * sub_group + optimizer_own
    fp32_grads = 4.0 * n_params / shard_ranks + optimizer_own
    held = n_params / shard_ranks if partition_buffer is None else partition_buffer
    return fp32_grads + 2.0 * held - 2.0 * n_params if stage == 1 else fp32_grads


def cast_weights(recipe: Recipe, stage: int, cast_params: float) -> float:
    """Bytes of autocast's 16-bit copies of the fp32 weights the matmuls read: torch.autocast casts each weight once
    per forward and caches the copy for the region (torch/amp/autocast_mode.py, cache_enabled; aten's
    cached_cast), and each matmul saves it for its backward, so every copy lives from the forward to its layer's
    backward: 2 bytes a matmul parameter at the backward's start (measured: a Llama decoder layer under autocast
    keeps exactly its linear weights in bf16 beyond its activations, tests/reference/hf-configs/resolved/
    autocast-weights.json). Left out at ZeRO-3, whose gathered weights this measurement does not cover."""
    return 2.0 * cast_params if recipe.autocast and stage < 3 else 0.0


Phase = Literal["forward", "backward", "optimizer step"]


@frozen
class PhaseMemory:
    """What is allocated at one phase of the step: a part that does not depend on the micro-batch and a part per
    sequence of it (activations and the loss grow linearly with the micro-batch)."""

    phase: Phase
    params: float
    grads: float
    optimizer: float
    buffers: float
    activations_per_sample: float  # the layers' kept tensors and the loss path's kept tensors
    transient_per_sample: float  # what this phase adds: the loss's working tensors, a layer's recomputation

    def allocated(self, micro_batch: int) -> float:
        fixed = self.params + self.grads + self.optimizer + self.buffers
        return fixed + micro_batch * (self.activations_per_sample + self.transient_per_sample)


@frozen
class StageMemory:
    """Memory per GPU at one ZeRO stage: the step's phases, the peak among them as the caching allocator holds it
    (allocated, then reserved with fragmentation), and the device total with the CUDA/NCCL context."""

    stage: int
    phases: tuple[PhaseMemory, ...]
    micro_batch: int
    largest_tensor_per_sample: float  # the largest single activation or loss tensor of one sequence
    context: float  # CUDA context and NCCL buffers, outside PyTorch's allocator (context_bytes)
    cpu: float
    hbm: float
    grad_block: float = 0.0  # the largest freed gradient block activations could reuse (prepare._reusable_grad_block)
    widest_activation_per_sample: float = 0.0  # the largest layer activation of one sequence

    @cached_property
    def peak(self) -> PhaseMemory:
        """The phase where allocated memory peaks."""
        return max(self.phases, key=lambda ph: ph.allocated(self.micro_batch))

    @property
    def params(self) -> float:
        return self.peak.params

    @property
    def grads(self) -> float:
        return self.peak.grads

    @property
    def optimizer(self) -> float:
        return self.peak.optimizer

    @property
    def buffers(self) -> float:
        return self.peak.buffers

    @property
    def activations(self) -> float:
        return self.micro_batch * self.peak.activations_per_sample

    @property
    def transient(self) -> float:
        return self.micro_batch * self.peak.transient_per_sample

    @property
    def model_states(self) -> float:
        return self.params + self.grads + self.optimizer

    @cached_property
    def allocated(self) -> float:
        """torch.cuda.max_memory_allocated: the largest phase."""
        return self.peak.allocated(self.micro_batch)

    def grads_reusable(self, micro_batch: int) -> bool:
        """Whether the activations can take the last step's freed gradient blocks: each is at least a layer's widest
        activation, which could be carved out of it (fragmentation())."""
        return self.grad_block >= micro_batch * self.widest_activation_per_sample

    def cached_grads(self, phase: PhaseMemory, micro_batch: int) -> float:
        """Per-step gradients not alive at `phase`, whose blocks stay cached from the last step where the
        activations cannot take them (grads_reusable)."""
        return 0.0 if self.grads_reusable(micro_batch) else self._most_grads - phase.grads

    @cached_property
    def _most_grads(self) -> float:
        return max(ph.grads for ph in self.phases)

    def phase_reserved(self, phase: PhaseMemory, micro_batch: int) -> float:
        """What the caching allocator holds at `phase`: its allocated bytes and what cannot be reused then."""
        largest = micro_batch * self.largest_tensor_per_sample
        return phase.allocated(micro_batch) + fragmentation(largest, self.cached_grads(phase, micro_batch))

    @cached_property
    def _reserved_peak(self) -> tuple[float, float]:
        """(max reserved, reserved beyond the allocated peak). The most over the phases: a phase below the
        allocated peak can reserve more, where the last step's gradient blocks stay cached beside its activations
        (at a small micro-batch the optimizer step's allocated peak holds those gradients, the backward's does
        not)."""
        batch, peak = self.micro_batch, self.peak
        largest = batch * self.largest_tensor_per_sample
        most = self.allocated + (beyond := fragmentation(largest, self.cached_grads(peak, batch)))
        if self.grads_reusable(batch):
            return most, beyond  # no cached gradients: every phase's fragmentation is the same, the peak's is most
        for ph in self.phases:
            if ph is not peak and (reserved := self.phase_reserved(ph, batch)) > most:
                most, beyond = reserved, reserved - self.allocated
        return most, beyond

    @property
    def fragmentation(self) -> float:
        """Reserved beyond allocated: max_memory_reserved - max_memory_allocated."""
        return self._reserved_peak[1]

    @property
    def reserved(self) -> float:
        """torch.cuda.max_memory_reserved: the most the caching allocator holds at any phase."""
        return self._reserved_peak[0]

    @property
    def overhead(self) -> float:
        return self.fragmentation + self.context

    @cached_property
    def total(self) -> float:
        """The device's memory in use (nvidia-smi): reserved plus the context."""
        return self.reserved + self.context

    @cached_property
    def fits(self) -> bool:
        return self.total <= self.hbm

    @property
    def activations_per_sample(self) -> float:
        return self.peak.activations_per_sample

    def largest_micro_batch(self, micro_batch: int) -> int:
        """The most sequences per micro-batch that still fit. Every phase is linear in the micro-batch, and so is
        the fragmentation that follows the largest tensor, bar the cached gradients, which count from the
        micro-batch whose widest activation outgrows a gradient block: the linear bound without them, then the
        largest micro-batch below it whose every phase fits with them (phase_reserved, a bisection)."""
        per_tensor = FRAGMENTED_TENSORS * self.largest_tensor_per_sample
        bound: float = math.inf
        for ph in self.phases:
            per_sample = ph.activations_per_sample + ph.transient_per_sample + per_tensor
            if per_sample <= 0:
                continue
            bound = min(bound, (self.hbm - self.context - ph.allocated(0)) // per_sample)
        if bound == math.inf:
            return 0
        room = self.hbm - self.context

        def fits(b: int) -> bool:
            return all(self.phase_reserved(ph, b) <= room for ph in self.phases)

        low, high = 0, max(0, int(bound))  # fits(low); the answer is at most high
        if fits(high):
            return high
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if fits(middle) else (low, middle)
        return low


def with_held(memory: StageMemory, column: Group, held: float) -> StageMemory:
    """The stage's memory with `held` more bytes in `column` (params, grads or optimizer) through every phase of
    the step: a variant's copies and error feedback (engine/variants.py), which live as long as the run."""
    return replace(memory, phases=tuple(replace(ph, **{column: getattr(ph, column) + held}) for ph in memory.phases))


def context_bytes(gpu: GPUSpec) -> float:
    """Memory a process holds outside PyTorch's caching allocator (CONTEXT_BYTES), or the topology's own figure."""
    return float(gpu.context) if gpu.context is not None else float(CONTEXT_BYTES[gpu.arch])


def fragmentation(largest_tensor: float, cached_grads: float = 0.0) -> float:
    """Reserved beyond allocated (c10/cuda/CUDACachingAllocator.cpp; docs/sources/allocator.md). The caching
    allocator keeps freed blocks cached, splits a large one for a smaller request and merges free neighbours within
    a segment, but never joins two segments, so
    - a request as large as the step's largest transient tensor (the fp32 logits, a layer's widest activation)
      finds no free block big enough and is served by a new segment: one such tensor;
    - the blocks of the gradients freed after the last optimizer step (zero_grad(set_to_none=True)), one per
      parameter or FSDP unit shard, stay cached when they are smaller than the activations that could reuse them
      (StageMemory.cached_grads). This term is a mechanism the allocator's source allows, not one it states: it is
      what the torchtitan runs at 8 and 128 GPUs show (tests/reference/memory-peaks, in sample), 16-17 bytes per
      parameter apart where the states alone are 12."""
    return FRAGMENTED_TENSORS * largest_tensor + cached_grads


def phases(
    states: ModelStates,
    buf: Buffers,
    kept_per_sample: float,
    loss_forward_per_sample: float,
    loss_backward_per_sample: float,
    layer_backward_per_sample: float,
    accumulation: int,
) -> tuple[PhaseMemory, ...]:
    """The step's three phases (docs/reference.md, "Memory over the step"):
    - forward, at the loss: model states, gradients only where they persist (Megatron's and DeepSpeed's buffers) or
      accumulate over micro-batches, every layer's kept activations, and the loss's forward peak;
    - backward, at its start: the same with the larger of the loss's backward peak and the last layer's
      recomputation plus its activation gradients, and the gradient buckets in flight;
    - optimizer step: model states and every gradient; no activations."""
    _, carried, optimizer = forward_states(states, accumulation)
    gathered = buf.gathered + buf.ddp_copy + buf.kept_grads + buf.workspaces
    forward = PhaseMemory(
        "forward", states.params, carried, optimizer, gathered + buf.held_buckets + buf.cast_weights, kept_per_sample,
        loss_forward_per_sample
    )  # fmt: skip
    backward = PhaseMemory(
        "backward",
        states.params,
        carried,
        optimizer,
        gathered + buf.buckets + buf.held_buckets + buf.cast_weights,
        kept_per_sample,
        max(loss_backward_per_sample, layer_backward_per_sample),
    )
    step = PhaseMemory("optimizer step", states.params, states.grads, states.optimizer, gathered + buf.at_step, 0, 0)
    return forward, backward, step


def forward_states(states: ModelStates, accumulation: int) -> tuple[float, float, float]:
    """The weights, gradients and optimizer states the forward and backward phases hold (phases): gradients that
    persist between steps, or all of them under accumulation; the optimizer's states bar what only its step
    allocates."""
    carried = states.grads if accumulation > 1 else states.grads - states.backward_grads
    return states.params, carried, states.optimizer - states.step_only


def stage_memory(
    stage: int,
    states: ModelStates,
    phase_list: tuple[PhaseMemory, ...],
    micro_batch: int,
    largest_tensor_per_sample: float,
    context: float,
    hbm: float,
    grad_block: float = 0.0,
    widest_activation_per_sample: float = 0.0,
) -> StageMemory:
    return StageMemory(
        stage,
        phase_list,
        micro_batch,
        largest_tensor_per_sample,
        context,
        states.cpu,
        hbm,
        grad_block,
        widest_activation_per_sample,
    )


@frozen
class DeepSpeedEstimate:
    stage: int
    offload: str
    zero_init: bool | None
    gpu_bytes: float
    cpu_bytes: float


def deepspeed_estimates(
    params: float, largest_layer: float, gpus_per_node: int, nodes: int
) -> tuple[DeepSpeedEstimate, ...]:
    """DeepSpeed's estimate_zero2/zero3_model_states_mem_needs_all_cold, per GPU and per CPU (node), with its
    1.5 buffer factor, as the code has them (docs/sources/deepspeed-estimators.md): 2 bytes of 16-bit weights a
    parameter, and 18 sharded (16-bit and fp32 gradients, fp32 master weights, Adam), all counted the whole run; what
    the optimizers hold over the step is the deepspeed recipe's."""
    n = gpus_per_node * nodes
    f = 1.5
    out: list[DeepSpeedEstimate] = []
    for offload in ("optimizer", "none"):
        gpu = 2 * params + (int(18 * params / n) if offload == "none" else 0)
        cpu = params * max(4 * n, 16) * f if offload == "optimizer" else params * 4 * gpus_per_node * f
        out.append(DeepSpeedEstimate(2, offload, None, gpu, cpu))
    for offload in ("params", "optimizer", "none"):
        gpu = 4 * largest_layer + {"params": 0, "optimizer": int(2 * params / n), "none": int(18 * params / n)}[offload]
        for zero_init in (True, False):
            if offload == "params":
                cpu = params * 18 * f / nodes if zero_init else params * max(4 * gpus_per_node, 18 / nodes) * f
            elif offload == "optimizer":
                cpu = params * 16 * f / nodes if zero_init else params * max(4 * gpus_per_node, 16 / nodes) * f
            else:
                cpu = largest_layer * 4 * gpus_per_node * f if zero_init else params * 4 * gpus_per_node * f
            out.append(DeepSpeedEstimate(3, offload, zero_init, gpu, cpu))
    return tuple(out)
