// Sign-up when the repository gives no login recipe (imported by explore.mjs, in the sandbox):
// the app's own sign-up form creates a throwaway account whose values the worker generated
// and passes through this process's environment only (AMTP_E2E_USERNAME, AMTP_E2E_EMAIL,
// AMTP_E2E_PASSWORD, and a second account with the suffix _2 for one retry), then its login
// form signs in with it, as a person would: fields by label, the button by role and name.
// What it reports is checked again by the worker (verification/exploration/signup.py).
import { markSent, pageText, refusal } from "./answers.mjs";

const SIGN_UP = /sign[\s_-]?up|regist|create (an |your )?account|join|enrol/i;
const LOG_OUT = /log[\s_-]?out|sign[\s_-]?out|abmelden/i;
const passwords = (form) => form.fields.filter((f) => f.type === "password").length;
const described = (found, form) => `${found.path} ${form.action} ${form.submit}`;

export function signupForm(found) {
  // The first form of a 2xx page with a password field whose button, action or path reads
  // as a sign-up ("Register", "/auth/register", "Create account").
  if (!(found.status >= 200 && found.status < 300)) return null;
  const index = (found.forms || []).findIndex(
    (form) => passwords(form) >= 1 && SIGN_UP.test(described(found, form)),
  );
  return index < 0 ? null : { path: found.path, index, form: found.forms[index] };
}

export function loginForm(found) {
  // A form with one password field that does not read as a sign-up.
  const index = (found.forms || []).findIndex(
    (form) => passwords(form) === 1 && !SIGN_UP.test(described(found, form)),
  );
  return index < 0 ? null : { path: found.path, index, form: found.forms[index] };
}

export function accounts(env) {
  const one = (suffix) => ({
    username: env[`AMTP_E2E_USERNAME${suffix}`] || "",
    email: env[`AMTP_E2E_EMAIL${suffix}`] || "",
    password: env[`AMTP_E2E_PASSWORD${suffix}`] || "",
  });
  return [one(""), one("_2")].filter((a) => a.username && a.email && a.password);
}

function kindOf(field) {
  const text = `${field.label} ${field.name}`;
  if (field.type === "password") return "password";
  if (field.type === "email" || /e-?mail/i.test(text)) return "email";
  if (/user|login|handle|nick/i.test(text)) return "username";
  return "";
}

function fieldIn(form, field) {
  // By its label within the form; a field without one by its name.
  if (field.label) return form.getByLabel(field.label, { exact: true });
  return form.locator(`[name="${CSS_ESCAPE(field.name)}"]`);
}

const CSS_ESCAPE = (text) => text.replace(/["\\]/g, "\\$&");

async function fillForm(page, at, account, ctx) {
  // Fills every field it can; what it typed for whom: "username" or "email" in the user field.
  const form = page.locator("form").nth(at.index);
  let user = "";
  for (const field of at.form.fields) {
    if (!field.label && !field.name) continue;
    const input = fieldIn(form, field);
    if ((await input.count()) !== 1) continue;
    const kind = kindOf(field);
    if (kind) {
      await input.fill(account[kind], { timeout: ctx.left() });
      if (kind !== "password") user ||= kind;
    } else if (field.type === "checkbox" && field.required) {
      await input.check({ timeout: ctx.left() });
    } else if (field.type.startsWith("select") && field.required) {
      const options = await input.locator("option").evaluateAll((os) =>
        os.filter((o) => o.value !== "").map((o) => o.label),
      );
      if (options.length) await input.selectOption({ label: options[0] }, { timeout: ctx.left() });
    } else if (["text", "textarea", "tel", "url", "number"].includes(field.type) && field.required) {
      await input.fill(ctx.value(field), { timeout: ctx.left() });
    }
  }
  return { form, user };
}

async function submit(page, at, form, ctx) {
  const before = await pageText(page);
  await markSent(form, ctx.left());
  const button = form.getByRole("button", { name: at.form.submit, exact: true });
  await ((await button.count()) === 1 ? button : form.locator("[type=submit]").first()).click({
    timeout: ctx.left(),
  });
  await page.waitForLoadState("load", { timeout: ctx.left() }).catch(() => {});
  await page.waitForLoadState("networkidle", { timeout: 2000 }).catch(() => {});
  return before;
}

async function signedIn(page, walls, ctx) {
  // Behind the login wall a path showed, or else a control that signs out.
  if (walls.length) {
    await page.goto(walls[0], { timeout: ctx.left() });
    const now = new URL(page.url());
    return now.pathname + now.search === walls[0] || now.pathname === walls[0];
  }
  const out = page.getByRole("link", { name: LOG_OUT }).or(page.getByRole("button", { name: LOG_OUT }));
  return (await out.count()) > 0;
}

export async function signUpAndIn(page, at, ctx) {
  // ctx: { left, value, forms, loginAt, walls }. The record of what happened; the
  // account's values are never in it (the worker scrubs it again all the same).
  const record = { path: at.path, form: at.form, login_path: "", login_form: null };
  Object.assign(record, { signed_in: false, retried: false, refused: "", error: "" });
  const list = accounts(process.env);
  if (!list.length) return { ...record, error: "no account to sign up with" };
  let account = list[0];
  let user = "";
  for (let attempt = 0; attempt < list.length; attempt++) {
    account = list[attempt];
    await page.goto(at.path, { timeout: ctx.left() });
    const filled = await fillForm(page, at, account, ctx);
    user = filled.user;
    const before = await submit(page, at, filled.form, ctx);
    const stayed = new URL(page.url()).pathname === new URL(at.path, page.url()).pathname;
    const said = stayed ? await refusal(page, filled.form, before) : "";
    if (!said) break;
    record.refused = said;
    if (attempt + 1 === list.length) return { ...record, error: "the sign-up form refused both accounts" };
    record.retried = true; // once more, with the second account's shape and values
  }
  if (await signedIn(page, ctx.walls, ctx)) return { ...record, signed_in: true };
  // Not signed in by the sign-up itself: the login form of the page it led to, else one seen.
  const here = { path: new URL(page.url()).pathname, status: 200, forms: await ctx.forms(page) };
  const login = loginForm(here) || ctx.loginAt();
  if (!login) return { ...record, error: "no login form found after signing up" };
  if (login.path !== here.path) await page.goto(login.path, { timeout: ctx.left() });
  const form = page.locator("form").nth(login.index);
  for (const field of login.form.fields) {
    const input = fieldIn(form, field);
    if ((!field.label && !field.name) || (await input.count()) !== 1) continue;
    const kind = kindOf(field) || (field.type === "text" ? user || "username" : "");
    // An account signed up by e-mail alone logs in with it wherever a user name is asked.
    const value = kind === "username" && user === "email" ? account.email : account[kind];
    if (kind) await input.fill(value, { timeout: ctx.left() });
  }
  await submit(page, login, form, ctx);
  Object.assign(record, { login_path: login.path, login_form: login.form });
  const ok = await signedIn(page, ctx.walls, ctx);
  return { ...record, signed_in: ok, error: ok ? "" : "the login with the new account did not sign in" };
}

export async function trySignUp(page, found, pages, queue, state, base) {
  // Signs up on ``found`` when it is the first sign-up form met (``state.record`` says how
  // it went); once signed in, the pages recorded so far (signed out) are taken out of
  // ``pages`` and queued again, to be recorded as the signed-in tests will see them: a page
  // that sent the browser to a login shows itself, a sign-in page may send it home.
  const at = state.record ? null : signupForm(found);
  if (!at) return;
  const walls = pages.filter((p) => p.login_redirect).map((p) => p.path);
  const loginAt = () => pages.map(loginForm).find(Boolean) || null;
  try {
    state.record = await signUpAndIn(page, at, { ...base, walls, loginAt });
  } catch (error) {
    const said = String(error.message || error).split("\n")[0].slice(0, 300);
    state.record = { path: at.path, form: at.form, login_path: "", login_form: null };
    Object.assign(state.record, { signed_in: false, retried: false, refused: "", error: said });
  }
  state.signedIn = state.record.signed_in;
  if (!state.signedIn) return;
  for (let i = pages.length - 1; i >= 0; i--) {
    queue.unshift({ path: pages[i].path, depth: pages[i].depth });
    pages.splice(i, 1);
  }
}
