// Load-benchmark peer: the benchmark's one tool (query_events for an entity) on the official
// TypeScript SDK, built the way the SDK's stateless example builds a server (Express app, a
// new McpServer and StreamableHTTPServerTransport per request, JSON responses), with the
// SDK's bearer middleware verifying RS256 tokens through jose and a pg pool of 16 over TLS.
// Environment: PORT, DATABASE_URL, DB_CA_FILE, JWKS_FILE, ISSUER, AUDIENCE.
import { readFileSync } from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { createLocalJWKSet, jwtVerify } from 'jose';
import pg from 'pg';
import * as z from 'zod/v4';

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};
const jwks = createLocalJWKSet(JSON.parse(readFileSync(env('JWKS_FILE'), 'utf8')));
const issuer = env('ISSUER');
const audience = env('AUDIENCE');
const pool = new pg.Pool({
  connectionString: env('DATABASE_URL'),
  ssl: { ca: readFileSync(env('DB_CA_FILE'), 'utf8') },
  max: 16,
});
const SEVERITIES = ['debug', 'info', 'notice', 'warning', 'error', 'critical'];

const verifier = {
  async verifyAccessToken(token) {
    try {
      const { payload } = await jwtVerify(token, jwks, { issuer, audience, algorithms: ['RS256'] });
      return {
        token,
        clientId: String(payload.client_id ?? payload.sub),
        scopes: String(payload.scope ?? '').split(' ').filter(Boolean),
        expiresAt: payload.exp,
        extra: { tenant: payload.tenant_id },
      };
    } catch {
      throw new InvalidTokenError('Invalid token');
    }
  },
};

async function queryEvents(tenant, entityId, limit) {
  const client = await pool.connect();
  try {
    await client.query('BEGIN READ ONLY');
    await client.query("SELECT set_config('app.tenant_id', $1, true)", [tenant]);
    const { rows } = await client.query(
      `SELECT id, entity_id, entity_type, event_type, severity, occurred_at, tags, structured, ai_summary
         FROM events WHERE entity_id = $1 ORDER BY occurred_at DESC, id DESC LIMIT $2`,
      [entityId, limit + 1],
    );
    await client.query('COMMIT');
    return rows;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

const eventShape = z.object({
  id: z.number(),
  entity_id: z.string(),
  entity_type: z.string(),
  event_type: z.string(),
  severity: z.string(),
  occurred_at: z.string(),
  tags: z.array(z.string()),
  structured: z.record(z.string(), z.unknown()),
  ai_summary: z.string().nullable(),
});

function getServer() {
  const server = new McpServer({ name: 'peer-typescript', version: '1.0.0' });
  server.registerTool(
    'query_events',
    {
      description: 'Events of the caller\'s tenant for one entity, newest first.',
      inputSchema: { entity_id: z.string(), limit: z.number().int().min(1).max(500).default(50) },
      outputSchema: {
        count: z.number(),
        events: z.array(eventShape),
        limit: z.number(),
        truncated: z.boolean(),
      },
    },
    async ({ entity_id, limit }, extra) => {
      const tenant = extra.authInfo?.extra?.tenant;
      if (typeof tenant !== 'string') {
        return { isError: true, content: [{ type: 'text', text: 'The token names no tenant.' }] };
      }
      const rows = await queryEvents(tenant, entity_id, limit);
      const events = rows.slice(0, limit).map((r) => ({
        id: Number(r.id),
        entity_id: r.entity_id,
        entity_type: r.entity_type,
        event_type: r.event_type,
        severity: SEVERITIES[r.severity] ?? String(r.severity),
        occurred_at: r.occurred_at.toISOString(),
        tags: r.tags,
        structured: r.structured,
        ai_summary: r.ai_summary,
      }));
      const out = { count: events.length, events, limit, truncated: rows.length > limit };
      return { content: [{ type: 'text', text: JSON.stringify(out) }], structuredContent: out };
    },
  );
  return server;
}

const app = createMcpExpressApp();
app.post('/mcp', requireBearerAuth({ verifier }), async (req, res) => {
  const server = getServer();
  try {
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    res.on('close', () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  } catch {
    if (!res.headersSent) {
      res.status(500).json({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal server error' }, id: null });
    }
  }
});
const port = Number(env('PORT'));
app.listen(port, '127.0.0.1', () => console.error(`peer-typescript on http://127.0.0.1:${port}/mcp`));
