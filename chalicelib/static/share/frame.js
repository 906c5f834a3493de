/* docpub: injected at the end of every served version. The document runs in an
   opaque origin (sandbox without allow-same-origin); this script only talks to the
   share page through postMessage: it reports the selected passage as a W3C
   TextQuoteSelector, draws the comments' highlights it is asked to draw, and says
   which highlight was clicked. It accepts messages only from the parent window and
   only from the share page's origin (PARENT_ORIGIN). */
(function () {
  if (window.parent === window) return;
  var PARENT_ORIGIN = "__PARENT_ORIGIN__", CONTEXT = 64, SKIP = {SCRIPT: 1, STYLE: 1, NOSCRIPT: 1, TEMPLATE: 1, TEXTAREA: 1};
  function post(message) { try { window.parent.postMessage(message, PARENT_ORIGIN); } catch (e) { /* ignore */ } }
  function textNodes() {
    var out = [], walker = document.createTreeWalker(document.body || document.documentElement, NodeFilter.SHOW_TEXT, {
      acceptNode: function (n) {
        for (var p = n.parentNode; p; p = p.parentNode) {
          if (p.nodeType === 1 && (SKIP[p.nodeName] || (p.nodeName === "INS" && p.hasAttribute("data-docpub-id")))) return NodeFilter.FILTER_REJECT;
        }
        return NodeFilter.FILTER_ACCEPT;
      }});
    for (var n = walker.nextNode(), at = 0; n; n = walker.nextNode()) { out.push({node: n, start: at}); at += n.data.length; }
    return out;
  }
  function fullText(nodes) { return nodes.map(function (t) { return t.node.data; }).join(""); }
  function offsetOf(nodes, node, offset) {
    if (node.nodeType !== 3) {  // an element boundary: the text of every text node that ends before it
      var point = document.createRange(), count = 0;
      point.setStart(node, offset); point.collapse(true);
      for (var j = 0; j < nodes.length; j++) {
        if (point.comparePoint(nodes[j].node, nodes[j].node.data.length) < 0) count = nodes[j].start + nodes[j].node.data.length;
        else break;
      }
      return count;
    }
    for (var i = 0; i < nodes.length; i++) if (nodes[i].node === node) return nodes[i].start + offset;
    return -1;
  }
  var timer;
  document.addEventListener("selectionchange", function () {
    clearTimeout(timer);
    timer = setTimeout(function () {
      var sel = window.getSelection(), anchor = null;
      if (sel && sel.rangeCount && !sel.isCollapsed) {
        var range = sel.getRangeAt(0), nodes = textNodes(), text = fullText(nodes);
        var start = offsetOf(nodes, range.startContainer, range.startOffset), end = offsetOf(nodes, range.endContainer, range.endOffset);
        if (start >= 0 && end > start) {
          var quote = text.slice(start, end);
          var lead = quote.length - quote.replace(/^\s+/, "").length, trail = quote.length - quote.replace(/\s+$/, "").length;
          start += lead; end -= trail; quote = text.slice(start, end);
          if (quote && quote.length <= 1000) anchor = {quote: quote, prefix: text.slice(Math.max(0, start - CONTEXT), start), suffix: text.slice(end, end + CONTEXT)};
          else if (quote) anchor = {tooLong: true};
        }
      }
      post({type: "docpub:selection", anchor: anchor});
    }, 150);
  });
  function score(text, at, a) {
    var s = 0, p = a.prefix || "", q = a.suffix || "", i;
    for (i = 1; i <= p.length && text.charAt(at - i) === p.charAt(p.length - i); i++) s++;
    var after = at + a.quote.length;
    for (i = 0; i < q.length && text.charAt(after + i) === q.charAt(i); i++) s++;
    return s;
  }
  function find(text, a) {
    var best = -1, bestScore = -1, at = text.indexOf(a.quote);
    while (at !== -1) { var s = score(text, at, a); if (s > bestScore) { best = at; bestScore = s; } at = text.indexOf(a.quote, at + 1); }
    return best;
  }
  function clear() {
    var added = document.querySelectorAll("ins[data-docpub-id]");
    for (var k = 0; k < added.length; k++) added[k].parentNode.removeChild(added[k]);
    var marks = document.querySelectorAll("mark[data-docpub-id]");
    for (var i = 0; i < marks.length; i++) { var m = marks[i], parent = m.parentNode; while (m.firstChild) parent.insertBefore(m.firstChild, m); parent.removeChild(m); parent.normalize(); }
  }
  // A comment: a yellow highlight; a suggested edit: a tracked change (the quote struck
  // through, the replacement inserted after it, as text); "text changed": a dashed mark.
  var COMMENT = "background:rgba(255,200,40,.45);color:inherit;cursor:pointer;border-bottom:2px solid #e0a800;padding:0";
  var STRUCK = "background:rgba(220,60,50,.15);color:#8a1c14;text-decoration:line-through;cursor:pointer;padding:0";
  var INSERTED = "background:rgba(40,160,80,.18);color:#14532d;text-decoration:underline;cursor:pointer;padding:0 1px";
  function wrap(nodes, start, end, a) {
    var first = null, last = null;
    nodes.forEach(function (t) {
      var s = Math.max(start, t.start), e = Math.min(end, t.start + t.node.data.length);
      if (e <= s || !t.node.data.slice(s - t.start, e - t.start).trim()) return;
      var range = document.createRange(); range.setStart(t.node, s - t.start); range.setEnd(t.node, e - t.start);
      var mark = document.createElement("mark"); mark.setAttribute("data-docpub-id", a.id);
      mark.setAttribute("style", (typeof a.replacement === "string" ? STRUCK : COMMENT) + (a.changed ? ";outline:1px dashed #8a5a00" : ""));
      mark.title = (a.changed ? "Text changed since the comment. " : "") + (typeof a.replacement === "string" ? "Open the suggested change" : "Open the comment");
      if (a.changed) mark.setAttribute("data-docpub-changed", "1");
      try { range.surroundContents(mark); first = first || mark; last = mark; } catch (e) { /* crosses an element: skipped */ }
    });
    if (last && typeof a.replacement === "string" && a.replacement) {
      var ins = document.createElement("ins"); ins.setAttribute("data-docpub-id", a.id);
      ins.setAttribute("style", INSERTED); ins.textContent = a.replacement; ins.title = "Suggested replacement";
      last.parentNode.insertBefore(ins, last.nextSibling);
    }
    return first;
  }
  function highlight(list) {
    clear();
    var found = [], missing = [];
    for (var i = 0; i < list.length; i++) {
      var a = list[i];
      if (!a || typeof a.id !== "string" || typeof a.quote !== "string" || !a.quote) continue;
      var nodes = textNodes(), text = fullText(nodes), at = find(text, a);  // re-read: earlier marks split nodes
      if (at < 0) { missing.push(a.id); continue; }
      (wrap(nodes, at, at + a.quote.length, a) ? found : missing).push(a.id);
    }
    post({type: "docpub:anchors", found: found, missing: missing});
  }
  document.addEventListener("click", function (e) {
    var m = e.target && e.target.closest ? e.target.closest("mark[data-docpub-id],ins[data-docpub-id]") : null;
    if (m) { e.preventDefault(); post({type: "docpub:open", id: m.getAttribute("data-docpub-id")}); }
  }, true);
  window.addEventListener("message", function (e) {
    if (e.source !== window.parent || e.origin !== PARENT_ORIGIN) return;
    var d = e.data || {};
    if (d.type === "docpub:highlight" && Array.isArray(d.anchors)) highlight(d.anchors);
    if (d.type === "docpub:focus" && typeof d.id === "string") {
      var marks = document.querySelectorAll("mark[data-docpub-id]");
      for (var i = 0; i < marks.length; i++) if (marks[i].getAttribute("data-docpub-id") === d.id) { marks[i].scrollIntoView({block: "center", behavior: "smooth"}); break; }
    }
  });
  // Keyboard users reach the document with Tab (a frame with nothing focusable is skipped),
  // then select with Ctrl+A and Shift+arrows to comment on a passage.
  function focusable() {
    var body = document.body;
    if (body && !body.hasAttribute("tabindex")) body.setAttribute("tabindex", "0");
  }
  function ready() { focusable(); post({type: "docpub:ready"}); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", ready); else ready();
})();
