"""DeepSpeed's ZeRO-3 of v0.3 to v0.5.4 (--zero3-fetch synchronous): a call a parameter, one after the other.

Read at v0.3.16 and v0.5.10 (deepspeed/runtime/zero/, the releases of 2021; v0.6.0 replaced the fetch with its
PartitionedParameterCoordinator and all_gather_coalesced; docs/sources/deepspeed-zero3-2021.md). From v0.5.5 a
module's fetch gathers its parameters without a synchronize before them, and without a list where torch has
`_all_gather_base`: not this.
- Each parameter is gathered in a call of its own. partition_parameters.py `_allgather_param` allocates the whole
  tensor, calls `torch.cuda.synchronize()`, builds a list of one view a rank in a Python loop and hands it to
  `torch.distributed.all_gather`; stage3.py `fetch_sub_module` then waits for the communication stream and the
  device (`_synchronize_communication`). Its prefetch of the next modules never ran: the top module's reset hook
  fires after its own pre-forward hook has counted a step, every later module's step is one off the trace, and
  `get_params_to_prefetch` finds "Tracing failed" and returns nothing (deepspeedai/DeepSpeed#1069); the reuse
  distance fails so too, and keeps nothing. So each unit's gathers run before its compute, nothing beside them, and
  a block whose forward the backward recomputes is fetched again (its hooks fire as the forward's do).
- A parameter of fewer than `stage3_param_persistence_threshold` elements (zero/constants.py: 100000) stays whole on
  every rank (stage3.py `persistent_parameters`): a block's norm weights and biases are not fetched.
- With `contiguous_gradients` (DeepSpeed's own Megatron ZeRO-3 example of March 2021 sets it; the default from
  v0.4.3) each gradient is reduce-scattered in a call of its own, the persistent ones too (`_reduce_scatter_gradients`:
  a `torch.distributed.reduce_scatter` of a list of one view a rank); the next fetch's synchronize waits for them.
- torch's list collectives, before `_all_gather_base`, copy between the list and one flat buffer a rank at a time
  (ProcessGroupNCCL::allgather and ::reduce_scatter, a `copy_` and its kernel launch a rank; pytorch/pytorch#33924),
  after DeepSpeed's Python loop has built the list: host time a call that grows with the ranks,
  `list_host_seconds` a rank. Before each gather the device has been synchronized, so it waits for all of it; a
  reduction's list is built with no device synchronize before it, while backward kernels the host has queued run:
  priced as hidden behind the unit's backward, and waited for where it outlasts it (the source's queue is shorter,
  a module's, so this is the least it can cost).

LIST_HOST_SECONDS_PER_RANK is fitted, as nothing published gives it: the value of benchmarks/large_runs.py's
FIT_LIST_HOST_GRID (0 to 30 us in steps of 1 us) with the least geomean error over its in-sample runs (runs.csv;
`large_runs.py --fit-list-host`), which only Narayanan et al.'s six ZeRO-3 rows move (SC'21 Table 2: GPT 175B on
384-1536 A100s, 530B on 640-2240, DeepSpeed and torch of early 2021): 14 us, 4.45% against 4.80% without it. The curve
is ragged (10 us 4.49%, 15 us 4.52%, 21 us 4.50%): the geomean dips where one row crosses zero. It is a Python loop
step and a copy launch a rank, on 2021's CPUs and PyTorch: plausible, not measured. Nothing out of sample tests it.
`--list-host-time` replaces it.
"""

from __future__ import annotations

__all__ = ["LIST_HOST_SECONDS_PER_RANK", "PERSISTENCE_ELEMENTS", "gathered_tensors", "reduced_tensors"]

# deepspeed/runtime/zero/constants.py at v0.3.16 and v0.5.10: ZERO_OPTIMIZATION_PARAM_PERSISTENCE_THRESHOLD_DEFAULT
PERSISTENCE_ELEMENTS = 1e5
# The host's time a rank of one list collective (module docstring: fitted)
LIST_HOST_SECONDS_PER_RANK = 14e-6


def reduced_tensors(tensors: tuple[float, ...], vectors: int) -> tuple[tuple[float, int], ...]:
    """A unit's parameter tensors, each reduce-scattered on its own, as (elements, how many): `tensors` as a unit
    lists them (step.Unit), its last one standing for `vectors` equal small ones where `vectors` > 0 (a block's norm
    weights and biases, which params.block_tensors lumps together)."""
    if vectors <= 0 or not tensors:
        return tuple((t, 1) for t in tensors)
    return (*((t, 1) for t in tensors[:-1]), (tensors[-1] / vectors, vectors))


def gathered_tensors(tensors: tuple[float, ...], vectors: int) -> tuple[tuple[float, int], ...]:
    """The tensors of reduced_tensors that a fetch gathers, each on its own: those of PERSISTENCE_ELEMENTS or more
    (the rest persist)."""
    return tuple((t, n) for t, n in reduced_tensors(tensors, vectors) if t >= PERSISTENCE_ELEMENTS)
