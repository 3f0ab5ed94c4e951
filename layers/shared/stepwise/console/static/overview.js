// The overview: the caller's runs of the last days counted in all and by profile, model and day, as
// GET /v1/overview answers (common.js first).

const OVERVIEW_DAYS = [1, 7, 14, 31];

function duration(ms) {
  return ms === undefined || ms === null ? "—" : Math.round(ms) + " ms";
}

// one table of groups (profiles, models or days), each a row: runs, how they ended, tokens, cost, latency
function overviewTable(id, caption, firstHeader, groups) {
  const headers = [firstHeader, "Runs", "Succeeded", "Failed", "Cancelled", "Open", "Tokens in / out", "Cost", "p50", "p95"];
  return el("table", { id, class: "overview" },
    text("caption", caption),
    el("thead", {}, el("tr", {}, headers.map((header) => el("th", { scope: "col" }, header)))),
    el("tbody", {}, groups.map((group) => el("tr", { "data-key": group.key },
      el("th", { scope: "row" }, visible(group.key)),
      text("td", group.runs, "number"), text("td", group.succeeded, "number"),
      text("td", group.failed, "number failed"), text("td", group.cancelled, "number"),
      text("td", group.open, "number"), text("td", group.input_tokens + " / " + group.output_tokens, "number"),
      text("td", money(group.cost_usd), "number"), text("td", duration(group.latency_p50_ms), "number p50"),
      text("td", duration(group.latency_p95_ms), "number p95")))));
}

async function showOverview(query) {
  const asked = Number.parseInt(query.get("days") || "7", 10);
  const days = OVERVIEW_DAYS.includes(asked) ? asked : 7;
  const choice = el(
    "form",
    { class: "filters", id: "overview-filters", onsubmit: (event) => {
      event.preventDefault();
      window.location.hash = "#/overview?days=" + new FormData(event.target).get("days");
    } },
    el("label", { for: "overview-days" }, "Window",
      el("select", { name: "days", id: "overview-days" },
        OVERVIEW_DAYS.map((each) => el("option", { value: each, selected: each === days }, each === 1 ? "today" : "last " + each + " days")))),
    el("button", { type: "submit" }, "Show"),
  );
  const body = el("div", { id: "overview" }, text("p", "Counting…", "hint"));
  show(el("h2", { tabindex: "-1" }, "Overview"), choice, body);
  const counts = await api("GET", "/v1/overview?days=" + days);
  const note = "Runs created since " + counts.since + " (UTC): " + counts.runs_read + " counted" +
    (counts.truncated ? ", the newest only: more were created in the window" : "") +
    ". Latency is the time from a run's creation to its end.";
  body.replaceChildren(
    text("p", note, "hint"),
    overviewTable("overview-totals", "All runs", "Scope", [counts.totals]),
    overviewTable("overview-by-profile", "By profile", "Profile", counts.by_profile),
    overviewTable("overview-by-model", "By model", "Model", counts.by_model),
    overviewTable("overview-by-day", "By day (UTC)", "Day", counts.by_day),
  );
}
