"""``prefduel cache stats|clear``: inspect or empty the LLM response cache.

::

    prefduel cache stats [--cache PATH] [--prices FILE] [--format text|json]
    prefduel cache clear [--cache PATH] [--role ROLE] [--model MODEL] [--backend NAME]
                              [--endpoint URL] [--yes]

The cache defaults to ``$PREFDUEL_LLM_CACHE`` or ``.prefduel/llm-cache.sqlite``.
``clear`` without ``--yes`` only reports what it would delete (exit status 1). A path that is
not a prefduel cache (missing, empty, a folder, a file that is not SQLite, another program's
database) is a named error, and nothing is written to it (`prefduel.llm.cachefile`).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from prefduel.llm.cache import CacheGroup, CacheStats, ResponseCache, default_cache_path
from prefduel.llm.prices import load_prices


def register(sub: Any) -> dict[str, Callable[[argparse.Namespace, Any], int]]:
    """Add the ``cache`` subcommand (actions ``stats`` and ``clear``) to ``sub``."""
    cache = sub.add_parser(
        "cache",
        help="inspect or clear the LLM response cache",
        description="Inspect or clear the SQLite cache of LLM answers (one entry per request: "
        "model, messages, parameters, seed, sample index and role). Cached answers are never "
        "sent or paid for again.",
    )
    actions = cache.add_subparsers(dest="cache_action", required=True, metavar="ACTION")
    path_help = f"the cache file (default: $PREFDUEL_LLM_CACHE or {default_cache_path()})"

    stats = actions.add_parser(
        "stats",
        help="entries, tokens and cost by model and role",
        description="Entries, prompt and completion tokens, what the cached answers would cost "
        "at the price table's prices, and the size on disk; by model, role and backend.",
    )
    stats.add_argument("--cache", default=None, metavar="PATH", help=path_help)
    stats.add_argument(
        "--prices",
        default=None,
        metavar="FILE",
        help="a price file on top of the shipped example prices "
        "(default: $PREFDUEL_PRICES if set)",
    )
    stats.add_argument("--format", choices=("text", "json"), default="text", help="output format")

    clear = actions.add_parser(
        "clear",
        help="delete cached answers (all, or by role/model/backend)",
        description="Delete cached answers matching all the given filters (every entry without "
        "filters). Without --yes, only print how many would be deleted.",
    )
    clear.add_argument("--cache", default=None, metavar="PATH", help=path_help)
    clear.add_argument("--role", default=None, help="only this role tag, e.g. judge")
    clear.add_argument(
        "--model", default=None, help="only this model (glob patterns such as 'gpt-4o*' work)"
    )
    clear.add_argument(
        "--backend", default=None, metavar="NAME", help="only this backend, e.g. scripted"
    )
    clear.add_argument(
        "--endpoint",
        default=None,
        metavar="URL",
        help="only answers recorded from this base URL (as `cache stats` lists it)",
    )
    clear.add_argument("--yes", action="store_true", help="really delete")
    return {"cache": cmd_cache}


def cmd_cache(args: argparse.Namespace, out: Any) -> int:
    """Dispatch ``cache stats`` / ``cache clear``."""
    if args.cache_action == "stats":
        return cmd_cache_stats(args, out)
    return cmd_cache_clear(args, out)


def _open(args: argparse.Namespace) -> ResponseCache:
    return ResponseCache(args.cache or default_cache_path(), create=False)


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def _when(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(t)) if t is not None else "-"


def _money(amount: float) -> str:
    """Four decimals, or six for amounts below a cent (token prices are small)."""
    return f"{amount:,.4f}" if amount == 0 or amount >= 0.01 else f"{amount:.6f}"


def _table(title: str, groups: list[CacheGroup], column: str, currency: str) -> list[str]:
    name_width = max([len(title), *(len(getattr(g, column)) for g in groups)])
    lines = [
        f"{title:<{name_width}}  {'entries':>9}  {'prompt tok':>12}  {'completion tok':>14}  "
        f"{'cost (' + currency + ')':>12}"
    ]
    lines += [
        f"{getattr(g, column):<{name_width}}  {g.entries:>9,}  {g.prompt_tokens:>12,}  "
        f"{g.completion_tokens:>14,}  {_money(g.cost):>12}"
        for g in groups
    ]
    return lines


def _endpoints(stats: CacheStats) -> list[str]:
    """Entries per recorded endpoint (answers of one endpoint are not reused for another)."""
    lines = ["endpoint (answers are reused only for the endpoint that gave them)"]
    for endpoint, entries in stats.endpoints:
        name = endpoint or "(not recorded: usable for every endpoint)"
        lines.append(f"  {entries:>9,}  {name}")
    return lines


def format_stats(stats: CacheStats) -> str:
    """The text report of ``cache stats``."""
    lines = [
        f"cache: {stats.path} ({_size(stats.size_bytes)} on disk)",
        f"entries: {stats.entries:,}   prompt tokens: {stats.prompt_tokens:,}   "
        f"completion tokens: {stats.completion_tokens:,}",
        f"cost of the cached answers at current prices: {_money(stats.cost)} {stats.currency} "
        "(paid once; cache hits cost nothing)",
    ]
    if stats.entries:
        lines.append(f"answers cached from {_when(stats.oldest)} to {_when(stats.newest)} UTC")
        for title, column in (("model", "model"), ("role", "role"), ("backend", "namespace")):
            groups = stats.by(column)
            if column == "namespace" and len(groups) < 2:
                continue
            lines += ["", *_table(title, groups, column, stats.currency)]
        lines += ["", *_endpoints(stats)]
    if stats.unpriced_models:
        lines += [
            "",
            f"no price for: {', '.join(stats.unpriced_models)} (counted at 0; add them to a "
            "price file, --prices FILE)",
        ]
    return "\n".join(lines) + "\n"


def cmd_cache_stats(args: argparse.Namespace, out: Any) -> int:
    """Print what the cache holds."""
    prices = load_prices(args.prices)
    with _open(args) as cache:
        stats = cache.stats(prices)
    if args.format == "json":
        data = stats.to_json()
        data["by_model"] = [g.__dict__ for g in stats.by("model")]
        data["by_role"] = [g.__dict__ for g in stats.by("role")]
        out.write(json.dumps(data, indent=2) + "\n")
    else:
        out.write(format_stats(stats))
    return 0


def cmd_cache_clear(args: argparse.Namespace, out: Any) -> int:
    """Delete the matching entries (only with ``--yes``)."""
    endpoint = getattr(args, "endpoint", None)
    filters = {
        "role": args.role,
        "model": args.model,
        "namespace": args.backend,
        "endpoint": endpoint,
    }
    described = ", ".join(
        f"{name} {value!r}"
        for name, value in (
            ("role", args.role),
            ("model", args.model),
            ("backend", args.backend),
            ("endpoint", endpoint),
        )
        if value is not None
    )
    scope = f" matching {described}" if described else ""
    with _open(args) as cache:
        total = len(cache)
        matching = cache.count(**filters)
        if matching == 0:
            out.write(f"nothing to clear in {cache.path}: no entries{scope} ({total:,} kept)\n")
            return 0
        if not args.yes:
            out.write(
                f"would delete {matching:,} of {total:,} entries{scope} from {cache.path}; "
                "re-run with --yes to delete\n"
            )
            return 1
        deleted = cache.clear(**filters)
        out.write(
            f"deleted {deleted:,} entries{scope} from {cache.path}; {total - deleted:,} left\n"
        )
    return 0
