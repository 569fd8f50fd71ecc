"""One table for several evaluation sets: each set's recall@5 / @10 per category, every system side by side."""

from __future__ import annotations

from evaluation.locomo_eval import CURVE_MAX_K
from evaluation.scoring import CATEGORY_NAMES

COLUMNS = ("1", "2", "3", "4", "overall")


def sets_table(outcomes: dict[str, dict]) -> str:
    """A Markdown table: one row per (set, system), recall@5 and recall@10 for categories 1–4 and overall (1–4);
    a dash where a set has no question of a category. `outcomes` maps a set's name to locomo_evaluate's document."""
    names = [("overall 1–4" if key == "overall" else CATEGORY_NAMES[int(key)]) for key in COLUMNS]
    header = "| set | system | " + " | ".join(f"{n} @5 / @10" for n in names) + " |"
    lines = [header, "|" + "---|" * (len(COLUMNS) + 2)]
    for name, results in outcomes.items():
        for system, summary in results["systems"].items():
            curve = summary.get("recall_curve")
            if not curve:
                continue
            cells = [_cell(curve.get(key)) for key in COLUMNS]
            lines.append(f"| {name} | {system} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cell(points: list[float | None] | None) -> str:
    if not points or len(points) < min(10, CURVE_MAX_K) or points[4] is None:
        return "–"
    return f"{points[4]:.3f} / {points[9]:.3f}"
