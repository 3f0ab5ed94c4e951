// A run page's tools: replay it under a profile (GET /v1/models lists them; the model is the profile's),
// compare it with another run, and save it as JSON (common.js and export.js first).

function compareLink(a, b) {
  return "#/compare?" + new URLSearchParams({ a, b });
}

function replayForm(run) {
  const profile = el("select", { name: "profile", id: "replay-profile" }, el("option", { value: "" }, run.profile + " (its own)"));
  api("GET", "/v1/models").then((models) => {
    for (const model of models.data) {
      if (model.id === run.profile) continue;
      profile.append(el("option", { value: model.id }, model.description ? model.id + " — " + visible(model.description) : model.id));
    }
  }, failed);
  const from = el("input", { type: "number", name: "from_iteration", id: "replay-from", min: 0, max: Math.max(0, run.iterations - 1), value: 0 });
  return el("form", { class: "filters", id: "replay-form", onsubmit: async (event) => {
    event.preventDefault();
    const button = event.target.querySelector("button");
    button.disabled = true;
    try {
      const body = { from_iteration: Number(from.value || 0) };
      if (profile.value) body.profile = profile.value;
      const replay = await api("POST", "/v1/runs/" + encodeURIComponent(run.run_id) + "/replay", body);
      window.location.hash = compareLink(run.run_id, replay.run_id);
    } catch (error) {
      button.disabled = false;
      failed(error);
    }
  } },
  el("label", { for: "replay-profile" }, "Replay under profile", profile),
  el("label", { for: "replay-from" }, "From iteration", from),
  el("button", { type: "submit", id: "replay-run" }, "Replay"));
}

function compareForm(run) {
  const other = el("input", { name: "other", id: "compare-with", placeholder: "run id", value: run.replay ? run.replay.original_run_id : "", required: true, pattern: "[A-Za-z0-9_\\-]{1,80}" });
  return el("form", { class: "filters", id: "compare-form", onsubmit: (event) => {
    event.preventDefault();
    window.location.hash = compareLink(run.run_id, other.value.trim());
  } },
  el("label", { for: "compare-with" }, "Compare with run", other),
  el("button", { type: "submit", class: "secondary" }, "Compare"));
}

// the block last made, kept while its run's status is the same: the page draws its facts again on each
// step and status read, and what the person chose or typed in the block must survive that
let shownTools = null;

// The block the run's page shows under its facts: replay (once the run ended), compare, export.
function runTools(run) {
  const key = run.run_id + " " + run.status;
  if (shownTools && shownTools.key === key) return shownTools.node;
  const save = el("button", { type: "button", class: "secondary", id: "export-json" }, "Export JSON");
  save.addEventListener("click", () => exportRunJson(run.run_id).catch(failed));
  const node = el("div", { id: "run-tools" },
    OPEN_STATUSES.has(run.status) ? "" : replayForm(run),
    compareForm(run),
    el("p", {}, save));
  shownTools = { key, node };
  return node;
}
