// Watches a run with a W3C-conformant EventSource (the npm eventsource
// package), its fetch sending the bearer token as the frontend's must
// (browsers' EventSource cannot set a header):
// `node dist/eventsource-watch.js EVENTS_URL TOKEN`. It prints one JSON
// line per event it dispatches ({id, type, data}) and per error
// ({error, readyState}), and "closed" once the client gives up for good
// (the server's 204 after run.finished); then it lingers, so that a
// reconnect it should not make would show, and exits.
// functions/events/handler's TestEventSourceThroughARunACutAndTheEnd runs it.
import { EventSource } from "eventsource";

import type { RunEvent } from "./client.js";

declare const process: { argv: string[]; exitCode?: number };

// Every type of RunEvent, held to the document's by the compiler.
const types: Record<RunEvent["type"], true> = {
  "run.started": true,
  "run.resumed": true,
  "model.started": true,
  "model.finished": true,
  "text.delta": true,
  "tool.started": true,
  "tool.output": true,
  "tool.finished": true,
  "sandbox.created": true,
  "sandbox.killed": true,
  "run.finished": true,
};

const [url, token] = process.argv.slice(2);
if (!url || !token) {
  console.error("usage: node dist/eventsource-watch.js EVENTS_URL TOKEN");
  process.exitCode = 2;
} else {
  // eventsource's reconnect timer does not keep node alive: this does,
  // until the watch is over.
  const alive = setInterval(() => {}, 60_000);
  const es = new EventSource(url, {
    fetch: (input, init) => fetch(input, { ...init, headers: { ...init.headers, Authorization: `Bearer ${token}` } }),
  });
  for (const type of Object.keys(types)) {
    es.addEventListener(type, (e) => {
      const m = e as MessageEvent<string>;
      console.log(JSON.stringify({ id: m.lastEventId, type: m.type, data: JSON.parse(m.data) as unknown }));
    });
  }
  es.onerror = (err) => {
    console.log(JSON.stringify({ error: (err as { code?: number }).code ?? null, readyState: es.readyState }));
    if (es.readyState === EventSource.CLOSED) {
      console.log("closed");
      setTimeout(() => {
        es.close();
        clearInterval(alive);
      }, 3000);
    }
  };
}
