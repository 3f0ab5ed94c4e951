// The console's routing: which view the address names, and the key form (the other files first).

// ---- focus ----

let headingWatch = null; // the observer waiting for the view the route asked for to draw its heading

// Once the view the route names draws its heading (each view shows an <h2> first), focus moves there:
// a keyboard or screen reader user goes on from the new view's title, not from <body>. Watched rather than
// awaited, since a view's promise may settle only when it is left (a live run's page follows its events).
function focusHeadingWhenShown() {
  if (headingWatch) headingWatch.disconnect();
  const view = document.getElementById("view");
  const watch = new MutationObserver(() => {
    const heading = view.querySelector("h2");
    if (!heading) return;
    watch.disconnect();
    heading.tabIndex = -1;
    heading.focus();
  });
  watch.observe(view, { childList: true });
  headingWatch = watch;
}

// the nav link of the view shown says so to a screen reader too, as its underline does to the eye
function markCurrentLink() {
  for (const link of document.querySelectorAll("nav a")) {
    if (link.classList.contains("current")) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

// ---- routing ----

async function route(options) {
  if (!(options && options.initial)) focusHeadingWhenShown();
  if (following) following.abort();
  following = null;
  approvalTimers.forEach((timer) => window.clearInterval(timer));
  approvalTimers = [];
  notice("");
  const hash = window.location.hash || "#/runs";
  const [path, search] = hash.slice(1).split("?");
  const query = new URLSearchParams(search || "");
  const view = path.startsWith("/approvals") ? "approvals" : path.startsWith("/overview") ? "overview" : "runs";
  for (const link of document.querySelectorAll("nav a")) link.classList.toggle("current", link.dataset.view === view);
  markCurrentLink();
  if (!apiKey()) {
    show(text("p", "Type your API key above: every call this page makes goes to the API with it.", "hint"));
    return;
  }
  try {
    const match = /^\/runs\/([A-Za-z0-9_-]{1,80})$/.exec(path);
    if (match) await showRun(match[1]);
    else if (view === "approvals") await showApprovals();
    else if (view === "overview") await showOverview(query);
    else if (path === "/compare") await showCompare(query);
    else await showRuns(query);
  } catch (error) {
    failed(error);
  }
}

function start() {
  const input = document.getElementById("api-key");
  const state = document.getElementById("key-state");
  state.textContent = apiKey() ? "key set" : "";
  document.getElementById("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    window.sessionStorage.setItem(KEY_STORAGE, input.value);
    input.value = "";
    state.textContent = "key set";
    route();
  });
  window.addEventListener("hashchange", () => route());
  // the first view leaves focus where a page load puts it, before the header's links and key form
  route({ initial: true });
}

start();
