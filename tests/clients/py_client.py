"""Python `mcp` client against the endpoint: lists tools and calls one, asserting the answers.

Usage: MCP_URL=http://127.0.0.1:9000/lambda-url/conformance/mcp python py_client.py legacy|auto
  legacy: ClientSession + initialize (handshake era, 2025-11-25)
  auto:   mcp.Client, which probes server/discover first and must stay in 2026-07-28
"""
import asyncio
import os
import sys

from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

URL = os.environ["MCP_URL"]
TOKEN = os.environ.get("MCP_TOKEN", "")
HEADERS = {"Authorization": f"Bearer {TOKEN}"} if TOKEN else {}
EXPECTED_TEXT = "This is a simple text response for testing."


def check_tools(tools) -> None:
    names = [t.name for t in tools.tools]
    assert "test_simple_text" in names, names
    assert names == sorted(names, key=names.index), "order must be stable"


def check_call(result) -> None:
    assert not result.is_error, result
    assert result.content[0].text == EXPECTED_TEXT, result


async def legacy() -> None:
    async with create_mcp_http_client(headers=HEADERS) as http:
        async with streamable_http_client(URL, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                assert init.protocol_version == "2025-11-25", init.protocol_version
                check_tools(await session.list_tools())
                check_call(await session.call_tool("test_simple_text", {}))


async def auto() -> None:
    async with create_mcp_http_client(headers=HEADERS) as http:
        async with Client(streamable_http_client(URL, http_client=http), mode="auto") as client:
            tools = await client.list_tools()
            check_tools(tools)
            # The client defaults ttlMs to 0 for legacy servers; 60000 can only come from our
            # 2026-07-28 answer, so this proves the probe stayed modern.
            assert tools.ttl_ms == 60000, tools.ttl_ms
            check_call(await client.call_tool("test_simple_text", {}))


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "legacy"
    asyncio.run(legacy() if mode == "legacy" else auto())
    print(f"python mcp client ({mode}): ok")
