// mcp-remote (the stdio bridge Claude Desktop and other stdio-only hosts use for remote
// servers) as an OAuth client of the served `mcp` function, headless: it discovers, registers
// (DCR) and prints the authorization URL; the user signs in with chromium; the browser lands
// on mcp-remote's own loopback callback listener; then the host (this script) speaks MCP over
// stdio: initialize, tools/list, tools/call, whose events must all be the user's tenant.
// BROWSER=/bin/false keeps mcp-remote from opening any other browser.
// Usage (from tests/clients): AS_ISSUER=... MCP_URL=... PG_DATABASE=... node oauth_mcp_remote.mjs
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

import { ISSUER, MCP_URL, checkAuthorizationRequest, checkEvents, launchBrowser, remember } from './oauth_kit.mjs';

const freePort = () =>
  new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

const configDir = mkdtempSync(join(tmpdir(), 'mcp-remote-'));
const port = await freePort();
const child = spawn(
  process.execPath,
  ['node_modules/mcp-remote/dist/proxy.js', MCP_URL, String(port), '--host', '127.0.0.1', '--transport', 'http-only'],
  { env: { ...process.env, MCP_REMOTE_CONFIG_DIR: configDir, BROWSER: '/bin/false' }, stdio: ['pipe', 'pipe', 'pipe'] },
);
const stderr = [];
const authorizationUrl = new Promise((resolve, reject) => {
  let next = false;
  createInterface({ input: child.stderr }).on('line', (line) => {
    stderr.push(line);
    if (next && line.trim()) {
      next = false;
      resolve(new URL(line.trim()));
    }
    if (line.includes('Please authorize this client by visiting')) next = true;
  });
  child.on('exit', (code) => reject(new Error(`mcp-remote exited (${code}):\n${stderr.join('\n')}`)));
});
const pending = new Map();
createInterface({ input: child.stdout }).on('line', (line) => {
  const message = JSON.parse(line);
  pending.get(message.id)?.(message);
});
let nextId = 1;
const request = (method, params = {}) =>
  new Promise((resolve, reject) => {
    const id = nextId++;
    const timer = setTimeout(() => reject(new Error(`no answer to ${method}:\n${stderr.join('\n')}`)), 60000);
    pending.set(id, (m) => {
      clearTimeout(timer);
      resolve(m);
    });
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
  });

const browser = await launchBrowser();
try {
  // The host's first message makes mcp-remote connect, meet the 401 and start the flow.
  const initialized = request('initialize', {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'mcp-remote-host-test', version: '1.0.0' },
  });
  const url = await authorizationUrl;
  checkAuthorizationRequest(url, { scope: 'events:read' });
  assert.equal(url.searchParams.get('redirect_uri'), `http://127.0.0.1:${port}/oauth/callback`);
  // mcp-remote's own listener receives the callback: the browser is only watched landing there.
  const page = await (await browser.newContext()).newPage();
  const landed = page.waitForURL((u) => u.port === String(port), { timeout: 30000 });
  await page.goto(url.href);
  await page.fill('input[name=username]', 'alice');
  await page.fill('input[name=password]', 'alice-password');
  await Promise.all([page.waitForEvent('framenavigated'), page.click('button[type=submit]')]);
  await page.click('button[value=allow]');
  await landed;
  const landedAt = new URL(page.url());
  assert.ok(landedAt.searchParams.get('code'), 'the callback carried a code');
  assert.equal(landedAt.searchParams.get('iss'), ISSUER);
  remember(landedAt.searchParams.get('code'));

  const init = await initialized;
  assert.ok(init.result, JSON.stringify(init));
  child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
  const tools = await request('tools/list');
  assert.ok(tools.result.tools.some((t) => t.name === 'query_events'), JSON.stringify(tools));
  const call = await request('tools/call', { name: 'query_events', arguments: { limit: 5 } });
  const n = checkEvents(call.result, 'tenant-a');
  console.log(`mcp-remote (stdio bridge, DCR, PKCE, browser sign-in on its own callback): ok, ${n} events of tenant-a`);
} finally {
  child.kill();
  await browser.close();
  rmSync(configDir, { recursive: true, force: true });
}
