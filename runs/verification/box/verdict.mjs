// The verdict's reporter: runs in Playwright's runner process and writes the results, as one
// JSON object, to fd 3, the write end of a pipe the worker holds the read end of (entry.mjs
// hands it to the runner alone: Node does not pass a descriptor to a child unless told to, so
// Playwright's test workers, the browsers and anything a test starts never hold it). Nothing
// is written to the box's writable space: a spec that rewrites a file there changes nothing.
// The worker checks what arrives against the specs it listed (runs/verification/verdict.py).
import fs from "node:fs";
import path from "node:path";

const VERDICT_FD = 3;
const OUTCOME = { expected: "expected", unexpected: "unexpected", flaky: "flaky", skipped: "skipped" };

export default class VerdictReporter {
  constructor() {
    this.errors = [];
  }

  printsToStdio() {
    return false;
  }

  onBegin(config, suite) {
    this.rootDir = config.rootDir;
    this.suite = suite;
  }

  onError(error) {
    this.errors.push({ message: String(error?.message ?? error) });
  }

  onEnd() {
    const tests = (this.suite?.allTests() ?? []).map((test) => ({
      file: path.relative(this.rootDir, test.location.file).split(path.sep).join("/"),
      title: test.title,
      line: test.location.line,
      status: OUTCOME[test.outcome()] ?? "unexpected",
      expectedStatus: test.expectedStatus,
      results: test.results.map((result) => ({
        status: result.status,
        duration: result.duration,
        startTime: result.startTime?.getTime?.(),
        error: result.error ? { message: String(result.error.message ?? "") } : undefined,
        attachments: result.attachments
          .filter((a) => a.path)
          .map((a) => ({ name: a.name, contentType: a.contentType, path: a.path })),
      })),
    }));
    const verdict = JSON.stringify({ tests, errors: this.errors });
    fs.writeSync(VERDICT_FD, verdict);
    fs.closeSync(VERDICT_FD);
  }
}
