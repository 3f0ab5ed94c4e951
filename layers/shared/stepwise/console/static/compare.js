// Two runs side by side (#/compare?a=<id>&b=<id>): their facts, answers and steps; read again every few
// seconds while either is still going, as a replay just started is (common.js and run.js first).

const RUN_ID = /^[A-Za-z0-9_-]{1,80}$/;
const COMPARE_REFRESH_MS = 1000;

function elapsed(run) {
  const ms = Date.parse(run.updated_at) - Date.parse(run.created_at);
  return OPEN_STATUSES.has(run.status) || !Number.isFinite(ms) ? "—" : Math.max(0, Math.round(ms)) + " ms";
}

// the rows of the comparison: a name, then what each run shows for it
const COMPARED = [
  ["Run", (run) => runLink(run.run_id)],
  ["Status", (run) => statusBadge(run.status)],
  ["Outcome", (run) => outcomeBadge(run.outcome)],
  ["Profile", (run) => run.profile],
  ["Replay of", (run) => (run.replay ? runLink(run.replay.original_run_id) : "—")],
  ["Iterations", (run) => run.iterations],
  ["Stop reason", (run) => run.stop_reason || "—"],
  ["Steps", (run) => (run.trace || []).length],
  ["Tokens in / out", (run) => tokens(run.usage)],
  ["Cost", (run) => money(run.usage.cost_usd)],
  ["Time", elapsed],
  ["Answer", (run) => text("span", visible(run.answer || (OPEN_STATUSES.has(run.status) ? "(not yet)" : "(none)")), "answer")],
];

function compareStep(step) {
  const measure = [];
  if (step.latency_ms !== null && step.latency_ms !== undefined) measure.push(Math.round(step.latency_ms) + " ms");
  if (step.input_tokens || step.output_tokens) measure.push(step.input_tokens + " in / " + step.output_tokens + " out");
  return el("li", { class: "step step-" + step.kind, "data-kind": step.kind },
    text("span", "#" + step.iteration, "step-iteration"),
    text("span", KIND_NAMES[step.kind] || step.kind, "step-kind"),
    el("div", {}, text("strong", visible(stepTitle(step)), "step-title"), " ", text("span", measure.join(" · "), "measure"),
      step.kind === "tool" && step.observation ? text("p", visible(step.observation), "text observation") : ""));
}

async function showCompare(query) {
  const a = query.get("a") || "";
  const b = query.get("b") || "";
  const heading = el("h2", { tabindex: "-1" }, "Compare runs");
  if (!RUN_ID.test(a) || !RUN_ID.test(b)) {
    show(heading, text("p", "Name two runs: #/compare?a=<run id>&b=<run id>.", "hint"));
    return;
  }
  const table = el("table", { id: "compare" });
  const steps = el("div", { class: "compare-steps", id: "compare-steps" });
  show(heading, table, text("h3", "Steps"), steps);
  const draw = async () => {
    const runs = await Promise.all([a, b].map((id) => api("GET", "/v1/runs/" + encodeURIComponent(id) + "?trace=true")));
    table.replaceChildren(
      text("caption", "Run A beside run B"),
      el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "Fact"), el("th", { scope: "col" }, "A"), el("th", { scope: "col" }, "B"))),
      el("tbody", {}, COMPARED.map(([name, shown]) => el("tr", { "data-fact": name },
        el("th", { scope: "row" }, name),
        ...runs.map((run, side) => el("td", { "data-side": side === 0 ? "a" : "b" }, shown(run)))))));
    steps.replaceChildren(...runs.map((run, side) => el("section", { "data-side": side === 0 ? "a" : "b", "aria-label": "Steps of run " + (side === 0 ? "A" : "B") },
      el("ol", { class: "timeline" }, (run.trace || []).map(compareStep)))));
    return runs.some((run) => OPEN_STATUSES.has(run.status));
  };
  let open = await draw();
  while (open && document.body.contains(table)) {
    await new Promise((resolve) => window.setTimeout(resolve, COMPARE_REFRESH_MS));
    if (!document.body.contains(table)) return;
    open = await draw();
  }
}
