import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
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
  /** Per function, the actions each allowing statement allowed (`<policy>#<index> <action>`): the least-privilege report's input. */
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
  /** Whether a call made now is evaluated: IAM is on and an invocation runs (else its request need not even be read). */
  evaluates(): boolean {
    return this.mode !== 'off' && currentFunction() !== undefined;
  }

  /**
   * A JSON-protocol request's refusal as `answer` (the service's error response), or undefined:
   * the body is parsed only when the call is evaluated; one that is not JSON is the service's to refuse.
   */
  authorizeJson<T>(body: Buffer, requests: (parsed: T) => readonly AccessRequest[], answer: (message: string) => LocalResponse): LocalResponse | undefined {
    if (!this.evaluates()) return undefined;
    let parsed: T;
    try {
      parsed = JSON.parse(body.toString('utf8') || '{}') as T;
    } catch {
      return undefined;
    }
    const refusal = this.authorize(requests(parsed));
    return refusal ? answer(refusal.message) : undefined;
  }

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
        used.add(`${decision.statement.policy}#${decision.statement.index} ${request.action}`);
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

/** What one sandbox process saw (npm run iam:report merges them): the actions each function's statements allowed, and the refusals. */
export interface IamUsage {
  readonly mode: IamMode;
  readonly used: Readonly<Record<string, readonly string[]>>;
  readonly refusals: readonly { readonly functionId: string; readonly action: string; readonly resource: string; readonly message: string }[];
}

export function usageOf(iam: SandboxIam): IamUsage {
  return {
    mode: iam.mode,
    used: Object.fromEntries([...iam.used].map(([functionId, actions]) => [functionId, [...actions].sort()])),
    refusals: iam.refusals.map((refusal) => ({
      functionId: refusal.functionId,
      action: refusal.request.action,
      resource: refusal.request.resource,
      message: refusal.message,
    })),
  };
}

/**
 * Where the sandbox processes of this checkout leave their usage (SANDBOX_IAM_USAGE_DIR, else a
 * folder of the temporary directory named by the checkout's path): `<pid>.json` each, written
 * every few seconds and at stop, so a run killed midway still counts.
 */
export function iamUsageDir(env = process.env): string {
  return (
    env.SANDBOX_IAM_USAGE_DIR ||
    join(
      tmpdir(),
      'perp-wallet-iam-usage',
      createHash('sha256')
        .update(resolve(import.meta.dirname, '../../..'))
        .digest('hex')
        .slice(0, 12),
    )
  );
}

/** Writes this process's usage now, and every `everyMs` until the returned stop is called (which writes once more). */
export function recordIamUsage(iam: SandboxIam, everyMs = 5_000): () => Promise<void> {
  const dir = iamUsageDir();
  const file = join(dir, `${process.pid}.json`);
  const write = async () => {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await writeFile(`${file}.tmp`, JSON.stringify(usageOf(iam)), { mode: 0o600 });
    await rename(`${file}.tmp`, file);
  };
  let writing = Promise.resolve();
  const timer = setInterval(() => {
    writing = writing.then(write).catch(() => undefined);
  }, everyMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await writing;
    await write().catch(() => undefined);
  };
}
