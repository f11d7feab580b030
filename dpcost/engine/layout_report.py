"""A TP x CP x PP x EP x DP layout, costed end to end into an EstimateReport: the step from layout_estimate.py, memory
from layout_memory.py, shown with estimate.py's parts (setup, model, collectives). `estimate` hands every plan with a
model-parallel dimension here; a pure data-parallel start never imports it.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from dpcost.engine import advice
from dpcost.engine.availability import plan_environment
from dpcost.engine.collectives import collective
from dpcost.engine.cost import PlanCost
from dpcost.engine.dp_schedule import AFTER_UNIT, frequency, primitives
from dpcost.engine.estimate import (
    collective_use,
    group_row,
    model_info_of,
    setup_info,
    topology_info,
    whole_message_of,
)
from dpcost.engine.frameworks import FRAMEWORKS, megatron_count_bucket
from dpcost.engine.fsdp_layout import (
    FSDP_LAYOUT_READS,
    check_fsdp_layout,
    fsdp_layout_memory,
    fsdp_layout_note,
    fsdp_recompute_block,
    fsdp_replicas,
    is_fsdp_layout,
)
from dpcost.engine.host import MOE_LAYER_HOST_SECONDS
from dpcost.engine.layout import Layout
from dpcost.engine.layout_estimate import (
    LayoutStep,
    call_seconds,
    first_stage_parameters,
    layout_step,
    megatron_bucket_bytes,
)
from dpcost.engine.layout_memory import LayoutMemory, MemoryLayout, StageMemory, layout_memory_for
from dpcost.engine.layout_step import PipelineSplit, pp_overlapped, rank_layer_counts
from dpcost.engine.low_precision_weights import QUANTIZED_WEIGHTS, held_weight_bytes
from dpcost.engine.memory import RECIPES, context_bytes
from dpcost.engine.params import mtp_layer
from dpcost.engine.pipeline_layout import checked_layout
from dpcost.engine.placement import Placement, check_ranks, job_view
from dpcost.engine.plan import dp_group_for
from dpcost.engine.prepare import (
    BF16_OPTIMIZER_GRAD_DTYPE,
    DTYPE_BYTES,
    Prepared,
    core_attention_rerun,
    fp8_recipe_of,
    grad_reduce_op,
    low_precision_format,
    matmul_share,
    prepare,
    saved_input_terms,
    slowest_gpu_share,
)
from dpcost.engine.report import (
    Advice,
    BreakdownTerm,
    CollectiveUse,
    Communication,
    EstimateReport,
    LayoutCallRow,
    LayoutReport,
    Memory,
    PipelineStageRow,
    StageRow,
    Time,
)
from dpcost.engine.step import BUBBLE, COMPUTE, EXPOSED, HOST_WAIT, JITTER, LOSSES, SLOWDOWN, SLOWEST_GPU, Traffic
from dpcost.engine.verdict import bound, training_summary
from dpcost.engine.workspaces import grouped_gemm_workspace_bytes, training_workspace_bytes
from dpcost.errors import InputError
from dpcost.frozen import frozen
from dpcost.options import Options, Parallel
from dpcost.specs import ModelSpec, TopologySpec

__all__ = [
    "LAYOUT_IGNORES",
    "LAYOUT_RUNS",
    "LayoutParts",
    "check_wgrad_deferral",
    "layout_memory_table",
    "layout_parts",
    "layout_recompute",
    "layout_training",
]


LAYOUT_RECIPE = "Megatron-LM theoretical_memory_usage: bf16 weights, fp32 gradients, Adam (over DP at stage 1)"


def _layout(o: Options, topology: TopologySpec) -> Layout:
    """The options' layout, refused in the words of the flag that breaks it."""
    par = o.parallel
    try:
        layout = Layout(tp=par.tp, cp=par.cp, pp=par.pp, dp=o.dp, ep=par.ep, etp=par.etp, order=par.order)
    except ValueError as exc:
        flag, _, message = str(exc).partition(": ")
        raise InputError(flag.lstrip("-").replace("-", "_"), message) from None
    try:
        check_ranks(topology, layout.gpus)
    except ValueError as exc:
        raise InputError("dp", f"TP x CP x PP x DP = {layout.gpus} GPUs: {exc}") from None
    n = par.dist_opt_instances  # parallel_state.py asserts that N divides DP x CP and expert-DP
    for name, size in (("DP x CP", layout.dp * layout.cp), ("expert-DP", layout.expert_dp)):
        if n > 1 and size % n:
            raise InputError("dist_opt_instances", f"{n} does not divide {name} = {size} (Megatron-Core asserts it)")
    if par.virtual_stages > 1 and par.pp == 1:
        raise InputError("virtual_stages", "interleaving needs pipeline stages: give --pp 2 or more")
    if par.defer_embedding_wgrad is not None and par.pp == 1:  # model_parallel_config.py refuses it
        raise InputError("defer_embedding_wgrad", "deferring to the pipeline flush needs pipeline stages: --pp 2 or up")
    if par.pp_schedule == "interleaved" and par.virtual_stages == 1:
        raise InputError("pp_schedule", "interleaved needs model chunks per rank: give --virtual-stages 2 or more")
    if par.pp_schedule in ("1f1b", "gpipe") and par.virtual_stages > 1:
        raise InputError("pp_schedule", f"{par.pp_schedule} runs one model chunk per rank: drop --virtual-stages")
    if par.microbatch_group is not None and (par.virtual_stages == 1 or par.microbatch_group < par.pp):
        # schedules.py: "The number of contiguous micro-batches in a virtual pipeline stage should range in [PP, M]"
        raise InputError("microbatch_group", f"groups an interleaved pipeline's micro-batches: --virtual-stages 2 or "
                         f"more, and at least PP ({par.pp})")  # fmt: skip
    try:
        pp_overlapped(par.virtual_stages, par.pp_comm_overlap)
    except ValueError as exc:
        raise InputError("pp_comm_overlap", str(exc).partition(": ")[2]) from None
    return layout


def _stage_layer_counts(model: ModelSpec, o: Options) -> list[int]:
    """Decoder layers per pipeline stage (layout_step.stage_layer_counts), the first and last stage's as the
    options give them, refused in the words of the flag that breaks the split."""
    par = o.parallel
    assert model.architecture is not None  # _check_layout_plan
    if par.pipeline_layout is not None:
        return _layout_rank_layers(model, o)
    given = par.first_stage_layers is not None or par.last_stage_layers is not None
    flag = ("first_stage_layers" if par.first_stage_layers is not None else "last_stage_layers") if given else "pp"
    try:
        split = PipelineSplit(model.architecture.layers, par.pp, par.virtual_stages, par.first_stage_layers,
                              par.last_stage_layers)  # fmt: skip
        return rank_layer_counts(split)
    except ValueError as exc:
        raise InputError(flag, f"{model.name}'s {model.architecture.layers} layers: {exc}") from None


def _layout_rank_layers(model: ModelSpec, o: Options) -> list[int]:
    """Decoder layers per pipeline rank of --pipeline-layout (pipeline_layout.checked_layout), refused in its words;
    alone, as Megatron-LM takes it (arguments.py: not beside --decoder-first/last-pipeline-num-layers)."""
    par = o.parallel
    assert model.architecture is not None and par.pipeline_layout is not None
    for name in ("first_stage_layers", "last_stage_layers"):
        if getattr(par, name) is not None:
            raise InputError(name, "--pipeline-layout gives every stage's layers: give one or the other")
    try:
        a = model.architecture
        layout = checked_layout(par.pipeline_layout, par.pp, par.virtual_stages, a.layers, par.mtp_layers,
                                "mamba" in a.mixers)  # fmt: skip
    except ValueError as exc:
        raise InputError("pipeline_layout", f"{model.name}: {exc}") from None
    return [len(built) for built in layout.rank_layer_indices(par.pp)]


# What a layout is costed with (Megatron-LM's schedule and memory accounting): each plan option's values it runs.
LAYOUT_RUNS: dict[str, tuple[object, ...]] = {
    "framework": (None, "megatron"),
    "zero": (None, 0, 1, 2, 3),
    "recompute": (None, "none", "selective", "full"),
    "grad_dtype": (None, "fp32", "bf16", "fp16"),
    # Megatron's cross-entropy: as cross_entropy.py runs it, compiled, or Transformer Engine's kernel
    "loss_impl": (None, "vocab-parallel", "vocab-parallel-fused", "vocab-parallel-te"),
    "optimizer": ("adamw", "muon"),  # Adam, or Muon's emerging optimizer (muon.py)
    "fp8_recipe": (None, "delayed", "tensorwise", "blockwise", "mxfp8"),  # Transformer Engine's
}


def _layout_zero(o: Options) -> int:
    """The layout's ZeRO stage: --zero's, else Megatron's distributed optimizer (1), or FSDP's FULL_SHARD (3, as
    torchtitan reshards after the forward), under PP its SHARD_GRAD_OP (2: fsdp_pipeline.py)."""
    if o.plan.zero is not None:
        return o.plan.zero
    if is_fsdp_layout(o):
        return 2 if o.parallel.pp > 1 else 3
    return 1


def _layout_loss(o: Options, loss_impl: str) -> str:
    """The layout's loss, Megatron's vocab-parallel cross-entropy: compiled or Transformer Engine's where --loss-impl
    says so (--cross-entropy-loss-fusion, --cross-entropy-fusion-impl te), else as cross_entropy.py runs it
    (loss.py); under --framework fsdp the framework's (torchtitan's cross-entropy under loss_parallel)."""
    if is_fsdp_layout(o):
        return loss_impl
    return loss_impl if loss_impl in ("vocab-parallel-fused", "vocab-parallel-te") else "vocab-parallel"


def _grouped_gemm(model: ModelSpec, par: Parallel) -> bool:
    """Whether the layout's experts run as grouped GEMMs (--grouped-gemm), with their workspaces: an MoE model's."""
    return par.grouped_gemm and model.architecture is not None and model.architecture.moe is not None


def _quantized_weights(o: Options) -> str | None:
    """--gather-dtype fp8 or nvfp4 in a layout: Megatron's --fp8-param-gather or --fp4-param-gather, which also store
    the layers' linear weights in that format (layout_memory [P], QUANTIZED_WEIGHTS); None: bf16."""
    given = o.communication.gather_dtype
    return given if given in QUANTIZED_WEIGHTS else None


def _held_weight_bytes(topology: TopologySpec, o: Options, zero: int) -> float:
    """The bytes Transformer Engine holds a low-precision layer's linear weight in (MemoryLayout.
    quantized_weight_bytes): stored so under --fp8-param-gather or --fp4-param-gather, in Megatron-FSDP's buffers at
    ZeRO 2-3, else cached beside the bf16 weight; 0 with BF16 matmuls and weights."""
    fmt = low_precision_format(o)
    if fmt is None:
        return 0.0
    in_fsdp_buffers = zero >= 2 and _quantized_weights(o) is not None
    return held_weight_bytes(fmt, fp8_recipe_of(o), topology.gpu.arch, megatron_fsdp=in_fsdp_buffers)


def least_weight_bytes(o: Options) -> float:
    """The fewest bytes any of a layout's weights takes: its quantized linear weights' under --fp8-param-gather or
    --fp4-param-gather (whose norms and embedding keep two; QuantizedWeights.least_held), bf16's two without."""
    quantized = _quantized_weights(o)
    return 2.0 if quantized is None else min(2.0, QUANTIZED_WEIGHTS[quantized].least_held)


def least_gathered_bytes(o: Options) -> float:
    """The fewest bytes a layout's gathers move per weight: its quantized linear weights' under --fp8-param-gather or
    --fp4-param-gather, bf16's two without."""
    quantized = _quantized_weights(o)
    return 2.0 if quantized is None else QUANTIZED_WEIGHTS[quantized].gathered


def state_bytes_floor(o: Options) -> float:
    """The least bytes per parameter a rank of a ZeRO 0-1 layout (the plan search's) holds: its weights
    (least_weight_bytes) and its whole main gradients ([M] num_bytes_per_parameter without the optimizer's
    share)."""
    return least_weight_bytes(o) + sum(_held_grad_bytes(o, 1))


def _layout_recipe(o: Options) -> str:
    """The memory table's recipe line: Megatron's, with the fp8 or NVFP4 weights --fp8-param-gather or
    --fp4-param-gather stores."""
    quantized = _quantized_weights(o)
    if quantized is None:
        return LAYOUT_RECIPE
    q = QUANTIZED_WEIGHTS[quantized]
    return LAYOUT_RECIPE.replace("bf16 weights", f"{q.title} linear weights, other weights bf16 ({q.flag})")


def _layout_grad_dtype(o: Options, zero: int) -> str:
    """The layout's gradient buffer and reduction dtype: Megatron-LM's --bf16 default, fp32
    (arguments.py: accumulate_allreduce_grads_in_fp32), unless --grad-dtype gives the parameters' 16-bit dtype
    (--grad-reduce-in-bf16, Megatron-Core's grad_reduce_in_fp32=False; fp16 under --fp16). Megatron-FSDP (ZeRO 2-3)
    keeps its main gradient in the parameters' bf16 (main_grads_dtype "auto": frameworks.MEGATRON_FSDP). FSDP
    reduces in its recipe's dtype (torchtitan's reduce_dtype float32)."""
    if is_fsdp_layout(o):
        return o.precision.grad_dtype or RECIPES["fsdp"].grad_dtype
    if o.precision.bf16_optimizer:  # Megatron-DeepSpeed's BF16_Optimizer: its buffer is fp32 whatever
        return o.precision.grad_dtype or BF16_OPTIMIZER_GRAD_DTYPE  # it reduces in (_held_grad_bytes)
    return o.precision.grad_dtype or ("bf16" if zero >= 2 else "fp32")


def _held_grad_bytes(o: Options, zero: int) -> tuple[float, float]:
    """A rank's gradient bytes per parameter: the buffer's (Megatron's main gradient, in the reduction's dtype), and
    the bf16 gradients beside it. Megatron-DeepSpeed's BF16_Optimizer (--grad-accum-dtype fp32) keeps an fp32 buffer
    whatever it reduces in, and each backward's bf16 param.grad beside it (prepare.bf16_optimizer_states)."""
    if o.precision.bf16_optimizer:
        return DTYPE_BYTES["fp32"], DTYPE_BYTES["bf16"]
    return DTYPE_BYTES[_layout_grad_dtype(o, zero)], 0.0


def check_wgrad_deferral(model: ModelSpec, o: Options) -> None:
    """What Megatron refuses of --defer-embedding-wgrad-compute in any layout: no gradient-accumulation fusion
    (model_parallel_config.py), a hybrid model (hybrid_model.py builds the output layer without the buffers
    ColumnParallelLinear fills); and dpcost's GPipe, which is not one of Megatron's schedules."""
    if o.parallel.defer_embedding_wgrad is None:
        return
    if model.architecture is not None and model.architecture.hybrid:
        raise InputError("defer_embedding_wgrad", f"{model.name}: Megatron's hybrid models do not defer it")
    if not o.compute.grad_accumulation_fusion:
        raise InputError("defer_embedding_wgrad", "Megatron defers it only under gradient-accumulation fusion")
    if o.parallel.pp_schedule == "gpipe":
        raise InputError("defer_embedding_wgrad", "Megatron defers it in its own schedules (1F1B, interleaved)")


def _check_layout_plan(model: ModelSpec, o: Options, seq_len: int) -> None:
    """What a layout is costed with (LAYOUT_RUNS: none, selective or full recomputation, ZeRO 0 or 1), and what
    Megatron-Core itself refuses (heads or KV heads TP does not divide; MoE with TP above 1 but no sequence
    parallelism)."""
    if model.architecture is None:
        raise InputError("model", f"{model.name}: a TP/CP/PP/EP layout needs the model's architecture")
    check_wgrad_deferral(model, o)
    if is_fsdp_layout(o):
        check_fsdp_layout(model, o)
    elif o.plan.framework not in LAYOUT_RUNS["framework"]:
        raise InputError(
            "framework",
            f"a TP/CP/PP/EP layout is costed as Megatron-LM runs it, not {o.plan.framework}: leave --framework out "
            "(--zero 3 for Megatron-FSDP, the nearest to a sharded data-parallel dimension; torchtitan's FSDP with "
            "TP alone is --framework fsdp)",
        )
    if o.plan.zero not in LAYOUT_RUNS["zero"]:
        raise InputError(
            "zero",
            f"a layout runs Megatron's DDP (0), distributed optimizer (1) or Megatron-FSDP (2, 3), not {o.plan.zero}",
        )
    instances = o.parallel.dist_opt_instances
    if instances > 1 and o.plan.zero not in (None, 1):
        raise InputError(
            "dist_opt_instances", f"instances of the distributed optimizer run at ZeRO 1, not {o.plan.zero}"
        )
    if o.precision.grad_dtype not in LAYOUT_RUNS["grad_dtype"]:
        raise InputError(
            "grad_dtype",
            f"a layout reduces gradients as Megatron-Core does, in fp32 (grad_reduce_in_fp32) or the 16-bit "
            f"parameters' bf16 or fp16, not {o.precision.grad_dtype}",
        )
    if o.plan.recompute not in LAYOUT_RUNS["recompute"] and not is_fsdp_layout(o):
        raise InputError(
            "recompute", f"a layout runs Megatron's none, selective or full recomputation, not {o.plan.recompute}"
        )
    a, tp = model.architecture, o.parallel.tp
    # each kind of attention layer splits its own heads (Gemma 4's and Step 3.5's full layers have theirs); a Mamba-2
    # model without attention (Mamba-Codestral) splits none
    kinds = sorted({m for m in a.mixers or ("attention",) if "attention" in m})
    for view in (a.attention_of(m) for m in kinds):
        if view.heads % tp:
            raise InputError(
                "tp", f"{tp} does not divide {model.name}'s {view.heads} attention heads (Megatron splits them)"
            )
        if view.mla is None and view.n_kv_heads % tp:
            raise InputError(
                "tp",
                f"{tp} does not divide {model.name}'s {view.n_kv_heads} KV heads (Megatron's num_query_groups % TP)",
            )
    if o.parallel.ep > 1 and (model.architecture.moe is None):
        raise InputError("ep", f"{model.name} has no experts to split")
    experts = model.architecture.moe.experts if model.architecture.moe else 0
    if experts and experts % o.parallel.ep:
        raise InputError(
            "ep",
            f"{o.parallel.ep} does not divide {model.name}'s {experts} experts (Megatron-Core's num_moe_experts % EP)",
        )
    cp = o.parallel.cp
    if cp > 1 and seq_len % (2 * cp):
        raise InputError(
            "cp",
            f"{cp} does not cut the {seq_len}-token sequence into 2 x CP = {2 * cp} equal chunks, as Megatron's "
            "get_batch_on_this_cp_rank does",
        )
    if o.parallel.tp_comm_overlap and not o.parallel.sequence_parallel:
        raise InputError(
            "tp_comm_overlap",
            "overlaps the sequence-parallel gathers and reductions with their GEMMs: it needs --sequence-parallel "
            "(Megatron's arguments.py asserts it)",
        )
    if model.architecture.moe is not None and o.parallel.tp > 1 and not o.parallel.sequence_parallel:
        raise InputError(
            "sequence_parallel",
            "Megatron-Core trains MoE layers with TP above 1 only with sequence parallelism (moe_layer.py): add it",
        )
    if cp > 1 and o.parallel.cp_impl == "torch" and not is_fsdp_layout(o):
        raise InputError(
            "cp_impl",
            "torch's context_parallel is torchtitan's, costed with --framework fsdp; a Megatron-LM layout runs p2p, "
            "all_gather or a2a",
        )
    if cp > 1 and o.parallel.cp_impl == "a2a":
        # Transformer Engine's AttnFuncWithCPAndQKVOA2A asserts num_heads % cp_size == 0 for Q, K and V, the heads
        # of one TP rank (context_parallel.py at d0067d0da)
        for view in (a.attention_of(m) for m in kinds):
            kv = view.heads if view.mla is not None else view.n_kv_heads
            heads, kv_heads = view.heads // tp, max(1, kv // tp)
            if heads % cp or kv_heads % cp:
                raise InputError(
                    "cp",
                    f"{cp} does not divide the {heads} query and {kv_heads} KV heads of a TP rank of {model.name}, "
                    "which the a2a exchange splits over CP (Transformer Engine's AttnFuncWithCPAndQKVOA2A)",
                )
    if cp > 1 and a.attention_sinks and o.parallel.cp_impl != "a2a":
        # Transformer Engine's get_attention_backend (dot_product_attention/utils.py at d0067d0, its softmax-type
        # table): FlashAttention takes no sinks, FusedAttention takes them under context parallelism only with the
        # a2a exchange, and the unfused path runs no context parallelism
        raise InputError(
            "cp",
            f"{model.name}'s attention sinks have no attention backend under context parallelism's p2p or all-gather "
            "exchange (Transformer Engine's get_attention_backend): give --cp 1, or --cp-impl a2a",
        )
    local = a.local_attention
    if cp > 1 and o.parallel.cp_impl == "p2p" and local is not None and local.kind == "sliding":
        # Transformer Engine's attn_forward_func_with_cp (context_parallel.py at d0067d0da) asserts "Context
        # parallelism does not support sliding window attention" but with the a2a or all-gather exchange
        raise InputError(
            "cp_impl",
            f"{model.name}'s sliding-window layers run under context parallelism only with the a2a or all-gather "
            "exchange, not ring attention (Transformer Engine's attn_forward_func_with_cp): give --cp-impl a2a or "
            "all_gather",
        )
    _stage_layer_counts(model, o)


def _layout_memory(
    model: ModelSpec, topology: TopologySpec, p: Prepared, layout: Layout, stage: int, recompute: str, m: int | None
) -> tuple[StageRow, LayoutMemory]:
    """Memory per GPU of the most loaded pipeline stage, as Megatron's theoretical_memory_usage accounts it
    (layout_memory.py): bf16 weights, fp32 gradients and Adam's fp32 states (over DP with the distributed
    optimizer), and the activations its micro-batches in flight hold; plus the CUDA context (memory.py). Under
    --framework fsdp, as FSDP holds its tensor-parallel share (fsdp_layout.py)."""
    if is_fsdp_layout(p.o):
        return fsdp_layout_memory(model, topology, p, stage, recompute, m)
    par = p.o.parallel
    assert model.architecture is not None  # _check_layout_plan
    if par.microbatch_group is not None and m is not None and par.microbatch_group > m:
        raise InputError("microbatch_group", f"{par.microbatch_group} is more than the {m} micro-batches each "
                         "pipeline runs a step (schedules.py asks for PP to M)")  # fmt: skip
    counts = _stage_layer_counts(model, p.o)
    split_ends = len(set(counts)) > 1 and layout.pp > 1 and par.virtual_stages == 1 and par.pipeline_layout is None
    held_bytes = _held_weight_bytes(topology, p.o, stage)
    grad_bytes, lp_grad_bytes = _held_grad_bytes(p.o, stage)
    spec = MemoryLayout(
        tp=layout.tp,
        cp=layout.cp,
        pp=layout.pp,
        dp=layout.dp,
        ep=layout.ep,
        etp=layout.etp,
        virtual_stages=par.virtual_stages,
        sequence_parallel=par.sequence_parallel,
        zero=stage,
        grad_bytes=grad_bytes,
        lp_grad_bytes=lp_grad_bytes,
        # flash attention stores none, nor a core attention the selective recomputation re-runs
        attention_scores=not p.o.compute.flash_attention and not core_attention_rerun(p.o, recompute),
        scores_fp32=p.o.compute.unfused_softmax_fp32,
        quantized_weights=_quantized_weights(p.o),
        quantized_weight_bytes=held_bytes,
        mtp_low_precision=low_precision_format(p.o) != "nvfp4",
        fused_experts=p.o.compute.fused_grouped_mlp,
        # the output layer's bf16 weight, cached as the MXFP8 its matmul reads
        output_weight_cache=held_bytes if p.o.compute.fp8_output_proj else 0.0,
        **saved_input_terms(p.o, recompute),
        recompute_block=p.o.plan.recompute_block if recompute == "full" else None,
        cp_ring=layout.cp > 1 and p.o.parallel.cp_impl == "p2p",
        # an uneven split as the first and last stages' layers; interleaved or a layout given, stage_layers splits it
        first_stage_layers=counts[0] if split_ends else par.first_stage_layers,
        last_stage_layers=counts[-1] if split_ends else par.last_stage_layers,
        pipeline_layout=par.pipeline_layout,
        all_forwards_first=par.pp_schedule == "gpipe",
        ep_overlap_warmup=par.ep_comm_overlap and layout.ep > 1,
        microbatch_group=par.microbatch_group,
        loss_impl=_layout_loss(p.o, p.loss_impl),
        optimizer_instances=par.dist_opt_instances,
        dummy_wgrads=p.o.compute.grad_accumulation_fusion,
        wgrad_deferral=par.defer_embedding_wgrad,
        # Megatron-LM's layers run in Transformer Engine; with --tp-comm-overlap, through Userbuffers
        workspaces=training_workspace_bytes(
            topology.gpu.arch, True, userbuffers=par.tp_comm_overlap, cublas_config=p.o.compute.cublas_workspace_config
        ),
        grouped_workspaces=grouped_gemm_workspace_bytes(topology.gpu.arch) if _grouped_gemm(model, par) else 0.0,
        ep_dispatcher=par.ep_dispatcher,
        te_output_layer=p.o.compute.fp8_output_proj,
        muon=p.o.precision.optimizer == "muon",
        muon_bucket=_muon_bucket(model, p, layout, zero=stage),
        sequential_experts=not par.grouped_gemm,
    )
    try:
        held = layout_memory_for(model, spec, p.seq_len, p.micro_batch, m, par.mtp_layers)
    except ValueError as exc:
        raise InputError("pp", f"{model.name}: {exc}") from None
    worst = held.most_loaded
    params, grads = worst.weights, worst.grads
    optimizer = worst.weight_and_optimizer - params - grads
    context = context_bytes(topology.gpu)
    allocated = worst.total
    total = allocated + context
    hbm = topology.gpu.hbm
    states = worst.weight_and_optimizer + worst.buffers + context
    per_sequence = worst.activations / p.micro_batch
    largest = int((hbm - states) // per_sequence) if per_sequence > 0 and hbm > states else 0
    if states + worst.step_transient > hbm:  # the optimizer step does not fit, whatever the micro-batch
        largest = 0
    at_step = worst.peaks_at_step
    row = StageRow(
        stage=stage,
        params_bytes=int(params),
        grads_bytes=int(grads),
        optimizer_bytes=int(optimizer),
        activations_bytes=0 if at_step else int(worst.activations),
        transient_bytes=int(worst.step_transient) if at_step else 0,
        buffers_bytes=int(worst.buffers),
        allocated_bytes=int(allocated),
        fragmentation_bytes=0,
        reserved_bytes=int(allocated),
        context_bytes=int(context),
        overhead_bytes=int(context),
        total_bytes=int(total),
        peak_phase="optimizer step" if at_step else "backward",
        cpu_bytes=0,
        fits=total <= hbm,
        max_micro_batch=largest,
    )
    return row, held


def _layout_memory_rows(
    model: ModelSpec,
    topology: TopologySpec,
    p: Prepared,
    layout: Layout,
    microbatches: int | None,
    zero_stages: tuple[int, ...] = (),
) -> tuple[str, dict[int, tuple[StageRow, LayoutMemory]]]:
    """The recomputation costed (the option's, else the least of none, selective and full with which the plan's
    stage fits, full when none does) and memory per GPU at `zero_stages` (default ZeRO 0, Megatron's DDP, 1, its
    distributed optimizer, and up to the plan's own), with it; `microbatches` per step bound the ones in flight
    (None: the pipeline full, as Megatron's formula assumes)."""
    o = p.o
    stage = _layout_zero(o)
    runs: tuple[object, ...] = LAYOUT_RUNS["recompute"][1:]
    if is_fsdp_layout(o):  # the policies both FSDP's memory and the layout's step cost
        runs = FRAMEWORKS["fsdp"].recompute
    zero_stages = zero_stages or tuple(range(max(1, stage) + 1))  # a report's rows are its stages from 0

    def rows(recompute: str) -> dict[int, tuple[StageRow, LayoutMemory]]:
        return {st: _layout_memory(model, topology, p, layout, st, recompute, microbatches) for st in zero_stages}

    if o.plan.recompute is not None:
        return o.plan.recompute, rows(o.plan.recompute)
    for recompute in runs:
        held = rows(str(recompute))
        if held[stage][0].fits:
            break
    return str(recompute), held


def _memory_at_stage(
    model: ModelSpec, topology: TopologySpec, options: Options
) -> tuple[str, tuple[StageRow, LayoutMemory]]:
    """A layout's recomputation and memory at its ZeRO stage as `estimate` decides them (_layout_memory_rows),
    without timing the step."""
    par = options.parallel
    topology = job_view(plan_environment(topology, options),
                        options.dp * par.tp * par.cp * par.pp)  # fmt: skip
    p = prepare(model, topology, options)
    _check_layout_plan(model, p.o, p.seq_len)
    stage = _layout_zero(p.o)
    recompute, rows = _layout_memory_rows(model, topology, p, _layout(p.o, topology), p.accumulation, (stage,))
    return recompute, rows[stage]


def layout_recompute(model: ModelSpec, topology: TopologySpec, options: Options) -> str | None:
    """The recomputation `estimate` would cost a TP/CP/PP/EP layout with, or None when the layout does not fit at
    its ZeRO stage with it, decided as `estimate` decides it (the same memory rows, which layout_memory keeps)."""
    recompute, (row, _) = _memory_at_stage(model, topology, options)
    return recompute if row.fits else None


def layout_stage_memory(model: ModelSpec, topology: TopologySpec, options: Options) -> tuple[StageMemory, ...]:
    """Each pipeline stage's memory per GPU as `estimate` costs the layout (layout_memory.StageMemory: its weights,
    gradients and optimizer states, activations and buffers), at its ZeRO stage and recomputation."""
    return _memory_at_stage(model, topology, options)[1][1].stages


def _megatron_total(held: LayoutMemory) -> str:
    """What Megatron-LM's report_theoretical_memory prints at start-up for the layout (layout_memory.LayoutMemory.
    total), beside the stage dpcost shows: users read both."""
    return (
        f"Megatron's report_theoretical_memory prints {held.total / 2**20:,.0f} MB for it ({held.total / 1e9:.1f} GB; "
        "its MB are MiB): the most loaded shard's weights and optimizer plus the first stage's activations, by its "
        "formula, without allocator or CUDA context"
    )


def layout_memory_table(model: ModelSpec, topology: TopologySpec, p: Prepared) -> Memory:
    """`dpcost memory` with a layout: Megatron's accounting of the most loaded pipeline stage, at ZeRO 0, 1 and up to
    the plan's own (_layout_memory_rows)."""
    _check_layout_plan(model, p.o, p.seq_len)
    layout = _layout(p.o, topology)
    if p.o.parallel.defer_embedding_wgrad == 0:  # the table is read with the step's micro-batches unknown
        raise InputError(
            "defer_embedding_wgrad",
            "0 keeps every call of the step, whose micro-batches `memory` does not know: give a limit, or use "
            "estimate with --global-batch",
        )
    recompute, rows = _layout_memory_rows(model, topology, p, layout, None)
    worst = rows[1][1].most_loaded
    shape = f"a TP {layout.tp} x CP {layout.cp} x PP {layout.pp} x DP {layout.dp} layout"
    if is_fsdp_layout(p.o):  # PyTorch FSDP's own accounting, as estimate's table has it
        note, recipe = f"{shape}, {fsdp_layout_note(rows[_layout_zero(p.o)][1], layout.pp)}", p.recipe.title
    else:
        note = f"{shape}: the most loaded pipeline stage, {worst.stage} of {layout.pp}, per GPU; " + _megatron_total(
            rows[1][1]
        )
        recipe = _layout_recipe(p.o)
    return Memory(
        hbm_bytes=int(topology.gpu.hbm),
        recipe=recipe,
        recompute=recompute,
        note=note,
        stages=[row for row, _ in rows.values()],
    )


@frozen
class LayoutParts:
    """A layout, costed: its ZeRO stage and recomputation, the memory rows they were chosen by (stage -> the row
    and Megatron's held memory), and the step (layout_estimate.LayoutStep)."""

    layout: Layout
    stage: int
    recompute: str
    rows: dict[int, tuple[StageRow, LayoutMemory]]
    step: LayoutStep
    global_batch: int
    tokens: int
    compute_model: str
    mfu: float

    def cost(self) -> PlanCost:
        """The plan's plain numbers: as the report's summary reads them (verdict.training_summary)."""
        row = self.rows[self.stage][0]
        step = self.step.step
        return PlanCost(step, self.tokens / step, self.step.mfu, row.total_bytes, row.fits, self.stage, self.recompute)


def layout_parts(model: ModelSpec, topology: TopologySpec, p: Prepared) -> LayoutParts:
    """One layout's memory (layout_memory.py) and step (layout_estimate.py)."""
    o, par = p.o, p.o.parallel
    _check_layout_plan(model, o, p.seq_len)
    layout = _layout(o, topology)
    stage = _layout_zero(o)
    m = p.accumulation
    recompute, chosen_rows = _layout_memory_rows(model, topology, p, layout, m)
    global_batch = p.micro_batch * m * o.dp
    tokens = global_batch * p.seq_len
    peak = topology.gpu.peak(o.compute.compute_dtype)
    compute_model = o.compute.chosen_model  # op by op: a layout's GEMMs at their TP shards (docs/layouts.md)
    mfu = matmul_share(topology.gpu, o.compute, compute_model)
    step = layout_step(
        model,
        topology,
        layout,
        micro_batch=p.micro_batch,
        global_batch=global_batch,
        seq_len=p.seq_len,
        mfu=mfu,
        peak=peak,
        recompute=recompute,
        recompute_modules=frozenset(o.plan.recompute_modules),
        recompute_block=fsdp_recompute_block(model, o) if is_fsdp_layout(o) else o.plan.recompute_block,
        grad_dtype=_layout_grad_dtype(o, stage),
        sequence_parallel=par.sequence_parallel,
        tp_overlap=_tp_overlapped(o),
        tp_backward_async=par.tp_backward_async,
        ep_overlap=par.ep_comm_overlap,
        ep_node_limit=par.ep_node_limit,
        ep_dispatcher=par.ep_dispatcher,
        pp_overlap=par.pp_comm_overlap,
        pp_scatter_gather=par.pp_scatter_gather,
        pp_send_comm=par.pp_send_comm,
        cp_impl=par.cp_impl,
        virtual_stages=par.virtual_stages,
        zero=stage,
        dp_overlap=o.communication.overlap_comm is not False,
        grad_reduce=grad_reduce_op(o),
        # PyTorch FSDP's layers run as the framework's (SDPA's FlashAttention-2, eager or compiled ops), not Megatron's
        attention_kernel=p.attention_kernel if is_fsdp_layout(o) else o.compute.attention_kernel,
        kernels=p.kernels if is_fsdp_layout(o) else None,
        repeated_kv=is_fsdp_layout(o) and o.compute.repeat_kv,
        torch_tp=is_fsdp_layout(o),
        deferred_reduce=is_fsdp_layout(o) and layout.pp > 1,
        overlap_slowdown=o.compute.overlap_slowdown,
        sync_jitter=o.compute.sync_jitter,
        compute_model=compute_model,
        compute_dtype=o.compute.compute_dtype,
        flash=o.compute.flash_attention,
        slowest_gpu=slowest_gpu_share(topology.gpu, o.compute, layout.gpus) if compute_model == "ops" else 0.0,
        sixteen_bit_mfu=o.compute.mfu,
        bf16_layers=o.compute.bf16_layers,
        first_stage_layers=par.first_stage_layers,
        last_stage_layers=par.last_stage_layers,
        mtp_layers=par.mtp_layers,
        pipeline_layout=par.pipeline_layout,
        quantized_weights=_quantized_weights(o),
        fp8_recipe=fp8_recipe_of(o),
        bucket_bytes=_given_bucket_bytes(model, o, layout, p.seq_len, stage),
        optimizer_instances=fsdp_replicas(p) if is_fsdp_layout(o) else par.dist_opt_instances,
        loss_impl=_layout_loss(p.o, p.loss_impl),
        grad_accumulation_fusion=o.compute.grad_accumulation_fusion,
        fused_grouped_mlp=o.compute.fused_grouped_mlp,
        fp8_output_proj=o.compute.fp8_output_proj,
        moe_host_seconds=MOE_LAYER_HOST_SECONDS if o.compute.moe_host_time is None else o.compute.moe_host_time,
        muon=o.precision.optimizer == "muon",
        bf16_optimizer=o.precision.bf16_optimizer,
    )
    return LayoutParts(layout, stage, recompute, chosen_rows, step, global_batch, tokens, compute_model, mfu)


def layout_training(model: ModelSpec, topology: TopologySpec, p: Prepared, parts: LayoutParts) -> EstimateReport:
    """One layout, costed end to end (layout_parts), as the report shows it."""
    o, par = p.o, p.o.parallel
    layout, stage, recompute, chosen_rows, r = parts.layout, parts.stage, parts.recompute, parts.rows, parts.step
    m, global_batch, tokens = p.accumulation, parts.global_batch, parts.tokens
    compute_model, mfu = parts.compute_model, parts.mfu
    dp_group = r.groups["dp-cp"]
    setup = setup_info(
        topology,
        p,
        mode="train",
        zero_stage=stage,
        # FSDP's FULL_SHARD is its default, not a choice
        zero_stage_chosen=o.plan.zero is None and not is_fsdp_layout(o),
        overlap_slowdown=r.overlap_slowdown,
        grad_dtype=_layout_grad_dtype(o, stage),
        micro_batch=p.micro_batch,
        accumulation=m,
        global_batch=global_batch,
        tokens_per_step=tokens,
        recompute=recompute,
        recompute_chosen=o.plan.recompute is None,
        recompute_layers=o.plan.recompute_layers,
        recompute_block=o.plan.recompute_block,
        compile=o.compute.compile,
        loss_impl=_layout_loss(p.o, p.loss_impl),
        framework="fsdp" if is_fsdp_layout(o) else "megatron-fsdp" if stage >= 2 else "megatron",
        recipe=p.recipe.name if is_fsdp_layout(o) else "megatron",
        optimizer=o.precision.optimizer,
        offload=o.precision.offload,
        bucket_bytes=0 if stage >= 2 else int(_bucket_ran(model, p, stage, layout, r)),
        skew=o.compute.skew,
        keep_full_grads=False,
    )
    setup = setup.model_copy(
        update={
            "nodes": dp_group.nodes,
            "gpus_per_node": int(dp_group.ppn),
            "compute_model": compute_model,
            "mfu": mfu,
        }
    )
    time = _layout_time(r, tokens)
    memory = Memory(
        hbm_bytes=int(topology.gpu.hbm),
        recipe=p.recipe.title if is_fsdp_layout(o) else _layout_recipe(o),
        recompute=recompute,
        note=fsdp_layout_note(chosen_rows[stage][1], layout.pp)
        if is_fsdp_layout(o)
        else f"the most loaded pipeline stage, {chosen_rows[stage][1].most_loaded.stage} of {layout.pp}, per GPU; "
        + _megatron_total(chosen_rows[stage][1]),
        stages=[row for row, _ in chosen_rows.values()],
    )
    grad_bytes = DTYPE_BYTES[_layout_grad_dtype(o, stage)]
    communication = _layout_communication(topology, r, dp_group, grad_bytes, is_fsdp_layout(o))
    if is_fsdp_layout(o) and o.plan.shard_group is not None:
        communication = communication.model_copy(update={"shard_group": o.plan.shard_group})
    notes = list(p.advice) + _layout_advice(r, topology, par.virtual_stages, p.micro_batch)
    if ignored := _layout_ignores(o):
        why = (
            "are not priced with PyTorch FSDP's layouts (engine/fsdp_layout.py; torch's async TP: its collectives "
            "costed as DTensor's, waited for)"
            if is_fsdp_layout(o)
            else "do not apply to a TP/CP/PP/EP layout, costed as Megatron-LM runs it"
        )
        notes.append(advice.ignored_flags(ignored, why))
    info = model_info_of(model, p.counts)
    if par.mtp_layers:
        assert model.architecture is not None  # _check_layout_plan
        info = info.model_copy(update={"params_mtp": int(par.mtp_layers * mtp_layer(model.architecture).params)})
    return EstimateReport(
        model=info,
        topology=topology_info(topology),
        setup=setup,
        communication=communication,
        memory=memory,
        time=time,
        compute=None,
        inference=None,
        layout=_layout_report(topology, r, par, chosen_rows[stage][1], _tp_overlapped(o)),
        warnings=notes,
        summary=training_summary(setup, memory, time, notes),
    )


def _given_bucket_bytes(model: ModelSpec, o: Options, layout: Layout, seq_len: int, zero: int) -> float | None:
    """The DP bucket the plan gives, in bytes of gradient: --bucket-size, or --bucket-count's share of a first-stage
    GPU's parameters (Megatron's --ddp-num-buckets: frameworks.megatron_count_bucket); None: Megatron's default."""
    count, par = o.communication.bucket_count, o.parallel
    if count is None:
        return o.communication.bucket_bytes
    assert model.architecture is not None  # _check_layout_plan
    split = PipelineSplit(model.architecture.layers, layout.pp, par.virtual_stages, par.first_stage_layers,
                          par.last_stage_layers, par.pipeline_layout)  # fmt: skip
    held = first_stage_parameters(model, layout, seq_len, split, par.mtp_layers)
    return megatron_count_bucket(held, count) * DTYPE_BYTES[_layout_grad_dtype(o, zero)]


def _muon_bucket(model: ModelSpec, p: Prepared, layout: Layout, zero: int) -> float | None:
    """The elements per bucket by which Muon's layer-wise layout (ZeRO 1) cuts the first pipeline stage's first
    model chunk (layout_memory.MemoryLayout.muon_bucket): Megatron's DP bucket under --overlap-grad-reduce, over the
    DP x CP group the layout is sized by (training.py resolve_ddp_bucket_size), else none."""
    o = p.o
    if o.precision.optimizer != "muon" or zero != 1 or o.communication.overlap_comm is False:
        return None
    grad_bytes = DTYPE_BYTES[_layout_grad_dtype(o, zero)]
    given = _given_bucket_bytes(model, o, layout, p.seq_len, zero)
    return megatron_bucket_bytes(0.0, layout.dp * layout.cp, grad_bytes, given, True) / grad_bytes


def _bucket_ran(model: ModelSpec, p: Prepared, stage: int, layout: Layout, r: LayoutStep) -> float:
    """The DP bucket the step ran (layout_estimate._data_parallel), on the stage with the most dense parameters."""
    o = p.o
    shard = max(st.dense_params for st in r.stages)
    grad_bytes = DTYPE_BYTES[_layout_grad_dtype(o, stage)]
    overlapped = o.communication.overlap_comm is not False
    given = _given_bucket_bytes(model, o, layout, p.seq_len, stage)
    return megatron_bucket_bytes(shard, layout.dp, grad_bytes, given, overlapped)


# The flags a layout's costing does not read (it runs Megatron's own settings), each with whether it was given.
LAYOUT_IGNORES: dict[str, Callable[[Options], bool]] = {
    "--skew": lambda o: o.compute.skew != 0,
    "--offload": lambda o: o.precision.offload != "none",
    "--recompute-layers": lambda o: o.plan.recompute_layers != 1,
    "--grad-block": lambda o: o.precision.grad_block is not None,
    "--recipe": lambda o: o.precision.recipe is not None,
    "--optimizer": lambda o: o.precision.optimizer not in LAYOUT_RUNS["optimizer"],
    "--first-bucket-size": lambda o: o.communication.first_bucket_bytes is not None,
    "--algorithm": lambda o: o.communication.algorithm is not None,
    "--protocol": lambda o: o.communication.protocol is not None,
    "--keep-full-grads": lambda o: o.communication.keep_full_grads,
    "--compile": lambda o: o.compute.compile,
    "--no-repeat-kv": lambda o: not o.compute.repeat_kv,
    "--loss-impl": lambda o: o.compute.loss_impl not in LAYOUT_RUNS["loss_impl"],
    "--shard-group": lambda o: o.plan.shard_group is not None,
}


def _layout_ignores(o: Options) -> list[str]:
    """The flags a layout's costing does not read, where they were given (FSDP's layouts read FSDP_LAYOUT_READS, and
    not --tp-comm-overlap: _tp_overlapped)."""
    read = FSDP_LAYOUT_READS if is_fsdp_layout(o) else ()
    unread = [flag for flag, given in LAYOUT_IGNORES.items() if given(o) and flag not in read]
    return unread + (["--tp-comm-overlap"] if o.parallel.tp_comm_overlap and not _tp_overlapped(o) else [])


def _tp_overlapped(o: Options) -> bool:
    """TP's collectives overlapped with the GEMMs they feed: Megatron-LM's --tp-comm-overlap (Transformer Engine's
    userbuffers). Under PyTorch FSDP the flag is torch's async TP (torchtitan's enable_async_tensor_parallel), whose
    symmetric-memory micro-pipelining is not priced: its collectives are costed as DTensor's, waited for. It gained
    torchtitan's Llama 3.1 70B at FSDP 32 x TP 8 5.7% (tt-h100-2412 Table 4: 829 and 876 TPS/GPU), where
    Transformer Engine's overlap would hide the 27% of the step TP's calls take."""
    return o.parallel.tp_comm_overlap and not is_fsdp_layout(o)


def _layout_advice(r: LayoutStep, topology: TopologySpec, virtual: int, micro_batch: int) -> list[Advice]:
    """Where the layout loses time it need not: TP across NVLink domains, MoE layers waiting for the host, a large
    bubble."""
    out = []
    tp = r.groups["tp"]
    if r.layout.tp > 1 and tp.nodes > 1:
        out.append(advice.tp_across_domains(r.layout.tp, tp.nodes, topology.domain_size))
    if r.host_wait > 0.1 * r.step:
        out.append(advice.moe_host_bound(r.host_wait, r.step, r.moe_host_seconds, micro_batch))
    if r.bubble > 0.1 * r.step:
        out.append(advice.pipeline_bubble(r.bubble, r.step, r.layout.pp, r.micro_batches, virtual, micro_batch))
    return out


def _layout_time(r: LayoutStep, tokens: int) -> Time:
    """The layout's step as Time: compute, each dimension's exposed calls, DP's terms, the bubble, the jitter."""
    compute = r.micro_batches * (r.forward + r.backward) + r.optimizer
    terms = [BreakdownTerm(term=COMPUTE, seconds=compute)]
    terms += [BreakdownTerm(term=f"{EXPOSED}{dim.upper()} calls", seconds=s) for dim, s in r.exposed.items()]
    # DP's overlap slowdown and the model-parallel calls' as one term: the compute any overlapped call slows
    terms += [
        BreakdownTerm(term=t.term, seconds=t.seconds + (r.slowed if t.term == SLOWDOWN else 0.0)) for t in r.dp_terms
    ]
    if r.slowed > 0 and all(t.term != SLOWDOWN for t in r.dp_terms):
        terms.append(BreakdownTerm(term=SLOWDOWN, seconds=r.slowed))
    terms.append(BreakdownTerm(term=BUBBLE, seconds=r.bubble))
    if r.host_wait > 0:
        terms.append(BreakdownTerm(term=HOST_WAIT, seconds=r.host_wait))
    terms.append(BreakdownTerm(term=JITTER, seconds=r.jitter))
    terms.append(BreakdownTerm(term=SLOWEST_GPU, seconds=r.slowest_gpu))
    exposed = sum(t.seconds for t in terms if t.term.startswith(EXPOSED))
    losses = sum(t.seconds for t in terms if t.term in LOSSES)
    return Time(
        forward_seconds=r.forward,
        backward_seconds=r.backward,
        compute_seconds=compute,
        comm_seconds=r.comm,
        ideal_seconds=max(compute, r.comm) + r.bubble,  # the bubble idles whatever overlaps
        step_seconds=r.step,
        serial_seconds=compute + r.comm + r.bubble + r.host_wait,
        exposed_comm_seconds=exposed,
        losses_seconds=losses,
        bound=bound(compute, exposed, r.bubble, r.host_wait),
        tokens_per_second=tokens / r.step,
        mfu=r.mfu,
        scaling_efficiency=compute / r.step,
        straggler_seconds=0.0,
        breakdown=terms,
    )


def _layout_communication(
    topology: TopologySpec,
    r: LayoutStep,
    dp_group: Placement,
    grad_bytes: float,
    torch_fsdp: bool = False,
) -> Communication:
    """Data parallelism's collectives, each with its whole message priced on its group: the stage's DP schedule on
    the DP x CP group, then the calls beside it (the experts' over expert-DP, the embedding's and head's);
    `torch_fsdp`: PyTorch FSDP runs them layer by layer at ZeRO 2-3, its instances hybrid sharding's replicas, where
    otherwise Megatron-FSDP runs them and the instances are the distributed optimizer's."""
    sharding, instances_are = ("PyTorch FSDP", "replicas") if torch_fsdp else ("Megatron-FSDP", "optimizer instances")

    def row(op: str, purpose: str, group: Placement, message: float, t: Traffic, seconds: float,
            algorithms: tuple[tuple[str, int], ...]) -> CollectiveUse:  # fmt: skip
        whole = whole_message_of(collective(topology, op, group, message))
        return collective_use(op, purpose, group.ranks, message, t, seconds, algorithms, whole)

    instances = r.instances
    rows: list[CollectiveUse] = []
    for t in r.dp_traffic:  # with optimizer instances: each reduce-scatter's shard then all-reduced across them
        group = dp_group if instances is None else dp_group_for(t.op, dp_group, instances.dense)
        if instances is not None and t.op == "reduce_scatter":
            rows.append(row(t.op, t.purpose, group, t.message_bytes, t, *t.part(0)))
            shard = t.message_bytes / group.ranks
            across = f"{t.purpose}, shards across {instances_are}"
            rows.append(row("all_reduce", across, instances.dense_across, shard, t, *t.part(1)))
        else:
            rows.append(row(t.op, t.purpose, group, t.message_bytes, t, t.seconds, t.algorithms))
    for side in r.side_traffic:
        groups = side.placements or (r.groups[side.group],) * len(side.traffic)
        rows += [
            row(t.op, t.purpose, group, t.message_bytes, t, t.seconds, t.algorithms)
            for t, group in zip(side.traffic, groups, strict=True)
        ]
    held = r.stages[r.held_stage]
    per_unit = any(c.when == AFTER_UNIT for stretch in r.dp_schedule for c in stretch.calls)
    by_layer = f", layer by layer ({sharding})" if per_unit else ""
    return Communication(
        primitives=primitives(r.dp_schedule),
        frequency=frequency(r.dp_schedule, r.micro_batches) + by_layer + ", on the DP x CP group",
        gradient_bytes=int(held.dense_params * grad_bytes),
        bytes_sent_per_rank=sum(row.bytes_sent_per_rank * row.occurrences for row in rows),
        seconds_per_step=sum(t.seconds for t in r.dp_traffic)
        + sum(t.seconds for s in r.side_traffic for t in s.traffic),
        collectives=rows,
    )


def _layout_report(
    topology: TopologySpec, r: LayoutStep, par: Parallel, held: LayoutMemory, tp_overlapped: bool
) -> LayoutReport:
    layout = r.layout
    groups = []
    dense = all(s.expert_params == 0 for s in r.stages)
    for kind, g in r.groups.items():
        if g.ranks == 1 or (dense and kind in ("ep", "etp", "edp")):  # the experts' groups, where there are experts
            continue
        if kind == "etp-ep" and not any(c.group == kind for c in r.calls):  # the allgather dispatcher's alone
            continue
        if kind == "pp-group":  # a communicator the sends may run on; the "pp" row is their slowest pair
            continue
        groups.append(group_row(kind, g))
    calls = [
        LayoutCallRow(
            dimension=c.dimension,
            purpose=c.purpose,
            op=c.op,
            group=c.group,
            message_bytes=int(c.message_bytes),
            calls_per_micro_batch=c.per_micro_batch,
            seconds_per_call=call_seconds(topology, r.groups, c),
            overlapped=c.overlapped,
        )
        for c in r.calls
    ]
    memory = {s.stage: s.total for s in held.stages}
    stages = [
        PipelineStageRow(
            stage=s.index,
            layers=s.layers,
            params=int(s.dense_params + s.expert_params),
            forward_flops_per_token=s.forward_flops,
            memory_bytes=int(memory.get(s.index, 0.0)),
        )
        for s in r.stages
    ]
    return LayoutReport(
        gpus=layout.gpus,
        nodes=math.ceil(layout.gpus / topology.domain_size),
        tp=layout.tp,
        cp=layout.cp,
        pp=layout.pp,
        dp=layout.dp,
        ep=layout.ep,
        expert_tp=layout.expert_tp,
        expert_dp=layout.expert_dp,
        order=layout.order,
        virtual_stages=par.virtual_stages,
        micro_batches=r.micro_batches,
        sequence_parallel=par.sequence_parallel,
        tp_comm_overlap=tp_overlapped,
        pp_comm_overlap=pp_overlapped(par.virtual_stages, par.pp_comm_overlap),
        pp_send_comm="group" if any(c.comm_group == "pp-group" for c in r.calls) else "pair",
        cp_impl=par.cp_impl,
        bubble_seconds=r.bubble,
        paced_stage=r.paced_stage,
        memory_stage=held.most_loaded.stage,
        groups=groups,
        calls=calls,
        exposed=[BreakdownTerm(term=dim, seconds=s) for dim, s in r.exposed.items()],
        stages=stages,
        mtp_layers=par.mtp_layers or None,
        moe_host_seconds=None if dense else r.moe_host_seconds,
    )
