// The OAuth bridge's own consent page in a real browser (Debian chromium), against the served
// bridge and its upstream (the development authorization server without registration):
//   1. the user connects a client of their own: the bridge's page names it, Approve, then the
//      upstream's login and consent, and the client gets a code;
//   2. the confused-deputy attack: someone registered a client with their own redirect URI and
//      sends the user its link; the user has an upstream session, yet the browser stops at the
//      bridge's page, which names the redirect's host; Deny sends the attacker access_denied;
//   3. the page cannot be framed by another site;
//   4. an approval is remembered in this browser for that client (no page the second time), and
//      nowhere else (another browser sees the page);
//   5. the upstream's answer completes once: the same callback URL again, or in another
//      browser, is refused.
// Usage (from tests/clients): AS_ISSUER=<bridge issuer> MCP_URL=... node bridge_consent.mjs
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';

import {
  ISSUER, MCP_URL, actAsUser, callbackListener, checkAuthorizationResponse, closeBrowser, launchBrowser,
  registerPublicClient, remember,
} from './oauth_kit.mjs';

const metadata = await (await fetch(`${ISSUER}/.well-known/oauth-authorization-server`)).json();

const register = (name, redirectUri) => registerPublicClient(metadata, name, redirectUri);

function authorizationUrl(clientId, redirectUri, state) {
  const verifier = randomBytes(32).toString('base64url');
  remember(verifier);
  const url = new URL(metadata.authorization_endpoint);
  const params = {
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    state,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    resource: MCP_URL,
    scope: 'events:read',
  };
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return url;
}

const browser = await launchBrowser();
const own = await callbackListener();
const attacker = await callbackListener();
try {
  const context = await browser.newContext();

  // 1. The user's own client.
  const mine = await register('My research notebook', own.url);
  const page = await context.newPage();
  const shown = await page.goto(authorizationUrl(mine, own.url, 'mine-1').href);
  assert.equal(shown.status(), 200);
  const headers = shown.headers();
  assert.match(headers['content-security-policy'], /frame-ancestors 'none'/);
  assert.equal(headers['cache-control'], 'no-store');
  await page.getByRole('heading', { name: /My research notebook/ }).waitFor();
  assert.equal(await page.textContent('strong.host'), new URL(own.url).host);
  await page.getByText('a program on this computer').waitFor();
  let callbacks = [];
  page.on('request', (r) => r.url().startsWith(`${ISSUER}/oauth/callback`) && callbacks.push(r.url()));
  const approved = await actAsUser(page, own.url, () => page.getByRole('button', { name: 'Approve' }).click(), {
    user: 'alice',
  });
  assert.deepEqual(approved.steps, ['login', 'consent']);
  checkAuthorizationResponse(approved.url, 'mine-1');
  assert.equal(callbacks.length, 1, 'one answer from the upstream');
  const usedCallback = callbacks[0];
  console.log('approved on the bridge\'s page, signed in upstream, code delivered to the client');

  // 2. The attack, in the same browser (the upstream session is live).
  const evil = await register('Claude', attacker.url);
  const trap = await context.newPage();
  await trap.goto(authorizationUrl(evil, attacker.url, 'evil-1').href);
  assert.ok(trap.url().startsWith(`${ISSUER}/oauth/authorize`), `left the bridge: ${trap.url()}`);
  await trap.getByText('it is not verified').waitFor();
  assert.equal(await trap.textContent('strong.host'), new URL(attacker.url).host);
  await Promise.all([
    trap.waitForURL((u) => u.href.startsWith(attacker.url), { waitUntil: 'commit' }),
    trap.getByRole('button', { name: 'Deny' }).click(),
  ]);
  const denied = new URL(trap.url());
  assert.equal(denied.searchParams.get('error'), 'access_denied');
  assert.equal(denied.searchParams.get('state'), 'evil-1');
  assert.equal(denied.searchParams.get('code'), null);
  console.log('a link to a client someone else registered stopped at the bridge\'s page; Deny: access_denied, no code');

  // 3. Framed by another site: the browser refuses to render it.
  const framer = await context.newPage();
  await framer.goto(attacker.url);
  await framer.evaluate((src) => {
    const frame = document.createElement('iframe');
    frame.src = src;
    document.body.appendChild(frame);
    return new Promise((resolve) => frame.addEventListener('load', resolve));
  }, authorizationUrl(evil, attacker.url, 'framed').href);
  const framed = framer.frames().find((f) => f !== framer.mainFrame());
  assert.ok(framed, 'the frame exists');
  assert.equal(await framed.$('button[value=approve]'), null, 'the consent page rendered inside a frame');
  console.log('framed by another origin: not rendered (frame-ancestors none)');

  // 4. Remembered here: the same client goes straight on (upstream session, consent given).
  callbacks = [];
  const again = await context.newPage();
  again.on('request', (r) => r.url().startsWith(`${ISSUER}/oauth/callback`) && callbacks.push(r.url()));
  const second = await actAsUser(again, own.url, () => again.goto(authorizationUrl(mine, own.url, 'mine-2').href), {
    user: 'alice',
  });
  assert.equal(second.bridgeConsents, 0, 'asked again in the browser that approved');
  checkAuthorizationResponse(second.url, 'mine-2');
  const elsewhere = await browser.newContext();
  const other = await elsewhere.newPage();
  await other.goto(authorizationUrl(mine, own.url, 'mine-3').href);
  await other.getByRole('button', { name: 'Approve' }).waitFor();
  console.log('approval remembered for that client in that browser; another browser is asked');

  // 5. The upstream's answer, replayed: in the same browser, then in another.
  for (const [tab, why] of [
    [again, 'already completed'],
    [other, 'another browser'],
  ]) {
    const replay = await tab.goto(usedCallback);
    assert.equal(replay.status(), 400, `${why}: ${replay.status()}`);
    assert.ok(!tab.url().startsWith(own.url), `${why}: reached the client`);
    await tab.getByText(why).waitFor();
  }
  console.log('a used callback URL is refused, here and in another browser');
  await elsewhere.close();
} finally {
  await own.close();
  await attacker.close();
  await closeBrowser(browser);
}
