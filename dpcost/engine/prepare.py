"""What the options come to before any costing: the sequence length, the batching, the recipe and dtypes, the
pieces the step schedules, and memory per GPU at every ZeRO stage. Shared by `estimate` and `dpcost memory`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from functools import cache
from typing import TYPE_CHECKING, Any, get_args

from dpcost.engine import synchronous_fetch
from dpcost.engine.activations import Kernels, ring_attention_backward_bytes, routed_copies
from dpcost.engine.checkpointing import DEFAULT_MODULES, DROPPED_MODULES, Activations, activation_memory, takes_policy
from dpcost.engine.compute import attention_flops, mixer_recurrence_flops
from dpcost.engine.frameworks import FRAMEWORKS, MEGATRON_FSDP, Framework, megatron_count_bucket
from dpcost.engine.layout_step import mamba_layout_refusal
from dpcost.engine.loss import LossMemory, loss_memory
from dpcost.engine.low_precision_weights import QUANTIZED_WEIGHTS, gathered_weight_bytes, held_weight_bytes
from dpcost.engine.memo import per_object
from dpcost.engine.memory import (
    RECIPES,
    Buffers,
    ModelStates,
    Recipe,
    StageMemory,
    StateComponent,
    buffers,
    context_bytes,
    deepspeed_partition_buffer,
    forward_states,
    model_states,
    offload_applies,
    phases,
    stage_memory,
)
from dpcost.engine.muon import (
    Matrix,
    buffer_order,
    layer_wise_padding,
    managed_parameters,
    model_matrices,
    model_order,
    working_set_bytes,
)
from dpcost.engine.ops import has_layer_ops, sixteen_bit_layer
from dpcost.engine.params import (
    ParamCount,
    block_matrices,
    block_tensors,
    block_vectors,
    count_params,
    input_table_parameters,
    ngram_layer_parameters,
    tensor_parallel_parameters,
)
from dpcost.engine.placement import check_ranks
from dpcost.engine.rates import matmul_efficiency, rates_for, slowest_gpu_loss
from dpcost.engine.step import Unit, unit_runs
from dpcost.engine.workspaces import training_workspace_bytes
from dpcost.errors import InputError
from dpcost.frozen import frozen
from dpcost.options import DEFAULT_MFU, Compute, Options, RecomputeModule
from dpcost.specs import GPUArch, GPUSpec, ModelArchitecture, ModelSpec, TopologySpec

if TYPE_CHECKING:
    from dpcost.engine.report import Advice

__all__ = [
    "BF16_OPTIMIZER_GRAD_DTYPE",
    "DTYPE_BYTES",
    "Prepared",
    "StageMemories",
    "check_compute_dtype",
    "check_dp",
    "core_attention_rerun",
    "matmul_share",
    "moe_recompute_module",
    "prepare",
    "recipe_of",
    "saved_input_terms",
    "stage_table",
    "units",
]

DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}
DEFAULT_SEQ_LEN = 4096
MAX_BUCKETS = 1_000_000  # per pass: each is a call the timeline schedules


@frozen
class Prepared:
    """The plan's inputs resolved: options with the sequence length filled in, counts, the framework's recipe
    and schedule settings (each overridden where the options say), and batching."""

    o: Options
    seq_len: int
    counts: ParamCount
    recipe: Recipe
    grad_dtype: str
    grad_bytes: float
    weight_bytes: float  # per parameter, as the gathers move it
    unconverted_weight_bytes: float  # what the embedding and output head are gathered in (fp8 converts only linears)
    accumulation: int
    micro_batch: int
    advice: tuple[Advice, ...]
    framework: Framework | None
    bucket_bytes: float
    first_bucket_bytes: float

    def pieces(self, model: ModelSpec) -> tuple[Unit, ...]:
        """units() of the model at this plan's sequence length, built once per model and sequence length (a MoE
        block lists every expert's tensors; the stage tables, the timeline and every plan of a batch ask)."""
        moe = model.architecture.moe if model.architecture is not None else None
        every_expert = moe is not None and routed_copies(moe, self.kernels) != moe.active
        known, key = _pieces_of(model), (self.seq_len, every_expert)
        if key not in known:
            known[key] = units(count_params(model), model, self.seq_len, every_expert)
        return known[key]

    def muon_matrices(self, model: ModelSpec) -> tuple[Matrix, ...]:
        """The matrices Muon orthogonalizes (muon.model_matrices, as the framework's layers hold them); none under
        another optimizer."""
        if self.o.precision.optimizer != "muon" or model.architecture is None:
            return ()
        return model_matrices(model.architecture, self.kernels)

    def muon_share(self, model: ModelSpec) -> float:
        """Of the parameters, the share Muon orthogonalizes (memory.optimizer_state_bytes); 0 under another
        optimizer."""
        if self.o.precision.optimizer != "muon":
            return 0.0
        matrices = self.muon_matrices(model)
        return managed_parameters(matrices) / self.counts.total if matrices else 0.0

    @property
    def shard_ranks(self) -> int:
        """The GPUs ZeRO shards the model states over: --shard-group under hybrid sharding, else all of DP, and
        under PyTorch FSDP with CP all of DP x CP (torchtitan's dp_shard_cp mesh: parallel_dims.py, the FSDP mesh
        flattened from dp_shard and cp)."""
        ranks = self.o.dp * self.context_parallel_ranks
        return min(self.o.plan.shard_group or ranks, ranks)

    def stages(self) -> tuple[int, ...]:
        """The ZeRO stages the framework runs."""
        return tuple(self.framework.stages) if self.framework else (0, 1, 2, 3)

    def overlap_grad_reduce(self, stage: int) -> bool:
        if self.o.communication.overlap_comm is not None:
            return self.o.communication.overlap_comm
        return stage in self.framework.overlap_grad_reduce if self.framework else True

    @property
    def overlapped(self) -> bool:
        """Whether the step may overlap its collectives: all but --overlap-comm false (the framework's default)."""
        return self.o.communication.overlap_comm is not False

    @property
    def overlap_param_gather(self) -> bool:
        """Only the framework sets the schedule (--recipe is memory accounting alone), and only with its gradient
        reduction overlapped: Megatron's --overlap-param-gather requires --overlap-grad-reduce (arguments.py), as a
        layout's _data_parallel has it."""
        fw = self.framework
        return fw is not None and fw.overlap_param_gather and self.overlapped

    @property
    def per_unit(self) -> bool:
        return self.framework.per_unit if self.framework else False

    @property
    def tensor_parallel_ranks(self) -> int:
        """The ranks the per-GPU memory (StageMemories) shares weights and activations over: TP under PyTorch FSDP
        (torchtitan's FSDP2 with tensor parallelism: params.tensor_parallel_parameters, activations'
        tensor_parallel_share), 1 for every other plan (a Megatron layout's memory is layout_memory.py's)."""
        return self.o.parallel.tp if self.schedule == "fsdp" else 1

    @property
    def first_parameter(self) -> float:
        """The first parameter of the flattened gradients, on this GPU: the input embedding, first in a Hugging Face
        model's and Megatron's order (DeepSpeed's stage 1-2 partition buffer: memory.deepspeed_partition_buffer)."""
        return self.counts.embedding / self.tensor_parallel_ranks

    @property
    def context_parallel_ranks(self) -> int:
        """The ranks the per-GPU memory splits the sequence over: CP under PyTorch FSDP (torchtitan's
        context_parallel: each rank keeps its s / CP tokens' activations and loss, and the ring's working buffers,
        activations.ring_attention_backward_bytes), 1 for every other plan."""
        return self.o.parallel.cp if self.schedule == "fsdp" else 1

    @property
    def loss_impl(self) -> str:
        """--loss-impl, else the framework's, else an upcast cross-entropy (loss.py)."""
        return self.o.compute.loss_impl or (self.framework.loss_impl if self.framework else "upcast")

    @property
    def optimizer_impl(self) -> str:
        """--optimizer-impl, else the framework's, else fused (memory.optimizer_intermediates)."""
        return self.o.precision.optimizer_impl or (self.framework.optimizer_impl if self.framework else "fused")

    @property
    def kernels(self) -> Kernels:
        """How the layers run (activations.py): compiled with --compile, else the framework's; the generic plan
        counts Korthikanti's fused-kernel tensors."""
        if self.o.compute.compile:
            return "compiled"
        return self.framework.kernels if self.framework else "fused"

    @property
    def schedule(self) -> str:
        """Whose schedule the step runs, and so which transient buffers it holds: the framework's, or generic."""
        return self.framework.name if self.framework else "generic"

    @property
    def gather_calls(self) -> int:
        """Stages 1-2: the calls that gather the updated parameters (DeepSpeed: one per parameter group; Megatron
        without overlap: its one bucket, Framework.bucket_ran; 0: per unit)."""
        return self.framework.gather_calls_ran(self.overlapped) if self.framework else 0

    @property
    def attention_kernel(self) -> str:
        """The flash-attention kernel whose rate attention runs at: --attention-kernel, else the framework's."""
        return self.o.compute.attention_kernel or (self.framework.attention_kernel if self.framework else "flash2")

    @property
    def bucket_op(self) -> str:
        """Stages 1-2: the collective each gradient bucket runs: --grad-reduce, else the framework's (DeepSpeed:
        all-reduce)."""
        return grad_reduce_op(self.o) or (self.framework.bucket_op if self.framework else "reduce_scatter")

    @property
    def bucket_rule(self) -> str:
        """How the framework's buckets take whole tensors (step.bucket_edges); the generic plan cuts anywhere."""
        return self.framework.bucket_rule if self.framework else ""

    @property
    def stage3_reduce_bucket_bytes(self) -> float:
        """Stage 3: the gradient bucket DeepSpeed reduces in (0: one reduce-scatter per unit)."""
        return self.bucket_bytes if self.framework and self.framework.stage3_reduce_buckets else 0.0

    @property
    def synchronous_fetch(self) -> bool:
        """Stage 3 gathers and reduces a call a parameter, each list call's host loop waited for
        (synchronous_fetch.py)."""
        return self.o.communication.zero3_fetch == "synchronous"

    @property
    def list_host_seconds(self) -> float:
        """Under a synchronous fetch, the host's time a rank of one list collective (synchronous_fetch.py)."""
        given = self.o.compute.list_host_time
        return synchronous_fetch.LIST_HOST_SECONDS_PER_RANK if given is None else given


def check_dp(topology: TopologySpec, dp: int, where: str = "dp") -> None:
    """A DP size this topology can hold (placement.check_ranks), as an input error naming the flag."""
    try:
        check_ranks(topology, dp)
    except ValueError as exc:
        raise InputError(where, str(exc)) from None


def seq_len_for(model: ModelSpec, options: Options) -> int:
    """--seq-len, or 4096, or the model's learned-position limit if smaller (its table's rows after the offset);
    never beyond that limit."""
    a = model.architecture
    limit = a.learned_positions - a.position_offset if a is not None and a.learned_positions else 0
    seq_len = options.batch.seq_len or (min(DEFAULT_SEQ_LEN, limit) if limit else DEFAULT_SEQ_LEN)
    if limit and seq_len > limit:
        raise InputError("seq_len", f"{model.name} has {limit} learned positions; use <= {limit}")
    return seq_len


@cache
def recipe_for(name: str, grad_dtype: str) -> Recipe:
    """The recipe with its communicated gradient in `grad_dtype`. Megatron keeps its fp32 main grads when the
    gradients are reduced in bf16: they become an optimizer-side state, sharded with it (Megatron-LM docs,
    distributed optimizer: 20 bytes per parameter, or 4 + 16/d), copied from the 16-bit buffer at the optimizer
    step only (lifetime "step")."""
    base = RECIPES[name]
    if base.name == "megatron" and DTYPE_BYTES[grad_dtype] < 4:
        main = next(c for c in base.components if c.communicated)
        kept = replace(main, group="optimizer", shard_from=1, communicated=False, lifetime="step")
        reduced = replace(
            main, bytes_per_param=float(DTYPE_BYTES[grad_dtype]), label=f"{grad_dtype} grads (communicated)"
        )
        components = (*tuple(c for c in base.components if not c.communicated), reduced, kept)
        return replace(base, components=components)
    components = tuple(
        replace(c, bytes_per_param=float(DTYPE_BYTES[grad_dtype]), label=f"{grad_dtype} grads (communicated)")
        if c.communicated
        else c
        for c in base.components
    )
    return replace(base, components=components)


@cache
def bf16_optimizer_states(recipe: Recipe) -> Recipe:
    """The recipe with stage 1 as DeepSpeed's BF16_Optimizer holds it, which its engine runs for a bf16 model at
    ZeRO stage 1 with data_types.grad_accum_dtype fp32 (engine.py _do_optimizer_sanity_check at v0.19.5, edaa722),
    and Megatron-DeepSpeed's at stage 0 (v0.16.0): each backward's bf16 gradients (param.grad, to the step's
    zero_grad) are added into an fp32 buffer of every parameter, allocated at init and kept (bf16_optimizer.py
    _setup_for_real_optimizer `fp32_flat_buffer`, update_hp_grads); the recipe's 16-bit weights, and the fp32
    master weights and optimizer states as the rank's partition, as ZeRO-1's. Whatever the recipe holds as its
    gradient (DeepSpeed's param.grad, Megatron's main gradient) gives way to those two at stage 1; the other stages'
    rows are the recipe's."""
    lp_grads = StateComponent("bf16 grads (param.grad)", "grads", 2.0, 4, "params", gone_from=2, kept_from=1,
                              lifetime="backward")  # fmt: skip
    fp32_buffer = StateComponent("fp32 gradient buffer (BF16_Optimizer)", "grads", 4.0, 4, "params", gone_from=2,
                                 kept_from=1)  # fmt: skip
    others = [part for c in recipe.components for part in (_at_stages(c, 0, 1), _at_stages(c, 2, 4)) if part]
    base = RECIPES[recipe.name]  # its own states, before recipe_for moved the gradient's
    kept = [part for c in base.components if not c.communicated and (part := _at_stages(c, 1, 2))]
    title = f"{recipe.title}; stage 1 as DeepSpeed's BF16_Optimizer (fp32 gradient accumulation)"
    components = (*others, *kept, lp_grads, fp32_buffer)
    return replace(recipe, title=title, components=components, bf16_optimizer=True)


def _at_stages(c: StateComponent, first: int, past: int) -> StateComponent | None:
    """The component at the ZeRO stages from `first` up to `past` only, None where it is kept at none of them."""
    kept_from, gone_from = max(c.kept_from, first), min(c.gone_from, past)
    return replace(c, kept_from=kept_from, gone_from=gone_from) if kept_from < gone_from else None


def fsdp_sharded_weights(recipe: Recipe) -> Recipe:
    """FSDP holds every parameter as its shard between steps at SHARD_GRAD_OP as at FULL_SHARD (FSDP1's sharded
    FlatParameter, FSDP2's DTensor shards), in whatever dtype the recipe keeps it; the unsharded copy SHARD_GRAD_OP
    keeps from the forward to the backward is a buffer (memory.buffers). A recipe written to ZeRO's rule, weights
    replicated at stage 2 (--recipe bf16, zero-paper, deepspeed), would count that copy twice under FSDP."""
    components = tuple(
        replace(c, shard_from=min(c.shard_from, 2)) if c.group == "params" else c for c in recipe.components
    )
    return replace(recipe, components=components)


def quantized_weights(recipe: Recipe, quantized_share: float, fmt: str, held_bytes: float) -> Recipe:
    """Megatron-LM's --fp8-param-gather or --fp4-param-gather (megatron/training/arguments.py: "keep the compute param
    in fp8 (fp4) ... and perform the param all-gather in fp8 (fp4)", Transformer Engine's fp8_model_init): the weights
    of Transformer Engine's linear layers, `quantized_share` of the parameters, are held in format `fmt` at
    `held_bytes` each (low_precision_weights.held_weight_bytes); the embedding, the output layer and the norms stay
    16-bit; the distributed optimizer keeps its fp32 main copy."""
    weight = next(c.bytes_per_param for c in recipe.components if c.group == "params")
    q = QUANTIZED_WEIGHTS[fmt]
    average = quantized_share * held_bytes + (1 - quantized_share) * weight
    components = tuple(
        replace(c, bytes_per_param=average, label=f"{q.title} linear weights ({q.flag})") if c.group == "params" else c
        for c in recipe.components
    )
    return replace(recipe, components=components, title=f"{recipe.title}, {q.title} weights")


def gather_bytes(gather_dtype: str, fp8_recipe: str, megatron: bool) -> float:
    """Bytes per weight a --gather-dtype gather moves: the dtype's, or a quantized format's
    (low_precision_weights.gathered_weight_bytes: NVFP4's packed half byte; MXFP8's bf16 under `megatron`'s
    distributed optimizer)."""
    if gather_dtype in QUANTIZED_WEIGHTS:
        return gathered_weight_bytes(gather_dtype, fp8_recipe, distributed_optimizer=megatron)
    return float(DTYPE_BYTES[gather_dtype])


def low_precision_linear_params(a: ModelArchitecture, bf16_layers: tuple[int, int]) -> float:
    """The weights of the decoder layers' linear layers, every expert's, that run in low precision: all but the
    layers --first-last-layers-bf16 keeps in BF16 (ops.sixteen_bit_layer)."""
    kinds = a.layer_kinds
    per_kind = {kind: sum(block_matrices(a, kind[1] == "moe", *kind)) for kind in set(kinds)}
    return sum(per_kind[kind] for i, kind in enumerate(kinds) if not sixteen_bit_layer(i, a.layers, bf16_layers))


def fp8_recipe_of(o: Options) -> str:
    """The FP8 recipe (--fp8-recipe): the one given, else MXFP8 where a flag runs it (--fused-grouped-mlp,
    --fp8-output-proj), else per-tensor current scaling, the one ops.FP8_CASTS costs."""
    c = o.compute
    if c.fp8_recipe is not None:
        return c.fp8_recipe
    return "mxfp8" if c.fused_grouped_mlp or c.fp8_output_proj else "tensorwise"


def low_precision_format(o: Options) -> str | None:
    """The format Transformer Engine holds the linear weights in (low_precision_weights): the one they are stored
    and gathered in (--gather-dtype fp8 or nvfp4), else the matmuls' (--compute-dtype fp8 or nvfp4); None in BF16."""
    given = o.communication.gather_dtype
    if given in QUANTIZED_WEIGHTS:
        return given
    dtype = o.compute.compute_dtype
    return dtype if dtype in QUANTIZED_WEIGHTS else None


def core_attention_rerun(o: Options, recompute: str) -> bool:
    """Whether selective recomputation re-runs core attention (Megatron-Core's "core_attn" in --recompute-modules:
    attention.py checkpoint_core_attention), whose checkpoint keeps neither its scores nor its output."""
    return recompute == "selective" and "core_attn" in o.plan.recompute_modules


def moe_recompute_module(recompute: str, modules: Sequence[str]) -> str:
    """The MoE module selective recomputation re-runs, which the layout's memory prices (layout_memory [E]): "moe"
    (it holds "moe_act"), else "moe_act", else none."""
    if recompute != "selective":
        return ""
    return next((m for m in ("moe", "moe_act") if m in modules), "")


def saved_input_terms(o: Options, recompute: str) -> dict[str, Any]:
    """The MemoryLayout fields that say which matmul inputs Megatron-Core's layers keep for the backward, and in
    what format (layout_memory.low_precision_input_savings): the matmuls' format and FP8 recipe, the layers kept in
    BF16, what selective recomputation re-runs, and whether attention keeps its output (unfused kernels keep none)."""
    c, modules = o.compute, o.plan.recompute_modules
    return {
        "recompute": recompute,
        "matmul_format": c.compute_dtype if c.compute_dtype in QUANTIZED_WEIGHTS else None,
        "fp8_recipe": fp8_recipe_of(o),
        "bf16_layers": c.bf16_layers,
        "attention_keeps_output": c.flash_attention and not core_attention_rerun(o, recompute),
        "moe_recompute": moe_recompute_module(recompute, modules),
        "mla_recompute": recompute == "selective" and "mla_up_proj" in modules,
        "dropped_modules": frozenset(modules) & DROPPED_MODULES if recompute == "selective" else frozenset(),
    }


def check_fp8_recipe(topology: TopologySpec, o: Options) -> None:
    """--fp8-recipe is Transformer Engine's, under Megatron-LM (a layout or --framework megatron), or torchao's rowwise
    under PyTorch FSDP (with its weights gathered in BF16), for FP8 matmuls;
    MXFP8 needs compute capability 10.x (TE quantization.py _compute_mxfp8_support: Blackwell), the flags that run
    MXFP8 no other recipe, and delayed scaling no BF16 layers (Megatron's transformer_config.py: "Delayed scaling
    does not support first / last layer in BF16"); else bad input naming the flag."""
    recipe, c = o.compute.fp8_recipe, o.compute
    if recipe is None:
        return
    if recipe == "rowwise" and o.plan.framework != "fsdp":
        raise InputError("fp8_recipe", "rowwise is torchao's, torchtitan's float8 under PyTorch FSDP: give --framework "
                         "fsdp, or one of Transformer Engine's recipes")  # fmt: skip
    if recipe == "rowwise" and o.communication.gather_dtype == "fp8":
        raise InputError("fp8_recipe", "rowwise scaling gathers FSDP's weights in BF16 (torchtitan's float8.py refuses "
                         "enable_fsdp_float8_all_gather with a recipe name): drop --gather-dtype fp8")  # fmt: skip
    if recipe != "rowwise" and not o.megatron_layout and o.plan.framework != "megatron":
        raise InputError("fp8_recipe", "is Transformer Engine's, which Megatron-LM runs: give a layout or --framework "
                         "megatron (torchtitan's float8 is costed as tensorwise)")  # fmt: skip
    if c.compute_dtype != "fp8":
        raise InputError("fp8_recipe", "applies to FP8 matmuls: give --compute-dtype fp8 too")
    if recipe == "mxfp8" and topology.gpu.arch != "blackwell":
        raise InputError("fp8_recipe", f"mxfp8 runs on Blackwell (compute capability 10.x), not {topology.gpu.name}")
    if recipe != "mxfp8" and (c.fused_grouped_mlp or c.fp8_output_proj):
        given = "--fused-grouped-mlp" if c.fused_grouped_mlp else "--fp8-output-proj"
        raise InputError("fp8_recipe", f"{given} runs MXFP8 matmuls: give --fp8-recipe mxfp8, or drop {given}")
    if recipe == "delayed" and any(c.bf16_layers):
        raise InputError("fp8_recipe", "delayed scaling keeps no layer in BF16 (Megatron refuses it): give another "
                         "recipe or drop --bf16-layers-at-start/-end")  # fmt: skip
    recomputed = {"moe_act", "layernorm"} & set(o.plan.recompute_modules)
    if recipe == "delayed" and recomputed and o.plan.recompute in (None, "selective"):
        raise InputError("fp8_recipe", f"delayed scaling does not recompute {', '.join(sorted(recomputed))} (Megatron "
                         "refuses it): give another recipe or other --recompute-modules")  # fmt: skip


def check_gather_dtype(o: Options) -> None:
    """--gather-dtype fp8 under Megatron is its --fp8-param-gather, which needs FP8 matmuls (transformer_config.py:
    "fp8_param must be used together with fp8 mode"); nvfp4 is --fp4-param-gather, which arguments.py refuses without
    --fp4-format (NVFP4 compute), and whose packed NVFP4 gathers are the distributed optimizer's
    (param_and_grad_buffer.py): Megatron at ZeRO 0-1, pure DP or a layout."""
    megatron = o.megatron_layout or o.plan.framework == "megatron"
    if o.communication.gather_dtype == "fp8" and megatron and o.compute.compute_dtype != "fp8":
        raise InputError(
            "gather_dtype",
            "fp8 is Megatron's --fp8-param-gather, which needs FP8 matmuls (Megatron refuses it without --fp8-format): "
            "give --compute-dtype fp8 too",
        )
    if o.communication.gather_dtype != "nvfp4":
        return
    if o.compute.compute_dtype != "nvfp4":
        raise InputError(
            "gather_dtype",
            "nvfp4 gathers NVFP4 weights (Megatron's --fp4-param-gather): give --compute-dtype nvfp4 too",
        )
    if not megatron or (o.plan.zero or 0) >= 2:
        raise InputError(
            "gather_dtype",
            "nvfp4 is Megatron-LM's --fp4-param-gather, which its DDP and distributed optimizer run: give "
            "--framework megatron (or a layout) at ZeRO 0-1",
        )


def batching(o: Options) -> tuple[int, int, list[Advice]]:
    """(accumulation, micro-batch, advice): B = b x a x D (the seed's global batch)."""
    b = o.batch
    if b.global_batch is None:
        return b.accumulation or 1, b.micro_batch, []
    per_step = b.micro_batch * o.dp
    if b.accumulation is not None:
        if b.micro_batch * b.accumulation * o.dp != b.global_batch:
            raise InputError(
                "global_batch",
                f"{b.global_batch} != micro-batch {b.micro_batch} x accumulation {b.accumulation} x DP {o.dp}; "
                "give --global-batch or --accum, not both",
            )
        return b.accumulation, b.micro_batch, []
    if b.global_batch % per_step == 0:
        return b.global_batch // per_step, b.micro_batch, []
    if b.global_batch % o.dp == 0:
        per_rank = b.global_batch // o.dp
        micro = max(d for d in range(1, min(per_rank, b.micro_batch) + 1) if per_rank % d == 0)
        from dpcost.engine import advice  # the report's notes: imported only where one is due, off the cost core's path

        return (
            per_rank // micro,
            micro,
            [advice.micro_batch_adjusted(b.global_batch, o.dp, per_rank, micro, b.micro_batch)],
        )
    raise InputError(
        "global_batch",
        f"{b.global_batch} sequences cannot be split evenly over DP {o.dp}; use a multiple of {o.dp}",
    )


def recipe_of(o: Options) -> str:
    """The memory accounting: --recipe, else the framework's, else the ZeRO paper's."""
    return o.precision.recipe or o.plan.framework or "zero-paper"


def check_hybrid(model: ModelSpec, options: Options) -> None:
    """A model some of whose layers have no per-op times (ops.has_layer_ops: Mamba-1, DeltaNet, lightning attention,
    short convolutions; DeepSeek-V4's compressed attention and residual streams) is costed as pure data parallelism
    with the flops compute model. A Mamba-2 hybrid (Nemotron-H) takes any layout its Mamba layers run in
    (layout_step.mamba_layout_refusal: no CP, TP dividing the mixer's heads and groups)."""
    a = model.architecture
    if a is None or not a.hybrid:
        return
    par = options.parallel
    if not has_layer_ops(a):
        for name in ("tp", "cp", "pp", "ep"):
            if getattr(par, name) > 1:
                raise InputError(
                    name, f"a layout of {model.name}, with {a.unmodelled}, is not costed yet: cost it as pure data "
                    "parallelism",
                )  # fmt: skip
        if options.compute.compute_model == "ops":
            raise InputError(
                "compute_model", f"ops: {model.name}, with {a.unmodelled}, has no per-op times yet: use flops"
            )
        return
    refused = mamba_layout_refusal(a, par.tp, par.cp)
    if refused:
        raise InputError(refused[0], f"{model.name}: {refused[1]}")


def compute_model_for(model: ModelSpec, compute: Compute) -> str:
    """How compute is priced: --compute-model where given, else op by op (ops.py, issue 18), or every FLOP at one
    efficiency where the model has no per-op times (no architecture; layers ops.has_layer_ops lacks)."""
    if compute.compute_model is not None:
        return compute.compute_model
    a = model.architecture
    return "ops" if a is not None and has_layer_ops(a) else "flops"


def matmul_share(gpu: GPUSpec, compute: Compute, compute_model: str) -> float:
    """The share of the dense peak the matmuls run at: --mfu (else DEFAULT_MFU) for every FLOP under `flops`;
    op by op, --mfu where given, else the GPU's sustained large-matmul share (rates.matmul_efficiency)."""
    if compute_model == "flops":
        return compute.mfu or DEFAULT_MFU
    return matmul_efficiency(gpu, compute.compute_dtype, compute.mfu)


def slowest_gpu_share(gpu: GPUSpec, compute: Compute, gpus: int) -> float:
    """Op by op, the share of its rate the slowest of `gpus` busy GPUs loses (rates.slowest_gpu_loss, from the
    GPU's measured spread); none under --mfu, a matmul rate the user measured or chose."""
    return 0.0 if compute.mfu is not None else slowest_gpu_loss(rates_for(gpu), gpus)


def check_pipeline_only(options: Options) -> None:
    """MTP modules, an uneven pipeline split and the MoE layers' host time are Megatron layout options: the pure
    data-parallel path has no pipeline stage to put them on, and prices no host time."""
    par = options.parallel
    if not par.trivial or options.plan.mode != "train":
        return
    if par.mtp_layers:
        raise InputError(
            "mtp_layers", "MTP modules train in a Megatron layout: give --pp (or --tp, --cp, --ep) above 1"
        )
    if par.defer_embedding_wgrad is not None:
        raise InputError("defer_embedding_wgrad", "a pipeline option: give --pp 2 or more (Megatron refuses it alone)")
    if par.dist_opt_instances > 1:
        raise InputError(
            "dist_opt_instances",
            "a Megatron layout option: give --tp, --cp, --pp or --ep above 1; without them, --shard-group "
            "DP / N shards ZeRO over N-rank groups and all-reduces across them, as N instances do",
        )
    for name in ("first_stage_layers", "last_stage_layers", "pipeline_layout"):
        if getattr(par, name) is not None:
            raise InputError(name, "the layers of a pipeline stage need pipeline stages: give --pp 2 or more")
    if par.microbatch_group is not None:
        raise InputError("microbatch_group", "groups an interleaved pipeline's micro-batches: give --pp 2 or more")
    if options.compute.moe_host_time:  # 0 (no host time, what a full-iteration CUDA graph script reads as) stands
        raise InputError(
            "moe_host_time",
            "prices a Megatron layout's MoE layers (engine/host.py): give --tp, --cp, --pp or --ep above 1; pure data "
            "parallelism prices no host time",
        )


def check_muon(model: ModelSpec, o: Options) -> None:
    """--optimizer muon needs the weight matrices of every layer (muon.layer_matrices: attention, MLA, Mamba-2 and
    MLP layers, as ops.layer_ops lists them), and Megatron runs it under its DDP or distributed optimizer (not
    Megatron-FSDP), its layer-wise optimizer as one instance, with no expert-parallel parameter (routed experts'
    biases) left to Adam (arguments.py, layer_wise_optimizer.py, optimizer/__init__.py at d98e8a64dd), else bad input
    naming the flag."""
    a = model.architecture
    if a is None:
        raise InputError("optimizer", f"muon orthogonalizes each weight matrix: {model.name} gives no architecture")
    if not has_layer_ops(a):
        raise InputError(
            "optimizer",
            f"muon: dpcost knows the weight matrices of attention, MLA, Mamba-2 and MLP layers, not every layer of "
            f"{model.name}",
        )
    if o.megatron_layout and (o.plan.zero or 0) >= 2:  # a layout, or Megatron pure DP, at ZeRO 2-3: Megatron-FSDP
        raise InputError("optimizer", "muon runs under Megatron's DDP or distributed optimizer (ZeRO 0-1), not "
                         "Megatron-FSDP (ZeRO 2-3): Megatron-LM asserts so (arguments.py)")  # fmt: skip
    if o.parallel.dist_opt_instances > 1:
        raise InputError("dist_opt_instances", "Megatron's layer-wise optimizer for muon runs one instance")
    if o.parallel.ep > 1 and a.moe is not None and a.linear_bias:  # optimizer/__init__.py asserts it
        raise InputError(
            "optimizer",
            f"muon: Megatron keeps no expert-parallel parameter on Adam, and {model.name}'s routed experts have biases",
        )


def check_fused_grouped_mlp(model: ModelSpec, topology: TopologySpec, o: Options) -> None:
    """--fused-grouped-mlp: Megatron-Core's routed experts (a layout, or --framework megatron) of a gated MLP in MXFP8
    on Blackwell, which Transformer Engine's CuTe-DSL grouped MLP alone runs (TE 2.16 forward_grouped_mlp.py: SM 10.x,
    MXFP8 block scaling, SwiGLU or the clamped QGeGLU), else bad input naming the flag."""
    if not o.compute.fused_grouped_mlp:
        return
    a = model.architecture
    if a is None or a.moe is None or not a.gated_mlp:
        raise InputError("fused_grouped_mlp", f"{model.name} has no gated routed experts to fuse")
    if not o.megatron_layout and o.plan.framework != "megatron":
        raise InputError("fused_grouped_mlp", "Megatron-Core's experts run it: give a layout or --framework megatron")
    if o.compute.compute_dtype != "fp8" or topology.gpu.arch != "blackwell":
        raise InputError(
            "fused_grouped_mlp", "runs MXFP8 matmuls on Blackwell: give --compute-dtype fp8 on a Blackwell GPU"
        )


def check_fp8_output_proj(topology: TopologySpec, o: Options) -> None:
    """--fp8-output-proj: Megatron-Core's output layer under the MXFP8 recipe, which alone runs it
    (transformer_config.py __post_init__: fp8_output_proj needs fp8 with fp8_recipe mxfp8, a Blackwell recipe), else
    bad input naming the flag."""
    if not o.compute.fp8_output_proj:
        return
    if not o.megatron_layout and o.plan.framework != "megatron":
        raise InputError("fp8_output_proj", "Megatron-Core's output layer: give a layout or --framework megatron")
    if o.compute.compute_dtype != "fp8" or topology.gpu.arch != "blackwell":
        raise InputError("fp8_output_proj", "needs MXFP8: give --compute-dtype fp8 on a Blackwell GPU")


def check_compute_dtype(topology: TopologySpec, o: Options) -> None:
    """The GPU has tensor cores for --compute-dtype (specs.GpuSpec.peak), else bad input naming the flag."""
    try:
        topology.gpu.peak(o.compute.compute_dtype)
    except ValueError as exc:
        raise InputError("compute_dtype", str(exc)) from None


def bf16_layer_notes(model: ModelSpec, o: Options) -> list[Advice]:
    """--bf16-layers-at-start/-end: at most the model's decoder layers between them (bad input beyond), and a note
    where they change nothing: a BF16 plan, or every FLOP at one --mfu (--compute-model flops)."""
    start, end = o.compute.bf16_layers
    if not start and not end:
        return []
    field = "bf16_layers_at_end" if end else "bf16_layers_at_start"
    a = model.architecture
    if a is None:
        raise InputError(field, f"{model.name} is given as a parameter count: it has no decoder layers to keep in BF16")
    if start + end > a.layers:
        raise InputError(field, f"{start} + {end} layers in BF16 is more than {model.name}'s {a.layers} decoder layers")
    if o.compute.compute_dtype == "fp8" and (o.megatron_layout or o.plan.framework == "megatron"):
        most = a.layers // o.parallel.pp  # transformer_config.py: "between 0 and number of layers per pipeline stage"
        for name, n in (("bf16_layers_at_start", start), ("bf16_layers_at_end", end)):
            if n > most:
                raise InputError(name, f"{n} is more than a pipeline stage's {most} layers, as Megatron refuses")
    flags = [flag for flag, n in (("--bf16-layers-at-start", start), ("--bf16-layers-at-end", end)) if n]
    if o.compute.compute_dtype == "bf16":
        from dpcost.engine import advice

        return [advice.ignored_flags(flags, "keep layers in BF16 under --compute-dtype fp8 or nvfp4: all are already")]
    if o.compute.chosen_model == "flops":
        from dpcost.engine import advice

        return [advice.bf16_layers_unpriced(flags)]
    return []


def prepare(model: ModelSpec, topology: TopologySpec, options: Options) -> Prepared:
    """Resolve the options against the model and topology (checks that need both are made here)."""
    check_dp(topology, options.dp)
    group = options.plan.shard_group
    fsdp_cp = options.plan.framework == "fsdp" and options.parallel.cp > 1  # FSDP shards over DP x CP (shard_ranks)
    ranks, over = (options.dp * options.parallel.cp, "DP x CP") if fsdp_cp else (options.dp, "DP")
    if group is not None and ranks % group:
        raise InputError("shard_group", f"{group} must divide {over} {ranks}: the replicas are {over} / N groups of N")
    if group is not None and options.plan.zero == 0:
        raise InputError("shard_group", "needs a ZeRO stage that shards (1, 2 or 3): ZeRO-0 replicates every state")
    check_hybrid(model, options)
    if options.parallel.ep_node_limit is not None and options.parallel.ep == 1:
        raise InputError("ep_node_limit", "limits where the expert all-to-all sends a token: it needs --ep above 1")
    if options.parallel.ep_dispatcher == "flex" and options.parallel.ep == 1:  # allgather gathers over TP alone too
        raise InputError("ep_dispatcher", "flex dispatches tokens to expert-parallel ranks: it needs --ep above 1")
    if options.parallel.ep_comm_overlap and options.parallel.ep_dispatcher == "allgather":
        # transformer_config.py: overlap_moe_expert_parallel_comm "is supported with alltoall/flex token dispatcher"
        raise InputError("ep_comm_overlap", "overlaps the alltoall or flex dispatcher's calls; allgather's it cannot")
    if options.parallel.pp_schedule is not None and options.parallel.pp == 1:
        raise InputError("pp_schedule", "schedules pipeline stages: give --pp 2 or more")
    check_pipeline_only(options)
    check_fused_grouped_mlp(model, topology, options)
    check_fp8_output_proj(topology, options)
    if options.precision.optimizer == "muon":
        check_muon(model, options)
    seq_len = seq_len_for(model, options)
    compute = options.compute.model_copy(update={"compute_model": compute_model_for(model, options.compute)})
    o = options.model_copy(update={"batch": options.batch.model_copy(update={"seq_len": seq_len}), "compute": compute})
    if o.plan.framework == "fsdp" and o.parallel.tp > 1:
        # torchtitan's tensor parallelism (parallelize.py apply_tp): sequence parallel norms always, DTensor's
        # collectives (layout_step.tp_calls' torch_tp), which the backward waits for, and the loss over vocabulary
        # shards (train.py: loss_parallel unless disable_loss_parallel) where the framework's upcast cross-entropy
        # would run (fsdp_layout.py)
        loss = o.compute.loss_impl or FRAMEWORKS["fsdp"].loss_impl
        o = o.model_copy(update={
            "parallel": o.parallel.model_copy(update={"sequence_parallel": True, "tp_backward_async": False}),
            "compute": o.compute.model_copy(update={"loss_impl": "loss-parallel" if loss == "upcast" else loss}),
        })  # fmt: skip
    if o.plan.framework == "fsdp" and o.parallel.cp > 1 and o.parallel.cp_impl == "p2p":
        # torchtitan's context parallelism is torch's context_parallel (fsdp_layout.py), in place of the default
        # exchange, Megatron-Core's ring
        o = o.model_copy(update={"parallel": o.parallel.model_copy(update={"cp_impl": "torch"})})
    counts = count_params(model)
    fw = FRAMEWORKS[o.plan.framework] if o.plan.framework else None
    check_grad_reduce(o, fw)
    check_grads_between_steps(o, fw)
    check_zero3_fetch(o, fw)
    # Megatron runs ZeRO 2-3 as Megatron-FSDP, which the layout engine costs (Options.megatron_layout)
    stages = {**MEGATRON_FSDP.stages, **fw.stages} if fw is FRAMEWORKS["megatron"] else fw.stages if fw else {}
    if fw is not None and o.plan.zero is not None and o.plan.zero not in stages:
        runs = ", ".join(f"{st} ({name})" for st, name in stages.items())
        raise InputError("zero", f"{fw.title} runs ZeRO stages {runs}, not {o.plan.zero}")
    if fw is not None and o.plan.recompute is not None and o.plan.recompute not in fw.recompute:
        raise InputError("recompute", f"{fw.title} runs recompute {', '.join(fw.recompute)}, not {o.plan.recompute}")
    recipe_name = recipe_of(o)
    # The framework's reduction dtype is its own recipe's (--recipe changes the memory accounting only), but pure
    # bf16 has no fp32 gradient to reduce, whichever framework runs it.
    own = RECIPES[recipe_name if recipe_name == "bf16" or fw is None else fw.name].grad_dtype
    if o.precision.bf16_optimizer:
        own = BF16_OPTIMIZER_GRAD_DTYPE
    grad_dtype = o.precision.grad_dtype or own
    recipe = recipe_for(recipe_name, grad_dtype)
    check_grad_accum_dtype(o, fw, recipe_name)
    if o.precision.bf16_optimizer and not o.megatron_layout:  # a layout's: layout_memory, layout_step
        recipe = bf16_optimizer_states(recipe)
    if fw is not None and fw.name == "fsdp":
        recipe = fsdp_sharded_weights(recipe)
    gather_dtype = o.communication.gather_dtype
    check_compute_dtype(topology, o)
    check_gather_dtype(o)
    check_fp8_recipe(topology, o)
    if recipe.name == "megatron" and gather_dtype in QUANTIZED_WEIGHTS and model.architecture is not None:
        held = held_weight_bytes(gather_dtype, fp8_recipe_of(o), topology.gpu.arch)
        matrices = low_precision_linear_params(model.architecture, o.compute.bf16_layers)
        recipe = quantized_weights(recipe, matrices / counts.total, gather_dtype, held)
    grad_bytes = float(DTYPE_BYTES[grad_dtype])
    block = o.precision.grad_block
    if block is not None and grad_dtype in ("fp8", "int8"):
        grad_bytes += 4.0 / block  # an fp32 scale per block of values travels with them
    weight_bytes = (fw.gather_bytes if fw else None) or next(
        c.bytes_per_param for c in recipe.components if c.group == "params"
    )
    unconverted_weight_bytes = weight_bytes
    if gather_dtype is not None:
        weight_bytes = gather_bytes(gather_dtype, fp8_recipe_of(o), recipe.name == "megatron")
    accumulation, micro_batch, notes = batching(o)
    given = o.communication
    check_bucket_count(o, fw)
    given_bucket = given.bucket_bytes
    if given.bucket_count is not None:  # a layout's is its first stage's share (layout_report._given_bucket_bytes)
        given_bucket = megatron_count_bucket(counts.total, given.bucket_count) * grad_bytes
    # The generic plan buckets as PyTorch DDP does (frameworks.py); Megatron in one bucket without overlap
    overlapped = given.overlap_comm is not False  # Prepared.overlapped, before there is a Prepared
    bucket = (fw or FRAMEWORKS["ddp"]).bucket_ran(o.dp, grad_bytes, given_bucket, overlapped, counts.total * grad_bytes)
    if recipe.bf16_optimizer and recipe.name == "deepspeed":  # a call a parameter group, each whole: one group
        bucket = counts.total * grad_bytes
    first = given.first_bucket_bytes if given.first_bucket_bytes is not None else (fw.first_bucket_bytes if fw else 0.0)
    plan = o.plan
    if "mla_up_proj" in plan.recompute_modules and (model.architecture is None or model.architecture.mla is None):
        others = ", ".join(m for m in get_args(RecomputeModule) if m != "mla_up_proj")
        raise InputError(
            "recompute_modules",
            f"mla_up_proj recomputes multi-latent attention's up-projections, which {model.name} does not have "
            f"(Megatron-Core refuses it likewise: transformer_config.py); choose among {others}",
        )
    notes += bf16_layer_notes(model, o)
    notes += sub_group_notes(o, fw)
    if plan.recompute not in (None, "selective") and set(plan.recompute_modules) != DEFAULT_MODULES:
        from dpcost.engine import advice

        why = f"apply to --recompute selective, not {plan.recompute}"
        notes.append(advice.ignored_flags(["--recompute-modules"], why))
    if fw is not None and fw.per_unit:  # FSDP reduces per wrapped unit: it has no buckets
        flags = [
            f
            for f, v in (("--bucket-size", given.bucket_bytes), ("--first-bucket-size", given.first_bucket_bytes))
            if v is not None
        ]
        if flags:
            from dpcost.engine import advice

            notes.append(advice.ignored_flags(flags, f"do not apply: {fw.title} reduce-scatters per wrapped unit"))
        bucket, first = 0.0, 0.0
    elif counts.total * grad_bytes / bucket > MAX_BUCKETS:
        raise InputError(
            "bucket_size",
            f"{bucket:.3g}-byte buckets cut the {counts.total * grad_bytes / 1e9:,.1f} GB gradient into more than "
            f"{MAX_BUCKETS:,} calls per pass; use at least {counts.total * grad_bytes / MAX_BUCKETS:,.0f} bytes",
        )
    prepared = Prepared(
        o,
        seq_len,
        counts,
        recipe,
        grad_dtype,
        grad_bytes,
        weight_bytes,
        unconverted_weight_bytes,
        accumulation,
        micro_batch,
        tuple(notes),
        fw,
        bucket,
        first,
    )
    check_unfused_softmax(o, prepared.kernels)
    return prepared


def grad_reduce_op(o: Options) -> str | None:
    """--grad-reduce as the collective's name (collectives.py), None where it is not given."""
    given = o.communication.grad_reduce
    return given.replace("-", "_") if given else None


def check_grad_reduce(o: Options, fw: Framework | None) -> None:
    """--grad-reduce chooses ZeRO 1-2's bucket collective: ZeRO-0 all-reduces, and ZeRO-3 and the frameworks that
    reduce per wrapped unit (FSDP; Megatron's ZeRO 2-3, Megatron-FSDP) reduce-scatter. The stage is given, not
    chosen: the choice could land on a stage it does not apply to."""
    if o.communication.grad_reduce is None:
        return
    zero = o.plan.zero
    if zero is None:
        raise InputError("grad_reduce", "chooses ZeRO 1-2's gradient collective: give --zero 1 or 2")
    if zero in (0, 3):
        raise InputError("grad_reduce", f"chooses ZeRO 1-2's gradient collective; ZeRO-{zero} runs its own")
    if fw is not None and (fw.per_unit or (zero == 2 and fw.name == "megatron")):
        raise InputError("grad_reduce", f"{fw.title} reduce-scatters each wrapped unit's gradients at ZeRO 2")


# What BF16_Optimizer's all-reduce moves unless communication_data_type says otherwise: its fp32 gradients cast to
# bf16 for a bf16 model (engine.py communication_data_type: at v0.7.0-v0.8.3 for stage 0, and from v0.9.2, #3370, at
# every stage; fp32 only at v0.9.0-v0.9.1, #2970)
BF16_OPTIMIZER_GRAD_DTYPE = "bf16"


def sub_group_notes(o: Options, fw: Framework | None) -> list[Advice]:
    """--sub-group-size is DeepSpeed's ZeRO-3 optimizer's (memory.deepspeed_sub_group): bad input without
    --framework deepspeed, a note where the stage given is not 3 (stages 1-2 step the rank's whole partition)."""
    if o.precision.sub_group_size is None:
        return []
    if fw is None or fw.name != "deepspeed":
        raise InputError("sub_group_size", "is DeepSpeed's zero_optimization.sub_group_size, its ZeRO-3 optimizer's: "
                         "give --framework deepspeed")  # fmt: skip
    if o.plan.zero in (None, 3):
        return []
    from dpcost.engine import advice

    return [advice.ignored_flags(["--sub-group-size"], f"applies at ZeRO-3 only: ZeRO-{o.plan.zero} steps the rank's "
                                 "whole partition at once")]  # fmt: skip


def check_grad_accum_dtype(o: Options, fw: Framework | None, recipe_name: str) -> None:
    """--grad-accum-dtype is DeepSpeed's data_types.grad_accum_dtype, for its bf16 model (the deepspeed recipe's
    weights). fp32 runs BF16_Optimizer, which DeepSpeed's engine runs at ZeRO stage 1 without CPU offload
    (engine.py _do_optimizer_sanity_check at v0.19.5; stage 0 refuses the mix, and stages 2-3 run ZeRO's own
    optimizer, which dpcost does not price with fp32 accumulation). The stage is given, not chosen, as
    --grad-reduce's is. With Megatron's layers (--framework megatron, or a TP/CP/PP/EP layout), DeepSpeed's engine
    as Megatron-DeepSpeed runs them: BF16_Optimizer's fp32 buffer is the main gradient Megatron's recipe holds, and
    it shards the fp32 states over DP as the distributed optimizer does (--zero 1)."""
    accum = o.precision.grad_accum_dtype
    if accum is None:
        return
    megatron = fw.name == "megatron" if fw is not None else o.megatron_layout
    if not megatron and (fw is None or fw.name != "deepspeed"):
        raise InputError("grad_accum_dtype", "is DeepSpeed's data_types.grad_accum_dtype: give --framework deepspeed "
                         "(or megatron, as Megatron-DeepSpeed runs it)")  # fmt: skip
    own = "megatron" if megatron else "deepspeed"
    if recipe_name != own and not o.megatron_layout:
        raise InputError("grad_accum_dtype", f"is for the {own} recipe's bf16 weights; --recipe {recipe_name} holds "
                         "others")  # fmt: skip
    if accum == "bf16":  # the model's dtype: DeepSpeed's default
        return
    if o.plan.zero != 1:
        raise InputError("grad_accum_dtype", "fp32 with a bf16 model runs DeepSpeed's BF16_Optimizer, which "
                         "shards the fp32 states over DP as ZeRO-1 (engine.py _do_optimizer_sanity_check): give "
                         "--zero 1")  # fmt: skip
    if megatron:
        return
    if o.precision.offload != "none":
        raise InputError("grad_accum_dtype", "fp32 runs DeepSpeed's BF16_Optimizer only without CPU offload; with "
                         "--offload, ZeRO-1's own optimizer, which dpcost does not price so")  # fmt: skip
    if o.communication.bucket_bytes is not None:
        raise InputError("bucket_bytes", "DeepSpeed's BF16_Optimizer (--grad-accum-dtype fp32) all-reduces its fp32 "
                         "gradient buffer whole, not in reduce_bucket_size buckets")  # fmt: skip


def check_bucket_count(o: Options, fw: Framework | None) -> None:
    """--bucket-count is Megatron's --ddp-num-buckets, which Megatron-Core refuses beside a bucket size
    (distributed_data_parallel_config.py __post_init__ at d98e8a64dd); no other framework counts its buckets."""
    if o.communication.bucket_count is None:
        return
    if o.communication.bucket_bytes is not None:
        raise InputError("bucket_count", "Megatron refuses --ddp-num-buckets beside a bucket size: give --bucket-count "
                         "or --bucket-size")  # fmt: skip
    if not o.megatron_layout and (fw is None or fw.name != "megatron"):
        raise InputError("bucket_count", "Megatron's --ddp-num-buckets: give --framework megatron or a layout")


def check_zero3_fetch(o: Options, fw: Framework | None) -> None:
    """--zero3-fetch and --list-host-time describe DeepSpeed's ZeRO-3 (synchronous_fetch.py), on pure data
    parallelism; --list-host-time prices the synchronous fetch alone."""
    fetch, host = o.communication.zero3_fetch, o.compute.list_host_time
    if fetch is not None and (fw is None or fw.name != "deepspeed" or o.megatron_layout):
        raise InputError("zero3_fetch", "how DeepSpeed's ZeRO-3 gathers: give --framework deepspeed, without a layout")
    if fetch is not None and o.plan.zero not in (None, 3):
        raise InputError("zero3_fetch", f"how ZeRO-3 gathers: give --zero 3 (or none), not {o.plan.zero}")
    if host is not None and fetch != "synchronous":
        raise InputError("list_host_time", "prices DeepSpeed's synchronous ZeRO-3 fetch: give --zero3-fetch "
                         "synchronous")  # fmt: skip


def check_grads_between_steps(o: Options, fw: Framework | None) -> None:
    """--grads-between-steps kept is PyTorch's .grad under zero_grad(set_to_none=False) (pytorch/pytorch#92731 made
    True the default in 2.0); DeepSpeed and Megatron-LM free and keep their gradient buffers themselves."""
    if o.precision.grads_between_steps == "kept" and fw is not None and fw.name in ("deepspeed", "megatron"):
        raise InputError("grads_between_steps", f"{fw.title} frees and keeps its gradients itself: give it without")


def check_unfused_softmax(o: Options, kernels: Kernels | None = None) -> None:
    """--unfused-softmax-fp32 is what Megatron's fused-kernel attention keeps without flash: flash attention keeps no
    scores, and eager attention's softmax dtype is the model family's (activations._eager_scores). `kernels`: the
    plan's, where it is known (a search checks the options alone)."""
    if not o.compute.unfused_softmax_fp32:
        return
    if o.compute.flash_attention:
        raise InputError(
            "unfused_softmax_fp32",
            "flash attention keeps no scores: give --no-flash-attention, or --no-unfused-softmax-fp32",
        )
    if kernels is not None and kernels != "fused":
        raise InputError(
            "unfused_softmax_fp32",
            f"Megatron's unfused softmax: {kernels} attention keeps the scores as its own kernels do; give "
            "--framework megatron (or none) without --compile, or --no-unfused-softmax-fp32",
        )


@per_object
def _pieces_of(model: ModelSpec) -> dict[tuple[int, bool], tuple[Unit, ...]]:
    """units() of one model by sequence length and whether its MoE blocks run every expert (memo.py)."""
    return {}


def units(counts: ParamCount, spec: ModelSpec, seq_len: int, every_expert: bool = False) -> tuple[Unit, ...]:
    """The pieces the step timeline schedules, in forward order, each with its share of a pass's FLOPs:
    embedding, transformer blocks and output head; a model given only as a parameter count is cut into
    blocks of its largest layer (one block if that is not given). `every_expert`: each MoE block runs every expert
    on every token (MoESpec.every_expert under eager kernels), 2 FLOPs a parameter of all of it."""
    a = spec.architecture
    if a is None or not counts.blocks:
        n = math.ceil(counts.total / spec.largest_layer_params) if spec.largest_layer_params else 1
        return tuple(Unit(counts.total / n, 1 / n) for _ in range(n))
    attention_per_layer = attention_flops(a, seq_len) / max(1, a.attention_layers)
    head_matmul = counts.embedding if a.tied_embeddings else counts.lm_head
    layer_kinds = a.layer_kinds
    # Qwen4-Exp's n-gram table and layer live in their decoder layer (Qwen4ExpTextDecoderLayer.ple): each layer's
    # unit holds its own; Gemma 4's per-layer inputs are the embedding's
    ngram = a.ngram_embedding
    own: dict[int, tuple[float, float]] = {}
    if ngram is not None:
        own = {
            i: (float(table), ngram_layer_parameters(a)) for i, table in zip(ngram.layers, ngram.tables, strict=True)
        }
    # LongCat-Flash-Lite's n-gram tables, each a unit of its own after the embedding's (whose unit keeps their
    # projections), as MindSpeed-LLM's FSDP2 backend wraps them (_install_ngram_embedding_early_post_backward hooks
    # each embedder as a group of its one parameter)
    g = a.ngram_input
    table_units = [(float(rows * g.width),) for rows in g.rows] if g is not None else []
    projection = 0.0 if own else counts.per_layer_projection
    flops = [2 * projection]  # Gemma 4's per-layer inputs and LongCat-Flash-Lite's n-gram tables, projected
    flops += [0.0] * len(table_units)  # looked up
    for i, (b, (mixer, *_)) in enumerate(zip(counts.blocks, layer_kinds, strict=True)):
        attention = attention_per_layer if "attention" in mixer else 0.0
        ple = 2 * own[i][1] if i in own else 0.0
        run = b.params if every_expert and layer_kinds[i][1] == "moe" else b.active
        flops.append(2 * run + attention + mixer_recurrence_flops(a, mixer) + ple)
    flops.append(2 * head_matmul)
    positions = input_table_parameters(a)
    lookups = 0.0 if own or table_units else counts.per_layer_embedding
    inputs = (counts.embedding, float(positions), lookups, projection)
    tensors = [tuple(t for t in inputs if t > 0), *table_units]
    kinds = {kind: block_tensors(a, kind[1] == "moe", *kind) for kind in set(layer_kinds)}  # each kind of layer
    # a layer running an earlier layer's weights (ALBERT) holds none: its gradients join the holder's
    tensors += [kinds[kind] + own.get(i, ()) if a.holds_weights(i) else () for i, kind in enumerate(layer_kinds)]
    held = sum(inputs) + sum(map(sum, table_units)) + sum(sum(t) for t in own.values())
    head = counts.total - held - sum(b.params for b in counts.blocks)
    tensors += [tuple(t for t in (head - counts.lm_head, counts.lm_head) if t > 0)]  # final norm, output head
    total = sum(flops)
    last, tables = len(tensors) - 1, len(table_units)
    # how many small tensors each block's last stands for (its norms' weights and biases, lumped as one)
    vectors = {kind: block_vectors(a, kind[1] == "moe", *kind) for kind in kinds}
    lumped = [0] * (1 + tables) + [vectors[kind] if a.holds_weights(i) and i not in own else 0
                                  for i, kind in enumerate(layer_kinds)] + [0]  # fmt: skip
    return tuple(
        Unit(sum(t), f / total, t, vectors=v, linear=tables < j < last)
        for j, (t, f, v) in enumerate(zip(tensors, flops, lumped, strict=True))
    )


@per_object
def _activations_of(a: ModelArchitecture) -> dict[tuple[object, ...], tuple[Activations, LossMemory]]:
    """One sequence's activations and loss tensors, by everything they depend on (memo.py): every plan of a batch
    with the same sequence length and policy holds the same."""
    return {}


@frozen
class StageStates:
    """What one ZeRO stage holds whatever the recomputation: its model states and working buffers, and the bytes of
    a transformer block's gradients (or their shard), in which most of the gradient comes."""

    states: ModelStates
    buffers: Buffers
    grad_block: float


class StageMemories:
    """Memory per GPU by ZeRO stage and recomputation policy (memory.py, activations.py), each row computed when
    first read: a fixed plan's cost reads one row, its report the whole table. A stage's states and buffers are
    shared by every policy, a policy's activations by every stage."""

    def __init__(self, model: ModelSpec, topology: TopologySpec, p: Prepared) -> None:
        if model.architecture is None and model.largest_layer_params is None:
            raise InputError(
                "largest_layer_params",
                "required with only a parameter count: ZeRO-3 gathers one block at a time, and without its size the "
                "whole model would be gathered; give the largest transformer block (12 h^2 for a GPT layer of width "
                "h)",
            )
        self.model, self.topology, self.p = model, topology, p
        self._states: dict[int, StageStates] = {}
        self._model_states: dict[int, ModelStates] = {}
        self._room: dict[int, bool] = {}  # by stage: least_total fits the device
        self._activations: dict[str, tuple[float, float, float, float, float, float]] = {}
        self._rows: dict[tuple[int, str], StageMemory] = {}

    def row(self, stage: int, recompute: str) -> StageMemory:
        """One stage's memory with one recomputation policy (memory.stage_memory)."""
        found = self._rows.get((stage, recompute))
        if found is None:
            p, gpu = self.p, self.topology.gpu
            held = self.states(stage)
            kept, loss_forward, loss_backward, layer_backward, largest, widest = self.activations(recompute)
            held_phases = phases(held.states, held.buffers, kept, loss_forward, loss_backward, layer_backward,
                                 p.accumulation)  # fmt: skip
            found = self._rows[stage, recompute] = stage_memory(
                stage, held.states, held_phases, p.micro_batch, largest, context_bytes(gpu), gpu.hbm, held.grad_block,
                widest,
            )  # fmt: skip
        return found

    def fits(self, stage: int, recompute: str) -> bool:
        """row(stage, recompute).fits, without the row where a lower bound on its total leaves no room: the
        stage's model states alone (least_total), or what its forward holds (least_forward_total)."""
        room = self._room.get(stage)
        hbm = self.topology.gpu.hbm
        if room is None:
            room = self._room[stage] = self.least_total(stage) <= hbm
        return room and self.least_forward_total(stage, recompute) <= hbm and self.row(stage, recompute).fits

    def least_total(self, stage: int) -> float:
        """A lower bound on the stage's device total under any policy: memory.phases' optimizer step holds every
        model state (and buffers), so the peak holds at least them, and the total adds fragmentation (>= 0) and the
        context. 1e-12: the row sums the same bytes in another order."""
        return (self.states_without_buffers(stage).total + context_bytes(self.topology.gpu)) * (1 - 1e-12)

    def least_forward_total(self, stage: int, recompute: str) -> float:
        """A lower bound on the row's device total: memory.phases' forward holds the model states it carries
        (forward_states) and the micro-batch's kept activations, with buffers and the loss's forward peak (>= 0)
        above them; the total adds fragmentation (>= 0) and the context. 1e-12: as least_total's."""
        held = sum(forward_states(self.states_without_buffers(stage), self.p.accumulation))
        kept = self.p.micro_batch * self.activations(recompute)[0]
        return (held + kept + context_bytes(self.topology.gpu)) * (1 - 1e-12)

    def table(self, recompute: str) -> tuple[StageMemory, ...]:
        """Every ZeRO stage's row, 0-3, with one recomputation policy."""
        return tuple(self.row(stage, recompute) for stage in range(4))

    def states(self, stage: int) -> StageStates:
        """What the stage holds whatever the recomputation (memory.model_states, memory.buffers)."""
        found = self._states.get(stage)
        if found is None:
            found = self._states[stage] = _stage_states(
                self.model, self.p, stage, self.topology.gpu.arch, self.states_without_buffers(stage)
            )
        return found

    def states_without_buffers(self, stage: int) -> ModelStates:
        """The stage's weights, gradients and optimizer states alone (_model_states): all that least_total reads,
        without the buffers, for the stages it rules out."""
        found = self._model_states.get(stage)
        if found is None:
            found = self._model_states[stage] = _model_states(self.model, self.p, stage)
        return found

    def activations(self, recompute: str) -> tuple[float, float, float, float, float, float]:
        """One micro-batch's activation terms under a policy (activations.py, loss.py): what stays for the backward,
        the loss's forward and backward peaks above it, a layer's backward, the largest and the widest tensor."""
        found = self._activations.get(recompute)
        if found is None:
            found = self._activations[recompute] = _activation_terms(self.model, self.p, recompute)
        return found


def _stage_states(model: ModelSpec, p: Prepared, stage: int, arch: GPUArch, states: ModelStates) -> StageStates:
    """One ZeRO stage's model states and working buffers (the GEMM libraries' workspaces among them: Transformer
    Engine's under Megatron-LM), and its share of a transformer block's gradient; `states`: _model_states'. Under
    FSDP with tensor parallelism every unit, layer and block is its rank's share (p.tensor_parallel_ranks)."""
    o, counts, tp = p.o, p.counts, p.tensor_parallel_ranks
    largest_layer = (model.largest_layer_params or counts.largest_module) / tp
    # One ZeRO-3 unit for buffers and timeline: the largest piece the timeline gathers (units(): embedding,
    # each block, output head), unless the user gave its size.
    if model.largest_layer_params:
        gather_unit, gather_bytes = model.largest_layer_params, p.weight_bytes
    else:  # the largest piece, in what its gather moves (fp8 gathers convert only linear layers)
        biggest = max((u for u, _ in unit_runs(p.pieces(model))), key=lambda u: u.params)  # runs: equal blocks once
        gather_unit = biggest.params / tp
        gather_bytes = p.weight_bytes if biggest.linear else p.unconverted_weight_bytes
    in_flight = 2 if p.overlap_grad_reduce(stage) else 1
    a = model.architecture
    head = counts.embedding if a is not None and a.tied_embeddings else counts.lm_head
    matmul_params = (counts.total - counts.lookups - counts.lm_head + head) / tp  # compute.py's, every expert's
    te = p.schedule == "megatron"  # Megatron-LM's layers run in Transformer Engine
    grouped = te and a is not None and a.moe is not None and o.parallel.grouped_gemm
    kept_by_te: float = training_workspace_bytes(
        arch, transformer_engine=te, grouped_gemm=grouped, cublas_config=o.compute.cublas_workspace_config
    )
    if te and a is not None and o.compute.grad_accumulation_fusion:
        kept_by_te += _dummy_wgrads(a)
    if te and a is not None and o.communication.gather_dtype not in QUANTIZED_WEIGHTS:
        kept_by_te += _weight_cache(a, o, arch, head)
    if te and stage == 1 and a is not None and p.muon_matrices(model):  # Muon's layer-wise optimizer pads its buffer
        kept_by_te += (p.grad_bytes + p.weight_bytes) * _layer_wise_padding(a, p, stage)
    buf = buffers(
        stage,
        p.schedule,
        p.recipe,
        p.grad_bytes,
        tensor_parallel_parameters(counts, a, tp),
        p.bucket_bytes,
        gather_unit,
        largest_layer,
        gather_bytes,
        in_flight,
        matmul_params,
        kept_by_te,
        p.shard_ranks,
        o.precision.offload,
        o.precision.optimizer,
        p.optimizer_impl,
        p.accumulation,
        working_set_bytes(muon) if (muon := p.muon_matrices(model)) else 0.0,
        o.precision.sub_group_size,
        counts.largest_module / tp,
        p.first_parameter,
    )
    if o.communication.keep_full_grads and stage >= 2 and p.accumulation > 1:
        buf = replace(buf, kept_grads=p.grad_bytes * counts.total * (1 - 1 / p.shard_ranks))
    return StageStates(states, buf, _reusable_grad_block(counts.largest_block / tp * p.grad_bytes, p, stage))


def _layer_wise_padding(a: ModelArchitecture, p: Prepared, stage: int) -> float:
    """The elements Muon's layer-wise distributed optimizer pads its gradient and parameter buffer with
    (muon.layer_wise_padding) over the shard group, cut into Megatron's buckets under --overlap-grad-reduce (one
    model chunk, on the only pipeline stage). Routed experts share it: without expert or tensor parallelism
    Megatron-Core leaves them allreduce (transformer_engine.py _set_expert_parameter_attributes at d98e8a64dd)."""
    bucket = p.bucket_bytes / p.grad_bytes if p.overlap_grad_reduce(stage) else None
    ordered = buffer_order(model_order(a, p.kernels), 1, sequential=not p.o.parallel.grouped_gemm)
    return layer_wise_padding(ordered, p.shard_ranks, bucket)


def _model_states(model: ModelSpec, p: Prepared, stage: int) -> ModelStates:
    """One ZeRO stage's model states (memory.model_states); gradients kept between steps are held through the next
    forward; DeepSpeed's ZeRO-2 gradient buffer as rank 0 holds it (memory.deepspeed_partition_buffer)."""
    o = p.o
    held = tensor_parallel_parameters(p.counts, model.architecture, p.tensor_parallel_ranks)
    states = model_states(held, p.shard_ranks, stage, p.recipe, o.precision.optimizer, o.precision.offload,
                          p.muon_share(model))  # fmt: skip
    if p.recipe.name == "deepspeed" and stage == 2 and not offload_applies(o.precision.offload, stage):
        # the partition's gradient buffer holds the embedding whole where the partition is smaller (rank 0's)
        partition = held / p.shard_ranks
        beyond = p.grad_bytes * (deepspeed_partition_buffer(partition, p.first_parameter) - partition)
        states = replace(states, grads=states.grads + beyond, backward_grads=states.backward_grads + beyond)
    if o.precision.grads_between_steps == "kept":  # zeroed in place, not freed: held through the next forward
        states = replace(states, backward_grads=0.0)
    return states


def _dummy_wgrads(a: ModelArchitecture) -> float:
    """Transformer Engine's placeholder weight gradients of the whole model, unsplit (layout_memory.dummy_wgrad_bytes):
    Megatron-LM without a layout runs TE's layers under gradient-accumulation fusion by default, and its output
    layer takes one too."""
    from dpcost.engine.layout_memory import MemoryLayout, dummy_wgrad_bytes, model_shape

    return dummy_wgrad_bytes(model_shape(a, 1), MemoryLayout(dummy_wgrads=True), range(a.layers), last=True)


def _weight_cache(a: ModelArchitecture, o: Options, arch: GPUArch, head: float) -> float:
    """Transformer Engine's quantized copies of the bf16 linear weights under FP8 or NVFP4 matmuls, Megatron-LM
    without a layout (layout_memory.weight_cache_bytes): every low-precision layer's whole, cached for the run, or
    under --fused-grouped-mlp the routed experts' saved by the forward of the one micro-batch in flight
    (fused_expert_weight_bytes); and under --fp8-output-proj the output layer's, `head` weights."""
    fmt = o.compute.compute_dtype
    if fmt not in QUANTIZED_WEIGHTS:
        return 0.0
    held = held_weight_bytes(fmt, fp8_recipe_of(o), arch)
    return held * (low_precision_linear_params(a, o.compute.bf16_layers) + (head if o.compute.fp8_output_proj else 0))


def _reusable_grad_block(block_grads: float, p: Prepared, stage: int) -> float:
    """The largest block of last step's gradients that the activations' requests could be carved from (memory.py
    StageMemory.cached_grads): a block's gradient, sharded from ZeRO-2. None under FSDP at stage 2-3: the sharded
    gradients are views of the reduce-scatter's output, allocated on the reduce-scatter stream (FSDP2
    _fsdp_collectives.py foreach_reduce: "the GPU sharded gradient is allocated in the RS stream"; FSDP1
    _runtime_utils.py _reduce_grad on its post-backward stream), and the caching allocator gives a freed block only to
    a request on the stream that allocated it (CUDACachingAllocator.cpp get_free_block: `(*it)->stream !=
    p.stream()`): the compute stream's activations cannot reuse them, whatever their size."""
    if stage >= 2 and p.schedule == "fsdp":
        return 0.0
    return block_grads / (p.shard_ranks if stage >= 2 else 1)


def activation_parts(model: ModelSpec, p: Prepared, recompute: str) -> tuple[Activations, LossMemory]:
    """One sequence's activations of every layer under a policy (checkpointing.activation_memory) and of the loss
    path (loss.loss_memory), on one rank: its s / CP tokens and its TP share; computed once per architecture and
    key. The model must have an architecture."""
    assert model.architecture is not None
    return _activation_parts(model.architecture, p, recompute, p.context_parallel_ranks, p.tensor_parallel_ranks)


def _activation_parts(
    a: ModelArchitecture, p: Prepared, recompute: str, cp: int, tp: int
) -> tuple[Activations, LossMemory]:
    """activation_parts, with the plan's CP and TP ranks."""
    o = p.o
    s, flash, kernels = p.seq_len // cp, o.compute.flash_attention, p.kernels
    plan = o.plan
    modules = frozenset(plan.recompute_modules)
    autocast, repeat_kv, softmax_fp32 = p.recipe.autocast, o.compute.repeat_kv, o.compute.unfused_softmax_fp32
    every, block = plan.recompute_layers, plan.recompute_block
    key = (s, recompute, flash, kernels, every, block, modules, p.loss_impl, autocast, repeat_kv, softmax_fp32, tp)
    known = _activations_of(a)
    if key not in known:
        known[key] = (
            activation_memory(
                a, s, 1, recompute, flash, kernels, every, modules, autocast, repeat_kv, softmax_fp32, block, tp
            ),
            loss_memory(a, s, 1, p.loss_impl, kernels, tp),
        )
    return known[key]


def layer_backward_bytes(
    a: ModelArchitecture, act: Activations, tokens: int, cp: int, tp: int, repeat_kv: bool
) -> float:
    """What one layer's backward adds for one sequence, `tokens` of it on the rank: its recomputation, its activation
    gradients and under CP the ring attention's buffers (activations.ring_attention_backward_bytes)."""
    return act.recompute + act.gradients + tokens * ring_attention_backward_bytes(a, cp, tp, repeat_kv)


def _activation_terms(model: ModelSpec, p: Prepared, recompute: str) -> tuple[float, float, float, float, float, float]:
    """StageMemories.activations, computed (all zero for a model given only as a parameter count)."""
    o, a = p.o, model.architecture
    if a is None:
        return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    cp, tp = p.context_parallel_ranks, p.tensor_parallel_ranks
    act, loss = _activation_parts(a, p, recompute, cp, tp)
    s = p.seq_len // cp
    kept = act.kept + loss.kept
    loss_forward, loss_backward = loss.forward_peak - loss.kept, loss.backward_peak - loss.kept
    layer_backward = layer_backward_bytes(a, act, s, cp, tp, o.compute.repeat_kv)
    if p.schedule == "megatron" and o.compute.compute_dtype in QUANTIZED_WEIGHTS:
        saved, rerun_saved = _low_precision_saved_inputs(a, o, recompute, s)
        kept -= saved
        layer_backward -= rerun_saved
    largest = max(act.largest_tensor, loss.largest_tensor)
    return kept, loss_forward, loss_backward, layer_backward, largest, act.largest_tensor


def _low_precision_saved_inputs(a: ModelArchitecture, o: Options, recompute: str, seq_len: int) -> tuple[float, float]:
    """What Megatron-LM's FP8 or NVFP4 layers save in one micro-batch keeping their matmuls' inputs quantized for the
    backward, without a layout (layout_memory.low_precision_saved_bytes at TP 1): in the layers that keep their
    activations, and in the one layer a full recomputation re-runs, while its backward holds it. A hybrid's layers
    save nothing here, as in a layout."""
    from dpcost.engine.layout_memory import MemoryLayout, low_precision_saved_bytes, model_shape

    shape = model_shape(a, 1)
    if shape.hybrid_kinds:
        return 0.0, 0.0
    full = recompute == "full"
    every, block = o.plan.recompute_layers, o.plan.recompute_block
    # a layer the policy skips (--recompute-layers K, --recompute-block N) keeps all it saves
    policy_layers = [i for i in range(a.layers) if takes_policy(i, every, block)]
    kept_layers = [i for i in range(a.layers) if not takes_policy(i, every, block)]
    saved, _ = low_precision_saved_bytes(shape, MemoryLayout(**saved_input_terms(o, "none")), seq_len, 1, kept_layers)
    # the op-by-op count leaves out what the dropped modules' checkpoints drop (checkpointing.py), so they save nothing
    policy = MemoryLayout(**saved_input_terms(o, recompute))
    policy_saved, rerun_saved = low_precision_saved_bytes(shape, policy, seq_len, 1, policy_layers)
    return saved + (0.0 if full else policy_saved), rerun_saved if full else 0.0


def stage_table(model: ModelSpec, topology: TopologySpec, p: Prepared, recompute: str) -> tuple[StageMemory, ...]:
    """Memory per GPU at every ZeRO stage with one recomputation choice (StageMemories.table)."""
    return StageMemories(model, topology, p).table(recompute)
