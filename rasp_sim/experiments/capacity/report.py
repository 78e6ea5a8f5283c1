"""The capacity check's table: each machine's ceiling beside what training reached."""
from __future__ import annotations

from .check import Ceiling
from ..results import setting_label


def ceiling_rows(ceilings: list[Ceiling], trained: list[dict]) -> list[dict]:
    """One row per checked run; `trained` are a summary.json's rows (matched by task,
    setting and backbone), or [] where there is none."""
    stored = {(row["task"], row["setting"], row["variant"]): row for row in trained}
    rows = []
    for ceiling in ceilings:
        config = ceiling.config
        setting = setting_label({"config": config.to_dict()})
        match = stored.get((config.task, setting, config.variant))
        rows.append({
            "task": config.task, "setting": setting, "variant": config.variant,
            "seed": config.seed, "missing": ceiling.missing, "condition": ceiling.condition,
            "ceiling": ceiling.all_answers, "ceiling_defined": ceiling.defined_answers,
            "trained": None if match is None else {
                "accuracy_mean": match.get("accuracy_mean"), "seeds": match.get("seeds"),
                "steps": match.get("steps"),
                "accuracy_by_group_mean": match.get("accuracy_by_group_mean")}})
    return rows


def _accuracy(result: dict | None, key: str = "accuracy", groups: str = "accuracy_by_group",
              prefix: str = "") -> str:
    if not result or not isinstance(result.get(key), (int, float)):
        return "-"
    by_group = result.get(groups) or {}
    parts = " ".join(f"{prefix}{g}:{100 * v:.1f}" for g, v in by_group.items()
                     if isinstance(v, (int, float)))
    return f"{100 * result[key]:.1f}% ({parts})" if parts else f"{100 * result[key]:.1f}%"


def markdown_ceilings(rows: list[dict]) -> str:
    lines = ["| task | setting | backbone | seed | ceiling: every position (by group) | "
             "ceiling: defined answers (by group) | trained (mean, by group) | cond(M) |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        prefix = "<=" if row["task"] == "dyck1" else ""  # Dyck-1 groups: length buckets
        if row["missing"]:
            ceiling, defined = row["missing"], "-"
        else:
            ceiling = _accuracy(row["ceiling"], prefix=prefix)
            defined = _accuracy(row["ceiling_defined"], prefix=prefix)
        trained = _accuracy(row["trained"], "accuracy_mean", "accuracy_by_group_mean", prefix)
        condition = "-" if row["condition"] is None else f"{row['condition']:.0f}"
        lines.append(f"| {row['task']} | {row['setting']} | {row['variant']} | {row['seed']} | "
                     f"{ceiling} | {defined} | {trained} | {condition} |")
    return "\n".join(lines) + "\n"
