"""Make moto's DynamoDB serialise writes, as real DynamoDB does per item.

moto has no locking: two threads running conditional writes or transactions
at once can both pass their conditions. Real DynamoDB never lets that happen,
and Docpub's correctness (plan caps, gapless versions, rate slots) relies on
it, so the emulator used by tests and `make run` takes one lock per write.
"""
from __future__ import annotations

import functools
import threading

_LOCK = threading.RLock()
_WRITE_METHODS = ("put_item", "update_item", "delete_item", "transact_write_items", "get_item", "query")


def make_dynamodb_atomic() -> None:
    from moto.dynamodb.models import DynamoDBBackend

    if getattr(DynamoDBBackend, "_docpub_atomic", False):
        return
    for name in _WRITE_METHODS:
        original = getattr(DynamoDBBackend, name)

        @functools.wraps(original)
        def locked(self, *args, __original=original, **kwargs):
            with _LOCK:
                return __original(self, *args, **kwargs)

        setattr(DynamoDBBackend, name, locked)
    DynamoDBBackend._docpub_atomic = True
