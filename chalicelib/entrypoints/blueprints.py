"""A blueprint that more than one Chalice app registers.

app.py's app (the API function) and the share function's (entrypoints/edge.py)
both register the share pages' blueprint. Chalice keeps one app per blueprint
(the last that registered it) and pops a route's settings as an app registers
it; `SharedBlueprint` reads the request of the app dispatching it (apps.new_app's
middleware says which, with `dispatching`) and gives every app its own copy of
each route's settings. In Lambda each function has one app; under test both live
in one process.
"""
from __future__ import annotations

import copy
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator, Optional

from chalice import Blueprint, Chalice

_DISPATCHING: ContextVar[Optional[Chalice]] = ContextVar("docpub_dispatching_app", default=None)


class SharedBlueprint(Blueprint):
    """A blueprint registered on more than one app: its current request, app and
    Lambda context are those of the app now dispatching (set by new_app's middleware)."""

    _registered: Optional[Chalice] = None

    @property  # type: ignore[override]
    def _current_app(self) -> Optional[Chalice]:
        return _DISPATCHING.get() or self._registered

    @_current_app.setter
    def _current_app(self, app: Optional[Chalice]) -> None:
        self._registered = app

    def _register_handler(self, handler_type: str, name: str, user_handler: Any, wrapped_handler: Any,
                          kwargs: dict[str, Any], options: Optional[dict[Any, Any]] = None) -> None:
        # Chalice pops a route's methods and settings out of `kwargs` as an app registers it:
        # a second app would get the route as GET only. Each app registers from its own copy.
        def register(app: Chalice, options: dict[Any, Any]) -> None:
            app._register_handler(handler_type, name, user_handler, wrapped_handler, copy.deepcopy(kwargs), options)

        self._deferred_registrations.append(register)


@contextmanager
def dispatching(app: Chalice) -> Iterator[None]:
    """While `app` handles a request: shared blueprints read their request from it."""
    token = _DISPATCHING.set(app)
    try:
        yield
    finally:
        _DISPATCHING.reset(token)
