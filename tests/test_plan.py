"""`dpcost plan` (engine/search.py): the search finds what an exhaustive loop of `estimate` calls finds, its
pruning bounds are bounds, it never returns a plan that does not fit, and the command it prints costs the plan."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dpcost import Options, estimate, load_model, load_topology
from dpcost.cli import app
from dpcost.engine.layout_report import state_bytes_floor
from dpcost.engine.placement import job_view
from dpcost.engine.search import (
    BUCKET_SCALES,
    Shape,
    ahead_of_next,
    candidates,
    exposed_calls_seconds,
    fsdp_gather_seconds,
    overlapped_calls_bound,
    search,
    states_lower_bound,
    step_lower_bound,
)
from dpcost.errors import InputError

SMALL = [  # (model, topology, GPUs, global batch, sequence length): small enough to cost every candidate
    ("llama-8b", "dgx-h100", 16, 64, 4096),
    ("mixtral-8x7b", "dgx-h100", 16, 32, 4096),
    # a Mamba-2 hybrid: Mamba, attention and MLP layers, one TP pair each (layout_step.layer_tp_pairs)
    (str(Path(__file__).parent / "reference" / "hf-configs" / "nemotron-h-8b-base-8k.json"), "dgx-h100", 16, 32, 4096),
]


def _exhaustive(
    name: str, topology: str, gpus: int, global_batch: int, seq_len: int, top: int = 3
) -> list[tuple[float, Options]]:
    """Every candidate and its bucket variants costed by estimate, no pruning: (step, options) of those that fit; and,
    where fewer than `top` fit or the best recomputes every layer, every layout as Megatron-FSDP too (search.py's
    second pass)."""
    model, topo = load_model(name), load_topology(topology)
    fitting: list[tuple[float, Options, str]] = []

    def cost(options: Options) -> None:
        try:
            report = estimate(model, topo, options)
        except (InputError, ValueError):
            return
        if not report.summary.fits:
            return
        fitting.append((report.summary.step_seconds or 0.0, options, report.setup.recompute))
        bucket = report.setup.bucket_bytes
        for scale in BUCKET_SCALES:
            comm = options.communication.model_copy(update={"bucket_bytes": bucket * scale})
            other = options.model_copy(update={"communication": comm})
            r = estimate(model, topo, other)
            if r.summary.fits:
                fitting.append((r.summary.step_seconds or 0.0, other, r.setup.recompute))

    every = list(candidates(model, topo, gpus, Options(dp=1, global_batch=global_batch, seq_len=seq_len)))
    for _shape, options in every:
        cost(options)
    first = min(fitting, key=lambda f: f[0], default=None)
    if len(fitting) < top or (first is not None and first[2] == "full"):
        for shape, options in every:
            if not shape.trivial:
                cost(options.model_copy(update={"plan": options.plan.model_copy(update={"zero": 3})}))
    return sorted(((step, options) for step, options, _ in fitting), key=lambda f: f[0])


@pytest.mark.parametrize(("name", "topology", "gpus", "global_batch", "seq_len"), SMALL)
def test_the_best_plan_is_the_one_an_exhaustive_loop_finds(
    name: str, topology: str, gpus: int, global_batch: int, seq_len: int
) -> None:
    every = _exhaustive(name, topology, gpus, global_batch, seq_len)
    model, topo = load_model(name), load_topology(topology)
    found = search(model, topo, gpus, Options(dp=1, global_batch=global_batch, seq_len=seq_len), top=3)
    assert found.best, "something fits"
    assert found.best[0].report.summary.step_seconds == pytest.approx(every[0][0], rel=1e-12)
    assert found.priced < len(every), "the pruning priced fewer plans than the loop"


def test_megatron_fsdp_layouts_are_searched_where_the_distributed_optimizer_does_not_fit() -> None:
    """Llama 3 8B on 2 H100 at 8 sequences of 8,192 tokens: the distributed optimizer's 6 + 12 / 2 bytes a parameter
    (96 GB at TP 1) leave no room, so every layout is also costed as Megatron-FSDP's optim_grads_params; the best
    plan is the one an exhaustive loop of estimate calls finds over every candidate at ZeRO-1 and, for layouts,
    ZeRO-3 too."""
    model, topo = load_model("llama-8b"), load_topology("dgx-h100")
    base = Options(dp=1, global_batch=8, seq_len=8192)
    fitting = []
    for shape, options in candidates(model, topo, 2, base):
        stages = [options]
        if not shape.trivial:
            stages.append(options.model_copy(update={"plan": options.plan.model_copy(update={"zero": 3})}))
        for staged in stages:
            try:
                report = estimate(model, topo, staged)
            except (InputError, ValueError):
                continue
            if report.summary.fits:
                fitting.append((report.summary.step_seconds or 0.0, report.setup.zero_stage))
    exhaustive = min(fitting)
    assert exhaustive[1] == 3  # no ZeRO-1 layout nor pure-DP plan beats it
    found = search(model, topo, 2, base, top=3)
    assert found.best[0].report.summary.step_seconds == pytest.approx(exhaustive[0], rel=1e-12)
    assert found.best[0].report.setup.zero_stage == 3
    assert found.best[0].options.plan.zero == 3


@pytest.mark.parametrize(("name", "topology", "gpus", "global_batch", "seq_len"), SMALL)
@pytest.mark.parametrize(
    "dtypes",
    [
        {},
        {"grad_dtype": "bf16", "gather_dtype": "fp8", "compute_dtype": "fp8"},
        # overlapped TP and EP calls: the bound counts what they cannot hide (overlapped_calls_bound)
        {"ep_comm_overlap": True, "tp_comm_overlap": True, "sequence_parallel": True},
    ],
)
def test_pruning_bounds_are_lower_bounds(
    name: str, topology: str, gpus: int, global_batch: int, seq_len: int, dtypes: dict[str, str]
) -> None:
    """states_lower_bound never exceeds the memory Megatron's formula gives, with 16-bit gradients and fp8
    weights too, step_lower_bound (with the recomputation the plan runs) never the step; at ZeRO-3 neither does the
    bound over DP x CP, nor fsdp_gather_seconds."""
    model, topo = load_model(name), load_topology(topology)
    checked = 0
    base = Options(dp=1, global_batch=global_batch, seq_len=seq_len, **dtypes)  # type: ignore[arg-type]
    for shape, ones in candidates(model, topo, gpus, base):
        if shape.trivial:
            continue
        threes = ones.model_copy(update={"plan": ones.plan.model_copy(update={"zero": 3})})
        for options in (ones, threes):
            try:
                report = estimate(model, topo, options)
            except (InputError, ValueError):
                continue
            floor = states_lower_bound(model, shape, state_bytes_floor(options))
            if options.plan.zero == 3:  # Megatron-FSDP shards the weights and gradients over DP x CP
                floor /= shape.dp * shape.cp
            assert floor <= report.summary.memory_bytes
            step = report.summary.step_seconds or 0.0
            assert step_lower_bound(model, topo, options, gpus, seq_len, report.setup.recompute) <= step
            if options.plan.zero == 3:
                assert fsdp_gather_seconds(model, topo, options) <= step
            checked += 1
    assert checked > 20


HYBRID = SMALL[2][0]  # Nemotron-H 8B: each Mamba, attention and MLP layer one TP pair (layout_step.layer_tp_pairs)


@pytest.mark.parametrize(
    ("name", "tp", "ep", "dp", "recompute"),
    [
        ("mixtral-8x7b", 8, 1, 2, "full"),
        ("mixtral-8x7b", 2, 8, 8, "full"),
        ("mixtral-8x7b", 1, 8, 16, "full"),
        ("mixtral-8x7b", 4, 2, 4, "full"),
        (HYBRID, 2, 1, 4, "none"),
    ],
)
def test_the_step_bound_counts_the_calls_the_report_shows_overlapping_nothing(
    name: str, tp: int, ep: int, dp: int, recompute: str
) -> None:
    """The bound's model-parallel part is the TP and EP calls the estimate's own layout table lists as not
    overlapped, at the seconds per call it prints for them: both price one call list on one set of groups."""
    model, topo = load_model(name), load_topology("dgx-h100")
    o = Options(dp=dp, tp=tp, ep=ep, global_batch=64, seq_len=4096, sequence_parallel=tp > 1, zero=1,
                recompute=recompute)  # type: ignore[arg-type]  # fmt: skip
    report = estimate(model, topo, o)
    assert report.layout is not None
    shown = sum(
        c.calls_per_micro_batch * c.seconds_per_call
        for c in report.layout.calls
        if not c.overlapped and c.dimension in ("tp", "ep")
    )
    assert shown > 0
    assert exposed_calls_seconds(model, topo, o, 4096, recompute) == pytest.approx(shown, rel=1e-9)


def test_memory_never_falls_as_the_micro_batch_grows() -> None:
    """The pruning's premise, under each recomputation policy: stage 0 holds b x min(PP, m) micro-batches'
    activations, m = B / (DP b); so if the least recomputation that fits does not at b, none does at 2b."""
    model, topo = load_model("llama-70b"), load_topology("dgx-h100")
    for recompute in ("none", "selective"):
        for tp, pp, dp in ((8, 4, 4), (4, 8, 4), (8, 2, 8)):
            totals = []
            for mb in (1, 2, 4, 8):
                o = Options(dp=dp, tp=tp, pp=pp, micro_batch=mb, global_batch=64, seq_len=4096,
                            sequence_parallel=True, zero=1, recompute=recompute)  # fmt: skip
                totals.append(estimate(model, topo, o).summary.memory_bytes)  # at the plan's own m
            assert totals == sorted(totals), (recompute, tp, pp, dp, totals)


@pytest.mark.parametrize(
    ("dtypes", "per_parameter"),
    [
        ({}, 6),  # bf16 weights, fp32 main gradients (Megatron-LM's --bf16 default: grad_reduce_in_fp32)
        ({"grad_dtype": "bf16"}, 4),  # Megatron-Bridge's presets: 16-bit main gradients
        ({"grad_dtype": "bf16", "gather_dtype": "fp8"}, 3),  # and --fp8-param-gather's one-byte weights
    ],
)
def test_states_lower_bound_by_hand(dtypes: dict[str, str], per_parameter: int) -> None:
    """Weights and main gradients per parameter over TP x PP: Llama 3 70B (70.55e9 parameters) on TP8 PP4."""
    model = load_model("llama-70b")
    floor = state_bytes_floor(Options(dp=4, **dtypes))  # type: ignore[arg-type]
    assert floor == per_parameter
    assert states_lower_bound(model, Shape(tp=8, pp=4, dp=4), floor) == pytest.approx(
        per_parameter * 70.55e9 / 32, rel=1e-3
    )


def test_never_returns_a_plan_that_does_not_fit() -> None:
    model, topo = load_model("llama-70b"), load_topology("dgx-h100")
    limit = 40e9
    found = search(model, topo, 64, Options(dp=1, global_batch=128, seq_len=4096), top=5, memory_limit=limit)
    assert found.best
    assert all(f.report.summary.fits and f.report.summary.memory_bytes <= limit for f in found.best)
    steps = [f.report.summary.step_seconds for f in found.best]
    assert steps == sorted(steps)


def test_the_printed_command_costs_the_plan() -> None:
    result = CliRunner().invoke(
        app, ["plan", "-m", "llama-8b", "-g", "16", "--global-batch", "64", "--seq-len", "4096", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    best = doc["plans"][0]
    again = CliRunner().invoke(app, [*shlex.split(best["command"])[1:], "--format", "json"])
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["summary"]["step_seconds"] == pytest.approx(best["step_seconds"], rel=1e-12)
    assert [p["rank"] for p in doc["plans"]] == list(range(1, len(doc["plans"]) + 1))
    assert all(p["ahead_of_next"] for p in doc["plans"][:-1]) and doc["plans"][-1]["ahead_of_next"] == ""


def test_nothing_fits_says_so() -> None:
    result = CliRunner().invoke(app, ["plan", "-m", "llama-405b", "-g", "8", "--global-batch", "8"])
    assert result.exit_code == 0, result.output
    assert "no plan of" in result.output and "fits" in result.output


@pytest.mark.parametrize(
    ("args", "where"),
    [
        (["-g", "0"], "--gpus"),
        (["-g", "1Mi"], "--gpus"),
        (["-g", "many"], "--gpus"),
        (["-g", "16", "--max-memory", "70"], "--max-memory"),
        (["-g", "16", "--top", "0"], "--top"),
        (["-g", "16", "--global-batch", "0"], "--global-batch"),
        # the search's bounds read the GPU's peak before any plan is prepared (fuzz seed 11: exit 3)
        (["-g", "16", "--compute-dtype", "nvfp4"], "--compute-dtype"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], where: str) -> None:
    result = CliRunner().invoke(app, ["plan", "-m", "llama-8b", *args])
    assert result.exit_code == 2, result.output
    assert where in result.output and "Traceback" not in result.output


def test_check_holds_a_plan_within_x_of_the_best() -> None:
    """`check --max-behind-best`: the best plan's own command is 0% behind; a plain DDP plan with full
    recomputation is far behind on the same 16 GPUs."""
    result = CliRunner().invoke(
        app, ["plan", "-m", "llama-8b", "-g", "16", "--global-batch", "64", "--seq-len", "4096", "--format", "json"]
    )
    best = json.loads(result.stdout)["plans"][0]["command"]
    args = ["check", *shlex.split(best)[2:], "--max-behind-best", "0.1%", "--format", "json"]
    held = CliRunner().invoke(app, args)
    assert held.exit_code == 0, held.output
    check = json.loads(held.stdout)["scenarios"][0]["checks"][0]
    assert check["check"] == "max_behind_best" and check["value"] == pytest.approx(0.0, abs=1e-9)
    slow = ["check", "-m", "llama-8b", "--dp", "16", "--global-batch", "64", "--seq-len", "4096", "--framework",
            "ddp", "--recompute", "full", "--compute-model", "ops", "--max-behind-best", "5%"]  # fmt: skip
    behind = CliRunner().invoke(app, slow)
    assert behind.exit_code == 1, behind.output
    assert "--max-behind-best" in behind.output


def test_a_plan_that_does_not_fit_is_behind_every_plan_that_does() -> None:
    """A plan that cannot run is within no distance of the best that can: --max-behind-best fails it (exit 1, "a
    check failed"), though its step is as fast as the best's; and where no plan fits on its GPUs at all (Llama 3 405B
    on 8 H100s: 857 GB per GPU at best) the check fails too, where it had refused the input (exit 2)."""
    ddp = ["check", "-m", "llama-70b", "--dp", "512", "--zero", "0", "--recompute", "none", "--max-behind-best", "50%",
           "--format", "json"]  # fmt: skip
    result = CliRunner().invoke(app, ddp)
    assert result.exit_code == 1, result.output
    scenario = json.loads(result.stdout)["scenarios"][0]
    assert not scenario["summary"]["fits"] and scenario["checks"][0]["value"] <= 0.5
    assert scenario["checks"][0]["passed"] is False
    nothing = CliRunner().invoke(app, ["check", "-m", "llama-405b", "--dp", "8", "--max-behind-best", "10%"])
    assert nothing.exit_code == 1, nothing.output
    assert "--max-behind-best: the plan does not fit" in nothing.output


def test_a_plan_faster_than_every_plan_searched_is_the_best(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scenario that fits is a plan on its GPUs: with options the search does not vary (a straggler, which a
    layout's costing ignores, or ZeRO++) it can beat every plan searched, and then it is the best, 0% behind, never a
    negative fraction (found by benchmarks/fuzz.py). The search is made to find only slower plans here: which plans
    beat a scenario is the model's to say, and moves with it."""
    import types

    import dpcost.engine.search as search_module

    def slower(*args: object, **kwargs: object) -> object:  # a best plan of 1e9 s
        summary = types.SimpleNamespace(step_seconds=1e9)
        return types.SimpleNamespace(best=[types.SimpleNamespace(report=types.SimpleNamespace(summary=summary))])

    monkeypatch.setattr(search_module, "search", slower)
    args = ["check", "-m", "llama-8b", "--dp", "512", "--skew", "10", "--zeropp", "qgz", "--max-behind-best", "50%",
            "--format", "json"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    check = json.loads(result.stdout)["scenarios"][0]["checks"][0]
    assert check["check"] == "max_behind_best" and check["value"] == 0.0


def test_options_as_flags_give_the_same_options() -> None:
    """Options.flags(), which writes each plan's command, spells every kind of value as the CLI reads it."""
    options = Options(dp=64, tp=8, pp=4, global_batch=512, seq_len=8192, sequence_parallel=True, zero=1,
                      recompute="selective", recompute_modules=("core_attn", "mlp"), bucket_bytes=26214400.0,
                      flash_attention=False, sync_jitter=0.01, compute_model="ops", nvls=False)  # fmt: skip
    args = options.flags()
    assert "--no-flash-attention" in args and args[args.index("--nvls") + 1] == "off"
    result = CliRunner().invoke(app, ["estimate", "-m", "llama-70b", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    setup, layout = doc["setup"], doc["layout"]
    assert (setup["dp"], setup["zero_stage"], setup["recompute"], setup["seq_len"]) == (64, 1, "selective", 8192)
    assert (setup["global_batch"], setup["flash_attention"], setup["sync_jitter"]) == (512, False, 0.01)
    assert (layout["tp"], layout["pp"], layout["sequence_parallel"]) == (8, 4, True)


def test_a_model_given_by_its_count_is_planned_as_pure_data_parallelism() -> None:
    """A layout splits layers and heads; a spec with only `params` has none, so only pure DP is searched."""
    from dpcost.specs import ModelSpec

    spec = ModelSpec(name="p70", title="70B by count", params=70e9, largest_layer_params=1e9)
    found = search(spec, load_topology("dgx-h100"), 64, Options(dp=1, global_batch=64), top=3)
    assert found.best and all(f.report.layout is None for f in found.best)


def test_a_global_batch_no_plan_can_split_is_refused() -> None:
    result = CliRunner().invoke(app, ["plan", "-m", "llama-8b", "-g", "3", "--global-batch", "8"])
    assert result.exit_code == 2 and "--global-batch" in result.output and "Traceback" not in result.output


def test_overlapped_expert_calls_tighten_the_step_bound_and_stay_under_the_step() -> None:
    """DeepSeek-V3's published layout (PP16 EP64 on 2,048 H800s) with its all-to-alls overlapped: none of its TP or
    EP calls overlaps nothing, so the bound had only the matmuls; what the overlapped calls cannot hide behind a
    micro-batch's compute now counts too, and the bound stays below the step `estimate` gives."""
    model, topo = load_model("deepseek-v3"), job_view(load_topology("hgx-h800"), 2048)
    o = Options(dp=128, pp=16, ep=64, global_batch=15360, seq_len=4096, first_stage_layers=4, last_stage_layers=1,
                ep_comm_overlap=True)  # fmt: skip
    report = estimate(model, topo, o)
    recompute = report.setup.recompute
    assert exposed_calls_seconds(model, topo, o, 4096, recompute) == 0.0
    compute = 0.1  # seconds of a micro-batch's compute: the calls take more than they can hide behind it
    assert overlapped_calls_bound(model, topo, o, 4096, recompute, compute) > compute
    assert step_lower_bound(model, topo, o, 2048, 4096, recompute) <= (report.summary.step_seconds or 0.0)


def test_why_a_plan_beats_the_next_names_the_terms_that_make_most_of_the_difference() -> None:
    """The terms named are the largest that make up 90% of the next plan's losses (and gains), at most three: the
    audit found "spends 443 ms more on exposed TP calls" leaving out 308 ms more compute."""
    from dpcost.engine.search import _main_changes

    assert _main_changes([(443.0, "exposed TP calls"), (308.0, "compute"), (10.0, "jitter")]) == [
        (443.0, "exposed TP calls"),
        (308.0, "compute"),
    ]
    assert _main_changes([(10.0, "bubble"), (0.5, "jitter")]) == [(10.0, "bubble")]
    assert len(_main_changes([(1.0, k) for k in "abcdef"])) == 3
    assert _main_changes([]) == []


def test_why_a_plan_beats_the_next_adds_up_to_the_gap() -> None:
    """The terms `ahead_of_next` names, and the rest it sums as "the other terms, net", make up the step the next
    plan loses (each printed to 3 significant figures): the reader can check the sum."""
    import re

    from dpcost.units import parse_seconds

    found = search(load_model("llama-70b"), load_topology("dgx-h100"), 512, Options(dp=1), top=3)
    for this, after in zip(found.best, found.best[1:], strict=False):
        text = ahead_of_next(this.report, after.report)
        gap = after.report.summary.step_seconds - this.report.summary.step_seconds
        terms = re.findall(r"(\d[\d.,]*) (ns|us|ms|s) (more|less)", text)
        named = sum(parse_seconds(value.replace(",", "") + unit) * (1 if way == "more" else -1)
                    for value, unit, way in terms)  # fmt: skip
        assert named == pytest.approx(gap, rel=0.02, abs=2e-6), text
