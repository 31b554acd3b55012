// The upload page of listclean's bulk jobs: key, file, preview, start, progress, downloads.
// It talks to this service only (the Content-Security-Policy allows nothing else), sends the key
// only in the Authorization header, keeps it in this tab's sessionStorage, and puts what comes
// from the list on the page as text, never as HTML.
"use strict";

(() => {
  const KEY = "listclean.key";
  const POLL_MS = 1000;
  const HEAD_BYTES = 256 * 1024;  // of a text list, enough for the preview's rows
  const TEXT = /\.(csv|tsv|txt)$/i;
  const VERDICTS = [["all", "Every row"], ["valid", "Valid"], ["risky", "Risky"],
    ["invalid", "Invalid"], ["suppressed", "Held back (opted out)"]];
  const FORMATS = [["csv", "CSV"], ["xlsx", "Excel"], ["parquet", "Parquet"]];

  const $ = (key) => document.querySelector(`[data-key="${key}"]`);
  const show = (key, on) => { $(key).hidden = !on; };
  let file = null;
  let found = null;
  let job = null;
  let timer = null;
  let refresh = null;

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    Object.assign(node, props || {});
    for (const child of children) node.append(child);
    return node;
  }

  function key() { return $("key-input").value.trim(); }

  function headers() {
    if (!key()) throw new Error("Paste your API key first (step 1).");
    return { Authorization: `Bearer ${key()}` };
  }

  function fail(error) {
    const box = $("error");
    box.textContent = error.message || String(error);
    box.hidden = false;
  }

  function clearError() { $("error").hidden = true; $("error").textContent = ""; }

  async function problem(response) {
    try {
      const body = await response.json();
      return new Error(body.detail || `The service answered ${response.status}.`);
    } catch (e) {
      return new Error(`The service answered ${response.status}.`);
    }
  }

  async function api(method, path, body) {
    const response = await fetch(path, { method, body, headers: headers(), cache: "no-store" });
    if (!response.ok) throw await problem(response);
    return response.status === 204 ? null : response.json();
  }

  // --- 1. the key ---------------------------------------------------------------------------
  function keepKey() { sessionStorage.setItem(KEY, key()); }
  function forgetKey() { sessionStorage.removeItem(KEY); $("key-input").value = ""; }

  // --- 2. the file, 3. its preview ----------------------------------------------------------
  async function head(chosen) {
    if (!TEXT.test(chosen.name) || chosen.size <= HEAD_BYTES) return chosen;
    const bytes = new Uint8Array(await chosen.slice(0, HEAD_BYTES).arrayBuffer());
    const end = bytes.lastIndexOf(10);  // a whole last line
    return new File([bytes.slice(0, end > 0 ? end + 1 : bytes.length)], chosen.name);
  }

  async function choose(chosen) {
    clearError();
    file = chosen;
    found = null;
    show("preview-step", false);
    show("progress-step", false);
    show("results-step", false);
    $("file-name").textContent = `${chosen.name}: ${chosen.size.toLocaleString()} bytes`;
    try {
      const form = new FormData();
      form.append("file", await head(chosen), chosen.name);
      found = await api("POST", "/api/jobs/preview", form);
      render(found);
    } catch (error) { fail(error); }
  }

  function fact(list, term, value) {
    list.append(el("dt", { textContent: term }), el("dd", { textContent: value }));
  }

  function render(info) {
    const facts = $("found");
    facts.replaceChildren();
    fact(facts, "Kind", [info.format, info.compression, info.encoding].filter(Boolean).join(", "));
    const rows = info.rows ?? info.rows_expected;
    fact(facts, "Rows", rows === null || rows === undefined ? "counted when it runs"
      : `${rows.toLocaleString()}${info.rows === null ? " (estimated)" : ""}`);
    fact(facts, "Columns", String(info.columns.length));
    const select = $("email-column");
    select.replaceChildren(...info.columns.map((name) =>
      el("option", { value: name, textContent: name, selected: name === info.email_column })));
    $("email-why").textContent = `Found: ${info.email_column_why}.`;
    const most = info.units_at_most;
    $("units").textContent = (most === null || most === undefined
      ? "It costs one unit per distinct address it checks"
      : `It costs at most ${most.toLocaleString()} units (one per distinct address it checks)`)
      + `; you have ${info.units_left.toLocaleString()} left this month.`;
    cards(info);
    show("preview-step", true);
    $("preview-title").focus();
  }

  function cards(info) {
    const holder = $("preview");
    holder.replaceChildren();
    for (const row of info.preview) {
      const card = el("dl", {});
      card.dataset.key = "preview-row";
      info.columns.forEach((name, at) => {
        const term = el("dt", { textContent: name });
        const value = el("dd", { textContent: row[at] ?? "" });
        value.dataset.key = "preview-cell";
        value.dataset.column = name;
        if (name === info.email_column) { term.className = "email"; value.className = "email"; }
        card.append(term, value);
      });
      holder.append(card);
    }
  }

  // --- 4. start, upload, progress -----------------------------------------------------------
  function start() {
    clearError();
    if (!file) { fail(new Error("Choose a file first (step 2).")); return; }
    let auth;
    try { auth = headers(); } catch (error) { fail(error); return; }
    const form = new FormData();
    form.append("email_column", $("email-column").value);
    form.append("split", $("split").checked ? "true" : "false");
    form.append("file", file, file.name);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/api/jobs");
    xhr.setRequestHeader("Authorization", auth.Authorization);
    xhr.responseType = "json";
    xhr.upload.onprogress = (event) => {
      if (!event.lengthComputable) return;
      $("upload-bar").value = event.loaded / event.total;
      $("upload-done").textContent = `${Math.round(100 * event.loaded / event.total)}%`;
    };
    xhr.onload = () => {
      if (xhr.status !== 202) {
        fail(new Error((xhr.response && xhr.response.detail) || `The service answered ${xhr.status}.`));
        $("start").disabled = false;
        return;
      }
      $("upload-bar").value = 1;
      $("upload-done").textContent = "100%";
      job = xhr.response.id;
      poll();
    };
    xhr.onerror = () => { fail(new Error("The upload failed: the service could not be reached.")); };
    $("start").disabled = true;
    $("stages").replaceChildren();
    $("state").textContent = "Uploading…";
    $("eta").textContent = "";
    show("progress-step", true);
    $("cancel").disabled = false;
    $("progress-title").focus();
    xhr.send(form);
  }

  async function poll() {
    clearTimeout(timer);
    try {
      const status = await api("GET", `/api/jobs/${job}`);
      progress(status);
      if (status.state === "done") { await done(status); return; }
      if (status.state === "failed" || status.state === "cancelled") {
        $("start").disabled = false;
        $("cancel").disabled = true;
        if (status.error) fail(new Error(status.error.detail));
        return;
      }
    } catch (error) { fail(error); }
    timer = setTimeout(poll, POLL_MS);
  }

  const WORDS = { queued: "Waiting for its turn…", running: "Running…", done: "Done.",
    failed: "It failed.", cancelled: "Cancelled." };

  function progress(status) {
    $("state").textContent = WORDS[status.state] || status.state;
    const holder = $("stages");
    for (const stage of status.stages) {
      let row = holder.querySelector(`[data-stage="${stage.name}"]`);
      if (!row) {
        const id = `stage-${stage.name}`;
        row = el("div", { className: "stage" },
          el("label", { htmlFor: id, textContent: stage.name }),
          el("progress", { id, max: 1, value: 0 }), el("span", { className: "n" }));
        row.dataset.key = "stage";
        row.dataset.stage = stage.name;
        holder.append(row);
      }
      const share = stage.total ? Math.min(1, stage.done / stage.total) : 0;
      row.querySelector("progress").value = share;
      row.dataset.done = stage.done;
      row.dataset.total = stage.total ?? "";
      row.querySelector(".n").textContent = stage.total
        ? `${stage.done.toLocaleString()} / ${stage.total.toLocaleString()}` : stage.done.toLocaleString();
    }
    const eta = status.eta_seconds;
    $("eta").textContent = eta === null || eta === undefined ? ""
      : status.state === "done" ? "" : `About ${duration(eta)} left.`;
    $("eta").dataset.seconds = eta ?? "";
  }

  function duration(seconds) {
    if (seconds < 60) return `${Math.max(1, Math.round(seconds))} s`;
    if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
    return `${(seconds / 3600).toFixed(1)} h`;
  }

  async function cancel() {
    if (!job) return;
    try {
      await api("DELETE", `/api/jobs/${job}`);
      $("cancel").disabled = true;
      poll();
    } catch (error) { fail(error); }
  }

  // --- 5. results ---------------------------------------------------------------------------
  async function done(status) {
    $("cancel").disabled = true;
    $("start").disabled = false;
    const summary = status.summary || {};
    const verdicts = summary.verdicts || {};
    $("totals").replaceChildren(
      `${(summary.rows_in ?? 0).toLocaleString()} rows: `,
      el("span", { className: "valid", textContent: `${(verdicts.Valid ?? 0).toLocaleString()} valid` }), ", ",
      el("span", { className: "risky", textContent: `${(verdicts.Risky ?? 0).toLocaleString()} risky` }), ", ",
      el("span", { className: "invalid", textContent: `${(verdicts.Invalid ?? 0).toLocaleString()} invalid` }), ".");
    await links();
    show("results-step", true);
    $("results-title").focus();
    clearInterval(refresh);
    refresh = setInterval(() => { links().catch(fail); }, 5 * 60 * 1000);  // tokens expire
  }

  async function links() {
    const listing = await api("GET", `/api/jobs/${job}/files`);
    const list = $("downloads");
    list.replaceChildren();
    for (const [verdict, words] of VERDICTS) {
      const item = el("li", {}, el("span", { className: "what", textContent: words }));
      let any = false;
      for (const [format, label] of FORMATS) {
        const file = listing.files.find((f) => f.format === format && (f.verdict || "all") === verdict);
        if (!file) continue;
        const link = el("a", { href: file.url, textContent: label, download: file.name });
        link.dataset.key = "download";
        link.dataset.format = format;
        link.dataset.verdict = verdict;
        item.append(link);
        any = true;
      }
      if (any) list.append(item);
    }
    const rejects = listing.files.find((f) => f.format === "rejects");
    $("rejects").href = rejects.url;
    $("rejects").download = rejects.name;
    $("report").href = listing.files.find((f) => f.file === "report").url;
    $("expires").textContent = `These links work until ${new Date(listing.expires_at).toLocaleTimeString()}; the page renews them while it is open.`;
  }

  function again() {
    clearInterval(refresh);
    file = null;
    job = null;
    $("file-input").value = "";
    $("file-name").textContent = "";
    for (const step of ["preview-step", "progress-step", "results-step"]) show(step, false);
    $("file-input").focus();
  }

  // --- wiring -------------------------------------------------------------------------------
  document.addEventListener("DOMContentLoaded", () => {
    $("key-input").value = sessionStorage.getItem(KEY) || "";
    $("key-input").addEventListener("input", keepKey);
    $("key-forget").addEventListener("click", forgetKey);
    $("file-input").addEventListener("change", (event) => {
      if (event.target.files.length) choose(event.target.files[0]);
    });
    const zone = $("drop-zone");
    zone.addEventListener("dragover", (event) => { event.preventDefault(); zone.classList.add("over"); });
    zone.addEventListener("dragleave", () => zone.classList.remove("over"));
    zone.addEventListener("drop", (event) => {
      event.preventDefault();
      zone.classList.remove("over");
      if (event.dataTransfer.files.length) choose(event.dataTransfer.files[0]);
    });
    $("start").addEventListener("click", start);
    $("cancel").addEventListener("click", cancel);
    $("again").addEventListener("click", again);
  });
})();
