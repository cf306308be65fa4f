"""Axes and marks read back from a chart's drawn SVG (Vega's SVG renderer, serialised).

Vega draws an axis as ``g.role-axis`` (its ``aria-label`` starts ``X-axis`` or ``Y-axis``)
holding tick lines (``g.role-axis-tick line``) and labels (``g.role-axis-label text``),
each placed by a ``translate(x,y)`` inside the axis group, itself translated into the plot.
Marks are in the same plot coordinates: symbols (points) by their translate, rects by
their path ``M x,y h width ...``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

SVG = "{http://www.w3.org/2000/svg}"
TRANSLATE = re.compile(r"translate\(\s*([-\d.e]+)[ ,]\s*([-\d.e]+)\s*\)")
RECT = re.compile(r"^M([-\d.e]+),([-\d.e]+)h([-\d.e]+)")


@dataclass(frozen=True)
class Axis:
    orient: str  # "x" or "y"
    description: str  # Vega's aria-label
    labels: list[tuple[str, float]]  # text, position along the axis (plot coordinates)
    ticks: list[float]


def _translate(element: ET.Element) -> tuple[float, float]:
    found = TRANSLATE.search(element.get("transform", ""))
    return (float(found.group(1)), float(found.group(2))) if found else (0.0, 0.0)


def _classes(element: ET.Element) -> set[str]:
    return set(element.get("class", "").split())


def _visible(element: ET.Element) -> bool:
    return element.get("opacity", "1") not in ("0", "0.0") and (element.text or "") != ""


def axes(svg: str) -> list[Axis]:
    """Every labelled axis of the chart (grid-only axes have no labels and are left out)."""
    root = ET.fromstring(svg)
    found = []
    for group in root.iter(f"{SVG}g"):
        label = group.get("aria-label", "")
        if "role-axis" not in _classes(group) or label[:1] not in ("X", "Y"):
            continue
        orient = "x" if label.startswith("X") else "y"
        inner = group.find(f"{SVG}g")
        assert inner is not None
        dx, dy = _translate(inner)
        offset = dx if orient == "x" else dy
        ticks, labels = [], []
        for part in inner.iter(f"{SVG}g"):
            kind = _classes(part)
            if "role-axis-tick" in kind:
                for line in part.iter(f"{SVG}line"):
                    x, y = _translate(line)
                    ticks.append(offset + (x if orient == "x" else y))
            if "role-axis-label" in kind:
                for text in part.iter(f"{SVG}text"):
                    if _visible(text):
                        x, y = _translate(text)
                        labels.append((text.text or "", offset + (x if orient == "x" else y)))
        found.append(Axis(orient, label, labels, ticks))
    return found


def point_xs(svg: str) -> list[float]:
    """The x of every symbol (point) drawn as a mark (not in a legend)."""
    return [x for x, _ in points(svg)]


def points(svg: str) -> list[tuple[float, float]]:
    """Where every symbol (point) drawn as a mark (not in a legend) stands."""
    root = ET.fromstring(svg)
    return [
        _translate(path)
        for group in root.iter(f"{SVG}g")
        if {"mark-symbol", "role-mark"} <= _classes(group)
        for path in group.iter(f"{SVG}path")
    ]


def rect_centres(svg: str, role: str = "role-mark") -> list[float]:
    """The horizontal centre of every rect mark drawn (the shaded nights included)."""
    return [centre for centre, _ in rects(svg, role)]


def rects(svg: str, role: str = "role-mark") -> list[tuple[float, str]]:
    """The horizontal centre and the ``aria-label`` (what a screen reader says of it) of
    every rect mark drawn (the shaded nights included)."""
    root = ET.fromstring(svg)
    centres = []
    for group in root.iter(f"{SVG}g"):
        kind = _classes(group)
        if "mark-rect" not in kind or role not in kind:
            continue
        for path in group.iter(f"{SVG}path"):
            found = RECT.match(path.get("d", ""))
            if found:
                dx, _ = _translate(path)
                x, width = float(found.group(1)), float(found.group(3))
                centres.append((dx + x + width / 2, path.get("aria-label", "")))
    return centres


def affine(values: list[float], positions: list[float]) -> tuple[float, float]:
    """``a, b`` with position = a + b * value, from the first and last pair."""
    (v0, p0), (v1, p1) = (values[0], positions[0]), (values[-1], positions[-1])
    b = (p1 - p0) / (v1 - v0)
    return p0 - b * v0, b
