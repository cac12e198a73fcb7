// A static file server on 127.0.0.1 for the browser viewer (scripts/web.sh)
// and its test (tests/web/drive.js). Node's own http module: nothing to install.
//
//   node web/serve.js DIR [PORT]     serves DIR; PORT 0 or none picks a free one
//
// As a module: serve(dir, port, extra) resolves to the listening server;
// `extra` maps URL paths to further files (the test's uploads).
"use strict";
const fs = require("fs");
const http = require("http");
const path = require("path");

const kTypes = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript",
  ".wasm": "application/wasm",  // needed for streaming compilation
  ".png": "image/png",
};

function serve(dir, port = 0, extra = {}) {
  const root = path.resolve(dir);
  const server = http.createServer((request, response) => {
    const url = decodeURIComponent(new URL(request.url, "http://localhost").pathname);
    let file = extra[url];
    if (file === undefined) {
      file = path.join(root, url === "/" ? "index.html" : url);
      // Only files under DIR: a path climbing out with .. is not served.
      if (!file.startsWith(root + path.sep)) file = null;
    }
    fs.stat(file || "", (error, stat) => {
      if (error || !stat.isFile()) {
        response.writeHead(404, {"Content-Type": "text/plain"});
        response.end(`not found: ${url}\n`);
        return;
      }
      // The browser asks again each time (no-cache) and gets "not modified"
      // while the file is the same: then it reuses its copy, and for the
      // .wasm the code it compiled from it last time.
      const tag = `"${stat.size}-${stat.mtimeMs}"`;
      const headers = {
        "Content-Type": kTypes[path.extname(file)] || "application/octet-stream",
        "Cache-Control": "no-cache",
        "ETag": tag,
      };
      if (request.headers["if-none-match"] === tag) {
        response.writeHead(304, headers);
        response.end();
        return;
      }
      response.writeHead(200, {...headers, "Content-Length": stat.size});
      fs.createReadStream(file).pipe(response);
    });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve(server));
  });
}

module.exports = {serve};

if (require.main === module) {
  const [dir, port] = process.argv.slice(2);
  if (!dir) {
    console.error("usage: node web/serve.js DIR [PORT]");
    process.exit(2);
  }
  serve(dir, Number(port || 0)).then((server) => {
    console.log(`attograd: serving ${path.resolve(dir)}`);
    console.log(`attograd: open http://127.0.0.1:${server.address().port}/ ` +
                "(?scene=training etc. picks a scene; Ctrl-C stops)");
  }, (error) => {
    console.error(`attograd: cannot serve on port ${port}: ${error.message}`);
    process.exit(1);
  });
}
