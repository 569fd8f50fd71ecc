"""The HTML report of a LoCoMo run: metric tables and plotly charts of recall@k (k = 1 … 20) per category.

A single self-contained file: plotly.js is inlined so the report opens offline, like the product itself. Built with
plain string formatting and `html.escape` because it is a file written to disk, not a page the site serves.
"""

from __future__ import annotations

from html import escape

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from evaluation.scoring import CATEGORY_NAMES

CURVE_KEYS = ("overall", "1", "2", "3", "4", "5")
COLORS = {"memoryos": "#1f77b4", "flat_rag": "#ff7f0e"}


def _label(key: str) -> str:
    return "overall (1–4)" if key == "overall" else f"{key} {CATEGORY_NAMES[int(key)]}"


def _cell(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}"
    return escape(str(value))


def _table(title: str, results: dict, metric: str) -> str:
    systems = [s for s, summary in results["systems"].items() if metric in summary]
    if not systems:
        return ""
    header = "".join(f"<th>{escape(_label(key))}</th>" for key in CURVE_KEYS)
    rows = "".join(
        f"<tr><th>{escape(system)}</th>"
        + "".join(f"<td>{_cell(results['systems'][system][metric].get(key))}</td>" for key in CURVE_KEYS)
        + "</tr>"
        for system in systems
    )
    return f"<h2>{escape(title)}</h2><table><tr><th>system</th>{header}</tr>{rows}</table>"


def recall_figure(results: dict) -> go.Figure:
    """One panel per category, one line per ranked system: mean evidence recall@k for k = 1 … 20."""
    figure = make_subplots(rows=2, cols=3, subplot_titles=[_label(key) for key in CURVE_KEYS], shared_yaxes=True)
    for system, summary in results["systems"].items():
        curve = summary.get("recall_curve")
        if not curve:
            continue
        for index, key in enumerate(CURVE_KEYS):
            values = curve.get(key) or []
            figure.add_trace(
                go.Scatter(
                    x=list(range(1, len(values) + 1)),
                    y=values,
                    mode="lines+markers",
                    name=system,
                    legendgroup=system,
                    showlegend=index == 0,
                    line={"color": COLORS.get(system)},
                ),
                row=index // 3 + 1,
                col=index % 3 + 1,
            )
    figure.update_yaxes(range=[0, 1])
    figure.update_xaxes(title_text="k")
    figure.update_layout(height=650, title="Evidence recall@k", margin={"t": 80})
    return figure


def _facts(results: dict) -> str:
    facts = {
        "data": results["data"],
        "conversations": ", ".join(results["conversations"]),
        "embedder": results["embedder"],
        "LLM mode": results["llm"],
        "reader": results["reader"] or "no answers (run with --answer)",
        "k": results["k"],
        "turns in the input": results["turns"],
        "pages stored": results["pages"],
        "dia_ids in stored pages": results["pages_with_dia_ids"],
        "segments": results["segments"],
        "questions": results["questions"],
        "seconds (ingest)": f"{results['seconds']} ({results['ingest_seconds']})",
        "ranking": results["ranking_note"],
    }
    rows = "".join(f"<tr><th>{escape(k)}</th><td>{escape(str(v))}</td></tr>" for k, v in facts.items())
    return f"<table>{rows}</table>"


def report_html(results: dict) -> str:
    """The report as one HTML document."""
    chart = recall_figure(results).to_html(full_html=False, include_plotlyjs=True)
    sections = [
        _facts(results),
        _table(f"Evidence recall@{results['k']}", results, "recall_at_k"),
        _table("F1 (token sets: MemoryOS / A-Mem / mem0)", results, "f1"),
        _table("F1 (original LoCoMo: stems, multi-hop comma rule)", results, "f1_locomo"),
        _table("BLEU-1", results, "bleu1"),
        chart,
    ]
    style = (
        "body{font-family:system-ui,sans-serif;margin:2rem;max-width:1200px}table{border-collapse:collapse;"
        "margin:1rem 0}th,td{border:1px solid #ccc;padding:.3rem .6rem;text-align:left}td{text-align:right}"
    )
    body = "\n".join(section for section in sections if section)
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>LoCoMo evaluation</title>'
        f"<style>{style}</style></head><body><h1>LoCoMo evaluation ({escape(results['generated_at'])})</h1>"
        f"{body}</body></html>"
    )
