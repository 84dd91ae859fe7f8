// The council page: ask the three sages, watch each answer arrive (blind vote, debate rounds, final
// vote), then the decision. Reads POST ask/stream (phase / sage / decided events, then result).
"use strict";

const { t, el, num, percent } = MAGI;
const $ = (id) => document.getElementById(id);
const SAGES = ["melchior", "balthasar", "casper"];
const OUTCOMES = ["APPROVE", "DENY", "CONDITIONAL", "SPLIT", "NO_DECISION"];
const FIELDS = { prompt: "council.question", rounds: "council.rounds", threshold: "council.threshold", runs: "council.runs" };
const fieldName = (loc) => (FIELDS[loc[0]] ? t(FIELDS[loc[0]]) : null);
let lastResult = null;
let followedRun = null;  // with several runs, the panels follow the first deliberation
let history = null;  // the 履歴 view (history.js)

function sageName(sage) { return t("sage." + sage); }
function verdictChip(verdict) { return el("span", t("verdict." + verdict), "chip v-" + verdict); }

function buildPanels() {
  $("sages").replaceChildren();
  for (const sage of SAGES) {
    const panel = el("section", null, "sage");
    panel.id = "sage-" + sage;
    panel.dataset.sage = sage;
    const heading = el("h2");
    heading.append(el("span", sageName(sage)), el("span", t("sage_role." + sage), "role"));
    const list = el("ol");
    list.setAttribute("aria-live", "polite");
    panel.append(heading, el("div", t("council.waiting"), "waiting"), list);
    $("sages").append(panel);
  }
}

function stepName(phase, round) {
  if (phase === "thinking") return t("council.step_blind");
  if (phase === "debate") return t("council.step_round", { n: round });
  if (phase === "voting") return t("council.step_final");
  return t("council.step_" + phase);
}

function showAnswer(data) {
  const panel = $("sage-" + data.sage);
  if (!panel || !["thinking", "debate", "voting"].includes(data.phase)) return;
  panel.querySelector(".waiting")?.remove();
  const item = el("li");
  item.dataset.phase = data.phase;
  const head = el("div");
  head.append(el("span", stepName(data.phase, data.round) + " ", "when"));
  if (data.ok && data.stance) {
    head.append(verdictChip(data.stance.verdict), el("span", " " + t("council.confidence", { value: num(data.stance.confidence, 2) }), "when"));
    item.append(head, MAGI.content("div", data.stance.reason, "reason"));
    for (const condition of data.stance.conditions || []) {
      const line = el("div", t("council.condition_prefix"), "reason muted");
      line.append(MAGI.content("span", condition));
      item.append(line);
    }
  } else {
    head.append(el("span", t("council.no_answer"), "chip v-NO_DECISION"));
    item.append(head);
  }
  panel.querySelector("ol").append(item);
}

function setBusy(busy) {
  for (const panel of document.querySelectorAll(".sage")) panel.classList.toggle("busy", busy);
}

// A deliberation that ended on an error: no panel keeps saying it waits for an answer.
function stopWaiting() {
  for (const waiting of document.querySelectorAll(".sage .waiting")) waiting.textContent = t("error.stopped");
}

function finals(d) {
  return (d.votes || []).map((v) => v.final).filter((v) => v);
}

// A split: three valid final votes, all different (or the service says so).
function isSplit(d) {
  if (d.split === true) return true;
  const verdicts = finals(d).map((v) => v.verdict);
  return verdicts.length === 3 && new Set(verdicts).size === 3;
}

function headline(d) {
  return isSplit(d) ? "SPLIT" : d.decision;
}

function counts(d) {
  const found = { APPROVE: 0, DENY: 0, CONDITIONAL: 0 };
  for (const v of finals(d)) found[v.verdict] += 1;
  return found;
}

function rationale(d) {
  const c = counts(d);
  const tally = t("council.tally", { approve: c.APPROVE, deny: c.DENY, conditional: c.CONDITIONAL });
  if (d.rationale) return d.rationale;  // the service's own rationale, when it gives one
  const valid = finals(d).length;
  if (d.decision === "NO_DECISION") return t("council.why_no_decision", { valid }) + " " + tally;
  if (isSplit(d)) return t("council.why_split") + " " + tally;
  const rule = d.threshold === "unanimous" ? t("council.unanimous") : t("council.majority");
  return t("council.why_decision", { rule, verdict: t("verdict." + d.decision) }) + " " + tally;
}

function list(title, items) {
  const box = el("div");
  if (!items.length) return box;
  box.append(el("h3", title));
  const ul = el("ul");
  for (const item of items) ul.append(item);
  box.append(ul);
  return box;
}

function conformityMark(c) {
  if (c.flagged) return "⚠ " + t("council.conformity_flagged");
  if (c.changed) return "↻ " + t("council.conformity_argued");
  return "＝ " + t("council.conformity_kept");
}

// One deliberation's reasons, conditions, dissent and conformity; its rationale goes to ``why``.
function renderDetails(d, why) {
  why.textContent = rationale(d);
  const reasons = (d.votes || []).filter((v) => v.final).map((v) => {
    const li = el("li");
    li.append(el("strong", sageName(v.sage) + ": "), verdictChip(v.final.verdict), " ", MAGI.content("span", v.final.reason));
    return li;
  });
  why.append(list(t("council.final_reasons"), reasons));
  $("conditions").replaceChildren(list(t("council.conditions"), (d.conditions || []).map((c) =>
    MAGI.content("li", c.text + "（" + c.sages.map(sageName).join("・") + "）"))));
  const dissent = isSplit(d) ? [] : d.dissent || [];  // in a split there is no majority to dissent from
  $("dissent").replaceChildren(list(t("council.dissent"), dissent.map((x) => {
    const li = el("li");
    li.append(el("strong", sageName(x.sage) + ": "), verdictChip(x.verdict), " ", MAGI.content("span", x.reason));
    return li;
  })));
  const table = el("table");
  const head = el("tr");
  for (const key of ["council.col_sage", "council.col_blind", "council.col_final", "council.col_conformity"]) head.append(el("th", t(key)));
  table.append(head);
  for (const c of d.conformity || []) {
    const row = el("tr");
    row.append(el("td", sageName(c.sage)));
    const blind = el("td"); if (c.blind) blind.append(verdictChip(c.blind)); else blind.textContent = "—";
    const final = el("td"); if (c.final) final.append(verdictChip(c.final)); else final.textContent = "—";
    row.append(blind, final, el("td", conformityMark(c), "mark"));
    table.append(row);
  }
  const wrap = el("div", null, "scroll");
  wrap.append(table);
  $("conformity").replaceChildren(el("h3", t("council.conformity")), wrap);
  if (d.failures && d.failures.length) {
    $("conformity").append(list(t("council.failures"), d.failures.map((f) => el("li", sageName(f.sage) + ": " + stepName(f.phase, f.round) + " — " + t("council.no_answer")))));
  }
}

function renderDeliberation(d) {
  const verdict = headline(d);
  $("verdict").className = "v-" + verdict;
  $("verdict").textContent = t("verdict." + verdict);
  $("run-heading").hidden = true;
  $("run-rationale").replaceChildren();
  renderDetails(d, $("rationale"));
}

// Several runs: what a majority of them decided (or that none did), the distribution with splits
// counted as splits, every run listed with its number and seed, and one run's details under its label.
function runsRationale(report) {
  if (report.decision === "NO_MAJORITY") return t("council.runs_no_majority", { runs: report.runs, needed: report.majorityNeeded });
  return t("council.runs_majority", { runs: report.runs, count: report.majorityCount, verdict: t("verdict." + report.decision) });
}

function runLabel(report, i) {
  const o = report.outcomes[i];
  return t("council.run_heading", { n: o.run, runs: report.runs, seed: o.seed, verdict: t("verdict." + o.outcome) });
}

function showRun(report, i) {
  $("run-heading").hidden = false;
  $("run-heading").textContent = runLabel(report, i);
  renderDetails(report.deliberations[i], $("run-rationale"));
  for (const button of $("run-list").querySelectorAll("button")) button.setAttribute("aria-pressed", String(Number(button.dataset.run) === i));
}

function renderRuns(report) {
  $("verdict").className = "v-" + report.decision;
  $("verdict").textContent = t("verdict." + report.decision);
  $("rationale").textContent = runsRationale(report);
  $("dist").replaceChildren();
  for (const outcome of OUTCOMES) {
    const count = report.distribution[outcome] || 0;
    const barBox = MAGI.bar(count / report.runs);
    barBox.setAttribute("role", "img");
    barBox.setAttribute("aria-label", t("verdict." + outcome) + " " + count);
    $("dist").append(el("span", t("verdict." + outcome)), barBox, el("span", num(count)));
  }
  $("dist-note").textContent = t("council.runs_note", { flips: percent(report.flipRate), unargued: num(report.unarguedFlips) });
  const table = el("table");
  const head = el("tr");
  for (const key of ["council.col_run", "council.col_seed", "council.col_outcome", "council.col_details"]) head.append(el("th", t(key)));
  table.append(head);
  report.outcomes.forEach((o, i) => {
    const row = el("tr");
    const show = el("button", t("council.run_show"), "secondary small");
    show.type = "button";
    show.dataset.run = String(i);
    show.setAttribute("aria-label", t("council.run_show_n", { n: o.run }));
    show.addEventListener("click", () => showRun(report, i));
    const cell = el("td");
    cell.append(show);
    const outcome = el("td");
    outcome.append(verdictChip(o.outcome));
    row.append(el("td", t("council.run_label", { n: o.run })), el("td", String(o.seed)), outcome, cell);
    table.append(row);
  });
  const wrap = el("div", null, "scroll");
  wrap.append(table);
  $("run-list").replaceChildren(el("h3", t("council.run_list")), wrap);
  $("runs-chart").hidden = false;
  showRun(report, 0);
}

function render(result) {
  lastResult = result;
  $("decision").hidden = false;
  if (result.deliberations) renderRuns(result); else { renderDeliberation(result); $("runs-chart").hidden = true; }
}

// The decision as Markdown in the page's language (what a person pastes into a ticket or a chat).
function deliberationMarkdown(d) {
  const lines = [rationale(d), "", "| " + [t("council.col_sage"), t("council.col_blind"), t("council.col_final"), t("council.col_conformity")].join(" | ") + " |", "|---|---|---|---|"];
  for (const c of d.conformity || []) {
    const cell = (v) => (v ? t("verdict." + v) : "—");
    lines.push("| " + [sageName(c.sage), cell(c.blind), cell(c.final), conformityMark(c)].join(" | ") + " |");
  }
  if ((d.conditions || []).length) {
    lines.push("", "## " + t("council.conditions"), "");
    for (const c of d.conditions) lines.push("- " + c.text + "（" + c.sages.map(sageName).join("・") + "）");
  }
  if (!isSplit(d) && (d.dissent || []).length) {
    lines.push("", "## " + t("council.dissent"), "");
    for (const x of d.dissent) lines.push("- " + sageName(x.sage) + ": " + t("verdict." + x.verdict) + " — " + x.reason);
  }
  return lines;
}

function markdown(result) {
  const runs = Boolean(result.deliberations);
  const first = runs ? result.deliberations[0] : result;
  const verdict = runs ? result.decision : headline(result);
  const lines = ["# " + t("council.md_title", { verdict: t("verdict." + verdict) }), "", "> " + (first.question || "").split("\n")[0], ""];
  if (!runs) return lines.concat(deliberationMarkdown(result)).join("\n") + "\n";
  lines.push(runsRationale(result), "", "| " + [t("council.col_run"), t("council.col_seed"), t("council.col_outcome")].join(" | ") + " |", "|---|---|---|");
  for (const o of result.outcomes) lines.push("| " + [t("council.run_label", { n: o.run }), o.seed, t("verdict." + o.outcome)].join(" | ") + " |");
  result.deliberations.forEach((d, i) => lines.push("", "## " + runLabel(result, i), "", ...deliberationMarkdown(d)));
  return lines.join("\n") + "\n";
}

$("copy-md").addEventListener("click", () => { if (lastResult) MAGI.copyText(markdown(lastResult), $("copied")); });
$("copy-json").addEventListener("click", () => { if (lastResult) MAGI.copyText(JSON.stringify(lastResult, null, 2), $("copied")); });

$("form").addEventListener("submit", async (event) => {
  event.preventDefault();
  $("ask").disabled = true;
  $("decision").hidden = true;
  $("runs-chart").hidden = true;
  buildPanels();
  setBusy(true);
  followedRun = null;
  const runs = Number($("runs").value) || 1;
  $("panels-note").hidden = runs < 2;
  let decided = 0;
  const progress = $("phasebar");
  progress.replaceChildren(MAGI.bar(0));
  const body = { prompt: $("question").value, rounds: Number($("rounds").value), threshold: $("threshold").value };
  if (runs > 1) body.runs = runs;
  $("status").textContent = t("council.started");
  $("status").classList.remove("error");
  try {
    const answer = await MAGI.postJson("ask/stream", body, { "Accept": "text/event-stream" });
    if (!answer.ok) throw new Error(await MAGI.failure(answer, fieldName));
    await MAGI.stream(answer, (kind, data) => {
      if (data.runId && followedRun === null && kind !== "result") followedRun = data.runId;
      const followed = !data.runId || data.runId === followedRun;
      if (kind === "phase" && followed) {
        $("status").textContent = t("council.phase_now", { step: stepName(data.phase, data.round) });
        progress.replaceChildren(MAGI.bar((data.progress || 0) / 100));
      } else if (kind === "sage" && followed) {
        showAnswer(data);
      } else if (kind === "decided") {
        decided += 1;
        if (runs > 1) $("status").textContent = t("council.runs_done", { done: decided, runs });
      } else if (kind === "result") {
        render(data);
        history.refresh().catch(MAGI.showError);
        progress.replaceChildren(MAGI.bar(1));
        $("status").textContent = t("council.done");
        return false;
      } else if (kind === "error") {
        throw new Error(MAGI.streamFailure(data));
      }
      return true;
    });
  } catch (error) {
    MAGI.showError(error);
    stopWaiting();
  } finally {
    setBusy(false);
    $("ask").disabled = false;
  }
});

// A kept decision in the list: when, its question, and what came of it.
function describeDecision(item) {
  return verdictChip(item.outcome);
}

// The sage panels of a finished deliberation, step by step as they were shown live.
function fillPanels(d) {
  buildPanels();
  for (const entry of d.thinking || []) showAnswer({ sage: entry.sage, phase: "thinking", ok: true, stance: entry.output.vote });
  for (const round of d.debate || []) {
    for (const e of round.entries) showAnswer({ sage: e.sage, phase: "debate", round: round.round, ok: true, stance: e.turn.stance });
  }
  for (const v of d.votes || []) showAnswer({ sage: v.sage, phase: "voting", ok: Boolean(v.final), stance: v.final });
}

// A reopened decision fills the page as it was answered: the decision, and the panels of its (first) run.
function reopen(result) {
  render(result);
  fillPanels(result.deliberations ? result.deliberations[0] : result);
  $("panels-note").hidden = !result.deliberations;
  $("decision").scrollIntoView({ block: "start" });
}

MAGI.start().then(() => {
  buildPanels();
  history = MAGI_HISTORY.mount({ box: $("history"), path: "decisions", describe: describeDecision, open: reopen });
  MAGI.onKey(() => history.refresh().catch(MAGI.showError));
  history.refresh().catch(MAGI.showError);
  $("question").focus();
});
