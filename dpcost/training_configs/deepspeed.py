"""A DeepSpeed JSON as a plan: its batch, ZeRO, precision and optimizer keys.

Keys and defaults as deepspeed/runtime/config.py and deepspeed/runtime/zero/config.py@v0.16.0 read them:
train_batch_size = train_micro_batch_size_per_gpu x gradient_accumulation_steps x world size (DP, without model
parallelism); reduce_bucket_size counts elements (5e8); "auto" is a value the Hugging Face Trainer fills in.
"""

from __future__ import annotations

import math
from typing import Any

from dpcost.engine.memory import offload_applies
from dpcost.training_configs import (
    NOT_PRICED,
    PARAMS_OFFLOAD_BELOW_STAGE_3,
    SCRIPTS_OPTIMIZER,
    Reading,
    TrainingConfig,
)

__all__ = ["looks_like", "read"]

KIND = "DeepSpeed JSON"
MARKERS = ("train_micro_batch_size_per_gpu", "train_batch_size", "zero_optimization", "bf16", "fp16")

# optimizer.type -> dpcost's optimizer (its states per parameter); DeepSpeed's Adam family keeps two fp32 moments
OPTIMIZERS = {
    "adam": "adamw",
    "adamw": "adamw",
    "fusedadam": "adamw",
    "cpuadam": "adamw",
    "lamb": "adamw",  # LAMB keeps Adam's two moments
    "onebitadam": "adamw",
    "zerooneadam": "adamw",
    "onebitlamb": "adamw",
    "muon": "muon",  # MuonWithAuxAdam: Muon on the weight matrices, AdamW on the rest (engine/muon.py)
}
COMPRESSED = {"onebitadam": "1bit-adam", "zerooneadam": "01-adam", "onebitlamb": "1bit-adam"}
ZEROPP = {"zero_hpz_partition_size": "hpz", "zero_quantized_weights": "qwz", "zero_quantized_gradients": "qgz"}


# The offload switches DeepSpeed deprecated, as its config maps them (deepspeed/runtime/zero/config.py at 1b88ac36:
# cpu_offload -> offload_optimizer {device: cpu}, cpu_offload_param -> offload_param {device: cpu}), and v0.3's
# spelling of the latter (its ZeRO-3 release configs: cpu_offload_params).
DEPRECATED_OFFLOAD = {
    "cpu_offload": ("optimizer", "DeepSpeed's deprecated name for offload_optimizer to the CPU"),
    "cpu_offload_param": ("params", "DeepSpeed's deprecated name for offload_param to the CPU"),
    "cpu_offload_params": ("params", "DeepSpeed v0.3's name for offload_param to the CPU"),
}


def looks_like(doc: dict[str, Any]) -> bool:
    return any(key in doc for key in MARKERS)


def _given(value: Any) -> bool:
    return value is not None and value != "auto"


def _whole(r: Reading, key: str, value: Any) -> int:
    # Python's json reads NaN and Infinity: the finite test comes before int() meets them
    number = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not number or value != int(value) or value < 1:
        raise r.error(key, f"must be a positive integer, got {value!r}")
    return int(value)


def read(doc: dict[str, Any], path: str) -> TrainingConfig:
    r = Reading(path, KIND)
    r.use("(a DeepSpeed config)", "deepspeed", "framework", "deepspeed", "DeepSpeed's schedule, buckets and memory")
    dp = _batch(r, doc)
    model = _model_dtype(doc)
    grad_bytes = _precision(r, doc, model)
    _zero(r, doc.get("zero_optimization"), grad_bytes)
    _optimizer(r, doc.get("optimizer"))
    _grad_accum_dtype(r, doc.get("data_types"), model)
    zero = doc.get("zero_optimization") or {}
    if r.options.get("optimizer") == "muon" and r.options.get("zero") == "3" and zero.get("reduce_scatter", True):
        # stage3.py refuses Muon with reduce_scatter, which is on unless the config turns it off (zero/config.py)
        r.refuse("optimizer", "optimizer.type", "Muon at ZeRO-3 needs reduce_scatter false, as DeepSpeed asserts")
    for key, what in LAYOUTS.items():
        if _layout_on(key, doc.get(key)):
            raise r.error(key, f"{what} is not costed: dpcost costs TP, CP and EP as Megatron-LM runs them; give "
                          "the plan as flags without --from")  # fmt: skip
        if key in doc:
            r.ignore(key, doc[key], "off")
    for k in ("bf16", "fp16"):  # the section's other keys: loss scaling, and the states' dtypes
        for sub, value in (doc.get(k) or {}).items() if isinstance(doc.get(k), dict) else ():
            if sub != "enabled":
                r.ignore(f"{k}.{sub}", value, SIXTEEN_BIT_UNPRICED.get(sub, NOT_PRICED))
    seen = {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "bf16", "fp16",
            "zero_optimization", "optimizer", "communication_data_type", "data_types", *LAYOUTS}  # fmt: skip
    for key, value in doc.items():
        if key in seen:
            continue
        if key == "activation_checkpointing":
            r.ignore(key, value, "applies only where the model calls deepspeed.checkpointing: give --recompute")
        elif key in WHERE_THE_MODEL_USES:
            r.ignore(key, value, WHERE_THE_MODEL_USES[key])
        elif key in TOP_UNPRICED:
            off = (isinstance(value, dict) and value.get("enabled") is False) or value is False
            r.ignore(key, value, "off" if off else TOP_UNPRICED[key])
        else:
            r.ignore(key, value, NOT_PRICED)
    return r.done(dp=dp)


# Sections that apply only where the script builds what they configure: said so, not as inert
WHERE_THE_MODEL_USES = {
    "pipeline": "applies to a PipelineModule the script builds: give --pp for its stages",
    "sparse_attention": "applies only where the model uses DeepSpeed's sparse attention; dpcost prices dense",
}


def _layout_on(key: str, value: Any) -> bool:
    """Whether the file turns on a layout LAYOUTS names: AutoTP above size 1 (tensor_parallel/config.py
    autotp_size), Ulysses above 1 (config.py sequence_parallel_size), AutoEP enabled above size 1
    (auto_ep_config.py)."""
    if key == "sequence_parallel_size":
        return isinstance(value, int) and not isinstance(value, bool) and value > 1
    if not isinstance(value, dict):
        return False
    size = value.get("autotp_size" if key == "tensor_parallel" else "autoep_size", 1)
    above_one = isinstance(size, int) and not isinstance(size, bool) and size > 1
    return above_one and (key == "tensor_parallel" or value.get("enabled") is True)


def _batch(r: Reading, doc: dict[str, Any]) -> int | None:
    """The batch keys, and the DP size when all three fix it (DeepSpeed's _batch_assertion)."""
    keys = ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")
    given = {k: _whole(r, k, doc[k]) for k in keys if _given(doc.get(k))}
    for k in keys:
        if doc.get(k) == "auto":
            r.ignore(k, "auto", "the Hugging Face Trainer fills it in from its own arguments")
    total, micro, accum = (given.get(k) for k in keys)
    if micro is not None:
        r.use(keys[1], micro, "micro_batch", str(micro))
    if accum is not None:
        r.use(keys[2], accum, "accumulation", str(accum))
    if total is None:
        return None
    if micro is not None and accum is not None:
        if total % (micro * accum):
            raise r.error(keys[0], f"{total} is not a multiple of micro-batch {micro} x accumulation {accum}")
        dp = total // (micro * accum)
        r.note(keys[0], total, f"--dp {dp}", f"{total} / ({micro} x {accum})")
        return dp
    if accum is not None:  # DeepSpeed derives the micro-batch from the world size: so does apply, from DP
        r.use(keys[0], total, "global_batch", str(total), f"micro-batch = {total} / ({accum} x DP)")
        r.micro_from_dp = (keys[0], total, accum)
        return None
    r.use(keys[0], total, "global_batch", str(total))
    return None


def _precision(r: Reading, doc: dict[str, Any], model: str) -> int:
    """bf16 / fp16 / fp32 training (`model`: _model_dtype), and the bytes per gradient element the reduction
    moves."""
    for k in ("bf16", "fp16"):
        if isinstance(doc.get(k), dict) and doc[k].get("enabled") == "auto":
            r.ignore(f"{k}.enabled", "auto", "the Hugging Face Trainer fills it in: priced as bf16")
    if all(isinstance(doc.get(k), dict) and doc[k].get("enabled") is True for k in ("bf16", "fp16")):
        raise r.error("bf16.enabled", "bf16 and fp16 cannot both be enabled (DeepSpeed refuses it)")
    comm = doc.get("communication_data_type")
    if model == "fp32":
        r.use("bf16.enabled", False, "recipe", "ddp", "fp32 training: 4 + 4 + 8 bytes per parameter")
        grad = "fp32"
    else:
        grad = model
        if grad == "fp16" and not _given(comm):  # the recipe's own reduction is bf16's: say fp16's
            r.use("fp16.enabled", True, "grad_dtype", "fp16", "16-bit training: fp16 gradients")
        else:
            r.note(f"{model}.enabled", True, "", f"16-bit training: {grad} gradients")
    if _given(comm):
        names = {"fp32": "fp32", "fp16": "fp16", "bf16": "bf16", "bfp16": "bf16"}
        if str(comm).lower() not in names:
            raise r.error("communication_data_type", f"must be fp32, fp16 or bf16, got {comm!r}")
        grad = names[str(comm).lower()]
        r.use("communication_data_type", comm, "grad_dtype", grad)
    elif grad == "fp32":
        r.use("bf16.enabled", False, "grad_dtype", "fp32", "fp32 training reduces fp32 gradients")
    return 4 if grad == "fp32" else 2


# DeepSpeed's dtype names (runtime/config.py DtypeEnum at edaa722, matched exactly)
DTYPE_NAMES = {"torch.float32": "fp32", "fp32": "fp32", "float32": "fp32", "float": "fp32",
               "torch.bfloat16": "bf16", "bf16": "bf16", "bfloat16": "bf16",
               "torch.float16": "fp16", "fp16": "fp16", "float16": "fp16", "half": "fp16",
               "torch.int8": "int8", "int8": "int8"}  # fmt: skip


def _model_dtype(doc: dict[str, Any]) -> str:
    """The model's dtype, as _precision reads the 16-bit sections (bf16's "auto" priced as bf16)."""
    if isinstance(doc.get("fp16"), dict) and doc["fp16"].get("enabled") is True:
        return "fp16"
    if isinstance(doc.get("bf16"), dict) and doc["bf16"].get("enabled") in (True, "auto"):
        return "bf16"
    return "fp32"


def _grad_accum_dtype(r: Reading, data_types: Any, model: str) -> None:
    """data_types.grad_accum_dtype, as the engine takes it (engine.py get_data_types and
    _do_optimizer_sanity_check at edaa722): the model's dtype by default; fp32 with a bf16 model runs BF16_Optimizer
    at ZeRO stage 1 without CPU offload (--grad-accum-dtype fp32); any dtype but the model's is refused by the
    engine at stage 0, and runs ZeRO's own optimizer at stages 1-3, which dpcost does not price so."""
    if data_types is None:
        return
    key = "data_types.grad_accum_dtype"
    if not isinstance(data_types, dict):
        raise r.error("data_types", 'must be a mapping, as {"grad_accum_dtype": "fp32"}')
    for name, value in data_types.items():
        if name != "grad_accum_dtype":
            r.ignore(f"data_types.{name}", value, NOT_PRICED)
    value = data_types.get("grad_accum_dtype")
    if value is None:
        return
    if not isinstance(value, str) or value not in DTYPE_NAMES:
        raise r.error(key, f"must be one of {', '.join(sorted(DTYPE_NAMES))} (DeepSpeed's DtypeEnum), got {value!r}")
    accum = DTYPE_NAMES[value]
    if accum == model:
        r.ignore(key, value, "the model's dtype: what DeepSpeed accumulates in by default")
    elif r.options.get("zero") == "0":
        raise r.error(key, f"{accum} with a {model} model at ZeRO stage 0: DeepSpeed's engine refuses the mix "
                      "(engine.py _do_optimizer_sanity_check, NotImplementedError)")  # fmt: skip
    elif model == "bf16" and accum == "fp32" and r.options.get("zero") == "1" and "offload" not in r.options:
        r.use(key, value, "grad_accum_dtype", "fp32", "BF16_Optimizer: an fp32 gradient buffer kept beside the bf16 "
              "gradients (engine.py _do_optimizer_sanity_check)")  # fmt: skip
    else:
        r.ignore(key, value, "not priced: ZeRO's own optimizer accumulating in another dtype than the model's")


def _zero(r: Reading, zero: Any, grad_bytes: int) -> None:
    if zero is None:
        r.use("zero_optimization", None, "zero", "0", "absent: DeepSpeed runs stage 0")
        return
    if not isinstance(zero, dict):
        raise r.error("zero_optimization", "must be a mapping of ZeRO settings")
    key = "zero_optimization."
    stage = zero.get("stage", 0)
    if stage not in (0, 1, 2, 3) or isinstance(stage, bool):
        raise r.error(key + "stage", f"must be 0, 1, 2 or 3, got {stage!r}")
    r.use(key + "stage", stage, "zero", str(stage), "" if "stage" in zero else "absent: DeepSpeed's default 0")
    for name, value in zero.items():
        k = key + name
        if name == "reduce_bucket_size" and value == "auto":
            r.bucket_from_hidden = (k, grad_bytes)
            why = f"the Hugging Face Trainer fills it: hidden^2 elements x {grad_bytes} bytes"
            r.note(k, value, "--bucket-size", why)
            continue
        if name == "stage" or value == "auto":
            if value == "auto":
                r.ignore(k, value, "the Hugging Face Trainer fills it in: DeepSpeed's default is priced")
            continue
        if name == "reduce_bucket_size":
            elements = _elements(r, k, value)
            r.use(
                k, value, "bucket_bytes", f"{elements * grad_bytes:.0f}B", f"{elements:,} elements x {grad_bytes} bytes"
            )
        elif name == "overlap_comm":
            if not isinstance(value, bool):
                raise r.error(k, f"must be true or false, got {value!r}")
            r.use(k, value, "overlap_comm", "true" if value else "false")
        elif name in ("offload_optimizer", "offload_param"):
            device = value.get("device", "none") if isinstance(value, dict) else None
            if device not in ("none", "cpu", "nvme"):
                raise r.error(k + ".device", f"must be none, cpu or nvme, got {device!r}")
            if device == "none":
                r.ignore(k, device, "no offload")
                continue
            what = "optimizer" if name == "offload_optimizer" else "params"
            if what == "params" and not offload_applies(what, stage):
                r.ignore(k + ".device", device, PARAMS_OFFLOAD_BELOW_STAGE_3)
                continue
            nvme = "; NVMe: GPU memory as with CPU offload, its bandwidth not modelled" if device == "nvme" else ""
            if what == "optimizer" and r.options.get("offload") == "params":
                r.note(k + ".device", device, "", "covered by offload_param (params offload moves both)" + nvme)
                continue
            r.use(k + ".device", device, "offload", what, nvme.removeprefix("; "))
            for sub, setting in value.items():  # offload_config.py: the device's other settings
                if sub == "ratio" and setting != 1:
                    r.ignore(f"{k}.ratio", setting, "costed as the whole optimizer offloaded, not this fraction")
                elif sub != "device":
                    r.ignore(f"{k}.{sub}", setting, NOT_PRICED)
        elif name in DEPRECATED_OFFLOAD:
            if not isinstance(value, bool):
                raise r.error(k, f"must be true or false, got {value!r}")
            what, spelt = DEPRECATED_OFFLOAD[name]
            if not value:
                r.ignore(k, value, "no offload")
            elif what == "params" and not offload_applies(what, stage):
                r.ignore(k, value, PARAMS_OFFLOAD_BELOW_STAGE_3)
            elif what == "optimizer" and r.options.get("offload") == "params":
                r.note(k, value, "", f"{spelt}; covered by the parameters' offload (it moves both)")
            else:
                r.use(k, value, "offload", what, spelt)
        elif name in ZEROPP:
            on = value > 1 if name == "zero_hpz_partition_size" and not isinstance(value, bool) else value is True
            if on:
                parts = [p for p in r.options.get("zeropp", "").split(",") if p] + [ZEROPP[name]]
                r.use(k, value, "zeropp", ",".join(parts), "ZeRO++ (engine/variants.py)")
            else:
                r.ignore(k, value, "off")
        elif name == "reduce_scatter" and value is False:
            r.ignore(k, value, "not modelled: stages 1-2 priced with DeepSpeed's default reduce path")
        elif name in ("allgather_bucket_size", "stage3_prefetch_bucket_size"):
            r.ignore(k, value, "not modelled: dpcost gathers stage 1-2 once per group, stage 3 a unit ahead")
        elif name == "mics_shard_size" and isinstance(value, int) and not isinstance(value, bool) and value > 0:
            if stage != 3:  # engine.py: MiCS_Optimizer at stage 3 only
                r.ignore(k, value, "applies at stage 3 only (MiCS), which this file does not run")
            else:
                r.use(k, value, "shard_group", str(value), "MiCS: states sharded within groups of N (mics.py)")
        elif name == "sub_group_size":
            if stage != 3:
                r.ignore(k, value, "applies at stage 3 only (its optimizer's sub-groups), which this file does not run")
            else:
                r.use(k, value, "sub_group_size", str(_elements(r, k, value, least=0)))
        elif name in PRICED_AT_DEFAULT:
            r.ignore(k, value, PRICED_AT_DEFAULT[name])
        elif name in ZERO_UNPRICED:
            r.ignore(k, value, ZERO_UNPRICED[name])
        elif name == "contiguous_gradients" and value is False:
            r.ignore(k, value, "not priced: no contiguous gradient buffer (stage 3's bucket of it is priced)")
        else:
            r.ignore(k, value, NOT_PRICED)


# zero_optimization keys that change what stage 3 holds or gathers, which dpcost prices at DeepSpeed's defaults
# (runtime/zero/config.py at v0.19.5): said as not read, not as inert
PRICED_AT_DEFAULT = {
    "stage3_max_live_parameters": "not modelled: dpcost holds a unit gathered and the next prefetched",
    "stage3_max_reuse_distance": "not modelled: dpcost gathers each unit again for its backward",
    "stage3_param_persistence_threshold": "not modelled: dpcost shards every parameter, where stage 3 keeps those "
    "under the threshold (default 1e5 elements) whole",
}


# zero_optimization keys that change what is held, gathered or sent, which dpcost does not read (an audit against
# DeepSpeed edaa72212, v0.19.5-27: runtime/zero/config.py and what reads each)
ZERO_UNPRICED = {
    "stage3_use_all_reduce_for_fetch_params": "not priced: stage 3 fetches parameters by all-reducing a full buffer "
    "(partition_parameters.py), where dpcost prices all-gathers",
    "zeropp_loco_param": "not priced: LoCo's error-feedback buffers, about a byte a parameter",
    "zenflow": "not priced: ZenFlow's split of the optimizer step between GPU and CPU",
    "stage3_allgather_sequential": "not modelled: stage 3 gathers without prefetching (engine.py)",
    "mics_hierarchical_params_gather": "not priced: MiCS's hierarchical gather",
    "stage3_model_persistence_threshold": "not modelled: dpcost shards every parameter",
    "stage3_module_granularity_threshold": "not modelled: stage 3's gather granularity as dpcost prices it, a block",
    "leaf_module": "not modelled: stage 3's gather granularity as dpcost prices it, a block",
}
# Top-level keys that change what a step holds or runs, which dpcost does not read (the same audit)
TOP_UNPRICED = {
    "torch_autocast": "not priced: Linear layers' gradients reduced (and at stage 3 gathered) in the autocast dtype",
    "compile": "applies only where the script calls engine.compile(): DeepCompile's passes and offloads",
    "amp": "not read: apex AMP's mixed precision; dpcost prices the bf16 and fp16 sections",
    "progressive_layer_drop": "not priced: layers dropped at random as training goes, where the model takes part",
    "curriculum_learning": "not priced: sequences grown over training; dpcost prices the full length",
    "data_efficiency": "not priced: data sampling and routing over training; dpcost prices every token and layer",
    "eigenvalue": "not priced: the extra passes that estimate Hessian eigenvalues",
    "sparse_gradients": "applies only to sparse embedding gradients",
}
# Settings that run a layout dpcost costs only as Megatron-LM runs it (TP/CP/EP): refused, by name
LAYOUTS = {
    "tensor_parallel": "DeepSpeed's AutoTP",
    "sequence_parallel_size": "DeepSpeed's Ulysses sequence parallelism",
    "expert_parallel": "DeepSpeed's AutoEP",
}
# bf16/fp16 section keys dpcost does not read as options: the states' dtypes (precision_config.py,
# base_optimizer.py), BF16_Optimizer's immediate update, and the step's overflow check
SIXTEEN_BIT_UNPRICED = {
    "bf16_master_weights_and_grads": "not priced: master weights and gradients in bf16; dpcost prices fp32",
    "bf16_optimizer_states": "not priced: optimizer states in bf16; dpcost prices fp32",
    "immediate_grad_update": "not priced: BF16_Optimizer's add into its fp32 buffer moved into the backward's "
    "per-parameter hooks (the same bytes; param.grad still kept)",
    "check_grad_overflow": "priced as true, DeepSpeed's default from v0.19.3: stages 1-2 check each gradient "
    "tensor of the partition, 11 bytes an element of the largest (memory.DEEPSPEED_GRAD_CHECK_BYTES); false "
    "leaves the norm's 8",
}


def _elements(r: Reading, key: str, value: Any, least: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not least <= value <= 1e13:
        raise r.error(key, f"must be a number of elements (e.g. 5e8), got {value!r}")
    return int(value)


def _optimizer(r: Reading, optimizer: Any) -> None:
    if optimizer is None:
        r.use("optimizer", None, "optimizer_impl", "foreach", "absent: " + SCRIPTS_OPTIMIZER)
        return
    kind = optimizer.get("type") if isinstance(optimizer, dict) else None
    if not isinstance(kind, str):
        raise r.error("optimizer.type", f"must name the optimizer, got {kind!r}")
    name = OPTIMIZERS.get(kind.lower().replace("_", ""))
    if name is None:
        r.refuse("optimizer", "optimizer.type", f"{kind!r} is not one dpcost prices ({', '.join(OPTIMIZERS)})")
        return
    # Its ZeRO optimizers run Muon's Newton-Schulz (stage_1_and_2.py, stage3.py); at stage 0 nothing does (deepspeed
    # issue 8441), which dpcost does not follow: priced as Muon, with its BF16 momentum (memory.RECIPES["deepspeed"])
    r.use("optimizer.type", kind, "optimizer", name, "orthogonalized in the ZeRO optimizer" if name == "muon" else "")
    compressed = COMPRESSED.get(kind.lower())
    if compressed is not None:
        r.use("optimizer.type", kind, "compression", compressed, "its compressed all-reduce (engine/variants.py)")
    params = optimizer.get("params")
    if kind.lower() in ("adam", "adamw") and isinstance(params, dict) and "torch_adam" in params:
        _torch_adam(r, params)


def _torch_adam(r: Reading, params: dict[str, Any]) -> None:
    """`torch_adam: true` builds torch.optim's Adam or AdamW with the block's other params, not DeepSpeed's FusedAdam
    (runtime/engine.py _configure_basic_optimizer at v0.19.5): it steps as torch's default on CUDA, foreach, unless
    the params ask for `fused` or turn `foreach` off (memory.optimizer_intermediates)."""
    key, on = "optimizer.params.torch_adam", params["torch_adam"]
    if not isinstance(on, bool):
        raise r.error(key, f"must be true or false, got {on!r}")
    if not on:
        r.ignore(key, on, "DeepSpeed's FusedAdam, as without it")
        return
    if params.get("fused") is True:
        impl, how = "fused", "torch.optim's fused AdamW (its params' fused: true); ZeRO-0 costed as FusedAdam's copies"
    elif params.get("foreach") is False:
        impl, how = "for-loop", "torch.optim's AdamW a tensor at a time (its params' foreach: false)"
    else:
        impl, how = "foreach", "torch.optim's AdamW, not DeepSpeed's FusedAdam: torch's default on CUDA, foreach"
    r.use(key, on, "optimizer_impl", impl, how)
