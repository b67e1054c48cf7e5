"""The AWS calls the rehearsed functions made, held to the policies of the roles they ran as.

The emulator records every request it serves (moto's recorder); each function ran with
credentials naming it (runtime_api.py), so each call is attributed to the function, and so to
the role the stack gave it. A call is turned into an IAM action and the ARN of the resource it
acted on, plus the KMS calls AWS makes on the caller's behalf (Secrets Manager decrypting a
secret with its key; DynamoDB using its table's key), which IAM evaluates with
kms:ViaService. Each is then evaluated against the role's deployed inline policies.

The evaluation covers what the template's policies use: Allow and Deny statements, Action and
Resource with wildcards, and StringEquals or StringLike conditions on kms:ViaService. Any
other condition counts as unmet, so the check errs towards refusing.
"""

import ast
import base64
import fnmatch
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# X-Amz-Target prefixes of the JSON-protocol services the functions call.
TARGETS = {"secretsmanager": "secretsmanager", "TrentService": "kms", "DynamoDB_20120810": "dynamodb"}
AKID_PREFIX = "rehearsal-"


@dataclass(frozen=True)
class Call:
    function: str
    action: str
    resource: str
    via_service: str | None = None

    def __str__(self) -> str:
        via = f" (via {self.via_service})" if self.via_service else ""
        return f"{self.action} on {self.resource}{via}"


def recorded_calls(recording: Path, resolve: Any) -> list[Call]:
    """The rehearsed functions' calls in moto's recording, as IAM sees them.

    resolve(service, kind, value) names a resource by its ARN (a secret's name, a key's id,
    a table's name) and reports the keys AWS would use on the caller's behalf.
    """
    calls: list[Call] = []
    for line in recording.read_text().splitlines():
        entry = json.loads(line)
        headers = {k.lower(): v for k, v in entry["headers"].items()}
        credential = headers.get("authorization", "").partition("Credential=")[2].split("/")[0]
        if not credential.startswith(AKID_PREFIX):
            continue
        function = credential.removeprefix(AKID_PREFIX)
        prefix, _, operation = headers.get("x-amz-target", "").partition(".")
        service = TARGETS.get(prefix)
        if service is None:
            calls.append(Call(function, f"unknown:{entry['method']} {entry['url']}", "*"))
            continue
        body = entry.get("body") or "{}"
        if entry.get("body_encoded"):
            body = base64.b64decode(body).decode()
        request = json.loads(body or "{}")
        if service == "secretsmanager":
            arn, key = resolve("secretsmanager", "secret", request["SecretId"])
            calls.append(Call(function, f"secretsmanager:{operation}", arn))
            if operation == "GetSecretValue" and key:
                calls.append(Call(function, "kms:Decrypt", key, f"secretsmanager.{region_of(arn)}.amazonaws.com"))
        elif service == "kms":
            arn, _ = resolve("kms", "key", request["KeyId"])
            calls.append(Call(function, f"kms:{operation}", arn))
        else:
            arn, key = resolve("dynamodb", "table", request["TableName"])
            calls.append(Call(function, f"dynamodb:{operation}", arn))
            if key:
                via = f"dynamodb.{region_of(arn)}.amazonaws.com"
                calls.append(Call(function, "kms:Decrypt", key, via))
                if operation in ("PutItem", "UpdateItem"):
                    calls.append(Call(function, "kms:GenerateDataKey", key, via))
    return calls


def region_of(arn: str) -> str:
    return arn.split(":")[3]


def parse_policy(document: Any) -> dict[str, Any]:
    """A policy document as moto returns it: a dict, JSON, or (from CloudFormation) a repr."""
    if isinstance(document, dict):
        return document
    try:
        return json.loads(document)
    except ValueError:
        return ast.literal_eval(document)


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _matches(patterns: Any, value: str) -> bool:
    return any(fnmatch.fnmatchcase(value.lower(), str(p).lower()) for p in _as_list(patterns))


def _conditions_met(condition: dict[str, Any], call: Call) -> bool:
    context = {"kms:viaservice": call.via_service}
    for operator, tests in condition.items():
        for key, wanted in tests.items():
            have = context.get(key.lower())
            if have is None:
                return False
            if operator == "StringEquals" and have not in _as_list(wanted):
                return False
            if operator == "StringLike" and not _matches(wanted, have):
                return False
            if operator not in ("StringEquals", "StringLike"):
                return False
    return True


def allowed(policies: list[dict[str, Any]], call: Call) -> bool:
    """Allowed by some statement and denied by none."""
    verdict = False
    for policy in policies:
        for statement in _as_list(policy.get("Statement", [])):
            if not (_matches(statement.get("Action", []), call.action) and _matches(statement.get("Resource", []), call.resource)):
                continue
            if not _conditions_met(statement.get("Condition", {}), call):
                continue
            if statement.get("Effect") == "Deny":
                return False
            verdict = True
    return verdict


def without(policies: list[dict[str, Any]], action: str) -> list[dict[str, Any]]:
    """The policies with one action taken out of every statement (the rehearsal's negative
    control: a permission removed must be a refused call)."""
    out = []
    for policy in policies:
        statements = []
        for statement in _as_list(policy.get("Statement", [])):
            actions = [a for a in _as_list(statement.get("Action", [])) if a != action]
            if actions:
                statements.append({**statement, "Action": actions})
        out.append({**policy, "Statement": statements})
    return out
