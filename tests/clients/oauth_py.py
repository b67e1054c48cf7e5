"""The Python `mcp` OAuth client against the served `mcp` function, from nothing.

401 challenge -> protected resource metadata -> authorization server metadata -> Dynamic Client
Registration -> authorization code + PKCE + resource -> the user signs in by submitting the
authorization server's real login and consent forms over HTTP -> code exchange (the SDK checks
RFC 9207 `iss`) -> tools/list and tools/call (2026-07-28), whose events must all be the
user's tenant. Then the access token (5 s for this client) expires and the SDK refreshes it
before the next call, without the user. Last, a token the same authorization server issued
for another resource (RFC 8707) is refused by the endpoint with 401 invalid_token.

Usage: AS_ISSUER=... MCP_URL=... PG_DATABASE=... python oauth_py.py
"""

import asyncio
import base64
import hashlib
import json
import os
import re
import secrets
import ssl
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urljoin, urlparse

import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata
from mcp.types import PromptReference

ISSUER = os.environ["AS_ISSUER"]
MCP_URL = os.environ["MCP_URL"]
OTHER_RESOURCE = os.environ.get("OTHER_RESOURCE_URL", "https://other-api.example/")
REDIRECT_URI = "http://127.0.0.1:33418/callback"  # never listened on: the Location is read


class HttpsFiles:
    """JSON documents served on https://127.0.0.1 with the certificate in CIMD_LEAF_CERT and
    CIMD_LEAF_KEY (one the server under test trusts): client metadata documents, a JWKS. Counts
    the requests per path."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.hits: dict[str, int] = {}
        server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
        self.base = f"https://127.0.0.1:{server.server_address[1]}"
        files, hits = self.files, self.hits

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (the http.server API)
                hits[self.path] = hits.get(self.path, 0) + 1
                body = files.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *_):
                pass

        server.RequestHandlerClass = Handler
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(os.environ["CIMD_LEAF_CERT"], os.environ["CIMD_LEAF_KEY"])
        server.socket = context.wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"{self.base}{path}"

    def publish(self, path: str, document: dict) -> str:
        self.files[path] = json.dumps(document).encode()
        return self.url(path)


def remember(*secrets_handled: str | None) -> None:
    """Records secrets this chain handled, so scripts/test can check no log holds them."""
    path = os.environ.get("OAUTH_SECRETS_FILE")
    if path:
        with open(path, "a") as f:
            f.writelines(f"{s}\n" for s in secrets_handled if s)


def claims_of(token: str) -> dict:
    part = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


class Storage:
    def __init__(self) -> None:
        self.tokens = None
        self.client_info = None
        self.saved = []

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens) -> None:
        remember(tokens.access_token, tokens.refresh_token)
        self.tokens = tokens
        self.saved.append(tokens)

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info) -> None:
        self.client_info = client_info


async def sign_in(authorization_url: str, user: str, redirect_uri: str = REDIRECT_URI) -> dict:
    """Acts as the user in the authorization server's own pages, over HTTP: follows the
    redirects to the login page, submits the login form, then the consent form with every
    offered scope checked (and, through the OAuth bridge, approves on the bridge's own consent
    page first; the client keeps the bridge's cookie like a browser). Returns the parameters
    of the redirect to the client."""
    async with httpx2.AsyncClient(follow_redirects=False, timeout=15) as http:
        url, steps = authorization_url, []
        for _ in range(12):
            response = await http.get(url)
            if response.status_code in (302, 303):
                url = urljoin(url, response.headers["location"])
                if url.startswith(redirect_uri):
                    params = {k: v[0] for k, v in parse_qs(urlparse(url).query).items()}
                    return {"steps": steps, **params}
                continue
            assert response.status_code == 200, (response.status_code, response.text[:200])
            action = re.search(r'<form method="post" action="([^"]+)"', response.text)
            assert action, response.text[:300]
            if action.group(1).endswith("/login"):
                steps.append("login")
                form = {"username": user, "password": f"{user}-password"}
            elif action.group(1).endswith("/oauth/consent"):
                # The OAuth bridge's own consent page, before it sends the user upstream.
                steps.append("bridge-consent")
                hidden = re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', response.text)
                assert hidden, response.text[:300]
                form = hidden + [("decision", "approve")]
            else:
                steps.append("consent")
                scopes = re.findall(r'name="scope" value="([^"]+)" checked', response.text)
                form = [("scope", s) for s in scopes] + [("decision", "allow")]
            posted = await http.post(
                urljoin(url, action.group(1)),
                content=urlencode(form),
                headers={"content-type": "application/x-www-form-urlencoded"},
            )
            assert posted.status_code == 303, (posted.status_code, posted.text[:300])
            url = urljoin(url, posted.headers["location"])
        raise AssertionError(f"the sign-in did not end: {steps}")


def public_client(name: str) -> OAuthClientMetadata:
    """What an MCP client registers: public (no secret), code and refresh grants, the loopback
    redirect URI whose Location the chain reads."""
    return OAuthClientMetadata(
        client_name=name,
        redirect_uris=[REDIRECT_URI],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )


def tenants_of(ids: list[int]) -> list[str]:
    out = subprocess.run(
        ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", os.environ["PG_DATABASE"], "-qtA", "-c",
         f"SELECT DISTINCT tenant_id FROM events WHERE id IN ({','.join(str(int(i)) for i in ids)})"],
        check=True, capture_output=True, text=True,
    ).stdout.split()
    return out


def check_events(result, tenant: str) -> int:
    assert not result.is_error, result
    events = result.structured_content["events"]
    assert events, "no events"
    assert tenants_of([e["id"] for e in events]) == [tenant]
    return len(events)


async def check_resources(client, event_id: int) -> None:
    """The resources, through the real client: listed, and one event read by the id a tool gave."""
    listed = await client.list_resources()
    assert [str(r.uri) for r in listed.resources] == ["event-store://event-types"], listed
    templates = await client.list_resource_templates()
    assert "event-store://events/{id}" in [t.uri_template for t in templates.resource_templates], templates
    catalog = json.loads((await client.read_resource("event-store://event-types")).contents[0].text)
    assert catalog["event_types"] and not catalog["truncated"], catalog
    uri = f"event-store://events/{event_id}"
    read = await client.read_resource(uri)
    event = json.loads(read.contents[0].text)["event"]
    assert str(read.contents[0].uri) == uri and event["id"] == event_id, read
    assert tenants_of([event["id"]]) == ["tenant-a"]


def matching(query: str, ids: list[int]) -> list[int]:
    """The ids among `ids` whose stored text matches the full-text `query`, asked of the database."""
    # On standard input: psql interpolates :'q' (quoted as a literal) there, not in -c.
    out = subprocess.run(
        ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", os.environ["PG_DATABASE"], "-qtA",
         "-v", f"q={query}", "-f", "-"],
        input=f"SELECT id FROM events WHERE id IN ({','.join(str(int(i)) for i in ids)}) "
        "AND search @@ websearch_to_tsquery('english', :'q') ORDER BY id;",
        check=True, capture_output=True, text=True,
    ).stdout.split()
    return [int(i) for i in out]


async def check_search(client) -> int:
    """search_events, then the ChatGPT pair: every result is the user's and really has the words."""
    found = await client.call_tool("search_events", {"query": "checkout timeout", "limit": 20})
    assert not found.is_error, found
    ids = [r["id"] for r in found.structured_content["results"]]
    assert ids, "the sample has checkout timeouts"
    assert tenants_of(ids) == ["tenant-a"]
    assert matching("checkout timeout", ids) == sorted(ids), (ids, matching("checkout timeout", ids))
    assert all("**" in r["snippet"] for r in found.structured_content["results"]), found
    pair = await client.call_tool("search", {"query": "checkout timeout"})
    results = json.loads(pair.content[0].text)["results"]
    assert len(pair.content) == 1 and results == pair.structured_content["results"], pair
    first = results[0]
    assert first["url"] == f"event-store://events/{first['id']}", first
    assert matching("checkout timeout", [int(first["id"])]) == [int(first["id"])]
    doc = json.loads((await client.call_tool("fetch", {"id": first["id"]})).content[0].text)
    assert doc["id"] == first["id"] and doc["title"] == first["title"] and doc["url"] == first["url"], doc
    assert "timeout" in doc["text"] and doc["metadata"]["entity_id"].startswith("svc-checkout"), doc
    assert tenants_of([int(doc["id"])]) == ["tenant-a"]
    return len(ids)


async def check_prompts(client) -> str:
    """The prompts through the real client: listed, an entity id completed, triage rendered."""
    listed = await client.list_prompts()
    assert [p.name for p in listed.prompts] == ["triage_incident", "what_changed", "daily_digest"], listed
    ref = PromptReference(type="ref/prompt", name="triage_incident")
    done = await client.complete(ref, {"name": "entity_id", "value": "svc-checkout"})
    values = done.completion.values
    assert values and all(v.startswith("svc-checkout") for v in values), done
    # Only the user's tenant's entities, as the database has them.
    out = subprocess.run(
        ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", os.environ["PG_DATABASE"], "-qtA", "-c",
         "SELECT entity_id FROM entity_state WHERE tenant_id = 'tenant-a' AND starts_with(entity_id, 'svc-checkout') "
         "ORDER BY entity_id COLLATE \"C\" LIMIT 100"],
        check=True, capture_output=True, text=True,
    ).stdout.split()
    assert values == out, (values, out)
    rendered = await client.get_prompt("triage_incident", {"entity_id": values[0], "window": "6h"})
    plan = rendered.messages[0].content.text
    assert "`query_events`" in plan and f'"entity_id":"{values[0]}"' in plan, plan
    state = rendered.messages[1].content.resource
    assert str(state.uri) == f"event-store://entities/{values[0]}/state", state
    assert json.loads(state.text)["entity_id"] == values[0], state
    return values[0]


async def sdk_chain() -> Storage:
    storage = Storage()
    redirects: list[str] = []

    async def redirect_handler(url: str) -> None:
        redirects.append(url)

    async def callback_handler() -> AuthorizationCodeResult:
        query = parse_qs(urlparse(redirects[-1]).query)
        assert query["code_challenge_method"] == ["S256"], query
        assert query["resource"] == [MCP_URL], query
        assert "events:read" in query["scope"][0].split(), query
        result = await sign_in(redirects[-1], "amir")
        assert result["steps"] == ["login", "consent"], result
        assert result["iss"] == ISSUER, result
        remember(result["code"])
        return AuthorizationCodeResult(code=result["code"], state=result.get("state"), iss=result["iss"])

    provider = OAuthClientProvider(
        server_url=MCP_URL,
        client_metadata=public_client("python mcp oauth test [short-lived]"),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    async with create_mcp_http_client(auth=provider) as http:
        async with Client(streamable_http_client(MCP_URL, http_client=http), mode="auto") as client:
            tools = await client.list_tools()
            assert "query_events" in [t.name for t in tools.tools]
            listed = await client.call_tool("query_events", {"limit": 5})
            n = check_events(listed, "tenant-a")
            await check_resources(client, listed.structured_content["events"][0]["id"])
            found = await check_search(client)
            triaged = await check_prompts(client)
            first = storage.tokens
            claims = claims_of(first.access_token)
            assert claims["iss"] == ISSUER and claims["aud"] == MCP_URL and claims["tenant_id"] == "tenant-a", claims
            assert storage.client_info.client_id and not storage.client_info.client_secret
            # Expiry: wait for the clock to pass `exp`; the SDK refreshes before sending.
            while time.time() < claims["exp"] + 1:
                await asyncio.sleep(0.2)
            check_events(await client.call_tool("query_events", {"limit": 5}), "tenant-a")
            assert storage.tokens.access_token != first.access_token, "not refreshed"
            assert len(redirects) == 1, "refreshed without the user"
    print(f"python mcp oauth (DCR, PKCE, sign-in forms, refresh, resources, search and fetch, prompts and completion): ok, {n} events and {found} search results of tenant-a, {triaged} triaged")
    return storage


async def foreign_resource(storage: Storage) -> None:
    """A real authorization code flow for another resource, with the client registered above;
    the endpoint must refuse the token it yields."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    async with httpx2.AsyncClient(timeout=15) as http:
        metadata = (await http.get(f"{ISSUER}/.well-known/oauth-authorization-server")).json()
        state = secrets.token_urlsafe(16)
        query = urlencode({
            "response_type": "code", "client_id": storage.client_info.client_id, "redirect_uri": REDIRECT_URI,
            "scope": "events:read", "resource": OTHER_RESOURCE, "state": state,
            "code_challenge": challenge, "code_challenge_method": "S256",
        })
        result = await sign_in(f"{metadata['authorization_endpoint']}?{query}", "amir")
        assert result["state"] == state and result["iss"] == ISSUER, result
        token = await http.post(metadata["token_endpoint"], data={
            "grant_type": "authorization_code", "code": result["code"], "redirect_uri": REDIRECT_URI,
            "client_id": storage.client_info.client_id, "code_verifier": verifier, "resource": OTHER_RESOURCE,
        })
        assert token.status_code == 200, token.text
        access = token.json()["access_token"]
        remember(result["code"], verifier, access)
        assert claims_of(access)["aud"] == OTHER_RESOURCE, claims_of(access)
        answer = await http.post(MCP_URL, headers={
            "authorization": f"Bearer {access}", "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        }, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert answer.status_code == 401, (answer.status_code, answer.text)
        challenge_header = answer.headers["www-authenticate"]
        assert 'error="invalid_token"' in challenge_header and "resource_metadata=" in challenge_header, challenge_header
        assert access not in answer.text
    print("a token the same authorization server issued for another resource: refused, 401 invalid_token")


async def main() -> None:
    storage = await sdk_chain()
    await foreign_resource(storage)


if __name__ == "__main__":
    asyncio.run(main())
