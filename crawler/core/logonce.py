"""A warning logged the first time only (the part's stats count every case)."""

import logging


class LogOnce:
    def __init__(self, logger: logging.Logger) -> None:
        self.logger: logging.Logger | None = logger

    def __call__(self, message: str, *args: object) -> None:
        if self.logger is not None:
            self.logger.warning(f"{message} (logged once)", *args)
            self.logger = None
