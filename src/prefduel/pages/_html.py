"""Shared pieces of the HTML pages: safe JSON embedding, persona colors, shared CSS, documents.

Every widget is a self-contained ``<section id=ELEMENT_ID>`` whose CSS selectors start with
``#ELEMENT_ID`` and whose class names and ids start with ``ELEMENT_ID-``, so several widgets can
sit in one larger page. Templates spell the prefix ``__ID__``; `fill` substitutes it.
"""

from __future__ import annotations

import html
import json
import numbers
import re
from typing import Any

from prefduel.core.errors import SpecError
from prefduel.worlds.world import World

#: Accent colors of the personas, by index (cycled when K is larger).
PERSONA_COLORS = (
    "#2563eb",  # blue
    "#7c3aed",  # violet
    "#0f766e",  # teal
    "#ea580c",  # orange
    "#db2777",  # pink
    "#15803d",  # green
    "#0891b2",  # cyan
    "#b45309",  # amber
    "#4f46e5",  # indigo
    "#dc2626",  # red
)

#: System font stack used by all pages.
FONT_STACK = (
    'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", "Noto Sans", Arial, sans-serif'
)

_ELEMENT_ID = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")

#: CSS shared by the widgets (scoped by ``#__ID__``): variables, typography, buttons, chips.
BASE_CSS = """
#__ID__ {
  --ink: #0f172a; --ink-2: #334155; --muted: #64748b; --line: #e2e8f0; --line-2: #cbd5e1;
  --panel: #ffffff; --wash: #f8fafc; --accent: #4338ca; --accent-soft: #eef2ff;
  --good: #15803d; --good-soft: #dcfce7; --bad: #b91c1c; --radius: 14px;
  --shadow: 0 1px 2px rgba(15, 23, 42, .06), 0 4px 16px rgba(15, 23, 42, .06);
  font-family: __FONT__;
  color: var(--ink); line-height: 1.5; font-size: 15px;
  max-width: 1120px; margin: 0 auto; box-sizing: border-box;
  -webkit-font-smoothing: antialiased;
}
#__ID__ *, #__ID__ *::before, #__ID__ *::after { box-sizing: inherit; }
#__ID__ [hidden] { display: none !important; }
#__ID__ h2, #__ID__ h3, #__ID__ p { margin: 0; }
#__ID__ button { font: inherit; color: inherit; }
#__ID__ :focus-visible { outline: 3px solid #818cf8; outline-offset: 2px; }
#__ID__ .__ID__-panel {
  background: var(--panel); border: 1px solid var(--line); border-radius: var(--radius);
  box-shadow: var(--shadow); padding: 20px 22px;
}
#__ID__ .__ID__-kicker {
  font-size: 12px; font-weight: 600; letter-spacing: .08em; text-transform: uppercase;
  color: var(--accent);
}
#__ID__ .__ID__-muted { color: var(--muted); }
#__ID__ .__ID__-btn {
  display: inline-flex; align-items: center; gap: 6px; border-radius: 10px;
  border: 1px solid var(--line-2); background: var(--panel); padding: 8px 14px;
  font-weight: 600; cursor: pointer; transition: background .15s, border-color .15s;
}
#__ID__ .__ID__-btn:hover:not(:disabled) { background: var(--wash); border-color: var(--muted); }
#__ID__ .__ID__-btn:disabled { opacity: .45; cursor: not-allowed; }
#__ID__ .__ID__-btn-primary { background: var(--accent); border-color: var(--accent); color: #fff; }
#__ID__ .__ID__-btn-primary:hover:not(:disabled) { background: #3730a3; border-color: #3730a3; }
#__ID__ .__ID__-chip {
  display: inline-flex; align-items: center; gap: 6px; padding: 2px 10px 2px 8px;
  border-radius: 999px; background: var(--soft, #f1f5f9); color: var(--c, var(--ink-2));
  font-size: 13px; font-weight: 600; white-space: nowrap; border: 1px solid transparent;
}
#__ID__ .__ID__-chip::before {
  content: ""; width: 8px; height: 8px; border-radius: 50%; background: var(--c, #94a3b8);
}
#__ID__ .__ID__-chip.__ID__-win { border-color: var(--c); }
#__ID__ .__ID__-chip.__ID__-lose { opacity: .7; }
#__ID__ .__ID__-stat {
  display: flex; flex-direction: column; align-items: flex-end; min-width: 92px;
}
#__ID__ .__ID__-stat-label {
  font-size: 12px; color: var(--muted); text-transform: uppercase; letter-spacing: .06em;
  font-weight: 600;
}
#__ID__ .__ID__-stat-value {
  font-size: 26px; font-weight: 700; font-variant-numeric: tabular-nums; line-height: 1.2;
}
#__ID__ table { border-collapse: collapse; width: 100%; font-size: 14px; }
#__ID__ th {
  text-align: left; font-size: 12px; text-transform: uppercase; letter-spacing: .05em;
  color: var(--muted); font-weight: 600; padding: 8px 10px; border-bottom: 1px solid var(--line);
}
#__ID__ td { padding: 8px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
#__ID__ td.__ID__-num, #__ID__ th.__ID__-num {
  text-align: right; font-variant-numeric: tabular-nums;
}
#__ID__ .__ID__-sr {
  position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0);
}
"""

#: JS helpers shared by the widgets (inside each widget's IIFE).
BASE_JS = r"""
  var PFX = "__ID__";
  var root = document.getElementById(PFX);
  var data = JSON.parse(document.getElementById(PFX + "-data").textContent);
  function cls(names) {
    return names.split(" ").filter(Boolean).map(function (n) { return PFX + "-" + n; }).join(" ");
  }
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    var key;
    for (key in attrs || {}) {
      if (attrs[key] === null || attrs[key] === undefined || attrs[key] === false) continue;
      if (key === "class") node.className = cls(attrs[key]);
      else if (key === "text") node.textContent = attrs[key];
      else if (key === "style") node.setAttribute("style", attrs[key]);
      else if (key.slice(0, 2) === "on") node.addEventListener(key.slice(2), attrs[key]);
      else node.setAttribute(key, attrs[key] === true ? "" : attrs[key]);
    }
    (children || []).forEach(function (c) {
      if (c === null || c === undefined) return;
      node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return node;
  }
  function part(name) { return document.getElementById(PFX + "-" + name); }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
  function chip(k, extra) {
    var p = data.personas[k];
    return el("span", {
      "class": "chip " + (extra || ""), style: "--c:" + p.color + ";--soft:" + p.soft,
      title: p.prompt, "data-persona": k
    }, [p.name + (extra === "win" ? " \u2713" : "")]);
  }
  function fmt(x, digits) { return x.toFixed(digits); }
"""


def check_element_id(element_id: str) -> str:
    """Return ``element_id`` if it is usable as an HTML id and CSS/class prefix.

    Raises:
        SpecError: if it is not a letter followed by up to 63 letters, digits, ``_`` or ``-``.
    """
    if not isinstance(element_id, str) or not _ELEMENT_ID.fullmatch(element_id):
        raise SpecError(
            f"element_id must be a letter followed by letters, digits, '_' or '-' "
            f"(at most 64 characters), got {element_id!r}"
        )
    return element_id


def check_arrival(world: World, arrival: Any) -> int:
    """Return ``arrival`` as an int if it is an arrival of ``world``.

    Raises:
        SpecError: naming the valid range.
    """
    if isinstance(arrival, bool) or not isinstance(arrival, numbers.Integral):
        raise SpecError(f"arrival must be an integer, got {arrival!r}")
    if not 0 <= int(arrival) < world.N:
        raise SpecError(
            f"arrival {int(arrival)} is out of range for world {world.name!r} "
            f"(it has arrivals 0..{world.N - 1})"
        )
    return int(arrival)


def fill(template: str, element_id: str) -> str:
    """Fill a CSS/HTML/JS template: the shared JS helpers at ``/*__BASE_JS__*/``, the font stack
    at ``__FONT__`` and the prefix ``element_id`` at ``__ID__``."""
    template = template.replace("/*__BASE_JS__*/", BASE_JS).replace("__FONT__", FONT_STACK)
    return template.replace("__ID__", element_id)


def json_script(element_id: str, payload: Any) -> str:
    """``<script type="application/json">`` holding ``payload``, safe inside HTML.

    ``<``, ``>`` and ``&`` are escaped as ``\\u003c`` etc., so no string in the data can close the
    script element; floats are written with ``repr`` precision, so JavaScript parses the exact
    same doubles.
    """
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return f'<script type="application/json" id="{element_id}-data">{text}</script>'


def esc(text: Any) -> str:
    """HTML-escape ``text`` (quotes included)."""
    return html.escape(str(text), quote=True)


def _soft(color: str, amount: float = 0.12) -> str:
    """``color`` (``#rrggbb``) blended with white, ``amount`` of the color."""
    rgb = [int(color[i : i + 2], 16) for i in (1, 3, 5)]
    mixed = [round(255 - (255 - c) * amount) for c in rgb]
    return "#" + "".join(f"{c:02x}" for c in mixed)


def first_sentence(text: str, limit: int = 140) -> str:
    """The first sentence of ``text`` (cut at ``limit`` characters with an ellipsis)."""
    text = " ".join(str(text).split())
    match = re.search(r"(?<=[.!?])\s", text)
    head = text[: match.start()] if match else text
    if len(head) > limit:
        head = head[: limit - 1].rsplit(" ", 1)[0] + "…"
    return head


def persona_table(world: World) -> list[dict[str, str]]:
    """Name, prompt, short prompt and colors of each persona (fallback names for bare worlds)."""
    out = []
    for k in range(world.K):
        meta = world.personas[k] if k < len(world.personas) else {}
        name = str(meta.get("name") or meta.get("id") or f"Persona {k + 1}")
        prompt = str(meta.get("prompt") or "")
        color = PERSONA_COLORS[k % len(PERSONA_COLORS)]
        out.append(
            {
                "id": str(meta.get("id") or f"persona-{k}"),
                "name": name,
                "prompt": prompt,
                "short": _short_prompt(prompt),
                "color": color,
                "soft": _soft(color),
            }
        )
    return out


def _short_prompt(prompt: str, limit: int = 160) -> str:
    """A short form of a persona prompt for a card.

    Prompts usually open with a role line ("You are a concise tutor.") that repeats the name;
    the next sentence, which says what the persona does, is used instead.
    """
    text = " ".join(str(prompt).split())
    head = first_sentence(text, limit)
    rest = text[len(head) :].strip()
    if re.match(r"You are\b", head) and rest:
        head = first_sentence(rest, limit)
    return head


def student_card(world: World, arrival: int) -> dict[str, str]:
    """Id, profile, name and description of the student of ``arrival`` (fallbacks for bare
    worlds)."""
    index = int(world.student_index[arrival])
    meta = world.students[index] if 0 <= index < len(world.students) else {}
    sid = str(meta.get("id") or f"student-{index}")
    profile = str(meta.get("profile") or sid)
    return {
        "id": sid,
        "profile": profile,
        "name": str(meta.get("name") or profile),
        "description": str(meta.get("description") or ""),
    }


def question_card(world: World, arrival: int, rnd: int) -> dict[str, str]:
    """Text, topic and kind of the question of round ``rnd`` of ``arrival``."""
    index = int(world.question_index[arrival, rnd])
    meta = world.questions[index] if 0 <= index < len(world.questions) else {}
    qid = str(meta.get("id") or f"question {index}")
    return {
        "id": qid,
        "text": str(meta.get("text") or qid),
        "topic": str(meta.get("topic") or ""),
        "kind": str(meta.get("kind") or ""),
    }


def document(title: str, body: str, *, background: str = "#f1f5f9") -> str:
    """A complete HTML5 document around ``body`` (no external resources)."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="color-scheme" content="light">\n'
        f"<title>{esc(title)}</title>\n"
        "<style>\n"
        f"html {{ background: {background}; }}\n"
        f"body {{ margin: 0; padding: 28px 20px 48px; font-family: {FONT_STACK}; }}\n"
        "@media (max-width: 640px) { body { padding: 14px 10px 32px; } }\n"
        "</style>\n</head>\n<body>\n"
        f"{body}\n"
        "</body>\n</html>\n"
    )
