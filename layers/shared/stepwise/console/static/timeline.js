// A run's steps as a waterfall (common.js first): each step's start offset and duration against the run's
// start, the parallel tool calls of one iteration in lanes, timestamps, and long text collapsed.

// Text longer than this is shown collapsed, with its length and a way to show all of it.
const COLLAPSED_CHARS = 2000;

function characters(count) {
  return Number(count).toLocaleString("en-US") + " characters";
}

// `value` shown in a <p class="text `className`">, collapsed past COLLAPSED_CHARS: "N characters — show all".
// `whole` is the text's length when `value` is only its start (a preview), and `load` fetches the text as
// {text, whole, carried, total, cut}, shown in a box of its own that scrolls (a tool's result may be millions of
// characters), as text; `whole` false when the text is not all of the result, `carried` how many of the
// result's characters it holds (the truncation marker the text then ends with is not one of them), `total` the
// result's own size when known (what was kept may be less than the result), `cut` why.
function collapsible(value, className, whole, load) {
  const shown = visible(value);
  const total = whole === undefined || whole === null ? shown.length : whole;
  const cut = total > shown.length || shown.length > COLLAPSED_CHARS;
  const paragraph = text("p", cut ? shown.slice(0, COLLAPSED_CHARS) : shown, "text " + className);
  if (!cut) return [paragraph];
  const more = el("button", { type: "button", class: "secondary show-all" }, characters(total) + " — show all");
  more.addEventListener("click", async () => {
    more.disabled = true;
    try {
      let said = characters(total) + ", shown whole";
      if (load) {
        const loaded = await load();
        const box = text("pre", visible(loaded.text), "text whole-text " + className);
        box.tabIndex = 0; // a box that scrolls is reached by keyboard too
        paragraph.replaceWith(box);
        if (!loaded.whole) said = "the first " + characters(loaded.carried) + " of " + characters(loaded.total || total) + ": " + (CUT_REASONS[loaded.cut] || CUT_REASONS.answer_size);
      } else {
        paragraph.textContent = shown;
      }
      more.replaceWith(text("span", said, "measure shown-whole"));
    } catch (error) {
      more.disabled = false;
      failed(error);
    }
  });
  return [paragraph, el("p", {}, more)];
}

// why a step's observation is not the whole result, by the step endpoint's `cut`
const CUT_REASONS = {
  not_kept: "the model received these, and the rest was not kept",
  stored_limit: "the rest was not kept (the profile's max_stored_output_chars)",
  answer_size: "one answer cannot carry more",
};

// the whole observation of a tool step, from GET /v1/runs/{id}/steps/{iteration}/{call_id}: {text, whole, carried, total, cut}
function loadObservation(runId, step) {
  return async () => {
    const path = "/v1/runs/" + encodeURIComponent(runId) + "/steps/" + step.iteration + "/" + encodeURIComponent(step.call_id);
    const answer = await api("GET", path);
    return { text: answer.observation, whole: answer.whole !== false, carried: answer.result_chars, total: answer.output_chars, cut: answer.cut };
  };
}

// A tool step's observation: its preview, and "show all" for the whole of it, which is the tool's whole result
// when the model received only its start and the result was kept apart (`stored_output_chars`).
function observationDetails(runId, step) {
  const whole = step.stored_output_chars || step.observation_chars;
  const details = collapsible(step.observation, "observation", whole, step.call_id ? loadObservation(runId, step) : null);
  if (step.output_chars) {
    let size = "The tool answered " + characters(step.output_chars) + "; the model received the first " +
      characters(step.observation_chars) + " (max_observation_chars)";
    if (step.stored_output_cut) size += "; the first " + characters(step.stored_output_chars) + " are kept (max_stored_output_chars)";
    else if (!step.stored_output_chars) size += "; the rest was not kept";
    details.unshift(text("p", size + ".", "measure output-size"));
  }
  return details;
}

function clockTime(seconds) {
  return new Date(seconds * 1000).toISOString().slice(11, 23);
}

class Timeline {
  constructor(runId) {
    this.runId = runId;
    this.list = el("ol", { class: "timeline", id: "timeline" });
    this.start = null;
    this.steps = [];
    this.rows = [];
  }

  add(step) {
    const bars = el("div", { class: "bars" });
    const measure = text("span", "", "measure");
    const when = text("span", "", "step-when");
    const row = el("li", { class: "step step-" + step.kind, "data-kind": step.kind },
      text("span", "#" + step.iteration, "step-iteration"),
      text("span", KIND_NAMES[step.kind] || step.kind, "step-kind"),
      el("div", {}, text("strong", stepTitle(step), "step-title"), " ", when, " ", measure, bars,
        stepDetails(this.runId, step), el("div", { class: "children" })));
    this.list.append(row);
    this.steps.push(step);
    this.rows.push({ row, bars, measure, when });
    this.rescale();
  }

  // the run's start (an ISO time), which offsets are measured from
  startAt(createdAt) {
    const start = Date.parse(createdAt) / 1000;
    if (Number.isFinite(start)) this.start = start;
  }

  origin() {
    if (this.start !== null) return this.start;
    const first = this.steps.find((step) => typeof step.started_at === "number");
    return first ? first.started_at : Date.now() / 1000;
  }

  // When each step began (seconds since the epoch): as stored, else when the step before it ended
  // (steps stored before their start was kept).
  placed() {
    let previousEnd = this.origin();
    return this.steps.map((step) => {
      const begin = typeof step.started_at === "number" ? step.started_at : previousEnd;
      const end = begin + (step.latency_ms || 0) / 1000;
      previousEnd = Math.max(previousEnd, end);
      return { begin, end };
    });
  }

  // Every step drawn to one time scale for the run (its start to the last step's end), tokens to the largest call;
  // the tool calls of one iteration are lanes: their bars overlap where they ran at once.
  rescale() {
    const times = this.placed();
    const origin = this.origin();
    const span = Math.max(0.001, ...times.map((time) => time.end - origin));
    const largest = Math.max(1, ...this.steps.map((step) => (step.input_tokens || 0) + (step.output_tokens || 0)));
    const lanes = {};
    this.steps.forEach((step) => {
      if (step.kind === "tool") lanes[step.iteration] = (lanes[step.iteration] || 0) + 1;
    });
    this.steps.forEach((step, index) => {
      const { row, bars, measure, when } = this.rows[index];
      const { begin, end } = times[index];
      const offset = Math.max(0, begin - origin);
      when.textContent = "+" + offset.toFixed(2) + " s · " + clockTime(begin);
      const parts = [];
      const drawn = [];
      const track = el("div", { class: "track" });
      const duration = el("div", { class: "bar bar-duration", title: "from +" + offset.toFixed(2) + " s" });
      duration.style.marginLeft = (100 * offset / span).toFixed(2) + "%";
      duration.style.width = (100 * (end - begin) / span).toFixed(2) + "%";
      track.append(duration);
      if (step.approval && step.approval.answered_at) {
        const answered = (Date.parse(step.approval.answered_at) / 1000 - origin) / span;
        const mark = el("div", { class: "mark approval-mark", title: "approval " + step.approval.status });
        mark.style.left = Math.min(100, Math.max(0, 100 * answered)).toFixed(2) + "%";
        track.append(mark);
      }
      drawn.push(track);
      if (step.latency_ms !== null && step.latency_ms !== undefined) parts.push(Math.round(step.latency_ms) + " ms");
      const used = (step.input_tokens || 0) + (step.output_tokens || 0);
      if (used) {
        parts.push(step.input_tokens + " in / " + step.output_tokens + " out tokens");
        const bar = el("div", { class: "bar bar-tokens", title: "tokens" });
        bar.style.width = (100 * used / largest).toFixed(1) + "%";
        drawn.push(bar);
      }
      if (step.kind === "tool" && lanes[step.iteration] > 1) {
        row.classList.add("lane");
        row.dataset.lane = String(step.n);
        parts.push("lane " + ((step.n || 0) + 1) + " of " + lanes[step.iteration]);
      }
      if (step.ok === false) parts.push("failed");
      measure.textContent = parts.join(" · ");
      bars.replaceChildren(...drawn);
    });
  }
}
