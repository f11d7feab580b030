"""What the loss and the gradient accumulation move through HBM, pass by pass as the sources run them
(docs/sources/cross-entropy.md; Megatron-Core's DDP hook and nanotron's fp32 accumulator), and that a plan prices
what it says it runs."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from dpcost import Options, estimate
from dpcost.catalog import load_model, load_topology
from dpcost.cli import app
from dpcost.engine.ops import main_grad_accumulation, model_ops
from dpcost.engine.params import count_params
from dpcost.engine.rates import rates_for

TOKENS = 4096


def _loss(impl: str) -> tuple[float, float]:
    a = load_model("llama-8b").architecture
    assert a is not None
    loss = next(op for op in model_ops(a, TOKENS, "fused", impl) if op.name == "loss")
    logits = a.output_vocab * TOKENS
    return loss.bytes / logits, loss.backward_bytes / logits


def test_megatrons_unfused_cross_entropy_makes_six_passes_forward_and_two_back() -> None:
    """cross_entropy.py at core_r0.9.0: .float() (2 read, 4 written), max (4), the in-place subtraction (4 + 4),
    exp (4 + 4), sum (4), the division (4 + 4); backward mul_ (4 + 4) and autograd's cast back to bf16 (4 + 2)."""
    forward = (2 + 4) + 4 + (4 + 4) + (4 + 4) + 4 + (4 + 4)
    backward = (4 + 4) + (4 + 2)
    assert _loss("vocab-parallel") == (forward, backward) == (38, 14)


def test_the_native_fused_cross_entropy_passes_once_per_compiled_function() -> None:
    """fused_cross_entropy.py at core_r0.9.0: the cast with the max, the subtraction with exp and sum, the division;
    backward the bf16 gradient from the fp32 softmax."""
    assert _loss("vocab-parallel-fused") == ((2 + 4) + (4 + 4) + (4 + 4), 4 + 2)


def test_transformer_engines_cross_entropy_stays_in_the_bf16_logits() -> None:
    """TE v2.8 triton/cross_entropy.py: the online softmax reads the logits, the loss kernel reads them again and
    writes the gradient over them; the backward scales it in place."""
    assert _loss("vocab-parallel-te") == (2 + (2 + 2), 2 + 2)


def test_without_fusion_each_micro_batch_adds_the_weight_gradients_into_fp32_main_gradients() -> None:
    """Megatron-Core's hook main_grad.add_(grad): the bf16 gradient read, the fp32 main gradient read and written,
    10 bytes a parameter; 6 with bf16 main gradients."""
    assert main_grad_accumulation(1e9, 4).backward_bytes == 10e9
    assert main_grad_accumulation(1e9, 2).backward_bytes == 6e9
    assert main_grad_accumulation(1e9, 4).bytes == 0  # nothing in the forward


def _step(**kw: object) -> float:
    report = estimate(load_model("llama-8b"), load_topology("dgx-h100"), Options(**kw))
    assert report.time is not None
    return report.time.step_seconds


def _memory_bound(**kw: object) -> float:
    report = estimate(load_model("llama-8b"), load_topology("dgx-h100"), Options(**kw))
    assert report.compute is not None
    return next(p.seconds_per_step for p in report.compute.parts if p.part == "memory-bound")


def test_megatron_without_fusion_spends_the_adds_bandwidth_once_a_micro_batch() -> None:
    """Data parallelism alone, 8 micro-batches a step: the memory-bound compute grows by 8 adds over every
    parameter at the H100's sustained bandwidth, and the step by at least that."""
    plan = dict(dp=8, micro_batch=1, global_batch=64, seq_len=4096, framework="megatron", recompute="none",
                compute_model="ops", zero=1)  # fmt: skip
    h100 = load_topology("dgx-h100").gpu
    params = count_params(load_model("llama-8b")).total
    add = params * 10 / (h100.hbm_bandwidth * rates_for(h100).hbm)
    fused, unfused = _memory_bound(**plan), _memory_bound(**plan, grad_accumulation_fusion=False)
    assert unfused - fused == pytest.approx(8 * add)
    assert _step(**plan, grad_accumulation_fusion=False) - _step(**plan) >= 8 * add


def test_a_layout_times_the_loss_it_is_given() -> None:
    """TP 2: the last stage's loss over vocab / 2 logits a token; TE's kernel moves 42 bytes a logit fewer than the
    unfused path, once per micro-batch: the step is shorter by that, and by the few percent the slowest GPU's rate
    adds to compute (rates.slowest_gpu_loss)."""
    plan = dict(dp=4, tp=2, micro_batch=1, global_batch=32, seq_len=4096, recompute="none", compute_model="ops")
    unfused, te = _step(**plan), _step(**plan, loss_impl="vocab-parallel-te")
    h100 = load_topology("dgx-h100").gpu
    a = load_model("llama-8b").architecture
    assert a is not None
    saved = (38 + 14 - 10) * a.output_vocab / 2 * 4096 / (h100.hbm_bandwidth * rates_for(h100).hbm)
    assert 8 * saved <= unfused - te <= 1.05 * 8 * saved


def test_the_loss_impl_flag_takes_transformer_engines_and_refuses_others() -> None:
    runner = CliRunner()
    ok = runner.invoke(app, ["estimate", "--model", "llama-8b", "--tp", "2", "--dp", "4", "--loss-impl",
                             "vocab-parallel-te", "--format", "json"])  # fmt: skip
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["summary"]["step_seconds"] > 0
    bad = runner.invoke(app, ["estimate", "--model", "llama-8b", "--dp", "8", "--loss-impl", "te"])
    assert bad.exit_code == 2
    assert "--loss-impl" in bad.output and "vocab-parallel-te" in bad.output
    assert len(bad.output.strip().splitlines()) == 1


def test_every_loss_the_options_take_has_its_memory_and_its_traffic() -> None:
    from typing import get_args

    from dpcost.engine.loss import LOSS_IMPLS, PATHS
    from dpcost.engine.ops import LOSS_TRAFFIC
    from dpcost.options import Compute

    allowed = {v for arg in get_args(Compute.model_fields["loss_impl"].annotation) for v in get_args(arg)}
    assert allowed == set(LOSS_IMPLS) == set(PATHS) == set(LOSS_TRAFFIC)


def test_the_benchmarks_run_each_sources_own_loss() -> None:
    """llm-foundry's ComposerMPTCausalLM defaults to flash-attn's fused cross-entropy (modeling_mpt.py at 0085285a);
    dgxc-benchmarking's NeMo recipes set Megatron's native fusion (GPT-3 175B's leaves it off); Megatron-Bridge's
    performance scripts pick Transformer Engine's (v0.2.0 helpers.py:108); torchtitan runs PyTorch's on upcast
    logits, its framework's default."""
    from conftest import load_benchmark

    scaling = load_benchmark("training_scaling")
    assert scaling.loss_impl_of("llm-foundry-h100.csv") == "fused"
    assert scaling.loss_impl_of("dgxc-nemo-llama3.1-70b-h100.csv") == "vocab-parallel-fused"
    assert scaling.loss_impl_of("dgxc-nemo-gpt3-175b-h100.csv") is None
    assert scaling.loss_impl_of("together-mbridge-llama3-70b-b200.csv") == "vocab-parallel-te"
    assert scaling.loss_impl_of("torchtitan-llama3.1-8b-h100.csv") is None
    runs = load_benchmark("large_runs")
    assert runs.cross_entropy_impl("mbridge-26.04", "Llama 3 70B") == "vocab-parallel-te"
    assert runs.cross_entropy_impl("mbridge-26.08", "Nemotron_3_Ultra") == "vocab-parallel-fused"
    assert runs.cross_entropy_impl("nemo-25.02", "Llama 3 70B") == "vocab-parallel-fused"
    assert runs.cross_entropy_impl("narayanan2021", "GPT 175B") == "vocab-parallel"
