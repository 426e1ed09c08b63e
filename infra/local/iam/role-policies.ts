import type { PolicyDocument, PolicyStatement } from './evaluate.ts';

/**
 * The IAM the sandbox enforces, read from the CloudFormation templates `cdk synth` writes
 * (infra/scripts/write-iam-policies.ts runs infra/app.ts and calls rolePoliciesOf): each function
 * role's policies, with the role's ARN as CloudFormation would name it, and each KMS key's policy.
 * CloudFormation references are resolved to placeholders the sandbox fills at start
 * (bindRolePolicies): `{account}`, `{region}`, `{table}` (the table's name), `{key:<logical id>}`,
 * `{queue:<logical id>}`, `{secret:<logical id>}`, `{stateMachine:<logical id>}`; anything else as
 * `{<stack>.<logical id>.<attribute>}`, which matches no sandbox resource. The result is committed
 * (infra/local/iam/role-policies.json) and a test fails when it drifts from the stacks.
 */
export interface FunctionRole {
  /** The role's ARN: `arn:aws:iam::{account}:role<path><stack>-<logical id>` (CloudFormation appends a random suffix in AWS). */
  readonly role_arn: string;
  /** `<stack>/<role logical id>`: where the grants come from. */
  readonly source: string;
  readonly policies: readonly { readonly name: string; readonly document: PolicyDocument }[];
}

export interface RolePolicies {
  /** By function id (the role path's last segment: a route id, a transfer step's or an events function's id). */
  readonly functions: Readonly<Record<string, FunctionRole>>;
  /** KMS key policies by the key's logical id. */
  readonly keys: Readonly<Record<string, { readonly stack: string; readonly policy: PolicyDocument }>>;
}

export type Template = {
  Resources?: Record<string, { Type: string; Properties?: Record<string, unknown> }>;
  Outputs?: Record<string, { Value: unknown; Export?: { Name: unknown } }>;
};

/** The role path of a function: `/perp-wallet/<stateful stack>/<function id>/` (infra/constructs/key-use.ts functionRolePath). */
const FUNCTION_ROLE_PATH = /^\/perp-wallet\/[^/]+\/([A-Za-z0-9]+)\/$/;

export function rolePoliciesOf(templates: Readonly<Record<string, Template>>): RolePolicies {
  const exports = new Map<string, { stack: string; value: unknown }>();
  for (const [stack, template] of Object.entries(templates))
    for (const output of Object.values(template.Outputs ?? {})) {
      const name = output.Export?.Name;
      if (typeof name === 'string') exports.set(name, { stack, value: output.Value });
    }
  const functions: Record<string, FunctionRole> = {};
  const keys: Record<string, { stack: string; policy: PolicyDocument }> = {};
  for (const stack of Object.keys(templates).sort()) {
    const resources = templates[stack]!.Resources ?? {};
    const resolve = (value: unknown): unknown => resolveIntrinsics(value, stack, templates, exports);
    for (const [logicalId, resource] of Object.entries(resources)) {
      if (resource.Type === 'AWS::KMS::Key') keys[logicalId] = { stack, policy: resolve(resource.Properties?.KeyPolicy) as PolicyDocument };
      if (resource.Type !== 'AWS::IAM::Role') continue;
      const path = resource.Properties?.Path;
      const id = typeof path === 'string' ? FUNCTION_ROLE_PATH.exec(path)?.[1] : undefined;
      if (!id) continue;
      const attached = Object.entries(resources)
        .filter(([, policy]) => policy.Type === 'AWS::IAM::Policy' && refersTo(policy.Properties?.Roles, logicalId))
        .map(([name, policy]) => ({ name, document: resolve(policy.Properties?.PolicyDocument) as PolicyDocument }));
      const inline = ((resource.Properties?.Policies ?? []) as { PolicyName: string; PolicyDocument: unknown }[]).map((policy) => ({
        name: policy.PolicyName,
        document: resolve(policy.PolicyDocument) as PolicyDocument,
      }));
      if (functions[id]) throw new Error(`role-policies: two roles for function ${id} (${functions[id].source}, ${stack}/${logicalId})`);
      functions[id] = {
        role_arn: `arn:aws:iam::{account}:role${path}${stack}-${logicalId}`,
        source: `${stack}/${logicalId}`,
        policies: [...inline, ...attached],
      };
    }
  }
  return { functions, keys };
}

function refersTo(roles: unknown, logicalId: string): boolean {
  return Array.isArray(roles) && roles.some((role) => typeof role === 'object' && role !== null && (role as { Ref?: unknown }).Ref === logicalId);
}

/** A resource's ARN or Ref as a placeholder the sandbox binds, by its type. */
function placeholder(stack: string, logicalId: string, type: string | undefined, attribute: 'Ref' | string): string {
  const arn = (service: string, rest: string) => `arn:aws:${service}:{region}:{account}:${rest}`;
  switch (`${type} ${attribute}`) {
    case 'AWS::DynamoDB::Table Arn':
      return arn('dynamodb', 'table/{table}');
    case 'AWS::DynamoDB::Table StreamArn':
      return arn('dynamodb', 'table/{table}/stream/{stream}');
    case 'AWS::DynamoDB::Table Ref':
      return '{table}';
    case 'AWS::KMS::Key Arn':
      return arn('kms', `key/{key:${logicalId}}`);
    case 'AWS::KMS::Key Ref':
      return `{key:${logicalId}}`;
    case 'AWS::SQS::Queue Arn':
      return arn('sqs', `{queue:${logicalId}}`);
    case 'AWS::SecretsManager::Secret Ref':
      return arn('secretsmanager', `secret:{secret:${logicalId}}`);
    case 'AWS::StepFunctions::StateMachine Ref':
      return arn('states', `stateMachine:{stateMachine:${logicalId}}`);
    case 'AWS::StepFunctions::StateMachine Name':
      return `{stateMachine:${logicalId}}`;
    default:
      return `{${stack}.${logicalId}.${attribute}}`;
  }
}

const PSEUDO: Readonly<Record<string, string>> = {
  'AWS::AccountId': '{account}',
  'AWS::Region': '{region}',
  'AWS::Partition': 'aws',
  'AWS::URLSuffix': 'amazonaws.com',
};

/** CloudFormation's intrinsics as far as IAM documents use them: Ref, Fn::GetAtt, Fn::ImportValue, Fn::Join, Fn::Sub, Fn::Select, Fn::Split. */
function resolveIntrinsics(
  value: unknown,
  stack: string,
  templates: Readonly<Record<string, Template>>,
  exports: Map<string, { stack: string; value: unknown }>,
): unknown {
  const again = (inner: unknown, inStack = stack) => resolveIntrinsics(inner, inStack, templates, exports);
  if (Array.isArray(value)) return value.map((item) => again(item));
  if (typeof value !== 'object' || value === null) return value;
  const entries = Object.entries(value as Record<string, unknown>);
  const [first] = entries;
  if (entries.length === 1 && first && (first[0] === 'Ref' || first[0].startsWith('Fn::'))) {
    const [name, argument] = first;
    const typeOf = (logicalId: string, inStack = stack) => templates[inStack]?.Resources?.[logicalId]?.Type;
    switch (name) {
      case 'Ref': {
        const target = String(argument);
        if (target === 'AWS::StackName') return stack;
        return PSEUDO[target] ?? placeholder(stack, target, typeOf(target), 'Ref');
      }
      case 'Fn::GetAtt': {
        const [logicalId, attribute] = (Array.isArray(argument) ? argument : String(argument).split('.')) as [string, string];
        return placeholder(stack, logicalId, typeOf(logicalId), attribute);
      }
      case 'Fn::ImportValue': {
        const exported = exports.get(String(again(argument)));
        if (!exported) throw new Error(`role-policies: ${stack} imports ${JSON.stringify(argument)}, which no stack exports`);
        return again(exported.value, exported.stack);
      }
      case 'Fn::Join': {
        const [separator, parts] = argument as [string, unknown[]];
        return (again(parts) as unknown[]).map(String).join(separator);
      }
      case 'Fn::Select': {
        const [index, list] = argument as [number, unknown];
        return (again(list) as unknown[])[Number(index)];
      }
      case 'Fn::Split': {
        const [separator, text] = argument as [string, unknown];
        return String(again(text)).split(separator);
      }
      case 'Fn::Sub': {
        const [text, variables = {}] = (Array.isArray(argument) ? argument : [argument]) as [string, Record<string, unknown>];
        return text.replace(/\$\{([^}]+)\}/g, (_, ref: string) => {
          if (ref in variables) return String(again(variables[ref]));
          const [logicalId, attribute] = ref.split('.') as [string, string | undefined];
          if (attribute) return placeholder(stack, logicalId, typeOf(logicalId), attribute);
          return ref === 'AWS::StackName' ? stack : (PSEUDO[ref] ?? placeholder(stack, ref, typeOf(ref), 'Ref'));
        });
      }
      default:
        throw new Error(`role-policies: ${stack} uses ${name}, which this reading does not resolve`);
    }
  }
  return Object.fromEntries(entries.map(([key, inner]) => [key, again(inner)]));
}

/** What the placeholders stand for in this sandbox. */
export interface SandboxResources {
  readonly account: string;
  readonly region: string;
  readonly table: string;
  /** The sandbox's name of the queue or state machine the stacks name `logicalId` (none: the placeholder stays, matching nothing). */
  readonly named?: (kind: 'queue' | 'stateMachine', logicalId: string) => string | undefined;
}

/** The sandbox's id of the KMS key the stacks name `logicalId` (its local stand-in: infra/local/iam/kms.ts). */
export function localKeyId(logicalId: string): string {
  return `local-${logicalId}`;
}

/** The policies with the sandbox's own names in place of the placeholders it knows (the others stay, matching nothing). */
export function bindRolePolicies(policies: RolePolicies, resources: SandboxResources): RolePolicies {
  const bind = (value: unknown): unknown => {
    if (typeof value === 'string')
      return value
        .replaceAll('{account}', resources.account)
        .replaceAll('{region}', resources.region)
        .replaceAll('{table}', resources.table)
        .replaceAll('{stream}', '*')
        .replace(/\{key:([A-Za-z0-9]+)\}/g, (_, logicalId: string) => localKeyId(logicalId))
        .replace(
          /\{(queue|stateMachine):([A-Za-z0-9]+)\}/g,
          (whole, kind: 'queue' | 'stateMachine', logicalId: string) => resources.named?.(kind, logicalId) ?? whole,
        );
    if (Array.isArray(value)) return value.map(bind);
    if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, bind(inner)]));
    return value;
  };
  return bind(policies) as RolePolicies;
}

export type { PolicyStatement };
