import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import COVERAGE from './free-coverage.json' with { type: 'json' };

/**
 * The static LocalStack check: which CloudFormation resource types our templates hold and which
 * AWS API operations our code calls, compared with what LocalStack's free edition covers
 * (free-coverage.json: each list with its source and the date it was read). We cannot run
 * LocalStack here (no Docker engine); test/infra/localstack-coverage.test.ts runs this instead.
 */
export type Coverage = typeof COVERAGE;
export { COVERAGE };

const ROOT = resolve(import.meta.dirname, '../..');

/** Where each thing was found, e.g. type -> ['Services/AccountApi'] or 'kms Sign' -> ['shared/crypto/kms-op-jwt-signer.ts']. */
export type Found = Map<string, Set<string>>;

function add(found: Found, key: string, where: string) {
  let places = found.get(key);
  if (!places) {
    places = new Set();
    found.set(key, places);
  }
  places.add(where);
}

/** Custom::Anything is a custom resource, which LocalStack handles as AWS::CloudFormation::CustomResource. */
function normalType(type: string): string {
  return type.startsWith('Custom::') ? 'AWS::CloudFormation::CustomResource' : type;
}

/** Resource types of a synthesized template (`{ Resources: { id: { Type } } }`). */
export function templateResourceTypes(template: unknown, label: string, found: Found = new Map()): Found {
  const resources = (template as { Resources?: Record<string, { Type?: unknown }> }).Resources ?? {};
  for (const [id, resource] of Object.entries(resources)) {
    if (typeof resource.Type !== 'string') throw new Error(`${label}/${id} has no Type`);
    add(found, normalType(resource.Type), `${label}/${id}`);
  }
  return found;
}

/** Resource types of a CloudFormation YAML template (the CDK bootstrap template): the `Type:` lines of its Resources. */
export function yamlResourceTypes(yaml: string, label: string, found: Found = new Map()): Found {
  const start = yaml.search(/^Resources:/m);
  if (start < 0) throw new Error(`${label}: no Resources section`);
  const rest = yaml.slice(start + 'Resources:'.length);
  const end = rest.search(/^\S/m);
  const section = end < 0 ? rest : rest.slice(0, end);
  let id = '?';
  for (const line of section.split('\n')) {
    const resource = /^ {2}([A-Za-z0-9]+):\s*$/.exec(line);
    if (resource) id = resource[1]!;
    const type = /^ {4}Type:\s*'?((?:AWS|Custom)::[A-Za-z0-9:]+)'?\s*$/.exec(line);
    if (type) add(found, normalType(type[1]!), `${label}/${id}`);
  }
  return found;
}

/** Named value imports (and re-exports) of package specifiers: `import { A, type B, C as D } from 'pkg'` -> pkg: [A, C]. */
export function packageImports(source: string): { module: string; names: string[] }[] {
  const imports: { module: string; names: string[] }[] = [];
  for (const match of source.matchAll(/\b(?:import|export)\s+(type\s+)?\{([^}]*)\}\s*from\s*['"]([^'"]+)['"]/g)) {
    if (match[1]) continue; // `import type { … }`: no runtime call
    const names = match[2]!
      .split(',')
      .map((part) => part.trim())
      .filter((part) => part && !part.startsWith('type '))
      .map((part) => part.split(/\s+as\s+/)[0]!.trim());
    imports.push({ module: match[3]!, names });
  }
  return imports;
}

/** Relative specifiers of static imports, re-exports and side-effect imports. */
function relativeSpecifiers(source: string): string[] {
  const specifiers: string[] = [];
  for (const pattern of [/\b(?:import|export)\b[^;'"`]*?\bfrom\s*['"]([^'"]+)['"]/g, /^\s*import\s*['"]([^'"]+)['"]/gm]) {
    for (const match of source.matchAll(pattern)) specifiers.push(match[1]!);
  }
  return specifiers.filter((specifier) => specifier.startsWith('.'));
}

/** Every repository file reachable from `entries` through relative imports (repo-relative paths). */
export function reachableFiles(entries: readonly string[], root = ROOT): string[] {
  const seen = new Set<string>();
  const queue = [...entries];
  while (queue.length) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    const path = join(root, file);
    if (!existsSync(path)) throw new Error(`import walk: ${file} does not exist`);
    seen.add(file);
    if (!file.endsWith('.ts')) continue; // JSON and other data imports
    for (const specifier of relativeSpecifiers(readFileSync(path, 'utf8'))) {
      queue.push(
        relative(root, resolve(root, dirname(file), specifier))
          .split('\\')
          .join('/'),
      );
    }
  }
  return [...seen].sort();
}

/**
 * The AWS operations `source` can call, as `service Operation`: the XxxCommand classes it imports
 * from @aws-sdk/client-*, the @aws-sdk/lib-dynamodb commands (GetCommand -> dynamodb GetItem) and
 * the Powertools utilities that call the SDK for us (getSecret -> secretsmanager GetSecretValue).
 * What it cannot map (an unknown client package or lib-dynamodb command, a dynamic import of the
 * SDK) comes back in `unknown`, so a new kind of call fails the check instead of passing unseen.
 */
export function sdkOperations(
  source: string,
  label: string,
  found: Found = new Map(),
  unknown: string[] = [],
  coverage: Coverage = COVERAGE,
): { found: Found; unknown: string[] } {
  const clients: Record<string, string> = coverage.sdk.client_packages;
  const documentCommands: Record<string, string> = coverage.sdk.lib_dynamodb_commands;
  const powertools: Record<string, Record<string, string[]>> = coverage.sdk.powertools;
  if (/\bimport\s*\(\s*['"`]@aws-(?:sdk|lambda-powertools)\//.test(source)) unknown.push(`${label}: dynamic import of an AWS package (not analysed)`);
  for (const { module, names } of packageImports(source)) {
    if (module === '@aws-sdk/lib-dynamodb') {
      for (const name of names.filter((n) => n.endsWith('Command'))) {
        const operation = documentCommands[name];
        if (operation) add(found, `dynamodb ${operation}`, label);
        else unknown.push(`${label}: @aws-sdk/lib-dynamodb ${name} has no mapping in free-coverage.json (sdk.lib_dynamodb_commands)`);
      }
    } else if (module.startsWith('@aws-sdk/client-')) {
      const commands = names.filter((n) => /^[A-Z]\w*Command$/.test(n));
      const service = clients[module];
      if (!service && commands.length) unknown.push(`${label}: ${module} has no service in free-coverage.json (sdk.client_packages)`);
      for (const name of commands) if (service) add(found, `${service} ${name.slice(0, -'Command'.length)}`, label);
    } else if (module.startsWith('@aws-lambda-powertools/')) {
      const calls = powertools[module];
      for (const name of names) {
        const call = calls?.[name];
        if (call) add(found, `${call[0]} ${call[1]}`, label);
      }
    }
  }
  return { found, unknown };
}

/** Step Functions service names in `arn:aws:states:::aws-sdk:<service>:<action>` that differ from our service ids. */
const ASL_SDK_SERVICES: Record<string, string> = { sfn: 'stepfunctions', cloudwatchlogs: 'logs' };

/**
 * The AWS operations a state machine's Task states call, from the Resource ARNs in a synthesized
 * template (or an ASL file): `arn:<partition>:states:::<service>:<action>[.sync|.waitForTaskToken]`,
 * also when CloudFormation splits the ARN with Fn::Join around the partition or the definition is
 * a JSON string inside the template (DefinitionString: `\"Resource\":\"arn:…\"`). Optimized
 * integrations (lambda:invoke, dynamodb:putItem, states:startExecution) and AWS SDK integrations
 * (aws-sdk:kms:sign) are mapped; any other integration comes back in `unknown`.
 */
export function stateMachineOperations(text: string, label: string, found: Found = new Map(), unknown: string[] = []): { found: Found; unknown: string[] } {
  const pascal = (action: string) => action[0]!.toUpperCase() + action.slice(1);
  for (const match of text.matchAll(/:states:::([a-z0-9-]+):([A-Za-z0-9:]+?)(?:\.sync(?::2)?|\.waitForTaskToken)?(?=\\?["'\s,\]}]|$)/g)) {
    const [integration, rest] = [match[1]!, match[2]!];
    if (integration === 'aws-sdk') {
      const [service, action] = rest.split(':') as [string, string | undefined];
      if (action) add(found, `${ASL_SDK_SERVICES[service] ?? service} ${pascal(action)}`, label);
      else unknown.push(`${label}: state machine integration aws-sdk:${rest} not understood`);
    } else if (integration === 'lambda' && rest === 'invoke') add(found, 'lambda Invoke', label);
    else if (integration === 'dynamodb') add(found, `dynamodb ${pascal(rest)}`, label);
    else if (integration === 'states' && rest === 'startExecution') add(found, 'stepfunctions StartExecution', label);
    else unknown.push(`${label}: state machine integration ${integration}:${rest} has no mapping (coverage.ts, stateMachineOperations)`);
  }
  return { found, unknown };
}

export interface Findings {
  /** Resource type -> where it occurs. */
  readonly resourceTypes?: Found;
  /** `service Operation` -> where it is called. */
  readonly operations?: Found;
}

/** One line per resource type or operation outside the free coverage, naming where it occurs. */
export function outsideFreeCoverage(findings: Findings, coverage: Coverage = COVERAGE): string[] {
  const problems: string[] = [];
  const freeTypes = new Set<string>(coverage.resource_types.free);
  const plans: Record<string, string> = coverage.services.minimum_plan;
  const freeOps: Record<string, string[]> = coverage.operations.free;
  const places = (where: Set<string>) => [...where].slice(0, 3).join(', ') + (where.size > 3 ? ` and ${where.size - 3} more` : '');
  for (const [type, where] of [...(findings.resourceTypes ?? new Map())].sort()) {
    if (!freeTypes.has(type)) problems.push(`resource type ${type} is not in LocalStack's free coverage (${places(where)})`);
  }
  for (const [key, where] of [...(findings.operations ?? new Map())].sort()) {
    const [service, operation] = key.split(' ') as [string, string];
    const plan = plans[service];
    if (plan !== undefined && plan !== 'Hobby') problems.push(`operation ${key}: ${service} needs LocalStack's ${plan} plan (${places(where)})`);
    else if (!freeOps[service]) problems.push(`operation ${key}: no free-coverage data for ${service} (${places(where)})`);
    else if (!freeOps[service].includes(operation)) problems.push(`operation ${key} is not in LocalStack's free coverage of ${service} (${places(where)})`);
  }
  return problems;
}
