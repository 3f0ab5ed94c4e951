// The runs view: the caller's runs, newest first, filtered as GET /v1/runs filters them (common.js first).
// One API request per page: the listing carries each run's question, usage and cost.

// ---- the runs ----

// The filters the view offers, by query parameter: a select of the statuses, or a text input.
const RUN_FILTERS = [
  { name: "q", label: "Search", placeholder: "words of the question or answer", id: "search-filter", type: "search" },
  { name: "status", label: "Status", id: "status-filter" },
  { name: "profile", label: "Profile", placeholder: "profile", id: "profile-filter" },
  { name: "tool", label: "Tool called", placeholder: "tool name", id: "tool-filter" },
  { name: "stop_reason", label: "Stop reason", placeholder: "final_answer", id: "stop-reason-filter" },
  { name: "metadata", label: "Metadata", placeholder: "key=value", id: "metadata-filter" },
  { name: "session_id", label: "Session", placeholder: "session id", id: "session-filter" },
];
const RUNS_PAGE_SIZE = 20;
// The columns of the runs table; the question is cut where the API cut it (200 characters).
const RUN_COLUMNS = ["Run", "Question", "Profile", "Status", "Outcome", "Iterations", "Tokens in / out", "Cost", "Age"];

function filterControl(filter, value) {
  if (filter.name === "status") {
    return el("select", { name: "status", id: filter.id },
      el("option", { value: "" }, "any"),
      STATUSES.map((each) => el("option", { value: each, selected: each === value }, each)));
  }
  return el("input", { name: filter.name, id: filter.id, value, placeholder: filter.placeholder, type: filter.type || "text" });
}

function runFilterForm(query) {
  return el(
    "form",
    { class: "filters", id: "run-filters", role: "search", onsubmit: (event) => {
      event.preventDefault();
      const form = new FormData(event.target);
      const next = new URLSearchParams();
      for (const filter of RUN_FILTERS) {
        const value = String(form.get(filter.name) || "").trim();
        if (value) next.set(filter.name, value);
      }
      window.location.hash = "#/runs" + (next.toString() ? "?" + next : "");
    } },
    RUN_FILTERS.map((filter) => el("label", {}, filter.label, filterControl(filter, query.get(filter.name) || ""))),
    el("button", { type: "submit" }, "Filter"),
  );
}

function runRow(run) {
  const question = visible(run.question || "");
  return el("tr", { "data-run-id": run.run_id },
    el("td", {}, runLink(run.run_id, { short: true })),
    el("td", { class: "question", title: question }, question || "—"),
    text("td", run.profile),
    el("td", {}, statusBadge(run.status)),
    el("td", {}, outcomeBadge(run.outcome)),
    text("td", run.iterations, "number"),
    // an open run's usage is counted when it ends (its own page sums it so far)
    text("td", run.usage ? tokens(run.usage) : "—", "number"),
    text("td", run.usage ? money(run.usage.cost_usd) : "—", "number"),
    text("td", age(run.created_at)));
}

async function showRuns(query) {
  const body = el("tbody");
  const table = el("table", { id: "runs" }, el("thead", {}, el("tr", {}, RUN_COLUMNS.map((h) => text("th", h)))), body);
  const more = el("p", { id: "runs-more" });
  const filters = runFilterForm(query);
  // its own box scrolls sideways on a narrow screen (focusable, so a keyboard scrolls it too)
  const scroller = el("div", { class: "table-scroll", role: "region", "aria-label": "Runs", tabindex: 0 }, table);
  show(text("h2", "Runs"), filters, scroller, more);
  filters.append(exportCsvButton(query));
  const params = new URLSearchParams({ limit: String(RUNS_PAGE_SIZE) });
  for (const filter of RUN_FILTERS) if (query.get(filter.name)) params.set(filter.name, query.get(filter.name));
  for (const name of ["created_after", "created_before", "cursor"]) if (query.get(name)) params.set(name, query.get(name));
  const page = await api("GET", "/v1/runs?" + params);
  for (const run of page.runs) body.append(runRow(run));
  if (page.runs.length === 0) {
    const filtered = [...params.keys()].some((name) => name !== "limit" && name !== "cursor");
    const message = page.searched_until
      ? "No run matched among the runs created since " + page.searched_until + "."
      : filtered ? "No runs match these filters." : "No runs.";
    body.append(el("tr", {}, el("td", { colspan: RUN_COLUMNS.length, class: "hint", id: "runs-empty" }, message)));
  }
  if (page.next_cursor) {
    const next = new URLSearchParams(query);
    next.set("cursor", page.next_cursor);
    more.append(el("a", { href: "#/runs?" + next, id: "next-page" }, "Older runs →"));
  } else if (page.searched_until && !(Date.parse(page.searched_until) <= Date.parse(query.get("created_after") || ""))) {
    // the search stopped at its read budget: older runs are searched by asking for them (unless it stopped at
    // the range's start, where an older search holds no moment and the API refuses it)
    const older = new URLSearchParams(query);
    older.delete("cursor");
    older.set("created_before", page.searched_until);
    more.append(el("a", { href: "#/runs?" + older, id: "search-older" }, "Search runs created before " + page.searched_until));
  }
}
