// The home page: the five systems, one line each, their pages and API docs, and each app's health
// (its open /healthz, so no key is needed to see whether a system is up).
"use strict";

const { t, el } = MAGI;

function join(prefix, path) {
  return (prefix.endsWith("/") ? prefix : prefix + "/") + path;
}

async function health(prefix, chip, links) {
  try {
    const answer = await fetch(join(prefix, "healthz"), { cache: "no-store" });
    const ready = answer.status === 200;
    // Every app's /healthz is open: a 404 or 401 there means no app holds the prefix (another app answered).
    const absent = answer.status === 404 || answer.status === 401;
    chip.className = "chip health " + (ready ? "h-ok" : "h-bad");
    chip.textContent = ready ? t("home.ready") : absent ? t("home.absent") : t("home.not_ready");
    if (absent) links.replaceChildren(el("span", t("home.absent_help"), "muted"));
  } catch (error) {
    chip.className = "chip health h-bad";
    chip.textContent = t("home.unreachable");
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
    health(system.prefix, chip, links);
  }
});
