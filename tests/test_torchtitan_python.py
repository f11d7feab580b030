"""--from FILE.py:FUNCTION: a torchtitan Python config (torchtitan since #2386, 2026-02-23) read from its source,
never run, into the plan its keys give by torchtitan/config/configs.py's meanings and defaults."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from conftest import cli_report as report
from conftest import run_cli as run

from dpcost.training_configs import read_training_config

CONFIGS = Path(__file__).resolve().parents[1] / "examples" / "training-configs"
LLAMA3 = CONFIGS / "torchtitan" / "models" / "llama3" / "config_registry.py"  # torchtitan @ 73aed7f6c, verbatim


def rows(doc: dict) -> dict[str, tuple[str, str]]:  # type: ignore[type-arg]
    """The file's rows: key -> (the flag it became, the note)."""
    return {row["key"]: (row["became"], row["note"]) for row in doc["from_config"]["settings"]}


def module(tmp_path: Path, text: str, name: str = "runs.py") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


HEAD = "from torchtitan.trainer import Trainer\nfrom torchtitan.models.llama3 import model_registry\n\n"


def test_llama3_70b_reads_as_configs_py_means_its_keys() -> None:
    """llama3_70b (torchtitan @ 73aed7f6c): TP 8, 8 x 8,192 tokens a micro-batch per DP rank
    (num_tokens_per_microbatch_per_dp_rank over max_context_length), FullAC, default_adamw."""
    doc = report("estimate", "--from", f"{LLAMA3}:llama3_70b", "--dp", "8")
    got = rows(doc)
    assert got["model_spec"][0] == "--model llama-70b"
    assert got["parallelism.tensor_parallel_degree"][0] in ("--tp 8", "--sequence-parallel")
    assert got["training.num_tokens_per_microbatch_per_dp_rank"][0] == "--micro-batch 8"
    assert got["training.max_context_length"][0] == "--seq-len 8192"
    assert got["activation_checkpoint"][0] == "--recompute full"
    assert doc["setup"]["micro_batch"] == 8 and doc["setup"]["seq_len"] == 8192
    assert doc["setup"]["recompute"] == "full" and doc["layout"]["tp"] == 8


def test_a_function_derived_from_another_reads_its_assignments(tmp_path: Path) -> None:
    """`config = base(); config.parallelism.x = ...`: the base's value with the assignments over it, a section
    the base left to its default created as the default would be."""
    path = module(tmp_path, HEAD + (
        "def base() -> Trainer.Config:\n"
        "    return Trainer.Config(model_spec=model_registry('8B'), optimizer=default_adamw(),\n"
        "        training=TrainingConfig(local_batch_size=4, seq_len=4096))\n\n"
        "def derived() -> Trainer.Config:\n"
        "    config = base()\n"
        "    config.training.local_batch_size = 2 * 3\n"
        "    config.compile.enable = True\n"
        "    return config\n"
    ))  # fmt: skip
    got = rows(report("estimate", "--from", f"{path}:derived", "--dp", "8"))
    assert got["training.local_batch_size"][0] == "--micro-batch 6"
    assert got["training.seq_len"][0] == "--seq-len 4096"
    assert got["compile.enable"][0] == "--compile"


def test_a_recipe_follows_its_import_into_the_checkout(tmp_path: Path) -> None:
    """torchtitan_recipes' configs derive from a registry function imported from the torchtitan package beside
    them (torchtitan/config/README.md): the reader finds it by the module path, in a directory above the file."""
    registry = tmp_path / "torchtitan" / "models" / "llama3"
    registry.mkdir(parents=True)
    shutil.copy(LLAMA3, registry / "config_registry.py")
    recipes = tmp_path / "torchtitan_recipes"
    recipes.mkdir()
    path = module(recipes, (
        "from torchtitan.models.llama3.config_registry import llama3_8b\n"
        "from torchtitan.trainer import Trainer\n\n"
        "def llama3_8b_tp2() -> Trainer.Config:\n"
        "    config = llama3_8b()\n"
        "    config.parallelism.tensor_parallel_degree = 2\n"
        "    return config\n"
    ))  # fmt: skip
    doc = report("estimate", "--from", path, "--dp", "4")  # the module's only function
    got = rows(doc)
    assert got["model_spec"][0] == "--model llama-8b"
    assert got["training.max_context_length"][0] == "--seq-len 8192"  # llama3_8b's
    assert doc["layout"]["tp"] == 2


def test_the_keys_before_the_token_budget_read_as_the_tomls(tmp_path: Path) -> None:
    """From #2386 to 73aed7f6c: TrainingConfig(local_batch_size, seq_len), ActivationCheckpointConfig(mode,
    selective_ac_option), ModelConvertersContainer.Config(converters=[Float8LinearConverter.Config(...)]),
    OptimizersContainer.Config(name): the TOML's keys."""
    path = module(tmp_path, HEAD + (
        "def run() -> Trainer.Config:\n"
        "    return Trainer.Config(model_spec=model_registry('8B'), optimizer=default_adamw(),\n"
        "        model_converters=ModelConvertersContainer.Config(converters=[\n"
        "            Float8LinearConverter.Config(enable_fsdp_float8_all_gather=True)]),\n"
        "        optimizer=OptimizersContainer.Config(name='AdamW', lr=3e-4),\n"
        "        training=TrainingConfig(local_batch_size=2, seq_len=4096, steps=10),\n"
        "        activation_checkpoint=ActivationCheckpointConfig(mode='selective', selective_ac_option='op'))\n"
    ))  # fmt: skip
    doc = report("estimate", "--from", path, "--dp", "8")
    got = rows(doc)
    assert got["training.local_batch_size"][0] == "--micro-batch 2"
    assert got["activation_checkpoint.selective_ac_option"][0] == "--recompute op"
    assert got["model_converters.converters"][0] == "--compute-dtype fp8"
    assert got["model_converters.converters.enable_fsdp_float8_all_gather"][0] == "--gather-dtype fp8"
    assert got["optimizer.name"][0] == "--optimizer adamw"
    assert got["training.steps"][1] == "does not change what dpcost prices"


def test_the_token_budget_under_pp(tmp_path: Path) -> None:
    """From 73aed7f6c: num_pp_microbatches micro-batches per DP rank under PP (no accumulation beyond them with
    num_tokens_per_train_step -1). With num_tokens_per_train_step the trainer runs one pipeline schedule per
    accumulation step, each with its own bubble (trainer.py), where dpcost prices one a step: refused unless
    --global-batch gives one schedule's."""
    body = (
        "def run() -> Trainer.Config:\n"
        "    return Trainer.Config(model_spec=model_registry('8B'), optimizer=default_adamw(),\n"
        "        training=TrainingConfig(num_tokens_per_microbatch_per_dp_rank=2 * 4096, max_context_length=4096{}),\n"
        "        parallelism=ParallelismConfig(pipeline_parallel_degree=2, num_pp_microbatches=8))\n"
    )
    doc = report("estimate", "--from", module(tmp_path, HEAD + body.format("")), "--dp", "4")
    assert (doc["setup"]["micro_batch"], doc["setup"]["accumulation"]) == (2, 8)
    assert rows(doc)["parallelism.num_pp_microbatches"][0] == "--accum 8"
    stepped = module(tmp_path, HEAD + body.format(", num_tokens_per_train_step=512 * 4096"), "stepped.py")
    code, _, err = run("estimate", "--from", stepped, "--dp", "4")
    assert code == 2 and "pipeline schedule per accumulation step" in err and "--global-batch" in err
    doc = report("estimate", "--from", stepped, "--dp", "4", "--global-batch", "64")
    assert (doc["setup"]["global_batch"], doc["setup"]["accumulation"]) == (64, 8)


def test_tokens_that_are_not_whole_sequences_need_the_micro_batch(tmp_path: Path) -> None:
    """A packed budget that is not whole sequences of max_context_length: the micro-batch is not read, unless
    --micro-batch gives it."""
    path = module(tmp_path, HEAD + (
        "def run() -> Trainer.Config:\n"
        "    return Trainer.Config(model_spec=model_registry('8B'), optimizer=default_adamw(),\n"
        "        training=TrainingConfig(num_tokens_per_microbatch_per_dp_rank=5000, max_context_length=4096))\n"
    ))  # fmt: skip
    code, _, err = run("estimate", "--from", path, "--dp", "8")
    assert code == 2 and "num_tokens_per_microbatch_per_dp_rank" in err and "--micro-batch" in err
    assert report("estimate", "--from", path, "--dp", "8", "--micro-batch", "1")["setup"]["micro_batch"] == 1


def test_bad_configs_are_one_line_with_exit_2(tmp_path: Path) -> None:
    """Which function, what it returns, what cannot be evaluated, what cannot be parsed: one line naming the file
    (and the key), exit 2; nothing is run."""
    cases = {
        "two functions, none named": (HEAD + "def a():\n    return 1\n\ndef b():\n    return 2\n", "", "a, b"),
        "a function that is not there": (HEAD + "def a():\n    return 1\n", ":nope", "no function 'nope'"),
        "not a Trainer.Config": (HEAD + "def a():\n    return 1\n", ":a", "does not return a Trainer.Config"),
        "a priced key from a parameter": (HEAD + (
            "def a(n: int) -> Trainer.Config:\n"
            "    return Trainer.Config(optimizer=default_adamw(), training=TrainingConfig(local_batch_size=n))\n"
            "def b() -> Trainer.Config:\n    return a()\n"), ":a", "training.local_batch_size"),
        "not Python": (HEAD + "def a(:\n", ":a", "not valid Python"),
        "calls itself": (HEAD + "def a() -> Trainer.Config:\n    return a()\n", ":a", "deep"),
        "nested too deeply": (HEAD + "def a():\n    return " + "(" * 200_000 + ")" * 200_000 + "\n", ":a", ""),
        "no torchtitan in it": ("def a():\n    return 1\n", ":a", "no torchtitan config"),
    }  # fmt: skip
    for what, (text, function, said) in cases.items():
        path = module(tmp_path, text, "bad.py")
        code, out, err = run("estimate", "--from", path + function, "--dp", "8")
        assert code == 2, what
        assert err.startswith("dpcost: error: ") and err.count("\n") == 1 and said in err, (what, err)
        assert "Traceback" not in err + out, what


def test_a_hostile_expression_in_a_key_not_priced_is_listed_not_computed(tmp_path: Path) -> None:
    """10**10**10 would not finish: powers are not evaluated, and a key dpcost does not price shows its source."""
    path = module(tmp_path, HEAD + (
        "def run() -> Trainer.Config:\n"
        "    return Trainer.Config(model_spec=model_registry('8B'), optimizer=default_adamw(),\n"
        "        training=TrainingConfig(steps=10 ** 10 ** 10, max_norm=10 ** 30 * 10 ** 30))\n"
    ))  # fmt: skip
    start = time.perf_counter()
    got = rows(report("estimate", "--from", path, "--dp", "8"))
    assert time.perf_counter() - start < 5
    assert got["training.steps"][1] == "does not change what dpcost prices"


def test_a_function_named_on_another_kind_of_file_is_refused(tmp_path: Path) -> None:
    toml = tmp_path / "a.toml"
    toml.write_text('[model]\nname = "llama3"\nflavor = "8B"\n')
    code, _, err = run("estimate", "--from", f"{toml}:a", "--dp", "8")
    assert code == 2 and "no such file" in err  # a.toml:a names no file; only FILE.py:NAME splits


def test_the_reader_runs_nothing(tmp_path: Path) -> None:
    """A config module that would write a file if imported or run: reading it leaves no file."""
    marker = tmp_path / "ran"
    path = module(tmp_path, HEAD + (
        f"open({str(marker)!r}, 'w').write('x')\n"
        "def run() -> Trainer.Config:\n"
        f"    open({str(marker)!r}, 'w').write('x')\n"
        "    return Trainer.Config(model_spec=model_registry('8B'), optimizer=default_adamw())\n"
    ))  # fmt: skip
    config = read_training_config(path)
    assert config.model == "llama-8b" and not marker.exists()


def test_a_plan_file_names_a_python_config_beside_it(tmp_path: Path) -> None:
    """A scenario's `from: FILE.py:FUNCTION` is found beside the plan file, as its other files are."""
    module(tmp_path, HEAD + (
        "def run() -> Trainer.Config:\n"
        "    return Trainer.Config(model_spec=model_registry('8B'), optimizer=default_adamw(),\n"
        "        training=TrainingConfig(local_batch_size=2, seq_len=4096))\n"
    ))  # fmt: skip
    plan = tmp_path / "plan.yaml"
    plan.write_text("defaults: {topology: dgx-h100}\nscenarios:\n  - {name: a, from: runs.py:run, dp: 8}\n")
    here = os.getcwd()
    os.chdir(tmp_path.parent)  # not the plan's folder
    try:
        doc = report("check", str(plan))
    finally:
        os.chdir(here)
    assert "micro-batch 2 x accum 1" in doc["scenarios"][0]["summary"]["plan"]


def test_the_recomputation_as_each_form_means_it(tmp_path: Path) -> None:
    """activation_checkpoint absent: per-op SAC, torchtitan's default since 114151ad4; None: no checkpointing;
    ActivationCheckpointConfig(mode='selective') without selective_ac_option: per-op (its only selective mode from
    114151ad4); with option '2': every 2nd block in full, and '0' every block (activation_checkpoint.py at
    9810191bb: `not ac_freq`)."""
    forms = {
        "absent": ("", ("op", 1)),
        "none": ("activation_checkpoint=None, ", ("none", 1)),
        "selective": ("activation_checkpoint=ActivationCheckpointConfig(mode='selective'), ", ("op", 1)),
        "every 2nd": ("activation_checkpoint=ActivationCheckpointConfig(selective_ac_option='2'), ", ("full", 2)),
        "every": ("activation_checkpoint=ActivationCheckpointConfig(selective_ac_option='0'), ", ("full", 1)),
        "full": ("activation_checkpoint=FullAC.Config(), ", ("full", 1)),
    }
    for what, (given, expected) in forms.items():
        path = module(tmp_path, HEAD + (
            "def run() -> Trainer.Config:\n"
            f"    return Trainer.Config({given}model_spec=model_registry('8B'), optimizer=default_adamw())\n"
        ), "run.py")  # fmt: skip
        setup = report("estimate", "--from", path, "--dp", "8")["setup"]
        assert (setup["recompute"], setup.get("recompute_layers")) == expected, what


def test_an_absent_optimizer_is_refused_where_torchtitans_default_has_none(tmp_path: Path) -> None:
    """From 632f67f12 OptimizersContainer.Config() holds no parameter groups, which torchtitan refuses: --optimizer
    must say; a config of the forms before it (an optimizer name) is AdamW."""
    path = module(
        tmp_path, HEAD + "def run() -> Trainer.Config:\n    return Trainer.Config(model_spec=model_registry('8B'))\n"
    )
    code, _, err = run("estimate", "--from", path, "--dp", "8")
    assert code == 2 and "optimizer: absent" in err and "--optimizer" in err
    assert report("estimate", "--from", path, "--dp", "8", "--optimizer", "adamw")["setup"]["optimizer"] == "adamw"


def test_a_flavor_the_catalog_lacks_asks_for_the_model_by_name(tmp_path: Path) -> None:
    """The error names the file's model (qwen3 0.6B) and what --model takes; --model then costs it."""
    path = module(tmp_path, HEAD.replace("llama3", "qwen3") + (
        "def run() -> Trainer.Config:\n"
        "    return Trainer.Config(model_spec=model_registry('0.6B'), optimizer=default_adamw())\n"
    ))  # fmt: skip
    code, _, err = run("estimate", "--from", path, "--dp", "8")
    assert code == 2 and "its model_spec qwen3 0.6B is not in dpcost's catalog" in err and "config.json" in err
    assert report("estimate", "--from", path, "--dp", "8", "--model", "qwen3-8b")["model"]["name"] == "qwen3-8b"


def test_a_helper_handed_the_config_changes_it(tmp_path: Path) -> None:
    """A function of the file called for its effect, with the config and keywords (torchtitan_recipes/tests'
    _use_spmd_types sets activation_checkpoint None when type checking), is followed: its `if` on a parameter
    read, its assignments applied. A call not followed that is handed the config is listed as not read."""
    path = module(tmp_path, HEAD + (
        "def _typed(config: Trainer.Config, *, typechecking: bool) -> None:\n"
        "    config.parallelism.spmd_backend = 'spmd_types'\n"
        "    if typechecking:\n"
        "        config.activation_checkpoint = None\n\n"
        "def base() -> Trainer.Config:\n"
        "    return Trainer.Config(model_spec=model_registry('8B'), optimizer=default_adamw())\n\n"
        "def run() -> Trainer.Config:\n"
        "    config = base()\n"
        "    _typed(config, typechecking=True)\n"
        "    unknown_helper(config)\n"
        "    return config\n"
    ))  # fmt: skip
    doc = report("estimate", "--from", f"{path}:run", "--dp", "8")
    assert doc["setup"]["recompute"] == "none"
    not_read = [note for key, (_, note) in rows(doc).items() if key == "(not read)"]
    assert not_read, rows(doc)


def test_the_converters_as_each_form_gives_them(tmp_path: Path) -> None:
    """model_registry's quantization= (6348d93d1) and converters= (74181b1e8); emulate=True keeps BF16 matmuls;
    `from torchtitan.models import llama3` then llama3.model_registry names the model too; LoRA is refused."""
    cases = {
        "quantization=[Float8LinearConverter.Config()]": "fp8",
        "converters=[MXFP8LinearConverter.Config()]": "fp8",
        "converters=[NVFP4LinearConverter.Config()]": "nvfp4",
        "converters=[Float8LinearConverter.Config(emulate=True)]": "bf16",
    }
    for given, dtype in cases.items():
        path = module(tmp_path, (
            "from torchtitan.models import llama3\n"
            "def run() -> Trainer.Config:\n"
            f"    return Trainer.Config(model_spec=llama3.model_registry('8B', {given}), optimizer=default_adamw())\n"
        ), "conv.py")  # fmt: skip
        doc = report("estimate", "--from", path, "--dp", "8", "--topology", "dgx-b200")  # FP4 tensor cores
        assert (doc["model"]["name"], doc["setup"]["compute_dtype"]) == ("llama-8b", dtype), given
    lora = module(tmp_path, HEAD + (
        "def run() -> Trainer.Config:\n"
        "    return Trainer.Config(model_spec=model_registry('8B', converters=[LoRAConverter.Config()]))\n"
    ), "lora.py")  # fmt: skip
    code, _, err = run("estimate", "--from", lora, "--dp", "8")
    assert code == 2 and "LoRA" in err


def test_fields_assigned_onto_default_adamw_are_read(tmp_path: Path) -> None:
    """`config.optimizer.implementation = ...` over default_adamw(...) (tests/features.py): foreach is read; bf16
    optimizer states (fused_opt_states_bf16) are not priced, so refused unless --optimizer-impl is given."""
    for implementation, code in (("foreach", 0), ("fused_opt_states_bf16", 2)):
        path = module(tmp_path, HEAD + (
            "def run() -> Trainer.Config:\n"
            "    config = Trainer.Config(model_spec=model_registry('8B'), optimizer=default_adamw(lr=1e-4))\n"
            f"    config.optimizer.implementation = {implementation!r}\n"
            "    return config\n"
        ), "opt.py")  # fmt: skip
        got, out, err = run("estimate", "--from", path, "--dp", "8", "--format", "json")
        assert got == code, err
        if code == 0:
            assert '"became": "--optimizer-impl foreach"' in out


def test_async_tp_needs_compile(tmp_path: Path) -> None:
    """CompileConfig refuses enable_async_tensor_parallel without enable (configs.py at 737594746)."""
    path = module(tmp_path, HEAD + (
        "def run() -> Trainer.Config:\n"
        "    return Trainer.Config(model_spec=model_registry('8B'), optimizer=default_adamw(),\n"
        "        parallelism=ParallelismConfig(tensor_parallel_degree=2),\n"
        "        compile=CompileConfig(enable_async_tensor_parallel=True))\n"
    ))  # fmt: skip
    code, _, err = run("estimate", "--from", path, "--dp", "4")
    assert code == 2 and "compile.enable" in err


@pytest.mark.parametrize(("enable", "split"), [("", True), ("enable_sequence_parallel=False", False)])
def test_a_tp_typed_over_a_file_without_tp_splits_the_sequence_as_its_tp_would(
    tmp_path: Path, enable: str, split: bool
) -> None:
    """torchtitan's TP is sequence-parallel unless ParallelismConfig(enable_sequence_parallel=False) (aa68af18e):
    --tp 4 typed over a Qwen3 30B-A3B config without TP runs sequence-parallel as the file's own TP would (Megatron
    refuses MoE layers with TP but without it), and not where the file turns it off."""
    path = module(tmp_path, HEAD.replace("llama3", "qwen3") + (
        "def run() -> Trainer.Config:\n"
        "    return Trainer.Config(model_spec=model_registry('30B-A3B'), optimizer=default_adamw(),\n"
        f"        parallelism=ParallelismConfig({enable}))\n"
    ))  # fmt: skip
    code, out, err = run("estimate", "--from", path, "--dp", "8", "--tp", "4", "--format", "json")
    if split:
        assert code == 0, err
        assert json.loads(out)["layout"]["sequence_parallel"] is True
    else:
        assert code == 2 and "--sequence-parallel" in err


def test_fsdp_keeps_parameters_to_the_backward_under_pp_by_default(tmp_path: Path) -> None:
    """fsdp_reshard_after_forward "default" under PP does not reshard (distributed/fsdp.py: "For PP, by default do
    not reshard after forward"): ZeRO-2, in a TOML as in a Python config."""
    toml = tmp_path / "pp.toml"
    toml.write_text('[model]\nname = "llama3"\nflavor = "8B"\n[parallelism]\npipeline_parallel_degree = 2\n')
    rows_of = rows(report("estimate", "--from", str(toml), "--dp", "8"))
    assert rows_of["[parallelism] fsdp_reshard_after_forward"][0] == "--zero 2"


def test_hostile_sources_end_in_one_line_quickly(tmp_path: Path) -> None:
    """Values and calls that grow without end (a list nested 20,000 deep, one doubled 64 times, a call tree of
    2^26 calls, module constants doubling) stop at the reading's WORK budget or depth: exit 2, within seconds."""
    sources = {
        "nested": "x = []\n" + "x = [x]\n" * 20_000,
        "doubled": "x = [1]\n" + "x = [x, x]\n" * 64,
        "constants": "".join(f"C{i} = [C{i + 1}, C{i + 1}]\n" for i in range(30)) + "C30 = 1\n",
    }
    for what, body in sources.items():
        text = HEAD + "def run() -> Trainer.Config:\n    " + body.replace("\n", "\n    ").rstrip() + "\n"
        if what == "constants":
            text = (
                HEAD
                + body
                + "def run() -> Trainer.Config:\n    return Trainer.Config(training=TrainingConfig(steps=C0))\n"
            )
        else:
            text += "    return Trainer.Config(training=TrainingConfig(local_batch_size=x))\n"
        path = module(tmp_path, text, f"{what}.py")
        start = time.perf_counter()
        code, out, err = run("estimate", "--from", f"{path}:run", "--dp", "8")
        assert time.perf_counter() - start < 10, what
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err + out, (what, err)
    calls = HEAD + "".join(f"def f{i}():\n    f{i + 1}()\n    return f{i + 1}()\n" for i in range(26))
    path = module(tmp_path, calls + "def f26() -> Trainer.Config:\n    return Trainer.Config()\n", "calls.py")
    start = time.perf_counter()
    code, _, err = run("estimate", "--from", f"{path}:f0", "--dp", "8")
    assert time.perf_counter() - start < 10 and code == 2, err
