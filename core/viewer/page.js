"use strict";
// The rsigym viewer: renders the data block of this page (and its sidecar files); no network.
(function () {
  window.__rsigymErrors = [];
  window.addEventListener("error", function (e) {
    window.__rsigymErrors.push(String(e.message));
    document.body.setAttribute("data-errors", String(window.__rsigymErrors.length));
  });

  var DATA = JSON.parse(document.getElementById("rsigym-data").textContent);
  var FILTER_KEYS = ["agent", "condition", "task", "termination"];
  var NAMED = ["agent", "condition", "task", "termination", "model"];
  var PAGE_ROWS = 500;
  var T = DATA.table, RULES = T.rules, COL = {};
  T.fields.forEach(function (f, k) { COL[f] = k; });

  // -- rows: arrays with name indices, expanded once into objects --------------------------
  var EPISODES = T.rows.map(function (r, i) {
    var e = {i: i, scores: {}};
    T.fields.forEach(function (f, k) { e[f] = NAMED.indexOf(f) >= 0 ? T.names[f][r[k]] : r[k]; });
    e.scores = {};
    RULES.forEach(function (g, n) { e.scores[g] = r[COL.scores][n]; });
    return e;
  });
  var PAIRS = DATA.pairs.map(function (p, n) {
    var b = EPISODES[p[0]], t = EPISODES[p[1]];
    return {n: n, baseline: p[0], treatment: p[1], diff_steps: p[2], diff_kinds: p[3], state_changed: !!p[4],
            changed: p[2].length > 0 || !!p[4], agent: b.agent, task: b.task, seed: b.seed, rep: b.rep,
            condition: t.condition};
  });

  // -- transcripts: in the page, or in sidecar scripts loaded on demand ----------------------
  var SIDE = DATA.sidecar, chunks = DATA.chunks, blocks = {}, expanded = {}, loading = {};
  window.rsigymBlock = function (n, list) { blocks[n] = list; };
  window.rsigymChunks = function (c) { chunks = c; };
  window.rsigymIndex = function (index) { DATA.index = index; };
  function loadScript(name, done) {
    if (loading[name] === true) { done(); return; }
    if (loading[name]) { loading[name].push(done); return; }
    loading[name] = [done];
    var s = document.createElement("script");
    s.src = SIDE.dir + "/" + name;
    s.onload = function () { var w = loading[name]; loading[name] = true; w.forEach(function (f) { f(); }); };
    s.onerror = function () {
      loading[name] = undefined;
      note("cannot load " + SIDE.dir + "/" + name + ": keep the folder " + SIDE.dir + " next to this page");
    };
    document.head.appendChild(s);
  }
  function expand(value) {
    if (Array.isArray(value)) return value.map(expand);
    if (value === null || typeof value !== "object") return value;
    var keys = Object.keys(value);
    if (keys.length === 1) {
      if (keys[0] === "rsigym:shared") {
        return value["rsigym:shared"].map(function (p) { return typeof p === "string" ? p : chunks[p[0]]; }).join("");
      }
      if (keys[0] === "rsigym:value") return expand(chunks[value["rsigym:value"]]);
      if (keys[0] === "rsigym:literal") return value["rsigym:literal"];
    }
    var out = {};
    keys.forEach(function (k) { out[k] = expand(value[k]); });
    return out;
  }
  function withRecords(indices, done) {
    var missing = indices.filter(function (i) { return !(i in expanded); });
    if (!SIDE) {
      missing.forEach(function (i) { expanded[i] = expand(DATA.transcripts[i]); });
      done(); return;
    }
    var names = ["chunks.js"];
    missing.forEach(function (i) {
      var name = "t" + ("0000" + Math.floor(i / SIDE.block)).slice(-5) + ".js";
      if (names.indexOf(name) < 0) names.push(name);
    });
    var left = names.length;
    names.forEach(function (name) {
      loadScript(name, function () {
        if (--left) return;
        missing.forEach(function (i) { expanded[i] = expand(blocks[Math.floor(i / SIDE.block)][i % SIDE.block]); });
        done();
      });
    });
  }
  function record(i) { return expanded[i]; }

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
  function note(text) { document.getElementById("search-note").textContent = text; }
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
  function fixed(x) { return typeof x === "number" ? x.toFixed(3) : fmt(x); }
  function pretty(value) { return typeof value === "string" ? value : JSON.stringify(value, null, 2); }
  function scoreCell(score) {
    if (score === null || score === undefined) return el("td", {cls: "num", text: ""});
    if (score === "error") return el("td", {cls: "num err", text: "error"});
    var s = num(score);
    return el("td", {cls: "num" + (s >= 1 ? " score-1" : s <= 0 ? " score-0" : ""), text: fmt(score)});
  }

  // -- the header line and the summary grid -----------------------------------------------------
  function renderSummary() {
    var box = document.getElementById("summary");
    var terms = {};
    EPISODES.forEach(function (e) { terms[e.termination] = (terms[e.termination] || 0) + 1; });
    var cost = EPISODES.reduce(function (a, e) { return a + num(e.cost_usd); }, 0);
    var tokens = EPISODES.reduce(function (a, e) { return a + num(e.tokens); }, 0);
    var items = [["episodes", EPISODES.length], ["agents", T.names.agent.length], ["conditions", T.names.condition.length],
                 ["tasks", T.names.task.length], ["pairs", PAIRS.length], ["tokens", tokens], ["cost USD", fmt(cost, 4)]];
    Object.keys(terms).sort().forEach(function (t) { items.push([t, terms[t]]); });
    items.forEach(function (it) {
      box.appendChild(el("span", {}, [document.createTextNode(it[0] + ": "), el("b", {text: String(it[1])})]));
    });
    box.appendChild(el("span", {cls: "label", text: "generated " + DATA.generated_at}));
  }
  function link(state) {
    return "#" + Object.keys(state).map(function (k) {
      return encodeURIComponent(k) + "=" + encodeURIComponent(state[k]);
    }).join("&");
  }
  function renderGrid() {
    var cells = {}, rows = [], seen = {};
    DATA.grid.forEach(function (c) {
      var key = JSON.stringify([c.agent, c.condition]);
      cells[key + c.rule] = c;
      if (!seen[key]) { seen[key] = 1; rows.push([c.agent, c.condition]); }
    });
    if (!rows.length) { document.getElementById("grid-section").hidden = true; return; }
    document.querySelector("#grid thead").appendChild(el("tr", {}, ["agent", "condition"].concat(RULES)
      .map(function (h) { return el("th", {text: h}); })));
    var body = document.querySelector("#grid tbody");
    rows.forEach(function (r) {
      var key = JSON.stringify(r);
      var tds = [el("td", {text: r[0]}), el("td", {text: r[1]})];
      RULES.forEach(function (g) {
        var c = cells[key + g];
        if (!c) { tds.push(el("td", {})); return; }
        var target = link({agent: r[0], condition: r[1], sort: "-g:" + g});
        var a = el("a", {href: target, cls: "cell", "data-rule": g, "data-mean": fmt(c.mean)}, [
          el("b", {text: c.mean === null ? "no score" : fixed(c.mean)}),
          el("span", {cls: "ci", text: c.mean === null ? "" : " [" + fixed(c.low) + ", " + fixed(c.high) + "]"}),
          el("span", {cls: "n", text: " n=" + c.n + (c.errors ? ", " + c.errors + " errors" : "")})]);
        tds.push(el("td", {cls: "grid-cell"}, [a]));
      });
      body.appendChild(el("tr", {"data-agent": r[0], "data-condition": r[1]}, tds));
    });
  }

  // -- the URL fragment is the state --------------------------------------------------------
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
    FILTER_KEYS.concat(["score", "min", "max", "q"]).forEach(function (k) { state[k] = document.getElementById("f-" + k).value; });
    return state;
  }

  // -- full-text search: the index built by rsigym view (in the page, or index.js) ------------
  var vocabulary = null, searchCache = {};
  function queryWords(q) {
    return (q.toLowerCase().match(/[\p{L}\p{N}\p{M}_]+/gu) || []).map(function (w) { return w.slice(0, 40); });
  }
  function decodePostings(encoded, marks) {
    if (encoded[0] === "b") {
      var bits = atob(encoded.slice(1));
      for (var i = 0; i < bits.length; i++) {
        var byte = bits.charCodeAt(i);
        for (var b = 0; byte && b < 8; b++) if (byte >> b & 1) marks[i * 8 + b] = 1;
      }
      return;
    }
    var previous = -1;
    encoded.slice(1).split(",").forEach(function (gap) {
      if (gap) { previous += parseInt(gap, 36) + 1; marks[previous] = 1; }
    });
  }
  function wordHits(word) {  // every token that starts with the word: a binary search, then a run
    if (searchCache[word]) return searchCache[word];
    var marks = new Uint8Array(EPISODES.length), lo = 0, hi = vocabulary.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (vocabulary[mid] < word) lo = mid + 1; else hi = mid; }
    for (var j = lo; j < vocabulary.length && vocabulary[j].lastIndexOf(word, 0) === 0; j++) {
      decodePostings(DATA.index[vocabulary[j]], marks);
    }
    searchCache[word] = marks;
    return marks;
  }
  function searchReady(then) {
    if (vocabulary) return true;
    if (DATA.index) { vocabulary = Object.keys(DATA.index).sort(); return true; }
    note("loading the search index...");
    loadScript("index.js", function () { note(""); then(); });
    return false;
  }

  function matches(e, state, words) {
    for (var i = 0; i < FILTER_KEYS.length; i++) {
      var k = FILTER_KEYS[i];
      if (state[k] && String(e[k]) !== state[k]) return false;
    }
    if (state.score) {
      var s = e.scores[state.score];
      if (s === null || s === undefined) return false;
      if (state.min !== "" && state.min !== undefined || state.max !== "" && state.max !== undefined) {
        if (s === "error") return false;
        var v = num(s);
        if (state.min !== "" && state.min !== undefined && !(v >= Number(state.min))) return false;
        if (state.max !== "" && state.max !== undefined && !(v <= Number(state.max))) return false;
      }
    }
    if (words) {
      var meta = [e.agent, e.condition, e.task, e.termination, e.error || "", e.model || ""].join(" ").toLowerCase();
      for (var w = 0; w < words.length; w++) {
        if (meta.indexOf(words[w]) < 0 && !(vocabulary && wordHits(words[w])[e.i])) return false;
      }
    }
    return true;
  }

  // -- the episode table: filtered, sorted, the first rows rendered ----------------------------
  var COLUMNS = [["i", "#"], ["agent", "agent"], ["condition", "condition"], ["task", "task"], ["seed", "seed"],
                 ["rep", "rep"], ["termination", "termination"], ["steps", "steps"], ["reward", "total reward"]]
    .concat(RULES.map(function (g) { return ["g:" + g, g]; })).concat([["tokens", "tokens"], ["cost_usd", "cost USD"]]);
  function sortValue(e, key) {
    var v = key.lastIndexOf("g:", 0) === 0 ? e.scores[key.slice(2)] : e[key];
    if (v === null || v === undefined || v === "error") return null;
    return typeof v === "string" && !(v in MARKERS) ? v : num(v);
  }
  function sortRows(list, spec) {
    if (!spec) return list;
    var desc = spec[0] === "-", key = desc ? spec.slice(1) : spec;
    return list.slice().sort(function (a, b) {
      var x = sortValue(a, key), y = sortValue(b, key);
      if (x === null || y === null) return x === y ? a.i - b.i : x === null ? 1 : -1;  // no score: last
      var c = x < y ? -1 : x > y ? 1 : 0;
      return (desc ? -c : c) || a.i - b.i;
    });
  }
  function renderHead(spec) {
    var head = document.querySelector("#episode-table thead");
    head.textContent = "";
    var desc = spec && spec[0] === "-", key = desc ? spec.slice(1) : spec;
    head.appendChild(el("tr", {}, COLUMNS.map(function (c) {
      var th = el("th", {"data-sort": c[0], cls: "sortable" + (c[0].lastIndexOf("g:", 0) === 0 ? " grader-col" : ""),
                         title: c[0].lastIndexOf("g:", 0) === 0 ? "grader " + c[1] : "click to sort"},
                  [document.createTextNode(c[1] + (key === c[0] ? (desc ? " \u25bc" : " \u25b2") : ""))]);
      if (key === c[0]) th.setAttribute("aria-sort", desc ? "descending" : "ascending");
      th.addEventListener("click", function () {
        var state = currentState();
        state.sort = key === c[0] && !desc ? "-" + c[0] : c[0];
        writeHash(state); applyState(state);
      });
      return th;
    })));
  }
  function episodeRow(e) {
    var cells = [el("td", {cls: "num", text: String(e.i)}), el("td", {text: e.agent}), el("td", {text: e.condition}),
                 el("td", {text: e.task}), el("td", {cls: "num", text: String(e.seed)}), el("td", {cls: "num", text: String(e.rep)}),
                 el("td", {cls: "term-" + e.termination, text: e.termination, title: e.error || ""}),
                 el("td", {cls: "num", text: String(e.steps)}), el("td", {cls: "num", text: fmt(e.reward)})];
    RULES.forEach(function (g) { cells.push(scoreCell(e.scores[g])); });
    cells.push(el("td", {cls: "num", text: String(e.tokens)}));
    cells.push(el("td", {cls: "num", text: fmt(e.cost_usd, 4)}));
    var row = el("tr", {"data-episode": String(e.i), "data-agent": e.agent, "data-condition": e.condition,
                        "data-task": e.task}, cells);
    row.addEventListener("click", function () {
      var state = currentState(); delete state.pair; state.episode = String(e.i); writeHash(state); showEpisode(e.i, false);
    });
    return row;
  }
  var shownRows = [], rendered = 0;
  function renderRows(upTo) {
    var body = document.querySelector("#episode-table tbody");
    for (; rendered < Math.min(upTo, shownRows.length); rendered++) body.appendChild(episodeRow(shownRows[rendered]));
    var more = document.getElementById("more");
    more.hidden = rendered >= shownRows.length;
    more.textContent = "show " + Math.min(PAGE_ROWS, shownRows.length - rendered) + " more of " + (shownRows.length - rendered);
  }

  function fillSelects() {
    FILTER_KEYS.forEach(function (k) {
      var select = document.getElementById("f-" + k);
      select.appendChild(el("option", {value: "", text: "(all)"}));
      T.names[k].slice().sort().forEach(function (v) { select.appendChild(el("option", {value: v, text: v})); });
    });
    var score = document.getElementById("f-score");
    score.appendChild(el("option", {value: "", text: "(any)"}));
    RULES.forEach(function (g) { score.appendChild(el("option", {value: g, text: g})); });
  }
  var opened = null;
  function applyState(state) {
    FILTER_KEYS.concat(["score"]).forEach(function (k) {
      var select = document.getElementById("f-" + k), wanted = state[k] || "";
      if (wanted && !Array.prototype.some.call(select.options, function (o) { return o.value === wanted; })) {
        select.appendChild(el("option", {value: wanted, text: wanted + " (no episodes)"}));
      }
      select.value = wanted;
    });
    ["min", "max", "q"].forEach(function (k) { document.getElementById("f-" + k).value = state[k] || ""; });
    var words = state.q ? queryWords(state.q) : null;
    if (words && !words.length) words = null;
    if (words) searchReady(function () { applyState(readHash()); });  // metadata only until it is loaded
    shownRows = sortRows(EPISODES.filter(function (e) { return matches(e, state, words); }), state.sort);
    document.querySelector("#episode-table tbody").textContent = "";
    rendered = 0;
    renderHead(state.sort);
    var target = state.episode !== undefined && state.episode !== "" ? Number(state.episode) : -1;
    var at = shownRows.findIndex(function (e) { return e.i === target; });
    renderRows(Math.max(PAGE_ROWS, at + 1));
    var counter = document.getElementById("shown-count");
    counter.textContent = shownRows.length + " of " + EPISODES.length + " episodes shown";
    counter.setAttribute("data-shown", String(shownRows.length));
    var pairState = Object.assign({}, state, {condition: "", score: ""});
    var pairs = PAIRS.filter(function (p) {
      var base = EPISODES[p.baseline];
      return matches(base, pairState, null) &&
             (!state.condition || p.condition === state.condition || base.condition === state.condition);
    });
    var pairTarget = state.pair !== undefined && state.pair !== "" ? Number(state.pair) : -1;
    renderPairRows(pairs, Math.max(PAGE_ROWS, pairs.findIndex(function (p) { return p.n === pairTarget; }) + 1));
    var wanted = target >= 0 ? "episode:" + target : state.pair !== undefined && state.pair !== "" ? "pair:" + state.pair : null;
    var scroll = wanted !== null && wanted !== opened;  // a new target: go there; a filter change: stay
    opened = wanted;
    if (target >= 0) showEpisode(target, scroll);
    else if (state.pair !== undefined && state.pair !== "") showPair(Number(state.pair), scroll);
  }

  // -- transcripts ----------------------------------------------------------------------------
  var NO_SUCH_TOOL = "(no such tool here)";
  // {name the agent saw: original}, and NO_SUCH_TOOL for an original name a condition renamed away:
  // as rsigym.viewer.pairs.renamed_to_original and renamed_away
  function originalNames(rec) {
    var params = (rec.env.condition || {}).params || {}, mapping = params.mapping, out = {}, shown = {};
    if ((!mapping || !Object.keys(mapping).length) && rec.final && rec.final.state && typeof rec.final.state === "object") {
      mapping = rec.final.state.tool_names;
    }
    if (!mapping || typeof mapping !== "object") return out;
    Object.keys(mapping).forEach(function (original) { shown[String(mapping[original])] = 1; });
    Object.keys(mapping).forEach(function (original) {
      if (String(mapping[original]) === original) return;
      out[String(mapping[original])] = original;
      if (!shown[original]) out[original] = NO_SUCH_TOOL;
    });
    return out;
  }
  function actionBox(action, names) {
    var nodes = [];
    if (action && typeof action === "object" && typeof action.tool === "string") {
      var original = names[action.tool];
      nodes.push(el("div", {cls: "call"}, [el("span", {cls: "label", text: "tool"}), el("code", {cls: "raw-name", text: action.tool}),
        original ? el("span", {cls: "mapped", title: original === NO_SUCH_TOOL ? "the condition renamed this tool: the name calls nothing"
                                                                     : "original name (the condition renamed it)"}, [
          document.createTextNode(" \u2192 "), el("code", {cls: "mapped-name", text: original})]) : null]));
      nodes.push(el("pre", {cls: "act", text: pretty(action.arguments)}));
    } else {
      nodes.push(el("span", {cls: "label", text: "action"}));
      nodes.push(el("pre", {cls: "act", text: pretty(action)}));
    }
    return nodes;
  }
  function stepBox(step, diffKind, names) {
    var usage = step.usage || {};
    var head = "step " + step.t + " · reward " + fmt(step.reward) +
      (step.terminated ? " · terminated" : "") + (step.truncated ? " · truncated" : "") +
      (usage.model_calls ? " · " + usage.model_calls + " model calls, " +
        (usage.prompt_tokens + usage.completion_tokens) + " tokens" : "") +
      (usage.latency_s ? " · " + fmt(usage.latency_s, 3) + " s" : "");
    var obs = step.observation;
    var obsText = obs && typeof obs === "object" && typeof obs.text === "string" ? obs.text : pretty(obs);
    var box = el("div", {cls: "step" + (diffKind ? " diff" : ""), "data-t": String(step.t)}, [
      el("div", {cls: "head"}, [document.createTextNode(head),
        diffKind ? el("span", {cls: "badge changed", text: "differs: " + diffKind}) : null]),
      el("span", {cls: "label", text: "observation"}), el("pre", {cls: "obs", text: obsText})]
      .concat(actionBox(step.action, names)));
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
        el("td", {text: g.source}), el("td", {cls: "details", text: g.error || JSON.stringify(g.details)})]);
    });
    return el("table", {cls: "grades"}, [el("colgroup", {}, [el("col", {cls: "c-grader"}), el("col", {cls: "c-version"}),
      el("col", {cls: "c-score"}), el("col", {cls: "c-source"}), el("col", {})]),
      el("thead", {}, [el("tr", {}, ["grader", "version", "score", "source", "details"]
      .map(function (h) { return el("th", {text: h}); }))]), el("tbody", {}, rows)]);
  }
  function transcript(i, diffSteps, diffKinds) {
    var rec = record(i), e = EPISODES[i], diff = {}, names = originalNames(rec);
    (diffSteps || []).forEach(function (t, n) { diff[t] = (diffKinds || [])[n] || "action"; });
    var usage = rec.usage || {};
    var box = el("div", {cls: "side", "data-episode": String(i)}, [
      el("h3", {text: e.agent + " · " + e.condition + " · " + e.task + " · seed " + e.seed + " rep " + e.rep}),
      el("div", {cls: "head", text: "termination: " + rec.termination + " · " + rec.steps.length + " steps · " +
        (usage.prompt_tokens + usage.completion_tokens) + " tokens · " + fmt(usage.cost_usd, 4) + " USD · key " + rec.episode_key})]);
    if (rec.error) box.appendChild(el("pre", {cls: "err", text: "error: " + rec.error}));
    rec.steps.forEach(function (s, t) { box.appendChild(stepBox(s, diff[t], names)); });
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
    var chosen = null;
    document.querySelectorAll("#" + tableId + " tbody tr").forEach(function (r) {
      var on = r.getAttribute(attr) === String(value);
      r.classList.toggle("selected", on);
      if (on) chosen = r;
    });
    if (chosen) {  // the row in view inside its scrolling box, without moving the page
      var box = chosen.closest(".table-box");
      box.scrollTop = chosen.offsetTop - box.clientHeight / 2;
    }
  }
  function goTo(node, what) {
    node.scrollIntoView({block: "start"});
    document.body.setAttribute("data-opened", what);
  }
  function showEpisode(i, scroll) {
    if (!(i >= 0 && i < EPISODES.length)) return;
    select("episode-table", "data-episode", i);
    withRecords([i], function () {
      var section = document.getElementById("transcript-section"), box = document.getElementById("transcript");
      box.textContent = "";
      box.appendChild(transcript(i, [], []));
      document.getElementById("transcript-title").textContent = "Transcript: episode " + i;
      section.hidden = false;
      if (scroll) goTo(section, "episode:" + i);
    });
  }

  // -- the paired view ------------------------------------------------------------------------
  function renderPairs() {
    if (!PAIRS.length) return;
    document.getElementById("pairs-section").hidden = false;
    document.querySelector("#pair-table thead").appendChild(el("tr", {}, ["#", "agent", "task", "seed", "rep",
      "treatment", "behaviour", "differing steps", "end state"].map(function (h) { return el("th", {text: h}); })));
  }
  // Only the first rows of the matching pairs are in the table (a 50,000-episode run has tens of
  // thousands of pairs): "show more" adds the next ones, and a linked pair is always rendered.
  var shownPairs = [], renderedPairs = 0;
  function renderPairRows(list, upTo) {
    var body = document.querySelector("#pair-table tbody");
    if (list) { shownPairs = list; renderedPairs = 0; body.textContent = ""; }
    for (; renderedPairs < Math.min(upTo, shownPairs.length); renderedPairs++) body.appendChild(pairRow(shownPairs[renderedPairs]));
    var more = document.getElementById("more-pairs");
    more.hidden = renderedPairs >= shownPairs.length;
    more.textContent = "show " + Math.min(PAGE_ROWS, shownPairs.length - renderedPairs) + " more of " +
      (shownPairs.length - renderedPairs) + " pairs";
  }
  function pairRow(p) {
    var row = el("tr", {"data-pair": String(p.n)}, [el("td", {cls: "num", text: String(p.n)}), el("td", {text: p.agent}),
      el("td", {text: p.task}), el("td", {cls: "num", text: String(p.seed)}), el("td", {cls: "num", text: String(p.rep)}),
      el("td", {text: p.condition}),
      el("td", {}, [el("span", {cls: "badge" + (p.changed ? " changed" : ""), text: p.changed ? "changed" : "same"})]),
      el("td", {text: p.diff_steps.map(function (t, n) { return t + " (" + p.diff_kinds[n] + ")"; }).join(", ")}),
      el("td", {text: p.state_changed ? "differs" : "same"})]);
    row.addEventListener("click", function () {
      var state = currentState(); delete state.episode; state.pair = String(p.n); writeHash(state); showPair(p.n, false);
    });
    return row;
  }
  function showPair(n, scroll) {
    var p = PAIRS[n];
    if (!p) return;
    select("pair-table", "data-pair", n);
    withRecords([p.baseline, p.treatment], function () {
      var view = document.getElementById("pair-view");
      view.textContent = "";
      view.setAttribute("data-pair", String(n));
      var base = transcript(p.baseline, p.diff_steps, p.diff_kinds), treat = transcript(p.treatment, p.diff_steps, p.diff_kinds);
      base.insertBefore(el("div", {cls: "label", text: "BASELINE"}), base.firstChild);
      treat.insertBefore(el("div", {cls: "label", text: "TREATMENT: " + p.condition}), treat.firstChild);
      view.appendChild(base);
      view.appendChild(treat);
      if (scroll) goTo(view, "pair:" + n);
    });
  }

  // -- start ----------------------------------------------------------------------------------
  renderSummary();
  renderGrid();
  fillSelects();
  renderPairs();
  document.querySelectorAll("#filters select, #filters input").forEach(function (input) {
    input.addEventListener("input", function () { var s = currentState(); writeHash(s); applyState(s); });
  });
  document.getElementById("more").addEventListener("click", function () { renderRows(rendered + PAGE_ROWS); });
  document.getElementById("more-pairs").addEventListener("click", function () { renderPairRows(null, renderedPairs + PAGE_ROWS); });
  document.getElementById("filters").addEventListener("submit", function (ev) { ev.preventDefault(); });
  window.addEventListener("hashchange", function () {
    var state = readHash();
    applyState(state);
    if (!state.episode && !state.pair) document.getElementById("episodes-section").scrollIntoView({block: "start"});
  });
  applyState(readHash());
  document.body.setAttribute("data-ready-ms", String(Math.round(performance.now())));  // load time, for benchmarks
  document.body.setAttribute("data-ready", "1");
})();
