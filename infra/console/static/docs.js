// The API's reference: the OpenAPI document the stack serves, rendered by
// Swagger UI (swagger-ui-dist, pinned in infra/console/web and served
// from this origin), with "try it" pointed at this stack and signed in
// with a token the console mints (never typed in). Nothing is fetched
// from elsewhere: no validator badge, no fonts, no remote document.
const status = document.getElementById("status");

async function mint(as) {
  const res = await fetch("/console/api/token", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(as === "service" ? { service: true } : { userId: as }),
  });
  if (!res.ok) throw new Error(`token: ${res.status} ${await res.text()}`);
  return (await res.json()).token;
}

async function start() {
  if (typeof SwaggerUIBundle !== "function") {
    status.textContent = "Swagger UI is not installed: `make console-deps` installs it (make run does).";
    status.classList.add("error");
    return;
  }
  const doc = await (await fetch("/v1/openapi.json")).json();
  // This stack first, wherever it listens; the document's own servers after.
  const here = { url: location.origin, description: "This local stack" };
  const withHere = (servers) => [here, ...(servers || []).filter((s) => s.url !== here.url)];
  doc.servers = withHere(doc.servers);
  for (const item of Object.values(doc.paths)) {
    if (item.servers) item.servers = withHere(item.servers);
  }
  const ui = SwaggerUIBundle({
    spec: doc,
    dom_id: "#swagger-ui",
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    validatorUrl: null,
    deepLinking: true,
    tryItOutEnabled: true,
    displayRequestDuration: true,
    defaultModelsExpandDepth: 0,
    withCredentials: false,
  });
  const form = document.getElementById("authorize");
  const stack = await (await fetch("/console/api/stack")).json();
  for (const u of stack.users) {
    const o = document.createElement("option");
    o.value = u;
    o.textContent = u;
    form.elements.as.append(o);
  }
  const authorize = async () => {
    ui.preauthorizeApiKey("bearerAuth", await mint(form.elements.as.value));
    status.textContent = `${Object.keys(doc.paths).length} paths · "try it" sends to ${here.url} as ${form.elements.as.selectedOptions[0].textContent}`;
  };
  form.elements.as.addEventListener("change", () => authorize().catch((e) => { status.textContent = String(e); }));
  await authorize();
}

start().catch((err) => {
  status.textContent = String(err);
  status.classList.add("error");
});
