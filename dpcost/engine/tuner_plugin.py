"""The algorithm and protocol a tuner plugin makes NCCL run: aws-ofi-nccl's region tuner on AWS P5, P5e, P5en and
P6-B200.

aws-ofi-nccl (the EFA network plugin) carries a tuner that NCCL loads with it, on by default on AWS platforms
since v1.16.0 (its RELEASENOTES.md). On p5/p5e, p5en and p6-b200 it picks from tables of regions in the (message
bytes, ranks) plane, measured by AWS (src/tuner/nccl_ofi_regions.cpp at v1.16.3, one region_init_internal_* per
platform): the first region in the table's order that holds the call's point, its edges included, sets the
algorithm and protocol. A region NCCL cannot run there (NVLSTree with NVLS off; a pair a forced algorithm or
protocol rules out) is passed over; a point in no region, a communicator of two nodes or fewer, or a layout the
tables do not cover (8, 2 or 1 ranks per node, as the platform has them) leaves the choice to NCCL. The tables are
aws_ofi_nccl_regions.json beside this module, transcribed by a script from the C initialisers;
docs/sources/aws-ofi-nccl-tuner.md describes them.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dpcost.specs import allowed_protocols

__all__ = ["TUNER_PLUGINS", "plugin_choice", "region_tables"]

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


# plugin -> the platform's tables in aws_ofi_nccl_regions.json (one per platform the plugin tunes)
TUNER_PLUGINS = ("aws-ofi-nccl-p5", "aws-ofi-nccl-p5en", "aws-ofi-nccl-p6")
REGIONS_FILE = "aws_ofi_nccl_regions.json"


def _point(vertex: Any, extended: dict[str, Point]) -> Point:
    """A transcribed vertex: [bytes, ranks], the plane's corner, or a named extend_region() point (the file's
    notes)."""

    def number(value: Any) -> float:
        if value == "max_size":
            return MAX_SIZE
        if value == "max_ranks":
            return MAX_RANKS
        if isinstance(value, dict):
            ((how, name),) = value.items()
            return extended[name][0 if how == "x_of" else 1]
        return float(value)

    if isinstance(vertex, str):
        return extended[vertex]
    return (number(vertex[0]), number(vertex[1]))


@functools.cache
def region_tables(plugin: str) -> dict[int, dict[str, tuple[Region, ...]]]:
    """The plugin's regions, by ranks per node and collective, in the source's order (read once, when a topology
    that names the plugin first prices a call)."""
    from importlib import resources  # only a topology that names a plugin reads the tables

    doc = json.loads(resources.files("dpcost.engine").joinpath(REGIONS_FILE).read_text())
    out: dict[int, dict[str, tuple[Region, ...]]] = {}
    for per_node, ops in doc["platforms"][plugin].items():
        for op, block in ops.items():
            extended: dict[str, Point] = {}
            for name, (a, b, _corner) in block["extended"].items():
                extended[name] = _extended(_point(a, extended), _point(b, extended))
            regions = tuple(
                Region(r["algorithm"], r["protocol"], tuple(_point(v, extended) for v in r["vertices"]))
                for r in block["regions"]
            )
            out.setdefault(int(per_node), {})[op] = regions
    return out


def _cross(a: Point, b: Point) -> float:
    return a[0] * b[1] - a[1] * b[0]


def _intersection(x0: Point, x1: Point, y0: Point, y1: Point) -> int:
    """The plugin's intersect(): 1 where segment x0-x1 crosses segment y0-y1 strictly inside y0-y1, 0 where it
    meets y0-y1 at an end (or they are parallel), -1 where it misses (its meeting point: _on_edge)."""
    dx = (x1[0] - x0[0], x1[1] - x0[1])
    dy = (y1[0] - y0[0], y1[1] - y0[1])
    d = _cross(dy, dx)
    if abs(d) < _EPS:
        return 0
    a = (_cross(x0, dx) - _cross(y0, dx)) / d
    if a < -_EPS or a > 1 + _EPS:
        return -1
    if a < _EPS or a > 1 - _EPS:
        return 0
    along_x = (_cross(x0, dy) - _cross(y0, dy)) / d
    return -1 if along_x < 0 or along_x > 1 else 1


def _long_double(value: Fraction) -> Fraction:
    """`value` rounded to x86's long double (a 64-bit significand, to nearest, ties to even): the precision in which
    the plugin solves for an edge's meeting point (intersect()'s `a` and vmadd())."""
    if value == 0:
        return value
    magnitude = abs(value)
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if magnitude < Fraction(2) ** exponent:
        exponent -= 1
    scale = Fraction(2) ** (63 - exponent)
    return round(magnitude * scale) / scale * (1 if value > 0 else -1)  # round(): ties to even


def _on_edge(point: Point, y0: Point, y1: Point) -> bool:
    """The plugin's distance() below eps: the foot of the point's perpendicular on the edge's line, solved as
    intersect() solves it (the cross products in double, `a` and the foot a + s * b in long double, stored as a
    double), lies within the edge and at less than eps from the point. In double alone the foot of a point on a long
    edge lands more than eps away, where the plugin's long double finds it on the edge."""
    dx = (y1[1] - y0[1], -(y1[0] - y0[0]))  # x1 - x0 for the perpendicular's far end x1 = point + (dy.y, -dy.x)
    dy = (y1[0] - y0[0], y1[1] - y0[1])
    d = _cross(dy, dx)
    if abs(d) < _EPS:
        return False  # a zero-length edge: the plugin reads an unset point; no sampled call depends on it
    if abs(_cross(dy, (point[0] - y0[0], point[1] - y0[1]))) > 1e-3 * math.sqrt(-d):  # -d = |dy|^2
        return False  # clearly off the edge's line (in double): no rounding brings the foot within eps
    a = _long_double(Fraction(_cross(point, dx) - _cross(y0, dx)) / Fraction(d))
    if a < -_EPS or a > 1 + _EPS:
        return False
    foot = tuple(float(_long_double(Fraction(y0[i]) + _long_double(a * Fraction(dy[i])))) for i in (0, 1))
    return math.sqrt((foot[0] - point[0]) ** 2 + (foot[1] - point[1]) ** 2) < _EPS


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
    return sum(_intersection(point, far, a, b) == 1 for a, b in edges) % 2 == 1


@functools.lru_cache(maxsize=1 << 16)  # a search or sweep asks for the same call many times
def plugin_choice(
    plugin: str,
    op: str,
    ranks: int,
    nodes: int,
    size: float,
    runnable: tuple[str, ...],
    protocol: str | None = None,
) -> tuple[str, str] | None:
    """(algorithm, protocol) the plugin sets for `op` of `size` bytes on `ranks` GPUs over `nodes` nodes, or None
    where it leaves NCCL to choose (region_get_coll_info_internal_v3). `runnable`: the algorithms NCCL may run;
    `protocol`: the ones NCCL_PROTO forces (comma-separated). NCCL marks every other pair unavailable in the cost
    table it hands the plugin, and the plugin passes over those regions."""
    if nodes <= 2 or ranks % nodes:
        return None
    point = (float(size), float(ranks))
    for region in region_tables(plugin).get(ranks // nodes, {}).get(op, ()):
        allowed = region.algorithm in runnable and region.protocol in allowed_protocols(protocol)
        if allowed and inside(point, region.vertices):
            return region.algorithm, region.protocol
    return None
