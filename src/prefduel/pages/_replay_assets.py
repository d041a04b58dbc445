"""The "Watch the policy learn" page's scoped CSS, JavaScript, HTML template and icons (flat
text).

``__ID__`` stands for the widget's element id (`prefduel.pages._html.fill`); the HTML template's
``{...}`` fields, icons included, are filled by `prefduel.pages.replay.replay_widget`.
"""

REPLAY_CSS = """
#__ID__ .__ID__-head {
  display: grid; grid-template-columns: 1fr auto; gap: 8px 28px; align-items: end;
  margin-bottom: 16px;
}
#__ID__ .__ID__-title {
  font-size: 26px; line-height: 1.2; font-weight: 750; letter-spacing: -.01em; margin: 4px 0 6px;
}
#__ID__ .__ID__-sub { color: var(--ink-2); max-width: 72ch; }
#__ID__ .__ID__-stats { display: flex; gap: 20px; }
#__ID__ .__ID__-chart { padding: 14px 16px 8px; margin-bottom: 12px; }
#__ID__ .__ID__-legend {
  display: flex; gap: 4px 18px; flex-wrap: wrap; font-size: 13px; color: var(--ink-2);
  margin: 0 0 4px 4px;
}
#__ID__ .__ID__-legend span { display: inline-flex; align-items: center; gap: 6px; }
#__ID__ .__ID__-sw { width: 18px; height: 0; border-top: 3px solid var(--accent); }
#__ID__ .__ID__-sw-dot {
  width: 8px; height: 8px; border-radius: 50%; background: #94a3b8; border: 0;
}
#__ID__ .__ID__-sw-rand { border-top: 2px dashed #94a3b8; }
#__ID__ .__ID__-sw-whole { border-top-color: #c7c9f0; }
#__ID__ svg { display: block; width: 100%; height: auto; cursor: crosshair; }
#__ID__ svg text {
  font-family: __FONT__; font-size: 12px; fill: var(--muted);
  font-variant-numeric: tabular-nums;
}
#__ID__ .__ID__-controls {
  display: flex; align-items: center; gap: 8px; flex-wrap: wrap; margin-bottom: 16px;
  padding: 12px 16px;
}
#__ID__ .__ID__-controls input[type=range] { flex: 1 1 220px; accent-color: var(--accent); }
#__ID__ .__ID__-icon { min-width: 40px; justify-content: center; }
#__ID__ .__ID__-pos {
  font-variant-numeric: tabular-nums; font-weight: 700; min-width: 128px; text-align: right;
}
#__ID__ .__ID__-controls select {
  font: inherit; border: 1px solid var(--line-2); border-radius: 10px; padding: 7px 8px;
  background: var(--panel);
}
#__ID__ .__ID__-student h3 { font-size: 19px; font-weight: 700; margin: 2px 0 4px; }
#__ID__ .__ID__-shead {
  display: flex; justify-content: space-between; gap: 20px; flex-wrap: wrap;
  align-items: flex-start; margin-bottom: 12px;
}
#__ID__ .__ID__-desc { color: var(--ink-2); font-size: 14px; max-width: 78ch; }
#__ID__ tr.__ID__-hit td { background: #f0fdf4; }
#__ID__ td.__ID__-q { color: var(--ink-2); max-width: 420px; }
#__ID__ .__ID__-pair { display: flex; flex-direction: column; align-items: flex-start; gap: 4px; }
#__ID__ .__ID__-ylabel { font-weight: 600; }
#__ID__ .__ID__-check { color: var(--good); font-weight: 700; }
#__ID__ tr.__ID__-ask td { background: #f5f3ff; }
#__ID__ .__ID__-askmark { color: #6d28d9; font-weight: 700; }
@media (max-width: 700px) {
  #__ID__ .__ID__-head { grid-template-columns: 1fr; }
  #__ID__ .__ID__-stats { justify-content: flex-start; }
  #__ID__ .__ID__-stat { align-items: flex-start; }
  #__ID__ td.__ID__-q, #__ID__ th.__ID__-q { display: none; }
  #__ID__ .__ID__-pos { min-width: 0; }
  #__ID__ #__ID__-chartbox { overflow-x: auto; }
  #__ID__ #__ID__-chartbox svg { min-width: 620px; }
}
"""

REPLAY_JS = r"""
(function () {
/*__BASE_JS__*/
  var N = data.N, S = data.S, cur = data.start, timer = null;
  var NS = "http://www.w3.org/2000/svg";
  var W = 960, H = 300, ML = 46, MR = 14, MT = 26, MB = 34;
  function svg(tag, attrs) {
    var node = document.createElementNS(NS, tag);
    for (var key in attrs) node.setAttribute(key, attrs[key]);
    return node;
  }
  function niceStep(span, target) {
    var raw = span / target, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    var steps = [1, 2, 2.5, 5, 10];
    for (var i = 0; i < steps.length; i++) if (steps[i] * mag >= raw) return steps[i] * mag;
    return 10 * mag;
  }
  var ymaxRaw = Math.max.apply(null, data.excess.concat(data.rand_ma).concat([1e-9]));
  var ystep = niceStep(ymaxRaw, 5), ymax = Math.ceil(ymaxRaw / ystep) * ystep;
  function X(n) { return ML + (N > 1 ? n / (N - 1) : 0.5) * (W - ML - MR); }
  function Y(v) { return H - MB - v / ymax * (H - MT - MB); }
  function path(values, upto) {
    var d = "";
    for (var n = 0; n <= upto; n++) {
      d += (n ? "L" : "M") + X(n).toFixed(1) + " " + Y(values[n]).toFixed(1);
    }
    return d;
  }
  var chart = svg("svg", { viewBox: "0 0 " + W + " " + H, role: "img",
    "aria-label": "Excess regret per arrival", "data-testid": "chart" });
  var grid = svg("g", {});
  for (var v = 0; v <= ymax + 1e-9; v += ystep) {
    grid.appendChild(svg("line", { x1: ML, x2: W - MR, y1: Y(v), y2: Y(v),
      stroke: v === 0 ? "#cbd5e1" : "#eef2f7", "stroke-width": 1 }));
    var t = svg("text", { x: ML - 8, y: Y(v) + 4, "text-anchor": "end" });
    t.textContent = String(Math.round(v * 1000) / 1000);
    grid.appendChild(t);
  }
  var xstep = niceStep(Math.max(N - 1, 1), 8);
  for (var xv = 0; xv <= N - 1; xv += xstep) {
    grid.appendChild(svg("line", { x1: X(xv), x2: X(xv), y1: H - MB, y2: H - MB + 5,
      stroke: "#cbd5e1" }));
    var tx = svg("text", { x: X(xv), y: H - MB + 19, "text-anchor": "middle" });
    tx.textContent = String(xv);
    grid.appendChild(tx);
  }
  var yl = svg("text", { x: ML - 36, y: 12, "class": PFX + "-ylabel" });
  yl.textContent = "excess regret per arrival";
  grid.appendChild(yl);
  var xl = svg("text", { x: W - MR, y: H - 2, "text-anchor": "end" });
  xl.textContent = "arrival \u2192";
  grid.appendChild(xl);
  chart.appendChild(grid);
  chart.appendChild(svg("path", { d: path(data.rand_ma, N - 1), fill: "none", stroke: "#94a3b8",
    "stroke-width": 2, "stroke-dasharray": "6 5" }));
  // the whole run's moving mean, faint, so the chart is drawn from the first arrival on
  chart.appendChild(svg("path", { d: path(data.ma, N - 1), fill: "none", stroke: "#c7c9f0",
    "stroke-width": 3, "stroke-linejoin": "round", "stroke-linecap": "round",
    "data-testid": "whole-run" }));
  var dots = svg("g", { fill: "#94a3b8", "fill-opacity": 0.55 });
  var dotNodes = [];
  for (var n = 0; n < N; n++) {
    var c = svg("circle", { cx: X(n).toFixed(1), cy: Y(data.excess[n]).toFixed(1), r: 2.4 });
    dotNodes.push(c); dots.appendChild(c);
  }
  chart.appendChild(dots);
  var ma = svg("path", { fill: "none", stroke: "#4338ca", "stroke-width": 3,
    "stroke-linejoin": "round", "stroke-linecap": "round" });
  chart.appendChild(ma);
  var marker = svg("line", { y1: MT, y2: H - MB, stroke: "#4338ca", "stroke-opacity": 0.35,
    "stroke-width": 1.5 });
  chart.appendChild(marker);
  var dot = svg("circle", { r: 5.5, fill: "#4338ca", stroke: "#fff", "stroke-width": 2 });
  chart.appendChild(dot);
  part("chartbox").appendChild(chart);
  chart.addEventListener("click", function (ev) {
    var box = chart.getBoundingClientRect();
    var x = (ev.clientX - box.left) / box.width * W;
    var n = Math.round((x - ML) / (W - ML - MR) * (N - 1));
    stop(); go(Math.max(0, Math.min(N - 1, n)));
  });

  function drawChart() {
    for (var n = 0; n < N; n++) {
      dotNodes[n].setAttribute("visibility", n <= cur ? "visible" : "hidden");
    }
    ma.setAttribute("d", path(data.ma, cur));
    marker.setAttribute("x1", X(cur)); marker.setAttribute("x2", X(cur));
    dot.setAttribute("cx", X(cur)); dot.setAttribute("cy", Y(data.excess[cur]));
  }
  function drawStudent() {
    var st = data.students[data.student[cur]];
    part("sname").textContent = st.name;
    part("sprofile").textContent = st.profile !== st.name ? "(" + st.profile + ")" : "";
    part("sdesc").textContent = st.description;
    part("sdesc").hidden = !st.description;
    part("skicker").textContent = "Arrival " + cur + " \u00b7 the student's hidden profile";
    part("sexcess").textContent = fmt(data.excess[cur], 2);
    part("srand").textContent = fmt(data.rand[cur], 2);
    var asks = data.ask ? data.ask.asked[cur] : [];
    part("sasked").hidden = !data.ask;
    part("sasked").textContent = data.ask ? "Asked " + asks.length + " of up to " +
      data.ask.budget + " preference question" + (data.ask.budget === 1 ? "" : "s") : "";
    var body = clear(part("tbody"));
    for (var s = 0; s < S; s++) {
      asks.forEach(function (a) {
        if (a[0] !== s) return;
        var q = data.ask.questions[a[1]];
        body.appendChild(el("tr", { "class": "ask", "data-testid": "ask-row", "data-round": s,
          "data-question": q.id, "data-answer": a[2] }, [
          el("td", { "class": "num askmark", text: "?" }),
          el("td", { "class": "q", text: q.text }),
          el("td", { colspan: "3" }, ["The student answered ", el("b", { text: a[3] })])
        ]));
      });
      var i = data.first[cur][s], j = data.second[cur][s], w = data.winner[cur][s];
      var b = data.best[cur][s];
      var hit = (i === b[0] && j === b[1]) || (i === b[1] && j === b[0]);
      body.appendChild(el("tr", {
        "class": hit ? "hit" : "", "data-testid": "round-row", "data-first": i,
        "data-second": j, "data-winner": w, "data-best": b[0] + "," + b[1]
      }, [
        el("td", { "class": "num", text: String(s + 1) }),
        el("td", { "class": "q", text: data.questions[data.q[cur][s]] }),
        el("td", {}, [el("span", { "class": "pair" }, [chip(i, w === i ? "win" : "lose"),
          chip(j, w === j ? "win" : "lose")])]),
        el("td", {}, [el("span", { "class": "pair" }, [chip(b[0]), chip(b[1])])]),
        el("td", { "class": "num" }, [hit ? el("span", { "class": "check", text: "\u2713 0" })
          : fmt(data.rx[cur][s], 3)])
      ]));
    }
  }
  function go(n) {
    cur = Math.max(0, Math.min(N - 1, n));
    part("slider").value = String(cur);
    part("pos").textContent = "Arrival " + cur + " / " + (N - 1);
    part("pos").setAttribute("data-arrival", cur);
    part("first").disabled = part("prev").disabled = cur === 0;
    part("next").disabled = part("last").disabled = cur === N - 1;
    drawChart();
    drawStudent();
  }
  function stop() {
    if (timer !== null) { clearInterval(timer); timer = null; }
    part("play").textContent = "Play";
    part("play").setAttribute("aria-pressed", "false");
  }
  function start() {
    if (cur >= N - 1) go(0);
    part("play").textContent = "Pause";
    part("play").setAttribute("aria-pressed", "true");
    timer = setInterval(function () {
      if (cur >= N - 1) { stop(); return; }
      go(cur + 1);
    }, Number(part("speed").value));
  }
  part("slider").max = String(N - 1);
  part("slider").addEventListener("input", function () { stop(); go(Number(this.value)); });
  part("first").addEventListener("click", function () { stop(); go(0); });
  part("prev").addEventListener("click", function () { stop(); go(cur - 1); });
  part("next").addEventListener("click", function () { stop(); go(cur + 1); });
  part("last").addEventListener("click", function () { stop(); go(N - 1); });
  part("play").addEventListener("click", function () {
    if (timer === null) start(); else stop();
  });
  part("speed").addEventListener("change", function () {
    if (timer !== null) { stop(); start(); }
  });
  go(cur);
})();
"""

REPLAY_HTML = """
<section id="__ID__" class="__ID__-root" aria-label="Watch the policy learn">
<style>{css}</style>
<header class="__ID__-head">
  <div>
    <p class="__ID__-kicker">prefduel &middot; watch the policy learn</p>
    <h2 class="__ID__-title" title="{policy}">{label} on {world}, seed {seed}</h2>{spec_line}
    <p class="__ID__-sub">{N} students arrive one after another, each for {S} questions. Each dot
    is one student's excess regret (regret above showing their two best personas); the line is
    the {window}-arrival centered moving mean. A policy that transfers what it learned from
    earlier students pulls the line down.</p>
  </div>
  <div class="__ID__-stats">
    <div class="__ID__-stat"><span class="__ID__-stat-label">Score</span>
      <span class="__ID__-stat-value" data-testid="run-score">{score}</span></div>
    <div class="__ID__-stat"><span class="__ID__-stat-label">Excess / arrival</span>
      <span class="__ID__-stat-value">{mean_excess}</span></div>
  </div>
</header>
<div class="__ID__-panel __ID__-chart">
  <div class="__ID__-legend">
    <span><i class="__ID__-sw __ID__-sw-dot"></i>excess regret of one arrival</span>
    <span><i class="__ID__-sw"></i>{window}-arrival moving mean up to this arrival</span>
    <span><i class="__ID__-sw __ID__-sw-whole"></i>the same over the whole run</span>
    <span><i class="__ID__-sw __ID__-sw-rand"></i>random pairs (expected, moving mean)</span>
  </div>
  <div id="__ID__-chartbox"></div>
</div>
<div class="__ID__-panel __ID__-controls" role="group" aria-label="Replay controls">
  <button type="button" class="__ID__-btn __ID__-icon" id="__ID__-first" data-testid="first"
    aria-label="First arrival" title="First arrival">{icon_first}</button>
  <button type="button" class="__ID__-btn __ID__-icon" id="__ID__-prev" data-testid="prev"
    aria-label="Previous arrival" title="Previous arrival">{icon_prev}</button>
  <button type="button" class="__ID__-btn __ID__-btn-primary" id="__ID__-play"
    data-testid="play" aria-pressed="false" style="min-width: 96px; justify-content: center"
    >Play</button>
  <button type="button" class="__ID__-btn __ID__-icon" id="__ID__-next" data-testid="next"
    aria-label="Next arrival" title="Next arrival">{icon_next}</button>
  <button type="button" class="__ID__-btn __ID__-icon" id="__ID__-last" data-testid="last"
    aria-label="Last arrival" title="Last arrival">{icon_last}</button>
  <input type="range" id="__ID__-slider" data-testid="slider" min="0" max="0" step="1" value="0"
    aria-label="Arrival">
  <select id="__ID__-speed" aria-label="Speed" data-testid="speed">
    <option value="400">slow</option><option value="120" selected>normal</option>
    <option value="30">fast</option>
  </select>
  <span class="__ID__-pos" id="__ID__-pos" data-testid="arrival" aria-live="polite"></span>
</div>
<div class="__ID__-panel __ID__-student">
  <div class="__ID__-shead">
    <div>
      <p class="__ID__-kicker" id="__ID__-skicker"></p>
      <h3><span id="__ID__-sname" data-testid="student"></span>
        <span class="__ID__-muted" id="__ID__-sprofile" style="font-weight:500;font-size:15px">
        </span></h3>
      <p class="__ID__-desc" id="__ID__-sdesc"></p>
      <p class="__ID__-muted" id="__ID__-sasked" data-testid="asked" hidden></p>
    </div>
    <div class="__ID__-stats">
      <div class="__ID__-stat"><span class="__ID__-stat-label">Excess regret</span>
        <span class="__ID__-stat-value" id="__ID__-sexcess" data-testid="excess"></span></div>
      <div class="__ID__-stat"><span class="__ID__-stat-label">Random pairs</span>
        <span class="__ID__-stat-value __ID__-muted" id="__ID__-srand"></span></div>
    </div>
  </div>
  <table>
    <thead><tr><th class="__ID__-num">#</th><th class="__ID__-q">Question</th>
      <th>Shown by the policy (&#x2713; clicked)</th><th>Best two (hidden)</th>
      <th class="__ID__-num">Excess</th></tr></thead>
    <tbody id="__ID__-tbody"></tbody>
  </table>
</div>
{data}
<script>{js}</script>
</section>
"""


_ICON = '<svg viewBox="0 0 16 16" width="16" height="16" aria-hidden="true"><path d="{}"/></svg>'
ICONS = {
    "icon_first": _ICON.format("M3 2h2v12H3zM14 2v12L6 8z"),
    "icon_prev": _ICON.format("M12 2v12L4 8z"),
    "icon_next": _ICON.format("M4 2v12l8-6z"),
    "icon_last": _ICON.format("M11 2h2v12h-2zM2 2v12l8-6z"),
}
