"""The model-parallel dimensions of a training step: what TP, CP, PP and EP send, and the pipeline's bubble.

The calls are data: each `LayoutCall` names its dimension, purpose, op, one call's bytes (nccl-tests' size), the
group it runs on and how many times one GPU runs it per micro-batch; `exposed_per_micro_batch` runs them. The DP
dimension keeps its own schedule (step.py), run on the DP group with the stage's shard.

Per micro-batch of b sequences of s tokens, hidden h, activations in `act_bytes`, on the most loaded pipeline
stage (L / PP layers); with CP each rank holds s / CP tokens:
- TP (Megatron-LM, Shoeybi et al. 2019 section 3; Narayanan et al. 2021 section 3.3): each layer all-reduces its
  b x s x h output twice in the forward (after attention and after the MLP) and twice in the backward. With
  sequence parallelism (Korthikanti et al. 2022 section 4.2.2) each all-reduce becomes an all-gather and a
  reduce-scatter of the same tensor: 4 + 4 per layer, the same bytes. Full recomputation runs the forward's
  calls again. They sit on the critical path unless overlapped (`--tp-comm-overlap`, Transformer Engine's
  userbuffers), which this model then hides behind the layer's matmuls.
- CP (Megatron-Core's ring attention, "p2p"; Liu et al. 2023): each layer passes its K and V chunk
  (2 x b x s/CP x kv_heads x head_dim) around the ring, CP - 1 send/recv steps forward and twice the bytes
  backward (K, V and their gradients), overlapped with the attention blocks they feed. Llama 3's "all_gather"
  (arXiv 2407.21783 section 3.3.2) all-gathers K and V forward and reduce-scatters their gradients backward.
- PP (Narayanan et al. 2021 section 4.1): one send/recv of the stage's b x s/CP x h output forward and of its
  gradient backward per micro-batch and stage boundary, each TP rank sending 1 / TP of it (the scatter/gather
  optimisation; sequence parallelism already splits it so). The interleaved schedule overlaps them with the next
  model chunk's compute (pp_overlapped); the non-interleaved 1F1B waits for each. Waited-for sends are batched,
  and run on the whole PP group's communicator (pp_send_communicator).
- EP (Megatron-Core's all-to-all token dispatcher; Lepikhin et al. 2020): each MoE layer dispatches its tokens' top-k
  copies (b x s/CP x top-k x h) and combines them back, forward and again backward: 4 all-to-alls per MoE layer.
- The bubble: a 1F1B pipeline of p stages and m micro-batches idles (p - 1) micro-batch slots, (p - 1) / v with
  v interleaved chunks per stage (Narayanan et al. 2021 section 2.2: bubble fraction (p - 1) / (v m)), so the
  step is (m + (p - 1) / v) x (t_f + t_b).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from dpcost.engine.activations import ACT_BYTES, ring_key_value_width
from dpcost.engine.layout import Layout
from dpcost.engine.memo import per_object
from dpcost.engine.params import mtp_layer
from dpcost.engine.pipeline_layout import parse_pipeline_layout, ranks_of_stages
from dpcost.frozen import frozen
from dpcost.specs import ModelArchitecture

if TYPE_CHECKING:
    from dpcost.options import EpDispatcher

__all__ = [
    "LayoutCall",
    "PipelineSplit",
    "StageKinds",
    "bubble_seconds",
    "checkpointed_rank_layers",
    "cp_all_to_alls",
    "cp_calls",
    "ep_calls",
    "exposed_per_micro_batch",
    "layout_calls",
    "mamba_layout_refusal",
    "moe_layers_per_stage",
    "pp_calls",
    "pp_overlapped",
    "pp_send_communicator",
    "rank_layer_counts",
    "rank_layers",
    "recomputed_calls",
    "slowed_compute",
    "stage_kinds",
    "stage_layer_counts",
    "stage_tp_pairs",
    "torch_tp_gather_bytes",
    "tp_calls",
    "tp_pairs_of",
    "virtual_stage_layer_counts",
    "virtual_stage_layers",
]


# TransformerEngine's userbuffers defaults (transformer_engine/pytorch/module/base.py:303-311 for each GEMM's method,
# 333-347 for their settings, @v2.9; docs/sources/te-userbuffers.md): the SMs each method's communication kernel holds
TE_RING_EXCHANGE_SMS = 1  # peer-to-peer steps on the copy engine
TE_KERNEL_SMS = 16  # pipeline and bulk


@frozen
class LayoutCall:
    dimension: str  # tp, cp, pp, ep
    purpose: str
    op: str  # all_reduce, all_gather, reduce_scatter, send_recv, all_to_all
    message_bytes: float  # one call, as nccl-tests counts its size
    group: str  # the group kind it runs on (layout.group_members)
    per_micro_batch: int  # calls one GPU runs per micro-batch
    overlapped: bool = False  # runs alongside compute, exposed only beyond `hides_behind`
    hides_behind: float = 0.0  # the fraction of the micro-batch's compute these calls can hide behind
    network_share: float = 1.0  # an all-to-all's bytes that cross the network (p2p.all_to_all)
    routed: tuple[int, int] | None = None  # (top-k, experts): sent once per NVLink domain reached (p2p.all_to_all)
    kernel_sms: float = 0.0  # SMs its communication kernel holds when not NCCL's (TE userbuffers); 0: NCCL's channels
    comm_group: str = ""  # a send/recv's communicator where not its pair's own: the group kind (pp_send_communicator)


def stage_layer_counts(
    layers: int, pp: int, first_stage_layers: int | None = None, last_stage_layers: int | None = None
) -> list[int]:
    """Layers per pipeline stage. Given the first or last stage's (Megatron's --decoder-first-pipeline-num-layers,
    --decoder-last-pipeline-num-layers), the other stages split the rest evenly (megatron/core/transformer/
    transformer_block.py get_num_layers_to_build). Otherwise Megatron needs L divisible by PP unless those flags
    take the remainder off the end stages, which also hold the embedding and the output head (Llama 3 405B: 126
    layers on 16 stages as 7 + 14 x 8 + 7, arXiv 2407.21783 section 3.3.2): the middle stages take ceil(L / PP),
    the first and last share the deficit, the first one layer more. Where the end stages cannot absorb it, the split
    is as even as it goes, the first stages one layer more."""
    if first_stage_layers is not None or last_stage_layers is not None:
        return _given_stage_layer_counts(layers, pp, first_stage_layers, last_stage_layers)
    per = -(-layers // pp)
    deficit = per * pp - layers
    if pp == 1 or deficit == 0:
        return [layers // pp] * pp
    first, last = per - deficit // 2, per - (deficit - deficit // 2)
    if pp >= 2 and first >= 1 and last >= 1:
        return [first] + [per] * (pp - 2) + [last]
    base, extra = divmod(layers, pp)
    if base == 0:
        raise ValueError(f"{pp} pipeline stages need at least one layer each")
    return [base + (1 if s < extra else 0) for s in range(pp)]


def virtual_stage_layer_counts(layers: int, pp: int, virtual_stages: int) -> list[int]:
    """Layers per virtual stage of an interleaved pipeline, PP x V of them, rank r holding stages r, r + PP, ...
    (Megatron-Core's pipeline_model_parallel_layout: virtual stage i on rank i mod PP). Even where PP x V divides
    the layers; else the layout that shortens the end stages, as stage_layer_counts does for PP alone (Llama 3 405B
    at PP 16, V 2: 3 + 30 x 4 + 3, so ranks hold 7, 8, ..., 8, 7)."""
    return stage_layer_counts(layers, pp * virtual_stages)


StageLayers = tuple[tuple[int, ...], ...]  # per pipeline rank, the indices of the decoder layers it builds


class PipelineSplit(NamedTuple):
    """How a model's decoder layers split over the pipeline, as Megatron-Core's flags give it: `layers` over `pp`
    ranks of `virtual_stages` model chunks each (--num-virtual-stages-per-pipeline-rank), the end stages' layers where
    given (--decoder-first/last-pipeline-num-layers), or a whole --pipeline-model-parallel-layout. A tuple: the key
    of the caches below, hashed and compared at C speed on every layout a search costs."""

    layers: int
    pp: int
    virtual_stages: int = 1
    first_stage_layers: int | None = None
    last_stage_layers: int | None = None
    pipeline_layout: str | None = None


@functools.lru_cache(maxsize=1024)
def virtual_stage_layers(split: PipelineSplit) -> tuple[int, ...]:
    """Decoder layers per virtual stage, PP x V of them (virtual stage k on rank k mod PP), as Megatron-Core builds
    them (get_num_layers_to_build): the given layout's (pipeline_layout.py); with the first or last stage's given,
    each rank's share split evenly over its V chunks, refused where it does not split; else
    virtual_stage_layer_counts (stage_layer_counts without interleaving)."""
    pp, chunks = split.pp, split.virtual_stages
    if split.pipeline_layout is not None:
        return tuple(parse_pipeline_layout(split.pipeline_layout).decoder_layers())
    if split.first_stage_layers is None and split.last_stage_layers is None:
        return tuple(virtual_stage_layer_counts(split.layers, pp, chunks))
    per_rank = _given_stage_layer_counts(split.layers, pp, split.first_stage_layers, split.last_stage_layers)
    if any(n % chunks for n in per_rank):
        raise ValueError(f"the ranks' {per_rank} layers do not split into {chunks} chunks each, as Megatron "
                         "asserts (get_num_layers_to_build)")  # fmt: skip
    return tuple(per_rank[k % pp] // chunks for k in range(pp * chunks))


@functools.lru_cache(maxsize=1024)
def checkpointed_rank_layers(split: PipelineSplit, block: int | None = None) -> StageLayers:
    """Per pipeline rank, the decoder layers full recomputation checkpoints, of those rank_layers builds: under
    Megatron's --recompute-method block --recompute-num-layers N the first N of each model chunk
    (megatron/core/recompute.py at d98e8a64dd: layer l of a chunk's TransformerBlock while l < recompute_num_layers),
    else every one."""
    chunks: list[list[int]] = [[] for _ in range(split.pp)]
    start = 0
    for k, count in enumerate(virtual_stage_layers(split)):
        kept = count if block is None else min(block, count)
        chunks[k % split.pp].extend(range(start, start + kept))
        start += count
    return tuple(tuple(layers) for layers in chunks)


@functools.lru_cache(maxsize=1024)
def rank_layers(split: PipelineSplit) -> StageLayers:
    """The decoder layers each pipeline rank builds, as Megatron-Core numbers them (get_layer_id_list): those of its
    virtual stages r, r + PP, ... (virtual_stage_layers), in layer order."""
    return ranks_of_stages(virtual_stage_layers(split), split.pp)


def rank_layer_counts(split: PipelineSplit) -> list[int]:
    """Layers each pipeline rank builds (rank_layers)."""
    return [len(built) for built in rank_layers(split)]


def _given_stage_layer_counts(layers: int, pp: int, first: int | None, last: int | None) -> list[int]:
    """Megatron's split with the first and/or last stage's layers given: the rest over the other stages, evenly
    (arguments.py validate_args asserts the remainder divides)."""
    if pp < 2:
        raise ValueError("an uneven first or last stage (--first-stage-layers, --last-stage-layers) needs PP > 1")
    rest, left = layers, pp
    for given in (first, last):
        if given is not None:
            rest, left = rest - given, left - 1
    if rest < 0:
        raise ValueError(f"the first and last stages' {layers - rest} layers are more than the {layers} there are")
    if (left > 0 and rest % left) or (left == 0 and rest):
        stages = "stage" if left == 1 else "stages"
        raise ValueError(f"the layers left for the middle stages ({rest}) do not split over {left} {stages}")
    counts = [rest // left if left else 0] * pp
    if first is not None:
        counts[0] = first
    if last is not None:
        counts[-1] = last
    return counts


StageKinds = tuple[tuple[bool, ...], ...]  # per pipeline stage, whether each layer it runs has the MoE MLP


def stage_kinds(arch: ModelArchitecture, stage_layers: StageLayers, mtp_layers: int = 0) -> StageKinds:
    """The layers each pipeline stage runs (rank_layers), in order, as MoE or dense; the MTP layers at the end of
    the last stage, where Megatron-Core builds them (multi_token_prediction.py mtp_on_this_rank; a layout that puts
    them elsewhere is refused), each of params.mtp_layer's kind."""
    key = (stage_layers, mtp_layers)
    known = _stage_kinds_of(arch)
    if key not in known:
        out = [tuple(arch.moe_layer(i) for i in built) for built in stage_layers]
        if mtp_layers:
            out[-1] += (mtp_layer(arch).moe,) * mtp_layers
        known[key] = tuple(out)
    return known[key]


@per_object
def _stage_kinds_of(arch: ModelArchitecture) -> dict[tuple[object, ...], StageKinds]:
    """stage_kinds by stage split and MTP layers (memo.py): every plan of a search with the same pipeline asks."""
    return {}


def _kinds(arch: ModelArchitecture, pp: int, stages: StageKinds | None) -> StageKinds:
    return stages if stages is not None else stage_kinds(arch, rank_layers(PipelineSplit(arch.layers, pp)))


def moe_layers_per_stage(arch: ModelArchitecture, pp: int, stages: StageKinds | None = None) -> int:
    """MoE layers on the stage that holds the most of them, layers assigned to stages in order."""
    return max(sum(kinds) for kinds in _kinds(arch, pp, stages))


def mamba_layout_refusal(arch: ModelArchitecture, tp: int, cp: int) -> tuple[str, str] | None:
    """(flag, why) where a layout of a model with Mamba layers is not costed, None where it is: CP, whose six
    all-to-alls each way per Mamba layer are not priced (docs/sources/mamba-hybrid-layouts.md section 2), and a TP
    that splits a head or a group, which Megatron-Core's mixer asserts against (mamba_mixer.py; section 1)."""
    m = arch.ssm
    if m is None or "mamba" not in arch.mixers:
        return None
    if cp > 1:
        return "cp", "its Mamba layers' context-parallel all-to-alls are not costed: give 1"
    heads = m.heads or 0
    if heads % tp or m.groups % tp:
        return "tp", (
            f"{tp} does not divide its Mamba heads ({heads}) and groups ({m.groups}), as Megatron-Core's mixer "
            f"needs: give a divisor of {math.gcd(heads, m.groups)}"
        )
    return None


def layer_tp_pairs(arch: ModelArchitecture, i: int) -> int:
    """Column- then row-parallel pairs layer i (from 0) runs on the TP group (tp_pairs_of its mixer and MLP)."""
    return tp_pairs_of(arch, arch.mixer(i), arch.has_mlp(i), arch.moe_layer(i))


def tp_pairs_of(arch: ModelArchitecture, mixer: str, mlp: bool, moe: bool) -> int:
    """Column- then row-parallel pairs a layer of this kind runs on the TP group: its mixer's (attention's QKV and
    output projections, a Mamba mixer's in and out projections, none without a mixer) and its MLP's
    (mlp_tp_pair). Megatron-Core's Mamba, attention and MLP layers each issue one pair
    (docs/sources/mamba-hybrid-layouts.md section 2)."""
    return (mixer != "none") + (mlp and mlp_tp_pair(arch, moe))


def mlp_tp_pair(arch: ModelArchitecture, moe: bool) -> bool:
    """Whether a layer's MLP issues a column- then row-parallel pair on the TP group: a dense MLP does, and so do an
    MoE MLP's shared experts (Megatron-Core's SharedExpertMLP is an MLP on the TP group, moe/shared_experts.py at
    d98e8a64dd: its own gather and reduce-scatter under sequence parallelism; --moe-shared-expert-overlap, not
    priced, issues them itself on a side stream beside the dispatcher's, keeping the gathered input for the
    backward: one gather fewer); the routed experts leave TP to the token dispatcher (ep_calls)."""
    return not moe or (arch.moe is not None and arch.moe.shared > 0)


def stage_tp_pairs(arch: ModelArchitecture, stage_layers: StageLayers, mtp_layers: int = 0) -> int:
    """layer_tp_pairs summed over the first of the stages with the most layers (rank_layers; MTP modules' layers,
    attention and an MLP, at the end of the last), the stage tp_calls prices."""
    last = len(stage_layers) - 1
    sizes = [len(built) + (mtp_layers if s == last else 0) for s, built in enumerate(stage_layers)]
    s = sizes.index(max(sizes))
    pairs = sum(layer_tp_pairs(arch, i) for i in stage_layers[s])
    if s == last and mtp_layers:
        pairs += mtp_layers * (1 + mlp_tp_pair(arch, mtp_layer(arch).moe))
    return pairs


def recomputed_calls(
    arch: ModelArchitecture, stage_layers: StageLayers, checkpointed: StageLayers, mtp_layers: int = 0
) -> tuple[int, int, int]:
    """On the stages tp_calls, ep_calls and cp_calls price (the first with the most layers, with the most MoE
    layers, with the most layers, MTP modules counted), the TP pairs, MoE layers and layers whose forward full
    recomputation re-runs: its `checkpointed` decoder layers (checkpointed_rank_layers); MTP modules skip the block
    method (multi_token_prediction.py: "not supported for MTP yet")."""
    last = len(stage_layers) - 1
    sizes = [len(built) + (mtp_layers if s == last else 0) for s, built in enumerate(stage_layers)]
    widest = sizes.index(max(sizes))
    moe = [sum(arch.moe_layer(i) for i in built) + (mtp_layers * mtp_layer(arch).moe if s == last else 0)
           for s, built in enumerate(stage_layers)]  # fmt: skip
    most_moe = moe.index(max(moe))
    pairs = sum(layer_tp_pairs(arch, i) for i in checkpointed[widest])
    return pairs, sum(arch.moe_layer(i) for i in checkpointed[most_moe]), len(checkpointed[widest])


def torch_tp_gather_bytes(compute_dtype: str, fp8_recipe: str) -> float:
    """Bytes an element of torch TP's sequence-parallel gathers takes: one under torchao's float8 linears with
    tensorwise scaling, whose Float8ColwiseParallel, Float8RowwiseParallel and PrepareFloat8ModuleInput cast to FP8
    before the forward's gathers, and the output gradient (e5m2) before the backward's (torchao/float8/
    float8_tensor_parallel.py; torchtitan's parallelize applies them under tensorwise scaling alone); else 16 bits.
    The reduce-scatters stay in 16 bits."""
    return 1.0 if compute_dtype == "fp8" and fp8_recipe == "tensorwise" else ACT_BYTES


def tp_calls(
    arch: ModelArchitecture,
    layout: Layout,
    micro_batch: int,
    seq_len: int,
    act_bytes: float,
    sequence_parallel: bool,
    recompute_full: bool,
    overlap: bool,
    attention_share: float,
    backward_async: bool = True,
    pairs: int | None = None,
    recomputed_pairs: int | None = None,
    torch_tp: bool = False,
    gather_bytes: float | None = None,
    blocks_stopping_early: int = 0,
    gathers_recomputed: bool = False,
) -> list[LayoutCall]:
    """Megatron's tensor-parallel collectives per micro-batch on the most loaded stage; when overlapped they hide
    behind the matmuls, the compute that is not attention.

    Per dense layer (megatron/core/tensor_parallel/mappings.py, layers.py): without sequence parallelism 2
    all-reduces of b x s x h forward (after attention, after the MLP) and 2 backward (the column-parallel inputs'
    gradients); with it, forward 2 all-gathers and 2 reduce-scatters, backward the mirror 2 + 2 and the
    column-parallel inputs gathered again for the weight gradients (layers.py: all_gather_buffer in the
    backward): 6 gathers and 4 reduce-scatters. Backward, per pair (Transformer Engine at 2.20.0.dev0, d0067d0da):
    the row-parallel layer's output gradient is gathered before its data-gradient GEMM and waited for
    (base.py grad_output_preprocess; Megatron's own mappings.py _gather_along_first_dim alike); the
    column-parallel layer's input is gathered again behind its data-gradient GEMM (linear.py: issued before it,
    waited after it); the input gradient's reduction runs behind the weight-gradient GEMM (async_op=True). The
    forward's sit on the critical path; under --tp-comm-overlap userbuffers overlap every one with the matmuls.
    `backward_async` False: the input gradient's reduction waits, as in Megatron-LM before its asynchronous
    all-reduce (16c90445, 2021-09: --no-async-tensor-model-parallel-allreduce) and under Megatron's
    --delay-wgrad-compute, whose weight-gradient GEMMs run later (linear.py: wgrad_store.put, then the wait).
    A MoE layer's routed experts leave TP to the token dispatcher (ep_calls): its attention's pair counts, and its
    shared experts' (mlp_tp_pair). Full
    recomputation runs the forward's calls again. `pairs`: the stage's column- and row-parallel pairs
    (stage_tp_pairs; default the even split's); `recomputed_pairs` those of them full recomputation re-runs where
    not all (--recompute-block).

    `torch_tp`: TP as torch's DTensor plans run it (torchtitan's parallelize, ColwiseParallel and RowwiseParallel
    with SequenceParallel norms). Each backward call is the autograd mirror of a forward one (torch 2.14.1
    distributed/tensor/_redistribute.py, Redistribute.backward), and autograd keeps the gathered input for the
    weight gradient: nothing is gathered again. (The input gradient's reduction, issued after the linear's backward
    has run both its GEMMs, waits: prepare.py sets `backward_async` False for it.) `gather_bytes`: an element of
    its gathers (torch_tp_gather_bytes; default `act_bytes`). `blocks_stopping_early`: recomputed blocks whose
    recomputation stops at the last tensor the backward needs (torch.compile's partitioner; torch.utils.checkpoint's
    early_stop, off in torchtitan since 25413d224), so that the block's last reduce-scatter, whose output only the
    residual add reads, does not run again (its copy, ops.sequence_parallel_copies, is still counted).
    `gathers_recomputed`: torchtitan's per-op SAC, which saves the reduce-scatters' outputs but not the gathers'
    (_op_sac_save_list), so each backward gathers the column-parallel inputs again before their GEMMs re-run."""
    if layout.tp == 1:
        return []
    halves = stage_tp_pairs(arch, rank_layers(PipelineSplit(arch.layers, layout.pp))) if pairs is None else pairs
    tensor = micro_batch * (seq_len / layout.cp) * arch.hidden * act_bytes
    again = (halves if recompute_full else 0) if recomputed_pairs is None else recomputed_pairs
    share = 1.0 - attention_share if overlap else 0.0
    # A backward call run asynchronously hides behind one GEMM of each linear layer's backward (the weight
    # gradient's, or the data gradient's): a third of the matmuls' forward-and-backward work.
    beside_gemm = max(share, (1.0 - attention_share) / 3)
    behind = beside_gemm if backward_async else share
    waits = not backward_async and not overlap
    if sequence_parallel and torch_tp:
        gathered = tensor * (act_bytes if gather_bytes is None else gather_bytes) / act_bytes
        gathers_again = again or (halves if gathers_recomputed else 0)
        return [
            LayoutCall("tp", "sequence-parallel gathers, forward", "all_gather", gathered, "tp", halves + gathers_again,
                       overlap, share),
            LayoutCall("tp", "sequence-parallel reductions, forward", "reduce_scatter", tensor, "tp",
                       halves + again - blocks_stopping_early, overlap, share),
            LayoutCall("tp", "output gradients gathered, backward", "all_gather", gathered, "tp", halves, overlap,
                       share),
            LayoutCall("tp", "input gradients reduced, backward", "reduce_scatter", tensor, "tp", halves, not waits,
                       behind),
        ]  # fmt: skip
    if sequence_parallel:
        # Under --tp-comm-overlap TransformerEngine's userbuffers run them, each method's kernel on its own SMs:
        # forward gathers ring_exchange, forward reductions pipeline; backward, the output gradient's gather (proj's
        # and fc2's dgrad) ring_exchange, the input's gather and the reductions bulk
        sms = (TE_RING_EXCHANGE_SMS, TE_KERNEL_SMS, TE_RING_EXCHANGE_SMS, TE_KERNEL_SMS, TE_KERNEL_SMS)
        ag_fwd, rs_fwd, ag_grad, ag_input, rs_bwd = sms if overlap else (0.0, 0.0, 0.0, 0.0, 0.0)
        return [
            LayoutCall("tp", "sequence-parallel gathers, forward", "all_gather", tensor, "tp", halves + again,
                       overlap, share, kernel_sms=ag_fwd),
            LayoutCall("tp", "sequence-parallel reductions, forward", "reduce_scatter", tensor, "tp",
                       halves + again, overlap, share, kernel_sms=rs_fwd),
            LayoutCall("tp", "output gradients gathered, backward", "all_gather", tensor, "tp", halves, overlap, share,
                       kernel_sms=ag_grad),
            LayoutCall("tp", "inputs gathered again for the weight gradients, backward", "all_gather", tensor, "tp",
                       halves, True, beside_gemm, kernel_sms=ag_input),
            LayoutCall("tp", "reductions, backward", "reduce_scatter", tensor, "tp", halves, not waits, behind,
                       kernel_sms=rs_bwd),
        ]  # fmt: skip
    return [
        LayoutCall("tp", "layer outputs, forward", "all_reduce", tensor, "tp", halves + again, overlap, share),
        LayoutCall("tp", "input gradients, backward", "all_reduce", tensor, "tp", halves, not waits, behind),
    ]


def cp_calls(
    arch: ModelArchitecture,
    layout: Layout,
    micro_batch: int,
    seq_len: int,
    act_bytes: float,
    impl: str,
    attention_share: float,
    stages: StageKinds | None = None,
    attention_recomputed: bool = False,
    recomputed_layers: int | None = None,
    repeated_kv: bool = False,
) -> list[LayoutCall]:
    """Context parallelism's K/V exchange per micro-batch on the most loaded stage (module docstring), hidden
    behind the attention it feeds. K and V as attention holds them per TP rank: its KV heads' keys and values, or
    with MLA every head's key (nope + rope) and value (TransformerEngine's context_parallel.py concatenates them).
    `attention_recomputed`: each layer's core attention runs its forward again in the backward, its exchange with it
    (full recomputation, or selective with core_attn: Megatron-Core's attention.py checkpoint_core_attention reruns
    Transformer Engine's attention, CP's calls included). `impl` a2a: the heads' all-to-alls instead
    (cp_all_to_alls); torch: torch's context_parallel with the allgather rotater, as torchtitan runs it (torch
    2.14.1 _context_parallel/_attention.py: each forward all-gathers K and V once, each backward again, and passes
    the K and V gradients to the next rank in fp32 at every one of its CP steps, _AllToAllRotater's
    permute_tensor), its K and V copied out to every query head where the model repeats them before SDPA
    (`repeated_kv`). `recomputed_layers`: those whose attention reruns where not all (--recompute-block)."""
    if layout.cp == 1:
        return []
    layers = max(len(kinds) for kinds in _kinds(arch, layout.pp, stages))
    again = (layers if attention_recomputed else 0) if recomputed_layers is None else recomputed_layers
    if impl == "a2a":
        return cp_all_to_alls(arch, layout, micro_batch, seq_len, act_bytes, layers + again, layers)
    if arch.mla is not None:
        m = arch.mla
        per_token = arch.heads / layout.tp * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim)
    else:
        per_token = ring_key_value_width(arch, layout.tp, impl == "torch" and repeated_kv)
    chunk = micro_batch * (seq_len / layout.cp) * per_token * act_bytes
    if impl == "torch":
        whole = chunk * layout.cp
        return [
            LayoutCall("cp", "K and V gathered", "all_gather", whole, "cp", layers + again, True, attention_share),
            LayoutCall(
                "cp", "K and V gathered again, backward", "all_gather", whole, "cp", layers, True, attention_share
            ),
            LayoutCall(
                "cp",
                "K and V gradients round the ring in fp32, backward",
                "send_recv",
                chunk * 4 / act_bytes,
                "cp-ring",
                layout.cp * layers,
                True,
                attention_share,
            ),
        ]
    if impl == "all_gather":
        return [
            LayoutCall(
                "cp",
                "K and V gathered",
                "all_gather",
                chunk * layout.cp,
                "cp",
                layers + again,
                True,
                attention_share,
            ),
            LayoutCall(
                "cp",
                "K and V gradients reduced",
                "reduce_scatter",
                chunk * layout.cp,
                "cp",
                layers,
                True,
                attention_share,
            ),
        ]
    steps = layout.cp - 1
    return [
        LayoutCall(
            "cp",
            "ring attention K/V, forward",
            "send_recv",
            chunk,
            "cp-ring",
            steps * (layers + again),
            True,
            attention_share,
        ),
        LayoutCall(
            "cp",
            "ring K/V and gradients, backward",
            "send_recv",
            2 * chunk,
            "cp-ring",
            steps * layers,
            True,
            attention_share,
        ),
    ]


def pp_overlapped(virtual_stages: int, given: bool | None = None) -> bool:
    """Whether the pipeline's send/recv overlap compute: Megatron-LM's overlap_p2p_comm, on unless
    --no-overlap-p2p-communication, and forced off without a virtual pipeline, which does not support it
    (megatron/training/arguments.py, validate_args and _add_distributed_args)."""
    if given and virtual_stages == 1:
        raise ValueError(
            "--pp-comm-overlap: Megatron overlaps the pipeline's send/recv only in the interleaved schedule "
            "(--virtual-stages above 1)"
        )
    return virtual_stages > 1 if given is None else given


def pp_send_communicator(overlap: bool, given: str | None = None) -> str:
    """The communicator the pipeline's send/recv run on: "group", the whole PP group's, or "pair", a 2-rank one per
    neighbouring pair. Megatron batches the sends it waits for (batch_p2p_comm = not overlap_p2p_comm,
    megatron/training/arguments.py) through torch.distributed.batch_isend_irecv, which PyTorch runs on the process
    group's own communicator since 1.12 (PR #74701); an overlapped send is a lone isend/irecv, which gets a 2-rank
    communicator (ProcessGroupNCCL's "low:high" key; docs/sources/pipeline-p2p.md)."""
    return given if given is not None else ("pair" if overlap else "group")


def pp_calls(
    arch: ModelArchitecture,
    layout: Layout,
    micro_batch: int,
    seq_len: int,
    act_bytes: float,
    sequence_parallel: bool = False,
    virtual_stages: int = 1,
    overlap: bool = False,
    scatter_gather: bool = False,
    send_comm: str = "pair",
) -> list[LayoutCall]:
    """The stage boundary's activation forward and gradient backward per micro-batch: s / CP x b x h, split over
    TP only with sequence parallelism (megatron/core/pipeline_parallel/schedules.py get_tensor_shapes); with v
    model chunks per rank a micro-batch crosses v boundaries each way. Overlapped (the interleaved schedule's
    overlap_p2p_comm: each send/recv is posted before the next chunk's forward or backward and waited on after it,
    schedules.py forward_backward_pipelining_with_interleaving), they hide behind the micro-batch's compute.

    `scatter_gather`: Megatron-LM before its pipeline moved into Megatron-Core (3c92fa93, 2023-03) split a tensor
    that sequence parallelism had not split into TP equal chunks, sent each rank's chunk, and all-gathered them
    over TP after the receive, on by default (megatron/p2p_communication.py _communicate at a8d172b3 and 285068c8:
    split_tensor_into_1d_equal_chunks, gather_split_1d_tensor; Narayanan et al. 2021 section 4.1).

    `send_comm` "group": the sends run on the whole PP group's communicator (pp_send_communicator)."""
    if layout.pp == 1:
        return []
    tensor = micro_batch * (seq_len / layout.cp) * arch.hidden * act_bytes
    hides = 1.0 if overlap else 0.0
    split = sequence_parallel or scatter_gather  # each TP rank sends only its 1/TP of the tensor
    sent = tensor / layout.tp if split else tensor
    comm = "pp-group" if send_comm == "group" else ""
    calls = [
        LayoutCall(
            "pp", "activations and their gradients", "send_recv", sent, "pp", 2 * virtual_stages, overlap, hides,
            comm_group=comm,
        )
    ]  # fmt: skip
    if scatter_gather and not sequence_parallel and layout.tp > 1:  # the chunks gathered back over TP
        calls.append(
            LayoutCall("pp", "received chunks gathered over TP", "all_gather", tensor, "tp", 2 * virtual_stages)
        )
    return calls


def ep_calls(
    arch: ModelArchitecture,
    layout: Layout,
    micro_batch: int,
    seq_len: int,
    act_bytes: float,
    sequence_parallel: bool,
    overlap: bool = False,
    stages: StageKinds | None = None,
    node_limit: int | None = None,
    recomputed: bool = False,
    dispatcher: str = "alltoall",
    recomputed_layers: int | None = None,
) -> list[LayoutCall]:
    """The MoE token dispatch and combine per micro-batch on the stage with the most MoE layers (Megatron-Core's
    all-to-all dispatcher, token_dispatcher.py): per MoE layer an all-to-all of its tokens' top-k copies forward,
    one back, and both again backward; with expert TP above 1 the dispatched tokens are also all-gathered over
    expert TP before the experts and reduce-scattered after them, forward and backward. `recomputed`: the MoE layer
    runs its forward again in the backward (full recomputation, or recompute_modules "moe", which checkpoints
    moe_layer.py's whole route-dispatch-compute-combine), and its forward calls with it. Overlapped, they hide
    behind another micro-batch's whole forward and backward (DeepSeek-V3's DualPipe, arXiv 2412.19437
    section 3.2.1; Megatron-Core's combined 1F1B, whose unpaired first forward and last backward
    unpaired_ep_seconds prices). `node_limit` M: each token goes to at most M nodes, once over the network to each,
    and is forwarded over NVLink to its experts there (DeepSeek-V3's node-limited routing, M = 4, with DeepEP: sections
    2.1.2 and 3.2.2), so at most M of its top-k copies cross the network. `dispatcher` "flex" (DeepEP, HybridEP)
    without a limit: once to each NVLink domain its experts are in (p2p.all_to_all `routed`). "allgather"
    (MoEAllGatherTokenDispatcher, Megatron's default): each GPU's tokens, once each, gathered over the expert TP x
    EP group (tp_ep_group) before the experts and the outputs reduce-scattered back after them, with the routing
    map (a byte per expert a token) and the probabilities gathered beside them in each forward; backward, each
    call's gradient is the other call (gather_from_sequence_parallel_region's backward is the reduce-scatter), the
    routing map's none. The probabilities and the combine at the activations' bytes: Megatron's default router
    dtype (--moe-router-dtype fp32 would make both 4 bytes). `recomputed_layers`: the MoE layers whose forward runs
    again where not all (--recompute-block)."""
    if (layout.ep == 1 and layout.expert_tp == 1) or arch.moe is None:
        return []
    tokens = micro_batch * seq_len / layout.cp / (layout.tp if sequence_parallel else 1)
    layers = moe_layers_per_stage(arch, layout.pp, stages)
    hides = 1.0 if overlap else 0.0
    again = (layers if recomputed else 0) if recomputed_layers is None else recomputed_layers
    runs = 2 * layers + again  # forward, backward, and the forward again
    if dispatcher == "allgather":
        group_tokens = tokens * layout.expert_tp * layout.ep
        gathered = group_tokens * arch.moe.expert_io(arch.hidden) * act_bytes
        routing = group_tokens * arch.moe.experts  # the routing map, a bool per expert
        return [
            LayoutCall("ep", "tokens gathered over expert TP x EP", "all_gather", gathered, "etp-ep", runs,
                       overlap, hides),
            LayoutCall("ep", "expert outputs reduce-scattered over expert TP x EP", "reduce_scatter", gathered,
                       "etp-ep", runs, overlap, hides),
            LayoutCall("ep", "routing map gathered", "all_gather", routing, "etp-ep", layers + again, overlap,
                       hides),
            LayoutCall("ep", "routing probabilities gathered (reduce-scattered backward)", "all_gather",
                       routing * act_bytes, "etp-ep", layers + again, overlap, hides),
            LayoutCall("ep", "routing probabilities' gradients reduce-scattered", "reduce_scatter", routing * act_bytes,
                       "etp-ep", layers, overlap, hides),
        ]  # fmt: skip
    message = tokens * arch.moe.active * arch.moe.expert_io(arch.hidden) * act_bytes  # latent-wide under LatentMoE
    calls = []
    if layout.ep > 1:
        share = min(1.0, node_limit / arch.moe.active) if node_limit else 1.0
        routed = (arch.moe.active, arch.moe.experts) if dispatcher == "flex" and not node_limit else None
        calls.append(
            LayoutCall(
                "ep", "token dispatch and combine", "all_to_all", message, "ep", 2 * runs, overlap, hides,
                share, routed,
            )
        )  # fmt: skip
    if layout.expert_tp > 1:
        gathered = message * layout.expert_tp
        calls += [
            LayoutCall(
                "ep",
                "dispatched tokens gathered over expert TP",
                "all_gather",
                gathered,
                "etp",
                runs,
                overlap,
                hides,
            ),
            LayoutCall(
                "ep",
                "expert outputs reduce-scattered",
                "reduce_scatter",
                gathered,
                "etp",
                runs,
                overlap,
                hides,
            ),
        ]
    return calls


def layout_calls(
    arch: ModelArchitecture,
    layout: Layout,
    micro_batch: int,
    seq_len: int,
    act_bytes: float,
    *,
    sequence_parallel: bool = False,
    recompute_full: bool = False,
    tp_overlap: bool = False,
    ep_overlap: bool = False,
    pp_overlap: bool = False,
    cp_impl: str = "p2p",
    attention_share: float = 0.0,
    virtual_stages: int = 1,
    tp_backward_async: bool = True,
    pp_scatter_gather: bool = False,
    pp_send_comm: str | None = None,
    stages: StageKinds | None = None,
    ep_node_limit: int | None = None,
    moe_recomputed: bool = False,
    ep_dispatcher: EpDispatcher = "alltoall",
    tp_pairs: int | None = None,
    attention_recomputed: bool = False,
    recomputed: tuple[int, int, int] | None = None,
    repeated_kv: bool = False,
    torch_tp: bool = False,
    tp_gather_bytes: float | None = None,
    recompute_stops_early: bool = False,
    tp_gathers_recomputed: bool = False,
) -> list[LayoutCall]:
    """Every model-parallel call one GPU of the most loaded stage runs per micro-batch. `attention_share`: the
    share of the layers' FLOPs in attention's score and value matmuls (compute.attention_flops), what CP's
    exchange hides behind; overlapped TP calls hide behind the rest. `stages`: the layers each stage runs
    (stage_kinds; default the even split of stage_layer_counts, without MTP); `tp_pairs` the TP pairs of the stage
    with the most layers (stage_tp_pairs, from the same split as `stages`; default the even split's).
    `attention_recomputed`: core attention reruns in the backward, CP's exchange with it (cp_calls). `recomputed`:
    where full recomputation re-runs some layers alone (--recompute-block), recomputed_calls' counts. `repeated_kv`:
    torch's context_parallel exchanges K and V copied out to every query head (cp_calls); `torch_tp` TP's calls as
    torch's DTensor plans issue them, `tp_gather_bytes` an element of their gathers (tp_calls);
    `recompute_stops_early`: the recomputed blocks stop at the last tensor their backward needs;
    `tp_gathers_recomputed`: per-op SAC gathers TP's inputs again (tp_calls)."""
    stages = _kinds(arch, layout.pp, stages)
    again_pairs, again_moe, again_layers = recomputed if recomputed is not None else (None, None, None)
    recomputed_blocks = again_layers if again_layers is not None else max(map(len, stages)) if recompute_full else 0
    blocks_stopping_early = recomputed_blocks if recompute_stops_early else 0
    pipeline = pp_calls(
        arch, layout, micro_batch, seq_len, act_bytes, sequence_parallel, virtual_stages, pp_overlap, pp_scatter_gather,
        pp_send_communicator(pp_overlap, pp_send_comm),
    )  # fmt: skip
    moe_again = recompute_full or moe_recomputed  # the MoE layers' forward runs again, dispatcher included
    experts = ep_calls(
        arch, layout, micro_batch, seq_len, act_bytes, sequence_parallel, ep_overlap, stages, ep_node_limit, moe_again,
        ep_dispatcher, again_moe,
    )  # fmt: skip
    return [
        *tp_calls(
            arch,
            layout,
            micro_batch,
            seq_len,
            act_bytes,
            sequence_parallel,
            recompute_full,
            tp_overlap,
            attention_share,
            tp_backward_async,
            tp_pairs,
            again_pairs,
            torch_tp,
            tp_gather_bytes,
            blocks_stopping_early,
            tp_gathers_recomputed,
        ),
        *cp_calls(
            arch,
            layout,
            micro_batch,
            seq_len,
            act_bytes,
            cp_impl,
            attention_share,
            stages,
            attention_recomputed,
            again_layers,
            repeated_kv,
        ),
        *pipeline,
        *experts,
    ]


def cp_all_to_alls(
    arch: ModelArchitecture,
    layout: Layout,
    micro_batch: int,
    seq_len: int,
    act_bytes: float,
    forwards: int,
    backwards: int,
) -> list[LayoutCall]:
    """DeepSpeed-Ulysses' context parallelism (Jacobs et al. 2023), as Transformer Engine runs it for Megatron's
    --cp-comm-type a2a (AttnFuncWithCPAndQKVOA2A, attention/dot_product_attention/context_parallel.py at d0067d0da):
    before attention Q, K and V each go through an all-to-all over the CP group, from the rank's s / CP tokens of
    every head (of its TP rank) to all s tokens of 1 / CP of the heads, and the output goes back after it
    (flash_attn_a2a_communicate); the backward runs the mirror, the output gradient's before and the Q, K and V
    gradients' after. Each is waited for before the attention or the op after it can run: none hides. One call's
    bytes, as nccl-tests sizes an all-to-all, are the rank's tensor: b x s / CP tokens x its heads x head dim; K and V
    take the KV heads (with MLA every head's nope + rope key, and its value). With learned attention sinks the
    backward also all-gathers the sinks' gradients over CP, synchronously (flash_attn_a2a_communicate_softmax_offset):
    a float a head of the TP rank. `forwards` and `backwards`: the layers' forward passes per micro-batch (twice when
    attention is recomputed) and backward passes. Not priced: the copies that reorder each tensor's sequence chunks
    around its call (reorder_seq_chunks_for_a2a_before_attn and after), memory-bound passes of a few tens of
    microseconds a layer."""
    tokens = micro_batch * seq_len / layout.cp * act_bytes
    heads = arch.heads / layout.tp
    if arch.mla is not None:
        m = arch.mla
        q = k = heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)
        v = out = heads * m.v_head_dim
    else:
        kv_heads = arch.n_kv_heads / min(layout.tp, arch.n_kv_heads)
        q, k, v, out = heads * arch.d_head, kv_heads * arch.d_head, kv_heads * arch.d_value, heads * arch.d_value
    calls: list[LayoutCall] = []
    for direction, tensors, passes in (
        ("forward", (("Q", q), ("K", k), ("V", v), ("output", out)), forwards),
        ("backward", (("output gradient", out), ("Q gradient", q), ("K gradient", k), ("V gradient", v)), backwards),
    ):
        by_size: dict[float, list[str]] = {}
        for name, width in tensors:
            by_size.setdefault(width, []).append(name)
        for width, names in by_size.items():
            listed = f"{', '.join(names[:-1])} and {names[-1]}" if len(names) > 1 else names[0]
            purpose = f"{listed} all-to-all{'s' if len(names) > 1 else ''}, {direction}"
            calls.append(LayoutCall("cp", purpose, "all_to_all", tokens * width, "cp", passes * len(names)))
    if arch.attention_sinks:
        calls.append(LayoutCall("cp", "attention sinks' gradients gathered, backward", "all_gather", heads * 4, "cp",
                                backwards))  # fmt: skip
    return calls


def exposed_per_micro_batch(
    calls: Sequence[LayoutCall], seconds: Callable[[LayoutCall], float], compute: float
) -> dict[str, float]:
    """Seconds each dimension adds to one micro-batch's critical path: a call's time, or for overlapped calls what
    exceeds the share of the micro-batch's compute they can hide behind."""
    out: dict[str, float] = {}
    for c in calls:
        total = c.per_micro_batch * seconds(c)
        exposed = max(0.0, total - c.hides_behind * compute) if c.overlapped else total
        out[c.dimension] = out.get(c.dimension, 0.0) + exposed
    return out


def unpaired_ep_seconds(
    calls: Sequence[LayoutCall], seconds: Callable[[LayoutCall], float], compute: float, pp: int
) -> float:
    """Seconds per step of the overlapped EP calls no other micro-batch hides: without pipelining Megatron-Core's
    combined 1F1B runs the first micro-batch's forward alone and the last one's backward alone, each other forward
    beside a backward (combined_1f1b.py combined_1f1b_schedule_for_no_pipelining, core_r0.15.0), so what one
    micro-batch's compute hides of its calls (exposed_per_micro_batch) is exposed once a step. With a pipeline the
    warm-up and cool-down run in its bubble's slots: not priced here."""
    if pp > 1:
        return 0.0
    overlapped = [c for c in calls if c.dimension == "ep" and c.overlapped]
    return sum(min(c.per_micro_batch * seconds(c), c.hides_behind * compute) for c in overlapped)


def slowed_compute(
    calls: Sequence[LayoutCall],
    seconds: Callable[[LayoutCall], float],
    slowdown: Callable[[LayoutCall], float],
    compute: float,
) -> tuple[float, float]:
    """Seconds one micro-batch's compute loses to the SMs its overlapped calls' kernels hold: the compute beside each
    overlapped call (its time, up to the share of the compute it hides behind; all of them scaled down where together
    they would overlap more than the compute) times that call's slowdown (docs/sources/overlap-and-jitter.md), as
    data parallelism's overlapped calls do; and the seconds of compute beside them."""
    beside = {c: min(c.per_micro_batch * seconds(c), c.hides_behind * compute) for c in calls if c.overlapped}
    total = sum(beside.values())
    scale = min(1.0, compute / total) if total > 0 else 0.0
    return scale * sum(b * slowdown(c) for c, b in beside.items()), scale * total


def bubble_seconds(pp: int, micro_batches: int, per_micro_batch: float, virtual_stages: int = 1) -> float:
    """The pipeline's idle time per step: (p - 1) / v micro-batch slots of t_f + t_b (Narayanan et al. 2021,
    section 2.2: bubble fraction (p - 1) / (v m) of the ideal m (t_f + t_b))."""
    if pp <= 1:
        return 0.0
    return (pp - 1) / virtual_stages * per_micro_batch
