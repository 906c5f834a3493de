"""Fault injection into the app's real (moto-backed) boto3 clients.

Handlers are registered *first* on botocore's event hooks of the cached clients:
- `before-send`: answer an operation with an AWS error response instead of
  sending it, so botocore parses it and applies the configured retry policy
  exactly as it would against AWS. botocore runs every before-send handler, so
  moto's own stub is told to leave a request marked as answered alone;
- `after-call`: let the operation succeed at the server, then raise (a timeout
  that hides a commit: the outcome is unknown to the caller).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable, Optional

from botocore.awsrequest import AWSResponse
from botocore.exceptions import ReadTimeoutError
from moto.core.botocore_stubber import BotocoreStubber, MockRawResponse

from chalicelib.adapters.aws import clients as aws


def _dynamodb_error(code: str, status: int, extra: Optional[dict] = None) -> tuple[int, dict, bytes]:
    body = {"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": f"injected {code}", **(extra or {})}
    return status, {"Content-Type": "application/x-amz-json-1.0", "x-amzn-ErrorType": code}, json.dumps(body).encode()


def _s3_error(code: str, status: int, extra: Optional[dict] = None) -> tuple[int, dict, bytes]:
    body = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
            f"<Message>injected {code}</Message><RequestId>fault</RequestId></Error>").encode()
    return status, {"Content-Type": "application/xml"}, body


@dataclass
class Fault:
    service: str
    operation: str
    code: str
    status: int = 500
    times: Optional[int] = None  # None: every call
    extra: Optional[dict] = None
    calls: int = 0
    injected: int = 0
    bodies: list = field(default_factory=list)  # every DynamoDB call's parameters, answered or not

    def active(self) -> bool:
        return self.times is None or self.injected < self.times


_FAULT_MARK = "_docpub_fault_injected"
_moto_call = BotocoreStubber.__call__


def _moto_skips_injected(self, event_name, request, **kwargs):
    if getattr(request, _FAULT_MARK, False):
        return None  # answered by a fault: the request never reaches the (emulated) server
    return _moto_call(self, event_name, request, **kwargs)


BotocoreStubber.__call__ = _moto_skips_injected


@dataclass
class Faults:
    registered: list[tuple[object, str, Callable]] = field(default_factory=list)

    @staticmethod
    def _client(service: str):
        return {"dynamodb": aws.dynamodb, "s3": aws.s3}[service]()

    def fail(self, service: str, operation: str, code: str, status: int = 500, times: Optional[int] = None,
             extra: Optional[dict] = None) -> Fault:
        """Answer `operation` with error `code` (every time, or the first `times` attempts)."""
        fault = Fault(service, operation, code, status, times, extra)
        build = _dynamodb_error if service == "dynamodb" else _s3_error

        def before_send(request, **_kwargs):
            fault.calls += 1
            if service == "dynamodb":
                fault.bodies.append(json.loads(request.body or b"{}"))
            if not fault.active():
                return None
            fault.injected += 1
            setattr(request, _FAULT_MARK, True)
            status_code, headers, body = build(code, status, fault.extra)
            return AWSResponse(request.url, status_code, headers, MockRawResponse(body))

        self._register(service, f"before-send.{service}.{operation}", before_send)
        return fault

    def conflict(self, times: Optional[int] = None, reason: str = "TransactionConflict") -> Fault:
        """TransactWriteItems cancelled because another transaction held one of its
        items (or, with reason="ThrottlingError", because its partition was hot):
        what real DynamoDB sends under contention and DynamoDB Local never does."""
        fault = self.fail("dynamodb", "TransactWriteItems", "TransactionCanceledException", 400, times)
        handler = self.registered[-1][2]

        def with_reasons(request, **kwargs):
            actions = len(json.loads(request.body or b"{}").get("TransactItems", []))
            fault.extra = {"CancellationReasons": [{"Code": reason, "Message": "injected"}]
                           + [{"Code": "None"}] * (actions - 1)}
            return handler(request, **kwargs)

        self._replace(handler, with_reasons)
        return fault

    def unprocessed(self, operation: str, times: Optional[int] = None) -> Fault:
        """BatchGetItem / BatchWriteItem that processed nothing: every key or item comes
        back unprocessed (a busy partition; DynamoDB Local and moto never do this)."""
        fault = Fault("dynamodb", operation, "Unprocessed", 200, times)

        def before_send(request, **_kwargs):
            fault.calls += 1
            params = json.loads(request.body or b"{}")
            fault.bodies.append(params)
            if not fault.active():
                return None
            fault.injected += 1
            setattr(request, _FAULT_MARK, True)
            answer = ({"Responses": {t: [] for t in params["RequestItems"]}, "UnprocessedKeys": params["RequestItems"]}
                      if operation == "BatchGetItem" else {"UnprocessedItems": params["RequestItems"]})
            return AWSResponse(request.url, 200, {"Content-Type": "application/x-amz-json-1.0"},
                               MockRawResponse(json.dumps(answer).encode()))

        self._register("dynamodb", f"before-send.dynamodb.{operation}", before_send)
        return fault

    def timeout_after_success(self, service: str, operation: str, times: int = 1) -> Fault:
        """Let `operation` reach the server and succeed, then raise a read timeout."""
        fault = Fault(service, operation, "ReadTimeout", 0, times)

        def after_call(**_kwargs):
            fault.calls += 1
            if fault.active():
                fault.injected += 1
                raise ReadTimeoutError(endpoint_url=f"https://{service}.injected")

        self._register(service, f"after-call.{service}.{operation}", after_call)
        return fault

    def commit_then_fail(self, operation: str = "TransactWriteItems", code: str = "InternalServerError",
                         status: int = 500, times: int = 1) -> Fault:
        """DynamoDB applies the request, but the answer the client gets is `code`
        (a 5xx: botocore retries, and the retry meets the committed state). The
        request is applied through a second, uninstrumented client."""
        import boto3

        fault = Fault("dynamodb", operation, code, status, times)
        applier = boto3.client("dynamodb", region_name=aws.dynamodb().meta.region_name)
        method = getattr(applier, "".join("_" + c.lower() if c.isupper() else c for c in operation).lstrip("_"))

        def before_send(request, **_kwargs):
            fault.calls += 1
            if not fault.active():
                return None
            fault.injected += 1
            method(**json.loads(request.body))  # it commits...
            setattr(request, _FAULT_MARK, True)  # ...but the caller hears an error
            status_code, headers, body = _dynamodb_error(code, status)
            return AWSResponse(request.url, status_code, headers, MockRawResponse(body))

        self._register("dynamodb", f"before-send.dynamodb.{operation}", before_send)
        return fault

    def _replace(self, old: Callable, new: Callable) -> None:
        events, event, _ = self.registered.pop()
        events.unregister(event, old)
        events.register_first(event, new)
        self.registered.append((events, event, new))

    def _register(self, service: str, event: str, handler: Callable) -> None:
        events = self._client(service).meta.events
        events.register_first(event, handler)
        self.registered.append((events, event, handler))

    def clear(self) -> None:
        for events, event, handler in self.registered:
            events.unregister(event, handler)
        self.registered.clear()
