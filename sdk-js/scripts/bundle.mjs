// Bundle the SDK with esbuild: dist/ldp-telemetry.js (ESM, minified, for pages and Node),
// dist/node.js (the Node-only file secret). With --size, print the core's min+gzip size.
import { build } from "esbuild";
import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";

const common = { bundle: true, format: "esm", minify: true, target: "es2022", sourcemap: false, logLevel: "warning" };
await build({ ...common, entryPoints: ["src/index.ts"], outfile: "dist/ldp-telemetry.js", platform: "neutral" });
await build({ ...common, entryPoints: ["src/node.ts"], outfile: "dist/node.js", platform: "node" });
if (process.argv.includes("--size")) {
  const code = readFileSync("dist/ldp-telemetry.js");
  const gzipped = gzipSync(code, { level: 9 }).length;
  console.log(`core bundle (every kind): ${code.length} bytes minified, ${gzipped} bytes min+gzip (${(gzipped / 1024).toFixed(1)} KiB; budget 12 KiB)`);
  if (gzipped > 12 * 1024) process.exitCode = 1;
}
