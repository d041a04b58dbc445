"""The "Be the policy" page's preference questions (on an ask track): scoped CSS, JavaScript
and HTML (flat text).

Before the first duel the person answers the questions a policy asked this student (or, in free
play, picks questions from the bank up to the budget and answers them); each answer is
recorded, the simulated student's stored answer is shown beside it, and the answers can be
downloaded as JSON. The JavaScript runs inside the play widget's function (it uses ``state``,
``render`` and the shared helpers) and is put in place of ``/*__ASK_JS__*/`` by
`prefduel.pages.play.play_widget`; ``__ID__`` as in `prefduel.pages._html.fill`.
"""

ASK_CSS = """
#__ID__ .__ID__-ask { margin-bottom: 16px; border-color: #ddd6fe; }
#__ID__ .__ID__-ask h3 { font-size: 17px; font-weight: 700; margin: 2px 0 6px; }
#__ID__ .__ID__-askcard {
  border: 1px solid var(--line); border-radius: 10px; padding: 10px 14px; margin: 10px 0;
}
#__ID__ .__ID__-askcur { border-color: #7c3aed; box-shadow: 0 0 0 2px #ede9fe; }
#__ID__ .__ID__-asktext { font-size: 16px; font-weight: 600; margin: 2px 0 8px; }
#__ID__ .__ID__-askopts { display: flex; flex-wrap: wrap; gap: 8px; }
#__ID__ .__ID__-askopt[aria-pressed="true"] {
  background: #ede9fe; border-color: #7c3aed; font-weight: 700;
}
#__ID__ .__ID__-askreveal { margin-top: 8px; color: var(--ink-2); font-size: 14px; }
#__ID__ .__ID__-askbank { display: flex; flex-direction: column; gap: 6px; margin: 8px 0; }
#__ID__ .__ID__-askpick { text-align: left; justify-content: flex-start; }
#__ID__ .__ID__-askfoot { display: flex; gap: 14px; align-items: center; flex-wrap: wrap; }
"""

ASK_JS = r"""
  var ask = data.ask, asked;
  function askReset() {
    asked = { picked: [], given: {}, rounds: {} };
    if (!ask) return;
    (ask.fixed || []).forEach(function (f) {
      asked.picked.push(f[1]); asked.rounds[f[1]] = f[0];
    });
    drawAsk();
  }
  function askCurrent() {
    for (var i = 0; i < asked.picked.length; i++) {
      if (!(asked.picked[i] in asked.given)) return asked.picked[i];
    }
    return null;
  }
  function askLabel(c, value) {
    for (var i = 0; i < c.options.length; i++) {
      if (c.options[i].value === value) return c.options[i].label;
    }
    return String(value);
  }
  function askAnswer(q, value) {
    if (state.phase !== "ask") return;
    asked.given[q] = value;
    drawAsk();
  }
  function askPick(q) {
    if (state.phase !== "ask" || asked.picked.length >= ask.budget) return;
    if (asked.picked.indexOf(q) < 0) asked.picked.push(q);
    drawAsk();
  }
  function askDone() {
    if (state.phase !== "ask" || askCurrent() !== null) return;
    state.phase = "pick";
    drawAsk();
    render();
    var first = root.querySelector("[data-testid=persona-0]");
    if (first) first.focus();
  }
  function askRecord() {
    return { world: data.world, seed: data.seed, arrival: data.arrival, budget: ask.budget,
      policy: ask.policy, answers: asked.picked.filter(function (q) {
        return q in asked.given;
      }).map(function (q) {
        var c = ask.questions[q];
        return { question: c.id, kind: c.kind, text: c.text,
          round: q in asked.rounds ? asked.rounds[q] : 0, answer: asked.given[q],
          label: askLabel(c, asked.given[q]), stored: ask.stored[q],
          stored_label: askLabel(c, ask.stored[q]) };
      }) };
  }
  function askCard(q) {
    var c = ask.questions[q], given = asked.given[q];
    var live = state.phase === "ask", cur = live && askCurrent() === q;
    var when = q in asked.rounds ? " \u00b7 asked before round " + (asked.rounds[q] + 1) : "";
    var buttons = c.options.map(function (o, i) {
      return el("button", { type: "button", "class": "btn askopt", disabled: !live,
        "aria-pressed": given === o.value ? "true" : "false", "data-testid": "ask-option",
        "data-value": o.value, onclick: function () { askAnswer(q, o.value); } },
        [o.label, cur && c.options.length <= 9
          ? el("span", { "class": "key", text: String(i + 1), "aria-hidden": "true" }) : null]);
    });
    var reveal = given === undefined ? null : el("p", { "class": "askreveal" }, [
      "You answered ", el("b", { text: askLabel(c, given) }),
      " \u00b7 the simulated student answered ",
      el("b", { "data-testid": "ask-stored", text: askLabel(c, ask.stored[q]) })]);
    return el("div", { "class": "askcard" + (cur ? " askcur" : ""),
      "data-testid": "ask-question", "data-question": c.id, "data-answer": given,
      "data-stored": ask.stored[q] }, [
      el("p", { "class": "kicker", text: c.kind + " question" + when }),
      el("p", { "class": "asktext", text: c.text }),
      el("div", { "class": "askopts", role: "group", "aria-label": "Answers" }, buttons),
      reveal]);
  }
  function drawAsk() {
    var live = state.phase === "ask", list = clear(part("asklist"));
    asked.picked.forEach(function (q) { list.appendChild(askCard(q)); });
    var bank = clear(part("askbank"));
    bank.hidden = !!ask.fixed || !live || asked.picked.length >= ask.budget;
    if (!bank.hidden) {
      ask.questions.forEach(function (c) {
        if (asked.picked.indexOf(c.index) >= 0) return;
        bank.appendChild(el("button", { type: "button", "class": "btn askpick",
          "data-testid": "ask-pick", "data-question": c.id,
          onclick: function () { askPick(c.index); } }, [c.text]));
      });
    }
    var done = part("askdone");
    done.hidden = !live;
    done.disabled = askCurrent() !== null;
    var n = Object.keys(asked.given).length;
    part("askstatus").textContent = live
      ? (askCurrent() !== null ? "Answer the highlighted question (number keys work)."
        : "Press Enter or start the session when you are done.")
      : n + " answer" + (n === 1 ? "" : "s") + " recorded.";
    var link = part("askdownload");
    link.hidden = n === 0;
    link.setAttribute("href", "data:application/json;charset=utf-8," +
      encodeURIComponent(JSON.stringify(askRecord(), null, 2)));
  }
  function askKey(ev) {
    var q = askCurrent(), n = parseInt(ev.key, 10);
    if (q !== null && n >= 1 && n <= ask.questions[q].options.length) {
      askAnswer(q, ask.questions[q].options[n - 1].value);
      ev.preventDefault();
    } else if (ev.key === "Enter" && q === null) {
      askDone();
      ev.preventDefault();
    }
  }
  if (ask) part("askdone").addEventListener("click", askDone);
"""

ASK_HTML = """
<div class="__ID__-ask __ID__-panel" id="__ID__-ask" data-testid="ask">
  <p class="__ID__-kicker">Preference questions &middot; ask track, up to {budget} per student</p>
  <h3>{headline}</h3>
  <p class="__ID__-muted">{who} After each answer the simulated student's stored answer is shown
  beside yours. Your answers are recorded on this page (download them as JSON); they do not
  change the score.</p>
  <div id="__ID__-asklist"></div>
  <div class="__ID__-askbank" id="__ID__-askbank" role="group" aria-label="Question bank"></div>
  <div class="__ID__-askfoot">
    <button type="button" class="__ID__-btn __ID__-btn-primary" id="__ID__-askdone"
      data-testid="ask-done" disabled>Start the session &rarr;</button>
    <span class="__ID__-muted" id="__ID__-askstatus" aria-live="polite"></span>
    <a id="__ID__-askdownload" data-testid="ask-download" download="{download}" hidden
      >Download your answers (JSON)</a>
  </div>
</div>
"""
