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
})();
