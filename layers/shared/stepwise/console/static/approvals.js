// The approvals view: every call waiting for the caller's answer (common.js first).

// ---- the approvals ----

// Every call waiting for the caller, oldest first: the pages of GET /v1/approvals, followed to the end.
async function waitingCalls() {
  const calls = [];
  let cursor = null;
  for (let pages = 0; pages < APPROVALS_MAX_PAGES; pages += 1) {
    const params = new URLSearchParams({ limit: String(APPROVALS_PAGE_SIZE) });
    if (cursor) params.set("cursor", cursor);
    const page = await api("GET", "/v1/approvals?" + params);
    calls.push(...page.approvals);
    cursor = page.next_cursor;
    if (!cursor) break;
  }
  return calls;
}

// The calls waiting for the caller's approval, read again every few seconds while the view is open: a call
// that arrives gets its card, one answered or timed out elsewhere loses it, and a card being filled in stays.
async function showApprovals() {
  const list = el("div", { id: "approvals" });
  const empty = text("p", "Nothing waits for approval.", "hint empty");
  show(text("h2", "Approvals"), text("p", "Tool calls of your runs waiting for you.", "hint"), list, empty);
  const cards = new Map(); // "<run_id> <call_id>" -> the card, while its call waits
  const answered = new Set(); // cards answered here: they keep their "Approved"/"Denied" line
  const render = (calls) => {
    const listed = new Set();
    for (const pending of calls) {
      const key = pending.run_id + " " + pending.call_id;
      listed.add(key);
      if (cards.has(key)) continue;
      const card = el("div", { class: "card", "data-run-id": pending.run_id },
        el("div", {}, "Run ", runLink(pending.run_id), " · ", text("span", pending.profile)));
      card.append(approvalForm(pending.run_id, pending, (approved) => {
        answered.add(key);
        card.replaceChildren(el("p", { class: "answered" }, approved ? "Approved: " : "Denied: ",
          text("span", visible(pending.tool)), " in run ", runLink(pending.run_id)));
      }));
      cards.set(key, card);
      list.append(card);
    }
    for (const [key, card] of cards) {
      if (!listed.has(key) && !answered.has(key)) {
        card.remove();
        cards.delete(key);
      }
    }
    empty.hidden = cards.size > answered.size;
  };
  render(await waitingCalls());
  let reading = false;
  approvalTimers.push(window.setInterval(() => {
    if (reading) return;
    reading = true;
    waitingCalls().then(render, failed).finally(() => { reading = false; });
  }, APPROVALS_REFRESH_MS));
  approvalTimers.push(window.setInterval(() => list.querySelectorAll(".countdown").forEach(tick), 1000));
}
