"""Turning memory's text into HTML for the pages: citations as links, an evidence span highlighted, times and
figures as a person reads them. Every piece of stored text is escaped before markup is added."""

from __future__ import annotations

import re
from datetime import datetime
from urllib.parse import quote

from markupsafe import Markup, escape

CITATION = re.compile(r"\[(Source|Concept):([A-Za-z0-9_\-:.]+)\]")


def path(*parts: str) -> str:
    """A URL path from its segments, each quoted ("/" inside a segment included)."""
    return "/" + "/".join(quote(str(p), safe="") for p in parts)


def message_url(corpus: str, message_id: str, span: tuple[int, int] | list[int] | None = None) -> str:
    url = path("c", corpus, "message", message_id)
    return f"{url}?span={span[0]}-{span[1]}" if span and span[1] > span[0] else url


def concept_url(corpus: str, concept_id: str) -> str:
    return path("c", corpus, "concept", concept_id)


def cited(
    text: str, corpus: str, numbers: dict[str, int], spans: dict[str, list[int]] | None = None
) -> Markup:
    """`text` with each [Source:id] as a link to its message (its span highlighted), numbered as the evidence
    list numbers it (`numbers`: citation → number), and each [Concept:id] as a link to the concept's page
    (C1, C2, … in order of appearance)."""
    spans = spans or {}
    concepts: dict[str, int] = {}
    out, last = [], 0
    for match in CITATION.finditer(text):
        out.append(escape(text[last : match.start()]))
        kind, ident = match.groups()
        key = f"[{kind}:{ident}]"
        if kind == "Source":
            n = numbers.setdefault(key, len(numbers) + 1)
            href = message_url(corpus, ident, spans.get(ident))
            out.append(Markup('<a class="cite" href="{}" title="{}">{}</a>').format(href, key, n))
        else:
            n = concepts.setdefault(key, len(concepts) + 1)
            href = concept_url(corpus, ident)
            out.append(Markup('<a class="cite concept" href="{}" title="{}">C{}</a>').format(href, key, n))
        last = match.end()
    out.append(escape(text[last:]))
    return Markup("").join(out)


def highlighted(text: str, start: int | None, end: int | None) -> Markup:
    """`text` with [start, end) marked (the evidence span a page was opened on)."""
    if start is None or end is None or not 0 <= start < end <= len(text):
        return escape(text)
    return Markup('{}<mark class="focus">{}</mark>{}').format(text[:start], text[start:end], text[end:])


def parse_span(value: str | None) -> tuple[int, int] | None:
    """ "12-80" → (12, 80); anything else → None."""
    if not value:
        return None
    m = re.fullmatch(r"(\d{1,9})-(\d{1,9})", value)
    return (int(m.group(1)), int(m.group(2))) if m and int(m.group(1)) < int(m.group(2)) else None


def when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value else ""


def day(value: datetime | None) -> str:
    return f"{value:%-d %b %Y}" if value else ""


def figure(value: object) -> str:
    """A quality figure as a person reads it: rates to 3 places, counts with separators."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"
    return str(value)


def filters() -> dict:
    return {"when": when, "day": day, "figure": figure}


# ------------------------------------------------------------------------------------------ the topic map
PALETTE = (
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
    "#b07aa1", "#ff9da7", "#9c755f", "#2f6f8f", "#8cd17d", "#d37295",
)  # fmt: skip
NOISE = "#c9c9c9"
MAP_WIDTH, MAP_HEIGHT, MAP_MARGIN = 1000, 640, 48
LABELLED = 25  # topics labelled before any zoom (the script shows more as room allows)


def map_shapes(topic_map) -> dict:
    """The topic map's drawing in SVG user units: a circle per topic (area by segments, colour by domain),
    its label, and the sampled segment points; positions keep the layout's proportions."""
    colour = {d.domain_id: PALETTE[d.colour % len(PALETTE)] for d in topic_map.domains}
    xs = [t.x for t in topic_map.topics] + [p[0] for p in topic_map.points]
    ys = [t.y for t in topic_map.topics] + [p[1] for p in topic_map.points]
    span_x = (max(xs) - min(xs)) if xs else 1.0
    span_y = (max(ys) - min(ys)) if ys else 1.0
    inner_w, inner_h = MAP_WIDTH - 2 * MAP_MARGIN, MAP_HEIGHT - 2 * MAP_MARGIN
    k = min(inner_w / span_x if span_x else inner_w, inner_h / span_y if span_y else inner_h)
    off_x = MAP_MARGIN + (inner_w - k * span_x) / 2 - k * (min(xs) if xs else 0)
    off_y = MAP_MARGIN + (inner_h - k * span_y) / 2 - k * (min(ys) if ys else 0)
    biggest = max((t.size for t in topic_map.topics), default=1) or 1
    circles = []
    for rank, t in enumerate(sorted(topic_map.topics, key=lambda t: -t.size)):
        circles.append(
            {
                "topic": t,
                "cx": round(off_x + k * t.x, 1),
                "cy": round(off_y + k * t.y, 1),
                "r": round(5 + 24 * (t.size / biggest) ** 0.5, 1),
                "fill": colour.get(t.domain_id, "#7f7f7f"),
                "minor": rank >= LABELLED,
            }
        )
    fills = [c["fill"] for c in circles]
    index = {c["topic"].topic_id: i for i, c in enumerate(circles)}
    order = {t.topic_id: i for i, t in enumerate(topic_map.topics)}
    points = []
    for x, y, i in topic_map.points:
        ti = index.get(topic_map.topics[i].topic_id) if 0 <= i < len(order) else None
        points.append(
            (round(off_x + k * x, 1), round(off_y + k * y, 1), fills[ti] if ti is not None else NOISE)
        )
    legend = [(d, colour[d.domain_id]) for d in topic_map.domains]
    return {"circles": circles, "points": points, "legend": legend, "width": MAP_WIDTH, "height": MAP_HEIGHT}
