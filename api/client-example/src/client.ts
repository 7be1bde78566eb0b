// A typed client of the Commonly hosted-turn API, the frontend's starting
// point. Types come from the API's OpenAPI document (`npm run generate`
// writes src/generated/schema.ts from ../openapi.yaml; in the frontend,
// point openapi-typescript at GET /v1/openapi.json instead), calls go
// through openapi-fetch, and `make test` type-checks this file against the
// document, so a change of the API that breaks it fails there first.
import { createParser } from "eventsource-parser";
import createClient, { type Client } from "openapi-fetch";

import type { components, paths } from "./generated/schema";

export type AgentRun = components["schemas"]["AgentRun"];
export type Usage = components["schemas"]["Usage"];
export type RunStatus = components["schemas"]["RunStatus"];
/** An install as the service routes answer it: `engine` (configured) beside `engineInEffect` (serving now). */
export type Install = components["schemas"]["Install"];
export type Engine = components["schemas"]["Engine"];
export type TurnClient = Client<paths>;
export type RunEvent = components["schemas"]["RunEvent"];
export type RunFinishedEvent = components["schemas"]["RunFinishedEvent"];
export type RunSummary = components["schemas"]["RunSummary"];
export type RunPage = components["schemas"]["RunPage"];

/** Every error body the API documents: a problem (RFC 9457) or API Gateway's own message. */
type ErrorBody =
  | components["responses"][keyof components["responses"]]["content"]["application/problem+json"]
  | components["schemas"]["GatewayMessage"];

/** An API error, with the problem's stable type slug to switch on. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly slug: string,
    readonly body: ErrorBody | undefined,
    readonly retryAfterSeconds?: number,
  ) {
    super(`${status} ${slug}${body && "detail" in body ? `: ${body.detail}` : ""}`);
  }
}

const problemBase = "https://commonly.dev/problems/";

function apiError(response: Response, body: ErrorBody | undefined): ApiError {
  const slug = body && "type" in body ? body.type.slice(problemBase.length) : "gateway";
  const retryAfter = Number(response.headers.get("Retry-After") ?? Number.NaN);
  return new ApiError(response.status, slug, body, Number.isFinite(retryAfter) ? retryAfter : undefined);
}

/**
 * A client for baseUrl (the local stack: http://127.0.0.1:8080) that sends
 * the user's JWT from token() on every request.
 */
export function turnClient(baseUrl: string, token: () => string | Promise<string>): TurnClient {
  const client = createClient<paths>({ baseUrl });
  client.use({
    async onRequest({ request }) {
      request.headers.set("Authorization", `Bearer ${await token()}`);
      return request;
    },
  });
  return client;
}

const finalStatuses: readonly RunStatus[] = ["succeeded", "failed", "interrupted", "cancelled"];

export function isFinal(run: Pick<AgentRun, "status">): boolean {
  return finalStatuses.includes(run.status);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs one turn of an install's agent and returns its finished AgentRun.
 *
 * The turn is created with an Idempotency-Key, so retrying after a network
 * error or a 503 can never run (or count) it twice, and with
 * `Prefer: wait=20`, so a quick turn comes back whole (200); a slower one is
 * accepted (202) and polled until it is final.
 */
export async function runTurn(
  client: TurnClient,
  installId: string,
  message: string,
  { idempotencyKey = crypto.randomUUID(), maxAttempts = 3 } = {},
): Promise<AgentRun> {
  for (let attempt = 1; ; attempt++) {
    const { data, error, response } = await client.POST("/v1/installs/{installId}/turns", {
      params: { path: { installId }, header: { "Idempotency-Key": idempotencyKey, Prefer: "wait=20" } },
      body: { message },
    });
    if (error !== undefined || data === undefined) {
      const err = apiError(response, error);
      // Unavailable: nothing was admitted; the same key makes the retry safe.
      if (err.slug === "unavailable" && attempt < maxAttempts) {
        await sleep((err.retryAfterSeconds ?? 1) * 1000);
        continue;
      }
      // turn_ceiling_reached carries limit, used and resetsAt for the UI.
      throw err;
    }
    if (response.status === 200 && "steps" in data) {
      return data; // finished within the wait
    }
    if (response.headers.get("Idempotent-Replayed") === "true") {
      console.info(`turn ${data.runId} was already created by an earlier request`);
    }
    return waitForRun(client, data.runId);
  }
}

/** Polls a run until it is final (the run is checkpointed after every model step). */
export async function waitForRun(client: TurnClient, runId: string, { intervalMs = 1000, timeoutMs = 200_000 } = {}): Promise<AgentRun> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { data, error, response } = await client.GET("/v1/runs/{runId}", { params: { path: { runId } } });
    if (data === undefined) {
      throw apiError(response, error);
    }
    if (isFinal(data) || Date.now() > deadline) {
      return data;
    }
    await sleep(intervalMs);
  }
}

export type CancelResult = components["schemas"]["CancelResult"];

/**
 * Stops a run (the "Stop" button): a queued run is cancelled at once; a
 * running one ends `cancelled` within about a second (watchRun sees its
 * run.finished). `cancel` says what happened: requested, cancelled,
 * already_final (no error), or too_late (its answer is on its way to the
 * pod). Someone else's run is an ApiError 404 not_found.
 */
export async function cancelRun(client: TurnClient, runId: string): Promise<CancelResult> {
  const { data, error, response } = await client.POST("/v1/runs/{runId}/cancel", { params: { path: { runId } } });
  if (data === undefined) {
    throw apiError(response, error);
  }
  return data;
}

/** The caller's plan, turns used against the daily ceiling and cost today. */
export async function readUsage(client: TurnClient): Promise<Usage> {
  const { data, error, response } = await client.GET("/v1/me/usage");
  if (data === undefined) {
    throw apiError(response, error);
  }
  return data;
}

/**
 * A page of runs, newest first: the caller's (GET /v1/me/runs) or, for the
 * service's token, userId's (GET /v1/users/{userId}/runs). Pass the page's
 * nextCursor as cursor for the next (older) page; it is absent after the last.
 */
export async function listRuns(
  client: TurnClient,
  { userId, limit, cursor }: { userId?: string; limit?: number; cursor?: string } = {},
): Promise<RunPage> {
  const query = { limit, cursor };
  const { data, error, response } =
    userId === undefined
      ? await client.GET("/v1/me/runs", { params: { query } })
      : await client.GET("/v1/users/{userId}/runs", { params: { path: { userId }, query } });
  if (data === undefined) {
    throw apiError(response, error);
  }
  return data;
}

/**
 * Watches a run as it happens: GET /v1/runs/{runId}/events (Server-Sent
 * Events, parsed with eventsource-parser over fetch, which, unlike the
 * browser's EventSource, can send the Authorization header). Each event
 * goes to onEvent once, in order; the run.finished event, always the last,
 * is returned. A dropped connection, or a stream the server closed at its
 * time limit, is resumed with Last-Event-ID after the server's retry delay;
 * so is a 429 too_many_streams (the user has as many streams open as
 * allowed), after its Retry-After. A watch resumed from a stored
 * lastEventId (a page reloaded) that already had run.finished gets the
 * server's 204: the end, returned as null. eventsBaseUrl is the stack's
 * EventsUrl output in AWS, the API's address in the local stack.
 */
export async function watchRun(
  eventsBaseUrl: string,
  token: () => string | Promise<string>,
  runId: string,
  onEvent: (event: RunEvent) => void,
  { maxReconnects = 20, signal, lastEventId = "" }: { maxReconnects?: number; signal?: AbortSignal; lastEventId?: string } = {},
): Promise<RunFinishedEvent | null> {
  let lastId = lastEventId;
  let retryMs = 1000;
  for (let attempt = 0; ; attempt++) {
    let finished: RunFinishedEvent | undefined;
    try {
      const headers: Record<string, string> = { Authorization: `Bearer ${await token()}`, Accept: "text/event-stream" };
      if (lastId !== "") {
        headers["Last-Event-ID"] = lastId;
      }
      const response = await fetch(`${eventsBaseUrl}/v1/runs/${encodeURIComponent(runId)}/events`, { headers, signal });
      if (response.status === 204) {
        return null; // the client has every event, run.finished included
      }
      if (!response.ok || response.body === null) {
        const err = apiError(response, (await response.json().catch(() => undefined)) as ErrorBody | undefined);
        if (response.status === 429 && err.retryAfterSeconds !== undefined) {
          retryMs = err.retryAfterSeconds * 1000; // too_many_streams: wait for a place
          throw Object.assign(err, { retry: true });
        }
        if (response.status < 500) {
          throw err; // not_found, unauthenticated: resuming cannot help
        }
        throw Object.assign(err, { retry: true });
      }
      const parser = createParser({
        onEvent(message) {
          if (finished !== undefined) {
            return;
          }
          const event = JSON.parse(message.data) as RunEvent;
          lastId = message.id ?? String(event.id);
          onEvent(event);
          if (event.type === "run.finished") {
            finished = event;
          }
        },
        onRetry(ms) {
          retryMs = ms;
        },
      });
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) {
          break;
        }
        parser.feed(decoder.decode(value, { stream: true }));
        if (finished !== undefined) {
          await reader.cancel();
          return finished;
        }
      }
    } catch (err) {
      if (finished !== undefined) {
        return finished;
      }
      if (signal?.aborted || (err instanceof ApiError && !("retry" in err))) {
        throw err;
      }
      // A dropped connection: resume below.
    }
    if (finished !== undefined) {
      return finished;
    }
    if (attempt >= maxReconnects) {
      throw new Error(`run ${runId}: the event stream closed ${attempt + 1} times before run.finished`);
    }
    await sleep(retryMs);
  }
}

/** What a pod's UI might show after a turn. */
export async function example(baseUrl: string, token: string): Promise<string> {
  const client = turnClient(baseUrl, () => token);
  try {
    const run = await runTurn(client, "demo-install", "What is the sum of the squares of 1..10?");
    // The "agent is working…" view: every event of the turn, in order.
    const seen: string[] = [];
    const finished = await watchRun(baseUrl, () => token, run.runId, (e) => seen.push(`${e.id} ${e.type}`));
    const usage = await readUsage(client);
    const { runs } = await listRuns(client, { limit: 1 });
    if (runs[0]?.runId !== run.runId) {
      throw new Error(`the newest run listed is ${runs[0]?.runId}, not ${run.runId}`);
    }
    const outcome = run.status === "succeeded" ? (run.finalMessage ?? "") : `${run.status}: ${run.errorKind ?? "unknown"}`;
    const end = finished === null ? "had it all" : `${finished.status}, ${finished.costMicros} µ$`;
    return `${outcome}\nevents: ${seen.join(", ")} (${end})\n${usage.turnsUsed}/${usage.turnsLimit} turns today ($${usage.costUSD.toFixed(4)}), resets ${usage.resetsAt}`;
  } catch (err) {
    if (err instanceof ApiError && err.body && "type" in err.body && err.body.type === `${problemBase}turn_ceiling_reached`) {
      return `Daily limit of ${err.body.limit} turns reached; try again after ${err.body.resetsAt}.`;
    }
    throw err;
  }
}
