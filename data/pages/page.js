// What every page shares (home, council, critic, café, research): labels in the visitor's language,
// the API key kept in the tab, data calls that send it, event streams read with fetch, and elements
// built from text only (model output and user input are never parsed as HTML).
"use strict";

const MAGI = (() => {
  const KEY_ITEM = "magi.key";
  const LANG_ITEM = "magi.lang";
  let labels = {};
  let catalogue = { systems: [] };

  // Japanese unless the browser prefers English (or the visitor chose it with the header's button).
  function pickLanguage() {
    const chosen = localStorage.getItem(LANG_ITEM);
    if (chosen === "ja" || chosen === "en") return chosen;
    for (const tag of navigator.languages || [navigator.language || ""]) {
      const lower = String(tag).toLowerCase();
      if (lower.startsWith("ja")) return "ja";
      if (lower.startsWith("en")) return "en";
    }
    return "ja";
  }
  const lang = pickLanguage();
  const locale = lang === "ja" ? "ja-JP" : "en-US";

  function t(key, vars) {
    let said = Object.prototype.hasOwnProperty.call(labels, key) ? labels[key] : key;
    for (const [name, value] of Object.entries(vars || {})) said = said.split("{" + name + "}").join(String(value));
    return said;
  }

  // Labels go into elements that name them: data-t (text), data-t-placeholder, data-t-aria, data-t-title.
  function apply(root) {
    for (const e of root.querySelectorAll("[data-t]")) e.textContent = t(e.dataset.t);
    for (const e of root.querySelectorAll("[data-t-placeholder]")) e.placeholder = t(e.dataset.tPlaceholder);
    for (const e of root.querySelectorAll("[data-t-aria]")) e.setAttribute("aria-label", t(e.dataset.tAria));
    const title = document.querySelector("[data-t-title]");
    if (title) document.title = t(title.dataset.tTitle);
  }

  // Loaded once: the page's own start and every data call wait for it, so that a message sent before
  // the labels arrive still finds the key box (and its error) in the visitor's language.
  let starting = null;
  function start() {
    if (!starting) starting = load();
    return starting;
  }

  async function load() {
    const answer = await fetch("static/labels.json");
    catalogue = await answer.json();
    labels = catalogue.labels[lang] || catalogue.labels.ja;
    document.documentElement.lang = lang;
    apply(document);
    mountLanguageButton();
    mountKeyBox();
    document.documentElement.dataset.ready = "true";  // the page speaks its visitor's language from here on
    return catalogue;
  }

  function mountLanguageButton() {
    const nav = document.querySelector("header.top nav");
    if (!nav) return;
    const button = el("button", t("common.other_language"), "lang");
    button.type = "button";
    button.addEventListener("click", () => { localStorage.setItem(LANG_ITEM, lang === "ja" ? "en" : "ja"); location.reload(); });
    nav.append(button);
  }

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }

  function num(value, digits = 0) {
    if (value === null || value === undefined || Number.isNaN(Number(value))) return "—";
    return new Intl.NumberFormat(locale, { minimumFractionDigits: digits, maximumFractionDigits: digits }).format(value);
  }

  function percent(value) {
    return new Intl.NumberFormat(locale, { style: "percent", maximumFractionDigits: 0 }).format(value);
  }

  // The key box: shown on the first 401, the key kept in this tab only (sessionStorage).
  let keyBox = null;
  const keyListeners = [];
  function mountKeyBox() {
    const slot = document.getElementById("keybox");
    if (!slot) return;
    keyBox = slot;
    slot.classList.add("keybox");
    slot.hidden = true;
    const input = el("input");
    input.id = "apikey"; input.type = "password"; input.autocomplete = "off"; input.placeholder = t("common.key_placeholder");
    const label = el("label", t("common.key_label"));
    label.htmlFor = "apikey";
    const save = el("button", t("common.key_save"));
    save.type = "button"; save.id = "savekey";
    const row = el("div", null, "row");
    row.append(input, save);
    slot.replaceChildren(el("h2", t("common.key_title")), el("div", t("common.key_help"), "muted"), label, row);
    const store = () => {
      sessionStorage.setItem(KEY_ITEM, input.value.trim());
      input.value = "";
      slot.hidden = true;
      slot.classList.remove("shown");
      for (const listener of keyListeners) listener();
    };
    save.addEventListener("click", store);
    input.addEventListener("keydown", (event) => { if (event.key === "Enter") { event.preventDefault(); store(); } });
  }
  function onKey(listener) { keyListeners.push(listener); }

  function authHeaders() {
    const key = sessionStorage.getItem(KEY_ITEM);
    return key ? { "Authorization": "Bearer " + key } : {};
  }

  // Every data call goes through here: the page is open, the data is not. A server that cannot be
  // reached is said in the visitor's words (the browser's own "Failed to fetch" is not).
  async function call(path, options = {}) {
    await start().catch(() => null);  // a page without its labels still makes the call
    const headers = Object.assign({}, options.headers || {}, authHeaders());
    let answer;
    try {
      answer = await fetch(path, Object.assign({}, options, { headers }));
    } catch (error) {
      throw new Error(t("error.network"));
    }
    if (answer.status === 401) {
      if (keyBox) { keyBox.hidden = false; keyBox.classList.add("shown"); document.getElementById("apikey").focus(); }
      throw new Error(sessionStorage.getItem(KEY_ITEM) ? t("common.key_wrong") : t("common.key_needed"));
    }
    return answer;
  }

  // What went wrong, said for a person in the page's language. The service's own error text is English
  // for API callers and may name settings or commands: the page reads only the status, the ``code`` and,
  // for a refused field, its place (``loc``), its check (``type``) and the bound crossed (``ctx``).
  // ``fieldName(loc)`` gives the page's own label of a field (null: the page does not know it).
  async function failure(answer, fieldName) {
    let body = {};
    try { body = await answer.json(); } catch (error) { body = {}; }
    const status = answer.status;
    if (body.code === "no_llm") return t("error.no_llm");
    if (status === 422 || status === 400) {
      const problems = (body.detail || []).map((d) => fieldProblem(d, fieldName)).filter((p, i, all) => all.indexOf(p) === i);
      return [t("error.invalid"), ...problems].join(" ");
    }
    if (status === 413) return t("error.too_large");
    if (status === 429) return t("error.too_many");
    if (status === 404) return t("error.not_found");
    if (status === 503) return t("error.unavailable");
    if (status >= 500) return t("error.server", { status });
    return t("common.failed_status", { status });
  }

  const TOO_LONG = ["string_too_long", "too_long"];
  const TOO_SHORT = ["string_too_short", "too_short"];
  const NUMBER = ["int_parsing", "int_type", "float_parsing", "float_type", "int_from_float"];
  function fieldProblem(detail, fieldName) {
    const loc = (detail.loc || []).filter((p) => p !== "body" && p !== "query" && p !== "path");
    const field = (fieldName && fieldName(loc)) || t("error.field_unknown");
    const ctx = detail.ctx || {};
    const type = String(detail.type || "");
    if (type === "missing") return t("error.field_missing", { field });
    if (TOO_LONG.includes(type) && ctx.max_length !== undefined) return t("error.field_too_long", { field, limit: num(ctx.max_length) });
    if (TOO_SHORT.includes(type) && ctx.min_length !== undefined) return t("error.field_too_short", { field, limit: num(ctx.min_length) });
    if (ctx.ge !== undefined || ctx.gt !== undefined) return t("error.field_min", { field, limit: num(ctx.ge !== undefined ? ctx.ge : ctx.gt) });
    if (ctx.le !== undefined || ctx.lt !== undefined) return t("error.field_max", { field, limit: num(ctx.le !== undefined ? ctx.le : ctx.lt) });
    if (NUMBER.includes(type)) return t("error.field_number", { field });
    if (type === "literal_error" || type === "enum") return t("error.field_choice", { field });
    return t("error.field_invalid", { field });
  }

  // The ``error`` event that ended a stream, in the page's language (its ``code`` says what kind).
  function streamFailure(data) {
    const code = (data && data.code) || "failed";
    return code === "no_llm" ? t("error.no_llm") : t(Object.prototype.hasOwnProperty.call(labels, "error.stream_" + code) ? "error.stream_" + code : "error.stream_failed");
  }

  // A failure shown in the page's status line, marked as an error.
  function showError(error) {
    const status = document.getElementById("status");
    status.textContent = error.message;
    status.classList.add("error");
  }

  function postJson(path, body, headers = {}) {
    return call(path, { method: "POST", headers: Object.assign({ "Content-Type": "application/json" }, headers), body: JSON.stringify(body) });
  }

  // Server-Sent Events over fetch (EventSource can neither POST nor send the key): onEvent(kind, data).
  async function stream(answer, onEvent) {
    const reader = answer.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      let value, done;
      try {
        ({ value, done } = await reader.read());
      } catch (error) {
        throw new Error(t("error.network_lost"));  // the connection dropped mid-answer
      }
      if (done) return;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, cut).split("\n");
        buffer = buffer.slice(cut + 2);
        const kind = (frame.find((l) => l.startsWith("event:")) || "").slice(6).trim();
        const data = frame.filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n");
        if (!kind || !data) continue;
        if (onEvent(kind, JSON.parse(data)) === false) { reader.cancel(); return; }
      }
    }
  }

  // The copy, then "copied" in the status element ``note`` for a moment (the buttons keep their names).
  async function copyText(text, note) {
    try {
      await navigator.clipboard.writeText(text);
    } catch (error) {
      const area = el("textarea");
      area.value = text;
      document.body.append(area);
      area.select();
      document.execCommand("copy");
      area.remove();
    }
    note.textContent = t("common.copied");
    setTimeout(() => { note.textContent = ""; }, 2000);
  }

  function bar(fraction, cls) {
    const outer = el("div", null, "bar" + (cls ? " " + cls : ""));
    const inner = el("span");
    inner.style.width = Math.max(0, Math.min(100, fraction * 100)) + "%";
    outer.append(inner);
    return outer;
  }

  // Text from a person or a model, marked with its own language (kana or kanji: Japanese), so that a
  // screen reader reads it right and a page in the other language can tell it from its own labels.
  function content(tag, text, cls) {
    const e = el(tag, text, cls);
    e.lang = /[\u3040-\u30ff\u3400-\u9fff]/.test(String(text || "")) ? "ja" : "en";
    return e;
  }

  // A label with some of its fields as nodes (a title a person wrote, marked with its own language):
  // tNodes("critic.selected", { title: content("span", title), total: "12" }).
  function tNodes(key, vars) {
    const out = document.createDocumentFragment();
    const nodes = Object.entries(vars || {}).filter(([, v]) => v instanceof Node);
    const plain = Object.fromEntries(Object.entries(vars || {}).filter(([, v]) => !(v instanceof Node)));
    let pieces = [t(key, plain)];
    for (const [name, node] of nodes) {
      pieces = pieces.flatMap((p) => (typeof p === "string" ? p.split("{" + name + "}").flatMap((s, i) => (i ? [node.cloneNode(true), s] : [s])) : [p]));
    }
    for (const p of pieces) if (p !== "") out.append(p);
    return out;
  }

  return { lang, locale, t, tNodes, start, el, content, num, percent, call, postJson, failure, streamFailure, showError, stream, copyText, bar, onKey, catalogue: () => catalogue };
})();
