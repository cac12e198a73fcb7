// Runs the browser viewer in headless Chromium and collects what it drew, for
// the screen tests (tests/viewer/screen_check.cpp, built as
// test_web_screen_NAME) and for measuring the page by hand:
//
//   node tests/web/drive.js --site build-web --out DIR --query 'scene=compare&frames=4'
//        [--size 1600x1000] [--upload FILE] [--fetch MEMFS_PATH=HOST_PATH]... [--timeout S]
//
// It serves --site on 127.0.0.1 (web/serve.js, a free port; --upload FILE is
// served as /upload/NAME), starts Chromium with WebGL on SwiftShader (software,
// no GPU needed) and talks to it over the DevTools protocol on a pipe
// (--remote-debugging-pipe: no port, no WebSocket, nothing to install). It
// loads index.html?QUERY, waits until the viewer reports the end of its
// counted frames (window.attograd.exitCode), photographs the page into
// DIR/screen.png, copies each --fetch file out of the page's file system and
// writes the viewer's output to stdout. Exits with the viewer's exit code.
//
// Starting and closing Chromium takes about 1.5 s, as long as a short page
// test itself, so a test program's pages share one (tests/web/run.sh):
//
//   node tests/web/drive.js --keep-open SOCKET --site build-web
//
// keeps the server and Chromium running and answers page requests on the
// Unix socket SOCKET until it is stopped (SIGTERM); the first form, run with
// ATTOGRAD_WEB_DRIVE=SOCKET in its environment, sends its page there instead
// of starting a Chromium of its own. Each page gets a tab of its own, closed
// after it. The pages share the browser's cache: the server answers "not
// modified" for files it sent before (web/serve.js), and Chromium then reuses
// the .data it holds and the code it compiled from the .wasm, which brings a
// page's first frame from about 2.1 s to 1.2 s. The viewer keeps nothing in
// the browser's storage, so nothing else passes from page to page.
"use strict";
const childProcess = require("child_process");
const fs = require("fs");
const net = require("net");
const os = require("os");
const path = require("path");
const {serve} = require("../../web/serve.js");

function parseArgs(argv) {
  const args = {size: "1600x1000", fetch: [], timeout: 120, upload: null};
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, ""), value = argv[i + 1];
    if (value === undefined) throw new Error(`--${key} needs a value`);
    if (key === "fetch") args.fetch.push(value);
    else args[key] = value;
  }
  const needed = args["keep-open"] ? ["site"] : ["site", "out", "query"];
  for (const name of needed) {
    if (!args[name]) throw new Error(`--${name} is required`);
  }
  // Host paths absolute, so that a kept-open driver started elsewhere finds them.
  for (const name of ["site", "out", "upload"]) {
    if (args[name]) args[name] = path.resolve(args[name]);
  }
  args.fetch = args.fetch.map((pair) => {
    const [from, to] = pair.split("=");
    return {from, to: path.resolve(to)};
  });
  return args;
}

// The DevTools protocol over Chromium's pipe: JSON messages ended by '\0',
// we write to its fd 3 and read from its fd 4.
class Devtools {
  constructor(toBrowser, fromBrowser) {
    this.toBrowser = toBrowser;
    this.nextId = 1;
    this.waiting = new Map();
    let buffered = "";
    fromBrowser.on("data", (chunk) => {
      buffered += chunk.toString("utf8");
      let end;
      while ((end = buffered.indexOf("\0")) >= 0) {
        const message = JSON.parse(buffered.slice(0, end));
        buffered = buffered.slice(end + 1);
        const reply = this.waiting.get(message.id);
        if (!reply) continue;  // an event: none is listened to
        this.waiting.delete(message.id);
        if (message.error) reply.reject(new Error(`${reply.method}: ${message.error.message}`));
        else reply.resolve(message.result);
      }
    });
  }

  send(method, params = {}, sessionId = undefined) {
    const id = this.nextId++;
    this.toBrowser.write(JSON.stringify({id, method, params, sessionId}) + "\0");
    return new Promise((resolve, reject) => this.waiting.set(id, {resolve, reject, method}));
  }
}

function chromiumFlags(width, height, profile) {
  const flags = [
    "--headless", "--remote-debugging-pipe", `--user-data-dir=${profile}`, "--log-level=3",
    `--window-size=${width},${height}`, "--force-device-scale-factor=1", "--hide-scrollbars",
    // WebGL 2 on SwiftShader, Chromium's software renderer: no GPU, no display.
    "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
    // A closed network refuses Chromium's own connections: make none.
    "--no-first-run", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--disable-quic", "--disable-extensions", "--mute-audio",
    // Keep animation frames coming although no one looks at the page.
    "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
    "--disable-backgrounding-occluded-windows",
  ];
  // Chromium's sandbox refuses to run as root (containers, CI).
  if (process.getuid && process.getuid() === 0) flags.push("--no-sandbox");
  return flags;
}

// The server and the browser the pages run in. `routes` are the server's
// extra URL paths (the uploads), looked up at each request.
async function startBrowser(site, size) {
  const routes = {};
  const server = await serve(site, 0, routes);
  const [width, height] = size.split("x").map(Number);
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "attograd-chromium-"));
  const chromium = process.env.CHROMIUM || "chromium";
  // Its own process group, so that its renderer and GPU processes can be
  // stopped with it.
  const browser = childProcess.spawn(chromium, chromiumFlags(width, height, profile),
                                     {stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"],
                                      detached: true});
  let log = "";
  browser.stderr.on("data", (chunk) => { log += chunk; });
  const exited = new Promise((resolve) => browser.once("exit", resolve));
  const devtools = new Devtools(browser.stdio[3], browser.stdio[4]);
  return {
    routes, devtools, exited,
    origin: `http://127.0.0.1:${server.address().port}`,
    logTail: () => log.slice(-4000),
    // Chromium writes its profile until all its processes are gone: close it
    // (Browser.close, or kill the group after 5 s), then remove the folder.
    async close() {
      server.close();
      devtools.send("Browser.close").catch(() => {});
      const killer = setTimeout(() => process.kill(-browser.pid, "SIGKILL"), 5000);
      await exited;
      clearTimeout(killer);
      try {
        fs.rmSync(profile, {recursive: true, force: true, maxRetries: 10, retryDelay: 100});
      } catch (error) {
        console.error(`drive.js: left ${profile}: ${error.message}`);
      }
    },
  };
}

// One page: loads it in a tab of its own, waits for the viewer's
// exit code (at most args.timeout seconds), writes DIR/screen.png and the
// --fetch files. Resolves to {code, stdout, stderr}, as the process would end.
async function runPage(browser, args) {
  const [width, height] = args.size.split("x").map(Number);
  fs.mkdirSync(args.out, {recursive: true});
  let query = args.query, route = null;
  if (args.upload) {
    const name = path.basename(args.upload);
    route = `/upload/${name}`;
    browser.routes[route] = args.upload;
    query += `&open=upload/${encodeURIComponent(name)}`;
  }
  const url = `${browser.origin}/index.html?${query}`;
  const {devtools} = browser;
  let targetId = null, timedOut = false, timer = null;
  const load = async () => {
    ({targetId} = await devtools.send("Target.createTarget", {url: "about:blank"}));
    const {sessionId} = await devtools.send("Target.attachToTarget", {targetId, flatten: true});
    const page = (method, params) => devtools.send(method, params, sessionId);
    await page("Emulation.setDeviceMetricsOverride",
               {width, height, deviceScaleFactor: 1, mobile: false});
    const started = Date.now();
    await page("Page.navigate", {url});
    const evaluate = async (expression) => {
      const {result, exceptionDetails} =
          await page("Runtime.evaluate", {expression, returnByValue: true});
      if (exceptionDetails) throw new Error(`${expression}: ${exceptionDetails.text}`);
      return result.value;
    };
    let exitCode = null;
    while (exitCode === null && !timedOut) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      exitCode = await evaluate("window.attograd ? window.attograd.exitCode : null");
    }
    if (timedOut) return null;
    const {data} = await page("Page.captureScreenshot", {format: "png"});
    fs.writeFileSync(path.join(args.out, "screen.png"), Buffer.from(data, "base64"));
    // A viewer that stopped with an error (a bad ?set=) wrote no files.
    for (const {from, to} of exitCode === 0 ? args.fetch : []) {
      const base64 = await evaluate(`attograd.readBase64(${JSON.stringify(from)})`);
      fs.writeFileSync(to, Buffer.from(base64, "base64"));
    }
    const output = await evaluate("attograd.output.join('\\n')");
    return {code: exitCode, stdout: `${output}\npage: ${url}\nrun_ms ${Date.now() - started}\n`,
            stderr: ""};
  };
  const deadline = new Promise((resolve) => {
    timer = setTimeout(() => {
      timedOut = true;
      resolve({code: 124, stdout: "",
               stderr: `drive.js: no result from ${url} within ${args.timeout} s\n` +
                       browser.logTail()});
    }, Number(args.timeout) * 1000);
  });
  try {
    return await Promise.race([load(), deadline]);
  } catch (error) {
    return {code: 1, stdout: "", stderr: `drive.js: ${error.message}\n${browser.logTail()}`};
  } finally {
    clearTimeout(timer);
    if (route) delete browser.routes[route];
    if (targetId) await devtools.send("Target.closeTarget", {targetId}).catch(() => {});
  }
}

function report({code, stdout, stderr}) {
  process.stdout.write(stdout);
  process.stderr.write(stderr);
  return code;
}

// One page in a Chromium of its own.
async function runAlone(args) {
  const browser = await startBrowser(args.site, args.size);
  const result = await runPage(browser, args);
  await browser.close();
  return report(result);
}

// One page sent to a kept-open driver: one JSON line each way.
function runThrough(socket, args) {
  return new Promise((resolve, reject) => {
    const connection = net.createConnection(socket, () => {
      connection.end(JSON.stringify(args) + "\n");
    });
    let reply = "";
    connection.on("data", (chunk) => { reply += chunk; });
    connection.on("error", (error) => reject(new Error(`${socket}: ${error.message}`)));
    connection.on("end", () => {
      try {
        resolve(report(JSON.parse(reply)));
      } catch (error) {
        reject(new Error(`${socket}: no reply (${error.message}); did the driver stop?`));
      }
    });
  });
}

// A kept-open driver: pages one at a time, in the order they arrive.
async function keepOpen(args) {
  const socket = args["keep-open"];
  const browser = await startBrowser(args.site, args.size);
  let queue = Promise.resolve();
  // allowHalfOpen: the client's end of its request must not end our reply.
  const listener = net.createServer({allowHalfOpen: true}, (connection) => {
    let request = "";
    connection.on("data", (chunk) => {
      request += chunk;
      if (!request.endsWith("\n")) return;
      const page = {...JSON.parse(request), site: args.site};
      queue = queue.then(() => runPage(browser, page))
                  .then((result) => connection.end(JSON.stringify(result)));
    });
    connection.on("error", () => {});
  });
  fs.rmSync(socket, {force: true});
  await new Promise((resolve) => listener.listen(socket, resolve));
  let stopping = false;
  const stop = async () => {
    stopping = true;
    listener.close();
    await browser.close();
    fs.rmSync(socket, {force: true});
    process.exit(0);
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  // A Chromium that died leaves every later page without an answer: stop.
  browser.exited.then(() => {
    if (stopping) return;
    console.error(`drive.js: Chromium exited\n${browser.logTail()}`);
    fs.rmSync(socket, {force: true});
    process.exit(1);
  });
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args["keep-open"]) return keepOpen(args);
  const socket = process.env.ATTOGRAD_WEB_DRIVE;
  process.exit(socket ? await runThrough(socket, args) : await runAlone(args));
}

main().catch((error) => {
  console.error(`drive.js: ${error.message}`);
  process.exit(2);
});
