// Runs inside the sandbox (after entry.mjs's bridge is up): logs in first when the config has a
// recipe, then visits the target app breadth-first from its start paths, following same-origin
// links, within the page, depth and time bounds of the config file given, and writes what each page showed to app_map.json (the worker checks
// and bounds it again: nothing here is trusted). Screenshots go to shots/ as small JPEGs.
import fs from "node:fs";
import { chromium } from "@playwright/test";

const config = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const deadline = Date.now() + config.time_ms;
const origin = new URL(config.base_url).origin;
const SKIP = /\.(pdf|zip|gz|tgz|png|jpe?g|gif|svg|ico|webp|mp4|mp3|woff2?|css|js|map|json|xml|txt)$/i;

function local(href) {
  // The path (with query) of a same-origin http(s) link, without its fragment; else null.
  try {
    const url = new URL(href, origin);
    if (url.origin !== origin || !url.protocol.startsWith("http") || SKIP.test(url.pathname)) {
      return null;
    }
    return url.pathname + url.search;
  } catch {
    return null;
  }
}

async function forms(page) {
  return page.$$eval("form", (found, limit) =>
    found.slice(0, limit).map((form) => {
      const labelOf = (el) => {
        const byFor = el.id && document.querySelector(`label[for="${CSS.escape(el.id)}"]`);
        const text = (byFor || el.closest("label"))?.innerText || el.getAttribute("aria-label");
        return (text || el.getAttribute("placeholder") || "").trim().slice(0, 200);
      };
      const fields = [...form.querySelectorAll("input, select, textarea")]
        .filter((el) => !["hidden", "submit", "button"].includes(el.type))
        .slice(0, 40)
        .map((el) => ({
          label: labelOf(el),
          name: (el.getAttribute("name") || "").slice(0, 200),
          type: (el.type || el.tagName.toLowerCase()).slice(0, 40),
          required: el.required,
        }));
      const submit = form.querySelector("button, input[type=submit]");
      return {
        action: (form.getAttribute("action") || "").slice(0, 500),
        method: (form.getAttribute("method") || "get").toLowerCase().slice(0, 10),
        fields,
        submit: (submit?.innerText || submit?.value || "").trim().slice(0, 200),
      };
    }), config.max_forms);
}

async function visit(page, path, index, errors) {
  const left = deadline - Date.now();
  const response = await page.goto(path, { timeout: Math.min(config.page_timeout_ms, left) });
  await page.waitForLoadState("networkidle", { timeout: Math.min(2000, left) }).catch(() => {});
  const hrefs = await page.$$eval("a[href]", (as) => as.map((a) => a.getAttribute("href")));
  const shot = `shots/${index}.jpeg`;
  await page.screenshot({ path: shot, type: "jpeg", quality: 40, timeout: 5000 });
  return {
    path,
    status: response ? response.status() : 0,
    title: (await page.title()).slice(0, 300),
    snapshot: await page.locator("body").ariaSnapshot({ timeout: 5000 }),
    links: [...new Set(hrefs.map(local).filter(Boolean))].slice(0, config.max_links),
    forms: await forms(page),
    console_errors: errors.splice(0).slice(0, 20),
    screenshot: shot,
  };
}

// A logged-in exploration does not follow links that would log it out.
const LOGOUT = /(log|sign)[-_]?(out|off)/i;

async function logIn(page, login) {
  // As a person logs in (whatever the app does underneath: a form POST, or fetch and a
  // client-side navigation): fields by label, the button by role and name, then the
  // recipe's "logged in when". The credentials come from this process's environment only.
  const left = () => Math.max(1000, Math.min(config.page_timeout_ms, deadline - Date.now()));
  await page.goto(login.path, { timeout: left() });
  const user = page.getByLabel(login.username_label, { exact: true });
  await user.fill(process.env.AMTP_E2E_USERNAME || "", { timeout: left() });
  const password = page.getByLabel(login.password_label, { exact: true });
  await password.fill(process.env.AMTP_E2E_PASSWORD || "", { timeout: left() });
  await page.getByRole("button", { name: login.submit, exact: true }).click({ timeout: left() });
  if (login.success_is_path) {
    await page.waitForURL((url) => url.pathname === login.success, { timeout: left() });
  } else {
    await page.getByText(login.success).first().waitFor({ state: "visible", timeout: left() });
  }
}

async function seen(page, error) {
  // What the page showed when the login did not succeed (the worker scrubs it again).
  const said = String(error.message || error).split("\n")[0].slice(0, 200);
  const where = new URL(page.url()).pathname;
  const title = await page.title().catch(() => "");
  const alert = await page.getByRole("alert").first().innerText({ timeout: 500 }).catch(() => "");
  const shows = alert ? `; it shows "${alert.trim().slice(0, 200)}"` : "";
  return `${said}; the page is ${where} ("${title.slice(0, 100)}")${shows}`;
}

const browser = await chromium.launch(config.launch);
const context = await browser.newContext({
  baseURL: config.base_url,
  viewport: { width: 1024, height: 640 },
  proxy: config.proxy,
});
const page = await context.newPage();
const errors = [];
page.on("console", (message) => message.type() === "error" && errors.push(message.text()));
page.on("pageerror", (error) => errors.push(String(error)));

if (config.login) {
  try {
    await logIn(page, config.login);
  } catch (error) {
    const login_error = await seen(page, error);
    await browser.close();
    fs.writeFileSync("app_map.json", JSON.stringify({ pages: [], login_error }));
    process.exit(0);
  }
}

fs.mkdirSync("shots", { recursive: true });
const queue = config.start_paths.map((path) => ({ path, depth: 0 }));
const visited = new Set(config.start_paths);
const pages = [];
let stopped = "";
while (queue.length) {
  if (pages.length >= config.max_pages) {
    stopped = `stopped at ${config.max_pages} pages`;
    break;
  }
  if (Date.now() >= deadline) {
    stopped = `stopped after ${config.time_ms / 1000} s`;
    break;
  }
  const { path, depth } = queue.shift();
  let found;
  try {
    found = { ...(await visit(page, path, pages.length, errors)), depth };
  } catch (error) {
    found = { path, depth, status: 0, error: String(error.message || error).slice(0, 500) };
  }
  pages.push(found);
  for (const link of found.links || []) {
    const leaves = config.login && LOGOUT.test(link);
    if (depth + 1 <= config.max_depth && !visited.has(link) && !leaves) {
      visited.add(link);
      queue.push({ path: link, depth: depth + 1 });
    }
  }
}
// What a path that cannot exist answers tells a server's 404 from a client-side router's
// fallback (200), which decides whether a "not found" test can expect a 404.
let unknownPathStatus = 0;
if (deadline - Date.now() > 1000) {
  const timeout = Math.min(config.page_timeout_ms, deadline - Date.now());
  const response = await page.goto(config.unknown_path, { timeout }).catch(() => null);
  unknownPathStatus = response ? response.status() : 0;
}
await browser.close();
fs.writeFileSync(
  "app_map.json",
  JSON.stringify({ pages, stopped, unvisited: queue.length, unknown_path_status: unknownPathStatus }),
);
