// Interaction trials (imported by explore.mjs, runs inside the sandbox): what a user does on a
// page whose input is not in a <form>. On a few live pages, each text field outside any form is
// typed into with the run's test value and sent with Enter; when the value then shows (an item
// was created), a second item is typed with spaces before it (where does the list put it? is it
// saved trimmed?), edited with spaces around its text (saved trimmed?) and emptied (does an empty edit remove it?), then the first item is
// tried as a user would: a page-level checkbox named by its <label> ("Mark all as complete")
// clicked twice, its own checkbox toggled, the page opened again in another tab (is the item
// kept?), the page's filter links (same page, another #hash or
// ?query) clicked, a double-click to edit it (Enter saves, Escape cancels, leaving the field
// saves), then its own delete button, so exploration leaves nothing behind. Only the item the run created is changed or deleted. Each action hands back the page's accessibility snapshot before and after and the
// URL after; the worker (verification/exploration/interactions.py) works out what changed and
// trusts nothing here. Bounded by config.interactions.max and the deadline.

// An item's delete button: "Delete", "Remove todo", or a lone "×" drawn by CSS.
const DELETE = /^(delete|remove|destroy)\b|^[×✕✖x]$/i;
// A focused field; the same selector as the generated test's (agents/offline/journey_code.py).
const FOCUSED = "input:focus, textarea:focus, [contenteditable]:focus";
const NONE = Symbol("no such action on this app");
// A page-level button that removes the marked items: "Clear completed", "Delete selected".
const DELETE_ALL = /^(clear|delete|remove|archive)\b/i;
const BUTTON = /^\s*- button "((?:[^"\\]|\\.)*)"/;

function buttonsOf(snapshot) {
  // The names of the named buttons of an accessibility snapshot.
  const names = [];
  for (const line of (snapshot || "").split("\n")) {
    const match = BUTTON.exec(line);
    if (match) names.push(match[1]);
  }
  return names;
}
const ROLE_NAME = /^- (\w+)(?: "((?:[^"\\]|\\.)*)")?/;

function url(page, origin) {
  // The page's path, query and #/hash route (a fragment that is not a route is dropped).
  const here = new URL(page.url());
  if (here.origin !== origin) return "";
  return here.pathname + here.search + (/^#!?\//.test(here.hash) ? here.hash : "");
}

export async function settle(page, snap, before, rounds = 8) {
  // The page differs from before and two snapshots agree, or rounds * 250 ms passed.
  let after = before;
  for (let i = 0; i < rounds; i++) {
    await page.waitForTimeout(250);
    const now = await snap();
    if (now && now !== before && now === after) break;
    after = now;
  }
  return after;
}

async function roleName(locator) {
  // The [role, accessible name] of one element, as its own accessibility snapshot says.
  const line = (await locator.ariaSnapshot({ timeout: 2000 }).catch(() => "")).split("\n")[0];
  const match = ROLE_NAME.exec(line.trim());
  if (!match) return ["", ""];
  try {
    return [match[1], match[2] ? JSON.parse(`"${match[2]}"`) : ""];
  } catch {
    return [match[1], ""];
  }
}

async function looseFields(page, limit) {
  // [role, name] of the visible, named text fields that no <form> holds.
  const fields = page.locator(
    "input:not(form input):not([type]), input[type=text]:not(form input)," +
      " input[type=search]:not(form input), textarea:not(form textarea)",
  );
  const out = [];
  for (const field of (await fields.all()).slice(0, 10)) {
    if (!(await field.isVisible().catch(() => false))) continue;
    const [role, name] = await roleName(field);
    if (["textbox", "searchbox", "combobox"].includes(role) && name && name.length <= 120) {
      out.push([role, name]);
    }
    if (out.length >= limit) break;
  }
  return out;
}

function itemOf(page, value, control) {
  // The created item: the innermost element holding both its text and a control of that kind
  // (the generated test finds it the same way: agents/offline/journey_code.py).
  return page
    .locator("body *")
    .filter({ hasText: value })
    .filter({ has: page.getByRole(control) })
    .last();
}

async function filterLinks(page, origin, limit) {
  // [name, address] of the links that stay on this page and change its #hash or ?query.
  const here = new URL(page.url());
  const hrefs = await page.$$eval("a[href]", (as) => as.map((a) => [a.innerText, a.href]));
  const out = [];
  for (const [text, href] of hrefs) {
    let target;
    try {
      target = new URL(href);
    } catch {
      continue;
    }
    const name = (text || "").trim();
    const same = target.origin === origin && target.pathname === here.pathname;
    const moves = target.hash !== here.hash || target.search !== here.search;
    if (same && moves && name && name.length <= 120 && !out.some(([n]) => n === name)) {
      out.push([name, href]);
    }
    if (out.length >= limit) break;
  }
  return out;
}

export async function interactionTrials(page, pages, cfg, origin, deadline) {
  const out = [];
  if (!cfg || !cfg.max) return out;
  const value = `AMTP ${cfg.tag}`;
  const second = `AMTP2 ${cfg.tag}`; // holds no "AMTP <tag>": the first item's text stays its own
  let hides = false; // the item's text hid while its edit field was open (edit())
  const left = () => Math.max(1000, Math.min(cfg.step_timeout_ms, deadline - Date.now()));
  const room = () => out.length < cfg.max && deadline - Date.now() > 3000;
  const snap = () => page.locator("body").ariaSnapshot({ timeout: 5000 }).catch(() => "");
  const open = async (path) => {
    await page.goto(path, { timeout: left() });
    await page.waitForLoadState("networkidle", { timeout: 2000 }).catch(() => {});
  };
  // One action: its snapshots and the URL after, or what went wrong (then the item is left);
  // nothing when the app offers no such action (run() answers NONE before acting).
  const act = async (path, action, target, run) => {
    const before = await snap();
    try {
      if ((await run()) === NONE) return false;
    } catch (error) {
      const said = String(error.message || error).split("\n")[0].slice(0, 500);
      out.push({ path, action, target, error: said });
      return false;
    }
    const after = await settle(page, snap, before);
    out.push({ path, action, target, before, after, url_after: url(page, origin), error: "" });
    return true;
  };

  const live = pages.filter((p) => p.status >= 200 && p.status < 300 && !p.error);
  for (const { path } of live.slice(0, cfg.max_pages)) {
    if (!room()) break;
    await open(path).catch(() => {});
    for (const [role, name] of await looseFields(page, 2)) {
      if (!room()) break;
      await open(path).catch(() => {});
      const field = page.getByRole(role, { name, exact: true }).first();
      const typed = await act(path, "enter", { role, name }, async () => {
        await field.fill(value, { timeout: left() });
        await field.press("Enter", { timeout: left() });
      });
      // Whether the field emptied itself for the next entry (a journey can assert it).
      if (typed) out[out.length - 1].cleared = (await field.inputValue().catch(() => "?")) === "";
      const created = page.getByText(value).first();
      if (typed && (await created.isVisible().catch(() => false))) {
        await secondTrials(path, role, name);
        await itemTrials(path, name);
        return out; // one created item, tried whole, is the lifecycle the journey follows
      }
    }
  }
  return out;

  async function shown() {
    return page.getByText(value).first().isVisible().catch(() => false);
  }

  async function secondTrials(path, role, entered) {
    // A second item after the first, typed with spaces before it: where the list puts it
    // ("after": appended) and whether it was saved trimmed; its edit with spaces around the
    // new text (saved trimmed?), then an empty edit (removes it?). It never stays: what the
    // empty edit left, its own delete button removes (not recorded).
    const field = page.getByRole(role, { name: entered, exact: true }).first();
    const typed = async () => {
      await field.fill(`  ${second}`, { timeout: left() });
      await field.press("Enter", { timeout: left() });
    };
    const seen = () => page.getByText(second).first().isVisible().catch(() => false);
    // Trimmed: the text the page holds is the text typed without the spaces around it.
    const trimmed = async (text) => {
      const shown = page.getByText(text, { exact: true }).first();
      const held = await shown.evaluate((el) => el.textContent, null, { timeout: 2000 }).catch(() => null);
      out[out.length - 1].trimmed = held === text;
    };
    if (!room() || !(await act(path, "enter_second", { role, name: entered }, typed))) return;
    if (!(await seen())) return;
    out[out.length - 1].order = await order(value, second);
    await trimmed(second);
    const editing = { role: "textbox", name: "" };
    const edited = `${second} edited`;
    const padded = edit(editing, `  ${edited}  `, "Enter", second, entered);
    if (room() && (await act(path, "edit_second", editing, padded))) await trimmed(edited);
    const emptying = { role: "textbox", name: "" };
    if (room()) await act(path, "empty_edit", emptying, edit(emptying, "", "Enter", second, entered));
    if (await seen()) {
      const own = await deleteButton(second);
      if (own) {
        page.once("dialog", (dialog) => dialog.accept().catch(() => {}));
        await own[0].click({ timeout: left() }).catch(() => {});
      }
    }
  }

  async function order(first, then) {
    // Where the item typed second stands: after the first (appended) or before it.
    const a = await page.getByText(first, { exact: true }).first().elementHandle({ timeout: 2000 }).catch(() => null);
    const b = await page.getByText(then, { exact: true }).first().elementHandle({ timeout: 2000 }).catch(() => null);
    if (!a || !b) return "";
    const follows = await page.evaluate(([x, y]) => Boolean(x.compareDocumentPosition(y) & 4), [a, b]);
    return follows ? "after" : "before";
  }

  async function deleteButton(text) {
    // [button, name] of the item's own delete button (shown once the pointer is over it), else
    // null: the one named as a delete, or the item's only button when it has no name.
    const item = itemOf(page, text, "button");
    await item.hover({ timeout: left() }).catch(() => {});
    const buttons = [];
    for (const button of (await item.getByRole("button").all()).slice(0, 5)) {
      buttons.push([button, (await roleName(button))[1]]);
    }
    const named = buttons.filter(([, name]) => DELETE.test(name.trim()));
    const chosen = named.length === 1 ? named[0] : buttons.length === 1 ? buttons[0] : null;
    return chosen && (!chosen[1] || DELETE.test(chosen[1].trim())) ? chosen : null;
  }

  // Double-click the item showing ``from``, type ``text`` into the field that opened, then
  // ``key`` (none: leave the field). ``entered``: the field items are typed into.
  function edit(target, text, key, from, entered) {
    return async () => {
      await page.getByText(from).first().dblclick({ timeout: left() });
      // The field that took the focus (an app may focus it after its next render), else the
      // one named text field that opened (target.name: the test finds it by that name).
      // The field typed into first, still focused, is no edit field: typing there adds items.
      let field = page.locator(FOCUSED).last();
      const focused = await field.waitFor({ timeout: 2000 }).then(() => true, () => false);
      if (!focused || (await roleName(field))[1] === entered) {
        const opened = [];
        for (const [role, name] of await looseFields(page, 5)) {
          if (role === "textbox" && name !== entered) opened.push(name);
        }
        if (opened.length !== 1) return NONE; // a double-click edits nothing here
        target.name = opened[0];
        field = page.getByRole("textbox", { name: target.name, exact: true });
      }
      const text_ = page.getByText(from);
      hides = (await text_.count()) > 0 && (await text_.first().isHidden().catch(() => false));
      await field.fill(text, { timeout: left() });
      // No key: the user leaves the field (focus moves on), which saves in most list apps.
      if (key) await field.press(key, { timeout: left() });
      else await field.blur({ timeout: left() });
    };
  }

  async function reopened(path) {
    const before = await snap();
    const other = await page.context().newPage();
    try {
      await other.goto(page.url(), { timeout: left() });
      await other.waitForLoadState("networkidle", { timeout: 2000 }).catch(() => {});
      const after = await other.locator("body").ariaSnapshot({ timeout: 5000 }).catch(() => "");
      const own = itemOf(other, value, "checkbox").getByRole("checkbox");
      const checked = (await own.count()) === 1 ? await own.isChecked().catch(() => null) : null;
      const target = { role: "page", name: "" };
      out.push({ path, action: "reload", target, before, after, url_after: url(other, origin), error: "", checked });
    } catch (error) {
      const said = String(error.message || error).split("\n")[0].slice(0, 500);
      out.push({ path, action: "reload", target: { role: "page", name: "" }, error: said });
    } finally {
      await other.close().catch(() => {});
    }
  }

  async function pageToggle(item) {
    // The text of the <label> of the one checkbox outside every list row ("Mark all as
    // complete"), found through the label even when it names no box (a "for" pointing at no
    // id, the click wired by a script): a user clicks the label. Else "".
    const holder = await item.elementHandle({ timeout: 2000 }).catch(() => null);
    if (!holder) return "";
    const texts = await page.evaluate((el) => {
      const found = [];
      for (const box of document.querySelectorAll("input[type=checkbox]")) {
        if (el.contains(box) || box.closest("li, tr, [role=listitem], [role=row]")) continue;
        const byFor = box.id && document.querySelector(`label[for="${CSS.escape(box.id)}"]`);
        const near = [...(box.parentElement?.children || [])].filter((c) => c.tagName === "LABEL");
        const label = byFor || box.closest("label") || (near.length === 1 ? near[0] : null);
        found.push((label?.textContent || "").replace(/\s+/g, " ").trim());
      }
      return found;
    }, holder);
    const text = texts.length === 1 ? texts[0] : "";
    if (!text || text.length > 120 || text.includes(value)) return "";
    return (await page.getByText(text, { exact: true }).count()) === 1 ? text : "";
  }

  async function itemTrials(path, entered) {
    const box = itemOf(page, value, "checkbox").getByRole("checkbox");
    let marked = false; // the buttons marking the item brought (a bulk action: "Clear completed")
    let brought = [];
    // A page-level checkbox ("Mark all as complete"), clicked by its label, twice: whether the
    // item's own box followed each click.
    const all = (await box.count()) === 1 ? await pageToggle(itemOf(page, value, "checkbox")) : "";
    const allBox = page.locator("body *").filter({ has: page.getByText(all, { exact: true }) })
      .filter({ has: page.getByRole("checkbox") }).last().getByRole("checkbox").first();
    const allChecked = async () => {
      if (all) out[out.length - 1].all_checked = await allBox.isChecked({ timeout: 2000 }).catch(() => null);
    };
    if (all && room()) {
      const click = () => page.getByText(all, { exact: true }).click({ timeout: left() });
      const checked = async () => {
        out[out.length - 1].checked = await box.isChecked({ timeout: 2000 }).catch(() => null);
      };
      if (await act(path, "toggle_all", { role: "checkbox", name: all }, click)) {
        await checked();
        if (room() && (await act(path, "untoggle_all", { role: "checkbox", name: all }, click))) {
          await checked();
        }
      }
    }
    if (room() && (await box.count()) === 1) {
      const [, name] = await roleName(box);
      const toggle = () => box.check({ timeout: left() });
      if (await act(path, "toggle", { role: "checkbox", name }, toggle)) {
        await allChecked();
        const { before, after } = out[out.length - 1];
        brought = buttonsOf(after).filter((b) => !buttonsOf(before).includes(b));
        // Undone, then done again: the filters below see a marked item.
        const untoggle = () => box.uncheck({ timeout: left() });
        if (room() && (await act(path, "untoggle", { role: "checkbox", name }, untoggle))) {
          await allChecked();
          marked = room() && (await act(path, "toggle", { role: "checkbox", name }, toggle));
          if (marked) await allChecked();
        }
      }
    }
    // Kept? The same address opened in another tab of this session (the page the trials act
    // on keeps its state: an app that keeps nothing loses nothing here).
    if (room()) await reopened(path);
    const links = await filterLinks(page, origin, 3);
    const filter = async ([name]) => {
      const link = page.getByRole("link", { name, exact: true }).first();
      const classes = async () =>
        ((await link.getAttribute("class", { timeout: 2000 }).catch(() => "")) || "").split(/\s+/);
      const had = await classes();
      if (await act(path, "filter", { role: "link", name }, () => link.click({ timeout: left() }))) {
        // The class the click gave the link ("selected"): how the app marks the current filter.
        const added = (await classes()).filter((c) => c && !had.includes(c));
        if (added.length === 1) out[out.length - 1].class_added = added[0];
      }
    };
    for (const link of links) if (room()) await filter(link);
    // The browser's back button after two filters: the previous filter again.
    if (links.length > 1 && room()) {
      const back = () => page.goBack({ timeout: left() });
      await act(path, "back", { role: "page", name: "" }, back);
    }
    // Back to the first filter (often "All") when the last one hid the item.
    if (links.length && !(await shown())) await filter(links[0]);
    if (!(await shown())) await open(path).catch(() => {});
    const editing = { role: "textbox", name: "" };
    if (room() && (await act(path, "edit", editing, edit(editing, `${value} edited`, "Enter", value, entered)))) {
      out[out.length - 1].hides = hides;
      const cancel = { role: "textbox", name: "" };
      if (room()) await act(path, "cancel_edit", cancel, edit(cancel, `${value} dropped`, "Escape", value, entered));
      const leave = { role: "textbox", name: "" };
      if (room()) await act(path, "blur_edit", leave, edit(leave, `${value} edited again`, "", value, entered));
    }
    // A bulk button marking the item brought ("Clear completed"), when the item is the only
    // marked one on the page (so it removes nothing else), else the item's own delete button.
    const own = itemOf(page, value, "button");
    const bulks = [];
    for (const name of brought.filter((b) => DELETE_ALL.test(b))) {
      const inside = await own.getByRole("button", { name, exact: true }).count();
      if (!inside) bulks.push(name);
    }
    const isChecked = page.getByRole("checkbox", { checked: true });
    const marks = page.locator("li, tr, [role=listitem], [role=row]").filter({ has: isChecked });
    if (marked && bulks.length === 1 && room()) {
      const bulk = page.getByRole("button", { name: bulks[0], exact: true });
      // Lone: the marked rows are this item's alone (a "Mark all" box outside the rows aside).
      const lone = (await box.isChecked().catch(() => false)) &&
        (await marks.count()) === (await marks.filter({ hasText: value }).count());
      if (lone && (await bulk.count()) === 1) {
        page.once("dialog", (dialog) => dialog.accept().catch(() => {}));
        const clear = () => bulk.click({ timeout: left() });
        if ((await act(path, "clear", { role: "button", name: bulks[0] }, clear)) && !(await shown())) {
          return;
        }
      }
    }
    // Its delete button, often shown only while the pointer is over the item.
    const chosen = await deleteButton(value);
    if (chosen) {
      page.once("dialog", (dialog) => dialog.accept().catch(() => {}));
      const [button, name] = chosen;
      await act(path, "delete", { role: "button", name }, () => button.click({ timeout: left() }));
    }
  }
}
