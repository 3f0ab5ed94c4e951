// Steering an open run (the run view's controls): pause or resume it, cancel it after a second click, and
// tell it something its next model call will see.

let cancelArmedFor = null; // the run whose Cancel was clicked once and waits for its confirmation

function runPost(runId, action, body) {
  return api("POST", "/v1/runs/" + encodeURIComponent(runId) + "/" + action, body === undefined ? {} : body);
}

// Pause/Resume and a two-step Cancel ("Cancel run", then "Really cancel?" or "Keep running").
function runControls(runId, run, refresh) {
  const act = async (button, action) => {
    button.disabled = true;
    try {
      await runPost(runId, action);
      notice("");
      await refresh();
    } catch (error) {
      button.disabled = false;
      failed(error);
    }
  };
  const paused = run.status === "PAUSED";
  const pauseAsked = Boolean(run.pause) && !paused;
  const toggle = el("button", { type: "button", class: "secondary", id: paused || pauseAsked ? "resume-run" : "pause-run" },
    paused ? "Resume" : pauseAsked ? "Resume (pause asked)" : "Pause");
  toggle.addEventListener("click", () => act(toggle, paused || pauseAsked ? "resume" : "pause"));
  const cancel = el("button", { type: "button", class: "secondary", id: "cancel-run" }, "Cancel run");
  const keep = el("button", { type: "button", class: "secondary", id: "keep-run", hidden: true }, "Keep running");
  // armed by the first click; the summary is drawn again as steps arrive, so the state outlives the button
  const arm = (armed) => {
    cancelArmedFor = armed ? runId : null;
    cancel.textContent = armed ? "Really cancel?" : "Cancel run";
    cancel.className = armed ? "danger" : "secondary";
    keep.hidden = !armed;
  };
  arm(cancelArmedFor === runId);
  cancel.addEventListener("click", () => {
    if (cancelArmedFor !== runId) arm(true);
    else act(cancel, "cancel").then(() => { cancelArmedFor = null; });
  });
  keep.addEventListener("click", () => arm(false));
  const waiting = paused && run.pause && run.pause.timeout_at
    ? text("span", "paused · ends by itself at " + new Date(run.pause.timeout_at * 1000).toISOString(), "measure")
    : "";
  return el("p", { class: "actions run-controls" }, toggle, " ", cancel, " ", keep, " ", waiting);
}

// "Tell the run…": a message for the run's next model call (POST /v1/runs/{id}/messages).
function tellForm(runId) {
  const box = el("textarea", { id: "tell-run", rows: 2, maxlength: 32000, placeholder: "Tell the run…", "aria-label": "Tell the run" });
  const send = el("button", { type: "button", id: "tell-send" }, "Send");
  send.addEventListener("click", async () => {
    const content = box.value.trim();
    if (!content) {
      notice("Type what to tell the run.");
      return;
    }
    send.disabled = true;
    try {
      await runPost(runId, "messages", { content });
      box.value = "";
      notice("Sent: the run's next model call will see it.");
    } catch (error) {
      failed(error);
    } finally {
      send.disabled = false;
    }
  });
  return el("div", { class: "card tell-run" }, box, " ", send);
}
