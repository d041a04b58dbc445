"""Batch mode's settings and its state file: what survives a kill, rewritten atomically.

`BatchSettings` are the ``batch:`` section of a datagen config (limits, polling, retries);
`BatchState` is the run folder's ``batches.json`` (one record per batch in flight: name,
stage, requests, input file id, batch id, status) with each batch's request keys in
``batches/NAME.keys`` (written once, before the upload). `prefduel.llm.batchrun` writes them at
each step, so a re-run knows which requests are in flight and where.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from prefduel.core.schema import Integer, Noun, Number, frozen_dataclass
from prefduel.llm.batchapi import MAX_BYTES, MAX_REQUESTS
from prefduel.llm.calllog import utc_now
from prefduel.llm.errors import LLMConfigError

#: The state file of a run folder, and the folder of its batches' key lists.
STATE_FILE = "batches.json"
KEYS_FOLDER = "batches"
_VERSION = 1


@frozen_dataclass(error=LLMConfigError, path="batch", keys="batch settings")
class BatchSettings:
    """How batch mode packs, polls and retries (the ``batch:`` section of a datagen config).

    Attributes:
        max_requests: Requests per input file (OpenAI: 50,000).
        max_bytes: Bytes per input file (OpenAI: 200 MB).
        poll: Seconds between two status checks of a running batch.
        retry: Where lines that failed or expired go again: ``online`` (one online call each,
            with the client's retries) or ``batch`` (a new batch, up to ``rounds``).
        rounds: Batches a request is sent in at most with ``retry: batch`` (the first
            included).
        wave: Requests a stage hands over at once; their batches run at the provider
            together (lower it to stay under a provider's limit on enqueued tokens).
    """

    max_requests: Annotated[Integer, Field(ge=1, le=10_000_000)] = MAX_REQUESTS
    max_bytes: Annotated[Integer, Field(ge=1_000, le=100_000_000_000), Noun("bytes")] = MAX_BYTES
    poll: Annotated[Number, Field(gt=0, le=3600), Noun("seconds")] = 30.0
    retry: Literal["online", "batch"] = "online"
    rounds: Annotated[Integer, Field(ge=1, le=20)] = 3
    wave: Annotated[Integer, Field(ge=1, le=100_000_000)] = 100_000

    def to_json(self) -> dict[str, Any]:
        """The settings as a dict."""
        return {
            "max_requests": self.max_requests,
            "max_bytes": self.max_bytes,
            "poll": self.poll,
            "retry": self.retry,
            "rounds": self.rounds,
            "wave": self.wave,
        }


def _write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` by ``text`` so that a kill leaves the old file or the new one."""
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


class BatchState:
    """The batches of one run folder: ``batches.json`` and the key lists in ``batches/``.

    Args:
        folder: The run folder (created when the first batch is recorded).
        endpoint: The provider's base URL; batches recorded for another one are refused.

    Raises:
        LLMConfigError: The state file cannot be read, or lists batches in flight at another
            endpoint.
    """

    def __init__(self, folder: Path, endpoint: str) -> None:
        self.folder = folder
        self.path = folder / STATE_FILE
        self.endpoint = endpoint
        data = self._read()
        self.batches: dict[str, dict[str, Any]] = data.get("batches", {})
        self.finished: list[dict[str, Any]] = data.get("finished", [])
        self.next = int(data.get("next", 0))
        recorded = data.get("endpoint")
        if self.batches and recorded not in (None, endpoint):
            raise LLMConfigError(
                f"{self.path} lists {len(self.batches)} batch(es) started at {recorded}, not at "
                f"{endpoint}: run with --base-url {recorded} to collect them, or remove the file "
                "(their requests are then sent, and paid, again)"
            )

    def _read(self) -> dict[str, Any]:
        if not self.path.exists():
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise LLMConfigError(
                f"cannot read the batch state file {self.path}: {exc}; it lists the batches in "
                "flight (removing it sends their requests, and pays them, again)"
            ) from None
        if not isinstance(data, dict) or data.get("version") != _VERSION:
            raise LLMConfigError(f"{self.path}: not a batch state file of this version")
        return data

    def save(self) -> None:
        """Write the state file atomically."""
        self.folder.mkdir(parents=True, exist_ok=True)
        data = {
            "version": _VERSION,
            "endpoint": self.endpoint,
            "next": self.next,
            "batches": self.batches,
            "finished": self.finished,
        }
        _write_atomically(self.path, json.dumps(data, indent=1) + "\n")

    def _keys_path(self, name: str) -> Path:
        return self.folder / KEYS_FOLDER / f"{name}.keys"

    def add(self, stage: str, round_: int, keys: Sequence[str], size: int) -> dict[str, Any]:
        """Record a new batch (its keys first, then the state); status ``uploading``."""
        name = f"{stage}-{self.next:05d}"
        self.next += 1
        (self.folder / KEYS_FOLDER).mkdir(parents=True, exist_ok=True)
        _write_atomically(self._keys_path(name), "".join(k + "\n" for k in keys))
        record = {
            "name": name,
            "stage": stage,
            "round": round_,
            "requests": len(keys),
            "bytes": size,
            "status": "uploading",
            "input_file_id": None,
            "id": None,
            "created": utc_now(),
        }
        self.batches[name] = record
        self.save()
        return record

    def update(self, record: dict[str, Any], **fields: Any) -> None:
        """Change a batch's fields and save."""
        record.update(fields)
        self.save()

    def keys(self, name: str) -> list[str]:
        """The request keys of batch ``name``."""
        try:
            return self._keys_path(name).read_text(encoding="utf-8").split()
        except OSError:
            return []

    def drop(self, record: dict[str, Any], **summary: Any) -> None:
        """A batch whose lines are all committed (or never ran) leaves the state."""
        self.batches.pop(record["name"], None)
        if record.get("id") is not None:
            keep = ("name", "stage", "id", "requests")
            self.finished.append({k: record[k] for k in keep} | summary)
        self.save()
        self._keys_path(record["name"]).unlink(missing_ok=True)


@dataclass
class BatchTotals:
    """What batch mode did in a run (the summary's ``batch`` entry).

    Attributes:
        started: Batches started by this run.
        resumed: Batches of an earlier run this run collected.
        retried_online: Lines without an answer sent again online.
        retried_batch: Lines without an answer sent again in a new batch.
        state: The state file.
    """

    started: int = 0
    resumed: int = 0
    retried_online: int = 0
    retried_batch: int = 0
    state: str = ""


__all__ = ["KEYS_FOLDER", "STATE_FILE", "BatchSettings", "BatchState", "BatchTotals"]
