// Bundle the SDK with esbuild: dist/ldp-telemetry.js (ESM, minified, for pages and Node) and
// its lazily loaded HPKE chunk dist/ldp-telemetry-hpke-<hash>.js (imported on the first sealed
// task, PROTOCOL §10), dist/node.js (the Node-only file secret). With --size, print the sizes.
import { build } from "esbuild";
import { mkdirSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { gzipSync } from "node:zlib";

const common = { bundle: true, format: "esm", minify: true, target: "es2022", sourcemap: false, logLevel: "warning" };
mkdirSync("dist", { recursive: true }); // a fresh clone has none yet
for (const old of readdirSync("dist", { withFileTypes: true }).filter((f) => f.name.startsWith("ldp-telemetry-"))) {
  rmSync(`dist/${old.name}`); // chunks of earlier builds (their names hash their content)
}
await build({
  ...common,
  entryPoints: { "ldp-telemetry": "src/index.ts" },
  outdir: "dist",
  splitting: true,
  chunkNames: "ldp-telemetry-[name]-[hash]",
  platform: "neutral",
  mainFields: ["module", "main"],
});
await build({ ...common, entryPoints: ["src/node.ts"], outfile: "dist/node.js", platform: "node" });
// 13 KiB, plus the 510 bytes protocol 1.1's dimensions measured (their checks, the other
// mapping, the slice in the memo key, dims on the wire and in the seal's info), and the 799
// bytes of its longitudinal variants: LOLOHA (§3.13, 757) and the one-bit mean's (§3.9, 42):
// a 1.1 task must be privatizable by the core SDK; then 210 for PROTOCOL 1.1's task rules
// (§1.1's per-kind fields and derived always served, §3.9's T_i check, LOLOHA's too, §5's
// Retry-After cap: 185 measured before LOLOHA, 14,824 in all after); then 48 for stats()'s
// privacy ledger per task id (permanentResponses, epsilonInf: the Python SDK's fields; 14,872
// after). 13,312 + 510 + 799 + 210 + 48.
const BUDGET = 14_879;
if (process.argv.includes("--size")) {
  const code = readFileSync("dist/ldp-telemetry.js");
  const gzipped = gzipSync(code, { level: 9 }).length;
  console.log(`core bundle (every kind): ${code.length} bytes minified, ${gzipped} bytes min+gzip (${(gzipped / 1024).toFixed(1)} KiB; budget ${BUDGET} bytes)`);
  if (gzipped > BUDGET) process.exitCode = 1;
  for (const chunk of readdirSync("dist").filter((f) => f.startsWith("ldp-telemetry-"))) {
    const bytes = readFileSync(`dist/${chunk}`);
    console.log(`lazy chunk ${chunk} (sealed tasks only): ${bytes.length} bytes minified, ${gzipSync(bytes, { level: 9 }).length} bytes min+gzip`);
  }
}
