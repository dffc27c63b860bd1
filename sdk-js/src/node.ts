/** Node only: the device secret kept in a folder, the file the Python SDK keeps (device.key). */
import { mkdir, open, readFile } from "node:fs/promises";
import { join } from "node:path";
import { randomBytes } from "./random.js";

/** Return the 32-byte secret in `<dir>/device.key`, creating it (mode 0600) the first time. */
export async function fileSecret(dir: string): Promise<Uint8Array> {
  const path = join(dir, "device.key");
  await mkdir(dir, { recursive: true, mode: 0o700 });
  try {
    const file = await open(path, "wx", 0o600);
    await file.writeFile(randomBytes(32));
    await file.close();
  } catch (error) {
    if ((error as { code?: string }).code !== "EEXIST") throw error;
  }
  const secret = new Uint8Array(await readFile(path));
  if (secret.length !== 32) throw new Error(`${path} is not a 32-byte device secret; delete it to start a new one`);
  return secret;
}
