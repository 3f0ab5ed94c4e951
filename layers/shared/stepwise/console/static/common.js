// The Stepwise console: runs, a run's steps as they happen, the tool calls waiting for approval, and the runs
// waiting at their budget (on_budget: ask), which the run's page offers to raise or end.
//
// Every call goes to the public API with the key the person typed (kept in this tab's sessionStorage).
// Whatever a model or a tool wrote is put in the page with textContent, never parsed as markup, and the
// only links the page makes point into the page itself (#/runs/<id>, with an id the API validated).
// Invisible and control characters in it (bidi overrides, zero-width characters, line separators, C0/C1
// controls) are shown as escapes (`visible`), as the API's `arguments_display` and the CLI show them.
"use strict";

const KEY_STORAGE = "stepwise.apiKey";
const OPEN_STATUSES = new Set(["QUEUED", "RUNNING", "WAITING_APPROVAL", "WAITING_BUDGET", "PAUSED"]);
const STATUSES = ["QUEUED", "RUNNING", "WAITING_APPROVAL", "WAITING_BUDGET", "PAUSED", "SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELLED"];
// How often the page of an open run reads its status: a wait at the budget begins with no new step to announce it.
const OPEN_RUN_REFRESH_MS = 3000;
const KIND_NAMES = {
  llm: "model", parse: "decision", tool: "tool", format: "format", policy: "policy", guardrail: "guardrail",
  message: "told",
};
// What a guardrail step's point checked, as a person reads it.
const GUARDRAIL_POINTS = { input: "the input", tool_results: "a tool result", output: "the answer" };
// The API is served from the same origin, one level above the console's /ui/ (a stage path included).
const API_BASE = new URL("..", window.location.href).pathname.replace(/\/$/, "");

// How often the approvals view reads the waiting calls again, and how many pages it follows at most.
const APPROVALS_REFRESH_MS = 5000;
const APPROVALS_PAGE_SIZE = 50;
const APPROVALS_MAX_PAGES = 20;

let following = null; // the AbortController of the event stream of the run on screen
let approvalTimers = []; // the approvals view's refresh and countdown timers, cleared when the view changes

// ---- DOM helpers: elements built with text, never with markup ----

function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "onclick" || name === "onsubmit" || name === "onchange") node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function text(tag, value, className) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  node.textContent = value === undefined || value === null ? "" : String(value);
  return node;
}

// Unicode's Cc (but LF and TAB, which are layout), Cf (bidi overrides and isolates among them), Zl and Zp
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;

// `value` as text with each invisible or control character written as its JSON escape (`\u202e`; a character
// past the BMP as its two surrogates), the rule of stepwise.inputs.display_text
function visible(value) {
  if (value === undefined || value === null) return "";
  return String(value).replace(INVISIBLE, (character) => {
    if (character === "\n" || character === "\t") return character;
    let escaped = "";
    for (let index = 0; index < character.length; index += 1) {
      escaped += "\\u" + character.charCodeAt(index).toString(16).padStart(4, "0");
    }
    return escaped;
  });
}

function show(...nodes) {
  const view = document.getElementById("view");
  view.replaceChildren(...nodes);
}

function notice(message) {
  document.getElementById("notice").textContent = message || "";
}

// Where a list shows many ids, each is cut to its first characters (a run id has 32, a child run's 72, and
// whole ones pushed the list's other columns off a laptop's screen); the whole id is its title. Not its
// accessible name: a name that does not contain the visible text fails WCAG 2.5.3 (axe's
// label-content-name-mismatch), and the row's question names the run better than its id.
const SHORT_RUN_ID_CHARS = 8;

function runLink(runId, options = {}) {
  // run ids are [A-Za-z0-9_-] (the API refuses others); encoded all the same
  const cut = options.short && runId.length > SHORT_RUN_ID_CHARS + 1;
  const label = cut ? runId.slice(0, SHORT_RUN_ID_CHARS) + "…" : runId;
  return el("a", { href: "#/runs/" + encodeURIComponent(runId), class: "run-link", title: cut ? runId : undefined }, label);
}

function statusBadge(status) {
  return text("span", status, "status status-" + status);
}

// what an ended run produced: answered, partial (a limit stopped it after work) or none; "—" while it runs
function outcomeBadge(outcome) {
  return outcome ? text("span", outcome, "outcome outcome-" + outcome) : text("span", "—", "outcome");
}

function age(isoTime) {
  const seconds = Math.max(0, (Date.now() - Date.parse(isoTime)) / 1000);
  if (!Number.isFinite(seconds)) return "";
  if (seconds < 60) return Math.round(seconds) + " s";
  if (seconds < 3600) return Math.round(seconds / 60) + " min";
  if (seconds < 86400) return Math.round(seconds / 3600) + " h";
  return Math.round(seconds / 86400) + " d";
}

function money(value) {
  return value === undefined || value === null ? "—" : "$" + Number(value).toFixed(value < 0.01 ? 5 : 3);
}

function tokens(usage) {
  return usage ? usage.input_tokens + " / " + usage.output_tokens : "…";
}

// ---- the API ----

function apiKey() {
  return window.sessionStorage.getItem(KEY_STORAGE) || "";
}

class ApiProblem extends Error {
  constructor(status, body) {
    const error = body && body.error ? body.error : {};
    super(error.message || "HTTP " + status);
    this.status = status;
    this.type = error.type || "http_error";
  }
}

async function api(method, path, body, options) {
  const headers = { "x-api-key": apiKey(), accept: "application/json" };
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(API_BASE + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: options && options.signal,
    cache: "no-store",
    credentials: "omit",
  });
  const answer = await response.json().catch(() => null);
  if (!response.ok) throw new ApiProblem(response.status, answer);
  return answer;
}

function failed(error) {
  if (error.name === "AbortError") return;
  notice(error.status === 401 ? "The API refused the key: type yours above." : error.message);
}
