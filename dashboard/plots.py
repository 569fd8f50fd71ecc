"""Plotly figures for the console, built in Python and rendered as a <div> (plotly.js comes from static/)."""

from __future__ import annotations

import html
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

import plotly.graph_objects as go
from django.conf import settings
from django.utils.html import escape, format_html, json_script
from django.utils.safestring import SafeString, mark_safe

from memory.heat import Heat, heat_terms, recency_decay
from memory.models.events import EventKind
from memory.selectors.console import SegmentDetail, SegmentRow, TenantOverview

COLOURS = {"visits": "#2f5bd3", "interaction": "#1a9e75", "recency": "#e0a100", "heat": "#1f2430", "warn": "#b42318"}
CONFIG = {"displaylogo": False, "responsive": True, "modeBarButtonsToRemove": ["lasso2d", "select2d"]}


def _layout(fig: go.Figure, *, height: int, **extra) -> go.Figure:
    fig.update_layout(
        template=go.layout.Template(),  # an empty template keeps the page small and the look ours
        height=height,
        margin={"l": 48, "r": 16, "t": 24, "b": 40},
        font={"family": "system-ui, sans-serif", "size": 12, "color": "#1f2430"},
        paper_bgcolor="white",
        plot_bgcolor="white",
        legend={"orientation": "h", "y": -0.18},
        hovermode="x unified",
    )
    fig.update_layout(**extra)
    fig.update_xaxes(gridcolor="#eef0f3", linecolor="#e5e7eb")
    fig.update_yaxes(gridcolor="#eef0f3", linecolor="#e5e7eb", rangemode="tozero")
    return fig


def figure_html(fig: go.Figure, *, div_id: str) -> SafeString:
    """The figure as an empty div plus its JSON in a data script; static/js/plots.js draws it.

    No inline script: the Content-Security-Policy allows only scripts served by the site itself. The JSON is
    escaped as `json_script` escapes it (`<`, `>` and `&` as \\u escapes), so no stored text can close the tag.
    """
    figure = json.loads(fig.to_json())  # plain JSON types (plotly's encoder handles numpy and dates)
    figure["config"] = CONFIG
    data = json_script(figure, element_id=f"{div_id}-figure")
    data = mark_safe(data.replace("<script ", f'<script data-plotly-for="{escape(div_id)}" ', 1))  # still safe
    return format_html('<div id="{}" class="plotly-graph-div"></div>{}', div_id, data)


def _label(text: str, limit: int = 48) -> str:
    """Stored text as a chart label: shortened, then HTML-escaped, since plotly renders <a>, <b>... in labels."""
    return html.escape(text if len(text) <= limit else text[: limit - 1] + "…", quote=False)


@dataclass(frozen=True)
class HeatPoint:
    at: datetime
    n_visit: int
    l_interaction: int
    r_recency: float
    label: str


def _stacked_terms(items: Iterable[HeatPoint | Heat]) -> tuple[list[float], list[float], list[float]]:
    """The α·N_visit, β·L_interaction and γ·R_recency terms of each point or heat, as three series to stack."""
    terms = [heat_terms(item.n_visit, item.l_interaction, item.r_recency) for item in items]
    return [t[0] for t in terms], [t[1] for t in terms], [t[2] for t in terms]


def heat_points(samples: list, now: datetime, current: Heat, steps: int = 12) -> list[HeatPoint]:
    """The heat history as points to draw: each sample, and between samples the recency decaying as exp(−Δt/μ).

    Counters only change at samples (every change is sampled), so between two samples N_visit and L_interaction
    hold and only R_recency decays; the last stretch ends at `now` with the segment's current heat.
    """
    points: list[HeatPoint] = []
    for sample, following in zip(samples, [*samples[1:], None][: len(samples)], strict=True):
        points.append(
            HeatPoint(sample.at, sample.n_visit, sample.l_interaction, sample.r_recency, sample.get_event_display())
        )
        until = following.at if following else now
        span = (until - sample.at).total_seconds()
        for step in range(1, steps + 1):
            at = sample.at + (until - sample.at) * step / steps
            decay = recency_decay(span * step / steps)
            points.append(HeatPoint(at, sample.n_visit, sample.l_interaction, sample.r_recency * decay, "decay"))
    points.append(HeatPoint(now, current.n_visit, current.l_interaction, current.r_recency, "now"))
    return points


def segment_heat_figure(detail: SegmentDetail, now: datetime) -> go.Figure:
    """The segment's heat over time, its components stacked, with promotions and evictions marked."""
    points = heat_points(detail.samples, now, detail.heat)
    times = [p.at for p in points]
    visits, interaction, recency = _stacked_terms(points)
    fig = go.Figure()
    for name, values, colour in (
        ("α·N_visit (visits)", visits, COLOURS["visits"]),
        ("β·L_interaction (pages)", interaction, COLOURS["interaction"]),
        ("γ·R_recency", recency, COLOURS["recency"]),
    ):
        fig.add_trace(go.Scatter(x=times, y=values, name=name, stackgroup="heat", line={"width": 0.5, "color": colour}))
    total = [v + i + r for v, i, r in zip(visits, interaction, recency, strict=True)]
    fig.add_trace(
        go.Scatter(
            x=times,
            y=total,
            name="heat",
            mode="lines",
            line={"color": COLOURS["heat"], "width": 2},
            text=[p.label for p in points],
            hovertemplate="%{y:.2f} (%{text})<extra>heat</extra>",
        )
    )
    _mark_events(fig, detail)
    fig.add_hline(y=settings.MEMORY_PROMOTION_THRESHOLD, line={"dash": "dash", "color": COLOURS["warn"], "width": 1})
    return _layout(fig, height=340, yaxis_title="heat")


def _mark_events(fig: go.Figure, detail: SegmentDetail) -> None:
    promotions = [s for s in detail.samples if s.event == "promoted"]
    if promotions:
        fig.add_trace(
            go.Scatter(
                x=[s.at for s in promotions],
                y=[s.heat for s in promotions],
                name="promotion",
                mode="markers",
                marker={"symbol": "star", "size": 14, "color": COLOURS["warn"]},
                hovertemplate="promoted to long-term memory<extra></extra>",
            )
        )
    evictions = [e for e in detail.events if e.kind == EventKind.EVICTION]
    if evictions:
        fig.add_trace(
            go.Scatter(
                x=[e.created_at for e in evictions],
                y=[0] * len(evictions),
                name="eviction (another segment)",
                mode="markers",
                marker={"symbol": "x", "size": 11, "color": "#6b7280"},
                text=[f"heat {e.detail.get('heat', '?')}, {e.detail.get('removed_pages', 0)} pages" for e in evictions],
                hovertemplate="segment evicted: %{text}<extra></extra>",
            )
        )


def user_heat_figure(rows: list[SegmentRow], limit: int = 30) -> go.Figure:
    """Every segment's current heat, components stacked, against the promotion threshold τ (hottest on top)."""
    shown = list(reversed(rows[:limit]))
    count = len(shown)
    labels = [f"{count - i}. {_label(r.segment.summary, 34)}" for i, r in enumerate(shown)]  # ranks keep them unique
    visits, interaction, recency = _stacked_terms(r.heat for r in shown)
    fig = go.Figure()
    for name, values, colour in (
        ("α·N_visit", visits, COLOURS["visits"]),
        ("β·L_interaction", interaction, COLOURS["interaction"]),
        ("γ·R_recency", recency, COLOURS["recency"]),
    ):
        fig.add_trace(go.Bar(y=labels, x=values, name=name, orientation="h", marker_color=colour))
    tau = settings.MEMORY_PROMOTION_THRESHOLD
    fig.add_vline(x=tau, line={"dash": "dash", "color": COLOURS["warn"], "width": 1.5})
    fig.add_annotation(x=tau, y=1, yref="paper", text=f"τ = {tau:g}", showarrow=False, yanchor="bottom")
    height = 120 + 26 * max(len(shown), 1)
    _layout(fig, height=height, barmode="stack", hovermode="y unified", xaxis_title="heat")
    fig.update_yaxes(automargin=True)  # room for the topic labels, however long
    return fig


def tiers_figure(overview: TenantOverview) -> go.Figure:
    labels, counts = list(reversed(overview.tiers)), list(reversed(overview.tiers.values()))
    fig = go.Figure(
        go.Bar(y=labels, x=counts, orientation="h", marker_color=COLOURS["visits"], text=counts, textposition="auto")
    )
    _layout(fig, height=280, hovermode="closest", showlegend=False)
    fig.update_yaxes(automargin=True)
    return fig


def updating_figure(overview: TenantOverview) -> go.Figure:
    fig = go.Figure()
    fig.add_trace(
        go.Bar(x=overview.days, y=overview.promotions, name="promotions", marker_color=COLOURS["interaction"])
    )
    fig.add_trace(go.Bar(x=overview.days, y=overview.evictions, name="evictions", marker_color=COLOURS["warn"]))
    return _layout(fig, height=280, barmode="group")


def llm_figure(overview: TenantOverview) -> go.Figure:
    """LLM calls per day (bars: replies and memory updating) and tokens per day (line, right axis)."""
    fig = go.Figure()
    fig.add_trace(
        go.Bar(x=overview.days, y=overview.reply_calls, name="calls: replies", marker_color=COLOURS["visits"])
    )
    fig.add_trace(
        go.Bar(x=overview.days, y=overview.updating_calls, name="calls: updating", marker_color=COLOURS["recency"])
    )
    tokens = [a + b for a, b in zip(overview.reply_tokens, overview.updating_tokens, strict=True)]
    fig.add_trace(
        go.Scatter(x=overview.days, y=tokens, name="tokens", yaxis="y2", line={"color": COLOURS["heat"]}, mode="lines")
    )
    return _layout(
        fig,
        height=300,
        barmode="stack",
        yaxis_title="LLM calls",
        yaxis2={"title": "tokens", "overlaying": "y", "side": "right", "rangemode": "tozero", "showgrid": False},
        margin_r=56,
    )
