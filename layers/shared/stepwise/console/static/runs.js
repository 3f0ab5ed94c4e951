// The runs view: the caller's runs, newest first, filtered by status or session (common.js first).

// ---- the runs ----

async function showRuns(query) {
  const status = query.get("status") || "";
  const session = query.get("session_id") || "";
  const cursor = query.get("cursor") || "";
  const filters = el(
    "form",
    { class: "filters", id: "run-filters", onsubmit: (event) => {
      event.preventDefault();
      const form = new FormData(event.target);
      const next = new URLSearchParams();
      for (const name of ["status", "session_id"]) if (form.get(name)) next.set(name, form.get(name));
      window.location.hash = "#/runs" + (next.toString() ? "?" + next : "");
    } },
    el("label", {}, "Status", el("select", { name: "status", id: "status-filter" },
      el("option", { value: "" }, "any"),
      STATUSES.map((each) => el("option", { value: each, selected: each === status }, each)))),
    el("label", {}, "Session", el("input", { name: "session_id", value: session, placeholder: "session id" })),
    el("button", { type: "submit" }, "Filter"),
  );
  const body = el("tbody");
  const table = el("table", { id: "runs" },
    el("thead", {}, el("tr", {}, ["Run", "Status", "Outcome", "Profile", "Iterations", "Tokens in / out", "Cost", "Age"].map((h) => text("th", h)))),
    body);
  const more = el("p");
  // its own box scrolls sideways on a narrow screen (focusable, so a keyboard scrolls it too)
  const scroller = el("div", { class: "table-scroll", role: "region", "aria-label": "Runs", tabindex: 0 }, table);
  show(text("h2", "Runs"), filters, scroller, more);
  filters.append(exportCsvButton(query));
  const params = new URLSearchParams({ limit: "20" });
  if (status) params.set("status", status);
  if (session) params.set("session_id", session);
  if (cursor) params.set("cursor", cursor);
  const page = await api("GET", "/v1/runs?" + params);
  if (page.runs.length === 0) body.append(el("tr", {}, el("td", { colspan: 8, class: "hint" }, "No runs.")));
  for (const run of page.runs) {
    const tokenCell = text("td", "…", "number");
    const costCell = text("td", "…", "number");
    body.append(el("tr", { "data-run-id": run.run_id },
      el("td", {}, runLink(run.run_id)), el("td", {}, statusBadge(run.status)), el("td", {}, outcomeBadge(run.outcome)),
      text("td", run.profile),
      text("td", run.iterations, "number"), tokenCell, costCell, text("td", age(run.created_at))));
    // the listing has no usage: each run's own read gives its tokens and cost (an open run's, so far,
    // are summed from its trace)
    api("GET", runPath(run.run_id, OPEN_STATUSES.has(run.status))).then((full) => {
      tokenCell.textContent = tokens(full.usage);
      costCell.textContent = money(full.usage.cost_usd);
    }, () => { tokenCell.textContent = "—"; costCell.textContent = "—"; });
  }
  if (page.next_cursor) {
    const next = new URLSearchParams(query);
    next.set("cursor", page.next_cursor);
    more.append(el("a", { href: "#/runs?" + next, id: "next-page" }, "Older runs →"));
  }
}
