"""The catalog as tables: `dpcost models`, `dpcost topologies`, `show model`, `show topology`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dpcost.engine.collectives import hop_latency
from dpcost.engine.nccl_tables import NCCL_VERSION
from dpcost.engine.params import ParamCount, count_params
from dpcost.engine.rates import matmul_in_step, rates_for, slowest_gpu_loss
from dpcost.render.table import Table
from dpcost.specs import InNetworkReduction, ModelSpec, TopologySpec
from dpcost.units import fmt_bandwidth, fmt_bytes, fmt_count, fmt_flops, fmt_seconds

__all__ = ["model_tables", "models_table", "topologies_table", "topology_tables"]


def models_table(models: Sequence[ModelSpec]) -> Table:
    """`dpcost models`: derived against published counts, and the architecture in brief."""
    t = Table(
        "Models",
        ["name", "model", "total", "active", "active excl. emb.", "published", "layers", "hidden", "attention", "MLP"],
        right={2, 3, 4, 5, 6, 7},
        drop=["MLP", "attention", "hidden", "layers", "active excl. emb.", "published", "model"],
    )
    for m in models:
        c = count_params(m)
        a = m.architecture
        pub = m.published.total if m.published else None
        if a is None:
            attention = mlp = "-"
        else:
            attention = "MLA" if a.mla else "MHA" if a.n_kv_heads == a.heads else f"GQA {a.heads}/{a.n_kv_heads}"
            if a.compressed_attention is not None:
                attention = f"CSA/HCA {a.heads}/1"
            mlp = a.mlp
            if a.moe:
                mlp = f"MoE {a.moe.active}/{a.moe.experts}" + (f"+{a.moe.shared}" if a.moe.shared else "")
        t.rows.append(
            [
                m.name,
                m.title,
                fmt_count(c.total),
                fmt_count(c.active),
                fmt_count(c.active_excl_embedding),
                fmt_count(pub) if pub else "-",
                str(a.layers) if a else "-",
                str(a.hidden) if a else "-",
                attention,
                mlp,
            ]
        )
        t.data.append(
            {
                "name": m.name,
                "title": m.title,
                "params_total": int(c.total),
                "params_active": int(c.active),
                "params_active_excl_embedding": int(c.active_excl_embedding),
                "published_total": pub,
                "layers": a.layers if a else None,
            }
        )
    return t


def topologies_table(topologies: Sequence[TopologySpec]) -> Table:
    """`dpcost topologies`: each GPU and its tiers in one line."""
    t = Table(
        "Topologies",
        ["name", "GPU", "HBM", "BF16 dense", "tiers (GPUs per domain: per-GPU bandwidth)"],
        right={2, 3},
        prose=True,
        drop=["BF16 dense", "HBM", "GPU"],
    )
    for topo in topologies:
        tiers = ", ".join(
            f"{x.name} {x.size or 'any'}: {fmt_bandwidth(x.bandwidth)}"
            + (f" 1:{x.oversubscription:g}" if x.oversubscription > 1 else "")
            for x in topo.tiers
        )
        t.rows.append([topo.name, topo.gpu.name, fmt_bytes(topo.gpu.hbm), fmt_flops(topo.gpu.bf16_dense), tiers])
        t.data.append(
            {"name": topo.name, "gpu": topo.gpu.name, "hbm_bytes": topo.gpu.hbm, "tiers": [x.name for x in topo.tiers]}
        )
    return t


def _lookups_said(c: ParamCount) -> str:
    """What the active count with the lookups holds beside the token embedding, in words: most models have only it;
    Gemma 4's per-layer and LongCat-Flash-Lite's n-gram tables are lookups too, counted whole as the embedding is."""
    if c.per_layer_embedding:
        return f"the input lookup tables, {fmt_count(c.per_layer_embedding)} of them beside the token embedding"
    return "the input embedding"


def model_tables(m: ModelSpec) -> tuple[list[Table], dict[str, Any]]:
    """`dpcost show model`: the counts against the published ones, and where the parameters are."""
    c = count_params(m)
    t = Table(f"{m.title} ({m.name})", ["", "value"])
    t.rows += [
        ["source", m.source],
        ["total parameters", fmt_count(c.total)],
        ["active per token", f"{fmt_count(c.active)} with {_lookups_said(c)} (Mistral, Qwen, Meta count so)"],
        [
            "active excl. embedding",
            f"{fmt_count(c.active_excl_embedding)} without the input lookup tables (OpenAI, DeepSeek count so)",
        ],
    ]
    if m.published:
        off = c.total / m.published.total - 1
        t.rows.append(
            [
                "published",
                f"{fmt_count(m.published.total)} total"
                + (f", {fmt_count(m.published.active)} active" if m.published.active else "")
                + f" ({m.published.source}); derived is {off:+.2%}",
            ]
        )
        if m.published.note:
            t.rows.append(["note", m.published.note])
    if c.mtp:
        t.rows.append(["MTP module", f"{fmt_count(c.mtp)}, counted apart: not in the total, not trained by dpcost"])
    t.rows.append(["largest block / module", f"{fmt_count(c.largest_block)} / {fmt_count(c.largest_module)}"])
    a = m.architecture
    if a is not None and a.local_attention is not None:
        local = a.local_attention
        count = sum(n for _, span, n in a.attention_kinds if span is not None)
        seen = f"a sliding window of the last {local.size:,} keys" if local.kind == "sliding" else (
            f"chunks of {local.size:,} tokens, each query the keys before it in its own chunk")  # fmt: skip
        t.rows.append(["local attention", f"{count} of {a.attention_layers} attention layers see {seen}"])
    if a is not None and a.compressed_attention is not None:
        compressed = a.compressed_attention
        kinds = {mixer: n for mixer, _, n in a.attention_kinds}
        t.rows.append([
            "compressed attention",
            f"{kinds.get('compressed sparse attention', 0)} layers also read an entry per {compressed.csa_rate} older "
            f"tokens (an indexer keeps {compressed.index_topk:,}), {kinds.get('heavily compressed attention', 0)} one "
            f"per {compressed.hca_rate} (all); one key-value head of {a.d_head}",
        ])  # fmt: skip
    if a is not None and a.hyper_connected:
        t.rows.append(["residual streams", f"{a.residual_streams} (hyper-connections around every sub-layer)"])
    parts = Table("Where the parameters are", ["component", "parameters", "share"], right={1, 2})
    for label, n in c.components:
        parts.rows.append([label, fmt_count(n), f"{n / c.total:.1%}"])
    doc = {
        "spec": m.model_dump(mode="json", exclude_none=True),
        "params_total": int(c.total),
        "params_active": int(c.active),
        "params_active_excl_embedding": int(c.active_excl_embedding),
        "params_mtp": int(c.mtp),
        "components": {k: int(v) for k, v in c.components},
    }
    return [t, parts], doc


def _slowest_gpu(topo: TopologySpec) -> str:
    """What the slowest of many busy GPUs loses of its sustained rate (rates.slowest_gpu_loss), op by op."""
    r = rates_for(topo.gpu)
    if r.node_drop == r.gpu_spread == 0:
        return "no spread between busy GPUs (none measured for this GPU)"
    eight, *more = (f"{slowest_gpu_loss(r, n):.1%} at {n:,}" for n in (8, 512, 4096))
    return (
        f"loses {eight} GPUs, {', '.join(more)} of its sustained rate "
        f"(node drop {r.node_drop:.2%}, spread {r.gpu_spread:.2%}: engine/rates.py)"
    )


def _matmul_rate(topo: TopologySpec) -> str:
    """The BF16 rate a large matmul runs at in a training step, op by op (rates.rates_for: its benchmark's share
    times the in-step share)."""
    share = rates_for(topo.gpu).gemm
    return (
        f"{fmt_flops(topo.gpu.bf16_dense * share)} ({share:.1%} of peak: its benchmark's x "
        f"{matmul_in_step(topo.gpu):.2f} in a step, engine/rates.py)"
    )


def topology_tables(topo: TopologySpec) -> list[Table]:
    """`dpcost show topology`: the GPU, the sources, and every tier with its effective bandwidth."""
    g = topo.gpu
    t = Table(f"{topo.title} ({topo.name})", ["", "value"])
    t.rows += [
        ["GPU", f"{g.name} ({g.arch})"],
        ["HBM", f"{fmt_bytes(g.hbm)} at {fmt_bandwidth(g.hbm_bandwidth)}"],
        ["dense BF16", fmt_flops(g.bf16_dense)],
        ["matmuls in a step", _matmul_rate(topo)],
        ["call overhead", fmt_seconds(topo.call_overhead)],
        ["hop latencies", f"NCCL {NCCL_VERSION}'s tables x {topo.latency_scale:g}"],
        ["network loss", f"{topo.scaling_loss:.1%} of bandwidth per doubling of nodes beyond two"],
        ["slowest busy GPU", _slowest_gpu(topo)],
    ]
    t.rows += [
        ["crossing loss", f"{x.crossing_loss:.1%} of network bandwidth for calls that reach {x.name}"]
        for x in topo.tiers
        if x.crossing_loss
    ]
    t.rows += [
        [
            "reported latency",
            f"{x.name}'s NIC reports {fmt_seconds(x.reported_latency)} to NCCL, which picks with it; its steps are "
            f"priced with {fmt_seconds(x.hop_latency)} (the hop latency) in its place",
        ]
        for x in topo.tiers
        if x.reported_latency is not None and x.reported_latency != x.hop_latency
    ]
    if topo.tuner_plugin is not None:
        t.rows.append(
            ["tuner plugin", f"{topo.tuner_plugin}: picks the algorithm and protocol where its tables cover a call"]
        )
    t.rows += [["source", s] for s in topo.sources]
    tiers = Table(
        "Tiers (bandwidth per GPU, one direction)",
        [
            "tier",
            "GPUs per domain",
            "bandwidth",
            "efficiency",
            "oversub.",
            "effective",
            "ring step LL/LL128/Simple",
            "in-network reduction",
        ],
        right={1, 2, 3, 4, 5},
        drop=["ring step LL/LL128/Simple", "in-network reduction", "oversub.", "efficiency", "GPUs per domain"],
    )
    for i, x in enumerate(topo.tiers):
        inr = x.in_network_reduction
        tiers.rows.append(
            [
                x.name,
                str(x.size or "any"),
                fmt_bandwidth(x.bandwidth),
                f"{x.efficiency:.2f}",
                f"1:{x.oversubscription:g}",
                fmt_bandwidth(x.effective_bandwidth),
                " / ".join(fmt_seconds(hop_latency(topo, x, i == 0, "ring", p)) for p in ("ll", "ll128", "simple")),
                _reduction(inr) if inr else "-",
            ]
        )
    return [t, tiers]


def _reduction(inr: InNetworkReduction) -> str:
    """A tier's in-network reduction: its kind, efficiency (and, where NVLS loses some per doubling of the ranks
    beyond 8, that share) and latency."""
    loss = f" -{inr.loss_per_doubling:.1%}/doubling beyond 8" if inr.loss_per_doubling else ""
    return f"{inr.kind} (x{inr.efficiency:.2f}{loss}, {fmt_seconds(inr.latency)})"
