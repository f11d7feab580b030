"""Warnings as coded advice: each says in plain words what a plan gets wrong, under a stable code CI can match.

One function per code, named for it; CODES lists them (docs/json.md prints this table).
"""

from __future__ import annotations

from collections.abc import Sequence

from dpcost.engine.frameworks import FRAMEWORKS
from dpcost.engine.layout import DEFAULT_ORDER
from dpcost.engine.memory import StageMemory
from dpcost.engine.params import ParamCount
from dpcost.engine.report import Advice, Setup, Time
from dpcost.engine.step import SLOWDOWN, SLOWEST_GPU
from dpcost.specs import ModelSpec, TopologySpec
from dpcost.units import fmt_seconds

__all__ = ["CODES", "HEADLINE", "Advice", "headline", "training"]

CODES = {
    "needs-sharding": "ZeRO-0 (plain DDP) does not fit: the model states alone exceed the GPU",
    "oom": "the chosen stage does not fit in GPU memory, with what would",
    "moe-replicated": "a mixture-of-experts model replicates every expert under pure DP",
    "comm-bound": "the step's collectives take longer than the compute they could hide behind",
    "exposed-comm": "more than a tenth of the step waits on communication",
    "losses-at-scale": "more than a twentieth of the step is lost to overlap slowdown, synchronisation jitter and "
    "the slowest GPU's sustained rate",
    "global-batch-growth": "the global batch grows with DP (B = b x a x D)",
    "micro-batch-adjusted": "--global-batch did not divide evenly: the micro-batch was lowered",
    "stragglers": "--skew: every collective waits for the slowest rank",
    "offload-untimed": "offloaded states live in host memory; their PCIe traffic is not timed",
    "mtp-not-counted": "DeepSeek's multi-token-prediction module is left out",
    "text-only-batches": "the model's cross-attention layers over image states are costed as a text-only batch skips "
    "them",
    "partial-domains": "the DP group fills NVLink domains part-way",
    "inference-no-gradients": "serving replicas exchange no gradients",
    "ignored-flags": "training flags given in inference mode",
    "replica-needs-model-parallel": "one serving replica needs more than one GPU",
    "tp-across-domains": "a tensor-parallel group leaves its NVLink domain: its per-layer collectives cross the NICs",
    "pipeline-bubble": "more than a tenth of the step idles in the pipeline's bubble",
    "moe-host-bound": "more than a tenth of the step waits for the host to launch the MoE layers",
    "shared-link-binds": "the DP group crosses a link its GPUs share (a datacenter interconnect) and waits on it",
}


def _hide(t: Time, overlappable: bool = True) -> str:
    """What hides exposed communication: overlap where nothing overlaps it and the framework can, else more compute
    per call."""
    if t.exposed_comm_seconds >= 0.999 * t.comm_seconds:
        if not overlappable:
            return ("nothing overlaps these collectives, whatever --overlap-comm says (BF16_Optimizer reduces after "
                    "the backward): more micro-batches a step (--accum) share them")  # fmt: skip
        return "nothing overlaps these collectives: --overlap-comm true hides them behind the backward pass"
    return "raise --micro-batch: more compute hides each call"


# The warnings that may head the verdict, most pressing first: what stops the plan, then what slows it, then what
# changes its results. The rest (needs-sharding once a sharded stage was chosen, notes on what is not counted)
# stay in the list below the verdict.
HEADLINE = (
    "oom",
    "replica-needs-model-parallel",
    "shared-link-binds",
    "comm-bound",
    "exposed-comm",
    "losses-at-scale",
    "stragglers",
    "tp-across-domains",
    "moe-host-bound",
    "pipeline-bubble",
    "partial-domains",
    "micro-batch-adjusted",
    "global-batch-growth",
    "moe-replicated",
    "offload-untimed",
    "ignored-flags",
)


def headline(warnings: Sequence[Advice]) -> Advice | None:
    """The warning the verdict leads with: the first of HEADLINE's codes the plan earned."""
    by_code = {w.code: w for w in reversed(warnings)}
    return next((by_code[code] for code in HEADLINE if code in by_code), None)


def _advice(code: str, fact: str, action: str = "") -> Advice:
    """A warning whose message is the fact, then what to do about it."""
    return Advice(code=code, message=f"{fact}; {action}" if action else fact, action=action)


def _run_stage(stage: int, framework: str) -> str:
    """How to run ZeRO-`stage`: --zero N where the framework runs it, else the frameworks that do."""
    if framework == "none" or stage in FRAMEWORKS[framework].stages:
        return f"--zero {stage}"
    runs = [name for name, f in FRAMEWORKS.items() if stage in f.stages]
    return f"{FRAMEWORKS[framework].title} does not run it; --framework {' or '.join(runs)} does"


def _gb(x: float) -> str:
    return f"{x / 1e9:,.1f} GB"


def needs_sharding(rows: Sequence[StageMemory], topology: TopologySpec, framework: str) -> Advice:
    first_fit = next((r.stage for r in rows if r.fits), None)
    action = ""
    if first_fit is not None:
        action = f"ZeRO-{first_fit} is the first stage that fits"
        if framework != "none" and first_fit not in FRAMEWORKS[framework].stages:
            action += f" ({_run_stage(first_fit, framework)})"
    return _advice(
        "needs-sharding",
        f"does not fit without sharding: ZeRO-0 (plain DDP) needs {_gb(rows[0].total)} per GPU "
        f"({_gb(rows[0].model_states)} of model states alone), the {topology.gpu.name} has {_gb(topology.gpu.hbm)}",
        action,
    )


def oom(
    setup: Setup,
    rows: Sequence[StageMemory],
    topology: TopologySpec,
    full_recompute: StageMemory | None,
    shard_group: int | None = None,
) -> Advice:
    chosen = rows[setup.zero_stage]
    first_fit = next((r.stage for r in rows if r.fits), None)
    largest = chosen.largest_micro_batch(setup.micro_batch)
    if full_recompute is not None and full_recompute.fits:
        hint = f"with --recompute full it needs {_gb(full_recompute.total)} and fits"
    elif largest >= 1:
        hint = f"micro-batch {largest} fits"
    elif first_fit is not None and first_fit > setup.zero_stage:
        hint = f"ZeRO-{first_fit} fits ({_run_stage(first_fit, setup.framework)})"
    elif shard_group is not None and shard_group < setup.dp:
        hint = (
            f"no micro-batch fits: shard over more than {shard_group} GPUs (a larger --shard-group, up to --dp "
            f"{setup.dp}), or shard the model further (TP/PP/EP)"
        )
    else:
        hint = "no micro-batch fits: shard the model further (TP/PP/EP)"
    return _advice(
        "oom",
        f"out of memory: ZeRO-{setup.zero_stage} needs {_gb(chosen.total)} per GPU, more than the "
        f"{_gb(topology.gpu.hbm)} of HBM",
        hint,
    )


def moe_replicated(model: ModelSpec, counts: ParamCount) -> Advice:
    a = model.architecture
    experts = a.moe.experts if a is not None and a.moe is not None else 0
    return Advice(
        code="moe-replicated",
        message=f"MoE under pure DP: all {experts} routed experts' states live on every replica (no expert "
        "parallelism here), which is why only ZeRO sharding can make it fit; ZeRO-3 gathers a whole MoE block "
        f"({counts.largest_block / 1e9:.1f}B parameters) at a time",
    )


def comm_bound(t: Time, overlappable: bool = True) -> Advice:
    return _advice(
        "comm-bound",
        f"communication-bound: {t.comm_seconds:.3g} s of collectives per step cannot hide behind "
        f"{t.compute_seconds:.3g} s of compute; the step waits {t.exposed_comm_seconds:.3g} s on the network",
        _hide(t, overlappable),
    )


def shared_link_binds(t: Time, topology: TopologySpec, dp: int) -> Advice | None:
    """The DP group spans a tier whose bandwidth its GPUs share (TierSpec.shared_by: a link between sites), and a
    tenth of the step or more waits on the network: what variants of DP would change (engine/variants.py)."""
    below = 1
    for tier in topology.tiers:
        if tier.shared_by > 1 and dp > below and t.exposed_comm_seconds > 0.1 * t.step_seconds:
            site = below
            return _advice(
                "shared-link-binds",
                f"the {tier.name} tier binds: its link, shared by {tier.shared_by} GPUs, leaves "
                f"{t.exposed_comm_seconds:.3g} s of the {t.step_seconds:.3g} s step waiting on the network",
                f"--sync-every 100 (DiLoCo: replicas of {site} GPUs sync every 100 steps), --shard-group {site} (a "
                "replica per site) or --compression; --compare-variants prices each",
            )
        below = tier.size or below
    return None


def exposed_comm(t: Time, overlappable: bool = True) -> Advice:
    return _advice(
        "exposed-comm",
        f"{t.exposed_comm_seconds / t.step_seconds:.0%} of the step is exposed communication "
        "(the last gradient buckets cannot hide behind the backward pass)",
        _hide(t, overlappable),
    )


def losses_at_scale(t: Time, s: Setup) -> Advice:
    terms = {b.term: b.seconds for b in t.breakdown}
    slowed, slowest = terms.get(SLOWDOWN, 0.0), terms.get(SLOWEST_GPU, 0.0)
    jitter = t.losses_seconds - slowed - slowest
    rate = f", {slowest:.3g} s for the slowest GPU's sustained rate" if slowest > 0 else ""
    return _advice(
        "losses-at-scale",
        f"{t.losses_seconds / t.step_seconds:.0%} of the step is lost at scale: {slowed:.3g} s of compute "
        f"slowed by overlapping collectives, {jitter:.3g} s waiting for the slowest of {s.dp} ranks{rate}",
        "fewer, larger collectives (larger buckets or FSDP units) or hybrid sharding wait less",
    )


def global_batch_growth(s: Setup) -> Advice:
    return _advice(
        "global-batch-growth",
        f"global batch = micro-batch {s.micro_batch} x accumulation {s.accumulation} x DP {s.dp} = "
        f"{s.global_batch:,} sequences ({s.tokens_per_step / 1e6:.3g}M tokens); it grows with DP",
        "retune the learning rate and warmup for it, or hold it with --global-batch",
    )


def micro_batch_adjusted(global_batch: int, dp: int, per_rank: int, micro: int, asked: int) -> Advice:
    return Advice(
        code="micro-batch-adjusted",
        message=f"global batch {global_batch} over DP {dp} is {per_rank} sequences per GPU: micro-batch {micro} "
        f"x {per_rank // micro} accumulation steps instead of micro-batch {asked}",
    )


def stragglers(skew: float, t: Time) -> Advice:
    return Advice(
        code="stragglers",
        message=f"stragglers: the slowest rank computes {skew:.0%} longer and every collective waits for it "
        f"({t.straggler_seconds:.3g} s per step)",
    )


def offload_untimed(offload: str, moved: float, gpus_per_node: int) -> Advice:
    return Advice(
        code="offload-untimed",
        message=f"offload ({offload}) keeps {_gb(moved)} per GPU, {_gb(moved * gpus_per_node)} per node, in host "
        "memory; the PCIe traffic and the CPU optimizer step it costs are not in the step time",
    )


def mtp_not_counted(counts: ParamCount) -> Advice:
    return Advice(
        code="mtp-not-counted",
        message=f"the multi-token-prediction module ({counts.mtp / 1e9:.1f}B parameters) is not counted; "
        "dpcost trains the main model",
    )


def text_only_batches(model: ModelSpec, counts: ParamCount) -> Advice:
    a = model.architecture
    layers = sum(1 for m in a.mixers if m == "cross") if a is not None else 0
    if not layers:  # ERNIE-4.5-VL's vision experts (MoESpec.vision_experts)
        return Advice(
            code="text-only-batches",
            message=f"the vision experts ({counts.idle / 1e9:.2f}B parameters) are held, trained and reduced, but no "
            "text token reaches them (Ernie4_5_VLMoeMoeBlock): the image and video tokens' compute and the vision "
            "encoder are not costed",
        )
    return Advice(
        code="text-only-batches",
        message=f"the {layers} cross-attention layers ({counts.idle / 1e9:.2f}B parameters) are held, trained and "
        "reduced, but a batch without images skips them (MllamaTextModel.forward): their compute, the image states "
        "and the vision encoder are not costed",
    )


def tp_across_domains(tp: int, domains: int, domain: int) -> Advice:
    """What puts a TP group across domains: TP larger than one, TP not dividing it, or an --order that does not
    vary TP fastest (its ranks then are not consecutive)."""
    if tp > domain:
        action = f"keep --tp at or below {domain}, and let PP or DP cross nodes"
    elif domain % tp:
        action = f"give --tp a divisor of {domain}, so that no TP group straddles two domains"
    else:
        action = f"put tp first in --order (Megatron-Core's default is {DEFAULT_ORDER}), so that its ranks sit together"
    return _advice(
        "tp-across-domains",
        f"the {tp} ranks of a TP group span {domains} NVLink domains of {domain} GPUs: 4 collectives per layer "
        "cross the network",
        action,
    )


def pipeline_bubble(bubble: float, step: float, pp: int, micro_batches: int, virtual: int, micro_batch: int) -> Advice:
    more = "a larger global batch or a smaller micro-batch" if micro_batch > 1 else "a larger global batch"
    return _advice(
        "pipeline-bubble",
        f"the pipeline idles {bubble / step:.0%} of the step: (PP - 1) / V = {(pp - 1) / virtual:g} micro-batch "
        f"slots idle beside the {micro_batches} that compute",
        f"more micro-batches per step ({more}) or --virtual-stages shrink it",
    )


def moe_host_bound(wait: float, step: float, host_seconds: float, micro_batch: int) -> Advice:
    return _advice(
        "moe-host-bound",
        f"the MoE layers wait {wait / step:.0%} of the step for the host to launch them: each takes at least "
        f"{fmt_seconds(host_seconds)} a micro-batch of {micro_batch}, as its dispatcher syncs host and device",
        "a larger --micro-batch gives each launch more work; full-iteration CUDA graphs take the host away "
        "(--moe-host-time 0 prices them)",
    )


def partial_domains(note: str) -> Advice:
    return Advice(code="partial-domains", message=note)


def inference_no_gradients() -> Advice:
    return Advice(
        code="inference-no-gradients",
        message="inference: data-parallel replicas serve independent requests and exchange no gradients (0 bytes)",
    )


def ignored_flags(flags: Sequence[str], why: str = "apply to training and are ignored in inference mode") -> Advice:
    return _advice("ignored-flags", f"{', '.join(flags)} {why}", "drop them")


def bf16_layers_unpriced(flags: Sequence[str]) -> Advice:
    """--bf16-layers-at-start/-end under --compute-model flops: their weights count, their matmuls' speed does not."""
    fact = (f"{', '.join(flags)} keep those layers' weights in BF16, which memory counts, but --compute-model flops "
            "runs every FLOP at one --mfu: their BF16 matmuls are not priced")  # fmt: skip
    return _advice("ignored-flags", fact, "give --compute-model ops to price them")


def replica_needs_model_parallel(
    weights: float, kv: float, topology: TopologySpec, gpus: int, replicas: int, dp: int
) -> Advice:
    smaller = ", or serve a smaller batch" if weights < topology.gpu.hbm else ""  # the weights alone fit one GPU
    return _advice(
        "replica-needs-model-parallel",
        f"one replica needs {_gb(weights + kv)} of weights and KV cache, more than one {topology.gpu.name} holds "
        f"({_gb(topology.gpu.hbm)}): {gpus} GPUs per replica"
        + (f", {replicas} replicas on {dp} GPUs" if replicas else f"; --dp {dp} cannot hold even one replica"),
        f"shard each replica with tensor or pipeline parallelism (not costed here){smaller}",
    )


def training(
    setup: Setup,
    counts: ParamCount,
    model: ModelSpec,
    rows: Sequence[StageMemory],
    t: Time,
    topology: TopologySpec,
    global_batch_fixed: bool,
    skew: float,
    offload: str,
    full_recompute: StageMemory | None,
    shard_group: int | None = None,
    overlappable: bool = True,
) -> list[Advice]:
    """Every piece of advice a training plan earns, in the order a reader should see them; `overlappable`: whether
    the framework can overlap the gradient reduction with the backward (DeepSpeed's BF16_Optimizer cannot)."""
    out: list[Advice] = []
    if not rows[0].fits:
        out.append(needs_sharding(rows, topology, setup.framework))
    if not rows[setup.zero_stage].fits:
        out.append(oom(setup, rows, topology, full_recompute, shard_group))
    a = model.architecture
    if a is not None and a.moe is not None:
        out.append(moe_replicated(model, counts))
    if (shared := shared_link_binds(t, topology, setup.dp)) is not None:
        out.append(shared)
    if t.bound == "communication":
        out.append(comm_bound(t, overlappable))
    elif t.exposed_comm_seconds > 0.1 * t.step_seconds:
        out.append(exposed_comm(t, overlappable))
    if t.losses_seconds > 0.05 * t.step_seconds:
        out.append(losses_at_scale(t, setup))
    if not global_batch_fixed and setup.dp > 1:
        out.append(global_batch_growth(setup))
    if skew > 0:
        out.append(stragglers(skew, t))
    if offload != "none":
        out.append(offload_untimed(offload, rows[setup.zero_stage].cpu, setup.gpus_per_node))
    if counts.mtp:
        out.append(mtp_not_counted(counts))
    if counts.idle:
        out.append(text_only_batches(model, counts))
    return out
