// Runs first inside an app's box (verification/boot): as verification/box/entry.mjs, a TCP listener
// on loopback piping to the worker's allow-listing proxy (the one way out), plus, when an app
// socket is named, a Unix socket in the box's work directory piping to the app's port on the
// box's loopback: the worker's only way in. Then the command, whose exit code it returns.
import net from "node:net";
import fs from "node:fs";
import { spawn } from "node:child_process";

const [socketPath, port, appSocket, appPort, ...command] = process.argv.slice(2);

function pipe(listener, connect) {
  return net.createServer((client) => {
    const upstream = connect();
    client.pipe(upstream).pipe(client);
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
  }).listen(...listener);
}

// The app's port on 127.0.0.1, else on ::1 (an app bound to "localhost" may be on either).
function toApp(client, hosts = ["127.0.0.1", "::1"]) {
  const upstream = net.connect(Number(appPort), hosts[0]);
  let connected = false;
  upstream.once("connect", () => {
    connected = true;
    client.pipe(upstream).pipe(client);
  });
  upstream.on("error", () => {
    if (!connected && hosts.length > 1) return toApp(client, hosts.slice(1));
    client.destroy();
  });
  client.on("error", () => upstream.destroy());
}

// The recipe's services (verification/boot/services.py): "port=socket;…", each a listener on the box's
// loopback piping to the service's Unix socket in the work directory.
function forward(listening) {
  const pairs = (process.env.AMTP_FORWARDS || "").split(";").filter(Boolean);
  let left = pairs.length;
  if (!left) return listening();
  for (const pair of pairs) {
    const [servicePort, servicePath] = pair.split("=");
    pipe([Number(servicePort), "127.0.0.1"], () => net.connect(servicePath)).on("listening", () => {
      if (--left === 0) listening();
    });
  }
}

function run() {
  const child = spawn(command[0], command.slice(1), { stdio: "inherit" });
  child.on("exit", (code, signal) => process.exit(code ?? (signal ? 128 : 1)));
}

pipe([Number(port), "127.0.0.1"], () => net.connect(socketPath)).on("listening", () => {
  if (appSocket === "-") return forward(run);
  fs.rmSync(appSocket, { force: true });
  net.createServer((client) => toApp(client)).listen(appSocket).on("listening", () => forward(run));
});
