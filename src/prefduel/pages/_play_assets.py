"""The "Be the policy" page's scoped CSS, JavaScript and HTML template (flat text).

``__ID__`` stands for the widget's element id (`prefduel.pages._html.fill`); the HTML template's
``{...}`` fields are filled by `prefduel.pages.play.play_widget`. The JavaScript draws each
click exactly as `prefduel.runner.cell.play` does and sums the rounds in the same order as
`prefduel.pages.play.session_score`, so page and Python agree.
"""

PLAY_CSS = """
#__ID__ .__ID__-head {
  display: grid; grid-template-columns: 1fr auto; gap: 8px 28px; align-items: end;
  margin-bottom: 16px;
}
#__ID__ .__ID__-title {
  font-size: 26px; line-height: 1.2; font-weight: 750; letter-spacing: -.01em; margin: 4px 0 6px;
}
#__ID__ .__ID__-sub { color: var(--ink-2); max-width: 68ch; }
#__ID__ .__ID__-stats { display: flex; gap: 20px; }
#__ID__ .__ID__-progress {
  grid-column: 1 / -1; height: 6px; border-radius: 99px; background: var(--line); overflow: hidden;
}
#__ID__ .__ID__-progress > div {
  height: 100%; width: 0; background: var(--accent); border-radius: 99px; transition: width .3s;
}
#__ID__ .__ID__-question { margin-bottom: 16px; }
#__ID__ .__ID__-qtext { font-size: 21px; font-weight: 650; line-height: 1.35; margin-top: 6px; }
#__ID__ .__ID__-grid {
  display: grid; grid-template-columns: repeat(var(--cols, 3), minmax(0, 1fr)); gap: 12px;
}
#__ID__ .__ID__-card {
  position: relative; text-align: left; display: flex; flex-direction: column; gap: 6px;
  background: var(--panel); border: 1px solid var(--line); border-radius: 12px;
  padding: 14px 16px 14px 20px; cursor: pointer; box-shadow: var(--shadow); min-height: 112px;
  transition: border-color .15s, box-shadow .15s, transform .15s, background .15s;
}
#__ID__ .__ID__-card::before {
  content: ""; position: absolute; left: 0; top: 12px; bottom: 12px; width: 5px;
  border-radius: 0 4px 4px 0; background: var(--c);
}
#__ID__ .__ID__-card:hover:not(:disabled) { border-color: var(--c); transform: translateY(-1px); }
#__ID__ .__ID__-card:disabled { cursor: default; }
#__ID__ .__ID__-card[aria-pressed="true"] {
  border-color: var(--c); background: var(--soft); box-shadow: 0 0 0 2px var(--c), var(--shadow);
}
#__ID__ .__ID__-card.__ID__-dim { opacity: .72; box-shadow: none; }
#__ID__ .__ID__-cname {
  font-weight: 700; font-size: 16px; color: var(--c); display: flex; align-items: center; gap: 8px;
  padding-right: 44px;
}
#__ID__ .__ID__-key {
  font-size: 11px; font-weight: 600; color: var(--muted); border: 1px solid var(--line-2);
  border-radius: 5px; padding: 0 5px; line-height: 17px;
}
#__ID__ .__ID__-cprompt { color: var(--ink-2); font-size: 14px; line-height: 1.45; }
#__ID__ .__ID__-badge {
  position: absolute; top: 10px; right: 12px; min-width: 24px; height: 24px; border-radius: 12px;
  background: var(--c); color: #fff; font-size: 12px; font-weight: 700; display: grid;
  place-items: center; padding: 0 7px;
}
#__ID__ .__ID__-meter {
  display: none; flex-direction: column; gap: 5px; margin-top: auto; padding-top: 4px;
}
#__ID__ .__ID__-revealed .__ID__-meter { display: flex; }
#__ID__ .__ID__-meterbar {
  display: block; height: 8px; border-radius: 99px; background: var(--line); overflow: hidden;
}
#__ID__ .__ID__-meterbar > span {
  display: block; height: 100%; background: var(--c); border-radius: 99px;
}
#__ID__ .__ID__-meterlabel {
  display: flex; justify-content: space-between; font-size: 12.5px; color: var(--muted);
  font-variant-numeric: tabular-nums;
}
#__ID__ .__ID__-meterlabel b { color: var(--ink); font-weight: 700; }
#__ID__ .__ID__-tag {
  font-size: 11.5px; font-weight: 700; border-radius: 6px; padding: 1px 7px; letter-spacing: .02em;
}
#__ID__ .__ID__-tag-best { background: #fef3c7; color: #92400e; }
#__ID__ .__ID__-tag-click { background: var(--c); color: #fff; }
#__ID__ .__ID__-tags { display: flex; gap: 6px; flex-wrap: wrap; min-height: 20px; }
#__ID__ .__ID__-actions {
  display: flex; align-items: center; gap: 14px; margin: 16px 0 22px; flex-wrap: wrap;
}
#__ID__ .__ID__-hint { flex: 1 1 320px; color: var(--ink-2); min-height: 24px; }
#__ID__ .__ID__-hint.__ID__-result {
  background: var(--soft); border: 1px solid var(--line); border-left: 4px solid var(--c);
  border-radius: 10px; padding: 10px 14px; color: var(--ink);
}
#__ID__ .__ID__-hint b { color: var(--c, var(--ink)); }
#__ID__ .__ID__-hint .__ID__-sub2 { display: block; color: var(--ink-2); font-size: 13.5px; }
#__ID__ .__ID__-pair { display: flex; flex-direction: column; align-items: flex-start; gap: 4px; }
#__ID__ .__ID__-history h3, #__ID__ .__ID__-final h3 {
  font-size: 15px; font-weight: 700; margin-bottom: 8px;
}
#__ID__ .__ID__-history td.__ID__-q { color: var(--ink-2); max-width: 380px; }
#__ID__ .__ID__-vs { color: var(--muted); margin: 0 4px; font-size: 12px; }
#__ID__ .__ID__-empty { color: var(--muted); font-style: italic; }
#__ID__ .__ID__-final { margin-bottom: 20px; border-color: #c7d2fe; }
#__ID__ .__ID__-finaltop { display: flex; gap: 28px; align-items: center; flex-wrap: wrap; }
#__ID__ .__ID__-bigscore {
  font-size: 56px; font-weight: 800; color: var(--accent); line-height: 1;
  font-variant-numeric: tabular-nums;
}
#__ID__ .__ID__-reveal { flex: 1 1 360px; }
#__ID__ .__ID__-reveal p + p { margin-top: 6px; }
#__ID__ .__ID__-desc { color: var(--ink-2); font-size: 14px; }
#__ID__ .__ID__-compare { margin-top: 18px; display: grid; gap: 8px; }
#__ID__ .__ID__-crow {
  display: grid; grid-template-columns: minmax(150px, 230px) 1fr 64px; gap: 12px;
  align-items: center; font-size: 14px;
}
#__ID__ .__ID__-ctrack {
  position: relative; height: 14px; background: var(--wash); border-radius: 99px;
  border: 1px solid var(--line);
}
#__ID__ .__ID__-cbar {
  position: absolute; top: 0; bottom: 0; border-radius: 99px; background: #94a3b8;
}
#__ID__ .__ID__-crow.__ID__-you .__ID__-cbar { background: var(--accent); }
#__ID__ .__ID__-crow.__ID__-you { font-weight: 700; }
#__ID__ .__ID__-zero {
  position: absolute; top: -3px; bottom: -3px; width: 2px; background: var(--ink-2);
}
#__ID__ .__ID__-cval { text-align: right; font-variant-numeric: tabular-nums; }
@media (max-width: 700px) {
  #__ID__ .__ID__-head { grid-template-columns: 1fr; }
  #__ID__ .__ID__-stats { justify-content: flex-start; }
  #__ID__ .__ID__-stat { align-items: flex-start; }
  #__ID__ .__ID__-title { font-size: 22px; }
  #__ID__ .__ID__-qtext { font-size: 18px; }
  #__ID__ .__ID__-crow { grid-template-columns: 120px 1fr 52px; }
  #__ID__ .__ID__-history td.__ID__-q, #__ID__ .__ID__-history th.__ID__-q { display: none; }
}
@media (max-width: 900px) {
  #__ID__ .__ID__-grid { grid-template-columns: repeat(2, minmax(0, 1fr)); }
}
@media (max-width: 560px) {
  #__ID__ .__ID__-grid { grid-template-columns: 1fr; }
  #__ID__ .__ID__-card { min-height: 0; }
}
"""

PLAY_JS = r"""
(function () {
/*__BASE_JS__*/
  var S = data.S, K = data.K, rounds = data.rounds;
  var state;
/*__ASK_JS__*/
  function reset() {
    // on an ask track the session opens on the preference questions, before the first duel
    var phase = data.ask ? "ask" : "pick";
    state = { s: 0, pick: [], phase: phase, R: 0, G: 0, Rand: 0, history: [] };
    clear(part("tbody"));
    part("final").hidden = true;
    if (data.ask) askReset();
    render();
  }
  function scoreOf(R, Rand, G) {
    var denom = Rand - G;
    return denom > 0 ? 100 * (Rand - R) / denom : null;
  }
  function showScore(x) { return x === null ? "\u2014" : fmt(x, 1); }
  function order(U) {
    return U.map(function (u, k) { return k; }).sort(function (a, b) {
      return U[b] - U[a] || a - b;
    });
  }
  function toggle(k) {
    if (state.phase !== "pick") return;
    var at = state.pick.indexOf(k);
    if (at >= 0) state.pick.splice(at, 1);
    else if (state.pick.length < 2) state.pick.push(k);
    else state.pick[1] = k;
    render();
  }
  function confirm() {
    if (state.phase !== "pick" || state.pick.length !== 2) return;
    var r = rounds[state.s], i = state.pick[0], j = state.pick[1];
    var lo = Math.min(i, j), hi = Math.max(i, j);
    var y = r.u < r.P[lo][hi] ? 1 : 0;
    if (i > j) y = 1 - y;
    var best = Math.max.apply(null, r.U);
    var regret = 2.0 * best - r.U[i] - r.U[j];
    state.R += regret; state.G += r.floor; state.Rand += r.rand;
    var rec = { s: state.s, i: i, j: j, y: y, winner: y ? i : j, regret: regret,
                best: order(r.U).slice(0, 2), score: scoreOf(state.R, state.Rand, state.G) };
    state.history.push(rec);
    state.phase = "revealed";
    addHistory(rec);
    render();
    part("next").focus();
  }
  function next() {
    if (state.phase !== "revealed") return;
    state.s += 1; state.pick = [];
    state.phase = state.s >= S ? "done" : "pick";
    render();
    if (state.phase === "done") { showFinal(); part("final").scrollIntoView({ block: "start" }); }
    else { var first = root.querySelector("[data-testid=persona-0]"); if (first) first.focus(); }
  }
  function addHistory(rec) {
    var r = rounds[rec.s];
    var shown = el("td", {}, [el("span", { "class": "pair" }, [
      chip(rec.i, rec.winner === rec.i ? "win" : "lose"),
      chip(rec.j, rec.winner === rec.j ? "win" : "lose")
    ])]);
    var row = el("tr", {
      "data-testid": "history-row", "data-first": rec.i, "data-second": rec.j,
      "data-winner": rec.winner
    }, [
      el("td", { "class": "num", text: String(rec.s + 1) }),
      el("td", { "class": "q", text: r.text }),
      shown,
      el("td", {}, [el("span", { "class": "pair" }, [chip(rec.best[0]), chip(rec.best[1])])]),
      el("td", { "class": "num", text: fmt(rec.regret, 3) }),
      el("td", { "class": "num", text: showScore(rec.score) })
    ]);
    part("tbody").insertBefore(row, part("tbody").firstChild);
  }
  function card(k) {
    var p = data.personas[k], r = rounds[Math.min(state.s, S - 1)];
    var rec = state.phase === "pick" ? null : state.history[state.history.length - 1];
    var at = state.pick.indexOf(k);
    var shown = rec && (rec.i === k || rec.j === k);
    var tags = [];
    if (rec) {
      if (rec.best[0] === k) {
        tags.push(el("span", { "class": "tag tag-best", text: "\u2605 best" }));
      }
      if (rec.best[1] === k) {
        tags.push(el("span", { "class": "tag tag-best", text: "\u2605 2nd best" }));
      }
      if (rec.winner === k) {
        tags.push(el("span", { "class": "tag tag-click", text: "\u2713 clicked" }));
      }
    }
    var U = rec ? rounds[rec.s].U : r.U;
    var pct = Math.max(0, Math.min(1, U[k])) * 100;
    return el("button", {
      type: "button", "class": "card" + (rec ? " revealed" : "") + (rec && !shown ? " dim" : ""),
      style: "--c:" + p.color + ";--soft:" + p.soft, "data-testid": "persona-" + k,
      "data-index": k, "aria-pressed": (at >= 0 || shown) ? "true" : "false",
      disabled: state.phase !== "pick", title: p.prompt, onclick: function () { toggle(k); }
    }, [
      el("span", { "class": "cname" }, [p.name, K <= 9
        ? el("span", { "class": "key", text: String(k + 1), "aria-hidden": "true" }) : null]),
      el("span", { "class": "cprompt", text: p.short || p.prompt }),
      at >= 0 && !rec ? el("span", { "class": "badge", text: at === 0 ? "1st" : "2nd" }) : null,
      el("span", { "class": "meter" }, [
        el("span", { "class": "tags" }, tags),
        el("span", { "class": "meterbar" }, [
          el("span", { style: "width:" + pct.toFixed(1) + "%" })
        ]),
        el("span", { "class": "meterlabel" }, [
          el("span", { text: "hidden utility" }), el("b", { text: fmt(U[k], 3) })
        ])
      ])
    ]);
  }
  function render() {
    var played = state.history.length;
    var cur = Math.min(state.s, S - 1);
    var r = rounds[cur];
    part("round").textContent = (state.phase === "done" ? S : state.s + 1) + " / " + S;
    part("score").textContent = showScore(played ? state.history[played - 1].score : null);
    part("bar").style.width = (100 * played / S).toFixed(1) + "%";
    part("qkicker").textContent = "Question " + (cur + 1) + " of " + S +
      (r.topic ? " \u00b7 " + r.topic.replace(/_/g, " ") : "") +
      (r.kind ? " \u00b7 " + r.kind.replace(/_/g, " ") : "");
    part("qtext").textContent = r.text;
    var grid = part("grid"), active = document.activeElement;
    var focused = active && grid.contains(active) ? active.getAttribute("data-index") : null;
    clear(grid);
    for (var k = 0; k < K; k++) grid.appendChild(card(k));
    if (focused !== null && state.phase === "pick") grid.children[Number(focused)].focus();
    var hint = clear(part("hint"));
    hint.className = cls("hint");
    hint.removeAttribute("style");
    var conf = part("confirm"), nxt = part("next");
    conf.hidden = state.phase !== "pick";
    conf.disabled = state.pick.length !== 2;
    nxt.hidden = state.phase !== "revealed";
    nxt.textContent = state.s + 1 >= S ? "See your result \u2192" : "Next question \u2192";
    if (state.phase === "ask") {
      hint.appendChild(document.createTextNode("First the preference questions above."));
    } else if (state.phase === "pick") {
      hint.appendChild(document.createTextNode(state.pick.length === 2
        ? "Show these two to the student?"
        : "Pick two personas to show (click the cards or press 1\u2013" + K + ")."));
    } else if (state.phase === "revealed" || state.phase === "done") {
      var rec = state.history[played - 1], wp = data.personas[rec.winner];
      var loser = rec.winner === rec.i ? rec.j : rec.i;
      hint.className = cls("hint result");
      hint.setAttribute("style", "--c:" + wp.color + ";--soft:" + wp.soft);
      hint.appendChild(el("span", {}, ["The student clicked "]));
      hint.appendChild(el("b", { "data-testid": "click", "data-winner": rec.winner,
        text: wp.name }));
      hint.appendChild(document.createTextNode(" over " + data.personas[loser].name + "."));
      hint.appendChild(el("span", { "class": "sub2", text: "Regret this round " +
        fmt(rec.regret, 3) + " \u00b7 their best two would give " + fmt(rounds[rec.s].floor, 3) +
        " \u00b7 a random pair " + fmt(rounds[rec.s].rand, 3) + " on average" }));
    }
    part("emptyrow").hidden = played > 0;
  }
  function compareRow(label, value, you, note, lo) {
    lo = Math.min(0, value, lo); var hi = Math.max(100, value);
    var span = hi - lo, z = (0 - lo) / span * 100, v = (value - lo) / span * 100;
    var left = Math.min(z, v), width = Math.abs(v - z);
    return el("div", { "class": "crow" + (you ? " you" : "") }, [
      el("span", {}, [label, note ? el("span", { "class": "muted", text: " " + note }) : null]),
      el("span", { "class": "ctrack" }, [
        el("span", { "class": "cbar", style: "left:" + left.toFixed(2) + "%;width:" +
          Math.max(width, 0.6).toFixed(2) + "%" }),
        el("span", { "class": "zero", style: "left:" + z.toFixed(2) + "%" })
      ]),
      el("span", { "class": "cval", text: fmt(value, 1) })
    ]);
  }
  function showFinal() {
    var box = part("final"), b = data.baselines, st = data.student;
    var final = scoreOf(state.R, state.Rand, state.G);
    part("finalscore").textContent = showScore(final);
    part("profile").textContent = st.name;
    part("profileid").textContent = st.profile !== st.name ? "(" + st.profile + ")" : "";
    part("desc").textContent = st.description;
    part("desc").hidden = !st.description;
    var fixed = b.best_fixed, rows = clear(part("compare"));
    var you = final === null ? 0 : final;
    var lo = Math.min(0, you, fixed.score === null ? 0 : fixed.score);
    rows.appendChild(compareRow("Random pairs", 0, false, "(expected)", lo));
    if (fixed.score !== null) {
      var pair = data.personas[fixed.pair[0]].name + " + " + data.personas[fixed.pair[1]].name;
      rows.appendChild(compareRow("Best fixed pair", fixed.score, false, "(" + pair + ")", lo));
    }
    rows.appendChild(compareRow("You", you, true, "", lo));
    rows.appendChild(compareRow("Their two best, every round", 100, false, "", lo));
    part("totals").textContent = "Your total regret " + fmt(state.R, 3) + "; random pairs " +
      fmt(b.R_rand, 3) + " in expectation; the best two every round " + fmt(b.G, 3) + ".";
    box.hidden = false;
  }
  part("confirm").addEventListener("click", confirm);
  part("next").addEventListener("click", next);
  part("restart").addEventListener("click", function () { reset(); root.scrollIntoView(); });
  function onScreen(node) {
    var box = node.getBoundingClientRect();
    return box.height > 0 && box.bottom > 0 && box.top < window.innerHeight;
  }
  function ownsKeys() {
    // Keys pressed inside a widget are its own. With the focus nowhere in particular (a page
    // just opened, a click on plain text) they go to the widget last used if it is on screen,
    // else to the first one on screen, so the number keys work without clicking first.
    var active = document.activeElement;
    if (active && active !== document.body && active !== document.documentElement) {
      return root.contains(active);
    }
    var last = document.getElementById(document.documentElement.dataset.playLast || "");
    if (last && last.hasAttribute("data-play-widget") && onScreen(last)) return last === root;
    var all = document.querySelectorAll("[data-play-widget]");
    for (var w = 0; w < all.length; w++) if (onScreen(all[w])) return all[w] === root;
    return false;
  }
  function used() { document.documentElement.dataset.playLast = root.id; }
  root.addEventListener("pointerdown", used);
  root.addEventListener("focusin", used);
  document.addEventListener("keydown", function (ev) {
    if (ev.altKey || ev.ctrlKey || ev.metaKey || ev.defaultPrevented || !ownsKeys()) return;
    if (state.phase === "ask") { askKey(ev); return; }
    var n = parseInt(ev.key, 10);
    if (n >= 1 && n <= K && K <= 9 && state.phase === "pick") {
      toggle(n - 1);
      ev.preventDefault();
    }
  });
  reset();
})();
"""


PLAY_HTML = """
<section id="__ID__" class="__ID__-root" data-play-widget aria-label="Be the policy">
<style>{css}</style>
<header class="__ID__-head">
  <div>
    <p class="__ID__-kicker">prefduel &middot; be the policy</p>
    <h2 class="__ID__-title">Pick two tutors for one student</h2>
    <p class="__ID__-sub">World <b>{world}</b>, seed {seed}, arrival {arrival}. A simulated student
    with a hidden profile asks {S} questions. Each round, show two of the {K} tutor personas; the
    student clicks the one they prefer, and their hidden utilities are revealed. Score: random
    pairs 0, always their two best 100.</p>
  </div>
  <div class="__ID__-stats">
    <div class="__ID__-stat"><span class="__ID__-stat-label">Round</span>
      <span class="__ID__-stat-value" id="__ID__-round" data-testid="round">1 / {S}</span></div>
    <div class="__ID__-stat"><span class="__ID__-stat-label">Score</span>
      <span class="__ID__-stat-value" id="__ID__-score" data-testid="score">&mdash;</span></div>
  </div>
  <div class="__ID__-progress" aria-hidden="true"><div id="__ID__-bar"></div></div>
</header>
<div class="__ID__-final __ID__-panel" id="__ID__-final" data-testid="final" hidden>
  <div class="__ID__-finaltop">
    <div>
      <p class="__ID__-kicker">Final score</p>
      <div class="__ID__-bigscore" id="__ID__-finalscore" data-testid="final-score"></div>
    </div>
    <div class="__ID__-reveal">
      <p><span class="__ID__-muted">The hidden student was</span>
        <b id="__ID__-profile" data-testid="profile"></b>
        <span class="__ID__-muted" id="__ID__-profileid"></span></p>
      <p class="__ID__-desc" id="__ID__-desc"></p>
    </div>
    <button type="button" class="__ID__-btn" id="__ID__-restart" data-testid="restart">
      Play again</button>
  </div>
  <div class="__ID__-compare" id="__ID__-compare"></div>
  <p class="__ID__-muted" id="__ID__-totals" style="margin-top:12px;font-size:13.5px"></p>
</div>
{ask}<div class="__ID__-question __ID__-panel">
  <p class="__ID__-kicker" id="__ID__-qkicker"></p>
  <p class="__ID__-qtext" id="__ID__-qtext" data-testid="question"></p>
</div>
<div class="__ID__-grid" id="__ID__-grid" role="group" aria-label="Personas"
  style="--cols: {cols}"></div>
<div class="__ID__-actions">
  <p class="__ID__-hint" id="__ID__-hint" aria-live="polite"></p>
  <button type="button" class="__ID__-btn __ID__-btn-primary" id="__ID__-confirm"
    data-testid="confirm" disabled>Show these two &rarr;</button>
  <button type="button" class="__ID__-btn __ID__-btn-primary" id="__ID__-next" data-testid="next"
    hidden>Next question &rarr;</button>
</div>
<div class="__ID__-history __ID__-panel">
  <h3>Rounds played</h3>
  <table>
    <thead><tr><th class="__ID__-num">#</th><th class="__ID__-q">Question</th>
      <th>Shown (&#x2713; clicked)</th><th>Their best two</th>
      <th class="__ID__-num">Regret</th><th class="__ID__-num">Score</th>
    </tr></thead>
    <tbody id="__ID__-tbody"></tbody>
    <tbody><tr id="__ID__-emptyrow"><td colspan="6" class="__ID__-empty">No rounds yet.</td>
    </tr></tbody>
  </table>
</div>
{data}
<script>{js}</script>
</section>
"""
