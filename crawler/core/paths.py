"""Where a crawl publishes (``SITEMAP_OUT_DIR``) and keeps its state
(``SITEMAP_STATE_DIR``).

The state directory defaults to a sibling of the output directory
(``public/`` -> ``public.sitemap-state/``) and may never be inside it: the published
directory is served to the world, the ledger is not.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

LEDGER_RUNNING = "ledger.running.sqlite"
LEDGER = "ledger.sqlite"
LEDGER_FAILED = "ledger.failed.sqlite"
LEDGER_JSONL = "ledger.jsonl"
REPORT = "report.json"
REPORT_HTML = "report.html"
RUNS = "runs.json"
AUDIT_HISTORY = "audit-history.json"
JOB = "job"
LOCK = "lock"


class PathError(ValueError):
    """The output or state directory is unusable."""


@dataclass(frozen=True, slots=True)
class CrawlPaths:
    out: Path
    state: Path

    @classmethod
    def create(cls, out: str | Path, state: str | Path | None = None) -> CrawlPaths:
        out_path = Path(out).expanduser().absolute()
        state_path = (
            Path(state).expanduser().absolute()
            if state
            else out_path.with_name(out_path.name + ".sitemap-state")
        )
        if state_path.resolve().is_relative_to(out_path.resolve()):
            raise PathError(
                f"the state directory {state_path} must not be inside the published "
                f"directory {out_path}"
            )
        return cls(out_path, state_path)

    @property
    def running_ledger(self) -> Path:
        return self.state / LEDGER_RUNNING

    @property
    def ledger(self) -> Path:
        return self.state / LEDGER
