// dedup report: filters by kind, status, rule, host, score range and words; the state lives in the
// URL's #fragment (e.g. #kind=dropped&status=exact_duplicate&min=0.9&q=bridge), so a view can be
// bookmarked or sent. No network access, no libraries.
(function () {
  "use strict";
  var form = document.getElementById("filters");
  if (!form) { return; }
  var copies = Array.prototype.slice.call(document.querySelectorAll("article.copy"));
  var groups = Array.prototype.slice.call(document.querySelectorAll("section.group"));
  var shown = document.getElementById("shown");
  var none = document.getElementById("none");
  copies.forEach(function (c) { c._text = c.textContent.toLowerCase(); });
  groups.forEach(function (g) {
    var head = g.querySelector(".group-head");
    g._text = head ? head.textContent.toLowerCase() : "";
  });
  var kinds = Array.prototype.slice.call(form.querySelectorAll("input[name=kind]"));

  function field(name) { return form.elements.namedItem(name); }

  function num(value, fallback) {
    var x = parseFloat(value);
    return isNaN(x) ? fallback : x;
  }

  function fromForm() {
    return {
      kind: kinds.filter(function (k) { return k.checked; }).map(function (k) { return k.value; }),
      status: field("status").value, rule: field("rule").value, host: field("host").value,
      min: field("min").value, max: field("max").value, q: field("q").value.trim()
    };
  }

  function toForm(f) {
    kinds.forEach(function (k) { k.checked = f.kind.indexOf(k.value) >= 0; });
    ["status", "rule", "host", "min", "max", "q"].forEach(function (name) {
      var el = field(name);
      if (el.tagName === "SELECT" && f[name] &&
          !Array.prototype.some.call(el.options, function (o) { return o.value === f[name]; })) {
        var o = document.createElement("option");  // a value from a shared link, not in this report
        o.value = o.textContent = f[name];
        el.appendChild(o);
      }
      el.value = f[name];
    });
  }

  function fromHash() {
    var p = new URLSearchParams(location.hash.replace(/^#/, ""));
    var all = kinds.map(function (k) { return k.value; });
    return {
      kind: p.has("kind") ? p.get("kind").split(",").filter(function (k) { return all.indexOf(k) >= 0; }) : all,
      status: p.get("status") || "", rule: p.get("rule") || "", host: p.get("host") || "",
      min: p.get("min") || "", max: p.get("max") || "", q: p.get("q") || ""
    };
  }

  function toHash(f) {
    var p = new URLSearchParams();
    if (f.kind.length !== kinds.length) { p.set("kind", f.kind.join(",")); }
    ["status", "rule", "host", "min", "max", "q"].forEach(function (k) { if (f[k]) { p.set(k, f[k]); } });
    var hash = p.toString();
    if (hash !== location.hash.replace(/^#/, "")) {
      history.replaceState(null, "", hash ? "#" + hash : location.pathname + location.search);
    }
  }

  function apply(f) {
    var lo = num(f.min, 0), hi = num(f.max, 1), ranged = lo > 0 || hi < 1;
    var words = f.q.toLowerCase().split(/\s+/).filter(Boolean);
    var visible = 0, visibleGroups = 0;
    groups.forEach(function (g) {
      var any = false;
      Array.prototype.forEach.call(g.querySelectorAll("article.copy"), function (c) {
        var d = c.dataset, ok = f.kind.indexOf(d.kind) >= 0 &&
          (!f.status || d.status === f.status) && (!f.rule || d.rule === f.rule) && (!f.host || d.host === f.host);
        if (ok && ranged) {
          ok = d.score !== "" && num(d.score, -1) >= lo && num(d.score, 2) <= hi;
        }
        if (ok && words.length) {
          ok = words.every(function (w) { return c._text.indexOf(w) >= 0 || g._text.indexOf(w) >= 0; });
        }
        c.hidden = !ok;
        if (ok) { visible += 1; any = true; }
      });
      g.hidden = !any;
      if (any) { visibleGroups += 1; }
    });
    shown.dataset.pages = visible;
    shown.dataset.groups = visibleGroups;
    shown.innerHTML = "Showing <b>" + visible + "</b> of " + copies.length + " pages in <b>" + visibleGroups +
      "</b> of " + groups.length + " groups" + (visible === copies.length ? "." : " (filtered).");
    none.hidden = visible > 0;
  }

  function update() { var f = fromForm(); toHash(f); apply(f); }

  form.addEventListener("input", update);
  form.addEventListener("change", update);
  form.addEventListener("submit", function (e) { e.preventDefault(); });
  document.getElementById("reset").addEventListener("click", function () {
    toForm({kind: kinds.map(function (k) { return k.value; }), status: "", rule: "", host: "", min: "", max: "", q: ""});
    update();
  });
  window.addEventListener("hashchange", function () { var f = fromHash(); toForm(f); apply(f); });
  var start = fromHash();
  toForm(start);
  apply(start);

  // the filter bar is sticky on wide screens: what a link jumps to (#g3) must land below it, not under it
  function barHeight() {
    var sticky = getComputedStyle(form).position === "sticky";
    document.documentElement.style.setProperty("--bar", (sticky ? form.offsetHeight : 0) + "px");
  }
  barHeight();
  window.addEventListener("resize", barHeight);
  var target = location.hash.length > 1 && document.getElementById(location.hash.slice(1));
  if (target) { target.scrollIntoView(); }
}());
