"use strict";
// The rsigym viewer: renders the data block of this page; no network, no libraries.
(function () {
  window.__rsigymErrors = [];
  window.addEventListener("error", function (e) {
    window.__rsigymErrors.push(String(e.message));
    document.body.setAttribute("data-errors", String(window.__rsigymErrors.length));
  });

  var DATA = JSON.parse(document.getElementById("rsigym-data").textContent);
  var FILTER_KEYS = ["agent", "condition", "task", "termination"];
  var expanded = {};

  // -- compact transcripts (see rsigym.shared_text): resolve references on demand ------------
  function expand(value) {
    if (Array.isArray(value)) return value.map(expand);
    if (value === null || typeof value !== "object") return value;
    var keys = Object.keys(value);
    if (keys.length === 1) {
      if (keys[0] === "rsigym:shared") {
        return value["rsigym:shared"].map(function (p) {
          return typeof p === "string" ? p : DATA.chunks[p[0]];
        }).join("");
      }
      if (keys[0] === "rsigym:value") return expand(DATA.chunks[value["rsigym:value"]]);
      if (keys[0] === "rsigym:literal") return value["rsigym:literal"];
    }
    var out = {};
    keys.forEach(function (k) { out[k] = expand(value[k]); });
    return out;
  }
  function record(i) {
    if (!(i in expanded)) expanded[i] = expand(DATA.transcripts[i]);
    return expanded[i];
  }

  // -- small DOM helpers (text only: nothing from records becomes markup) --------------------
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") node.textContent = attrs[k];
      else if (k === "cls") node.className = attrs[k];
      else node.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { if (c) node.appendChild(c); });
    return node;
  }
  // Non-finite numbers travel as the markers "nan", "inf", "-inf" (strict JSON has no NaN).
  var MARKERS = {"nan": NaN, "inf": Infinity, "-inf": -Infinity};
  function num(x) {
    if (typeof x === "number") return x;
    return typeof x === "string" && x in MARKERS ? MARKERS[x] : 0;
  }
  function fmt(x, digits) {
    if (x === null || x === undefined) return "";
    if (typeof x === "string" && x in MARKERS) return x;
    if (typeof x === "number") return Number.isInteger(x) ? String(x) : x.toFixed(digits === undefined ? 3 : digits);
    return String(x);
  }
  function pretty(value) {
    return typeof value === "string" ? value : JSON.stringify(value, null, 2);
  }
  function scoreCell(grade) {
    if (!grade) return el("td", {cls: "num", text: ""});
    if (grade.score === null) return el("td", {cls: "num err", text: "error", title: grade.error || ""});
    var score = num(grade.score);
    var cls = "num" + (score >= 1 ? " score-1" : score <= 0 ? " score-0" : "");
    return el("td", {cls: cls, text: fmt(grade.score), title: "v" + grade.version + " (" + grade.source + ")"});
  }

  // -- summary ------------------------------------------------------------------------------
  function renderSummary() {
    var eps = DATA.episodes, box = document.getElementById("summary");
    var count = function (key) { var s = {}; eps.forEach(function (e) { s[e[key]] = 1; }); return Object.keys(s).length; };
    var terms = {};
    eps.forEach(function (e) { terms[e.termination] = (terms[e.termination] || 0) + 1; });
    var cost = eps.reduce(function (a, e) { return a + num(e.cost_usd); }, 0);
    var tokens = eps.reduce(function (a, e) { return a + num(e.tokens); }, 0);
    var items = [["episodes", eps.length], ["agents", count("agent")], ["conditions", count("condition")],
                 ["tasks", count("task")], ["pairs", DATA.pairs.length], ["tokens", tokens],
                 ["cost USD", fmt(cost, 4)]];
    Object.keys(terms).sort().forEach(function (t) { items.push([t, terms[t]]); });
    items.forEach(function (it) {
      box.appendChild(el("span", {}, [document.createTextNode(it[0] + ": "), el("b", {text: String(it[1])})]));
    });
    box.appendChild(el("span", {cls: "label", text: "generated " + DATA.generated_at}));
  }

  // -- filters and the URL fragment ----------------------------------------------------------
  function decode(text) {
    try { return decodeURIComponent(text); } catch (e) { return text; }  // "%E0%A4%A": kept as typed
  }
  function readHash() {
    var state = {};
    (location.hash || "").replace(/^#/, "").split("&").forEach(function (part) {
      if (!part) return;
      var kv = part.split("=");
      state[decode(kv[0])] = decode((kv.slice(1).join("=") || "").replace(/\+/g, " "));
    });
    return state;
  }
  function writeHash(state) {
    var parts = Object.keys(state).filter(function (k) { return state[k] !== "" && state[k] !== undefined; })
      .map(function (k) { return encodeURIComponent(k) + "=" + encodeURIComponent(state[k]); });
    history.replaceState(null, "", parts.length ? "#" + parts.join("&") : location.pathname + location.search);
  }
  function currentState() {
    var state = readHash();
    FILTER_KEYS.forEach(function (k) { state[k] = document.getElementById("f-" + k).value; });
    state.q = document.getElementById("f-q").value;
    return state;
  }
  function matches(e, state) {
    for (var i = 0; i < FILTER_KEYS.length; i++) {
      var k = FILTER_KEYS[i];
      if (state[k] && String(e[k]) !== state[k]) return false;
    }
    if (state.q) {
      var q = state.q.toLowerCase();
      var hay = [e.key, e.agent, e.condition, e.task, e.termination, e.error || "", e.model || ""].join(" ").toLowerCase();
      if (hay.indexOf(q) < 0) return false;
    }
    return true;
  }
  function fillSelects() {
    FILTER_KEYS.forEach(function (k) {
      var select = document.getElementById("f-" + k), seen = {};
      select.appendChild(el("option", {value: "", text: "(all)"}));
      DATA.episodes.forEach(function (e) { seen[e[k]] = 1; });
      Object.keys(seen).sort().forEach(function (v) { select.appendChild(el("option", {value: v, text: v})); });
    });
  }
  function applyState(state) {
    FILTER_KEYS.forEach(function (k) {
      var select = document.getElementById("f-" + k);
      var wanted = state[k] || "";
      if (wanted && !Array.prototype.some.call(select.options, function (o) { return o.value === wanted; })) {
        select.appendChild(el("option", {value: wanted, text: wanted + " (no episodes)"}));
      }
      select.value = wanted;
    });
    document.getElementById("f-q").value = state.q || "";
    var shown = 0;
    document.querySelectorAll("#episode-table tbody tr").forEach(function (row) {
      var ok = matches(DATA.episodes[Number(row.getAttribute("data-episode"))], state);
      row.hidden = !ok;
      shown += ok ? 1 : 0;
    });
    var pairsShown = 0;
    document.querySelectorAll("#pair-table tbody tr").forEach(function (row) {
      var p = DATA.pairs[Number(row.getAttribute("data-pair"))];
      var ok = matches(DATA.episodes[p.baseline], Object.assign({}, state, {condition: ""})) &&
               (!state.condition || p.condition === state.condition || DATA.episodes[p.baseline].condition === state.condition);
      row.hidden = !ok;
      pairsShown += ok ? 1 : 0;
    });
    var counter = document.getElementById("shown-count");
    counter.textContent = shown + " of " + DATA.episodes.length + " episodes shown";
    counter.setAttribute("data-shown", String(shown));
    if (state.episode !== undefined && state.episode !== "") showEpisode(Number(state.episode));
    if (state.pair !== undefined && state.pair !== "") showPair(Number(state.pair));
  }

  // -- the episode table ----------------------------------------------------------------------
  function renderEpisodeTable() {
    var head = ["#", "agent", "condition", "task", "seed", "rep", "termination", "steps", "reward"]
      .concat(DATA.graders).concat(["tokens", "cost USD"]);
    document.querySelector("#episode-table thead").appendChild(
      el("tr", {}, head.map(function (h) { return el("th", {text: h}); })));
    var body = document.querySelector("#episode-table tbody");
    DATA.episodes.forEach(function (e) {
      var cells = [el("td", {cls: "num", text: String(e.i)}), el("td", {text: e.agent}),
                   el("td", {text: e.condition}), el("td", {text: e.task}),
                   el("td", {cls: "num", text: String(e.seed)}), el("td", {cls: "num", text: String(e.rep)}),
                   el("td", {cls: "term-" + e.termination, text: e.termination, title: e.error || ""}),
                   el("td", {cls: "num", text: String(e.steps)}), el("td", {cls: "num", text: fmt(e.reward)})];
      DATA.graders.forEach(function (g) { cells.push(scoreCell(e.grades[g])); });
      cells.push(el("td", {cls: "num", text: String(e.tokens)}));
      cells.push(el("td", {cls: "num", text: fmt(e.cost_usd, 4)}));
      var row = el("tr", {"data-episode": String(e.i), "data-agent": e.agent, "data-condition": e.condition,
                          "data-task": e.task}, cells);
      row.addEventListener("click", function () {
        var state = currentState(); delete state.pair; state.episode = String(e.i); writeHash(state); showEpisode(e.i);
      });
      body.appendChild(row);
    });
  }

  // -- transcripts ----------------------------------------------------------------------------
  function stepBox(step, highlighted) {
    var usage = step.usage || {};
    var head = "step " + step.t + " · reward " + fmt(step.reward) +
      (step.terminated ? " · terminated" : "") + (step.truncated ? " · truncated" : "") +
      (usage.model_calls ? " · " + usage.model_calls + " model calls, " +
        (usage.prompt_tokens + usage.completion_tokens) + " tokens" : "") +
      (usage.latency_s ? " · " + fmt(usage.latency_s, 3) + " s" : "");
    var obs = step.observation;
    var obsText = obs && typeof obs === "object" && typeof obs.text === "string" ? obs.text : pretty(obs);
    var box = el("div", {cls: "step" + (highlighted ? " diff" : ""), "data-t": String(step.t)}, [
      el("div", {cls: "head", text: head}),
      el("span", {cls: "label", text: "observation"}), el("pre", {cls: "obs", text: obsText}),
      el("span", {cls: "label", text: "action"}), el("pre", {cls: "act", text: pretty(step.action)})]);
    var info = step.info || {};
    if (info.error) box.appendChild(el("pre", {cls: "err", text: "error: " + pretty(info.error)}));
    if (Object.keys(info).length) {
      box.appendChild(el("details", {}, [el("summary", {cls: "label", text: "info"}), el("pre", {text: pretty(info)})]));
    }
    return box;
  }
  function gradesTable(rec) {
    var rows = (rec.grades || []).map(function (g) {
      return el("tr", {}, [el("td", {text: g.grader}), el("td", {text: "v" + g.version}),
        el("td", {cls: "num" + (g.score === null ? " err" : ""), text: g.score === null ? "error" : fmt(g.score)}),
        el("td", {text: g.source}), el("td", {text: g.error || JSON.stringify(g.details)})]);
    });
    return el("table", {cls: "grades"}, [el("thead", {}, [el("tr", {}, ["grader", "version", "score", "source", "details"]
      .map(function (h) { return el("th", {text: h}); }))]), el("tbody", {}, rows)]);
  }
  function transcript(i, diffSteps) {
    var rec = record(i), e = DATA.episodes[i], diff = {};
    (diffSteps || []).forEach(function (t) { diff[t] = 1; });
    var usage = rec.usage || {};
    var box = el("div", {cls: "side", "data-episode": String(i)}, [
      el("h3", {text: e.agent + " · " + e.condition + " · " + e.task + " · seed " + e.seed + " rep " + e.rep}),
      el("div", {cls: "head", text: "termination: " + rec.termination + " · " + rec.steps.length + " steps · " +
        (usage.prompt_tokens + usage.completion_tokens) + " tokens · " + fmt(usage.cost_usd, 4) + " USD · key " + rec.episode_key})]);
    if (rec.error) box.appendChild(el("pre", {cls: "err", text: "error: " + rec.error}));
    rec.steps.forEach(function (s, t) { box.appendChild(stepBox(s, diff[t])); });
    (diffSteps || []).forEach(function (t) {
      if (t >= rec.steps.length) box.appendChild(el("div", {cls: "step diff", text: "step " + t + ": (none here)"}));
    });
    box.appendChild(el("h3", {text: "Grades"}));
    box.appendChild(gradesTable(rec));
    if (rec.final) {
      box.appendChild(el("details", {}, [el("summary", {cls: "label", text: "final state (sha256 " + rec.final.sha256.slice(0, 12) + ")"}),
                                         el("pre", {text: pretty(rec.final.state)})]));
    }
    return box;
  }
  function select(tableId, attr, value) {
    document.querySelectorAll("#" + tableId + " tbody tr").forEach(function (r) {
      r.classList.toggle("selected", r.getAttribute(attr) === String(value));
    });
  }
  function showEpisode(i) {
    if (!(i >= 0 && i < DATA.episodes.length)) return;
    var section = document.getElementById("transcript-section"), box = document.getElementById("transcript");
    box.textContent = "";
    box.appendChild(transcript(i, []));
    document.getElementById("transcript-title").textContent = "Transcript: episode " + i;
    section.hidden = false;
    select("episode-table", "data-episode", i);
  }

  // -- the paired view ------------------------------------------------------------------------
  function renderPairs() {
    if (!DATA.pairs.length) return;
    document.getElementById("pairs-section").hidden = false;
    document.querySelector("#pair-table thead").appendChild(el("tr", {}, ["#", "agent", "task", "seed", "rep",
      "treatment", "behaviour", "differing steps", "end state"].map(function (h) { return el("th", {text: h}); })));
    var body = document.querySelector("#pair-table tbody");
    DATA.pairs.forEach(function (p, n) {
      var row = el("tr", {"data-pair": String(n)}, [el("td", {cls: "num", text: String(n)}), el("td", {text: p.agent}),
        el("td", {text: p.task}), el("td", {cls: "num", text: String(p.seed)}), el("td", {cls: "num", text: String(p.rep)}),
        el("td", {text: p.condition}),
        el("td", {}, [el("span", {cls: "badge" + (p.changed ? " changed" : ""), text: p.changed ? "changed" : "same"})]),
        el("td", {text: p.diff_steps.join(", ")}), el("td", {text: p.state_changed ? "differs" : "same"})]);
      row.addEventListener("click", function () {
        var state = currentState(); delete state.episode; state.pair = String(n); writeHash(state); showPair(n);
      });
      body.appendChild(row);
    });
  }
  function showPair(n) {
    var p = DATA.pairs[n];
    if (!p) return;
    var view = document.getElementById("pair-view");
    view.textContent = "";
    view.setAttribute("data-pair", String(n));
    var base = transcript(p.baseline, p.diff_steps), treat = transcript(p.treatment, p.diff_steps);
    base.insertBefore(el("div", {cls: "label", text: "BASELINE"}), base.firstChild);
    treat.insertBefore(el("div", {cls: "label", text: "TREATMENT: " + p.condition}), treat.firstChild);
    view.appendChild(base);
    view.appendChild(treat);
    select("pair-table", "data-pair", n);
  }

  // -- start ----------------------------------------------------------------------------------
  renderSummary();
  fillSelects();
  renderEpisodeTable();
  renderPairs();
  document.querySelectorAll("#filters select, #filters input").forEach(function (input) {
    input.addEventListener("input", function () { var s = currentState(); writeHash(s); applyState(s); });
  });
  document.getElementById("filters").addEventListener("submit", function (ev) { ev.preventDefault(); });
  window.addEventListener("hashchange", function () { applyState(readHash()); });
  applyState(readHash());
  document.body.setAttribute("data-ready", "1");
})();
