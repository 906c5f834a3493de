"""Structured JSON logs, one line per event. Never log secrets: keys, passphrases, session
ids, bodies, webhook URLs (their path or query is often the receiver's secret)."""
from __future__ import annotations

import json
import logging
import sys

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {"level": record.levelname, "logger": record.name, "message": record.getMessage()}
        entry.update({k: v for k, v in record.__dict__.items() if k not in _STANDARD})
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure() -> None:
    logger = logging.getLogger("docpub")
    if getattr(logger, "_docpub_configured", False):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    # One line per event: this is the only handler (a framework's own, e.g. Chalice's plain
    # "docpub - INFO - ..." handler, would print every line a second time).
    for other in list(logger.handlers):
        logger.removeHandler(other)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    setattr(logger, "_docpub_configured", True)
    for name in ("chalicelib",):
        child = logging.getLogger(name)
        child.addHandler(handler)
        child.setLevel(logging.INFO)
        child.propagate = False
