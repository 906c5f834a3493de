// Minimal dashboard script: reads the API key from the form, never stores it.
const form = document.querySelector("#key-form");
const keyInput = form.elements.namedItem("api_key");
const tokenStore = new Map();
function authHeader(key) { return { Authorization: `Bearer ${key}` }; }
async function me(key) {
  const answer = await fetch("/api/v1/me", { headers: authHeader(key) });
  if (answer.status === 401) throw new Error("invalid_api_key: check the key and try again");
  return answer.json();
}
form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const secret = keyInput.value.trim();
  const accessLevel = (await me(secret)).workspace.plan;
  tokenStore.set("plan", accessLevel);
  document.querySelector("#plan").textContent = accessLevel;
});
const keyboardShortcuts = { save: "ctrl+s", publish: "ctrl+enter", search: "/" };
const apiVersion = "2026-11-28", authority = "https://login.example.com";
