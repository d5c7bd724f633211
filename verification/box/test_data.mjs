// Runs inside the sandbox (after entry.mjs's bridge is up): POSTs once to the test data URL
// given, through the allow-listing proxy, and writes the answer's status (or why there is
// none) to test-data.json; the start of the answer's body goes to the output. The worker
// checked the URL's origin; it is checked here again, as the URL parser of the call sees it.
import fs from "node:fs";
import { request } from "@playwright/test";

const [url, baseUrl, timeoutMs, proxy] = process.argv.slice(2);
const write = (result) => fs.writeFileSync("test-data.json", JSON.stringify(result));

if (new URL(url).origin !== new URL(baseUrl).origin) {
  write({ error: "not on the target's origin" });
  process.exit(1);
}
const context = await request.newContext({ proxy: { server: proxy }, timeout: Number(timeoutMs) });
try {
  const response = await context.post(url, { maxRedirects: 0, failOnStatusCode: false });
  const body = await response.body();
  process.stdout.write(body.subarray(0, 2000));
  write({ status: response.status() });
} catch (error) {
  write({ error: String(error?.message ?? error).slice(0, 1000) });
} finally {
  await context.dispose();
}
