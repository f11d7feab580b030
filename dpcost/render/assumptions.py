"""What the numbers rest on, listed under the markdown and html tables: every plan option as given (and, where
it was `auto`, what dpcost chose), the model and topology, the units and the tables the collectives use."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dpcost.units import fmt_bytes, fmt_count, fmt_seconds

if TYPE_CHECKING:
    from dpcost.engine.report import EstimateReport
    from dpcost.options import Options

__all__ = ["common", "plan_assumptions"]

# option field -> the Setup field that holds the value costed
COSTED = {
    "zero": "zero_stage",
    "recompute": "recompute",
    "loss_impl": "loss_impl",
    "grad_dtype": "grad_dtype",
    "seq_len": "seq_len",
    "accumulation": "accumulation",
    "micro_batch": "micro_batch",
    "recipe": "recipe",
    "framework": "framework",
    "bucket_bytes": "bucket_bytes",
    "mfu": "mfu",
}
SIZES = {"bucket_bytes", "first_bucket_bytes"}


def _shown(name: str, value: Any, costed: Any, auto: bool) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if name in SIZES:
        value = None if value is None else fmt_bytes(value, binary=True)
        costed = None if costed is None else fmt_bytes(costed, binary=True)
    if name == "sync_jitter":
        return fmt_seconds(value)
    if isinstance(costed, float):
        costed = f"{costed:.4g}"  # a derived share (the GPU's sustained matmul efficiency), not a typed value
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    if value is None:
        label = "auto" if auto else "default"
        return label if costed is None else f"{label}: {costed}"
    if costed is not None and costed != value:
        return f"{value}, costed as {costed}"
    return str(value)


# Options added after the reports' format was fixed, stated only when given, so that a plan without them reads as
# it always did.
UNSTATED_WHEN_UNSET = frozenset(
    {
        "shard_group", "zeropp", "compression", "powersgd_rank", "sync_every", "streaming", "grad_block",
        "unfused_softmax_fp32", "grad_reduce", "attention_kernel", "optimizer_impl", "grads_between_steps",
        "fused_grouped_mlp", "fp8_output_proj", "pipeline_layout", "fp8_recipe", "cublas_workspace_config",
        "recompute_block", "moe_host_time", "bucket_count", "zero3_fetch", "list_host_time",
    }
)  # fmt: skip


def plan_assumptions(options: Options, report: EstimateReport | None = None, dp: str | None = None) -> list[str]:
    """One line per section of the plan's options (dpcost/options.py), each flag with its value."""
    from dpcost.options import SECTIONS, flag

    lines = []
    if report is not None:
        m, t = report.model, report.topology
        lines.append(f"model: {m.title} ({m.name}), {fmt_count(m.params_total)} parameters derived from its shapes")
        lines.append(f"topology: {t.name}, {t.gpu} with {fmt_bytes(t.hbm_bytes)} of HBM per GPU")
    lines.append(f"data parallel: --dp {dp or options.dp}")
    for section, model in SECTIONS.items():
        if section == "parallel" and options.parallel.trivial:
            continue  # pure data parallelism: no layout to state
        items = []
        for name, info in model.model_fields.items():
            value = getattr(getattr(options, section), name)
            if name in UNSTATED_WHEN_UNSET and value == info.default:
                continue
            if name == "compute_model" and value is None:  # as costed: ops, or flops for a model without per-op times
                value = report.setup.compute_model if report is not None else options.compute.chosen_model
            costed = getattr(report.setup, COSTED[name]) if report is not None and name in COSTED else None
            auto = isinstance(info.json_schema_extra, dict) and bool(info.json_schema_extra.get("auto"))
            items.append(f"{flag(section, name)} {_shown(name, value, costed, auto)}")
        lines.append(f"{section}: " + ", ".join(items))
    return lines + common()


def common() -> list[str]:
    """The conventions every dpcost number follows."""
    from dpcost import __version__
    from dpcost.engine.nccl_tables import NCCL_VERSION

    return [
        "units: 1 GB = 1e9 bytes and GB/s = 1e9 bytes/s; GiB and MiB are labelled as such",
        f"collectives: NCCL {NCCL_VERSION}'s tuner tables on the topology's tiers (docs/collectives.md)",
        f"dpcost {__version__}: closed-form estimates, every formula in docs/reference.md",
    ]
