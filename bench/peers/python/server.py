"""Load-benchmark peer: the benchmark's one tool (query_events for an entity) on the official
Python SDK, built the way its documentation builds a stateless Streamable HTTP server
(MCPServer with stateless_http and json_response, a TokenVerifier checking RS256 tokens with
PyJWT, an asyncpg pool of 16 over TLS), served by uvicorn in one process.

Environment: PORT, DATABASE_URL, DB_CA_FILE, JWKS_FILE, ISSUER, AUDIENCE.
"""

import asyncio
import json
import os
import ssl

import asyncpg
import jwt
import uvicorn
from pydantic import BaseModel

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

ISSUER = os.environ["ISSUER"]
AUDIENCE = os.environ["AUDIENCE"]
SEVERITIES = ["debug", "info", "notice", "warning", "error", "critical"]

with open(os.environ["JWKS_FILE"]) as f:
    KEYS = {k["kid"]: jwt.PyJWK(k) for k in json.load(f)["keys"]}


class JwtVerifier:
    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            kid = jwt.get_unverified_header(token).get("kid")
            claims = jwt.decode(
                token, KEYS[kid].key, algorithms=["RS256"], audience=AUDIENCE, issuer=ISSUER,
                options={"require": ["exp", "iss", "aud"]},
            )
        except (jwt.PyJWTError, KeyError):
            return None
        return AccessToken(
            token=token,
            client_id=str(claims.get("client_id", claims.get("sub"))),
            scopes=str(claims.get("scope", "")).split(),
            expires_at=claims["exp"],
            subject=claims.get("sub"),
            claims=claims,
        )


class Event(BaseModel):
    id: int
    entity_id: str
    entity_type: str
    event_type: str
    severity: str
    occurred_at: str
    tags: list[str]
    structured: dict
    ai_summary: str | None


class Page(BaseModel):
    count: int
    events: list[Event]
    limit: int
    truncated: bool


_pool: asyncpg.Pool | None = None
_pool_lock = asyncio.Lock()


async def pool() -> asyncpg.Pool:
    global _pool
    async with _pool_lock:
        if _pool is None:
            async def init(conn):
                await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")

            tls = ssl.create_default_context(cafile=os.environ["DB_CA_FILE"])
            # statement_cache_size=0: the pooler runs in transaction mode (asyncpg's advice).
            _pool = await asyncpg.create_pool(
                os.environ["DATABASE_URL"], ssl=tls, min_size=1, max_size=16,
                statement_cache_size=0, init=init,
            )
    return _pool


mcp = MCPServer(
    "peer-python",
    token_verifier=JwtVerifier(),
    auth=AuthSettings(issuer_url=ISSUER, resource_server_url=AUDIENCE, validate_token_resource=False),
)


@mcp.tool()
async def query_events(entity_id: str, limit: int = 50) -> Page:
    """Events of the caller's tenant for one entity, newest first."""
    limit = max(1, min(limit, 500))
    token = get_access_token()
    tenant = (token.claims or {}).get("tenant_id") if token else None
    if not isinstance(tenant, str):
        raise ValueError("The token names no tenant.")
    async with (await pool()).acquire() as conn:
        async with conn.transaction(readonly=True):
            await conn.execute("SELECT set_config('app.tenant_id', $1, true)", tenant)
            rows = await conn.fetch(
                "SELECT id, entity_id, entity_type, event_type, severity, occurred_at, tags, structured, ai_summary "
                "FROM events WHERE entity_id = $1 ORDER BY occurred_at DESC, id DESC LIMIT $2",
                entity_id, limit + 1,
            )
    events = [
        Event(
            id=r["id"], entity_id=r["entity_id"], entity_type=r["entity_type"], event_type=r["event_type"],
            severity=SEVERITIES[r["severity"]], occurred_at=r["occurred_at"].isoformat(), tags=r["tags"],
            structured=r["structured"], ai_summary=r["ai_summary"],
        )
        for r in rows[:limit]
    ]
    return Page(count=len(events), events=events, limit=limit, truncated=len(rows) > limit)


if __name__ == "__main__":
    app = mcp.streamable_http_app(json_response=True, stateless_http=True)
    uvicorn.run(app, host="127.0.0.1", port=int(os.environ["PORT"]), log_level="warning", access_log=False)
