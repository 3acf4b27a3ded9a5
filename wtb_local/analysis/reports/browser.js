// Trajectory browser of a wtb_local report: filters over a small task index, one page of rows at a
// time, and each session's details parsed from its own JSON block only when a task of it is opened,
// so a full run (1,024 tasks, several models) opens at once.
(function () {
  "use strict";
  var PAGE = 50;
  var index = JSON.parse(document.getElementById("wtb-index").textContent);
  var runs = index.runs;
  var tasks = index.tasks; // [run, session, task, type, verdict, category, subtype, transitions, session verdict]
  var shown = tasks;
  var page = 0;
  var cache = {};
  var $ = function (id) { return document.getElementById(id); };

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    (children || []).forEach(function (c) {
      node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return node;
  }

  function fillSelect(id, values, labels) {
    var select = $(id);
    values.forEach(function (v, i) {
      select.appendChild(el("option", { value: String(v) }, [labels ? labels[i] : String(v)]));
    });
  }

  function distinct(pos) {
    var seen = {};
    tasks.forEach(function (t) { seen[t[pos] === null ? "" : t[pos]] = true; });
    return Object.keys(seen).sort();
  }

  function filters() {
    return {
      run: $("f-model").value, verdict: $("f-verdict").value, type: $("f-type").value,
      sessionVerdict: $("f-session-verdict").value,
      category: $("f-category").value, session: $("f-session").value.trim()
    };
  }

  function apply() {
    var f = filters();
    shown = tasks.filter(function (t) {
      return (f.run === "" || String(t[0]) === f.run) &&
        (f.verdict === "" || t[4] === f.verdict) &&
        (f.sessionVerdict === "" || t[8] === f.sessionVerdict) &&
        (f.type === "" || t[3] === f.type) &&
        (f.category === "" || (t[5] || "") === f.category) &&
        (f.session === "" || t[1].indexOf(f.session) !== -1);
    });
    page = 0;
    render();
  }

  function render() {
    var body = $("b-rows");
    while (body.firstChild) { body.removeChild(body.firstChild); }
    var pages = Math.max(1, Math.ceil(shown.length / PAGE));
    page = Math.min(page, pages - 1);
    shown.slice(page * PAGE, (page + 1) * PAGE).forEach(function (t) {
      var row = el("tr", { "class": "b-row " + t[4], "data-key": t[0] + "/" + t[1] + "/" + t[2] }, [
        el("td", {}, [runs[t[0]]]), el("td", {}, [t[1]]), el("td", {}, [String(t[2])]),
        el("td", {}, [t[3]]), el("td", {}, [t[6]]), el("td", {}, [String(t[7])]),
        el("td", { "class": "verdict" }, [t[4]]), el("td", {}, [t[5] || ""])
      ]);
      row.addEventListener("click", function () { open(t); });
      body.appendChild(row);
    });
    $("b-count").textContent = String(shown.length);
    $("b-page").textContent = (page + 1) + " / " + pages;
  }

  function session(runIdx, sid) {
    var key = runIdx + "/" + sid;
    if (!(key in cache)) {
      cache[key] = JSON.parse(document.getElementById("wtb-s-" + runIdx + "-" + sid).textContent);
    }
    return cache[key];
  }

  function pre(text, cls) { return el("pre", { "class": cls || "" }, [text === null || text === undefined ? "" : String(text)]); }
  function pretty(value) { return JSON.stringify(value, null, 2); }

  function message(m) {
    var parts = [el("div", { "class": "role" }, [m.role + (m.tool_call_id ? " (" + m.tool_call_id + ")" : "")])];
    if (m.reasoning_content) { parts.push(pre(m.reasoning_content, "reasoning")); }
    if (m.content !== null && m.content !== undefined && m.content !== "") { parts.push(pre(m.content)); }
    if (m.tool_calls) { parts.push(pre(pretty(m.tool_calls), "calls")); }
    return el("div", { "class": "msg " + m.role }, parts);
  }

  function step(s, i) {
    var head = "step " + i + ": " + s.label + (s.error_reason ? " (" + s.error_reason + ")" : "") +
      (s.finish_reason ? " · finish " + s.finish_reason : "") + (s.dropped ? " · dropped by the scorer" : "");
    var box = el("div", { "class": "step " + s.label }, [el("h4", {}, [head])]);
    box.appendChild(el("div", { "class": "k" }, ["raw completion"]));
    box.appendChild(pre(s.raw === undefined ? "(not recorded)" : s.raw, "raw"));
    if (s.parse_errors) { box.appendChild(el("div", { "class": "k" }, ["parse errors"])); box.appendChild(pre(pretty(s.parse_errors))); }
    if (s.format_deviation) {  // calls written outside the model's format (docs/parser-policies.md §3)
      box.appendChild(el("div", { "class": "k" }, ["format deviation: " + s.format_deviation.kind + ", " +
        s.format_deviation.calls + " call(s) not executed"]));
    }
    box.appendChild(el("div", { "class": "k" }, ["parsed reply"]));
    box.appendChild(pre(pretty({ reasoning_content: s.reasoning, content: s.content, tool_calls: s.tool_calls })));
    box.appendChild(el("div", { "class": "k" }, [s.label === "correct" ? "accepted gold step" : "gold candidates at this step"]));
    box.appendChild(pre(pretty(s.gold)));
    if (s.arguments_label) {
      box.appendChild(el("div", { "class": "k" }, ["argument check: " + s.arguments_label]));
      if (s.check) { box.appendChild(pre(pretty(s.check), "check")); }
    }
    return box;
  }

  function open(t) {
    var data = session(t[0], t[1]);
    var task = data.tasks[t[2]];
    var detail = $("b-detail");
    while (detail.firstChild) { detail.removeChild(detail.firstChild); }
    detail.appendChild(el("a", { "class": "back", href: "#browser" }, ["back to the task list"]));
    detail.appendChild(el("h3", {}, [runs[t[0]] + " · " + t[1] + " · task " + t[2] + " · " + t[3]]));
    detail.appendChild(el("p", { "class": "verdict-line " + t[4] }, [
      "verdict: " + t[4] + (t[5] ? " · " + t[5] : "") + (task && task.verdict ? " · " + pretty(task.verdict).replace(/\s+/g, " ") : "")]));
    detail.setAttribute("data-open", t[0] + "/" + t[1] + "/" + t[2]);
    if (!task || task.error) {
      detail.appendChild(pre(task ? task.error : "no record of this task"));
      detail.scrollIntoView({ block: "start" });
      return;
    }
    var history = el("details", { "class": "history" }, [el("summary", {}, ["system prompt and earlier tasks, gold history (" + task.history + " messages)"])]);
    task.messages.slice(0, task.history).forEach(function (m) { history.appendChild(message(m)); });
    detail.appendChild(history);
    var conv = el("details", { "open": "" }, [el("summary", {}, ["this task as the model saw it at its last step (" + (task.messages.length - task.history) + " messages)"])]);
    task.messages.slice(task.history).forEach(function (m) { conv.appendChild(message(m)); });
    detail.appendChild(conv);
    task.steps.forEach(function (s, i) { detail.appendChild(step(s, i)); });
    var tools = el("details", {}, [el("summary", {}, ["tools offered (" + data.tools.length + ")"])]);
    tools.appendChild(pre(pretty(data.tools)));
    detail.appendChild(tools);
    // the details sit below the list (up to 50 rows): bring them into view
    detail.scrollIntoView({ block: "start" });
  }

  fillSelect("f-model", runs.map(function (_, i) { return i; }), runs);
  fillSelect("f-type", distinct(3));
  fillSelect("f-category", distinct(5).filter(function (c) { return c !== ""; }));
  ["f-model", "f-verdict", "f-session-verdict", "f-type", "f-category"].forEach(function (id) { $(id).addEventListener("change", apply); });
  $("f-session").addEventListener("input", apply);
  $("b-prev").addEventListener("click", function () { if (page > 0) { page -= 1; render(); } });
  $("b-next").addEventListener("click", function () { if ((page + 1) * PAGE < shown.length) { page += 1; render(); } });
  window.wtbBrowser = { open: open, apply: apply, shown: function () { return shown; } };
  apply();
})();
