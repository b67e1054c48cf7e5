#!/usr/bin/env bash
# MCP Inspector CLI against $MCP_URL: tools/list and tools/call, asserting the JSON it prints.
# Usage: MCP_URL=... NODE=path/to/node22 bash inspector.sh [legacy|auto]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
era="${1:-legacy}"
node="${NODE:-node}"
inspector=("$node" "$here/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js")
# The CLI writes ~/.mcp-inspector/storage: keep it out of the real home.
HOME="$(mktemp -d)"
export HOME
trap 'rm -rf "$HOME"' EXIT
args=(--cli "$MCP_URL" --transport http --protocol-era "$era" --format json --stored-auth-only)
if [ -n "${MCP_TOKEN:-}" ]; then args+=(--header "Authorization: Bearer $MCP_TOKEN"); fi

list="$("${inspector[@]}" "${args[@]}" --method tools/list </dev/null)"
call="$("${inspector[@]}" "${args[@]}" --method tools/call --tool-name test_simple_text </dev/null)"
"$node" -e '
  const [list, call] = process.argv.slice(1).map((s) => JSON.parse(s).result);
  if (!list.tools.some((t) => t.name === "test_simple_text")) throw new Error("tools/list: " + JSON.stringify(list));
  if (call.content[0].text !== "This is a simple text response for testing.") throw new Error("tools/call: " + JSON.stringify(call));
' "$list" "$call"
echo "inspector cli ($era): ok"
