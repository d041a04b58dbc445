"""Every prompt an episode sends, and the parsers of the answers.

The prompt text of the episodes lives here, versioned by `PROMPTS_VERSION` (stored with each
run), so that
the three conditions provably share one scaffold: the final answer is always requested with
`final_messages` (same system prompt, same template); only the *information block*
differs (`info_baseline`, `info_discovery`, `info_oracle`). The discovery
condition adds an ask phase before it (`ask_messages`).

Roles (the ``role`` tag of each `LLMRequest`):

=============  =================================================================
``ask``        model under test, discovery phase: ``QUESTION: ...`` or ``READY``
``answer``     model under test, final answer (all three conditions)
``router``     simulated user's LLM router: which attribute ids a question asks about
``judge``      per-attribute rubric score, ``SCORE: 1-5``
``grader``     accuracy fallback, ``CORRECT`` / ``INCORRECT``
``phrase``     model under test, interviewer strategy: words one chosen question
``persona``    persona backstory (generation, optional)
``rubric``     rubric refinement (generation, optional)
=============  =================================================================

The generation prompts (roles ``persona`` and ``rubric``) are in
`prefduel.prefdisco.dataset.prompts`, with `retry_turn`. Parsers return None for an answer that
does not follow the requested format; callers retry with `retry_turn` appended (which changes
the request, so a retry is a new cache entry and a new call even at temperature 0).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence

from prefduel.llm.request import Message
from prefduel.prefdisco.dataset.prompts import PERSONA_SYSTEM, RUBRIC_SYSTEM
from prefduel.prefdisco.dataset.taxonomy import Attribute, Taxonomy, Value

PROMPTS_VERSION = "prefdisco-prompts/1"

MODEL_SYSTEM = (
    "You are a helpful assistant. Solve the user's problem correctly, and shape your answer to "
    "this particular user's preferences as far as you know them."
)
ASK_INSTRUCTIONS = (
    "Before you answer, you may ask this user up to {max_turns} clarifying questions about how "
    "they would like the answer to be reasoned and written (not about the problem itself). The "
    "user answers exactly what you ask and never volunteers anything else.\n"
    "Reply with exactly one line: `QUESTION: <your question>` to ask one question, or `READY` "
    "when you are ready to answer."
)
ASK_FOLLOW_UP = "(You may ask {left} more question{s}. Reply `QUESTION: ...` or `READY`.)"
ASK_FORMAT = "Reply with exactly one line: `QUESTION: <your question>` or `READY`."
FINAL_MARKER = "Now write your answer for this user."
FINAL_TEMPLATE = (
    "The user's question:\n\n{task}\n\n"
    "What you know about this user's preferences:\n{info}\n\n"
    + FINAL_MARKER
    + " Reason correctly, shape the answer to the preferences above where you know them, and "
    "end with a line of the form `Final answer: <answer>`{hint}."
)
INFO_BASELINE = "Nothing: you know nothing about this user's preferences."

JUDGE_SYSTEM = (
    "You are a careful, impartial grader. You grade one aspect of a response against a rubric "
    "and reply with the score only."
)
SCORE_FORMAT = "Reply with exactly one line: `SCORE: <1-5>`."
GRADER_SYSTEM = (
    "You check whether a response reaches the correct final answer. Reply with CORRECT or "
    "INCORRECT only."
)
VERDICT_FORMAT = "Reply with one word: CORRECT or INCORRECT."
ROUTER_SYSTEM = (
    "You route a user's clarifying question to the preference attributes it asks about. Reply "
    "with a JSON list of attribute ids only."
)
PHRASE_SYSTEM = (
    "You help an assistant ask a user one short clarifying question about how they want an "
    "answer written. Reply with the question only."
)
PHRASE_FORMAT = "Reply with one short question on one line, ending with '?', and nothing else."

SYSTEM_ROLES = {
    PHRASE_SYSTEM: "phrase",
    JUDGE_SYSTEM: "judge",
    GRADER_SYSTEM: "grader",
    ROUTER_SYSTEM: "router",
    PERSONA_SYSTEM: "persona",
    RUBRIC_SYSTEM: "rubric",
}


def task_block(question: str, options: Sequence[tuple[str, str]] = ()) -> str:
    """The question with its lettered options, as every role sees it."""
    lines = [question.strip()]
    if options:
        lines.append("")
        lines += [f"({label}) {text}" for label, text in options]
    return "\n".join(lines)


def role_of(messages: Sequence[tuple[str, str]]) -> str | None:
    """The PrefDisco role of a conversation (for servers that only see the messages)."""
    system = next((c for r, c in messages if r == "system"), None)
    if system == MODEL_SYSTEM:
        users = [c for r, c in messages if r == "user"]
        return "answer" if users and FINAL_MARKER in users[0] else "ask"
    return SYSTEM_ROLES.get(system or "")


# -- model under test ------------------------------------------------------------------------


def ask_messages(
    task: str, turns: Sequence[tuple[str, str]], max_turns: int
) -> tuple[Message, ...]:
    """The discovery-phase conversation after ``turns`` (question, reply) pairs.

    Args:
        task: The task block (`task_block`).
        turns: Questions asked so far and the user's replies.
        max_turns: The question budget.
    """
    messages = [
        Message("system", MODEL_SYSTEM),
        Message(
            "user",
            f"The user's question:\n\n{task}\n\n" + ASK_INSTRUCTIONS.format(max_turns=max_turns),
        ),
    ]
    for i, (question, reply) in enumerate(turns):
        left = max_turns - i - 1
        messages.append(Message("assistant", f"QUESTION: {question}"))
        follow = ASK_FOLLOW_UP.format(left=left, s="" if left == 1 else "s")
        messages.append(Message("user", f"{reply}\n\n{follow}"))
    return tuple(messages)


def parse_ask(text: str) -> tuple[str, str | None]:
    """Read an ask-phase reply.

    Returns:
        ``("question", text)``, ``("ready", None)``, or ``("unparsed", None)`` (the model
        neither asked nor said READY, e.g. it answered directly: a malformed reply, asked
        again and, if it stays so, recorded as such; never taken for READY).
    """
    match = re.search(r"QUESTION\s*[:：]\s*(.+)", text or "", re.IGNORECASE)
    if match:
        question = match.group(1).strip().strip("`*").strip()
        if question:
            return "question", question[:500]
    if re.search(r"\bREADY\b", text or ""):
        return "ready", None
    return "unparsed", None


def info_baseline() -> str:
    """The information block of the baseline condition."""
    return INFO_BASELINE


def info_discovery(turns: Sequence[tuple[str, str]]) -> str:
    """The information block of the discovery condition: the questions asked and the replies."""
    if not turns:
        return "Nothing: you asked the user no questions."
    lines = [f"You asked the user {len(turns)} question{'s' if len(turns) != 1 else ''}:"]
    for i, (question, reply) in enumerate(turns, start=1):
        lines += [f"Q{i}: {question}", f"A{i}: {reply}"]
    return "\n".join(lines)


def preference_line(attribute: Attribute, value: Value, weight: float | None = None) -> str:
    """One preference as the oracle block lists it."""
    line = f"- {attribute.name}: {value.label} — {value.description}"
    return line + (f" (importance {weight:.0%})" if weight is not None else "")


def info_oracle(items: Iterable[tuple[Attribute, Value, float]]) -> str:
    """The information block of the oracle condition: the full hidden profile."""
    lines = ["The user's complete preference profile for this question (importance sums to 100%):"]
    lines += [preference_line(a, v, w) for a, v, w in items]
    return "\n".join(lines)


def final_messages(task: str, info: str, *, choice: bool) -> tuple[Message, ...]:
    """The final-answer request: identical in all three conditions except ``info``."""
    hint = " (the option letter)" if choice else ""
    return (
        Message("system", MODEL_SYSTEM),
        Message("user", FINAL_TEMPLATE.format(task=task, info=info, hint=hint)),
    )


# -- simulated user --------------------------------------------------------------------------


def user_reply(disclosed: Sequence[tuple[Attribute, Value]], unset: Sequence[Attribute]) -> str:
    """The passive user's reply: only the attributes asked about, nothing volunteered.

    Args:
        disclosed: Asked-about attributes in the hidden profile, with their values.
        unset: Asked-about attributes not in the hidden profile.
    """
    parts = [f"About {a.name.lower()}: I prefer {v.label} — {v.description}." for a, v in disclosed]
    parts += [f"About {a.name.lower()}: I have no particular preference." for a in unset]
    if not parts:
        return "I'm not sure what you are asking about; I have nothing specific to say to that."
    return " ".join(parts)


#: How the user words each importance level (lowest first, as ``user.IMPORTANCE_LEVELS``).
IMPORTANCE_WORDS = ("only a little", "somewhat", "a lot")


def importance_reply(attribute: Attribute, level: int) -> str:
    """How much an attribute matters to the user: level 0 (minor) to 2 (major)."""
    return f"How much {attribute.name.lower()} matters to me: {IMPORTANCE_WORDS[level]}."


def user_says_tersely(attribute: Attribute, value: Value | None) -> str:
    """A terse user's answer about one attribute: the value's label only."""
    return f"{attribute.name}: {value.label if value is not None else 'no preference'}."


def user_says_vaguely(attribute: Attribute, value: Value | None) -> str:
    """A vague user's answer about one attribute: the side of an ordinal scale, or two
    candidate categories (in label order, so the true one is not always first)."""
    about = f"About {attribute.name.lower()}:"
    if value is None:
        return f"{about} I don't really mind, I think."
    values = attribute.values
    i = attribute.index(value.value)
    if attribute.ordinal and len(values) > 1:
        middle = (len(values) - 1) / 2
        if i == middle:
            return f"{about} somewhere in the middle, I guess."
        end = values[0] if i < middle else values[-1]
        return f"{about} more towards {end.label}, I guess."
    if len(values) == 1:
        return f"{about} maybe {value.label}, I'm not sure."
    other = values[(i + 1) % len(values)]
    first, second = sorted((value.label, other.label))
    return f"{about} maybe {first} or {second}, I'm not sure."


def router_messages(question: str, taxonomy: Taxonomy, max_attributes: int) -> tuple[Message, ...]:
    """Ask which attribute ids a clarifying question is about (no values are shown)."""
    catalogue = "\n".join(f"{a.id}: {a.name} — {a.description}" for a in taxonomy)
    return (
        Message("system", ROUTER_SYSTEM),
        Message(
            "user",
            f"Attributes:\n{catalogue}\n\nClarifying question:\n<<<\n{question}\n>>>\n\n"
            f"Which attributes does the question ask about? Reply with a JSON list of at most "
            f'{max_attributes} ids from the list, most relevant first, e.g. ["style.length"]. '
            "Reply [] if it asks about none of them, or asks about everything at once.",
        ),
    )


ROUTE_FORMAT = 'Reply with a JSON list of attribute ids only, e.g. ["style.length"] or [].'


def parse_route(text: str) -> list[str] | None:
    """The list of ids in a router reply (unvalidated), or None if there is no JSON list."""
    match = re.search(r"\[[^\[\]]*\]", text or "", re.DOTALL)
    if not match:
        return None
    try:
        ids = json.loads(match.group(0))
    except ValueError:
        return None
    if not isinstance(ids, list) or not all(isinstance(x, str) for x in ids):
        return None
    return [x.strip() for x in ids]


# -- judge and grader ------------------------------------------------------------------------


def judge_messages(
    task: str, response: str, attribute: Attribute, value: Value, anchors: Sequence[str]
) -> tuple[Message, ...]:
    """Score one attribute of a response with its rubric (``anchors[s - 1]`` for score s)."""
    rubric = "\n".join(f"{s}: {anchors[s - 1]}" for s in range(5, 0, -1))
    return (
        Message("system", JUDGE_SYSTEM),
        Message(
            "user",
            f"A user asked:\n<question>\n{task}\n</question>\n\n"
            f"The response to grade:\n<response>\n{response}\n</response>\n\n"
            f"Grade ONE aspect only: {attribute.name} — {attribute.description}\n"
            f"This user's preference: {value.label} — {value.description}.\n\n"
            f"Rubric:\n{rubric}\n\n"
            "Ignore every other aspect, including whether the answer is correct. " + SCORE_FORMAT,
        ),
    )


def parse_score(text: str) -> int | None:
    """The 1-5 score of a judge reply, or None (no score, out of range, or ambiguous)."""
    body = (text or "").strip()
    if re.fullmatch(r"\**\s*[1-5]\s*\**", body):
        return int(body.strip("* "))
    found = re.findall(
        r"score\**\s*[:=]\s*\**\s*([0-9]+(?:\.[0-9]+)?)\s*\**\s*(?:/\s*5)?", body, re.IGNORECASE
    )
    values = set(found)
    if len(values) != 1:
        return None
    number = values.pop()
    if not re.fullmatch(r"[1-5]", number):
        return None
    return int(number)


def grader_messages(task: str, reference: str, response: str) -> tuple[Message, ...]:
    """Ask whether a response's final answer agrees with the reference answer."""
    return (
        Message("system", GRADER_SYSTEM),
        Message(
            "user",
            f"Question:\n{task}\n\nReference answer: {reference}\n\n"
            f"Response:\n<response>\n{response}\n</response>\n\n"
            "Does the response's final answer agree with the reference answer? Ignore style and "
            "the quality of the reasoning. " + VERDICT_FORMAT,
        ),
    )


def parse_verdict(text: str) -> bool | None:
    """True for CORRECT, False for INCORRECT, None otherwise (or both)."""
    upper = (text or "").upper()
    incorrect = bool(re.search(r"\bINCORRECT\b", upper))
    correct = bool(re.search(r"(?<!IN)\bCORRECT\b", upper))
    if incorrect == correct:
        return None
    return correct
