//! Input schemas generated from argument types, so a tool's bounds and defaults are written
//! once, on the struct its body receives.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

/// The `inputSchema` of a tool whose arguments deserialize into `A`: JSON Schema 2020-12
/// (the dialect MCP assumes when a schema names none), every subschema inline (clients
/// render `$ref`s poorly), an `Option` field simply not required (never `null`: a caller
/// leaves it out), without the `$schema` and `title` keys the registry does not publish.
pub fn input_schema<A: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut schema = Value::from(generator.into_root_schema_for::<A>());
    if let Value::Object(map) = &mut schema {
        map.remove("title");
        map.remove("description");
        // An argument-less tool still says `properties: {}`: some clients require the key.
        let properties = map
            .entry("properties")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if let Value::Object(properties) = properties {
            properties.values_mut().for_each(not_null);
        }
    }
    schema
}

/// An optional argument is left out, never sent as `null`: schemars writes `Option<T>` as
/// "T or null", which would let `null` through to a body that never expects it.
fn not_null(property: &mut Value) {
    let Value::Object(map) = property else { return };
    if let Some(Value::Array(types)) = map.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            map.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if let Some(Value::Array(options)) = map.get_mut("anyOf") {
        options.retain(|o| o.get("type") != Some(&Value::from("null")));
        if let [Value::Object(only)] = options.as_slice() {
            let only = only.clone();
            map.remove("anyOf");
            for (k, v) in only {
                map.entry(k).or_insert(v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Example {
        /// Said to the model
        #[schemars(length(min = 1, max = 10))]
        text: String,
        #[serde(default = "three")]
        #[schemars(range(min = 1, max = 9))]
        times: i64,
        maybe: Option<bool>,
    }

    fn three() -> i64 {
        3
    }

    #[test]
    fn bounds_defaults_and_optional_fields_come_from_the_struct() {
        let schema = input_schema::<Example>();
        assert_eq!(schema["type"], json!("object"));
        assert_eq!(schema["additionalProperties"], json!(false));
        assert_eq!(schema["required"], json!(["text"]));
        let text = &schema["properties"]["text"];
        assert_eq!(text["maxLength"], json!(10));
        assert_eq!(text["minLength"], json!(1));
        assert_eq!(text["description"], json!("Said to the model"));
        assert_eq!(schema["properties"]["times"]["default"], json!(3));
        assert_eq!(schema["properties"]["times"]["maximum"], json!(9));
        assert_eq!(schema["properties"]["maybe"]["type"], json!("boolean"));
        for absent in ["$schema", "title", "$defs"] {
            assert!(schema.get(absent).is_none(), "{absent}: {schema}");
        }
    }
}
