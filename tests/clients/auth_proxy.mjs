// Loopback-only forwarding proxy that adds "Authorization: Bearer $MCP_TOKEN" to every request,
// so the conformance suite (which cannot send a token) can score an auth-on build.
// Usage: TARGET=http://127.0.0.1:9010 MCP_TOKEN=... PROXY_PORT=9020 node auth_proxy.mjs
import http from 'node:http';

const target = new URL(process.env.TARGET);
const loopback = ['127.0.0.1', 'localhost', '[::1]'];
if (!loopback.includes(target.hostname)) throw new Error('TARGET must be a loopback URL');
const token = process.env.MCP_TOKEN;
if (!token) throw new Error('MCP_TOKEN is required');
const port = Number(process.env.PROXY_PORT);

http
  .createServer((req, res) => {
    // Host and Origin pass through unchanged: the server's own checks must still see them.
    const headers = { ...req.headers, authorization: `Bearer ${token}` };
    const upstream = http.request(
      { hostname: target.hostname, port: target.port, method: req.method, path: req.url, headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', (e) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`proxy: ${e.message}`);
    });
    req.pipe(upstream);
  })
  .listen(port, '127.0.0.1');
