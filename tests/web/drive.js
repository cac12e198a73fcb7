// Runs the browser viewer once in headless Chromium and collects what it drew,
// for the screen tests (tests/viewer/screen_check.cpp, built as
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
"use strict";
const childProcess = require("child_process");
const fs = require("fs");
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
  for (const needed of ["site", "out", "query"]) {
    if (!args[needed]) throw new Error(`--${needed} is required`);
  }
  return args;
}

// The DevTools protocol over Chromium's pipe: JSON messages ended by '\0',
// we write to its fd 3 and read from its fd 4.
class Devtools {
  constructor(toBrowser, fromBrowser) {
    this.toBrowser = toBrowser;
    this.nextId = 1;
    this.waiting = new Map();
    this.onEvent = () => {};
    let buffered = "";
    fromBrowser.on("data", (chunk) => {
      buffered += chunk.toString("utf8");
      let end;
      while ((end = buffered.indexOf("\0")) >= 0) {
        const message = JSON.parse(buffered.slice(0, end));
        buffered = buffered.slice(end + 1);
        const reply = this.waiting.get(message.id);
        if (reply) {
          this.waiting.delete(message.id);
          if (message.error) reply.reject(new Error(`${reply.method}: ${message.error.message}`));
          else reply.resolve(message.result);
        } else if (message.method) {
          this.onEvent(message);
        }
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

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const [width, height] = args.size.split("x").map(Number);
  fs.mkdirSync(args.out, {recursive: true});
  const extra = {};
  let query = args.query;
  if (args.upload) {
    const name = path.basename(args.upload);
    extra[`/upload/${name}`] = path.resolve(args.upload);
    query += `&open=upload/${encodeURIComponent(name)}`;
  }
  const server = await serve(args.site, 0, extra);
  const url = `http://127.0.0.1:${server.address().port}/index.html?${query}`;
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "attograd-chromium-"));
  const chromium = process.env.CHROMIUM || "chromium";
  // Its own process group, so that its renderer and GPU processes can be
  // stopped with it.
  const browser = childProcess.spawn(chromium, chromiumFlags(width, height, profile),
                                     {stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"],
                                      detached: true});
  let browserLog = "";
  browser.stderr.on("data", (chunk) => { browserLog += chunk; });
  const exited = new Promise((resolve) => browser.once("exit", resolve));
  const devtools = new Devtools(browser.stdio[3], browser.stdio[4]);
  // Chromium writes its profile until all its processes are gone: close it
  // (Browser.close, or kill the group after 5 s), then remove the folder.
  const finish = async (code) => {
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
    process.exit(code);
  };
  const deadline = setTimeout(() => {
    console.error(`drive.js: no result from ${url} within ${args.timeout} s`);
    console.error(browserLog.slice(-4000));
    finish(124);
  }, Number(args.timeout) * 1000);

  try {
    const {targetId} = await devtools.send("Target.createTarget", {url: "about:blank"});
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
    while (exitCode === null) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      exitCode = await evaluate("window.attograd ? window.attograd.exitCode : null");
    }
    const {data} = await page("Page.captureScreenshot", {format: "png"});
    fs.writeFileSync(path.join(args.out, "screen.png"), Buffer.from(data, "base64"));
    // A viewer that stopped with an error (a bad ?set=) wrote no files.
    for (const pair of exitCode === 0 ? args.fetch : []) {
      const [from, to] = pair.split("=");
      const base64 = await evaluate(`attograd.readBase64(${JSON.stringify(from)})`);
      fs.writeFileSync(to, Buffer.from(base64, "base64"));
    }
    const output = await evaluate("attograd.output.join('\\n')");
    process.stdout.write(`${output}\npage: ${url}\nrun_ms ${Date.now() - started}\n`);
    clearTimeout(deadline);
    await finish(exitCode);
  } catch (error) {
    console.error(`drive.js: ${error.message}`);
    console.error(browserLog.slice(-4000));
    await finish(1);
  }
}

main().catch((error) => {
  console.error(`drive.js: ${error.message}`);
  process.exit(2);
});
