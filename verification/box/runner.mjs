// The box's Playwright runner: the one process of the box that holds the verdict's pipe (fd 3,
// which entry.mjs hands to it alone; the worker holds the read end, verification/verdict.py).
//
// No spec's code runs here. Playwright Test's own command line loads every spec file in its
// runner process to list the tests, so code at a spec's top level would run beside the
// reporter. This runner drives Playwright's TestRunner instead (the runner behind its UI mode
// and test server), which loads the specs in a loader process of their own and runs the tests
// in worker processes; this process only dispatches them, and the verdict is its own
// bookkeeping of what the workers reported over their IPC channels. Node hands a child no
// descriptor it was not told to (the loader's and the workers' fd 3 is their IPC channel), and
// this process runs from an execute-only copy of node, which makes the kernel mark it
// non-dumpable: no process of the box may open its /proc/<pid>/fd/*, read or write its memory,
// or trace it (ptrace(2), "Ptrace access mode checking").
//
//   runner.mjs MODULES CONFIG RETRIES TIMEOUT_MS [GREP]
import childProcess from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const VERDICT_FD = 3;
const OUTCOME = { expected: "expected", unexpected: "unexpected", flaky: "flaky", skipped: "skipped" };
const [modules, config, retries, timeoutMs, grep] = process.argv.slice(2);
const require = createRequire(path.join(modules, "amtp-runner.js"));
const { testRunner } = require("playwright/lib/runner");
const { configLoader } = require("playwright/lib/common");

class VerdictReporter {
  constructor() {
    this.errors = [];
    this.sent = false;
  }

  printsToStdio() {
    return false;
  }

  onBegin(config, suite) {
    this.rootDir = config.rootDir;
    this.suite = suite;
    // The TestRunner runs each test once: retries are given here, before the first test is
    // dispatched, and Playwright's dispatcher retries a failed test in a fresh worker as the
    // command line does (whatever a spec's describe.configure asked for).
    for (const test of suite.allTests()) test.retries = Number(retries);
  }

  onError(error) {
    this.errors.push({ message: String(error?.message ?? error) });
  }

  onEnd() {
    this.send();
  }

  send() {
    if (this.sent) return;
    this.sent = true;
    const tests = (this.suite?.allTests() ?? []).map((test) => ({
      file: path.relative(this.rootDir, test.location.file).split(path.sep).join("/"),
      title: test.title,
      line: test.location.line,
      status: OUTCOME[test.outcome()] ?? "unexpected",
      expectedStatus: test.expectedStatus,
      results: test.results
        .filter((result) => result.status !== undefined)
        .map((result) => ({
          status: result.status,
          duration: result.duration,
          // When the attempt began: the worker matches a crash of the app to the test it hit.
          startTime: result.startTime?.getTime?.(),
          error: result.error ? { message: String(result.error.message ?? "") } : undefined,
          attachments: result.attachments
            .filter((a) => a.path)
            .map((a) => ({ name: a.name, contentType: a.contentType, path: a.path })),
        })),
    }));
    fs.writeSync(VERDICT_FD, JSON.stringify({ tests, errors: this.errors }));
    fs.closeSync(VERDICT_FD);
  }
}

// A loader that ends before it is told to stop (a spec that exits at its top level) would leave
// the TestRunner waiting for its answer: the run ends there, without a verdict, as Playwright's
// command line ends when a spec exits while it loads.
const fork = childProcess.fork;
childProcess.fork = function (script, ...rest) {
  const child = fork.call(this, script, ...rest);
  if (String(script).endsWith("loaderProcessEntry.js")) {
    let stopping = false;
    const send = child.send.bind(child);
    child.send = (message, ...more) => {
      stopping ||= message?.method === "__stop__";
      return send(message, ...more);
    };
    child.on("exit", (code) => stopping || process.exit(code || 1));
  }
  return child;
};

const reporter = new VerdictReporter();
const runner = new testRunner.TestRunner(configLoader.resolveConfigLocation(path.resolve(config)), {});
// The command line's globalTimeout (the TestRunner has none): what ran is reported, the tests
// left are skipped, and the error says so in Playwright's words.
const timer = setTimeout(() => {
  reporter.errors.push({ message: `Timed out waiting ${Number(timeoutMs) / 1000}s for the test suite to run` });
  reporter.send();
  process.exit(1);
}, Number(timeoutMs));
await runner.initialize({});
// a spec that fails to load fails the run, as on the command line
const { status } = await runner.runTests(reporter, { grep: grep || undefined, failOnLoadErrors: true });
clearTimeout(timer);
reporter.send();
process.exit(status === "passed" ? 0 : 1);
