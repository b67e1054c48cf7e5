// MCP Inspector (its CLI, which shares the web UI's OAuth core) as an OAuth client of the
// served `mcp` function, headless: it meets the 401, discovers, registers, prints the
// authorization URL ("Please navigate to: ..."), the user signs in with chromium, the browser
// lands on the Inspector's own loopback callback listener, and the Inspector performs the
// tools/call it was asked for; its events must all be the user's tenant. Then a second
// invocation reuses the stored sign-in without a browser (--stored-auth-only), and a third
// gets a prompt.
// Usage (from tests/clients): AS_ISSUER=... MCP_URL=... PG_DATABASE=... node oauth_inspector.mjs [legacy|auto]
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

import {
  MCP_URL, checkAuthorizationRequest, checkEvents, closeBrowser, freePort, launchBrowser, signIn,
} from './oauth_kit.mjs';

const era = process.argv[2] ?? 'auto';
// The Inspector keeps its OAuth state under ~/.mcp-inspector: a home of its own.
const home = mkdtempSync(join(tmpdir(), 'inspector-home-'));
const callbackUrl = `http://127.0.0.1:${await freePort()}/oauth/callback`;

const QUERY = ['--method', 'tools/call', '--tool-name', 'query_events', '--tool-arg', 'limit=5'];

function inspector(extra, method = QUERY) {
  const child = spawn(
    process.execPath,
    [
      'node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js',
      '--cli', MCP_URL, '--transport', 'http', '--protocol-era', era, '--format', 'json',
      '--callback-url', callbackUrl,
      ...method,
      ...extra,
    ],
    // Without a TTY the CLI signs in only when told to open a browser; BROWSER=/bin/false makes
    // that open fail harmlessly, and the URL it prints is what this script follows. No OS
    // keychain here: the sign-in is kept in a file under the temporary home.
    {
      env: { ...process.env, HOME: home, BROWSER: '/bin/false', MCP_AUTO_OPEN_ENABLED: 'true', MCP_INSPECTOR_SECRET_STORE: 'file' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const stdout = [];
  const stderr = [];
  child.stdout.on('data', (d) => stdout.push(d));
  const prompt = new Promise((resolve) => {
    createInterface({ input: child.stderr }).on('line', (line) => {
      stderr.push(line);
      const m = /Please navigate to: (\S+)/.exec(line);
      if (m) resolve(new URL(m[1]));
    });
  });
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  const result = exited.then((code) => {
    assert.equal(code, 0, `inspector exited ${code}:\n${stderr.join('\n')}`);
    return JSON.parse(Buffer.concat(stdout).toString());
  });
  return { prompt, result, exited };
}

const browser = await launchBrowser();
try {
  const first = inspector([]);
  const url = await Promise.race([first.prompt, first.exited.then((c) => assert.fail(`exited ${c} before asking to sign in`))]);
  checkAuthorizationRequest(url, { scope: 'events:read' });
  assert.equal(url.searchParams.get('redirect_uri'), callbackUrl);
  await signIn(await browser.newContext(), url, { user: 'alice' });
  const n = checkEvents((await first.result).result ?? (await first.result), 'tenant-a');

  // Signed in: the next run uses the stored token and never asks for a browser.
  const second = inspector(['--stored-auth-only']);
  checkEvents((await second.result).result ?? (await second.result), 'tenant-a');
  // A prompt, as the Inspector's prompt pane gets it: the plan names the tools with the
  // window's instants filled in.
  const digest = inspector(['--stored-auth-only'], ['--method', 'prompts/get', '--prompt-name', 'daily_digest', '--prompt-args', 'window=6h']);
  const rendered = (await digest.result).result ?? (await digest.result);
  assert.match(rendered.messages[0].content.text, /over the last 6h, \S+Z to \S+Z/);
  assert.match(rendered.messages[0].content.text, /`summarize_window` with `\{"since":/);
  console.log(`mcp inspector (${era}; DCR, chromium sign-in on its own callback, stored sign-in reused, a prompt): ok, ${n} events of tenant-a`);
} finally {
  await closeBrowser(browser);
  rmSync(home, { recursive: true, force: true });
}
