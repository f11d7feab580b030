"""An Accelerate config YAML as a plan: distributed_type, num_processes, mixed_precision, fsdp_config and
deepspeed_config (whose deepspeed_config_file is read as a DeepSpeed JSON).

Keys as accelerate/commands/config/config_args.py writes them; FSDP's sharding strategies as
accelerate/utils/constants.py names them (FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD, HYBRID_SHARD_ZERO2, or
their numbers 1-5), given as fsdp_sharding_strategy or, since Accelerate 1.6, fsdp_reshard_after_forward, which
FSDP2 (fsdp_version 2) takes as a bool (true: FULL_SHARD, false: SHARD_GRAD_OP; FullyShardedDataParallelPlugin);
FSDP mixed precision as FullyShardedDataParallelPlugin.set_mixed_precision sets it (param_dtype = reduce_dtype = the
mixed-precision dtype: gradients are reduced in bf16). parallelism_config (Accelerate's ParallelismConfig:
dp_replicate_size x dp_shard_size x tp_size x cp_size processes) gives the layout: TP and CP, DP as replicate x
shard, sharding within dp_shard_size where there are replicas.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dpcost.engine.memory import offload_applies
from dpcost.training_configs import (
    NOT_PRICED,
    PARAMS_OFFLOAD_BELOW_STAGE_3,
    SCRIPTS_OPTIMIZER,
    Reading,
    Setting,
    TrainingConfig,
)

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
    layout = _parallelism(r, doc.get("parallelism_config"), processes) if "parallelism_config" in doc else None
    if layout is None:
        r.note("num_processes", processes, f"--dp {processes}", "one replica per process")
    else:
        dp = layout[0]
    extra: list[Setting] = []
    options: dict[str, str] = {}
    if kind == "MULTI_GPU":
        r.use("distributed_type", kind, "framework", "ddp", "PyTorch DDP")
        _mixed(r, precision, "ddp")
    elif kind == "FSDP":
        r.use("distributed_type", kind, "framework", "fsdp")
        fsdp = r.section(doc, "fsdp_config", "fsdp_config", "a mapping of FSDP settings")
        _fsdp(r, fsdp, processes, machines, layout)
        _mixed(r, precision, "fsdp")
    elif kind == "DEEPSPEED":
        deepspeed = r.section(doc, "deepspeed_config", "deepspeed_config", "a mapping of DeepSpeed settings")
        dp, extra, options = _deepspeed(r, deepspeed, folder, processes)
        if precision == "fp16" and "grad_dtype" not in options:
            r.use("mixed_precision", precision, "grad_dtype", "fp16")
        elif precision == "no" and not deepspeed.get("deepspeed_config_file"):
            # the plugin writes bf16 and fp16 enabled false (utils/dataclasses.py DeepSpeedPlugin): fp32 DeepSpeed
            _mixed(r, precision, "deepspeed")
    else:
        raise r.error("distributed_type", f"must be MULTI_GPU, FSDP or DEEPSPEED, got {kind!r}")
    _dynamo(r, doc)
    for key, value in doc.items():
        if key not in ("distributed_type", "num_processes", "num_machines", "mixed_precision", "fsdp_config",
                       "deepspeed_config", "parallelism_config", "dynamo_config", "dynamo_backend"):  # fmt: skip
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
        bucket_from_hidden=config.bucket_from_hidden,
    )


def _dynamo(r: Reading, doc: dict[str, Any]) -> None:
    """torch.compile as Accelerate applies it to the model when its dynamo backend is not NO (accelerator.py at
    16cb6eb8): dynamo_config.dynamo_backend, or the legacy top-level dynamo_backend it converts (config_args.py).
    INDUCTOR fuses the memory-bound ops (--compile); EAGER and AOT_EAGER trace without fusing, priced as eager; the
    other backends are not priced."""
    section = doc.get("dynamo_config")
    key, backend = ("dynamo_backend", doc.get("dynamo_backend"))
    if isinstance(section, dict):
        key, backend = "dynamo_config.dynamo_backend", section.get("dynamo_backend", backend)
        for name, value in section.items():
            if name != "dynamo_backend":
                r.ignore(f"dynamo_config.{name}", value, NOT_PRICED)
    if backend is None:
        return
    name = str(backend).upper()
    if name == "INDUCTOR":
        r.use(key, backend, "compile", "true", "torch.compile with inductor's fused kernels")
    elif name == "NO":
        r.ignore(key, backend, "off")
    elif name in ("EAGER", "AOT_EAGER"):
        r.ignore(key, backend, "traced without inductor's fusion: priced as eager")
    else:
        r.ignore(key, backend, "not priced: a compile backend other than inductor")


def _mixed(r: Reading, precision: str, framework: str) -> None:
    if precision == "no":
        r.use("mixed_precision", precision, "recipe", "ddp", "fp32 training: 4 + 4 + 8 bytes per parameter")
        r.use("mixed_precision", precision, "grad_dtype", "fp32")
    elif framework == "fsdp":
        grad = "bf16" if precision in ("bf16", "fp8") else "fp16"
        r.use("mixed_precision", precision, "grad_dtype", grad, "FSDP reduces in the mixed-precision dtype")
    if precision == "fp8":
        r.use("mixed_precision", precision, "compute_dtype", "fp8")


def _parallelism(r: Reading, config: Any, processes: int) -> tuple[int, int, int]:
    """parallelism_config: (DP, replicas, shard size), with TP and CP set as options."""
    p = "parallelism_config."
    if not isinstance(config, dict):
        raise r.error("parallelism_config", "must be a mapping of sizes")
    sp = _positive(r, p + "parallelism_config_sp_size", config.get("parallelism_config_sp_size", 1))
    if sp > 1:  # parallelism_config.py at 16cb6eb8: sp_size counts in the total, a dimension of its own
        raise r.error(p + "parallelism_config_sp_size", "Accelerate's sequence parallelism (sp_size) is not costed: "
                      "give the plan as flags, its sequence split as --cp")  # fmt: skip
    size = {}
    for name in ("dp_replicate", "dp_shard", "tp", "cp"):
        key = f"parallelism_config_{name}_size"
        size[name] = _positive(r, p + key, config.get(key, 1))
    for key, value in config.items():
        if key == "parallelism_config_sp_size":
            r.ignore(p + key, value, "1: no sequence parallelism")
        elif key not in {f"parallelism_config_{name}_size" for name in size}:
            r.ignore(p + key, value, NOT_PRICED)
    total = size["dp_replicate"] * size["dp_shard"] * size["tp"] * size["cp"]
    if total != processes:
        raise r.error(p + "*_size", f"replicate x shard x TP x CP = {total}, not num_processes {processes}")
    for name, option in (("tp", "tp"), ("cp", "cp")):
        key = p + f"parallelism_config_{name}_size"
        r.use(key, size[name], option, str(size[name]))
        if name == "tp" and size["tp"] > 1:
            r.use(key, size[name], "sequence_parallel", "true", "Accelerate's TP is torch's, sequence-parallel")
    dp = size["dp_replicate"] * size["dp_shard"]
    r.note(p + "parallelism_config_dp_*_size", f"{size['dp_replicate']} x {size['dp_shard']}", f"--dp {dp}",
           "replicate x shard")  # fmt: skip
    return dp, size["dp_replicate"], size["dp_shard"]


def _sharding(r: Reading, fsdp: dict[str, Any]) -> tuple[str, str]:
    """The FSDP sharding strategy and the key that gave it: fsdp_sharding_strategy, else fsdp_reshard_after_forward
    (a strategy's name, or FSDP2's bool), else Accelerate's default FULL_SHARD."""
    key = "fsdp_reshard_after_forward"
    if "fsdp_sharding_strategy" in fsdp or key not in fsdp:
        key = "fsdp_sharding_strategy"
    value = fsdp.get(key, "FULL_SHARD")
    if isinstance(value, bool):  # FSDP2: reshard after the forward, or keep the parameters for the backward
        return ("FULL_SHARD" if value else "SHARD_GRAD_OP"), key
    strategy = NUMBERED.get(str(value), str(value))
    if strategy not in STRATEGIES:
        raise r.error("fsdp_config." + key, f"must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    return strategy, key


def _fsdp(r: Reading, fsdp: dict[str, Any], processes: int, machines: int, layout: tuple[int, int, int] | None) -> None:
    """fsdp_config; `layout`: parallelism_config's (DP, replicas, shard size), whose replicas and shard groups stand
    for the strategy's hybrid sharding."""
    f = "fsdp_config."
    strategy, key = _sharding(r, fsdp)
    stage, hybrid = STRATEGIES[strategy]
    replicas, shard = (layout[1], layout[2]) if layout is not None else (1, 0)
    if replicas > 1 and shard == 1:
        stage = 0  # replicas only: nothing left to shard (torch's DDP semantics)
    r.use(f + key, fsdp.get(key, "(absent)"), "zero", str(stage),
          strategy + ("" if key in fsdp else ", Accelerate's default"))  # fmt: skip
    if replicas > 1 and shard > 1:
        r.use("parallelism_config.parallelism_config_dp_shard_size", shard, "shard_group", str(shard),
              "HSDP: shard within, replicate across")  # fmt: skip
    elif hybrid and layout is None:
        if processes % machines:
            raise r.error("num_machines", f"{machines} does not divide num_processes {processes}")
        r.use(f + key, strategy, "shard_group", str(processes // machines), "one machine")
    for name, value in fsdp.items():
        if name == key:
            continue
        if name == "fsdp_activation_checkpointing":
            r.use(f + name, value, "recompute", "full" if value is True else "none")
        elif name == "fsdp_offload_params" and value is True:
            r.use(f + name, value, "offload", "params", "FSDP's CPUOffload: parameters, gradients and the step")
        elif name in ("fsdp_sharding_strategy", "fsdp_reshard_after_forward"):
            r.ignore(f + name, value, f"{key} decides the sharding")
        elif name == "fsdp_auto_wrap_policy" and value in WRAPS_UNPRICED:
            r.ignore(f + name, value, WRAPS_UNPRICED[value])
        elif name == "fsdp_backward_prefetch" and value == "NO_PREFETCH":
            r.ignore(f + name, value, "not priced: no gather prefetched in the backward; dpcost prefetches one unit")
        else:
            r.ignore(f + name, value, NOT_PRICED)


# FSDP units other than a transformer block each, which dpcost prices (utils/dataclasses.py at 16cb6eb8: NO_WRAP
# wraps nothing, one unit; SIZE_BASED_WRAP by fsdp_min_num_params)
WRAPS_UNPRICED = {
    "NO_WRAP": "not priced: one FSDP unit, the whole model gathered at once; dpcost prices a unit per block",
    "SIZE_BASED_WRAP": "not priced: units by parameter count (fsdp_min_num_params); dpcost prices a unit per block",
}


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
        r.bucket_from_hidden = inner.bucket_from_hidden
        return processes, list(inner.settings), dict(inner.options)
    r.use("distributed_type", "DEEPSPEED", "framework", "deepspeed")
    # the plugin writes DeepSpeed a config without an optimizer block
    r.use("distributed_type", "DEEPSPEED", "optimizer_impl", "foreach", SCRIPTS_OPTIMIZER)
    stage = ds.get("zero_stage", 0)
    if stage not in (0, 1, 2, 3) or isinstance(stage, bool):
        raise r.error(d + "zero_stage", f"must be 0, 1, 2 or 3, got {stage!r}")
    r.use(d + "zero_stage", stage, "zero", str(stage))
    for key, value in ds.items():
        if key == "zero_stage":
            continue
        if key in ("offload_optimizer_device", "offload_param_device") and value in ("cpu", "nvme"):
            what = "params" if key == "offload_param_device" else "optimizer"
            if what == "params" and not offload_applies(what, stage):  # the plugin writes it to offload_param
                r.ignore(d + key, value, PARAMS_OFFLOAD_BELOW_STAGE_3)
                continue
            if what == "optimizer" and r.options.get("offload") == "params":
                continue
            r.use(d + key, value, "offload", what)
        elif key == "gradient_accumulation_steps":
            r.use(d + key, value, "accumulation", str(_positive(r, d + key, value)))
        else:
            r.ignore(d + key, value, NOT_PRICED)
    return processes, [], {}
