"""An Accelerate config YAML as a plan: distributed_type, num_processes, mixed_precision, fsdp_config and
deepspeed_config (whose deepspeed_config_file is read as a DeepSpeed JSON).

Keys as accelerate/commands/config/config_args.py writes them; FSDP's sharding strategies as
accelerate/utils/constants.py names them (FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD, HYBRID_SHARD_ZERO2, or
their numbers 1-5); FSDP mixed precision as FullyShardedDataParallelPlugin.set_mixed_precision sets it
(param_dtype = reduce_dtype = the mixed-precision dtype: gradients are reduced in bf16).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dpcost.training_configs import NOT_PRICED, Reading, Setting, TrainingConfig

__all__ = ["read"]

KIND = "Accelerate config"
STRATEGIES = {  # name -> (ZeRO stage, hybrid: shard within a machine)
    "FULL_SHARD": (3, False),
    "SHARD_GRAD_OP": (2, False),
    "NO_SHARD": (0, False),
    "HYBRID_SHARD": (3, True),
    "HYBRID_SHARD_ZERO2": (2, True),
}
NUMBERED = dict(zip(("1", "2", "3", "4", "5"), STRATEGIES, strict=True))


def _positive(r: Reading, key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise r.error(key, f"must be a positive integer, got {value!r}")
    return value


def read(doc: dict[str, Any], path: str, folder: Path) -> TrainingConfig:
    r = Reading(path, KIND)
    kind = str(doc.get("distributed_type"))
    processes = _positive(r, "num_processes", doc.get("num_processes", 1))
    machines = _positive(r, "num_machines", doc.get("num_machines", 1))
    precision = str(doc.get("mixed_precision", "no"))
    if precision not in ("no", "bf16", "fp16", "fp8"):
        raise r.error("mixed_precision", f"must be no, bf16, fp16 or fp8, got {precision!r}")
    dp: int | None = processes
    r.note("num_processes", processes, f"--dp {processes}", "one replica per process")
    extra: list[Setting] = []
    options: dict[str, str] = {}
    if kind == "MULTI_GPU":
        r.use("distributed_type", kind, "framework", "ddp", "PyTorch DDP")
        _mixed(r, precision, "ddp")
    elif kind == "FSDP":
        r.use("distributed_type", kind, "framework", "fsdp")
        _fsdp(r, doc.get("fsdp_config") or {}, processes, machines)
        _mixed(r, precision, "fsdp")
    elif kind == "DEEPSPEED":
        dp, extra, options = _deepspeed(r, doc.get("deepspeed_config") or {}, folder, processes)
        if precision == "fp16" and "grad_dtype" not in options:
            r.use("mixed_precision", precision, "grad_dtype", "fp16")
    else:
        raise r.error("distributed_type", f"must be MULTI_GPU, FSDP or DEEPSPEED, got {kind!r}")
    for key, value in doc.items():
        if key not in ("distributed_type", "num_processes", "num_machines", "mixed_precision", "fsdp_config",
                       "deepspeed_config"):  # fmt: skip
            r.ignore(key, value, NOT_PRICED)
    config = r.done(dp=dp)
    return TrainingConfig(
        path=config.path,
        kind=config.kind,
        options={**options, **config.options},
        settings=config.settings + tuple(extra),
        dp=dp,
        refusals=config.refusals,
        micro_from_dp=config.micro_from_dp,
    )


def _mixed(r: Reading, precision: str, framework: str) -> None:
    if precision == "no":
        r.use("mixed_precision", precision, "recipe", "ddp", "fp32 training: 4 + 4 + 8 bytes per parameter")
        r.use("mixed_precision", precision, "grad_dtype", "fp32")
    elif framework == "fsdp":
        grad = "bf16" if precision in ("bf16", "fp8") else "fp16"
        r.use("mixed_precision", precision, "grad_dtype", grad, "FSDP reduces in the mixed-precision dtype")
    if precision == "fp8":
        r.use("mixed_precision", precision, "compute_dtype", "fp8")


def _fsdp(r: Reading, fsdp: dict[str, Any], processes: int, machines: int) -> None:
    f = "fsdp_config."
    strategy = str(fsdp.get("fsdp_sharding_strategy", "FULL_SHARD"))
    strategy = NUMBERED.get(strategy, strategy)
    if strategy not in STRATEGIES:
        raise r.error(f + "fsdp_sharding_strategy", f"must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    stage, hybrid = STRATEGIES[strategy]
    r.use(f + "fsdp_sharding_strategy", strategy, "zero", str(stage))
    if hybrid:
        if processes % machines:
            raise r.error("num_machines", f"{machines} does not divide num_processes {processes}")
        r.use(f + "fsdp_sharding_strategy", strategy, "shard_group", str(processes // machines), "one machine")
    for key, value in fsdp.items():
        if key == "fsdp_sharding_strategy":
            continue
        if key == "fsdp_activation_checkpointing":
            r.use(f + key, value, "recompute", "full" if value is True else "none")
        elif key == "fsdp_offload_params" and value is True:
            r.use(f + key, value, "offload", "params", "FSDP's CPUOffload: parameters, gradients and the step")
        else:
            r.ignore(f + key, value, NOT_PRICED)


def _deepspeed(
    r: Reading, ds: dict[str, Any], folder: Path, processes: int
) -> tuple[int | None, list[Setting], dict[str, str]]:
    """DEEPSPEED: the deepspeed_config keys, or the JSON its deepspeed_config_file names (read as --from reads a
    DeepSpeed JSON)."""
    d = "deepspeed_config."
    file = ds.get("deepspeed_config_file")
    if file:
        from dpcost.training_configs import read_training_config

        inner = read_training_config(str(folder / str(file)), where=r.path)
        r.note(d + "deepspeed_config_file", file, "", f"read as a {inner.kind}")
        if inner.dp is not None and inner.dp != processes:
            raise r.error("num_processes", f"{processes}, but {file} fixes DP {inner.dp}")
        r.refusals.update(inner.refusals)
        r.micro_from_dp = inner.micro_from_dp
        return processes, list(inner.settings), dict(inner.options)
    r.use("distributed_type", "DEEPSPEED", "framework", "deepspeed")
    stage = ds.get("zero_stage", 0)
    if stage not in (0, 1, 2, 3) or isinstance(stage, bool):
        raise r.error(d + "zero_stage", f"must be 0, 1, 2 or 3, got {stage!r}")
    r.use(d + "zero_stage", stage, "zero", str(stage))
    for key, value in ds.items():
        if key == "zero_stage":
            continue
        if key in ("offload_optimizer_device", "offload_param_device") and value in ("cpu", "nvme"):
            what = "params" if key == "offload_param_device" else "optimizer"
            if what == "optimizer" and r.options.get("offload") == "params":
                continue
            r.use(d + key, value, "offload", what)
        elif key == "gradient_accumulation_steps":
            r.use(d + key, value, "accumulation", str(_positive(r, d + key, value)))
        else:
            r.ignore(d + key, value, NOT_PRICED)
    return processes, [], {}
