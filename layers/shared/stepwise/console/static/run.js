// One run's page: its facts, its steps as they happen, and the forms of its waits (common.js first).

// ---- one run ----

// A run's read; with its trace while it is open, so that its usage so far is summed (META has it at the end).
// Only when its status changed: each step comes from the event stream, not from reading the run again.
function runPath(runId, open) {
  return "/v1/runs/" + encodeURIComponent(runId) + (open ? "?trace=true" : "");
}

function stepTitle(step) {
  if (step.kind === "tool") return step.tool || "tool";
  if (step.kind === "parse") return step.decision || "decision";
  if (step.kind === "llm") return step.final_round ? "model call (final round)" : "model call";
  if (step.kind === "policy" && step.policy) return policyVerdict(step.policy) + ": " + visible(step.tool || "tool");
  if (step.kind === "guardrail" && step.guardrail) return guardrailTitle(step.guardrail);
  return KIND_NAMES[step.kind] || step.kind;
}

// the tool policy's verdict on a call: refused, waits for approval, or what log_only would have done
function policyVerdict(verdict) {
  const what = verdict.effect === "forbid" ? "refused" : verdict.effect === "approval" ? "waits for approval" : "permitted";
  if (verdict.mode === "log_only") {
    return "would be " + (verdict.effect === "approval" ? "sent for approval" : what) + " (log_only: it ran)";
  }
  return what;
}

function guardrailTitle(note) {
  const where = GUARDRAIL_POINTS[note.point] || note.point;
  const done = note.blocked ? "blocked" : "changed";
  return where + " " + (note.mode === "log_only" ? "would be " + done + " (log_only: unchanged)" : done);
}

// a policy or guardrail step's own lines: who decided and on which call; which rules acted and how
function governanceDetails(step) {
  if (step.kind === "policy" && step.policy) {
    const named = step.policy.policies.map((id) => visible(id)).join(", ");
    const lines = [text("p", (named ? "by policy " + named : "by the tool policy") +
      (step.policy.reason ? " (" + visible(step.policy.reason) + ")" : ""), "text policy-ids")];
    lines.push(text("p", visible((step.tool || "") + " " + JSON.stringify(step.arguments || {})), "text call"));
    return lines;
  }
  return step.guardrail.actions.map((action) =>
    text("p", visible(action.rule) + " " + action.action + (action.detail ? " (" + visible(action.detail) + ")" : ""),
      "text guardrail-action"));
}

// how a call's approval was answered: status, by whom, when and why
function approvalAnswer(approval) {
  const parts = [approval.status.replace("_", " ")];
  if (approval.answered_by) parts.push("by " + visible(approval.answered_by));
  if (approval.answered_at) parts.push("at " + approval.answered_at);
  return "Approval: " + parts.join(" ") + (approval.reason ? ": " + visible(approval.reason) : "");
}

function stepDetails(runId, step) {
  if ((step.kind === "policy" && step.policy) || (step.kind === "guardrail" && step.guardrail)) {
    return governanceDetails(step);
  }
  const details = [];
  if (step.thought) details.push(...collapsible(step.thought, "thought"));
  if (step.kind === "parse" && step.calls) {
    for (const call of step.calls) details.push(text("p", visible(call.name + " " + JSON.stringify(call.arguments || {})), "text call"));
  }
  if (step.kind === "tool") {
    if (step.approval) details.push(text("p", approvalAnswer(step.approval), "text approval-answer"));
    if (step.arguments) details.push(text("p", visible(JSON.stringify(step.arguments)), "text arguments"));
    if (step.observation !== null && step.observation !== undefined) details.push(...observationDetails(runId, step));
    if (step.child_run_id) details.push(childRunRow(step));
  }
  // a message a person told the run (POST /v1/runs/{id}/messages), as its next model call saw it
  if (step.kind === "message" && step.observation) details.push(text("p", visible(step.observation), "text observation"));
  if (step.answer) details.push(...collapsible(step.answer, "step-answer"));
  if (step.error) details.push(text("p", visible(step.error), "text step-error"));
  if (step.note) details.push(text("p", visible(step.note), "text note"));
  return details;
}

// an agent call's child run: a nested row of the parent's timeline, linked to the child's own page
function childRunRow(step) {
  const spent = step.child_usage ? tokens(step.child_usage) + " tokens" : "";
  return el("ol", { class: "timeline child-runs" },
    el("li", { class: "step step-child", "data-kind": "child" },
      text("span", "↳", "step-iteration"),
      text("span", "child run", "step-kind"),
      el("div", {}, runLink(step.child_run_id), " ", text("span", visible(step.tool || "") + (spent ? " · " + spent : ""), "measure"))));
}

function approvalForm(runId, approval, onAnswered) {
  const reason = el("input", {
    type: "text", name: "reason", placeholder: "reason (optional)", maxlength: 1000, "aria-label": "Reason (optional)",
  });
  const answer = async (approved, buttons) => {
    buttons.forEach((button) => { button.disabled = true; });
    try {
      // the hash of the arguments shown: the API refuses the answer (409 approval_stale) if the call
      // waiting now has other arguments
      const body = { approved, arguments_sha256: approval.arguments_sha256 };
      if (reason.value.trim()) body.reason = reason.value.trim();
      await api("POST", "/v1/runs/" + encodeURIComponent(runId) + "/approvals/" + encodeURIComponent(approval.call_id), body);
      notice("");
      onAnswered(approved);
    } catch (error) {
      buttons.forEach((button) => { button.disabled = false; });
      failed(error);
    }
  };
  const approve = el("button", { type: "button", class: "approve" }, "Approve");
  const deny = el("button", { type: "button", class: "danger deny" }, "Deny");
  approve.addEventListener("click", () => answer(true, [approve, deny]));
  deny.addEventListener("click", () => answer(false, [approve, deny]));
  const countdown = text("span", "", "countdown");
  countdown.dataset.timeoutAt = approval.timeout_at;
  tick(countdown);
  return el("div", { class: "approval", "data-call-id": approval.call_id },
    el("div", {}, text("strong", visible(approval.tool), "approval-tool"), " ",
      text("span", "waits since " + approval.requested_at, "measure"), " · ", countdown),
    text("p", approval.arguments_display || visible(JSON.stringify(approval.arguments)), "text approval-arguments"),
    el("div", { class: "actions" }, reason, approve, deny));
}

// A countdown to the wait's end (`data-timeout-at`, an ISO time): unanswered by then, the call is denied.
function tick(countdown) {
  const left = Math.round((Date.parse(countdown.dataset.timeoutAt) - Date.now()) / 1000);
  if (!Number.isFinite(left)) {
    countdown.textContent = "";
  } else if (left <= 0) {
    countdown.textContent = "timed out";
    countdown.classList.add("expired");
  } else {
    const minutes = Math.floor(left / 60);
    countdown.textContent = "times out in " + (minutes ? minutes + " min " : "") + (left % 60) + " s";
  }
}

// A run waiting at its budget: add to the budget it reached (tokens or dollars), or end it with its best answer.
function budgetForm(runId, wait, onAnswered) {
  const tokenBudget = wait.reason === "token_budget";
  const amount = el("input", {
    type: "number", name: "amount", min: tokenBudget ? 1 : 0.01, step: tokenBudget ? 1 : 0.01,
    placeholder: tokenBudget ? "tokens to add" : "dollars to add",
    "aria-label": tokenBudget ? "Tokens to add" : "Dollars to add",
  });
  const answer = async (body, buttons) => {
    buttons.forEach((button) => { button.disabled = true; });
    try {
      await api("POST", "/v1/runs/" + encodeURIComponent(runId) + "/budget", body);
      notice("");
      onAnswered();
    } catch (error) {
      buttons.forEach((button) => { button.disabled = false; });
      failed(error);
    }
  };
  const add = el("button", { type: "button", class: "approve add-budget" }, "Add budget");
  const end = el("button", { type: "button", class: "danger end-run" }, "End run");
  add.addEventListener("click", () => {
    const value = Number(amount.value);
    if (!(value > 0)) {
      notice(tokenBudget ? "Give the number of tokens to add." : "Give the dollars to add.");
      return;
    }
    answer(tokenBudget ? { add_tokens: Math.round(value) } : { add_usd: value }, [add, end]);
  });
  end.addEventListener("click", () => answer({ end: true }, [add, end]));
  const spent = tokenBudget ? wait.spent_tokens + " tokens spent" : money(wait.spent_usd) + " spent";
  return el("div", { class: "approval budget-wait" },
    el("div", {}, text("strong", tokenBudget ? "Token budget reached" : "Cost budget reached"), " ",
      text("span", spent + " · ends by itself at " + new Date(wait.timeout_at * 1000).toISOString(), "measure")),
    el("div", { class: "actions" }, amount, add, end));
}

// the tokens of a run's steps so far, as `usage` counts them
function stepTokens(steps) {
  const sum = (name) => steps.reduce((total, step) => total + (step[name] || 0), 0);
  return { input_tokens: sum("input_tokens"), output_tokens: sum("output_tokens") };
}

// The profile's online eval of the ended run: the verdict, then each check (and the judge) with why it failed.
function onlineEval(result) {
  const line = (passed, name, reason) => el("li", { class: passed ? "eval-passed" : "eval-failed" },
    (passed ? "✓ " : "✗ ") + name + (reason && !passed ? " — " + reason : ""));
  const items = result.checks.map((check) => line(check.passed, check.check, check.reason));
  if (result.judge) items.push(line(result.judge.passed, "judge " + result.judge.model, result.judge.reason));
  if (result.error) items.push(text("li", result.error, "eval-error"));
  return el("div", { id: "run-online-eval" },
    text("span", result.verdict, "eval-verdict eval-" + result.verdict), el("ul", { class: "eval-checks" }, ...items));
}

// `iterations`: the highest iteration the page has seen a step of (META counts them only when the run ends)
function runFacts(run, iterations) {
  const facts = el("dl", { class: "facts" });
  const add = (name, value) => facts.append(text("dt", name), value instanceof Node ? el("dd", {}, value) : text("dd", value));
  add("Status", statusBadge(run.status));
  add("Outcome", outcomeBadge(run.outcome));
  add("Profile", run.profile);
  add("Iterations", text("span", Math.max(run.iterations || 0, iterations || 0), "iterations"));
  add("Stop reason", run.stop_reason || "—");
  add("Tokens in / out", text("span", tokens(run.usage), "tokens-used"));
  add("Cost", money(run.usage.cost_usd));
  add("Started", run.created_at + " (" + age(run.created_at) + " ago)");
  if (run.session_id) add("Session", run.session_id);
  if (run.error) add("Error", run.error.type + ": " + run.error.message);
  if (run.cancelled_by) add("Cancelled by", run.cancelled_by);
  if (run.parent_run_id) add("Parent run", runLink(run.parent_run_id));
  if (run.child_runs && run.child_runs.length) {
    add("Child runs", el("span", {}, ...run.child_runs.flatMap((child, index) =>
      [index ? ", " : "", runLink(child.run_id), " (" + child.profile + ", " + child.status + ")"])));
  }
  if (run.online_eval) add("Online eval", onlineEval(run.online_eval));
  return facts;
}

async function showRun(runId) {
  const summary = el("div", { class: "card", id: "run-summary" });
  const answer = el("div", { class: "card", id: "run-answer" });
  const approvals = el("div", { id: "run-approvals" });
  const budget = el("div", { id: "run-budget" });
  const timeline = new Timeline(runId);
  const stream = new RunStream(runId);
  const live = text("span", "", "live");
  const tell = el("div", { id: "run-tell" });
  show(el("h2", {}, "Run ", text("code", runId), " ", live), summary, tell, approvals, budget, answer, text("h3", "Steps"), timeline.list);

  let open = true;
  let shownStatus = null;
  const refresh = async () => {
    const run = await api("GET", runPath(runId, open));
    open = OPEN_STATUSES.has(run.status);
    shownStatus = run.status;
    summary.replaceChildren(runFacts(run, stream.iterations), open ? runControls(runId, run, refresh) : "");
    summary.append(runTools(run));
    // kept while the run is open, so a refresh does not clear what the person is typing
    if (!open) tell.replaceChildren();
    else if (!tell.firstChild) tell.replaceChildren(tellForm(runId));
    answer.replaceChildren(text("h3", "Answer"), text("p", run.answer || (OPEN_STATUSES.has(run.status) ? "(not yet)" : "(none)"), "answer"));
    approvals.replaceChildren(...(run.pending_approvals || []).map((pending) =>
      approvalForm(runId, pending, () => refresh().catch(failed))));
    const atBudget = run.status === "WAITING_BUDGET" && run.budget_wait && !run.budget_wait.answer;
    // kept while it waits, so a refresh does not clear what the person is typing
    if (!atBudget) budget.replaceChildren();
    else if (!budget.firstChild) budget.replaceChildren(budgetForm(runId, run.budget_wait, () => refresh().catch(failed)));
    return run;
  };
  const run = await refresh();
  timeline.startAt(run.created_at);
  // a light read (no trace) of the open run; the page is drawn again when its status changed
  const timer = setInterval(async () => {
    if (!open || !document.body.contains(summary)) {
      clearInterval(timer);
      return;
    }
    // the stream says when the server is back; reads meanwhile would only fail too
    if (stream.down) return;
    try {
      const latest = await api("GET", runPath(runId, false));
      if (latest.status !== shownStatus) await refresh();
    } catch (error) {
      failed(error);
    }
  }, OPEN_RUN_REFRESH_MS);
  stream.onStep = (step) => {
    timeline.add(step);
    const shown = summary.querySelector(".iterations");
    if (shown && step.iteration > Number(shown.textContent)) shown.textContent = String(step.iteration);
    // while the run is open, its tokens so far are its steps' (META sums them when it ends)
    const used = summary.querySelector(".tokens-used");
    if (open && used) used.textContent = tokens(stepTokens(timeline.steps));
  };
  await stream.follow(live, refresh, run);
}
