# Sourced by scripts/dev and scripts/test: the environment the locally served functions run
# with. Auth is on, with the development issuer whose public key is dev/jwks.json and whose
# private key (dev/signing-key.pem) `devtoken` signs with; the event store is the local
# PostgreSQL behind a TLS PgBouncer in transaction mode (scripts/pgbouncer).
# shellcheck shell=bash

# Makes sure PostgreSQL answers on 127.0.0.1:5432 (starting the machine's cluster if needed).
ensure_postgres() {
  pg_isready -q -h 127.0.0.1 -p 5432 && return 0
  echo "[local-env] starting PostgreSQL" >&2
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && return 0; sleep 1; done
  echo "[local-env] PostgreSQL is not answering on 127.0.0.1:5432" >&2
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
  DATABASE_ADMIN_URL="postgres://postgres@127.0.0.1:5432/$name" cargo run -q -p migrate -- --seed "$per_tenant"
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
  fi
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
    "${credentials[@]}"
    --env-var "DB_SSLMODE=verify-full"
    --env-var "DB_CA_FILE=$ca"
    --env-var "TOOL_STATEMENT_TIMEOUT_MS=5000"
  )
}

# A development access token for the locally served endpoint (extra args go to devtoken).
dev_token() {
  cargo run -q -p devtools --bin devtoken -- --aud "$MCP_LOCAL_URL" "$@"
}
