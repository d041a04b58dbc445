"""Endpoint URLs: the form records keep (`public_url`) and the check that a base URL can reach
an OpenAI-compatible endpoint at all (`check_base_url`)."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def public_url(url: str) -> str:
    """``url`` reduced to scheme, host, port and path, without a trailing ``/``: no user name
    or password, query string or fragment (where a key could hide), for records such as
    datagen's ``summary.json``."""
    parts = urlsplit(str(url).strip())
    host = parts.hostname or ""
    if ":" in host:  # IPv6
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = f"{host}:{port}" if port is not None else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def check_base_url(url: str, where: str = "base_url") -> str:
    """``url`` when it can be the base URL of an OpenAI-compatible endpoint: ``http://`` or
    ``https://``, a host, a port in range, no spaces or control characters.

    Raises:
        ValueError: Saying what is wrong (``where`` names the setting); a URL without its
            scheme (``localhost:8000``) gets the corrected one as a hint.
    """
    text = str(url)
    if not text.strip():
        raise ValueError(f"{where}: expected a base URL starting with http:// or https://, got "
                         f"{text!r}")
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in text):
        raise ValueError(f"{where}: the base URL {text!r} contains spaces or control characters")
    parts = urlsplit(text)
    if parts.scheme.lower() not in ("http", "https"):
        hint = f" (did you mean http://{text}?)" if "://" not in text else ""
        raise ValueError(
            f"{where}: expected a base URL starting with http:// or https://, got {text!r}{hint}"
        )
    if not parts.hostname:
        raise ValueError(f"{where}: the base URL {text!r} has no host")
    try:
        parts.port  # noqa: B018  (urlsplit checks the port when it is read)
    except ValueError:
        raise ValueError(f"{where}: the base URL {text!r} has a port outside 0-65535") from None
    return text


__all__ = ["check_base_url", "public_url"]
