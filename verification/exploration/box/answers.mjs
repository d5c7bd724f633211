// How a form answered, and values adapted to what it said (imported by explore.mjs and
// signup.mjs, in the sandbox). A form that refuses its input says so either through the
// browser's own constraint validation (a field it kept: validationMessage) or with a new line
// of text (a flashed message, an error under a field); a trial then tries once more with
// values fitted to the field's limits (minlength, maxlength, min, max) and to the lengths and
// bounds the message names, in the words of common validators (Django "Ensure this value has
// at least 20 characters", WTForms Length "Field must be between 20 and 50 characters long",
// Rails "is too short (minimum is 20 characters)", express-validator / validator.js
// "must be at least 20 chars long", "Value must be greater than or equal to 5").

// What a form that refused its input says (the words of agents/offline/flows.py's _ERROR).
const REFUSED =
  /\b(error|invalid|required|wrong|fail(ed|s)?|must|not allowed|try again|incorrect|missing|already|taken|exists|too (short|long)|at least|at most|ensure)\b/i;
const BETWEEN = /between\s+(\d{1,4})\s+and\s+(\d{1,4})/i;
const AT_LEAST = /(?:at least|minimum(?: is| of)?|min\.?|no (?:fewer|less) than|greater than or equal to)\s+(\d{1,4})/i;
const AT_MOST = /(?:at most|maximum(?: is| of)?|max\.?|no more than|up to|less than or equal to)\s+(\d{1,4})/i;
const TAKEN = /\b(already|taken|exists|in use|duplicate|unique)\b/i;

export const pageText = (page) =>
  // The page's text by blocks (a flashed message is a line of its own, unlike in a snapshot).
  page.locator("body").innerText({ timeout: 5000 }).catch(() => "");

export async function markSent(form, timeout) {
  // Marks the form element: still marked after the click, the browser kept the page.
  await form.evaluate((el) => (el.amtpSent = true), null, { timeout }).catch(() => {});
}

export async function refusal(page, form, before) {
  // Why the form was not accepted, or "": the browser's own check of a field it kept
  // (validationMessage, with the field's name), else a new line of the page that reads as
  // a refusal. ``before``: the page's text before the form was sent.
  const kept = await form
    .evaluate(
      (el) => {
        const bad = el.amtpSent && [...el.elements].find((f) => f.willValidate && !f.validity.valid);
        return bad ? `${bad.labels?.[0]?.innerText || bad.name || bad.id}: ${bad.validationMessage}` : "";
      },
      null,
      { timeout: 1000 },
    )
    .catch(() => "");
  if (kept) return kept.slice(0, 300);
  const seen = new Set(before.split("\n").map((l) => l.trim()));
  const after = await pageText(page);
  const line = after.split("\n").find((l) => !seen.has(l.trim()) && REFUSED.test(l));
  return (line || "").trim().slice(0, 300);
}

function concerns(said, field, fields) {
  // Whether a message is about this field: it names it, or it names no field of the form.
  const named = (f) => f.label && said.toLowerCase().includes(f.label.toLowerCase());
  return named(field) || !fields.some(named);
}

export function fitted(field, value, said = "", fields = []) {
  // ``value`` within the field's own limits, then within those ``said`` names (when it
  // concerns the field); a value a form called taken gets a different ending.
  const limits = field.limits || {};
  let low = limits.min_length > 0 ? limits.min_length : 0;
  let high = limits.max_length > 0 ? limits.max_length : 10000;
  const asks = said && concerns(said, field, fields) ? said : "";
  const between = BETWEEN.exec(asks);
  const least = between ? between[1] : AT_LEAST.exec(asks)?.[1];
  const most = between ? between[2] : AT_MOST.exec(asks)?.[1];
  if (field.type === "number") {
    let n = Number(value);
    if (limits.min !== "" && limits.min !== undefined && n < Number(limits.min)) n = Number(limits.min);
    if (limits.max !== "" && limits.max !== undefined && n > Number(limits.max)) n = Number(limits.max);
    if (least !== undefined && n < Number(least)) n = Number(least);
    if (most !== undefined && n > Number(most)) n = Number(most);
    return String(Number.isFinite(n) ? n : value);
  }
  if (least !== undefined) low = Math.max(low, Number(least));
  if (most !== undefined) high = Math.min(high, Number(most));
  let out = asks && TAKEN.test(asks) ? `${value}2` : value;
  if (field.type === "email") return out; // its length is the address's: left as it is
  if (out.length < low) out = out.padEnd(low, "x");
  if (out.length > high) out = out.slice(0, Math.max(1, high));
  return out;
}
