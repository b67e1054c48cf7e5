"""Signs N users in through the OAuth bridge, as their MCP clients would, for bench/bridge's
token endpoint load: each user's client registers at the bridge (DCR), the user signs in at
the upstream issuer on its real login and consent pages (tests/clients' by_hand flow), and
the client redeems the code (PKCE). Writes one JSON line per user to OUT:
{"client_id", "refresh_token", "tenant"}; prints nothing secret.

Usage: AS_ISSUER=<bridge issuer> MCP_URL=... python bridge_users.py N OUT
"""

import asyncio
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "clients"))

import httpx2  # noqa: E402 (after the path is set)
from bridge_py import by_hand, code_form  # noqa: E402
from oauth_py import claims_of  # noqa: E402

# The upstream's users in a group (dev/oauth/server.mjs), and their tenants.
USERS = [("alice", "tenant-a"), ("bob", "tenant-b"), ("amir", "tenant-a")]


async def signed_in(user: str, tenant: str) -> dict:
    result, flow = await by_hand(user)
    async with httpx2.AsyncClient(timeout=15) as http:
        answer = await http.post(flow["token_endpoint"], data=code_form(result, flow))
    assert answer.status_code == 200, answer.text
    tokens = answer.json()
    assert claims_of(tokens["access_token"])["tenant_id"] == tenant, "another tenant"
    return {"client_id": flow["client_id"], "refresh_token": tokens["refresh_token"], "tenant": tenant}


async def main() -> None:
    count, out = int(sys.argv[1]), sys.argv[2]
    users = [await signed_in(*USERS[i % len(USERS)]) for i in range(count)]
    with open(out, "w") as f:
        f.writelines(json.dumps(u) + "\n" for u in users)
    print(f"{count} users signed in through the bridge (DCR, sign-in upstream, code redeemed)")


if __name__ == "__main__":
    asyncio.run(main())
