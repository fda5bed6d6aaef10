// agentic-rubrics view: the index's task table, rendered a page at a time from its JSON data block.
// Text goes in with textContent only (never as markup); the policy allows this script by its sha256.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("view-data").textContent);
  const PAGE = data.page_size;
  const LOW = 0.8;
  const state = { key: null, dir: 1, page: 0, filter: "all", find: "" };
  const body = document.querySelector("#tasks tbody");
  const rows = data.tasks.map(function (t) {
    t.missing_n = Object.values(t.missing).reduce(function (a, b) { return a + b; }, 0);
    return t;
  });

  function value(t, key) {
    if (key.indexOf("pick:") === 0) {
      const p = t.picks[key.slice(5)];
      return p ? p[0] : null;
    }
    return t[key];
  }
  function keep(t) {
    const f = state.filter;
    if (f === "wrong" && !t.wrong) return false;
    if (f === "lowcov" && !(t.coverage === null || t.coverage < LOW)) return false;
    if (f === "flaky" && !(t.flips > 0)) return false;
    if (f === "nondisc" && !(t.nondisc > 0)) return false;
    if (f === "missing" && !(t.missing_n > 0)) return false;
    if (f.indexOf("missing:") === 0 && !(t.missing[f.slice(8)] > 0)) return false;
    if (state.find) {
      const hay = (t.id + " " + t.repo).toLowerCase();
      if (hay.indexOf(state.find) < 0) return false;
    }
    return true;
  }
  function compare(a, b) {
    const x = value(a, state.key), y = value(b, state.key);
    if (x === y) return 0;
    if (x === null || x === undefined) return 1;  // no value: last, whichever the direction
    if (y === null || y === undefined) return -1;
    return (x < y ? -1 : 1) * state.dir;
  }
  function text(v, digits) {
    if (v === null || v === undefined) return "–";
    if (typeof v === "number" && digits !== undefined) return v.toFixed(digits);
    return String(v);
  }
  function mark(resolved) {
    return resolved === true ? " ✓" : resolved === false ? " ✗" : " ?";
  }
  function cell(tr, content, cls) {
    const td = document.createElement("td");
    td.textContent = content;
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }
  function row(t) {
    const tr = document.createElement("tr");
    tr.dataset.id = t.id;
    if (t.wrong) tr.className = "wrong";
    const a = document.createElement("a");
    a.href = t.page;
    a.textContent = t.id;
    cell(tr, "").appendChild(a);
    cell(tr, t.repo);
    cell(tr, text(t.k), "num");
    cell(tr, text(t.labelled), "num");
    cell(tr, text(t.resolved), "num");
    cell(tr, text(t.pick) + mark(t.pick_resolved));
    cell(tr, t.s_min === null ? "–" : text(t.s_min, 3) + " – " + text(t.s_max, 3));
    cell(tr, t.coverage === null ? "no rubric: " + t.rubric : (100 * t.coverage).toFixed(1) + "%", "num");
    cell(tr, text(t.flips), "num");
    cell(tr, text(t.nondisc), "num");
    const why = Object.keys(t.missing).sort().map(function (k) { return k + " " + t.missing[k]; });
    cell(tr, why.join(", ") || "0");
    data.selectors.forEach(function (name) {
      const p = t.picks[name];
      cell(tr, p ? text(p[0]) + mark(p[1]) : "–");
    });
    cell(tr, text(t.usd, 4), "num");
    return tr;
  }
  function render() {
    const shown = rows.filter(keep);
    if (state.key) shown.sort(compare);
    const pages = Math.max(1, Math.ceil(shown.length / PAGE));
    state.page = Math.min(state.page, pages - 1);
    const part = shown.slice(state.page * PAGE, (state.page + 1) * PAGE);
    body.replaceChildren.apply(body, part.map(row));
    document.getElementById("shown").textContent = shown.length + " of " + rows.length + " tasks";
    document.getElementById("pageno").textContent = "page " + (state.page + 1) + " of " + pages;
    document.getElementById("prev").disabled = state.page === 0;
    document.getElementById("next").disabled = state.page >= pages - 1;
  }
  function sortBy(th) {
    const key = th.dataset.key;
    state.dir = state.key === key ? -state.dir : 1;
    state.key = key;
    document.querySelectorAll("#tasks th").forEach(function (h) { h.classList.remove("asc", "desc"); });
    th.classList.add(state.dir > 0 ? "asc" : "desc");
    state.page = 0;
    render();
  }
  document.querySelectorAll("#tasks th[data-key]").forEach(function (th) {
    th.addEventListener("click", function () { sortBy(th); });
    th.addEventListener("keydown", function (e) { if (e.key === "Enter") sortBy(th); });
  });
  document.getElementById("filter").addEventListener("change", function (e) {
    state.filter = e.target.value; state.page = 0; render();
  });
  document.getElementById("find").addEventListener("input", function (e) {
    state.find = e.target.value.trim().toLowerCase(); state.page = 0; render();
  });
  document.getElementById("prev").addEventListener("click", function () { state.page -= 1; render(); });
  document.getElementById("next").addEventListener("click", function () { state.page += 1; render(); });
  render();
})();
