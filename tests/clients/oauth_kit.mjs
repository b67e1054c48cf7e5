// What every OAuth client chain in scripts/test shares: an in-memory OAuthClientProvider (the
// shape both TypeScript SDKs take), a loopback callback listener (what Claude Code and
// mcp-remote run), the user's sign-in in a real browser (Debian chromium driven by
// playwright-core) wherever the client's callback listens, and a check of returned events
// against the database.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createTcpServer } from 'node:net';

import { chromium } from 'playwright-core';

export const ISSUER = process.env.AS_ISSUER;
export const MCP_URL = process.env.MCP_URL;
assert.ok(ISSUER && MCP_URL, 'AS_ISSUER and MCP_URL are required');

// Records a secret this chain handled (code, verifier, token) in OAUTH_SECRETS_FILE, so that
// scripts/test can check that none of them reached any server's log.
export function remember(...secrets) {
  const file = process.env.OAUTH_SECRETS_FILE;
  for (const secret of secrets) if (file && secret) appendFileSync(file, `${secret}\n`);
}

// A loopback redirect target (RFC 8252 §7.3), as Claude Code and mcp-remote run: it answers
// the browser's landing; the sign-in reads the code from where the browser landed.
export async function callbackListener() {
  const server = createServer((req, res) => {
    const found = new URL(req.url, 'http://127.0.0.1').pathname === '/callback';
    res.writeHead(found ? 200 : 404, { 'content-type': 'text/html' });
    res.end(found ? '<p>Signed in. You can close this window.</p>' : '');
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}/callback`;
  return { url, close: () => new Promise((resolve) => server.close(resolve)) };
}

// The OAuthClientProvider both SDKs call: registration, tokens and the PKCE verifier kept in
// memory; the authorization URL the SDK wants the user sent to is recorded, not opened.
export class MemoryProvider {
  constructor({ redirectUrl, clientName, clientMetadataUrl }) {
    this._redirectUrl = redirectUrl;
    this._clientName = clientName;
    if (clientMetadataUrl) this.clientMetadataUrl = clientMetadataUrl;
    this.client = undefined;
    this._tokens = undefined;
    this.savedTokens = [];
    this.registrations = 0;
    this.authorizationUrls = [];
    this._verifiers = new Map();
  }
  get redirectUrl() {
    return this._redirectUrl;
  }
  get clientMetadata() {
    return {
      client_name: this._clientName,
      redirect_uris: [this._redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  state() {
    this.lastState = randomBytes(16).toString('base64url');
    return this.lastState;
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info) {
    // The SDK saves again to stamp the issuer; only a new client_id is a registration.
    if (info.client_id !== this.client?.client_id) this.registrations += 1;
    this.client = info;
  }
  // Where discovery led (the SDKs resume from it rather than rediscovering from the MCP URL:
  // the local emulator cannot serve the metadata at the root RFC 9728 location).
  saveDiscoveryState(state) {
    this.discovery = state;
  }
  discoveryState() {
    return this.discovery;
  }
  tokens() {
    return this._tokens;
  }
  saveTokens(tokens) {
    remember(tokens.access_token, tokens.refresh_token);
    this._tokens = tokens;
    this.savedTokens.push(tokens);
  }
  // The SDK saves a verifier, then asks for the user to be sent to the URL built with it. An
  // SDK may start another authorization while the user is still signing in to the first (a
  // request in flight meets the same 401 or 403), so, as a real client does, the verifier is
  // kept per authorization request, keyed by its `state`, and `finishing(state)` picks the one
  // that belongs to the callback being finished.
  redirectToAuthorization(url) {
    const parsed = new URL(url);
    this.authorizationUrls.push(parsed);
    this._verifiers.set(parsed.searchParams.get('state'), this._lastVerifier);
  }
  saveCodeVerifier(verifier) {
    remember(verifier);
    this._lastVerifier = verifier;
  }
  codeVerifier() {
    return this._finishing ?? this._lastVerifier;
  }
  finishing(callbackUrl) {
    const verifier = this._verifiers.get(callbackUrl.searchParams.get('state'));
    assert.ok(verifier, 'the callback answers an authorization request this client made');
    this._finishing = verifier;
  }
}

// What MCP authorization requires of every authorization request the SDK built.
export function checkAuthorizationRequest(url, { clientId, scope }) {
  // Under the issuer: at its origin, or below its path (the OAuth bridge's issuer has one).
  assert.ok(url.href.startsWith(`${ISSUER}/`), `the authorization endpoint ${url.href} is not the issuer's`);
  const p = url.searchParams;
  assert.equal(p.get('response_type'), 'code');
  assert.equal(p.get('code_challenge_method'), 'S256');
  assert.match(p.get('code_challenge') ?? '', /^[A-Za-z0-9_-]{43}$/);
  assert.equal(p.get('resource'), MCP_URL, 'RFC 8707 resource must be the MCP URL');
  if (clientId) assert.equal(p.get('client_id'), clientId);
  if (scope) assert.ok((p.get('scope') ?? '').split(' ').includes(scope), `scope ${p.get('scope')} lacks ${scope}`);
}

export async function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

// Closes the browser, but waits at most 15 s for it: a chromium that hangs on close must not
// hold the test (scripts/test also bounds every chain).
export async function closeBrowser(browser) {
  let timer;
  await Promise.race([browser.close(), new Promise((resolve) => (timer = setTimeout(resolve, 15000)))]);
  clearTimeout(timer);
}

// Acts as the user in the authorization server's pages until the browser lands on
// `redirectUri`: signs in (first with a wrong password, which the real login page must
// refuse), leaves the scopes in `deny` unchecked on the consent page, allows. `start` sends the
// page on its way (a goto, or a click in a client's own UI) once the landing is watched for.
// Returns the URL the browser landed on (the client's callback, whoever listens there) and
// the pages the user went through.
export async function actAsUser(page, redirectUri, start, { user, deny = [], wrongPasswordFirst = false }) {
  let landedAt;
  const arrived = page
    .waitForURL(
      (u) => {
        if (u.href.startsWith(redirectUri)) landedAt ??= new URL(u.href);
        return landedAt !== undefined;
      },
      // The callback may move on at once (a web client's own redirect): its commit is enough.
      { timeout: 60000, waitUntil: 'commit' },
    )
    .then(() => 'callback');
  arrived.catch(() => {}); // a sign-in that fails elsewhere must not add an unhandled rejection
  await start();
  const steps = [];
  let bridgeConsents = 0;
  for (;;) {
    const step = await Promise.race([
      arrived,
      page
        .waitForSelector('form[action$="/login"], form[action$="/confirm"], form[action$="/oauth/consent"]', {
          timeout: 20000,
        })
        .then((form) => form.getAttribute('action')),
    ]);
    if (step === 'callback') break;
    assert.ok(steps.length + bridgeConsents < 7, `the sign-in does not end: ${steps.join(', ')}`);
    if (step.endsWith('/oauth/consent')) {
      // The OAuth bridge's own consent page (before it sends the user upstream): not one of
      // the authorization server's steps, counted apart.
      bridgeConsents += 1;
      await Promise.all([page.waitForEvent('framenavigated'), page.click('button[value=approve]')]);
    } else if (step.endsWith('/login')) {
      steps.push('login');
      const refusedFirst = wrongPasswordFirst;
      wrongPasswordFirst = false;
      await page.fill('input[name=username]', user);
      await page.fill('input[name=password]', refusedFirst ? 'not-the-password' : `${user}-password`);
      await Promise.all([page.waitForEvent('framenavigated'), page.click('button[type=submit]')]);
      if (refusedFirst) {
        assert.match(await page.textContent('[role=alert]'), /wrong password/);
        steps.push('refused');
      }
    } else {
      steps.push('consent');
      for (const scope of deny) await page.uncheck(`input[name=scope][value="${scope}"]`);
      await Promise.all([page.waitForEvent('framenavigated'), page.click('button[value=allow]')]);
    }
  }
  return { url: landedAt, steps, bridgeConsents };
}

// What MCP authorization requires of the authorization response: a code, and `iss` naming
// the issuer (RFC 9207); with the request's `state` when the caller knows it.
export function checkAuthorizationResponse(url, state) {
  assert.equal(url.searchParams.get('iss'), ISSUER, 'RFC 9207: the authorization response names its issuer');
  if (state !== undefined) assert.equal(url.searchParams.get('state'), state);
  assert.ok(url.searchParams.get('code'), `no code in the callback: ${url.searchParams.get('error')}`);
  remember(url.searchParams.get('code'));
}

// Sends a new tab of `context` (which keeps the authorization server's session across
// sign-ins) to `authorizationUrl`, acts as the user, and checks the authorization response.
export async function signIn(context, authorizationUrl, options) {
  const page = await context.newPage();
  try {
    const redirectUri = authorizationUrl.searchParams.get('redirect_uri');
    const result = await actAsUser(page, redirectUri, () => page.goto(authorizationUrl.href), options);
    checkAuthorizationResponse(result.url, authorizationUrl.searchParams.get('state'));
    return result;
  } finally {
    // Not awaited: the code is short-lived (60 s) and is redeemed next; a browser slow to
    // close a tab must not let it expire.
    page.close().catch(() => {});
  }
}

// Registers a public client (DCR, RFC 7591) at the authorization server whose `metadata` is
// given, as MCP clients do; its client_id.
export async function registerPublicClient(metadata, name, redirectUri) {
  const response = await fetch(metadata.registration_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: name,
      redirect_uris: [redirectUri],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }),
  });
  const text = await response.text();
  assert.equal(response.status, 201, text);
  return JSON.parse(text).client_id;
}

// A port on 127.0.0.1 nobody listens on, for a client's own callback listener.
export function freePort() {
  return new Promise((resolve) => {
    const s = createTcpServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// Decodes (does not verify: the endpoint does) the claims of a JWT access token.
export function claimsOf(token) {
  return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString());
}

// The tenants the given event ids belong to, read from the database the endpoint serves.
export function tenantsOf(ids) {
  assert.ok(ids.length > 0, 'no events to check');
  const out = execFileSync('psql', [
    '-h', '127.0.0.1', '-U', 'postgres', '-d', process.env.PG_DATABASE, '-qtA', '-c',
    `SELECT DISTINCT tenant_id FROM events WHERE id IN (${ids.map((id) => Number(id)).join(',')})`,
  ]);
  return out.toString().trim().split('\n').filter(Boolean);
}

// The ids among `ids` whose stored text matches the full-text `query`, asked of the database.
export function matchingIds(query, ids) {
  assert.ok(ids.length > 0, 'no results to check');
  // On standard input: psql interpolates :'q' (quoted as a literal) there, not in -c.
  const out = execFileSync('psql', [
    '-h', '127.0.0.1', '-U', 'postgres', '-d', process.env.PG_DATABASE, '-qtA', '-v', `q=${query}`, '-f', '-',
  ], {
    input: `SELECT id FROM events WHERE id IN (${ids.map((id) => Number(id)).join(',')}) ` +
      `AND search @@ websearch_to_tsquery('english', :'q') ORDER BY id;`,
  });
  return out.toString().trim().split('\n').filter(Boolean).map(Number);
}

// A tools/call result of query_events: not an error, events present, all of `tenant`.
export function checkEvents(result, tenant) {
  assert.ok(!result.isError, JSON.stringify(result.content));
  const events = result.structuredContent.events;
  assert.ok(events.length > 0, 'no events');
  assert.deepEqual(tenantsOf(events.map((e) => e.id)), [tenant]);
  return events.length;
}

// The prompts through a real client: listed, an entity id completed (exactly the tenant's
// ids with that prefix, as the database has them), and triage_incident rendered with that
// entity's state embedded. Returns the entity triaged.
export async function checkPrompts(client, tenant, prefix) {
  const listed = await client.listPrompts();
  assert.deepEqual(listed.prompts.map((p) => p.name), ['triage_incident', 'what_changed', 'daily_digest']);
  const done = await client.complete({
    ref: { type: 'ref/prompt', name: 'triage_incident' },
    argument: { name: 'entity_id', value: prefix },
  });
  const values = done.completion.values;
  const stored = execFileSync('psql', [
    '-h', '127.0.0.1', '-U', 'postgres', '-d', process.env.PG_DATABASE, '-qtA', '-v', `t=${tenant}`, '-v', `p=${prefix}`, '-f', '-',
  ], {
    input: `SELECT entity_id FROM entity_state WHERE tenant_id = :'t' AND starts_with(entity_id, :'p') ORDER BY entity_id COLLATE "C" LIMIT 100;`,
  }).toString().trim().split('\n').filter(Boolean);
  assert.ok(values.length > 0, `no ${prefix} entities completed`);
  assert.deepEqual(values, stored);
  const rendered = await client.getPrompt({ name: 'triage_incident', arguments: { entity_id: values[0], window: '6h' } });
  assert.match(rendered.messages[0].content.text, /`query_events` with `\{"entity_id":/);
  const state = rendered.messages[1].content.resource;
  assert.equal(state.uri, `event-store://entities/${values[0]}/state`);
  assert.equal(JSON.parse(state.text).entity_id, values[0]);
  return values[0];
}
