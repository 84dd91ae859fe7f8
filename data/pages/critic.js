// The critic page: ideas in (JSON pasted or uploaded, or a form per idea), progress per idea from
// POST evaluate/stream, then the ranking: market and synergy stacked, spread as an error bar, and
// each idea's breakdown (reasons, capability scores, arithmetic) folded open on demand.
"use strict";

const { t, el, num } = MAGI;
const $ = (id) => document.getElementById(id);
const FIELDS = [
  ["title", "text", true], ["description", "textarea", true], ["targetCustomer", "text", false],
  ["valueProposition", "text", false], ["estimatedRevenue", "number", false], ["estimatedOperatingProfit", "number", false],
];
let formCount = 0;
let history = null;  // the 履歴 view (history.js)
const OPTIONS = { weights: "critic.market_weight", samples: "critic.samples", ideas: "critic.input_heading" };

// A refused field in the page's words: "アイデア 2・名称" for ideas.1.title (the page's own labels).
function fieldName(loc) {
  if (loc[0] === "ideas" && Number.isInteger(loc[1])) {
    const idea = t("critic.idea_n", { n: loc[1] + 1 });
    if (loc.length < 3) return idea;
    const key = "critic.field_" + loc[2];
    return idea + (MAGI.lang === "ja" ? "・" : ", ") + (Object.prototype.hasOwnProperty.call(MAGI.catalogue().labels[MAGI.lang] || {}, key) ? t(key) : t("critic.field_other"));
  }
  return OPTIONS[loc[0]] ? t(OPTIONS[loc[0]]) : null;
}
const rows = new Map();  // idea id -> its progress line

function mode() { return $("mode-form").checked ? "form" : "json"; }
function showMode() {
  $("json-input").hidden = mode() !== "json";
  $("form-input").hidden = mode() !== "form";
  if (mode() === "form" && !$("idea-forms").children.length) addIdeaForm();
}

function addIdeaForm() {
  formCount += 1;
  const box = el("fieldset");
  box.dataset.index = String(formCount);
  box.append(el("legend", t("critic.idea_n", { n: formCount })));
  for (const [name, kind, required] of FIELDS) {
    const id = `idea-${formCount}-${name}`;
    const label = el("label", t("critic.field_" + name) + (required ? " *" : ""));
    label.htmlFor = id;
    const input = el(kind === "textarea" ? "textarea" : "input");
    input.id = id; input.name = name; input.required = required;
    if (kind === "number") { input.type = "number"; input.min = "0"; input.step = "any"; }
    if (kind === "textarea") input.rows = 3;
    box.append(label, input);
  }
  $("idea-forms").append(box);
  box.querySelector("input").focus();
}

function ideasFromForms() {
  const ideas = [];
  for (const box of $("idea-forms").children) {
    const idea = { id: "idea-" + box.dataset.index };
    for (const [name, kind] of FIELDS) {
      const value = box.querySelector(`[name="${name}"]`).value.trim();
      if (!value) continue;
      idea[name] = kind === "number" ? Number(value) : value;
    }
    if (idea.title || idea.description) ideas.push(idea);
  }
  return ideas;
}

function ideasFromJson() {
  let parsed;
  try {
    parsed = JSON.parse($("ideas-json").value);
  } catch (error) {
    throw new Error(t("critic.bad_json"));  // the browser's own message is in its language, not the page's
  }
  const ideas = Array.isArray(parsed) ? parsed : parsed && parsed.ideas;
  if (!Array.isArray(ideas)) throw new Error(t("critic.no_ideas_key"));
  // an idea pasted without an id gets one from its place in the list (the service needs one per idea)
  return ideas.map((idea, i) => (idea && typeof idea === "object" && !Array.isArray(idea) && idea.id === undefined ? Object.assign({ id: "idea-" + (i + 1) }, idea) : idea));
}

function statusChip(status) { return el("span", t("critic.status_" + status), "chip s-" + status); }

function showQueued(ideas) {
  $("progress").replaceChildren();
  rows.clear();
  for (const idea of ideas) {
    const li = el("li");
    li.dataset.idea = idea.id;
    li.append(MAGI.content("span", idea.title || idea.id, "title"), statusChip("queued"));
    rows.set(idea.id, li);
    $("progress").append(li);
  }
  $("overall").replaceChildren(MAGI.bar(0));
}

function setStatus(ideaId, status) {
  const li = rows.get(ideaId);
  if (!li) return;
  li.dataset.status = status;
  li.querySelector(".chip").replaceWith(statusChip(status));
}

// The total as its two weighted parts (market's, synergy's), exactly as the breakdown computes them.
function scale(e) {
  const b = e.breakdown;
  const market = b ? b.marketPart : e.marketScore;
  const synergy = b ? b.synergyPart : e.synergyScore;
  const box = el("div", null, "scale");
  box.setAttribute("role", "img");
  box.setAttribute("aria-label", t("critic.bar_label", { market: num(market, 1), synergy: num(synergy, 1), total: num(e.totalScore, 1) }));
  const m = el("span", null, "m");
  m.style.left = "0"; m.style.width = market + "%";
  const s = el("span", null, "s");
  s.style.left = market + "%"; s.style.width = synergy + "%";
  box.append(m, s);
  const totals = (e.samples || []).map((x) => x.totalScore);
  if (totals.length > 1) {
    const low = Math.min(...totals), high = Math.max(...totals);
    const err = el("span", null, "err");
    err.style.left = low + "%"; err.style.width = Math.max(0.6, high - low) + "%";
    box.append(err);
  }
  return box;
}

// The figures of the total, each as shown (one decimal): the parts add up to the total.
function parts(e) {
  const b = e.breakdown;
  return {
    market: num(e.marketScore, 1), synergy: num(e.synergyScore, 1), total: num(e.totalScore, 1),
    wm: num(b.weights.market, 0), ws: num(b.weights.synergy, 0), mpart: num(b.marketPart, 1), spart: num(b.synergyPart, 1),
  };
}

function breakdown(e) {
  const details = el("details");
  details.append(el("summary", t("critic.breakdown")));
  if ((e.reasons || []).length) {
    details.append(el("h3", t("critic.reasons")));
    const ul = el("ul");
    for (const r of e.reasons) ul.append(MAGI.content("li", r));
    details.append(ul);
  }
  const b = e.breakdown;
  if (b) {
    details.append(el("h3", t("critic.market_parts")));
    details.append(el("div", t("critic.market_line", { size: num(b.market.size, 1), growth: num(b.market.growth, 1), profit: num(b.market.profitability, 1), score: num(b.market.score, 1) })));
    details.append(el("h3", t("critic.capabilities")));
    const table = el("table");
    const head = el("tr");
    for (const key of ["critic.col_capability", "critic.col_points", "critic.col_strong"]) head.append(el("th", t(key)));
    table.append(head);
    for (const c of b.synergy.capabilities) {
      const row = el("tr");
      row.append(MAGI.content("td", c.name), el("td", `${num(c.points, 1)} / ${num(c.cap, 0)}`), el("td", c.strong ? "◎" : "—"));
      table.append(row);
    }
    const wrap = el("div", null, "scroll");
    wrap.append(table);
    details.append(wrap);
    const sy = b.synergy;
    details.append(el("div", t("critic.quality_line", { scenario: num(sy.scenario.score, 2), verification: num(sy.verification.score, 2), quality: num(sy.quality, 2) }), "muted"));
    details.append(el("div", t("critic.synergy_line", { mapping: num(sy.mapping, 1), quality: num(sy.quality, 2), multiplier: num(sy.multiplier, 2), unclamped: num(sy.unclamped, 1), score: num(sy.score, 1) }), "muted"));
    if (sy.scenario && sy.scenario.story) {
      details.append(el("h3", t("critic.story")), MAGI.content("div", sy.scenario.story));
    }
    details.append(el("h3", t("critic.arithmetic")), el("div", t("critic.arithmetic_line", parts(e)), "muted"));
  }
  for (const w of e.warnings || []) details.append(MAGI.content("div", w, "muted"));
  return details;
}

function render(out) {
  const ranked = out.evaluations.filter((e) => e.totalScore !== null && e.totalScore !== undefined)
    .sort((a, b) => b.totalScore - a.totalScore);
  const others = out.evaluations.filter((e) => e.totalScore === null || e.totalScore === undefined);
  const box = $("ranking");
  box.replaceChildren();
  ranked.forEach((e, i) => {
    const item = el("div", null, "rank" + (out.selectedIdea && out.selectedIdea.id === e.ideaId ? " selected" : ""));
    item.dataset.idea = e.ideaId;
    const head = el("div", null, "head");
    head.append(el("span", t("critic.rank_n", { n: i + 1 })), MAGI.content("span", e.title, "title"), el("span", num(e.totalScore, 1), "total"));
    item.append(head, scale(e));
    const spread = e.spread ? t("critic.spread", { value: num(e.spread, 1) }) : "";
    item.append(el("div", t("critic.parts", parts(e)) + (spread ? " · " + spread : ""), "muted parts"));
    if (e.breakdown.market.profitRule) item.append(el("div", t("critic.profit_rule", parts(e)), "muted weights"));
    item.append(breakdown(e));
    box.append(item);
  });
  for (const e of others) {
    const item = el("div", null, "rank");
    item.dataset.idea = e.ideaId;
    const head = el("div", null, "head");
    head.append(MAGI.content("span", e.title, "title"), statusChip(e.status));
    item.append(head);
    box.append(item);
  }
  $("close").hidden = !out.tooCloseToCall;
  $("close").textContent = out.tooCloseToCall ? t("critic.too_close") : "";
  const best = ranked[0];
  // no idea selected (every total under the service's minimum): why, with the numbers that decided it
  const title = best ? MAGI.content("span", best.title) : null;
  if (out.selectedIdea && best) $("reason").replaceChildren(MAGI.tNodes("critic.selected", { title, total: num(best.totalScore, 1) }));
  else if (best) $("reason").replaceChildren(MAGI.tNodes("critic.none_selected", { title, total: num(best.totalScore, 1), minimum: num(out.minTotal, 0) }));
  else $("reason").textContent = "";
}

$("mode-json").addEventListener("change", showMode);
$("mode-form").addEventListener("change", showMode);
$("add-idea").addEventListener("click", addIdeaForm);
$("ideas-file").addEventListener("change", async () => {
  const file = $("ideas-file").files[0];
  if (file) { $("ideas-json").value = await file.text(); $("file-name").textContent = file.name; }
});

$("form").addEventListener("submit", async (event) => {
  event.preventDefault();
  $("status").classList.remove("error");
  let ideas;
  try {
    ideas = mode() === "form" ? ideasFromForms() : ideasFromJson();
    if (!ideas.length) throw new Error(t("critic.no_ideas"));
  } catch (error) {
    MAGI.showError(error);
    return;
  }
  const market = Math.max(0, Math.min(100, Number($("market-weight").value) || 0));
  const body = { ideas, weights: `${market}:${100 - market}`, samples: Number($("samples").value) || 1 };
  $("evaluate").disabled = true;
  showQueued(ideas);
  $("status").textContent = t("critic.running");
  try {
    const answer = await MAGI.postJson("evaluate/stream", body, { "Accept": "text/event-stream" });
    if (!answer.ok) throw new Error(await MAGI.failure(answer, fieldName));
    await MAGI.stream(answer, (kind, data) => {
      if (kind === "ideaJudging") setStatus(data.ideaId, "judging");
      else if (kind === "ideaJudged") {
        setStatus(data.ideaId, data.status);
        $("overall").replaceChildren(MAGI.bar(data.done / data.total));
        $("status").textContent = t("critic.done_of", { done: data.done, total: data.total });
      } else if (kind === "result") {
        render(data);
        history.refresh().catch(MAGI.showError);
        $("status").textContent = t("critic.done");
        return false;
      } else if (kind === "error") {
        throw new Error(MAGI.streamFailure(data));
      }
      return true;
    });
  } catch (error) {
    MAGI.showError(error);
    for (const [id, li] of rows) if (!li.dataset.status || li.dataset.status === "judging") setStatus(id, "stopped");
  } finally {
    $("evaluate").disabled = false;
  }
});

// A kept run in the list: the idea it selected with its total, or that none was selected.
function describeRun(item) {
  const s = item.summary || {};
  if (item.outcome !== "selected") return el("span", t("history.critic_none"), "chip");
  return el("span", t("history.critic_selected", { total: num(s.total, 1) }), "chip s-ok");
}

MAGI.start().then(() => {
  showMode();
  history = MAGI_HISTORY.mount({ box: $("history"), path: "evaluations", describe: describeRun, open: render });
  MAGI.onKey(() => history.refresh().catch(MAGI.showError));
  history.refresh().catch(MAGI.showError);
});
