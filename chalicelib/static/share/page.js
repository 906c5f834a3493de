/* docpub share page: the feedback form, comments on the text (threads, highlights,
   replies), the "newer version" notice and the view beacon. The document itself is
   in a sandboxed frame (an opaque origin): it is reached only through postMessage,
   messages are taken only from that frame's window, and everything it sends is
   treated as untrusted text (never HTML). Nothing here is ever sent to the frame but
   the comments' public quotes. */
(function () {
  var frame = document.getElementById("doc"), side = document.getElementById("rv");
  var panel = document.getElementById("fb"), form = document.getElementById("fb-form");
  var status = document.getElementById("fb-status"), open = document.getElementById("fb-open");
  var data = side ? side.dataset : {};
  var selection = null, threads = [], found = {}, frameReady = false, activity = null;
  var suggest = document.getElementById("sg-open"), suggesting = false;
  var replacementBox = document.getElementById("fb-suggest"), heading = document.getElementById("fb-heading");

  function el(tag, cls, text) { var e = document.createElement(tag); if (cls) e.className = cls; if (text != null) e.textContent = text; return e; }
  function toFrame(message) { if (frame && frame.contentWindow) frame.contentWindow.postMessage(message, "*"); }
  function json(url, options) {
    return fetch(url, Object.assign({credentials: "same-origin", headers: {"Accept": "application/json"}}, options || {}))
      .then(function (r) { return r.json().catch(function () { return {}; }).then(function (j) { return [r.status, j]; }); });
  }
  function postJson(url, body) {
    return json(url, {method: "POST", headers: {"Content-Type": "application/json", "Accept": "application/json"},
                      body: JSON.stringify(body)});
  }
  function errorText(res, fallback) { return (res[1] && res[1].error && res[1].error.message) || fallback; }
  function savedName() { try { return localStorage.getItem("docpub:name") || ""; } catch (e) { return ""; } }
  function saveName(name) { try { if (name) localStorage.setItem("docpub:name", name); } catch (e) { /* private mode */ } }

  // ---------------------------------------------------------------- the frame
  window.addEventListener("message", function (e) {
    if (!frame || e.source !== frame.contentWindow) return;
    var d = e.data;
    if (!d || typeof d.type !== "string") return;
    if (d.type === "docpub:selection") {
      var a = d.anchor;
      selection = a && typeof a.quote === "string" && a.quote.trim() ? {quote: a.quote.slice(0, 1000),
        prefix: typeof a.prefix === "string" ? a.prefix.slice(-64) : "", suffix: typeof a.suffix === "string" ? a.suffix.slice(0, 64) : ""} : null;
      open.textContent = selection ? "Feedback on selection" : (a && a.tooLong ? "Feedback (selection too long)" : "Feedback");
      if (suggest) suggest.hidden = !selection;
    } else if (d.type === "docpub:ready") {
      frameReady = true; drawHighlights();
    } else if (d.type === "docpub:anchors") {
      found = {}; (Array.isArray(d.found) ? d.found : []).forEach(function (id) { found[String(id)] = true; });
      render();
    } else if (d.type === "docpub:open" && typeof d.id === "string") {
      showSide(true); var card = document.getElementById("t-" + d.id);
      if (card) { card.scrollIntoView({block: "nearest"}); card.classList.add("flash"); card.focus();
                  setTimeout(function () { card.classList.remove("flash"); }, 1200); }
    }
  });

  // ---------------------------------------------------------------- feedback form (general or on the selection),
  // or a suggested change of the selection (the replacement prefilled with the quote)
  function openPanel(asSuggestion) {
    suggesting = asSuggestion && !!selection;
    form.elements.quote.value = selection ? selection.quote : "";
    if (!form.elements.name.value) form.elements.name.value = savedName();
    replacementBox.hidden = !suggesting; form.elements.replacement.value = suggesting ? selection.quote : "";
    form.elements.message.required = !suggesting;
    heading.textContent = suggesting ? "Suggest a change" : "Send feedback";
    panel.hidden = false; status.textContent = "";
    (suggesting ? form.elements.replacement : form.elements.message).focus();
  }
  open.addEventListener("click", function () { openPanel(false); });
  if (suggest) suggest.addEventListener("click", function () { openPanel(true); });
  document.getElementById("fb-cancel").addEventListener("click", function () { panel.hidden = true; });
  form.addEventListener("submit", function (e) {
    e.preventDefault();
    var body = {message: form.elements.message.value}, name = form.elements.name.value.trim(), quote = form.elements.quote.value;
    if (name) { body.name = form.elements.name.value; saveName(body.name); }
    if (quote.trim()) {
      body.quote = quote;
      if (selection && selection.quote === quote) body.anchor = {quote: quote, prefix: selection.prefix, suffix: selection.suffix};
    }
    if (suggesting) {
      if (!body.anchor) { status.textContent = "Select the text to change in the document first."; return; }
      body.suggestion = {replacement: form.elements.replacement.value};
      if (!body.message.trim()) body.message = "Suggested a change";
    }
    status.textContent = "Sending\u2026";
    postJson(form.action, body).then(function (res) {
      if (res[0] === 201) {
        form.reset(); selection = null; open.textContent = "Feedback"; suggesting = false;
        replacementBox.hidden = true; heading.textContent = "Send feedback"; if (suggest) suggest.hidden = true;
        status.textContent = "Thank you! Your feedback was sent."; status.setAttribute("data-feedback-id", res[1].feedback_id);
        loadThreads(true);
      } else { status.textContent = errorText(res, "Could not send your feedback."); }
    }).catch(function () { status.textContent = "Could not send your feedback; check your connection."; });
  });

  // ---------------------------------------------------------------- threads
  var list = document.getElementById("rv-threads"), count = document.getElementById("rv-count");
  var earlier = document.getElementById("rv-earlier"), earlierHead = document.getElementById("rv-earlier-head");
  var accepted = document.getElementById("rv-accepted"), acceptedHead = document.getElementById("rv-accepted-head");
  var toggle = document.getElementById("rv-toggle");
  function showSide(show) { if (!side) return; side.classList.toggle("open", show); toggle.setAttribute("aria-expanded", String(show)); }
  if (toggle) toggle.addEventListener("click", function () { showSide(!side.classList.contains("open")); });
  var closer = document.getElementById("rv-close");
  if (closer) closer.addEventListener("click", function () { showSide(false); });
  // At desktop width the comments are listed beside the page from the start (contract 7c);
  // on a phone they are a bottom sheet the reader opens.
  if (side && window.matchMedia && window.matchMedia("(min-width: 761px)").matches) showSide(true);
  // The sheet and the panels sit above the footer, whatever its height (it wraps on a
  // phone), so they never cover its buttons (CSSOM: not an inline style attribute).
  var foot = document.querySelector(".foot");
  function footHeight() { if (foot) document.documentElement.style.setProperty("--foot-h", foot.offsetHeight + "px"); }
  footHeight(); window.addEventListener("resize", footHeight);

  function loadThreads(fresh) {
    if (!side) return;
    var token = fresh ? "f" + Date.now().toString(36) + Math.random().toString(36).slice(2, 6) : (activity || "0");
    json(data.threads + "/" + encodeURIComponent(token)).then(function (res) {
      if (res[0] !== 200 || !Array.isArray(res[1].threads)) return;
      threads = res[1].threads; drawHighlights(); render();
    }).catch(function () { /* offline: keep what is shown */ });
  }
  // anchor_state is for the latest version: on it, a fuzzy anchor is drawn where its text is now
  // ("text changed") and an orphaned one is listed under "On earlier versions".
  function state(t) { return data.latest === "1" && t.anchor_state ? t.anchor_state : null; }
  function isOpen(t) { return t.status === "open"; }
  function orphaned(t) { var st = state(t); return !!(t.anchor && st && st.status === "orphaned"); }
  function drawHighlights() {
    if (!frameReady) return;
    toFrame({type: "docpub:highlight", anchors: threads.filter(function (t) { return t.anchor && isOpen(t) && !orphaned(t); }).map(function (t) {
      var st = state(t), changed = !!(st && st.status === "fuzzy" && st.quote_now);
      return {id: t.feedback_id, quote: changed ? st.quote_now : t.anchor.quote, prefix: t.anchor.prefix || "",
              suffix: t.anchor.suffix || "", changed: changed,
              replacement: t.suggestion ? String(t.suggestion.replacement) : null};
    })});
  }
  function versionLink(t, text) {
    var a = el("a", "version", text); a.href = data.share + "?v=" + encodeURIComponent(String(t.version_number || ""));
    return a;
  }
  function change(t) {  // a suggested change, as a tracked change: the quote struck through, the replacement inserted
    var q = el("blockquote", "quote change"); q.appendChild(el("del", null, t.anchor.quote));
    if (t.suggestion.replacement) q.appendChild(el("ins", null, t.suggestion.replacement));
    return q;
  }
  function when(iso) { var d = new Date(iso); return isNaN(d) ? "" : d.toLocaleString(); }
  function render() {
    if (!list) return;
    list.textContent = ""; earlier.textContent = ""; accepted.textContent = "";
    var open = threads.filter(function (t) { return isOpen(t) && !orphaned(t); });
    var gone = threads.filter(function (t) { return isOpen(t) && orphaned(t); });
    var done = threads.filter(function (t) { return !isOpen(t) && t.resolved_in_version; });
    count.textContent = open.length + gone.length ? String(open.length + gone.length) : "";
    document.getElementById("rv-empty").hidden = open.length + gone.length > 0;
    earlierHead.hidden = !gone.length; acceptedHead.hidden = !done.length;
    open.forEach(function (t) { list.appendChild(card(t)); });
    gone.forEach(function (t) { earlier.appendChild(card(t)); });
    done.forEach(function (t) { accepted.appendChild(card(t)); });
  }
  function card(t) {
    var li = el("li", "thread" + (t.suggestion ? " suggestion" : "")); li.id = "t-" + t.feedback_id; li.tabIndex = -1;
    li.setAttribute("data-feedback-id", t.feedback_id);
    var st = state(t);
    if (!isOpen(t) && t.resolved_in_version) {
      var note = el("p", "accepted", "Accepted in "); note.appendChild(versionLink({version_number: t.resolved_in_version}, "version " + t.resolved_in_version));
      li.appendChild(note);
    }
    if (t.anchor) {
      var q = t.suggestion ? change(t) : el("blockquote", "quote", t.anchor.quote);
      if (!isOpen(t)) {
        /* resolved: no highlight */
      } else if (orphaned(t)) {
        var p = el("p", "earlier", "Not in this version \u00b7 written on "); p.appendChild(versionLink(t, "version " + (t.version_number || "?")));
        li.appendChild(p);
      } else if (found[t.feedback_id]) {
        q.title = "Show in the document"; q.classList.add("anchored");
        q.addEventListener("click", function () { toFrame({type: "docpub:focus", id: t.feedback_id}); });
        if (st && st.status === "fuzzy") li.appendChild(el("p", "changed", "Text changed"));
      } else {
        li.appendChild(el("p", "earlier", t.version_id === data.versionId ? "Text not found in this version"
                                                                         : "On an earlier version"));
      }
      li.appendChild(q);
    } else if (t.quote) { li.appendChild(el("blockquote", "quote", t.quote)); }
    li.appendChild(entry(t.name, t.message, t.created_at, false));
    var replies = el("ol", "replies");
    (t.replies || []).forEach(function (r) { var item = el("li"); item.appendChild(entry(r.author === "owner" ? "Author" : r.name, r.message, r.created_at, r.author === "owner")); replies.appendChild(item); });
    li.appendChild(replies);
    if (isOpen(t)) li.appendChild(replyForm(t));
    return li;
  }
  function entry(name, message, at, owner) {
    var box = el("div", "entry" + (owner ? " owner" : ""));
    var head = el("p", "who"); head.appendChild(el("b", null, name || "Anonymous"));
    head.appendChild(document.createTextNode(" \u00b7 " + when(at))); box.appendChild(head);
    box.appendChild(el("p", "text", message)); return box;
  }
  function replyForm(t) {
    var f = el("form", "reply"), area = el("textarea"), send = el("button", "plain", "Reply"), note = el("p", "status");
    area.name = "message"; area.required = true; area.maxLength = 5000; area.rows = 2;
    area.setAttribute("aria-label", "Reply to this comment"); area.placeholder = "Reply\u2026"; send.type = "submit";
    f.appendChild(area); f.appendChild(send); f.appendChild(note);
    f.addEventListener("submit", function (e) {
      e.preventDefault(); note.textContent = "Sending\u2026";
      var body = {message: area.value}, name = savedName(); if (name) body.name = name;
      postJson(data.share + "/feedback/" + encodeURIComponent(t.feedback_id) + "/replies", body).then(function (res) {
        if (res[0] === 201) { loadThreads(true); } else { note.textContent = errorText(res, "Could not send your reply."); }
      }).catch(function () { note.textContent = "Could not send your reply; check your connection."; });
    });
    return f;
  }

  // ---------------------------------------------------------------- live: a newer version, new comments
  var banner = document.getElementById("rv-live"), pinned = document.getElementById("rv-pinned");
  function poll() {
    json(data.share + "/live").then(function (res) {
      if (res[0] !== 200) return;
      var live = res[1];
      if (data.latest === "1" && typeof live.version === "number" && live.version > Number(data.version)) {
        banner.querySelector("span").textContent = "A newer version (" + live.version + ") of this document is available.";
        banner.hidden = false;
      } else if (pinned && typeof live.version === "number" && live.version > Number(data.version)) {
        // A link to one version: say so, never move (contract 7f).
        pinned.querySelector("span").textContent = "This link shows version " + data.version + ". A newer version (" + live.version + ") exists.";
        pinned.hidden = false;
      }
      // Threads are fetched under the activity mark: a new comment or reply is a new address,
      // so a cache never answers with threads older than the mark it was asked for.
      var a = String(live.activity || 0);
      if (a !== activity) { activity = a; loadThreads(false); }
    }).catch(function () { /* try again next time */ });
  }
  if (banner) {
    document.getElementById("rv-live-show").addEventListener("click", function () { location.replace(data.share); });
    setInterval(poll, Math.max(1, Number(data.liveSeconds) || 10) * 1000);
  }
  if (side) poll();
})();
// Reviews (contract 7e): members of the workspace approve, request changes or comment
// from the page. Who this browser reviews as comes from a private answer (the page itself
// is the same for every viewer); a viewer who is not signed in is offered the sign-in.
(function () {
  var panel = document.getElementById("rvw"), opener = document.getElementById("rvw-open");
  if (!panel || !opener) return;
  var form = document.getElementById("rvw-form"), status = document.getElementById("rvw-status");
  var state = document.getElementById("rvw-state"), signIn = document.getElementById("rvw-sign-in");
  var WORDS = {none: "Not reviewed yet.", pending: "Waiting for a review.",
               changes_requested: "Changes were requested.", approved: "Approved."};
  function showState(s) { state.textContent = WORDS[s] || ""; }
  function load() {
    return fetch(panel.getAttribute("data-panel"), {credentials: "same-origin", headers: {"Accept": "application/json"}})
      .then(function (r) { return r.json().then(function (j) { return [r.status, j]; }); })
      .then(function (res) {
        if (res[0] !== 200) { status.textContent = (res[1].error && res[1].error.message) || ""; return; }
        showState(res[1].review_state);
        var who = res[1].reviewer;
        form.hidden = !who; signIn.hidden = !!who;
        if (who) document.getElementById("rvw-who").textContent = "Reviewing version " + res[1].version_number + " as " + who + ".";
      }).catch(function () { status.textContent = "Could not load the review; check your connection."; });
  }
  function show() { panel.hidden = false; status.textContent = ""; load(); }
  opener.addEventListener("click", show);
  document.getElementById("rvw-cancel").addEventListener("click", function () { panel.hidden = true; });
  form.addEventListener("submit", function (e) {
    e.preventDefault();
    var decision = (e.submitter && e.submitter.value) || "commented", body = {decision: decision};
    if (form.elements.message.value.trim()) body.message = form.elements.message.value;
    status.textContent = "Sending\u2026";
    fetch(form.action, {method: "POST", credentials: "same-origin",
                        headers: {"Content-Type": "application/json", "Accept": "application/json"},
                        body: JSON.stringify(body)})
      .then(function (r) { return r.json().then(function (j) { return [r.status, j]; }); })
      .then(function (res) {
        if (res[0] === 201) {
          form.reset(); status.setAttribute("data-review-id", res[1].review_id);
          status.textContent = {approved: "Thank you: you approved this version.",
                                changes_requested: "Thank you: you requested changes.",
                                commented: "Thank you: your comment was recorded."}[decision];
          load();
        } else { status.textContent = (res[1].error && res[1].error.message) || "Could not send your review."; }
      }).catch(function () { status.textContent = "Could not send your review; check your connection."; });
  });
  if (location.hash === "#review") show();
})();
// Views: one beacon per page load, sent once the page is visible (a prerendered
// or background page waits until shown; a page restored from the back/forward
// cache is not a new load). No cookie is set; the server drops bots. Polling for
// a newer version never counts a view.
(function () {
  var frame = document.getElementById("doc"), url = frame && frame.getAttribute("data-view"), sent = false;
  if (!url) return;
  function send() {
    if (sent || document.prerendering || document.visibilityState !== "visible") return;
    sent = true;
    try {
      // A static page's beacon is a GET the CDN answers and logs (counted from its logs).
      if (frame.getAttribute("data-view-method") === "get") fetch(url, {cache: "no-store", credentials: "omit", keepalive: true}).catch(function () {});
      else if (!(navigator.sendBeacon && navigator.sendBeacon(url))) fetch(url, {method: "POST", credentials: "same-origin", keepalive: true});
    } catch (e) { /* ignore */ }
  }
  document.addEventListener("visibilitychange", send);
  document.addEventListener("prerenderingchange", send);
  send();
})();
(function () {
  /* The "Verified" line (contract 7g): rendered by the service (templates/share/verified.html,
     same origin, escaped), fetched after the page so the page itself reads nothing more. */
  var box = document.getElementById("pv"), src = box && box.getAttribute("data-src");
  if (!src || !window.fetch || !window.DOMParser) return;
  fetch(src, {credentials: "same-origin", headers: {"Accept": "text/html"}}).then(function (r) {
    return r.ok ? r.text() : "";
  }).then(function (text) {
    if (!text) return;
    var parsed = new DOMParser().parseFromString(text, "text/html");
    var line = parsed.body.firstElementChild;
    if (line && line.tagName === "DETAILS") box.appendChild(document.importNode(line, true));
  }).catch(function () { /* no line */ });
})();
