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
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

import {
  MCP_URL, checkAuthorizationRequest, checkEvents, closeBrowser, freePort, launchBrowser, signIn,
} from './oauth_kit.mjs';

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
  // mcp-remote's own listener receives the callback.
  await signIn(await browser.newContext(), url, { user: 'alice' });

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
  await closeBrowser(browser);
  rmSync(configDir, { recursive: true, force: true });
}
