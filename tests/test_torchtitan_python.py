"""--from FILE.py:FUNCTION: a torchtitan Python config (torchtitan since #2386, 2026-02-23) read from its source,
never run, into the plan its keys give by torchtitan/config/configs.py's meanings and defaults."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

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
        "    return Trainer.Config(model_spec=model_registry('8B'),\n"
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
        "    return Trainer.Config(model_spec=model_registry('8B'),\n"
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
    num_tokens_per_train_step -1); num_tokens_per_train_step fixes the global batch instead."""
    body = (
        "def run() -> Trainer.Config:\n"
        "    return Trainer.Config(model_spec=model_registry('8B'),\n"
        "        training=TrainingConfig(num_tokens_per_microbatch_per_dp_rank=2 * 4096, max_context_length=4096{}),\n"
        "        parallelism=ParallelismConfig(pipeline_parallel_degree=2, num_pp_microbatches=8))\n"
    )
    doc = report("estimate", "--from", module(tmp_path, HEAD + body.format("")), "--dp", "4")
    assert (doc["setup"]["micro_batch"], doc["setup"]["accumulation"]) == (2, 8)
    assert rows(doc)["parallelism.num_pp_microbatches"][0] == "--accum 8"
    stepped = module(tmp_path, HEAD + body.format(", num_tokens_per_train_step=512 * 4096"), "stepped.py")
    doc = report("estimate", "--from", stepped, "--dp", "4")
    assert doc["setup"]["global_batch"] == 512 and doc["setup"]["accumulation"] == 512 // (2 * 4)


def test_tokens_that_are_not_whole_sequences_need_the_micro_batch(tmp_path: Path) -> None:
    """A packed budget that is not whole sequences of max_context_length: the micro-batch is not read, unless
    --micro-batch gives it."""
    path = module(tmp_path, HEAD + (
        "def run() -> Trainer.Config:\n"
        "    return Trainer.Config(model_spec=model_registry('8B'),\n"
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
            "def a(n: int = 2) -> Trainer.Config:\n"
            "    return Trainer.Config(training=TrainingConfig(local_batch_size=n))\n"
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
        "    return Trainer.Config(model_spec=model_registry('8B'),\n"
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
        "    return Trainer.Config(model_spec=model_registry('8B'))\n"
    ))  # fmt: skip
    config = read_training_config(path)
    assert config.model == "llama-8b" and not marker.exists()


def test_a_plan_file_names_a_python_config_beside_it(tmp_path: Path) -> None:
    """A scenario's `from: FILE.py:FUNCTION` is found beside the plan file, as its other files are."""
    module(tmp_path, HEAD + (
        "def run() -> Trainer.Config:\n"
        "    return Trainer.Config(model_spec=model_registry('8B'),\n"
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


def test_an_absent_policy_is_the_default_of_the_configs_era(tmp_path: Path) -> None:
    """Without activation_checkpoint: ActivationCheckpointConfig's selective 2 (every 2nd block in full) where the
    config is from before c5d93d109 (an optimizer named in OptimizersContainer.Config), SelectiveAC's per-op SAC
    from then (default_adamw, from 632f67f12) and where nothing tells."""
    older = "optimizer=OptimizersContainer.Config(name='AdamW')"
    newer = "optimizer=default_adamw(lr=3e-4)"
    chosen = {}
    for era, optimizer in (("older", older), ("newer", newer), ("untold", "")):
        path = module(tmp_path, HEAD + (
            "def run() -> Trainer.Config:\n"
            f"    return Trainer.Config(model_spec=model_registry('8B'), {optimizer})\n"
        ), f"{era}.py")  # fmt: skip
        setup = report("estimate", "--from", path, "--dp", "8")["setup"]
        chosen[era] = (setup["recompute"], setup.get("recompute_layers"))
    assert chosen["older"] == ("full", 2)
    assert chosen["newer"][0] == chosen["untold"][0] == "op"


def test_a_flavor_the_catalog_lacks_asks_for_the_model_by_name(tmp_path: Path) -> None:
    """The error names the file's model (qwen3 0.6B) and what --model takes; --model then costs it."""
    path = module(tmp_path, HEAD.replace("llama3", "qwen3") + (
        "def run() -> Trainer.Config:\n"
        "    return Trainer.Config(model_spec=model_registry('0.6B'))\n"
    ))  # fmt: skip
    code, _, err = run("estimate", "--from", path, "--dp", "8")
    assert code == 2 and "its model_spec qwen3 0.6B is not in dpcost's catalog" in err and "config.json" in err
    assert report("estimate", "--from", path, "--dp", "8", "--model", "qwen3-8b")["model"]["name"] == "qwen3-8b"
