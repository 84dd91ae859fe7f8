// The research page: start a run, follow it (a bar per agent and stage; the raw event log folded
// away), then the answer, claims with sources, disputed figures, charts and the transparency report.
"use strict";

const { t, el, num } = MAGI;
const $ = (id) => document.getElementById(id);
const text = (tag, value, cls) => el(tag, value, cls);
const EVENTS = ["researchStarted", "iterationStarted", "agentStarted", "stageProgress", "agentCompleted",
  "scoringCompleted", "consensusSelected", "iterationCompleted", "researchCompleted", "researchFailed"];
const STAGES = ["search", "fetch", "entities", "report"];
let plannedIterations = 1;

// A source becomes a link only when it is a web address: a corpus or a page may name any URL,
// and "javascript:" or "data:" in an href would run in this page, next to the API key.
function webAddress(url) {
  try {
    const parsed = new URL(String(url), location.href);
    return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : null;
  } catch (error) {
    return null;
  }
}

// Whether a text is written in the page's language: Japanese has kana or kanji, English has neither.
function inPageLanguage(value) {
  return /[\u3040-\u30ff\u3400-\u9fff]/.test(value) === (MAGI.lang !== "en");
}

async function authorisedBlob(path) {
  const answer = await MAGI.call(path);
  if (!answer.ok) throw new Error(t("research.chart_failed", { status: answer.status }));
  return URL.createObjectURL(await answer.blob());
}

async function loadCorpora() {
  let answer;
  try {
    answer = await MAGI.call("corpora");
  } catch (error) {
    $("status").textContent = error.message;
    return;
  }
  const body = await answer.json();
  $("corpus").replaceChildren();
  for (const c of body.corpora) {
    const option = text("option", c.name);
    option.value = c.name;
    $("corpus").append(option);
  }
}

function describe(kind, data) {
  const parts = [t("research.event_" + kind)];
  if (data.iteration) parts.push(t("research.iteration_n", { n: data.iteration }));
  if (data.agentId) parts.push(t("research.agent_n", { n: data.agentId }));
  if (data.stage) parts.push(`${t("research.stage_" + data.stage)} ${data.done}/${data.total}`);
  return parts.join(" · ");
}

// One block per agent of the current iteration, with a bar per stage.
function agentBlock(agentId) {
  let block = document.querySelector(`.agent[data-agent="${agentId}"]`);
  if (block) return block;
  block = el("div", null, "agent");
  block.dataset.agent = String(agentId);
  block.append(el("div", t("research.agent_n", { n: agentId }), "name"));
  const stages = el("div", null, "stages");
  for (const stage of STAGES) {
    const cell = el("div", null, "stage");
    cell.dataset.stage = stage;
    cell.append(el("span", t("research.stage_" + stage)), MAGI.bar(0));
    stages.append(cell);
  }
  block.append(stages);
  $("agents-progress").append(block);
  return block;
}

function setStage(agentId, stage, fraction) {
  const cell = agentBlock(agentId).querySelector(`.stage[data-stage="${stage}"]`);
  if (cell) cell.querySelector(".bar > span").style.width = Math.round(Math.min(1, fraction) * 100) + "%";
}

function track(kind, data) {
  if (kind === "researchStarted") {
    plannedIterations = (data.config && (data.config.iterations || data.config.iterationCount)) || plannedIterations;
  } else if (kind === "iterationStarted") {
    $("agents-progress").replaceChildren();
    $("iteration").replaceChildren(el("div", t("research.iteration_of", { n: data.iteration, of: plannedIterations }), "muted"),
      MAGI.bar((data.iteration - 1) / Math.max(1, plannedIterations)));
  } else if (kind === "agentStarted") {
    agentBlock(data.agentId);
  } else if (kind === "stageProgress") {
    const index = STAGES.indexOf(data.stage);
    for (const earlier of STAGES.slice(0, Math.max(0, index))) setStage(data.agentId, earlier, 1);
    setStage(data.agentId, data.stage, data.total ? data.done / data.total : 1);
  } else if (kind === "agentCompleted") {
    for (const stage of STAGES) setStage(data.agentId, stage, 1);
    agentBlock(data.agentId).classList.add("finished");
  } else if (kind === "researchCompleted") {
    $("iteration").replaceChildren(el("div", t("research.all_done"), "muted"), MAGI.bar(1));
  }
}

function render(result) {
  $("answer").className = "";
  $("answer").textContent = result.executiveSummary.text;
  const claims = $("claims");
  claims.replaceChildren();
  for (const c of result.claims) {
    const row = document.createElement("tr");
    const said = text("td", c.text);
    // the subject its document gives it, when written in the page's language: a heading in another
    // language would read as one of the page's own labels (the report shows only its names then)
    if (c.context && inPageLanguage(c.context)) said.prepend(text("div", c.context, "muted"));
    row.append(said, text("td", t("research.confidence", { value: num(c.confidence, 2) })));
    const cell = document.createElement("td");
    for (const s of c.supporting) {
      const href = webAddress(s.url);
      const source = text(href ? "a" : "span", s.title || s.url);
      if (href) { source.href = href; source.rel = "noopener noreferrer"; }
      cell.append(source, document.createElement("br"));
    }
    row.append(cell);
    claims.append(row);
  }
  const disputed = $("disputed");
  disputed.replaceChildren();
  if (result.disputed.length) disputed.className = "";
  const words = new Map((result.disputeLabels || []).map((w) => [w.conflictId, w]));
  for (const d of result.disputed) {
    // a result written before disputeLabels existed: its keys, and the kind from the page labels
    const said = words.get(d.conflictId) || { label: d.subject + " / " + d.attribute, kind: t("research.dispute_" + d.type), when: d.when };
    const box = document.createElement("div");
    box.className = "sides";
    for (const side of [d.statement1, d.statement2]) {
      const one = document.createElement("div");
      one.className = "side";
      one.append(text("strong", side.value), text("div", side.text), text("div", side.source, "muted"));
      box.append(one);
    }
    const when = said.when ? t("research.dispute_when", { when: said.when }) : "";
    disputed.append(text("div", t("research.dispute_head", { label: said.label, when, type: said.kind, severity: d.severity })), box);
    if (said.reading) disputed.append(text("div", t("research.dispute_reading", { text: said.reading }), "muted"));
  }
  const charts = $("charts");
  charts.replaceChildren();
  for (const chart of result.charts || []) {
    charts.className = "";
    const img = document.createElement("img");
    img.className = "chart";
    img.alt = chart.title;
    charts.append(text("div", chart.title), img);
    authorisedBlob(`research/${result.runId}/charts/${chart.file}`)
      .then((url) => { img.src = url; })
      .catch((error) => { img.replaceWith(text("div", error.message, "muted")); });
  }
  const transparency = $("transparency");
  transparency.replaceChildren();
  transparency.className = "";
  for (const it of result.iterations) {
    transparency.append(text("h3", t("research.iteration_n", { n: it.iteration })));
    transparency.append(text("div", t("research.overlap", { value: num(it.sourceOverlap, 2) })));
    transparency.append(text("div", t("research.selection", { reason: it.selectionReason }), "muted"));
    const list = document.createElement("ul");
    for (const r of it.agentReports) {
      list.append(text("li", t("research.agent_report", { n: r.agentId, reading: t("research.reading_" + r.strategy.reading), decisions: r.decisions.join(" / ") })));
    }
    transparency.append(list);
  }
}

async function finish(runId) {
  const answer = await MAGI.call(`research/${runId}`);
  const body = await answer.json();
  $("status").textContent = body.status === "completed" ? t("research.done") : t("research.ended", { status: body.status, error: body.error || "" });
  if (body.result) render(body.result);
  $("start").disabled = false;
}

async function follow(path) {
  const answer = await MAGI.call(path, { headers: { "Accept": "text/event-stream" } });
  if (!answer.ok) throw new Error(t("research.progress_failed", { status: answer.status }));
  await MAGI.stream(answer, (kind, data) => {
    if (!EVENTS.includes(kind)) return true;
    track(kind, data);
    $("progress").append(text("li", describe(kind, data)));
    $("progress").scrollTop = $("progress").scrollHeight;
    return !(kind === "researchCompleted" || kind === "researchFailed");
  });
}

$("form").addEventListener("submit", async (event) => {
  event.preventDefault();
  $("start").disabled = true;
  $("progress").replaceChildren();
  $("agents-progress").replaceChildren();
  $("iteration").replaceChildren();
  plannedIterations = Number($("iterations").value) || 1;
  const request = {
    topic: $("topic").value, agents: Number($("agents").value),
    iterations: Number($("iterations").value), corpus: $("corpus").value,
  };
  try {
    const answer = await MAGI.postJson("research", request);
    const body = await answer.json();
    if (answer.status !== 202) { $("status").textContent = t("research.error", { error: body.error || answer.status }); $("start").disabled = false; return; }
    $("status").textContent = t("research.running");
    await follow(body.links.events.replace(/^\//, ""));
    await finish(body.runId);
  } catch (error) {
    $("status").textContent = error.message;
    $("start").disabled = false;
  }
});

MAGI.onKey(() => { $("status").textContent = t("common.idle"); loadCorpora(); });
MAGI.start().then(loadCorpora);
