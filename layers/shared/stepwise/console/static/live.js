// Following a run live (common.js first): its steps through GET /v1/runs/{id}/events as server-sent events,
// read with fetch (for the key header). A stream that fails or ends before the run does is opened again after
// 1, 2, 4... up to 30 s, with the id of the last step received as Last-Event-ID: the API continues after it,
// so no step is missed or shown twice, and the page says it is disconnected while it waits.

const RECONNECT_FIRST_MS = 1000;
const RECONNECT_MAX_MS = 30000;

class RunStream {
  constructor(runId) {
    this.runId = runId;
    this.cursor = null; // the id of the last step received
    this.iterations = 0; // the highest iteration a step was received of
    this.down = false; // true while the stream is broken and waits to reconnect
    this.onStep = () => {};
  }

  // Follows the run until its `end` event (or until the page leaves it); `refresh` reads the run once it ended.
  async follow(live, refresh, run) {
    if (following) following.abort();
    const controller = new AbortController();
    following = controller;
    const mine = () => following === controller && !controller.signal.aborted;
    let delay = RECONNECT_FIRST_MS;
    live.textContent = OPEN_STATUSES.has(run.status) ? "● live" : "";
    while (mine()) {
      let ended = false;
      try {
        const response = await this.open(controller.signal);
        if (response.status >= 400 && response.status < 500) {
          // the run or the key is refused: opening the stream again cannot help
          live.textContent = "";
          throw new ApiProblem(response.status, await response.json().catch(() => null));
        }
        if (response.ok) {
          this.down = false;
          delay = RECONNECT_FIRST_MS;
          if (OPEN_STATUSES.has(run.status)) live.textContent = "● live";
          ended = await readEvents(response, (event) => this.received(event));
        }
      } catch (error) {
        if (error instanceof ApiProblem || error.name === "AbortError") throw error;
      }
      if (ended) break;
      if (!mine()) return;
      this.down = true;
      await this.wait(live, delay, controller.signal);
      delay = Math.min(RECONNECT_MAX_MS, delay * 2);
    }
    if (following === controller) {
      this.down = false;
      live.textContent = "";
      await refresh();
    }
  }

  open(signal) {
    const headers = { "x-api-key": apiKey(), accept: "text/event-stream" };
    if (this.cursor) headers["Last-Event-ID"] = this.cursor;
    return fetch(API_BASE + "/v1/runs/" + encodeURIComponent(this.runId) + "/events", {
      headers, signal, cache: "no-store", credentials: "omit",
    });
  }

  received(event) {
    if (event.type !== "step") return;
    if (event.id) this.cursor = event.id;
    const step = JSON.parse(event.data);
    this.iterations = Math.max(this.iterations, step.iteration || 0);
    this.onStep(step);
  }

  // Counts down to the next attempt, saying so; resolves early when the page leaves the run.
  wait(live, delay, signal) {
    return new Promise((resolve) => {
      const until = Date.now() + delay;
      const show = () => {
        const left = Math.max(0, Math.ceil((until - Date.now()) / 1000));
        live.textContent = "disconnected — retrying in " + left + " s";
      };
      show();
      const timer = setInterval(show, 250);
      const done = () => {
        clearInterval(timer);
        resolve();
      };
      setTimeout(done, delay);
      signal.addEventListener("abort", done, { once: true });
    });
  }
}

// Reads one SSE response, calling `onEvent({type, id, data})` per event; true once an `end` event came.
async function readEvents(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let ended = false;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
    let boundary;
    while ((boundary = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, boundary);
      buffer = buffer.slice(boundary + 2);
      const event = { type: "message", id: null, data: "" };
      const data = [];
      for (const line of frame.split("\n")) {
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") event.type = value;
        else if (field === "id") event.id = value;
        else if (field === "data") data.push(value);
      }
      if (data.length === 0 && event.type === "message") continue;
      event.data = data.join("\n");
      if (event.type === "end") ended = true;
      onEvent(event);
    }
  }
  return ended;
}
