"""The web dashboard: server-rendered pages under /dashboard (a chalice Blueprint).

An adapter like REST and MCP: every rule is in the service layer (accounts,
documents, workspaces, editing, sharing, feedback). A page parses its form,
calls the services (through the page-data service when it shows several
things), and renders a jinja2 template (autoescaped; jinja2 is imported on the
first dashboard request only). Pages work without JavaScript;
/dashboard/static/dashboard.js adds copy buttons, delete confirmation and size
counters. User HTML is never rendered here: versions open through the
sandboxed share route (/d/<id>?v=N).

- `web`: the blueprint, request state, forms, rendering, the `route` decorator.
- one module per page (or group of pages): `accounts`, `documents`, `keys`,
  `apps` (OAuth consent and connected apps), `feedback`, `workspace`, `sso` (single
  sign-on and the workspace's auto-join), `static`.

Importing this package registers every page on `bp`.
"""
from chalicelib.entrypoints.dashboard.web import bp
from chalicelib.entrypoints.dashboard import (  # noqa: F401 - importing registers the pages
    accounts, apps, documents, feedback, keys, people, sso, static, workspace,
)

__all__ = ["bp"]
