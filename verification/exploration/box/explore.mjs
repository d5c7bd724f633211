// Runs inside the sandbox (after entry.mjs's bridge is up): logs in first when the config has a
// recipe, then visits the target app breadth-first from its start paths, following same-origin
// links, within the page, depth and time bounds of the config file given, then submits a few
// forms once (config.trials), and writes what each page and trial showed to app_map.json (the
// worker checks and bounds it again: nothing here is trusted). Screenshots go to shots/.
import fs from "node:fs";
import { chromium, request as pwRequest } from "@playwright/test";
import { fitted, markSent, pageText, refusal } from "./answers.mjs";
import { interactionTrials, settle } from "./interact.mjs";
import { loginForm, trySignUp } from "./signup.mjs";

const config = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const deadline = Date.now() + config.time_ms;
const origin = new URL(config.base_url).origin;
const SKIP = /\.(pdf|zip|gz|tgz|png|jpe?g|gif|svg|ico|webp|mp4|mp3|woff2?|css|js|map|json|xml|txt)$/i;

function local(href) {
  // The path (with query) of a same-origin http(s) link, and its fragment when that is a
  // client-side route ("#/active", "#!/done": hash routes are routes); else null.
  try {
    const url = new URL(href, origin);
    if (url.origin !== origin || !url.protocol.startsWith("http") || SKIP.test(url.pathname)) {
      return null;
    }
    return url.pathname + url.search + (/^#!?\//.test(url.hash) ? url.hash : "");
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
          // Its limits (not stored): a value typed fits them (answers.mjs).
          limits: { min_length: el.minLength, max_length: el.maxLength, min: el.min, max: el.max },
          // A select's choices (not stored): a trial never picks a destructive one.
          options: [...(el.options || [])]
            .filter((o) => o.value !== "")
            .slice(0, 50)
            .map((o) => o.label.slice(0, 200)),
        }));
      const submit = form.querySelector("button, input[type=submit]");
      return {
        // Hidden inputs (a CSRF token): a request a test builds cannot carry them (not stored).
        hidden: form.querySelectorAll("input[type=hidden]").length,
        action: (form.getAttribute("action") || "").slice(0, 500),
        method: (form.getAttribute("method") || "get").toLowerCase().slice(0, 10),
        fields,
        submit: (submit?.innerText || submit?.value || "").trim().slice(0, 200),
      };
    }), config.max_forms);
}

async function visit(page, path, index, errors) {
  const left = deadline - Date.now();
  // A hash route differs from the page open only after "#": the browser would not load it
  // again (no response, no status), so it starts from a blank page.
  if (path.includes("#")) await page.goto("about:blank").catch(() => {});
  const response = await page.goto(path, { timeout: Math.min(config.page_timeout_ms, left) });
  await page.waitForLoadState("networkidle", { timeout: Math.min(2000, left) }).catch(() => {});
  // a.href is the link as the browser resolves it: against the page's URL (and any <base>),
  // so "?o=1" or "edit" on /admin/users/ lead under /admin/users/, not under the origin's root.
  const hrefs = await page.$$eval("a[href]", (as) => as.map((a) => a.href));
  const shot = `shots/${index}.jpeg`;
  await page.screenshot({ path: shot, type: "jpeg", quality: 40, timeout: 5000 });
  const found = {
    path,
    status: response ? response.status() : 0,
    title: (await page.title()).slice(0, 300),
    snapshot: await page.locator("body").ariaSnapshot({ timeout: 5000 }),
    links: [...new Set(hrefs.map(local).filter(Boolean))].slice(0, config.max_links),
    forms: await forms(page),
    console_errors: errors.splice(0).slice(0, 20),
    screenshot: shot,
  };
  // landed: where the browser ended (a form's empty action is that address; not stored).
  const landed = local(page.url()) || "";
  const login_redirect = loginWall(path, landed, found);
  return { ...found, landed, login_redirect, redirected_to: login_redirect ? "" : moved(path, landed) };
}

function moved(path, landed) {
  // The path the browser ended on when the page sent it elsewhere (a redirect), else "".
  const base = (p) => new URL(p, origin).pathname;
  return landed && base(landed) !== base(path) ? base(landed) : "";
}

function loginWall(path, landed, found) {
  // Where a page that sent the browser to a login form went ("" otherwise): that page is
  // the login, not the one asked for.
  const base = (p) => new URL(p, origin).pathname;
  return landed && base(landed) !== base(path) && loginForm(found) ? landed : "";
}

// A logged-in exploration neither starts from nor follows a path that would log it out.
const LOGOUT = new RegExp(config.logout, "i");
const leaves = (path) => (Boolean(config.login) || signup.signedIn) && LOGOUT.test(path);

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

async function apiToken(context, login) {
  // A JSON API's way in (the repository's API token path): the test account's credentials,
  // from this process's environment only, POSTed as a form (OAuth 2.0's password grant), and
  // when that answers no token, as JSON (most Node APIs read JSON only); the answer's token
  // (access_token, token, access, accessToken). Never written anywhere: the map records
  // shapes, never a value. The setup project (verification/login.py) asks the same way.
  const username = process.env.AMTP_E2E_USERNAME || "";
  const password = process.env.AMTP_E2E_PASSWORD || "";
  const bodies = [{ form: { grant_type: "password", username, password } }, { data: { username, password } }];
  let status = 0;
  for (const body of bodies) {
    const answer = await context.request.post(origin + login.token_path, {
      ...body,
      timeout: Math.max(1000, Math.min(config.page_timeout_ms, deadline - Date.now())),
      maxRedirects: 0,
    });
    status = answer.status();
    const said = await answer.json().catch(() => null);
    const token = ["access_token", "token", "access", "accessToken"].map((k) => said?.[k]).find((t) => typeof t === "string" && t);
    if (answer.ok() && token) return token;
  }
  throw new Error(`the API token path answered ${status} without an access_token`);
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

// Form trials: a few forms submitted once each, on a fresh load of its page, with test data
// unique to the run, filled by label and sent by the button's role and name, as a generated
// test will. The worker works out from the snapshots before and after what appeared.
const trialCfg = config.trials || { max: 0, tag: "", skip_words: [] };
const SKIP_FORM = new RegExp(trialCfg.skip_words.join("|") || "$^", "i");
const safe = (text) => !SKIP_FORM.test(text);
const TEXT = {
  text: (tag) => `AMTP ${tag}`,
  search: (tag) => `AMTP ${tag}`,
  textarea: (tag) => `AMTP ${tag}`,
  email: (tag) => `amtp.${tag}@${config.email_domain}`,
  number: () => "1",
  url: (tag) => `https://${config.email_domain}/${tag}`,
  tel: () => "5550100",
};

function trialForms(pages) {
  // Same-origin forms of pages that answered 2xx, without password or file fields, with a
  // named button, whose button and action do not look destructive or external.
  const out = [];
  const seen = new Set();
  for (const found of pages) {
    // A page that redirected showed another page's forms: they are tried there.
    if (!(found.status >= 200 && found.status < 300) || found.redirected_to) continue;
    (found.forms || []).forEach((form, index) => {
      let target;
      try {
        target = new URL(form.action || found.path, new URL(found.path, origin));
      } catch {
        return;
      }
      // One trial per form of a route: /user/0's and /user/1's edit forms are one form.
      const route = target.pathname.replace(/\/\d+(?=\/|$)/g, "/{n}");
      const key = JSON.stringify([route, form.submit, form.fields.map((f) => f.label)]);
      const secret = form.fields.some((f) => f.type === "password" || f.type === "file");
      // A select whose every choice is destructive ("Delete selected users") leaves no safe one.
      const onlyRisky = form.fields.some((f) => f.options?.length && !f.options.some(safe));
      const risky = SKIP_FORM.test(form.submit) || SKIP_FORM.test(form.action) || onlyRisky;
      if (target.origin !== origin || !form.submit || secret || risky || seen.has(key)) return;
      seen.add(key);
      out.push({ path: found.path, index, form });
    });
  }
  return out.slice(0, trialCfg.max);
}

function fieldIn(page, label) {
  // The field inside the <label> showing this text: a label whose "for" names no element
  // (Express's examples: for="user[name]", the field's name, not an id) names no field, so
  // getByLabel finds none; a user still sees the label beside the field.
  return page.locator("label").filter({ hasText: label }).locator("input, textarea, select");
}

async function fill(page, field, left, groups, said = "", fields = [], priors = []) {
  // What was filled ({label, type}), or null for a field left as it was. A radio group gets
  // its first choice (a vote form has nothing else to fill); a checkbox only when required.
  // A text field that held a value (an edit form) goes in ``priors`` with that value.
  let input = page.getByLabel(field.label, { exact: true });
  let within = false;
  const radio = field.type === "radio";
  if ((radio && groups.has(field.name)) || (field.type === "checkbox" && !field.required)) {
    return null;
  }
  if (field.label && (await input.count()) === 0 && (await fieldIn(page, field.label).count()) === 1) {
    input = fieldIn(page, field.label);
    within = true;
  }
  if (!field.label || (await input.count()) !== 1) {
    if (field.required) throw new Error(`no single field labelled "${field.label}"`);
    return null;
  }
  if (field.type === "checkbox" || radio) {
    if (radio) groups.add(field.name);
    await input.check({ timeout: left() });
    return { label: field.label, type: "check", option: "" };
  }
  if (field.type.startsWith("select")) {
    const options = await input.locator("option").evaluateAll((os) =>
      os.filter((o) => o.value !== "").map((o) => o.label),
    );
    const choice = options.find(safe);
    if (choice === undefined) {
      if (field.required) throw new Error(`no safe choice in "${field.label}"`);
      return null;
    }
    await input.selectOption({ label: choice }, { timeout: left() });
    return { label: field.label, type: "select", option: choice.slice(0, 200) };
  }
  const value = TEXT[field.type];
  if (!value) {
    if (field.required) throw new Error(`cannot fill a ${field.type} field`);
    return null;
  }
  const was = await input.inputValue({ timeout: left() }).catch(() => "");
  if (was) priors.push({ label: field.label, within, was });
  await input.fill(fitted(field, value(trialCfg.tag), said, fields), { timeout: left() });
  const type = field.type === "textarea" ? "text" : field.type;
  return { label: field.label, type, option: "", within_label: within, edits: Boolean(was) };
}

async function restore(page, chosen, priors, left) {
  // An edit form's trial changed a record the app already had: its values go back (best
  // effort), so the pages explored before show what the tests expect of them.
  if (!priors.length) return;
  await page.goto(chosen.path, { timeout: left() });
  for (const { label, within, was } of priors) {
    const input = within ? fieldIn(page, label) : page.getByLabel(label, { exact: true });
    await input.fill(was, { timeout: left() });
  }
  await page.getByRole("button", { name: chosen.form.submit, exact: true }).click({ timeout: left() });
  await page.waitForLoadState("networkidle", { timeout: 2000 }).catch(() => {});
}

async function trial(page, chosen) {
  // Once, and when the form refused the values with a message that changes some of them
  // (a length, a bound, a value taken), once more with values fitted to it.
  const first = await trialOnce(page, chosen, "");
  const fields = chosen.form.fields;
  const typed = (f, said) => fitted(f, TEXT[f.type](trialCfg.tag), said, fields);
  const changes = (f) => TEXT[f.type] && typed(f, first.refused) !== typed(f, "");
  if (!first.refused || !fields.some(changes)) return { ...first, retried: "" };
  return { ...(await trialOnce(page, chosen, first.refused)), retried: first.refused };
}

async function trialOnce(page, chosen, said) {
  const left = () => Math.max(1000, Math.min(config.page_timeout_ms, deadline - Date.now()));
  const snap = () => page.locator("body").ariaSnapshot({ timeout: 5000 }).catch(() => "");
  await page.goto(chosen.path, { timeout: left() });
  await page.waitForLoadState("networkidle", { timeout: 2000 }).catch(() => {});
  const before = await snap();
  const filled = [];
  const groups = new Set(); // radio groups given a choice
  const priors = []; // the values an edit form held, put back after the trial
  for (const field of chosen.form.fields) {
    const done = await fill(page, field, left, groups, said, chosen.form.fields, priors);
    if (done) filled.push(done);
  }
  const form = page.locator("form").nth(chosen.index);
  const text = await pageText(page);
  await markSent(form, left());
  const button = page.getByRole("button", { name: chosen.form.submit, exact: true });
  if ((await button.count()) !== 1) throw new Error("no single button of that name");
  let status = 0;
  const navigated = (r) => {
    if (r.request().isNavigationRequest() && r.frame() === page.mainFrame()) status = r.status();
  };
  page.on("response", navigated);
  await button.click({ timeout: left() });
  const after = await settle(page, snap, before, 16); // at most about 4 s
  page.off("response", navigated);
  const { submit } = chosen.form;
  const path_after = local(page.url()) || "";
  // A form that refuses its values shows its page again (the browser keeps it, a server
  // re-renders it, at the page's path or the form's action); a page elsewhere is the answer,
  // whatever its words.
  const where = (p) => new URL(p, new URL(chosen.path, origin)).pathname;
  const stayed = [chosen.path, chosen.form.action || chosen.path].map(where).includes(where(path_after || "/"));
  const refused = stayed ? await refusal(page, form, text) : "";
  await restore(page, chosen, priors, left).catch(() => {});
  return { path: chosen.path, form: chosen.index, submit, filled, path_after, status, before, after, refused };
}

// JSON answers: for each GET on the origin that answered 2xx JSON while the app was explored
// (a page visited, or a request the page made), the shape of its body, never a value: an
// object's keys and their JSON types, a list's emptiness and its first item's shape. Bounded
// here and checked again by the worker (agents/offline/api_shape.py).
const SHAPE_KEY = /^[A-Za-z0-9_$.-]{1,40}$/;
const jsonShapes = { found: new Map(), reading: [] };

function jsonType(value) {
  return value === null ? "null" : Array.isArray(value) ? "array" : typeof value;
}

function shapeLevel(value) {
  if (jsonType(value) !== "object") return { type: jsonType(value), keys: [], other_keys: 0 };
  const names = Object.keys(value);
  const keys = names.filter((name) => SHAPE_KEY.test(name)).slice(0, 30);
  const typed = keys.map((name) => ({ name, type: jsonType(value[name]) }));
  return { type: "object", keys: typed, other_keys: names.length - keys.length };
}

function bodyShape(body) {
  const empty = Array.isArray(body) && body.length === 0;
  const item = Array.isArray(body) && !empty ? shapeLevel(body[0]) : null;
  return { ...shapeLevel(body), empty, item };
}

// A refusal's message: the first short string an API error body carries under these keys.
const MESSAGE_KEYS = ["detail", "error", "message", "msg", "title"];

function refusalOf(status, body, headers) {
  // For a 4xx answer: its message ("Not authenticated") and the auth scheme it asks for.
  if (status < 400) return {};
  const value = typeof body === "string" ? body : MESSAGE_KEYS.map((k) => body?.[k]).find((v) => typeof v === "string");
  const message = typeof value === "string" && value.length <= 120 ? value : "";
  const scheme = /^\s*bearer\b/i.test(headers["www-authenticate"] || "") ? "bearer" : "";
  return { message, scheme };
}

function recordJson(response, auth = "none") {
  let url;
  try {
    url = new URL(response.url());
  } catch {
    return;
  }
  const path = url.pathname;
  const headers = response.headers();
  const json = /[/+]json\b/i.test(headers["content-type"] || "");
  const status = response.status();
  // 2xx, or a refusal (4xx: no credentials, a bad one, a missing record): tests assert both.
  const ok = (status >= 200 && status < 300) || (status >= 400 && status < 500);
  const { found } = jsonShapes;
  const key = `${auth} ${path}`;
  // A page's response names its request; a probe's (APIRequestContext) is always a GET.
  const method = typeof response.request === "function" ? response.request().method() : "GET";
  if (url.origin !== origin || method !== "GET" || !json || !ok) return;
  if (found.has(key) || found.size >= 30) return;
  found.set(key, null);
  jsonShapes.reading.push(
    response
      .body()
      .then((raw) => {
        if (raw.length > 2 << 20) throw new Error("too large");
        const body = JSON.parse(raw);
        const shape = { path, status, body: bodyShape(body), auth, ...refusalOf(status, body, headers) };
        found.set(key, shape);
      })
      .catch(() => found.delete(key)),
  );
}

// Where a server-rendered page says what it refused: a flash, an error list, an alert.
const SAID = /<(\w+)\b[^>]*\b(?:class=["'][^"']*\b(?:flash|flashes|errors?|errorlist|alert|alert-\w+|message|messages|msg|notice|invalid-feedback|warning)\b[^"']*["']|role=["']alert["'])[^>]*>([\s\S]{1,400}?)<\/\1>/i;

function messageOf(text, json) {
  // The first message an answer shows: a JSON refusal's, else the first flash or error
  // element's text (tags dropped; its first sentence when longer).
  if (json) {
    try {
      return refusalOf(400, JSON.parse(text), {}).message || "";
    } catch {
      return "";
    }
  }
  const found = SAID.exec(text.slice(0, 200000));
  if (!found) return "";
  const said = found[2].replace(/<[^>]*>/g, " ").replace(/\s+/g, " ").trim();
  return said.length > 120 ? (/^.{2,120}?[.!?](?=\s|$)/.exec(said) || [""])[0] : said;
}

const PROBE_GRACE_MS = 8000; // of explore.py's GRACE_S (30 s): the probes run after the crawl
const FIELD_NAME = /^[\w\[\].-]{1,80}$/;

function emptyForm(method, path) {
  // The names of the fields of a form on an explored page that sends this write, for a
  // request sending them empty (what a browser sends for an empty form, bypassing its own
  // validation); null when no such form, or one with hidden inputs (a CSRF token).
  const kinds = formKinds(method, path);
  return kinds && kinds.map(([name]) => name);
}

function kindOf(field) {
  // What an account form's field takes: a password, an e-mail address, else a user name.
  if (field.type === "password") return "password";
  return field.type === "email" || /e-?mail/i.test(`${field.label} ${field.name}`) ? "email" : "username";
}

function formKinds(method, path) {
  // [name, kind] of the fields of the page's form that sends this write (see emptyForm).
  if (method !== "POST") return null;
  for (const found of pages) {
    for (const form of found.forms || []) {
      let target;
      try {
        const here = origin + (found.landed || found.path);
        target = new URL(form.action || here, here);
      } catch {
        continue;
      }
      if (target.origin !== origin || target.pathname !== path || form.method !== "post") continue;
      const kept = form.fields.filter((f) => !["checkbox", "radio", "file"].includes(f.type));
      const names = kept.map((f) => f.name);
      if (form.hidden || !names.length || !names.every((n) => FIELD_NAME.test(n))) return null;
      const seen = new Set();
      return kept.filter((f) => !seen.has(f.name) && seen.add(f.name)).slice(0, 20).map((f) => [f.name, kindOf(f)]);
    }
  }
  return null;
}

async function answerOf(requests, method, path, body) {
  // The answer to one write (``requests``: an APIRequestContext), redirects followed by hand
  // (to know there was one, as the test's request follows them): {answer, redirected,
  // text}, answer null when none came.
  let answer = await requests
    .fetch(origin + path, { method, ...body, timeout: 5000, maxRedirects: 0 })
    .catch(() => null);
  let redirected = false;
  for (let hops = 0; answer && answer.status() >= 300 && answer.status() < 400 && hops < 5; hops++) {
    const next = new URL(answer.headers()["location"] || "/", answer.url());
    if (next.origin !== origin) break;
    redirected = true;
    answer = await requests.get(next.href, { timeout: 5000, maxRedirects: 0 }).catch(() => null);
  }
  const text = answer ? await answer.text().catch(() => "") : "";
  return { answer, redirected, text };
}

// Account probes (a sign-up route's form, no CSRF token): a new account signed up twice
// ("taken": what the second answer says), and, once signed up, signed in with a wrong
// password ("wrong_password"), in a request context of their own (no session).
const ACCOUNT = { username: (t) => `amtp_${t}`, email: (t) => `amtp.${t}@${config.email_domain}` };
const account = { fields: null };

async function probeAccount(method, path, payload) {
  const kinds = formKinds(method, path);
  if (!kinds || !kinds.some(([, k]) => k === "password")) return null;
  if (payload === "wrong_password" && !account.fields) return null;
  const tag = trialCfg.tag;
  const secret = { taken: `Pw-${tag}-9x!`, no_password: "", wrong_password: `Wrong-${tag}-1x!` };
  const value = (kind, wrong) => (kind === "password" ? (wrong ? secret[payload] : secret.taken) : ACCOUNT[kind](tag));
  const form = (wrong) => Object.fromEntries(kinds.map(([n, k]) => [n, value(k, wrong)]));
  const alone = await pwRequest.newContext({ baseURL: config.base_url, proxy: config.proxy });
  try {
    if (payload === "taken") {
      const first = await answerOf(alone, method, path, { form: form(false) });
      if (!first.answer || first.answer.status() >= 400) return null;
      account.fields = kinds;
      const again = await answerOf(alone, method, path, { form: form(false) });
      const firstAt = new URL(first.answer.url());
      return { ...again, kinds, signed_up_to: firstAt.origin === origin ? firstAt.pathname : "" };
    }
    return { ...(await answerOf(alone, method, path, { form: form(true) })), kinds };
  } finally {
    await alone.dispose().catch(() => {});
  }
}

async function probeWrites(context) {
  // The writes the generated tests send (config.writes: method and path, an empty JSON body,
  // or the fields of the page's form sent empty), sent once in this session: what each
  // answered, where it ended, what it said.
  const out = [];
  for (const [method, path, payload] of (config.writes || []).slice(0, 12)) {
    // A few single requests, after the crawl: they may use part of the box's grace (GRACE_S).
    if (Date.now() > deadline + PROBE_GRACE_MS) break;
    if (payload === "taken" || payload === "no_password" || payload === "wrong_password") {
      const probed = await probeAccount(method, path, payload).catch(() => null);
      if (!probed || !probed.answer) continue;
      const { answer, redirected, kinds } = probed;
      const after = new URL(answer.url());
      out.push({
        method,
        path,
        payload,
        fields: kinds.map(([name]) => name),
        kinds: kinds.map(([, kind]) => kind),
        status: answer.status(),
        path_after: after.origin === origin ? after.pathname : "",
        signed_up_to: probed.signed_up_to || "",
        redirected,
        message: messageOf(probed.text, false),
      });
      continue;
    }
    // A sign-in route is also sent a username and password no account has (a form).
    const fields = payload === "credentials" ? null : emptyForm(method, path);
    const empty = fields ? { form: Object.fromEntries(fields.map((n) => [n, ""])) } : { data: {} };
    const body = payload === "credentials" ? { form: config.credentials } : empty;
    const { answer, redirected, text } = await answerOf(context.request, method, path, body);
    if (!answer) continue;
    const after = new URL(answer.url());
    const json = /[/+]json\b/i.test(answer.headers()["content-type"] || "");
    const record = {
      method,
      path,
      payload: payload === "credentials" ? "credentials" : fields ? "form" : "empty",
      fields: fields || [],
      status: answer.status(),
      path_after: after.origin === origin ? after.pathname : "",
      redirected,
      message: messageOf(text, json),
    };
    out.push(record);
    // Logged in by a recipe: the same write without a session, kept where it ends elsewhere
    // (a login page): what the app answers a visitor who is not signed in.
    if (config.login && payload !== "credentials") {
      const gone = await signedOut(method, path, body).catch(() => null);
      if (gone && gone.path_after !== record.path_after) out.push({ ...record, ...gone });
    }
  }
  return out;
}

async function signedOut(method, path, body) {
  const alone = await pwRequest.newContext({ baseURL: config.base_url, proxy: config.proxy });
  try {
    const { answer, redirected } = await answerOf(alone, method, path, body);
    if (!answer) return null;
    const after = new URL(answer.url());
    const path_after = after.origin === origin ? after.pathname : "";
    return { payload: "signed_out", status: answer.status(), path_after, redirected, message: "" };
  } finally {
    await alone.dispose().catch(() => {});
  }
}

async function probeBearer(context, token) {
  // A GET that asked for a bearer token (401, WWW-Authenticate: Bearer) is asked again with a
  // token it cannot have issued, and with another scheme: what a user's bad token gets. With
  // the API token of the repository's token path, every GET refused for want of credentials
  // (401, 403) is asked again with it: what the test account gets.
  await Promise.allSettled(jsonShapes.reading);
  const shapes = [...jsonShapes.found.values()].filter((r) => r && r.auth === "none");
  const refused = shapes.filter((r) => r.status === 401 || r.status === 403).slice(0, 10);
  for (const { path } of token ? refused : []) {
    if (Date.now() > deadline + PROBE_GRACE_MS) return;
    const answer = await context.request
      .get(origin + path, { headers: { Authorization: `Bearer ${token}` }, timeout: 5000, maxRedirects: 0 })
      .catch(() => null);
    if (answer) recordJson(answer, "token");
  }
  const wanted = shapes.filter((r) => r.status === 401 && r.scheme === "bearer");
  for (const { path } of wanted.slice(0, 5)) {
    for (const [auth, value] of [["invalid_bearer", "Bearer amtp-invalid-token"], ["basic", "Basic YW10cDphbXRw"]]) {
      if (Date.now() > deadline + PROBE_GRACE_MS) return;
      const answer = await context.request
        .get(origin + path, { headers: { Authorization: value }, timeout: 5000, maxRedirects: 0 })
        .catch(() => null);
      if (answer) recordJson(answer, auth);
    }
  }
}

async function probeKey(context, key) {
  // An API whose key the source names (config.api_key: where the key goes, keys the source
  // lists, the source's routes with a parameter sampled, a route under its prefix that
  // cannot exist): each GET refused without credentials (400, 401, 403) and each of those
  // paths, asked without a key, with a key no app issued and with the source's first key.
  await Promise.allSettled(jsonShapes.reading);
  const shapes = [...jsonShapes.found.values()].filter((r) => r && r.auth === "none");
  const refused = shapes.filter((r) => [400, 401, 403].includes(r.status)).map((r) => r.path);
  const paths = [...new Set([...refused, ...key.paths])].slice(0, 10);
  // The repository's own key (key.setting: the login password) is recorded as "token": the
  // credential the setup project hands the tests.
  const given = key.setting ? ["token", process.env.AMTP_E2E_PASSWORD || null] : ["key", key.keys[0] ?? null];
  const ways = [["none", null], ["invalid_key", "amtp-invalid-key"], given];
  for (const path of [...paths, ...(key.unknown ? [key.unknown] : [])]) {
    for (const [auth, value] of ways) {
      if (Date.now() > deadline + PROBE_GRACE_MS) return;
      if ((auth !== "none" && value === null) || (auth === "none" && refused.includes(path))) continue;
      if (path === key.unknown && auth !== given[0]) continue;
      const url = new URL(origin + path);
      const headers = {};
      if (value !== null && key.in === "header") headers[key.name] = value;
      else if (value !== null) url.searchParams.set(key.name, value);
      const answer = await context.request
        .get(url.href, { headers, timeout: 5000, maxRedirects: 0 })
        .catch(() => null);
      if (answer) recordJson(answer, auth);
    }
  }
}

async function jsonAnswers() {
  await Promise.allSettled(jsonShapes.reading);
  return [...jsonShapes.found.values()].filter(Boolean);
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
page.on("response", recordJson);

let token = "";
if (config.login) {
  try {
    if (config.login.token_path) token = await apiToken(context, config.login);
    else if (!config.login.key_in) await logIn(page, config.login); // a key: probeKey sends it
  } catch (error) {
    const login_error = await seen(page, error);
    await browser.close();
    fs.writeFileSync("app_map.json", JSON.stringify({ pages: [], login_error }));
    process.exit(0);
  }
}

// Sign-up (config.signup: no login recipe, signup.mjs): the crawl goes on signed in.
const signup = { signedIn: false, record: null };
const signupCtx = {
  left: () => Math.max(1000, Math.min(config.page_timeout_ms, deadline - Date.now())),
  forms,
  value: () => `AMTP ${trialCfg.tag}`,
};

fs.mkdirSync("shots", { recursive: true });
const queue = config.start_paths.filter((p) => !leaves(p)).map((path) => ({ path, depth: 0 }));
const visited = new Set(config.start_paths);
const pages = [];
let shots = 0; // screenshot names: a page visited again signed in gets a new one
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
  // Queued before signing up, a path that logs out is left once signed in.
  if (leaves(path)) continue;
  let found;
  try {
    found = { ...(await visit(page, path, shots++, errors)), depth };
  } catch (error) {
    found = { path, depth, status: 0, error: String(error.message || error).slice(0, 500) };
  }
  pages.push(found);
  if (config.signup) await trySignUp(page, found, pages, queue, signup, signupCtx);
  for (const link of found.links || []) {
    if (depth + 1 <= config.max_depth && !visited.has(link) && !leaves(link)) {
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
const trials = [];
for (const chosen of trialForms(pages)) {
  if (deadline - Date.now() < 5000) break;
  try {
    trials.push(await trial(page, chosen));
  } catch (error) {
    const said = String(error.message || error).split("\n")[0].slice(0, 500);
    trials.push({ path: chosen.path, form: chosen.index, submit: chosen.form.submit, error: said });
  }
}
const interactions = await interactionTrials(page, pages, config.interactions, origin, deadline);
await probeBearer(context, token).catch(() => {});
if (config.api_key) await probeKey(context, config.api_key).catch(() => {});
// Signed up with a throwaway account, exploration answers in a session that is not the
// tests' (their setup signs up an account of its own): what a write answered then would be
// no fact about theirs. Not signed up (no sign-up form met), the sessions are alike.
const ownSession = config.login || !signup.signedIn;
const writes = ownSession ? await probeWrites(context).catch(() => []) : [];
const apis = await jsonAnswers();
await browser.close();
fs.writeFileSync(
  "app_map.json",
  JSON.stringify({
    pages,
    stopped,
    unvisited: queue.length,
    unknown_path_status: unknownPathStatus,
    trials,
    interactions,
    apis,
    writes,
    signup: signup.record,
  }),
);
