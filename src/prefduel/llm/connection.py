"""What a failed connection to an endpoint means, given what the endpoint did earlier in the run.

"Cannot reach URL: is the server running?" is the right question only for an endpoint that
never answered: a wrong address or port, or a server that was never started. A server that
answered and then stops answering (a crash, a killed process, an out-of-memory kill) refuses
new connections or closes open ones without a reply, and a reply can be cut off mid-body; each
of these gets its own message. `EndpointHistory` counts, for one backend, the requests the
endpoint answered (any HTTP response, errors included) and the connections it closed without a
reply; `connection_message` words a connection failure from the failure's cause (an ``httpx``
transport error, as the ``openai`` SDK raises it) and that history.
"""

from __future__ import annotations

import threading
from typing import Literal

#: How a connection failed: ``refused`` (no connection: nothing listens, or the address is
#: wrong), ``dropped`` (connected, then closed or reset without a reply), ``truncated`` (a reply
#: started and was cut off mid-body) or ``other``.
Failure = Literal["refused", "dropped", "truncated", "other"]

_CRASHED = "it may have crashed; check its log"
_HOW = {
    "refused": "it now refuses connections",
    "dropped": "it closed the connection without a reply",
}


def classify(cause: BaseException | None) -> Failure:
    """How a connection failed, from the transport error under the SDK's connection error.

    Matched by class name along the class's bases, so that ``httpx`` and the ``httpx2`` fork
    the ``openai`` SDK may ship are both understood without importing either.
    """
    if cause is None:
        return "other"
    names = {cls.__name__ for cls in type(cause).__mro__}
    text = str(cause)
    if "ConnectError" in names:
        return "refused"
    if "RemoteProtocolError" in names and "complete message body" in text:
        return "truncated"  # h11's words for a body shorter than its Content-Length
    if "RemoteProtocolError" in names and "without sending a response" in text:
        return "dropped"
    if "ReadError" in names or "WriteError" in names:
        return "dropped"  # reset by the peer
    return "other"


class EndpointHistory:
    """What one endpoint did so far in this run (thread-safe counters)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.answered = 0
        self.dropped = 0

    def record_answer(self) -> None:
        """The endpoint sent an HTTP response (a completion or an error status)."""
        with self._lock:
            self.answered += 1

    def record_failure(self, failure: Failure) -> None:
        """A connection failed as ``failure`` (a connection closed without a reply counts)."""
        if failure in ("dropped", "truncated"):
            with self._lock:
                self.dropped += 1


def connection_message(url: str, failure: Failure, detail: str, history: EndpointHistory) -> str:
    """The error of one connection failure, after ``history`` recorded it.

    Args:
        url: The endpoint's base URL (no key).
        failure: How it failed (`classify`).
        detail: The transport error, redacted and shortened.
        history: The endpoint's history in this run, this failure included.
    """
    answered = history.answered
    requests = f"{answered} request{'s' if answered != 1 else ''}"
    if failure == "truncated":
        before = f"; it had answered {requests} before" if answered else ""
        return (
            f"connection error: the reply from {url} was cut off: the server closed the "
            f"connection in the middle of the reply ({detail}){before}; {_CRASHED}"
        )
    if answered:
        how = _HOW.get(failure, "the connection failed")
        return (
            f"connection error: the server at {url} answered {requests} and then stopped "
            f"answering ({how}: {detail}); {_CRASHED}"
        )
    if history.dropped:
        now = {"refused": "; now it refuses connections"}.get(failure, "")
        return (
            f"connection error: the server at {url} closed a connection without a reply "
            f"before answering any request in this run{now} ({detail}); {_CRASHED}"
        )
    return (
        f"connection error: cannot reach {url} ({detail}); is the server running at this "
        "address and port?"
    )


__all__ = ["EndpointHistory", "Failure", "classify", "connection_message"]
