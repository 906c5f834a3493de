"""moto in tests: one lock around every emulated DynamoDB request.

Only tests (and benches) use moto; `make run` runs on the embedded store. These
patches of moto's internals live here, never in the service or its scripts.
"""
from __future__ import annotations


def serialize_emulated_dynamodb() -> None:
    """One lock around every emulated DynamoDB request.

    moto's DynamoDB is not safe under concurrent requests: TransactWriteItems
    deep-copies each table it touches and, when any condition fails, puts that
    copy back, wiping whatever other requests committed in between (documents
    and acknowledged versions vanished under bench/load.py). Real DynamoDB
    isolates transactions; serialising the emulator restores that guarantee.
    """
    import threading

    from moto.dynamodb.responses import DynamoHandler

    if getattr(DynamoHandler, "_docpub_serialized", False):
        return
    lock = threading.RLock()
    call_action = DynamoHandler.call_action

    def serialized(self):
        with lock:
            return call_action(self)

    DynamoHandler.call_action = serialized
    DynamoHandler._docpub_serialized = True
    _skip_table_backup_when_conditions_hold()


def _skip_table_backup_when_conditions_hold() -> None:
    """moto backs up every table a transaction touches (a deep copy: O(table
    size), ~80 ms at 3,000 items) to roll back a failed condition. Under the
    lock above, a transaction whose conditions all hold cannot fail that way, so
    it runs without the copy; one that fails a condition takes moto's own path
    (same errors, same rollback)."""
    import copy

    from moto.dynamodb import models
    from moto.dynamodb.comparisons import get_filter_expression

    original = models.DynamoDBBackend.transact_write_items

    class _NoTableCopy:
        @staticmethod
        def deepcopy(value, memo=None):
            return value if isinstance(value, models.Table) else copy.deepcopy(value, memo)

    touched: list = []  # the keys of the transaction under way (one at a time: the lock above)

    class _TouchedItemsCopy:
        """The backup moto takes to roll back a failed transaction, without copying the table:
        its item index copied (new dicts, same items) and only the items this transaction
        touches deep-copied. A transaction writes only those (moto refuses two actions on one
        item), so putting this back undoes it just as the full copy did."""

        @staticmethod
        def deepcopy(value, memo=None):
            if not isinstance(value, models.Table):
                return copy.deepcopy(value, memo)
            backup = copy.copy(value)
            backup.items = type(value.items)(value.items.default_factory)
            for hash_value, held in value.items.items():
                backup.items[hash_value] = dict(held) if isinstance(held, dict) else held
            for table_name, key in touched:
                if table_name != value.name:
                    continue
                hash_value = models.DynamoType(key[value.hash_key_attr])
                range_value = models.DynamoType(key[value.range_key_attr]) if value.range_key_attr else None
                item = value.get_item(hash_value, range_value)
                if item is None:
                    continue
                if range_value is None:
                    backup.items[hash_value] = copy.deepcopy(item)
                else:
                    backup.items[hash_value][range_value] = copy.deepcopy(item)
            return backup

    def key_of(table, op_type: str, op: dict) -> dict:
        """The item key a transaction action names (a Put names it inside its item)."""
        if op_type != "Put":
            return op["Key"]
        key = {table.hash_key_attr: op["Item"][table.hash_key_attr]}
        if table.range_key_attr is not None:
            key[table.range_key_attr] = op["Item"][table.range_key_attr]
        return key

    def keys_of(backend, transact_items) -> list:
        keys = []
        for action in transact_items:
            op_type, op = next(iter(action.items()))
            table = backend.get_table(op["TableName"])
            keys.append((table.name, key_of(table, op_type, op)))
        return keys

    def conditions_hold(backend, transact_items) -> bool:
        for action in transact_items:
            op_type, op = next(iter(action.items()))
            condition = op.get("ConditionExpression")
            if condition is None:
                continue
            current = backend.get_item(op["TableName"], key_of(backend.get_table(op["TableName"]), op_type, op))
            check = get_filter_expression(condition, op.get("ExpressionAttributeNames"),
                                          op.get("ExpressionAttributeValues"))
            if not check.expr(current):
                return False
        return True

    def transact_write_items(self, transact_items):
        try:
            fast = len(transact_items) <= 100 and conditions_hold(self, transact_items)
        except Exception:  # anything unusual: moto's own path decides
            fast = False
        if not fast:
            try:
                touched[:] = keys_of(self, transact_items)
            except Exception:  # anything unusual: moto's own path, full copy and all
                return original(self, transact_items)
            models.copy = _TouchedItemsCopy
            try:
                return original(self, transact_items)
            finally:
                models.copy = copy
                touched.clear()
        models.copy = _NoTableCopy
        try:
            return original(self, transact_items)
        finally:
            models.copy = copy

    models.DynamoDBBackend.transact_write_items = transact_write_items
