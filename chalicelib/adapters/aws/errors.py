"""botocore's errors end here: every public method of the AWS adapter's
repositories is wrapped by `@storage_errors`, so a ClientError or BotoCoreError
that nothing inside the adapter handled leaves it as the port's `Unavailable`
(503 on every surface), named by its AWS error code for the logs. Nothing
outside chalicelib/adapters/aws/ imports botocore (tests/unit/test_layers.py).
"""
from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from chalicelib.ports.errors import Unavailable

T = TypeVar("T", bound=type)
GUARDED = "__storage_errors__"


def unavailable(exc: BaseException) -> Unavailable:
    """The port's error for a botocore failure the adapter did not handle itself."""
    if isinstance(exc, ClientError):
        return Unavailable((exc.response or {}).get("Error", {}).get("Code") or "ClientError")
    return Unavailable(type(exc).__name__)


def _guard(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except (BotoCoreError, ClientError) as exc:
            raise unavailable(exc) from exc

    return guarded


def storage_errors(cls: T) -> T:
    """Class decorator: every public method raises the port's errors, never botocore's."""
    for name, value in list(vars(cls).items()):
        if not name.startswith("_") and callable(value) and not isinstance(value, (staticmethod, classmethod, type)):
            setattr(cls, name, _guard(value))
    setattr(cls, GUARDED, True)
    return cls
