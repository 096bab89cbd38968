"""One JSON object per log line, so log pipelines can index reviews by uid, resource and verdict."""

from __future__ import annotations

import datetime as dt
import logging
import sys

import orjson


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {
            "ts": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        if isinstance(record.msg, dict):
            line.update(record.msg)
        else:
            line["msg"] = record.getMessage()
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


def configure(level: str = "info") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # urllib3 announces each of its connection retries as a warning; our callers report the
    # outcome themselves in one line (webhook/kube/errors.py), so the retries are only noise.
    logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)
    # A log line per review: skip the caller lookup (sys._getframe) that no format of ours or
    # gunicorn's prints (the logging HOWTO's "Optimization" section).
    logging._srcfile = None
