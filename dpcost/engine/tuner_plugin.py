"""The algorithm and protocol a tuner plugin makes NCCL run: aws-ofi-nccl's region tuner on AWS P5 and P5e.

aws-ofi-nccl (the EFA network plugin) carries a tuner that NCCL loads with it, on by default on AWS platforms
since v1.16.0 (its RELEASENOTES.md). On p5.48xlarge and p5e.48xlarge it picks from tables of regions in the
(message bytes, ranks) plane, measured by AWS (src/tuner/nccl_ofi_regions.cpp, region_init_internal_p5_p5e, at
v1.16.3): the first region in the table's order that holds the call's point, its edges included, sets the
algorithm and protocol. A region whose algorithm NCCL cannot run there (NVLSTree with NVLS off) is passed over; a
point in no region, a communicator of two nodes or fewer, or a layout the tables do not cover (ranks per node
other than 8, 2 or 1) leaves the choice to NCCL. docs/sources/aws-ofi-nccl-tuner.md describes it;
tests/reference/nccl/aws-ofi-nccl-regions.json holds the transcription these tables are checked against.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass

__all__ = ["TUNER_PLUGINS", "plugin_choice"]

TUNER_PLUGIN_SOURCE = (
    "aws/aws-ofi-nccl:src/tuner/nccl_ofi_regions.cpp@v1.16.3 (commit b9e4cc4239ea23f3fb5fedb03da0e7c27b800569)"
)

Point = tuple[float, float]  # (message bytes, ranks in the communicator)

# include/tuner/nccl_ofi_tuner_region.h: the plane's far corner
MAX_SIZE = 100.0 * 1024**3
MAX_RANKS = 1024.0 * 1024
_EPS = 1e-10  # is_inside_region's tolerance


@dataclass(frozen=True, slots=True)
class Region:
    algorithm: str
    protocol: str
    vertices: tuple[Point, ...]


def _extended(a: Point, b: Point) -> Point:
    """extend_region(a, b, far corner): where the line through a and b leaves the plane's far corner, keeping a's
    size when a and b share it and a's ranks when they share those."""
    if a[0] == b[0]:
        return (a[0], MAX_RANKS)
    if a[1] == b[1]:
        return (MAX_SIZE, a[1])
    slope = (a[1] - b[1]) / (a[0] - b[0])
    offset = b[1] - slope * b[0]
    ranks_at_max = slope * MAX_SIZE + offset
    return (MAX_SIZE, ranks_at_max) if ranks_at_max < MAX_RANKS else ((MAX_RANKS - offset) / slope, MAX_RANKS)


# fmt: off
# 8 ranks per node (nRanks == 8 * nNodes): all-reduce only
_TREE_LL128_END_8 = _extended((402653184, 2048), (402653184, 4096))
_NVLSTREE_END_8 = _extended((8053063680, 160), (9663676416, 192))
_P5_EIGHT_PER_NODE: dict[str, tuple[Region, ...]] = {
    "all_reduce": (
        Region("tree", "ll128", ((0, 16), (31457280, 16), (37748736, 32), (117440512, 64), (301989888, 128),
                                 (301989888, 256), (335544320, 512), (536870912, 1024), (402653184, 2048),
                                 (402653184, 4096), _TREE_LL128_END_8, (0, _TREE_LL128_END_8[1]))),
        Region("nvls_tree", "simple", ((31457281, 16), (MAX_SIZE, 16), (31457281, 16))),
        Region("ring", "ll128", ((31457280, 17), (1073741824, 17), (2147483648, 64), (2147483648, 128),
                                 (1342177280, 160), (2147483648, 256), (1074790400, 256), (444596224, 160),
                                 (301989888, 128), (117440512, 64), (37748736, 32))),
        Region("nvls_tree", "simple", ((2147483648, 128), (6442450944, 128), (8053063680, 160), (9663676416, 192),
                                       _NVLSTREE_END_8, _TREE_LL128_END_8, (402653184, 4096), (402653184, 2048),
                                       (536870912, 1024), (335544320, 512), (301989888, 256), (310378496, 160),
                                       (444596224, 160), (1074790400, 256), (2684354560, 256), (2147483648, 224),
                                       (1342177280, 160))),
        Region("ring", "simple", ((1073741824, 17), (_NVLSTREE_END_8[0], 17), _NVLSTREE_END_8, (9663676416, 192),
                                  (8053063680, 160), (2684354560, 64), (1610612736, 32))),
    ),
}
# 2 ranks per node (nRanks == 2 * nNodes): all-reduce only
_TREE_LL128_END_2 = _extended((88160256, 128), (178163712, 256))
_TREE_SIMPLE_END_2 = _extended((787480576, 128), (1073741824, 256))
_TREE_SIMPLE_LOW_END_2 = _extended((257114112, 128), (269484032, 256))
_P5_TWO_PER_NODE: dict[str, tuple[Region, ...]] = {
    "all_reduce": (
        Region("tree", "ll128", ((0, 4), (1314816, 4), (1051648, 8), (1051648, 12), (2367488, 16), (5525504, 32),
                                 (9473024, 64), (88160256, 128), (178163712, 256), _TREE_LL128_END_2,
                                 (0, _TREE_LL128_END_2[1]))),
        Region("ring", "ll128", ((1314816, 4), (19736576, 4), (41842688, 8), (296747008, 64), (257114112, 128),
                                 (269484032, 256), (178163712, 256), (88160256, 128), (9473024, 64), (5525504, 32),
                                 (2367488, 16), (1051648, 12), (1051648, 8), (1314816, 4))),
        Region("nvls_tree", "simple", ((19736576, 4), (81844224, 4), (275775488, 8), (275775488, 48),
                                       (296747008, 64), (41842688, 8))),
        Region("tree", "ll128", ((81844224, 4), (269484032, 4), (81844224, 4))),
        Region("tree", "simple", ((269484032, 4), (MAX_SIZE, 4), (269484032, 4))),
        Region("ring", "simple", ((81844224, 5), (MAX_SIZE, 5), (MAX_SIZE, 32), (1073741824, 40), (1073741824, 128),
                                  (787480576, 128), (296747008, 64), (275775488, 48), (275775488, 8),
                                  (81844224, 5))),
        Region("tree", "simple", ((296747008, 64), (787480576, 128), (1073741824, 256), _TREE_SIMPLE_END_2,
                                  _TREE_SIMPLE_LOW_END_2, (269484032, 256), (257114112, 128))),
        Region("nvls_tree", "simple", (_TREE_SIMPLE_END_2, (1073741824, 256), (787480576, 128), (1073741824, 128),
                                       (1073741824, 40), (MAX_SIZE, 32))),
    ),
}
# 1 rank per node (nRanks == nNodes)
_TREE_LL128_END_1 = _extended((9999360, 64), (119477248, 128))
_RING_LL128_END_1 = _extended((4736000, 2), (269484032, 128))
_ALL_GATHER_END_1 = _extended((4194304, 2), (8589934592, 2048))
_REDUCE_SCATTER_END_1 = _extended((8388608, 2), (4294967296, 1024))
_P5_ONE_PER_NODE: dict[str, tuple[Region, ...]] = {
    "all_reduce": (
        Region("tree", "ll128", ((0, 16), (2367488, 16), (9999360, 64), (119477248, 128), _TREE_LL128_END_1)),
        Region("ring", "ll128", ((0, 2), (4736000, 2), (269484032, 128), _RING_LL128_END_1, _TREE_LL128_END_1,
                                 (119477248, 128), (9999360, 64), (2367488, 16), (0, 16))),
        Region("ring", "simple", ((4736000, 2), (MAX_SIZE, 2), _RING_LL128_END_1, (269484032, 128))),
    ),
    "all_gather": (
        Region("ring", "simple", ((4194304, 2), (MAX_SIZE, 2), _ALL_GATHER_END_1, (8589934592, 2048))),
    ),
    "reduce_scatter": (
        Region("ring", "simple", ((8388608, 2), (MAX_SIZE, 2), _REDUCE_SCATTER_END_1, (4294967296, 1024))),
    ),
}
# fmt: on

# plugin -> ranks per node -> op -> regions, in the plugin's order
TUNER_PLUGINS: dict[str, dict[int, dict[str, tuple[Region, ...]]]] = {
    "aws-ofi-nccl-p5": {8: _P5_EIGHT_PER_NODE, 2: _P5_TWO_PER_NODE, 1: _P5_ONE_PER_NODE},
}


def _cross(a: Point, b: Point) -> float:
    return a[0] * b[1] - a[1] * b[0]


def _intersection(x0: Point, x1: Point, y0: Point, y1: Point) -> tuple[int, Point]:
    """The plugin's intersect(): 1 where segment x0-x1 crosses segment y0-y1 strictly inside y0-y1, 0 where it
    meets y0-y1 at an end (or they are parallel), -1 where it misses; with the meeting point on y0-y1's line."""
    dx = (x1[0] - x0[0], x1[1] - x0[1])
    dy = (y1[0] - y0[0], y1[1] - y0[1])
    d = _cross(dy, dx)
    if abs(d) < _EPS:
        return 0, y0
    a = (_cross(x0, dx) - _cross(y0, dx)) / d
    point = (y0[0] + a * dy[0], y0[1] + a * dy[1])
    if a < -_EPS or a > 1 + _EPS:
        return -1, point
    if a < _EPS or a > 1 - _EPS:
        return 0, point
    along_x = (_cross(x0, dy) - _cross(y0, dy)) / d
    return (-1 if along_x < 0 or along_x > 1 else 1), point


def _on_edge(point: Point, y0: Point, y1: Point) -> bool:
    """The plugin's distance() below eps: the point's perpendicular foot lies on the edge, at no distance."""
    normal_end = (point[0] + (y1[1] - y0[1]), point[1] - (y1[0] - y0[0]))
    found, foot = _intersection(point, normal_end, y0, y1)
    return found != -1 and math.hypot(foot[0] - point[0], foot[1] - point[1]) < _EPS


def inside(point: Point, vertices: tuple[Point, ...]) -> bool:
    """is_inside_region(): on an edge, or inside by the parity of a ray cast to beyond the plane's far corner."""
    edges = list(zip(vertices, vertices[1:] + vertices[:1], strict=True))
    if any(_on_edge(point, a, b) for a, b in edges):
        return True
    xs = [v[0] for v in vertices]
    ys = [v[1] for v in vertices]
    if not (min(xs) <= point[0] <= max(xs) and min(ys) <= point[1] <= max(ys)):
        return False
    far = (2.0 * MAX_SIZE, 2.0 * MAX_RANKS)
    return sum(_intersection(point, far, a, b)[0] == 1 for a, b in edges) % 2 == 1


def plugin_choice(
    plugin: str,
    op: str,
    ranks: int,
    nodes: int,
    size: float,
    runnable: Collection[str],
    protocol: str | None = None,
) -> tuple[str, str] | None:
    """(algorithm, protocol) the plugin sets for `op` of `size` bytes on `ranks` GPUs over `nodes` nodes, or None
    where it leaves NCCL to choose (region_get_coll_info_internal_v3). `runnable`: the algorithms NCCL may run;
    `protocol`: the one NCCL_PROTO forces. NCCL marks every other pair unavailable in the cost table it hands the
    plugin, and the plugin passes over those regions."""
    if nodes <= 2 or ranks % nodes:
        return None
    point = (float(size), float(ranks))
    for region in TUNER_PLUGINS[plugin].get(ranks // nodes, {}).get(op, ()):
        allowed = region.algorithm in runnable and protocol in (None, region.protocol)
        if allowed and inside(point, region.vertices):
            return region.algorithm, region.protocol
    return None
