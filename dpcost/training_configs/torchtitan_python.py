"""A torchtitan Python config as a plan: the function `--from FILE.py:NAME` names, read from its source, not run.

Since #2386 (9810191bb, 2026-02-23) torchtitan describes a run by a Python function returning `Trainer.Config`
(torchtitan/models/*/config_registry.py, torchtitan_recipes/; torchtitan/config/README.md at b5bcd76c6), where its
TOML files had (torchtitan.py). python_source.py reads the function's value; this module maps its sections, each
key named as torchtitan's CLI names it (training.seq_len), through torchtitan.py's readers where the key means
what the TOML's did. Keys and defaults as torchtitan/config/configs.py, trainer.py and the components declare them,
each form where torchtitan introduced it (docs/from.md has the table):
- 9810191bb: TrainingConfig(local_batch_size 8, seq_len 2048, global_batch_size -1), PP's
  pipeline_parallel_microbatch_size, ActivationCheckpointConfig(mode, selective_ac_option), OptimizersContainer.
  Config(name AdamW), float8 in model_converters;
- 114151ad4 (2026-03-23): selective activation checkpointing only per-op (selective_ac_option gone), the default;
- aa68af18e (2026-03-29): ParallelismConfig.enable_sequence_parallel (on);
- 6348d93d1 (2026-04-27): converters in model_registry(flavor, quantization=[...]), named converters from
  74181b1e8 (2026-05-08), which adds LoRA;
- 632f67f12 (2026-06-04): default_adamw and param_groups' optimizer_name; the default has no groups;
- c5d93d109 (2026-06-15): FullAC.Config, SelectiveAC.Config (per-op SAC), MemoryBudgetAC.Config, None;
- 737594746 (2026-08-12): async TP in CompileConfig;
- 73aed7f6c (2026-08-20): num_tokens_per_microbatch_per_dp_rank 16,384 and max_context_length 2,048 (a micro-batch
  of their quotient in sequences), num_tokens_per_train_step -1 (no accumulation), PP's num_pp_microbatches per
  DP rank (1).
A default that changed with the forms (PP's micro-batches; the optimizer) is the one of the config's era (_recent).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dpcost.engine.loss import TORCHTITAN_CHUNKS
from dpcost.errors import InputError
from dpcost.training_configs import NOT_PRICED, Reading, TrainingConfig, list_items
from dpcost.training_configs import torchtitan as toml
from dpcost.training_configs.python_source import Built, Unread, evaluate, functions_of

__all__ = ["looks_like", "read", "split_function"]

KIND = "torchtitan Python config"
# The TrainingConfig and ParallelismConfig keys of the token budget (from 73aed7f6c)
TOKEN_KEYS = ("num_tokens_per_microbatch_per_dp_rank", "max_context_length", "num_tokens_per_train_step")
TOKEN_DEFAULTS = {"num_tokens_per_microbatch_per_dp_rank": 16384, "max_context_length": 2048}  # configs.py
# The parallelism keys that do nothing at the degrees given, besides the TOML's (toml.PARALLELISM)
PARALLELISM = (*toml.PARALLELISM, "num_pp_microbatches", "enable_sequence_parallel", "module_fqns_per_model_part",
               "pipeline_parallel_first_stage_less_layers", "pipeline_parallel_last_stage_less_layers",
               "pipeline_parallel_layers_per_stage", "context_parallel_load_balancer")  # fmt: skip
# Trainer.Config's sections read; the rest are listed as not priced
SECTIONS = ("model_spec", "model_converters", "training", "parallelism", "activation_checkpoint", "compile",
            "optimizer", "loss")  # fmt: skip
# a linear converter's class -> --compute-dtype (MXLinearConverter: components/quantization/mx.py to 6348d93d1)
CONVERTERS = {"Float8Linear": "fp8", "MXFP8Linear": "fp8", "MXLinear": "fp8", "NVFP4Linear": "nvfp4"}
BATCH_KEYS = ("local_batch_size", "batch_size", "seq_len", "global_batch_size")  # TrainingConfig's before 73aed7f6c
AC_POLICIES = ("FullAC", "SelectiveAC", "MemoryBudgetAC")  # activation_checkpoint.py's classes from c5d93d109
# The keys a section's reader prices: one the source gives as an expression dpcost cannot evaluate is an error
PRICED = {
    "training": ("local_batch_size", "batch_size", "global_batch_size", "seq_len", "mixed_precision_reduce",
                 "mixed_precision_param", "compile", "dtype", "enable_cpu_offload", *TOKEN_KEYS),
    "parallelism": PARALLELISM,
    "compile": ("enable", "components", "enable_async_tensor_parallel"),
    "optimizer": ("name", "implementation", "param_groups"),
    "activation_checkpoint": ("mode", "selective_ac_option"),
}  # fmt: skip


def label(section: str, key: str) -> str:
    """A key as torchtitan's CLI names it: training.seq_len."""
    return f"{section}.{key}"


def looks_like(text: str) -> bool:
    """A Python module of torchtitan configs: it builds a Trainer.Config."""
    return "Trainer.Config" in text or "torchtitan" in text


def split_function(given: str) -> tuple[str, str | None]:
    """`FILE.py:NAME` as (FILE.py, NAME); a path without a function as (path, None)."""
    path, sep, name = given.rpartition(":")
    if sep and path.lower().endswith(".py") and name.isidentifier():
        return path, name
    return given, None


def read(file: Path, path: str, function: str | None) -> TrainingConfig:
    """The plan the config function builds (the module's only function where none is named)."""
    if function is None:
        names = functions_of(file, path)
        builders = [n for n in names if not n.startswith("_")]
        if len(builders) != 1:
            shown = ", ".join(builders[:12]) or "none"
            raise InputError(path, f"name the config function as {path}:NAME; the module defines: {shown}")
        function = builders[0]
    where = f"{path}:{function}"
    root, skipped = evaluate(file, function, where)
    if not isinstance(root, Built) or not root.name.endswith("Trainer.Config"):
        returned = _shown(root) if isinstance(root, Built | Unread) else repr(root)[:60]
        raise InputError(where, f"does not return a Trainer.Config dpcost can read from its source (it returns "
                         f"{returned}, which dpcost does not follow)")  # fmt: skip
    r = Reading(where, KIND)
    r.use("(a torchtitan config)", "torchtitan", "framework", "fsdp", "torchtitan runs FSDP2")
    sections = root.kwargs
    for key, value in sections.items():
        if key not in SECTIONS:
            r.ignore(key, _shown(value), NOT_PRICED)
    model = _model(r, sections.get("model_spec"))
    _converters(r, sections)
    parallel = _keys(r, sections.get("parallelism"), "parallelism")
    training = _keys(r, sections.get("training"), "training")
    recent = _recent(sections, training, parallel)
    # the token budget's keys (from 73aed7f6c), or the batch's before; neither: the config's era's
    budget = "num_pp_microbatches" in parallel or any(k in training for k in TOKEN_KEYS)
    if (
        not budget
        and not any(k in training for k in BATCH_KEYS)
        and "pipeline_parallel_microbatch_size" not in parallel
    ):
        budget = recent
    sequence_parallel = parallel.get("enable_sequence_parallel", True)
    degrees = toml.parallelism(
        r,
        {k: v for k, v in parallel.items() if k != "enable_sequence_parallel"},
        label,
        sequence_parallel=sequence_parallel is not False,
        known=PARALLELISM,
        pipelined=("num_pp_microbatches",) if budget else ("pipeline_parallel_microbatch_size",),
    )
    if "enable_sequence_parallel" in parallel:
        key = label("parallelism", "enable_sequence_parallel")
        value = toml.switch(r, key, sequence_parallel)
        if degrees["tp"] > 1 and value == "false":
            r.use(key, value, "sequence_parallel", "false", "TP's activations whole on every rank")
        else:
            r.note(
                key,
                value,
                "",
                "applies with TP above 1" if degrees["tp"] == 1 else "torchtitan's TP is sequence-parallel",
            )
    if budget:
        own = ("dtype", "enable_cpu_offload")  # toml.storage's, which toml.training reads itself
        _token_budget(r, {k: v for k, v in training.items() if k not in own}, degrees["pp"], parallel)
        toml.storage(r, training, label)
    else:
        toml.training(r, training, degrees["pp"], parallel, label)
    _checkpointing(r, sections)
    _compile(r, sections.get("compile"))
    _optimizer(r, sections.get("optimizer"), recent)
    _loss(r, sections)
    for line in skipped:
        r.ignore("(not read)", line, "a statement dpcost does not evaluate; the config's value may differ")
    return r.done(**toml.data_parallel(r, degrees, model, label("parallelism", "data_parallel_*_degree")))


def _recent(sections: dict[str, Any], training: dict[str, Any], parallel: dict[str, Any]) -> bool:
    """Whether the config is torchtitan's from 632f67f12 (2026-06-04) on, whose defaults differ from the first
    Python configs' (an optimizer without parameter groups, refused; after 73aed7f6c, PP's micro-batches): a form
    only the later ones have (default_adamw and param_groups, FullAC/SelectiveAC, the token budget, async TP in
    CompileConfig), else a form only the earlier ones have (an optimizer name, ActivationCheckpointConfig,
    model_converters, local_batch_size); neither: torchtitan as it is now."""
    ac, optimizer, compile_ = (sections.get(k) for k in ("activation_checkpoint", "optimizer", "compile"))
    newer = (
        (isinstance(ac, Built) and ac.name.split(".")[0] in AC_POLICIES)
        or (
            isinstance(optimizer, Built)
            and (optimizer.name.endswith("default_adamw") or "param_groups" in optimizer.kwargs)
        )
        or any(k in training for k in TOKEN_KEYS)
        or "num_pp_microbatches" in parallel
        or (isinstance(compile_, Built) and "enable_async_tensor_parallel" in compile_.kwargs)
    )
    older = (
        (isinstance(ac, Built) and ac.name.endswith("ActivationCheckpointConfig"))
        or (isinstance(optimizer, Built) and "name" in optimizer.kwargs)
        or "model_converters" in sections
        or any(k in training for k in BATCH_KEYS)
    )
    return newer or not older


def _keys(r: Reading, value: Any, section: str) -> dict[str, Any]:
    """A section's keyword arguments (none where it is absent), a value not read shown as its source; a section,
    or a key its reader prices (PRICED), that dpcost cannot evaluate is one error."""
    if value is None:
        return {}
    if not isinstance(value, Built):
        raise r.error(section, f"is {_shown(value)}, which dpcost cannot evaluate without running it")
    keys: dict[str, Any] = {}
    for key, given in value.kwargs.items():
        if isinstance(given, Unread) and key in PRICED.get(section, ()):
            raise r.error(label(section, key), f"is {given.text[:80]}, which dpcost cannot evaluate without running "
                          "it: write the value, or give its flag")  # fmt: skip
        keys[key] = _shown(given) if isinstance(given, Unread | Built) else given
    return keys


def _model(r: Reading, spec: Any) -> str | None:
    """model_registry(flavor, ...): the model its package names (torchtitan.models.llama3 -> llama3)."""
    if spec is None:
        return None
    if not isinstance(spec, Built) or not spec.name.endswith("model_registry") or not spec.args:
        r.ignore("model_spec", _shown(spec), "not a model_registry(flavor) call: give --model")
        return None
    name = spec.origin.rsplit(".", 1)[-1] if spec.origin else ""
    found = toml.model_name(r, "model_spec", name or "(unknown)", spec.args[0])
    for key, value in spec.kwargs.items():
        if key != "converters":
            r.ignore(f"model_spec.{key}", _shown(value), NOT_PRICED)
    return found


def _converters(r: Reading, sections: dict[str, Any]) -> None:
    """The model's converters: in model_converters=ModelConvertersContainer.Config(converters=[...]) until 6348d93d1,
    then in model_registry(flavor, quantization=[...]), named converters from 74181b1e8 (2026-05-08). A linear
    converter sets every matmul's dtype (CONVERTERS; emulate=True keeps them in BF16); FSDP's float8 all-gather is
    Float8LinearConverter's enable_fsdp_float8_all_gather with tensorwise scaling (no recipe_name), until
    6348d93d1 removed it (components/quantization/float8.py); LoRA (components/lora.py, 74181b1e8) is refused."""
    spec, container = sections.get("model_spec"), sections.get("model_converters")
    found: list[tuple[str, Any, bool]] = []  # (key, converters, whether FSDP's float8 gather is a field there)
    if isinstance(spec, Built):
        for name in ("quantization", "converters"):
            if name in spec.kwargs:
                found.append((f"model_spec.{name}", spec.kwargs[name], False))
    if isinstance(container, Built):
        for key, value in container.kwargs.items():
            if key == "converters":
                found.append(("model_converters.converters", value, True))
            else:
                r.ignore(f"model_converters.{key}", _shown(value), NOT_PRICED)
    for key, converters, gathers in found:
        if not isinstance(converters, list):
            raise r.error(key, f"is {_shown(converters)}, which dpcost cannot evaluate without running it")
        for converter in converters:
            name = converter.name if isinstance(converter, Built) else _shown(converter)
            fields = converter.kwargs if isinstance(converter, Built) else {}
            if "LoRA" in name:
                raise r.error(key, f"{name}: LoRA trains adapters on frozen weights; dpcost prices full training")
            dtype = next((d for prefix, d in CONVERTERS.items() if name.startswith(prefix)), None)
            if dtype is not None and "fp4" in str(fields.get("recipe_name", "")).lower():
                dtype = "nvfp4"
            if dtype is None:
                grouped = "the MoE experts' grouped GEMMs alone: --compute-dtype sets every matmul"
                r.ignore(key, name, grouped if "Grouped" in name else NOT_PRICED)
                continue
            if fields.get("emulate") is True:
                r.ignore(key, name, "emulated: the matmuls run in BF16")
                continue
            r.use(key, name, "compute_dtype", dtype, f"{name.split('.')[0]} matmuls")
            if "enable_fsdp_float8_all_gather" in fields:
                gather = f"{key}.enable_fsdp_float8_all_gather"
                value = fields["enable_fsdp_float8_all_gather"]
                if not gathers:
                    r.ignore(gather, value, "not a converter field from 6348d93d1, which removed it")
                elif value is True and "recipe_name" not in fields:
                    r.use(gather, value, "gather_dtype", "fp8", "FSDP gathers the float8 weights (tensorwise)")
                else:
                    r.ignore(gather, value, "off, or a scaling recipe it does not apply to (tensorwise only)")


def _token_budget(r: Reading, training: dict[str, Any], pp: int, parallel: dict[str, Any]) -> None:
    """TrainingConfig from 73aed7f6c: a micro-batch of num_tokens_per_microbatch_per_dp_rank tokens in sequences of
    max_context_length, num_pp_microbatches of them per DP rank under PP, num_tokens_per_train_step in all (-1:
    no accumulation)."""
    t = "training"
    given = {k: training.get(k, TOKEN_DEFAULTS.get(k, -1)) for k in TOKEN_KEYS}
    tokens = toml.whole(r, label(t, TOKEN_KEYS[0]), given[TOKEN_KEYS[0]])
    length = toml.whole(r, label(t, "max_context_length"), given["max_context_length"])
    default = {k: "" if k in training else "torchtitan's default" for k in TOKEN_KEYS}
    if tokens % length:
        r.refuse(
            "micro_batch",
            label(t, TOKEN_KEYS[0]),
            f"{tokens:,} tokens are not whole sequences of max_context_length {length:,}: give --micro-batch",
        )
    else:
        note = f"{tokens:,} / {length:,} tokens a sequence" + (
            f"; {default[TOKEN_KEYS[0]]}" if default[TOKEN_KEYS[0]] else ""
        )
        r.use(label(t, TOKEN_KEYS[0]), tokens, "micro_batch", str(tokens // length), note)
    r.use(label(t, "max_context_length"), length, "seq_len", str(length), default["max_context_length"])
    if pp > 1:
        key = label("parallelism", "num_pp_microbatches")
        micro = toml.whole(r, key, parallel.get("num_pp_microbatches", 1))
        if given["num_tokens_per_train_step"] == -1:
            r.use(
                key,
                micro,
                "accumulation",
                str(micro),
                "" if "num_pp_microbatches" in parallel else "torchtitan's default",
            )
        else:
            r.note(key, micro, "", "the accumulation follows from num_tokens_per_train_step")
    elif "num_pp_microbatches" in parallel:
        r.ignore(label("parallelism", "num_pp_microbatches"), parallel["num_pp_microbatches"], "no effect without PP")
    step = given["num_tokens_per_train_step"]
    if step != -1 and pp > 1:  # trainer.py: one pipeline schedule of num_pp_microbatches per accumulation step
        r.refuse("global_batch", label(t, "num_tokens_per_train_step"), f"{step}: under PP torchtitan runs a "
                 "pipeline schedule per accumulation step, each with its bubble, where dpcost prices one a step: give "
                 "--global-batch, one schedule's sequences")  # fmt: skip
    elif step != -1:
        step = toml.whole(r, label(t, "num_tokens_per_train_step"), step)
        if step % length:
            raise r.error(label(t, "num_tokens_per_train_step"), f"{step:,} is not whole sequences of {length:,}")
        r.use(
            label(t, "num_tokens_per_train_step"), step, "global_batch", str(step // length), f"{step:,} / {length:,}"
        )
    toml.precision(r, training, label)
    for key, value in training.items():
        if key not in (*TOKEN_KEYS, "mixed_precision_reduce", "mixed_precision_param"):
            r.ignore(label(t, key), value, NOT_PRICED)


def _checkpointing(r: Reading, sections: dict[str, Any]) -> None:
    """activation_checkpoint: FullAC.Config (--recompute full), SelectiveAC.Config (per-op SAC, every second matmul
    recomputed: --recompute op), MemoryBudgetAC.Config (compile's partitioner, not priced), None (no checkpointing;
    trainer.py at c5d93d109); before, ActivationCheckpointConfig(mode, selective_ac_option), whose selective mode
    is per-op from 114151ad4 (2026-03-23), which dropped the option. Absent: per-op, torchtitan's default since
    114151ad4 (the month before, its option defaulted to every 2nd block in full)."""
    key = "activation_checkpoint"
    if key not in sections:
        r.use(key, "(default)", "recompute", "op", "torchtitan's default since 114151ad4: per-op SAC")
        return
    ac = sections[key]
    if ac is None:
        r.use(key, "None", "recompute", "none", "no activation checkpointing")
        return
    if not isinstance(ac, Built):
        raise r.error(key, f"is {_shown(ac)}, which dpcost cannot evaluate without running it")
    if ac.name.endswith("ActivationCheckpointConfig"):
        keys = _keys(r, ac, key)
        if keys.get("mode", "selective") == "selective" and "selective_ac_option" not in keys:
            r.use(label(key, "mode"), keys.get("mode", "selective"), "recompute", "op",
                  "per-op SAC: selective mode's only form from 114151ad4")  # fmt: skip
            for name, value in keys.items():
                if name != "mode":
                    r.ignore(label(key, name), _shown(value), NOT_PRICED)
            return
        toml.checkpointing(r, keys, label)
        return
    policy = ac.name.split(".")[0]
    if policy == "FullAC":
        r.use(key, f"{ac.name}()", "recompute", "full", "every block recomputed")
    elif policy == "SelectiveAC":
        r.use(key, f"{ac.name}()", "recompute", "op", "per-op SAC")
    else:
        r.refuse("recompute", key, f"{ac.name} is not priced: give --recompute")
        return
    for name, value in ac.kwargs.items():
        r.ignore(label(key, name), _shown(value), NOT_PRICED)


def _compile(r: Reading, section: Any) -> None:
    """CompileConfig(enable, components) as the TOML's [compile]; its enable_async_tensor_parallel (from
    737594746) is --tp-comm-overlap, which torchtitan refuses without compile.enable (configs.py)."""
    keys = dict(_keys(r, section, "compile"))
    if "enable_async_tensor_parallel" in keys:
        key = label("compile", "enable_async_tensor_parallel")
        value = toml.switch(r, key, keys.pop("enable_async_tensor_parallel"))
        if value == "true" and keys.get("enable") is not True:
            raise r.error(key, "async TP needs compile.enable (torchtitan's CompileConfig refuses it alone)")
        r.use(key, value, "tp_comm_overlap", value)
    toml.compiled(r, keys, label)


def _optimizer(r: Reading, section: Any, recent: bool) -> None:
    """OptimizersContainer.Config(name, implementation) as the TOML's [optimizer]; from 632f67f12 default_adamw(...)
    or param_groups whose optimizer_name is AdamW or Adam, with implementation (optimizer/optimizer.py). Absent:
    AdamW before 632f67f12; from it the default has no parameter groups, which torchtitan refuses."""
    if section is None:
        if recent:
            r.refuse("optimizer", "optimizer", "absent: torchtitan's default has no parameter groups, which it refuses")
        else:
            r.use("optimizer", "(default)", "optimizer", "adamw", "torchtitan's default: AdamW")
        return
    keys = dict(_keys(r, section, "optimizer"))
    if isinstance(section, Built) and section.name.endswith("default_adamw"):
        r.use("optimizer", f"{section.name}(...)", "optimizer", "adamw", "AdamW over every parameter")
        groups = None
        for name in [k for k in keys if k != "implementation"]:  # its own arguments, Adam's
            r.ignore(label("optimizer", name), _shown(keys.pop(name)), NOT_PRICED)
    else:
        groups = keys.pop("param_groups", None)
        if groups is None:
            toml.optimizer(r, keys, label)
            return
        names = {g.kwargs.get("optimizer_name") for g in groups} if isinstance(groups, list) and all(
            isinstance(g, Built) for g in groups) else {None}  # fmt: skip
        if names <= {"AdamW", "Adam"} and names:
            r.use("optimizer.param_groups", ", ".join(sorted(str(n) for n in names)), "optimizer", "adamw")
        else:
            r.refuse("optimizer", "optimizer.param_groups", f"{_shown(groups)} is not AdamW or Adam throughout")
    implementation = keys.pop("implementation", None)
    if implementation is not None:
        key = label("optimizer", "implementation")
        if implementation == "fused_opt_states_bf16":  # Adam's moments in bf16 (optimizer.py): not an option here
            r.refuse("optimizer_impl", key, "fused_opt_states_bf16 (Adam's states in bf16) is not priced")
        else:
            toml.implementation(r, key, implementation)
    for name, value in keys.items():
        r.ignore(label("optimizer", name), _shown(value), NOT_PRICED)


def _loss(r: Reading, sections: dict[str, Any]) -> None:
    """ChunkedLossWrapper.Config (torchtitan/components/loss.py at b5bcd76c6): the output projection and the loss a
    chunk at a time, --loss-impl chunked-head at its 8 chunks; CrossEntropyLoss.Config alone: PyTorch's
    cross-entropy on upcast logits, the framework's own."""
    loss = sections.get("loss")
    if loss is None:
        return
    name = loss.name if isinstance(loss, Built) else _shown(loss)
    compile_ = sections.get("compile")
    compiled = (
        isinstance(compile_, Built)
        and compile_.kwargs.get("enable") is True
        and "loss" in (compile_.kwargs.get("components") or ["model", "loss"])
    )  # CompileConfig's default components: the model and the loss
    if name.startswith("ChunkedLossWrapper") and isinstance(loss, Built):
        chunks = loss.kwargs.get("num_chunks", TORCHTITAN_CHUNKS)
        if chunks != TORCHTITAN_CHUNKS:
            r.refuse("loss_impl", "loss", f"ChunkedLossWrapper over {_shown(chunks)} chunks: dpcost prices its 8")
            return
        inner = loss.kwargs.get("loss_fn")
        if inner is not None and not (isinstance(inner, Built) and inner.name.startswith("CrossEntropyLoss")):
            r.refuse("loss_impl", "loss", f"a ChunkedLossWrapper over {_shown(inner)}: dpcost prices cross-entropy")
            return
        why = "the output projection and the loss 8 chunks at a time"
        if compiled:  # loss.py: a compiled chunk holds no fp32 copy; chunked-head prices the eager one
            why += "; its chunks compiled here, priced eager (upcast, about twice a compiled chunk's memory)"
        r.use("loss", name, "loss_impl", "chunked-head", why)
    elif name.startswith("CrossEntropyLoss"):
        r.note("loss", name, "", "PyTorch's cross-entropy on upcast logits: the framework's own")
    else:
        r.refuse("loss_impl", "loss", f"{name} is not a loss dpcost prices: give --loss-impl")


def _shown(value: Any, depth: int = 0) -> str:
    """A value as its row shows it: a few items, a few levels (a hostile file's lists can nest without end)."""
    if isinstance(value, Built):
        return f"{value.name or '(default)'}(...)"
    if isinstance(value, Unread):
        return value.text[:60]
    if isinstance(value, list):
        return ("[" + list_items(value, _shown, depth))[:60] + "]"
    return str(value)[:60]
