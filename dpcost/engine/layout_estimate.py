"""One training step under a TP x CP x PP x EP x DP layout, as Megatron-LM runs it.

It combines, on the most loaded pipeline stage (the last: its layers and the output head):
- compute per micro-batch: PaLM's 6N + 12LHQT FLOPs (compute.py) of the stage's layers and head, split over
  TP x CP, at the `--mfu` efficiency; recomputation as compute.py counts it;
- the model-parallel calls (layout_step.py), each priced on its own group's placement (layout.py,
  placement.place_group): collectives as NCCL runs them (collectives.py), send/recv and all-to-all (p2p.py);
- the compute an overlapped model-parallel call runs beside, slowed by the SMs its kernels take, as DP's overlapped
  collectives slow it (layout_step.slowed_compute, call_slowdown);
- the pipeline's bubble, (p - 1) / v micro-batch slots (layout_step.bubble_seconds);
- data parallelism on the stage's shard: the DP schedule of step.py over the DP x CP group, as Megatron's DDP and
  distributed optimizer run ZeRO 0 and 1 (its buckets, frameworks.FRAMEWORKS["megatron"]) and Megatron-FSDP runs
  ZeRO 2 and 3 (per layer, frameworks.MEGATRON_FSDP), with the experts' gradients reduced over expert-DP.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from dpcost.engine.activations import ACT_BYTES, Kernels
from dpcost.engine.checkpointing import DEFAULT_MODULES
from dpcost.engine.collectives import CollectiveTime, fastest
from dpcost.engine.compute import attention_flops, flops_per_token, layer_mixer_flops, mtp_forward_flops
from dpcost.engine.dp_schedule import Stretch
from dpcost.engine.frameworks import FRAMEWORKS, MEGATRON_FSDP
from dpcost.engine.host import MOE_LAYER_HOST_SECONDS, host_wait_seconds
from dpcost.engine.layout import (
    Layout,
    group_bases,
    group_of_rank_zero,
    group_shape,
    instance_members,
    translates_place_alike,
)
from dpcost.engine.layout_memory import model_shape, muon_groups
from dpcost.engine.layout_step import (
    LayoutCall,
    PipelineSplit,
    StageLayers,
    bubble_seconds,
    checkpointed_rank_layers,
    exposed_per_micro_batch,
    layout_calls,
    mamba_layout_refusal,
    pp_overlapped,
    rank_layers,
    recomputed_calls,
    slowed_compute,
    stage_kinds,
    stage_tp_pairs,
    torch_tp_gather_bytes,
    tp_pairs_of,
    unpaired_ep_seconds,
)
from dpcost.engine.low_precision_weights import gathered_weight_bytes
from dpcost.engine.memo import per_object
from dpcost.engine.memory import OPTIMIZER_STATE_BYTES, RECIPES, optimizer_state_bytes
from dpcost.engine.muon import Matrix, newton_schulz_seconds, orthogonalization_flops, stage_matrices
from dpcost.engine.nccl_channels import call_channels, compute_slowdown, p2p_channels, peer_channels
from dpcost.engine.ops import (
    Op,
    OpTimes,
    bf16_optimizer_grad_update,
    bf16_optimizer_step_seconds_on,
    has_layer_ops,
    layer_ops,
    main_grad_accumulation,
    matmul_operands,
    model_ops,
    mtp_ops,
    optimizer_seconds_on,
    output_head_operands,
    recomputed_by_part,
    sequence_parallel_copies,
    sixteen_bit_layers,
    tensor_parallel,
    times,
)
from dpcost.engine.p2p import all_to_all, send_recv
from dpcost.engine.params import count_params, mtp_layer, routed_expert
from dpcost.engine.pipeline_layout import checked_layout
from dpcost.engine.placement import Placement, place_group
from dpcost.engine.plan import dp_group_for, priced_call, then_across
from dpcost.engine.prepare import DTYPE_BYTES
from dpcost.engine.rates import rates_for, slowest_gpu_loss
from dpcost.engine.step import (
    COMPUTE,
    EXPOSED,
    JITTER,
    SLOWEST_GPU,
    Call,
    Phase,
    StepPlan,
    StepTime,
    Term,
    Traffic,
    Unit,
    slowest_rank_wait,
    step_time,
)
from dpcost.frozen import frozen
from dpcost.options import DEFAULT_SYNC_JITTER
from dpcost.specs import LocalAttentionSpec, ModelArchitecture, ModelSpec, TopologySpec

if TYPE_CHECKING:
    from dpcost.options import EpDispatcher

# a layer as its compute differs: an MoE MLP or not, its mixer, its window or chunk, whether it has an MLP
LayerKind = tuple[bool, str, LocalAttentionSpec | None, bool]
TimedKind = tuple[bool, str, LocalAttentionSpec | None, bool, bool]  # a LayerKind, and in BF16 under FP8

__all__ = [
    "NVFP4_TILE",
    "LayoutStep",
    "SideTraffic",
    "StageLoad",
    "call_seconds",
    "cp_attention_blocks",
    "first_stage_parameters",
    "fsdp_units",
    "gathered_bytes",
    "layout_step",
    "nvfp4_amax_syncs",
    "placements",
    "stage_loads",
    "word_embedding_sync",
]


@frozen
class LayoutStep:
    layout: Layout
    micro_batches: int  # per pipeline per step
    forward: float  # seconds of one micro-batch's forward on the stage that paces the pipeline
    backward: float  # and its backward, recomputation included
    exposed: dict[str, float]  # seconds per step each model-parallel dimension adds: tp, cp, pp, ep
    dp_terms: tuple[Term, ...]  # what data parallelism adds: exposed collectives, overlap slowdown (step.py)
    bubble: float
    jitter: float  # the whole job waiting for its slowest GPU at the pipeline's flush
    slowest_gpu: float  # seconds per step the slowest GPU's sustained rate adds (rates.slowest_gpu_loss)
    step: float
    comm: float  # every call of the step summed, per GPU
    model_flops: float  # per GPU per step
    mfu: float
    stages: list[StageLoad]
    paced_stage: int  # the stage with the most compute
    held_stage: int  # the stage with the most parameters: its shard is what DP reduces
    groups: dict[str, Placement]
    calls: tuple[LayoutCall, ...]  # the model-parallel calls per micro-batch
    dp_traffic: tuple[Traffic, ...]  # the DP schedule's collectives per step (step.py)
    dp_schedule: tuple[Stretch, ...] = ()  # the held stage's DP schedule, as priced (dp_schedule.py)
    side_traffic: tuple[SideTraffic, ...] = ()  # DP calls beside that schedule: the experts', the ends'
    optimizer: float = 0.0  # seconds of the optimizer step on the stage's shard, once per step (op by op only)
    slowed: float = 0.0  # seconds per step of compute slowed beside overlapped model-parallel calls
    overlap_slowdown: float = 0.0  # of the compute any call overlapped, DP's and the model-parallel calls'
    instances: InstanceGroups | None = None  # the distributed optimizer's instances, where more than one
    host_wait: float = 0.0  # seconds per step the paced stage's MoE layers wait for the host (host.py)
    moe_host_seconds: float = 0.0  # the host time of an MoE layer's forward and backward, as costed (host.py)


@frozen
class StageLoad:
    """One pipeline stage on one GPU: its layers, the parameters it holds, and its forward FLOPs per token."""

    index: int
    layers: int
    dense_params: float  # one TP rank's: its layers' dense weights, the embedding (first), norm and head (last)
    expert_params: float  # over ETP x EP: its MoE layers' routed experts
    forward_flops: float  # per token of the micro-batch, over TP x CP: its layers' 2N + attention, the head's 2N
    layer_flops: float  # the part of forward_flops in its layers (what recomputation re-runs)
    # each decoder (and MTP) layer's share, in forward order: its dense parameters on one TP rank, its forward FLOPs
    # per token over TP x CP (what Megatron-FSDP gathers and reduces as one unit: fsdp_units)
    layer_params: tuple[float, ...] = ()
    layer_forward_flops: tuple[float, ...] = ()
    # one TP rank's TP-split weights of its decoder (and MTP) layers: what --fp8-param-gather stores and gathers in
    # fp8, and --fp4-param-gather in NVFP4 (layout_memory.quantized_layer_parameters); the norms, routers,
    # embedding and head stay 16-bit
    layer_split_params: float = 0.0
    layer_indices: tuple[int, ...] = ()  # its decoder layers, as Megatron-Core numbers them (rank_layers)
    # each decoder (and MTP) layer's TP-split weights on one TP rank, and its routed experts' over ETP x EP
    layer_split_each: tuple[float, ...] = ()
    layer_experts_each: tuple[float, ...] = ()

    def low_precision_params(self, layers: int, bf16_layers: tuple[int, int], mtp: bool = True) -> tuple[float, float]:
        """The TP-split weights and the experts of the stage's layers that run in low precision (of `layers` in the
        model): all but those --first-last-layers-bf16 keeps in BF16 (ops.sixteen_bit_layer); the MTP layers' with
        `mtp`, under FP8, whose context builds them whatever their index, but not FP4's (multi_token_prediction.py)."""
        mtp_entries = len(self.layer_split_each) - len(self.layer_indices)
        if not self.layer_split_each or (not any(bf16_layers) and (mtp or not mtp_entries)):
            return self.layer_split_params, self.expert_params
        kept = sixteen_bit_layers(self.layer_indices, layers, bf16_layers)
        kept += [not mtp] * mtp_entries
        split = sum(p for p, bf16 in zip(self.layer_split_each, kept, strict=True) if not bf16)
        experts = sum(p for p, bf16 in zip(self.layer_experts_each, kept, strict=True) if not bf16)
        return split, experts


def replicated_per_layer(a: ModelArchitecture, moe: bool) -> float:
    """The parameters of one layer that every TP rank holds whole: its norms, the row-parallel layers' biases
    (attention output and MLP down projection: RowParallelLinear keeps its bias unsplit), per-head QK norms, an MoE
    layer's router (TopKRouter's weight is not split over TP) and norm over its output (A.X K1's)
    (megatron/core/tensor_parallel/layers.py, transformer/moe/router.py), and the linear layers Megatron-Core
    duplicates over TP: MLA's down-projections, LatentMoE's projections (layout_memory.ModelShape [T])."""
    norm = a.norm_weights * a.hidden
    replicated = float(a.layer_norms * norm + (2 * a.hidden if a.linear_bias else 0))
    if a.qk_norm == "head":
        replicated += 2 * a.qk_norm_weights * a.d_head
    shape = model_shape(a, 1)
    if not a.hybrid:
        replicated += shape.duplicated_attention
    if moe and a.moe is not None:
        replicated += a.hidden * a.moe.experts + (norm if a.moe.output_norm else 0) + shape.duplicated_moe
    return replicated


def uncosted_layout(a: ModelArchitecture, layout: Layout) -> str:
    """Why a layout of `a` is not costed, empty where it is: every layer needs its ops (ops.has_layer_ops), and
    Mamba layers a layout their mixer runs in (layout_step.mamba_layout_refusal)."""
    if not has_layer_ops(a):
        return f"with {a.unmodelled}, it is not costed yet"
    refused = mamba_layout_refusal(a, layout.tp, layout.cp)
    return f"--{refused[0]}: {refused[1]}" if refused else ""


def stage_loads(
    model: ModelSpec, layout: Layout, seq_len: int, stage_layers: StageLayers | None = None, mtp_layers: int = 0
) -> list[StageLoad]:
    """Every pipeline stage's load on one GPU (StageLoad), as Megatron's GPTModel places the parameters
    (megatron/core/models/gpt/gpt_model.py): the word embedding split over TP and the learned positions whole on
    the first stage (pre_process); the final norm whole and the output layer split over TP on the last
    (post_process), which with tied embeddings and PP > 1 holds its own copy of the word embedding
    (LanguageModule.setup_embeddings_and_output_layer); in every layer the norms, row-parallel biases and routers
    whole (replicated_per_layer). `stage_layers`: each stage's decoder layers (default rank_layers'); `mtp_layers`
    MTP modules on the last stage (params.mtp_layer), each running a layer and the output head again, with their
    own embedding there when it is untied (GPTModel builds one where mtp_process)."""
    a = model.architecture
    if a is None:
        raise ValueError("a layout needs the model's architecture (layers, hidden size, heads)")
    stage_layers = rank_layers(PipelineSplit(a.layers, layout.pp)) if stage_layers is None else stage_layers
    key = (layout.tp, layout.cp, layout.pp, layout.ep, layout.expert_tp, seq_len, stage_layers, mtp_layers)
    known = _stage_loads_of(model)
    if key not in known:
        known[key] = tuple(_stage_loads(model, a, layout, seq_len, stage_layers, mtp_layers))
    return list(known[key])


def first_stage_parameters(
    model: ModelSpec, layout: Layout, seq_len: int, split: PipelineSplit, mtp_layers: int
) -> float:
    """The parameters one GPU of the first pipeline stage holds (stage_loads), its dense ones and its experts: what
    Megatron counts as its num_parameters (training.py, "number of parameters on ... model parallel rank")."""
    first = stage_loads(model, layout, seq_len, rank_layers(split), mtp_layers)[0]
    return first.dense_params + first.expert_params


@per_object
def _stage_loads_of(model: ModelSpec) -> dict[tuple[object, ...], tuple[StageLoad, ...]]:
    """stage_loads by everything they depend on (memo.py): the plans of a search that differ only in DP or the
    micro-batch hold the same stages."""
    return {}


def _stage_loads(
    model: ModelSpec,
    a: ModelArchitecture,
    layout: Layout,
    seq_len: int,
    stage_layers: StageLayers,
    mtp_layers: int,
) -> list[StageLoad]:
    params = count_params(model)
    head = params.embedding if a.tied_embeddings else params.lm_head
    last_head = params.embedding if a.tied_embeddings and layout.pp > 1 else params.lm_head
    final_norm = (
        params.total - sum(b.params for b in params.blocks) - params.embedding - params.lm_head - params.positions
    )
    mixer_flops = layer_mixer_flops(a, seq_len)
    one_expert = routed_expert(a) if a.moe is not None else 0.0
    experts_per_layer = a.moe.experts * one_expert if a.moe is not None else 0.0
    mtp = mtp_layer(a) if mtp_layers else None
    if len(stage_layers) != layout.pp or sorted(i for built in stage_layers for i in built) != list(range(a.layers)):
        counts = [len(built) for built in stage_layers]
        raise ValueError(f"{counts} layers per stage are not {a.layers} layers on {layout.pp} stages")
    out = []
    mtp_mixer = attention_flops(a, seq_len) / a.layers  # an MTP module's layer attends (compute.mtp_forward_flops)
    whole_per_layer = {moe: replicated_per_layer(a, moe) for moe in (False, True)}
    for s, built in enumerate(stage_layers):
        blocks = [params.blocks[i] for i in built]
        mixers = [mixer_flops[i] for i in built]
        last = s == layout.pp - 1
        if last and mtp is not None:
            blocks += [mtp] * mtp_layers
            mixers += [mtp_mixer] * mtp_layers
        experts = sum(experts_per_layer for b in blocks if b.moe)
        whole_of = [whole_per_layer[b.moe] for b in blocks]
        whole = sum(whole_of)
        split = sum(b.params for b in blocks) - experts - whole
        layer_split = split / layout.tp
        split_each = [(b.params - (experts_per_layer if b.moe else 0.0) - w) / layout.tp
                      for b, w in zip(blocks, whole_of, strict=True)]  # fmt: skip
        each = [tp_part + w for tp_part, w in zip(split_each, whole_of, strict=True)]
        if s == 0:
            split, whole = split + params.embedding, whole + params.positions
        if last:
            split, whole = split + last_head, whole + final_norm
            if mtp_layers and layout.pp > 1 and not a.tied_embeddings:
                split += params.embedding
        each_flops = [2 * b.active + mixer for b, mixer in zip(blocks, mixers, strict=True)]
        layer_flops = sum(each_flops)
        flops = layer_flops + ((1 + mtp_layers) * 2 * head if last else 0.0)
        shards = layout.tp * layout.cp
        out.append(
            StageLoad(
                s,
                len(built),
                split / layout.tp + whole,
                experts / (layout.expert_tp * layout.ep),
                flops / shards,
                layer_flops / shards,
                tuple(each),
                tuple(f / shards for f in each_flops),
                layer_split,
                built,
                tuple(split_each),
                tuple((experts_per_layer if b.moe else 0.0) / (layout.expert_tp * layout.ep) for b in blocks),
            )
        )
    return out


def _with_ends(units: tuple[Unit, ...], outside: float, first: bool, last: bool) -> tuple[Unit, ...]:
    """`units` with the parameters outside the layers added to the first layer (the embedding, on the first stage)
    and the last (the output layer and final norm, on the last stage), half to each on a stage that is both."""
    if not units:
        return (Unit(outside, 1.0),)
    share = 0.5 if first and last else 1.0
    head = outside * share if last else 0.0
    ends = list(units)
    ends[0] = replace(ends[0], params=ends[0].params + outside - head)
    ends[-1] = replace(ends[-1], params=ends[-1].params + head)
    return tuple(ends)


def megatron_bucket_bytes(
    shard_params: float, dp: int, grad_bytes: float, given: float | None, overlapped: bool
) -> float:
    """Bytes of gradient in each of Megatron's DP buckets over a stage's shard (Framework.bucket_ran): DP without CP,
    as Megatron sizes them; one bucket of the whole shard without --overlap-grad-reduce, as Megatron-LM's
    DistributedDataParallel before Megatron-Core reduced each contiguous buffer in one call too."""
    return FRAMEWORKS["megatron"].bucket_ran(dp, grad_bytes, given, overlapped, shard_params * grad_bytes)


def bucket_units(units: tuple[Unit, ...], bucket_params: float) -> tuple[Unit, ...]:
    """`units` (forward order) regrouped into Megatron's buckets of `bucket_params`, cut from the end of the
    forward, where its buffer starts (param_and_grad_buffer.py fills buckets in backward order), each with the
    compute of the parameters it holds: the blocks --overlap-param-gather gathers one by one as the next forward
    reaches them (param_and_grad_buffer.py start_param_sync, the next bucket's gather dispatched as one finishes)."""
    total = sum(u.params for u in units)
    if bucket_params <= 0 or total <= bucket_params:
        return (Unit(total, sum(u.compute_share for u in units)),)
    out: list[Unit] = []
    held = share = 0.0
    for u in reversed(units):
        left = u.params
        while left > 0:
            take = min(left, bucket_params - held)
            held += take
            share += u.compute_share * take / u.params
            left -= take
            if held >= bucket_params * (1 - 1e-12):
                out.append(Unit(held, share))
                held = share = 0.0
    if held > 0:
        out.append(Unit(held, share))
    return tuple(out[::-1])


def fsdp_units(stage: StageLoad) -> tuple[tuple[Unit, ...], float]:
    """Megatron-FSDP's units on one GPU of `stage`, each decoder layer's dense parameters with its share of the
    stage's forward compute (the head's folded into the last layer's), and the dense parameters in no unit: the
    embedding, the output layer and the final norm, which it keeps gathered through the step
    (frameworks.MEGATRON_FSDP)."""
    flops = stage.layer_forward_flops
    head = stage.forward_flops - sum(flops)
    shares = [f / stage.forward_flops for f in flops]
    if shares:
        shares[-1] += head / stage.forward_flops
    units = tuple(Unit(params, share) for params, share in zip(stage.layer_params, shares, strict=True))
    return units, max(0.0, stage.dense_params - sum(stage.layer_params))


@per_object
def _placements_on(topology: TopologySpec) -> dict[Layout, dict[str, Placement]]:
    """The placements of every layout costed on one topology (memo.py): a plan search places each many times."""
    return {}


def placements(topology: TopologySpec, layout: Layout) -> dict[str, Placement]:
    """Each group's placement (_place_groups: Megatron's groups of one kind are translates of one another), and for
    the point-to-point dimensions the pair of neighbours whose hop is slowest: the pipeline's stage boundary ("pp")
    and ring attention's hop ("cp-ring"), each the first neighbouring pair that leaves an NVLink domain; and the
    whole PP group ("pp-group"), whose communicator batched pipeline sends run on."""
    known = _placements_on(topology)
    if layout not in known:
        known[layout] = _place_groups(topology, layout)
    return known[layout]


@per_object
def _groups_placed_on(topology: TopologySpec) -> dict[tuple[object, ...], Placement]:
    """Placements by group shape on one topology (memo.py): the layouts of a search share most of their groups."""
    return {}


def _place_groups(topology: TopologySpec, layout: Layout) -> dict[str, Placement]:
    """Each kind of group placed on the topology: rank 0's group where every group of the kind sits alike, else
    the worst placed of its translates (the one crossing the most tiers and domains: the collective waits for it)."""
    known = _groups_placed_on(topology)
    domain_sizes = [t.size for t in topology.tiers if t.size is not None]

    def placed(kind: str, neighbours: bool = False, ring: bool = False) -> Placement:
        alike = translates_place_alike(layout, kind, domain_sizes)
        bases = (0,) if alike or not domain_sizes else group_bases(layout, kind, max(domain_sizes))
        key = (group_shape(layout, kind), bases, neighbours, ring)
        if key not in known:
            rank_zero = group_of_rank_zero(layout, kind)
            groups = [[b + r for r in rank_zero] for b in bases]
            known[key] = max(
                (place_group(topology, _slowest_neighbours(topology, g, ring) if neighbours else g) for g in groups),
                key=lambda pl: (len(pl.levels), pl.nodes, [-level.domain for level in pl.levels]),
            )
        return known[key]

    out = {kind: placed(kind) for kind in ("tp", "cp", "dp-cp", "ep", "etp", "edp", "etp-ep")}
    out["pp"] = placed("pp", neighbours=True)
    out["pp-group"] = placed("pp")
    out["cp-ring"] = placed("cp", neighbours=True, ring=True)
    return out


def _slowest_neighbours(topology: TopologySpec, members: list[int], ring: bool) -> list[int]:
    """Two neighbours of a chain (or ring) of ranks, those whose hop crosses the most tiers (a lone rank: itself)."""
    if len(members) < 2:
        return members
    pairs = list(zip(members, members[1:] + (members[:1] if ring else []), strict=False))
    return list(max(pairs, key=lambda pair: len(place_group(topology, list(pair)).levels)))


def layout_step(
    model: ModelSpec,
    topology: TopologySpec,
    layout: Layout,
    *,
    micro_batch: int,
    global_batch: int,
    seq_len: int,
    mfu: float,
    peak: float | None = None,
    recompute: str = "none",
    recompute_modules: frozenset[str] = DEFAULT_MODULES,
    recompute_block: int | None = None,
    grad_dtype: str = "fp32",
    sequence_parallel: bool = False,
    tp_overlap: bool = False,
    tp_backward_async: bool = True,
    ep_overlap: bool = False,
    pp_overlap: bool | None = None,
    pp_scatter_gather: bool = False,
    pp_send_comm: str | None = None,
    ep_node_limit: int | None = None,
    ep_dispatcher: EpDispatcher = "alltoall",
    cp_impl: str = "p2p",
    virtual_stages: int = 1,
    zero: int = 1,
    dp_overlap: bool = True,
    act_bytes: float = ACT_BYTES,
    overlap_slowdown: float | None = None,
    sync_jitter: float = DEFAULT_SYNC_JITTER,
    compute_model: str = "flops",
    compute_dtype: str = "bf16",
    flash: bool = True,
    first_stage_layers: int | None = None,
    last_stage_layers: int | None = None,
    mtp_layers: int = 0,
    pipeline_layout: str | None = None,
    quantized_weights: str | None = None,
    fp8_recipe: str = "tensorwise",
    slowest_gpu: float | None = None,
    sixteen_bit_mfu: float | None = None,
    bf16_layers: tuple[int, int] = (0, 0),
    bucket_bytes: float | None = None,
    optimizer_instances: int = 1,
    grad_reduce: str | None = None,
    attention_kernel: str | None = None,
    loss_impl: str = "vocab-parallel",
    grad_accumulation_fusion: bool = True,
    fused_grouped_mlp: bool = False,
    fp8_output_proj: bool = False,
    moe_host_seconds: float = MOE_LAYER_HOST_SECONDS,
    muon: bool = False,
    kernels: Kernels | None = None,
    repeated_kv: bool = False,
    torch_tp: bool = False,
    deferred_reduce: bool = False,
    bf16_optimizer: bool = False,
) -> LayoutStep:
    """The step of one layout (module docstring). `global_batch` sequences per step: m = global / (DP x b) micro-batches
    per pipeline. `peak`: the compute dtype's dense FLOP/s (default BF16's); `overlap_slowdown`: one compute slowdown
    for every overlapped call (default: each call's own, call_slowdown). `compute_model` "ops": each stage's layers op
    by op (ops.py, one TP rank's share: ops.tensor_parallel) at the GPU's sustained rates, `mfu` setting the matmuls'
    share of the peak; the slowest stage paces the pipeline. `flash`: attention as one flash kernel, else as Megatron
    ran it before flash attention, two matmuls over the score square and its softmax (ops.layer_ops), which selective
    recomputation then re-runs (compute.flops_per_token). `zero`: 0 Megatron's DDP, 1 its distributed optimizer, 2 and 3
    Megatron-FSDP's optim_grads and optim_grads_params (_data_parallel). `dp_overlap` False: the gradient reduction runs
    after the last backward and the parameter gather after the optimizer step, as Megatron-LM ran them before
    --overlap-grad-reduce (2d5220a4, 2023-08) and --overlap-param-gather (f048bf8c, 2023-11) (megatron/training.py
    train_step: reduce_model_grads, the optimizer step, gather_model_params). `first_stage_layers`, `last_stage_layers`:
    Megatron's --decoder-first/last-pipeline-num-layers (layout_step.stage_layer_counts); `pipeline_layout` its
    --pipeline-model-parallel-layout instead, each rank's layers those of its virtual stages (pipeline_layout.py);
    `mtp_layers`: --mtp-num-layers, trained on the last stage (stage_loads). `pp_scatter_gather`: the pipeline's tensors
    split over TP and gathered after the receive, as Megatron-LM ran them before Megatron-Core (layout_step.pp_calls);
    `pp_send_comm` the communicator its sends run on ("group" or "pair"; default layout_step.pp_send_communicator's).
    `grad_reduce`: ZeRO-1's bucket collective where it is not Megatron's reduce-scatter (--grad-reduce);
    `attention_kernel`: flash attention's kernel where it is not Megatron's cuDNN (--attention-kernel); `kernels` how
    the memory-bound ops run where not as Megatron's fused kernels (PyTorch FSDP's: eager, or compiled);
    `repeated_kv` K and V copied out to every query head before attention, as CP's torch exchange then sends them
    (layout_step.cp_calls); `torch_tp` TP as torch's DTensor plans run it (torchtitan's, under PyTorch FSDP): its
    calls as layout_step.tp_calls says, gathered in FP8 under tensorwise FP8 (layout_step.torch_tp_gather_bytes),
    and with sequence parallelism the copies around them (ops.sequence_parallel_copies); `loss_impl` the
    last stage's cross-entropy (ops.LOSS_TRAFFIC: vocab-parallel, -fused or -te; --loss-impl);
    `grad_accumulation_fusion` False: each micro-batch's backward adds every weight gradient into its main gradient
    in `grad_dtype` (ops.main_grad_accumulation; --no-gradient-accumulation-fusion).
    `ep_node_limit`: each token sent to at most that many nodes, once each, and forwarded over NVLink there
    (DeepSeek-V3's node-limited routing with DeepEP: layout_step.ep_calls); `ep_dispatcher` flex: once to each NVLink
    domain its experts are in, however many (DeepEP, HybridEP: layout_step.ep_calls). `slowest_gpu`: the share of
    its rate the job's slowest GPU loses (default, op by op: the GPU's measured spread, rates.slowest_gpu_loss).
    `sixteen_bit_mfu`: under FP8 or NVFP4, the BF16 peak's share for the matmuls that stay in 16 bits, the output
    head and the router (--mfu; default the GPU's BF16 share: ops.Op.sixteen_bit). `bf16_layers`: the first and last
    decoder layers whose matmuls stay in BF16 under FP8 or NVFP4, op by op (ops.sixteen_bit_layer), and whose weights
    stay BF16 under `quantized_weights` (_data_parallel), gathered as `fp8_recipe` has them. `bucket_bytes`:
    the DP gradient bucket in bytes of gradient, Megatron's --ddp-bucket-size in parameters times the gradient's
    bytes (default its max(40M, 1M x DP) parameters: frameworks.FRAMEWORKS["megatron"]). `optimizer_instances`:
    Megatron's --num-distributed-optimizer-instances (instance_groups). `fused_grouped_mlp`: the routed experts
    through Transformer Engine's CuTe-DSL grouped MLP (ops.layer_ops); `fp8_output_proj` the output layers in MXFP8
    (ops.model_ops). `recompute_block` N: full recomputation of the first N layers of each model chunk alone
    (Megatron's --recompute-method block: layout_step.checkpointed_rank_layers). `moe_host_seconds`: the host time of
    one MoE layer's forward and backward, below which its micro-batch waits for the host (host.py; 0 under
    full-iteration CUDA graphs). `muon`: Megatron's --optimizer muon, whose step orthogonalizes the weight matrices
    (optimizer_step_seconds). `deferred_reduce`: at ZeRO 2, PyTorch FSDP under torch's pipelining, which gathers
    each unit once a step and reduce-scatters its accumulated gradient once, after the last backward
    (fsdp_pipeline.py; _data_parallel). `bf16_optimizer`: DeepSpeed's BF16_Optimizer, as Megatron-DeepSpeed runs
    it (--grad-accum-dtype fp32): each micro-batch's backward adds the bf16 weight gradients into its fp32 buffer
    (ops.bf16_optimizer_grad_update), where Megatron would add into main gradients."""
    a = model.architecture
    if a is None:
        raise ValueError("a layout needs the model's architecture (layers, hidden size, heads)")
    refused = uncosted_layout(a, layout)  # as prepare.check_hybrid refuses it for estimate
    if refused:
        raise ValueError(f"a layout of {model.name}: {refused}")
    if global_batch % (layout.dp * micro_batch):
        raise ValueError(
            f"--global-batch: {global_batch} is not a multiple of DP {layout.dp} x micro-batch {micro_batch}"
        )
    m = global_batch // (layout.dp * micro_batch)
    counts = count_params(model)
    peak = topology.gpu.bf16_dense if peak is None else peak
    rate = peak * mfu
    fpt = flops_per_token(counts, a, seq_len, recompute, flash, modules=recompute_modules)
    if pipeline_layout is not None:
        if first_stage_layers is not None or last_stage_layers is not None:
            raise ValueError("a pipeline layout gives every stage's layers: not beside the first or last stage's")
        checked_layout(pipeline_layout, layout.pp, virtual_stages, a.layers, mtp_layers, "mamba" in a.mixers)
    split = PipelineSplit(a.layers, layout.pp, virtual_stages, first_stage_layers, last_stage_layers, pipeline_layout)
    stage_layers = rank_layers(split)
    stages = stage_loads(model, layout, seq_len, stage_layers, mtp_layers)
    block = recompute_block if recompute == "full" else None
    checkpointed: StageLayers = stage_layers  # every layer, unless --recompute-block picks the first of each chunk
    if block is not None:
        checkpointed = checkpointed_rank_layers(split, block)
    held = max(stages, key=lambda st: st.dense_params)  # the most dense parameters: DP's largest reduction
    experts_held = max(stages, key=lambda st: st.expert_params)  # the most experts: expert-DP's
    layers_total = sum(st.layer_flops for st in stages)
    tokens = micro_batch * seq_len

    def at_rate(st: StageLoad) -> tuple[float, float]:
        """A stage's forward and backward at `rate`: its FLOPs, recomputation its layers' share (block: the
        checkpointed ones')."""
        again = fpt.recompute / (layout.tp * layout.cp) * st.layer_flops / layers_total
        if block is not None and st.layer_indices:
            again *= len(checkpointed[st.index]) / len(st.layer_indices)
        return tokens * st.forward_flops / rate, tokens * (2 * st.forward_flops + again) / rate

    kinds = stage_kinds(a, stage_layers, mtp_layers)
    tp_gather_bytes = torch_tp_gather_bytes(compute_dtype, fp8_recipe) if torch_tp else act_bytes
    moe_counts = [sum(stage) for stage in kinds]  # each stage's MoE layers, MTP's included: they wait for the host
    if compute_model == "ops":
        layer_times: dict[TimedKind, tuple[float, float, float]] = {}  # every stage's layers, by kind, once
        timed = [
            _stage_by_ops(model, topology, layout, st, micro_batch, seq_len, recompute, sequence_parallel, mfu, peak,
                          compute_dtype, len(stages), flash, layer_times, recompute_modules,
                          mtp_layers, sixteen_bit_mfu, bf16_layers, attention_kernel,
                          loss_impl, None if grad_accumulation_fusion else DTYPE_BYTES[grad_dtype], ep_dispatcher,
                          fused_grouped_mlp, fp8_output_proj, cp_attention_blocks(layout.cp, cp_impl),
                          checkpointed[st.index] if block is not None else None, kernels, torch_tp,
                          tp_gather_bytes, bf16_optimizer)
            for st in stages
        ]  # fmt: skip
    else:
        timed = [at_rate(st) for st in stages]
    groups = placements(topology, layout)
    attention_share = attention_flops(a, seq_len) / (layers_total * layout.tp * layout.cp)
    calls = layout_calls(
        a,
        layout,
        micro_batch,
        seq_len,
        act_bytes,
        sequence_parallel=sequence_parallel,
        recompute_full=recompute == "full",
        recomputed=recomputed_calls(a, stage_layers, checkpointed, mtp_layers) if block is not None else None,
        moe_recomputed=recompute == "selective" and "moe" in recompute_modules,
        attention_recomputed=recompute == "full" or (recompute == "selective" and "core_attn" in recompute_modules),
        tp_overlap=tp_overlap,
        ep_overlap=ep_overlap,
        pp_overlap=pp_overlapped(virtual_stages, pp_overlap),
        tp_backward_async=tp_backward_async,
        torch_tp=torch_tp,
        tp_gather_bytes=tp_gather_bytes,
        recompute_stops_early=torch_tp and kernels == "compiled",
        tp_gathers_recomputed=torch_tp and recompute == "op",
        pp_scatter_gather=pp_scatter_gather,
        pp_send_comm=pp_send_comm,
        ep_node_limit=ep_node_limit,
        ep_dispatcher=ep_dispatcher,
        cp_impl=cp_impl,
        repeated_kv=repeated_kv,
        attention_share=attention_share,
        virtual_stages=virtual_stages,
        stages=kinds,
        tp_pairs=stage_tp_pairs(a, stage_layers, mtp_layers),
    )
    priced = {c: call_seconds(topology, groups, c) for c in calls}
    # the compute the model-parallel calls overlap runs slower by the SMs their kernels take, as DP's does
    slowdowns = {c: call_slowdown(topology, groups, c, overlap_slowdown) for c in calls if c.overlapped}
    if slowest_gpu is None:
        slowest_gpu = slowest_gpu_loss(rates_for(topology.gpu), layout.gpus) if compute_model == "ops" else 0.0
    lag = slowest_gpu / (1.0 - slowest_gpu)  # the slowest GPU's compute beyond the others', per second of it

    def slot_parts(i: int) -> tuple[dict[str, float], float, float, float]:
        """Stage i's micro-batch slot beyond its compute: the calls it leaves exposed, the compute they slow and the
        compute beside them, and its wait for the host: its GPU's slot, the slowest GPU's lag in it, runs under the
        host's launches of its MoE layers."""
        compute = sum(timed[i])
        exposed = exposed_per_micro_batch(calls, priced.__getitem__, compute)
        lost, beside = slowed_compute(calls, priced.__getitem__, slowdowns.__getitem__, compute)
        busy = compute * (1 + lag) + sum(exposed.values()) + lost
        return exposed, lost, beside, host_wait_seconds(busy, moe_counts[stages[i].index], moe_host_seconds)

    # the slowest stage sets the pipeline's pace: the one with the most compute, or where a stage's MoE layers take
    # the host longer to launch than it computes, the one whose whole slot is the longest
    host_bound = any(moe_counts[st.index] * moe_host_seconds > sum(timed[i]) for i, st in enumerate(stages))
    parts = {i: slot_parts(i) for i in range(len(stages))} if host_bound else {}

    def whole_slot(i: int) -> float:
        exposed, lost, _, waits = parts[i]
        return sum(timed[i]) * (1 + lag) + sum(exposed.values()) + lost + waits

    pacing = max(range(len(stages)), key=whole_slot if host_bound else lambda i: sum(timed[i]))
    (forward, backward), paced = timed[pacing], stages[pacing]
    per_mb, slowed, beside, wait = parts[pacing] if host_bound else slot_parts(pacing)
    slot = forward + backward + sum(per_mb.values()) + slowed + wait
    bubble = bubble_seconds(layout.pp, m, slot, virtual_stages)
    muon_stages = _stage_muon(a, stages, mtp_layers) if muon else None
    optimizer = (
        optimizer_step_seconds(
            topology,
            layout,
            stages,
            zero >= 1,
            DTYPE_BYTES[grad_dtype],
            optimizer_instances,
            muon_stages,
            bf16_optimizer,
        )
        if compute_model == "ops"
        else 0.0
    )
    instanced = instance_groups(topology, layout, optimizer_instances)
    mtp_quantized = quantized_weights != "nvfp4"  # multi_token_prediction.py: "currently ignoring FP4 in MTP layers"
    low_split = held.low_precision_params(a.layers, bf16_layers, mtp_quantized)[0]
    low_experts = experts_held.low_precision_params(a.layers, bf16_layers, mtp_quantized)[1]
    dp_step, sides = _data_parallel(
        topology,
        groups,
        held,
        experts_held.expert_params,
        m,
        forward,
        backward,
        zero,
        dp_overlap,
        overlap_slowdown,
        layout.dp,
        DTYPE_BYTES[grad_dtype],
        optimizer,
        last_stage=layout.pp - 1,
        quantized_weights=quantized_weights,
        fp8_recipe=fp8_recipe,
        low_precision=(low_split, low_experts),
        sync_jitter=sync_jitter,
        bucket_bytes=bucket_bytes,
        instances=instanced,
        grad_reduce=grad_reduce,
        deferred=deferred_reduce,
    )
    if layout.pp > 1 and (a.tied_embeddings or mtp_layers):
        sides += (word_embedding_sync(topology, layout, counts.embedding / layout.tp, DTYPE_BYTES[grad_dtype]),)
    if quantized_weights == "nvfp4" and zero == 1:
        dense = groups["dp-cp"] if instanced is None else instanced.dense
        experts = groups["edp"] if instanced is None else instanced.experts
        sides += nvfp4_amax_syncs(topology, dense, low_split, experts, low_experts)
    side_seconds = sum(side.seconds for side in sides)
    side_exposed = sum(side.exposed for side in sides)
    exposed = {dim: seconds * m for dim, seconds in per_mb.items()}
    unpaired = unpaired_ep_seconds(calls, priced.__getitem__, forward + backward, layout.pp)
    if unpaired:
        exposed["ep"] += unpaired
    # DP's own collectives named as DP's, beside the other dimensions' exposed calls ("exposed DP all_gather")
    dp_terms = [
        Term(f"{EXPOSED}DP {t.term.removeprefix(EXPOSED)}", t.seconds) if t.term.startswith(EXPOSED) else t
        for t in dp_step.breakdown
        if t.term not in (COMPUTE, JITTER, SLOWEST_GPU)
    ]
    dp_terms += [Term(f"{EXPOSED}{side.what}", side.exposed) for side in sides if side.exposed > 0]
    # Every GPU of the job meets at the pipeline's flush, once per step: the slowest of them sets it, drifted by
    # the step's compute (step.slowest_rank_wait; the waits inside the pipeline are absorbed by its slots).
    pipeline = Phase("pipeline", m * slot, 0.0, m * slot, 1)
    if per_wait_jitter(zero, layout.pp - 1):
        jitter = next((t.seconds for t in dp_step.breakdown if t.term == JITTER), 0.0)
    else:
        jitter = slowest_rank_wait([pipeline], sync_jitter, layout.gpus)
    # the slowest GPU's longer compute, on the critical path: the m micro-batches' and the bubble's (p - 1) / v slots
    slots = m + ((layout.pp - 1) / virtual_stages if layout.pp > 1 else 0.0)
    slowest = lag * slots * (forward + backward)
    per_micro_batch = sum(per_mb.values()) + slowed + wait
    step = dp_step.step + side_exposed + per_micro_batch * m + unpaired + bubble + jitter + slowest
    mtp_flops = 3 * mtp_forward_flops(counts, a, seq_len) * mtp_layers if mtp_layers else 0.0
    model_flops = (fpt.model + mtp_flops) * micro_batch * seq_len * m
    model_flops /= layout.tp * layout.cp * layout.pp
    layout_comm = m * sum(c.per_micro_batch * priced[c] for c in calls)
    return LayoutStep(
        layout=layout,
        micro_batches=m,
        forward=forward,
        backward=backward,
        exposed=exposed,
        dp_terms=tuple(dp_terms),
        bubble=bubble,
        jitter=jitter,
        slowest_gpu=slowest,
        step=step,
        comm=layout_comm + dp_step.comm + side_seconds,
        model_flops=model_flops,
        mfu=model_flops / (step * peak),
        stages=stages,
        paced_stage=paced.index,
        held_stage=held.index,
        groups=groups,
        calls=tuple(calls),
        dp_traffic=dp_step.traffic,
        dp_schedule=dp_step.schedule,
        side_traffic=sides,
        optimizer=optimizer,
        slowed=slowed * m,
        overlap_slowdown=_overlap_slowdown(dp_step, slowed * m, beside * m),
        instances=instanced,
        host_wait=wait * m,
        moe_host_seconds=moe_host_seconds,
    )


def _overlap_slowdown(dp_step: StepTime, slowed: float, beside: float) -> float:
    """The slowdown of all the compute that ran beside a call, DP's and the model-parallel calls' (`slowed` of the
    `beside` seconds), weighted by that compute."""
    dp_slowed = dp_step.overlap_slowdown * dp_step.overlapped
    total = dp_step.overlapped + beside
    return (dp_slowed + slowed) / total if total > 0 else 0.0


@per_object
def _layer_kinds_of(a: ModelArchitecture) -> tuple[LayerKind, ...]:
    """Each decoder layer's kind, in order: whether its MLP is the MoE one, its mixer, its local attention span and
    whether it has an MLP (memo.py: every stage of every plan of a search reads them)."""
    return tuple((a.moe_layer(i), a.mixer(i), a.local_span(i), a.has_mlp(i)) for i in range(a.layers))


def cp_attention_blocks(cp: int, cp_impl: str) -> int:
    """The blocks of the sequence a rank's flash attention runs over under context parallelism (ops._attention_half):
    CP with ring attention or the all-gather, one with the a2a exchange, whose kernel sees the whole sequence for
    1 / CP of the heads (Transformer Engine's AttnFuncWithCPAndQKVOA2A: layout_step.cp_all_to_alls)."""
    return 1 if cp_impl == "a2a" else cp


@per_object
def _layer_seconds_of(model: ModelSpec) -> dict[tuple[object, ...], tuple[float, float, float]]:
    """One layer's (forward, backward, recomputation) seconds op by op, by everything they depend on (memo.py): a
    plan search times the same layer for many pipeline and data-parallel sizes."""
    return {}


def _stage_by_ops(
    model: ModelSpec,
    topology: TopologySpec,
    layout: Layout,
    stage: StageLoad,
    micro_batch: int,
    seq_len: int,
    recompute: str,
    sequence_parallel: bool,
    gemm_efficiency: float | None,
    peak: float,
    compute_dtype: str,
    stages: int,
    flash: bool = True,
    layer_times: dict[TimedKind, tuple[float, float, float]] | None = None,
    recompute_modules: frozenset[str] = DEFAULT_MODULES,
    mtp_layers: int = 0,
    sixteen_bit_efficiency: float | None = None,
    bf16_layers: tuple[int, int] = (0, 0),
    attention_kernel: str | None = None,
    loss_impl: str = "vocab-parallel",
    main_grad_bytes: float | None = None,
    ep_dispatcher: str = "alltoall",
    fused_grouped_mlp: bool = False,
    fp8_output_proj: bool = False,
    attention_blocks: int = 1,
    checkpointed: tuple[int, ...] | None = None,
    kernels: Kernels | None = None,
    torch_tp: bool = False,
    tp_gather_bytes: float = ACT_BYTES,
    bf16_optimizer: bool = False,
) -> tuple[float, float]:
    """(forward, backward) seconds of one micro-batch on one GPU of `stage`, op by op: its layers' ops (the
    embedding on the first stage, the final norm, head and loss on the last), one TP rank's share of each, its
    CP share of the tokens, as Megatron runs them (fused kernels unless `kernels` says otherwise, cuDNN attention
    unless `attention_kernel` says another, the vocab-parallel loss `loss_impl`), with `main_grad_bytes` the add of
    the stage's weight gradients into main gradients of that many bytes (ops.main_grad_accumulation), or with
    `bf16_optimizer` BF16_Optimizer's into its fp32 buffer (ops.bf16_optimizer_grad_update); the
    recomputation re-runs what Megatron's policy drops (ops.recomputed_by_part; selective: `recompute_modules`).
    `mtp_layers`: MTP modules on the last stage;
    `sixteen_bit_efficiency`: the BF16 peak's share for the matmuls that stay in 16 bits (ops.times); `bf16_layers`:
    the first and last decoder layers, by global index, whose matmuls all do (ops.sixteen_bit_layer);
    `ep_dispatcher` the MoE token dispatcher, whose local shuffles ops.layer_ops prices; `fused_grouped_mlp` the
    routed experts through Transformer Engine's fused grouped MLP (ops.layer_ops); `fp8_output_proj` the output heads
    in the compute dtype (ops.model_ops); `attention_blocks` the blocks of the sequence flash attention runs over
    (cp_attention_blocks); `checkpointed` the decoder layers full recomputation re-runs where not all
    (--recompute-block); `torch_tp` torch's TP, whose sequence-parallel calls copy (ops.sequence_parallel_copies),
    gathering `tp_gather_bytes` an element."""
    a = model.architecture
    assert a is not None
    gpu = topology.gpu
    fw = FRAMEWORKS["megatron"]
    rates = rates_for(gpu)
    tokens = micro_batch * seq_len // layout.cp
    gemm_bytes, cast = matmul_operands(gpu.arch, compute_dtype)
    attention = attention_kernel or fw.attention_kernel
    kernels = kernels or fw.kernels

    def timed(ops: list[Op]) -> OpTimes:
        return times(
            ops, rates, peak, gpu.bf16_dense, gpu.hbm_bandwidth, seq_len, attention, gemm_efficiency,
            (gpu.arch, compute_dtype), sixteen_bit_efficiency,
        )  # fmt: skip

    def layer_seconds(
        moe: bool, mixer: str, local: LocalAttentionSpec | None, mlp: bool, sixteen: bool
    ) -> tuple[float, float, float]:
        key = (gpu, moe, mixer, local, mlp, sixteen, tokens, seq_len, gemm_bytes, flash, layout.ep, layout.tp,
               layout.cp, sequence_parallel, recompute, recompute_modules, gemm_efficiency, peak, compute_dtype,
               sixteen_bit_efficiency, attention, ep_dispatcher, fused_grouped_mlp, attention_blocks,
               kernels, torch_tp, tp_gather_bytes)  # fmt: skip
        known = _layer_seconds_of(model)
        if key in known:
            return known[key]
        view = a.attention_of(mixer)
        built = layer_ops(
            view, moe, tokens, seq_len, kernels, gemm_bytes, flash, layout.ep, cast, local, mixer, mlp, sixteen,
            dispatcher=ep_dispatcher, fused_grouped_mlp=fused_grouped_mlp, cp=attention_blocks,
        )  # fmt: skip
        ops = tensor_parallel(built, layout.tp, sequence_parallel)
        if torch_tp and sequence_parallel and layout.tp > 1:
            pairs = tp_pairs_of(a, mixer, mlp, moe)
            ops.append(sequence_parallel_copies(a.hidden, tokens, micro_batch, pairs, tp_gather_bytes))
        t = timed(ops)
        per_op = [timed([op]).forward_seconds for op in ops] if recompute == "selective" else [0.0] * len(ops)
        again = sum(recomputed_by_part(t.forward, ops, per_op, recompute, recompute_modules).values())
        known[key] = (t.forward_seconds, t.backward_seconds, again)
        return known[key]

    # Layers differ only in whether their MLP is the MoE one, (Gemma 4) whether they attend globally, whether they
    # attend in a window or chunk and (hybrids) their mixer and whether they have an MLP: time each kind once (for
    # every stage, given `layer_times` to keep them in).
    last = stage.index == stages - 1
    every = _layer_kinds_of(a)
    here = [every[i] for i in stage.layer_indices]
    in_bf16 = sixteen_bit_layers(stage.layer_indices, a.layers, bf16_layers)
    kinds = [(*kind, sixteen) for kind, sixteen in zip(here, in_bf16, strict=True)]
    if last and mtp_layers:  # MTP modules under FP8 whatever their index, but in BF16 under NVFP4: Megatron-Core
        # runs them under the FP8 context alone ("currently ignoring FP4 in MTP layers": multi_token_prediction.py)
        kinds += [(mtp_layer(a).moe, "attention", None, True, compute_dtype == "nvfp4")] * mtp_layers
    by_kind = {} if layer_times is None else layer_times
    for kind in set(kinds) - set(by_kind):
        by_kind[kind] = layer_seconds(*kind)
    forward = sum(by_kind[kind][0] for kind in kinds)
    backward = sum(by_kind[kind][1] for kind in kinds)
    if checkpointed is None:
        again = sum(by_kind[kind][2] for kind in kinds)
    else:  # the checkpointed decoder layers alone re-run their forward; MTP modules skip the block method
        rerun = set(checkpointed)
        decoder = len(stage.layer_indices)
        again = sum(
            by_kind[kind][2] for i, kind in zip(stage.layer_indices, kinds[:decoder], strict=True) if i in rerun
        )
    head = output_head_operands(fp8_output_proj, gemm_bytes, cast)
    outside = model_ops(a, tokens, kernels, loss_impl, head) if stage.index == 0 or last else []
    ends = [op for op in outside if (op.module == "embedding" and stage.index == 0)
            or (op.module != "embedding" and last)]  # fmt: skip
    if last and mtp_layers:
        ends += mtp_ops(a, tokens, kernels, loss_impl, head) * mtp_layers
    if bf16_optimizer:  # the stage's weights on this GPU, after TP's split
        ends.append(bf16_optimizer_grad_update(stage.dense_params + stage.expert_params))
    elif main_grad_bytes is not None:
        ends.append(main_grad_accumulation(stage.dense_params + stage.expert_params, main_grad_bytes))
    if ends:
        t = timed(tensor_parallel(ends, layout.tp, sequence_parallel))
        forward += t.forward_seconds
        backward += t.backward_seconds
    return forward, backward + again


def call_slowdown(
    topology: TopologySpec, groups: dict[str, Placement], c: LayoutCall, given: float | None = None
) -> float:
    """How much slower compute runs beside the call, on the SMs its kernel leaves (nccl_channels.compute_slowdown;
    `given` for every call): TE userbuffers' own SMs, a send and receive its NCCL per-peer channels, an all-to-all
    its p2p channels, a collective the channels NCCL runs it on."""
    group = groups[c.group]
    if c.kernel_sms:
        ctas: float = c.kernel_sms
    elif c.op == "send_recv":
        ctas = peer_channels(topology, groups[c.comm_group or c.group])
    elif c.op == "all_to_all":
        ctas = p2p_channels(topology, group)
    else:
        best = fastest(topology, c.op, group, c.message_bytes)
        ctas = call_channels(topology, group, best.algorithm, best.protocol, c.message_bytes)
    return compute_slowdown(topology.gpu, ctas, given)


def call_seconds(topology: TopologySpec, groups: dict[str, Placement], c: LayoutCall) -> float:
    """One call's time on its group: a collective as NCCL runs it, or point-to-point (p2p.py)."""
    group = groups[c.group]
    if c.op == "send_recv":
        return send_recv(topology, group, c.message_bytes, groups[c.comm_group] if c.comm_group else None).seconds
    if c.op == "all_to_all":
        return all_to_all(topology, group, c.message_bytes, c.network_share, c.routed).seconds
    return fastest(topology, c.op, group, c.message_bytes).seconds


def optimizer_step_seconds(
    topology: TopologySpec,
    layout: Layout,
    stages: Sequence[StageLoad],
    distributed: bool,
    grad_bytes: float,
    instances: int = 1,
    muon: Sequence[tuple[Matrix, ...]] | None = None,
    bf16_optimizer: bool = False,
) -> float:
    """Megatron's optimizer step on one GPU of the stage that takes the longest: Adam over fp32 main parameters
    (OPTIMIZER_STATE_BYTES["adamw"]), with the distributed optimizer over the dense parameters' 1 / (DP x CP / N)
    shard and the experts' 1 / (expert-DP / N), N its `instances` (megatron/core/optimizer/distrib_optimizer.py),
    without it over all of them; bound by HBM bandwidth as plan.optimizer_seconds prices the pure-DP step
    (ops.optimizer_seconds_on). Under Muon (`muon`: each stage's matrices, _stage_muon) one state on the matrices,
    and each stage's Newton-Schulz iterations, whole matrices shared over the same ranks (muon.py). With
    `bf16_optimizer` (Megatron-DeepSpeed's) Adam reads fp32 gradients (views of its buffer), and its passes over the
    stage's whole fp32 gradient buffer are added (ops.bf16_optimizer_step_bytes, the reduction in `grad_bytes`)."""
    dense_ranks, expert_ranks = (layout.dp * layout.cp // instances, layout.expert_dp // instances)
    if not distributed:
        dense_ranks = expert_ranks = 1
    gpu = topology.gpu
    read = DTYPE_BYTES["fp32"] if bf16_optimizer else grad_bytes  # the gradient Adam reads

    def passes(st: StageLoad) -> float:
        return (
            bf16_optimizer_step_seconds_on(gpu, st.dense_params + st.expert_params, grad_bytes)
            if bf16_optimizer
            else 0.0
        )

    if muon is None:  # every stage's step at one rate: the one that holds the most
        return max(
            optimizer_seconds_on(gpu, st.dense_params / dense_ranks + st.expert_params / expert_ranks, read, True,
                                 OPTIMIZER_STATE_BYTES["adamw"]) + passes(st)
            for st in stages
        )  # fmt: skip

    def seconds(i: int, st: StageLoad) -> float:
        params = st.dense_params / dense_ranks + st.expert_params / expert_ranks
        held = muon_groups(muon[i]).per_gpu(layout)
        managed = (held.tp_sharded + held.replicated) / dense_ranks + held.expert_sharded / expert_ranks
        state = optimizer_state_bytes("muon", managed / params if params else 0.0)
        flops = orthogonalization_flops(muon[i], dense_ranks, expert_ranks, 1 / layout.ep)
        updates = optimizer_seconds_on(topology.gpu, params, read, True, state)
        return updates + newton_schulz_seconds(topology.gpu, flops) + passes(st)

    return max(seconds(i, st) for i, st in enumerate(stages))


def _stage_muon(a: ModelArchitecture, stages: Sequence[StageLoad], mtp_layers: int) -> list[tuple[Matrix, ...]]:
    """Each stage's matrices Muon orthogonalizes (muon.stage_matrices): its decoder layers', on the last stage the
    MTP modules' where they are trained, on the first a learned position table."""
    last = len(stages) - 1
    return [
        stage_matrices(a, st.layer_indices, "fused", mtp_layers if i == last else 0, first=i == 0)
        for i, st in enumerate(stages)
    ]


@frozen
class InstanceGroups:
    """Megatron's distributed-optimizer instances (--num-distributed-optimizer-instances, param_and_grad_buffer.py):
    the gradients reduce-scattered within an instance's DP x CP ranks, the shard then all-reduced across the
    instances on the same stream, the parameters gathered within an instance; the experts' likewise over expert-DP."""

    dense: Placement
    dense_across: Placement
    experts: Placement
    experts_across: Placement


def instance_groups(topology: TopologySpec, layout: Layout, instances: int) -> InstanceGroups | None:
    """Rank 0's instance groups (layout.instance_members), placed; None for one instance."""
    if instances <= 1:
        return None
    dense, dense_across = instance_members(layout, "dp-cp", instances)
    experts, experts_across = instance_members(layout, "edp", instances)
    return InstanceGroups(
        place_group(topology, dense),
        place_group(topology, dense_across),
        place_group(topology, experts),
        place_group(topology, experts_across),
    )


@frozen
class SideTraffic:
    """Data-parallel calls priced beside the stage's DP schedule: the experts' over expert-DP, and at ZeRO 2-3 the
    parameters Megatron-FSDP keeps in no unit. Seconds per step, and what of them no compute hides."""

    what: str
    seconds: float
    exposed: float
    group: str = ""  # the kind of group it runs over (groups' key): "edp" or "dp-cp"
    traffic: tuple[Traffic, ...] = ()  # its calls per step, as the DP schedule's are listed
    placements: tuple[Placement, ...] = ()  # each call's group where not the kind's (optimizer instances)


# NVFP4's 2D weight scaling: one amax per 16 x 16 tile (Transformer Engine's NVFP4BlockScaling, recipe/__init__.py)
NVFP4_TILE = 16 * 16


def nvfp4_amax_syncs(
    topology: TopologySpec, dense: Placement, dense_params: float, experts: Placement, expert_params: float
) -> tuple[SideTraffic, ...]:
    """--fp4-param-gather's amax all-reduces in the optimizer step: before the distributed optimizer casts its fp32
    shards into the NVFP4 weights it then gathers, Transformer Engine all-reduces (MAX) an fp32 amax per 16 x 16 tile
    of every whole weight across the optimizer's data-parallel group, so that every rank sets every tile's scale
    (distrib_optimizer.py quantize_nvfp4_param_shard at d98e8a64dd; TE's tensor/utils.py
    _cast_master_weights_to_nvfp4_2d at d0067d0da): 4 bytes per 256 of the rank's linear weights, dense over DP x CP
    and the experts over expert-DP, waited for. Each weight's global amax, reduced in a call of its own beside them
    (a few bytes a weight), is not priced."""
    out = []
    for kind, group, params in (("dp-cp", dense, dense_params), ("edp", experts, expert_params)):
        if params <= 0 or group.ranks == 1:
            continue
        size = params / NVFP4_TILE * 4
        best = fastest(topology, "all_reduce", group, size)
        purpose = f"NVFP4 tile amaxes of the {'dense' if kind == 'dp-cp' else 'expert'} weights, optimizer step"
        traffic = Traffic(best.op, purpose, size, 1, 1, best.seconds, ((Call(best.seconds, best.label), 1),))
        out.append(SideTraffic(purpose, best.seconds, best.seconds, kind, (traffic,), (group,)))
    return tuple(out)


def word_embedding_sync(topology: TopologySpec, layout: Layout, params: float, grad_bytes: float) -> SideTraffic:
    """The word embedding's gradient all-reduced between the first and last pipeline stages, where both hold it
    (tied to the output layer, or read by MTP on the last stage): Megatron-Core's finalize_model_grads
    (distributed/finalize_model_grads.py _allreduce_word_embedding_grads, d98e8a64dd) runs it over each pipeline's
    first and last rank (parallel_state.default_embedding_ranks), `params` of one TP rank's vocabulary shard in the
    main gradients' dtype, after the data-parallel reduction and before the optimizer step: nothing hides it."""
    pipeline = group_of_rank_zero(layout, "pp")
    ends = place_group(topology, [pipeline[0], pipeline[-1]])
    size = params * grad_bytes
    best = fastest(topology, "all_reduce", ends, size)
    purpose = "word-embedding gradients, first and last stage"
    traffic = Traffic(best.op, purpose, size, 1, 1, best.seconds, ((Call(best.seconds, best.label), 1),))
    return SideTraffic(purpose, best.seconds, best.seconds, "pp", (traffic,), (ends,))


def per_wait_jitter(zero: int, last_stage: int) -> bool:
    """Megatron-FSDP without a pipeline: each layer's gather and reduction is a wait across the DP x CP group, as
    PyTorch FSDP's are, so the step's jitter is step.py's, charged per wait beyond its prefetch slack and at the
    step's end; with a pipeline the waits fall inside its slots, and the flush is the one the job pays."""
    return zero >= 2 and last_stage == 0


def gathered_bytes(weight_bytes: float, quantized_bytes: float, quantized_params: float, params: float) -> float:
    """Bytes per parameter of a gather of `params` of which `quantized_params` move `quantized_bytes` each
    (--fp8-param-gather, --fp4-param-gather: low_precision_weights.gathered_weight_bytes) and the rest `weight_bytes`
    (Megatron-LM arguments.py, "perform the param all-gather in fp8 (fp4)")."""
    if params <= 0 or quantized_params <= 0:
        return weight_bytes
    return weight_bytes - (weight_bytes - quantized_bytes) * min(1.0, quantized_params / params)


def _data_parallel(
    topology: TopologySpec,
    groups: dict[str, Placement],
    held: StageLoad,
    experts: float,
    micro_batches: int,
    forward: float,
    backward: float,
    zero: int,
    overlapped: bool,
    overlap_slowdown: float | None,
    dp_size: int,
    grad_bytes: float,
    optimizer: float = 0.0,
    last_stage: int = 0,
    quantized_weights: str | None = None,
    fp8_recipe: str = "tensorwise",
    low_precision: tuple[float, float] | None = None,
    sync_jitter: float = 0.0,
    bucket_bytes: float | None = None,
    instances: InstanceGroups | None = None,
    grad_reduce: str | None = None,
    deferred: bool = False,
) -> tuple[StepTime, tuple[SideTraffic, ...]]:
    """The DP schedule of the stage's dense shard over DP x CP (step.py), gradients of `grad_bytes` each, and the
    calls beside it (SideTraffic). ZeRO 0-1, as Megatron's DDP and distributed optimizer run it: its buckets over
    the flattened gradient of the stage's layers (the embedding's and head's with the end layers), the updated
    parameters gathered bucket by bucket during the next forward (--overlap-param-gather gathers each as the
    forward reaches it: bucket_units), `last_stage` the index of the pipeline's last. ZeRO 2-3, as Megatron-FSDP runs
    optim_grads and optim_grads_params (frameworks.MEGATRON_FSDP): per layer (fsdp_units), overlapped whatever
    `overlapped` says (Megatron-FSDP forces it on). The experts over expert-DP: reduce-scatter then all-gather with
    sharded optimizer states, all-reduce without, after the last backward and before the next forward; at ZeRO 2-3
    reduced every micro-batch, and at ZeRO 3 gathered for every forward and backward. Not `overlapped` (ZeRO 0-1):
    every reduction after the last backward and every gather after the optimizer step, on the compute stream.
    `quantized_weights` (--fp8-param-gather, --fp4-param-gather): the TP-split and expert weights of the layers that
    run in low precision, `low_precision` (StageLoad.low_precision_params; default all), gathered in that format as
    `fp8_recipe` has them (low_precision_weights.gathered_weight_bytes), the rest in 16 bits; each gather at the
    bytes per parameter of what it moves (gathered_bytes). `bucket_bytes`: ZeRO 0-1's bucket (Megatron's
    --ddp-bucket-size), else Megatron's default for the DP size. `instances`: the distributed optimizer's instances
    (InstanceGroups) at ZeRO 1, or at ZeRO 2-3 PyTorch FSDP's hybrid sharding, whose replicas are the instances.
    `deferred` (ZeRO 2): PyTorch FSDP under torch's pipelining, each unit gathered in the step's first forward and
    kept, its gradient accumulated unsharded and reduce-scattered once the last backward is done, not beside it
    (pipelining/stage.py perform_reduce_grad: fsdp_pipeline.py); the embedding's and head's alike."""
    fsdp = zero >= 2
    fw = MEGATRON_FSDP if fsdp else FRAMEWORKS["megatron"]
    overlapped = (overlapped or fsdp) and not deferred
    recipe = RECIPES[fw.name]
    weight_bytes = next(c.bytes_per_param for c in recipe.components if c.group == "params")
    dp = groups["dp-cp"]
    units, outside = fsdp_units(held)
    linear_gather_bytes = (
        gathered_weight_bytes(quantized_weights, fp8_recipe, distributed_optimizer=not fsdp)
        if quantized_weights
        else weight_bytes
    )
    split, low_experts = low_precision or (held.layer_split_params, experts)
    quantized_params = split if quantized_weights else 0.0
    # Megatron-FSDP's units are the layers; the distributed optimizer's buckets also hold the embedding and head
    gathered = sum(u.params for u in units) + (0.0 if fsdp else outside)
    dense_gather_bytes = gathered_bytes(weight_bytes, linear_gather_bytes, quantized_params, gathered)
    expert_gather_bytes = gathered_bytes(weight_bytes, linear_gather_bytes, low_experts, experts)
    bucket = 0.0 if fsdp else megatron_bucket_bytes(held.dense_params, dp_size, grad_bytes, bucket_bytes, overlapped)
    if not fsdp:  # Megatron's buffer holds them all: the embedding's before the first layer, the head's after the last
        # one bucket of the whole buffer: bucket_units' 0, exact where a sum of floats could split off a sliver
        per_bucket = bucket / grad_bytes if overlapped else 0.0
        units = bucket_units(_with_ends(units, outside, held.index == 0, held.index == last_stage), per_bucket)
        outside = 0.0
    plan = StepPlan(
        stage=zero,
        accumulation=micro_batches,
        forward=forward,
        backward=backward,
        units=units,
        grad_bytes=grad_bytes,
        weight_bytes=dense_gather_bytes,
        bucket_bytes=bucket,
        keep_full_grads=deferred,
        overlap_param_gather=fw.overlap_param_gather and overlapped,
        overlap_grad_reduce=overlapped,
        per_unit=fsdp,
        bucket_op=grad_reduce or fw.bucket_op,
        ranks=dp.ranks,
        sync_jitter=sync_jitter if per_wait_jitter(zero, last_stage) else 0.0,
        optimizer=optimizer,
    )

    priced: dict[tuple[str, float], Call] = {}

    def call(op: str, size: float) -> Call:
        key = (op, size)
        if key not in priced:
            group = dp if instances is None else dp_group_for(op, dp, instances.dense)
            best = priced_call(topology, group, op, size, overlap_slowdown)
            if instances is not None and op == "reduce_scatter":  # its shard then all-reduced across the instances
                shard = size / instances.dense.ranks
                across = priced_call(topology, instances.dense_across, "all_reduce", shard, overlap_slowdown)
                best = then_across(best, across, op)
            priced[key] = best
        return priced[key]

    timed = step_time(plan, call)
    sides = (
        _side_traffic(topology, groups["edp"] if instances is None else instances.experts,
                      "expert-DP gradients and parameters", experts, zero, micro_batches, forward, backward,
                      overlapped, grad_bytes, expert_gather_bytes, kept=False, noun="expert", kind="edp",
                      across=None if instances is None else instances.experts_across, grad_reduce=grad_reduce),
        _side_traffic(topology, dp if instances is None else instances.dense,
                      "embedding and output layer gradients and parameters", outside, zero, micro_batches, forward,
                      backward, overlapped, grad_bytes, weight_bytes, kept=True, noun="embedding and output layer",
                      kind="dp-cp", across=None if instances is None else instances.dense_across,
                      grad_reduce=grad_reduce, deferred=deferred),
    )  # fmt: skip
    return timed, tuple(side for side in sides if side.seconds > 0)


def _side_traffic(
    topology: TopologySpec,
    group: Placement,
    what: str,
    params: float,
    zero: int,
    micro_batches: int,
    forward: float,
    backward: float,
    overlapped: bool,
    grad_bytes: float,
    weight_bytes: float,
    kept: bool,
    noun: str = "",
    kind: str = "",
    across: Placement | None = None,
    grad_reduce: str | None = None,
    deferred: bool = False,
) -> SideTraffic:
    """`params` reduced and gathered over `group` (_data_parallel), hidden behind the micro-batch's backward and
    forward where `overlapped`. `kept`: at ZeRO 3, gathered once per step and kept (Megatron-FSDP's modules outside
    any unit), not for every pass. `noun` names what it moves in its calls' purposes; `kind` its group. `across`:
    the distributed optimizer's instances (ZeRO 1) or PyTorch FSDP's hybrid sharding's replicas (ZeRO 2-3), each
    reduce-scattered shard then all-reduced across them.
    `grad_reduce`: ZeRO-1's gradient collective where it is not the reduce-scatter (--grad-reduce). `deferred`:
    reduced once a step after the last backward, not hidden (_data_parallel), and gathered once behind the forward."""
    if params <= 0 or (group.ranks == 1 and (across is None or across.ranks == 1)):
        return SideTraffic(what, 0.0, 0.0)
    grads, weights = params * grad_bytes, params * weight_bytes
    hides_reduce, hides_gather = (backward, forward) if overlapped else (0.0, forward if deferred else 0.0)

    def listed_as(best: CollectiveTime, purpose: str, size: float, times: int) -> Traffic:
        one = ((Call(best.seconds, best.label), 1),)  # one call per occurrence
        return Traffic(best.op, f"{noun} {purpose}", size, times, times, best.seconds * times, one)

    m = micro_batches
    listed: tuple[Traffic, ...]
    if zero == 0:
        everything = fastest(topology, "all_reduce", group, grads)
        reduce = everything.seconds
        listed = (listed_as(everything, "gradients", grads, 1),)
        return SideTraffic(what, reduce, max(0.0, reduce - hides_reduce), kind, listed)
    scatter, gathered = (
        fastest(topology, grad_reduce if zero == 1 and grad_reduce else "reduce_scatter", group, grads),
        fastest(topology, "all_gather", group, weights),
    )
    reduce, gather = scatter.seconds, gathered.seconds
    replicated = None  # each reduce-scattered shard all-reduced across `across`, after it
    if across is not None and across.ranks > 1:
        replicated = fastest(topology, "all_reduce", across, grads / group.ranks)
        reduce += replicated.seconds

    def across_listed(times: int) -> tuple[tuple[Traffic, ...], tuple[Placement, ...]]:
        """The all-reduce across `across`, listed `times` a step, and every listed call's group (none without)."""
        if replicated is None or across is None:
            return (), ()
        purpose = "gradients across optimizer instances" if zero == 1 else "gradients across replicas"
        return (listed_as(replicated, purpose, grads / group.ranks, times),), (group, group, across)

    if zero == 1 or deferred:  # once per step
        extra, placed = across_listed(1)
        listed = (listed_as(scatter, "gradients", grads, 1), listed_as(gathered, "parameters", weights, 1), *extra)
        exposed = max(0.0, reduce - hides_reduce) + max(0.0, gather - hides_gather)
        return SideTraffic(what, reduce + gather, exposed, kind, listed, placed)
    extra, placed = across_listed(m)
    if zero == 2 or kept:  # reduced every micro-batch, gathered once per step
        exposed = m * max(0.0, reduce - hides_reduce) + max(0.0, gather - hides_gather)
        listed = (listed_as(scatter, "gradients", grads, m), listed_as(gathered, "parameters", weights, 1), *extra)
        return SideTraffic(what, m * reduce + gather, exposed, kind, listed, placed)
    # ZeRO 3: gathered for every forward and again for every backward, reduced after every backward
    exposed = m * (max(0.0, gather - hides_gather) + max(0.0, gather + reduce - hides_reduce))
    listed = (
        listed_as(gathered, "parameters (forward and backward)", weights, 2 * m),
        listed_as(scatter, "gradients", grads, m),
        *extra,
    )
    return SideTraffic(what, m * (2 * gather + reduce), exposed, kind, listed, placed)
