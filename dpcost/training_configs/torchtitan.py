"""A torchtitan TOML as a plan: [training], [parallelism], [activation_checkpoint], [float8], [compile], [model].

Keys and defaults as torchtitan/config/job_config.py (v0.1.0-v0.2.0) declares them: local_batch_size 8 (batch_size
before v0.1), global_batch_size -1 (local x DP: no accumulation), seq_len 2048, data_parallel_shard_degree -1
(every GPU the other degrees leave), activation_checkpoint mode "selective" with selective_ac_option "2",
mixed_precision_reduce "float32". torchtitan runs FSDP2 over dp_shard and replicates over dp_replicate (HSDP).
Before v0.1 the degrees lived in [training] (data parallel and TP) and [experimental] (CP and its rotate method,
PP and its schedule, async TP), and list options such as [model] converters could be one comma-separated string
(string_list): both are read as they were (LEGACY). So are December 2024's (config_manager.py at 9dec370): [float8]
enable_float8_linear before the converters, and PP's split points and micro-batch count (_pipeline_split_2024).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any, get_args

from dpcost.options import OptimizerImpl
from dpcost.training_configs import NOT_PRICED, PipelineSplit, Reading, TrainingConfig

__all__ = [
    "CATALOG",
    "Label",
    "checkpointing",
    "compiled",
    "data_parallel",
    "implementation",
    "model_name",
    "optimizer",
    "parallelism",
    "precision",
    "read",
    "switch",
    "training",
    "whole",
]

KIND = "torchtitan TOML"

Label = Callable[[str, str], str]  # (section, key) -> how the report names the key


def toml_label(section: str, key: str) -> str:
    """A TOML key as the report names it: `[training] seq_len`."""
    return f"[{section}] {key}"


# [model] name and flavor -> dpcost's catalog (torchtitan/models/*/__init__.py flavors)
CATALOG = {
    ("llama3", "8b"): "llama-8b",
    ("llama3", "70b"): "llama-70b",
    ("llama3", "405b"): "llama-405b",
    ("deepseek_v3", "16b"): "deepseek-v2-lite",
    ("deepseek_v3", "671b"): "deepseek-v3",
    ("qwen3", "8b"): "qwen3-8b",
    ("qwen3", "32b"): "qwen3-32b",
    ("qwen3", "30b-a3b"): "qwen3-30b-a3b",
    ("qwen3", "235b-a22b"): "qwen3-235b-a22b",
    ("gpt_oss", "20b"): "gpt-oss-20b",
    ("gpt_oss", "120b"): "gpt-oss-120b",
}
DEFAULTS = {"local_batch_size": 8, "global_batch_size": -1, "seq_len": 2048}  # job_config.py Training
DTYPES = {"float32": "fp32", "bfloat16": "bf16"}
# [parallelism] keys that change what a degree above 1 costs, which dpcost does not price: (the degree, whether the
# value turns it on, what it changes) (distributed/parallel_dims.py and models' parallelize.py at v0.2.2)
_REPLICATED_LOSS = "not priced: the output layer replicated over TP, each rank holding the whole vocabulary's logits"
_UNBALANCED_CP = "not priced: without head-tail balancing the last CP rank runs most of the causal attention"
PARALLEL_UNPRICED: dict[str, tuple[str, Callable[[Any], bool], str]] = {
    "disable_loss_parallel": ("tp", lambda v: v is True, _REPLICATED_LOSS),
    "context_parallel_load_balancer": ("cp", lambda v: v is None or str(v).lower() == "none", _UNBALANCED_CP),
    "expert_parallel_comm_backend": (
        "ep",
        lambda v: v == "deepep",
        "not priced: DeepEP's dispatch kernels; dpcost prices torchtitan's standard all-to-all",
    ),
    "context_parallel_rotate_method": (
        "cp",
        lambda v: str(v).lower() == "alltoall",
        "not priced: costed as the allgather rotater (--cp-impl torch), which training runs at v0.2.2 whatever this "
        "says (only validation sets it); at 9dec370 it passed K and V round the ring by all-to-all",
    ),
}
LINEAR_CONVERTERS = {"float8": "float8", "quantize.linear.float8": "float8", "mx": "mx", "quantize.linear.mx": "mx"}
SCHEDULES = ("1f1b", "gpipe")  # one stage per rank; the zero-bubble and V schedules are not read
# Interleaved1F1B: two stages per rank unless the split keys say (pipeline_llm at v0.2.2: "stages_per_rank = 1 if
# is_single_stage_schedule else 2")
INTERLEAVED = "interleaved1f1b"
# The pipeline split's keys (distributed/pipeline_parallel.py pipeline_llm at v0.2.2): the first and last stage's
# layers short, by default one each (job_config.py), a layer count per stage, or each stage's modules
SPLIT_KEYS = ("pipeline_parallel_first_stage_less_layers", "pipeline_parallel_last_stage_less_layers",
              "pipeline_parallel_layers_per_stage", "module_fqns_per_model_part")  # fmt: skip
PARALLELISM = (
    "data_parallel_replicate_degree", "data_parallel_shard_degree", "tensor_parallel_degree",
    "pipeline_parallel_degree", "context_parallel_degree", "expert_parallel_degree", "expert_tensor_parallel_degree",
    "fsdp_reshard_after_forward", "pipeline_parallel_schedule", "pipeline_parallel_microbatch_size",
    "enable_async_tensor_parallel",
)  # fmt: skip  # the [parallelism] keys read; the rest are listed as not priced
# PP's split and micro-batches before v0.1 (config_manager.py at 9dec370), read when [experimental] sets the degree
LEGACY_PIPELINE = ("pipeline_parallel_split_points", "pipeline_parallel_microbatches")
# Where torchtitan kept them before [parallelism] (train_configs/*.toml before v0.1, e.g. 57387af0)
LEGACY = {
    "training": ("data_parallel_replicate_degree", "data_parallel_shard_degree", "tensor_parallel_degree"),
    "experimental": ("context_parallel_degree", "context_parallel_rotate_method", "pipeline_parallel_degree",
                     "pipeline_parallel_schedule", "enable_async_tensor_parallel", *LEGACY_PIPELINE),
}  # fmt: skip


def read(doc: dict[str, Any], path: str) -> TrainingConfig:
    r = Reading(path, KIND)
    r.use("(a torchtitan config)", "torchtitan", "framework", "fsdp", "torchtitan runs FSDP2")
    quantize = doc.get("quantize", {})
    linear = (
        r.section(quantize, "linear", "[quantize.linear]", "a table of tables") if isinstance(quantize, dict) else {}
    )
    float8 = r.section(linear, "float8", "[quantize.linear.float8]", "a table of keys")
    for section in doc:
        if section not in ("model", "training", "parallelism", "activation_checkpoint", "float8", "compile",
                           "quantize", "experimental", "optimizer"):  # fmt: skip
            r.ignore(f"[{section}]", "...", NOT_PRICED)
    model = _model(r, _section(r, doc, "model"))
    parallel, where = _parallel_keys(r, doc)
    degrees = parallelism(r, parallel, toml_label, where)
    training(r, _section(r, doc, "training"), degrees["pp"], parallel, toml_label, where)
    for key, value in _section(r, doc, "experimental").items():
        if key not in LEGACY["experimental"]:
            r.ignore(f"[experimental] {key}", value, NOT_PRICED)
    checkpointing(r, _section(r, doc, "activation_checkpoint"), toml_label)
    label = "[quantize.linear.float8]" if float8 else "[float8]"
    if isinstance(quantize, dict):  # other quantizations ([quantize.grouped_mm.*]: MoE experts) are not priced
        for kind, table in quantize.items():
            for name, keys in table.items() if isinstance(table, dict) else ():
                if (kind, name) == ("linear", "mx"):
                    r.ignore(f"[quantize.{kind}.{name}]", keys, "MXFP8's recipe: its matmuls priced as fp8's")
                elif (kind, name) != ("linear", "float8"):
                    r.ignore(f"[quantize.{kind}.{name}]", keys, NOT_PRICED)
    _float8(r, float8 or _section(r, doc, "float8"), _section(r, doc, "model"), label, degrees["shard"])
    optimizer(r, _section(r, doc, "optimizer"), toml_label)
    compiled(r, _section(r, doc, "compile"), toml_label)
    return r.done(**data_parallel(r, degrees, model, toml_label("parallelism", "data_parallel_*_degree")))


def _pipeline_split(
    r: Reading, parallel: dict[str, Any], pp: int, key_label: Callable[[str], str], chunks: int = 1
) -> None:
    """How torchtitan splits the layers over the schedule's PP x `chunks` stages (pipeline_llm at v0.2.2): each
    stage's modules as module_fqns_per_model_part lists them, else generate_llm_fqn_per_model_part's split with the
    first and last stage short by their keys' layers (1 each by default), once the model's layers are known
    (torchtitan_layout); pipeline_parallel_layers_per_stage must then give PP stages, as torchtitan checks."""
    fqns = parallel.get("module_fqns_per_model_part")
    if fqns is not None:
        key = key_label("module_fqns_per_model_part")
        if not isinstance(fqns, list) or len(fqns) != pp or any(not isinstance(part, list) for part in fqns):
            raise r.error(key, f"must list the modules of each of the {pp} stages, got {fqns!r}"[:200])
        stages = []
        for part in fqns:
            layers = sum(1 for name in part if str(name).startswith("layers."))
            head = "E" if "tok_embeddings" in part else ""
            tail = "L" if "output" in part else ""
            stages.append(f"{head}{f't*{layers}' if layers else ''}{tail}")
        r.use(key, f"{pp} parts", "pipeline_layout", "|".join(stages), "each stage's modules as listed")
        return
    first, last = (whole(r, key_label(k), parallel.get(k, 1), least=0) for k in SPLIT_KEYS[:2])
    per_stage = parallel.get("pipeline_parallel_layers_per_stage")
    given = [k for k in SPLIT_KEYS[:3] if k in parallel]
    key = key_label(given[0]) if given else "(torchtitan's pipeline split)"
    per_stage_count = None if per_stage is None else whole(r, key_label(SPLIT_KEYS[2]), per_stage)
    r.pp_split = PipelineSplit(key, chunks, first, last, per_stage_count)
    why = "torchtitan's split of the layers (generate_llm_fqn_per_model_part), once the model is known"
    for k in given:
        r.note(key_label(k), parallel[k], "--pipeline-layout", why)
    if not given:
        r.note(key, f"first {first}, last {last} layers short", "--pipeline-layout", why)


def _pipeline_before_v01(where: dict[str, str] | None) -> bool:
    """The file sets PP where torchtitan read it before v0.1 ([experimental]), and so runs December 2024's pipeline
    (_pipeline_split_2024, training's micro-batch count)."""
    return (where or {}).get("pipeline_parallel_degree") == "experimental"


def _pipeline_split_2024(
    r: Reading, parallel: dict[str, Any], pp: int, schedule: str, key_label: Callable[[str], str]
) -> None:
    """PP as torchtitan ran it before v0.1 (pipeline_llama.py and pipelining_utils.py at 9dec370): each rank builds
    the stages rank, rank + PP, ... of those pipeline_parallel_split_points starts ("layers.N"), else
    generate_split_points' even split over PP x the schedule's stages per rank (1, or 2 for a looped schedule)."""
    schedule_key = key_label("pipeline_parallel_schedule")
    looped = schedule.lower() == INTERLEAVED
    if not looped and schedule.lower() not in SCHEDULES:
        r.refuse("virtual_stages", schedule_key, f"{schedule}: give the stages per rank")
        return
    default = "" if "pipeline_parallel_schedule" in parallel else "torchtitan's default"
    r.use(schedule_key, schedule, "pp_schedule", "interleaved" if looped else schedule.lower(), default)
    points = parallel.get("pipeline_parallel_split_points") or None
    if "pipeline_parallel_split_points" in parallel and points is None:  # pipeline_llama.py: `split_points or ...`
        empty = "none given: generate_split_points' split"
        r.note(key_label("pipeline_parallel_split_points"), parallel["pipeline_parallel_split_points"], "", empty)
    key = "(torchtitan's pipeline split)" if points is None else key_label("pipeline_parallel_split_points")
    starts = None if points is None else _split_starts(r, key, points)
    stages = pp * (2 if looped else 1) if starts is None else len(starts) + 1
    if stages % pp:  # stage_ids_this_rank: "num_stages must be evenly divisible by pp_size"
        raise r.error(key, f"{stages} stages do not share out over PP {pp}")
    if (stages > pp) != looped:
        want = "a looped schedule (Interleaved1F1B)" if stages > pp else "one stage per rank"
        raise r.error(key, f"{stages} stages on PP {pp} need {want}; the schedule is {schedule}")
    if looped:
        why = "stages per rank: the split points' stages over PP" if starts else "generate_split_points' two a rank"
        r.use(schedule_key, schedule, "virtual_stages", str(stages // pp), why)
    why = "the stages start at these layers" if starts else "generate_split_points' (9dec370), once the model is known"
    r.note(key, points or f"{stages} stages", "--pipeline-layout", why)
    r.pp_split = PipelineSplit(key, stages // pp, before_v01=True, starts=starts)


def _split_starts(r: Reading, key: str, points: Any) -> tuple[int, ...]:
    """The layer each split point names: a list of "layers.N", or one comma-separated string (string_list)."""
    names = [p.strip() for p in points.split(",") if p.strip()] if isinstance(points, str) else points
    if not isinstance(names, list) or not all(
        isinstance(n, str) and n.startswith("layers.") and n.removeprefix("layers.").isdigit() for n in names
    ):
        raise r.error(key, f"must name layers as 'layers.N', got {points!r}"[:200])
    return tuple(int(n.removeprefix("layers.")) for n in names)


def torchtitan_layout(layers: int, stages: int, first_less: int, last_less: int, per_stage: int | None = None) -> str:
    """torchtitan's split of `layers` over `stages` (generate_llm_fqn_per_model_part at v0.2.2) as --pipeline-layout:
    the embedding and the output head count as first_less and last_less layers, all of them shared out evenly with
    the remainder to the first stages, and each end stage's share less its weight in layers.
    `per_stage` (pipeline_parallel_layers_per_stage) must make as many stages, ceil((layers + both) / it)."""
    effective = layers + first_less + last_less
    if per_stage is not None and math.ceil(effective / per_stage) != stages:
        raise ValueError(f"{per_stage} layers a stage make {math.ceil(effective / per_stage)} stages, not PP {stages}")
    share, extra = divmod(effective, stages)
    if stages > effective or share == 0:
        raise ValueError(f"{stages} stages cannot split {layers} layers and the embedding and head")
    if first_less > share or last_less > share:
        raise ValueError(f"an end stage short by more than the {share} layers of a stage")
    counts = [share + (k < extra) for k in range(stages)]
    counts[0] -= first_less
    counts[-1] -= last_less
    stage_text = [f"t*{n}" if n else "" for n in counts]
    stage_text[0], stage_text[-1] = "E" + stage_text[0], stage_text[-1] + "L"
    return "|".join(stage_text)


def torchtitan_2024_layout(layers: int, stages: int, starts: tuple[int, ...] | None = None) -> str:
    """torchtitan's split of December 2024 (9dec370, before v0.1) as --pipeline-layout: each stage from the layer
    its split point names to the next one's (pipeline_llama.py pipeline_llama_manual_split), or without split points
    generate_split_points' (parallelisms/pipelining_utils.py): `stages` (PP times the schedule's stages per rank) of
    layers // stages each, the middle ones one more while the remainder lasts, the last what is left."""
    if starts is not None:
        if len(starts) + 1 != stages:
            raise ValueError(f"{len(starts)} split points make {len(starts) + 1} stages, not {stages}")
        if list(starts) != sorted(set(starts)) or starts[-1] >= layers:
            raise ValueError(f"split points must name rising layers from layers.0 to layers.{layers - 1}")
        counts = [end - start for start, end in itertools.pairwise((0, *starts, layers))]
    else:
        base, extra = divmod(layers, stages)
        if base == 0:
            raise ValueError(f"{stages} stages are more than the {layers} layers")
        middle = [base + (k < extra) for k in range(stages - 2)]
        counts = [base, *middle, layers - base - sum(middle)]
    stage_text = [f"t*{n}" if n else "" for n in counts]  # "layers.0" leaves the first stage the embedding alone
    stage_text[0], stage_text[-1] = "E" + stage_text[0], stage_text[-1] + "L"
    return "|".join(stage_text)


def fsdp_shard_group(dp_shard: int, cp: int) -> int:
    """The GPUs FSDP2 shards over under HSDP, --shard-group: torchtitan's FSDP mesh is dp_shard x cp
    (parallel_dims.py at v0.2.2: the dense mesh's "fsdp" dimension, flattened from them)."""
    return dp_shard * cp


def data_parallel(r: Reading, degrees: dict[str, int], model: str | None, key: str) -> dict[str, Any]:
    """The DP size the degrees fix (replicate x shard; shard -1 leaves it to --dp), with the model, as the reading's
    last fields."""
    replicate, shard = degrees["replicate"], degrees["shard"]
    dp = replicate * shard if shard > 0 else None
    if shard > 0:
        r.note(key, f"{replicate} x {shard}", f"--dp {dp}", "replicate x shard")
    return {
        "dp": dp,
        "model": model,
        "replicas": replicate if replicate > 1 and shard < 0 else None,
        "fsdp_layouts": True,  # parallelize.py: apply_tp, then apply_fsdp over the DP mesh
    }


def _section(r: Reading, doc: dict[str, Any], name: str) -> dict[str, Any]:
    return r.section(doc, name, f"[{name}]", "a table of keys")


def whole(r: Reading, key: str, value: Any, least: int = 1) -> int:
    """`value` as a whole number of at least `least`, else one error naming `key`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        allowed = "a positive integer" if least == 1 else f"an integer of at least {least}"
        raise r.error(key, f"must be {allowed}, got {value!r}")
    return value


def switch(r: Reading, key: str, value: Any) -> str:
    """`value` as a flag's true or false, else one error naming `key`."""
    if not isinstance(value, bool):
        raise r.error(key, f"must be true or false, got {value!r}")
    return "true" if value else "false"


def model_name(r: Reading, key: str, name: Any, flavor: Any) -> str | None:
    """The catalog model of torchtitan's model `name` and `flavor` (CATALOG), else None, and the row saying so."""
    found = CATALOG.get((str(name).lower(), str(flavor).lower()))
    if found is None:
        r.ignore(key, f"{name} {flavor}", "not in dpcost's catalog: give --model")
        return None
    r.note(key, f"{name} {flavor}", f"--model {found}")
    return found


def _model(r: Reading, model: dict[str, Any]) -> str | None:
    for key, value in model.items():
        if key not in ("name", "flavor", "converters"):
            r.ignore(f"[model] {key}", value, NOT_PRICED)
    name, flavor = model.get("name"), model.get("flavor")
    if name is None:
        return None
    return model_name(r, "[model] name, flavor", name, flavor)


def _parallel_keys(r: Reading, doc: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The parallelism keys wherever the file keeps them ([parallelism], or LEGACY's sections), and the section
    each came from."""
    parallel = dict(_section(r, doc, "parallelism"))
    where = dict.fromkeys(parallel, "parallelism")
    for section, keys in LEGACY.items():
        for key, value in _section(r, doc, section).items():
            if key in keys and key not in parallel:
                parallel[key], where[key] = value, section
    return parallel, where


def parallelism(
    r: Reading,
    parallel: dict[str, Any],
    label: Label,
    where: dict[str, str] | None = None,
    sequence_parallel: bool = True,
    known: tuple[str, ...] = PARALLELISM,
    pipelined: tuple[str, ...] = ("pipeline_parallel_microbatch_size",),
) -> dict[str, int]:
    """The degrees, the ZeRO stage FSDP2 runs at and the pipeline schedule from torchtitan's parallelism keys
    (`where`: the section each key came from, [parallelism] by default); `sequence_parallel`: TP's activations
    split over the sequence (torchtitan's TP is, unless enable_sequence_parallel is off); `known`: the keys that do
    nothing at the degrees given (the rest are not priced); `pipelined`: the keys the batch's reader lists under
    PP."""

    def key_label(key: str) -> str:
        return label((where or {}).get(key, "parallelism"), key)

    degrees = {"replicate": 1, "shard": -1, "tp": 1, "pp": 1, "cp": 1, "ep": 1}
    names = {
        "data_parallel_replicate_degree": "replicate",
        "data_parallel_shard_degree": "shard",
        "tensor_parallel_degree": "tp",
        "pipeline_parallel_degree": "pp",
        "context_parallel_degree": "cp",
        "expert_parallel_degree": "ep",
    }
    for key, name in names.items():
        if key in parallel:
            value = parallel[key]
            if name == "shard" and value == -1:
                continue
            degrees[name] = whole(r, key_label(key), value)
    for name in ("tp", "pp", "cp", "ep"):
        key = next(k for k, n in names.items() if n == name)
        if key in parallel:
            r.use(key_label(key), degrees[name], name, str(degrees[name]))
    if "expert_tensor_parallel_degree" in parallel and degrees["ep"] > 1:
        etp = whole(r, key_label("expert_tensor_parallel_degree"), parallel["expert_tensor_parallel_degree"])
        r.use(key_label("expert_tensor_parallel_degree"), etp, "etp", str(etp))
    r.tp_sequence_parallel = sequence_parallel
    if degrees["tp"] > 1 and sequence_parallel:
        r.use(
            key_label("tensor_parallel_degree"),
            degrees["tp"],
            "sequence_parallel",
            "true",
            "torchtitan's TP is sequence-parallel",
        )
    replicate, shard = degrees["replicate"], degrees["shard"]
    reshard = str(parallel.get("fsdp_reshard_after_forward", "default"))
    # parallelize.py at v0.2.2: FSDP wherever dp_shard or cp exceeds 1 (parallel_dims.fsdp_enabled), else DDP over the
    # replicas, which "has not supported > 1D parallelism"
    ddp = shard == 1 and replicate > 1 and degrees["cp"] == 1
    if ddp and (degrees["tp"] > 1 or degrees["pp"] > 1):
        raise r.error(
            key_label("data_parallel_replicate_degree"),
            "replicas alone (data_parallel_shard_degree 1) run DDP, which torchtitan refuses with TP or PP "
            "('DDP has not supported > 1D parallelism'): give a shard degree above 1",
        )
    if ddp:
        r.use(key_label("data_parallel_shard_degree"), 1, "zero", "0", "replicas only: torchtitan applies DDP")
    elif reshard == "never":
        r.use(key_label("fsdp_reshard_after_forward"), reshard, "zero", "2", "parameters kept to the backward (ZeRO-2)")
    elif reshard == "default" and degrees["pp"] > 1:  # distributed/fsdp.py: "For PP, by default do not reshard"
        why = "under PP torchtitan keeps the parameters to the backward (ZeRO-2)"
        r.use(key_label("fsdp_reshard_after_forward"), reshard, "zero", "2", why)
    elif reshard in ("default", "always"):
        r.use(key_label("fsdp_reshard_after_forward"), reshard, "zero", "3", "FSDP's FULL_SHARD")
        r.pp_keeps_parameters = reshard == "default"
    else:
        raise r.error(key_label("fsdp_reshard_after_forward"), f"must be default, always or never, got {reshard!r}")
    if replicate > 1 and not ddp and shard > 0:
        cp = degrees["cp"]
        hsdp = "HSDP: shard within, replicate across" + (f"; the shard group is dp_shard x cp {cp}" if cp > 1 else "")
        r.use(key_label("data_parallel_shard_degree"), shard, "shard_group", str(fsdp_shard_group(shard, cp)), hsdp)
    schedule = str(parallel.get("pipeline_parallel_schedule", "1F1B"))
    chunks = 2 if schedule.lower() == INTERLEAVED and not set(SPLIT_KEYS[2:]) & parallel.keys() else 1
    before_v01 = _pipeline_before_v01(where)
    if degrees["pp"] > 1 and before_v01:

        def legacy_label(key: str) -> str:  # an absent key is where torchtitan then kept it
            return label((where or {}).get(key, "experimental"), key)

        _pipeline_split_2024(r, parallel, degrees["pp"], schedule, legacy_label)
    elif degrees["pp"] > 1 and chunks > 1:
        key = key_label("pipeline_parallel_schedule")
        r.use(key, schedule, "pp_schedule", "interleaved")
        r.use(key, schedule, "virtual_stages", "2", "torchtitan's two stages a rank for a multi-stage schedule")
    elif degrees["pp"] > 1 and schedule.lower() not in SCHEDULES:
        r.refuse("virtual_stages", key_label("pipeline_parallel_schedule"), f"{schedule}: give the stages per rank")
    elif degrees["pp"] > 1:
        default = "" if "pipeline_parallel_schedule" in parallel else "torchtitan's default"
        r.use(key_label("pipeline_parallel_schedule"), schedule, "pp_schedule", schedule.lower(), default)
    rotate = parallel.get("context_parallel_rotate_method")
    if degrees["cp"] > 1 and str(rotate).lower() == "allgather":
        r.note(key_label("context_parallel_rotate_method"), rotate, "", "torch's allgather rotater: --cp-impl torch")
    if "enable_async_tensor_parallel" in parallel:
        value = switch(r, key_label("enable_async_tensor_parallel"), parallel["enable_async_tensor_parallel"])
        r.use(key_label("enable_async_tensor_parallel"), value, "tp_comm_overlap", value)
    if degrees["pp"] > 1 and not before_v01 and (schedule.lower() in SCHEDULES or chunks > 1):
        _pipeline_split(r, parallel, degrees["pp"], key_label, chunks)
    listed = r.listed()
    for key, value in parallel.items():
        later = (*pipelined, "pipeline_parallel_microbatches") if before_v01 else pipelined  # training() reads them
        if key_label(key) in listed or (key in later and degrees["pp"] > 1):
            continue
        if key in ("data_parallel_replicate_degree", "data_parallel_shard_degree"):
            r.note(key_label(key), value, "", "the DP size: replicate x shard (-1: every GPU the other degrees leave)")
        elif key in PARALLEL_UNPRICED and degrees[PARALLEL_UNPRICED[key][0]] > 1 and PARALLEL_UNPRICED[key][1](value):
            r.ignore(key_label(key), value, PARALLEL_UNPRICED[key][2])
        elif key in (*SPLIT_KEYS, *LEGACY_PIPELINE) and degrees["pp"] > 1:  # a schedule whose stages are refused
            r.ignore(key_label(key), value, "not read for this schedule: give --pipeline-layout for its split")
        elif key in known or key in LEGACY_PIPELINE:
            r.ignore(key_label(key), value, "no effect at these degrees")
        else:
            r.ignore(key_label(key), value, NOT_PRICED)
    return degrees


def training(
    r: Reading,
    section: dict[str, Any],
    pp: int,
    parallel: dict[str, Any],
    label: Label,
    where: dict[str, str] | None = None,
) -> None:
    """[training] local_batch_size (batch_size before v0.1), global_batch_size, seq_len and the mixed precision,
    with PP's pipeline_parallel_microbatch_size."""

    def t(key: str) -> str:
        return label("training", key)

    local_key = "local_batch_size" if "local_batch_size" in section else "batch_size"
    local = whole(r, t(local_key), section.get(local_key, DEFAULTS["local_batch_size"]))
    default = "" if local_key in section else "torchtitan's default"
    global_batch = section.get("global_batch_size", -1)
    if global_batch != -1:
        global_batch = whole(r, t("global_batch_size"), global_batch)
    if pp > 1 and _pipeline_before_v01(where):
        # before v0.1 (pipeline_llama.py at 9dec370): the local batch in pipeline_parallel_microbatches, else PP
        name = "pipeline_parallel_microbatches"
        key = label("experimental", name)
        count = whole(r, key, parallel.get(name) or pp)
        if local % count:
            raise r.error(t(local_key), f"{local} does not split into {name} {count} equal micro-batches")
        r.use(key, count, "micro_batch", str(local // count), "" if name in parallel else "torchtitan's default: PP")
        if global_batch == -1:
            r.use(t(local_key), local, "accumulation", str(count), f"{local} in {count} micro-batches")
    elif pp > 1:
        name = "pipeline_parallel_microbatch_size"
        key = label((where or {}).get(name, "parallelism"), name)
        micro = whole(r, key, parallel.get(name, 1))
        if local % micro:
            raise r.error(t(local_key), f"{local} is not a multiple of {name} {micro}")
        r.use(key, micro, "micro_batch", str(micro), "" if name in parallel else "torchtitan's default")
        if global_batch == -1:
            r.use(t(local_key), local, "accumulation", str(local // micro), f"{local} / {micro} micro-batches")
    else:
        r.use(t(local_key), local, "micro_batch", str(local), default)
    if global_batch != -1:
        r.use(t("global_batch_size"), global_batch, "global_batch", str(global_batch))
    seq = whole(r, t("seq_len"), section.get("seq_len", DEFAULTS["seq_len"]))
    r.use(t("seq_len"), seq, "seq_len", str(seq), "" if "seq_len" in section else "torchtitan's default")
    precision(r, section, label)
    storage(r, section, label)
    if "compile" in section:
        r.use(t("compile"), section["compile"], "compile", switch(r, t("compile"), section["compile"]))
    for key, value in section.items():
        if key not in (local_key, "global_batch_size", "seq_len", "mixed_precision_reduce", "mixed_precision_param",
                       "compile", "dtype", "enable_cpu_offload", *LEGACY["training"]):  # fmt: skip
            r.ignore(t(key), value, NOT_PRICED)


def storage(r: Reading, training: dict[str, Any], label: Label) -> None:
    """training.dtype bfloat16: weights, gradients and optimizer states all in bf16 (configs.py; job_config.py at
    v0.2.2), dpcost's bf16 recipe; enable_cpu_offload (FSDP2's CPUOffloadPolicy), not priced for FSDP."""
    if "dtype" in training:
        key, dtype = label("training", "dtype"), training["dtype"]
        if dtype == "bfloat16":
            r.use(key, dtype, "recipe", "bf16", "weights, gradients and optimizer states in bf16")
        elif dtype == "float32":
            r.note(key, dtype, "", "mixed precision: fp32 weights and states, as the fsdp recipe")
        else:
            raise r.error(key, f"must be bfloat16 or float32, got {dtype!r}")
    key = label("training", "enable_cpu_offload")
    if training.get("enable_cpu_offload") is True:
        r.refuse("offload", key, "FSDP2's CPU offload is not priced: give --offload")
    elif "enable_cpu_offload" in training:
        r.ignore(key, training["enable_cpu_offload"], "off")


def precision(r: Reading, section: dict[str, Any], label: Label) -> None:
    """[training] mixed_precision_reduce (--grad-dtype, float32 by default) and mixed_precision_param (bf16)."""
    key = label("training", "mixed_precision_reduce")
    reduce = str(section.get("mixed_precision_reduce", "float32"))
    if reduce not in DTYPES:
        raise r.error(key, f"must be float32 or bfloat16, got {reduce!r}")
    default = "" if "mixed_precision_reduce" in section else "torchtitan's default"
    r.use(key, reduce, "grad_dtype", DTYPES[reduce], default)
    param = str(section.get("mixed_precision_param", "bfloat16"))
    if param != "bfloat16":
        r.refuse(
            "recipe", label("training", "mixed_precision_param"), f"{param}: dpcost's fsdp recipe computes in bf16"
        )


def checkpointing(r: Reading, ac: dict[str, Any], label: Label) -> None:
    """[activation_checkpoint] mode and selective_ac_option (selective 2 by default)."""

    def a(key: str) -> str:
        return label("activation_checkpoint", key)

    mode = str(ac.get("mode", "selective"))
    option = str(ac.get("selective_ac_option", "2"))
    default = "" if "mode" in ac else "torchtitan's default"
    if mode in ("none", "full"):
        r.use(a("mode"), mode, "recompute", mode, default)
    elif mode == "selective" and option == "0":  # activation_checkpoint.py: `not ac_freq` checkpoints every block
        r.use(a("selective_ac_option"), option, "recompute", "full", "0: every block in full")
    elif mode == "selective" and option == "op":
        r.use(a("selective_ac_option"), option, "recompute", "op", "per-op SAC")
    elif mode == "selective" and option.isdigit() and int(option) >= 1:
        every = f"every {_ordinal(int(option))} block in full"
        r.use(a("mode"), mode, "recompute", "full", f"{default}: {every}" if default else every)
        r.use(a("selective_ac_option"), option, "recompute_layers", option)
    else:
        raise r.error(a("mode"), f"must be none, full or selective (option op or an integer), got {mode} {option}")
    listed = r.listed()
    for key, value in ac.items():
        if a(key) not in listed:
            r.note(a(key), value, "", "with selective_ac_option" if key == "mode" else NOT_PRICED)


def _ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 22nd."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def optimizer(r: Reading, section: dict[str, Any], label: Label) -> None:
    """[optimizer] name (AdamW by default) and implementation."""
    name = section.get("name", "AdamW")
    if str(name) in ("AdamW", "Adam"):
        r.use(
            label("optimizer", "name"), name, "optimizer", "adamw", "" if "name" in section else "torchtitan's default"
        )
    else:
        r.refuse("optimizer", label("optimizer", "name"), f"{name!r} is not one dpcost prices (AdamW, Adam)")
    for key, value in section.items():
        if key == "implementation":
            implementation(r, label("optimizer", key), value)
        elif key == "early_step_in_backward" and value is True:  # components/optimizer.py at v0.2.2
            r.ignore(label("optimizer", key), value, "not priced: each parameter stepped in its gradient's hook")
        elif key != "name":
            r.ignore(label("optimizer", key), value, NOT_PRICED)


def implementation(r: Reading, key: str, value: Any) -> None:
    """The optimizer's implementation, --optimizer-impl: torch.optim's (torchtitan's default fused, as --framework
    fsdp's)."""
    if value not in get_args(OptimizerImpl):
        raise r.error(key, f"must be {', '.join(get_args(OptimizerImpl))}, got {value!r}")
    r.use(key, value, "optimizer_impl", value)


def compiled(r: Reading, section: dict[str, Any], label: Label) -> None:
    """[compile] enable, for the parts `components` names (torchtitan's default: the model and the loss); a loss
    compiled alone leaves the model's ops as eager PyTorch runs them."""

    def c(key: str) -> str:
        return label("compile", key)

    components = section.get("components", ["model", "loss"])
    if isinstance(components, str):
        components = [part.strip() for part in components.split(",") if part.strip()]
    if not isinstance(components, list):
        raise r.error(c("components"), f"must be a list of names, got {components!r}")
    backend = str(section.get("backend", "inductor"))  # job_config.py Compile at v0.2.2
    for key, value in section.items():
        if key == "backend" and backend != "inductor":
            r.ignore(c(key), value, "traced without inductor's fusion: the compiled parts priced as eager")
        elif key not in ("enable", "components"):
            r.ignore(c(key), value, NOT_PRICED)
    if "enable" not in section:
        if "components" in section:
            r.ignore(c("components"), components, f"{c('enable')} is off by default")
        return
    enabled = switch(r, c("enable"), section["enable"])
    if enabled == "true" and backend != "inductor":
        r.use(c("enable"), section["enable"], "compile", "false", f"the {backend} backend does not fuse: as eager")
        return
    if enabled == "true" and "model" not in components:
        r.use(c("components"), components, "compile", "false", "the loss compiled alone: the model runs eager")
        return
    r.use(c("enable"), section["enable"], "compile", enabled)
    if "components" in section:
        r.note(c("components"), components, "", "what is compiled" if enabled == "true" else "off")


def _float8(r: Reading, float8: dict[str, Any], model: dict[str, Any], label: str, shard: int) -> None:
    """Float8 (or MXFP8) linears and FSDP's float8 all-gather: the [model] converters from 57387af0 (2025-02), the
    [float8] enable_float8_linear switch before them (float8.py Float8Handler at 9dec370). Either way the all-gather
    runs in float8 only with Float8Linear on and data_parallel_shard_degree above 1 (Float8Handler; float8.py at
    v0.2.2: parallel_dims.dp_shard_enabled)."""
    converters = model.get("converters", [])
    if isinstance(converters, str):  # before v0.1: a comma-separated string (string_list)
        converters = [c.strip() for c in converters.split(",") if c.strip()]
    if not isinstance(converters, list):
        raise r.error("[model] converters", f"must be a list of names, got {converters!r}")
    # the linear converters (components/quantization/float8.py and mx.py at v0.2.2; "float8" and "mx" before v0.1):
    # Float8Linear's matmuls, unless emulated in BF16 (job_config.py emulate), and MXFP8's; the MoE experts' grouped
    # GEMM converters (quantize.grouped_mm.*) are not priced
    kinds = {LINEAR_CONVERTERS[c] for c in map(str, converters) if c in LINEAR_CONVERTERS}
    grouped = [c for c in map(str, converters) if c.startswith("quantize.grouped_mm.")]
    if "float8" in kinds and float8.get("emulate") is True:
        r.ignore("[model] converters", converters, "emulated (emulate = true): the matmuls run in bf16")
    elif kinds:
        what = " and ".join(sorted({"float8": "Float8Linear", "mx": "MXFP8 linear"}[k] for k in kinds))
        r.use("[model] converters", converters, "compute_dtype", "fp8", f"{what} matmuls")
    elif grouped:
        r.ignore("[model] converters", converters, "not priced: the MoE experts' grouped GEMMs in low precision")
    elif converters:
        r.ignore("[model] converters", converters, "not priced: converters dpcost does not read")
    switch_key = f"{label} enable_float8_linear"
    if "enable_float8_linear" in float8 and switch(r, switch_key, float8["enable_float8_linear"]) == "true":
        if kinds:
            r.note(switch_key, True, "", "Float8Linear, as [model] converters says")
        else:
            r.use(switch_key, True, "compute_dtype", "fp8", "Float8Linear matmuls (before [model] converters)")
        kinds.add("float8")
    elif "enable_float8_linear" in float8:
        r.note(switch_key, float8["enable_float8_linear"], "", "off: the linears stay in bf16")
    for key, value in float8.items():
        fp8 = "float8" in kinds and float8.get("emulate") is not True
        if key == "enable_float8_linear":  # read above
            continue
        if key == "recipe_name" and fp8 and str(value) in ("rowwise", "rowwise_with_gw_hp"):
            # parallelize.py at v0.2.2: float8's TP gathers (Float8ColwiseParallel...) run under tensorwise alone
            r.use(f"{label} {key}", value, "fp8_recipe", "rowwise", "torchao's per-row scaling: TP's gathers in BF16")
        elif key == "recipe_name" and str(value) == "tensorwise":
            r.note(f"{label} {key}", value, "", "per-tensor scaling, as dpcost costs torchtitan's float8")
        elif key == "emulate":
            r.note(f"{label} {key}", value, "", "matmuls in bf16" if value is True else "off")
        elif key == "enable_fsdp_float8_all_gather" and value is True and "float8" not in kinds:
            r.ignore(f"{label} {key}", value, "no effect: without Float8Linear the weights are gathered in bf16")
        elif key == "enable_fsdp_float8_all_gather" and value is True and shard == 1:
            r.ignore(f"{label} {key}", value, "no effect: data_parallel_shard_degree 1 shards nothing")
        elif key == "enable_fsdp_float8_all_gather" and value is True and "recipe_name" in float8:
            # float8.py at v0.2.2 asserts the two are not set together
            r.ignore(f"{label} {key}", value, "not with recipe_name: the all-gather is tensorwise scaling's alone")
        elif key == "enable_fsdp_float8_all_gather" and value is True:
            r.use(f"{label} {key}", value, "gather_dtype", "fp8", "FSDP gathers the float8 weights")
        elif key == "enable_fsdp_float8_all_gather":
            r.ignore(f"{label} {key}", value, "off: the weights are gathered in bf16")
        else:
            r.ignore(f"{label} {key}", value, NOT_PRICED)
