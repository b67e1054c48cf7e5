"""The deploy rehearsal: the deploy workflow's own Deploy step, run against the AWS emulator.

    python scripts/rehearsal/rehearse.py --port PORT --db-port PORT --ca CA_FILE --out DIR

Run by scripts/rehearse-deploy (which starts what it needs; see there). Two variants, each a
fresh stack: `dev`, infra/samconfig.toml's dev section as a user would fill it in, and `prod`
with every optional part of the template on (the OAuth bridge on Cognito, a custom domain,
the JWT authorizer, rotation, an alarm topic, a tenant limit, a trace collector, ...). For
each: the Deploy step's script, read from .github/workflows/deploy.yml, runs as the workflow
runs it (so scripts/deploy runs SAM CLI's `sam validate --lint` and `sam deploy` with the
stage's config, then invokes migrate, which migrates a real database); then the checks below
hold the deployed stack to what the workflow and the code rely on. Exit status 0 only if
every check passes; each failure is printed with what was expected.
"""

import argparse
import json
import os
import subprocess
import sys
import time
import tomllib
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import boto3
import yaml

sys.path.insert(0, str(Path(__file__).parent))
import iam  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
REGION = "eu-west-1"
FUNCTIONS = {"mcp": "McpFunction", "migrate": "MigrateFunction", "oauth": "OAuthFunction"}
failures: list[str] = []


def check(ok: bool, what: str) -> bool:
    print(f"  {'ok  ' if ok else 'FAIL'} {what}", flush=True)
    if not ok:
        failures.append(what)
    return ok


# ----------------------------------------------------------------- the emulator
def start_emulator(port: int, out: Path, ca: str) -> subprocess.Popen:
    env = dict(
        os.environ, REHEARSAL_CA_FILE=ca, REHEARSAL_LOG_DIR=str(out),
        REHEARSAL_OVERRIDES=str(out / "overrides.json"),
        # moto's recorder: every request the emulator serves, for the IAM replay.
        MOTO_ENABLE_RECORDING="True", MOTO_RECORDER_FILEPATH=str(out / "recording.jsonl"),
    )
    log = open(out / "emulator.log", "w")
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "scripts/rehearsal/emulator.py"), str(port), str(out / "resources.jsonl")],
        env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    for _ in range(300):
        if process.poll() is not None:
            sys.exit(f"the emulator exited: see {out / 'emulator.log'}")
        try:
            urllib.request.urlopen(f"http://localhost:{port}/moto-api/", timeout=1)
            return process
        except OSError:
            time.sleep(0.1)
    process.kill()
    sys.exit("the emulator did not start within 30 s")


def client(service: str) -> Any:
    return boto3.client(service, region_name=REGION)


# ----------------------------------------------------------------- what a user brings
def seed(db_port: int) -> dict[str, str]:
    """What the template takes as given: a VPC, subnets, the database's security group and
    admin secret, a Cognito user pool, an SNS topic."""
    ec2 = client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{i}.0/24", AvailabilityZone=f"{REGION}{z}")["Subnet"]["SubnetId"]
        for i, z in ((1, "a"), (2, "b"))
    ]
    sg = ec2.create_security_group(GroupName="database", Description="the database", VpcId=vpc)["GroupId"]
    route_table = ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"]
    admin = {
        "engine": "postgres", "host": "127.0.0.1", "port": db_port,
        "username": "postgres", "password": "postgres-admin",
    }
    secret = client("secretsmanager").create_secret(Name="events-admin", SecretString=json.dumps(admin))["ARN"]
    pool = client("cognito-idp").create_user_pool(PoolName="events")["UserPool"]["Id"]
    topic = client("sns").create_topic(Name="mcp-alarms")["TopicArn"]
    return {"vpc": vpc, "subnets": ",".join(subnets), "sg": sg, "route_table": route_table,
            "admin": secret, "pool": pool, "topic": topic}


def configs(given: dict[str, str], db_port: int) -> dict[str, dict[str, Any]]:
    """The two variants' SAM config sections: samconfig.toml's own, with what a user edits
    (the values marked EDIT) filled in from what was seeded."""
    document = tomllib.loads((ROOT / "infra/samconfig.toml").read_text())
    filled = {
        "VpcId": given["vpc"],
        "SubnetIds": given["subnets"],
        "DatabaseSecurityGroupId": given["sg"],
        "DatabaseEndpoint": "127.0.0.1",
        "DatabasePort": str(db_port),
        "AdminSecretArn": given["admin"],
        "AuthIssuer": "https://issuer.rehearsal.example/",
        # The zips scripts/test builds are x86_64 (this machine has no aarch64 target).
        "Architecture": "x86_64",
    }
    every_condition = {
        "EnableOAuthBridge": "true",
        "UpstreamIssuer": f"https://cognito-idp.{REGION}.amazonaws.com/{given['pool']}",
        "CognitoUserPoolId": given["pool"],
        "UpstreamDefaultTenant": "tenant-a",
        "OAuthGroupScopes": "readers=events:read",
        "AuthJwksUrl": "https://issuer.example.com/jwks.json",
        "AuthDefaultTenant": "tenant-a",
        "AuthCognitoClientIds": "client-a,client-b",
        "EventUrlTemplate": "https://incidents.example.com/events/{id}",
        "OpenAiAppsChallenge": "challenge-token",
        "EnableJwtAuthorizer": "true",
        "JwtAuthorizerAudience": "https://mcp.example.com/mcp",
        "AllowedOrigins": "https://app.example.com",
        "CustomDomainName": "mcp.example.com",
        "CustomDomainCertificateArn": f"arn:aws:acm:{REGION}:123456789012:certificate/00000000-0000-0000-0000-000000000000",
        "AlarmTopicArn": given["topic"],
        "RateLimitTools": "count_events=20,completion/complete=300",
        "RateLimitPerTenant": "500",
        "RouteTableIds": given["route_table"],
        "TraceCollectorLayerArn": f"arn:aws:lambda:{REGION}:901920570463:layer:aws-otel-collector-amd64-ver-0-117-0:1",
        "RotationLambdaArn": f"arn:aws:lambda:{REGION}:123456789012:function:rehearsal-rotation",
        # Mid-rotation: both signing-key slots exist, green signs, blue is still published.
        "OAuthSigningKeys": "green,blue",
    }
    variants = {}
    # The quick start's section is used as it is: its foundation fills in the rest.
    for stage, extra in (
        ("dev", {**filled, "DatabaseInstanceIdentifier": "events-rehearsal"}),
        ("prod", {**filled, **every_condition, "DatabaseClusterIdentifier": "events-rehearsal"}),
        ("demo", {"Architecture": "x86_64"}),
    ):
        section = dict(document[stage]["deploy"]["parameters"])
        overrides = dict(item.split("=", 1) for item in section["parameter_overrides"])
        overrides.update(extra, DatabaseName=f"mcp_rehearsal_{stage}")
        section["parameter_overrides"] = [f"{k}={v}" for k, v in overrides.items()]
        variants[stage] = section
    return variants


def write_config(variants: dict[str, dict[str, Any]], path: Path) -> None:
    lines = ["version = 0.1"]
    for stage, section in variants.items():
        lines.append(f"\n[{stage}.deploy.parameters]")
        for key, value in section.items():
            lines.append(f"{key} = {json.dumps(value)}")
    path.write_text("\n".join(lines) + "\n")


# ----------------------------------------------------------------- the workflow's step
def deploy_step() -> tuple[str, dict[str, str]]:
    workflow = yaml.safe_load((ROOT / ".github/workflows/deploy.yml").read_text())
    steps = workflow["jobs"]["deploy"]["steps"]
    step = next(s for s in steps if s.get("name") == "Deploy")
    # The rehearsal has no GitHub variables or secrets: each expression is empty.
    env = {k: "" if "${{" in str(v) else str(v) for k, v in (step.get("env") or {}).items()}
    return step["run"], env


# The quick start's command, as docs/deploy.md gives it.
QUICKSTART = "scripts/deploy demo --quickstart"


def run_deploy(stage: str, config: Path, out: Path) -> bool:
    script, step_env = deploy_step()
    if stage == "demo":
        script, step_env = QUICKSTART, {}
    env = dict(
        os.environ, **step_env, STAGE=stage,
        DEPLOY_CONFIG=str(config), DEPLOY_NO_BUILD="1", DEPLOY_SKIP_CHECKS="1",
        AWS_REGION=REGION, SAM_CLI_TELEMETRY="0",
    )
    with open(out / f"deploy-{stage}.log", "w") as log:
        # As GitHub runs a `run` step with `shell: bash`.
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                              cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        print((out / f"deploy-{stage}.log").read_text()[-6000:])
    what = "the quick start" if stage == "demo" else "the workflow's Deploy step"
    return check(done.returncode == 0, f"{stage}: {what} ({script.strip().splitlines()[-1].strip()}) succeeds")


# ----------------------------------------------------------------- checks
def recorded(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "resources.jsonl").read_text().splitlines()]


def check_foundation(stage: str, params: dict[str, str]) -> dict[str, str]:
    """The quick start's foundation stack, and the endpoint's stack built on its outputs."""
    cfn = client("cloudformation")
    foundation = cfn.describe_stacks(StackName=f"event-store-mcp-{stage}-foundation")["Stacks"][0]
    check(foundation["StackStatus"] == "CREATE_COMPLETE", f"{stage}: foundation stack status {foundation['StackStatus']}")
    given = {o["OutputKey"]: o["OutputValue"] for o in foundation.get("Outputs") or []}
    stack = cfn.describe_stacks(StackName=f"event-store-mcp-{stage}")["Stacks"][0]
    deployed = {p["ParameterKey"]: p["ParameterValue"] for p in stack["Parameters"]}
    def items(value: str | None) -> set[str]:
        return {v.strip(" '[]") for v in (value or "").split(",")}

    for key, value in given.items():
        if key != "SignInDomain":
            check(items(deployed.get(key)) == items(value), f"{stage}: {key} = the foundation's {value} ({deployed.get(key)})")
    for key, value in params.items():
        check(deployed.get(key) == value, f"{stage}: {key} = {value} as the config says")
    subnets = given.get("SubnetIds", "").split(",")
    check(len(subnets) == 2 and all(subnets), f"{stage}: two private subnets {subnets}")
    secret = json.loads(client("secretsmanager").get_secret_value(SecretId=given["AdminSecretArn"])["SecretString"])
    check(set(secret) >= {"username", "password"}, f"{stage}: the cluster's admin secret is RDS JSON")
    return {**given, **params, "subnets": given.get("SubnetIds", "")}


def check_stack(stage: str, params: dict[str, str], given: dict[str, str], out: Path) -> None:
    cfn = client("cloudformation")
    stack = cfn.describe_stacks(StackName=f"event-store-mcp-{stage}")["Stacks"][0]
    check(stack["StackStatus"] == "CREATE_COMPLETE", f"{stage}: stack status {stack['StackStatus']}")
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs") or []}
    proxied = params.get("DatabaseProxy", "true") == "true"
    bridge = params.get("EnableOAuthBridge") == "true"
    expected = {"McpUrl", "McpFunctionName", "MigrateFunctionName", "EndpointSecretArn"} | ({"ProxyEndpoint"} if proxied else set())
    if bridge:
        expected |= {"OAuthIssuer", "OAuthCallbackUrl", "UpstreamClientSecretArn"}
    check(expected <= outputs.keys(), f"{stage}: outputs {sorted(expected - outputs.keys()) or 'all present'}")
    url = outputs.get("McpUrl", "")
    host = params.get("CustomDomainName") or ".execute-api."
    check(url.startswith("https://") and url.endswith("/mcp") and host in url, f"{stage}: McpUrl {url}")

    lam = client("lambda")
    names = {"mcp": f"mcp-{stage}", "migrate": f"mcp-{stage}-migrate", "oauth": f"mcp-{stage}-oauth"}
    if not bridge:
        names.pop("oauth")
    for binary, name in names.items():
        c = lam.get_function_configuration(FunctionName=name)
        check(c["Runtime"] == "provided.al2023" and c["Handler"] == "bootstrap", f"{name}: runtime {c['Runtime']}, handler {c['Handler']}")
        check(c["Architectures"] == [params.get("Architecture", "arm64")], f"{name}: architecture {c['Architectures']}")
        in_vpc = binary != "oauth"
        subnets = sorted(c.get("VpcConfig", {}).get("SubnetIds") or [])
        check(subnets == (sorted(given["subnets"].split(",")) if in_vpc else []), f"{name}: subnets {subnets}")
        if binary == "mcp":
            check(c["MemorySize"] == int(params.get("FunctionMemoryMB", 256)), f"{name}: memory {c['MemorySize']} MB")
            check(c["Timeout"] == int(params.get("FunctionTimeoutSeconds", 29)), f"{name}: timeout {c['Timeout']} s")
            reserved = lam.get_function_concurrency(FunctionName=name).get("ReservedConcurrentExecutions")
            check(reserved == int(params.get("ReservedConcurrency", 20)), f"{name}: reserved concurrency {reserved}")
            check(c.get("TracingConfig", {}).get("Mode") == "Active", f"{name}: tracing {c.get('TracingConfig')}")
        check(c.get("LoggingConfig", {}).get("LogFormat") == "JSON", f"{name}: JSON logs")
    if "McpFunctionName" in outputs:
        check(outputs["McpFunctionName"] == names["mcp"], f"{stage}: McpFunctionName names the function")

    env = lam.get_function_configuration(FunctionName=names["mcp"])["Environment"]["Variables"]
    sm = client("secretsmanager")
    endpoint = json.loads(sm.get_secret_value(SecretId=env["DB_SECRET_ID"])["SecretString"])
    check(endpoint.get("username") == "mcp_endpoint" and len(endpoint.get("password", "")) >= 32,
          f"{stage}: the endpoint secret is RDS JSON for mcp_endpoint with a generated password")
    cursor = sm.get_secret_value(SecretId=env["CURSOR_SIGNING_KEY_SECRET_ID"])["SecretString"]
    check(len(cursor) >= 32, f"{stage}: the cursor key is {len(cursor)} characters")
    table = env["RATE_LIMIT_TABLE"]
    ttl = client("dynamodb").describe_time_to_live(TableName=table)["TimeToLiveDescription"]
    check(ttl.get("TimeToLiveStatus") == "ENABLED", f"{stage}: the rate-limit table {table} expires items ({ttl})")
    resources = [r for r in recorded(out) if r.get("stack") == stack["StackId"]]
    proxy = next((r for r in resources if r["type"] == "AWS::RDS::DBProxy"), None)
    if proxied:
        check(proxy is not None and env["DB_HOST"].startswith(proxy["properties"]["DBProxyName"]), f"{stage}: DB_HOST {env['DB_HOST']} is the proxy")
    else:
        check(proxy is None and env["DB_HOST"] == params["DatabaseEndpoint"], f"{stage}: no proxy; DB_HOST {env['DB_HOST']} is the database")

    # Routes: each reaches an integration, each integration a function of this stack.
    by_logical = {r["logical"]: r for r in resources}
    routes = [r for r in resources if r["type"] == "AWS::ApiGatewayV2::Route"]
    integrations = {r["id"]: r for r in resources if r["type"] == "AWS::ApiGatewayV2::Integration"}
    arns = {f"arn:aws:lambda:{REGION}:123456789012:function:{n}" for n in names.values()}
    keys = set()
    for route in routes:
        key = route["properties"]["RouteKey"]
        keys.add(key)
        target = route["properties"].get("Target", "").removeprefix("integrations/")
        integration = integrations.get(target)
        check(integration is not None and integration["properties"].get("IntegrationUri") in arns,
              f"{stage}: route {key} reaches {integration and integration['properties'].get('IntegrationUri')}")
    wanted = {"POST /mcp", "GET /mcp", "DELETE /mcp", "GET /.well-known/oauth-protected-resource"}
    if bridge:
        wanted |= {"ANY /oauth/{proxy+}", "ANY /.well-known/oauth-authorization-server"}
    check(wanted <= keys, f"{stage}: routes {sorted(wanted - keys) or 'all present'}")
    # Alarms watch what was deployed: the stack's functions, its API, the namespace the
    # function writes its metrics to.
    api = next((r["id"] for r in resources if r["type"] == "AWS::ApiGatewayV2::Api"), None)
    alarms = [r for r in resources if r["type"] == "AWS::CloudWatch::Alarm"]
    # Seven for the endpoint, one for migrate (its deploy runs and daily upkeep), two more for
    # the bridge.
    wanted_alarms = 10 if bridge else 8
    check(len(alarms) == wanted_alarms, f"{stage}: {len(alarms)} alarms, {wanted_alarms} expected")
    for alarm in alarms:
        p = alarm["properties"]
        metrics = [p] if "MetricName" in p else [m["MetricStat"]["Metric"] for m in p.get("Metrics", []) if "MetricStat" in m]
        check(bool(metrics), f"{stage}: alarm {alarm['logical']} watches a metric")
        for metric in metrics:
            dims = {d["Name"]: d["Value"] for d in metric.get("Dimensions", [])}
            namespace = metric["Namespace"]
            if namespace == "AWS/Lambda":
                ok = dims.get("FunctionName") in names.values()
            elif namespace == "AWS/ApiGateway":
                ok = dims.get("ApiId") == api
            else:
                ok = namespace == env["METRICS_NAMESPACE"]
            check(ok, f"{stage}: alarm {alarm['logical']} watches {namespace} {metric['MetricName']} {dims}")
    # The daily partition upkeep invokes this stack's migrate function with the deploy's payload.
    schedules = [r["properties"] for r in resources if r["type"] == "AWS::Scheduler::Schedule"]
    targets = [(p.get("Target", {}).get("Arn", ""), p.get("Target", {}).get("Input")) for p in schedules]
    check(
        len(targets) == 1 and targets[0][0].endswith(":function:" + names["migrate"]) and targets[0][1] == "{}",
        f"{stage}: the daily schedule invokes {names['migrate']} with {{}}: {targets}",
    )
    if bridge:
        oauth_env = lam.get_function_configuration(FunctionName=names["oauth"])["Environment"]["Variables"]
        key = client("kms").describe_key(KeyId=oauth_env["OAUTH_KMS_KEY_ID"])["KeyMetadata"]
        check(key["KeySpec"] == "RSA_2048" and key["KeyUsage"] == "SIGN_VERIFY", f"{stage}: the bridge's key is {key['KeySpec']} {key['KeyUsage']}")
        client_secret = sm.get_secret_value(SecretId=oauth_env["UPSTREAM_CLIENT_SECRET_ID"])["SecretString"]
        check(len(client_secret) > 20, f"{stage}: the Cognito client's secret is stored")
    _ = by_logical
    check_functions(stage, names, outputs, bridge, env, out, params)


def invoke_http(function: str, method: str, url: str, headers: dict[str, str] | None = None, body: str | None = None) -> tuple[int, dict[str, str], str]:
    """An HTTP API (payload 2.0) request to `function`, as API Gateway would send it."""
    parsed = urllib.parse.urlsplit(url)
    event = {
        "version": "2.0", "routeKey": "$default", "rawPath": parsed.path, "rawQueryString": parsed.query,
        "headers": {"host": parsed.netloc, "x-forwarded-proto": "https", **(headers or {})},
        "requestContext": {
            "accountId": "123456789012", "apiId": "rehearsal", "domainName": parsed.netloc,
            "http": {"method": method, "path": parsed.path, "protocol": "HTTP/1.1", "sourceIp": "203.0.113.7", "userAgent": "rehearsal"},
            "requestId": "rehearsal", "routeKey": "$default", "stage": "$default",
            "time": "06/Dec/2026:12:00:00 +0000", "timeEpoch": int(time.time() * 1000),
        },
        "isBase64Encoded": False,
        **({"body": body} if body is not None else {}),
    }
    answer = client("lambda").invoke(FunctionName=function, Payload=json.dumps(event).encode())
    body = answer["Payload"].read().decode()
    if answer.get("FunctionError"):
        return 0, {}, body
    response = json.loads(body)
    return response.get("statusCode", 0), {k.lower(): v for k, v in (response.get("headers") or {}).items()}, response.get("body", "")


def check_functions(stage: str, names: dict[str, str], outputs: dict[str, str], bridge: bool, env: dict[str, str], out: Path, params: dict[str, str]) -> None:
    """Each built function starts with the environment the stack gave it and serves the paths
    that need no network beyond the emulator; the endpoint also answers a tool call from the
    migrated database, through the local PgBouncer in place of the proxy's host."""
    url = outputs.get("McpUrl", "")
    base = url.removesuffix("/mcp")
    status, _, body = invoke_http(names["mcp"], "GET", base + "/.well-known/oauth-protected-resource/mcp")
    metadata = json.loads(body) if status == 200 else {}
    issuer = outputs.get("OAuthIssuer") if bridge else params["AuthIssuer"]
    check(status == 200 and metadata.get("resource") == url, f"{names['mcp']}: protected-resource metadata names {metadata.get('resource')} ({status})")
    check(issuer in metadata.get("authorization_servers", []), f"{names['mcp']}: its authorization server is {metadata.get('authorization_servers')}")
    status, headers, _ = invoke_http(names["mcp"], "POST", url, {"content-type": "application/json", "accept": "application/json, text/event-stream"})
    check(status == 401 and "resource_metadata=" in headers.get("www-authenticate", ""), f"{names['mcp']}: a call without a token is 401 with a challenge ({status})")
    tenant = params.get("UpstreamDefaultTenant", "tenant-a")
    described = tool_call(stage, names["mcp"], url, env, out, tenant)
    if stage == "demo":
        # The quick start's migrate loaded sample events for the tenant every user gets, once.
        types = described.get("event_types", [])
        check(len(types) > 3, f"{names['mcp']}: the tenant {tenant} has sample events ({len(types)} event types)")
        again = client("lambda").invoke(FunctionName=names["migrate"], Payload=json.dumps({"sample_tenant": tenant}).encode())
        loaded = json.loads(again["Payload"].read()).get("sample_events_loaded")
        check(loaded == 0, f"{names['migrate']}: asked again, loads no more sample events ({loaded})")
    report = client("lambda").invoke(FunctionName=names["migrate"], Payload=b"{}")
    again = json.loads(report["Payload"].read())
    check(again.get("applied") == [] and again.get("endpoint_password_set") is True,
          f"{names['migrate']}: a second run applies nothing and sets the password again ({again})")
    if bridge:
        status, _, body = invoke_http(names["oauth"], "GET", base + "/.well-known/oauth-authorization-server")
        check(status == 200 and json.loads(body).get("issuer") == outputs.get("OAuthIssuer"), f"{names['oauth']}: its metadata names the issuer ({status})")
        # A client registers (RFC 7591) and starts a sign-in: the bridge answers with its own
        # consent page (the upstream sign-in comes after it, beyond the rehearsal's reach).
        callback = "https://claude.ai/api/mcp/auth_callback"
        status, _, body = invoke_http(names["oauth"], "POST", base + "/oauth/register", {"content-type": "application/json"},
                                      json.dumps({"redirect_uris": [callback], "client_name": "Rehearsal", "token_endpoint_auth_method": "none"}))
        client_id = json.loads(body).get("client_id") if status == 201 else None
        check(client_id is not None, f"{names['oauth']}: a client registers ({status})")
        query = urllib.parse.urlencode({
            "response_type": "code", "client_id": client_id or "", "redirect_uri": callback, "state": "s",
            "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", "code_challenge_method": "S256",
            "resource": url, "scope": "events:read",
        })
        status, headers, body = invoke_http(names["oauth"], "GET", f"{base}/oauth/authorize?{query}")
        check(status == 200 and "Rehearsal" in body and "text/html" in headers.get("content-type", ""),
              f"{names['oauth']}: the sign-in starts at the bridge's consent page naming the client ({status})")
        status, _, body = invoke_http(names["oauth"], "GET", base + "/oauth/jwks")
        keys = json.loads(body).get("keys", []) if status == 200 else []
        slots = len(params.get("OAuthSigningKeys", "blue").split(","))
        check(len({k.get("kid") for k in keys}) == slots, f"{names['oauth']}: the JWKS publishes {slots} key(s) ({len(keys)}, {status})")


DB_PORT = 0


def local_db(out: Path, function: str, **extra: str) -> None:
    """Points `function` at the local database (through the rehearsal's PgBouncer)."""
    overrides_file = out / "overrides.json"
    overrides = json.loads(overrides_file.read_text()) if overrides_file.is_file() else {}
    overrides[function] = {"DB_HOST": "127.0.0.1", "DB_PORT": str(DB_PORT), **extra}
    overrides_file.write_text(json.dumps(overrides))


def tool_call(stage: str, function: str, url: str, env: dict[str, str], out: Path, tenant: str) -> dict[str, Any]:
    local_db(out, function, AUTH_JWKS_JSON=(ROOT / "dev/jwks.json").read_text())
    token = subprocess.run(
        ["cargo", "run", "-q", "--locked", "-p", "devtools", "--bin", "devtoken", "--",
         "--aud", url, "--iss", env["AUTH_ISSUER"], "--tenant", tenant, "--ttl", "600"],
        cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True,
    ).stdout.strip()
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "describe_data", "arguments": {}}})
    status, _, answer = invoke_http(function, "POST", url, {
        "content-type": "application/json", "accept": "application/json, text/event-stream",
        "authorization": f"Bearer {token}", "mcp-protocol-version": "2025-06-18",
    }, body)
    result = json.loads(answer).get("result", {}) if status == 200 else {}
    check(status == 200 and bool(result.get("content")) and not result.get("isError"),
          f"{function}: describe_data from the migrated database, for a token naming the deployed issuer and URL ({status}: {answer[:200]})")
    return result.get("structuredContent") or {}


def iam_replay(out: Path) -> None:
    """Every AWS call the functions made, allowed by the role the stack gave each."""
    sm, kms, ddb, lam, iam_client = (client(s) for s in ("secretsmanager", "kms", "dynamodb", "lambda", "iam"))

    def key_arn(key: str | None) -> str | None:
        return kms.describe_key(KeyId=key)["KeyMetadata"]["Arn"] if key else None

    def resolve(service: str, kind: str, value: str) -> tuple[str, str | None]:
        if kind == "secret":
            d = sm.describe_secret(SecretId=value)
            return d["ARN"], key_arn(d.get("KmsKeyId"))
        if kind == "key":
            return key_arn(value), None
        t = ddb.describe_table(TableName=value)["Table"]
        return t["TableArn"], t.get("SSEDescription", {}).get("KMSMasterKeyArn")

    calls = sorted(set(iam.recorded_calls(out / "recording.jsonl", resolve)), key=str)
    policies: dict[str, list[dict[str, Any]]] = {}
    for function in sorted({c.function for c in calls}):
        role = lam.get_function_configuration(FunctionName=function)["Role"].rsplit("/", 1)[1]
        policies[function] = [
            iam.parse_policy(iam_client.get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"])
            for name in iam_client.list_role_policies(RoleName=role)["PolicyNames"]
        ]
    for call in calls:
        check(iam.allowed(policies[call.function], call), f"{call.function}: {call} is allowed by its role")
    made = {(c.function, c.action) for c in calls}
    for function, action in (
        ("mcp-dev", "secretsmanager:GetSecretValue"), ("mcp-dev", "dynamodb:UpdateItem"),
        ("mcp-dev-migrate", "secretsmanager:GetSecretValue"), ("mcp-prod-oauth", "kms:GetPublicKey"),
    ):
        check((function, action) in made, f"{function} made {action} (the replay covers it)")
    # A test of the test: the bridge's role without GetPublicKey must refuse its JWKS reads.
    removed = iam.without(policies.get("mcp-prod-oauth", []), "kms:GetPublicKey")
    refused = [c for c in calls if c.function == "mcp-prod-oauth" and not iam.allowed(removed, c)]
    check(any(c.action == "kms:GetPublicKey" for c in refused),
          f"with kms:GetPublicKey removed from the bridge's role, the replay refuses {', '.join(map(str, refused)) or 'nothing'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True, help="the emulator's port")
    parser.add_argument("--db-port", type=int, required=True, help="the database's TLS port (session pooling)")
    parser.add_argument("--ca", required=True, help="the CA file that signs the database's certificate")
    parser.add_argument("--out", type=Path, required=True, help="where logs and the config go")
    args = parser.parse_args()
    global DB_PORT
    DB_PORT = args.db_port
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "resources.jsonl").write_text("")
    os.environ.update(
        AWS_ENDPOINT_URL=f"http://localhost:{args.port}",
        AWS_ACCESS_KEY_ID="rehearsal", AWS_SECRET_ACCESS_KEY="rehearsal", AWS_DEFAULT_REGION=REGION,
    )
    emulator = start_emulator(args.port, args.out, args.ca)
    try:
        given = seed(args.db_port)
        variants = configs(given, args.db_port)
        config = args.out / "samconfig.toml"
        write_config(variants, config)
        # The config as shipped still holds its example values: the deploy refuses it before
        # building or calling AWS, naming what to edit.
        shipped = subprocess.run(["scripts/deploy", "dev", "--no-build"], cwd=ROOT, env=dict(os.environ, AWS_REGION=REGION),
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        check(shipped.returncode == 1 and "still has the example value of" in shipped.stdout and "VpcId" in shipped.stdout,
              f"infra/samconfig.toml as shipped is refused, naming the values to edit ({shipped.stdout.strip()[-120:]})")
        for stage, section in variants.items():
            print(f"[rehearsal] {stage}", flush=True)
            if stage == "demo":
                # The cluster's host name resolves nowhere here: its functions reach the local
                # database through the PgBouncer instead.
                local_db(args.out, "mcp-demo-migrate")
                local_db(args.out, "mcp-demo")
            if run_deploy(stage, config, args.out):
                params = dict(item.split("=", 1) for item in section["parameter_overrides"])
                expected = given
                if stage == "demo":
                    params = check_foundation(stage, params)
                    expected = params
                check_stack(stage, params, expected, args.out)
        print("[rehearsal] the functions' AWS calls against their roles", flush=True)
        iam_replay(args.out)
    finally:
        emulator.terminate()
        emulator.wait()
    if failures:
        print(f"[rehearsal] {len(failures)} check(s) failed; logs in {args.out}")
        return 1
    print("[rehearsal] every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
