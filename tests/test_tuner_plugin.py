"""aws-ofi-nccl's region tuner (v1.16.3, src/tuner/nccl_ofi_regions.cpp): the tables dpcost reads
(engine/aws_ofi_nccl_regions.json) and the choices they make, read off the source's regions by hand below."""

from __future__ import annotations

import json
from importlib import resources
from typing import get_args

import pytest

from dpcost.catalog import load_topology
from dpcost.engine import tuner_plugin as tp
from dpcost.engine.availability import environment
from dpcost.engine.collectives import collective, fastest
from dpcost.specs import TunerPlugin

MiB, GiB = 2**20, 2**30
DOC = json.loads(resources.files("dpcost.engine").joinpath(tp.REGIONS_FILE).read_text())


def test_the_plugins_named_in_specs_are_the_tables_platforms() -> None:
    assert set(get_args(TunerPlugin)) == set(tp.TUNER_PLUGINS) == set(DOC["platforms"])
    assert "b9e4cc4239ea23f3fb5fedb03da0e7c27b800569" in DOC["source"]


@pytest.mark.parametrize(
    ("plugin", "layouts"),
    [
        # (ranks per node, collective, regions) per platform function of the source
        ("aws-ofi-nccl-p5", {(8, "all_reduce"): 5, (2, "all_reduce"): 8, (1, "all_reduce"): 3, (1, "all_gather"): 1,
                             (1, "reduce_scatter"): 1}),
        ("aws-ofi-nccl-p5en", {(8, "all_reduce"): 5, (8, "all_gather"): 3, (8, "reduce_scatter"): 3,
                               (1, "all_reduce"): 5, (1, "all_gather"): 3, (1, "reduce_scatter"): 3}),
        ("aws-ofi-nccl-p6", {(8, "all_reduce"): 6, (8, "all_gather"): 3, (8, "reduce_scatter"): 3,
                             (1, "all_reduce"): 5, (1, "all_gather"): 4, (1, "reduce_scatter"): 4}),
    ],
)  # fmt: skip
def test_every_platform_has_the_sources_regions(plugin: str, layouts: dict[tuple[int, str], int]) -> None:
    tables = tp.region_tables(plugin)
    got = {(per_node, op): len(regions) for per_node, ops in tables.items() for op, regions in ops.items()}
    assert got == layouts
    assert all(len(r.vertices) >= 3 for ops in tables.values() for regions in ops.values() for r in regions)


def test_extend_region_follows_the_line_to_the_planes_edge() -> None:
    # a vertical pair keeps its size; a sloped one meets the far size at 160 + 32 x (100 GiB - 7.5 GiB) / 1.5 GiB
    assert tp._extended((402653184, 2048), (402653184, 4096)) == (402653184, tp.MAX_RANKS)
    size, ranks = tp._extended((8053063680, 160), (9663676416, 192))
    assert size == tp.MAX_SIZE
    assert ranks == pytest.approx(160 + 32 * (100 * GiB - 8053063680) / 1610612736)
    assert ranks == pytest.approx(2133.33, abs=0.01)


ALL = ("ring", "tree", "nvls_tree", "nvls", "collnet", "pat")


@pytest.mark.parametrize(
    ("op", "ranks", "nodes", "size", "expected"),
    [
        # 8 per node: Tree/LL128 holds every size below 288 MiB (301989888 B) at 128 ranks
        ("all_reduce", 128, 16, 32 * MiB, ("tree", "ll128")),
        ("all_reduce", 128, 16, 256 * MiB, ("tree", "ll128")),
        # Ring/LL128 from there to 2 GiB at 128 ranks; NVLSTree along 2-6 GiB; Ring/Simple right of the line
        # (2.5 GiB, 64) - (7.5 GiB, 160), which crosses 128 ranks at 5.83 GiB
        ("all_reduce", 128, 16, 1 * GiB, ("ring", "ll128")),
        ("all_reduce", 128, 16, 4 * GiB, ("nvls_tree", "simple")),
        ("all_reduce", 128, 16, 8 * GiB, ("ring", "simple")),
        # Tree/LL128 reaches 30 MiB at 16 ranks and 36 MiB at 32
        ("all_reduce", 32, 4, 32 * MiB, ("tree", "ll128")),
        ("all_reduce", 32, 4, 64 * MiB, ("ring", "ll128")),
        # all-gather and reduce-scatter at 8 per node have no regions: NCCL chooses
        ("all_gather", 128, 16, 1 * GiB, None),
        # two nodes or fewer: the plugin leaves NCCL to choose
        ("all_reduce", 16, 2, 32 * MiB, None),
        # 4 ranks per node: no table
        ("all_reduce", 16, 4, 32 * MiB, None),
        # 1 per node: all-gather Ring/Simple below the line (4 MiB, 2) - (8 GiB, 2048): from 252 MiB at 64 ranks
        ("all_gather", 64, 64, 1 * GiB, ("ring", "simple")),
        ("all_gather", 64, 64, 16 * MiB, None),
        ("reduce_scatter", 64, 64, 1 * GiB, ("ring", "simple")),
    ],
)
def test_choices_read_off_the_regions(
    op: str, ranks: int, nodes: int, size: float, expected: tuple[str, str] | None
) -> None:
    assert tp.plugin_choice("aws-ofi-nccl-p5", op, ranks, nodes, size, ALL) == expected


@pytest.mark.parametrize(
    ("plugin", "op", "ranks", "nodes", "size", "expected"),
    [
        # p5en, 8 per node: Tree/LL below 256 KiB at any rank count; Tree/LL128 up to the line through (14 MiB, 16)
        # and (144 MiB, 128); Ring/LL128 right of it up to 512 MiB; NVLSTree up to the line (512 MiB, 32) -
        # (6 GiB, 256), which crosses 128 ranks at 2.86 GiB; Ring/Simple beyond
        ("aws-ofi-nccl-p5en", "all_reduce", 32, 4, 64 * 2**10, ("tree", "ll")),
        ("aws-ofi-nccl-p5en", "all_reduce", 128, 16, 64 * MiB, ("tree", "ll128")),
        ("aws-ofi-nccl-p5en", "all_reduce", 64, 8, 256 * MiB, ("ring", "ll128")),
        ("aws-ofi-nccl-p5en", "all_reduce", 128, 16, 1 * GiB, ("nvls_tree", "simple")),
        ("aws-ofi-nccl-p5en", "all_reduce", 128, 16, 8 * GiB, ("ring", "simple")),
        # p6-b200, 8 per node: Tree/LL in the triangle (0, 16), (256 KiB, 16), (256 KiB, 1M ranks); Tree/LL128 from
        # 256 KiB to 444 MiB at 128 ranks
        ("aws-ofi-nccl-p6", "all_reduce", 64, 8, 128 * 2**10, ("tree", "ll")),
        ("aws-ofi-nccl-p6", "all_reduce", 128, 16, 64 * MiB, ("tree", "ll128")),
        # p6-b200's all-gather: Ring/LL left of the line (1 MiB, 16) - (102 MiB, 1024), 5.8 MiB at 64 ranks;
        # Ring/Simple right of (256 MiB, 16) - (100 GiB, 5107), 1.19 GiB at 64; Ring/LL128 between
        ("aws-ofi-nccl-p6", "all_gather", 64, 8, 1 * MiB, ("ring", "ll")),
        ("aws-ofi-nccl-p6", "all_gather", 64, 8, 64 * MiB, ("ring", "ll128")),
        ("aws-ofi-nccl-p6", "reduce_scatter", 64, 8, 4 * GiB, ("ring", "simple")),
        ("aws-ofi-nccl-p6", "all_gather", 16, 2, 64 * MiB, None),  # two nodes: NCCL chooses
    ],
)
def test_p5en_and_p6_choices_read_off_the_regions(
    plugin: str, op: str, ranks: int, nodes: int, size: float, expected: tuple[str, str] | None
) -> None:
    assert tp.plugin_choice(plugin, op, ranks, nodes, size, ALL) == expected


def test_nvlstree_is_passed_over_where_nccl_cannot_run_it() -> None:
    # 4 GiB at 128 ranks lies only in NVLSTree's region: without NVLS no region holds it
    without_nvls = tuple(a for a in ALL if a != "nvls_tree")
    assert tp.plugin_choice("aws-ofi-nccl-p5", "all_reduce", 128, 16, 4 * GiB, without_nvls) is None


def test_the_collective_runs_the_plugins_pick_on_aws_p5() -> None:
    p5 = load_topology("aws-p5")
    assert p5.tuner_plugin == "aws-ofi-nccl-p5"
    # 128 MiB and 1 GiB at 64 ranks lie right of Tree/LL128's boundary, which passes (112 MiB, 64), and below
    # Ring/LL128's top (2 GiB at 64-128 ranks): Ring/LL128's region
    assert fastest(p5, "all_reduce", 64, 128 * MiB).label == "ring/ll128"
    call = fastest(p5, "all_reduce", 64, GiB)
    assert call.label == "ring/ll128"
    choice = collective(p5, "all_reduce", 64, GiB)
    assert choice.best == call
    # dpcost's own fastest would be NVLSTree/Simple: the plugin's pick is slower, and is what the run gets
    assert min(c.seconds for c in choice.candidates) < call.seconds
    without = p5.model_copy(update={"tuner_plugin": None})
    assert fastest(without, "all_reduce", 64, GiB).label == "nvls_tree/simple"
    assert fastest(without, "all_reduce", 64, GiB).seconds < call.seconds


def test_a_forced_protocol_leaves_only_its_regions() -> None:
    # NCCL_PROTO marks the other protocols unavailable in the cost table; the plugin passes over their regions
    assert tp.plugin_choice("aws-ofi-nccl-p5", "all_reduce", 128, 16, 4 * GiB, ALL, "simple") == ("nvls_tree", "simple")
    assert tp.plugin_choice("aws-ofi-nccl-p5", "all_reduce", 128, 16, 4 * GiB, ALL, "ll128") is None
    assert tp.plugin_choice("aws-ofi-nccl-p5", "all_reduce", 128, 16, 32 * MiB, ALL, "simple") is None


def test_a_forced_algorithm_or_protocol_or_nvls_off_is_obeyed() -> None:
    p5 = load_topology("aws-p5")
    assert fastest(p5, "all_reduce", 128, 32 * MiB, protocol="simple").protocol == "simple"
    assert fastest(p5, "all_reduce", 128, 32 * MiB, algorithm="ring").algorithm == "ring"
    # NCCL_ALGO=Tree leaves Tree's regions: the plugin still sets the protocol
    assert fastest(p5, "all_reduce", 128, 32 * MiB, algorithm="tree").label == "tree/ll128"
    assert fastest(p5, "all_reduce", 128, 4 * GiB).label == "nvls_tree/simple"
    assert fastest(environment(p5, nvls=False), "all_reduce", 128, 4 * GiB).algorithm != "nvls_tree"


def test_other_topologies_choose_as_before() -> None:
    h100 = load_topology("dgx-h100")
    assert h100.tuner_plugin is None
    assert fastest(h100, "all_reduce", 128, 32 * MiB) == collective(h100, "all_reduce", 128, 32 * MiB).candidates[0]


def test_show_topology_names_the_plugin_only_where_one_is_declared() -> None:
    from dpcost.render.catalog import topology_tables

    def labels(name: str) -> list[str]:
        return [row[0] for row in topology_tables(load_topology(name))[0].rows]

    assert "tuner plugin" in labels("aws-p5")
    assert "tuner plugin" not in labels("dgx-h100")


@pytest.mark.parametrize(
    ("topology", "plugin"),
    [("aws-p5", "aws-ofi-nccl-p5"), ("aws-p5en", "aws-ofi-nccl-p5en"), ("aws-p6-b200", "aws-ofi-nccl-p6")],
)
def test_each_aws_topology_runs_its_platforms_tables(topology: str, plugin: str) -> None:
    topo = load_topology(topology)
    assert topo.tuner_plugin == plugin
    # 64 MiB all-reduce on 16 nodes: each platform's Tree/LL128 region holds it (p5: to 288 MiB at 128 ranks;
    # p5en: to 144 MiB; p6: to 444 MiB)
    assert fastest(topo, "all_reduce", 128, 64 * MiB).label == "tree/ll128"


@pytest.mark.parametrize(
    ("plugin", "op", "ranks", "nodes", "size", "protocol", "expected"),
    [
        # on P5's horizontal edge (0, 16) - (2,367,488, 16) of the 1-per-node Tree/LL128 region: edges count as inside
        # (in double alone the foot of the perpendicular lands 2e-10 off, past eps, and the call fell to Ring/LL128)
        ("aws-ofi-nccl-p5", "all_reduce", 16, 16, 1612549, None, ("tree", "ll128")),
        ("aws-ofi-nccl-p5en", "all_gather", 512, 512, 520093696, None, ("pat", "simple")),
        # on P6's long sloped edge (8 GiB, 131,072) - (3 MiB, 48) of its 1-per-node Tree/Simple region, exactly: the
        # plugin's long double puts the foot more than eps away, so it does not count the point as on the edge, and
        # no region holds it (as the compiled v1.16.3 source answers on x86-64)
        ("aws-ofi-nccl-p6", "all_reduce", 64, 64, 4 * MiB, "simple", None),
    ],
)
def test_points_on_an_edge_are_settled_as_the_plugins_long_double_settles_them(
    plugin: str, op: str, ranks: int, nodes: int, size: float, protocol: str | None, expected: tuple[str, str] | None
) -> None:
    assert tp.plugin_choice(plugin, op, ranks, nodes, size, ALL, protocol) == expected
