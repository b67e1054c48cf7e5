"""moto in server mode, taught what the deploy rehearsal needs and stock moto lacks.

    python scripts/rehearsal/emulator.py PORT RECORD_FILE

Stock moto (the pin in scripts/bootstrap) cannot deploy infra/template.yaml: it does not run
the SAM transform, has no CloudFormation model for 15 of the template's resource types,
drops properties the code relies on (a KMS key's spec and usage, a table's TTL, a function's
architecture and tracing), leaves a stack's outputs empty after a change set (the path
`sam deploy` takes), and runs functions only in Docker. This launcher registers what is
missing before it starts moto's server:

* the SAM transform (aws-sam-translator, the library SAM CLI and CloudFormation use) on every
  template a stack or change set receives;
* a CREATE change set executed as a stack creation, so conditions, parameters and outputs
  resolve as they do for CreateStack;
* Secrets Manager secrets as real moto secrets, their GenerateSecretString honoured, so the
  functions read what the stack generated;
* KMS keys with their KeySpec and KeyUsage (the bridge's key signs), tables with their TTL,
  functions with their architecture, tracing and logging configuration;
* stand-ins for the rest (HTTP API and its parts, RDS Proxy, alarms, the Cognito app
  client, ...): each records its resolved properties in RECORD_FILE (JSON lines) for the
  rehearsal's checks, and answers Ref and GetAtt as AWS documents them;
* Lambda Invoke runs the function's own bootstrap from its deployed zip, with its deployed
  environment, behind a loopback Lambda Runtime API (runtime_api.py) instead of Docker.

A resource type the template gains without a model here fails the rehearsal by name.
"""

import json
import secrets
import string
import sys
from pathlib import Path
from typing import Any

from moto.awslambda import models as lambda_models
from moto.cloudformation import models as cfn_models
from moto.cloudformation import parsing as cfn_parsing
from moto.core.common_models import CloudFormationModel
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.table import Table
from moto.kms import models as kms_models
from moto.secretsmanager.models import secretsmanager_backends
from samtranslator.translator.transform import transform

sys.path.insert(0, str(Path(__file__).parent))
import runtime_api  # noqa: E402

RECORD = Path(sys.argv[2]) if len(sys.argv) > 2 else None


def record(entry: dict[str, Any]) -> None:
    if RECORD:
        with RECORD.open("a") as f:
            f.write(json.dumps(entry, default=str) + "\n")


# ----------------------------------------------------------------- the SAM transform
class _NoManagedPolicies:
    """The template names no managed policy, so the transform never needs IAM's list."""

    def load(self) -> dict[str, str]:
        return {}


def sam_transform(template: dict[str, Any]) -> dict[str, Any]:
    if template.get("Transform") == "AWS::Serverless-2016-10-31":
        return transform(template, {}, _NoManagedPolicies())
    return template


_stack_parse = cfn_models.Stack._parse_template


def _stack_parse_template(self: cfn_models.Stack) -> None:
    _stack_parse(self)
    self.template_dict = sam_transform(self.template_dict)


cfn_models.Stack._parse_template = _stack_parse_template
_change_set_parse = cfn_models.ChangeSet._parse_template


def _change_set_parse_template(self: cfn_models.ChangeSet) -> None:
    _change_set_parse(self)
    self.template_dict = sam_transform(self.template_dict)


cfn_models.ChangeSet._parse_template = _change_set_parse_template

_execute = cfn_models.CloudFormationBackend.execute_change_set


def _execute_change_set(self: Any, change_set_name: str, stack_name: str | None = None) -> None:
    change_set = self.change_sets.get(change_set_name) or next(
        (c for c in self.change_sets.values() if c.change_set_name == change_set_name), None
    )
    if change_set is None or change_set.change_set_type != "CREATE":
        return _execute(self, change_set_name, stack_name)
    # A new stack from the change set's template and parameters, created the way CreateStack
    # creates one (moto applies a CREATE change set as an update of an empty stack, which
    # leaves conditions unevaluated and the outputs empty).
    old = self.stacks[change_set.stack_id]
    stack = cfn_models.Stack(
        stack_id=old.stack_id,
        name=old.name,
        template=change_set.template,
        parameters=change_set.parameters,
        account_id=old.account_id,
        region_name=old.region_name,
        notification_arns=change_set.notification_arns,
        tags=change_set.tags,
        role_arn=change_set.role_arn,
        cross_stack_resources=self.exports,
    )
    stack.events = old.events
    self.stacks[stack.stack_id] = stack
    stack._add_stack_event("CREATE_IN_PROGRESS", resource_status_reason="User Initiated")
    stack.create_resources()
    for export in stack.exports:
        self.exports[export.name] = export
    change_set.execution_status = "EXECUTE_COMPLETE"
    record({"stack": stack.name, "parameters": stack.stack_parameters})


cfn_models.CloudFormationBackend.execute_change_set = _execute_change_set

# A failure to create a resource must fail the deploy, not log a warning and go on.
_unsupported = cfn_parsing.resource_class_from_type


def _resource_class_from_type(resource_type: str) -> Any:
    found = _unsupported(resource_type)
    if found is None and resource_type not in cfn_parsing.NULL_MODELS:
        raise NotImplementedError(f"the rehearsal has no model of {resource_type}")
    return found


cfn_parsing.resource_class_from_type = _resource_class_from_type


# ----------------------------------------------------------------- Secrets Manager
def generated(spec: dict[str, Any]) -> str:
    """A secret string as GenerateSecretString describes it."""
    length = int(spec.get("PasswordLength", 32))
    alphabet = string.ascii_letters + string.digits
    if not spec.get("ExcludePunctuation"):
        alphabet += string.punctuation
    alphabet = "".join(c for c in alphabet if c not in spec.get("ExcludeCharacters", ""))
    if spec.get("ExcludeUppercase"):
        alphabet = "".join(c for c in alphabet if not c.isupper())
    if spec.get("ExcludeLowercase"):
        alphabet = "".join(c for c in alphabet if not c.islower())
    if spec.get("ExcludeNumbers"):
        alphabet = "".join(c for c in alphabet if not c.isdigit())
    if spec.get("IncludeSpace") and " " not in alphabet:
        alphabet += " "
    value = "".join(secrets.choice(alphabet) for _ in range(length))
    if "GenerateStringKey" in spec:
        document = json.loads(spec.get("SecretStringTemplate", "{}"))
        document[spec["GenerateStringKey"]] = value
        return json.dumps(document)
    return value


def put_secret(account_id: str, region_name: str, name: str, value: str, properties: dict[str, Any]) -> str:
    """A real secret in moto's Secrets Manager; its ARN."""
    backend = secretsmanager_backends[account_id][region_name]
    backend.create_secret(
        name=name, secret_string=value, secret_binary=None, description=properties.get("Description"),
        tags=properties.get("Tags"), kms_key_id=properties.get("KmsKeyId"), client_request_token=None,
        replica_regions=[], force_overwrite=False,
    )
    return backend.secrets[name].arn


class Secret(CloudFormationModel):
    # moto files each model under the service its module names (moto.<service>.models).
    __module__ = "moto.secretsmanager.rehearsal"

    def __init__(self, arn: str, name: str):
        self.arn = arn
        self.name = name

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::SecretsManager::Secret"

    @staticmethod
    def cloudformation_name_type() -> str:
        return "Name"

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return attr == "Id"

    def get_cfn_attribute(self, attribute_name: str) -> str:
        return self.arn

    @property
    def physical_resource_id(self) -> str:
        return self.arn

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[override]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
    ) -> "Secret":
        p = cloudformation_json["Properties"]
        if "SecretString" in p:
            value = p["SecretString"]
        elif "GenerateSecretString" in p:
            value = generated(p["GenerateSecretString"])
        else:
            raise ValueError(f"{kwargs.get('LogicalId')}: a secret needs SecretString or GenerateSecretString")
        arn = put_secret(account_id, region_name, resource_name, value, p)
        record({"stack": kwargs.get("StackId"), "logical": kwargs.get("LogicalId"), "type": cls.cloudformation_type(), "id": arn, "properties": p})
        return cls(arn, resource_name)


class DBCluster(CloudFormationModel):
    """An Aurora cluster: its endpoint a name, its admin secret (ManageMasterUserPassword) a
    real secret in RDS JSON, as RDS keeps it."""

    __module__ = "moto.rds.rehearsal"

    def __init__(self, identifier: str, endpoint: str, secret_arn: str):
        self.identifier = identifier
        self.endpoint = endpoint
        self.secret_arn = secret_arn

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::RDS::DBCluster"

    @staticmethod
    def cloudformation_name_type() -> str:
        return "DBClusterIdentifier"

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return attr in ("Endpoint.Address", "Endpoint.Port", "MasterUserSecret.SecretArn", "DBClusterArn")

    def get_cfn_attribute(self, attribute_name: str) -> str:
        return {
            "Endpoint.Address": self.endpoint,
            "Endpoint.Port": "5432",
            "MasterUserSecret.SecretArn": self.secret_arn,
            "DBClusterArn": f"arn:aws:rds:eu-west-1:123456789012:cluster:{self.identifier}",
        }[attribute_name]

    @property
    def physical_resource_id(self) -> str:
        return self.identifier

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[override]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
    ) -> "DBCluster":
        p = cloudformation_json["Properties"]
        identifier = resource_name.lower()
        endpoint = f"{identifier}.cluster-{secrets.token_hex(6)}.{region_name}.rds.amazonaws.com"
        arn = ""
        if p.get("ManageMasterUserPassword"):
            value = {"username": p["MasterUsername"], "password": generated({"ExcludePunctuation": True})}
            arn = put_secret(account_id, region_name, f"rds!cluster-{secrets.token_hex(8)}", json.dumps(value), {})
        record({"stack": kwargs.get("StackId"), "logical": kwargs.get("LogicalId"), "type": cls.cloudformation_type(), "id": identifier, "properties": p})
        return cls(identifier, endpoint, arn)


# ----------------------------------------------------------------- what moto drops
_kms_create = kms_models.Key.create_from_cloudformation_json.__func__


@classmethod  # type: ignore[misc]
def _key_from_cfn(cls: Any, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any) -> Any:
    p = cloudformation_json["Properties"]
    backend = kms_models.kms_backends[account_id][region_name]
    policy = p["KeyPolicy"]
    key = backend.create_key(
        policy=policy if isinstance(policy, str) else json.dumps(policy),
        key_usage=p.get("KeyUsage", "ENCRYPT_DECRYPT"),
        key_spec=p.get("KeySpec", "SYMMETRIC_DEFAULT"),
        description=p.get("Description"),
        tags=p.get("Tags", []),
    )
    key.key_rotation_status = p.get("EnableKeyRotation", False)
    key.enabled = p.get("Enabled", True)
    return key


kms_models.Key.create_from_cloudformation_json = _key_from_cfn
_table_create = Table.create_from_cloudformation_json.__func__


@classmethod  # type: ignore[misc]
def _table_from_cfn(cls: Any, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any) -> Any:
    table = _table_create(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)
    ttl = cloudformation_json["Properties"].get("TimeToLiveSpecification")
    if ttl:
        dynamodb_backends[account_id][region_name].update_time_to_live(
            table.name, {"AttributeName": ttl["AttributeName"], "Enabled": ttl.get("Enabled", False)}
        )
    return table


Table.create_from_cloudformation_json = _table_from_cfn
_function_create = lambda_models.LambdaFunction.create_from_cloudformation_json.__func__


@classmethod  # type: ignore[misc]
def _function_from_cfn(cls: Any, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any) -> Any:
    p = cloudformation_json["Properties"]
    fn = _function_create(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)
    fn.architectures = p.get("Architectures", ["x86_64"])
    fn.tracing_config = p.get("TracingConfig", {"Mode": "PassThrough"})
    fn.logging_config = p.get("LoggingConfig")
    fn.layers = [{"Arn": arn} for arn in p.get("Layers", [])]
    record({"stack": kwargs.get("StackId"), "logical": kwargs.get("LogicalId"), "type": "AWS::Lambda::Function", "id": fn.function_name, "properties": {k: v for k, v in p.items() if k != "Code"}})
    return fn


lambda_models.LambdaFunction.create_from_cloudformation_json = _function_from_cfn
_configuration = lambda_models.LambdaFunction.get_configuration


def _get_configuration(self: Any, on_create: bool = False) -> dict[str, Any]:
    config = _configuration(self, on_create)
    if getattr(self, "logging_config", None):
        config["LoggingConfig"] = self.logging_config
    return config


lambda_models.LambdaFunction.get_configuration = _get_configuration


def _invoke_lambda(self: Any, event: Any = None) -> tuple[str, bool, str]:
    return runtime_api.invoke(self, event if event is not None else {})


lambda_models.LambdaFunction._invoke_lambda = _invoke_lambda


# ----------------------------------------------------------------- stand-ins
class _Values(dict):
    """A stand-in's values; a property the template left out formats as its generated id
    (CloudFormation names a resource whose name is not given)."""

    def __missing__(self, key: str) -> str:
        return f"{self['logical']}-{self['id']}"


def stand_in(resource_type: str, ref: str, attributes: dict[str, str] | None = None) -> type:
    """A model that records what CloudFormation resolved and answers Ref and GetAtt.

    ref and attributes are formats over {id} (a generated identifier), {region}, {account}
    and the resolved properties ({Name}, ...).
    """
    attributes = attributes or {}

    class StandIn(CloudFormationModel):
        __module__ = "moto.cloudformation.rehearsal"

        def __init__(self, values: dict[str, Any]):
            self.values = values

        @staticmethod
        def cloudformation_type() -> str:
            return resource_type

        @staticmethod
        def cloudformation_name_type() -> str:
            return ""

        @classmethod
        def has_cfn_attr(cls, attr: str) -> bool:
            return attr in attributes

        def get_cfn_attribute(self, attribute_name: str) -> str:
            return attributes[attribute_name].format_map(self.values)

        @property
        def physical_resource_id(self) -> str:
            return ref.format_map(self.values)

        @classmethod
        def create_from_cloudformation_json(  # type: ignore[override]
            cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
        ) -> "StandIn":
            p = cloudformation_json["Properties"]
            values = _Values({k: v for k, v in p.items() if isinstance(v, str)})
            values.update(
                id=secrets.token_hex(4), logical=kwargs.get("LogicalId", "resource"),
                region=region_name, account=account_id, secret=secrets.token_urlsafe(40),
            )
            made = cls(values)
            record({"stack": kwargs.get("StackId"), "logical": kwargs.get("LogicalId"), "type": resource_type, "id": made.physical_resource_id, "properties": p})
            return made

        @classmethod
        def update_from_cloudformation_json(cls, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            raise NotImplementedError("the rehearsal creates fresh stacks only")

        @classmethod
        def delete_from_cloudformation_json(cls, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
            return None

    StandIn.__name__ = StandIn.__qualname__ = resource_type.replace("::", "")
    return StandIn


STAND_INS = [
    stand_in("AWS::SecretsManager::RotationSchedule", "{SecretId}"),
    stand_in("AWS::ApiGatewayV2::Api", "{id}", {"ApiEndpoint": "https://{id}.execute-api.{region}.amazonaws.com"}),
    stand_in("AWS::ApiGatewayV2::Stage", "{StageName}"),
    stand_in("AWS::ApiGatewayV2::Integration", "{id}"),
    stand_in("AWS::ApiGatewayV2::Route", "{id}"),
    stand_in("AWS::ApiGatewayV2::Authorizer", "{id}"),
    stand_in(
        "AWS::ApiGatewayV2::DomainName",
        "{DomainName}",
        {"RegionalDomainName": "d-{id}.execute-api.{region}.amazonaws.com", "RegionalHostedZoneId": "Z2OJLYMUO9EFXC"},
    ),
    stand_in("AWS::ApiGatewayV2::ApiMapping", "{id}"),
    stand_in(
        "AWS::RDS::DBProxy",
        "{DBProxyName}",
        {
            "Endpoint": "{DBProxyName}.proxy-{id}.{region}.rds.amazonaws.com",
            "DBProxyArn": "arn:aws:rds:{region}:{account}:db-proxy:prx-{id}",
        },
    ),
    stand_in("AWS::RDS::DBProxyTargetGroup", "arn:aws:rds:{region}:{account}:target-group:prx-tg-{id}"),
    stand_in("AWS::EC2::SecurityGroupEgress", "sgr-{id}"),
    stand_in("AWS::CloudWatch::Alarm", "{AlarmName}", {"Arn": "arn:aws:cloudwatch:{region}:{account}:alarm:{AlarmName}"}),
    stand_in("AWS::RDS::DBClusterParameterGroup", "{logical}-{id}"),
    # moto's own knows no Aurora engine (a cluster's instances are Aurora's).
    stand_in("AWS::RDS::DBInstance", "{logical}-{id}", {"Endpoint.Address": "{logical}-{id}.{region}.rds.amazonaws.com"}),
    stand_in("AWS::Cognito::UserPool", "{region}_{id}", {"ProviderURL": "cognito-idp.{region}.amazonaws.com/{region}_{id}", "Arn": "arn:aws:cognito-idp:{region}:{account}:userpool/{region}_{id}"}),
    stand_in("AWS::Cognito::UserPoolDomain", "{Domain}"),
    # SAM CLI's own managed stack (its artifact bucket) has one.
    stand_in("AWS::S3::BucketPolicy", "{Bucket}"),
    stand_in("AWS::Cognito::UserPoolClient", "{id}", {"ClientSecret": "{secret}", "ClientId": "{id}"}),
    # The migrate function's daily run (SAM's ScheduleV2); moto's scheduler has no
    # CloudFormation model.
    stand_in("AWS::Scheduler::Schedule", "{Name}", {"Arn": "arn:aws:scheduler:{region}:{account}:schedule/default/{Name}"}),
]
cfn_parsing.get_model_list.cache_clear()
cfn_parsing.get_model_map.cache_clear()
cfn_parsing.get_name_type_map.cache_clear()


if __name__ == "__main__":
    from moto.server import main

    runtime_api.ENDPOINT = f"http://localhost:{sys.argv[1]}"
    main(["-H", "127.0.0.1", "-p", sys.argv[1]])
