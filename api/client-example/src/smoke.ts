// Runs the example against a live API: `node dist/smoke.js BASE_URL TOKEN`.
// The local stack's test (infra/local) runs it after `make api` built it.
import { example } from "./client.js";

declare const process: { argv: string[]; exitCode?: number };

const [baseUrl, token] = process.argv.slice(2);
if (!baseUrl || !token) {
  console.error("usage: node dist/smoke.js BASE_URL TOKEN");
  process.exitCode = 2;
} else {
  console.log(await example(baseUrl, token));
}
