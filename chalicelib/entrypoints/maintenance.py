"""The scheduled maintenance function (infra/resources.yaml `MaintenanceFunction`).

`handle(event, context)` runs `sweep-orphans` (services/maintenance.py): objects no
version refers to, interrupted deletes, unreferenced bundle files, expired uploads,
CDN invalidations the CDN refused at the time. An EventBridge schedule invokes it
(`OrphanSweepSchedule`, daily by default); operators still run the same sweep on
demand with `make admin ARGS="--aws sweep-orphans"`. The sweep streams the bucket
listing (constant memory) and is safe to repeat or to run beside the API, so a run
cut off by the timeout loses nothing: the next one carries on.
"""
from __future__ import annotations

import json
import logging

log = logging.getLogger("docpub.maintenance")


def handle(event, context) -> dict:
    """Lambda handler for the schedule: one sweep; a failure raises (Lambda counts an
    error, MaintenanceErrorsAlarm fires) and the next scheduled run tries again."""
    from chalicelib import logs, wiring
    from chalicelib.services.maintenance import sweep_orphans

    logs.configure()
    if (event or {}).get("docpub") == "static-sync":  # once after deploying issue 38 (docs/deploy.md)
        from chalicelib.services.static_pages import sync_all

        synced = sync_all(wiring.default_context())
        log.info("static-sync finished", extra={"result": json.dumps(synced, sort_keys=True)})
        return synced
    result = sweep_orphans(wiring.default_context())
    log.info("sweep-orphans finished", extra={"result": json.dumps(result, sort_keys=True)})
    return result
