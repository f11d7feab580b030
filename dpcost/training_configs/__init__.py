"""Training configs as plans: `--from FILE` reads the config a team already runs into dpcost's options.

One module per kind, each citing the framework's own config code at a version for its keys and defaults:
- deepspeed.py: a DeepSpeed JSON;
- torchtitan.py: a torchtitan TOML;
- megatron.py: a Megatron-LM launch script's `pretrain_gpt.py` arguments, with the model they build;
- accelerate.py: an Accelerate config YAML (FSDP, DeepSpeed or multi-GPU DDP).

Each reader returns a `TrainingConfig`: the options the file gives (by dpcost's field names, written as a flag
would be), the DP size and model when the file fixes them, and every key it read, with the flag it became or why
it was left out. `apply` lays the flags a user typed over the file and says which ones it overrode.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import TYPE_CHECKING, Any, cast

from dpcost.errors import InputError, shown_value
from dpcost.frozen import frozen

if TYPE_CHECKING:
    from dpcost.specs import ModelSpec

__all__ = [
    "NOT_PRICED",
    "Applied",
    "PipelineSplit",
    "Reading",
    "Setting",
    "TrainingConfig",
    "apply",
    "list_items",
    "model_required",
    "read_training_config",
]

NOT_PRICED = "does not change what dpcost prices"  # a key left out because nothing dpcost costs reads it
# DeepSpeed without an optimizer in its config steps the script's own (runtime/engine.py _configure_optimizer)
SCRIPTS_OPTIMIZER = (
    "the script's own optimizer, priced as torch.optim's AdamW steps by default on CUDA (foreach); the Hugging Face "
    "Trainer's is fused with torch >= 2.8 from transformers#37358 (July 2025): give --optimizer-impl fused"
)
# DeepSpeed hands offload_param to its stage-3 optimizers alone (runtime/engine.py _configure_zero_optimizer, at
# v0.9.5, v0.16.0 and edaa722): below stage 3 the parameters stay on the GPU, and the run goes on without a word
# (DeepSpeed-Chat trains at stage 2 with it: DeepSpeedExamples applications/DeepSpeed-Chat/dschat/utils/ds_utils.py)
PARAMS_OFFLOAD_BELOW_STAGE_3 = "DeepSpeed reads it at stage 3 only: the parameters stay on the GPU"
KINDS = (
    "a DeepSpeed JSON, a torchtitan TOML or Python config (FILE.py:FUNCTION), a Megatron-LM launch script or an "
    "Accelerate config YAML"
)


@frozen
class PipelineSplit:
    """torchtitan's split of the layers over its pipeline stages, made --pipeline-layout once the model's layers are
    known (torchtitan.torchtitan_layout, or before v0.1 torchtitan.torchtitan_2024_layout)."""

    key: str  # the file's key the split comes from, for errors
    stages_per_rank: int
    first_less: int = 1  # v0.1+: the first and last stage's layers short, and the layers per stage if given
    last_less: int = 1
    per_stage: int | None = None
    before_v01: bool = False  # December 2024's split (generate_split_points), or the file's split points
    starts: tuple[int, ...] | None = None  # before v0.1: the first layer of each stage after the first


@frozen
class Setting:
    """One key of the file: what it said and what dpcost made of it."""

    key: str  # as the file names it: zero_optimization.stage, [parallelism] tensor_parallel_degree, --seq-length
    value: str  # as the file gives it
    became: str  # the dpcost flag and value (`--zero 3`), or "" when left out
    note: str = ""  # how it was converted, or why it was left out
    option: str = ""  # the option field it set ("dp" and "model" for those)


@frozen
class TrainingConfig:
    """What a training config gives a plan."""

    path: str
    kind: str  # "DeepSpeed JSON", ...
    options: dict[str, str]  # dpcost option field -> value, as its flag would be written
    settings: tuple[Setting, ...]
    dp: int | None = None  # the data-parallel size, when the file fixes it
    model: str | None = None  # a catalog name the file's model maps to
    model_spec: Any = None  # a ModelSpec the file defines (Megatron's model arguments), at the file's TP
    vocab_padding: tuple[int, int] | None = None  # (vocabulary, divisible-by): Megatron pads it to a multiple x TP
    replicas: int | None = None  # hybrid sharding with a shard group left to fill the rest (torchtitan's -1)
    refusals: dict[str, tuple[str, str]] = field(default_factory=dict)  # field -> (key, why), unless a flag sets it
    micro_from_dp: tuple[str, int, int] | None = None  # (key, global batch, accumulation): micro-batch from DP
    bucket_from_hidden: tuple[str, int] | None = None  # (key, bytes per element): a bucket of hidden^2 elements
    pp_split: PipelineSplit | None = None  # torchtitan's pipeline split, once the model is known
    # the framework's FSDP shards the TP ranks' shares over DP x CP (torchtitan: apply_tp, then apply_fsdp): a layout
    # is costed as --framework fsdp where that accounting covers it (_fsdp_layout_refusal), else as Megatron-LM runs it
    fsdp_layouts: bool = False
    # the framework's TP splits the sequence (torchtitan's, unless enable_sequence_parallel is off): a --tp typed over
    # a file without TP runs with --sequence-parallel, as the file's own TP would
    tp_sequence_parallel: bool = False
    # the file's FSDP does not reshard after the forward under PP (torchtitan's fsdp_reshard_after_forward "default"):
    # a --pp typed over a file without PP runs at ZeRO 2, as the file's own PP would
    pp_keeps_parameters: bool = False


class Reading:
    """A reader's notebook: the options a file gives and a line for every key it read."""

    def __init__(self, path: str, kind: str) -> None:
        self.path, self.kind = path, kind
        self.options: dict[str, str] = {}
        self.settings: list[Setting] = []
        self.refusals: dict[str, tuple[str, str]] = {}
        self.micro_from_dp: tuple[str, int, int] | None = None
        self.bucket_from_hidden: tuple[str, int] | None = None
        self.pp_split: PipelineSplit | None = None
        self.tp_sequence_parallel = False
        self.pp_keeps_parameters = False

    def use(self, key: str, value: Any, name: str, text: str, note: str = "") -> None:
        """The file's `key` sets option `name` to `text` (as its flag would be written)."""
        from dpcost.options import field_flag

        self.options[name] = text
        flag = field_flag(name)
        if text in ("true", "false") and _is_bool(name):
            became = flag if text == "true" else f"--no-{flag[2:]}"
        else:
            became = f"{flag} {text}"
        self.settings.append(Setting(key, _shown(value), became, note, name))

    def note(self, key: str, value: Any, became: str, note: str = "") -> None:
        """A key that sets something other than an option (the DP size, the model)."""
        option = became.split(" ")[0].removeprefix("--") if became.startswith(("--dp ", "--model ")) else ""
        self.settings.append(Setting(key, _shown(value), became, note, option))

    def ignore(self, key: str, value: Any, why: str) -> None:
        self.settings.append(Setting(key, _shown(value), "", why))

    def listed(self) -> set[str]:
        """The keys that have a row so far."""
        return {setting.key for setting in self.settings}

    def refuse(self, name: str, key: str, why: str) -> None:
        """The file sets option `name` in a way dpcost cannot price: an error unless a flag sets it."""
        self.refusals[name] = (key, why)
        self.settings.append(Setting(key, "", "", why))

    def error(self, key: str, message: str) -> InputError:
        return InputError(self.path, f"{key}: {message}")

    def section(self, doc: dict[str, Any], key: str, label: str, what: str) -> dict[str, Any]:
        """`doc[key]`, which must be a mapping (absent or empty: none); else one error naming `label`."""
        value = doc.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.error(label, f"must be {what}, got {type(value).__name__}")
        return value

    def done(self, **fields: Any) -> TrainingConfig:
        return TrainingConfig(
            path=self.path,
            kind=self.kind,
            options=dict(self.options),
            settings=tuple(self.settings),
            refusals=dict(self.refusals),
            micro_from_dp=self.micro_from_dp,
            bucket_from_hidden=self.bucket_from_hidden,
            pp_split=self.pp_split,
            tp_sequence_parallel=self.tp_sequence_parallel,
            pp_keeps_parameters=self.pp_keeps_parameters,
            **fields,
        )


def _is_bool(name: str) -> bool:
    from dpcost.options import SECTIONS

    return any(model.model_fields[name].annotation is bool for model in SECTIONS.values() if name in model.model_fields)


def _shown(value: Any, depth: int = 0) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value if len(value) <= 60 else value[:57] + "..."
    if isinstance(value, list | tuple):
        return "[" + list_items(value, _shown, depth)[:60] + "]"
    return shown_value(value)


def list_items(value: list[Any] | tuple[Any, ...], show: Callable[[Any, int], str], depth: int) -> str:
    """A list's items as `show` shows each one level down, comma-joined: a few items (six, then ...), a few levels
    (three, then ...): a hostile file's lists can nest without end."""
    if depth >= 3:
        return "..."
    return ", ".join([show(v, depth + 1) for v in value[:6]] + (["..."] if len(value) > 6 else []))


def model_required(config: TrainingConfig, source: str) -> str:
    """What to say when a file names no model dpcost has: the model it names, where it names one."""
    named = next((s for s in config.settings if s.note.startswith("not in dpcost's catalog")), None)
    said = f"its {named.key} {named.value} is not in dpcost's catalog" if named else "it names no model dpcost knows"
    return f"required: {source}: {said}; give a catalog name, a YAML spec or the model's config.json"


def read_training_config(path: str, where: str = "--from") -> TrainingConfig:
    """Read a training config; its kind from its suffix and its keys. Errors name the file and the key."""
    from dpcost.catalog import _check_path, _parse_json, _parse_yaml, _read_text
    from dpcost.training_configs import torchtitan_python

    path, function = torchtitan_python.split_function(path)
    file = _check_path(path, where)
    text = _read_text(file, path)
    suffix = file.suffix.lower()
    if suffix == ".py":
        if not torchtitan_python.looks_like(text):
            raise InputError(path, f"a Python file, but no torchtitan config (no Trainer.Config); --from reads {KINDS}")
        return torchtitan_python.read(file, path, function)
    if function is not None:
        raise InputError(path, f":{function} names a config function, which only a torchtitan Python config has")
    if suffix == ".toml":
        from dpcost.training_configs import torchtitan

        return torchtitan.read(_parse_toml(text, path), path)
    if suffix == ".json":
        doc = _parse_json(text, path)
        from dpcost.training_configs import deepspeed

        if deepspeed.looks_like(doc):
            return deepspeed.read(doc, path)
        if "model_type" in doc or "architectures" in doc:
            raise InputError(path, "a model's config.json, not a training config: give it as --model")
        raise InputError(path, f"not a DeepSpeed JSON (no train_micro_batch_size_per_gpu, zero_optimization, "
                         f"bf16 or fp16 key); --from reads {KINDS}")  # fmt: skip
    if suffix in (".yaml", ".yml"):
        doc = _parse_yaml(text, path)
        from dpcost.training_configs import accelerate

        if "distributed_type" in doc:
            return accelerate.read(doc, path, file.parent)
        raise InputError(path, f"not an Accelerate config (no distributed_type key); --from reads {KINDS}")
    from dpcost.training_configs import megatron

    if megatron.looks_like(text):
        return megatron.read(text, path)
    raise InputError(path, f"cannot tell what this file is; --from reads {KINDS} (by suffix: .json, .toml, .py, "
                     ".yaml, or a shell script of pretrain_gpt.py arguments)")  # fmt: skip


def _parse_toml(text: str, where: str) -> dict[str, Any]:
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(where, f"malformed TOML: {str(exc)[:200]}") from None
    except RecursionError:
        raise InputError(where, "malformed TOML: nested too deeply") from None


def _whole_or(value: Any, default: int) -> int:
    """A whole number as a flag gives it; `default` where it is not one (validation names it later)."""
    from dpcost.units import UnitError, parse_whole

    try:
        return parse_whole(value)
    except (UnitError, TypeError, ValueError):
        return default


def _as_run(value: Any) -> Any:
    """A file's option value as the engine holds it (a ZeRO stage is a number)."""
    return int(value) if isinstance(value, str) and value.isdigit() else value


def hf_auto_bucket_elements(spec: ModelSpec) -> int:
    """The elements the Hugging Face Trainer fills a DeepSpeed "auto" reduce_bucket_size with: hidden^2
    (transformers/integrations/deepspeed.py, trainer_config_finalize; a multimodal model's text hidden size)."""
    assert spec.architecture is not None
    return spec.architecture.hidden**2


def _plan_model(config: TrainingConfig, model: str | None) -> ModelSpec | None:
    """The model the plan runs, where it can be loaded: the typed --model, the file's catalog name, or its own."""
    from dpcost.catalog import load_model

    if model is not None or config.model is not None:
        try:
            return load_model(str(model if model is not None else config.model))
        except InputError:
            return None  # the model flag's own error is raised where the plan is built
    return cast("ModelSpec | None", config.model_spec)


def _hidden_squared_bucket(config: TrainingConfig, model: str | None) -> dict[str, str]:
    """The bucket of a DeepSpeed "auto" reduce_bucket_size (hf_auto_bucket_elements), once the model is known;
    nothing where it is not (DeepSpeed's default is then priced)."""
    assert config.bucket_from_hidden is not None
    spec = _plan_model(config, model)
    if spec is None or spec.architecture is None:
        return {}
    _, per_element = config.bucket_from_hidden
    return {"bucket_bytes": f"{hf_auto_bucket_elements(spec) * per_element}B"}


def _torchtitan_split(config: TrainingConfig, model: str | None, pp: int) -> dict[str, str]:
    """torchtitan's pipeline split as --pipeline-layout, once the model's layers are known
    (torchtitan.torchtitan_layout, before v0.1 torchtitan_2024_layout); nothing where they are not (dpcost's even
    split is then priced)."""
    from dpcost.training_configs.torchtitan import torchtitan_2024_layout, torchtitan_layout

    split = config.pp_split
    assert split is not None
    spec = _plan_model(config, model)
    if spec is None or spec.architecture is None:
        return {}
    layers, stages = spec.architecture.layers, pp * split.stages_per_rank
    try:
        if split.before_v01:
            return {"pipeline_layout": torchtitan_2024_layout(layers, stages, split.starts)}
        layout = torchtitan_layout(layers, stages, split.first_less, split.last_less, split.per_stage)
        return {"pipeline_layout": layout}
    except ValueError as exc:
        raise InputError(config.path, f"{split.key}: {exc}") from None


def _is_layout(values: dict[str, Any]) -> bool:
    """The plan has a model-parallel dimension."""
    return any(_whole_or(values.get(name, 1), 1) > 1 for name in ("tp", "cp", "pp", "ep"))


def _fsdp_layout_refusal(values: dict[str, Any], dp: int | None, spec: ModelSpec | None) -> str | None:
    """What keeps FSDP with TP or CP (fsdp_layout.fsdp_layout_refusal) from costing the file's layout, or
    None; a plan whose model is not known here, or that the options refuse, is left to Megatron-LM's costing."""
    from pydantic import ValidationError

    from dpcost.engine.fsdp_layout import fsdp_layout_refusal
    from dpcost.options import WRITTEN, Options, field_flag

    if spec is None or spec.architecture is None:
        return "the model, not known here"
    try:
        o = Options.model_validate({"dp": dp or 1, **values}, context=WRITTEN)
    except ValidationError:
        return "options it refuses"
    refusal = fsdp_layout_refusal(spec, o)
    if refusal is None:
        return None
    return f"{spec.name}'s layers" if refusal.where == "framework" else field_flag(refusal.where)


def _typed_flag(flag: str, value: Any) -> str:
    """A flag as the user typed it: `--zero 2`, `--overlap-comm`, `--no-overlap-comm`."""
    if isinstance(value, bool):
        return flag if value else f"--no-{flag[2:]}"
    return f"{flag} {value}"


@frozen
class Applied:
    """A training config with the user's flags laid over it: the plan to cost, and the report's lines."""

    model: str | None
    model_spec: Any
    dp: int | None
    values: dict[str, Any]  # option field -> value, the file's with the typed flags over them
    settings: tuple[Setting, ...]


def apply(
    config: TrainingConfig, typed: dict[str, Any], dp: int | None, model: str | None, dp_text: str | None = None
) -> Applied:
    """The file's plan with the flags the user typed (`typed`: option field -> value; `dp`, `model` when typed;
    `dp_text` the --dp a sweep was given) over it; each file setting a flag overrides says so."""
    from dpcost.options import field_flag

    for name, (key, why) in config.refusals.items():
        if name not in typed and not (name == "model" and model is not None):
            flag = "--model" if name == "model" else field_flag(name)
            raise InputError(config.path, f"{key}: {why}" + ("" if flag in why else f"; or give {flag}"))
    shown_dp = dp_text or dp
    given = {**typed, **({"dp": shown_dp} if shown_dp else {}), **({"model": model} if model is not None else {})}
    settings = [
        Setting(s.key, s.value, "", f"overridden by {_typed_flag(field_flag(s.option), given[s.option])}", s.option)
        if s.option in given
        else s
        for s in config.settings
    ]
    replicas_dp = dp if dp is not None else config.dp
    values = {**config.options, **typed}
    if config.tp_sequence_parallel and _whole_or(typed.get("tp", 1), 1) > 1 and "sequence_parallel" not in values:
        values["sequence_parallel"] = "true"
    if config.pp_keeps_parameters and _whole_or(typed.get("pp", 1), 1) > 1 and "zero" not in typed:
        values["zero"] = "2"
        kept = f"under {_typed_flag('--pp', typed['pp'])} the parameters kept to the backward (ZeRO-2)"
        settings = [Setting(s.key, s.value, "--zero 2", kept, s.option) if s.option == "zero" else s for s in settings]
    if config.replicas and "shard_group" not in typed and replicas_dp is not None:
        if replicas_dp % config.replicas:
            raise InputError(
                config.path, f"data_parallel_replicate_degree {config.replicas} does not divide DP {replicas_dp}"
            )
        from dpcost.training_configs.torchtitan import fsdp_shard_group  # the one reader that sets replicas

        shard = replicas_dp // config.replicas
        values["shard_group"] = str(fsdp_shard_group(shard, _whole_or(values.get("cp", 1), 1)))
    if config.micro_from_dp is not None and "micro_batch" not in typed and replicas_dp is not None:
        key, total, accum = config.micro_from_dp
        if total % (accum * replicas_dp):
            raise InputError(
                config.path, f"{key}: {total} cannot be split into {accum} micro-batches on DP {replicas_dp}"
            )
        values["micro_batch"] = str(total // (accum * replicas_dp))
    if config.bucket_from_hidden is not None and "bucket_bytes" not in typed:
        values.update(_hidden_squared_bucket(config, model))
    split_typed = {"pipeline_layout", "first_stage_layers", "last_stage_layers", "virtual_stages"} & typed.keys()
    if config.pp_split is not None and not split_typed and _whole_or(values.get("pp", 1), 1) > 1:
        values.update(_torchtitan_split(config, model, _whole_or(values["pp"], 1)))
    if _is_layout(values):  # a layout runs Megatron's own settings: the file's for pure DP are left out, and said so
        from dpcost.engine.fsdp_layout import FSDP_LAYOUT_READS
        from dpcost.engine.layout_report import LAYOUT_IGNORES, LAYOUT_RUNS

        fsdp_layout = values.get("framework") == "fsdp" and config.fsdp_layouts
        refusal = _fsdp_layout_refusal(values, replicas_dp, _plan_model(config, model)) if fsdp_layout else None
        # an FSDP layout also runs the framework's recomputations (torchtitan's per-op SAC among them)
        read = ("framework", "recompute", "fp8_recipe", *FSDP_LAYOUT_READS) if fsdp_layout and refusal is None else ()

        def unrun(name: str) -> bool:
            runs = LAYOUT_RUNS.get(name)
            return runs is not None and _as_run(values[name]) not in runs

        why = "not read by a TP/CP/PP/EP layout, costed as Megatron-LM runs it"
        if refusal is not None:
            why = f"{why} (FSDP with tensor or context parallelism is not costed with {refusal})"
        unread = {  # the file's options the layout leaves out, and why
            name: why
            for name in config.options
            if name not in typed
            and ((field_flag(name) in LAYOUT_IGNORES and name not in LAYOUT_RUNS) or unrun(name))
            and name not in read
            and field_flag(name) not in read
        }
        if read and values.get("tp_comm_overlap") == "true" and "tp_comm_overlap" not in typed:
            # a file's async TP: said in its row, not warned of as a flag to drop
            unread["tp_comm_overlap"] = (
                "torch's async TP is not priced under FSDP: its collectives costed as DTensor's, waited for"
            )
        for name in unread:
            values.pop(name, None)
        settings = [Setting(s.key, s.value, "", unread[s.option], s.option) if s.option in unread else s
                    for s in settings]  # fmt: skip
        if read:
            dims = [d for d in ("tp", "cp", "pp") if _whole_or(values.get(d, 1), 1) > 1]
            degrees = " ".join(f"--{d} {values[d]}" for d in dims)
            staged = ", each pipeline stage's (pipeline_llm, torch's pipelining)" if "pp" in dims else ""
            how = f"FSDP2 over the TP and CP ranks' shares (apply_tp, apply_fsdp){staged}: costed as --framework fsdp "
            how += degrees
            settings = [
                Setting(s.key, s.value, s.became, how, s.option) if s.option == "framework" else s for s in settings
            ]
    spec = None if model is not None else config.model_spec
    if spec is not None and config.vocab_padding is not None and "tp" in typed:
        from dpcost.engine.layout_memory import padded_vocab_size

        vocab, multiple = config.vocab_padding
        padded = padded_vocab_size(vocab, _whole_or(typed["tp"], 1), multiple)  # at the TP the plan gives
        spec = spec.model_copy(update={"architecture": spec.architecture.model_copy(update={"vocab": padded})})
    return Applied(
        model=model if model is not None else config.model,
        model_spec=spec,
        dp=replicas_dp,
        values=values,
        settings=tuple(settings),
    )
