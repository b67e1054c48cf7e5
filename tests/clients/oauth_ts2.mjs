// TypeScript SDK v2 (@modelcontextprotocol/client, auto era) as an OAuth client of the served
// `mcp` function, registered by a Client ID Metadata Document (its client_id is an https URL
// the authorization server fetches), and the scope step-up: the user first consents without
// events:read, the endpoint answers the tool call with 403 insufficient_scope naming it, the
// SDK sends the user back for that scope, and the call then succeeds with the user's tenant.
// With MCP_VIA_BRIDGE=1 the authorization server is the OAuth bridge (functions/oauth): it
// fetches the document itself, the user signs in at its upstream issuer, whose groups decide the
// scopes (there is no per-scope consent to deny, so no step-up), and the token is the bridge's.
// Usage (from tests/clients): AS_ISSUER=... MCP_URL=... PG_DATABASE=... CIMD_CERT=... CIMD_KEY=...
//   [MCP_VIA_BRIDGE=1] node oauth_ts2.mjs
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';

import { Client, StreamableHTTPClientTransport, UnauthorizedError } from '@modelcontextprotocol/client';

import {
  ISSUER, MCP_URL, MemoryProvider, callbackListener, checkAuthorizationRequest, checkEvents, checkPrompts, claimsOf, closeBrowser,
  matchingIds, tenantsOf,
  launchBrowser, signIn,
} from './oauth_kit.mjs';

const callback = await callbackListener();
// The client's metadata document, published over https on loopback (the authorization server
// trusts this certificate through NODE_EXTRA_CA_CERTS).
const cimd = createServer({ cert: readFileSync(process.env.CIMD_CERT), key: readFileSync(process.env.CIMD_KEY) }, (req, res) => {
  fetched += 1;
  res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=300' });
  res.end(JSON.stringify(document));
});
let fetched = 0;
await new Promise((resolve) => cimd.listen(0, '127.0.0.1', resolve));
const clientId = `https://127.0.0.1:${cimd.address().port}/oauth/client-metadata.json`;
const document = {
  client_id: clientId,
  client_name: 'ts-sdk-v2 oauth test (CIMD)',
  redirect_uris: [callback.url],
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
  token_endpoint_auth_method: 'none',
};
const viaBridge = process.env.MCP_VIA_BRIDGE === '1';
const browser = await launchBrowser();
const context = await browser.newContext();
const provider = new MemoryProvider({ redirectUrl: callback.url, clientName: document.client_name, clientMetadataUrl: clientId });
const transport = () => new StreamableHTTPClientTransport(new URL(MCP_URL), { authProvider: provider });
// The SDK's half of the redirect: a new transport exchanges the code the browser came back with.
const finish = async (url) => {
  const t = transport();
  provider.finishing(url);
  await t.finishAuth(url.searchParams);
  return t;
};
const connect = async (t = transport()) => {
  // Named as Claude Code names itself: in 2026-07-28 every request carries clientInfo, and the
  // endpoint sizes results for that client's documented cap (64 KiB).
  const client = new Client({ name: 'claude-code', version: '2.1.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(t);
  return client;
};

try {
  await assert.rejects(connect(), UnauthorizedError);
  assert.equal(provider.client.client_id, clientId, 'no DCR: the client_id is the metadata document URL');
  const [first] = provider.authorizationUrls;
  checkAuthorizationRequest(first, { clientId, scope: 'events:read' });

  let t;
  let client;
  if (viaBridge) {
    // Signed in at the upstream issuer; the bridge maps bob's group to events:read.
    const signed = await signIn(context, first, { user: 'bob' });
    assert.deepEqual(signed.steps, ['login', 'consent']);
    assert.ok(fetched >= 1, 'the bridge fetched the metadata document');
    t = await finish(signed.url);
    const claims = claimsOf(provider.tokens().access_token);
    assert.equal(claims.iss, ISSUER, 'a token of the bridge');
    assert.equal(claims.aud, MCP_URL);
    assert.ok(claims.scope.split(' ').includes('events:read'), `scope ${claims.scope}`);
  } else {
    // The user unchecks events:read on the consent page.
    const denied = await signIn(context, first, { user: 'bob', deny: ['events:read'] });
    assert.deepEqual(denied.steps, ['login', 'consent']);
    assert.ok(fetched >= 1, 'the authorization server fetched the metadata document');
    t = await finish(denied.url);
    const narrow = claimsOf(provider.tokens().access_token);
    assert.equal(narrow.aud, MCP_URL);
    assert.ok(!(narrow.scope ?? '').split(' ').includes('events:read'), `scope ${narrow.scope}`);

    // The call needs events:read: 403 insufficient_scope, and the SDK asks for it.
    client = await connect(t);
    await assert.rejects(client.callTool({ name: 'query_events', arguments: { limit: 5 } }), UnauthorizedError);
    assert.equal(provider.authorizationUrls.length, 2, 'the SDK started a step-up authorization');
    const stepUp = provider.authorizationUrls[1];
    checkAuthorizationRequest(stepUp, { clientId, scope: 'events:read' });
    // Signed in already: only the consent page, this time allowing everything.
    const allowed = await signIn(context, stepUp, { user: 'bob' });
    assert.deepEqual(allowed.steps, ['consent']);
    t = await finish(allowed.url);
    assert.ok(claimsOf(provider.tokens().access_token).scope.split(' ').includes('events:read'));
  }

  client = await connect(t);
  const tools = await client.listTools();
  assert.ok(tools.tools.some((tool) => tool.name === 'query_events'));
  const n = checkEvents(await client.callTool({ name: 'query_events', arguments: { limit: 5 } }), 'tenant-b');
  const triaged = await checkPrompts(client, 'tenant-b', 'svc-');

  // The response budget for this client: a page of up to 500 events stops at Claude Code's
  // cap (64 KiB), under the server's default (96 KiB), and says so.
  const page = await client.callTool({ name: 'query_events', arguments: { limit: 500 } });
  checkEvents(page, 'tenant-b');
  const bytes = Buffer.byteLength(JSON.stringify({ content: page.content, structuredContent: page.structuredContent }));
  assert.equal(page.structuredContent.stopped_by, 'bytes', `stopped by ${page.structuredContent.stopped_by}`);
  assert.ok(bytes <= 64 * 1024 && bytes > 48 * 1024, `a page of ${bytes} bytes for a 64 KiB client`);

  // Full-text search through the same client: every result is the user's and has the words.
  const found = await client.callTool({ name: 'search_events', arguments: { query: 'connection reset' } });
  assert.ok(!found.isError, JSON.stringify(found.content));
  const ids = found.structuredContent.results.map((r) => r.id);
  assert.ok(ids.length > 0, 'the sample has connection resets');
  assert.deepEqual(tenantsOf(ids), ['tenant-b']);
  assert.deepEqual(matchingIds('connection reset', ids), [...ids].sort((a, b) => a - b));
  await client.close();
  console.log(
    `typescript sdk v2 oauth${viaBridge ? ' through the bridge' : ''} (CIMD, PKCE, browser sign-in${viaBridge ? ' upstream' : ', scope step-up'}): ` +
      `ok, ${n} events of tenant-b, ${triaged} triaged through the prompts; ` +
      `${provider.authorizationUrls.length} authorization requests started by the SDK`,
  );
} finally {
  await closeBrowser(browser);
  await callback.close();
  cimd.close();
}
