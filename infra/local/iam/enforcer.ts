import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { LocalResponse } from '../../../shared/deps/local-endpoints.ts';
import type { AccessRequest } from './dynamodb.ts';
import { type Decision, denialMessage, evaluate } from './evaluate.ts';
import { currentFunction } from './principal.ts';
import { bindRolePolicies, type RolePolicies, type SandboxResources } from './role-policies.ts';

/**
 * The sandbox's IAM (docs/sandbox-iam.md): every AWS call a function makes through an in-process
 * endpoint is authorised against that function's role policies, as synthesized
 * (infra/local/iam/role-policies.json), before the sandbox's engine sees it. SANDBOX_IAM:
 * `enforce` (the default) refuses as AWS does (AccessDeniedException); `warn` lets the call
 * through and says what AWS would refuse; `off` evaluates nothing. Each refusal is said once per
 * function, action and resource, with the grant that would have to change.
 */
export type IamMode = 'enforce' | 'warn' | 'off';

export const IAM_MODES: readonly IamMode[] = ['enforce', 'warn', 'off'];

export function iamModeOf(value: string | undefined): IamMode {
  if (value === undefined || value === '') return 'enforce';
  if ((IAM_MODES as readonly string[]).includes(value)) return value as IamMode;
  throw new Error(`Invalid configuration: SANDBOX_IAM: must be one of ${IAM_MODES.join(', ')}, got ${JSON.stringify(value)}`);
}

const POLICIES_FILE = join(resolve(import.meta.dirname), 'role-policies.json');

/** The committed policies (npm run iam:policies), bound to this sandbox's names. */
export function loadRolePolicies(resources: SandboxResources, file = POLICIES_FILE): RolePolicies {
  return bindRolePolicies(JSON.parse(readFileSync(file, 'utf8')) as RolePolicies, resources);
}

/** The resource's own policy, when it has one (a KMS key policy). */
export interface ResourcePolicy {
  readonly name: string;
  readonly document: RolePolicies['keys'][string]['policy'];
  readonly kind: 'kms-key' | 'other';
}

export interface Refusal {
  readonly functionId: string;
  readonly request: AccessRequest;
  readonly message: string;
}

export class SandboxIam {
  readonly mode: IamMode;
  readonly #policies: RolePolicies;
  readonly #said = new Set<string>();
  readonly #say: (line: string) => void;
  /** Per function, the statements that allowed a call (`<policy>#<index>`): the least-privilege report's input. */
  readonly used = new Map<string, Set<string>>();
  readonly refusals: Refusal[] = [];

  constructor(policies: RolePolicies, mode: IamMode, say: (line: string) => void = (line) => process.stderr.write(`${line}\n`)) {
    this.#policies = policies;
    this.mode = mode;
    this.#say = say;
  }

  /**
   * The first request of the call AWS would refuse, as the running invocation's function (none:
   * the sandbox's own code or a test, not a Lambda: nothing is evaluated); undefined when allowed.
   */
  authorize(requests: readonly AccessRequest[], resourcePolicy?: ResourcePolicy): Refusal | undefined {
    if (this.mode === 'off') return undefined;
    const functionId = currentFunction();
    if (functionId === undefined) return undefined;
    const role = this.#policies.functions[functionId];
    const principalArn = role?.role_arn ?? `arn:aws:iam::000000000000:role/${functionId}`;
    for (const request of requests) {
      const asked = { principalArn, action: request.action, resource: request.resource, context: { ...request.context, 'aws:PrincipalArn': principalArn } };
      const decision: Decision = role
        ? evaluate(asked, { identity: role.policies, ...(resourcePolicy ? { resource: resourcePolicy } : {}) })
        : { allowed: false, reason: 'no-identity-allow' };
      if (decision.allowed) {
        const used = this.used.get(functionId) ?? new Set<string>();
        this.used.set(functionId, used);
        used.add(`${decision.statement.policy}#${decision.statement.index}`);
        continue;
      }
      const refusal = { functionId, request, message: denialMessage(asked, decision) };
      this.#report(refusal, role?.source);
      if (this.mode === 'enforce') return refusal;
    }
    return undefined;
  }

  #report(refusal: Refusal, source: string | undefined) {
    this.refusals.push(refusal);
    const keys = refusal.request.context['dynamodb:LeadingKeys'];
    // The partitions' kinds only (`APPSECRET#…`): a key's value is not for a log line.
    const kinds = Array.isArray(keys) ? ` partitions ${[...new Set(keys.map((key) => `${String(key).split('#')[0]}#…`))].join(', ')}` : '';
    const once = `${refusal.functionId} ${refusal.request.action} ${refusal.request.resource}${kinds}`;
    if (this.#said.has(once)) return;
    this.#said.add(once);
    const where = source ? `its role ${source} (functions/routes.ts needs, infra/constructs/service-function.ts)` : 'no role of the stacks';
    this.#say(`sandbox IAM (${this.mode}): ${refusal.functionId}: ${refusal.message}${kinds ? ` (${kinds.trim()})` : ''}; the grant to change: ${where}`);
  }
}

/** DynamoDB's own answer to a refused call (HTTP 400, the JSON protocol's error shape). */
export function dynamodbAccessDenied(message: string): LocalResponse {
  return {
    status: 400,
    headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-errortype': 'AccessDeniedException' },
    body: Buffer.from(JSON.stringify({ __type: 'com.amazon.coral.service#AccessDeniedException', Message: message })),
  };
}

/** SQS's answer to a refused call (the JSON protocol, query-compatible: the code in x-amzn-query-error). */
export function sqsAccessDenied(message: string): LocalResponse {
  return {
    status: 403,
    headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-query-error': 'AccessDenied;Sender' },
    body: Buffer.from(JSON.stringify({ __type: 'com.amazon.coral.service#AccessDeniedException', message })),
  };
}

/** Step Functions' answer to a refused call. */
export function stepFunctionsAccessDenied(message: string): LocalResponse {
  return {
    status: 400,
    headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-errortype': 'AccessDeniedException' },
    body: Buffer.from(JSON.stringify({ __type: 'com.amazon.coral.service#AccessDeniedException', message })),
  };
}
