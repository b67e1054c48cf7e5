// TypeScript SDK v2 (@modelcontextprotocol/client) in auto mode: probes server/discover and must
// stay in 2026-07-28, then lists tools and calls one, asserting the answers.
// Usage: MCP_URL=... node ts2_client.mjs   (run from tests/clients)
import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const url = new URL(process.env.MCP_URL);
const token = process.env.MCP_TOKEN || '';
const mode = process.env.MCP_ERA || 'auto';
const transport = new StreamableHTTPClientTransport(url, {
  requestInit: { headers: token ? { Authorization: `Bearer ${token}` } : {} },
});
const client = new Client({ name: 'ts-v2-test', version: '1.0.0' }, { versionNegotiation: { mode } });
await client.connect(transport);
assert.equal(client.getServerVersion()?.name, 'mcp-conformance-fixture');
const tools = await client.listTools();
assert.ok(tools.tools.some((t) => t.name === 'test_simple_text'));
const result = await client.callTool({ name: 'test_simple_text', arguments: {} });
assert.equal(result.content[0].text, 'This is a simple text response for testing.');
await client.close();
console.log(`typescript sdk v2 client (${mode}): ok`);
