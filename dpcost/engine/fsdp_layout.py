"""PyTorch FSDP with tensor and context parallelism, as torchtitan runs them (--framework fsdp --tp N --cp M).

torchtitan applies tensor parallelism first and shards each rank's DTensor shards with FSDP2 over the data-parallel
mesh, which context parallelism joins (models/llama3/infra/parallelize.py: apply_tp, then apply_fsdp over
dp_shard x cp; the attention runs torch's ring attention: under torch's context_parallel at 9dec370, through
_ContextParallel hooks on the attention module at v0.2.2, the same ring code; torchtitan's own local_map all-gather
since, which is not costed here). Each GPU therefore holds what a pure data-parallel FSDP plan holds (memory.py,
prepare.StageMemories, with every accounting of the framework's: mixed precision, units gathered one block at a
time, the caching allocator's fragmentation), of its tensor-parallel share of the model and its share of the
sequence:
- weights, gradients and optimizer states: the parameters one TP rank holds (params.tensor_parallel_parameters),
  sharded over DP x CP (Prepared.shard_ranks);
- the units FSDP gathers, the blocks and the layers: their TP shares;
- activations: apply_tp's plan with sequence parallelism (activations.tensor_parallel_share, loss.loss_memory):
  1/TP of each tensor but the norm outputs the column-parallel projections read, all-gathered whole (and the
  row-parallel projections' partial sums, whole, where per-op SAC caches them); the logits
  split over the vocabulary (loss_parallel); of the rank's s / CP tokens (the ring attention saves the rank's own
  queries, keys, values and output), with the ring's working buffers in each layer's backward
  (activations.ring_attention_backward_bytes).
What it covers: dense decoders of attention layers (apply_tp's plan for Llama, Qwen 3 and their like) without
expert parallelism, under PP each rank's stages as torch's pipelining holds them (fsdp_pipeline.py: weights kept
unsharded all step, gradients accumulated unsharded, the schedule's micro-batches in flight; the step's gradients
reduce-scattered once, after the last backward), sharded over all of DP x CP or, hybrid (--shard-group:
fsdp_replicas), within
groups of it, recomputing nothing, every block, every K-th block (torchtitan's selective layer AC,
--recompute-layers K) or by torchtitan's per-op SAC: the framework's policies (frameworks.FRAMEWORKS["fsdp"];
per-op SAC's saved SDPA output keeps CP's ring from running again, its saved reduce-scatters keep TP's, while TP's
inputs are gathered again: checkpointing.py "op", layout_step.tp_calls). The step is timed as a
layout's (layout_estimate.py: ZeRO-3 layer by layer over DP x CP, TP's collectives with sequence parallelism,
DTensor's tensor parallelism waiting for its backward collectives, CP's as torch's context_parallel runs them:
layout_step.cp_calls, --cp-impl torch; the layers as the framework runs them), every K-th block's recomputation as
that many blocks' (fsdp_recompute_block).
"""

from __future__ import annotations

from collections.abc import Callable

from dpcost.engine.estimate import stage_row
from dpcost.engine.fsdp_pipeline import (
    checkpointed_blocks,
    interleaved_rounds,
    rank_memory,
    rank_parameters,
    schedule_microbatches,
)
from dpcost.engine.layout_memory import LayoutMemory, StageMemory
from dpcost.engine.layout_step import PipelineSplit, virtual_stage_layers
from dpcost.engine.params import tensor_parallel_parameters
from dpcost.engine.prepare import Prepared, StageMemories
from dpcost.engine.report import StageRow
from dpcost.errors import InputError
from dpcost.options import Options
from dpcost.specs import ModelArchitecture, ModelSpec, TopologySpec

__all__ = [
    "FSDP_LAYOUT_READS",
    "check_fsdp_layout",
    "fsdp_layout_memory",
    "fsdp_layout_note",
    "fsdp_layout_refusal",
    "fsdp_recompute_block",
    "fsdp_replicas",
    "is_fsdp_layout",
]

# Of the flags a Megatron layout does not read (layout_report.LAYOUT_IGNORES), those FSDP's memory reads: how the
# layers run and keep their tensors, and the loss
FSDP_LAYOUT_READS = ("--compile", "--no-repeat-kv", "--loss-impl", "--recompute-layers", "--shard-group")
# Of the others, those that would change FSDP's memory and not the layout's step: refused (check_fsdp_layout)
_UNPRICED: dict[str, Callable[[Options], bool]] = {
    "offload": lambda o: o.precision.offload != "none",
    "keep_full_grads": lambda o: o.communication.keep_full_grads,
    "recipe": lambda o: o.precision.recipe is not None,
    "optimizer": lambda o: o.precision.optimizer != "adamw",
    "loss_impl": lambda o: (o.compute.loss_impl or "").startswith("vocab-parallel"),
}
_NOTE = (
    "per GPU, as PyTorch FSDP holds its tensor-parallel share of the model under torchtitan's plan: weights and "
    "activations 1/TP, the norm outputs the projections read gathered whole, the logits split over the vocabulary; "
    "under CP the rank's s / CP tokens' activations, with the ring attention's buffers, and the states sharded over "
    "DP x CP"
)


def fsdp_layout_note(held: LayoutMemory, pp: int) -> str:
    """The memory table's note: whose memory its rows are (under PP, the most loaded rank's)."""
    if pp == 1:
        return _NOTE
    return (
        f"{_NOTE}; under PP the most loaded rank's, {held.most_loaded.stage} of {pp}, as torch's pipelining holds its "
        "stages: weights unsharded all step, gradients accumulated unsharded in fp32 from each stage's first "
        "backward, the schedule's micro-batches in flight"
    )


def is_fsdp_layout(o: Options) -> bool:
    """Whether a layout runs as torchtitan's FSDP with tensor or context parallelism (--framework fsdp)."""
    return o.plan.framework == "fsdp"


def check_fsdp_layout(model: ModelSpec, o: Options) -> None:
    """Raise fsdp_layout_refusal's error, if any."""
    refusal = fsdp_layout_refusal(model, o)
    if refusal is not None:
        raise refusal


def fsdp_layout_refusal(model: ModelSpec, o: Options) -> InputError | None:
    """Why the accounting does not cover the plan (module docstring), naming its flag; None where it does."""
    par, a = o.parallel, model.architecture
    if par.ep != 1:
        return InputError(
            "ep",
            f"FSDP in a layout (--framework fsdp) is costed without expert parallelism, not ep {par.ep}: leave "
            "--framework out to cost the layout as Megatron-LM runs it",
        )
    if par.pp > 1:
        refusal = _pipeline_refusal(model, o)
        if refusal is not None:
            return refusal
    if par.cp > 1 and par.cp_impl not in ("torch", "p2p"):  # the default p2p runs as torch's (prepare.prepare)
        return InputError(
            "cp_impl",
            f"torchtitan's context parallelism is torch's context_parallel (--cp-impl torch, its default), not "
            f"{par.cp_impl}: leave --cp-impl out, or --framework out to cost Megatron-LM's",
        )
    if par.cp > 1 and a is not None and (a.local_attention is not None or a.attention_sinks):
        return InputError(
            "cp",
            f"torch's ring attention takes SDPA's causal mask alone, not {model.name}'s windows or sinks "
            "(FlexAttention's block masks under CP are not costed): give --cp 1",
        )
    if a is None or a.moe is not None or a.mla is not None or any(m != "attention" for m in a.mixers):
        return InputError(
            "framework",
            f"FSDP with tensor or context parallelism is costed for dense decoders of attention layers (torchtitan's "
            f"plan for Llama and Qwen 3), not {model.name}'s experts, latent attention or other mixers: leave "
            "--framework out",
        )
    for field, given in _UNPRICED.items():
        if given(o):
            return InputError(
                field,
                "not costed with FSDP and tensor or context parallelism (it would change the memory and not the "
                "layout's step, or is Megatron-LM's loss): leave it out",
            )
    if o.plan.recompute == "op" and o.plan.recompute_layers != 1:
        return InputError(
            "recompute_layers",
            "torchtitan's per-op SAC runs on every block (its selective_ac_option is 'op' or a block interval, not "
            "both): leave --recompute-layers out, or give --recompute full for its selective layer AC",
        )
    if o.plan.shard_group is not None and o.plan.shard_group % par.cp:
        return InputError(
            "shard_group",
            f"FSDP shards over whole CP groups (torchtitan's dp_shard x cp mesh): give a multiple of CP {par.cp}",
        )
    return None


def _pipeline_refusal(model: ModelSpec, o: Options) -> InputError | None:
    """What torchtitan's pipelining under FSDP (fsdp_pipeline.py) is not costed with, naming its flag."""
    par, plan = o.parallel, o.plan
    schedule = par.pp_schedule or ("interleaved" if par.virtual_stages > 1 else "1f1b")
    if (schedule == "interleaved") != (par.virtual_stages > 1):
        return InputError(
            "pp_schedule",
            f"torch's {schedule} schedule runs {'several stages' if schedule == 'interleaved' else 'one stage'} per "
            f"rank (ScheduleInterleaved1F1B, Schedule1F1B, ScheduleGPipe), not --virtual-stages {par.virtual_stages}",
        )
    if plan.zero == 3:
        return InputError(
            "zero",
            "under PP torchtitan keeps the parameters unsharded from the forward to the backward (its "
            "fsdp_reshard_after_forward 'default'); resharding them ('always') is not costed: give --zero 2 or leave "
            "it out",
        )
    if plan.recompute_block is not None:
        return InputError(
            "recompute_block",
            "torchtitan checkpoints every block or every K-th (--recompute-layers K), not the first N of each stage",
        )
    if model.architecture is not None and model.architecture.tied_embeddings:
        return InputError(
            "pp",
            f"{model.name} ties its embedding to its output head, which torchtitan asserts one stage holds both of "
            "(qwen3/model/model.py init_weights at v0.2.2): give --pp 1",
        )
    return None


def fsdp_replicas(p: Prepared) -> int:
    """The replicas hybrid sharding keeps (--shard-group: torchtitan's dp_replicate, FSDP2's 2-D mesh): DP x CP over
    the GPUs it shards within (Prepared.shard_ranks), whose sharded gradients are all-reduced across them after each
    reduce-scatter in the group (torch 2.14.1 _fully_shard/_fsdp_collectives.py foreach_reduce: all_reduce over
    all_reduce_group, "not None iff HSDP", in reduce_dtype); 1 without it."""
    return p.o.dp * p.context_parallel_ranks // p.shard_ranks


def fsdp_recompute_block(model: ModelSpec, o: Options) -> int | None:
    """The blocks a layout's step recomputes in full (its first N of each stage, layout_estimate.layout_step's
    recompute_block) for torchtitan's every K-th (--recompute-layers K, checkpointing.takes_policy): as many, L // K,
    of the same layers' compute; under PP the most any stage checkpoints (fsdp_pipeline.checkpointed_blocks), which
    paces the pipeline; the plan's own block where K is 1."""
    every, par = o.plan.recompute_layers, o.parallel
    a = model.architecture
    assert a is not None  # check_fsdp_layout
    if every == 1:
        return o.plan.recompute_block
    if par.pp == 1:
        return a.layers // every
    return max(checkpointed_blocks(_stage_layers(a, o), par.pp, every))


def _stage_layers(a: ModelArchitecture, o: Options) -> tuple[int, ...]:
    """The decoder layers of each of the PP x V pipeline stages, as the layout splits them (--pipeline-layout, the
    end stages' counts, else evenly: layout_step.virtual_stage_layers)."""
    par = o.parallel
    split = PipelineSplit(a.layers, par.pp, par.virtual_stages, par.first_stage_layers, par.last_stage_layers,
                          par.pipeline_layout)  # fmt: skip
    return virtual_stage_layers(split)


def fsdp_layout_memory(
    model: ModelSpec, topology: TopologySpec, p: Prepared, stage: int, recompute: str, microbatches: int | None
) -> tuple[StageRow, LayoutMemory]:
    """One ZeRO stage's memory per GPU (StageMemories at the plan's TP: module docstring), as the stage table's row
    and as a layout's memory (one stage, the whole model, its allocated peak split as Megatron's accounting is).
    Under PP, each pipeline rank's as torch's pipelining holds it (fsdp_pipeline.rank_memory), `microbatches` per
    step, the row the most loaded rank's."""
    memories = StageMemories(model, topology, p)
    if p.o.parallel.pp > 1:
        return _pipeline_memory(model, topology, p, stage, recompute, microbatches, memories)
    held = memories.row(stage, recompute)
    parameters = tensor_parallel_parameters(p.counts, model.architecture, p.tensor_parallel_ranks)
    activations = held.allocated - held.model_states - held.buffers
    assert model.architecture is not None  # check_fsdp_layout
    layers = model.architecture.layers
    one = StageMemory(0, layers, parameters, held.model_states, activations, held.buffers, held.params, held.grads)
    layout = LayoutMemory(parameters, held.model_states, activations, (one,))
    return stage_row(held, p.micro_batch), layout


def _pipeline_memory(
    model: ModelSpec,
    topology: TopologySpec,
    p: Prepared,
    stage: int,
    recompute: str,
    microbatches: int | None,
    memories: StageMemories,
) -> tuple[StageRow, LayoutMemory]:
    """fsdp_layout_memory under PP: every rank's (fsdp_pipeline.rank_memory), each as a layout's stage."""
    par, a = p.o.parallel, model.architecture
    assert a is not None  # check_fsdp_layout
    m = schedule_microbatches(microbatches, par.pp)
    if par.virtual_stages == 1 and par.pp_schedule != "gpipe" and m < par.pp:
        raise InputError(
            "global_batch",
            f"torch's Schedule1F1B needs at least PP {par.pp} micro-batches a step, not {m}: give a larger global "
            "batch, or --pp-schedule gpipe",
        )
    if par.virtual_stages > 1 and m % interleaved_rounds(m, par.pp):
        raise InputError(
            "global_batch",
            f"torch's interleaved 1F1B runs the micro-batches in rounds of PP: {m} are not a multiple of "
            f"{interleaved_rounds(m, par.pp)} rounds (ScheduleInterleaved1F1B)",
        )
    per_stage = _stage_layers(a, p.o)
    workspaces = memories.states(stage).buffers.workspaces
    ranks = [rank_memory(model, topology, p, stage, recompute, per_stage, r, m, workspaces) for r in range(par.pp)]
    stages = tuple(
        StageMemory(r, sum(per_stage[r :: par.pp]), rank_parameters(model, p, per_stage, r), held.model_states,
                    held.allocated - held.model_states - held.buffers, held.buffers, held.params, held.grads)
        for r, held in enumerate(ranks)
    )  # fmt: skip
    most = max(stages, key=lambda s: s.parameters)  # Megatron's accounting: the most loaded shard's states
    layout = LayoutMemory(most.parameters, most.weight_and_optimizer, stages[0].activations, stages)
    return stage_row(ranks[layout.most_loaded.stage], p.micro_batch), layout
