// The 履歴 (history) view of the council and critic pages: the visitor's own past results, newest first
// (GET <path>?limit=&cursor=, keyed like every data call: one key never sees another's), "more" for the
// next page, and a button that reopens one (GET <path>/<id>) in the page as it was answered.
"use strict";

const MAGI_HISTORY = (() => {
  const { t, el } = MAGI;
  const PAGE = 10;

  function when(iso) {
    return new Intl.DateTimeFormat(MAGI.locale, { dateStyle: "medium", timeStyle: "short" }).format(new Date(iso));
  }

  // box: the section to fill; path: the list route; describe(item) -> element naming the outcome;
  // open(result, record): show a reopened result.
  function mount({ box, path, describe, open }) {
    const list = el("ol", null, "plain history");
    const empty = el("p", t("history.empty"), "muted");
    const more = el("button", t("history.more"), "secondary");
    more.type = "button";
    more.hidden = true;
    let next = null;
    box.replaceChildren(el("h2", t("history.title")), empty, list, more);

    async function reopen(item) {
      const answer = await MAGI.call(path + "/" + encodeURIComponent(item.id));
      if (!answer.ok) throw new Error(await MAGI.failure(answer));
      const kept = await answer.json();
      open(kept.result, kept.record);
      const status = document.getElementById("status");
      status.classList.remove("error");
      status.textContent = t("history.opened", { when: when(kept.record.createdAt) });
    }

    function entry(item) {
      const li = el("li");
      li.dataset.id = item.id;
      const head = el("div", null, "when");
      head.append(el("span", when(item.createdAt), "muted"), describe(item));
      const title = MAGI.content("div", item.title, "title");  // what the visitor asked, in their words
      title.id = "history-" + item.id;
      const button = el("button", t("history.open"), "secondary");
      button.type = "button";
      button.setAttribute("aria-describedby", title.id);
      button.addEventListener("click", () => reopen(item).catch(MAGI.showError));
      li.append(head, title, button);
      return li;
    }

    async function load(cursor) {
      const query = "?limit=" + PAGE + (cursor ? "&cursor=" + encodeURIComponent(cursor) : "");
      const answer = await MAGI.call(path + query);
      if (!answer.ok) throw new Error(await MAGI.failure(answer));
      const page = await answer.json();
      for (const item of page.items) list.append(entry(item));
      next = page.nextCursor;
      more.hidden = !next;
      empty.hidden = list.children.length > 0;
    }

    more.addEventListener("click", () => load(next).catch(MAGI.showError));

    // Called at start, when a key is entered and after each new result.
    async function refresh() {
      list.replaceChildren();
      await load(null);
    }
    return { refresh };
  }

  return { mount, when };
})();
