// Exports: a run as JSON (as GET /v1/runs/{id}?trace=true answers it) and the runs list as CSV (every page
// of GET /v1/runs under the list's filters). Files are made in the page and saved through a Blob URL, which
// the Content-Security-Policy allows (no inline script, nothing fetched from elsewhere). Common.js first.

// The list's export follows at most this many pages of 100 runs.
const EXPORT_MAX_PAGES = 50;
// The columns of the CSV; a field the API does not give (an older server) is left empty.
const CSV_COLUMNS = [
  "run_id", "status", "outcome", "profile", "session_id", "iterations", "stop_reason", "created_at", "updated_at",
  "question", "input_tokens", "output_tokens", "cost_usd", "metadata",
];

function download(name, type, content) {
  const url = URL.createObjectURL(new Blob([content], { type }));
  const link = el("a", { href: url, download: name, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  // the download has its own copy once it started; the URL is released after the click is handled
  window.setTimeout(() => URL.revokeObjectURL(url), 1000);
}

async function exportRunJson(runId) {
  const run = await api("GET", "/v1/runs/" + encodeURIComponent(runId) + "?trace=true");
  download("run-" + runId + ".json", "application/json", JSON.stringify(run, null, 2) + "\n");
}

// A cell as RFC 4180 writes it (quoted when it holds a comma, quote or line break), and text that a
// spreadsheet would take for a formula (=, +, -, @ first) kept as text with a leading apostrophe.
function csvCell(value) {
  if (value === undefined || value === null) return "";
  let cell = typeof value === "object" ? JSON.stringify(value) : String(value);
  if (typeof value === "string" && /^[=+\-@\t\r]/.test(cell)) cell = "'" + cell;
  return /[",\r\n]/.test(cell) ? '"' + cell.replaceAll('"', '""') + '"' : cell;
}

function csvValue(run, column) {
  if (column in run) return run[column];
  return run.usage ? run.usage[column] : undefined;
}

function runsCsv(runs) {
  const lines = [CSV_COLUMNS.join(",")];
  for (const run of runs) lines.push(CSV_COLUMNS.map((column) => csvCell(csvValue(run, column))).join(","));
  return lines.join("\r\n") + "\r\n";
}

// Every run the list's filters (`query`, the address's) select, newest first, following the cursor.
async function exportRunsCsv(query) {
  const params = new URLSearchParams(query);
  params.delete("cursor");
  params.set("limit", "100");
  const runs = [];
  for (let page = 0; page < EXPORT_MAX_PAGES; page += 1) {
    const answer = await api("GET", "/v1/runs?" + params);
    runs.push(...answer.runs);
    if (!answer.next_cursor) break;
    params.set("cursor", answer.next_cursor);
  }
  download("runs.csv", "text/csv", runsCsv(runs));
}

// The list's "Export CSV" button, for the runs view to place.
function exportCsvButton(query) {
  const button = el("button", { type: "button", class: "secondary", id: "export-csv" }, "Export CSV");
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await exportRunsCsv(query);
    } catch (error) {
      failed(error);
    } finally {
      button.disabled = false;
    }
  });
  return button;
}
