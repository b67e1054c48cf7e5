// TypeScript SDK v1 (@modelcontextprotocol/sdk): initialize, tools/list, tools/call, asserting the answers.
// Usage: MCP_URL=... node ts_client.mjs   (run from tests/clients, where the SDK is installed)
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const url = new URL(process.env.MCP_URL);
const token = process.env.MCP_TOKEN || '';
const transport = new StreamableHTTPClientTransport(url, {
  requestInit: { headers: token ? { Authorization: `Bearer ${token}` } : {} },
});
const client = new Client({ name: 'ts-v1-test', version: '1.0.0' });
await client.connect(transport);
assert.equal(transport.protocolVersion, '2025-11-25');
assert.equal(transport.sessionId, undefined, 'a stateless server must not mint a session');
const tools = await client.listTools();
assert.ok(tools.tools.some((t) => t.name === 'test_simple_text'));
const result = await client.callTool({ name: 'test_simple_text', arguments: {} });
assert.equal(result.content[0].text, 'This is a simple text response for testing.');
await client.close();
console.log('typescript sdk v1 client: ok');
