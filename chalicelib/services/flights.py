"""Single flight: concurrent calls for the same key in one process run the work once; the
others wait for that one result (issue 33: four concurrent requests for a new preview card
each drew it). Across processes (Lambda instances) the caller stores what the work made,
so only the first request per instance can ever do it."""
from __future__ import annotations

import threading
from typing import Any, Callable, Generic, Optional, TypeVar

T = TypeVar("T")


class _Flight:
    __slots__ = ("done", "joined", "result", "error")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.joined = 0
        self.result: Any = None
        self.error: Optional[BaseException] = None


class SingleFlight(Generic[T]):
    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._flights: dict[str, _Flight] = {}

    def run(self, key: str, work: Callable[[], T]) -> T:
        """work() once for every caller with `key` while it runs: the first caller runs it,
        the others wait and get its result (or its exception)."""
        with self._changed:
            flight = self._flights.get(key)
            leader = flight is None
            if flight is None:
                flight = self._flights[key] = _Flight()
            else:
                flight.joined += 1
                self._changed.notify_all()
        if not leader:
            flight.done.wait()
            if flight.error is not None:
                raise flight.error
            return flight.result  # type: ignore[no-any-return]
        try:
            flight.result = work()
            return flight.result  # type: ignore[no-any-return]
        except BaseException as exc:
            flight.error = exc
            raise
        finally:
            with self._changed:
                del self._flights[key]
            flight.done.set()

    def wait_for_joined(self, count: int, timeout: float) -> bool:
        """Until some flight has `count` callers waiting on it (for tests and benches that
        hold the work until every caller has arrived); False after `timeout` seconds."""
        with self._changed:
            return self._changed.wait_for(
                lambda: any(f.joined >= count for f in self._flights.values()), timeout)
