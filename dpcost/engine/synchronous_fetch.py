"""DeepSpeed's ZeRO-3 before v0.6.0 (--zero3-fetch synchronous): a call a parameter, each behind a device synchronize.

Read at v0.3.16 and v0.5.10 (deepspeed/runtime/zero/, the releases of 2021; v0.6.0 replaced the fetch with its
PartitionedParameterCoordinator and all_gather_coalesced; docs/sources/deepspeed-zero3-2021.md):
- Each parameter is gathered in a call of its own. partition_parameters.py `_allgather_param` allocates the whole
  tensor, calls `torch.cuda.synchronize()`, builds a list of one view a rank in a Python loop and hands it to
  `torch.distributed.all_gather`; stage3.py `prefetch_next_sub_modules` prefetches the next modules' parameters so,
  one module ahead once the first step has traced their order, and `fetch_sub_module` waits for them
  (`_synchronize_communication`: the communication stream, then the device). The calls run beside the compute as
  the prefetched schedule's do (step.gather_reduce_runs, unit by unit), each unit's one after the other.
- A parameter of fewer than `stage3_param_persistence_threshold` elements (zero/constants.py: 100000) stays whole on
  every rank (stage3.py `persistent_parameters`): a block's norm weights and biases are never gathered.
- Each gradient is reduce-scattered in a call of its own, the persistent ones too (`_reduce_scatter_gradients`: a
  `torch.distributed.reduce_scatter` of a list of one view a rank, for each parameter of the reduce bucket).
- torch's list collectives, before `_all_gather_base` (torch 1.10; DeepSpeed took it from v0.5.5 for its gathers),
  copy between the list and one flat buffer a rank at a time (ProcessGroupNCCL::allgather and ::reduce_scatter: a
  `copy_` and its kernel launch a rank; pytorch/pytorch#33924), after DeepSpeed's Python loop has built the list.
  The device synchronize before each gather leaves the device nothing queued while the host does this, so the
  host's time, `list_host_seconds` a rank a call, is on the critical path, before each unit's compute
  (step.HOST_LISTS): a cost that grows with the ranks.

LIST_HOST_SECONDS_PER_RANK is fitted, as nothing published gives it: the value of benchmarks/large_runs.py's
FIT_LIST_HOST_GRID (0 to 30 us in steps of 1 us) with the least geomean error over its in-sample runs (runs.csv;
`large_runs.py --fit-list-host`), which only Narayanan et al.'s six ZeRO-3 rows move (SC'21 Table 2: GPT 175B on
384-1536 A100s, 530B on 640-2240, DeepSpeed and torch of early 2021): 15 us, 4.20% against 5.12% without it. The
curve is ragged (14 us 4.55%, 16 us 4.45%, 20 us 4.45%), as the six rows cross zero at different values; nothing out
of sample tests it. A Python loop step and a c10d copy launch a rank, each some microseconds of 2021's CPUs and
PyTorch, make it plausible, not more. `--list-host-time` replaces it.
"""

from __future__ import annotations

__all__ = ["LIST_HOST_SECONDS_PER_RANK", "PERSISTENCE_ELEMENTS", "gathered_tensors", "reduced_tensors"]

# deepspeed/runtime/zero/constants.py at v0.3.16 and v0.5.10: ZERO_OPTIMIZATION_PARAM_PERSISTENCE_THRESHOLD_DEFAULT
PERSISTENCE_ELEMENTS = 1e5
# The host's time a rank of one list collective (module docstring: fitted)
LIST_HOST_SECONDS_PER_RANK = 15e-6


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
