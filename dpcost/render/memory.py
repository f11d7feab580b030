"""Memory per GPU by ZeRO stage (`dpcost memory`, and the stage table of `dpcost estimate`), with DeepSpeed's own
estimators beside it when asked."""

from __future__ import annotations

from collections.abc import Sequence

from dpcost.engine.memory import DeepSpeedEstimate
from dpcost.engine.report import Memory, StageRow, VariantRow
from dpcost.render.table import Table, gb

__all__ = ["memory_tables", "stage_table"]


def stage_table(memory: Memory, chosen: int | None, variants: Sequence[VariantRow] = ()) -> Table:
    """Memory per GPU at each ZeRO stage, at the phase of the step where it peaks; `<` marks the chosen stage. A
    variant that holds more (engine/variants.py) has its row below: the stage it runs on, with what it adds."""
    stages = memory.stages
    t = Table(
        f"Memory per GPU by ZeRO stage, at its peak (activations with recompute={memory.recompute})",
        [
            "stage",
            "params",
            "grads",
            "optimizer",
            "activations",
            "transient",
            "buffers",
            "allocated",
            "reserved",
            "device",
            "fits",
            "max micro-batch",
            "peak",
        ],
        right=set(range(1, 10)) | {11},
        drop=[
            "max micro-batch",
            "peak",
            "transient",
            "buffers",
            "allocated",
            "reserved",
            "activations",
            "optimizer",
            "grads",
            "params",
        ],
    )
    for m in stages:
        t.rows.append(_row(f"{m.stage}" + (" <" if m.stage == chosen else ""), m, memory.hbm_bytes))
    held = [(v, v.memory) for v in variants if v.memory is not None]
    for v, row in held:
        own = f", recompute {v.recompute}" if v.recompute not in (None, memory.recompute) else ""
        t.rows.append(_row(f"{row.stage} + {v.name}{own}", row, memory.hbm_bytes))
    if any(m.cpu_bytes for m in stages):
        t.notes.append("offloaded to CPU per GPU: " + ", ".join(f"ZeRO-{m.stage} {gb(m.cpu_bytes)}" for m in stages))
    context = stages[0].context_bytes if stages else 0
    t.notes.append(
        "each row at the phase where its memory peaks (peak: forward, backward or optimizer step); activations: kept "
        "for the backward, the loss's included; transient: what that phase adds (the loss's working tensors, a "
        "layer's recomputation); buffers: buckets in flight, DDP's bucket copy, ZeRO-3's gathered blocks, the GEMM "
        "libraries' workspaces; "
        "allocated = torch.cuda.max_memory_allocated; reserved adds the caching allocator's fragmentation; device "
        f"adds the CUDA context and NCCL buffers ({gb(context)}): what nvidia-smi shows and what must fit"
    )
    for v, row in held:
        t.notes.append(f"{row.stage} + {v.name}: ZeRO-{row.stage} holding {gb(v.added_memory_bytes)} per GPU more "
                       f"through the step ({v.added_memory_for})")  # fmt: skip
    return t


def _row(label: str, m: StageRow, hbm_bytes: int) -> list[str]:
    return [
        label,
        gb(m.params_bytes),
        gb(m.grads_bytes),
        gb(m.optimizer_bytes),
        gb(m.activations_bytes),
        gb(m.transient_bytes),
        gb(m.buffers_bytes),
        gb(m.allocated_bytes),
        gb(m.reserved_bytes),
        gb(m.total_bytes),
        ("yes" if m.fits else "NO") + f" / {gb(hbm_bytes)}",
        str(m.max_micro_batch) if m.activations_bytes or m.max_micro_batch else "-",  # "-": activations not counted
        m.peak_phase,
    ]


def memory_tables(memory: Memory, deepspeed: Sequence[DeepSpeedEstimate] = ()) -> list[Table]:
    t = stage_table(memory, None)
    t.data = [m.model_dump() for m in memory.stages]
    if memory.note:
        t.notes.append(memory.note)
    tables = [t]
    if deepspeed:
        ds = Table(
            "DeepSpeed's estimators (model states; GB printed by DeepSpeed are GiB)",
            ["per CPU", "per GPU", "options"],
            right={0, 1},
        )
        for e in deepspeed:
            if e.stage == 2:
                opts = f"ZeRO-2 offload_optimizer={'cpu' if e.offload == 'optimizer' else 'none'}"
            else:
                param = "cpu" if e.offload == "params" else "none"
                optim = "cpu" if e.offload in ("params", "optimizer") else "none"
                opts = f"ZeRO-3 offload_param={param}, offload_optimizer={optim}, zero_init={int(bool(e.zero_init))}"
            ds.rows.append([f"{e.cpu_bytes / 2**30:.2f}GB", f"{e.gpu_bytes / 2**30:.2f}GB", opts])
            ds.data.append(
                {
                    "stage": e.stage,
                    "offload": e.offload,
                    "zero_init": e.zero_init,
                    "per_cpu_bytes": int(e.cpu_bytes),
                    "per_gpu_bytes": int(e.gpu_bytes),
                }
            )
        tables.append(ds)
    return tables
