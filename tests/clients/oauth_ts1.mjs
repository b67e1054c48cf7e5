// TypeScript SDK v1 (@modelcontextprotocol/sdk) as an OAuth client of the served `mcp`
// function, from nothing: 401 challenge -> protected resource metadata -> authorization
// server metadata -> Dynamic Client Registration -> authorization code + PKCE + resource,
// signed in by a user in chromium (a wrong password first, which the login page refuses)
// -> code exchange -> tools/list and tools/call, whose events must all be the user's tenant;
// the prompts, an entity id completed and a triage rendered, all of the user's tenant.
// Then the access token (5 s for this client) expires and the SDK refreshes it on the 401
// without sending the user back to the browser.
// Usage (from tests/clients): AS_ISSUER=... MCP_URL=... PG_DATABASE=... node oauth_ts1.mjs
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import {
  ISSUER, MCP_URL, MemoryProvider, callbackListener, checkAuthorizationRequest, checkEvents, checkPrompts, claimsOf,
  closeBrowser, launchBrowser, signIn,
} from './oauth_kit.mjs';

const callback = await callbackListener();
const browser = await launchBrowser();
const provider = new MemoryProvider({ redirectUrl: callback.url, clientName: 'ts-sdk-v1 oauth test [short-lived]' });
const connect = async () => {
  const client = new Client({ name: 'ts-v1-oauth-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(MCP_URL), { authProvider: provider }));
  return client;
};

try {
  // No token: the SDK follows the challenge, registers and asks for the user's sign-in.
  await assert.rejects(connect(), UnauthorizedError);
  assert.equal(provider.registrations, 1, 'registered by DCR');
  assert.ok(provider.client.client_id && !provider.client.client_secret, 'a public client');
  const [authorization] = provider.authorizationUrls;
  checkAuthorizationRequest(authorization, { clientId: provider.client.client_id, scope: 'events:read' });

  const { url, steps } = await signIn(await browser.newContext(), authorization, { user: 'alice', wrongPasswordFirst: true });
  assert.deepEqual(steps, ['login', 'refused', 'login', 'consent']);
  const transport = new StreamableHTTPClientTransport(new URL(MCP_URL), { authProvider: provider });
  provider.finishing(url);
  await transport.finishAuth(url.searchParams.get('code'));
  const first = provider.tokens();
  const claims = claimsOf(first.access_token);
  assert.equal(claims.iss, ISSUER);
  assert.equal(claims.aud, MCP_URL);
  assert.equal(claims.tenant_id, 'tenant-a');
  assert.ok(first.refresh_token, 'a refresh token was issued');

  const client = await connect();
  const tools = await client.listTools();
  assert.ok(tools.tools.some((t) => t.name === 'query_events'), 'query_events is listed');
  const n = checkEvents(await client.callTool({ name: 'query_events', arguments: { limit: 5 } }), 'tenant-a');
  const triaged = await checkPrompts(client, 'tenant-a', 'svc-');

  // Expiry: wait for the clock (not for another process) to pass `exp`.
  while (Date.now() / 1000 < claims.exp + 1) await sleep(200);
  checkEvents(await client.callTool({ name: 'query_events', arguments: { limit: 5 } }), 'tenant-a');
  const refreshed = provider.tokens();
  assert.notEqual(refreshed.access_token, first.access_token, 'the expired token was replaced');
  assert.equal(provider.authorizationUrls.length, 1, 'refreshed without sending the user back');
  assert.ok(claimsOf(refreshed.access_token).exp > claims.exp);
  await client.close();
  console.log(`typescript sdk v1 oauth (DCR, PKCE, browser sign-in, refresh, prompts and completion): ok, ${n} events of tenant-a, ${triaged} triaged`);
} finally {
  await closeBrowser(browser);
  await callback.close();
}
