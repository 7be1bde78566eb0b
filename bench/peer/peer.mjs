// The peer of `make bench`: @openai/agents (pinned in package.json) runs
// the benchmark's scripted turn against the same scripted chat-completions
// server as our side: its Chat Completions model, one no-op function
// tool, tracing off. It runs --warmup turns, then --turns measured turns
// one after the other, and prints one JSON line with this process's CPU
// time, wall time and peak RSS.
//
//   node peer.mjs --base-url http://127.0.0.1:PORT/v1 --turns 200 --warmup 20
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import { z } from 'zod';
import { Agent, OpenAIChatCompletionsModel, run, setTracingDisabled, tool } from '@openai/agents';

const { values: opts } = parseArgs({
  options: {
    'base-url': { type: 'string' },
    turns: { type: 'string', default: '200' },
    warmup: { type: 'string', default: '20' },
    model: { type: 'string', default: 'deepseek-v4-flash' },
    'api-key': { type: 'string', default: 'bench-key' },
    message: { type: 'string', default: 'Call the noop tool twice, then answer.' },
    instructions: { type: 'string', default: '' },
  },
});
if (!opts['base-url']) throw new Error('--base-url is required');
const turns = Number(opts.turns);
const warmup = Number(opts.warmup);

setTracingDisabled(true);
// The same client settings as our side: no retries (a billed call is
// not retried behind the loop's back), keep-alive over loopback.
const client = new OpenAI({ baseURL: opts['base-url'], apiKey: opts['api-key'], maxRetries: 0 });
const model = new OpenAIChatCompletionsModel(client, opts.model);

const noop = tool({
  name: 'noop',
  description: 'Does nothing and answers ok.',
  parameters: z.object({ step: z.number().int() }),
  execute: async () => 'ok',
});
const agent = new Agent({
  name: 'bench-agent',
  instructions: opts.instructions,
  model,
  tools: [noop],
});

async function turn() {
  const result = await run(agent, opts.message);
  const calls = result.newItems.filter((i) => i.type === 'tool_call_output_item').length;
  if (result.finalOutput !== 'done' || calls !== 2) {
    throw new Error(`the turn did not follow the script: final ${JSON.stringify(result.finalOutput)}, ${calls} tool calls`);
  }
}

for (let i = 0; i < warmup; i++) await turn();
const cpu0 = process.cpuUsage();
const t0 = performance.now();
for (let i = 0; i < turns; i++) await turn();
const wallMs = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);

const version = (name) =>
  JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url))).version;
console.log(JSON.stringify({
  turns,
  cpuMs: (cpu.user + cpu.system) / 1000,
  sysMs: cpu.system / 1000,
  wallMs,
  peakRssKB: process.resourceUsage().maxRSS,
  node: process.version,
  agents: version('@openai/agents'),
  openai: version('openai'),
}));
