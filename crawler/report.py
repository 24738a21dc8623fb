"""The end-of-run summary, built from Scrapy stats (the crawl's contract)."""

from __future__ import annotations

from typing import Any

PREFIX = "sitemap/decision/"


def decision_counts(stats: dict[str, Any]) -> dict[str, int]:
    return {k[len(PREFIX) :]: int(v) for k, v in sorted(stats.items()) if k.startswith(PREFIX)}


def format_summary(stats: dict[str, Any]) -> str:
    counts = decision_counts(stats)
    listed = counts.pop("listed", 0)
    lines = [
        f"pages fetched: {stats.get('response_received_count', 0)}",
        f"listed: {listed}",
    ]
    if counts:
        lines.append(
            "excluded: "
            + ", ".join(f"{name} {n}" for name, n in sorted(counts.items(), key=lambda kv: -kv[1]))
        )
    outcome = stats.get("sitemap/outcome")
    if outcome == "published":
        lines.append(
            f"files written: {stats.get('sitemap/files_written', 0)} "
            f"({stats.get('sitemap/urls_written', 0)} URLs) + index {stats.get('sitemap/index_path')}"
        )
        lines.append("add to robots.txt:")
        lines.append(f"Sitemap: {stats.get('sitemap/index_url')}")
    elif outcome:
        lines.append(f"not published: {stats.get('sitemap/message', outcome)}")
    return "\n".join(lines)
