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
const FIELDS = { topic: "research.topic", agents: "research.agents", iterations: "research.iterations", corpus: "research.corpus" };
const fieldName = (loc) => (FIELDS[loc[0]] ? t(FIELDS[loc[0]]) : null);
const known = (key) => Object.prototype.hasOwnProperty.call(MAGI.catalogue().labels[MAGI.lang] || {}, key);

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
    if (!answer.ok) throw new Error(await MAGI.failure(answer, fieldName));
  } catch (error) {
    MAGI.showError(error);
    return;
  }
  const body = await answer.json();
  $("corpus").replaceChildren();
  for (const c of body.corpora) {
    const option = MAGI.content("option", c.name);  // a folder's name, as it is on disk
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

// A figure's name from the research vocabulary ("中小企業／全く転嫁できなかった企業の割合"), never its key.
function kindOf(d) {
  return known("research.dispute_" + d.type) ? t("research.dispute_" + d.type) : t("research.dispute_other");
}

function figureName(d) {
  const subject = known("research.subject." + d.subject) ? t("research.subject." + d.subject) : null;
  const attribute = known("research.attribute." + d.attribute) ? t("research.attribute." + d.attribute) : t("research.figure");
  return subject ? t("research.figure_of", { subject, attribute }) : attribute;
}

// One iteration of the transparency section from its numbers (which report was chosen, each agent's
// approach and scores); the service's own sentences are English and name reports by id, so they stay out.
function iterationBlock(it) {
  const block = el("div", null, "iteration");
  block.append(text("h3", t("research.iteration_n", { n: it.iteration })));
  const scoreOf = new Map((it.scores || []).map((s) => [s.reportId, s]));
  const chosen = scoreOf.get(it.selectedReportId);
  if (it.selectedAgentId) {
    block.append(text("div", t("research.chosen", {
      n: it.selectedAgentId, of: num((it.agentReports || []).length),
      consistency: chosen ? num(chosen.consistencyScore, 3) : "—", overall: chosen ? num(chosen.overallScore, 3) : "—" })));
  }
  block.append(text("div", t("research.overlap", { value: num(it.sourceOverlap, 2) }), "muted"));
  if (it.flaggedForReview) block.append(text("div", t("research.flagged"), "muted"));
  if (it.retried) block.append(text("div", t("research.retried"), "muted"));
  const list = document.createElement("ul");
  for (const r of it.agentReports || []) {
    const s = scoreOf.get(r.reportId);
    const strategy = r.strategy || {};
    const sources = (strategy.preferredSources || []).map((k) => (known("research.source." + k) ? t("research.source." + k) : t("research.source.unknown")));
    const reading = known("research.reading_" + strategy.reading) ? t("research.reading_" + strategy.reading) : "—";
    const parts = [t("research.approach", { reading, sources: sources.length ? sources.join(MAGI.lang === "ja" ? "・" : ", ") : t("research.any_source") })];
    if (s) parts.push(t("research.scores", { consistency: num(s.consistencyScore, 3), reliability: num(s.sourceReliabilityScore, 3), coverage: num(s.coverageScore, 3), overall: num(s.overallScore, 3) }));
    list.append(text("li", t("research.agent_n", { n: r.agentId }) + (MAGI.lang === "ja" ? "：" : ": ") + parts.join(MAGI.lang === "ja" ? "。" : "; ")));
  }
  for (const f of it.agentFailures || []) list.append(text("li", t("research.agent_failed", { n: f.agentId })));
  block.append(list);
  return block;
}

function render(result) {
  $("answer").className = "";
  $("answer").replaceChildren(MAGI.content("div", result.executiveSummary.text));
  const claims = $("claims");
  claims.replaceChildren();
  for (const c of result.claims) {
    const row = document.createElement("tr");
    const said = MAGI.content("td", c.text);
    // the subject its document gives it, when written in the page's language: a heading in another
    // language would read as one of the page's own labels (the report shows only its names then)
    if (c.context && inPageLanguage(c.context)) said.prepend(MAGI.content("div", c.context, "muted"));
    row.append(said, text("td", t("research.confidence", { value: num(c.confidence, 2) })));
    const cell = document.createElement("td");
    for (const s of c.supporting) {
      const href = webAddress(s.url);
      const source = MAGI.content(href ? "a" : "span", s.title || s.url);
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
    // the result's own words for the dispute, when they are in the page's language (else the page's
    // names); absent from a result written before disputeLabels existed
    const given = words.get(d.conflictId);
    const said = given && inPageLanguage(given.label) ? given : null;
    const box = document.createElement("div");
    box.className = "sides";
    for (const side of [d.statement1, d.statement2]) {
      const one = document.createElement("div");
      one.className = "side";
      one.append(MAGI.content("strong", side.value), MAGI.content("div", side.text), text("div", side.source, "muted"));
      box.append(one);
    }
    const when = given && given.when ? t("research.dispute_when", { when: given.when }) : "";
    const figure = (said ? said.label : figureName(d)) + when;
    disputed.append(text("div", t("research.dispute_head", { figure, type: said ? said.kind : kindOf(d), severity: num(d.severity) })), box);
    if (said && said.reading) disputed.append(text("div", t("research.dispute_reading", { text: said.reading }), "muted"));
  }
  const charts = $("charts");
  charts.replaceChildren();
  for (const chart of result.charts || []) {
    charts.className = "";
    const img = document.createElement("img");
    img.className = "chart";
    const title = MAGI.content("div", chart.title);
    img.alt = chart.title;
    img.lang = title.lang;  // the chart's words are the report's, in the topic's language
    charts.append(title, img);
    authorisedBlob(`research/${result.runId}/charts/${chart.file}`)
      .then((url) => { img.src = url; })
      .catch((error) => { img.replaceWith(text("div", error.message, "muted")); });
  }
  const transparency = $("transparency");
  transparency.replaceChildren();
  transparency.className = "";
  for (const it of result.iterations) transparency.append(iterationBlock(it));
}

async function finish(runId) {
  const answer = await MAGI.call(`research/${runId}`);
  if (!answer.ok) throw new Error(await MAGI.failure(answer, fieldName));
  const body = await answer.json();
  if (body.status === "completed") $("status").textContent = t("research.done");
  else MAGI.showError(new Error(known("research.ended_" + body.status) ? t("research.ended_" + body.status) : t("research.ended_failed")));
  if (body.result) render(body.result);
  $("start").disabled = false;
}

async function follow(path) {
  const answer = await MAGI.call(path, { headers: { "Accept": "text/event-stream" } });
  if (!answer.ok) throw new Error(await MAGI.failure(answer, fieldName));
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
  $("status").classList.remove("error");
  const request = {
    topic: $("topic").value, agents: Number($("agents").value),
    iterations: Number($("iterations").value), corpus: $("corpus").value,
  };
  try {
    const answer = await MAGI.postJson("research", request);
    if (answer.status !== 202) throw new Error(await MAGI.failure(answer, fieldName));
    const body = await answer.json();
    $("status").textContent = t("research.running");
    await follow(body.links.events.replace(/^\//, ""));
    await finish(body.runId);
  } catch (error) {
    MAGI.showError(error);
    $("start").disabled = false;
  }
});

MAGI.onKey(() => { $("status").textContent = t("common.idle"); loadCorpora(); });
MAGI.start().then(loadCorpora);
