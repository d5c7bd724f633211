// Runs first inside the sandbox: a TCP listener on loopback that pipes every connection to
// the worker's allow-listing proxy (a Unix socket bound in), then the command given, whose exit
// code it returns. The sandbox's network namespace has only loopback, so this bridge is the one
// way out, and the proxy decides what it reaches. With AMTP_VERDICT_FD, the descriptor of the
// verdict's pipe (verification/verdict.py) is handed to the command alone, as its fd 3,
// and closed here: only the Playwright runner (runner.mjs) holds it.
import fs from "node:fs";
import net from "node:net";
import { spawn } from "node:child_process";

const [socketPath, port, ...command] = process.argv.slice(2);
const verdict = process.env.AMTP_VERDICT_FD ? Number(process.env.AMTP_VERDICT_FD) : null;
delete process.env.AMTP_VERDICT_FD;
const stdio = verdict === null ? "inherit" : ["inherit", "inherit", "inherit", verdict];
const bridge = net.createServer((client) => {
  const upstream = net.connect(socketPath);
  client.pipe(upstream).pipe(client);
  client.on("error", () => upstream.destroy());
  upstream.on("error", () => client.destroy());
});
bridge.listen(Number(port), "127.0.0.1", () => {
  const child = spawn(command[0], command.slice(1), { stdio });
  if (verdict !== null) fs.closeSync(verdict);
  child.on("exit", (code, signal) => process.exit(code ?? (signal ? 128 : 1)));
});
