"""PyTorch FSDP2 under torch's pipelining, as torchtitan runs them (--framework fsdp --pp N): what each pipeline rank
holds over the step.

- Under PP torchtitan does not reshard after the forward (parallelize_llama.py at 9dec370: `reshard_after_forward =
  False` when pp_enabled; v0.2.2 distributed/fsdp.py "For PP, by default do not reshard after forward"), and torch's
  pipelining runs the backwards with set_reshard_after_backward(False) and set_requires_gradient_sync(False)
  (torch 2.14.1 pipelining/stage.py backward_maybe_with_nosync; in December 2024 all but the stage's last, which
  then reduced): each rank's parameters, gathered at their first forward, stay unsharded until the end of the
  step, and each block's gradient is accumulated unsharded, in the reduce dtype (FSDP2 _fsdp_param.py
  to_accumulated_grad_if_needed, PR #125191: "for microbatching use cases (e.g. PP) ... accumulate the unsharded
  gradients in fp32 across microbatches"), from the block's first backward until perform_reduce_grad reshards the
  stage and reduce-scatters it a block at a time, once, after the stage's last backward (after the loop in
  Schedule1F1B and ScheduleGPipe; the runtime schedules' REDUCE_GRAD, schedules.py _add_reduce_grad).
- The schedules run each rank's forwards (F) and backwards (B) in torch's order (pipelining/schedules.py):
  ScheduleGPipe every F then every B; Schedule1F1B min(M, PP - stage) forwards, then B and F in turn;
  ScheduleInterleaved1F1B _get_warmup_ops' forwards, then F and B in turn, its chunks by forward_stage_index and
  backward_stage_index, then the remaining B. A micro-batch's activations are held from its F to its B on the
  chunk (stage) that ran it.
- Each non-first stage receives its input in a buffer per micro-batch, and each non-last stage its output's
  gradient, both allocated once and kept (stage.py _prepare_forward_infra, _create_grad_recv_info). The stage's
  output stays in fwd_cache until its backward: on the last stage the logits, bf16, of the rank's vocabulary shard.
  The input's gradient leaves the buffer's .grad once computed (_backward.py, PR #164329, October 2025; before it
  stayed to the next step) and is sent; torchtitan's step keeps no outputs (return_outputs=False at v0.2.2).
"""

from __future__ import annotations

from collections.abc import Iterator

from dpcost.engine.activations import ACT_BYTES
from dpcost.engine.memory import Phase, PhaseMemory, StageMemory, buffers, context_bytes, model_states, stage_memory
from dpcost.engine.prepare import Prepared, activation_parts, layer_backward_bytes
from dpcost.engine.step import Unit, unit_runs
from dpcost.specs import ModelSpec, TopologySpec

__all__ = [
    "Action",
    "checkpointed_blocks",
    "interleaved_rounds",
    "rank_actions",
    "rank_memory",
    "rank_parameters",
    "schedule_microbatches",
    "stage_units",
]

Action = tuple[bool, int]  # (a forward, not a backward; the rank's chunk it runs, 0 the first)


def schedule_microbatches(microbatches: int | None, pp: int) -> int:
    """The micro-batches one step runs through the pipeline: the plan's, else PP (torchtitan's default at 9dec370,
    pipelining_utils.py: pipeline_parallel_microbatches or the PP degree)."""
    return pp if microbatches is None else microbatches


def interleaved_rounds(microbatches: int, pp: int) -> int:
    """The rounds ScheduleInterleaved1F1B runs the micro-batches in (schedules.py number_of_rounds: M // PP, at
    least 1); it refuses micro-batches that do not split into them."""
    return max(1, microbatches // pp)


def rank_actions(schedule: str, pp: int, chunks: int, microbatches: int, rank: int) -> Iterator[Action]:
    """Rank `rank`'s forwards and backwards over one step, in torch's order (module docstring): `chunks` stages per
    rank, `microbatches` per step; `schedule` gpipe, 1f1b or (chunks > 1) interleaved."""
    m = microbatches
    if chunks == 1 and schedule != "interleaved":
        warmup = m if schedule == "gpipe" else min(m, pp - rank)  # Schedule1F1B: num_stages - stage_index
        yield from ((True, 0) for _ in range(warmup))
        for done in range(m):
            yield False, 0
            if warmup + done < m:
                yield True, 0
        return
    per_round = m // interleaved_rounds(m, pp)  # ScheduleInterleaved1F1B: microbatches_per_round
    warmup = min((chunks - 1) * per_round + 2 * (pp - 1 - rank), m * chunks)  # _get_warmup_ops
    steady = m * chunks - warmup
    for op in range(warmup + steady + warmup):
        if op < warmup + steady:
            yield True, (op // per_round) % chunks  # forward_stage_index
        if op >= warmup:
            yield False, chunks - 1 - ((op - warmup) // per_round) % chunks  # backward_stage_index


def _blocks(model: ModelSpec, p: Prepared) -> tuple[Unit, Unit, Unit]:
    """The units FSDP wraps (step.units): the embedding, one decoder block (a dense decoder's are alike) and the
    final norm with the head."""
    runs = unit_runs(p.pieces(model))
    return runs[0][0], runs[1][0], runs[-1][0]


def stage_units(model: ModelSpec, p: Prepared, stage_layers: tuple[int, ...], k: int) -> tuple[Unit, ...]:
    """Pipeline stage k's units, of `stage_layers` per stage: the embedding on the first, its blocks, the final norm
    and head on the last (pipeline_llama.py _build_stage at 9dec370)."""
    embedding, block, head = _blocks(model, p)
    last = k == len(stage_layers) - 1
    return ((embedding,) if k == 0 else ()) + (block,) * stage_layers[k] + ((head,) if last else ())


def checkpointed_blocks(stage_layers: tuple[int, ...], pp: int, every: int) -> tuple[int, ...]:
    """The blocks of each stage that torchtitan's selective layer AC checkpoints (--recompute-layers K): every K-th
    block a rank builds, counted from 1 over its stages in order, as the process-wide counter counts them
    (distributed/activation_checkpoint.py _apply_layer_sac at v0.2.2: `_layer_sac_count % ac_freq == 0`)."""
    counted = [0] * pp  # blocks each rank has built
    out = []
    for k, layers in enumerate(stage_layers):
        before = counted[k % pp]
        out.append((before + layers) // every - before // every)
        counted[k % pp] += layers
    return tuple(out)


def rank_parameters(model: ModelSpec, p: Prepared, stage_layers: tuple[int, ...], rank: int) -> float:
    """The parameters pipeline rank `rank` holds, its TP share, of its stages rank, rank + PP, ..."""
    pp = p.o.parallel.pp
    held = (u for k in range(rank, len(stage_layers), pp) for u in stage_units(model, p, stage_layers, k))
    return sum(u.params for u in held) / p.tensor_parallel_ranks


def rank_memory(
    model: ModelSpec,
    topology: TopologySpec,
    p: Prepared,
    stage: int,
    recompute: str,
    stage_layers: tuple[int, ...],
    rank: int,
    microbatches: int,
    workspaces: float,
) -> StageMemory:
    """Pipeline rank `rank`'s memory per GPU (memory.StageMemory) under FSDP2 and torch's pipelining (module
    docstring): `stage_layers` the decoder layers of each of the PP x V stages (stage k on rank k mod PP), `stage`
    the ZeRO stage of its sharded states, `microbatches` per step (schedule_microbatches), `workspaces` the GEMM
    libraries' (prepare.StageMemories). Its phases: the schedule's moments where its activations peak, at a forward
    and at a backward, one of each per set of weights and gradients alive; each stage's reduce-scatters after its
    last backward; the optimizer step."""
    a, o, tp = model.architecture, p.o, p.tensor_parallel_ranks
    assert a is not None  # fsdp_layout.check_fsdp_layout
    pp = o.parallel.pp
    chunks, m = len(stage_layers) // pp, microbatches
    block = _blocks(model, p)[1]
    last_stage = pp * chunks - 1
    stages = [rank + c * pp for c in range(chunks)]

    def unsharded_bytes(u: Unit) -> float:  # as gathered: fp8 gathers convert only the linear layers
        return u.params / tp * (p.weight_bytes if u.linear else p.unconverted_weight_bytes)

    units = [stage_units(model, p, stage_layers, k) for k in stages]
    parameters = rank_parameters(model, p, stage_layers, rank)
    unsharded = [sum(unsharded_bytes(u) for u in own) for own in units]
    grads = [p.grad_bytes * sum(u.params for u in own) / tp for own in units]  # accumulated in the reduce dtype
    block_grad = block.params / tp * p.unconverted_weight_bytes  # autograd's, in the parameters' dtype
    reduced_block = block.params / tp * p.grad_bytes  # a block's reduce-scatter input

    act, loss = activation_parts(model, p, recompute)
    every = o.plan.recompute_layers
    checkpointed = checkpointed_blocks(stage_layers, pp, every)
    # a dense decoder's layers are alike (check_fsdp_layout): what one keeps under the policy, and without one
    # (--recompute-layers K: the others)
    unchecked = activation_parts(model, p, "none")[0].kept / a.layers if every > 1 else 0.0
    policy_layers = a.layers // every
    per_layer = (act.kept - (a.layers - policy_layers) * unchecked) / policy_layers if policy_layers else 0.0
    tokens = p.seq_len / p.context_parallel_ranks  # the rank's share of a sequence
    boundary = ACT_BYTES * a.hidden * tokens / tp  # a block's output, its sequence-parallel slice
    # the last stage's output, kept in fwd_cache to its backward: the logits, bf16, of the rank's vocabulary shard
    logits = ACT_BYTES * a.vocab * tokens / tp
    kept: list[float] = []  # per chunk, what one sequence in flight holds beyond its receive buffer
    received = 0.0  # per sequence, the receive buffers held all step
    for k in stages:
        output = loss.kept + logits if k == last_stage else boundary
        layers = checkpointed[k] * per_layer + (stage_layers[k] - checkpointed[k]) * unchecked
        kept.append(layers + output - (boundary if k > 0 else 0.0))
        received += m * boundary * ((k > 0) + (k < last_stage))
    cp = p.context_parallel_ranks
    layer_backward = layer_backward_bytes(a, act, p.seq_len // cp, cp, tp, o.compute.repeat_kv)
    loss_forward, loss_backward = loss.forward_peak - loss.kept, loss.backward_peak - loss.kept

    states = model_states(parameters, p.shard_ranks, stage, p.recipe, o.precision.optimizer, o.precision.offload)
    adam = states.optimizer - states.step_only
    # (phase, weights, gradients) -> (held per sequence, transient per sequence, buffers)
    peaks: dict[tuple[Phase, float, float], tuple[float, float, float]] = {}

    def seen(phase: Phase, weights: float, accumulated: float, held: float, transient: float, buf: float) -> None:
        key = (phase, weights, accumulated)
        if held + transient > sum(peaks.get(key, (0.0, 0.0, 0.0))[:2]):
            peaks[key] = (held, transient, buf)

    in_flight, backwards = [0] * chunks, [0] * chunks
    weights = states.params + sum(unsharded)
    for forward, chunk in rank_actions(o.parallel.pp_schedule or "1f1b", pp, chunks, m, rank):
        ends = stages[chunk] == last_stage
        accumulated = sum(g for g, n in zip(grads, backwards, strict=True) if 0 < n < m)
        if forward:
            in_flight[chunk] += 1
            transient = loss_forward if ends else 0.0
        else:
            transient = max(layer_backward, loss_backward) if ends else layer_backward
        held = sum(n * k for n, k in zip(in_flight, kept, strict=True)) + received
        seen("forward" if forward else "backward", weights, accumulated, held, transient,
             workspaces + (0.0 if forward else block_grad))  # fmt: skip
        if forward:
            continue
        in_flight[chunk] -= 1
        backwards[chunk] += 1
        if backwards[chunk] == m:  # perform_reduce_grad: a block's reduce-scatter at a time, then resharded
            alive = enumerate(zip(grads, backwards, strict=True))
            accumulated = sum(g for c, (g, n) in alive if 0 < n < m or c == chunk)
            seen("backward", weights, accumulated + states.grads, held - kept[chunk], 0.0, workspaces + reduced_block)
            weights -= unsharded[chunk]
    phases = [PhaseMemory(phase, then_weights, then_grads, adam, buf, then_held, then_transient)
              for (phase, then_weights, then_grads), (then_held, then_transient, buf) in peaks.items()]  # fmt: skip
    at_step = buffers(stage, "fsdp", p.recipe, p.grad_bytes, parameters, 0.0, 0.0, 0.0, shard_ranks=p.shard_ranks,
                      optimizer=o.precision.optimizer, optimizer_impl=p.optimizer_impl).at_step  # fmt: skip
    phases.append(PhaseMemory("optimizer step", states.params, states.grads, states.optimizer, workspaces + at_step,
                              received, 0.0))  # fmt: skip
    largest = max(act.largest_tensor, loss.largest_tensor if last_stage in stages else 0.0)
    # the accumulated gradients are each parameter's own tensor (to_accumulated_grad_if_needed), allocated on the
    # compute stream and freed there after the step's reduce-scatters: the next step's activations can take their
    # blocks, the largest an MLP projection's (memory.StageMemory.grads_reusable)
    reusable = p.grad_bytes * a.hidden * (a.ffn or a.hidden) / tp
    gpu = topology.gpu
    return stage_memory(stage, states, tuple(phases), p.micro_batch, largest, context_bytes(gpu), gpu.hbm, reusable,
                        act.largest_tensor)  # fmt: skip
