// The local OAuth 2.1 authorization server that `scripts/dev` and `scripts/test` run beside
// the endpoint, so that MCP clients connect to the local endpoint exactly as they connect to
// a deployment: 401 challenge -> protected resource metadata -> this server's metadata ->
// registration (Dynamic Client Registration, RFC 7591, or a Client ID Metadata Document) ->
// authorization code with PKCE S256 and `resource` (RFC 8707) -> a JWT access token
// (RFC 9068, `typ: at+jwt`) whose `aud` is the MCP URL -> tools.
//
// The library is oidc-provider (OpenID Certified); everything below is configuration, the
// development accounts, and the login and consent pages. Loopback only; the in-memory store
// forgets everything when the process ends. Development and tests only.
//
// Environment:
//   MCP_RESOURCE_URL  (required) the MCP URL: the only resource this server issues tokens for,
//                     besides OTHER_RESOURCE_URL
//   AS_PORT           port on 127.0.0.1 (default 9100); the issuer is http://127.0.0.1:AS_PORT
//   OTHER_RESOURCE_URL  a second resource server (default https://other-api.example/) so tests
//                     can show that a token for another resource is refused by the endpoint
//   SIGNING_KEY_FILE  PEM private key the tokens are signed with (default ../signing-key.pem:
//                     the public development key, so `devtoken` tokens verify with the same
//                     JWKS and a pasted dev token keeps working)
//
// Upstream mode (UPSTREAM_CLIENT_ID set): the server stands in for Amazon Cognito behind the
// OAuth bridge (functions/oauth). Like a Cognito user pool it offers no registration (neither
// DCR nor client metadata documents) and no resource indicators; it knows one confidential
// client, the bridge's, and puts the user's tenant and groups in the ID token as Cognito does
// (`custom:tenant_id`, `cognito:groups`). MCP_RESOURCE_URL is not used.
//   UPSTREAM_CLIENT_ID, UPSTREAM_CLIENT_SECRET  the bridge's client at this server
//   UPSTREAM_REDIRECT_URI  the bridge's callback, the client's one redirect URI
import { createPrivateKey, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import Provider, { errors } from 'oidc-provider';

const here = dirname(fileURLToPath(import.meta.url));
const port = Number(process.env.AS_PORT ?? 9100);
const issuer = `http://127.0.0.1:${port}`;
const resource = process.env.MCP_RESOURCE_URL;
const otherResource = process.env.OTHER_RESOURCE_URL ?? 'https://other-api.example/';
const RESOURCES = [resource, otherResource];
const upstreamClient = process.env.UPSTREAM_CLIENT_ID;
if (upstreamClient && !(process.env.UPSTREAM_CLIENT_SECRET && process.env.UPSTREAM_REDIRECT_URI)) {
  console.error('upstream mode needs UPSTREAM_CLIENT_SECRET and UPSTREAM_REDIRECT_URI');
  process.exit(2);
}
if (!resource && !upstreamClient) {
  console.error('MCP_RESOURCE_URL is required (the MCP URL tokens are issued for)');
  process.exit(2);
}

// The scopes the endpoint defines (every tool needs events:read); openid and offline_access
// are the OpenID/refresh scopes clients may add.
const RESOURCE_SCOPES = ['events:read'];

// Development accounts, in two tenants. Public by design, like dev/signing-key.pem.
// In upstream mode the groups decide the bridge's scopes (OAUTH_GROUP_SCOPES); carol is in
// none, so the bridge refuses her.
const ACCOUNTS = {
  alice: { password: 'alice-password', tenant: 'tenant-a', name: 'Alice (tenant-a)', groups: ['readers'] },
  amir: { password: 'amir-password', tenant: 'tenant-a', name: 'Amir (tenant-a)', groups: ['readers'] },
  bob: { password: 'bob-password', tenant: 'tenant-b', name: 'Bob (tenant-b)', groups: ['readers'] },
  carol: { password: 'carol-password', tenant: 'tenant-b', name: 'Carol (no group)', groups: [] },
};

// Clients whose registered client_name contains this marker get access tokens that live 5 s,
// so the test suite can watch a client refresh an expired token without waiting an hour.
const SHORT_LIVED_MARKER = '[short-lived]';

// The development signing key, with the kid dev/jwks.json publishes.
const signingKey = {
  ...createPrivateKey(readFileSync(process.env.SIGNING_KEY_FILE ?? join(here, '..', 'signing-key.pem'))).export({
    format: 'jwk',
  }),
  kid: 'dev-rs256-1',
  alg: 'RS256',
  use: 'sig',
};

const isLoopbackOrigin = (origin) => {
  const url = URL.parse(origin ?? '');
  return url !== null && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
};

// What differs in upstream mode (see the top of this file).
const upstreamOptions = {
  clients: [
    {
      client_id: upstreamClient,
      client_secret: process.env.UPSTREAM_CLIENT_SECRET,
      client_name: 'OAuth bridge',
      redirect_uris: [process.env.UPSTREAM_REDIRECT_URI],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  scopes: ['openid', 'email', 'profile'],
  claims: { openid: ['sub', 'custom:tenant_id', 'cognito:groups'], email: ['email'], profile: ['name'] },
  // Cognito's ID tokens carry the user's attributes and groups themselves.
  conformIdTokenClaims: false,
  async findAccount(_ctx, sub) {
    const account = ACCOUNTS[sub];
    if (!account) return undefined;
    return {
      accountId: sub,
      claims: async () => ({
        sub,
        name: account.name,
        email: `${sub}@example.com`,
        'custom:tenant_id': account.tenant,
        'cognito:groups': account.groups,
      }),
    };
  },
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: false },
    revocation: { enabled: false },
  },
};

const provider = new Provider(issuer, {
  jwks: { keys: [signingKey] },
  // Every client registers itself (DCR or CIMD); nothing is preconfigured.
  clients: [],
  clientDefaults: {
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  },
  // Native MCP clients (Cursor, Claude Code, VS Code) register or publish loopback and app-scheme
  // redirect URIs without saying `application_type: native`, and oidc-provider then judges them
  // as web clients: it refuses Cursor's `cursor://` URI ("must only contain web uris") and
  // holds Claude Code's portless `http://localhost/callback` to its exact port. A client whose
  // redirect URIs are a native app's (RFC 8252: loopback http, a private-use scheme, claimed
  // https) and include a loopback or app one is made native here, which is what RFC 8252 §7 and
  // §8.4 ask of an authorization server (any loopback port; app schemes with PKCE). The hook is
  // the one oidc-provider gives for client metadata; `mcp_native_hint` itself is never set.
  extraClientMetadata: {
    properties: ['mcp_native_hint'],
    validator(_ctx, _key, _value, metadata) {
      const uris = (metadata.redirect_uris ?? []).map((u) => URL.parse(u)).filter(Boolean);
      const local = (u) => ['localhost', '127.0.0.1', '[::1]'].includes(u.hostname);
      const loopback = (u) => u.protocol === 'http:' && local(u);
      const app = (u) => !['http:', 'https:'].includes(u.protocol);
      const claimed = (u) => u.protocol === 'https:' && !local(u);
      if (uris.length && uris.some((u) => loopback(u) || app(u)) && uris.every((u) => loopback(u) || app(u) || claimed(u))) {
        metadata.application_type = 'native';
      }
    },
  },
  responseTypes: ['code'],
  // OAuth 2.1 / MCP authorization: PKCE for every client; oidc-provider 9 knows only S256.
  pkce: { required: () => true },
  scopes: ['openid', 'offline_access', ...RESOURCE_SCOPES],
  claims: { openid: ['sub'], profile: ['name'] },
  async findAccount(_ctx, sub) {
    const account = ACCOUNTS[sub];
    if (!account) return undefined;
    return { accountId: sub, claims: async () => ({ sub, name: account.name }) };
  },
  // The endpoint reads the tenant from this claim (AUTH_TENANT_CLAIM=tenant_id): it comes from
  // the signed-in account, never from the client.
  async extraTokenClaims(_ctx, token) {
    const account = ACCOUNTS[token.accountId];
    return account ? { tenant_id: account.tenant } : undefined;
  },
  // Refresh tokens for every client that registered the grant (MCP clients do), not only for
  // those that ask for offline_access.
  async issueRefreshToken(_ctx, client) {
    return client.grantTypeAllowed('refresh_token');
  },
  // A remembered consent is reused, unless the new authorization asks for a scope the user
  // unchecked before: then the user is asked again (that is how a client steps up after a
  // 403 insufficient_scope).
  async loadExistingGrant(ctx) {
    const decided = ctx.oidc.result?.consent?.grantId;
    const grantId = decided || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    const grant = grantId ? await ctx.oidc.provider.Grant.find(grantId) : undefined;
    if (!grant || decided) return grant;
    const rejected = new Set([
      ...grant.getRejectedOIDCScope().split(' '),
      ...RESOURCES.filter(Boolean).flatMap((r) => grant.getRejectedResourceScope(r).split(' ')),
    ]);
    const asked = String(ctx.oidc.params.scope ?? '').split(' ');
    return asked.some((s) => s && rejected.has(s)) ? undefined : grant;
  },
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true, initialAccessToken: false },
    revocation: { enabled: true },
    clientIdMetadataDocument: {
      enabled: true,
      ack: 'draft-02',
      // The library already requires an https client_id without fragments or credentials.
      allowFetch: async () => true,
    },
    resourceIndicators: {
      enabled: true,
      // A client that names no resource gets a token for the MCP URL.
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo(_ctx, indicator, client) {
        if (!RESOURCES.includes(indicator)) throw new errors.InvalidTarget();
        const short = client.clientName?.includes(SHORT_LIVED_MARKER);
        return {
          scope: RESOURCE_SCOPES.join(' '),
          audience: indicator,
          accessTokenTTL: short ? 5 : 3600,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  // Browser-based clients (MCP Inspector) call the token and registration endpoints from
  // their own loopback origin.
  clientBasedCORS: (_ctx, origin) => isLoopbackOrigin(origin),
  // The library refuses to fetch client metadata documents from special-use addresses
  // (loopback, private ranges) to prevent SSRF. This server is loopback-only and its tests
  // publish their documents on https://127.0.0.1, so a literal loopback client_id is fetched
  // directly; every other host keeps the library's protection.
  fetch(url, options) {
    if (URL.parse(String(url))?.hostname === '127.0.0.1') delete options.dispatcher;
    return globalThis.fetch(url, options);
  },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  cookies: { keys: [randomBytes(32).toString('base64url')] },
  ttl: {
    // The resource server's own TTL (getResourceServerInfo above), else an hour.
    AccessToken: (_ctx, token) => token.resourceServer?.accessTokenTTL ?? 3600,
    AuthorizationCode: 60,
    Interaction: 600,
    Session: 3600,
    Grant: 3600,
    RefreshToken: 86400,
  },
  renderError(ctx, out) {
    ctx.type = 'html';
    ctx.body = page('Sign-in error', `<p class="error">${escape(out.error)}: ${escape(out.error_description ?? '')}</p>`);
  },
  ...(upstreamClient ? upstreamOptions : {}),
});

// RFC 6749 §3.3: a request without `scope` is processed with a default, the scopes the MCP
// endpoint defines (as the OAuth bridge does), rather than ending with nothing granted.
provider.use(async (ctx, next) => {
  const params = new URLSearchParams(ctx.querystring);
  if (ctx.path === '/auth' && !params.has('scope')) {
    params.set('scope', RESOURCE_SCOPES.join(' '));
    ctx.querystring = params.toString();
  }
  await next();
});

// RFC 8414 §3: clients that follow MCP 2025-06-18 look only here; oidc-provider serves the
// same document at the OpenID discovery path.
provider.use(async (ctx, next) => {
  if (ctx.path === '/.well-known/oauth-authorization-server') ctx.path = '/.well-known/openid-configuration';
  await next();
});

// Why a request was refused, in the log (the library's detail, never a code or token).
for (const event of ['grant.error', 'authorization.error', 'registration_create.error', 'server_error']) {
  provider.on(event, (_ctx, err) => {
    console.log(JSON.stringify({ msg: event, error: err.error ?? err.name, detail: err.error_detail ?? err.message }));
  });
}

const escape = (s) =>
  String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);

function page(title, body) {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title>
<style>body{font:16px system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem}
label{display:block;margin:.6rem 0}input[type=text],input[type=password]{width:100%;padding:.4rem}
button{padding:.5rem 1rem;margin-right:.5rem}.error{color:#b00}.hint{color:#555;font-size:.9rem}</style>
</head><body><h1>${escape(title)}</h1>${body}</body></html>`;
}

function loginPage(uid, client, error) {
  return page(
    'Sign in',
    `<p><b>${escape(client.clientName ?? client.clientId)}</b> wants to read the event store.</p>
${error ? `<p class="error" role="alert">${escape(error)}</p>` : ''}
<form method="post" action="/interaction/${uid}/login" autocomplete="off">
<label>User name <input type="text" name="username" required autofocus></label>
<label>Password <input type="password" name="password" required></label>
<button type="submit">Sign in</button>
</form>
<p class="hint">Development accounts: alice and amir (tenant-a), bob (tenant-b); the password is
the user name followed by <code>-password</code>.</p>`,
  );
}

function consentPage(uid, client, details, accountId) {
  const scopes = [
    ...(details.missingOIDCScope ?? []),
    ...Object.values(details.missingResourceScopes ?? {}).flat(),
  ];
  const resources = Object.keys(details.missingResourceScopes ?? {});
  const boxes = [...new Set(scopes)]
    .map((s) => `<label><input type="checkbox" name="scope" value="${escape(s)}" checked> ${escape(s)}</label>`)
    .join('\n');
  return page(
    'Allow access?',
    `<p>Signed in as <b>${escape(ACCOUNTS[accountId]?.name ?? accountId)}</b>.</p>
<p><b>${escape(client.clientName ?? client.clientId)}</b> asks for:</p>
<form method="post" action="/interaction/${uid}/confirm">
${boxes}
${resources.length ? `<p class="hint">For: ${resources.map(escape).join(', ')}</p>` : ''}
<button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>`,
  );
}

async function readForm(req) {
  let body = '';
  for await (const chunk of req) {
    body += chunk;
    if (body.length > 65536) throw new Error('form too large');
  }
  return new URLSearchParams(body);
}

function send(res, status, html) {
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'x-frame-options': 'DENY',
    // No form-action: browsers apply it to the redirects after a submission, and the consent
    // form's redirect chain ends at the client's own redirect URI.
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
  });
  res.end(html);
}

// The login and consent steps (oidc-provider's interaction API). Every step is bound to the
// browser that started it by the library's interaction cookie.
async function interaction(req, res, uid, action) {
  const details = await provider.interactionDetails(req, res);
  if (details.uid !== uid) return send(res, 400, page('Sign-in error', '<p class="error">Unknown sign-in.</p>'));
  const client = await provider.Client.find(details.params.client_id);
  const { prompt } = details;

  if (req.method === 'GET' && !action) {
    if (prompt.name === 'login') return send(res, 200, loginPage(uid, client));
    return send(res, 200, consentPage(uid, client, prompt.details, details.session?.accountId));
  }
  if (req.method !== 'POST') return send(res, 405, page('Sign-in error', '<p class="error">Method not allowed.</p>'));
  const form = await readForm(req);

  if (action === 'login' && prompt.name === 'login') {
    const username = form.get('username') ?? '';
    const account = ACCOUNTS[username];
    if (!account || account.password !== form.get('password')) {
      console.log(JSON.stringify({ msg: 'login refused', client_id: client.clientId }));
      return send(res, 401, loginPage(uid, client, 'Unknown user name or wrong password.'));
    }
    console.log(JSON.stringify({ msg: 'login', account: username, client_id: client.clientId }));
    return provider.interactionFinished(req, res, { login: { accountId: username } }, { mergeWithLastSubmission: false });
  }

  if (action === 'confirm' && prompt.name === 'consent') {
    if (form.get('decision') !== 'allow') {
      return provider.interactionFinished(req, res, {
        error: 'access_denied',
        error_description: 'The user denied access.',
      });
    }
    // Only what the user left checked is granted: a client can end up with fewer scopes than
    // it asked for, and must step up when the endpoint names the missing one.
    const chosen = new Set(form.getAll('scope'));
    const { accountId } = details.session;
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId, clientId: client.clientId });
    // A scope left unchecked is recorded as rejected, so it is not asked for again in this
    // authorization (the token is issued without it); a later authorization may ask again.
    const split = (scopes) => [scopes.filter((s) => chosen.has(s)).join(' '), scopes.filter((s) => !chosen.has(s)).join(' ')];
    const [oidcGranted, oidcRejected] = split(prompt.details.missingOIDCScope ?? []);
    if (oidcGranted) grant.addOIDCScope(oidcGranted);
    if (oidcRejected) grant.rejectOIDCScope(oidcRejected);
    for (const [indicator, scopes] of Object.entries(prompt.details.missingResourceScopes ?? {})) {
      const [granted, rejected] = split(scopes);
      if (granted) grant.addResourceScope(indicator, granted);
      if (rejected) grant.rejectResourceScope(indicator, rejected);
    }
    const grantId = await grant.save();
    console.log(JSON.stringify({ msg: 'consent', account: accountId, client_id: client.clientId, scopes: [...chosen] }));
    return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  }
  return send(res, 400, page('Sign-in error', '<p class="error">This step does not fit the sign-in.</p>'));
}

const handle = provider.callback();
const server = createServer(async (req, res) => {
  const match = /^\/interaction\/([\w-]+)(?:\/(login|confirm))?$/.exec(req.url.split('?')[0]);
  if (!match) return handle(req, res);
  try {
    await interaction(req, res, match[1], match[2]);
  } catch (err) {
    // Expired or foreign interaction, a form that is too large: say so, never a stack.
    console.log(JSON.stringify({ msg: 'interaction failed', error: err.name }));
    if (!res.headersSent) send(res, 400, page('Sign-in error', `<p class="error">${escape(err.message)}</p>`));
  }
});
server.listen(port, '127.0.0.1', () => {
  console.log(JSON.stringify({ msg: 'authorization server ready', issuer, resource, upstream_mode: Boolean(upstreamClient) }));
});
