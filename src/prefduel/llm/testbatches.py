"""The test server's Batch API: uploaded files, batches, their statuses, failed lines, expiry.

`prefduel.llm.testserver` plays OpenAI's Batch API with a `BatchDesk`:

* ``POST /v1/files`` (multipart: ``purpose=batch`` and the JSONL ``file``) stores a file and
  returns its file object; ``GET /v1/files/{id}`` the object, ``GET /v1/files/{id}/content``
  its bytes (input, output and error files alike);
* ``POST /v1/batches`` (``input_file_id``, ``endpoint`` ``/v1/chat/completions``,
  ``completion_window`` ``24h``) creates a batch in ``validating``; ``GET /v1/batches/{id}``
  moves it on at each retrieve: ``validating`` -> ``in_progress`` -> (after `BatchDesk.polls`
  retrieves in progress, and never while `BatchDesk.hold` is set) ``finalizing`` while its
  lines are answered in the background -> ``completed``, ``expired``
  (`BatchDesk.expire`) or ``failed`` (a file over `BatchDesk.max_requests` lines or
  `BatchDesk.max_bytes`, or lines that are not requests); ``GET /v1/batches`` lists them, newest
  first; ``POST /v1/batches/{id}/cancel`` cancels one.

A batch's lines are answered when it finishes, each by the server's own answer path
(`OpenAITestServer.line_reply`: the same answer, schema handling and sampled tokens as an
online call of the same body, counted in `OpenAITestServer.answers`), so a batch run and an
online run get the same answers. A line whose `BatchDesk.faults` schedule gives an ``http``
fault fails with that status (partial failure, in the error file); an expired batch answers its
first ``expire(n)`` lines and lists the others in the error file with code ``batch_expired``.
`BatchDesk.uploaded_lines` counts the request lines uploaded (a resumed run must not upload a
request twice).
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from prefduel.llm.testfaults import Fault, FaultSchedule


class LineAnswerer(Protocol):
    """What a `BatchDesk` needs of its server (`OpenAITestServer.line_reply`): the reply to
    one batch line, answered as an online call of the same body would be."""

    def line_reply(
        self, body: dict[str, Any], headers: Mapping[str, str], faults: Any
    ) -> tuple[int, Any]: ...

#: OpenAI's limits on one batch input file.
MAX_REQUESTS = 50_000
MAX_BYTES = 200_000_000
BATCH_ENDPOINTS = ("/v1/chat/completions",)


@dataclass
class StoredFile:
    """One file the desk holds."""

    id: str
    purpose: str
    filename: str
    data: bytes
    created: int = field(default_factory=lambda: int(time.time()))

    def to_json(self) -> dict[str, Any]:
        """The file object."""
        return {
            "id": self.id,
            "object": "file",
            "bytes": len(self.data),
            "created_at": self.created,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
        }


@dataclass
class StoredBatch:
    """One batch: its status, retrieves seen in progress and result files."""

    id: str
    index: int
    input_file_id: str
    endpoint: str
    window: str
    metadata: Mapping[str, Any] | None
    headers: Mapping[str, str]
    status: str = "validating"
    polled: int = 0
    total: int = 0
    completed: int = 0
    failed: int = 0
    output_file_id: str | None = None
    error_file_id: str | None = None
    errors: list[dict[str, Any]] | None = None
    created: int = field(default_factory=lambda: int(time.time()))

    def to_json(self) -> dict[str, Any]:
        """The batch object."""
        return {
            "id": self.id,
            "object": "batch",
            "endpoint": self.endpoint,
            "errors": {"object": "list", "data": self.errors} if self.errors else None,
            "input_file_id": self.input_file_id,
            "completion_window": self.window,
            "status": self.status,
            "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id,
            "created_at": self.created,
            "request_counts": {
                "total": self.total,
                "completed": self.completed,
                "failed": self.failed,
            },
            "metadata": dict(self.metadata) if self.metadata else None,
        }


class BatchDesk:
    """The Batch API state of one test server (thread-safe).

    Args:
        server: The server whose answer path answers the lines.

    Attributes:
        polls: Retrieves a batch answers ``in_progress`` before it finishes.
        hold: While set, batches stay ``in_progress`` (`release` clears it).
        faults: Fault schedule of the lines (a function of the line's `ReceivedRequest`); an
            ``http`` fault fails the line with its status, other kinds with 500.
        expire: ``(batch index (0, 1, ... in creation order), its lines)`` -> lines answered
            before it expires (None: it does not).
        max_requests: Lines per input file (more: the batch fails validation).
        max_bytes: Bytes per input file.
        uploaded_lines: Request lines uploaded in ``batch`` files so far.
    """

    def __init__(self, server: LineAnswerer) -> None:
        self.server = server
        self.polls = 1
        self.hold = threading.Event()
        self.faults: FaultSchedule | None = None
        self.expire: Callable[[int, int], int | None] | None = None
        self.max_requests = MAX_REQUESTS
        self.max_bytes = MAX_BYTES
        self.uploaded_lines = 0
        self._lock = threading.RLock()
        self._files: dict[str, StoredFile] = {}
        self._batches: dict[str, StoredBatch] = {}

    def release(self) -> None:
        """Let held batches finish."""
        self.hold.clear()

    def batches(self) -> list[dict[str, Any]]:
        """Every batch object, in creation order."""
        with self._lock:
            return [b.to_json() for b in self._batches.values()]

    # -- requests --------------------------------------------------------------------------

    def post(self, path: str, headers: Mapping[str, str], raw: bytes) -> tuple[int, Any]:
        """``POST`` under ``/v1/files`` or ``/v1/batches``: status and JSON reply."""
        parts = path.strip("/").split("/")[1:]
        if parts == ["files"]:
            return self._upload(headers.get("content-type", ""), raw)
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            return _error(400, "body is not JSON")
        if parts == ["batches"]:
            return self._create(body if isinstance(body, dict) else {}, headers)
        if len(parts) == 3 and parts[0] == "batches" and parts[2] == "cancel":
            return self._cancel(parts[1])
        return _error(404, "unknown path")

    def get(self, path: str) -> tuple[int, Any]:
        """``GET`` under ``/v1/files`` or ``/v1/batches``: status and JSON reply (bytes for a
        file's content)."""
        parts = path.split("?")[0].strip("/").split("/")[1:]
        with self._lock:
            if parts == ["batches"]:
                data = [b.to_json() for b in reversed(self._batches.values())]
                return 200, {"object": "list", "data": data, "has_more": False}
            if len(parts) == 2 and parts[0] == "batches" and parts[1] in self._batches:
                return 200, self._advance(self._batches[parts[1]]).to_json()
            if len(parts) >= 2 and parts[0] == "files" and parts[1] in self._files:
                stored = self._files[parts[1]]
                if parts[2:] == ["content"]:
                    return 200, stored.data
                if not parts[2:]:
                    return 200, stored.to_json()
        return _error(404, "no such file or batch")

    # -- files and batches -----------------------------------------------------------------

    def _upload(self, content_type: str, raw: bytes) -> tuple[int, Any]:
        head = f"Content-Type: {content_type}\r\n\r\n".encode()
        message = email.parser.BytesParser(policy=email.policy.default).parsebytes(head + raw)
        fields: dict[str, tuple[str, bytes]] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            data = part.get_payload(decode=True) or b""
            fields[str(name)] = (part.get_filename() or "", data)
        if "file" not in fields or "purpose" not in fields:
            return _error(400, "expected multipart fields 'file' and 'purpose'")
        purpose = fields["purpose"][1].decode().strip()
        with self._lock:
            stored = StoredFile(
                f"file-{len(self._files):06d}", purpose, fields["file"][0], fields["file"][1]
            )
            self._files[stored.id] = stored
            if purpose == "batch":
                self.uploaded_lines += sum(1 for line in stored.data.splitlines() if line.strip())
        return 200, stored.to_json()

    def _create(self, body: dict[str, Any], headers: Mapping[str, str]) -> tuple[int, Any]:
        file_id = body.get("input_file_id")
        endpoint = body.get("endpoint")
        if endpoint not in BATCH_ENDPOINTS:
            return _error(400, f"endpoint must be one of {list(BATCH_ENDPOINTS)}")
        if body.get("completion_window") != "24h":
            return _error(400, "completion_window must be '24h'")
        with self._lock:
            stored = self._files.get(str(file_id))
            if stored is None or stored.purpose != "batch":
                return _error(400, f"no batch input file {file_id!r}")
            batch = StoredBatch(
                f"batch_{len(self._batches):06d}",
                len(self._batches),
                stored.id,
                str(endpoint),
                "24h",
                body.get("metadata"),
                dict(headers),
            )
            self._batches[batch.id] = batch
        return 200, batch.to_json()

    def _cancel(self, batch_id: str) -> tuple[int, Any]:
        with self._lock:
            batch = self._batches.get(batch_id)
            if batch is None:
                return _error(404, f"no batch {batch_id!r}")
            if batch.status in ("validating", "in_progress"):
                batch.status = "cancelled"
            return 200, batch.to_json()

    def _advance(self, batch: StoredBatch) -> StoredBatch:
        """One retrieve's worth of progress."""
        if batch.status == "validating":
            batch.status = "in_progress"
            problem = self._invalid(self._files[batch.input_file_id].data)
            if problem is not None:
                batch.status, batch.errors = "failed", [problem]
        elif batch.status == "in_progress" and not self.hold.is_set():
            batch.polled += 1
            if batch.polled > self.polls:
                # answered in the background, as a provider does: a retrieve meanwhile says
                # finalizing (thousands of lines must not hold up an HTTP reply)
                batch.status = "finalizing"
                threading.Thread(target=self._finish, args=(batch,), daemon=True).start()
        return batch

    def _invalid(self, data: bytes) -> dict[str, Any] | None:
        """Why an input file fails validation, or None."""
        lines = [line for line in data.splitlines() if line.strip()]
        if len(lines) > self.max_requests or len(data) > self.max_bytes:
            return {
                "code": "too_large",
                "message": f"at most {self.max_requests} requests and {self.max_bytes} bytes "
                f"per file; got {len(lines)} requests, {len(data)} bytes",
            }
        for number, line in enumerate(lines, 1):
            try:
                entry = json.loads(line)
            except ValueError:
                return {"code": "invalid_json", "message": "not JSON", "line": number}
            if not isinstance(entry, dict) or not isinstance(entry.get("body"), dict):
                return {"code": "invalid_request", "message": "no body", "line": number}
            if entry.get("url") not in BATCH_ENDPOINTS or not entry.get("custom_id"):
                return {"code": "invalid_request", "message": "url/custom_id", "line": number}
        return None

    def _finish(self, batch: StoredBatch) -> None:
        """Answer the lines (up to the expiry) and store the output and error files."""
        with self._lock:
            data = self._files[batch.input_file_id].data
        lines = [json.loads(x) for x in data.splitlines() if x]
        limit = self.expire(batch.index, len(lines)) if self.expire is not None else None
        outputs, errors = [], []
        for number, entry in enumerate(lines):
            if limit is not None and number >= limit:
                errors.append(_line(entry, None, "batch_expired", "not run within 24h"))
                continue
            status, reply = self.server.line_reply(entry["body"], batch.headers, self.faults)
            result = _line(entry, {"status_code": status, "body": reply}, None, None)
            (outputs if status == 200 else errors).append(result)
        with self._lock:
            batch.total = len(lines)
            batch.completed = len(outputs)
            batch.failed = len(errors)
            batch.output_file_id = self._store(batch, "output", outputs)
            batch.error_file_id = self._store(batch, "error", errors)
            batch.status = "expired" if limit is not None and limit < len(lines) else "completed"

    def _store(self, batch: StoredBatch, kind: str, lines: list[dict[str, Any]]) -> str | None:
        if not lines:
            return None
        data = "".join(json.dumps(x) + "\n" for x in lines).encode()
        stored = StoredFile(
            f"file-{len(self._files):06d}", "batch_output", f"{batch.id}_{kind}.jsonl", data
        )
        self._files[stored.id] = stored
        return stored.id


def _line(
    entry: Mapping[str, Any],
    response: dict[str, Any] | None,
    code: str | None,
    message: str | None,
) -> dict[str, Any]:
    """One line of an output or error file."""
    return {
        "id": f"batch_req_{entry.get('custom_id')}",
        "custom_id": entry.get("custom_id"),
        "response": response,
        "error": None if code is None else {"code": code, "message": message},
    }


def _error(status: int, message: str) -> tuple[int, Any]:
    return status, {"error": {"message": message, "type": "invalid_request_error"}}


def line_fault_status(fault: Fault) -> int:
    """The status a failed line gets for ``fault`` (its own for ``http``, else 500)."""
    return fault.status if fault.kind == "http" else 500


__all__ = [
    "BATCH_ENDPOINTS",
    "MAX_BYTES",
    "MAX_REQUESTS",
    "BatchDesk",
    "StoredBatch",
    "StoredFile",
    "line_fault_status",
]
