"""The Python `mcp` OAuth client through the OAuth bridge (functions/oauth), from nothing.

The served `mcp` function trusts the bridge; the bridge signs users in at an upstream issuer
that offers no registration (dev/oauth/server.mjs in upstream mode, standing in for Cognito).
The SDK finds the bridge from the endpoint's 401, registers there (DCR) or names its Client ID
Metadata Document (served here over https on 127.0.0.1 with a certificate from a throwaway CA
the bridge is told to trust), and the user signs in on the upstream's real login and consent
pages, over HTTP. Checked: the SDK's RFC 9207 `iss`
is the bridge; the access token is the bridge's (typ at+jwt, aud the MCP URL, the user's
tenant from the upstream ID token); tools answer with that tenant's rows only, for two users
of two tenants; the 5 s token is refreshed by the SDK without the user; a user in no group is
refused at the bridge; a replayed code is refused and revokes the refresh token it issued.

Usage: AS_ISSUER=<bridge issuer> MCP_URL=... PG_DATABASE=... CIMD_LEAF_CERT=... CIMD_LEAF_KEY=...
       python bridge_py.py
"""

import asyncio
import base64
import hashlib
import json
import secrets
import time
from urllib.parse import parse_qs, urlencode, urlparse

import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import AuthorizationCodeResult

from oauth_py import (
    ISSUER, MCP_URL, REDIRECT_URI, HttpsFiles, Storage, check_events, check_search, claims_of, public_client,
    remember, sign_in,
)


def header_of(token: str) -> dict:
    part = token.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def serve_document() -> tuple[str, HttpsFiles]:
    """A client metadata document on https://127.0.0.1 (the bridge fetches it); its URL, and
    the site that counts the fetches."""
    site = HttpsFiles()
    url = site.url("/python-client.json")
    site.publish("/python-client.json", {
        "client_id": url, "client_name": "python mcp by its metadata document",
        "redirect_uris": [REDIRECT_URI], "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"], "token_endpoint_auth_method": "none",
    })
    return url, site


async def connect(user: str, tenant: str, wait_for_refresh: bool, document: str | None = None) -> Storage:
    """The SDK's whole chain as `user` (registering, or by its metadata document at
    `document`); the tools see `tenant` only."""
    storage = Storage()
    redirects: list[str] = []

    async def redirect_handler(url: str) -> None:
        redirects.append(url)

    async def callback_handler() -> AuthorizationCodeResult:
        url = redirects[-1]
        assert url.startswith(f"{ISSUER}/oauth/authorize?"), url
        query = parse_qs(urlparse(url).query)
        assert query["code_challenge_method"] == ["S256"] and query["resource"] == [MCP_URL], query
        if document:
            assert query["client_id"] == [document], query
        result = await sign_in(url, user)
        assert result["steps"] == ["bridge-consent", "login", "consent"], result
        assert result["iss"] == ISSUER, result
        remember(result["code"])
        return AuthorizationCodeResult(code=result["code"], state=result.get("state"), iss=result["iss"])

    provider = OAuthClientProvider(
        server_url=MCP_URL,
        client_metadata=public_client(f"python mcp through the bridge ({user})"),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
        client_metadata_url=document,
    )
    async with create_mcp_http_client(auth=provider) as http:
        async with Client(streamable_http_client(MCP_URL, http_client=http), mode="auto") as client:
            tools = await client.list_tools()
            assert "query_events" in [t.name for t in tools.tools]
            n = check_events(await client.call_tool("query_events", {"limit": 5}), tenant)
            if tenant == "tenant-a":
                await check_search(client)
            first = storage.tokens
            assert header_of(first.access_token)["typ"] == "at+jwt"
            claims = claims_of(first.access_token)
            assert claims["iss"] == ISSUER and claims["aud"] == MCP_URL, claims
            assert claims["tenant_id"] == tenant and claims["sub"] == user and claims["scope"] == "events:read", claims
            if document:
                assert storage.client_info.client_id == document, storage.client_info
            else:
                assert storage.client_info.client_id.startswith("dcr."), storage.client_info
            assert not storage.client_info.client_secret
            assert claims["client_id"] == storage.client_info.client_id, claims
            if wait_for_refresh:
                while time.time() < claims["exp"] + 1:
                    await asyncio.sleep(0.2)
                check_events(await client.call_tool("query_events", {"limit": 5}), tenant)
                assert storage.tokens.access_token != first.access_token, "not refreshed"
                assert storage.tokens.refresh_token != first.refresh_token, "refresh token not rotated"
                assert len(redirects) == 1, "refreshed without the user"
    how = "its metadata document" if document else "DCR at the bridge"
    print(f"{user}: {how}, sign-in at the upstream, {n} events of {tenant} only"
          + (", token refreshed by the SDK" if wait_for_refresh else ""))
    return storage


async def by_hand(user: str) -> tuple[dict, dict]:
    """The authorization code flow at the bridge without the SDK: registration, the user's
    sign-in; returns the redirect's parameters and what the flow needs to redeem them."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    async with httpx2.AsyncClient(timeout=15) as http:
        metadata = (await http.get(f"{ISSUER}/.well-known/oauth-authorization-server")).json()
        registered = await http.post(metadata["registration_endpoint"], json={
            "client_name": "by hand", "redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
        })
        assert registered.status_code == 201, registered.text
        client_id = registered.json()["client_id"]
    state = secrets.token_urlsafe(16)
    query = urlencode({
        "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT_URI, "scope": "events:read",
        "resource": MCP_URL, "state": state, "code_challenge": challenge, "code_challenge_method": "S256",
    })
    result = await sign_in(f"{metadata['authorization_endpoint']}?{query}", user)
    assert result["state"] == state and result["iss"] == ISSUER, result
    return result, {"client_id": client_id, "verifier": verifier, "token_endpoint": metadata["token_endpoint"]}


def code_form(result: dict, flow: dict) -> dict:
    """The token request that redeems the code of a `by_hand` sign-in (PKCE verifier, the same
    redirect URI)."""
    return {
        "grant_type": "authorization_code", "code": result["code"], "redirect_uri": REDIRECT_URI,
        "client_id": flow["client_id"], "code_verifier": flow["verifier"],
    }


async def refused_without_a_group() -> None:
    result, _ = await by_hand("carol")
    assert result["error"] == "access_denied" and "code" not in result, result
    print("carol (in no group): access_denied from the bridge, no code")


async def replayed_code() -> None:
    result, flow = await by_hand("alice")
    form = code_form(result, flow)
    async with httpx2.AsyncClient(timeout=15) as http:
        first = await http.post(flow["token_endpoint"], data=form)
        assert first.status_code == 200, first.text
        tokens = first.json()
        remember(result["code"], flow["verifier"], tokens["access_token"], tokens["refresh_token"])
        again = await http.post(flow["token_endpoint"], data=form)
        assert again.status_code == 400 and again.json()["error"] == "invalid_grant", again.text
        refresh = await http.post(flow["token_endpoint"], data={
            "grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": flow["client_id"],
        })
        assert refresh.status_code == 400 and refresh.json()["error"] == "invalid_grant", refresh.text
    print("a replayed code: invalid_grant, and the refresh token it issued is revoked")


async def main() -> None:
    await connect("amir", "tenant-a", wait_for_refresh=True)
    await connect("bob", "tenant-b", wait_for_refresh=False)
    document, site = serve_document()
    await connect("alice", "tenant-a", wait_for_refresh=False, document=document)
    fetched = site.hits.get("/python-client.json", 0)
    assert fetched == 1, f"the bridge fetched the document {fetched} times"
    await refused_without_a_group()
    await replayed_code()


if __name__ == "__main__":
    asyncio.run(main())
