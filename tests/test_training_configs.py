"""--from FILE (issue 21): each real training config in examples/training-configs/ gives the plan its flags give,
written out here by hand from the file and the framework's documented defaults; Megatron's model arguments build
the model Megatron prints the parameters of."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import cli_report as report
from conftest import run_cli as run

from dpcost.catalog import load_model
from dpcost.engine.layout import Layout
from dpcost.engine.layout_estimate import stage_loads
from dpcost.errors import InputError
from dpcost.specs import ModelSpec
from dpcost.training_configs import TrainingConfig

CONFIGS = Path(__file__).resolve().parents[1] / "examples" / "training-configs"
HF_CONFIGS = Path(__file__).resolve().parent / "reference" / "hf-configs"
# torchtitan's own qwen3_32b.toml of PR #1690 (@d66b72a6a), whose logs measured its TP runs (holdout-peaks.csv)
QWEN3_32B_TOML = HF_CONFIGS.parent / "memory-peaks" / "configs" / "torchtitan-qwen3-32b.toml"


def without(doc: dict, *keys: str) -> dict:  # type: ignore[type-arg]
    return {k: v for k, v in doc.items() if k not in keys}


# GPT "345M" as examples/pretrain_gpt.sh builds it (Megatron's defaults: 4h GELU MLP, LayerNorm, biases, learned
# positions, tied embeddings, hidden dropout 0.1, GPT-2's 50,257 tokens padded to a multiple of 128 x TP)
GPT_345M = {
    "hidden": 1024,
    "layers": 24,
    "heads": 16,
    "ffn": 4096,
    "mlp": "gelu",
    "norm": "layernorm",
    "linear_bias": True,
    "qkv_bias": True,
    "tied_embeddings": True,
    "learned_positions": 1024,
    "vocab": 50304,
    "dropout": 0.1,
}


def spec_file(tmp_path: Path, name: str, architecture: dict) -> str:  # type: ignore[type-arg]
    path = tmp_path / f"{name}.yaml"
    title = f"{name} (Megatron-LM GPT)"  # the title the reader gives the model it builds
    path.write_text(yaml.safe_dump({"name": name, "title": title, "architecture": architecture}))
    return str(path)


# (file, the flags --from is given, the same plan written out by hand)
BY_HAND = [
    (
        "torchtitan-llama3-8b.toml",
        ["--dp", "64", "-t", "dgx-a100"],
        ["--model", "llama-8b", "--dp", "64", "-t", "dgx-a100", "--framework", "fsdp", "--zero", "3",
         "--micro-batch", "1", "--seq-len", "8192", "--grad-dtype", "fp32", "--recompute", "op"],
    ),
    (
        "torchtitan/models/llama3/config_registry.py:llama3_8b",  # the same job as torchtitan's Python config
        ["--dp", "64", "-t", "dgx-a100"],  # (1 x 8,192 tokens a micro-batch; SelectiveAC; default_adamw), but
        # its loss a chunk at a time (ChunkedLossWrapper)
        ["--model", "llama-8b", "--dp", "64", "-t", "dgx-a100", "--framework", "fsdp", "--zero", "3",
         "--micro-batch", "1", "--seq-len", "8192", "--grad-dtype", "fp32", "--recompute", "op", "--optimizer",
         "adamw", "--loss-impl", "chunked-head"],
    ),
    (
        "deepspeed-zero3.json",  # 64 sequences in 1 accumulation step on DP 8: micro-batch 8; 1e7 fp16 elements;
        ["--model", "llama-8b", "--dp", "8"],  # no optimizer block: the script's own, torch.optim's foreach AdamW
        ["--model", "llama-8b", "--dp", "8", "--framework", "deepspeed", "--zero", "3", "--micro-batch", "8",
         "--global-batch", "64", "--bucket-size", "20MB", "--grad-dtype", "fp16", "--optimizer-impl", "foreach"],
    ),
    (
        "deepspeed-zero2-hf.json",  # the "auto" values are the HF Trainer's to fill: reduce_bucket_size hidden^2
        ["--model", "llama-8b", "--dp", "8"],  # elements (transformers' trainer_config_finalize), 4096^2 x 2 bytes
        ["--model", "llama-8b", "--dp", "8", "--framework", "deepspeed", "--zero", "2", "--offload", "optimizer",
         "--overlap-comm", "true", "--bucket-size", f"{4096**2 * 2}B"],
    ),
    (
        "accelerate-fsdp.yaml",  # FULL_SHARD, bf16 reduced in bf16 (Accelerate's MixedPrecision), 8 processes
        ["--model", "llama-8b"],
        ["--model", "llama-8b", "--dp", "8", "--framework", "fsdp", "--zero", "3", "--grad-dtype", "bf16"],
    ),
    (
        "accelerate-zero3.yaml",  # the plugin's DeepSpeed config has no optimizer block: the script's own, foreach
        ["--model", "llama-8b"],
        ["--model", "llama-8b", "--dp", "8", "--framework", "deepspeed", "--zero", "3", "--optimizer-impl", "foreach"],
    ),
    (
        "megatron-llama3-8b-fp8.sh",  # DDP_ARGS appended, FP8 items spliced unquoted, DP torchrun's 8 x 1 (TP 1);
        ["--model", "llama-8b"],  # no --fp8-recipe: Megatron's default, delayed scaling
        ["--model", "llama-8b", "--dp", "8", "--framework", "megatron", "--zero", "1", "--overlap-comm", "true",
         "--micro-batch", "1", "--global-batch", "128", "--seq-len", "8192", "--recompute", "none", "--grad-dtype",
         "bf16", "--compute-dtype", "fp8", "--gather-dtype", "fp8", "--fp8-recipe", "delayed", "--tp", "1", "--cp",
         "1", "--sequence-parallel", "--loss-impl", "vocab-parallel-fused"],
    ),
    (
        "accelerate-tp-hsdp.yaml",  # parallelism_config: 2 replicas x 2 shards x TP 2 = 8 processes, FSDP2 resharding
        ["--model", "llama-8b"],  # (a layout is costed as Megatron runs it: ZeRO-3 as Megatron-FSDP), bf16 reduction
        ["--model", "llama-8b", "--dp", "4", "--tp", "2", "--cp", "1", "--sequence-parallel", "--framework",
         "megatron", "--zero", "3", "--recompute", "none", "--grad-dtype", "bf16"],
    ),
]  # fmt: skip


@pytest.mark.parametrize(("name", "given", "by_hand"), BY_HAND, ids=[case[0] for case in BY_HAND])
def test_each_example_config_gives_the_plan_its_flags_give(name: str, given: list[str], by_hand: list[str]) -> None:
    read = report("estimate", "--from", str(CONFIGS / name), *given)
    typed = report("estimate", *by_hand)
    assert read["from_config"]["file"].endswith(name)
    assert without(read, "from_config") == typed


def test_megatron_scripts_give_the_model_and_plan_written_out_by_hand(tmp_path: Path) -> None:
    gpt_345m = spec_file(tmp_path, "megatron-gpt-345m", GPT_345M)
    read = report("estimate", "--from", str(CONFIGS / "megatron-gpt-345m.sh"), "--dp", "1")
    typed = report("estimate", "--model", gpt_345m, "--dp", "1", "--framework", "megatron", "--micro-batch", "4",
                   "--global-batch", "8", "--seq-len", "1024", "--zero", "0", "--recompute", "none",
                   "--overlap-comm", "false", "--grad-dtype", "fp16")  # fmt: skip
    assert without(read, "from_config") == typed
    # GPT-3 175B: the catalog's, with GPT-2's vocabulary padded to 128 x TP 8; a layout reads --fp16 (gradients
    # accumulated and reduced in fp16, Megatron's default without --accumulate-allreduce-grads-in-fp32) and the
    # absent --overlap-grad-reduce (the DP reduction after the backward, as Megatron's train_step runs it then)
    gpt3 = load_model("gpt3-175b").architecture
    assert gpt3 is not None
    gpt3_file = spec_file(tmp_path, "megatron-gpt3-175b", gpt3.model_dump(exclude_defaults=True) | {"vocab": 51200})
    read = report("estimate", "--from", str(CONFIGS / "megatron-gpt3-175b.sh"), "--dp", "8")
    typed = report("estimate", "--model", gpt3_file, "--dp", "8", "--framework", "megatron", "--tp", "8", "--pp",
                   "16", "--micro-batch", "1", "--global-batch", "1536", "--seq-len", "2048", "--zero", "0",
                   "--recompute", "none", "--grad-dtype", "fp16", "--overlap-comm", "false")  # fmt: skip
    assert without(read, "from_config") == typed
    notes = {row["key"]: row["note"] for row in read["from_config"]["settings"]}
    assert read["setup"]["grad_dtype"] == "fp16" and "not read by a TP/CP/PP/EP layout" not in notes["--fp16"]
    assert not any("not read by a TP/CP/PP/EP layout" in note for note in notes.values())


def test_a_megatron_script_that_turns_pp_overlap_off_is_costed_with_it_off(tmp_path: Path) -> None:
    """--no-overlap-p2p-communication (megatron/training/arguments.py) with an interleaved pipeline: the plan reads
    the pipeline's send/recv as waited for, which Megatron's default (overlapped) would hide."""
    script = (
        (CONFIGS / "megatron-gpt3-175b.sh")
        .read_text()
        .replace("    --eval-iters 10", "    --eval-iters 10\n    --num-layers-per-virtual-pipeline-stage 2")
    )
    interleaved = tmp_path / "interleaved.sh"
    interleaved.write_text(script)
    waits = tmp_path / "waits.sh"
    waits.write_text(script.replace("    --eval-iters 10", "    --eval-iters 10\n    --no-overlap-p2p-communication"))
    overlapped = report("estimate", "--from", str(interleaved), "--dp", "8")
    waited = report("estimate", "--from", str(waits), "--dp", "8")
    assert overlapped["layout"]["virtual_stages"] == waited["layout"]["virtual_stages"] == 3
    assert overlapped["layout"]["pp_comm_overlap"] and not waited["layout"]["pp_comm_overlap"]
    exposed = {r["term"]: r["seconds"] for r in waited["layout"]["exposed"]}
    assert exposed["pp"] > 0 and "pp" not in {r["term"] for r in overlapped["layout"]["exposed"] if r["seconds"]}


def test_a_megatron_script_that_delays_weight_gradients_waits_for_tp_backward(tmp_path: Path) -> None:
    """--delay-wgrad-compute: Transformer Engine's linear stores its weight-gradient GEMM and waits for the input
    gradient's reduce-scatter at once (module/linear.py at 2.20.0.dev0), so TP's backward calls are not hidden
    behind the weight gradients: the plan reads --no-tp-backward-async, and more of TP is exposed."""
    script = (CONFIGS / "megatron-gpt3-175b.sh").read_text()
    delayed = tmp_path / "delayed.sh"
    delayed.write_text(script.replace("    --eval-iters 10", "    --eval-iters 10\n    --delay-wgrad-compute"))
    plain = report("estimate", "--from", str(CONFIGS / "megatron-gpt3-175b.sh"), "--dp", "8")
    waited = report("estimate", "--from", str(delayed), "--dp", "8")
    became = {s["key"]: s["became"] for s in waited["from_config"]["settings"]}
    assert became["--delay-wgrad-compute"] == "--no-tp-backward-async"
    assert plain["layout"]["tp"] == 8
    tp = [{r["term"]: r["seconds"] for r in run["layout"]["exposed"]}["tp"] for run in (plain, waited)]
    assert tp[1] > tp[0] > 0


def test_a_megatron_scripts_gradient_dtype_is_megatrons(tmp_path: Path) -> None:
    """megatron/training/arguments.py: --bf16 accumulates and reduces gradients in fp32 unless --grad-reduce-in-bf16;
    --fp16 in fp16 unless --accumulate-allreduce-grads-in-fp32."""
    script = (CONFIGS / "megatron-gpt3-175b.sh").read_text()
    variants = {
        "bf16": ("    --bf16\n", "fp32"),
        "bf16-reduce": ("    --bf16\n    --grad-reduce-in-bf16\n", "bf16"),
        "fp16": ("    --fp16\n", "fp16"),
        "fp16-fp32": ("    --fp16\n    --accumulate-allreduce-grads-in-fp32\n", "fp32"),
    }
    for name, (lines, dtype) in variants.items():
        path = tmp_path / f"{name}.sh"
        bucketed = lines + "    --ddp-bucket-size 10000000\n    --overlap-grad-reduce\n"
        path.write_text(script.replace("    --fp16\n", bucketed))
        read = report("estimate", "--from", str(path), "--dp", "8")
        assert read["setup"]["grad_dtype"] == dtype, name
        # --ddp-bucket-size counts parameters (distributed_data_parallel_config.py bucket_size): 10M of that dtype;
        # Megatron reads it only with --overlap-grad-reduce (without, one bucket: test_layout_fsdp.py)
        assert read["setup"]["bucket_bytes"] == 10_000_000 * {"fp32": 4, "bf16": 2, "fp16": 2}[dtype], name


def test_a_megatron_scripts_fsdp_strategy_is_its_zero_stage(tmp_path: Path) -> None:
    """--use-megatron-fsdp with --data-parallel-sharding-strategy (megatron/training/arguments.py: optim_grads_params
    when absent; its choices no_shard, optim, optim_grads, optim_grads_params shard nothing, the optimizer states,
    also the gradients, also the parameters): Megatron-FSDP at ZeRO 2-3."""
    script = (CONFIGS / "megatron-gpt3-175b.sh").read_text()
    cases = {"": 3, " --data-parallel-sharding-strategy optim_grads": 2, " --data-parallel-sharding-strategy optim": 1}
    for extra, zero in cases.items():
        path = tmp_path / f"fsdp{zero}.sh"
        path.write_text(script.replace("    --fp16\n", f"    --fp16\n    --use-megatron-fsdp{extra}\n"))
        read = report("estimate", "--from", str(path), "--dp", "8")
        assert read["setup"]["zero_stage"] == zero, extra
        assert read["setup"]["framework"] == ("megatron-fsdp" if zero >= 2 else "megatron"), extra
    path = tmp_path / "bad.sh"
    path.write_text(
        script.replace("    --fp16\n", "    --fp16\n    --use-megatron-fsdp --data-parallel-sharding-strategy x\n")
    )
    code, _, err = run("estimate", "--from", str(path), "--dp", "8")
    assert code == 2 and err.count("\n") == 1 and "--data-parallel-sharding-strategy: 'x' is not one of" in err


# Megatron-LM's own "number of parameters on (tensor, pipeline) model parallel rank (T, P)" lines for the 345M
# script's model (tests/reference/megatron-param-counts.md, quoted from public logs), per pipeline stage
MEGATRON_PRINTED = [
    ([], [354_871_296]),
    (["--tp", "2", "--pp", "2"], [102_483_968, 101_437_440]),
    (["--tp", "4"], [89_714_688]),
    (["--pp", "4"], [128_137_216, 75_577_344, 75_577_344, 127_090_688]),
]


@pytest.mark.parametrize(("layout", "printed"), MEGATRON_PRINTED, ids=["tp1", "tp2-pp2", "tp4", "pp4"])
def test_the_model_of_megatrons_script_has_the_parameters_megatron_prints(
    layout: list[str], printed: list[int]
) -> None:
    doc = report("estimate", "--from", str(CONFIGS / "megatron-gpt-345m.sh"), "--dp", "1", *layout)
    if not layout:
        assert doc["model"]["params_total"] == printed[0]
        return
    assert [stage["params"] for stage in doc["layout"]["stages"]] == printed


def test_a_llama_style_model_on_megatron_deepspeed_holds_the_parameters_it_prints() -> None:
    """microsoft/Megatron-DeepSpeed, TP 2 PP 2: 24 layers, hidden 2048, FFN 5504, 16 heads, SwiGLU, RMSNorm, RoPE,
    no biases, untied, vocabulary 32,000 (megatron-param-counts.md, section 4)."""
    spec = ModelSpec.model_validate({
        "name": "llama-like", "title": "llama-like",
        "architecture": {"hidden": 2048, "layers": 24, "heads": 16, "ffn": 5504, "mlp": "swiglu", "vocab": 32000,
                         "norm": "rmsnorm"},
    })  # fmt: skip
    stages = stage_loads(spec, Layout(tp=2, pp=2, dp=2), seq_len=2048)
    assert [int(s.dense_params) for s in stages] == [336_379_904, 336_381_952]


def test_a_flag_overrides_the_file_and_the_report_says_so() -> None:
    doc = report("estimate", "--from", str(CONFIGS / "torchtitan-llama3-8b.toml"), "--dp", "64", "--recompute",
                 "full", "--micro-batch", "2")  # fmt: skip
    assert doc["setup"]["recompute"] == "full"
    assert doc["setup"]["micro_batch"] == 2
    rows = {row["key"]: row for row in doc["from_config"]["settings"]}
    assert rows["[activation_checkpoint] selective_ac_option"]["note"] == "overridden by --recompute full"
    assert rows["[training] local_batch_size"]["note"] == "overridden by --micro-batch 2"
    assert rows["[training] local_batch_size"]["became"] == ""
    assert rows["[training] steps"]["note"] == "does not change what dpcost prices"


def test_the_table_lists_every_key_with_its_flag() -> None:
    code, out, err = run("estimate", "--from", str(CONFIGS / "accelerate-fsdp.yaml"), "--model", "llama-8b")
    assert code == 0, err
    assert "Read from" in out and "fsdp_config.fsdp_sharding_strategy" in out and "--zero 3" in out


def test_torchtitan_hsdp_shards_within_the_shard_degree(tmp_path: Path) -> None:
    toml = tmp_path / "hsdp.toml"
    toml.write_text('[model]\nname = "llama3"\nflavor = "70B"\n[parallelism]\ndata_parallel_replicate_degree = 4\n')
    doc = report("estimate", "--from", str(toml), "--dp", "64")
    assert doc["communication"]["shard_group"] == 16  # dp_shard -1: the 64 / 4 GPUs of each replica
    assert doc["setup"]["seq_len"] == 2048 and doc["setup"]["micro_batch"] == 8  # torchtitan's defaults


def test_torchtitan_tp_is_costed_as_fsdp_over_the_tp_shards() -> None:
    """torchtitan applies TP, then FSDP2 over the DP mesh (parallelize.py apply_tp, apply_fsdp), its loss parallel
    over the vocabulary: PR #1690's qwen3_32b.toml at TP 8 x DP 4, 16 sequences a rank, reads as --framework fsdp,
    and its ZeRO-3 peak is within 5% of the 43.45 GiB max reserved the PR's log printed for that run."""
    doc = report("estimate", "--from", str(QWEN3_32B_TOML), "--tp", "8", "--micro-batch", "16", "--dp", "4")
    assert doc["setup"]["framework"] == "fsdp" and doc["setup"]["loss_impl"] == "loss-parallel"
    reserved = next(row for row in doc["memory"]["stages"] if row["stage"] == 3)["reserved_bytes"]
    assert abs(reserved / (43.45 * 2**30) - 1) < 0.05
    notes = {row["key"]: row for row in doc["from_config"]["settings"]}
    assert notes["(a torchtitan config)"]["became"] == "--framework fsdp"


@pytest.mark.parametrize("section", ["parallelism", "experimental"])
def test_torchtitan_cp_is_costed_as_fsdp_over_dp_times_cp(tmp_path: Path, section: str) -> None:
    """torchtitan's context parallelism (torch's context_parallel, its allgather rotater by default: config_manager.py
    at 9dec370, context_parallel_rotate_method) under FSDP2 over dp_shard x cp: --framework fsdp --cp 4, --cp-impl
    torch, as tt-h100-2412's Table 2 ran Llama 3.1 8B at 131,072 tokens (its keys in [experimental] then)."""
    toml = tmp_path / "cp.toml"
    toml.write_text(
        '[model]\nname = "llama3"\nflavor = "8B"\n[training]\nlocal_batch_size = 1\nseq_len = 131072\n'
        f'[{section}]\ncontext_parallel_degree = 4\ncontext_parallel_rotate_method = "allgather"\n'
        '[activation_checkpoint]\nmode = "full"\n'
    )
    doc = report("estimate", "--from", str(toml), "--dp", "2")
    assert doc["setup"]["framework"] == "fsdp" and doc["layout"]["cp"] == 4 and doc["layout"]["cp_impl"] == "torch"
    notes = {row["key"]: row for row in doc["from_config"]["settings"]}
    assert notes["(a torchtitan config)"]["note"].endswith("costed as --framework fsdp --cp 4")
    assert notes[f"[{section}] context_parallel_rotate_method"]["note"] == "torch's allgather rotater: --cp-impl torch"


@pytest.mark.parametrize(
    ("flags", "replicas", "said"),
    [
        (["--tp", "4", "--model", "qwen3-30b-a3b"], 1, "qwen3-30b-a3b's layers"),  # experts, TP sequence-parallel
    ],
)
def test_torchtitan_tp_beyond_fsdps_accounting_is_costed_as_megatron_runs_it(
    tmp_path: Path, flags: list[str], replicas: int, said: str
) -> None:
    """Where FSDP with TP or CP does not cost the layout (fsdp_layout.fsdp_layout_refusal), the file's
    layout is Megatron-LM's, and its framework row says what kept it from FSDP's accounting."""
    toml = tmp_path / "tp.toml"
    replicate = "data_parallel_replicate_degree = "
    toml.write_text(QWEN3_32B_TOML.read_text().replace(f"{replicate}1", f"{replicate}{replicas}"))
    doc = report("estimate", "--from", str(toml), "--dp", "4", "--micro-batch", "2", *flags)
    assert doc["setup"]["framework"] != "fsdp"
    note = next(row for row in doc["from_config"]["settings"] if row["key"] == "(a torchtitan config)")["note"]
    assert note.startswith("not read by a TP/CP/PP/EP layout") and note.endswith(f"not costed with {said})")


def test_torchtitan_pp_is_costed_as_fsdp_under_torchs_pipelining(tmp_path: Path) -> None:
    """PP with TP: each stage's TP share sharded by FSDP2 and run by torch's pipelining (fsdp_pipeline.py), not
    resharded after the forward (ZeRO 2: distributed/fsdp.py "For PP, by default do not reshard after forward")."""
    doc = report(
        "estimate",
        "--from",
        str(QWEN3_32B_TOML),
        "--dp",
        "4",
        "--micro-batch",
        "2",
        "--global-batch",
        "16",
        "--tp",
        "8",
        "--pp",
        "2",
    )
    assert doc["setup"]["framework"] == "fsdp" and doc["setup"]["zero_stage"] == 2
    rows = {row["key"]: row for row in doc["from_config"]["settings"]}
    note = rows["(a torchtitan config)"]["note"]
    assert note.endswith(
        "each pipeline stage's (pipeline_llm, torch's pipelining): costed as --framework fsdp --tp 8 --pp 2"
    )
    reshard = rows["[parallelism] fsdp_reshard_after_forward"]  # "default": not resharded under PP
    assert (reshard["became"], reshard["note"]) == (
        "--zero 2",
        "under --pp 2 the parameters kept to the backward (ZeRO-2)",
    )


def test_torchtitan_interleaved_1f1b_runs_two_stages_a_rank(tmp_path: Path) -> None:
    """pipeline_llm at v0.2.2: a multi-stage schedule without pipeline_parallel_layers_per_stage runs two stages a
    rank, split by generate_llm_fqn_per_model_part over PP x 2 stages: Qwen3 32B's 64 layers, with the embedding and
    head each counted as a layer, are 66 over 4 stages, 17, 17, 16, 16, the ends one layer short."""
    toml = tmp_path / "interleaved.toml"
    degree = "tensor_parallel_degree = 1"
    schedule = 'pipeline_parallel_degree = 2\npipeline_parallel_schedule = "Interleaved1F1B"'
    toml.write_text(QWEN3_32B_TOML.read_text().replace(degree, f"{degree}\n{schedule}"))
    doc = report("estimate", "--from", str(toml), "--dp", "4")
    assert doc["setup"]["framework"] == "fsdp"
    assert (doc["layout"]["pp"], doc["layout"]["virtual_stages"]) == (2, 2)
    rows = {(row["key"], row["became"]) for row in doc["from_config"]["settings"]}
    assert ("(torchtitan's pipeline split)", "--pipeline-layout") in rows
    stages = [row["layers"] for row in doc["layout"]["stages"]]
    assert stages == [16 + 16, 17 + 15]  # rank 0 holds stages 0 and 2, rank 1 stages 1 and 3
    typed = report("estimate", "--from", str(toml), "--dp", "4", "--virtual-stages", "4")  # the even split then
    assert [row["layers"] for row in typed["layout"]["stages"]] == [32, 32]


def test_torchtitan_hsdp_with_tp_is_costed_as_fsdp_with_a_shard_group(tmp_path: Path) -> None:
    """data_parallel_replicate_degree 2 over DP 4 (dp_shard -1: the rest) with TP 8: FSDP2 shards within 2 GPUs and
    replicates across 2, costed as --framework fsdp --shard-group 2 (fsdp_layout.fsdp_replicas)."""
    toml = tmp_path / "hsdp.toml"
    replicate = "data_parallel_replicate_degree = "
    toml.write_text(QWEN3_32B_TOML.read_text().replace(f"{replicate}1", f"{replicate}2"))
    doc = report("estimate", "--from", str(toml), "--dp", "4", "--micro-batch", "2", "--tp", "8")
    assert doc["setup"]["framework"] == "fsdp" and doc["communication"]["shard_group"] == 2


@pytest.mark.parametrize("flag", ["--tp", "--cp"])
def test_torchtitan_per_op_sac_with_tp_or_cp_is_costed_as_fsdp(flag: str) -> None:
    """llama3_8b.toml's selective op AC with a --tp or --cp typed over it runs as torchtitan does: FSDP2 over the TP
    or CP shares, its per-op SAC read (checkpointing._sac_saved); the policy had been dropped as a Megatron layout's."""
    doc = report("estimate", "--from", str(CONFIGS / "torchtitan-llama3-8b.toml"), "--dp", "4", flag, "2")
    assert (doc["setup"]["framework"], doc["setup"]["recompute"]) == ("fsdp", "op")
    assert doc["layout"][flag[2:]] == 2


def test_torchtitan_rowwise_float8_is_read_as_the_rowwise_recipe(tmp_path: Path) -> None:
    """[quantize.linear.float8] recipe_name = "rowwise" with the float8 converter: --fp8-recipe rowwise, whose TP
    gathers stay in BF16 (parallelize.py at v0.2.2 runs float8 TP under tensorwise alone)."""
    toml = tmp_path / "rowwise.toml"
    text = (CONFIGS / "torchtitan-llama3-8b.toml").read_text().replace("# converters", "converters")
    toml.write_text(text.replace("[quantize.linear.float8]\n", '[quantize.linear.float8]\nrecipe_name = "rowwise"\n'))
    doc = report("estimate", "--from", str(toml), "--dp", "4", "--tp", "2")
    row = next(s for s in doc["from_config"]["settings"] if s["key"].endswith("recipe_name"))
    assert row["became"] == "--fp8-recipe rowwise" and doc["setup"]["framework"] == "fsdp"
    gathers = {c["message_bytes"] for c in doc["layout"]["calls"] if c["op"] == "all_gather"}
    assert gathers == {8192 * 4096 * 2}  # local batch 1 x seq 8,192 x hidden 4,096 in BF16


def test_torchtitan_replicas_over_cp_are_hsdp_and_over_tp_alone_refused(tmp_path: Path) -> None:
    """torchtitan runs FSDP wherever dp_shard or cp exceeds 1 (parallel_dims.fsdp_enabled at v0.2.2): replicas with
    dp_shard 1 and CP 2 are HSDP sharded over the CP pair; with TP and no CP they would be DDP, which parallelize.py
    refuses ('DDP has not supported > 1D parallelism')."""
    replicate = "data_parallel_replicate_degree = "
    base = QWEN3_32B_TOML.read_text().replace(f"{replicate}1", f"{replicate}2")
    base = base.replace("data_parallel_shard_degree = -1", "data_parallel_shard_degree = 1")
    cp = tmp_path / "cp.toml"
    cp.write_text(base.replace("context_parallel_degree = 1", "context_parallel_degree = 2"))
    doc = report("estimate", "--from", str(cp), "--micro-batch", "1")
    assert doc["setup"]["framework"] == "fsdp" and doc["communication"]["shard_group"] == 2
    tp = tmp_path / "tp.toml"
    tp.write_text(base.replace("tensor_parallel_degree = 1", "tensor_parallel_degree = 2"))
    code, out, err = run("estimate", "--from", str(tp), "--micro-batch", "1")
    assert code == 2 and out == "" and "data_parallel_replicate_degree" in err and "DDP" in err, err


def test_sweep_check_and_plan_read_the_file(tmp_path: Path) -> None:
    toml = str(CONFIGS / "torchtitan-llama3-8b.toml")
    code, out, err = run("sweep", "--from", toml, "--dp", "8,64", "--format", "csv")
    assert code == 0, err and out.count("\n") == 3
    code, _, err = run("check", "--from", toml, "--dp", "64", "--max-memory", "1GB")
    assert code == 1, err
    plan = report("plan", "--from", str(CONFIGS / "megatron-gpt3-175b.sh"), "--gpus", "1024", "--top", "1")
    assert plan["global_batch"] == 1536 and plan["seq_len"] == 2048
    assert plan["plans"][0]["command"].startswith("dpcost estimate --from ")  # the model the script defines
    plan = report("plan", "--from", str(CONFIGS / "accelerate-fsdp.yaml"), "--model", "llama-8b", "--top", "1")
    assert plan["gpus"] == 8  # num_processes
    scenario = tmp_path / "plan.yaml"
    scenario.write_text(
        f"scenarios:\n  - name: titan\n    from: {toml}\n    dp: 64\n    options: {{recompute: full}}\n"
        "    limits: {max_memory: 80GB}\n"
    )
    code, out, err = run("check", str(scenario), "--format", "json")
    assert code == 0, err
    assert "recompute full" in json.loads(out)["scenarios"][0]["summary"]["plan"]


@pytest.mark.parametrize(
    ("name", "text", "flags", "says"),
    [
        ("bad.toml", "[training\n", [], "bad.toml: malformed TOML"),
        ("ds.json", '{"zero_optimization": {"stage": 5}}', ["--model", "llama-8b", "--dp", "8"],
         "ds.json: zero_optimization.stage: must be 0, 1, 2 or 3, got 5"),
        ("config.json", '{"model_type": "llama"}', [], "a model's config.json, not a training config"),
        ("run.sh", "pretrain_gpt.py --tensor-model-parallel-size $TP --num-layers 2", ["--model", "llama-8b",
         "--dp", "8"], "run.sh: --tensor-model-parallel-size: $TP is a shell variable the script does not set"),
        ("notes.txt", "hello", [], "cannot tell what this file is"),
        ("acc.yaml", "distributed_type: TPU\n", ["--model", "llama-8b"], "acc.yaml: distributed_type: must be"),
    ],
)  # fmt: skip
def test_bad_files_get_one_line_naming_the_file_and_key(
    tmp_path: Path, name: str, text: str, flags: list[str], says: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    code, out, err = run("estimate", "--from", str(path), *flags)
    assert code == 2 and not out
    assert err.count("\n") == 1 and says in err, err


@pytest.mark.parametrize("command", [["estimate", "--dp", "8"], ["sweep", "--dp", "8..16"]])
def test_the_engines_refusal_of_a_files_value_names_the_file_and_key(tmp_path: Path, command: list[str]) -> None:
    """A value the engine refuses once the plan is built (a global batch DP cannot split) is said where it came from:
    the file and its key when the file gave it, the flag when the user typed it over the file."""
    path = tmp_path / "ds.json"
    path.write_text(json.dumps({"train_batch_size": 1, "zero_optimization": {"stage": 3}}))
    code, out, err = run(*command, "--from", str(path), "--model", "llama-8b")
    assert code == 2 and not out
    assert (
        err == f"dpcost: error: {path}: train_batch_size: 1 sequences cannot be split evenly over DP 8; use a "
        "multiple of 8\n"
    )
    code, _, err = run(*command, "--from", str(path), "--model", "llama-8b", "--global-batch", "12")
    assert code == 2 and err.startswith("dpcost: error: --global-batch: 12 sequences cannot be split"), err


def test_a_flag_may_stand_for_a_setting_the_file_cannot_give(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("pretrain_gpt.py --tensor-model-parallel-size $TP --micro-batch-size 1")
    doc = report("estimate", "--from", str(script), "--model", "llama-8b", "--dp", "8", "--tp", "8")
    assert doc["layout"]["tp"] == 8


def test_a_megatron_scripts_end_stages_and_mtp_layers_are_read(tmp_path: Path) -> None:
    """--decoder-first-pipeline-num-layers, --decoder-last-pipeline-num-layers and --mtp-num-layers
    (megatron/training/arguments.py) become --first-stage-layers, --last-stage-layers and --mtp-layers."""
    script = (CONFIGS / "megatron-gpt3-175b.sh").read_text()
    extra = "    --eval-iters 10\n    --decoder-first-pipeline-num-layers 13\n"
    extra += "    --decoder-last-pipeline-num-layers 13\n"
    path = tmp_path / "uneven.sh"
    path.write_text(script.replace("    --eval-iters 10\n", extra + "    --mtp-num-layers 1\n"))
    read = report("estimate", "--from", str(path), "--dp", "8")
    layers = [s["layers"] for s in read["layout"]["stages"]]
    assert layers == [13] + [5] * 14 + [13]  # the other 14 stages split the remaining 70
    assert read["layout"]["mtp_layers"] == 1


def test_a_megatron_scripts_pipeline_layout_sets_its_stages_and_virtual_stages(tmp_path: Path) -> None:
    """--pipeline-model-parallel-layout (pipeline_parallel_layer_layout.py): virtual stage i on rank i mod PP, the
    virtual stages per rank its stage count over PP (arguments.py validate_args), and refused beside
    --num-virtual-stages-per-pipeline-rank or where its stages do not split over PP."""
    script = (CONFIGS / "megatron-gpt3-175b.sh").read_text()  # 96 layers on PP 16

    def with_args(name: str, extra: str) -> Path:
        path = tmp_path / name
        path.write_text(script.replace("    --eval-iters 10\n", f"    --eval-iters 10\n{extra}"))
        return path

    # 32 stages: the embedding and 4 layers, 30 x 3, then 2 layers and the loss
    v2 = with_args("v2.sh", "    --pipeline-model-parallel-layout 'Et*4|(t*3|)*30t*2L'\n")
    read = report("estimate", "--from", str(v2), "--dp", "8")
    assert [s["layers"] for s in read["layout"]["stages"]] == [4 + 3] + [3 + 3] * 14 + [3 + 2]
    assert read["layout"]["virtual_stages"] == 2
    both = with_args(
        "both.sh", "    --pipeline-model-parallel-layout Et*12|t*12L\n    --num-virtual-stages-per-pipeline-rank 2\n"
    )
    code, _, err = run("estimate", "--from", str(both), "--dp", "8")
    assert code == 2 and "--pipeline-model-parallel-layout" in err and "virtual" in err
    short = with_args("short.sh", "    --pipeline-model-parallel-layout Et*48|t*48L\n")
    code, _, err = run("estimate", "--from", str(short), "--dp", "8")
    assert code == 2 and "2 stages do not split over PP 16" in err


def test_a_megatron_scripts_accounted_split_is_the_layout_it_builds(tmp_path: Path) -> None:
    """--account-for-embedding/loss-in-pipeline-split count the embedding and the loss as a layer each
    (transformer_block.py get_num_layers_to_build): GPT-2 345M's 24 layers at PP 2 split as 26 over 2, 12 and 12;
    beside a pipeline layout they are refused, as transformer_config.py refuses them."""
    script = (CONFIGS / "megatron-gpt-345m.sh").read_text()
    extra = "    --pipeline-model-parallel-size 2\n    --account-for-embedding-in-pipeline-split\n"
    extra += "    --account-for-loss-in-pipeline-split\n    --eval-iters 10\n"
    path = tmp_path / "accounted.sh"
    path.write_text(script.replace("    --eval-iters 10\n", extra))
    read = report("estimate", "--from", str(path), "--dp", "4")
    assert [s["layers"] for s in read["layout"]["stages"]] == [12, 12]
    both = tmp_path / "both.sh"
    both.write_text(
        path.read_text().replace("    --eval-iters 10\n", "    --pipeline-model-parallel-layout Et*12|t*12L\n")
    )
    code, _, err = run("estimate", "--from", str(both), "--dp", "4")
    assert code == 2 and "--account-for-embedding-in-pipeline-split" in err


def test_activation_offloading_is_said_not_costed_not_passed_over(tmp_path: Path) -> None:
    """--fine-grained-activation-offloading (transformer_config.py) and --cpu-offloading (model_parallel_config.py)
    move activations to the host: dpcost keeps them on the GPU, and its reading says so rather than calling them
    inert."""
    from dpcost.training_configs.megatron import OFFLOADING, read

    script = (CONFIGS / "megatron-gpt-345m.sh").read_text()
    extra = "    --fine-grained-activation-offloading\n    --offload-modules core_attn\n    --eval-iters 10\n"
    reading = read(script.replace("    --eval-iters 10\n", extra), "run.sh")
    notes = {s.key: s.note for s in reading.settings}
    assert notes["--fine-grained-activation-offloading"] == notes["--offload-modules"] == OFFLOADING
    assert "not costed" in OFFLOADING


def test_a_megatron_scripts_window_is_its_models(tmp_path: Path) -> None:
    """--window-size (left, right) and --window-attn-skip-freq as Megatron-Core applies them (transformer/utils.py
    is_layer_window_attention, layer numbers from 1): (127, 0) every other layer is gpt-oss's 128-key window on
    layers 0, 2, 4, ...; without a frequency every layer; a non-causal window or a list pattern is refused by name."""
    from dpcost.training_configs.megatron import read

    script = (CONFIGS / "megatron-gpt-345m.sh").read_text()

    def with_args(extra: str) -> str:
        return script.replace("    --num-layers 24 \\", f"    --num-layers 24 {extra} \\")

    spec = read(with_args("--window-size 127,0 --window-attn-skip-freq 2"), "w.sh").model_spec
    assert spec is not None and spec.architecture is not None
    local = spec.architecture.local_attention
    assert local is not None and local.size == 128 and local.layers == tuple(range(0, 24, 2))
    spec = read(with_args("--window-size (4095,0)"), "w.sh").model_spec
    assert spec is not None and spec.architecture is not None
    local = spec.architecture.local_attention
    assert local is not None and local.size == 4096 and local.layers == ()
    refused = (("--window-size 127,5", "a causal window"),
               ("--window-size 127,0 --window-attn-skip-freq [1,0]", "a list pattern is not read"))  # fmt: skip
    for extra, said in refused:
        path = tmp_path / "bad.sh"
        path.write_text(with_args(extra))
        code, out, err = run("estimate", "--from", str(path), "--dp", "1")
        assert code == 2 and said in out + err, (extra, out, err)


def test_megatron_bucket_count_becomes_bucket_count(tmp_path: Path) -> None:
    """--ddp-num-buckets is --bucket-count (training.py resolve_ddp_bucket_size at d98e8a64dd: the rank's parameters
    over N); Megatron-Core refuses it beside --ddp-bucket-size (distributed_data_parallel_config.py __post_init__)
    and below 1, and so does the reading, naming the flag."""
    from dpcost.training_configs.megatron import read

    script = (CONFIGS / "megatron-gpt-345m.sh").read_text()

    def with_args(extra: str) -> str:
        return script.replace("    --num-layers 24 \\", f"    --num-layers 24 {extra} \\")

    config = read(with_args("--ddp-num-buckets 4"), "b.sh")
    (said,) = [s for s in config.settings if s.key == "--ddp-num-buckets"]
    assert said.became == "--bucket-count 4" and config.options["bucket_count"] == "4"
    for extra, told in (("--ddp-num-buckets 4 --ddp-bucket-size 1000000", "beside --ddp-bucket-size"),
                        ("--ddp-num-buckets 0", "a positive integer")):  # fmt: skip
        path = tmp_path / "bad.sh"
        path.write_text(with_args(extra))
        code, out, err = run("estimate", "--from", str(path), "--dp", "1")
        assert code == 2 and "--ddp-num-buckets" in out + err and told in out + err, (extra, out, err)


def test_a_megatron_scripts_token_dispatcher_is_read() -> None:
    """--moe-token-dispatcher-type (megatron/training/arguments.py: allgather, alltoall, flex) becomes
    --ep-dispatcher for the two dpcost prices; allgather's dispatch, a different traffic, is refused by name."""
    from dpcost.training_configs.megatron import read

    script = (CONFIGS / "megatron-gpt-345m.sh").read_text()

    def dispatched(kind: str) -> TrainingConfig:
        return read(
            script.replace("    --num-layers 24 \\", f"    --num-layers 24 --moe-token-dispatcher-type {kind} \\"),
            "d.sh",
        )

    assert dispatched("flex").options["ep_dispatcher"] == "flex"
    assert dispatched("alltoall").options["ep_dispatcher"] == "alltoall"
    assert dispatched("allgather").options["ep_dispatcher"] == "allgather"
    refused = dispatched("deepep")
    assert "ep_dispatcher" not in refused.options
    assert refused.refusals["ep_dispatcher"] == (
        "--moe-token-dispatcher-type",
        "deepep: dpcost prices alltoall, flex and allgather",
    )


def test_a_megatron_scripts_matmul_precision_is_read() -> None:
    """megatron/training/arguments.py: --fp8-format (e4m3, hybrid) runs the matmuls in FP8, --fp4-format e2m1 in
    NVFP4 (--fp4-recipe's one choice)."""
    from dpcost.training_configs.megatron import read

    script = (CONFIGS / "megatron-gpt-345m.sh").read_text()

    def precision(flag: str) -> object:
        return read(script.replace("    --num-layers 24 \\", f"    --num-layers 24 {flag} \\"), "p.sh").options.get(
            "compute_dtype"
        )

    assert precision("") is None
    assert precision("--fp8-format hybrid") == "fp8"
    assert precision("--fp4-format e2m1") == "nvfp4"


def test_torchtitan_reads_its_pipeline_schedule(tmp_path: Path) -> None:
    """pipeline_parallel_schedule GPipe becomes --pp-schedule gpipe: every micro-batch's activations held."""
    toml = tmp_path / "pp.toml"
    head = '[model]\nname = "llama3"\nflavor = "8B"\n[training]\nlocal_batch_size = 8\n[parallelism]\n'
    toml.write_text(head + 'pipeline_parallel_degree = 4\npipeline_parallel_schedule = "GPipe"\n')
    gpipe = report("estimate", "--from", str(toml), "--dp", "2")
    toml.write_text(head + "pipeline_parallel_degree = 4\n")
    default = report("estimate", "--from", str(toml), "--dp", "2")
    rows = {row["key"]: row for row in gpipe["from_config"]["settings"]}
    assert rows["[parallelism] pipeline_parallel_schedule"]["became"] == "--pp-schedule gpipe"
    held = [r["memory"]["stages"][r["setup"]["zero_stage"]]["activations_bytes"] for r in (default, gpipe)]
    assert held[1] > held[0]


def test_torchtitan_pipeline_microbatch_size_has_one_row_under_pp(tmp_path: Path) -> None:
    """Under PP, [parallelism] pipeline_parallel_microbatch_size is the micro-batch (torchtitan's
    job_config.py): one row says so, none that it has no effect; selective AC's option reads as an ordinal."""
    toml = tmp_path / "pp.toml"
    toml.write_text('[model]\nname = "llama3"\nflavor = "8B"\n[training]\nlocal_batch_size = 8\n[parallelism]\n'
                    "pipeline_parallel_degree = 2\npipeline_parallel_microbatch_size = 2\n")  # fmt: skip
    settings = report("estimate", "--from", str(toml), "--dp", "8")["from_config"]["settings"]
    rows = [row for row in settings if row["key"] == "[parallelism] pipeline_parallel_microbatch_size"]
    assert [row["became"] for row in rows] == ["--micro-batch 2"]
    mode = next(row for row in settings if row["key"] == "[activation_checkpoint] mode")
    assert mode["note"] == "torchtitan's default: every 2nd block in full"


def test_torchtitan_reads_its_optimizer_implementation(tmp_path: Path) -> None:
    """[optimizer] implementation (torchtitan's config, default fused) becomes --optimizer-impl: foreach holds one
    state's worth of intermediates at the step (memory.optimizer_intermediates); a value torchtitan refuses is an
    input error naming the key."""
    toml = tmp_path / "opt.toml"
    head = '[model]\nname = "llama3"\nflavor = "8B"\n[training]\nlocal_batch_size = 1\n[optimizer]\n'
    toml.write_text(head + 'implementation = "foreach"\n')
    foreach = report("estimate", "--from", str(toml), "--dp", "8", "--zero", "3")
    rows = {row["key"]: row for row in foreach["from_config"]["settings"]}
    assert rows["[optimizer] implementation"]["became"] == "--optimizer-impl foreach"
    toml.write_text(head + 'implementation = "fast"\n')
    code, _, err = run("estimate", "--from", str(toml), "--dp", "8")
    assert code == 2 and "[optimizer] implementation" in err and "fast" in err


def test_a_megatron_scripts_torchrun_world_fixes_dp_where_it_holds_the_layout() -> None:
    """Megatron's world is TP x PP x CP x DP (megatron/core/parallel_state.py), and torchrun's is --nproc_per_node x
    --nnodes: 2 x 8 GPUs at TP 2 give DP 8; a world too small for PP x EP (a launcher's default node count) fixes
    nothing."""
    from dpcost.training_configs.megatron import read

    script = "torchrun --nproc_per_node 8 --nnodes $((1+1)) pretrain_gpt.py --tensor-model-parallel-size 2 --bf16"
    assert read(script, "s.sh").dp == 8
    small = "NNODES=${SLURM_NNODES:-1}\ntorchrun --nproc_per_node 8 --nnodes $NNODES pretrain_gpt.py "
    assert read(small + "--pipeline-model-parallel-size 4 --expert-model-parallel-size 8", "s.sh").dp is None
    assert read(small + "--pipeline-model-parallel-size 4", "s.sh").dp == 2


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ({"cpu_offload": True}, {"offload_optimizer": {"device": "cpu"}}),
        ({"cpu_offload_param": True}, {"offload_param": {"device": "cpu"}}),
        ({"cpu_offload_params": True}, {"offload_param": {"device": "cpu"}}),
    ],
)
def test_deepspeeds_deprecated_offload_switches_are_the_offloads_they_name(
    tmp_path: Path, old: dict, new: dict
) -> None:  # type: ignore[type-arg]
    """deepspeed/runtime/zero/config.py maps cpu_offload to offload_optimizer {device: cpu} and cpu_offload_param to
    offload_param {device: cpu}; v0.3's ZeRO-3 configs spelt the latter cpu_offload_params."""
    plans = []
    for zero in (old, new):
        path = tmp_path / "ds.json"
        path.write_text(json.dumps({"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 3, **zero}}))
        doc = report("estimate", "--from", str(path), "--model", "llama-8b", "--dp", "8")
        plans.append((doc["setup"]["offload"], doc["summary"]["memory_bytes"], doc["time"]["step_seconds"]))
    assert plans[0] == plans[1] and plans[0][0] != "none"


@pytest.mark.parametrize("stage", [0, 1, 2])
@pytest.mark.parametrize("param", [{"offload_param": {"device": "cpu"}}, {"cpu_offload_param": True}])
def test_deepspeed_offloads_parameters_at_stage_3_only(
    tmp_path: Path,
    stage: int,
    param: dict,  # type: ignore[type-arg]
) -> None:
    """DeepSpeed hands offload_param to its stage-3 optimizers alone (runtime/engine.py _configure_zero_optimizer at
    v0.9.5, v0.16.0 and edaa722; its stage 1-2 optimizer takes offload_optimizer_config only), and raises nothing
    below stage 3: DeepSpeed-Chat trains at stage 2 with it (DeepSpeedExamples dschat/utils/ds_utils.py). So
    below stage 3 the file costs as it would without the key, whose row says why, and an offload_optimizer beside it
    (stages 1-2) is the offload costed."""
    from dpcost.training_configs import PARAMS_OFFLOAD_BELOW_STAGE_3

    def cost(zero: dict) -> tuple[str, int, float, dict]:  # type: ignore[type-arg]
        path = tmp_path / "ds.json"
        ds = {"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": stage, **zero}}
        path.write_text(json.dumps(ds))
        doc = report("estimate", "--from", str(path), "--model", "llama-8b", "--dp", "8")
        notes = {row["key"]: row["note"] for row in doc["from_config"]["settings"]}
        return doc["setup"]["offload"], doc["summary"]["memory_bytes"], doc["time"]["step_seconds"], notes

    offload, memory, step, notes = cost(param)
    assert (offload, memory, step) == cost({})[:3] and offload == "none"
    key = "zero_optimization." + ("offload_param.device" if "offload_param" in param else "cpu_offload_param")
    assert notes[key] == PARAMS_OFFLOAD_BELOW_STAGE_3
    if stage:
        optimizer = {"offload_optimizer": {"device": "cpu"}}
        both = cost({**param, **optimizer})[:3]
        assert both == cost(optimizer)[:3] and both[0] == "optimizer"


def test_accelerates_param_offload_below_stage_3_is_deepspeeds() -> None:
    """Accelerate's DeepSpeed plugin writes offload_param_device into zero_optimization.offload_param whatever the
    stage (utils/dataclasses.py DeepSpeedPlugin), which DeepSpeed reads at stage 3 only (above)."""
    from dpcost.training_configs import PARAMS_OFFLOAD_BELOW_STAGE_3
    from dpcost.training_configs.accelerate import read

    ds = {"zero_stage": 2, "offload_param_device": "cpu", "offload_optimizer_device": "cpu"}
    config = read({"distributed_type": "DEEPSPEED", "num_processes": 8, "deepspeed_config": ds}, "a.yaml", Path("."))
    assert config.options["offload"] == "optimizer"
    notes = {s.key: s.note for s in config.settings}
    assert notes["deepspeed_config.offload_param_device"] == PARAMS_OFFLOAD_BELOW_STAGE_3
    three = read({"distributed_type": "DEEPSPEED", "num_processes": 8, "deepspeed_config": {**ds, "zero_stage": 3}},
                 "a.yaml", Path("."))  # fmt: skip
    assert three.options["offload"] == "params"


def test_deepspeed_keys_priced_at_their_defaults_are_not_called_inert() -> None:
    """Stage 3's max_live_parameters, max_reuse_distance and param_persistence_threshold (runtime/zero/config.py)
    change what a GPU holds and gathers, and dpcost prices them at DeepSpeed's defaults; pipeline and
    sparse_attention configure what a script builds. None is said to leave the price unchanged. Its sub_group_size
    (the fp32 copies its step makes at a time: memory.deepspeed_sub_group) is --sub-group-size at stage 3, and said
    as applying at stage 3 only elsewhere."""
    from dpcost.training_configs import NOT_PRICED
    from dpcost.training_configs.deepspeed import read

    zero = {"stage": 3, "sub_group_size": 1e8, "stage3_max_live_parameters": 1e8, "stage3_max_reuse_distance": 0,
            "stage3_param_persistence_threshold": 1e4}  # fmt: skip
    doc = {"train_micro_batch_size_per_gpu": 1, "zero_optimization": zero, "pipeline": {"stages": 2},
           "sparse_attention": {"mode": "fixed"}}  # fmt: skip
    config = read(doc, "ds.json")
    notes = {s.key: s.note for s in config.settings}
    for key in ("stage3_max_live_parameters", "stage3_max_reuse_distance", "stage3_param_persistence_threshold"):
        assert notes[f"zero_optimization.{key}"].startswith(("not read", "not modelled")), key
    assert config.options["sub_group_size"] == "100000000"  # axolotl's zero3.json sets 0: one parameter at a time
    assert read({**doc, "zero_optimization": {**zero, "sub_group_size": 0}}, "ds.json").options["sub_group_size"] == "0"
    two = read({**doc, "zero_optimization": {**zero, "stage": 2}}, "ds.json")
    assert "sub_group_size" not in two.options
    assert {s.key: s.note for s in two.settings}["zero_optimization.sub_group_size"].startswith("applies at stage 3")
    with pytest.raises(InputError, match=r"zero_optimization\.sub_group_size: must be a number of elements"):
        read({**doc, "zero_optimization": {**zero, "sub_group_size": -1}}, "ds.json")
    assert notes["pipeline"].startswith("applies") and notes["sparse_attention"].startswith("applies")
    assert NOT_PRICED not in notes.values()


@pytest.mark.parametrize(
    ("params", "impl"),
    [
        ({"torch_adam": True}, "foreach"),  # torch.optim.AdamW as built: torch's default on CUDA
        ({"torch_adam": True, "fused": True}, "fused"),  # the params reach torch.optim.AdamW
        ({"torch_adam": True, "foreach": False}, "for-loop"),
        ({"torch_adam": False}, None),  # DeepSpeed's FusedAdam, as without the key
        ({"fused": True}, None),  # without torch_adam, FusedAdam: torch's keys are not read
    ],
)
def test_deepspeeds_torch_adam_steps_as_torch_optims_adamw(tmp_path: Path, params: dict, impl: str | None) -> None:  # type: ignore[type-arg]
    """runtime/engine.py _configure_basic_optimizer (v0.19.5): an Adam or AdamW block with torch_adam true builds
    torch.optim.Adam(W) with the block's other params, else DeepSpeed's FusedAdam (the framework's default,
    fused). The Accelerate templates set it (examples/deepspeed_config_templates/zero_stage2_config.json)."""
    path = tmp_path / "ds.json"
    optimizer = {"type": "AdamW", "params": {"lr": 1e-5, **params}}
    path.write_text(json.dumps({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True},
                                "zero_optimization": {"stage": 2}, "optimizer": optimizer}))  # fmt: skip
    read = report("estimate", "--from", str(path), "--model", "llama-8b", "--dp", "8")
    flags = ["--optimizer-impl", impl] if impl else []
    typed = report("estimate", "--model", "llama-8b", "--dp", "8", "--framework", "deepspeed", "--zero", "2",
                   "--grad-dtype", "bf16", "--optimizer", "adamw", *flags)  # fmt: skip
    assert without(read, "from_config") == typed
    # ZeRO-0's row: FusedAdam's FP16_Optimizer holds fp32 copies of the gradients (8 bytes a parameter), a torch
    # optimizer's FP16_UnfusedOptimizer casts them into .grad (4), beside which foreach's square roots hold 4 more
    fused = report("estimate", "--model", "llama-8b", "--dp", "8", "--framework", "deepspeed", "--zero", "2")
    less = fused["memory"]["stages"][0]["buffers_bytes"] - read["memory"]["stages"][0]["buffers_bytes"]
    if impl != "fused":  # torch's fused AdamW: FP16_UnfusedOptimizer's 4, costed as FusedAdam's 8 (the note says)
        assert less == (4 * read["model"]["params_total"] if impl == "for-loop" else 0)


def test_deepspeeds_torch_adam_must_be_a_switch(tmp_path: Path) -> None:
    path = tmp_path / "ds.json"
    optimizer = {"type": "Adam", "params": {"torch_adam": "yes"}}
    path.write_text(json.dumps({"train_micro_batch_size_per_gpu": 1, "optimizer": optimizer}))
    code, out, err = run("estimate", "--from", str(path), "--model", "llama-8b", "--dp", "8")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "optimizer.params.torch_adam: must be true or false" in err and "ds.json" in err


def test_deepspeed_layouts_states_and_mics_as_deepspeed_runs_them() -> None:
    """A second audit against DeepSpeed edaa72212: MiCS (zero_optimization.mics_shard_size at stage 3) shards the
    states within groups of N (engine.py builds MiCS_Optimizer), a --shard-group; AutoTP, Ulysses and AutoEP run
    layouts dpcost costs only as Megatron-LM runs them, refused by name; the bf16 section's state dtypes and an
    offload ratio below 1 are said as not priced, not left without a row."""
    from dpcost.training_configs.deepspeed import read

    doc = {"train_micro_batch_size_per_gpu": 1,
           "bf16": {"enabled": True, "bf16_master_weights_and_grads": True, "bf16_optimizer_states": True},
           "zero_optimization": {"stage": 3, "mics_shard_size": 8,
                                 "offload_optimizer": {"device": "cpu", "ratio": 0.3}},
           "tensor_parallel": {"autotp_size": 1}}  # fmt: skip
    config = read(doc, "ds.json")
    assert config.options["shard_group"] == "8" and config.options["offload"] == "optimizer"
    notes = {s.key: s.note for s in config.settings}
    assert notes["bf16.bf16_master_weights_and_grads"].startswith("not priced")
    assert notes["bf16.bf16_optimizer_states"].startswith("not priced")
    # bf16.check_grad_overflow (v0.19.3's default true, runtime/precision_config.py) is priced as on, and said so
    checked = read({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True, "check_grad_overflow": False}},
                   "ds.json")  # fmt: skip
    assert {s.key: s.note for s in checked.settings}["bf16.check_grad_overflow"].startswith("priced as true")
    assert notes["zero_optimization.offload_optimizer.ratio"].startswith("costed as the whole")
    assert notes["tensor_parallel"] == "off"
    more = read({"train_micro_batch_size_per_gpu": 1, "amp": {"enabled": True}, "progressive_layer_drop":
                 {"enabled": False}, "curriculum_learning": {"enabled": True}}, "ds.json")  # fmt: skip
    notes = {s.key: s.note for s in more.settings}
    assert notes["amp"].startswith("not read") and notes["progressive_layer_drop"] == "off"
    assert notes["curriculum_learning"].startswith("not priced")
    for key, value in (("tensor_parallel", {"autotp_size": 4}), ("sequence_parallel_size", 2),
                       ("expert_parallel", {"enabled": True, "autoep_size": 8})):  # fmt: skip
        with pytest.raises(InputError, match=key):
            read({"train_micro_batch_size_per_gpu": 1, key: value}, "ds.json")


def test_torchtitan_pipeline_split_is_torchtitans_own(tmp_path: Path) -> None:
    """torchtitan splits a 1F1B pipeline's layers with the embedding and the output head counted as a layer each
    (pipeline_parallel_first/last_stage_less_layers, 1 by default: distributed/pipeline_parallel.py
    generate_llm_fqn_per_model_part at v0.2.2): Llama 3 8B's 32 layers and the two make 34 over 4 stages, 9, 9, 8
    and 8, the ends one layer short: 8, 9, 8, 7. Without it dpcost would have split 8 a stage."""
    toml = ('[model]\nname = "llama3"\nflavor = "8B"\n[training]\nlocal_batch_size = 8\nseq_len = 8192\n'
            "[parallelism]\npipeline_parallel_degree = 4\npipeline_parallel_microbatch_size = 1\n")  # fmt: skip
    path = tmp_path / "tt.toml"
    path.write_text(toml)
    stages = report("estimate", "--from", str(path), "--dp", "2")["layout"]["stages"]
    assert [s["layers"] for s in stages] == [8, 9, 8, 7]
    from dpcost.training_configs.torchtitan import torchtitan_layout

    assert torchtitan_layout(32, 4, 0, 0) == "Et*8|t*8|t*8|t*8L"
    assert torchtitan_layout(32, 4, 2, 2) == "Et*7|t*9|t*9|t*7L"  # 36 over 4, each end 2 short


def test_torchtitan_toml_storage_converters_and_emulation() -> None:
    """[training] dtype bfloat16 is the bf16 recipe and enable_cpu_offload FSDP2's CPU offload (refused unless
    --offload is typed), as the Python configs' reader reads them; quantize.linear.mx is MXFP8's linear converter
    (components/quantization/mx.py), priced as fp8; [quantize.linear.float8] emulate = true runs the matmuls in
    bf16 (job_config.py)."""
    from dpcost.training_configs.torchtitan import read

    base = {"model": {"name": "llama3", "flavor": "8B"}}
    config = read({**base, "training": {"dtype": "bfloat16", "enable_cpu_offload": True}}, "t.toml")
    assert config.options["recipe"] == "bf16" and config.refusals["offload"][0] == "[training] enable_cpu_offload"
    mx = read({"model": {**base["model"], "converters": ["quantize.linear.mx"]}}, "m.toml")
    assert mx.options["compute_dtype"] == "fp8"
    emulated = read({"model": {**base["model"], "converters": ["quantize.linear.float8"]},
                     "quantize": {"linear": {"float8": {"emulate": True}}}}, "e.toml")  # fmt: skip
    assert "compute_dtype" not in emulated.options
    deepep = read({**base, "parallelism": {"expert_parallel_degree": 8, "expert_parallel_comm_backend": "deepep"}},
                  "d.toml")  # fmt: skip
    assert {s.key: s.note for s in deepep.settings}["[parallelism] expert_parallel_comm_backend"].startswith("not")
    # [compile] backend (job_config.py: inductor by default): aot_eager traces without fusing, so the model runs eager
    for backend, compiled in (("aot_eager", "false"), ("inductor", "true")):
        config = read({**base, "compile": {"enable": True, "backend": backend}}, "c.toml")
        assert config.options["compile"] == compiled, backend


@pytest.mark.parametrize(
    ("doc", "compiled"),
    [({"dynamo_config": {"dynamo_backend": "INDUCTOR"}}, "true"), ({"dynamo_backend": "INDUCTOR"}, "true"),
     ({"dynamo_config": {"dynamo_backend": "EAGER"}}, None), ({"dynamo_backend": "NO"}, None)],
)  # fmt: skip
def test_accelerate_compiles_the_model_with_its_dynamo_backend(doc: dict, compiled: str | None) -> None:  # type: ignore[type-arg]
    """Accelerate compiles the model where its dynamo backend is not NO (accelerator.py at 16cb6eb8), the backend
    in dynamo_config or, as config_args.py converts it, the legacy top-level dynamo_backend: inductor's fused
    kernels are --compile; EAGER traces without fusing, priced as eager."""
    from dpcost.training_configs.accelerate import read

    config = read({"distributed_type": "FSDP", "num_processes": 8, **doc}, "a.yaml", Path("."))
    assert config.options.get("compile") == compiled


def test_accelerate_fp32_deepspeed_and_fsdp_units_it_does_not_price() -> None:
    """Accelerate's DeepSpeed plugin with mixed_precision no writes bf16 and fp16 disabled (utils/dataclasses.py):
    fp32 DeepSpeed; fsdp_auto_wrap_policy NO_WRAP makes one unit of the whole model, said as not priced."""
    from dpcost.training_configs.accelerate import read

    ds = read({"distributed_type": "DEEPSPEED", "num_processes": 8, "mixed_precision": "no",
               "deepspeed_config": {"zero_stage": 2}}, "a.yaml", Path("."))  # fmt: skip
    assert (ds.options["recipe"], ds.options["grad_dtype"]) == ("ddp", "fp32")
    fsdp = read({"distributed_type": "FSDP", "num_processes": 8, "fsdp_config": {"fsdp_auto_wrap_policy": "NO_WRAP"}},
                "f.yaml", Path("."))  # fmt: skip
    assert {s.key: s.note for s in fsdp.settings}["fsdp_config.fsdp_auto_wrap_policy"].startswith("not priced")
    # sp_size is a dimension of its own in Accelerate's total (parallelism_config.py): refused by name, not mistaken
    # for a product that does not add up
    with pytest.raises(InputError, match="parallelism_config_sp_size"):
        read({"distributed_type": "FSDP", "num_processes": 8, "parallelism_config": {"parallelism_config_sp_size": 2,
              "parallelism_config_dp_shard_size": 4}}, "s.yaml", Path("."))  # fmt: skip


# torchtitan's train_configs/llama3_405b.toml at 57387af0 (before v0.1), abridged: the degrees in [training] and
# [experimental], and converters as one string (torchtitan's string_list then)
TORCHTITAN_LEGACY = """\
[model]
name = "llama3"
flavor = "405B"
converters = "float8"
[training]
batch_size = 2
seq_len = 8192
data_parallel_replicate_degree = 1
data_parallel_shard_degree = -1
tensor_parallel_degree = 8
[experimental]
context_parallel_degree = 1
pipeline_parallel_degree = 1
enable_async_tensor_parallel = true
[activation_checkpoint]
mode = 'full'
[float8]
enable_fsdp_float8_all_gather = true
"""
# the same job as torchtitan v0.1+ writes it
TORCHTITAN_NOW = """\
[model]
name = "llama3"
flavor = "405B"
converters = ["float8"]
[training]
local_batch_size = 2
seq_len = 8192
[parallelism]
data_parallel_replicate_degree = 1
data_parallel_shard_degree = -1
tensor_parallel_degree = 8
context_parallel_degree = 1
pipeline_parallel_degree = 1
enable_async_tensor_parallel = true
[activation_checkpoint]
mode = 'full'
[quantize.linear.float8]
enable_fsdp_float8_all_gather = true
"""


def test_a_torchtitan_config_from_before_v01_gives_the_plan_its_v01_form_gives(tmp_path: Path) -> None:
    plans = []
    for name, text in (("legacy", TORCHTITAN_LEGACY), ("now", TORCHTITAN_NOW)):
        path = tmp_path / f"{name}.toml"
        path.write_text(text)
        doc = report("estimate", "--from", str(path), "--dp", "16")
        plans.append((doc["setup"], doc["layout"]["tp"], doc["summary"]["memory_bytes"], doc["time"]["step_seconds"]))
    assert plans[0] == plans[1]
    assert plans[0][0]["compute_dtype"] == "fp8" and plans[0][1] == 8
    rows = {row["key"] for row in report("estimate", "--from", str(tmp_path / "legacy.toml"), "--dp", "16")[
        "from_config"]["settings"]}  # fmt: skip
    assert "[training] tensor_parallel_degree" in rows and "[experimental] enable_async_tensor_parallel" in rows


def test_torchtitans_december_2024_405b_preset_runs_float8_as_its_float8_section_switches_it() -> None:
    """Before [model] converters (57387af0, 2025-02) [float8] enable_float8_linear swapped in Float8Linear
    (float8.py Float8Handler at 9dec370), and enable_fsdp_float8_all_gather gathered its weights in float8: the
    preset torchtitan's December 2024 benchmarks ran (llama3_405b.toml at 9dec370) is FP8 matmuls with a float8
    all-gather, TP 8; its async TP (torch's symmetric-memory micro-pipelining) is not priced under FSDP, and the
    row says so where a typed flag would be warned of."""
    doc = report("estimate", "--from", str(CONFIGS / "torchtitan-llama3-405b-2412.toml"), "--dp", "16")
    rows = {s["key"]: s for s in doc["from_config"]["settings"]}
    assert rows["[float8] enable_float8_linear"]["became"] == "--compute-dtype fp8"
    assert rows["[float8] enable_fsdp_float8_all_gather"]["became"] == "--gather-dtype fp8"
    assert doc["setup"]["compute_dtype"] == "fp8" and doc["layout"]["tp"] == 8
    async_tp = rows["[experimental] enable_async_tensor_parallel"]
    assert async_tp["became"] == "" and "not priced under FSDP" in async_tp["note"]
    assert not doc["warnings"] and not doc["layout"]["tp_comm_overlap"]


def test_torchtitans_float8_all_gather_needs_float8_linears_and_a_shard(tmp_path: Path) -> None:
    """torchtitan gathers in float8 only with Float8Linear on and data_parallel_shard_degree above 1 (float8.py at
    9dec370 and v0.2.2: parallel_dims.dp_shard_enabled and enable_fsdp_float8_all_gather), and at v0.2.2 not with a
    recipe_name (asserted): otherwise the key does nothing, and the plan runs (it had been refused as Megatron's FP8
    gather without FP8 matmuls)."""
    base = '[model]\nname = "llama3"\nflavor = "8B"\n'
    for extra, float8 in (("", "enable_float8_linear = false\n"), ("", ""),
                          ("[parallelism]\ndata_parallel_shard_degree = 1\ndata_parallel_replicate_degree = 8\n",
                           "enable_float8_linear = true\n"),
                          ('converters = ["float8"]\n', 'recipe_name = "rowwise"\n')):  # fmt: skip
        path = tmp_path / "f.toml"
        path.write_text(base + extra + "[float8]\nenable_fsdp_float8_all_gather = true\n" + float8)
        doc = report("estimate", "--from", str(path), "--dp", "8")
        row = {s["key"]: s for s in doc["from_config"]["settings"]}["[float8] enable_fsdp_float8_all_gather"]
        assert row["became"] == "" and row["note"].startswith(("no effect", "not with recipe_name")), row


# torchtitan's 405B preset at 9dec370 with PP as its December 2024 benchmark's Table 5 ran it (PP 8, local batch 32)
LEGACY_PP = (
    (CONFIGS / "torchtitan-llama3-405b-2412.toml")
    .read_text()
    .replace("pipeline_parallel_degree = 1", "pipeline_parallel_degree = 8{pp}")
    .replace("batch_size = 2", "batch_size = 32")
)


@pytest.mark.parametrize(
    ("pp", "layers", "micro", "virtual"),
    [
        # generate_split_points at 9dec370: 126 layers over 8 stages of 126 // 8 = 15, the six middle ones one more
        # (126 % 8 = 6), the last what is left: 15; the local batch in PP = 8 micro-batches
        ("", [15, 16, 16, 16, 16, 16, 16, 15], 4, 1),
        # a looped schedule: two stages a rank, 16 of 7, the 14 middle ones 8, the last 7; rank k builds stages k and
        # k + 8 (stage_ids_this_rank, "loop"), the table's rows per rank
        ('\npipeline_parallel_schedule = "Interleaved1F1B"', [7 + 8, *[8 + 8] * 6, 8 + 7], 4, 2),
        # the file's split points start each stage at the layer they name; 16 micro-batches of 2
        (
            "\npipeline_parallel_split_points = "
            '"layers.14,layers.30,layers.46,layers.62,layers.78,layers.94,layers.110"'
            "\npipeline_parallel_microbatches = 16",
            [14, 16, 16, 16, 16, 16, 16, 16],
            2,
            1,
        ),
        # "layers.0" leaves the first stage the embedding alone (_build_stage keeps no layer before it)
        (
            '\npipeline_parallel_split_points = ["layers.0", "layers.18", "layers.36", "layers.54", "layers.72", '
            '"layers.90", "layers.108"]',
            [0, 18, 18, 18, 18, 18, 18, 18],
            4,
            1,
        ),
    ],
)
def test_torchtitan_before_v01_splits_its_pipeline_as_it_did_then(
    tmp_path: Path, pp: str, layers: list[int], micro: int, virtual: int
) -> None:
    """Before v0.1, [experimental] held PP, its schedule, split points and micro-batch count (config_manager.py at
    9dec370): each stage starts at the layer its split point names, else generate_split_points splits the layers
    over PP x the schedule's stages per rank, and the local batch runs as pipeline_parallel_microbatches
    micro-batches, PP of them by default (pipeline_llama.py)."""
    path = tmp_path / "legacy.toml"
    path.write_text(LEGACY_PP.format(pp=pp))
    doc = report("estimate", "--from", str(path), "--dp", "8", "--topology", "grand-teton-h100-96gb")
    assert [s["layers"] for s in doc["layout"]["stages"]] == layers
    assert (doc["setup"]["micro_batch"], doc["layout"]["virtual_stages"]) == (micro, virtual)


@pytest.mark.parametrize(
    "pp",
    [
        "\npipeline_parallel_split_points = []\npipeline_parallel_microbatches = 8",
        '\npipeline_parallel_schedule = "ZBVZeroBubble"\npipeline_parallel_split_points = ["layers.10"]',
    ],
)
def test_torchtitan_before_v01_pipeline_keys_each_have_a_row(tmp_path: Path, pp: str) -> None:
    """Every [experimental] key a pre-v0.1 file holds has a row: empty split points fall back to
    generate_split_points (pipeline_llama.py: `split_points or ...`), and under a schedule whose stages are refused
    (here typed with --virtual-stages) the split points are not read, and say so."""
    path = tmp_path / "legacy.toml"
    path.write_text(LEGACY_PP.format(pp=pp))
    typed = ["--virtual-stages", "2"] if "ZBV" in pp else []
    doc = report("estimate", "--from", str(path), "--dp", "8", *typed)
    rows = {s["key"]: s["note"] for s in doc["from_config"]["settings"]}
    keys = [line.split(" = ")[0] for line in pp.strip().splitlines()]
    assert all(f"[experimental] {key}" in rows for key in keys), rows


@pytest.mark.parametrize(
    ("pp", "message"),
    [
        ('\npipeline_parallel_split_points = ["layers.40", "layers.80"]', "3 stages do not share out over PP 8"),
        ('\npipeline_parallel_split_points = ["norm"]', "must name layers as 'layers.N'"),
        ("\npipeline_parallel_microbatches = 5", "does not split into pipeline_parallel_microbatches 5"),
    ],
)
def test_torchtitan_before_v01_pipeline_keys_it_cannot_run_are_one_line(tmp_path: Path, pp: str, message: str) -> None:
    """Split points that do not share out over PP (stage_ids_this_rank asserts), that name no layer, or a local batch
    that does not split into the micro-batches: one line, exit 2."""
    path = tmp_path / "legacy.toml"
    path.write_text(LEGACY_PP.format(pp=pp))
    code, _, err = run("estimate", "--from", str(path), "--dp", "8")
    assert code == 2 and message in err and err.count("\n") == 1, err


def test_torchtitan_compiling_the_loss_alone_leaves_the_model_eager(tmp_path: Path) -> None:
    """torchtitan's [compile] components (default model and loss): without "model" the model's ops run eager."""
    base = '[model]\nname = "llama3"\nflavor = "8B"\n[compile]\nenable = true\n'
    compiled = []
    for components in ("", 'components = ["loss"]\n', 'components = ["model", "loss"]\n'):
        path = tmp_path / "c.toml"
        path.write_text(base + components)
        compiled.append(report("estimate", "--from", str(path), "--dp", "8")["setup"]["compile"])
    assert compiled == [True, False, True]


@pytest.mark.parametrize("name", ["torchtitan-llama3-8b.toml"])
def test_every_key_of_a_torchtitan_file_has_a_row(name: str) -> None:
    import tomllib

    doc = tomllib.loads((CONFIGS / name).read_text())
    rows = " | ".join(row["key"] for row in report("estimate", "--from", str(CONFIGS / name), "--dp", "8")[
        "from_config"]["settings"])  # fmt: skip
    for section in ("model", "parallelism", "training", "compile", "activation_checkpoint"):
        for key in doc.get(section, {}):
            assert f"[{section}] {key}" in rows or (section == "model" and key in ("name", "flavor")), key


ACCELERATE_FSDP2 = """\
distributed_type: FSDP
mixed_precision: bf16
num_machines: 1
num_processes: 8
fsdp_config:
  fsdp_version: 2
  fsdp_reshard_after_forward: {reshard}
"""


@pytest.mark.parametrize(("reshard", "zero"), [("true", 3), ("false", 2), ("FULL_SHARD", 3), ("SHARD_GRAD_OP", 2)])
def test_accelerates_reshard_after_forward_is_its_sharding(tmp_path: Path, reshard: str, zero: int) -> None:
    """Accelerate's FullyShardedDataParallelPlugin: fsdp_reshard_after_forward names the strategy (FSDP1) or, under
    FSDP2, says whether the parameters are resharded after the forward (FULL_SHARD) or kept for the backward
    (SHARD_GRAD_OP)."""
    path = tmp_path / "acc.yaml"
    path.write_text(ACCELERATE_FSDP2.format(reshard=reshard))
    doc = report("estimate", "--from", str(path), "--model", "llama-8b")
    assert doc["setup"]["zero_stage"] == zero


def test_accelerates_parallelism_config_is_the_layout(tmp_path: Path) -> None:
    """ParallelismConfig: dp_replicate x dp_shard x tp x cp processes; replicas over shard groups are HSDP."""
    path = tmp_path / "acc.yaml"
    base = ACCELERATE_FSDP2.format(reshard="true")
    sizes = "parallelism_config:\n  parallelism_config_dp_replicate_size: 2\n  parallelism_config_dp_shard_size: 4\n"
    path.write_text(base + sizes)
    doc = report("estimate", "--from", str(path), "--model", "llama-8b")
    assert doc["setup"]["dp"] == 8 and doc["communication"]["shard_group"] == 4
    path.write_text(base + sizes.replace("dp_shard_size: 4", "dp_shard_size: 2") + "  parallelism_config_tp_size: 2\n")
    doc = report("estimate", "--from", str(path), "--model", "llama-8b")
    assert (doc["layout"]["tp"], doc["layout"]["dp"]) == (2, 4) and doc["layout"]["sequence_parallel"]
    path.write_text(base + sizes.replace("dp_shard_size: 4", "dp_shard_size: 3"))
    code, _, err = run("estimate", "--from", str(path), "--model", "llama-8b")
    assert code == 2 and "not num_processes 8" in err and err.count("\n") == 1


@pytest.mark.parametrize(("kind", "section"), [("FSDP", "fsdp_config"), ("DEEPSPEED", "deepspeed_config")])
def test_an_accelerate_section_that_is_not_a_mapping_is_refused(tmp_path: Path, kind: str, section: str) -> None:
    """A hostile Accelerate config (fuzz seed 113: fsdp_config: 1e308) gets one line naming the key, exit 2."""
    path = tmp_path / "acc.yaml"
    path.write_text(f"distributed_type: {kind}\nnum_processes: 8\n{section}: 1.0e+308\n")
    code, _, err = run("estimate", "--from", str(path), "--model", "llama-8b")
    assert code == 2 and f"{section}: must be a mapping" in err and err.count("\n") == 1


def test_a_torchtitan_quantize_linear_that_is_not_a_table_is_refused(tmp_path: Path) -> None:
    """[quantize] linear = 1 (not a table of quantizations) gets one line naming the key, exit 2, not a traceback."""
    path = tmp_path / "job.toml"
    path.write_text('[model]\nname = "llama3"\nflavor = "8B"\n[quantize]\nlinear = 1\n')
    code, _, err = run("estimate", "--from", str(path), "--model", "llama-8b")
    assert code == 2 and "[quantize.linear]: must be a table" in err and err.count("\n") == 1


def _functional_test_script(tmp_path: Path, case: str, golden: str) -> tuple[Path, float]:
    """A Megatron-LM functional test's launch as a script (its MODEL_ARGS under torchrun at the CI recipe's world
    size) and the peak its golden file records on the last rank: tests/reference/memory-peaks/
    megatron-functional-peaks.csv."""
    import csv

    from conftest import REFERENCE

    with open(REFERENCE / "memory-peaks" / "megatron-functional-peaks.csv", encoding="utf-8") as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        row = next(r for r in rows if r["case"] == case and r["golden_file"] == golden)
    script = tmp_path / "run.sh"
    launch = f"torchrun --nnodes {row['nodes']} --nproc-per-node {row['gpus_per_node']} pretrain_gpt.py"
    script.write_text(f"{launch} {row['model_args']}\n")
    return script, float(row["mem_max_allocated_bytes_median"])


@pytest.mark.parametrize(
    ("case", "flag"),
    [("gpt/gpt3_mcore_te_tp1_pp4_vp1", "--attention-backend"), ("gpt/gpt3_mcore_tp1_pp4", "--transformer-impl")],
)
def test_a_megatron_scripts_unfused_attention_keeps_its_scores(tmp_path: Path, case: str, flag: str) -> None:
    """--attention-backend unfused turns Transformer Engine's flash and fused kernels off (language_module.py's
    NVTE_* switches), and --transformer-impl local builds Megatron-Core's own DotProductAttention
    (models/backends.py): both keep each layer's s x s scores. Megatron-LM's functional tests of 12 layers of 512 on
    PP4 x DP2, micro-batch 4 of 1,024 tokens, one with each (@d98e8a64dd, H100), record 4.16 and 2.75 GB on their
    last rank; read as flash attention, dpcost gave 38% and 23% less."""
    script, measured = _functional_test_script(tmp_path, case, "golden_values_dev_dgx_h100.json")
    got = report("estimate", "--from", str(script), "--topology", "dgx-h100")
    assert got["setup"]["flash_attention"] is False
    assert [s["became"] for s in got["from_config"]["settings"] if s["key"] == flag] == ["--no-flash-attention"]
    assert got["layout"]["stages"][-1]["memory_bytes"] == pytest.approx(measured, rel=0.05)


# DeepSeek-V2-Lite as Megatron-LM builds it: the model arguments of examples/post_training/modelopt/conf/
# deepseek-ai/DeepSeek-V2-Lite.sh (NVIDIA/Megatron-LM d98e8a64dd), with its config.json's vocabulary, 102,400
DEEPSEEK_V2_LITE = (
    "--disable-bias-linear --untie-embeddings-and-output-weights --position-embedding-type rope "
    "--normalization RMSNorm --swiglu --num-layers 27 --hidden-size 2048 --ffn-hidden-size 10944 "
    "--num-attention-heads 16 --kv-channels 16 --multi-latent-attention --kv-lora-rank 512 --v-head-dim 128 "
    "--qk-head-dim 128 --qk-layernorm --qk-pos-emb-head-dim 64 --num-experts 64 --moe-layer-freq '([0]+[1]*26)' "
    "--moe-ffn-hidden-size 1408 --moe-router-topk 6 --moe-shared-expert-intermediate-size 2816 --seq-length 1024 "
    "--max-position-embeddings 1024 --tokenizer-type HuggingFaceTokenizer --make-vocab-size-divisible-by 3200 "
    "--vocab-size 102400 --micro-batch-size 1 --bf16"
)


def test_a_megatron_scripts_latent_attention_and_moe_layers_build_deepseeks_model() -> None:
    """--multi-latent-attention with its ranks and head widths (MLASelfAttention; arguments.py defaults for those
    not given) and --moe-layer-freq's list (its first layer dense): DeepSeek-V2-Lite's Megatron arguments give the
    model its config.json describes, 15,706,484,224 parameters (15.7B published), 2.66B of them per token.
    Megatron's own holds 27 x 2,048 more: under --qk-layernorm without a query latent it fuses a hidden-wide norm
    into each layer's query projection (mla_qk_norm_config.py), which dpcost leaves out."""
    from dpcost.engine.params import count_params
    from dpcost.training_configs.megatron import read

    config = read(f"torchrun --nproc-per-node 8 pretrain_gpt.py {DEEPSEEK_V2_LITE}\n", "v2-lite.sh")
    spec = config.model_spec
    a = spec.architecture
    assert a.mla is not None and (a.mla.q_lora_rank, a.mla.kv_lora_rank, a.mla.qk_rope_head_dim) == (None, 512, 64)
    assert a.moe is not None and a.moe.first_dense_layers == 1 and a.moe.dense_layers == ()
    reference = load_model(str(Path(__file__).parent / "reference" / "hf-configs" / "deepseek-v2-lite.json"))
    assert count_params(spec).total == count_params(reference).total == 15_706_484_224


# The model arguments of Megatron-LM's own scripts for three hybrid models (examples/post_training/modelopt/conf/
# nvidia/*.sh at d98e8a64dd: NVIDIA-Nemotron-3-Nano-30B-A3B-BF16, NVIDIA-Nemotron-3-Super-120B-A12B-BF16,
# Nemotron-H-8B-Base-8K), the ones that shape the model; the vocabulary, which they take from the tokenizer, given.
HYBRID_SCRIPTS = {
    "nemotron-3-nano-30b-a3b": (
        "--num-experts 128 --moe-router-topk 6 --moe-shared-expert-intermediate-size 3712 --mamba-num-heads 64 "
        "--mamba-head-dim 64 --hybrid-layer-pattern MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME "
        "--untie-embeddings-and-output-weights --disable-bias-linear --position-embedding-type none --squared-relu "
        "--hidden-size 2688 --num-attention-heads 32 --group-query-attention --num-query-groups 2 "
        "--ffn-hidden-size 1856 --kv-channels 128 --normalization RMSNorm"
    ),
    "nemotron-3-super-120b-a12b": (
        "--num-experts 512 --moe-router-topk 22 --moe-shared-expert-intermediate-size 5376 --moe-latent-size 1024 "
        "--is-hybrid-model --mamba-num-heads 128 --mamba-head-dim 64 --hybrid-layer-pattern "
        "MEMEMEM*EMEMEMEM*EMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEM*EMEMEMEME "
        "--untie-embeddings-and-output-weights --disable-bias-linear --position-embedding-type none --squared-relu "
        "--hidden-size 4096 --num-attention-heads 32 --group-query-attention --num-query-groups 2 "
        "--ffn-hidden-size 2688 --kv-channels 128 --normalization RMSNorm"
    ),
    "nemotron-h-8b-base-8k": (
        "--disable-bias-linear --untie-embeddings-and-output-weights --use-rotary-position-embeddings "
        "--normalization RMSNorm --squared-relu --hidden-size 4096 --ffn-hidden-size 21504 --num-attention-heads 32 "
        "--group-query-attention --num-query-groups 8 "
        "--hybrid-layer-pattern M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M- --mamba-head-dim 64 "
        "--mamba-num-heads 128 --mamba-num-groups 8 --mamba-state-dim 128 --make-vocab-size-divisible-by 1"
    ),
}


@pytest.mark.parametrize(
    "extra",
    ["--quick-geglu", "--attention-output-gate", "--experimental-attention-variant gated_delta_net",
     "--linear-attention-freq 4", "--heterogeneous-layers-config-path nemotron.json", "--softmax-type learnable"],
)  # fmt: skip
def test_flags_that_reshape_megatrons_layers_leave_the_model_to_model(extra: str) -> None:
    """Flags that change what Megatron builds in a layer beyond the arguments dpcost reads (transformer_config.py
    at d98e8a64dd: gated_linear_unit with QuickGELU, attention_output_gate, experimental_attention_variant,
    linear_attention_freq, the heterogeneous layers' config, a softmax with sinks) refuse the model by name: the
    plain GPT dpcost would build is not the one that runs. --softmax-type vanilla, the default, changes nothing."""
    from dpcost.training_configs.megatron import read

    base = "torchrun pretrain_gpt.py --num-layers 2 --hidden-size 64 --num-attention-heads 4 --vocab-size 100 "
    refused = read(f"{base}--seq-length 128 {extra}\n", "x.sh")
    assert refused.model_spec is None and refused.refusals["model"][0] == extra.split()[0]
    assert read(f"{base}--seq-length 128 --softmax-type vanilla\n", "v.sh").model_spec is not None


def test_megatron_flags_found_unread_by_the_audit_are_read_or_named() -> None:
    """An audit of Megatron-LM d98e8a64dd's arguments against the reader: --encoder-seq-length is the sequence length
    without --seq-length (arguments.py), --moe-layer-recompute selective recomputation with "moe" added
    (transformer_config.py), --overlap-moe-expert-parallel-comm the EP overlap, --use-sharp NCCL_COLLNET_ENABLE for
    the DP group (parallel_state.py), --use-tp-pp-dp-mapping the tp-cp-ep-pp-dp order (common_config.py),
    --optimizer-cpu-offload the optimizer on the CPU (with --use-precision-aware-optimizer, as arguments.py asserts),
    --use-torch-fsdp2 not Megatron's schedule; what the reader does not price says so."""
    from dpcost.training_configs import NOT_PRICED
    from dpcost.training_configs.megatron import read

    base = "torchrun pretrain_gpt.py --num-layers 2 --hidden-size 64 --num-attention-heads 4 --vocab-size 100 "
    moe = base + "--num-experts 4 --moe-token-dispatcher-type alltoall --seq-length 128 "
    config = read(base + "--encoder-seq-length 256\n", "e.sh")
    assert config.options["seq_len"] == "256"
    config = read(moe + "--moe-layer-recompute --overlap-moe-expert-parallel-comm --use-sharp "
                  "--use-tp-pp-dp-mapping --use-distributed-optimizer --use-precision-aware-optimizer "
                  "--optimizer-cpu-offload --no-fp8-wgrad\n", "m.sh")  # fmt: skip
    read_as = {k: config.options[k] for k in ("recompute", "recompute_modules", "ep_comm_overlap", "collnet", "order")}
    assert read_as == {"recompute": "selective", "recompute_modules": "core_attn,moe", "ep_comm_overlap": "true",
                       "collnet": "on", "order": "tp-cp-ep-pp-dp"}  # fmt: skip
    assert config.options["offload"] == "optimizer"
    notes = {s.key: s.note for s in config.settings}
    assert notes["--no-fp8-wgrad"].startswith("not priced") and notes["--use-precision-aware-optimizer"] != NOT_PRICED
    assert read(moe + "--use-torch-fsdp2\n", "f.sh").refusals["framework"][0] == "--use-torch-fsdp2"
    for extra, flag in (("--encoder-seq-length 256", "--encoder-seq-length"),
                        ("--recompute-granularity full --moe-layer-recompute", "--moe-layer-recompute"),
                        ("--optimizer-cpu-offload", "--optimizer-cpu-offload")):  # fmt: skip
        with pytest.raises(InputError, match=flag):
            read(moe + extra + "\n", "bad.sh")


def test_learned_positions_without_a_length_refuse_the_model_by_flag() -> None:
    """Megatron's default learned absolute positions hold --max-position-embeddings rows (--seq-length where it is not
    given): without either the model is refused by the flag's name, not by an internal field's."""
    from dpcost.training_configs.megatron import read

    config = read("torchrun pretrain_gpt.py --num-layers 2 --hidden-size 64 --num-attention-heads 4 --vocab-size 100\n",
                  "p.sh")  # fmt: skip
    assert config.model_spec is None and config.refusals["model"][0] == "--max-position-embeddings"


@pytest.mark.parametrize("model", sorted(HYBRID_SCRIPTS))
def test_a_megatron_hybrid_pattern_builds_the_model_its_config_json_describes(model: str) -> None:
    """--hybrid-layer-pattern, one layer a symbol (hybrid_layer_allocation.py: M Mamba-2, * attention, - MLP, E MoE),
    with the Mamba mixer's --mamba-* shape and --moe-latent-size's LatentMoE: Megatron-LM's own arguments for
    Nemotron 3 Nano and Super and Nemotron-H 8B give the parameters the models' config.json files give, counted by
    another reader from another file (hf_hybrid.py). The pattern sets the layer count (arguments.py ignores
    --num-layers beside it)."""
    from dpcost.engine.params import count_params
    from dpcost.training_configs.megatron import read

    script = f"torchrun pretrain_mamba.py {HYBRID_SCRIPTS[model]} --num-layers 1 --vocab-size 131072 --bf16\n"
    config = read(script, f"{model}.sh")
    assert config.model_spec is not None, config.refusals
    ours, theirs = count_params(config.model_spec), count_params(load_model(str(HF_CONFIGS / f"{model}.json")))
    assert (ours.total, ours.active) == (theirs.total, theirs.active)
    pattern = HYBRID_SCRIPTS[model].split("--hybrid-layer-pattern ")[1].split()[0]
    a = config.model_spec.architecture
    assert a.layers == len(pattern) and a.mixers.count("mamba") == pattern.count("M")


def test_a_megatron_hybrid_pattern_reads_its_stages_and_refuses_what_it_does_not_build(tmp_path: Path) -> None:
    """A pattern's | are its pipeline stages, the embedding on the first and the loss on the last (PP x V of them:
    arguments.py derives the virtual stages); Megatron refuses another layout flag beside a pattern, and both
    pattern flags at once. MTP segments (/), the layer kinds dpcost does not build (G, D, +) and a hybrid model
    given by ratios leave the model to --model, with the flag named."""
    from dpcost.training_configs.megatron import read

    base = ("torchrun pretrain_mamba.py --hidden-size 512 --num-attention-heads 8 --ffn-hidden-size 1024 "
            "--vocab-size 1024 --pipeline-model-parallel-size 2 --squared-relu --position-embedding-type none "
            )  # fmt: skip
    config = read(base + "--hybrid-layer-pattern 'M-M*|M-M-|M*M-|M-M-'\n", "p.sh")
    assert config.options["pipeline_layout"] == "Et*4|t*4|t*4|t*4L" and config.options["virtual_stages"] == "2"
    assert config.model_spec is not None and config.model_spec.architecture.layers == 16
    for extra, flag in (("--hybrid-layer-pattern M*M- --num-virtual-stages-per-pipeline-rank 2",
                         "--num-virtual-stages-per-pipeline-rank"),
                        ("--hybrid-layer-pattern M*M- --hybrid-override-pattern M*M-", "--hybrid-override-pattern"),
                        ("--hybrid-layer-pattern 'M*|M-' --decoder-first-pipeline-num-layers 1",
                         "--decoder-first-pipeline-num-layers")):  # fmt: skip
        with pytest.raises(InputError, match=flag):
            read(base + extra + "\n", "bad.sh")
    for extra, flag in (
        ("--hybrid-layer-pattern M*M-/M*", "--hybrid-layer-pattern"),
        ("--hybrid-layer-pattern MGM-", "--hybrid-layer-pattern"),
        ("--num-layers 4 --is-hybrid-model --hybrid-attention-ratio 0.25", "--is-hybrid-model"),
    ):
        refused = read(base + extra + "\n", "r.sh")
        assert refused.model_spec is None and refused.refusals["model"][0] == flag, extra


@pytest.mark.parametrize(
    ("given", "moe_layers"),
    [
        ("2", (0, 2, 4, 6)),  # a whole N: layers i with i % N == 0 (gpt_layer_specs.py)
        ("1", tuple(range(8))),
        ("'([1]*3+[0]*1)*2'", (0, 1, 2, 4, 5, 6)),  # moe_freq_type's docstring example, 8 layers long
        ("[0]*2+[1]*6", tuple(range(2, 8))),
    ],
)
def test_a_megatron_scripts_moe_layer_frequency_is_megatrons(given: str, moe_layers: tuple[int, ...]) -> None:
    from dpcost.training_configs.megatron import read

    script = (
        "torchrun pretrain_gpt.py --num-layers 8 --hidden-size 256 --num-attention-heads 4 --vocab-size 1000 "
        f"--seq-length 512 --num-experts 4 --moe-layer-freq {given}\n"
    )
    a = read(script, "m.sh").model_spec.architecture
    assert tuple(i for i in range(8) if a.moe_layer(i)) == moe_layers


@pytest.mark.parametrize(
    "given",
    [
        "'[1]*7'",
        "'__import__(\"os\")'",
        "0",
        "'[1,2]*4'",
        "'[1]*100000*100000'",
        "'[1, 0]*4'",
        "'" + "[0]+" * 5000 + "[1]'",  # deeper than the parser's recursion: refused, not a traceback
        "'" + "(" * 300 + "[1]" + ")" * 300 + "'",
    ],
)
def test_a_megatron_scripts_moe_layer_frequency_that_megatron_refuses_is_refused(given: str) -> None:
    """A pattern of the wrong length, anything but a list expression of 0s and 1s (Megatron's _eval_pattern allows
    only digits, commas, brackets, + and *, not even spaces; it is never evaluated here), or N of 0: one line
    naming the flag."""
    from dpcost.errors import InputError
    from dpcost.training_configs.megatron import read

    script = (
        "torchrun pretrain_gpt.py --num-layers 8 --hidden-size 256 --num-attention-heads 4 --vocab-size 1000 "
        f"--seq-length 512 --num-experts 4 --moe-layer-freq {given}\n"
    )
    config = read(script, "m.sh")
    assert config.model_spec is None
    key, why = config.refusals["model"]
    assert key == "--moe-layer-freq" and "a whole number N above 0 or a list of 8 0s and 1s" in why
    with pytest.raises(InputError):
        from dpcost.training_configs import apply

        apply(config, {}, None, None)


SMALL_GPT = "--num-layers 4 --hidden-size 512 --num-attention-heads 8 --vocab-size 1000 --seq-length 1024"


def test_a_megatron_script_in_fp32_runs_unfused_attention() -> None:
    """Without --bf16 or --fp16 Transformer Engine has no flash or fused kernel to run (they take 16-bit inputs:
    attention/dot_product_attention/utils.py), so the scores are kept."""
    from dpcost.training_configs.megatron import read

    assert read(f"torchrun pretrain_gpt.py {SMALL_GPT}\n", "a.sh").options["flash_attention"] == "false"
    assert "flash_attention" not in read(f"torchrun pretrain_gpt.py {SMALL_GPT} --bf16\n", "a.sh").options


@pytest.mark.parametrize("unfused", ["--transformer-impl local", "--attention-backend unfused"])
def test_unfused_attention_under_context_parallelism_is_refused_as_megatron_does(unfused: str) -> None:
    """Megatron-Core's DotProductAttention asserts CP 1 and Transformer Engine drops its unfused backend under
    context parallelism: no such run starts."""
    from dpcost.errors import InputError
    from dpcost.training_configs.megatron import read

    with pytest.raises(InputError, match="context parallelism"):
        read(f"torchrun pretrain_gpt.py {SMALL_GPT} --bf16 --context-parallel-size 2 {unfused}\n", "a.sh")


def test_a_megatron_moe_script_without_a_dispatcher_runs_megatrons_allgather() -> None:
    """moe_token_dispatcher_type defaults to allgather (transformer_config.py); a dense model has no dispatcher."""
    from dpcost.training_configs.megatron import read

    moe = f"torchrun pretrain_gpt.py {SMALL_GPT} --bf16 --num-experts 4 --expert-model-parallel-size 2"
    assert read(f"{moe}\n", "m.sh").options["ep_dispatcher"] == "allgather"
    assert read(f"{moe} --moe-token-dispatcher-type alltoall\n", "m.sh").options["ep_dispatcher"] == "alltoall"
    assert "ep_dispatcher" not in read(f"torchrun pretrain_gpt.py {SMALL_GPT} --bf16\n", "m.sh").options


def test_a_megatron_script_gives_its_distributed_optimizer_instances() -> None:
    """--num-distributed-optimizer-instances (distributed_data_parallel_config.py): the layout's instances."""
    from dpcost.training_configs.megatron import read

    script = f"torchrun pretrain_gpt.py {SMALL_GPT} --bf16 --use-distributed-optimizer"
    assert read(f"{script} --num-distributed-optimizer-instances 2\n", "m.sh").options["dist_opt_instances"] == "2"
    assert "dist_opt_instances" not in read(f"{script}\n", "m.sh").options


def test_a_megatron_moe_script_runs_grouped_gemms_only_when_told() -> None:
    """moe_grouped_gemm defaults to False (arguments.py): Megatron-Core builds SequentialMLP, one GEMM per expert,
    and Transformer Engine's grouped-GEMM workspaces are never allocated; --moe-grouped-gemm builds TEGroupedMLP."""
    from dpcost.training_configs.megatron import read

    moe = f"torchrun pretrain_gpt.py {SMALL_GPT} --bf16 --num-experts 4 --expert-model-parallel-size 2"
    assert read(f"{moe}\n", "m.sh").options["grouped_gemm"] == "false"
    assert read(f"{moe} --moe-grouped-gemm\n", "m.sh").options["grouped_gemm"] == "true"
    assert "grouped_gemm" not in read(f"torchrun pretrain_gpt.py {SMALL_GPT} --bf16\n", "m.sh").options


def test_a_megatron_script_runs_its_output_layer_in_mxfp8_when_told() -> None:
    """TransformerConfig.fp8_output_proj (Megatron-Core #4825), a flag of its own through ArgumentGroupFactory:
    --fp8-output-proj turns it on; absent, the output layer stays a 16-bit ColumnParallelLinear."""
    from dpcost.training_configs.megatron import read

    base = f"torchrun pretrain_gpt.py {SMALL_GPT} --bf16 --fp8-format e4m3 --fp8-recipe mxfp8"
    assert read(f"{base} --fp8-output-proj\n", "m.sh").options["fp8_output_proj"] == "true"
    assert "fp8_output_proj" not in read(f"{base}\n", "m.sh").options


def test_mxfp8_weights_are_gathered_in_bf16_by_the_distributed_optimizer(tmp_path: Path) -> None:
    """Megatron-Core since 0.13 (d559555a54; param_and_grad_buffer.py at d98e8a64dd): with MXFP8 weights and
    --reuse-grad-buf-for-mxfp8-param-ag the distributed optimizer's parameter buffer is a bf16 view of the gradient
    buffer, so --fp8-param-gather under --fp8-recipe mxfp8 gathers 2 bytes a weight, as without the flag, and keeps
    the weights in MXFP8; without the reuse the run fails (TE's replace_raw_data has no MXFP8 path), and dpcost
    refuses it. Under the default recipe (delayed) and in Megatron-FSDP it gathers fp8; fp8 weights without
    --fp8-format Megatron refuses."""
    from dpcost.training_configs.megatron import read

    layout = "--tensor-model-parallel-size 2 --micro-batch-size 1 --global-batch-size 64 --use-distributed-optimizer"
    base = f"torchrun --nproc_per_node 8 pretrain_gpt.py {SMALL_GPT} {layout} --bf16 --fp8-format hybrid"
    mxfp8 = "--fp8-recipe mxfp8 --fp8-param-gather --reuse-grad-buf-for-mxfp8-param-ag"
    read_mxfp8 = read(f"{base} {mxfp8}\n", "m.sh").options
    assert read_mxfp8["gather_dtype"] == "fp8" and read_mxfp8["fp8_recipe"] == "mxfp8"
    for refused, says in (
        (f"{base} --fp8-recipe mxfp8 --fp8-param-gather", "needs --reuse-grad-buf-for-mxfp8-param-ag"),
        (f"{base.removesuffix(' --fp8-format hybrid')} --fp8-param-gather", "needs --fp8-format"),
    ):
        script = tmp_path / "refused.sh"
        script.write_text(f"{refused}\n")
        code, out, err = run("estimate", "--from", str(script), "--topology", "dgx-b200")
        assert code == 2 and out == "" and err.count("\n") == 1 and says in err
    assert read(f"{base} --fp8-param-gather\n", "m.sh").options["gather_dtype"] == "fp8"
    assert read(f"{base} --fp8-recipe tensorwise --fp8-param-gather\n", "m.sh").options["gather_dtype"] == "fp8"
    fsdp = f"{base} --fp8-recipe mxfp8 --fp8-param-gather --use-megatron-fsdp"
    assert read(f"{fsdp}\n", "m.sh").options["gather_dtype"] == "fp8"

    def dp_gathered_bytes(extra: str) -> float:
        script = tmp_path / "m.sh"
        script.write_text(f"{base} {extra}\n")
        got = report("estimate", "--from", str(script), "--topology", "dgx-b200")
        return sum(c["bytes"] for c in got["communication"]["collectives"] if c["op"] == "all_gather")

    bf16 = dp_gathered_bytes("--fp8-recipe mxfp8")
    assert bf16 > 0
    assert dp_gathered_bytes(mxfp8) == bf16
    assert dp_gathered_bytes("--fp8-param-gather") < 0.75 * bf16  # the layers' linear weights a byte each


def test_a_megatron_script_gathers_nvfp4_weights_under_fp4_param_gather(tmp_path: Path) -> None:
    """--fp4-param-gather ("keep the compute param in fp4 ... and perform the param all-gather in fp4",
    arguments.py) is --gather-dtype nvfp4; Megatron refuses it without --fp4-format, and Megatron-FSDP has no NVFP4
    parameter path (mcore_fsdp_adapter.py: "MFSDP v2 does not currently support FP8 or FP4")."""
    from dpcost.training_configs.megatron import read

    base = f"torchrun --nproc_per_node 8 pretrain_gpt.py {SMALL_GPT} --bf16 --use-distributed-optimizer"
    assert read(f"{base} --fp4-format e2m1 --fp4-param-gather\n", "m.sh").options["gather_dtype"] == "nvfp4"
    for refused, says in (
        (f"{base} --fp4-param-gather", "--fp4-format"),
        (f"{base} --fp4-format e2m1 --fp4-param-gather --use-megatron-fsdp", "no NVFP4 parameter path"),
    ):
        script = tmp_path / "m.sh"
        script.write_text(f"{refused}\n")
        code, out, err = run("estimate", "--from", str(script), "--model", "llama-8b", "--topology", "dgx-b200")
        assert code == 2 and out == ""
        assert err.count("\n") == 1 and "--fp4-param-gather" in err and says in err


def test_a_megatron_scripts_cp_comm_type_chooses_the_exchange(tmp_path: Path) -> None:
    """--cp-comm-type (transformer_config.py: p2p, all_gather, a2a, a2a+p2p) is --cp-impl; the hierarchical
    a2a+p2p is refused, in one line that names the flag, and so is a type per layer (arguments.py: nargs="+")."""
    from dpcost.training_configs.megatron import read

    base = f"torchrun --nproc_per_node 8 pretrain_gpt.py {SMALL_GPT} --bf16 --context-parallel-size 2"
    for impl in ("p2p", "all_gather", "a2a"):
        assert read(f"{base} --cp-comm-type {impl}\n", "m.sh").options["cp_impl"] == impl
    for refused, says in (("a2a+p2p", "a2a+p2p"), ("a2a p2p", "one type per layer")):
        script = tmp_path / "m.sh"
        script.write_text(f"{base} --cp-comm-type {refused}\n")
        code, out, err = run("estimate", "--from", str(script))
        assert code == 2 and out == ""
        assert err.count("\n") == 1 and "--cp-comm-type" in err and says in err


def test_an_unknown_fp8_recipe_is_refused_in_one_line(tmp_path: Path) -> None:
    """TransformerConfig.fp8_recipe takes delayed, tensorwise, mxfp8, blockwise or custom."""
    script = tmp_path / "m.sh"
    script.write_text(f"torchrun pretrain_gpt.py {SMALL_GPT} --bf16 --fp8-format hybrid --fp8-recipe nvfp8\n")
    code, out, err = run("estimate", "--from", str(script), "--model", "llama-8b", "--dp", "8")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "--fp8-recipe" in err and "mxfp8" in err and "'nvfp8'" in err


def test_selective_recomputation_keeps_the_scores_unless_it_reruns_core_attention() -> None:
    """Megatron checkpoints core attention only with "core_attn" among --recompute-modules (attention.py
    checkpoint_core_attention): recomputing the MLP alone leaves unfused attention's scores stored, which adding it
    drops."""
    plan = ["--model", "gpt3-175b", "--tp", "8", "--pp", "8", "--dp", "1", "--no-flash-attention", "--seq-len", "2048"]
    plan += ["--recompute", "selective", "--global-batch", "64"]
    mlp = report("estimate", *plan, "--recompute-modules", "mlp")["layout"]["stages"][0]["memory_bytes"]
    core = report("estimate", *plan, "--recompute-modules", "core_attn,mlp")["layout"]["stages"][0]["memory_bytes"]
    # GPT-3's 96 heads over TP 8 keep 5 bytes a score (dropout 0.1; Korthikanti et al. Table 2): 12 layers a
    # stage, 2,048^2 scores each, for at least the 8 micro-batches the first of 8 stages holds in flight under 1F1B
    per_micro_batch = 12 * 5 * 96 / 8 * 2048**2
    assert 8 * per_micro_batch <= mlp - core < 9 * per_micro_batch


def test_megatrons_block_recomputation_is_read_and_priced_layer_by_layer(tmp_path: Path) -> None:
    """Megatron-Bridge's Llama 3 8B H100 FP8 preset recomputes the first 5 of 32 layers fully, by the block method
    (set_recompute_overrides: --recompute-granularity full --recompute-method block --recompute-num-layers 5;
    megatron/core/recompute.py @d98e8a64dd): read as --recompute-block 5, the step spends 5 / 32 of full
    recomputation's extra time, and 27 layers keep all they save. Under Megatron-FSDP (ZeRO-3) the layout engine
    costs it."""
    base = "torchrun --nproc_per_node 8 pretrain_gpt.py --bf16 --use-megatron-fsdp --data-parallel-sharding-strategy "
    base += "optim_grads_params --use-distributed-optimizer --micro-batch-size 1 --global-batch-size 64 "
    base += "--seq-length 8192"
    steps = {}
    for name, recompute in (
        ("none", ""),
        ("full", " --recompute-granularity full --recompute-method uniform --recompute-num-layers 1"),
        ("block", " --recompute-granularity full --recompute-method block --recompute-num-layers 5"),
    ):
        script = tmp_path / f"{name}.sh"
        script.write_text(base + recompute + "\n")
        r = report("estimate", "--from", str(script), "--model", "llama-8b")
        steps[name] = r["time"]["step_seconds"]
        if name == "block":
            assert r["setup"]["recompute_block"] == 5 and r["setup"]["recompute"] == "full"
    assert steps["block"] - steps["none"] == pytest.approx((steps["full"] - steps["none"]) * 5 / 32, rel=0.02)


@pytest.mark.parametrize(
    ("flags", "recompute"),
    [
        ("--checkpoint-activations", "full"),
        ("--checkpoint-activations --checkpoint-num-layers 2", "full"),
        ("--checkpoint-activations --recompute-granularity selective", "selective"),
    ],
)
def test_megatrons_checkpoint_activations_is_full_recomputation(tmp_path: Path, flags: str, recompute: str) -> None:
    """--checkpoint-activations, Megatron-LM's full recomputation before its 2022 rename and Megatron-DeepSpeed's
    still (ParallelTransformer._checkpointed_forward: groups of --checkpoint-num-layers layers), gives the plan
    --recompute full gives; beside --recompute-granularity it is not read. It had been listed as not priced, and
    the plan costed with nothing recomputed."""
    script = tmp_path / "old.sh"
    script.write_text(
        (CONFIGS / "megatron-gpt-345m.sh").read_text().replace("--micro-batch-size", f"{flags} --micro-batch-size")
    )
    read = report("estimate", "--from", str(script), "--dp", "1")
    typed = report("estimate", "--from", str(CONFIGS / "megatron-gpt-345m.sh"), "--dp", "1", "--recompute", recompute)
    assert read["setup"]["recompute"] == recompute
    assert read["summary"]["memory_bytes"] == typed["summary"]["memory_bytes"]
    assert read["time"]["step_seconds"] == typed["time"]["step_seconds"]
    rows = {s["key"] for s in read["from_config"]["settings"]}
    assert {"--checkpoint-activations", *(["--checkpoint-num-layers"] if "num-layers" in flags else [])} <= rows


@pytest.mark.parametrize(
    ("stage", "said"), [("1", "(--zero-stage 1)"), ("0", "at stage 0 with --bf16, DeepSpeed's BF16_Optimizer")]
)
def test_a_megatron_deepspeed_script_asks_for_the_zero_stage_its_engine_runs(
    tmp_path: Path, stage: str, said: str
) -> None:
    """Megatron-DeepSpeed's --deepspeed hands the model to DeepSpeed's engine, whose ZeRO stage its
    --deepspeed_config JSON sets: it had been costed as Megatron's DDP (the flags listed as not priced); it is
    refused in one line unless --zero is typed, which then runs as the rest of the script says. At stage 0 with
    bf16 the engine runs BF16_Optimizer, which shards the optimizer states as ZeRO-1 (engine.py
    _do_optimizer_sanity_check at v0.16.0; BLOOM's tr11 script: "bf16 must use z0! it implements its own zero
    stage 1 equivalent"), and the line says so."""
    script = tmp_path / "mds.sh"
    flags = f"--deepspeed --deepspeed_config ds.json --zero-stage {stage} --micro-batch-size"
    text = (CONFIGS / "megatron-gpt-345m.sh").read_text().replace("--micro-batch-size", flags)
    script.write_text(text.replace("--fp16", "--bf16") if stage == "0" else text)
    code, _, err = run("estimate", "--from", str(script), "--dp", "8")
    assert code == 2 and "--deepspeed: Megatron-DeepSpeed" in err and said in err and err.count("\n") == 1
    doc = report("estimate", "--from", str(script), "--dp", "8", "--zero", "1")
    assert doc["setup"]["zero_stage"] == 1
    rows = {s["key"]: s["note"] for s in doc["from_config"]["settings"]}
    assert rows["--zero-stage"] == rows["--deepspeed_config"] == "DeepSpeed's engine: see --deepspeed"


SBATCH_LAUNCH = (
    "ARGS=(\n    --num-layers 4\n    --hidden-size 512\n    --tensor-model-parallel-size 2\n    --bf16\n)\n"
    'TRAINING_CMD="python pretrain_gpt.py ${ARGS[@]}"\n'
)


def test_a_megatron_launch_in_an_sbatch_here_document_is_read(tmp_path: Path) -> None:
    """Megatron-LM's examples/megatron_fsdp/sbatch_mfsdp_deepseek_v3.sh builds its arguments in an array, then
    submits `sbatch <<EOF`, whose body is the batch script: its `srun ... bash -x -c "${TRAINING_CMD}"` runs them.
    Read as srun's flags it had been costed as fp32 DDP without overlap, then refused; it is read as bash runs it.
    A launch kept in a variable no command runs is still refused, in one line that says why."""
    script = tmp_path / "sbatch.sh"
    script.write_text(SBATCH_LAUNCH + 'sbatch <<EOF\nsrun --container-image=img bash -x -c "${TRAINING_CMD}"\nEOF\n')
    doc = report("estimate", "--from", str(script), "--model", "llama-8b", "--dp", "8")
    assert doc["layout"]["tp"] == 2
    assert "--tensor-model-parallel-size" in {s["key"] for s in doc["from_config"]["settings"]}
    script.write_text(SBATCH_LAUNCH + "sbatch job.slurm\n")
    code, out, err = run("estimate", "--from", str(script), "--model", "llama-8b", "--dp", "8")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "no command the script runs takes Megatron-LM's arguments" in err


def test_bigscience_tr11_is_read_as_its_job_ran() -> None:
    """BLOOM's own job script (examples/training-configs/bigscience-tr11-176b-ml.slurm, 48 nodes): Megatron-DeepSpeed
    launched by `srun ... bash -c "$LAUNCHER ... $CMD"`, its DeepSpeed config written by a here-document. Read: TP 4
    x PP 12 over the 48 x 8 GPUs its #SBATCH --nodes gives (DP 8); ZeRO stage 0 with bf16 in that JSON, DeepSpeed's
    BF16_Optimizer (ZeRO-1's sharding; its fp32 gradients cast to bf16 for the all-reduce, engine.py
    communication_data_type at v0.7.0, BLOOM's time: bf16 at stage 0); attention unfused (no --use-flash-attn);
    and the model its arguments build: ALiBi, a LayerNorm on the embeddings, the vocabulary padded to 250,880,
    176,247,271,424 parameters (the model card's count). The data-preparation commands' and srun's own flags
    are not Megatron's, and have no row."""
    path = CONFIGS / "bigscience-tr11-176b-ml.slurm"
    doc = report("estimate", "--from", str(path), "--topology", "dgx-a100")
    setup, layout = doc["setup"], doc["layout"]
    assert (layout["tp"], layout["pp"], layout["dp"]) == (4, 12, 8)
    assert setup["zero_stage"] == 1 and setup["grad_dtype"] == "bf16" and setup["recompute"] == "full"
    assert "--grad-accum-dtype fp32" in {s["became"] for s in doc["from_config"]["settings"]}  # BF16_Optimizer's buffer
    assert doc["communication"]["primitives"] == "AllReduce + AllGather"
    assert setup["flash_attention"] is False and layout["pp_send_comm"] == "pair"  # DeepSpeed's lone dist.send
    assert doc["model"]["params_total"] == 176_247_271_424
    keys = {s["key"] for s in doc["from_config"]["settings"]}
    assert not keys & {"--split", "--dataset-ratios-path", "--jobid", "--wait", "--kill-on-bad-exit"}
    from dpcost.training_configs.megatron import read

    spec = read(path.read_text(), str(path)).model_spec
    assert spec.architecture.alibi and spec.architecture.embedding_norm and spec.architecture.vocab == 250_880


@pytest.mark.parametrize(
    ("json_text", "zero", "grads", "all_reduce"),
    [
        ('{"zero_optimization": {"stage": 0}, "bf16": {"enabled": true}}', 1, "bf16", True),  # BF16_Optimizer
        ('{"zero_optimization": {"stage": 0}, "fp16": {"enabled": true}}', 0, "fp16", False),  # FP16_Optimizer
        ('{"zero_optimization": {"stage": 1}, "bf16": {"enabled": true}}', 1, "bf16", True),  # ZeRO-1
        ('{"fp16": {"enabled": true}}', 0, "fp16", False),  # stage 0 by default
    ],
)
def test_a_megatron_deepspeed_scripts_written_config_sets_what_the_engine_runs(
    tmp_path: Path, json_text: str, zero: int, grads: str, all_reduce: bool
) -> None:
    """The JSON a Megatron-DeepSpeed script writes for --deepspeed_config chooses DeepSpeed's optimizer (engine.py
    get_data_types and _do_optimizer_sanity_check at v0.16.0): stage 0 with bf16 accumulates fp32 gradients under
    BF16_Optimizer, which shards the fp32 weights and optimizer states as ZeRO-1 and all-reduces its gradients cast
    to bf16 (communication_data_type); stage 0 with fp16 runs
    FP16_Optimizer on fp16 gradients, nothing sharded; from stage 1 the gradients are the model's dtype. Both
    sharding ones all-reduce the gradients after the backward (pipe/engine.py _exec_reduce_grads)."""
    script = tmp_path / "mds.sh"
    flags = "--deepspeed --deepspeed_config ds.json --zero-stage 0 --micro-batch-size"
    body = (CONFIGS / "megatron-gpt-345m.sh").read_text().replace("--micro-batch-size", flags)
    precision = "--bf16" if "bf16" in json_text else "--fp16"
    script.write_text(f"cat <<EOT > ds.json\n{json_text}\nEOT\n" + body.replace("--fp16", precision))
    doc = report("estimate", "--from", str(script), "--dp", "8")
    assert doc["setup"]["zero_stage"] == zero and doc["setup"]["grad_dtype"] == grads
    assert doc["communication"]["primitives"] == ("AllReduce + AllGather" if all_reduce else "AllReduce")
    rows = {s["key"]: s["note"] for s in doc["from_config"]["settings"]}
    assert rows["--zero-stage"] == "Megatron-DeepSpeed's copy: the engine runs the JSON's"


def test_a_megatron_deepspeed_config_at_zero_2_is_refused_as_the_pipeline_engine_refuses_it(tmp_path: Path) -> None:
    script = tmp_path / "mds.sh"
    flags = "--deepspeed --deepspeed_config ds.json --micro-batch-size"
    body = (CONFIGS / "megatron-gpt-345m.sh").read_text().replace("--micro-batch-size", flags)
    script.write_text('cat <<EOT > ds.json\n{"zero_optimization": {"stage": 2}}\nEOT\n' + body)
    code, _, err = run("estimate", "--from", str(script), "--dp", "8")
    assert code == 2 and err.count("\n") == 1 and "refuses ZeRO-2 and ZeRO-3" in err
    assert report("estimate", "--from", str(script), "--dp", "8", "--zero", "1")["setup"]["zero_stage"] == 1


@pytest.mark.parametrize(
    ("given", "expected"), [("alibi", None), ("rotary", None), ("absolute", 2048), ("learned_absolute", 2048)]
)
def test_megatron_deepspeeds_position_embeddings_are_read(tmp_path: Path, given: str, expected: int | None) -> None:
    """Megatron-DeepSpeed's --position-embedding-type spellings (bigscience-workshop's PositionEmbeddingType:
    rotary, absolute, alibi): ALiBi and rotary add no table; absolute is learned_absolute's table of positions."""
    from dpcost.training_configs.megatron import read

    script = (f"torchrun pretrain_gpt.py --num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 2048 "
              f"--vocab-size 1000 --position-embedding-type {given}")  # fmt: skip
    spec = read(script, "s.sh").model_spec
    assert spec.architecture.learned_positions == (expected or 0)
    assert spec.architecture.alibi is (given == "alibi")
    refused = read(script.replace(given, "sinusoid"), "s.sh").refusals["model"]
    assert refused == ("--position-embedding-type", "must be learned_absolute, rope, alibi or none, got 'sinusoid'")


def test_megatron_deepspeeds_padded_vocabulary_is_taken_as_given() -> None:
    """--pad-vocab-size-to (Megatron-DeepSpeed's tokenizer.py _vocab_size_with_padding): the vocabulary is that size
    at any TP, and refused where --make-vocab-size-divisible-by does not divide it."""
    from dpcost.training_configs.megatron import read

    script = (
        "torchrun pretrain_gpt.py --num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 2048 "
        "--tokenizer-type PretrainedFromHF --pad-vocab-size-to 250880 --tensor-model-parallel-size 4"
    )
    config = read(script, "s.sh")
    assert config.model_spec.architecture.vocab == 250_880 and config.vocab_padding is None
    refused = read(script.replace("250880", "250881"), "s.sh").refusals["model"]
    assert "250881 is not divisible by --make-vocab-size-divisible-by 128" in refused[1]


def test_a_megatron_scripts_microbatch_group_sets_the_interleaved_warm_up(tmp_path: Path) -> None:
    """--microbatch-group-size-per-virtual-pipeline-stage 5 on PP4 x VP2 (Megatron-LM's functional test
    gpt3_mcore_te_tp1_pp4_vp1_tunable_overlap, @d98e8a64dd, H100): the last rank's warm-up runs 5 forwards where
    the default group of 4 runs 4 (schedules.py), and the test records 4.62 GB where its sibling without the flag
    records 4.16; read with the group dpcost comes within 5%, where without it it read 10% low."""
    script, measured = _functional_test_script(
        tmp_path, "gpt/gpt3_mcore_te_tp1_pp4_vp1_tunable_overlap", "golden_values_dev_dgx_h100.json"
    )
    got = report("estimate", "--from", str(script), "--topology", "dgx-h100")
    assert got["setup"] is not None and "--microbatch-group 5" in {s["became"] for s in got["from_config"]["settings"]}
    assert got["layout"]["stages"][-1]["memory_bytes"] == pytest.approx(measured, rel=0.05)


@pytest.mark.parametrize(
    ("golden", "measured"),
    [("golden_values_dev_dgx_h100.json", 1_838_000_000), ("golden_values_lts_dgx_a100.json", 1_773_000_000)],
)
def test_a_megatron_scripts_fused_cross_entropy_holds_one_more_fp32_copy(
    tmp_path: Path, golden: str, measured: float
) -> None:
    """--cross-entropy-loss-fusion runs cross_entropy.py's steps under torch.compile (fused_cross_entropy.py,
    megatron/core/jit.py), whose in-place updates of the fp32 logits are compiled out of place and copied back: one
    fp32 copy more at the loss's peak, 4 bytes a logit. Megatron-LM's functional test of 12 layers of 512 at TP 2 x
    PP 2, micro-batch 4 of 1,024 tokens, records 1.84 GB on its last rank (H100), 0.41 GB above the same test
    without the flag; dpcost read it 22% low as the unfused loss."""
    script, got_measured = _functional_test_script(
        tmp_path, "gpt/gpt3_mcore_te_tp2_pp2_cross_entropy_loss_fusion", golden
    )
    assert got_measured == pytest.approx(measured, rel=1e-3)
    got = report("estimate", "--from", str(script), "--topology", "dgx-h100" if "h100" in golden else "dgx-a100")
    assert got["setup"]["loss_impl"] == "vocab-parallel-fused"
    assert got["layout"]["stages"][-1]["memory_bytes"] == pytest.approx(measured, rel=0.03)


def test_a_megatron_scripts_cross_entropy_fusion_impl() -> None:
    """--cross-entropy-fusion-impl native (the default) compiles Megatron's loss; te runs Transformer Engine's kernel
    (Megatron-LM core_v0.12.0 to core_v0.18; docs/sources/cross-entropy.md); without the fusion flag it is unread;
    anything else Megatron's argparse refuses."""
    from dpcost.errors import InputError
    from dpcost.training_configs.megatron import read

    base = f"torchrun pretrain_gpt.py {SMALL_GPT} --bf16"
    assert read(f"{base} --cross-entropy-loss-fusion\n", "a.sh").options["loss_impl"] == "vocab-parallel-fused"
    te = read(f"{base} --cross-entropy-loss-fusion --cross-entropy-fusion-impl te\n", "a.sh")
    assert te.options["loss_impl"] == "vocab-parallel-te"
    assert "loss_impl" not in read(f"{base} --cross-entropy-fusion-impl te\n", "a.sh").options
    with pytest.raises(InputError, match="must be native or te"):
        read(f"{base} --cross-entropy-loss-fusion --cross-entropy-fusion-impl triton\n", "a.sh")


def test_a_megatron_script_defers_the_output_layers_weight_gradients() -> None:
    """--defer-embedding-wgrad-compute with --wgrad-deferral-limit N (arguments.py: 0, every call, when absent)."""
    from dpcost.errors import InputError
    from dpcost.training_configs.megatron import read

    script = f"torchrun pretrain_gpt.py {SMALL_GPT} --bf16 --pipeline-model-parallel-size 2"
    flags = "--defer-embedding-wgrad-compute --wgrad-deferral-limit 2"
    assert read(f"{script} {flags}\n", "m.sh").options["defer_embedding_wgrad"] == "2"
    assert read(f"{script} --defer-embedding-wgrad-compute\n", "m.sh").options["defer_embedding_wgrad"] == "0"
    assert "defer_embedding_wgrad" not in read(f"{script} --wgrad-deferral-limit 2\n", "m.sh").options
    # 0 is Megatron's own default (every call); a negative limit Megatron refuses only when it defers
    assert read(f"{script} {flags[:-1]}0\n", "m.sh").options["defer_embedding_wgrad"] == "0"
    assert "defer_embedding_wgrad" not in read(f"{script} --wgrad-deferral-limit -1\n", "m.sh").options
    with pytest.raises(InputError, match="--wgrad-deferral-limit"):
        read(f"{script} {flags[:-1]}-1\n", "m.sh")


def test_a_megatron_script_keeps_the_unfused_softmax_in_fp32() -> None:
    """Megatron-Core's own attention (--transformer-impl local) runs the fused softmax kernel with
    --masked-softmax-fusion over 17 to 4,096 keys (fused_softmax.py is_kernel_available), else PyTorch's softmax,
    in fp32 under --attention-softmax-in-fp32 or --apply-query-key-layer-scaling, which forces it
    (transformer_config.py): only then is its fp32 output kept."""
    from dpcost.training_configs.megatron import read

    local = f"torchrun pretrain_gpt.py {SMALL_GPT} --fp16 --transformer-impl local"
    unfused = read(f"{local} --no-masked-softmax-fusion --apply-query-key-layer-scaling\n", "m.sh")
    assert unfused.options["unfused_softmax_fp32"] == "true"
    assert (
        read(f"{local} --no-masked-softmax-fusion --attention-softmax-in-fp32\n", "m.sh").options[
            "unfused_softmax_fp32"
        ]
        == "true"
    )
    # the fused kernel runs at 1,024 keys, and the unfused softmax without the fp32 flags stays in 16 bits
    assert "unfused_softmax_fp32" not in read(f"{local} --attention-softmax-in-fp32\n", "m.sh").options
    assert "unfused_softmax_fp32" not in read(f"{local} --no-masked-softmax-fusion\n", "m.sh").options
    # over 4,096 keys the fused kernel does not run, fusion or not
    long = local.replace("--seq-length 1024", "--seq-length 8192")
    assert read(f"{long} --attention-softmax-in-fp32\n", "m.sh").options["unfused_softmax_fp32"] == "true"
    # Transformer Engine's attention is not read here
    te = f"torchrun pretrain_gpt.py {SMALL_GPT} --fp16 --no-masked-softmax-fusion --attention-softmax-in-fp32\n"
    assert "unfused_softmax_fp32" not in read(te, "m.sh").options
    # micro-batch x heads per TP rank not a multiple of 4: 1 x 6 over TP 1 (is_kernel_available's attn_batches)
    six = local.replace("--hidden-size 512 --num-attention-heads 8", "--hidden-size 768 --num-attention-heads 6")
    assert read(f"{six} --attention-softmax-in-fp32\n", "m.sh").options["unfused_softmax_fp32"] == "true"
    doubled = read(f"{six} --micro-batch-size 2 --attention-softmax-in-fp32\n", "m.sh")
    assert "unfused_softmax_fp32" not in doubled.options
    # Transformer Engine's unfused attention: fp32 whatever the flags say, its fused kernel over 17 to 16,383 keys
    te = f"torchrun pretrain_gpt.py {SMALL_GPT} --bf16 --attention-backend unfused"
    assert "unfused_softmax_fp32" not in read(f"{te}\n", "m.sh").options
    te_long = te.replace("--seq-length 1024", "--seq-length 16384")
    assert read(f"{te_long}\n", "m.sh").options["unfused_softmax_fp32"] == "true"


def test_a_megatron_scripts_dropouts_are_probabilities_and_the_attentions_is_said() -> None:
    """--hidden-dropout is the model's one dropout (arguments.py default 0.1); a value argparse's float would refuse
    refuses the script's model with a line naming the flag (an input error unless --model is given), not a crash
    (it had been exit 3). --attention-dropout (dot_product_attention.py drops the scores out by it) is said beside
    it: the same, or costed as the hidden one's."""
    from dpcost.training_configs.megatron import read

    base = f"torchrun pretrain_gpt.py {SMALL_GPT} --bf16"
    for bad in ("abc", "1.5", "$DROP"):
        refused = read(f"{base} --hidden-dropout {bad}\n", "m.sh")
        assert refused.model_spec is None and refused.refusals["model"][0] == "--hidden-dropout", bad
    config = read(f"{base} --hidden-dropout 0.1 --attention-dropout 0.0\n", "m.sh")
    assert config.model_spec is not None and config.model_spec.architecture.dropout == 0.1
    (row,) = [s for s in config.settings if s.key == "--attention-dropout"]
    assert row.became == "" and row.note == "costed as --hidden-dropout's 0.1: one dropout"
    same = read(f"{base} --hidden-dropout 0.0 --attention-dropout 0.0\n", "m.sh")
    assert [s.note for s in same.settings if s.key == "--attention-dropout"] == ["the same as --hidden-dropout's"]


def test_a_deepspeed_configs_nan_and_infinity_are_input_errors() -> None:
    """Python's json reads NaN and Infinity (a real config.json holds Infinity: nemotron-3-super-120b-a12b.json), so
    the DeepSpeed reader meets them where it wants a whole number: one line naming the key, not int()'s crash (it
    had been an internal error, exit 3)."""
    import json

    from dpcost.errors import InputError
    from dpcost.training_configs.deepspeed import read

    for constant in ("NaN", "Infinity", "-Infinity"):
        doc = json.loads(f'{{"train_micro_batch_size_per_gpu": {constant}}}')
        with pytest.raises(InputError, match="train_micro_batch_size_per_gpu: must be a positive integer"):
            read(doc, "ds.json")


@pytest.mark.parametrize(
    ("flags", "rows"),
    [
        ("", 2048),  # learned_absolute, Megatron's default: a table of --max-position-embeddings rows
        ("--position-embedding-type rope", 0),
        # the legacy flag wins over a type given (arguments.py: use_rotary_position_embeddings sets 'rope')
        ("--position-embedding-type learned_absolute --use-rotary-position-embeddings", 0),
    ],
)
def test_a_megatron_scripts_position_table_is_megatrons(flags: str, rows: int) -> None:
    from dpcost.training_configs.megatron import read

    script = (
        "torchrun pretrain_gpt.py --num-layers 2 --hidden-size 256 --num-attention-heads 4 --vocab-size 1000 "
        f"--seq-length 1024 --max-position-embeddings 2048 --micro-batch-size 1 --bf16 {flags}\n"
    )
    a = read(script, "gpt.sh").model_spec.architecture
    assert a is not None and a.learned_positions == rows


@pytest.mark.parametrize(
    ("environment", "flags", "config"),
    [
        ("", "--deterministic-mode", ":4096:8"),  # determinism.py's default where the environment gives none
        ("CUBLAS_WORKSPACE_CONFIG=:16:8 ", "--deterministic-mode", ":16:8"),  # setdefault: the environment's wins
        ("export CUBLAS_WORKSPACE_CONFIG=':4096:2:16:8'\n", "", ":4096:2:16:8"),
        ("# export CUBLAS_WORKSPACE_CONFIG=:16:8\n", "--deterministic-mode", ":4096:8"),  # a comment sets nothing
        ("", "", None),  # unset: PyTorch's own per GPU
    ],
)
def test_a_megatron_scripts_cublas_workspace_config_is_pytorchs(environment: str, flags: str, config: str) -> None:
    from dpcost.training_configs.megatron import read

    script = (
        f"{environment}torchrun pretrain_gpt.py --num-layers 2 --hidden-size 256 --num-attention-heads 4 "
        f"--vocab-size 1000 --seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 1 --bf16 {flags}\n"
    )
    assert read(script, "gpt.sh").options.get("cublas_workspace_config") == config


def test_a_megatron_script_s_deterministic_mode_refuses_a_cublas_workspace_config_megatron_refuses() -> None:
    """--deterministic-mode accepts CUBLAS_WORKSPACE_CONFIG :4096:8 or :16:8 alone (determinism.py
    ACCEPTED_ENV_VAR_VALUES asserts it): a script with another would not run, so dpcost refuses it."""
    from dpcost.errors import InputError
    from dpcost.training_configs.megatron import read

    script = (
        "CUBLAS_WORKSPACE_CONFIG=:4096:2:16:8 torchrun pretrain_gpt.py --num-layers 2 --hidden-size 256 "
        "--num-attention-heads 4 --vocab-size 1000 --seq-length 1024 --max-position-embeddings 1024 "
        "--micro-batch-size 1 --bf16 --deterministic-mode\n"
    )
    with pytest.raises(InputError, match="CUBLAS_WORKSPACE_CONFIG: :4096:2:16:8: --deterministic-mode runs only"):
        read(script, "gpt.sh")


@pytest.mark.parametrize(
    ("flags", "moe"),
    [
        ("--num-experts 1", None),  # Megatron-DeepSpeed's default [1]: every MLP dense
        ("--num-experts 16 --topk 2", {"experts": 16, "active": 2, "first_dense_layers": 1, "dense_layers": (2,)}),
        (
            "--num-experts 8 8 --expert-interval 2",
            {"experts": 8, "active": 1, "first_dense_layers": 1, "dense_layers": (2,)},
        ),
        ("--num-experts 8 --expert-interval 1", {"experts": 8, "active": 1, "first_dense_layers": 0}),
    ],
)
def test_megatron_deepspeeds_experts_are_in_every_intervalth_layer(flags: str, moe: dict | None) -> None:  # type: ignore[type-arg]
    """Megatron-DeepSpeed's MoE (megatron/arguments.py: --num-experts [1], --topk 1, --expert-interval 2;
    model/transformer.py get_num_experts_per_layer): on 4 layers at the default interval, layers 2 and 4 (numbered
    from 1) hold the experts, each the dense MLP's width; one expert is a dense MLP. Megatron-LM's --num-experts 1
    would build a one-expert MoE instead."""
    from dpcost.training_configs.megatron import read

    script = ("torchrun pretrain_gpt.py --num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 2048 "
              f"--vocab-size 1000 --deepspeed {flags}")  # fmt: skip
    config = read(script, "s.sh")
    got = config.model_spec.architecture.moe
    if moe is None:
        assert got is None
        return
    assert got is not None and got.ffn == 1024
    assert {k: getattr(got, k) for k in moe} == moe
    assert config.options["ep_dispatcher"] == "alltoall"  # DeepSpeed's MOELayer (sharded_moe.py _AllToAll)


def test_megatron_deepspeeds_residual_moe_is_left_to_model() -> None:
    """PR-MoE (--mlp-type residual: a dense MLP beside the experts) is not built from the arguments."""
    from dpcost.training_configs.megatron import read

    script = ("torchrun pretrain_gpt.py --num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 2048 "
              "--vocab-size 1000 --deepspeed --num-experts 64 --mlp-type residual")  # fmt: skip
    assert read(script, "s.sh").refusals["model"][0] == "--mlp-type"


@pytest.mark.parametrize("entry", ["pretrain_bert.py", "pretrain_t5.py", "pretrain_vlm.py"])
def test_a_megatron_script_of_another_model_leaves_the_model_to_model(entry: str) -> None:
    """Megatron-LM's BERT, T5 and multimodal entry scripts build other models than the GPT the reader builds from
    --num-layers and the rest (pretrain_bert.py: BERT's heads; pretrain_t5.py: an encoder and a decoder): the model is
    left to --model, the plan still read. The GPT's and the hybrid stack's (pretrain_mamba.py) are built."""
    from dpcost.training_configs.megatron import read

    args = "--num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 512 --vocab-size 1000"
    config = read(f"torchrun {entry} --tensor-model-parallel-size 2 {args}", "s.sh")
    assert config.model_spec is None and config.refusals["model"][0] == entry
    assert config.options["tp"] == "2"
    assert read(f"torchrun /opt/megatron/pretrain_gpt.py {args}", "s.sh").model_spec is not None


@pytest.mark.parametrize("body", ["[" * 60_000, '{"zero_optimization": $STAGE}', "not json"])
def test_a_written_deepspeed_config_that_is_not_one_is_refused_in_one_line(tmp_path: Path, body: str) -> None:
    """A here-document that writes no JSON object (nested past Python's recursion limit, a variable left unset, not
    JSON): the script is refused as one whose config is not read, in one line, never an internal error."""
    script = tmp_path / "mds.sh"
    flags = "--deepspeed --deepspeed_config ds.json --bf16 --micro-batch-size"
    text = (CONFIGS / "megatron-gpt-345m.sh").read_text().replace("--micro-batch-size", flags)
    script.write_text(f"cat <<EOT > ds.json\n{body}\nEOT\n" + text.replace("--fp16", ""))
    code, out, err = run("estimate", "--from", str(script), "--dp", "8")
    assert code == 2 and out == "" and err.count("\n") == 1 and "--deepspeed: Megatron-DeepSpeed" in err


@pytest.mark.parametrize(
    ("script", "dp"),
    [
        # srun runs the ranks itself, one a task (srun(1): -N nodes x --ntasks-per-node tasks, or -n tasks)
        ("srun -N 2 --ntasks-per-node=8 python pretrain_gpt.py {args}", 8),
        ("srun -n 16 --container-image=img python -u pretrain_gpt.py {args}", 8),
        # Megatron-LM's examples/pretrain_gpt3_175B.sh: the counts in #SBATCH, the launch an srun's `sh -c` string
        (
            '#SBATCH <SLURM OPTIONS> --nodes=4 --exclusive --ntasks-per-node=8\nCMD="python pretrain_gpt.py {args}"\n'
            'srun -l --container-image img sh -c "${{CMD}}"',
            16,
        ),
        ("srun python pretrain_gpt.py {args}", None),  # the job's counts are not in the script
        # under torchrun, torchrun's world: its 8 a node x its --nnodes (1 by default), not srun's tasks
        ("#SBATCH --nodes=2 --ntasks-per-node=1\nsrun torchrun --nproc_per_node 8 pretrain_gpt.py {args}", 4),
    ],
)
def test_a_megatron_script_that_srun_launches_has_the_world_of_its_tasks(script: str, dp: int | None) -> None:
    """Launched by srun without torchrun, each of srun's tasks is one rank: the world is srun's -n, else its -N
    (the job's #SBATCH --nodes) x --ntasks-per-node (the job's), over TP x PP x CP; under torchrun, torchrun's."""
    from dpcost.training_configs.megatron import read

    args = "--tensor-model-parallel-size 2 --micro-batch-size 1"
    assert read(script.format(args=args), "job.slurm").dp == dp


def test_srun_counts_are_read_from_srun_not_from_the_program_it_runs() -> None:
    """srun's options end where its program begins: an -n among the program's own arguments is not srun's."""
    from dpcost.training_configs.megatron import read

    script = "srun -N 2 --ntasks-per-node=8 python pretrain_gpt.py --tensor-model-parallel-size 2 -n 4"
    assert read(script, "job.slurm").dp == 8


def test_megatrons_own_gradient_flags_do_not_reach_deepspeeds_engine(tmp_path: Path) -> None:
    """Under --deepspeed the engine, not Megatron's DDP, accumulates and reduces the gradients: with its written
    config at ZeRO-1 in fp16, the gradients are fp16 (engine.py get_data_types), whatever
    --accumulate-allreduce-grads-in-fp32 asks of Megatron's own optimizer; the row says so."""
    script = tmp_path / "mds.sh"
    flags = "--deepspeed --deepspeed_config ds.json --accumulate-allreduce-grads-in-fp32 --micro-batch-size"
    body = (CONFIGS / "megatron-gpt-345m.sh").read_text().replace("--micro-batch-size", flags)
    config = '{"zero_optimization": {"stage": 1}, "fp16": {"enabled": true}}'
    script.write_text(f"cat <<EOT > ds.json\n{config}\nEOT\n" + body)
    doc = report("estimate", "--from", str(script), "--dp", "8")
    assert doc["setup"]["grad_dtype"] == "fp16"
    rows = {s["key"]: s["note"] for s in doc["from_config"]["settings"]}
    assert rows["--accumulate-allreduce-grads-in-fp32"].startswith("DeepSpeed's engine accumulates")


@pytest.mark.parametrize(
    ("environment", "read_as"),
    [
        ("export NCCL_NVLS_ENABLE=0\n", {"nvls": "off"}),
        ("export NCCL_COLLNET_ENABLE=1\n", {"collnet": "on"}),
        ("NCCL_PROTO=Simple ", {"protocol": "simple"}),
        ("export NCCL_ALGO=Ring\n", {"nccl_algo": "Ring"}),
        ("export NCCL_ALGO=^NVLS,NVLSTree\n", {"nccl_algo": "^NVLS,NVLSTree"}),
        ("export NCCL_ALGO=^NVLS\n", {"nccl_algo": "^NVLS"}),  # NVLSTree left, as NCCL leaves it
        ("export NCCL_ALGO=Ring,Tree\n", {"nccl_algo": "Ring,Tree"}),
        ("export NCCL_ALGO=Tree\n", {}),  # Ring taken from every collective: NCCL fails the all-gathers
        ("export NCCL_PROTO=LL,Simple\n", {}),
    ],
)
def test_a_megatron_scripts_nccl_variables_set_what_a_plan_can_say(environment: str, read_as: dict[str, str]) -> None:
    """NCCL's variables as the training command runs with them (shell.py), as NCCL reads them (NCCL_ALGO:
    src/graph/tuning.cc parseList): those a plan can say become its options; the others are listed as not read."""
    from dpcost.training_configs.megatron import read

    base = "torchrun pretrain_gpt.py --num-layers 2 --hidden-size 64 --num-attention-heads 4 --vocab-size 100 "
    environment, launch = (environment, "") if environment.endswith("\n") else ("", environment)
    config = read(f"{environment}{launch}{base}--seq-length 128\n", "n.sh")
    options = {k: v for k, v in config.options.items() if k in ("nvls", "collnet", "protocol", "nccl_algo")}
    assert options == read_as
    rows = {s.key: s.note for s in config.settings if s.key.startswith("NCCL_")}
    assert len(rows) == 1 and (read_as or next(iter(rows.values())).startswith("not read"))


def test_a_megatron_script_whose_nccl_algo_nccl_would_refuse_is_refused_by_name() -> None:
    from dpcost.training_configs.megatron import read

    with pytest.raises(InputError, match=r"NCCL_ALGO.*'fast' is not one of"):
        read("export NCCL_ALGO=Ring,Fast\ntorchrun pretrain_gpt.py --num-layers 2 --seq-length 128\n", "n.sh")


def test_deterministic_mode_sets_nccl_algo_ring_where_the_environment_does_not() -> None:
    """megatron/training/determinism.py (d98e8a64dd): DETERMINISM_ENV_VAR_DEFAULTS setdefaults NCCL_ALGO=Ring, and an
    NCCL_ALGO the launcher sets must be made of Ring, CollnetDirect, CollnetChain and ^NVLS, or the run stops."""
    from dpcost.training_configs.megatron import read

    base = "torchrun pretrain_gpt.py --num-layers 2 --seq-length 128 --deterministic-mode\n"
    assert read(base, "d.sh").options["nccl_algo"] == "Ring"
    assert read("export NCCL_ALGO=^NVLS\n" + base, "d.sh").options["nccl_algo"] == "^NVLS"
    assert "nccl_algo" not in read("export NCCL_ALGO=CollnetDirect\n" + base, "d.sh").options  # no Ring left
    with pytest.raises(InputError, match="NCCL_ALGO: Tree: --deterministic-mode accepts only"):
        read("export NCCL_ALGO=Tree\n" + base, "d.sh")
