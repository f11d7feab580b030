"""A Megatron-LM launch script as a plan: the `pretrain_gpt.py` arguments, and the GPT model they build.

Arguments and defaults as megatron/training/arguments.py (core_r0.9.0) declares them: no --bf16/--fp16 trains in
fp32; DDP unless --use-distributed-optimizer; no overlap unless --overlap-grad-reduce; no recomputation unless
--recompute-granularity (or --recompute-activations, selective). The model: --ffn-hidden-size defaults to 4h, or
int(4h x 2/3 / 64) x 64 with --swiglu; --kv-channels to h / heads; LayerNorm, learned absolute positions, biases
on every linear layer (add_bias_linear) and on QKV, tied embeddings, hidden dropout 0.1, no window (--window-size);
the vocabulary padded to a multiple of --make-vocab-size-divisible-by (128) x TP (_vocab_size_with_padding in
megatron/training/tokenizer). MoE layers as --moe-layer-freq places them and latent attention as
--multi-latent-attention shapes it (gpt_layer_specs.py, MLASelfAttention; defaults as arguments.py at d98e8a64dd).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path, PurePosixPath
from typing import Any

from dpcost.engine.checkpointing import DEFAULT_MODULES
from dpcost.engine.frameworks import MEGATRON_FSDP
from dpcost.engine.layout_memory import VOCAB_DIVISIBLE_BY, padded_vocab_size
from dpcost.engine.pipeline_layout import accounted_layout, parse_pipeline_layout, virtual_stages_of
from dpcost.errors import InputError
from dpcost.training_configs import NOT_PRICED, Reading, TrainingConfig
from dpcost.training_configs.shell import SHELLS, Script, read_script, slurm_options

__all__ = ["looks_like", "model_arguments", "read"]

KIND = "Megatron-LM arguments"
GPT2_VOCAB = 50257  # GPT2BPETokenizer: the entries of GPT-2's encoder.json
MARKERS = ("--num-layers", "--tensor-model-parallel-size", "--micro-batch-size", "--hidden-size")
ENTRY = re.compile(r"pretrain_\w+\.py")  # Megatron-LM's entry scripts: pretrain_gpt.py, pretrain_mamba.py, ...
# The entry scripts whose model the reader builds from the arguments: the GPT and the hybrid stack; the others
# (pretrain_bert.py, pretrain_t5.py, pretrain_retro.py, pretrain_vlm.py, ...) build another model
GPT_ENTRIES = ("pretrain_gpt.py", "pretrain_mamba.py")
PARALLEL = {
    "--tensor-model-parallel-size": "tp",
    "--pipeline-model-parallel-size": "pp",
    "--context-parallel-size": "cp",
    "--expert-model-parallel-size": "ep",
    "--expert-tensor-parallel-size": "etp",
    "--moe-expert-parallel-size": "ep",  # Megatron-DeepSpeed's (megatron/arguments.py)
}


def _use_pipeline_layout(
    r: Reading, layout: str, virtual_given: bool, pp: int, flag: str = "--pipeline-model-parallel-layout"
) -> None:
    """--pipeline-model-parallel-layout (or the layout `flag` spells another way), and the virtual stages per rank it
    sets: its stages over PP (Megatron-LM arguments.py validate_args, which refuses it beside another virtual-stage
    flag)."""
    if virtual_given:
        raise r.error(flag, "sets the virtual stages itself: not beside --num-virtual-stages-per-pipeline-rank or "
                      "--num-layers-per-virtual-pipeline-stage (Megatron-LM's validate_args)")  # fmt: skip
    try:
        per_rank = virtual_stages_of(parse_pipeline_layout(layout), pp)
    except ValueError as exc:
        raise r.error(flag, str(exc)) from None
    r.use(flag, layout, "pipeline_layout", layout)
    if per_rank > 1:
        r.use(flag, layout, "virtual_stages", str(per_rank))


def _hybrid_pattern_flag(args: dict[str, list[str]]) -> str | None:
    """The flag that gives a hybrid model's layer pattern, if one does (--hybrid-override-pattern, deprecated)."""
    return next((name for name in ("--hybrid-layer-pattern", "--hybrid-override-pattern") if name in args), None)


def _hybrid_main(r: Reading, args: dict[str, list[str]], flag: str) -> str:
    """The pattern's main decoder, before its first MTP segment (/), its | kept (hybrid_layer_allocation.py
    get_hybrid_total_layer_count reads the layers so)."""
    return (_set_value(r, args, flag) or "").split("/")[0]


def _use_hybrid_stages(r: Reading, args: dict[str, list[str]], flag: str, pp: int) -> None:
    """A hybrid pattern's pipeline stages: its | cut the layers into PP x V stages, the embedding on the first and
    the loss on the last, as --pipeline-model-parallel-layout writes them (arguments.py at d98e8a64dd, which refuses
    the other layout flags beside a pattern, the end stages' layer counts beside its |, and both pattern flags)."""
    if "--hybrid-layer-pattern" in args and "--hybrid-override-pattern" in args:
        raise r.error("--hybrid-override-pattern", "not beside --hybrid-layer-pattern (arguments.py asserts)")
    main = _hybrid_main(r, args, flag)
    for name in ("--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank",
                 "--pipeline-model-parallel-layout", *ACCOUNTED_ARGS):  # fmt: skip
        if name in args:
            raise r.error(name, f"not beside {flag}: its | set the pipeline stages (arguments.py asserts)")
    for name in ("--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers"):
        if name in args and "|" in main:
            raise r.error(name, f"not beside the | stages of {flag} (arguments.py asserts)")
    if "|" in main:
        stages = "|".join(f"t*{len(segment)}" if segment else "" for segment in main.split("|"))
        _use_pipeline_layout(r, f"E{stages}L", False, pp, flag)


# Megatron-Core's embedding and loss counted as a layer each in the pipeline's split (transformer_config.py)
ACCOUNTED_ARGS = ("--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split")


def _use_accounted_split(r: Reading, accounted: list[str], layers: int, pp: int) -> None:
    """--account-for-embedding/loss-in-pipeline-split as the layout it builds (pipeline_layout.accounted_layout);
    refused beside the end stages' layer counts, as get_num_layers_to_build asserts."""
    for name in ("first_stage_layers", "last_stage_layers"):
        if name in r.options:
            raise r.error(accounted[0], "not beside --decoder-first/last-pipeline-num-layers (Megatron asserts)")
    virtual = int(r.options.get("virtual_stages", "1"))
    embedding, loss = ACCOUNTED_ARGS[0] in accounted, ACCOUNTED_ARGS[1] in accounted
    try:
        layout = accounted_layout(layers, pp, virtual, embedding, loss, int(r.options.get("mtp_layers", "0")))
    except ValueError as exc:
        raise r.error(accounted[0], str(exc)) from None
    r.use(", ".join(accounted), "", "pipeline_layout", layout, "the split with those counted as a layer each")


SWITCHES = {  # a flag present -> the option on
    "--overlap-moe-expert-parallel-comm": "ep_comm_overlap",  # model_parallel_config.py at d98e8a64dd
    "--sequence-parallel": "sequence_parallel",
    "--tp-comm-overlap": "tp_comm_overlap",
    "--moe-grouped-gemm": "grouped_gemm",
    "--fp8-output-proj": "fp8_output_proj",  # TransformerConfig.fp8_output_proj (ArgumentGroupFactory's flag)
}
# Activations moved to host memory (transformer_config.py fine_grained_activation_offloading with its
# offload_modules, model_parallel_config.py cpu_offloading): not costed, so said, not passed over as inert
OFFLOADING_ARGS = ("--fine-grained-activation-offloading", "--offload-modules", "--cpu-offloading",
                   "--cpu-offloading-num-layers")  # fmt: skip
OFFLOADING = "activation offloading is not costed: dpcost keeps those activations on the GPU and prices no copies"
# FP8 attention saves Q, K and V in FP8, and the input store SwiGLU's input in e4m3 (fused_bias_swiglu.py): not costed
FP8_ACTIVATION_ARGS = ("--fp8-dot-product-attention", "--fp8-multi-head-attention", "--activation-func-fp8-input-store")
FP8_ACTIVATIONS = "not costed: what it saves in FP8, dpcost keeps in bf16"
SWITCHES_OFF = {  # a flag present -> the option off
    "--no-overlap-p2p-communication": "pp_comm_overlap",
    "--no-gradient-accumulation-fusion": "grad_accumulation_fusion",
    # Transformer Engine stores each linear's weight-gradient GEMM for later and waits at once for its input
    # gradient's reduce-scatter (module/linear.py at 2.20.0.dev0, d0067d0da): that reduction waits
    "--delay-wgrad-compute": "tp_backward_async",
}
# MLA's shape flags, and the defaults arguments.py at d98e8a64dd gives those with one (--q-lora-rank's is None)
MLA_ARGS = ("--multi-latent-attention", "--q-lora-rank", "--kv-lora-rank", "--qk-head-dim", "--qk-pos-emb-head-dim",
            "--v-head-dim")  # fmt: skip
MLA_DEFAULTS = {"--kv-lora-rank": 32, "--qk-head-dim": 128, "--qk-pos-emb-head-dim": 64, "--v-head-dim": 128}
# A hybrid model's layers (megatron/core/models/hybrid/hybrid_layer_allocation.py Symbols at d98e8a64dd): the ones
# dpcost builds, as each layer's token mixer; G (gated DeltaNet), D (DeepSeek sparse attention) and + (MLA) it does not
HYBRID_MIXERS = {"M": "mamba", "*": "attention", "-": "none", "E": "none"}
# the Mamba-2 mixer's shape and its defaults (transformer_config.py mamba_state_dim, mamba_head_dim, mamba_num_groups;
# mamba_num_heads None: expand 2 x hidden over the head dim)
MAMBA_DEFAULTS = {"--mamba-state-dim": 128, "--mamba-head-dim": 64, "--mamba-num-groups": 8}
HYBRID_ARGS = ("--hybrid-layer-pattern", "--hybrid-override-pattern", "--is-hybrid-model", "--hybrid-attention-ratio",
               "--hybrid-mlp-ratio", "--mtp-hybrid-override-pattern", "--mamba-num-heads", "--squared-relu",
               *MAMBA_DEFAULTS)  # fmt: skip
MODEL_ARGS = (
    *HYBRID_ARGS,
    "--num-layers", "--hidden-size", "--num-attention-heads", "--ffn-hidden-size", "--kv-channels",
    "--group-query-attention", "--num-query-groups", "--swiglu", "--untie-embeddings-and-output-weights",
    "--normalization", "--disable-bias-linear", "--add-qkv-bias", "--position-embedding-type",
    "--use-rotary-position-embeddings", "--max-position-embeddings", "--vocab-size", "--tokenizer-type",
    "--vocab-file", "--merge-file", "--make-vocab-size-divisible-by", "--num-experts", "--moe-router-topk",
    "--moe-ffn-hidden-size", "--moe-shared-expert-intermediate-size", "--moe-latent-size", "--hidden-dropout",
    "--attention-dropout",
    "--qk-layernorm", "--moe-layer-freq", "--tokenizer-model", "--window-size", "--window-attn-skip-freq", *MLA_ARGS,
    "--embed-layernorm", "--pad-vocab-size-to", "--topk", "--expert-interval", "--mlp-type",
)  # fmt: skip
# Megatron-DeepSpeed's spellings of --position-embedding-type (bigscience-workshop/Megatron-DeepSpeed's enums.py
# PositionEmbeddingType: rotary, absolute, alibi) as Megatron-LM's; ALiBi (alibi) is Megatron-DeepSpeed's alone
POSITION_SPELLINGS = {"absolute": "learned_absolute", "rotary": "rope"}
POSITIONS = ("learned_absolute", "rope", "alibi", "none")


def looks_like(text: str) -> bool:
    return any(marker in text for marker in MARKERS)


def arguments(text: str, where: str) -> dict[str, list[str]]:
    """Every `--flag value...` of the commands that run Megatron (command_arguments)."""
    return command_arguments(training_commands(read_script(text, where).commands))


def training_commands(commands: list[list[str]]) -> list[list[str]]:
    """The commands that run Megatron: those that name its entry script (`pretrain_gpt.py`, any `pretrain_*.py`) or
    give one of MARKERS' or PARALLEL's arguments; a command that only prints them (echo, printf) only where no
    other does. Another command's flags are not Megatron's: a data-preparation script's (`--split`,
    `--vocab-file`), or srun's (`--jobid`) beside the `bash -c` string that holds the launch."""

    def runs_megatron(words: list[str]) -> bool:
        return any(ENTRY.fullmatch(PurePosixPath(word).name) or word.partition("=")[0] in (*MARKERS, *PARALLEL)
                   for word in words)  # fmt: skip

    giving = [words for words in commands if runs_megatron(words)]
    running = [words for words in giving if PurePosixPath(words[0]).name not in ("echo", "printf")]
    return running or giving


def command_arguments(training: list[list[str]]) -> dict[str, list[str]]:
    """Every `--flag value...` of the script's training commands (training_commands), as bash passes them
    (shell.py: its variables, arrays, defaults and branches); a value still holding `$` is kept as written, for the
    reader to refuse where it matters. A flag given twice keeps its last value, as argparse does."""
    args: dict[str, list[str]] = {}
    for words in training:
        i = 0
        while i < len(words):
            word = words[i]
            i += 1
            if not word.startswith("--") or len(word) < 3:
                continue
            name, _, inline = word.partition("=")
            values = [inline] if inline else []
            while i < len(words) and not words[i].startswith("--") and words[i] not in ("&&", "|", ";", "&", "||"):
                values.append(words[i])
                i += 1
            args[name] = values
    return args


def _one(r: Reading, args: dict[str, list[str]], name: str) -> str | None:
    if name not in args:
        return None
    values = args[name]
    if not values:
        raise r.error(name, "needs a value")
    return values[0]


def _set_value(r: Reading, args: dict[str, list[str]], name: str) -> str | None:
    """A flag's value, None where the flag is absent; refused where it still names a shell variable."""
    text = _one(r, args, name)
    if text is not None and "$" in text:
        raise r.error(name, f"{text} is a shell variable the script does not set: set it in the script")
    return text


def _sixteen_bit(args: dict[str, list[str]]) -> bool:
    """--bf16 or --fp16: without either, Megatron trains in fp32."""
    return "--bf16" in args or "--fp16" in args


def _int(r: Reading, args: dict[str, list[str]], name: str, default: int | None = None, least: int = 1) -> int | None:
    text = _set_value(r, args, name)
    if text is None:
        return default
    if not re.fullmatch(r"\d+", text) or int(text) < least:
        allowed = "a positive integer" if least == 1 else f"an integer of {least} or more"
        raise r.error(name, f"must be {allowed}, got {text!r}")
    return int(text)


def _probability(r: Reading, args: dict[str, list[str]], name: str, default: float) -> float:
    """A dropout probability: a float (argparse's type for it), in [0, 1) (torch's Dropout takes 1 too, which
    trains nothing)."""
    text = _set_value(r, args, name)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan  # refused below, as an out-of-range number is
    if not 0 <= value < 1:
        raise r.error(name, f"must be a number from 0 to below 1, got {text!r}")
    return value


def _dropout(r: Reading, args: dict[str, list[str]]) -> float:
    """--hidden-dropout (arguments.py: 0.1), the model's one dropout. --attention-dropout (0.1) drops the scores out
    (dot_product_attention.py); dpcost's model has no second dropout, so a different one is said, not costed."""
    hidden = _probability(r, args, "--hidden-dropout", 0.1)
    attention = _probability(r, args, "--attention-dropout", 0.1)
    if "--attention-dropout" in args:
        same = attention == hidden
        why = "the same as --hidden-dropout's" if same else f"costed as --hidden-dropout's {hidden:g}: one dropout"
        r.ignore("--attention-dropout", f"{attention:g}", why)
    return hidden


def read(text: str, path: str) -> TrainingConfig:
    r = Reading(path, KIND)
    script = read_script(text, path)
    training = training_commands(script.commands)
    args = command_arguments(training)
    read_here = {*PARALLEL, *SWITCHES, *SWITCHES_OFF, *MODEL_ARGS, *_BATCH_ARGS, *_RECOMPUTE_ARGS, *_PRECISION_ARGS,
                 *_SYSTEM_ARGS, *_DEEPSPEED_ARGS}  # fmt: skip
    if not read_here & args.keys():  # the file names Megatron's arguments (looks_like), but no command it runs does
        raise r.error(
            "pretrain_gpt.py",
            "no command the script runs takes Megatron-LM's arguments (one kept in a variable no command expands, "
            "or in a here-document, is not read): write the launch as a command, or give the plan as flags without "
            "--from",
        )
    r.use("(a Megatron-LM script)", "megatron", "framework", "megatron", "Megatron-LM's schedule and memory")
    tp = 1
    for name, option in PARALLEL.items():
        try:
            value = _int(r, args, name)
        except InputError as exc:
            if "$" not in exc.message:
                raise
            r.refuse(option, name, exc.message.split(": ", 1)[1])
            continue
        if value is not None:
            r.use(name, value, option, str(value))
            tp = value if option == "tp" else tp
    for name, option in SWITCHES.items():
        if name in args:
            r.use(name, "", option, "true")
    if "--use-sharp" in args:  # parallel_state.py at d98e8a64dd: NCCL_COLLNET_ENABLE=1 for the DP group (SHARP)
        r.use("--use-sharp", "", "collnet", "on", "CollNet (SHARP) allowed, as NCCL_COLLNET_ENABLE=1")
    for name, option in SWITCHES_OFF.items():
        if name in args:
            r.use(name, "", option, "false")
    _batch(r, args, script.files)
    _recompute(r, args)
    _attention(r, args)
    _softmax(r, args)
    _loss(r, args)
    _host_time(r, args)
    _precision(r, args)
    _cublas_workspace(r, args, text)
    _system(r, args)
    _nccl(r, _nccl_environment(script, training), "--deterministic-mode" in args)
    spec = _model(r, args, tp, Path(path).stem, _entry(training))
    padding = None
    if spec is not None and "--pad-vocab-size-to" not in args:  # a vocabulary padded to that at any TP
        padding = (_vocab_size(r, args), _vocab_divisible_by(r, args))
    dp = _launched_dp(r, args, script, training)
    used = read_here | {*_ATTENTION_ARGS, *_SOFTMAX_ARGS, *_LOSS_ARGS, *_HOST_ARGS, *MUON_UNREAD, *MODEL_UNREAD}
    used.update(("--deterministic-mode", "--spec"))
    if "--spec" in args:  # a layer spec builds the model's layers (arguments.py: <module function>, or local)
        hybrid = _hybrid_pattern_flag(args) is not None and "mamba" in " ".join(args["--spec"])
        why = (
            "the hybrid stack's spec: its layers as the pattern gives them"
            if hybrid
            else ("not read: dpcost builds Megatron's own layers, not the spec's")
        )
        r.ignore("--spec", " ".join(args["--spec"]), why)
    used |= {*_LAUNCH_ARGS} if dp is not None else set()
    for name, values in args.items():
        if name not in used:
            why = FP8_ACTIVATIONS if name in FP8_ACTIVATION_ARGS else UNPRICED.get(name, NOT_PRICED)
            r.ignore(name, " ".join(values), OFFLOADING if name in OFFLOADING_ARGS else why)
    return r.done(model_spec=spec, vocab_padding=padding, dp=dp)


_LAUNCH_ARGS = ("--nproc_per_node", "--nproc-per-node", "--nnodes")
# CUBLAS_WORKSPACE_CONFIG as the script sets it in the environment (NAME=value, or exported), outside comments
_CUBLAS_CONFIG = re.compile(r"(?:^|[\s;])(?:export\s+)?CUBLAS_WORKSPACE_CONFIG=[\"']?((?::\d+:\d+)+)[\"']?")
_COMMENT = re.compile(r"(?m)(?:^|(?<=\s))#.*$")
# the values --deterministic-mode accepts; another stops the run (determinism.py ACCEPTED_ENV_VAR_VALUES)
DETERMINISTIC_CUBLAS_CONFIGS = (":4096:8", ":16:8")


def _cublas_workspace(r: Reading, args: dict[str, list[str]], text: str) -> None:
    """PyTorch's cuBLAS workspaces: CUBLAS_WORKSPACE_CONFIG as the script's environment sets it, else the one
    --deterministic-mode sets where the environment gives none (megatron/training/determinism.py
    DETERMINISM_ENV_VAR_DEFAULTS, applied with setdefault, at d98e8a64dd)."""
    given = _CUBLAS_CONFIG.search(_COMMENT.sub("", text))
    deterministic = "its deterministic kernels are not priced (its NCCL_ALGO: the NCCL_ALGO row)"
    if given and "--deterministic-mode" in args and given.group(1) not in DETERMINISTIC_CUBLAS_CONFIGS:
        allowed = " or ".join(DETERMINISTIC_CUBLAS_CONFIGS)
        raise r.error("CUBLAS_WORKSPACE_CONFIG", f"{given.group(1)}: --deterministic-mode runs only {allowed} "
                      "(megatron/training/determinism.py asserts it)")  # fmt: skip
    if given:
        r.use("CUBLAS_WORKSPACE_CONFIG", given.group(1), "cublas_workspace_config", given.group(1),
              "each of PyTorch's two cuBLAS workspaces the sum of its :SIZE:COUNT pairs")  # fmt: skip
        if "--deterministic-mode" in args:
            r.ignore("--deterministic-mode", "", deterministic)
    elif "--deterministic-mode" in args:
        r.use("--deterministic-mode", "", "cublas_workspace_config", ":4096:8",
              f"CUBLAS_WORKSPACE_CONFIG=:4096:8, PyTorch's cuBLAS workspaces at 32 MiB; {deterministic}")  # fmt: skip


def _launched_dp(r: Reading, args: dict[str, list[str]], script: Script, training: list[list[str]]) -> int | None:
    """The DP size the launch's world gives over TP x PP x CP (Megatron's world size is their product with DP; EP is
    carved out of DP x CP): torchrun's --nproc-per-node x --nnodes GPUs (torchrun's default 1 node), else the tasks
    srun starts itself, one rank each (_srun_tasks). None where the sizes are not plain integers, or the world
    cannot hold the script's layout (Megatron-Core's rule: TP x PP x CP and ETP x EP x PP each divide it)."""
    per_node_flag = next((f for f in ("--nproc_per_node", "--nproc-per-node") if f in args), None)
    per_node = (args[per_node_flag] or [""])[0] if per_node_flag else ""
    nodes = (args.get("--nnodes") or ["1"])[0]
    if per_node_flag is None and (tasks := _srun_tasks(script, training)) is not None:
        gpus, key, value = tasks
        whose = f"srun's {gpus} tasks, one rank each,"
    elif not (per_node.isdigit() and nodes.isdigit()) or int(per_node) < 1 or int(nodes) < 1:
        return None
    else:
        gpus, key, value = int(per_node) * int(nodes), f"{per_node_flag}, --nnodes", f"{per_node} x {nodes}"
        whose = f"torchrun's {gpus} GPUs"
    degree = {option: int(r.options.get(option, "1")) for option in ("tp", "pp", "cp", "ep", "etp")}
    split = degree["tp"] * degree["pp"] * degree["cp"]
    if gpus % split or gpus % (degree["etp"] * degree["ep"] * degree["pp"]):  # a world too small for the layout:
        return None  # a launcher default (NNODES=${SLURM_NNODES:-1}) the job overrides, not the job's size
    r.note(key, value, f"--dp {gpus // split}", f"{whose} over TP x PP x CP = {split}")
    return gpus // split


def _runs_a_program(word: str) -> bool:
    """Whether `word` is where srun's options end and the program it runs begins: Python, a shell, or a script."""
    name = PurePosixPath(word).name
    return name.startswith("python") or name in SHELLS or name.endswith(".py")


# Launchers that start ranks of their own under srun's tasks (torchrun, Python's torch.distributed modules,
# DeepSpeed's): a training command they run is not one rank a task
RANK_LAUNCHERS = ("torchrun", "torch.distributed.run", "torch.distributed.launch", "deepspeed")


def _srun_tasks(script: Script, training: list[list[str]]) -> tuple[int, str, str] | None:
    """The tasks srun starts for the last of the training commands where it runs the command itself (`srun python
    pretrain_gpt.py`, or the `bash -c` string of an srun), no rank launcher between: srun's -n/--ntasks, else its
    -N/--nodes x --ntasks-per-node, each absent one the job's (SLURM_NNODES, SLURM_NTASKS_PER_NODE from the #SBATCH
    directives), as srun(1) takes them from the allocation. With the row's key and value; None where a count is not
    one whole number."""
    runs = [(c, launcher) for c, launcher in zip(script.commands, script.launchers, strict=True)
            if any(c is t for t in training)]  # fmt: skip
    if not runs:
        return None
    command, launcher = runs[-1]
    if any(PurePosixPath(word).name in RANK_LAUNCHERS for word in command):
        return None
    srun = command if PurePosixPath(command[0]).name == "srun" else launcher
    if not srun or PurePosixPath(srun[0]).name != "srun":
        return None
    ran = next((k for k, word in enumerate(srun) if k and _runs_a_program(word)), len(srun))
    srun = srun[:ran]  # srun's own options: not the program's after them
    given: dict[str, str] = {}
    for name, value in slurm_options(srun[1:]):
        given.setdefault(name, value)
    if (total := given.get("--ntasks")) is not None:
        return (int(total), "srun -n", total) if total.isdigit() and int(total) > 0 else None
    nodes = given.get("--nodes", script.slurm.get("SLURM_NNODES", ""))
    per_node = given.get("--ntasks-per-node", script.slurm.get("SLURM_NTASKS_PER_NODE", ""))
    if not (nodes.isdigit() and per_node.isdigit()) or int(nodes) < 1 or int(per_node) < 1:
        return None
    return int(nodes) * int(per_node), "srun nodes x tasks per node", f"{nodes} x {per_node}"


_BATCH_ARGS = ("--micro-batch-size", "--global-batch-size", "--seq-length", "--rampup-batch-size",
               "--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank",
               "--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers", "--mtp-num-layers",
               "--pipeline-model-parallel-layout", *ACCOUNTED_ARGS,
               "--microbatch-group-size-per-virtual-pipeline-stage", "--use-distributed-optimizer",
               "--use-megatron-fsdp", "--data-parallel-sharding-strategy",
               "--overlap-grad-reduce", "--overlap-param-gather",
               "--ddp-bucket-size", "--ddp-num-buckets", "--optimizer", "--cp-comm-type", "--moe-token-dispatcher-type",
               "--num-distributed-optimizer-instances", "--defer-embedding-wgrad-compute",
               "--wgrad-deferral-limit")  # fmt: skip
# Megatron-DeepSpeed (microsoft/Megatron-DeepSpeed): --deepspeed hands the model to DeepSpeed's engine, whose ZeRO
# stage and optimizer its --deepspeed_config JSON sets (the scripts often write it in a heredoc)
_DEEPSPEED_ARGS = ("--deepspeed", "--deepspeed_config", "--deepspeed-config", "--zero-stage")
DEEPSPEED_ENGINE = (
    "Megatron-DeepSpeed: DeepSpeed's engine runs ZeRO{} and the optimizer as --deepspeed_config sets them, which "
    "this reader does not price: give --zero (0: DDP; 1: sharded optimizer states, as Megatron's distributed "
    "optimizer{})"
)
# engine.py _do_optimizer_sanity_check at v0.16.0: bf16 without ZeRO under the pipeline engine (or with fp32
# gradient accumulation) runs BF16_Optimizer, which shards the fp32 weights and optimizer states over DP as ZeRO-1
BF16_OPTIMIZER = "; at stage 0 with --bf16, DeepSpeed's BF16_Optimizer shards them as 1 does"
# What DeepSpeed's engine runs for the JSON's (ZeRO stage, 16-bit type), at v0.16.0: the ZeRO stage dpcost prices,
# the dtype its gradients are reduced in, and why. engine.py get_data_types and _do_optimizer_sanity_check: at stage 0
# bf16 accumulates gradients in fp32 and runs BF16_Optimizer, fp16 FP16_Optimizer, fp32 no wrapper; from stage 1 the
# gradients are accumulated in the model's dtype (ZeRO's optimizer). Each all-reduces its gradients after the
# backward (pipe/engine.py _exec_reduce_grads: _bf16_reduce_grads, or allreduce_gradients; ZeRO-1's buckets with
# allreduce_bucket, stage_1_and_2.py); BF16_Optimizer and ZeRO-1 then all-gather the updated 16-bit weights.
# BF16_Optimizer's fp32 gradients go to the all-reduce cast to engine.py's communication_data_type, bf16 for a bf16
# model at stage 0 (v0.7.0 as BLOOM's 2022 runs had it, and v0.16.0; fp32 only at v0.9.0-v0.9.1):
# prepare.BF16_OPTIMIZER_GRAD_DTYPE.
DEEPSPEED_RUNS = {
    (0, "bf16"): (
        1,
        "bf16",
        "BF16_Optimizer: fp32 weights and optimizer states sharded over DP, as ZeRO-1 shards "
        "them; its fp32 gradients cast to bf16 for the all-reduce (communication_data_type)",
    ),
    (0, "fp16"): (0, "fp16", "FP16_Optimizer: every state on every rank"),
    (0, "fp32"): (0, "fp32", "no optimizer wrapper: every state on every rank"),
    (1, "bf16"): (1, "bf16", "ZeRO-1: optimizer states sharded; bf16 gradients"),
    (1, "fp16"): (1, "fp16", "ZeRO-1: optimizer states sharded; fp16 gradients"),
    (1, "fp32"): (1, "fp32", "ZeRO-1: optimizer states sharded"),
}


def _deepspeed_engine(r: Reading, args: dict[str, list[str]], files: dict[str, str], pp: int) -> None:
    """Megatron-DeepSpeed's --deepspeed: DeepSpeed's engine runs ZeRO and the optimizer as its --deepspeed_config
    JSON sets them. Read where the script writes that JSON itself (a here-document, shell.py): its ZeRO stage and
    16-bit type, as DEEPSPEED_RUNS maps them; stages 2 and 3 are refused (DeepSpeed's pipeline engine, which
    Megatron-DeepSpeed's GPTModelPipe runs, asserts them incompatible: pipe/engine.py). Elsewhere refused for --zero
    to give. --zero-stage is Megatron-DeepSpeed's own copy of the stage: the engine runs the JSON's."""
    if pp > 1:
        # its pipeline engine sends each activation with a lone dist.send (deepspeed/runtime/pipe/p2p.py at v0.16.0),
        # on a 2-rank communicator, not Megatron's batched sends on the PP group's
        r.use("--deepspeed", "", "pp_send_comm", "pair", "DeepSpeed's pipeline engine: one dist.send a transfer")
    flag = next((f for f in ("--deepspeed_config", "--deepspeed-config") if f in args), None)
    path = _one(r, args, flag) if flag else None
    doc = _written_json(files.get(path)) if path is not None else None
    if doc is None:
        stage = _one(r, args, "--zero-stage")
        named = "" if stage is None else f" (--zero-stage {stage})"
        bf16 = BF16_OPTIMIZER if stage == "0" and "--bf16" in args else ""
        r.refuse("zero", "--deepspeed", DEEPSPEED_ENGINE.format(named, bf16))
        for name in _DEEPSPEED_ARGS[1:]:
            if name in args:
                r.ignore(name, " ".join(args[name]), "DeepSpeed's engine: see --deepspeed")
        return
    assert flag is not None
    zero = doc.get("zero_optimization") or {}
    stage = zero.get("stage", 0) if isinstance(zero, dict) else None
    key = f"{flag} zero_optimization.stage"
    if stage not in (0, 1, 2, 3) or isinstance(stage, bool):
        raise r.error(key, f"must be 0, 1, 2 or 3, got {stage!r}")
    # DeepSpeed's sections, "bfloat16" its older name for "bf16" (runtime/config.py get_bfloat16_enabled)
    on = {k for k in ("bf16", "bfloat16", "fp16") if isinstance(doc.get(k), dict) and doc[k].get("enabled") is True}
    if "fp16" in on and len(on) > 1:
        raise r.error(f"{flag} bf16.enabled", "bf16 and fp16 cannot both be enabled (DeepSpeed refuses it)")
    dtype = "fp16" if "fp16" in on else "bf16" if on else "fp32"
    r.note("--deepspeed", "", "", f"Megatron-DeepSpeed: DeepSpeed's engine, as the JSON the script writes to {path} "
           "sets it")  # fmt: skip
    if stage >= 2:
        r.refuse("zero", key, f"{stage}: DeepSpeed's pipeline engine, which Megatron-DeepSpeed's GPT runs, refuses "
                 "ZeRO-2 and ZeRO-3 (pipe/engine.py): give --zero")  # fmt: skip
        return
    priced, grads, why = DEEPSPEED_RUNS[(stage, dtype)]
    r.use(key, stage, "zero", str(priced), f"{dtype}: DeepSpeed's {why}")
    r.use(f"{flag} bf16.enabled" if dtype == "bf16" else f"{flag} fp16.enabled", dtype != "fp32", "grad_dtype",
          grads, f"reduced in {grads} (engine.py communication_data_type)")  # fmt: skip
    if (stage, dtype) == (0, "bf16"):
        r.use(f"{flag} bf16.enabled", True, "grad_accum_dtype", "fp32", "BF16_Optimizer: each backward's bf16 "
              "gradients added into an fp32 buffer, kept beside it (engine.py get_data_types at v0.16.0: stage "
              "0's default)")  # fmt: skip
    if priced == 1:
        r.use(flag, path, "grad_reduce", "all-reduce", "its gradients all-reduced after the backward, each rank "
              "updating its shard (pipe/engine.py _exec_reduce_grads)")  # fmt: skip
    if "--zero-stage" in args:
        copy = "Megatron-DeepSpeed's copy: the engine runs the JSON's"
        r.ignore("--zero-stage", " ".join(args["--zero-stage"]), copy)


def _written_json(text: str | None) -> dict[str, Any] | None:
    """A JSON object the script writes, None where it writes none or what it writes is not one after expansion."""
    if text is None:
        return None
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: arrays nested past Python's limit
        return None
    return doc if isinstance(doc, dict) else None


_RECOMPUTE_ARGS = ("--recompute-granularity", "--recompute-activations", "--recompute-method",
                   "--recompute-num-layers", "--recompute-modules", "--moe-layer-recompute",
                   "--checkpoint-activations", "--checkpoint-num-layers")  # fmt: skip
# Full recomputation before Megatron-LM renamed it (2022): ParallelTransformer._checkpointed_forward checkpoints
# groups of --checkpoint-num-layers layers (1 by default), as Megatron-DeepSpeed still runs it; Megatron-LM since
# exits on the flag ("--checkpoint-activations is no longer valid, use --recompute-activations ...")
CHECKPOINT_ACTIVATIONS = "full recomputation by layer groups (Megatron-LM before 2022, Megatron-DeepSpeed)"
_PRECISION_ARGS = ("--bf16", "--fp16", "--fp8-format", "--fp8-recipe", "--fp8-param-gather", "--fp4-format",
                   "--fp4-param-gather", "--reuse-grad-buf-for-mxfp8-param-ag",
                   "--accumulate-allreduce-grads-in-fp32", "--grad-reduce-in-bf16", "--first-last-layers-bf16",
                   "--num-layers-at-start-in-bf16", "--num-layers-at-end-in-bf16")  # fmt: skip
# TransformerConfig.fp8_recipe's choices, "delayed" by default (megatron/core/transformer/transformer_config.py)
FP8_RECIPES = ("delayed", "tensorwise", "mxfp8", "blockwise", "custom")
_BF16_LAYERS = (("--num-layers-at-start-in-bf16", "bf16_layers_at_start"),
                ("--num-layers-at-end-in-bf16", "bf16_layers_at_end"))  # fmt: skip


def _batch(r: Reading, args: dict[str, list[str]], files: dict[str, str]) -> None:
    for name, option in (("--micro-batch-size", "micro_batch"), ("--global-batch-size", "global_batch"),
                         ("--seq-length", "seq_len")):  # fmt: skip
        value = _int(r, args, name)
        if value is not None:
            r.use(name, value, option, str(value))
    encoder = _int(r, args, "--encoder-seq-length")  # arguments.py: the sequence length where --seq-length is absent
    if encoder is not None and "--seq-length" in args:
        raise r.error("--encoder-seq-length", "not beside --seq-length (arguments.py asserts)")
    if encoder is not None:
        r.use("--encoder-seq-length", encoder, "seq_len", str(encoder), "the sequence length, --seq-length absent")
    if "--rampup-batch-size" in args:
        r.ignore("--rampup-batch-size", " ".join(args["--rampup-batch-size"]), "costed at the full global batch")
    pp = int(r.options.get("pp", "1"))
    hybrid = _hybrid_pattern_flag(args)
    if hybrid is not None:
        _use_hybrid_stages(r, args, hybrid, pp)
    layers = _int(r, args, "--num-layers")
    per_stage = _int(r, args, "--num-layers-per-virtual-pipeline-stage")
    accounted = [name for name in ACCOUNTED_ARGS if name in args]
    if per_stage is not None and layers is not None:
        counted = layers + len(accounted)  # arguments.py counts the embedding and loss before it splits
        if counted % (pp * per_stage):
            raise r.error(
                "--num-layers-per-virtual-pipeline-stage", f"{per_stage} x PP {pp} does not divide {counted} layers"
            )
        r.use("--num-layers-per-virtual-pipeline-stage", per_stage, "virtual_stages", str(counted // (pp * per_stage)))
    stages = _int(r, args, "--num-virtual-stages-per-pipeline-rank")
    if stages is not None:
        r.use("--num-virtual-stages-per-pipeline-rank", stages, "virtual_stages", str(stages))
    for name, option in (("--decoder-first-pipeline-num-layers", "first_stage_layers"),
                         ("--decoder-last-pipeline-num-layers", "last_stage_layers"),
                         ("--mtp-num-layers", "mtp_layers"),
                         ("--microbatch-group-size-per-virtual-pipeline-stage", "microbatch_group")):  # fmt: skip
        value = _int(r, args, name)
        if value is not None and hybrid is not None and option == "mtp_layers":
            r.refuse(option, name, "a hybrid model's MTP layers are not read")
        elif value is not None:
            r.use(name, value, option, str(value))
    layout = _one(r, args, "--pipeline-model-parallel-layout")
    if layout is not None:
        if accounted:
            raise r.error(
                accounted[0], "not beside --pipeline-model-parallel-layout (transformer_config.py refuses it)"
            )
        _use_pipeline_layout(r, layout, per_stage is not None or stages is not None, pp)
    elif accounted and pp > 1 and layers is not None:
        _use_accounted_split(r, accounted, layers, pp)
    if "--deepspeed" in args:
        _deepspeed_engine(r, args, files, pp)
    elif "--use-megatron-fsdp" in args:
        # arguments.py: --data-parallel-sharding-strategy defaults to optim_grads_params (Megatron-LM d98e8a64dd)
        strategy = _one(r, args, "--data-parallel-sharding-strategy") or "optim_grads_params"
        by_name = {name: stage for stage, name in MEGATRON_FSDP.stages.items()}
        r.use("--use-megatron-fsdp", "", "framework", "megatron", "Megatron-FSDP (--zero 2-3 run it)")
        given = "--data-parallel-sharding-strategy" in args
        if "$" in strategy:
            unset = f"{strategy} is a shell variable the script does not set: give --zero 2 or 3"
            r.refuse("zero", "--data-parallel-sharding-strategy", unset)
        elif strategy not in by_name:
            raise r.error("--data-parallel-sharding-strategy", f"{strategy!r} is not one of {', '.join(by_name)}")
        else:
            why = f"Megatron-FSDP's {strategy}" + ("" if given else ", its default")
            r.use("--data-parallel-sharding-strategy", strategy if given else "(absent)", "zero",
                  str(by_name[strategy]), why)  # fmt: skip
        if "--use-distributed-optimizer" in args:
            r.ignore("--use-distributed-optimizer", "", "Megatron-FSDP shards the optimizer states itself")
    elif "--use-distributed-optimizer" in args:
        r.use("--use-distributed-optimizer", "", "zero", "1", "the distributed optimizer shards the optimizer states")
    elif args.get("--optimizer", [])[:1] == ["dist_muon"]:  # arguments.py: muon with the layer-wise optimizer
        r.use("--optimizer", "dist_muon", "zero", "1", "Muon's layer-wise distributed optimizer shards its states")
    else:
        r.use("--use-distributed-optimizer", "(absent)", "zero", "0", "absent: Megatron's DDP")
    overlap = "--overlap-grad-reduce" in args
    r.use("--overlap-grad-reduce", "" if overlap else "(absent)", "overlap_comm", "true" if overlap else "false",
          "" if overlap else "absent: Megatron reduces after the backward")  # fmt: skip
    if "--overlap-param-gather" in args:
        r.ignore("--overlap-param-gather", "", "dpcost's Megatron preset gathers during the next forward already")
    instances = _int(r, args, "--num-distributed-optimizer-instances")
    if instances is not None:
        r.use("--num-distributed-optimizer-instances", instances, "dist_opt_instances", str(instances))
    if "--defer-embedding-wgrad-compute" in args:  # model_parallel_config.py refuses a negative limit
        limit = _int(r, args, "--wgrad-deferral-limit", least=0)  # arguments.py: 0 (every call) when absent
        shown = f"--wgrad-deferral-limit {limit}" if limit is not None else "(no limit: every call)"
        r.use("--defer-embedding-wgrad-compute", shown, "defer_embedding_wgrad", str(limit or 0))
    elif "--wgrad-deferral-limit" in args:
        shown = " ".join(args["--wgrad-deferral-limit"])
        r.ignore("--wgrad-deferral-limit", shown, "without --defer-embedding-wgrad-compute it defers nothing")
    bucket = _int(r, args, "--ddp-bucket-size")
    if bucket is not None:
        grad = _reduced_gradient_bytes(args)
        r.use("--ddp-bucket-size", bucket, "bucket_bytes", f"{bucket * grad}B", f"{bucket:,} elements x {grad} bytes")
    count = _int(r, args, "--ddp-num-buckets", least=1)  # distributed_data_parallel_config.py: "greater than 0"
    if count is not None:
        if bucket is not None:  # distributed_data_parallel_config.py __post_init__ at d98e8a64dd
            raise r.error("--ddp-num-buckets", "Megatron refuses it beside --ddp-bucket-size: give one")
        r.use("--ddp-num-buckets", count, "bucket_count", str(count), "each bucket a first-stage GPU's parameters / N")
    _optimizer(r, args)
    if len(args.get("--cp-comm-type", ())) > 1:  # arguments.py: nargs="+", one type per layer
        raise r.error("--cp-comm-type", "one type per layer is not priced: give one for every layer")
    _choice(r, args, "--cp-comm-type", "cp_impl", ("p2p", "all_gather", "a2a"))
    _choice(r, args, "--moe-token-dispatcher-type", "ep_dispatcher", ("alltoall", "flex", "allgather"))
    if "--num-experts" in args and "--moe-grouped-gemm" not in args:
        why = "absent: SequentialMLP, one GEMM per expert (Megatron's default), without the grouped GEMMs' workspaces"
        r.use("--moe-grouped-gemm", "(absent)", "grouped_gemm", "false", why)
    if "--deepspeed" in args and _deepspeed_experts(args):
        # DeepSpeed's MOELayer sends each expert its tokens with an all-to-all over the expert-parallel group, and
        # the outputs back with another (deepspeed/moe/sharded_moe.py at v0.16.0: _AllToAll.apply)
        r.use("--num-experts", " ".join(args["--num-experts"]), "ep_dispatcher", "alltoall",
              "Megatron-DeepSpeed's experts: DeepSpeed's MOELayer, all-to-all dispatch (sharded_moe.py)")  # fmt: skip
    elif "--num-experts" in args and "--moe-token-dispatcher-type" not in args:
        r.use("--moe-token-dispatcher-type", "(absent)", "ep_dispatcher", "allgather",
              "absent: Megatron's default (transformer_config.py moe_token_dispatcher_type)")  # fmt: skip


# Megatron-LM's Muon flags (arguments.py at d98e8a64dd) that move what dpcost prices, and how it prices them instead
MUON_UNREAD = {
    "--muon-num-ns-steps": "not priced: dpcost prices the default 5 Newton-Schulz steps (engine/muon.py)",
    "--muon-tp-mode": "not priced: dpcost prices the default duplicated mode (every TP rank orthogonalizes the whole "
    "matrix)",
    "--muon-no-split-qkv": "not priced: dpcost orthogonalizes Q, K and V apart, the default",
    "--muon-fp32-matmul-prec": "not priced: dpcost prices the default medium (the iteration in BF16)",
    "--muon-use-syrk": "not priced: dpcost prices the Gram matrix as a plain matmul",
    "--muon-scalar-optimizer": "not priced: dpcost keeps Adam's states for what Muon leaves, the default",
    "--no-use-layer-wise-param-layout": "not priced: dpcost prices the default shard-aligned layout, not the legacy "
    "path that shards whole parameters by size and gathers them through flattened copies",
    "--muon-coefficient-type": "not priced: dpcost prices the default quintic coefficients' 5 steps",
    "--mla-down-proj-fusion": "not priced under Muon: dpcost orthogonalizes MLA's query and key-value "
    "down-projections apart, where the fused weight is orthogonalized whole",
}
# What Megatron-LM refuses with an emerging optimizer (optimizer/__init__.py, layer_wise_optimizer.py at d98e8a64dd)
MUON_REFUSES = {
    "--fp16": "Megatron runs Muon in bf16 or fp32, not fp16",
    "--overlap-param-gather-with-optimizer-step": "Megatron does not overlap Muon's parameter gather with its step",
}


def _optimizer(r: Reading, args: dict[str, list[str]]) -> None:
    """--optimizer: adam, sgd, or Muon (muon; dist_muon, its layer-wise distributed optimizer: _zero), and the
    Muon flags dpcost does not price (MUON_UNREAD)."""
    optimizer = _one(r, args, "--optimizer")
    if optimizer is None:
        return
    names = {"adam": "adamw", "sgd": "sgd", "muon": "muon", "dist_muon": "muon"}
    if optimizer not in names:
        raise r.error("--optimizer", f"must be adam, sgd, muon or dist_muon, got {optimizer!r}")
    r.use("--optimizer", optimizer, "optimizer", names[optimizer])
    if names[optimizer] != "muon":
        return
    for flag, why in MUON_REFUSES.items():
        if flag in args:
            raise r.error(flag, f"with --optimizer {optimizer}: {why}")
    instances = _int(r, args, "--num-distributed-optimizer-instances")
    if instances is not None and instances > 1:
        raise r.error("--num-distributed-optimizer-instances", "Muon's layer-wise optimizer runs one instance")
    for flag, why in MUON_UNREAD.items():
        if flag in args:
            r.ignore(flag, " ".join(args[flag]), why)


def _choice(r: Reading, args: dict[str, list[str]], name: str, option: str, priced: tuple[str, ...]) -> None:
    """A Megatron flag whose values dpcost's `option` takes as they are spelt: those it prices, the rest refused."""
    value = _one(r, args, name)
    if value is None:
        return
    if value in priced:
        r.use(name, value, option, value)
    else:
        r.refuse(option, name, f"{value}: dpcost prices {', '.join(priced[:-1])} and {priced[-1]}")


def _full_recompute_method(r: Reading, args: dict[str, list[str]]) -> None:
    """--recompute-method and --recompute-num-layers under full recomputation (megatron/core/recompute.py):
    block checkpoints the first N layers of each model chunk and keeps everything in the
    others (--recompute-block N); uniform checkpoints groups of N layers, each keeping its input, which dpcost prices
    as every layer's own (N = 1, the recipes' value, exactly)."""
    method = _one(r, args, "--recompute-method")
    layers = _int(r, args, "--recompute-num-layers")
    if method == "block" and layers is not None:
        r.use("--recompute-num-layers", layers, "recompute_block", str(layers),
              "--recompute-method block: the first N layers of each pipeline chunk")  # fmt: skip
    elif method == "uniform" and layers is not None and layers > 1:
        r.note("--recompute-num-layers", layers, "", f"uniform groups of {layers} layers: priced as every layer")


def _recompute(r: Reading, args: dict[str, list[str]]) -> None:
    granularity = _one(r, args, "--recompute-granularity")
    moe_layer = "--moe-layer-recompute" in args  # transformer_config.py at d98e8a64dd: selective, "moe" added
    if moe_layer and granularity == "full":
        raise r.error("--moe-layer-recompute", "not beside --recompute-granularity full (Megatron raises)")
    if moe_layer and granularity is None:
        r.use("--moe-layer-recompute", "", "recompute", "selective", "deprecated: selective recomputation")
    elif granularity is None and "--recompute-activations" in args:
        r.use("--recompute-activations", "", "recompute", "selective", "Megatron's selective recomputation")
    elif granularity is None and "--checkpoint-activations" in args:
        r.use("--checkpoint-activations", "", "recompute", "full", CHECKPOINT_ACTIVATIONS)
        group = _int(r, args, "--checkpoint-num-layers")
        if group is not None:
            r.note("--checkpoint-num-layers", group, "", f"groups of {group} layers: priced as every layer's own")
    elif granularity in ("full", "selective"):
        r.use("--recompute-granularity", granularity, "recompute", granularity)
        if granularity == "full":
            _full_recompute_method(r, args)
    elif granularity is not None:
        raise r.error("--recompute-granularity", f"must be full or selective, got {granularity!r}")
    else:
        r.use("--recompute-granularity", "(absent)", "recompute", "none", "absent: Megatron recomputes nothing")
    listed = r.listed()
    for name in ("--checkpoint-activations", "--checkpoint-num-layers"):
        if name in args and name not in listed:
            r.ignore(name, " ".join(args[name]), "not read: the recomputation is as the flags above set it")
    modules = args.get("--recompute-modules")
    if modules is not None:
        r.use("--recompute-modules", " ".join(modules), "recompute_modules", ",".join(modules))
    if moe_layer and "moe" not in (modules or []):
        added = [*(modules or sorted(DEFAULT_MODULES)), "moe"]
        r.use("--moe-layer-recompute", "", "recompute_modules", ",".join(added), "the MoE layers' too")


# Megatron-DeepSpeed's switches for FlashAttention in its ParallelAttention (megatron/model/transformer.py:
# use_flash_attn = v1 or triton or v2 or builder; --use-flash-attn is v1's other name)
FLASH_ARGS = ("--use-flash-attn", "--use-flash-attn-v1", "--use-flash-attn-v2", "--use-flash-attn-triton",
              "--use-flash-attn-builder")  # fmt: skip
_ATTENTION_ARGS = ("--transformer-impl", "--attention-backend", *FLASH_ARGS)
CORE_ATTENTION = "Megatron-DeepSpeed's ParallelAttention without --use-flash-attn-*: CoreAttention, its scores kept"
_CUDA_GRAPH_ARGS = (
    "--cuda-graph-impl", "--cuda-graph-modules", "--cuda-graph-scope", "--enable-cuda-graph", "--external-cuda-graph",
)  # fmt: skip
_CAPACITY_ARGS = ("--moe-pad-expert-input-to-capacity", "--moe-expert-rank-capacity-factor")
_HOST_ARGS = (*_CUDA_GRAPH_ARGS, *_CAPACITY_ARGS)
FULL_ITERATION = "full-iteration CUDA graphs: the MoE layers do not wait for the host (engine/host.py)"
NO_SYNC = "each expert's token count known on the host: the MoE layers do not wait for it (engine/host.py)"
PARTIAL_GRAPHS = "CUDA graphs of layers or parts of them: the MoE layers' host time is priced as eager launches'"
WITH_GRAPHS = "part of the full-iteration CUDA graphs above"


def _host_time(r: Reading, args: dict[str, list[str]]) -> None:
    """What keeps an MoE layer's dispatcher from waiting for the host (engine/host.py: --moe-host-time 0), at
    d98e8a64dd. Full-iteration CUDA graphs, which replay the whole step without it: --cuda-graph-impl full_iteration,
    or --cuda-graph-modules (--cuda-graph-scope) full_iteration under any other implementation but
    transformer_engine, which arguments.py migrates to it (cuda_graph_config.py
    get_deprecated_cuda_graph_modules_migration). A dispatcher that needs no count from the device: drop and pad
    (--moe-pad-expert-input-to-capacity: each expert takes its capacity, set on the host; token_dispatcher.py
    preprocess and _HybridEPManager.setup_metadata), or the flex dispatcher's HybridEP or NCCL EP backend with
    --moe-expert-rank-capacity-factor, a static budget per rank. Graphs of layers or of parts of them are not
    priced."""
    impl = _one(r, args, "--cuda-graph-impl")
    scoped = next((name for name in ("--cuda-graph-modules", "--cuda-graph-scope") if "full_iteration" in
                   args.get(name, ())), None)  # fmt: skip
    flex = _one(r, args, "--moe-token-dispatcher-type") == "flex"
    budgeted = flex and _one(r, args, "--moe-flex-dispatcher-backend") in ("hybridep", "ncclep")
    graphed = impl == "full_iteration" or (scoped is not None and impl != "transformer_engine")
    if graphed:
        key, value = ("--cuda-graph-impl", impl) if impl == "full_iteration" else (scoped, "full_iteration")
        r.use(key or "", value or "", "moe_host_time", "0", FULL_ITERATION)
    elif "--moe-pad-expert-input-to-capacity" in args:
        r.use("--moe-pad-expert-input-to-capacity", "", "moe_host_time", "0", f"drop and pad: {NO_SYNC}")
    elif budgeted and "--moe-expert-rank-capacity-factor" in args:
        factor = " ".join(args["--moe-expert-rank-capacity-factor"])
        r.use("--moe-expert-rank-capacity-factor", factor, "moe_host_time", "0", f"a static budget: {NO_SYNC}")
    for name in _HOST_ARGS:
        if name in args and name not in r.listed():
            why = NOT_PRICED if name not in _CUDA_GRAPH_ARGS else WITH_GRAPHS if graphed else PARTIAL_GRAPHS
            r.ignore(name, " ".join(args[name]), why)


UNFUSED_BACKENDS = ("unfused", "local")  # AttnBackend's members that run no flash or fused kernel


def _attention(r: Reading, args: dict[str, list[str]]) -> None:
    """Whether attention keeps its s x s scores for the backward. Megatron-Core's own DotProductAttention does: it is
    what --transformer-impl local builds (models/backends.py, LocalSpecProvider.core_attention), and what
    --attention-backend unfused or local leaves Transformer Engine (language_module.py sets NVTE_FLASH_ATTN and
    NVTE_FUSED_ATTN to 0), and what Transformer Engine falls back to in fp32 training, its flash and fused kernels
    taking 16-bit inputs only (attention/dot_product_attention/utils.py get_attention_backend). The defaults,
    transformer_engine and auto, run flash or cuDNN's fused attention. Neither unfused path runs under context
    parallelism (DotProductAttention asserts CP 1; TE drops its unfused backend there): refused, as Megatron does."""
    impl = _one(r, args, "--transformer-impl")
    backend = _one(r, args, "--attention-backend")
    cp = _int(r, args, "--context-parallel-size", 1) or 1
    if impl == "local":
        if cp > 1:
            raise r.error("--transformer-impl", "local: Megatron-Core's own attention runs without context "
                          f"parallelism (dot_product_attention.py asserts it), and CP is {cp}")  # fmt: skip
        r.use("--transformer-impl", impl, "flash_attention", "false", "Megatron-Core's DotProductAttention, unfused")
    elif impl is not None:
        r.ignore("--transformer-impl", impl, NOT_PRICED)
    if backend in UNFUSED_BACKENDS and impl != "local":
        if cp > 1:
            raise r.error("--attention-backend", f"{backend}: Transformer Engine runs no unfused attention under "
                          f"context parallelism, and CP is {cp}")  # fmt: skip
        r.use("--attention-backend", backend, "flash_attention", "false", "no flash or fused kernel: scores kept")
    elif impl != "local" and not _sixteen_bit(args):
        why = "fp32 training: Transformer Engine's flash and fused kernels take 16-bit inputs; it runs unfused"
        r.use("--attention-backend", backend or "(absent)", "flash_attention", "false", why)
    elif backend is not None:
        r.ignore("--attention-backend", backend, NOT_PRICED if impl != "local" else "the local implementation's own")
    if "--deepspeed" in args:  # Megatron-DeepSpeed: its own ParallelAttention, FlashAttention only where switched on
        flash = [flag for flag in FLASH_ARGS if flag in args]
        for flag in flash:
            r.use(flag, "", "flash_attention", "true", "Megatron-DeepSpeed's ParallelAttention with FlashAttention")
        if not flash and _sixteen_bit(args):
            if cp > 1:
                raise r.error("--deepspeed", f"Megatron-DeepSpeed's attention runs without context parallelism, and "
                              f"CP is {cp}")  # fmt: skip
            r.use("--use-flash-attn-v2", "(absent)", "flash_attention", "false", CORE_ATTENTION)


_SOFTMAX_ARGS = ("--attention-softmax-in-fp32", "--apply-query-key-layer-scaling", "--no-masked-softmax-fusion")
FUSED_SOFTMAX_KEYS = (16, 4096)  # fused_softmax.py is_kernel_available: 16 < sk <= 4096


def _softmax(r: Reading, args: dict[str, list[str]]) -> None:
    """Whether Megatron-Core's own attention (--transformer-impl local) keeps its softmax's fp32 output
    (fusions/fused_softmax.py, d98e8a64dd): its FusedScaleMaskSoftmax runs the fused kernel with
    --masked-softmax-fusion (the default) over 16-bit inputs of 17 to 4,096 keys, queries and keys a multiple of 4,
    and micro-batch x heads per TP rank a multiple of 4 (is_kernel_available; the batch-per-block test besides is
    the same over 128 keys, not read below), else forward_torch_softmax, which computes in fp32 under
    --attention-softmax-in-fp32, forced by --apply-query-key-layer-scaling (transformer_config.py __post_init__),
    and keeps that output. Transformer Engine's unfused attention (--attention-backend unfused or local):
    _te_softmax."""
    given = [name for name in _SOFTMAX_ARGS if name in args]
    impl, backend = _one(r, args, "--transformer-impl"), _one(r, args, "--attention-backend")
    te_unfused = impl != "local" and backend in UNFUSED_BACKENDS
    if (impl != "local" and not te_unfused) or not _sixteen_bit(args):
        for name in given:
            r.ignore(name, "", NOT_PRICED)
        return
    seq = _int(r, args, "--seq-length")
    if te_unfused:
        _te_softmax(r, given, backend or "", seq)
        return
    fp32 = next((name for name in _SOFTMAX_ARGS[:2] if name in args), None)
    heads = _int(r, args, "--num-attention-heads")
    per_rank = (heads or 0) // (_int(r, args, "--tensor-model-parallel-size", 1) or 1)
    attn_batches = (_int(r, args, "--micro-batch-size", 1) or 1) * per_rank if heads else None
    low, high = FUSED_SOFTMAX_KEYS
    if "--no-masked-softmax-fusion" in args:
        unfused: str | None = "--no-masked-softmax-fusion"
    elif seq is not None and not low < seq <= high:
        unfused = f"{seq:,} keys: the fused kernel takes {low + 1} to {high:,}"
    elif seq is not None and seq % 4:
        unfused = f"{seq:,} keys: the fused kernel takes a multiple of 4"
    elif attn_batches is not None and attn_batches % 4:
        unfused = f"micro-batch x heads per TP rank = {attn_batches}: the fused kernel takes a multiple of 4"
    else:
        unfused = None
    if fp32 is not None and unfused is not None:
        r.use(fp32, "", "unfused_softmax_fp32", "true", f"the unfused softmax ({unfused}) keeps its fp32 output")
    for name in given:
        if name == fp32 and unfused is not None:
            continue
        if unfused is None:
            why = "the fused kernel runs: its output is 16-bit, as counted"
        elif fp32 is None:
            why = "the unfused softmax runs in 16 bits: its output is 16-bit, as the fused kernel's"
        else:
            why = f"read with {fp32}"
        r.ignore(name, "", why)


TE_FUSED_SOFTMAX_KEYS = (16, 16384)  # TE softmax.py is_kernel_available: 16 < sk < 16384, sk a multiple of 8


def _te_softmax(r: Reading, given: list[str], backend: str, seq: int | None) -> None:
    """Transformer Engine's unfused attention (attention/dot_product_attention/backends.py, TE d0067d0da) builds its
    FusedScaleMaskSoftmax with softmax_in_fp32 True whatever Megatron's flags say (softmax.py), and runs the fused
    kernel over 17 to 16,383 keys, a multiple of 8 (is_kernel_available; its tests of the queries and the batch are
    not read), else forward_torch_softmax, which keeps the fp32 output as Megatron's does."""
    for name in given:
        r.ignore(name, "", "Transformer Engine's unfused softmax computes in fp32 whatever it says")
    low, high = TE_FUSED_SOFTMAX_KEYS
    if seq is not None and not (low < seq < high and seq % 8 == 0):
        why = f"Transformer Engine's unfused softmax over {seq:,} keys (its fused kernel takes {low + 1} to "
        r.use("--attention-backend", backend, "unfused_softmax_fp32", "true",
              why + f"{high - 1:,}, a multiple of 8) keeps its fp32 output")  # fmt: skip


_LOSS_ARGS = ("--cross-entropy-loss-fusion", "--cross-entropy-fusion-impl")


def _loss(r: Reading, args: dict[str, list[str]]) -> None:
    """--cross-entropy-loss-fusion runs fused_vocab_parallel_cross_entropy under --cross-entropy-fusion-impl native
    (model_parallel_config.py's default): cross_entropy.py's steps compiled (megatron/core/fusions/
    fused_cross_entropy.py), one fp32 copy of the logits more at the loss's peaks (loss.py vocab-parallel-fused);
    under te Transformer Engine's kernel, in place in the bf16 logits (vocab-parallel-te), which Megatron-LM runs from
    core_v0.12.0 and refuses from core_v0.19.0 (arguments.py: "disabled due to stability issues";
    docs/sources/cross-entropy.md): a script that asks for it ran a release that took it."""
    impl = _one(r, args, "--cross-entropy-fusion-impl")
    if impl not in (None, "native", "te"):
        raise r.error("--cross-entropy-fusion-impl", f"must be native or te, got {impl!r}")
    if "--cross-entropy-loss-fusion" not in args:
        if impl is not None:
            r.ignore("--cross-entropy-fusion-impl", impl, "without --cross-entropy-loss-fusion the loss runs unfused")
        return
    if impl == "te":
        r.use("--cross-entropy-fusion-impl", impl, "loss_impl", "vocab-parallel-te",
              "Transformer Engine's kernel, in place in the bf16 logits (core_v0.12.0 to core_v0.18)")  # fmt: skip
        return
    r.use("--cross-entropy-loss-fusion", impl or "native", "loss_impl", "vocab-parallel-fused",
          "compiled: one more fp32 copy of the logits at the loss's peaks")  # fmt: skip


def _reduced_gradient_bytes(args: dict[str, list[str]]) -> int:
    """Bytes of each gradient Megatron reduces, as _precision reads the script: 2 with --fp16 (unless
    --accumulate-allreduce-grads-in-fp32) and with --bf16 --grad-reduce-in-bf16, else 4."""
    if "--fp16" in args:
        return 4 if "--accumulate-allreduce-grads-in-fp32" in args else 2
    return 2 if "--bf16" in args and "--grad-reduce-in-bf16" in args else 4


_SYSTEM_ARGS = ("--use-sharp", "--optimizer-cpu-offload", "--optimizer-offload-fraction", "--use-tp-pp-dp-mapping",
                "--use-torch-fsdp2", "--torch-fsdp2-no-reshard-after-forward", "--encoder-seq-length")  # fmt: skip


def _nccl_environment(script: Script, training: list[list[str]]) -> dict[str, str]:
    """The NCCL variables the training commands run with (shell.py: exported or set before them, or given for the
    command alone); the last command's where several run."""
    envs = [env for words, env in zip(script.commands, script.nccl, strict=True) if any(words is t for t in training)]
    return envs[-1] if envs else {}


# --deterministic-mode's NCCL_ALGO where the environment sets none, and the tokens it accepts in one that is set
# (megatron/training/determinism.py DETERMINISM_ENV_VAR_DEFAULTS, ACCEPTED_NCCL_ALGO_TOKENS at d98e8a64dd)
DETERMINISTIC_NCCL_ALGO = "Ring"
DETERMINISTIC_NCCL_ALGO_TOKENS = ("Ring", "CollnetDirect", "CollnetChain", "^NVLS")


def _nccl(r: Reading, env: dict[str, str], deterministic: bool) -> None:
    """NCCL's variables where they set what a plan can say (NCCL's environment variables, src/graph/tuning.cc at
    v2.30.7-1): NCCL_NVLS_ENABLE (--nvls), NCCL_COLLNET_ENABLE (--collnet), NCCL_PROTO naming one protocol
    (--protocol), NCCL_ALGO (--nccl-algo, where it leaves every collective Ring: specs.nccl_algo_setting). What a
    plan cannot say is listed as not read. `deterministic` (--deterministic-mode) sets NCCL_ALGO=Ring where the
    environment sets none, and refuses a set one with a token it does not accept, as determinism.py asserts."""
    from dpcost.specs import nccl_algo_enabled, nccl_algo_setting, nccl_proto

    if deterministic and "NCCL_ALGO" in env:
        tokens = [t.strip() for t in env["NCCL_ALGO"].split(",") if t.strip()]
        if not tokens or not all(t in DETERMINISTIC_NCCL_ALGO_TOKENS for t in tokens):
            accepted = ", ".join(DETERMINISTIC_NCCL_ALGO_TOKENS)
            raise r.error("NCCL_ALGO", f"{env['NCCL_ALGO'][:60]}: --deterministic-mode accepts only {accepted} "
                          "(megatron/training/determinism.py asserts it)")  # fmt: skip
    elif deterministic:
        why = "--deterministic-mode sets it where the environment does not (megatron/training/determinism.py)"
        shown = f"{DETERMINISTIC_NCCL_ALGO} (--deterministic-mode)"
        r.use("NCCL_ALGO", shown, "nccl_algo", DETERMINISTIC_NCCL_ALGO, why)

    for name, option in (("NCCL_NVLS_ENABLE", "nvls"), ("NCCL_COLLNET_ENABLE", "collnet")):
        value = env.get(name)
        if value in ("0", "1"):
            r.use(name, value, option, "on" if value == "1" else "off", f"as NCCL reads {name}={value}")
        elif value is not None:
            r.ignore(name, value, "not read: NCCL takes 0 or 1")
    protocol = env.get("NCCL_PROTO")
    if protocol:
        try:
            allowed = str(nccl_proto(protocol))
        except ValueError:
            allowed = ""
        if allowed and "," not in allowed:
            r.use("NCCL_PROTO", protocol, "protocol", allowed, "the one protocol NCCL_PROTO leaves NCCL")
        else:
            r.ignore("NCCL_PROTO", protocol, "not read: a plan forces one protocol or leaves NCCL all three")
    algorithm = env.get("NCCL_ALGO")
    if algorithm:
        try:
            nccl_algo_enabled(algorithm)
        except ValueError as exc:
            raise r.error("NCCL_ALGO", str(exc).removeprefix(f"NCCL_ALGO={algorithm[:60]}: ")) from None
        try:
            nccl_algo_setting(algorithm)
        except ValueError as exc:
            r.ignore("NCCL_ALGO", algorithm, f"not read: {str(exc).removeprefix(f'NCCL_ALGO={algorithm[:60]} ')}")
        else:
            r.use(
                "NCCL_ALGO", algorithm, "nccl_algo", algorithm, "the algorithms NCCL may choose among, as it reads them"
            )


def _system(r: Reading, args: dict[str, list[str]]) -> None:
    """Where Megatron runs the plan (at d98e8a64dd): the optimizer on the CPU (--optimizer-cpu-offload, its
    --optimizer-offload-fraction of the states, 1.0 by default: arguments.py, optimizer/__init__.py), the ranks
    ordered tp-cp-ep-pp-dp (--use-tp-pp-dp-mapping: common_config.py), and PyTorch FSDP2 in place of Megatron's
    DDP (--use-torch-fsdp2), which dpcost costs as its fsdp framework only when that is asked for."""
    if "--optimizer-cpu-offload" in args:
        if "--use-precision-aware-optimizer" not in args:
            raise r.error("--optimizer-cpu-offload", "needs --use-precision-aware-optimizer (arguments.py asserts)")
        fraction = _one(r, args, "--optimizer-offload-fraction") or "1.0"
        whole = fraction in ("1", "1.0")
        r.use("--optimizer-cpu-offload", f"fraction {fraction}", "offload", "optimizer",
              "" if whole else "costed as the whole optimizer on the CPU")  # fmt: skip
    if "--use-tp-pp-dp-mapping" in args:
        r.use("--use-tp-pp-dp-mapping", "", "order", "tp-cp-ep-pp-dp", "Megatron's other rank order")
    if "--use-torch-fsdp2" in args:
        zero = "2" if "--torch-fsdp2-no-reshard-after-forward" in args else "3"
        r.refuse("framework", "--use-torch-fsdp2", "Megatron on PyTorch FSDP2 is not costed as Megatron runs it: give "
                 f"--framework fsdp --zero {zero} to cost FSDP2's schedule, with eager kernels")  # fmt: skip


def _precision(r: Reading, args: dict[str, list[str]]) -> None:
    if "--bf16" in args and "--fp16" in args:
        raise r.error("--bf16", "--bf16 and --fp16 cannot both be given (Megatron refuses it)")
    if "--deepspeed" in args and "grad_dtype" in r.options:  # DeepSpeed's engine, as its written config sets it
        engine = "DeepSpeed's engine accumulates and reduces the gradients as its config sets (above)"
        for flag in ("--bf16", "--fp16", "--accumulate-allreduce-grads-in-fp32", "--grad-reduce-in-bf16"):
            if flag in args:
                r.note(flag, "", "", f"the model in {flag[2:]}; {engine}" if flag in ("--bf16", "--fp16") else engine)
    elif "--fp16" in args and "--accumulate-allreduce-grads-in-fp32" in args:
        r.use("--accumulate-allreduce-grads-in-fp32", "", "grad_dtype", "fp32", "fp16 training, fp32 gradients")
    elif "--fp16" in args:
        r.use("--fp16", "", "grad_dtype", "fp16", "fp16 gradients, reduced in fp16")
    elif "--bf16" not in args:
        r.use("--bf16", "(absent)", "recipe", "ddp", "fp32 training: 4 + 4 + 8 bytes per parameter")
    elif "--grad-reduce-in-bf16" in args:
        r.use("--grad-reduce-in-bf16", "", "grad_dtype", "bf16", "bf16 gradients, accumulated and reduced in bf16")
    else:
        r.note("--bf16", "", "", "bf16 training, gradients accumulated and reduced in fp32 (Megatron's default)")
    if "--fp8-format" in args:
        r.use("--fp8-format", " ".join(args["--fp8-format"]), "compute_dtype", "fp8")
    if "--fp4-format" in args:  # e2m1, the NVFP4 recipe (Megatron-LM's arguments.py: --fp4-recipe nvfp4 only)
        r.use("--fp4-format", " ".join(args["--fp4-format"]), "compute_dtype", "nvfp4")
    recipe = _one(r, args, "--fp8-recipe")
    if recipe is not None and recipe not in FP8_RECIPES:
        raise r.error("--fp8-recipe", f"must be one of {', '.join(FP8_RECIPES)}, got {recipe!r}")
    if recipe is not None and "--fp8-format" not in args:
        r.ignore("--fp8-recipe", recipe, "applies with --fp8-format only")
    elif recipe is None and "--fp8-format" in args:
        r.use("--fp8-recipe", "(absent)", "fp8_recipe", "delayed", "Megatron's default (transformer_config.py)")
    elif recipe == "custom":
        r.note("--fp8-recipe", recipe, "", "a quantizer factory's: its weights costed as per-tensor scaling holds them")
    elif recipe is not None:
        r.use("--fp8-recipe", recipe, "fp8_recipe", recipe,
              "the bytes Transformer Engine holds an FP8 weight in; every recipe's matmuls costed alike")  # fmt: skip
    _fp8_params(r, args, recipe)
    if "--fp4-param-gather" in args:
        if "--fp4-format" not in args:  # arguments.py: "--fp4-param-gather must be used together with --fp4-format."
            raise r.error("--fp4-param-gather", "needs --fp4-format (Megatron refuses it without)")
        if "--use-megatron-fsdp" in args:
            # mcore_fsdp_adapter.py: "MFSDP v2 does not currently support FP8 or FP4"; v1 sizes quantized weights
            # by their elements, which NVFP4's packed bytes are not (fsdp param_and_grad_buffer.py)
            raise r.error("--fp4-param-gather", "Megatron-FSDP has no NVFP4 parameter path: drop one of the two")
        r.use("--fp4-param-gather", "", "gather_dtype", "nvfp4",
              "NVFP4 weights: the packed half byte gathered, row- and column-wise stored")  # fmt: skip
    if "--first-last-layers-bf16" in args and "--fp8-format" in args and recipe in (None, "delayed"):
        # transformer_config.py __post_init__: "Delayed scaling does not support first / last layer in BF16."
        raise r.error("--first-last-layers-bf16", "Megatron refuses it under delayed scaling, its default --fp8-recipe")
    for name, option in _BF16_LAYERS:  # arguments.py: 1 layer at each end unless given; none without the switch
        value = _int(r, args, name)
        if "--first-last-layers-bf16" not in args:
            if value is not None:
                r.ignore(name, value, "applies with --first-last-layers-bf16 only")
        elif value is not None:
            r.use(name, value, option, str(value), "--first-last-layers-bf16")
        else:
            r.use(name, "(absent)", option, "1", "--first-last-layers-bf16 with Megatron's default, 1")


def _fp8_params(r: Reading, args: dict[str, list[str]], recipe: str | None) -> None:
    """--fp8-param-gather and --reuse-grad-buf-for-mxfp8-param-ag as Megatron takes them: fp8 weights need FP8
    (transformer_config.py: "fp8_param must be used together with fp8 mode"), and MXFP8 weights under the
    distributed optimizer need the gradient buffer's reuse, without which Transformer Engine cannot map them into
    the parameter buffer and the run fails (its replace_raw_data: "not supported yet" for MXFP8Tensor)."""
    reuse, fsdp = "--reuse-grad-buf-for-mxfp8-param-ag", "--use-megatron-fsdp" in args
    if "--fp8-param-gather" not in args:
        if reuse in args:  # distributed_data_parallel_config.py __post_init__ asserts fp8_param_gather
            raise r.error(reuse, "needs --fp8-param-gather (Megatron asserts it)")
        return
    if "--fp8-format" not in args:
        raise r.error("--fp8-param-gather", "needs --fp8-format (Megatron refuses fp8 weights without FP8)")
    if recipe != "mxfp8" or fsdp:
        # Megatron-FSDP gathers MXFP8 row-wise for the forward and from its transpose buffer for the backward
        # (fsdp/src/megatron_fsdp/param_and_grad_buffer.py): a byte a pass, both kept
        r.use("--fp8-param-gather", "", "gather_dtype", "fp8", "" if recipe != "mxfp8" else "MXFP8 weights: a byte "
              "a gather; kept row- and column-wise")  # fmt: skip
        if reuse in args:
            r.ignore(reuse, "", "applies to MXFP8 weights under the distributed optimizer")
        return
    if "--use-distributed-optimizer" in args and reuse not in args:
        raise r.error(
            "--fp8-param-gather",
            f"with --fp8-recipe mxfp8 and the distributed optimizer Megatron needs {reuse}: Transformer Engine cannot "
            "map MXFP8 weights into the parameter buffer otherwise",
        )
    # engine/low_precision_weights.py: the distributed optimizer gathers MXFP8 weights in bf16, through a bf16 view of
    # the gradient buffer (param_and_grad_buffer.py since Megatron-Core 0.13), and quantizes them after
    gathered = "gathered in bf16 through the gradient buffer" if "--use-distributed-optimizer" in args else "no gathers"
    r.use("--fp8-param-gather", "", "gather_dtype", "fp8", f"MXFP8 weights: {gathered}; kept row- and column-wise")
    if reuse in args:
        r.note(reuse, "", "", "the gradient buffer's bf16 view carries the MXFP8 weights' gathers")


def model_arguments(r: Reading, args: dict[str, list[str]], tp: int) -> dict[str, Any] | None:
    """The GPT model Megatron builds from the arguments, as dpcost's architecture fields; None without a model."""
    layers = _int(r, args, "--num-layers")
    if (hybrid := _hybrid_pattern_flag(args)) is not None:  # arguments.py: the pattern's count wins (_hybrid)
        layers = len(_hybrid_main(r, args, hybrid).replace("|", "")) or layers
    hidden = _int(r, args, "--hidden-size")
    heads = _int(r, args, "--num-attention-heads")
    if layers is None and hidden is None and heads is None:
        return None
    for name, value in (("--num-layers", layers), ("--hidden-size", hidden), ("--num-attention-heads", heads)):
        if value is None:
            raise r.error(name, "required to build the model (or give --model)")
    assert layers is not None and hidden is not None and heads is not None
    swiglu = "--swiglu" in args
    ffn = _int(r, args, "--ffn-hidden-size", int(4 * hidden * 2 / 3 / 64) * 64 if swiglu else 4 * hidden)
    bias = "--disable-bias-linear" not in args
    given = _one(r, args, "--position-embedding-type")
    # the legacy flag wins over a type given (arguments.py: use_rotary_position_embeddings sets 'rope')
    position = "rope" if "--use-rotary-position-embeddings" in args else given or "learned_absolute"
    position = POSITION_SPELLINGS.get(position, position)
    if position not in POSITIONS:
        raise r.error("--position-embedding-type", f"must be {', '.join(POSITIONS[:-1])} or none, got {position!r}")
    norm = (_one(r, args, "--normalization") or "LayerNorm").lower()
    if norm not in ("layernorm", "rmsnorm"):
        raise r.error("--normalization", f"must be LayerNorm or RMSNorm, got {norm!r}")
    arch: dict[str, Any] = {
        "hidden": hidden,
        "layers": layers,
        "heads": heads,
        "ffn": ffn,
        # --squared-relu: ReLU squared in the 2-matrix MLP (transformer_config.py activation_func squared_relu)
        "mlp": "swiglu" if swiglu else "relu" if "--squared-relu" in args else "gelu",
        **({"activation": "relu2"} if "--squared-relu" in args and not swiglu else {}),
        "norm": norm,
        "tied_embeddings": "--untie-embeddings-and-output-weights" not in args,
        "linear_bias": bias,
        "qkv_bias": bias or "--add-qkv-bias" in args,
        "vocab": _vocab(r, args, tp),
        "dropout": _dropout(r, args),
        # Megatron-DeepSpeed's --embed-layernorm: a LayerNorm on the word embeddings (BLOOM's)
        "embedding_norm": "--embed-layernorm" in args,
        "alibi": position == "alibi",
    }
    kv_channels = _int(r, args, "--kv-channels")
    if kv_channels is not None and kv_channels != hidden // heads:
        arch["head_dim"] = kv_channels
    if "--group-query-attention" in args:
        arch["kv_heads"] = _int(r, args, "--num-query-groups", 1)
    if position == "learned_absolute":
        positions = (_int(r, args, "--max-position-embeddings") or _int(r, args, "--seq-length")
                     or _int(r, args, "--encoder-seq-length"))  # fmt: skip
        if positions is None:
            raise r.error("--max-position-embeddings", "required by learned absolute positions, the default "
                          "--position-embedding-type (or --seq-length, which Megatron takes for it)")  # fmt: skip
        arch["learned_positions"] = positions
    if "--multi-latent-attention" in args:  # its projections take no bias, its output projection the linear one's
        arch["mla"] = _latent_attention(r, args)
        arch.update(qkv_bias=False, out_bias=bias)
    elif "--qk-layernorm" in args:
        arch["qk_norm"] = "head"
    window = _window(r, args, layers)
    if window is not None:
        arch["local_attention"] = window
    if "--deepspeed" in args:
        moe = _deepspeed_moe(r, args, layers, ffn)
        if moe is not None:
            arch["moe"] = moe
    elif (experts := _int(r, args, "--num-experts")) is not None:
        arch["moe"] = {
            "experts": experts,
            "active": _int(r, args, "--moe-router-topk", 2),
            "ffn": _int(r, args, "--moe-ffn-hidden-size", ffn),
            **_moe_layers(r, args, layers),
        }
        shared = _int(r, args, "--moe-shared-expert-intermediate-size")
        if shared is not None:
            arch["moe"].update(shared=1, shared_ffn=shared)
        # LatentMoE: the routed experts in --moe-latent-size, a hidden -> latent projection before them and latent
        # -> hidden after, duplicated over TP (moe_layer.py fc1_latent_proj, fc2_latent_proj at d98e8a64dd)
        latent = _int(r, args, "--moe-latent-size")
        if latent is not None:
            arch["moe"]["latent"] = latent
    _hybrid(r, args, arch)
    return arch


def _deepspeed_experts(args: dict[str, list[str]]) -> bool:
    """Whether Megatron-DeepSpeed's --num-experts builds experts: a count above one; [1], its default, is a dense
    MLP in every layer."""
    return any(v.isdigit() and int(v) > 1 for v in args.get("--num-experts", ()))


def _deepspeed_moe(r: Reading, args: dict[str, list[str]], layers: int, ffn: int | None) -> dict[str, Any] | None:
    """Megatron-DeepSpeed's MoE (megatron/arguments.py: --num-experts a list, [1] by default, --topk 1,
    --expert-interval 2, --mlp-type standard; model/transformer.py get_num_experts_per_layer): experts in every
    layer whose number from 1 is a multiple of the interval, each expert the dense MLP's width; one expert is the
    dense MLP, so [1] builds no MoE. None without one. PR-MoE (--mlp-type residual) and differing counts per layer
    are not built."""
    values = args.get("--num-experts") or ["1"]
    if not all(v.isdigit() and int(v) > 0 for v in values):
        raise r.error("--num-experts", f"must be whole numbers above 0, got {' '.join(values)!r}")
    if not _deepspeed_experts(args):
        return None
    counts = {int(v) for v in values}
    interval = _int(r, args, "--expert-interval", 2)
    assert interval is not None
    if len(values) not in (1, layers // interval):
        raise r.error("--num-experts", f"one count, or one for each of the {layers // interval} MoE layers "
                      f"(every {interval}th of {layers}), got {len(values)}")  # fmt: skip
    if len(counts) > 1:
        raise r.error("--num-experts", "differing expert counts per layer are not built from these arguments")
    if (mlp := _one(r, args, "--mlp-type") or "standard") != "standard":
        raise r.error("--mlp-type", f"{mlp}: PR-MoE's dense MLP beside the experts is not built from these arguments")
    pattern = [(i + 1) % interval == 0 for i in range(layers)]
    lead = next((i for i, moe in enumerate(pattern) if moe), layers)
    later = tuple(i for i in range(lead, layers) if not pattern[i])
    return {"experts": counts.pop(), "active": _int(r, args, "--topk", 1), "ffn": ffn, "first_dense_layers": lead,
            **({"dense_layers": later} if later else {})}  # fmt: skip


def _hybrid(r: Reading, args: dict[str, list[str]], arch: dict[str, Any]) -> None:
    """A hybrid model's layers from --hybrid-layer-pattern (or its deprecated --hybrid-override-pattern), one symbol
    a layer (hybrid_layer_allocation.py at d98e8a64dd): M a Mamba-2 mixer (mamba_mixer.py: --mamba-num-heads x
    --mamba-head-dim wide, else 2 x hidden; --mamba-state-dim, --mamba-num-groups; a conv of 4 with bias, chunks of
    128, the gated norm), * attention, - the MLP, E the MoE, each with its own norm; the pattern sets the layer count
    (arguments.py ignores --num-layers then), and its | the pipeline stages (pipeline_layout). Not read, so refused
    for --model to give: MTP segments (/), layers of G, D or +, and the deprecated ratios, whose allocation dpcost
    does not rebuild. Mutates `arch`."""
    flag = _hybrid_pattern_flag(args)
    if flag is None:
        beside = [n for n in ("--is-hybrid-model", "--hybrid-attention-ratio", "--hybrid-mlp-ratio") if n in args]
        if beside:
            raise r.error(beside[0], "a hybrid model's layers are read from --hybrid-layer-pattern alone")
        return
    pattern = _set_value(r, args, flag) or ""
    if "/" in pattern or "--mtp-hybrid-override-pattern" in args:
        raise r.error(flag, "MTP layers of a hybrid pattern (after /) are not read")
    layers = pattern.replace("|", "")
    unread = sorted(set(layers) - set(HYBRID_MIXERS))
    if not layers or unread:
        allowed = ", ".join(HYBRID_MIXERS)
        raise r.error(flag, f"one of {allowed} per layer (with | between pipeline stages), got {pattern!r}"[:300])
    if "E" in layers and "moe" not in arch:
        raise r.error(flag, "its E layers are MoE layers: give --num-experts")
    hidden = arch["hidden"]
    shape = {name: _int(r, args, name, default) for name, default in MAMBA_DEFAULTS.items()}
    head_dim, heads = shape["--mamba-head-dim"], _int(r, args, "--mamba-num-heads")
    assert head_dim is not None  # _int gives the default where the flag is absent
    if heads is None:
        if 2 * hidden % head_dim:
            raise r.error("--mamba-head-dim", f"{head_dim} must divide the Mamba width, 2 x hidden ({2 * hidden})")
        heads = 2 * hidden // head_dim
    arch.update(
        layers=len(layers),
        layer_norms=1,
        mixers=tuple(HYBRID_MIXERS[c] for c in layers),
        mlp_free_layers=tuple(i for i, c in enumerate(layers) if c in "M*"),
        ssm={"version": 2, "inner": heads * head_dim, "heads": heads, "state": shape["--mamba-state-dim"],
             "groups": shape["--mamba-num-groups"], "conv_kernel": 4, "chunk": 128, "conv_bias": True, "bias": False},
    )  # fmt: skip
    if "moe" in arch:
        arch["moe"] = {k: v for k, v in arch["moe"].items() if k not in ("first_dense_layers", "dense_layers")}
        arch["moe"]["dense_layers"] = tuple(i for i, c in enumerate(layers) if c != "E")


def _latent_attention(r: Reading, args: dict[str, list[str]]) -> dict[str, Any]:
    """--multi-latent-attention's shape (MLASelfAttention): the query through a latent of --q-lora-rank (none: one
    projection), keys and values through one of --kv-lora-rank, each head's query and key --qk-head-dim wide plus a
    rotary --qk-pos-emb-head-dim, its value --v-head-dim. Megatron builds the latents' norms only with
    --qk-layernorm (mla_qk_norm_config.py; without a query latent then a hidden-wide one in the query projection);
    dpcost counts DeepSeek's two either way, at most hidden + the two ranks of parameters a layer apart."""
    shape = {name: _int(r, args, name, default) for name, default in MLA_DEFAULTS.items()}
    mla = {
        "kv_lora_rank": shape["--kv-lora-rank"],
        "qk_nope_head_dim": shape["--qk-head-dim"],
        "qk_rope_head_dim": shape["--qk-pos-emb-head-dim"],
        "v_head_dim": shape["--v-head-dim"],
    }
    q_rank = _int(r, args, "--q-lora-rank")
    if q_rank is not None:
        mla["q_lora_rank"] = q_rank
    return mla


def _moe_layers(r: Reading, args: dict[str, list[str]], layers: int) -> dict[str, Any]:
    """Which layers --moe-layer-freq gives the MoE MLP (gpt_layer_specs.py get_gpt_decoder_block_spec): a whole N,
    layers i with i % N == 0; a list expression (arguments.py moe_freq_type: "([0]*3+[1]*58)"), 1 for MoE, one
    entry a layer. As the spec's leading dense layers and the dense layers after them."""
    given = _one(r, args, "--moe-layer-freq")
    if given is None:
        return {}
    if given.isdigit() and int(given) > 0:
        pattern = [i % int(given) == 0 for i in range(layers)]
    else:
        flags = _layer_pattern(given)
        if flags is None or len(flags) != layers or any(f not in (0, 1) for f in flags):
            raise r.error(
                "--moe-layer-freq",
                f"a whole number N above 0 or a list of {layers} 0s and 1s such as ([0]*1+[1]*{layers - 1}), "
                f"got {given!r}",
            )
        pattern = [f == 1 for f in flags]
    lead = next((i for i, moe in enumerate(pattern) if moe), layers)
    later = tuple(i for i in range(lead, layers) if not pattern[i])
    return {"first_dense_layers": lead, **({"dense_layers": later} if later else {})}


PATTERN_LIMIT = 100_000  # entries a --moe-layer-freq list may expand to: far beyond any model's layers


def _layer_pattern(text: str) -> list[int] | None:
    """A list expression of whole numbers, lists, + and * (Megatron's _eval_pattern allows no other characters),
    evaluated without eval; None when it is anything else."""
    import ast

    if len(text) > PATTERN_LIMIT or re.search(r"[^,\d\[\]()+*]", text):
        return None
    try:
        tree = ast.parse(text, mode="eval").body
    except (SyntaxError, RecursionError, MemoryError):
        return None

    def value(node: ast.expr) -> list[int] | int | None:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.List):
            items = [value(e) for e in node.elts]
            return [v for v in items if isinstance(v, int)] if all(isinstance(v, int) for v in items) else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult)):
            left, right = value(node.left), value(node.right)
            if isinstance(node.op, ast.Add) and isinstance(left, list) and isinstance(right, list):
                return left + right
            if isinstance(node.op, ast.Mult) and isinstance(left, int) and isinstance(right, list):
                left, right = right, left
            if isinstance(node.op, ast.Mult) and isinstance(left, list) and isinstance(right, int):
                return left * right if len(left) * right <= PATTERN_LIMIT else None
        return None

    try:
        result = value(tree)
    except RecursionError:  # a chain of thousands of + or *: no model's pattern
        return None
    return result if isinstance(result, list) else None


def _window(r: Reading, args: dict[str, list[str]], layers: int | None) -> dict[str, Any] | None:
    """--window-size (left, right) and --window-attn-skip-freq as Megatron-Core applies them (transformer/utils.py
    is_layer_window_attention): a causal window of left + 1 keys in every layer, or, with a frequency N, in each
    layer whose 1-based number is not a multiple of N. None without a window (or with an unbounded one, left -1)."""
    given = _one(r, args, "--window-size")
    if given is None:
        return None
    try:
        left, right = (int(v) for v in given.strip("()").split(","))
    except ValueError:
        raise r.error(
            "--window-size", f"two whole numbers, left,right (Megatron's tuple_type), got {given!r}"
        ) from None
    if left < 0:
        return None
    if right != 0:
        raise r.error("--window-size", f"a causal window, (left, 0), is what dpcost costs; got ({left}, {right})")
    window: dict[str, Any] = {"kind": "sliding", "size": left + 1}
    freq = _one(r, args, "--window-attn-skip-freq")
    if freq is not None:
        if not freq.isdigit() or int(freq) < 1:
            said = (
                f"a whole number N above 0 (a full-attention layer every N); a list pattern is not read, got {freq!r}"
            )
            raise r.error("--window-attn-skip-freq", said)
        assert layers is not None
        window["layers"] = tuple(i for i in range(layers) if (i + 1) % int(freq))
    return window


def _vocab(r: Reading, args: dict[str, list[str]], tp: int) -> int:
    """The padded vocabulary at this TP; Megatron-DeepSpeed's --pad-vocab-size-to, exactly, where it is given
    (tokenizer.py _vocab_size_with_padding, which refuses one --make-vocab-size-divisible-by does not divide)."""
    divisible_by = _vocab_divisible_by(r, args)
    padded = _int(r, args, "--pad-vocab-size-to")
    if padded is not None:
        if padded % divisible_by:
            raise r.error("--pad-vocab-size-to", f"{padded} is not divisible by --make-vocab-size-divisible-by "
                          f"{divisible_by} (Megatron-DeepSpeed refuses it)")  # fmt: skip
        return padded
    return padded_vocab_size(_vocab_size(r, args), tp, divisible_by)


def _vocab_divisible_by(r: Reading, args: dict[str, list[str]]) -> int:
    """--make-vocab-size-divisible-by: the vocabulary is padded to a multiple of it x TP."""
    divisible_by = _int(r, args, "--make-vocab-size-divisible-by", VOCAB_DIVISIBLE_BY)
    assert divisible_by is not None
    return divisible_by


def _vocab_size(r: Reading, args: dict[str, list[str]]) -> int:
    """The tokenizer's vocabulary: --vocab-size, or GPT-2's for GPT2BPETokenizer (or a --merge-file with no type)."""
    size = _int(r, args, "--vocab-size")
    tokenizer = _one(r, args, "--tokenizer-type")
    if size is None and (tokenizer == "GPT2BPETokenizer" or (tokenizer is None and "--merge-file" in args)):
        size = GPT2_VOCAB
    if size is None:
        raise r.error(
            "--tokenizer-type",
            f"{tokenizer or '(none)'}: the vocabulary size is in the tokenizer's files, which dpcost does not read; "
            "add --vocab-size to the script, or give --model",
        )
    return size


# Flags that reshape Megatron's layers beyond what dpcost builds from its arguments (transformer_config.py at
# d98e8a64dd): the model is left to --model where one is given, not read as a plain GPT
MODEL_UNREAD = {
    "--quick-geglu": "a gated QuickGELU MLP (gated_linear_unit), which dpcost does not build from these arguments",
    "--attention-output-gate": "a gate on each attention output, not built from these arguments",
    "--experimental-attention-variant": "gated DeltaNet or sparse (DSA) attention, not built from these arguments",
    "--linear-attention-freq": "linear-attention layers, not built from these arguments",
    "--heterogeneous-layers-config-path": "each layer shaped by that config.json: give it as --model",
    "--heterogeneous-layers-config-encoded-json": "each layer shaped by that config: give it as --model",
    "--softmax-type": "a softmax with attention sinks, not built from these arguments",
}


def _both(field: str, why: str) -> dict[str, str]:
    """A True-by-default switch's two flags (argument_utils.py at d98e8a64dd: --no-X and --disable-X)."""
    return {f"--no-{field}": why, f"--disable-{field}": why}


_PRECISION_AWARE = "not priced: the optimizer's tensors in lower precision; dpcost prices fp32 weights and moments"
_TP_OVERLAP_PART = "not priced: part of --tp-comm-overlap turned off; dpcost prices it all overlapped"
_MFSDP_DTYPE = "not read: give --grad-dtype for Megatron-FSDP's gradients; dpcost prices fp32 main weights"
_GTP = "not priced: a further weight-sharding axis (GTP), its gathers, and a DP group smaller by it"
# Flags that change what a step holds, computes or sends, which the reader does not read (audited against
# Megatron-LM d98e8a64dd's arguments.py and config dataclasses): said so, each with what it changes, not as inert
UNPRICED = {
    # bigscience's Megatron-DeepSpeed: how DeepSpeed's PipelineModule cuts the layers into stages
    "--pp-partition-method": "not read: DeepSpeed's pipeline split by it; dpcost splits the layers as Megatron does",
    "--use-precision-aware-optimizer": _PRECISION_AWARE,
    "--exp-avg-dtype": _PRECISION_AWARE,
    "--exp-avg-sq-dtype": _PRECISION_AWARE,
    "--main-params-dtype": _PRECISION_AWARE,
    "--main-grads-dtype": "not read: give --grad-dtype for the main gradients' dtype",
    "--overlap-cpu-optimizer-d2h-h2d": "not priced: the offloaded optimizer's copies and CPU step are not timed",
    "--tensor-parallel-num-weight-shards": _GTP,
    "--expert-tensor-parallel-num-weight-shards": _GTP,
    "--freeze-all-layers": "not priced: a forward-only run, where dpcost prices training",
    **_both("fp8-wgrad", "not priced: the weight-gradient GEMMs in BF16; dpcost prices them in FP8"),
    "--moe-expert-capacity-factor": "not priced: tokens dropped or padded to each expert's capacity",
    "--megatron-fsdp-main-grads-dtype": _MFSDP_DTYPE,
    "--megatron-fsdp-main-params-dtype": _MFSDP_DTYPE,
    "--megatron-fsdp-grad-comm-dtype": _MFSDP_DTYPE,
    "--suggested-communication-unit-size": "not modelled: Megatron-FSDP's units as dpcost sizes them (docs/layouts.md)",
    "--fsdp-double-buffer": "not modelled: Megatron-FSDP's double buffers (docs/layouts.md)",
    "--mtp-use-repeated-layer": "not priced: one MTP layer reused at every depth, where dpcost builds one per depth",
    "--no-bias-swiglu-fusion": "not priced: the unfused GLU saves more activations than the fused kernel dpcost prices",
    "--distribute-saved-activations": "not priced: full recomputation's checkpoints split over TP",
    "--moe-router-num-groups": "not priced: group-limited routing (give --ep-node-limit for node-limited dispatch)",
    "--moe-router-group-topk": "not priced: group-limited routing (give --ep-node-limit for node-limited dispatch)",
    "--fp32-residual-connection": "not priced: an fp32 residual stream, its saved norm inputs and pipeline sends",
    "--output-logit-dtype": "not priced: the logits in that dtype",
    "--moe-shared-expert-overlap": "not priced: the shared experts' compute beside the token dispatch",
    **_both("tp-comm-overlap-ag", _TP_OVERLAP_PART),
    **_both("tp-comm-overlap-rs", _TP_OVERLAP_PART),
    **_both("tp-comm-bulk-dgrad", _TP_OVERLAP_PART),
    **_both("tp-comm-bulk-wgrad", _TP_OVERLAP_PART),
    "--moe-dispatch-fwd-dtype": "not priced: the dispatch's all-to-all in that dtype; dpcost sends bf16",
    "--moe-combine-bwd-dtype": "not priced: the combine's backward all-to-all in that dtype; dpcost sends bf16",
    **_both("use-mamba-mem-eff-path", "not priced: Mamba's unfused path; dpcost prices the fused one"),
    "--disable-mamba-mem-eff-path": "not priced: Mamba's unfused path; dpcost prices the fused one",
    "--te-precision-config-file": "not priced: per-module precision overrides",
    "--kitchen-config-file": "not priced: per-module precision overrides",
    "--kitchen-recipe-number": "not priced: per-module precision overrides",
    "--batch-invariant-mode": "not priced: batch-invariant kernels, slower than the ones dpcost prices",
    "--moe-shared-expert-gate": "not counted: a gate of hidden weights on each shared expert",
    "--moe-router-dtype": "not priced: the router's GEMM in that dtype",
    "--activation-offload-fraction": OFFLOADING,
    "--min-offloaded-tensor-size": OFFLOADING,
    "--moe-paged-stash": OFFLOADING,
    "--cpu-offloading-retain-pinned-cpu-buffers": OFFLOADING,
}


def _entry(commands: list[list[str]]) -> str | None:
    """The Megatron entry script the training commands run (the last named), None where none is named."""
    named = [
        PurePosixPath(word).name for words in commands for word in words if ENTRY.fullmatch(PurePosixPath(word).name)
    ]
    return named[-1] if named else None


def _model(r: Reading, args: dict[str, list[str]], tp: int, stem: str, entry: str | None) -> Any:
    from dpcost.catalog import _validate
    from dpcost.specs import ModelSpec

    if entry is not None and entry not in GPT_ENTRIES:
        r.refuse("model", entry, "builds another model than Megatron's GPT, which dpcost builds from these arguments")
        return None

    for flag, why in MODEL_UNREAD.items():
        if flag in args and not (flag == "--softmax-type" and args[flag] == ["vanilla"]):
            r.refuse("model", flag, why)
            return None
    try:
        arch = model_arguments(r, args, tp)
    except InputError as exc:
        r.refuse("model", exc.message.split(":")[0], exc.message.split(": ", 1)[-1])
        return None
    if arch is None:
        return None
    name = re.sub(r"[^a-z0-9._-]+", "-", stem.lower()).strip("-._")[:50]
    name = name if name.startswith("megatron") else f"megatron-{name}".strip("-")
    doc = {
        "name": name,
        "title": f"{stem} (Megatron-LM GPT)",
        "source": r.path[:500],
        "architecture": arch,
    }
    spec = _validate(ModelSpec, doc, r.path)
    vocab = arch["vocab"]
    kind = "GPT model"
    if (hybrid := _hybrid_pattern_flag(args)) is not None:  # _hybrid built it: each layer's symbol, counted
        layers = _hybrid_main(r, args, hybrid).replace("|", "")
        kind = "hybrid model (" + ", ".join(f"{layers.count(c)} {c}" for c in HYBRID_MIXERS if c in layers) + ")"
    r.note("(the model arguments)", f"{arch['layers']} layers, hidden {arch['hidden']}", f"--model {name}",
           f"Megatron's {kind}; vocabulary padded to {vocab:,}")  # fmt: skip
    return spec
