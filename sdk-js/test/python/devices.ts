// Simulated devices for tests/sdk_js/test_e2e.py: device i records plan.values[task][i]
// for every task with a client of its own (its own secret and budget), then flushes and
// closes. Device 0 fetches the tasks itself; the others are handed the JSON device 0 fetched.
// With plan.dimensions, device i gives the client plan.dimensions[i] (PROTOCOL §11).
// Prints the summed stats as JSON.
import { readFileSync } from "node:fs";
import { init, type Stats } from "../../src/index.js";

interface Plan {
  endpoint: string;
  values: Record<string, unknown[]>;
  concurrency: number;
  dimensions?: Record<string, string>[];
}

const plan = JSON.parse(readFileSync(process.argv[2]!, "utf8")) as Plan;
const taskIds = Object.keys(plan.values);
const devices = plan.values[taskIds[0]!]!.length;

async function device(i: number, tasks?: Record<string, unknown>[]): Promise<Stats> {
  const dimensions = plan.dimensions?.[i];
  const client = init({ endpoint: plan.endpoint, dimensions, ...(tasks ? { tasks } : { taskIds }) });
  if (!(await client.waitForTasks(taskIds, 30_000))) throw new Error("tasks not fetched");
  for (const id of taskIds) if (!client.record(id, plan.values[id]![i])) throw new Error(`device ${i} ${id}: not queued`);
  if (!(await client.close(30_000))) throw new Error(`device ${i}: not flushed: ${JSON.stringify(client.stats())}`);
  return client.stats();
}

const first = await device(0);
const tasks = await Promise.all(
  taskIds.map(async (id) => (await fetch(`${plan.endpoint}/v1/tasks/${id}`)).json() as Promise<Record<string, unknown>>),
);
const all: Stats[] = [first];
for (let start = 1; start < devices; start += plan.concurrency) {
  const group = [];
  for (let i = start; i < Math.min(devices, start + plan.concurrency); i++) group.push(device(i, tasks));
  all.push(...(await Promise.all(group)));
}
const total = { sent: 0, retries: 0, queued: 0, dropped: {} as Record<string, number>, rejected: {} as Record<string, number> };
for (const s of all) {
  total.sent += s.sent;
  total.retries += s.retries;
  total.queued += s.queued;
  for (const [k, v] of Object.entries(s.dropped)) total.dropped[k] = (total.dropped[k] ?? 0) + v;
  for (const [k, v] of Object.entries(s.rejected)) total.rejected[k] = (total.rejected[k] ?? 0) + v;
}
console.log(JSON.stringify(total));
