// The council page: ask the three sages, watch each answer arrive (blind vote, debate rounds, final
// vote), then the decision. Reads POST ask/stream (phase / sage / decided events, then result).
"use strict";

const { t, el, num, percent } = MAGI;
const $ = (id) => document.getElementById(id);
const SAGES = ["melchior", "balthasar", "casper"];
const DECISIONS = ["APPROVE", "DENY", "CONDITIONAL", "NO_DECISION"];
const FIELDS = { prompt: "council.question", rounds: "council.rounds", threshold: "council.threshold", runs: "council.runs" };
const fieldName = (loc) => (FIELDS[loc[0]] ? t(FIELDS[loc[0]]) : null);
let lastResult = null;
let followedRun = null;  // with several runs, the panels follow the first deliberation

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

function renderDeliberation(d) {
  const verdict = headline(d);
  $("verdict").className = "v-" + verdict;
  $("verdict").textContent = t("verdict." + verdict);
  $("rationale").textContent = rationale(d);
  const majority = d.decision;
  const reasons = (d.votes || []).filter((v) => v.final).map((v) => {
    const li = el("li");
    li.append(el("strong", sageName(v.sage) + ": "), verdictChip(v.final.verdict), " ", MAGI.content("span", v.final.reason));
    return li;
  });
  $("rationale").append(list(t("council.final_reasons"), reasons));
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
  return majority;
}

function renderRuns(report) {
  const first = report.deliberations[0];
  renderDeliberation(first);
  $("verdict").className = "v-" + report.decision;
  $("verdict").textContent = t("verdict." + report.decision);
  $("rationale").prepend(el("div", t("council.runs_rationale", { runs: report.runs, agreement: percent(report.agreement), verdict: t("verdict." + report.decision) })));
  $("dist").replaceChildren();
  for (const decision of DECISIONS) {
    const count = report.distribution[decision] || 0;
    const label = el("span", t("verdict." + decision));
    const barBox = MAGI.bar(count / report.runs);
    barBox.setAttribute("role", "img");
    barBox.setAttribute("aria-label", t("verdict." + decision) + " " + count);
    $("dist").append(label, barBox, el("span", num(count)));
  }
  $("dist-note").textContent = t("council.runs_note", { agreement: percent(report.agreement), flips: percent(report.flipRate), unargued: num(report.unarguedFlips) });
  $("runs-chart").hidden = false;
}

function render(result) {
  lastResult = result;
  $("decision").hidden = false;
  if (result.deliberations) renderRuns(result); else { renderDeliberation(result); $("runs-chart").hidden = true; }
}

// The decision as Markdown in the page's language (what a person pastes into a ticket or a chat).
function markdown(result) {
  const d = result.deliberations ? result.deliberations[0] : result;
  const verdict = result.deliberations ? result.decision : headline(d);
  const lines = ["# " + t("council.md_title", { verdict: t("verdict." + verdict) }), "", "> " + (d.question || "").split("\n")[0], ""];
  if (result.deliberations) {
    lines.push("- " + t("council.runs_rationale", { runs: result.runs, agreement: percent(result.agreement), verdict: t("verdict." + result.decision) }));
    lines.push("- " + DECISIONS.map((k) => t("verdict." + k) + " " + (result.distribution[k] || 0)).join(" / "), "");
  }
  lines.push(rationale(d), "", "| " + [t("council.col_sage"), t("council.col_blind"), t("council.col_final"), t("council.col_conformity")].join(" | ") + " |", "|---|---|---|---|");
  for (const c of d.conformity || []) {
    const cell = (v) => (v ? t("verdict." + v) : "—");
    lines.push("| " + [sageName(c.sage), cell(c.blind), cell(c.final), conformityMark(c)].join(" | ") + " |");
  }
  if ((d.conditions || []).length) {
    lines.push("", "## " + t("council.conditions"), "");
    for (const c of d.conditions) lines.push("- " + c.text + "（" + c.sages.map(sageName).join("・") + "）");
  }
  if ((d.dissent || []).length) {
    lines.push("", "## " + t("council.dissent"), "");
    for (const x of d.dissent) lines.push("- " + sageName(x.sage) + ": " + t("verdict." + x.verdict) + " — " + x.reason);
  }
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

MAGI.start().then(() => { buildPanels(); $("question").focus(); });
