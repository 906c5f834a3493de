// Docpub dashboard: progressive enhancement only. Every page works without this file.
(function () {
  "use strict";

  function humanSize(n) {
    if (n < 1024) return n + " B";
    if (n < 1024 * 1024) return (n / 1024).toFixed(1) + " KiB";
    return (n / 1024 / 1024).toFixed(2) + " MiB";
  }

  // Copy buttons: <button class="copy" data-copy="…" hidden> (hidden until this script runs).
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    button.hidden = false;
    var label = button.textContent;
    button.addEventListener("click", function () {
      var done = function () {
        button.textContent = "Copied";
        setTimeout(function () { button.textContent = label; }, 1500);
      };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(button.dataset.copy).then(done, function () { button.textContent = "Copy failed"; });
      } else {
        var area = document.createElement("textarea");
        area.value = button.dataset.copy;
        document.body.appendChild(area);
        area.select();
        try { document.execCommand("copy"); done(); } catch (e) { button.textContent = "Copy failed"; }
        area.remove();
      }
    });
  });

  // A running workspace export: poll its status, then show the download link (the
  // "Check again" link does the same without this script).
  var exportBox = document.querySelector("[data-export-poll]");
  if (exportBox && exportBox.dataset.exportStatus === "running") {
    var nojs = exportBox.querySelector("[data-export-nojs]");
    if (nojs) nojs.hidden = true;
    var poll = function () {
      fetch(exportBox.dataset.exportPoll, {credentials: "same-origin", headers: {"Accept": "application/json"}})
        .then(function (r) { return r.json(); })
        .then(function (answer) {
          if (answer.status === "running") { setTimeout(poll, 2000); return; }
          exportBox.textContent = "";
          var p = document.createElement("p");
          if (answer.status === "ready") {
            var link = document.createElement("a");
            link.className = "button";
            link.href = answer.download_url;
            link.setAttribute("download", "");
            link.textContent = "Download the export (zip)";
            p.appendChild(link);
            var until = document.createElement("span");
            until.className = "muted";
            until.textContent = " until " + answer.expires_at;
            p.appendChild(until);
          } else {
            p.className = "error";
            p.textContent = answer.status === "failed" ? "The export failed. Start a new one."
              : "The export's status could not be read; reload the page.";
          }
          exportBox.appendChild(p);
        }, function () { setTimeout(poll, 5000); });
    };
    setTimeout(poll, 1000);
  }

  // Confirmation before destructive forms: <form data-confirm="question">.
  document.querySelectorAll("form[data-confirm]").forEach(function (form) {
    form.addEventListener("submit", function (event) {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  });

  // Live size counters for the 4 MiB limit: file inputs and the HTML editor.
  document.querySelectorAll("[data-max-bytes]").forEach(function (field) {
    var pageLimit = parseInt(field.dataset.maxBytes, 10), limit = pageLimit;
    var note = document.querySelector('[data-size-for="' + field.name + '"]');
    if (!note) return;
    var update = function () {
      var size = 0;
      limit = pageLimit;
      if (field.type === "file") {
        if (!field.files || !field.files.length) { note.hidden = true; return; }
        size = field.files[0].size;
        // A .zip (a page with its files) has the bundle's limit, not the page's.
        if (/\.zip$/i.test(field.files[0].name) && field.dataset.maxBundleBytes) {
          limit = parseInt(field.dataset.maxBundleBytes, 10);
        }
      } else {
        size = new Blob([field.value]).size;
      }
      note.hidden = false;
      note.textContent = humanSize(size) + " of " + humanSize(limit) + (size > limit ? ": too large." + (limit === pageLimit ? " Inlined base64 images are the usual cause: put them in a .zip beside the page." : "") : "");
      note.classList.toggle("over", size > limit);
      field.setCustomValidity(size > limit ? "This file is larger than " + humanSize(limit) + "." : "");
    };
    field.addEventListener(field.type === "file" ? "change" : "input", update);
    update();
  });

  // Upload of a new document: an empty title is filled from the chosen file's <title>
  // (else its file name); it stays editable, and a title the person typed is never replaced.
  document.querySelectorAll("input[data-title-from]").forEach(function (title) {
    var file = title.form && title.form.querySelector('input[type="file"][name="' + title.dataset.titleFrom + '"]');
    if (!file || !window.FileReader || !window.DOMParser) return;
    var filled = "";
    file.addEventListener("change", function () {
      if (!file.files || !file.files.length || (title.value && title.value !== filled)) return;
      var chosen = file.files[0];
      // Markdown and .zip: the service takes the title from the first heading / the index page.
      if (!/\.html?$/i.test(chosen.name)) return;
      var reader = new FileReader();
      reader.onload = function () {
        if (title.value && title.value !== filled) return;  // typed while the file was read
        // DOMParser builds an inert document: nothing in the file runs or loads.
        var parsed = new DOMParser().parseFromString(String(reader.result), "text/html");
        var text = (parsed.title || "").replace(/\s+/g, " ").trim();
        if (!text) text = chosen.name.replace(/\.html?$/i, "");
        title.value = filled = text.slice(0, 500);
      };
      reader.readAsText(chosen.slice(0, 256 * 1024));
    });
  });

  // Large files (contract 7b): a form that says data-upload-via sends a file over
  // data-direct-max-bytes to storage first: a ticket from that address (CSRF-checked,
  // for this session's workspace), a PUT of the file to its upload_url (a presigned S3
  // URL when deployed, the local server's upload route under `make run`) with a progress
  // bar, then the form is submitted with upload_id in place of the file.
  document.querySelectorAll("form[data-upload-via]").forEach(function (form) {
    var file = form.querySelector('input[type="file"]');
    var direct = parseInt(form.dataset.directMaxBytes, 10);
    var box = form.querySelector(".upload-progress");
    if (!file || !box || !window.fetch || !window.XMLHttpRequest || !window.URLSearchParams) return;
    var bar = box.querySelector("progress"), status = box.querySelector(".upload-status");
    var problem = form.querySelector(".upload-error");
    var button = form.querySelector('button[type="submit"], button:not([type])');
    var busy = false;
    var messageOf = function (text, fallback) {
      try { return JSON.parse(text).error.message || fallback; } catch (e) { return fallback; }
    };
    var fail = function (text) {
      busy = false;
      box.hidden = true;
      problem.textContent = text;
      problem.hidden = false;
      if (button) button.disabled = false;
    };
    var put = function (ticket, chosen) {
      return new Promise(function (resolve, reject) {
        var xhr = new XMLHttpRequest();
        xhr.open("PUT", ticket.upload_url);  // no credentials: the URL is the credential
        xhr.upload.addEventListener("progress", function (event) {
          if (!event.lengthComputable) return;
          bar.max = event.total;
          bar.value = event.loaded;
          status.textContent = "Uploading " + humanSize(event.loaded) + " of " + humanSize(event.total) +
            " (" + Math.floor(100 * event.loaded / event.total) + "%)";
        });
        xhr.onload = function () {
          if (xhr.status >= 200 && xhr.status < 300) { resolve(ticket); return; }
          reject(new Error(messageOf(xhr.responseText, "The upload was refused (HTTP " + xhr.status +
            "). Try again; if it keeps failing, the link may have expired: reload the page.")));
        };
        xhr.onerror = function () { reject(new Error("The upload failed: the connection was lost. Try again.")); };
        xhr.send(chosen);
      });
    };
    form.addEventListener("submit", function (event) {
      if (busy) { event.preventDefault(); return; }
      if (!file.files || !file.files.length || file.files[0].size <= direct) return;  // the form carries it
      event.preventDefault();
      var chosen = file.files[0];
      busy = true;
      problem.hidden = true;
      if (button) button.disabled = true;
      box.hidden = false;
      bar.value = 0;
      status.textContent = "Starting the upload of " + humanSize(chosen.size) + "…";
      var body = new URLSearchParams();
      body.set("csrf_token", form.elements.csrf_token.value);
      body.set("filename", chosen.name);
      body.set("size_bytes", String(chosen.size));
      fetch(form.dataset.uploadVia, {method: "POST", body: body, credentials: "same-origin",
                                     headers: {"Accept": "application/json"}})
        .then(function (response) {
          return response.text().then(function (text) {
            if (!response.ok) throw new Error(messageOf(text, "The upload could not start (HTTP " + response.status + ")."));
            return JSON.parse(text);
          });
        })
        .then(function (ticket) { return put(ticket, chosen); })
        .then(function (ticket) {
          form.elements.upload_id.value = ticket.upload_id;
          file.disabled = true;  // not sent again: the bytes are stored
          status.textContent = "Uploaded " + humanSize(chosen.size) + ". Publishing…";
          form.submit();
        })
        .catch(function (error) { fail(error.message || String(error)); });
    });
    // Back from the publish answer (bfcache): the file can be chosen and sent again.
    window.addEventListener("pageshow", function () {
      file.disabled = false;
      busy = false;
      if (button) button.disabled = false;
    });
  });
})();
