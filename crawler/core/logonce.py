"""A warning logged the first time only: a part that meets the same trouble on many
pages says so once, and counts every case in its stats."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any


@dataclass(eq=False)
class LogOnce:
    """Calling it logs *message* % *args* on *logger* at WARNING, marked "(logged once)",
    the first time only."""

    logger: logging.Logger
    logged: bool = False

    def __call__(self, message: str, *args: Any) -> None:
        if not self.logged:
            self.logged = True
            self.logger.warning(f"{message} (logged once)", *args)
