"""ZeRO 2 and 3 inside a TP/CP/PP/EP layout, as Megatron-FSDP runs them (engine/frameworks.py MEGATRON_FSDP): what
its source says each strategy shards, gathers and reduces, and when (megatron/core/distributed/fsdp/ at Megatron-LM
d98e8a64dd)."""

from __future__ import annotations

import json
import math

import pytest
from conftest import run_cli as run

from dpcost.catalog import load_model, load_topology
from dpcost.engine.layout import Layout
from dpcost.engine.layout_estimate import fsdp_units, layout_step, stage_loads
from dpcost.engine.layout_memory import MemoryLayout, fsdp_buffer_bytes, layout_memory_for, model_shape
from dpcost.specs import ModelSpec

# Llama 3 70B (its config.json): hidden 8192, FFN 28672, 64 heads, 8 KV heads of 128, 80 layers, vocab 128256
HIDDEN, FFN, KV, LAYERS, VOCAB = 8192, 28672, 8 * 128, 80, 128256
LAYER = 2 * HIDDEN * HIDDEN + 2 * HIDDEN * KV + 3 * HIDDEN * FFN  # Q, O, K, V and the gated MLP, no biases
NORMS = 2 * HIDDEN  # two RMSNorms a layer, replicated over TP


def _stage0(model: ModelSpec, zero: int, grad_bytes: float = 2.0, **sizes: int):  # type: ignore[no-untyped-def]
    layout = MemoryLayout(**sizes, zero=zero, grad_bytes=grad_bytes, sequence_parallel=True)  # type: ignore[arg-type]
    return layout_memory_for(model, layout, 8192).stages[0]


def test_optim_grads_params_shards_weights_grads_and_optimizer_over_dp_times_cp(llama70b: ModelSpec) -> None:
    """optim_grads_params shards parameters, gradients and optimizer states over the DP x CP group
    (param_and_grad_buffer.py _init_each_parameter_group_buffers; mcore_fsdp_adapter.py _init_dist_index uses
    get_data_parallel_group(with_context_parallel=True)); so does Megatron's distributed optimizer its states
    (optimizer/__init__.py intra_dp_cp_group), where its memory file divides by DP alone
    (test_layout_memory.py::test_the_distributed_optimizer_shards_over_dp_and_cp)."""
    sizes = dict(tp=8, cp=2, dp=8)
    whole, fsdp = _stage0(llama70b, 0, **sizes), _stage0(llama70b, 3, **sizes)
    assert fsdp.weights == pytest.approx(whole.weights / 16, rel=1e-12)
    assert fsdp.grads == pytest.approx(whole.grads / 16, rel=1e-12)
    optimizer = fsdp.weight_and_optimizer - fsdp.weights - fsdp.grads
    assert optimizer == pytest.approx(12 * fsdp.parameters / 16, rel=1e-12)  # fp32 main weights and two moments
    distributed = _stage0(llama70b, 1, **sizes)
    assert distributed.weight_and_optimizer - distributed.weights - distributed.grads == pytest.approx(
        12 * distributed.parameters / 16, rel=1e-12
    )


def test_optim_grads_keeps_the_weights_whole(llama70b: ModelSpec) -> None:
    """optim_grads shards gradients and optimizer states, not the parameters (mfsdp_design.md's table)."""
    whole, fsdp = _stage0(llama70b, 0, tp=8, dp=4), _stage0(llama70b, 2, tp=8, dp=4)
    assert fsdp.weights == pytest.approx(whole.weights, rel=1e-12)
    assert fsdp.grads == pytest.approx(whole.grads / 4, rel=1e-12)


def test_zero_3_holds_the_modules_outside_units_and_the_prefetched_layers(llama70b: ModelSpec) -> None:
    """At its peak a ZeRO-3 GPU holds gathered: the embedding, output layer and final norm, which are in no unit and
    stay gathered (AllGatherPipeline.reset: PRESERVED); the layer computing and those prefetched behind it until
    max(1e9, 2 x a layer's elements) / 2 elements are on their way (all_gather_params,
    suggested_communication_unit_size); and one layer's unsharded bf16 gradient before its reduce-scatter."""
    tp = 8
    layout = MemoryLayout(tp=tp, dp=4, zero=3, grad_bytes=2.0)
    layer = LAYER / tp + NORMS  # elements of one unit on one GPU
    assert layer < 5e8  # so the prefetch, not one layer, sets how many are gathered
    gathered = 1 + math.ceil(5e8 / layer)
    vocab = math.ceil(VOCAB / (128 * tp)) * 128 * tp  # padded to 128 x TP (vocab_utils.py)
    outside = 2 * vocab * HIDDEN / tp + HIDDEN  # embedding and untied head split over TP, the final norm whole
    expected = 2 * layer + 2 * (outside + gathered * layer)
    shape = model_shape(llama70b.architecture, tp)  # type: ignore[arg-type]
    assert fsdp_buffer_bytes(shape, layout, 0, tuple(range(LAYERS))) == pytest.approx(expected, rel=1e-9)


def test_units_are_the_layers_and_leave_out_the_embedding_and_head(llama70b: ModelSpec) -> None:
    """Each TransformerLayer is a unit (mcore_fsdp_adapter.py FullyShardedDataParallelV1); the embedding, output
    layer and final norm are in none, and the units' compute shares cover the whole forward."""
    (stage,) = stage_loads(llama70b, Layout(tp=8, dp=4), 8192)
    units, outside = fsdp_units(stage)
    assert len(units) == LAYERS
    assert units[0].params == pytest.approx(LAYER / 8 + NORMS, rel=1e-12)
    assert outside == pytest.approx(2 * VOCAB * HIDDEN / 8 + HIDDEN, rel=1e-12)  # unpadded: the model's own count
    assert sum(u.compute_share for u in units) == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("zero", [2, 3])
def test_megatron_fsdp_reduces_every_micro_batch_and_gathers_as_its_strategy_says(
    llama70b: ModelSpec, zero: int
) -> None:
    """Both strategies reduce-scatter each layer's gradients on every micro-batch (grad_reduce_every_bprop);
    optim_grads_params gathers each layer for every forward and again for every backward (_post_forward frees it,
    _pre_backward_param_unshard gathers it), optim_grads gathers the updated layers once per step."""
    h100 = load_topology("dgx-h100")
    m = 4
    r = layout_step(llama70b, h100, Layout(tp=8, dp=4), micro_batch=1, global_batch=4 * m, seq_len=8192, mfu=0.5,
                    zero=zero, sequence_parallel=True, grad_dtype="bf16")  # fmt: skip
    by_purpose = {t.purpose: t for t in r.dp_traffic}
    reduce = by_purpose["gradients"]
    assert reduce.op == "reduce_scatter" and reduce.occurrences == m and reduce.calls == m * LAYERS
    assert reduce.message_bytes == pytest.approx(2 * LAYERS * (LAYER / 8 + NORMS), rel=1e-12)
    gathers = [t for t in r.dp_traffic if t.op == "all_gather"]
    assert sum(t.occurrences for t in gathers) == (2 * m if zero == 3 else 1)
    assert all(t.calls == t.occurrences * LAYERS for t in gathers)


def test_a_layout_at_zero_3_is_costed_as_megatron_fsdp() -> None:
    """`estimate --zero 3` with a layout: Megatron-FSDP's schedule, its bf16 main gradient (main_grads_dtype
    "auto"; grad_reduce_in_fp32 does not reach it) and every ZeRO stage's memory up to 3."""
    code, out, err = run(
        "estimate", "--model", "llama-70b", "--tp", "8", "--dp", "4", "--zero", "3", "--global-batch", "64",
        "--sequence-parallel", "--format", "json",
    )  # fmt: skip
    assert code == 0, err
    r = json.loads(out)
    assert r["setup"]["framework"] == "megatron-fsdp" and r["setup"]["grad_dtype"] == "bf16"
    assert [s["stage"] for s in r["memory"]["stages"]] == [0, 1, 2, 3]
    assert r["communication"]["frequency"] == (
        "every micro-batch (16 per step), layer by layer (Megatron-FSDP), on the DP x CP group"
    )
    purposes = {c["purpose"] for c in r["communication"]["collectives"]}
    # the embedding and head sit in no unit: gathered once per step and kept, reduced every micro-batch (_side_traffic)
    assert purposes == {
        "parameters (forward)", "parameters (backward)", "gradients",
        "embedding and output layer gradients", "embedding and output layer parameters",
    }  # fmt: skip
    ends = {c["purpose"]: c["occurrences"] for c in r["communication"]["collectives"] if "embedding" in c["purpose"]}
    assert ends == {"embedding and output layer gradients": 16, "embedding and output layer parameters": 1}


def test_the_distributed_optimizer_gathers_bucket_by_bucket(llama70b: ModelSpec) -> None:
    """Megatron's distributed optimizer with --overlap-param-gather gathers the updated parameters one bucket at a
    time as the next forward reaches them (param_and_grad_buffer.py start_param_sync), the buckets of max(40M,
    1M x DP) elements it reduces the gradients in (distributed_data_parallel_config.py): as many gathers as
    reduce-scatters, not one gather of the whole shard before the forward."""
    h100 = load_topology("dgx-h100")
    r = layout_step(llama70b, h100, Layout(tp=8, dp=32), micro_batch=1, global_batch=256, seq_len=8192, mfu=0.5,
                    zero=1, sequence_parallel=True)  # fmt: skip
    by_op = {t.op: t for t in r.dp_traffic}
    (stage,) = r.stages
    buckets = math.ceil(stage.dense_params / max(40e6, 1e6 * 32))
    assert by_op["all_gather"].calls == by_op["reduce_scatter"].calls == buckets


def test_a_layout_reads_bucket_size_as_megatrons_ddp_bucket_size(llama70b: ModelSpec) -> None:
    """Megatron's --ddp-bucket-size (distributed_data_parallel_config.py bucket_size, in parameters) replaces its
    max(40M, 1M x DP): --bucket-size is that many parameters' gradients in bytes, so 10M fp32 gradients a bucket
    is 40 MB, and the distributed optimizer reduces and gathers in ceil(shard / 10M) buckets; `--from` a Megatron
    script with --ddp-bucket-size gives it (docs/from.md)."""
    h100 = load_topology("dgx-h100")
    r = layout_step(llama70b, h100, Layout(tp=8, dp=32), micro_batch=1, global_batch=256, seq_len=8192, mfu=0.5,
                    zero=1, sequence_parallel=True, bucket_bytes=10e6 * 4)  # fmt: skip
    by_op = {t.op: t for t in r.dp_traffic}
    (stage,) = r.stages
    assert by_op["all_gather"].calls == by_op["reduce_scatter"].calls == math.ceil(stage.dense_params / 10e6)
    given = json.loads(run("estimate", "--model", "llama-70b", "--tp", "8", "--dp", "32", "--global-batch", "256",
                           "--sequence-parallel", "--bucket-size", "40MB", "--format", "json")[1])  # fmt: skip
    assert given["setup"]["bucket_bytes"] == 40_000_000
    assert "--bucket-size" not in json.dumps(given["warnings"])


def test_a_layout_reads_bucket_count_as_megatrons_ddp_num_buckets() -> None:
    """Megatron's --ddp-num-buckets N makes each bucket the GPU's parameters // N (training.py
    resolve_ddp_bucket_size at d98e8a64dd), the parameters of a first pipeline stage GPU, the only stage Megatron
    buckets (distributed_data_parallel.py). Llama 3 70B at TP 8 x PP 4: a first-stage GPU holds its 20 layers' TP
    shards with their norms whole, and the word embedding's TP shard, 2,270,756,864 parameters, the number Megatron
    prints for that rank; 4 buckets are 567,689,216 fp32 gradients each."""
    first = 20 * (LAYER // 8 + NORMS) + VOCAB * HIDDEN // 8
    assert first == 2_270_756_864
    args = ("estimate", "--model", "llama-70b", "--tp", "8", "--pp", "4", "--dp", "4", "--global-batch", "64")
    report = json.loads(run(*args, "--bucket-count", "4", "--format", "json")[1])
    assert report["setup"]["bucket_bytes"] == first // 4 * 4
    given = json.loads(run(*args, "--bucket-size", f"{first // 4 * 4}B", "--format", "json")[1])
    assert given["time"] == report["time"]  # the same bucket, given in bytes
    # without --overlap-grad-reduce Megatron buckets nothing (bucket_size None), whatever N says
    whole = json.loads(run(*args, "--bucket-count", "4", "--overlap-comm", "false", "--format", "json")[1])
    assert whole["setup"]["bucket_bytes"] > first


def test_a_layout_that_does_not_overlap_its_reduction_reduces_in_one_bucket(llama70b: ModelSpec) -> None:
    """Without --overlap-grad-reduce Megatron turns bucketing off (distributed_data_parallel.py: bucket_size None),
    as Megatron-LM's DistributedDataParallel before Megatron-Core reduced each contiguous buffer in one call: one
    reduce-scatter and one gather of the whole shard, whatever the bucket."""
    h100 = load_topology("dgx-h100")
    for bucket in (None, 10e6 * 4):
        r = layout_step(llama70b, h100, Layout(tp=8, dp=32), micro_batch=1, global_batch=256, seq_len=8192,
                        mfu=0.5, zero=1, sequence_parallel=True, dp_overlap=False, bucket_bytes=bucket)  # fmt: skip
        by_op = {t.op: t for t in r.dp_traffic}
        assert by_op["all_gather"].calls == by_op["reduce_scatter"].calls == 1
    # the report gives the bucket the step ran: the whole shard of the stage with the most dense parameters
    report = json.loads(run("estimate", "--model", "llama-70b", "--tp", "8", "--dp", "32", "--zero", "1",
                            "--global-batch", "256", "--sequence-parallel", "--overlap-comm", "false",
                            "--format", "json")[1])  # fmt: skip
    shard = max(s.dense_params for s in r.stages)
    assert report["setup"]["bucket_bytes"] == pytest.approx(shard * 4, abs=1)
    # data parallelism alone, as Megatron runs it: one reduce-scatter, and one gather after the optimizer step, since
    # --overlap-param-gather needs --overlap-grad-reduce (arguments.py)
    dp = json.loads(run("estimate", "--model", "llama-8b", "--dp", "64", "--framework", "megatron", "--zero", "1",
                        "--overlap-comm", "false", "--format", "json")[1])  # fmt: skip
    calls = {c["op"]: c["calls"] for c in dp["communication"]["collectives"]}
    assert calls == {"reduce_scatter": 1, "all_gather": 1}


def test_megatron_at_zero_3_without_a_layout_is_megatron_fsdp() -> None:
    """Megatron runs ZeRO 2-3 only as Megatron-FSDP (--use-megatron-fsdp), also at TP = PP = 1 (Megatron-Bridge's
    Llama 3 70B FSDP presets): `--framework megatron --zero 3` is costed with its per-layer schedule; DDP still
    refuses a stage it does not run."""
    r = json.loads(run("estimate", "--model", "llama-70b", "--dp", "64", "--framework", "megatron", "--zero", "3",
                       "--global-batch", "256", "--format", "json")[1])  # fmt: skip
    assert r["setup"]["framework"] == "megatron-fsdp"
    assert {c["purpose"] for c in r["communication"]["collectives"]} >= {
        "parameters (forward)",
        "parameters (backward)",
    }
    code, _, err = run("estimate", "--model", "llama-70b", "--dp", "64", "--framework", "ddp", "--zero", "3")
    assert code == 2 and err.startswith("dpcost: error: --zero: PyTorch DDP runs ZeRO stages 0 (DDP), not 3")


def test_megatron_fsdp_without_a_pipeline_waits_for_the_slowest_rank_at_each_layer() -> None:
    """Each layer's gather is a wait across the DP group, as PyTorch FSDP's are (step.py: a wait costs the slowest
    rank's lateness beyond its prefetch slack): communication-bound, every layer pays it and the step's jitter is
    many times the once-per-step wait the distributed optimizer pays at the flush; compute-bound, the prefetch
    hides the lateness and both pay about once per step (step.py: sqrt(T_step)), within 15% (the layers whose
    lateness outgrows their slack add a little)."""
    model, topology = load_model("llama-8b"), load_topology("dgx-h100")

    def jitter(zero: int, seq_len: int) -> float:
        step = layout_step(
            model, topology, Layout(dp=512), micro_batch=1, global_batch=512, seq_len=seq_len, mfu=0.4, zero=zero
        )
        return step.jitter

    assert jitter(3, 1024) > 4 * jitter(1, 1024)
    assert jitter(3, 8192) == pytest.approx(jitter(1, 8192), rel=0.15)
