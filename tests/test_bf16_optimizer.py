"""DeepSpeed's BF16_Optimizer: a bf16 model at ZeRO stage 1 with data_types.grad_accum_dtype fp32 (--grad-accum-dtype
fp32), held to deepspeed at edaa722 (v0.19.5): engine.py _do_optimizer_sanity_check, allreduce_gradients and
allreduce_bucket; runtime/bf16_optimizer.py (docs/sources/deepspeed-memory.md, "BF16_Optimizer")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dpcost import Options, estimate, load_model, load_topology
from dpcost.cli import app
from dpcost.engine.memory import RECIPES, buffers, model_states, phases
from dpcost.engine.ops import bf16_optimizer_grad_update
from dpcost.engine.prepare import bf16_optimizer_states, recipe_for
from dpcost.errors import InputError
from dpcost.training_configs import read_training_config

P, N, MB = 8e9, 8, 2**20


def test_its_states_are_a_kept_fp32_buffer_beside_the_bf16_gradients() -> None:
    """bf16_optimizer.py: `fp32_flat_buffer = torch.zeros_like(bf16_groups_flat[i], dtype=grad_acc_dtype)`, every
    parameter's, allocated at init and zeroed (not freed) after the step (clear_hp_grads); param.grad in bf16 from the
    backward until the step's zero_grad(set_to_none=True); the fp32 master partition and Adam's states over DP."""
    recipe = bf16_optimizer_states(recipe_for("deepspeed", "bf16"))
    s1 = model_states(P, N, 1, recipe)
    assert (s1.params, s1.grads, s1.backward_grads, s1.optimizer) == (2 * P, 6 * P, 2 * P, 12 * P / N)
    # only stage 1 runs it: the other stages' rows are ZeRO's, as without it
    for stage in (0, 2, 3):
        assert model_states(P, N, stage, recipe) == model_states(P, N, stage, RECIPES["deepspeed"])


def test_its_reduction_casts_the_whole_buffer_to_the_communication_dtype() -> None:
    """allreduce_bucket: `tensor.to(self.communication_data_type)`, bf16 for a bf16 model (engine.py
    communication_data_type) and fp32 where the config says so; the fp32 buffer goes whole, a lone tensor flattened
    without a copy. No stage_1_and_2.py buckets, and no flattened fp32 partition at the step: the real optimizer
    steps on views of the buffer (bf16_optimizer.py step)."""
    for grad_bytes, copy in ((2.0, 2 * P), (4.0, 0.0)):
        recipe = bf16_optimizer_states(recipe_for("deepspeed", "bf16" if grad_bytes == 2 else "fp32"))
        buf = buffers(1, "deepspeed", recipe, grad_bytes, P, 500 * MB, 1e9, 1e9, buckets_in_flight=1, shard_ranks=N)
        forward, backward, step = phases(model_states(P, N, 1, recipe), buf, 0, 0, 0, 0, 1)
        assert (buf.buckets, buf.held_buckets, buf.at_step) == (0.0, 0.0, copy)
        # the buffer all run; param.grad from the backward on, counted at the step (memory.phases: the backward
        # phase is its start)
        assert (forward.grads, backward.grads, step.grads) == (4 * P, 4 * P, 6 * P)
        assert step.buffers == copy


def test_its_gradient_update_moves_18_bytes_a_parameter() -> None:
    """_update_hp_grad: `hp_grad.data.add_(lp.grad.data.to(hp_grad.dtype))`: the cast reads 2 bytes and writes 4,
    the add reads 4 and 4 and writes 4, once a micro-batch (backward_epilogue)."""
    op = bf16_optimizer_grad_update(P)
    assert (op.bytes, op.backward_bytes, op.flops) == (0.0, 18 * P, 0.0)


def _plan(**extra: object) -> Options:
    return Options.model_validate({"dp": 8, "framework": "deepspeed", "zero": 1, "recompute": "full", **extra})


def test_an_estimate_holds_and_reduces_what_it_runs() -> None:
    model, topology = load_model("llama-8b"), load_topology("dgx-h100")
    plain = estimate(model, topology, _plan())
    bf16 = estimate(model, topology, _plan(grad_accum_dtype="fp32"))
    n = plain.model.params_total
    fp32_wire = estimate(model, topology, _plan(grad_accum_dtype="fp32", grad_dtype="fp32"))
    row, fp32_row = (next(r for r in e.memory.stages if r.stage == 1) for e in (bf16, fp32_wire))
    assert (row.peak_phase, row.grads_bytes, fp32_row.grads_bytes) == ("optimizer step", 6 * n, 6 * n)
    assert row.buffers_bytes - fp32_row.buffers_bytes == 2 * n  # the bf16 cast of the buffer, reduced in bf16
    assert next(r for r in plain.memory.stages if r.stage == 1).grads_bytes <= 2 * n
    # one all-reduce of the whole gradient (a parameter group's buffer, whole: allreduce_no_retain)
    reduce = next(t for t in bf16.communication.collectives if t.op == "all_reduce")
    assert reduce.calls == 1
    assert next(t for t in plain.communication.collectives if t.op == "all_reduce").calls > 1
    # the fp32 add once a micro-batch lengthens the backward by its bytes at the HBM rate
    assert bf16.time.compute_seconds > plain.time.compute_seconds


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--framework", "fsdp", "--zero", "3"], "--grad-accum-dtype: is DeepSpeed's data_types.grad_accum_dtype"),
        (["--framework", "deepspeed", "--zero", "2"], "shards the fp32 states over DP as ZeRO-1"),
        (["--framework", "megatron", "--zero", "3"], "give --zero 1"),  # Megatron-FSDP
        (["--framework", "fsdp", "--tp", "2", "--zero", "3"], "give --framework deepspeed"),  # torchtitan's
        (["--framework", "deepspeed"], "give --zero 1"),
        (["--framework", "deepspeed", "--zero", "1", "--offload", "optimizer"], "only without CPU offload"),
        (["--framework", "deepspeed", "--zero", "1", "--bucket-size", "1GiB"], "all-reduces its fp32 gradient buffer"),
        (["--framework", "deepspeed", "--zero", "1", "--recipe", "zero-paper"], "--recipe zero-paper holds others"),
        (["--framework", "megatron", "--zero", "1", "--recipe", "deepspeed"], "the megatron recipe's"),
    ],
)
def test_what_deepspeed_does_not_run_is_refused_in_one_line(args: list[str], says: str) -> None:
    result = CliRunner().invoke(app, ["estimate", "--model", "llama-8b", "--dp", "8", "--grad-accum-dtype", "fp32",
                                      *args])  # fmt: skip
    assert result.exit_code == 2, result.output
    assert says in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_bf16_is_the_models_own_and_changes_nothing() -> None:
    model, topology = load_model("llama-8b"), load_topology("dgx-h100")
    assert estimate(model, topology, _plan(grad_accum_dtype="bf16")) == estimate(model, topology, _plan())


def _read(tmp_path: Path, doc: dict[str, object]) -> dict[str, str]:
    path = tmp_path / "ds_config.json"
    path.write_text(json.dumps(doc))
    return read_training_config(str(path)).options


@pytest.mark.parametrize("name", ["fp32", "float32", "float", "torch.float32"])
def test_a_deepspeed_config_at_stage_1_runs_it(tmp_path: Path, name: str) -> None:
    doc = {"bf16": {"enabled": True}, "zero_optimization": {"stage": 1}, "data_types": {"grad_accum_dtype": name}}
    assert _read(tmp_path, doc)["grad_accum_dtype"] == "fp32"


def test_a_deepspeed_config_elsewhere_is_said_or_refused(tmp_path: Path) -> None:
    base = {"bf16": {"enabled": True}, "data_types": {"grad_accum_dtype": "fp32"}}
    for zero in ({"stage": 2}, {"stage": 1, "offload_optimizer": {"device": "cpu"}}):
        assert "grad_accum_dtype" not in _read(tmp_path, {**base, "zero_optimization": zero})
    assert "grad_accum_dtype" not in _read(tmp_path, {**base, "data_types": {"grad_accum_dtype": "bf16"}})
    with pytest.raises(InputError, match="DeepSpeed's engine refuses the mix"):
        _read(tmp_path, {**base, "zero_optimization": {"stage": 0}})
    with pytest.raises(InputError, match="DeepSpeed's DtypeEnum"):
        _read(tmp_path, {**base, "zero_optimization": {"stage": 1}, "data_types": {"grad_accum_dtype": "FP32"}})
    with pytest.raises(InputError, match="must be a mapping"):
        _read(tmp_path, {**base, "data_types": "fp32"})


def test_its_advice_does_not_offer_an_overlap_it_cannot_run() -> None:
    """BF16_Optimizer's reduction runs after the backward (engine.py _backward_epilogue, allreduce_gradients), whatever
    zero_optimization.overlap_comm says: the advice offers accumulation, not --overlap-comm."""
    model, topology = load_model("llama-8b"), load_topology("dgx-h100")
    plain = estimate(model, topology, _plan(dp=64, grad_dtype="fp32"))
    bf16 = estimate(model, topology, _plan(dp=64, grad_accum_dtype="fp32"))
    (said,) = [w.action for w in bf16.warnings if w.code == "exposed-comm"]
    assert "whatever --overlap-comm says" in said and "--accum" in said
    assert [w.action for w in plain.warnings if w.code == "exposed-comm"] == [
        "nothing overlaps these collectives: --overlap-comm true hides them behind the backward pass"
    ]


def test_megatron_deepspeed_adds_the_bf16_gradients_beside_its_fp32_ones() -> None:
    """Megatron-DeepSpeed under DeepSpeed's engine (pipe/engine.py _exec_backward_pass at v0.7.0 and v0.16.0: each
    backward's update_hp_grads): the fp32 buffer is the main gradient Megatron's recipe already holds, the bf16
    param.grad (2 bytes) comes beside it, and the add (18 bytes a parameter) joins each micro-batch's backward."""
    model, topology = load_model("llama-70b"), load_topology("dgx-h100")
    base = {"dp": 8, "tp": 4, "pp": 4, "zero": 1, "global_batch": 256, "recompute": "none"}
    plain = estimate(model, topology, Options.model_validate(base))
    bf16 = estimate(model, topology, Options.model_validate({**base, "grad_accum_dtype": "fp32"}))
    params = [s.params for s in plain.layout.stages]
    assert [s.params for s in bf16.layout.stages] == params
    grown = [b.memory_bytes - a.memory_bytes for a, b in zip(plain.layout.stages, bf16.layout.stages, strict=True)]
    # the rank's share of its stage's parameters (TP 4), at 2 bytes each, allocated and reserved alike
    assert grown == pytest.approx([2 * p for p in params], rel=0.05)
    assert bf16.time.step_seconds > plain.time.step_seconds
    # pure data parallelism with Megatron's layers: the same two bytes at stage 1
    pure = {"dp": 8, "framework": "megatron", "zero": 1, "recompute": "full"}
    rows = [
        next(r for r in estimate(model, topology, Options.model_validate(o)).memory.stages if r.stage == 1)
        for o in (pure, {**pure, "grad_accum_dtype": "fp32"})
    ]
    assert rows[1].grads_bytes - rows[0].grads_bytes == 2 * plain.model.params_total


def test_a_stage_0_mix_is_refused_as_the_engine_refuses_it(tmp_path: Path) -> None:
    """engine.py _do_optimizer_sanity_check at edaa722: without ZeRO, a gradient accumulation dtype other than the
    model's raises NotImplementedError ("unsupported mix of model_dtype and grad_accum_dtype")."""
    for model, accum in (({"fp16": {"enabled": True}}, "fp32"), ({}, "bf16"), ({"bf16": {"enabled": True}}, "int8")):
        with pytest.raises(InputError, match="refuses the mix"):
            _read(tmp_path, {**model, "zero_optimization": {"stage": 0}, "data_types": {"grad_accum_dtype": accum}})


def test_megatron_deepspeed_casts_its_buffer_for_the_reduction_as_deepspeed_does() -> None:
    """The engine reduces BF16_Optimizer's buffer whatever layers it trains (allreduce_bucket's cast): under Megatron's
    recipe too, a bf16 copy of every gradient at the boundary, none where the reduction is fp32."""
    recipe = bf16_optimizer_states(recipe_for("megatron", "bf16"))
    for grad_bytes, copy in ((2.0, 2 * P), (4.0, 0.0)):
        buf = buffers(1, "megatron", recipe, grad_bytes, P, 500 * MB, 1e9, 1e9, shard_ranks=N)
        assert (buf.buckets, buf.at_step) == (0.0, copy)
    s1 = model_states(P, N, 1, recipe)
    assert (s1.params, s1.grads, s1.backward_grads, s1.optimizer) == (2 * P, 6 * P, 2 * P, 12 * P / N)


def test_its_step_passes_over_the_whole_buffer() -> None:
    """bf16_optimizer.py step at edaa722: the global norm reads the fp32 buffer (4 bytes); engine.py allreduce_bucket
    casts it to bf16 and back (4 + 2, 2 + 4) and averages it in place (2 + 2); clear_hp_grads and zero_grad zero it
    (4 + 4): 28 bytes a parameter, 20 where it is reduced in fp32 (no cast; the average 4 + 4)."""
    from dpcost.engine.ops import bf16_optimizer_step_bytes

    assert bf16_optimizer_step_bytes(P, 2.0) == 28 * P
    assert bf16_optimizer_step_bytes(P, 4.0) == 20 * P
    model, topology = load_model("llama-8b"), load_topology("dgx-h100")
    plain, bf16 = (estimate(model, topology, _plan(**extra)) for extra in ({}, {"grad_accum_dtype": "fp32"}))
    optimizer = [next(p.seconds_per_step for p in e.compute.parts if p.part == "optimizer") for e in (plain, bf16)]
    # Adam over the 1/8 shard: reads the gradient twice (2 x 2 bytes in bf16; 2 x 4 from BF16_Optimizer's fp32
    # views), reads and writes its two fp32 moments (16) and the fp32 master (8), writes the bf16 weights (2): 30 and
    # 34 bytes a sharded parameter; BF16_Optimizer adds 28 bytes of every parameter (8 shards' worth each)
    assert optimizer[1] / optimizer[0] == pytest.approx((28 * 8 + 34) / 30)
