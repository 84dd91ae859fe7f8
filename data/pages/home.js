// The home page: the five systems, one line each, their pages and API docs, and each app's health
// (its open /healthz, so no key is needed to see whether a system is up).
"use strict";

const { t, el } = MAGI;

function join(prefix, path) {
  return (prefix.endsWith("/") ? prefix : prefix + "/") + path;
}

// Why a system is not ready, from the first unready part of its /healthz (its ``code``), with the fix
// for the operator where there is one (a command, shown as code).
const FIXES = { no_llm: "magi doctor" };
function whyNotReady(body) {
  const part = Object.values((body && body.parts) || {}).find((p) => !p.ready) || {};
  const code = part.code || "not_ready";
  const known = Object.prototype.hasOwnProperty.call(MAGI.catalogue().labels[MAGI.lang] || {}, "home.why_" + code);
  const box = el("div", t(known ? "home.why_" + code : "home.why_not_ready"), "why");
  if (FIXES[code]) {
    const fix = el("div", t("home.fix_" + code) + " ", "muted");
    fix.append(el("code", FIXES[code]));
    box.append(fix);
  }
  return box;
}

async function health(prefix, chip, links, item) {
  try {
    const answer = await fetch(join(prefix, "healthz"), { cache: "no-store" });
    const ready = answer.status === 200;
    // Every app's /healthz is open: a 404 or 401 there means no app holds the prefix (another app answered).
    const absent = answer.status === 404 || answer.status === 401;
    chip.className = "chip health " + (ready ? "h-ok" : "h-bad");
    chip.textContent = ready ? t("home.ready") : absent ? t("home.absent") : t("home.not_ready");
    if (absent) links.replaceChildren(el("span", t("home.absent_help"), "muted"));
    else if (!ready) item.append(whyNotReady(await answer.json().catch(() => ({}))));
  } catch (error) {
    chip.className = "chip health h-bad";
    chip.textContent = t("home.unreachable");
    item.append(el("div", t("error.network"), "why"));
  }
}

MAGI.start().then((catalogue) => {
  const list = document.getElementById("systems");
  for (const system of catalogue.systems) {
    const item = el("li");
    item.dataset.app = system.app;
    const page = el("a", t("home.open_page"));
    page.href = join(system.prefix, system.page);
    const docs = el("a", t("home.api_docs"));
    docs.href = join(system.prefix, "docs");
    const links = el("div", null, "links");
    links.append(page, docs);
    const chip = el("span", t("home.checking"), "chip health h-wait");
    item.append(el("div", t("system." + system.app), "name"), chip, el("div", t("system_what." + system.app), "what"), links);
    list.append(item);
    health(system.prefix, chip, links, item);
  }
});
