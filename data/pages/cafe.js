// The café chat: a visitor's conversation with the router (POST ask). The session id lives in this
// tab (sessionStorage), is never shown, and goes with every turn, also as Serve's multiplexing header
// so that a replica that already holds the session serves it. A staff view shows which agent and
// request type were chosen and why.
"use strict";

const { t, el, num } = MAGI;
const $ = (id) => document.getElementById(id);
const SESSION_ITEM = "cafe.session";
const STAFF_ITEM = "cafe.staff";
const TRANSCRIPT_ITEM = "cafe.transcript";  // what this tab showed, so a reload shows it again
const MULTIPLEX_HEADER = "serve_multiplexed_model_id";

function sessionId() {
  let id = sessionStorage.getItem(SESSION_ITEM);
  if (!id) {
    id = "cafe-" + crypto.randomUUID();
    sessionStorage.setItem(SESSION_ITEM, id);
  }
  return id;
}

function staffNote(route) {
  const box = el("div", null, "staff");
  const list = el("dl");
  const add = (key, value) => { list.append(el("dt", t(key)), el("dd", value)); };
  // every value by its label (the identifiers stay in the JSON), the reason in words with the words it saw
  const known = (key) => Object.prototype.hasOwnProperty.call(MAGI.catalogue().labels[MAGI.lang] || {}, key);
  const named = (key) => (known(key) ? t(key) : t("cafe.other"));
  add("cafe.agent", named("agent." + route.agent));
  add("cafe.request_type", route.requestType ? named("router.request." + route.requestType) : t("cafe.none"));
  add("cafe.category", named("router.category." + route.category));
  add("cafe.confidence", MAGI.percent(route.confidence));
  const why = route.debugInfo && route.debugInfo.classification;
  if (why) {
    const value = el("dd", named("router.why." + why.rule));
    if (why.matched && why.matched.length) {
      value.append(MAGI.lang === "ja" ? "（" : " (");
      why.matched.forEach((word, i) => { if (i) value.append(MAGI.lang === "ja" ? "、" : ", "); value.append(MAGI.content("q", word)); });
      value.append(MAGI.lang === "ja" ? "）" : ")");
    }
    if (why.fuzzy) value.append(" — " + t("cafe.fuzzy"));
    if (why.abstained) value.append(" — " + t("router.why.abstained"));
    list.append(el("dt", t("cafe.why")), value);
  }
  add("cafe.language", t("language." + route.language));
  box.append(list);
  return box;
}

function bubble(role, text, route, agent) {
  const box = el("div", null, "msg " + role);
  box.append(MAGI.content("div", text, "text"));
  if (route) box.append(staffNote(route));
  else if (agent) {
    const note = el("div", null, "staff");
    note.append(el("span", t("cafe.agent") + ": " + (Object.prototype.hasOwnProperty.call(MAGI.catalogue().labels[MAGI.lang] || {}, "agent." + agent) ? t("agent." + agent) : t("cafe.other"))));
    box.append(note);
  }
  $("log").append(box);
  box.scrollIntoView({ block: "end" });
  return box;
}

function remember(role, text, route) {
  const kept = JSON.parse(sessionStorage.getItem(TRANSCRIPT_ITEM) || "[]");
  kept.push({ role, text, route: route || null });
  sessionStorage.setItem(TRANSCRIPT_ITEM, JSON.stringify(kept));
}

// After a reload: the conversation as this tab showed it, or else the session's history on the server.
async function restore() {
  const id = sessionStorage.getItem(SESSION_ITEM);
  if (!id || $("log").children.length) return;
  const kept = JSON.parse(sessionStorage.getItem(TRANSCRIPT_ITEM) || "[]");
  if (kept.length) {
    for (const entry of kept) bubble(entry.role, entry.text, entry.route);
    $("status").textContent = t("cafe.restored");
    return;
  }
  try {
    const answer = await MAGI.call("sessions/" + encodeURIComponent(id));
    if (answer.status === 404) { sessionStorage.removeItem(SESSION_ITEM); return; }
    if (!answer.ok) return;
    const state = await answer.json();
    for (const entry of state.history || []) {
      const mine = entry.role === "user";
      bubble(mine ? "user" : "assistant", entry.text, null, mine ? null : entry.agent);
    }
    if ((state.history || []).length) $("status").textContent = t("cafe.restored");
  } catch (error) {
    $("status").textContent = error.message;
  }
}

async function send() {
  const query = $("query").value.trim();
  if (!query) return;
  $("send").disabled = true;
  $("status").classList.remove("error");
  $("status").textContent = t("cafe.thinking");
  bubble("user", query);
  remember("user", query);
  $("query").value = "";
  const id = sessionId();
  try {
    const answer = await MAGI.postJson("ask", { query, sessionId: id }, { [MULTIPLEX_HEADER]: id });
    if (!answer.ok) throw new Error(await MAGI.failure(answer, (loc) => (loc[0] === "query" ? t("cafe.message") : null)));
    const body = await answer.json();
    bubble("assistant", body.answer, body.route);
    remember("assistant", body.answer, body.route);
    $("status").textContent = "";
  } catch (error) {
    MAGI.showError(error);
  } finally {
    $("send").disabled = false;
    $("query").focus();
  }
}

$("composer").addEventListener("submit", (event) => { event.preventDefault(); send(); });
$("query").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) { event.preventDefault(); send(); }
});
$("staff").addEventListener("change", () => {
  document.body.classList.toggle("staff-on", $("staff").checked);
  sessionStorage.setItem(STAFF_ITEM, $("staff").checked ? "1" : "");
});
$("new-chat").addEventListener("click", () => {
  sessionStorage.removeItem(SESSION_ITEM);
  sessionStorage.removeItem(TRANSCRIPT_ITEM);
  $("log").replaceChildren();
  $("status").textContent = "";
  $("query").focus();
});

MAGI.onKey(restore);
MAGI.start().then(() => {
  $("staff").checked = Boolean(sessionStorage.getItem(STAFF_ITEM));
  document.body.classList.toggle("staff-on", $("staff").checked);
  $("query").focus();
  return restore();
});
