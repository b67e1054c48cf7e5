//! The contract between `infra/` and the code: what the template deploys is what the code
//! reads, routes and expects. (cfn-lint, checkov and jactionlint check the files' own
//! correctness in `scripts/test`; this checks that they fit the program.)

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_norway::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn template() -> Value {
    serde_norway::from_str(&read("infra/template.yaml")).expect("the template is YAML")
}

fn resource<'a>(t: &'a Value, name: &str) -> &'a Value {
    t.get("Resources")
        .and_then(|r| r.get(name))
        .unwrap_or_else(|| panic!("no resource {name}"))
}

fn props<'a>(t: &'a Value, name: &str) -> &'a Value {
    resource(t, name).get("Properties").expect("Properties")
}

/// A CloudFormation short-form intrinsic (`!Ref X`, `!GetAtt X.Y`, `!Sub "..."`) as
/// (tag, text), or `None` for a plain value.
fn intrinsic(v: &Value) -> Option<(String, String)> {
    match v {
        Value::Tagged(t) => Some((
            t.tag.to_string(),
            match &t.value {
                Value::String(s) => s.clone(),
                other => serde_norway::to_string(other).unwrap_or_default(),
            },
        )),
        _ => None,
    }
}

/// `!If [condition, a, b]` with two intrinsics as (condition, a, b).
fn if_of(v: &Value) -> (String, (String, String), (String, String)) {
    let Value::Tagged(t) = v else {
        panic!("not an !If: {v:?}")
    };
    assert_eq!(t.tag.to_string(), "!If");
    let parts = t.value.as_sequence().expect("!If [c, a, b]");
    (
        text(&parts[0]),
        intrinsic(&parts[1]).expect("an intrinsic"),
        intrinsic(&parts[2]).expect("an intrinsic"),
    )
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        other => serde_norway::to_string(other).unwrap_or_default(),
    }
}

fn env_of(t: &Value, function: &str) -> BTreeMap<String, Value> {
    let vars = props(t, function)
        .get("Environment")
        .and_then(|e| e.get("Variables"))
        .and_then(Value::as_mapping)
        .expect("Environment.Variables");
    vars.iter().map(|(k, v)| (text(k), v.clone())).collect()
}

fn default_of(t: &Value, parameter: &str) -> String {
    let p = t
        .get("Parameters")
        .and_then(|p| p.get(parameter))
        .unwrap_or_else(|| panic!("no parameter {parameter}"));
    text(
        p.get("Default")
            .unwrap_or_else(|| panic!("{parameter} has no default")),
    )
}

/// Every environment-variable-shaped string literal (`"FOO_BAR"`) in the Rust sources under
/// `dirs`: what the code can read.
fn names_in_code(dirs: &[&str]) -> BTreeSet<String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    for dir in dirs {
        walk(&root().join(dir), &mut files);
    }
    let mut names = BTreeSet::new();
    for file in files {
        let source = std::fs::read_to_string(&file).unwrap();
        for piece in source.split('"').skip(1).step_by(2) {
            let shaped = piece.len() > 3
                && piece.contains('_')
                && piece.starts_with(|c: char| c.is_ascii_uppercase())
                && piece
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
            if shaped && !piece.starts_with("CARGO_") && !piece.starts_with("AWS_LAMBDA_") {
                names.insert(piece.to_owned());
            }
        }
    }
    names
}

/// The variables in the configuration tables of `docs/configuration.md`: the first column of
/// each row that starts with "| `", every name in backticks there.
fn documented() -> BTreeSet<String> {
    read("docs/configuration.md")
        .lines()
        .filter(|l| l.starts_with("| `"))
        .flat_map(|l| {
            let first = l.split('|').nth(1).unwrap_or_default().to_owned();
            first
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// What the deployed mcp function deliberately leaves to its default, and why.
const MCP_DEFAULTS: &[(&str, &str)] = &[
    (
        "RATE_LIMIT_WAIT_MS",
        "default 150 ms: past it a call runs unchecked and is counted in RateLimitUnchecked",
    ),
    (
        "AUTH_MODE",
        "only the conformance fixture accepts it; the deployed function refuses to start with it",
    ),
    (
        "DATABASE_URL",
        "local runs; deployed credentials come from DB_SECRET_ID",
    ),
    (
        "CURSOR_SIGNING_KEY",
        "local runs; deployed, the key comes from CURSOR_SIGNING_KEY_SECRET_ID",
    ),
    (
        "AUTH_JWKS_FILE",
        "a fixed JWKS for development; deployed, keys are fetched",
    ),
    (
        "AUTH_JWKS_JSON",
        "a fixed JWKS for development; deployed, keys are fetched",
    ),
    (
        "MCP_RESOURCE_METADATA_URL",
        "derived from MCP_RESOURCE_URL by RFC 9728 path insertion, which the routes serve",
    ),
    ("AUTH_AUTHORIZATION_SERVERS", "defaults to the issuer"),
    ("AUTH_ALGORITHMS", "default RS256, ES256, EdDSA"),
    ("AUTH_LEEWAY_SECS", "default 30 s"),
    ("AUTH_MAX_TOKEN_LIFETIME_SECS", "default 24 h"),
    ("AUTH_MAX_TOKEN_BYTES", "default 8 KiB"),
    ("AUTH_JWKS_TTL_SECS", "default 600 s"),
    ("AUTH_JWKS_REFRESH_MIN_INTERVAL_SECS", "default 60 s"),
    ("AUTH_JWKS_MAX_STALE_SECS", "default 24 h"),
    (
        "AUTH_JWKS_FETCH_TIMEOUT_MS",
        "default 2 s, and the request deadline bounds it",
    ),
    (
        "DB_SECRET_TTL_SECS",
        "default 300 s; a refused password re-reads at once",
    ),
    (
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_ENDPOINT names the collector layer's base URL",
    ),
    (
        "OTEL_EXPORTER_OTLP_TIMEOUT",
        "default 500 ms: the collector is on localhost",
    ),
    (
        "OTEL_TRACES_EXPORTER",
        "traces are on exactly when the collector layer is added",
    ),
];

/// The template and the code agree on `function`'s settings: every variable the code reads
/// (but those in `elsewhere`, read by another binary of the same crates) is in the
/// configuration tables of `docs/configuration.md` and is either set by the template or left
/// to a default `defaults` names with its reason; every variable the template sets is read by
/// the code (or is `RUST_LOG`), documented, and not also listed as left to its default.
fn assert_settings_fit(
    function: &str,
    env: &BTreeMap<String, Value>,
    code: &BTreeSet<String>,
    defaults: &[(&str, &str)],
    elsewhere: &[&str],
) {
    let docs = documented();
    let defaults: BTreeMap<_, _> = defaults.iter().copied().collect();
    for name in code {
        if elsewhere.contains(&name.as_str()) {
            continue;
        }
        assert!(
            docs.contains(name),
            "{name} is read by the code of {function} but not in the configuration tables of docs/configuration.md"
        );
        assert!(
            env.contains_key(name) || defaults.contains_key(name.as_str()),
            "{name} is read by the code of {function} but neither set by infra/template.yaml nor listed as left to its default"
        );
    }
    for name in env.keys() {
        assert!(
            code.contains(name) || name == "RUST_LOG",
            "the template sets {name} on {function}, which its code never reads"
        );
        assert!(
            docs.contains(name),
            "the template sets {name} on {function}, which docs/configuration.md does not document"
        );
        assert!(
            !defaults.contains_key(name.as_str()),
            "{name} is both set on {function} and listed as left to its default"
        );
    }
}

#[test]
fn the_mcp_function_gets_every_setting_the_code_reads() {
    let t = template();
    let env = env_of(&t, "McpFunction");
    let code = names_in_code(&[
        "functions/mcp/src",
        "shared/auth/src",
        "shared/db/src",
        "shared/tools/src",
        "shared/protocol/src",
    ]);
    // The migrate-only and emulator variables live in the same crates.
    let elsewhere = [
        "DATABASE_ADMIN_URL",
        "DB_ADMIN_SECRET_ID",
        "AWS_ENDPOINT_URL_SECRETS_MANAGER",
    ];
    assert_settings_fit("McpFunction", &env, &code, MCP_DEFAULTS, &elsewhere);
    assert!(!env.contains_key("AUTH_MODE"));
    // Secrets are read at run time, never stored in the configuration.
    for name in ["CURSOR_SIGNING_KEY", "DATABASE_URL", "AUTH_JWKS_JSON"] {
        assert!(
            !env.contains_key(name),
            "{name} would put a secret in the function's configuration"
        );
    }
    assert_eq!(
        intrinsic(&env["DB_SECRET_ID"]),
        Some(("!Ref".into(), "EndpointSecret".into()))
    );
    assert_eq!(
        intrinsic(&env["CURSOR_SIGNING_KEY_SECRET_ID"]),
        Some(("!Ref".into(), "CursorKeySecret".into()))
    );
    // The endpoint reaches the database through the proxy (or, without one, directly), over
    // verified TLS; the proxy's resources exist exactly when it is used.
    assert_eq!(
        if_of(&env["DB_HOST"]),
        (
            "UseProxy".to_owned(),
            ("!GetAtt".to_owned(), "Proxy.Endpoint".to_owned()),
            ("!Ref".to_owned(), "DatabaseEndpoint".to_owned())
        )
    );
    for proxy_part in [
        "Proxy",
        "ProxyTargets",
        "ProxyRole",
        "ProxySecurityGroup",
        "DatabaseIngressFromProxy",
    ] {
        assert_eq!(text(&resource(&t, proxy_part)["Condition"]), "UseProxy");
    }
    assert_eq!(
        text(&resource(&t, "DatabaseIngressFromFunction")["Condition"]),
        "NoProxy"
    );
    assert_eq!(text(&env["DB_SSLMODE"]), "verify-full");
    assert_eq!(text(&env["MCP_PATH"]), "/mcp");
}

#[test]
fn the_migrate_function_connects_directly_with_the_admin_secret() {
    let t = template();
    let env = env_of(&t, "MigrateFunction");
    let code = names_in_code(&["functions/migrate/src"]);
    for name in [
        "DB_ADMIN_SECRET_ID",
        "DB_SECRET_ID",
        "DB_HOST",
        "DB_NAME",
        "DB_SSLMODE",
        "DB_CA_FILE",
    ] {
        assert!(env.contains_key(name), "migrate needs {name}");
    }
    assert!(code.contains("DB_ADMIN_SECRET_ID"));
    assert_eq!(
        intrinsic(&env["DB_ADMIN_SECRET_ID"]),
        Some(("!Ref".into(), "AdminSecretArn".into()))
    );
    // Not through the transaction pooler: the migrations hold a session-level advisory lock.
    assert_eq!(
        intrinsic(&env["DB_HOST"]),
        Some(("!Ref".into(), "DatabaseEndpoint".into()))
    );
    assert_eq!(text(&env["DB_SSLMODE"]), "verify-full");
    assert_eq!(
        text(&props(&t, "MigrateFunction")["ReservedConcurrentExecutions"]),
        "1"
    );
}

/// The monthly partitions are kept by the migrate function itself: daily, with the payload a
/// deploy sends (nothing more to migrate), and the retention it reads from the template.
#[test]
fn the_migrate_function_keeps_the_partitions_daily_with_the_retention_parameter() {
    let t = template();
    let env = env_of(&t, "MigrateFunction");
    assert_eq!(
        intrinsic(&env["EVENT_RETENTION_MONTHS"]),
        Some(("!Ref".into(), "EventRetentionMonths".into()))
    );
    assert!(names_in_code(&["functions/migrate/src"]).contains("EVENT_RETENTION_MONTHS"));
    assert!(documented().contains("EVENT_RETENTION_MONTHS"));
    assert_eq!(default_of(&t, "EventRetentionMonths"), "0");
    let daily = &props(&t, "MigrateFunction")["Events"]["DailyUpkeep"];
    assert_eq!(text(&daily["Type"]), "ScheduleV2");
    assert_eq!(text(&daily["Properties"]["Input"]), "{}");
    let cron = text(&daily["Properties"]["ScheduleExpression"]);
    assert!(
        cron.starts_with("cron(") && cron.contains(" * * ? *)"),
        "{cron}"
    );
    // A failed run is reported, not only retried.
    let alarm = props(&t, "MigrateErrorsAlarm");
    assert_eq!(
        intrinsic(&alarm["Dimensions"][0]["Value"]),
        Some(("!Ref".into(), "MigrateFunction".into()))
    );
}

#[test]
fn both_functions_ship_the_ca_bundle_they_verify_the_database_with() {
    let t = template();
    let deploy = read("scripts/deploy");
    let script = read("scripts/test");
    let bundle = "infra/certs/aws-rds-and-proxy-ca-bundle.pem";
    assert!(root().join(bundle).is_file());
    // `cargo lambda build --include` keeps the relative path inside the zip, which Lambda
    // unpacks into /var/task; scripts/deploy also refuses a zip without it.
    assert!(
        deploy.contains(&format!("CA_BUNDLE = \"{bundle}\""))
            && deploy.contains("\"--include\", CA_BUNDLE"),
        "the deploy build does not ship the bundle"
    );
    assert!(
        script.contains(&format!("--include {bundle}")),
        "scripts/test does not build the zip the template uses"
    );
    for (function, binary) in [("McpFunction", "mcp"), ("MigrateFunction", "migrate")] {
        let env = env_of(&t, function);
        assert_eq!(text(&env["DB_CA_FILE"]), format!("/var/task/{bundle}"));
        let p = props(&t, function);
        assert_eq!(
            text(&p["CodeUri"]),
            format!("../target/lambda/{binary}/bootstrap.zip")
        );
        assert!(
            root()
                .join(format!("functions/{binary}/Cargo.toml"))
                .is_file()
        );
        assert!(deployed_functions().contains(&binary.to_owned()));
        assert_eq!(text(&p["Runtime"]), "provided.al2023");
        assert_eq!(text(&p["Handler"]), "bootstrap");
        assert_eq!(
            intrinsic(&p["Architectures"][0]),
            Some(("!Ref".into(), "Architecture".into()))
        );
        assert_eq!(text(&p["LoggingConfig"]["LogFormat"]), "JSON");
    }
}

#[tokio::test]
async fn every_route_reaches_the_handler_and_nothing_else_is_routed() {
    let t = template();
    let mut routes = BTreeSet::new();
    let mut bridge_routes = BTreeSet::new();
    for (name, r) in t["Resources"].as_mapping().unwrap() {
        if r["Type"] == "AWS::ApiGatewayV2::Route" {
            let key = text(&r["Properties"]["RouteKey"]);
            let target = intrinsic(&r["Properties"]["Target"]).expect("a target");
            match target.1.as_str() {
                "integrations/${McpIntegration}" => routes.insert(key),
                "integrations/${OAuthIntegration}" => {
                    assert_eq!(text(&r["Condition"]), "UseOAuthBridge", "{name:?}");
                    bridge_routes.insert(key)
                }
                other => panic!("{name:?} routes to {other}"),
            };
        }
    }
    bridge_routes_reach_the_bridge(&bridge_routes).await;
    let expected: BTreeSet<String> = [
        "POST /mcp",
        "GET /mcp",
        "DELETE /mcp",
        "GET /.well-known/oauth-protected-resource",
        "GET /.well-known/oauth-protected-resource/mcp",
        // Only when a verification token is given (condition HasAppsChallenge).
        "GET /.well-known/openai-apps-challenge",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(routes, expected);
    // What the handler answers on each (authentication configured as deployed).
    let app = crate::support::auth::app();
    for key in &routes {
        let (method, path) = key.split_once(' ').unwrap();
        let req = http::Request::builder()
            .method(method)
            .uri(path)
            .header("host", "127.0.0.1")
            .header("accept", "application/json")
            .header("content-type", "application/json")
            .body(lambda_http::Body::from(
                r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            ))
            .unwrap();
        let a = crate::support::http::send(&app, req).await;
        let expected = match (method, path) {
            ("POST", _) => 401,
            (_, "/mcp") => 405,
            // This app has no token configured (tests/http_layer.rs serves one).
            (_, "/.well-known/openai-apps-challenge") => 404,
            _ => 200,
        };
        assert_eq!(a.status, expected, "{key}: {a:?}");
        if expected == 401 {
            assert!(
                a.header("www-authenticate")
                    .is_some_and(|h| h.contains("resource_metadata="))
            );
        }
    }
}

/// The bridge's routes cover every path it serves, and each reaches its handler (AWS clients
/// pointed at a closed port: only the JWKS needs KMS, and says 503).
async fn bridge_routes_reach_the_bridge(routes: &BTreeSet<String>) {
    let expected: BTreeSet<String> = [
        "ANY /oauth/{proxy+}",
        "ANY /.well-known/oauth-authorization-server",
        "ANY /.well-known/openid-configuration",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(routes, &expected);
    let closed = "http://127.0.0.1:1";
    let app = oauth::App::new(
        bridge_config(),
        oauth::Secrets {
            sealing_key: "an-infra-test-sealing-secret-of-enough-length".into(),
            upstream_client_secret: "unused".into(),
        },
        crate::support::aws::kms(closed),
        crate::support::aws::dynamodb(closed),
    )
    .unwrap();
    for (method, path, status) in [
        ("GET", "/.well-known/oauth-authorization-server", 200),
        ("GET", "/.well-known/openid-configuration", 200),
        ("GET", oauth::AUTHORIZE_PATH, 400),
        ("POST", oauth::CONSENT_PATH, 400),
        ("GET", oauth::CALLBACK_PATH, 400),
        ("POST", oauth::TOKEN_PATH, 400),
        ("POST", oauth::REGISTER_PATH, 400),
        ("GET", oauth::JWKS_PATH, 503),
    ] {
        let routed = routes.iter().any(|key| {
            let (_, pattern) = key.split_once(' ').unwrap();
            match pattern.strip_suffix("{proxy+}") {
                Some(prefix) => path.starts_with(prefix) && path.len() > prefix.len(),
                None => pattern == path,
            }
        });
        assert!(routed, "no route reaches {path}");
        let req = http::Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(lambda_http::Body::Empty)
            .unwrap();
        let answer = app.handle(req).await;
        assert_eq!(answer.status().as_u16(), status, "{method} {path}");
    }
}

fn bridge_config() -> oauth::Config {
    let env = |name: &str| {
        let value = match name {
            "OAUTH_ISSUER" => "https://mcp.example.com",
            "MCP_RESOURCE_URL" => "https://mcp.example.com/mcp",
            "UPSTREAM_ISSUER" => "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_x",
            "UPSTREAM_CLIENT_ID" => "client",
            "OAUTH_KMS_KEY_ID" => "key",
            "OAUTH_TABLE" => "table",
            "UPSTREAM_DEFAULT_TENANT" => "t",
            _ => return None,
        };
        Some(value.to_owned())
    };
    oauth::Config::from_env(&mcp_env::Env::new(env)).unwrap()
}

/// What the deployed bridge leaves to its default, and why.
const BRIDGE_DEFAULTS: &[(&str, &str)] = &[
    ("OAUTH_CIMD_TIMEOUT_MS", "default 3 s"),
    (
        "OAUTH_CIMD_CA_FILE",
        "local runs only: the bridge refuses it unless its issuer is on loopback",
    ),
];

#[test]
fn the_bridge_gets_every_setting_it_reads_and_stays_out_of_the_vpc() {
    let t = template();
    let env = env_of(&t, "OAuthFunction");
    let code = names_in_code(&["functions/oauth/src"]);
    assert_settings_fit("OAuthFunction", &env, &code, BRIDGE_DEFAULTS, &[]);
    for (name, target) in [
        ("OAUTH_SEALING_KEY_SECRET_ID", "OAuthSealingKeySecret"),
        ("UPSTREAM_CLIENT_SECRET_ID", "UpstreamClientSecret"),
        ("OAUTH_TABLE", "OAuthTable"),
    ] {
        assert_eq!(
            intrinsic(&env[name]),
            Some(("!Ref".into(), target.into())),
            "{name}"
        );
    }
    // The bridge issues tokens for the MCP URL the endpoint serves, and the endpoint trusts
    // the bridge's issuer with the tenant claim the bridge writes.
    let mcp = env_of(&t, "McpFunction");
    assert_eq!(env["MCP_RESOURCE_URL"], mcp["MCP_RESOURCE_URL"]);
    assert_eq!(mcp["AUTH_ISSUER"][1], env["OAUTH_ISSUER"]);
    assert_eq!(text(&env["OAUTH_TENANT_CLAIM"]), "tenant_id");
    assert_eq!(text(&mcp["AUTH_TENANT_CLAIM"][1]), "tenant_id");
    let p = props(&t, "OAuthFunction");
    assert!(
        p.get("VpcConfig").is_none(),
        "the bridge needs no VPC (and no NAT)"
    );
    assert_eq!(text(&p["CodeUri"]), "../target/lambda/oauth/bootstrap.zip");
    assert!(deployed_functions().contains(&"oauth".to_owned()));
    // The signing keys sign and nothing else, inside KMS; each slot exists under its condition.
    for (key, condition) in [
        ("OAuthSigningKey", "HasBlueKey"),
        ("OAuthSigningKeyGreen", "HasGreenKey"),
    ] {
        assert_eq!(text(&props(&t, key)["KeySpec"]), "RSA_2048");
        assert_eq!(text(&props(&t, key)["KeyUsage"]), "SIGN_VERIFY");
        assert_eq!(text(&resource(&t, key)["Condition"]), condition);
    }
    // The slot that signs is the one the bridge signs with and the role may Sign with; the
    // other, during a rotation, is published, and the role may read both public keys (the
    // bridge loads every key it names or none).
    let signing = |env_value: &Value, tag: &str, suffix: &str| {
        assert_eq!(
            if_of(env_value),
            (
                "BlueKeySigns".to_owned(),
                (tag.to_owned(), format!("OAuthSigningKey{suffix}")),
                (tag.to_owned(), format!("OAuthSigningKeyGreen{suffix}"))
            )
        );
    };
    signing(&env["OAUTH_KMS_KEY_ID"], "!Ref", "");
    let previous = if_of(&env["OAUTH_KMS_PREVIOUS_KEY_IDS"]);
    assert_eq!(previous.0, "RotatingKeys");
    assert_eq!(previous.2, ("!Ref".to_owned(), "AWS::NoValue".to_owned()));
    // The table: what the store writes expires by TTL; recoverable; encrypted with our key.
    let table = props(&t, "OAuthTable");
    assert_eq!(text(&table["BillingMode"]), "PAY_PER_REQUEST");
    let ttl = text(&table["TimeToLiveSpecification"]["AttributeName"]);
    assert!(read("functions/oauth/src/store.rs").contains(&format!("\"{ttl}\"")));
    assert_eq!(
        table["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"],
        Value::from(true)
    );
    assert_eq!(table["SSESpecification"]["SSEEnabled"], Value::from(true));
    // The role: its two secrets, Sign on its key, three item actions on its table.
    let role = props(&t, "OAuthRole");
    assert!(role.get("ManagedPolicyArns").is_none());
    let mut grants: Vec<(String, String)> = Vec::new();
    for policy in role["Policies"].as_sequence().unwrap() {
        for s in policy["PolicyDocument"]["Statement"].as_sequence().unwrap() {
            let actions: Vec<String> = match &s["Action"] {
                Value::Sequence(a) => a.iter().map(text).collect(),
                one => vec![text(one)],
            };
            if text(&s["Sid"]).contains("Key")
                && actions
                    .iter()
                    .all(|a| a == "kms:Sign" || a == "kms:GetPublicKey")
            {
                continue; // the signing keys' statements, checked below
            }
            let resources: Vec<String> = match &s["Resource"] {
                Value::Sequence(r) => r.iter().map(|r| intrinsic(r).unwrap().1).collect(),
                one => vec![intrinsic(one).map_or_else(|| text(one), |i| i.1)],
            };
            for a in &actions {
                if a.starts_with("kms:") && a != "kms:Sign" && a != "kms:GetPublicKey" {
                    assert!(
                        s["Condition"]["StringEquals"]
                            .get("kms:ViaService")
                            .is_some(),
                        "{a}"
                    );
                }
                for r in &resources {
                    grants.push((a.clone(), r.clone()));
                }
            }
        }
    }
    let of = |action: &str| -> Vec<&str> {
        grants
            .iter()
            .filter(|(a, _)| a == action)
            .map(|(_, r)| r.as_str())
            .collect()
    };
    assert_eq!(
        of("secretsmanager:GetSecretValue"),
        ["OAuthSealingKeySecret", "UpstreamClientSecret"]
    );
    let statement = |sid: &str| -> Value {
        role["Policies"]
            .as_sequence()
            .unwrap()
            .iter()
            .flat_map(|p| p["PolicyDocument"]["Statement"].as_sequence().unwrap())
            .find(|s| text(&s["Sid"]) == sid)
            .unwrap_or_else(|| panic!("no statement {sid}"))
            .clone()
    };
    let sign = statement("SignAccessTokensWithTheCurrentKey");
    assert_eq!(text(&sign["Action"]), "kms:Sign");
    signing(&sign["Resource"], "!GetAtt", ".Arn");
    let publish = statement("PublishEveryKeyOfTheRotation");
    assert_eq!(text(&publish["Action"]), "kms:GetPublicKey");
    let published: Vec<_> = publish["Resource"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(if_of)
        .collect();
    assert_eq!(
        published,
        [
            (
                "HasBlueKey".to_owned(),
                ("!GetAtt".to_owned(), "OAuthSigningKey.Arn".to_owned()),
                ("!Ref".to_owned(), "AWS::NoValue".to_owned())
            ),
            (
                "HasGreenKey".to_owned(),
                ("!GetAtt".to_owned(), "OAuthSigningKeyGreen.Arn".to_owned()),
                ("!Ref".to_owned(), "AWS::NoValue".to_owned())
            )
        ]
    );
    for action in [
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:GetItem",
    ] {
        assert_eq!(of(action), ["OAuthTable.Arn"], "{action}");
    }
    assert!(
        grants
            .iter()
            .all(|(a, r)| r != "*" || a.starts_with("xray:Put")),
        "{grants:?}"
    );
    assert!(
        !grants
            .iter()
            .any(|(a, _)| a == "dynamodb:DeleteItem" || a == "dynamodb:Scan")
    );
}

#[test]
fn timeouts_fit_inside_each_other() {
    let t = template();
    let integration_ms: u64 = text(&props(&t, "McpIntegration")["TimeoutInMillis"])
        .parse()
        .unwrap();
    // HTTP APIs wait at most 30 s for an integration.
    assert!(integration_ms <= 30_000);
    let timeout = |s: &str| s.parse::<u64>().unwrap() * 1000;
    let margin = |s: &str| s.parse::<u64>().unwrap();
    let mut settings = vec![(
        "template defaults".to_owned(),
        timeout(&default_of(&t, "FunctionTimeoutSeconds")),
        margin(&default_of(&t, "DeadlineMarginMs")),
    )];
    // And every environment in samconfig.toml.
    let samconfig = read("infra/samconfig.toml");
    for section in samconfig
        .split("\n[")
        .filter(|s| s.contains(".deploy.parameters]"))
    {
        let value = |key: &str| {
            section
                .lines()
                .find_map(|l| l.trim().strip_prefix(&format!("\"{key}=")))
                .map(|rest| rest.split('"').next().unwrap().to_owned())
        };
        if let (Some(tout), Some(m)) = (value("FunctionTimeoutSeconds"), value("DeadlineMarginMs"))
        {
            settings.push((
                section.lines().next().unwrap().to_owned(),
                timeout(&tout),
                margin(&m),
            ));
        }
    }
    assert!(
        settings.len() >= 3,
        "dev and prod set their timeouts: {settings:?}"
    );
    let tool_cap = mcp_protocol::DEFAULT_TOOL_MAX_DURATION.as_millis() as u64;
    for (name, timeout_ms, margin_ms) in settings {
        assert!(
            timeout_ms <= integration_ms,
            "{name}: the function outlives the gateway"
        );
        // The margin covers a cancel request (250 ms) and returning the answer.
        assert!(
            (300..timeout_ms / 4).contains(&margin_ms),
            "{name}: margin {margin_ms} ms"
        );
        assert!(tool_cap < integration_ms, "{name}");
    }
    let statement: u64 = default_of(&t, "ToolStatementTimeoutMs").parse().unwrap();
    assert!(statement < timeout(&default_of(&t, "FunctionTimeoutSeconds")));
}

#[test]
fn the_function_role_reads_two_secrets_and_nothing_else() {
    let t = template();
    let role = props(&t, "McpRole");
    assert!(
        role.get("ManagedPolicyArns").is_none(),
        "no managed policies: every grant is listed here"
    );
    let mut secrets = Vec::new();
    for policy in role["Policies"].as_sequence().unwrap() {
        for s in policy["PolicyDocument"]["Statement"].as_sequence().unwrap() {
            assert_eq!(s["Effect"], Value::from("Allow"));
            let actions: Vec<String> = match &s["Action"] {
                Value::Sequence(a) => a.iter().map(text).collect(),
                one => vec![text(one)],
            };
            for a in &actions {
                assert!(!a.contains('*'), "wildcard action {a}");
            }
            let star = s["Resource"] == "*";
            if star {
                // Only what cannot be scoped to a resource.
                for a in &actions {
                    assert!(
                        a.starts_with("ec2:") && a.contains("NetworkInterface")
                            || a.starts_with("ec2:") && a.contains("PrivateIpAddresses")
                            || a == "ec2:DescribeSubnets"
                            || a.starts_with("xray:Put"),
                        "{a} on *"
                    );
                }
            }
            if actions.iter().any(|a| a == "secretsmanager:GetSecretValue") {
                for r in s["Resource"].as_sequence().unwrap() {
                    secrets.push(intrinsic(r).unwrap().1);
                }
            }
            if actions.iter().any(|a| a == "kms:Decrypt") {
                assert!(
                    s["Condition"]["StringEquals"]
                        .get("kms:ViaService")
                        .is_some()
                );
            }
            assert!(
                !actions.iter().any(|a| a.starts_with("rds")),
                "password auth through the proxy needs no RDS permission"
            );
        }
    }
    secrets.sort();
    assert_eq!(secrets, ["CursorKeySecret", "EndpointSecret"]);
    // The proxy requires TLS and authenticates with the endpoint's secret.
    let proxy = props(&t, "Proxy");
    assert_eq!(proxy["RequireTLS"], Value::from(true));
    assert_eq!(
        intrinsic(&proxy["Auth"][0]["SecretArn"]).unwrap().1,
        "EndpointSecret"
    );
}

#[test]
fn the_alarms_watch_the_metrics_the_function_emits() {
    let t = template();
    let env = env_of(&t, "McpFunction");
    let namespace = intrinsic(&env["METRICS_NAMESPACE"]).unwrap().1;
    let alarm = props(&t, "DeadlineExceededAlarm");
    assert_eq!(intrinsic(&alarm["Namespace"]).unwrap().1, namespace);
    let metric = text(&alarm["MetricName"]);
    assert!(read("functions/mcp/src/metrics.rs").contains(&format!("\"{metric}\"")));
    for name in [
        "McpErrorsAlarm",
        "McpThrottlesAlarm",
        "McpDurationAlarm",
        "Api5xxAlarm",
    ] {
        assert_eq!(
            resource(&t, name)["Type"],
            Value::from("AWS::CloudWatch::Alarm")
        );
    }
    // Logs are kept for a bounded time.
    for group in ["McpLogGroup", "MigrateLogGroup", "ApiAccessLogs"] {
        assert!(props(&t, group).get("RetentionInDays").is_some(), "{group}");
    }
}

/// Nothing deploys that has not passed the suite: the deploy job needs the test job, which
/// runs `.ci/run` (the README's test command) in an image pinned by digest.
#[test]
fn the_deploy_waits_for_the_whole_test_suite() {
    let workflow: Value = serde_norway::from_str(&read(".github/workflows/deploy.yml")).unwrap();
    let jobs = &workflow["jobs"];
    let needs: Vec<String> = match &jobs["deploy"]["needs"] {
        Value::Sequence(items) => items.iter().map(text).collect(),
        one => vec![text(one)],
    };
    assert!(needs.contains(&"test".to_owned()), "deploy needs {needs:?}");
    let image = text(&jobs["test"]["container"]);
    assert!(
        image.contains("@sha256:"),
        "{image} is not pinned by digest"
    );
    let runs: Vec<String> = jobs["test"]["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|step| step.get("run").map(text))
        .collect();
    assert!(runs.iter().any(|r| r.trim() == ".ci/run"), "{runs:?}");
    assert!(read(".ci/run").contains("scripts/test"));
}

/// The functions `scripts/deploy` builds and checks (its `FUNCTIONS` tuple).
fn deployed_functions() -> Vec<String> {
    let script = read("scripts/deploy");
    let line = script
        .lines()
        .find(|l| l.starts_with("FUNCTIONS = ("))
        .expect("FUNCTIONS in scripts/deploy");
    line.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// One deploy path: the workflow deploys by running `scripts/deploy`, the README and
/// docs/deploy.md give the same command, and nothing else runs `sam deploy` or builds the
/// zips. `scripts/deploy` builds every function the template packages (SAM packages every
/// function's `CodeUri`, whatever its condition) and hands SAM CLI an absolute `--config-file`
/// (a relative one is read from the template's folder, aws/aws-sam-cli 3594). The deploy
/// rehearsal in `scripts/test` runs the workflow's Deploy step itself against the emulator.
#[test]
fn there_is_one_deploy_path_and_it_builds_every_function() {
    let template_text = read("infra/template.yaml");
    let functions: Vec<&str> = template_text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("CodeUri: ../target/lambda/"))
        .filter_map(|l| l.strip_suffix("/bootstrap.zip"))
        .collect();
    assert_eq!(functions, deployed_functions());
    let workflow: Value = serde_norway::from_str(&read(".github/workflows/deploy.yml")).unwrap();
    let mut deploy_runs = Vec::new();
    for (job, body) in workflow["jobs"].as_mapping().unwrap() {
        for step in body["steps"].as_sequence().unwrap() {
            let Some(run) = step.get("run").map(text) else {
                continue;
            };
            assert!(
                !run.contains("sam deploy") && !run.contains("cargo lambda build"),
                "job {}: deploys or builds beside scripts/deploy: {run}",
                text(job)
            );
            if text(job) == "deploy" && text(&step["name"]) == "Deploy" {
                deploy_runs.push(run);
            }
        }
    }
    assert_eq!(
        deploy_runs.len(),
        1,
        "one step named Deploy in the deploy job"
    );
    assert!(
        deploy_runs[0].contains("scripts/deploy \"$STAGE\""),
        "{}",
        deploy_runs[0]
    );
    assert!(read("scripts/rehearsal/rehearse.py").contains("s.get(\"name\") == \"Deploy\""));
    for page in ["README.md", "docs/deploy.md"] {
        let text = read(page);
        assert!(text.contains("scripts/deploy dev"), "{page}");
        assert!(
            !text.contains("`sam deploy -"),
            "{page} gives a deploy command of its own"
        );
    }
    let script = read("scripts/deploy");
    assert!(script.contains("config = args.config.resolve()"));
    assert!(script.contains("\"--config-file\", str(config)"));
    // The quick start: the command the docs give is the one the rehearsal runs, and every
    // stage of the SAM config is a Stage the template accepts.
    let quickstart = "scripts/deploy demo --quickstart";
    assert!(read("docs/deploy.md").contains(quickstart));
    assert!(read("README.md").contains(quickstart));
    assert!(
        read("scripts/rehearsal/rehearse.py").contains(&format!("QUICKSTART = \"{quickstart}\""))
    );
    let stages: Vec<String> = template()["Parameters"]["Stage"]["AllowedValues"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(text)
        .collect();
    let config = read("infra/samconfig.toml");
    for line in config.lines() {
        if let Some(stage) = line
            .strip_prefix('[')
            .and_then(|l| l.strip_suffix(".deploy.parameters]"))
            .filter(|s| *s != "default")
        {
            assert!(stages.contains(&stage.to_owned()), "{stage} is no Stage");
        }
    }
}

/// The VPC statements grant what they say they mirror: `AWSLambdaVPCAccessExecutionRole`,
/// whose version of January 2024 added `ec2:DescribeSubnets`.
#[test]
fn the_vpc_statements_grant_what_the_managed_policy_grants() {
    let t = template();
    let wanted: BTreeSet<&str> = [
        "ec2:CreateNetworkInterface",
        "ec2:DescribeNetworkInterfaces",
        "ec2:DescribeSubnets",
        "ec2:DeleteNetworkInterface",
        "ec2:AssignPrivateIpAddresses",
        "ec2:UnassignPrivateIpAddresses",
    ]
    .into();
    let mut found = 0;
    for (name, resource) in t["Resources"].as_mapping().unwrap() {
        if resource["Type"] != "AWS::IAM::Role" {
            continue;
        }
        let policies = resource["Properties"]["Policies"].as_sequence();
        for statement in policies
            .into_iter()
            .flatten()
            .filter_map(|p| p["PolicyDocument"]["Statement"].as_sequence())
            .flatten()
            .filter(|s| s["Sid"] == "VpcNetworkInterfaces")
        {
            let actions: BTreeSet<String> = statement["Action"]
                .as_sequence()
                .unwrap()
                .iter()
                .map(text)
                .collect();
            let actions: BTreeSet<&str> = actions.iter().map(String::as_str).collect();
            assert_eq!(actions, wanted, "{}", text(name));
            found += 1;
        }
    }
    assert_eq!(found, 2, "the mcp and migrate roles");
}

/// `AdminSecretArn` takes only a complete secret ARN: Secrets Manager resolves a partial one
/// (without the 6 characters it appends), IAM does not, and MigrateRole grants the ARN as given.
#[test]
fn the_admin_secret_arn_must_be_complete() {
    let t = template();
    let pattern = text(&t["Parameters"]["AdminSecretArn"]["AllowedPattern"]);
    let pattern = regex::Regex::new(&pattern).unwrap();
    let samconfig = read("infra/samconfig.toml");
    let given: Vec<&str> = samconfig
        .lines()
        .filter_map(|l| l.split("\"AdminSecretArn=").nth(1))
        .filter_map(|l| l.split('"').next())
        .collect();
    assert_eq!(given.len(), 2, "dev and prod");
    for arn in given {
        assert!(pattern.is_match(arn), "{arn}");
    }
    for partial in [
        "arn:aws:secretsmanager:eu-west-1:123456789012:secret:events-dev-admin",
        "arn:aws:secretsmanager:eu-west-1:123456789012:secret:events-dev-admin-AbCdE",
        "arn:aws:secretsmanager:::secret:x-AbCdEf",
    ] {
        assert!(!pattern.is_match(partial), "{partial}");
    }
}

/// A function the template gives `RUST_LOG` reads it (its tracing filter comes from the
/// environment), so the level set per stage takes effect.
#[test]
fn every_function_given_rust_log_reads_it() {
    let t = template();
    for (function, dirs) in [
        (
            "McpFunction",
            &["functions/mcp/src", "shared/lambda/src"][..],
        ),
        ("MigrateFunction", &["functions/migrate/src"][..]),
        (
            "OAuthFunction",
            &["functions/oauth/src", "shared/lambda/src"][..],
        ),
    ] {
        if !env_of(&t, function).contains_key("RUST_LOG") {
            continue;
        }
        let reads = dirs.iter().any(|dir| {
            std::fs::read_dir(root().join(dir))
                .unwrap()
                .filter_map(Result::ok)
                .any(|f| {
                    std::fs::read_to_string(f.path())
                        .is_ok_and(|code| code.contains("EnvFilter::try_from_default_env"))
                })
        });
        assert!(reads, "{function} is given RUST_LOG but never reads it");
    }
}
