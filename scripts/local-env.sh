# Sourced by scripts/dev and scripts/test: the environment the locally served functions run
# with. Auth is on, with the development issuer whose public key is dev/jwks.json and whose
# private key (dev/signing-key.pem) `devtoken` signs with. Sets LOCAL_ENV_ARGS (arguments
# for `cargo lambda watch`) and MCP_LOCAL_URL.
# shellcheck shell=bash
local_env() {
  local root="$1" port="$2"
  MCP_LOCAL_URL="http://127.0.0.1:$port/lambda-url/mcp/mcp"
  LOCAL_ENV_ARGS=(
    --env-var "AUTH_ISSUER=http://127.0.0.1:9000/dev-issuer"
    --env-var "AUTH_JWKS_FILE=$root/dev/jwks.json"
    --env-var "AUTH_TENANT_CLAIM=tenant_id"
    --env-var "AUTH_REQUIRE_AT_JWT=true"
    --env-var "MCP_RESOURCE_URL=$MCP_LOCAL_URL"
    # cargo lambda only routes /lambda-url/<function>/... to a function, so the metadata is
    # published under the function's prefix instead of the RFC 9728 root location.
    --env-var "MCP_RESOURCE_METADATA_URL=http://127.0.0.1:$port/lambda-url/mcp/.well-known/oauth-protected-resource/mcp"
  )
}

# A development access token for the locally served endpoint (extra args go to devtoken).
dev_token() {
  cargo run -q -p devtools --bin devtoken -- --aud "$MCP_LOCAL_URL" "$@"
}
