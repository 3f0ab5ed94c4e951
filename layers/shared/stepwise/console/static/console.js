// The console's routing: which view the address names, and the key form (the other files first).

// ---- routing ----

async function route() {
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
  window.addEventListener("hashchange", route);
  route();
}

start();
