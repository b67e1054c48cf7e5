"""Client replicas: every MCP client of the doctor's table (shared/devtools/src/replicas.rs,
read through `replicas --json`), replayed against an authorization server as it really
registers and signs in.

For each client: its metadata document served over https on 127.0.0.1 (the same document,
its `client_id` the local URL; ChatGPT's `jwks_uri` a local JWKS of a key made here), or its own
DCR request sent as is (every redirect URI must be kept); its redirect URI at `/authorize`, on a
port it picks where it does; its parameters (`resource`, `scope`, `prompt=consent`, PKCE S256);
the user's part over HTTP (the OAuth bridge's consent page, the upstream's login and consent
forms); the code redeemed (with a signed client assertion for ChatGPT, RFC 7523); a tool called
with the token; the token refreshed and the tool called again. Then the doctor's verdict for
each client must say what the replica found.

EXPECT_REFUSED lists clients (by name, comma-separated) whose registration this server is
known to refuse; each of them must be refused, at registration, and the doctor must say no.

Usage: AS_ISSUER=... MCP_URL=... REPLICAS_BIN=... DOCTOR_BIN=... CIMD_LEAF_CERT=... \\
       CIMD_LEAF_KEY=... [EXPECT_REFUSED=...] python replicas.py
"""

import asyncio
import base64
import hashlib
import json
import os
import secrets
import socket
import subprocess
import time
from urllib.parse import urlencode

import httpx2
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from oauth_py import ISSUER, MCP_URL, HttpsFiles, remember, sign_in

EXPECT_REFUSED = {n.strip() for n in os.environ.get("EXPECT_REFUSED", "").split(",") if n.strip()}
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
KID = "replica-key-1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Documents(HttpsFiles):
    """The replicas' metadata documents, and the JWKS of the key their client assertions are
    signed with, on https://127.0.0.1."""

    def __init__(self) -> None:
        super().__init__()
        numbers = KEY.public_key().public_numbers()

        def b64(n: int) -> str:
            return base64.urlsafe_b64encode(n.to_bytes((n.bit_length() + 7) // 8, "big")).rstrip(b"=").decode()

        jwks = {"keys": [{"kty": "RSA", "kid": KID, "use": "sig", "alg": "RS256",
                          "n": b64(numbers.n), "e": b64(numbers.e)}]}
        self.jwks_url = self.publish("/jwks.json", jwks)


def with_port(value, port: int):
    return json.loads(json.dumps(value).replace("{port}", str(port)))


def signed(form: dict, client_id: str, metadata: dict, authenticated: bool) -> dict:
    """The token request `form`, with a client assertion (RFC 7523 §3, OpenID Connect Core §9)
    when the client authenticates with private_key_jwt."""
    if not authenticated:
        return form
    now = int(time.time())
    claims = {"iss": client_id, "sub": client_id, "aud": metadata["token_endpoint"], "iat": now,
              "exp": now + 60, "jti": secrets.token_urlsafe(16)}
    return {**form, "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            "client_assertion": jwt.encode(claims, KEY, algorithm="RS256", headers={"kid": KID})}


async def call_tool(http: httpx2.AsyncClient, token: str) -> int:
    answer = await http.post(MCP_URL, headers={"authorization": f"Bearer {token}", "accept": "application/json"},
                             json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                   "params": {"name": "query_events", "arguments": {"limit": 2}}})
    assert answer.status_code == 200, (answer.status_code, answer.text[:300])
    result = answer.json()["result"]
    assert not result.get("isError"), result
    return result["structuredContent"]["count"]


async def replay(replica: dict, metadata: dict, documents: Documents) -> str:
    """One client from nothing to a refreshed token and a tool call; what it did, in words.
    Raises `Refused` when its registration is refused."""
    name, port = replica["name"], free_port()
    slug = "".join(c if c.isalnum() else "-" for c in name.lower())
    how = None
    for choice in replica["registration"]:
        if choice == "cimd" and metadata.get("client_id_metadata_document_supported") and replica["document"]:
            how = "cimd"
            break
        if choice == "dcr" and metadata.get("registration_endpoint") and replica["dcr"]:
            how = "dcr"
            break
    assert how, f"{name}: no way to register here"
    async with httpx2.AsyncClient(timeout=15) as http:
        if how == "cimd":
            document = with_port(replica["document"]["json"], port)
            url = f"{documents.base}/{slug}.json"
            document["client_id"] = url
            if "jwks_uri" in document:
                document["jwks_uri"] = documents.jwks_url
            client_id = documents.publish(f"/{slug}.json", document)
            registered = f"its metadata document ({len(document['redirect_uris'])} redirect URIs)"
        else:
            body = with_port(replica["dcr"], port)
            answer = await http.post(metadata["registration_endpoint"], json=body)
            if answer.status_code != 201:
                raise Refused(f"{answer.status_code} {answer.text[:200]}")
            kept = answer.json().get("redirect_uris", [])
            assert all(u in kept for u in body["redirect_uris"]), (name, body["redirect_uris"], kept)
            client_id = answer.json()["client_id"]
            registered = f"DCR ({len(kept)} redirect URIs kept)"
        redirect_uri = with_port(replica["redirect_uri"], port)
        verifier = secrets.token_urlsafe(48)
        remember(verifier)
        state = secrets.token_urlsafe(12)
        params = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri, "state": state,
                  "code_challenge": base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
                  .rstrip(b"=").decode(),
                  "code_challenge_method": "S256", "resource": MCP_URL}
        params.update(dict(replica["authorize"]))
        result = await sign_in(f"{metadata['authorization_endpoint']}?{urlencode(params)}", "alice", redirect_uri)
        assert result.get("iss") == ISSUER and result.get("state") == state, (name, result)
        assert "code" in result, (name, result)
        remember(result["code"])
        form = {"grant_type": "authorization_code", "code": result["code"], "redirect_uri": redirect_uri,
                "client_id": client_id, "code_verifier": verifier, "resource": MCP_URL}
        authenticated = replica["client_assertion"] and how == "cimd"
        answer = await http.post(metadata["token_endpoint"], data=signed(form, client_id, metadata, authenticated))
        assert answer.status_code == 200, (name, answer.status_code, answer.text[:300])
        tokens = answer.json()
        remember(tokens["access_token"], tokens.get("refresh_token"))
        n = await call_tool(http, tokens["access_token"])
        refreshed = ""
        if tokens.get("refresh_token"):
            form = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": client_id}
            answer = await http.post(metadata["token_endpoint"], data=signed(form, client_id, metadata, authenticated))
            assert answer.status_code == 200, (name, answer.status_code, answer.text[:300])
            again = answer.json()
            remember(again["access_token"], again.get("refresh_token"))
            await call_tool(http, again["access_token"])
            refreshed = ", refreshed, called again"
        elif "refresh_token" in json.dumps(replica.get("dcr") or {}):
            raise AssertionError(f"{name}: registered the refresh grant but got no refresh token")
    return f"{registered}, redirect {redirect_uri}, signed in, {n} events{refreshed}"


class Refused(Exception):
    pass


def doctor_verdicts() -> dict[str, str]:
    out = subprocess.run([os.environ["DOCTOR_BIN"], MCP_URL], capture_output=True, text=True, check=False).stdout
    clients = out.split("\nClients\n", 1)[1].split("\n\n", 1)[0]
    return {line.strip(): line for line in clients.splitlines() if line.strip()}


async def main() -> None:
    table = json.loads(subprocess.run([os.environ["REPLICAS_BIN"], "--json"], capture_output=True, text=True,
                                      check=True).stdout)
    async with httpx2.AsyncClient(timeout=15) as http:
        metadata = (await http.get(f"{ISSUER}/.well-known/oauth-authorization-server")).json()
    documents = Documents()
    outcomes: dict[str, bool] = {}
    failures = []
    for replica in table:
        name = replica["name"]
        try:
            said = await replay(replica, metadata, documents)
            outcomes[name] = True
            print(f"{name}: {said}")
            if name in EXPECT_REFUSED:
                failures.append(f"{name} connected, but this server is expected to refuse it")
        except Refused as refused:
            outcomes[name] = False
            print(f"{name}: registration refused: {refused}")
            if name not in EXPECT_REFUSED:
                failures.append(f"{name}: registration refused: {refused}")
        except AssertionError as failed:
            outcomes[name] = False
            failures.append(f"{name}: {failed}")
    verdicts = doctor_verdicts()
    for name, connected in outcomes.items():
        line = next((text for key, text in verdicts.items() if key.startswith(name)), "")
        says_yes = line.strip()[len(name):].strip().startswith("yes")
        if says_yes != connected:
            failures.append(f"the doctor says {line.strip()!r}, the replica {'connected' if connected else 'did not'}")
    assert not failures, "\n".join(failures)
    print(f"{len(outcomes)} client replicas against {ISSUER}: "
          f"{sum(outcomes.values())} connected, {len(outcomes) - sum(outcomes.values())} refused as expected; "
          "the doctor agrees with each")


if __name__ == "__main__":
    asyncio.run(main())
