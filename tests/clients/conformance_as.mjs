// The official conformance suite's authorization-server scenarios against an authorization
// server (the OAuth bridge, or the development server): `authorization-server-metadata-endpoint`,
// then `authorization-code-grant` with a public client registered here by DCR for the suite's
// own loopback callback. The suite prints the authorization URL and waits for its callback; the
// user's part (the bridge's consent page, the upstream's login and consent) is played in
// chromium, as a person would. No check may fail (warnings are printed).
// Usage (from tests/clients): AS_ISSUER=... MCP_URL=... node conformance_as.mjs
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

import {
  ISSUER, MCP_URL, actAsUser, closeBrowser, freePort, launchBrowser, registerPublicClient,
} from './oauth_kit.mjs';

const SUITE = 'node_modules/@modelcontextprotocol/conformance/dist/index.js';

// Every checks.json the suite wrote under `dir`, flattened.
function checksIn(dir) {
  const found = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) found.push(...checksIn(path));
    else if (name === 'checks.json') found.push(...JSON.parse(readFileSync(path, 'utf8')));
  }
  return found;
}

// Runs the suite's authorization-server scenarios; `onUrl` gets the authorization URL the
// suite asks the user to open.
async function scenario(name, args, onUrl) {
  const out = mkdtempSync(join(tmpdir(), 'conformance-as-'));
  const child = spawn(
    process.execPath,
    [SUITE, 'authorization', '--url', ISSUER, '-o', out, ...args],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const lines = [];
  let next = false;
  const opened = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(line);
    if (next && line.trim().startsWith('http')) {
      next = false;
      opened.push(onUrl(new URL(line.trim())));
    }
    if (line.includes('Access the following URL')) next = true;
  });
  const code = await new Promise((resolve) => child.on('exit', resolve));
  await Promise.all(opened);
  const checks = checksIn(out);
  const failed = checks.filter((c) => c.status === 'FAILURE');
  const warned = checks.filter((c) => c.status === 'WARNING');
  assert.ok(checks.length > 0, `${name}: no checks recorded\n${lines.join('\n')}`);
  assert.deepEqual(failed, [], `${name}: failed checks\n${lines.join('\n')}`);
  assert.equal(code, 0, `${name}: exit ${code}\n${lines.join('\n')}`);
  for (const w of warned) console.log(`${name}: warning ${w.id}: ${w.errorMessage ?? w.description}`);
  console.log(`${name}: ${checks.length - warned.length} of ${checks.length} checks passed, no failure (${checks.map((c) => c.id).join(', ')})`);
}

const metadata = await (await fetch(`${ISSUER}/.well-known/oauth-authorization-server`)).json();
const port = await freePort();
const callback = `http://127.0.0.1:${port}/callback`;
const clientId = await registerPublicClient(metadata, 'MCP conformance suite', callback);

const browser = await launchBrowser();
try {
  const context = await browser.newContext();
  // Every scenario in one run: the code grant reads the metadata scenario's result.
  await scenario(
    'authorization-server scenarios',
    ['--client-id', clientId, '--resource', MCP_URL, '-p', String(port)],
    async (url) => {
      const page = await context.newPage();
      await actAsUser(page, callback, () => page.goto(url.href), { user: 'alice' });
    },
  );
} finally {
  await closeBrowser(browser);
}
