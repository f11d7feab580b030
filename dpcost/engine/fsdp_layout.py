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
pipeline or expert parallelism, sharded over all of DP x CP or, hybrid (--shard-group: fsdp_replicas), within
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
from dpcost.engine.layout_memory import LayoutMemory, StageMemory
from dpcost.engine.params import tensor_parallel_parameters
from dpcost.engine.prepare import Prepared, StageMemories
from dpcost.engine.report import StageRow
from dpcost.errors import InputError
from dpcost.options import Options
from dpcost.specs import ModelSpec, TopologySpec

__all__ = [
    "FSDP_LAYOUT_NOTE",
    "FSDP_LAYOUT_READS",
    "check_fsdp_layout",
    "fsdp_layout_memory",
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
FSDP_LAYOUT_NOTE = (
    "per GPU, as PyTorch FSDP holds its tensor-parallel share of the model under torchtitan's plan: weights and "
    "activations 1/TP, the norm outputs the projections read gathered whole, the logits split over the vocabulary; "
    "under CP the rank's s / CP tokens' activations, with the ring attention's buffers, and the states sharded over "
    "DP x CP"
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
    for flag, degree in (("pp", par.pp), ("ep", par.ep), ("virtual_stages", par.virtual_stages)):
        if degree != 1:
            return InputError(
                flag,
                f"FSDP with tensor or context parallelism (--framework fsdp) is costed without pipeline or expert "
                f"parallelism, not {flag} {degree}: leave --framework out to cost the layout as Megatron-LM runs it",
            )
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


def fsdp_replicas(p: Prepared) -> int:
    """The replicas hybrid sharding keeps (--shard-group: torchtitan's dp_replicate, FSDP2's 2-D mesh): DP x CP over
    the GPUs it shards within (Prepared.shard_ranks), whose sharded gradients are all-reduced across them after each
    reduce-scatter in the group (torch 2.14.1 _fully_shard/_fsdp_collectives.py foreach_reduce: all_reduce over
    all_reduce_group, "not None iff HSDP", in reduce_dtype); 1 without it."""
    return p.o.dp * p.context_parallel_ranks // p.shard_ranks


def fsdp_recompute_block(model: ModelSpec, o: Options) -> int | None:
    """The blocks a layout's step recomputes in full (its first N, layout_estimate.layout_step's recompute_block) for
    torchtitan's every K-th (--recompute-layers K, checkpointing.takes_policy): as many, L // K, of the same layers'
    compute; the plan's own block where K is 1."""
    every = o.plan.recompute_layers
    assert model.architecture is not None  # check_fsdp_layout
    return o.plan.recompute_block if every == 1 else model.architecture.layers // every


def fsdp_layout_memory(
    model: ModelSpec, topology: TopologySpec, p: Prepared, stage: int, recompute: str
) -> tuple[StageRow, LayoutMemory]:
    """One ZeRO stage's memory per GPU (StageMemories at the plan's TP: module docstring), as the stage table's row
    and as a layout's memory (one stage, the whole model, its allocated peak split as Megatron's accounting is)."""
    held = StageMemories(model, topology, p).row(stage, recompute)
    parameters = tensor_parallel_parameters(p.counts, model.architecture, p.tensor_parallel_ranks)
    activations = held.allocated - held.model_states - held.buffers
    assert model.architecture is not None  # check_fsdp_layout
    layers = model.architecture.layers
    one = StageMemory(0, layers, parameters, held.model_states, activations, held.buffers, held.params, held.grads)
    layout = LayoutMemory(parameters, held.model_states, activations, (one,))
    return stage_row(held, p.micro_batch), layout
