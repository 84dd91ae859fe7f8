// The advisor's chat: one turn per message (POST chat, Server-Sent Events), the mode it answers in,
// the tools it used, the files it made (a chart shown, documents to download), and a consent question
// when it wants to change mode. The session id lives in this tab (sessionStorage) and is never shown.
"use strict";

const { t, el } = MAGI;
const $ = (id) => document.getElementById(id);
const SESSION_ITEM = "advisor.session";
const MULTIPLEX_HEADER = "serve_multiplexed_model_id";
const log = $("log");
const input = $("input");
let sessionId = sessionStorage.getItem(SESSION_ITEM) || null;
let busy = false;
let focusAfterTurn = null;  // the consent question takes the focus when the turn ends

const known = (key) => Object.prototype.hasOwnProperty.call(MAGI.catalogue().labels[MAGI.lang] || {}, key);
const modeName = (mode) => (known("advisor.mode_" + mode) ? t("advisor.mode_" + mode) : t("advisor.mode_none"));

// A safe subset of Markdown, built as DOM nodes (text is never parsed as HTML): paragraphs,
// "### " headings, "- " and "1. " lists, **bold**, and http(s) links.
function inline(parent, text) {
  const pattern = /\*\*([^*]+)\*\*|(https?:\/\/[^\s）)」]+)/g;
  let last = 0, match;
  while ((match = pattern.exec(text)) !== null) {
    if (match.index > last) parent.append(text.slice(last, match.index));
    if (match[1] !== undefined) {
      parent.append(el("strong", match[1]));
    } else {
      const a = el("a", match[2]);
      a.href = match[2]; a.target = "_blank"; a.rel = "noopener noreferrer";
      parent.append(a);
    }
    last = pattern.lastIndex;
  }
  if (last < text.length) parent.append(text.slice(last));
}

function renderMarkdown(target, text) {
  target.replaceChildren();
  target.lang = /[\u3040-\u30ff\u3400-\u9fff]/.test(text) ? "ja" : "en";  // the model's language, not the page's
  let list = null, para = null;
  for (const raw of text.split("\n")) {
    const line = raw.replace(/\s+$/, "");
    const bullet = line.match(/^\s*[-・*]\s+(.*)$/);
    const numbered = line.match(/^\s*(\d+)[.．]\s+(.*)$/);
    const heading = line.match(/^#{1,4}\s+(.*)$/);
    if (!line.trim()) { list = null; para = null; continue; }
    if (heading) {
      const h = el("h3"); inline(h, heading[1]); target.append(h);
      list = null; para = null;
    } else if (bullet || numbered) {
      const kind = bullet ? "UL" : "OL";
      if (!list || list.tagName !== kind) { list = el(kind.toLowerCase()); target.append(list); }
      const li = el("li"); inline(li, bullet ? bullet[1] : numbered[2]); list.append(li);
      para = null;
    } else {
      list = null;
      if (para) para.append(el("br"));
      else { para = el("p"); target.append(para); }
      inline(para, line);
    }
  }
}

function bubble(role, text) {
  $("welcome").hidden = true;
  const div = el("div", null, "msg " + role);
  div.append(MAGI.content("div", text || "", "body"));
  log.append(div);
  div.scrollIntoView({ block: "end" });
  return div;
}

function setMode(mode) {
  $("mode").dataset.mode = mode || "";
  $("mode").textContent = modeName(mode);
}

async function authorisedBlob(href) {
  const answer = await MAGI.call(href);
  if (!answer.ok) throw new Error(await MAGI.failure(answer));
  return URL.createObjectURL(await answer.blob());
}

function audienceBadge(file) {
  const audience = file.audience === "external" ? "external" : "internal";
  return el("span", t("advisor.audience_" + audience), "badge " + audience);
}

async function attach(div, file) {
  let box = div.querySelector(".attachments");
  if (!box) { box = el("div", null, "attachments"); div.append(box); }
  if (file.type === "graph") {
    // The chart at full size in a tab of its own (a phone can zoom it there), and as a file to keep.
    const figure = el("figure");
    const zoom = el("a", null, "zoom");
    zoom.target = "_blank"; zoom.rel = "noopener";
    zoom.setAttribute("aria-label", t("advisor.chart_open"));
    const img = el("img");
    img.alt = t("advisor.chart_alt");
    zoom.append(img);
    const caption = el("figcaption", t("advisor.chart"));
    caption.append(audienceBadge(file), download(file));
    figure.append(zoom, caption);
    box.append(figure);
    const url = await authorisedBlob(file.href);
    img.src = url; zoom.href = url;
  } else {
    const item = el("span");
    item.append(download(file), audienceBadge(file));
    box.append(item);
  }
}

// A link that saves the file under its own name (the key goes with the request, never in the URL).
function download(file) {
  const kind = known("advisor.file_" + file.type) ? t("advisor.file_" + file.type) : t("advisor.file_other");
  const a = el("a", t("advisor.download", { kind }), "download");
  a.href = file.href;
  a.addEventListener("click", async (event) => {
    event.preventDefault();
    try {
      const link = el("a");
      link.href = await authorisedBlob(file.href); link.download = file.name; link.click();
    } catch (error) {
      MAGI.showError(error);
    }
  });
  return a;
}

function consentButtons(div, event) {
  const row = el("div", null, "consent");
  const yes = el("button", t("advisor.switch_to", { mode: modeName(event.to) }));
  yes.type = "button";
  const no = el("button", t("advisor.stay"), "secondary");
  no.type = "button";
  const answer = (value) => { yes.disabled = no.disabled = true; turn({ consent: value }); };
  yes.addEventListener("click", () => answer("accept"));
  no.addEventListener("click", () => answer("refuse"));
  row.append(yes, no);
  div.append(row);
  focusAfterTurn = yes;
}

// A tool's line: its name in the page's language, and for a refusal the tool's own first sentence
// (the tools explain a refusal to the owner in Japanese; another language gets a plain line).
function toolLine(event) {
  const name = known("advisor.tool_" + event.name) ? t("advisor.tool_" + event.name) : t("advisor.tool_other");
  const summary = event.summary || "";
  const japanese = MAGI.lang === "ja" && /[\u3040-\u30ff\u4e00-\u9fff]/.test(summary);
  if (event.ok) {
    const li = el("li", "✔ " + name);
    if (japanese) li.append("：", MAGI.content("span", summary));
    return li;
  }
  const li = el("li", "✖ " + name + (MAGI.lang === "ja" ? "：" : ": "), "failed");
  if (japanese) li.append(MAGI.content("span", summary.split("。")[0] + "。"));
  else li.append(t("advisor.tool_refused"));
  return li;
}

async function handle(event, div, body, tools, state) {
  switch (event.type) {
    case "session":
      sessionId = event.sessionId;
      sessionStorage.setItem(SESSION_ITEM, sessionId);
      break;
    case "mode": setMode(event.mode); break;
    case "delta":
      state.text += event.text;
      renderMarkdown(body, state.text);
      div.scrollIntoView({ block: "end" });
      break;
    case "tool": {
      const li = toolLine(event);
      if (![...tools.children].some((other) => other.textContent === li.textContent)) tools.append(li);  // the same refusal twice
      break;
    }
    case "file": await attach(div, event.file); break;
    case "consent": renderMarkdown(body, event.text); consentButtons(div, event); break;
    case "compressed": tools.append(el("li", t("advisor.compressed", { n: event.entries }))); break;
    case "done":
      setMode(event.mode);
      if (!state.text && event.text && !div.querySelector(".consent")) renderMarkdown(body, event.text);
      div.dataset.done = "true";
      break;
    case "error": throw new Error(MAGI.streamFailure(event));
    default: break;
  }
}

const FIELDS = { message: "advisor.message", consent: "advisor.consent_field" };
const fieldName = (loc) => (FIELDS[loc[0]] ? t(FIELDS[loc[0]]) : null);

async function turn(payload) {
  if (busy) return;
  busy = true; $("send").disabled = true;
  const body = Object.assign({}, payload);
  if (sessionId) body.sessionId = sessionId;
  const div = bubble("assistant", "");
  const text = div.querySelector(".body");
  const tools = el("ul", null, "tools");
  div.append(tools);
  div.setAttribute("aria-busy", "true");
  const state = { text: "" };
  try {
    const headers = { "Accept": "text/event-stream" };
    if (sessionId) headers[MULTIPLEX_HEADER] = sessionId;  // to the replica that already hosts the session
    const answer = await MAGI.postJson("chat", body, headers);
    if (!answer.ok) throw new Error(await MAGI.failure(answer, fieldName));
    let handled = Promise.resolve();  // one event after the other (a file is fetched before the next)
    await MAGI.stream(answer, (kind, data) => { handled = handled.then(() => handle(data, div, text, tools, state)); return true; });
    await handled;
  } catch (error) {
    div.append(el("p", error.message, "error"));
  } finally {
    div.removeAttribute("aria-busy");
    busy = false; $("send").disabled = false;
    (focusAfterTurn || input).focus();
    focusAfterTurn = null;
  }
}

function newConsultation() {
  if (busy) return;
  sessionId = null;
  sessionStorage.removeItem(SESSION_ITEM);
  log.replaceChildren();
  $("welcome").hidden = false;
  setMode("");
  input.value = "";
  input.focus();
}

function submitMessage(message) {
  if (!message || busy) return;
  bubble("user", message);
  input.value = "";
  turn({ message });
}

$("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  submitMessage(input.value.trim());
});
input.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    $("composer").requestSubmit();
  }
});
for (const example of document.querySelectorAll("#examples button")) {
  example.addEventListener("click", () => submitMessage(example.textContent.trim()));
}
$("newchat").addEventListener("click", newConsultation);

const narrow = window.matchMedia("(max-width: 600px)");
const placeholder = () => { input.placeholder = t(narrow.matches ? "advisor.placeholder_short" : "advisor.placeholder"); };
narrow.addEventListener("change", placeholder);

MAGI.onKey(() => input.focus());
MAGI.start().then(() => {
  setMode("");
  placeholder();
  input.focus();
});
