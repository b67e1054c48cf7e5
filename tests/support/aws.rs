//! AWS services for tests: clients of moto in server mode (`TEST_MOTO_URL`, started by
//! scripts/test) with test credentials, and the resources the template defines.

use std::time::{SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
};
use aws_sdk_kms::types::{KeySpec, KeyUsageType};

/// The emulator's URL.
pub(crate) fn moto_url() -> String {
    std::env::var("TEST_MOTO_URL")
        .expect("TEST_MOTO_URL is not set: run scripts/test (it starts moto in server mode)")
}

pub(crate) fn dynamodb(endpoint: &str) -> aws_sdk_dynamodb::Client {
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .credentials_provider(Credentials::new("test", "test", None, None, "tests"))
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}

pub(crate) fn kms(endpoint: &str) -> aws_sdk_kms::Client {
    let config = aws_sdk_kms::Config::builder()
        .behavior_version(aws_sdk_kms::config::BehaviorVersion::latest())
        .region(aws_sdk_kms::config::Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .credentials_provider(aws_sdk_kms::config::Credentials::new(
            "test", "test", None, None, "tests",
        ))
        .build();
    aws_sdk_kms::Client::from_conf(config)
}

/// A unique name, so reruns against the same emulator start from zero.
fn unique(prefix: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{prefix}-{nanos}")
}

/// A fresh table, as the template defines it (key `pk`, on demand).
pub(crate) async fn table(client: &aws_sdk_dynamodb::Client, prefix: &str) -> String {
    let name = unique(prefix);
    client
        .create_table()
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("pk")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("pk")
                .key_type(KeyType::Hash)
                .build()
                .unwrap(),
        )
        .table_name(&name)
        .send()
        .await
        .unwrap();
    name
}

/// A fresh RSA 2048 signing key, as the template defines the bridge's; its id.
pub(crate) async fn signing_key(client: &aws_sdk_kms::Client) -> String {
    client
        .create_key()
        .key_spec(KeySpec::Rsa2048)
        .key_usage(KeyUsageType::SignVerify)
        .description(unique("oauth-bridge-test"))
        .send()
        .await
        .unwrap()
        .key_metadata()
        .unwrap()
        .key_id()
        .to_owned()
}
