/**
 * An independent evaluator of AWS IAM policy evaluation for requests within one account, so that
 * the local sandbox refuses the AWS calls AWS would refuse (IAM User Guide, "Policy evaluation
 * logic"). It knows identity-based policies and one resource-based policy (a KMS key policy or
 * another service's); anything else in a policy (an operator, a set prefix, an element, a policy
 * variable) throws UnsupportedPolicyError rather than deciding silently.
 */

export interface PolicyStatement {
  Sid?: string;
  Effect: 'Allow' | 'Deny';
  Action?: string | string[];
  NotAction?: string | string[];
  Resource?: string | string[];
  NotResource?: string | string[];
  Principal?: '*' | { AWS?: string | string[]; Service?: string | string[] };
  Condition?: Record<string, Record<string, string | boolean | number | (string | boolean | number)[]>>;
}

export interface PolicyDocument {
  Version?: string;
  Statement: PolicyStatement | PolicyStatement[];
}

/** Context keys: single-valued (string) or multivalued (string[]); an absent key is simply not in the map. Keys are compared case-insensitively as IAM does for context key names. */
export type RequestContext = Readonly<Record<string, string | readonly string[]>>;

export interface AuthorizationRequest {
  principalArn: string;
  action: string;
  resource: string;
  context: RequestContext;
}

export type Decision =
  | { allowed: true; statement: { policy: string; sid?: string; index: number } }
  | { allowed: false; reason: 'explicit-deny' | 'no-identity-allow' | 'no-resource-allow'; statement?: { policy: string; sid?: string; index: number } };

/** A policy the evaluator cannot evaluate faithfully: deciding anyway could allow what AWS refuses, or the reverse. */
export class UnsupportedPolicyError extends Error {
  override readonly name = 'UnsupportedPolicyError';
}

type StatementRef = { policy: string; sid?: string; index: number };
type PolicyKind = 'identity' | 'resource';
type Denial = Extract<Decision, { allowed: false }>;

interface Policies {
  identity: readonly { name: string; document: PolicyDocument }[];
  resource?: { name: string; document: PolicyDocument; kind: 'kms-key' | 'other' };
}

/**
 * Decides `request` against the principal's identity-based policies and the resource's policy.
 * Order as in "Policy evaluation logic": an applicable Deny anywhere wins; then, within one
 * account, an Allow in either an identity-based or the resource-based policy suffices; except
 * that a KMS key policy must itself allow ("Key policies in AWS KMS": no IAM policy alone gives
 * access to a KMS key), directly or by delegating to IAM through the account principal.
 */
export function evaluate(request: AuthorizationRequest, policies: Policies): Decision {
  const context = contextEntries(request.context);
  const principal = principalOf(request.principalArn);
  const identity = policies.identity.map(({ name, document }) => ({ name, statements: statementsOf(document, 'identity') }));
  const resource = policies.resource && { ...policies.resource, statements: statementsOf(policies.resource.document, 'resource') };
  const applies = (statement: PolicyStatement) => statementApplies(statement, request, context);

  for (const { name, statements } of identity) {
    for (const [index, statement] of statements.entries()) {
      if (statement.Effect === 'Deny' && applies(statement)) return deny(ref(name, statement, index), 'identity-based');
    }
  }
  // A Deny naming the account applies to every principal of the account ("AWS JSON policy elements: Principal").
  const resourceMatches = resource ? resource.statements.map((statement, index) => ({ statement, index, match: principalMatch(statement, principal) })) : [];
  for (const { statement, index, match } of resourceMatches) {
    if (resource && match && statement.Effect === 'Deny' && applies(statement)) return deny(ref(resource.name, statement, index), 'resource-based');
  }

  let identityAllow: StatementRef | undefined;
  for (const { name, statements } of identity) {
    const index = statements.findIndex((statement) => statement.Effect === 'Allow' && applies(statement));
    const statement = statements[index];
    if (statement) {
      identityAllow = ref(name, statement, index);
      break;
    }
  }
  // A resource-policy Allow naming the principal (or `*`) grants by itself; one naming the account
  // root only delegates to the account's IAM policies ("AWS JSON policy elements: Principal").
  let direct: StatementRef | undefined;
  let delegated: StatementRef | undefined;
  for (const { statement, index, match } of resourceMatches) {
    if (!resource || !match || statement.Effect !== 'Allow') continue;
    if (match === 'direct' ? direct : delegated) continue;
    if (!applies(statement)) continue;
    if (match === 'direct') direct = ref(resource.name, statement, index);
    else delegated = ref(resource.name, statement, index);
    if (direct) break;
  }

  if (resource?.kind === 'kms-key') {
    if (direct) return { allowed: true, statement: direct };
    // Delegation hands the decision to IAM, so the IAM statement is the one that allowed.
    if (delegated && identityAllow) return { allowed: true, statement: identityAllow };
    // The key policy let IAM decide and no IAM policy allowed; otherwise the key policy itself refused.
    return { allowed: false, reason: delegated ? 'no-identity-allow' : 'no-resource-allow' };
  }
  const allow = identityAllow ?? direct;
  return allow ? { allowed: true, statement: allow } : { allowed: false, reason: 'no-identity-allow' };
}

/**
 * AWS's access-denied text ("Troubleshoot access denied error messages"): `User: <arn> is not
 * authorized to perform: <action> on resource: <arn>`, then `with an explicit deny in a <type>
 * policy` or `because no <type> policy allows the <action> action`. The principal is shown as
 * the role session STS reports (`assumed-role/<name>/<session>`, the session named after the
 * role). `policyType` overrides the type named; by default it is the type of the policy that
 * decided (identity-based or resource-based).
 */
export function denialMessage(request: AuthorizationRequest, decision: Denial, policyType?: string): string {
  const head = `User: ${assumedRoleArn(request.principalArn)} is not authorized to perform: ${request.action} on resource: ${request.resource}`;
  if (decision.reason === 'explicit-deny') {
    const type = policyType ?? denyingPolicyType.get(decision) ?? 'identity-based';
    return `${head} with an explicit deny in ${/^[aeiou]/i.test(type) ? 'an' : 'a'} ${type} policy`;
  }
  const type = policyType ?? (decision.reason === 'no-identity-allow' ? 'identity-based' : 'resource-based');
  return `${head} because no ${type} policy allows the ${request.action} action`;
}

/** Which kind of policy denied, for denialMessage: the Decision's shape names only the statement. */
const denyingPolicyType = new WeakMap<Denial, string>();

function deny(statement: StatementRef, policyType: string): Denial {
  const decision: Denial = { allowed: false, reason: 'explicit-deny', statement };
  denyingPolicyType.set(decision, policyType);
  return decision;
}

const ref = (policy: string, statement: PolicyStatement, index: number): StatementRef =>
  statement.Sid === undefined ? { policy, index } : { policy, sid: statement.Sid, index };

function assumedRoleArn(arn: string): string {
  const role = /^arn:([^:]+):iam::(\d+):role\/(?:.*\/)?([^/]+)$/.exec(arn);
  if (!role) return arn;
  const [, partition, account, name] = role;
  return `arn:${partition}:sts::${account}:assumed-role/${name}/${name}`;
}

// --- Statements -------------------------------------------------------------------------------

function statementApplies(statement: PolicyStatement, request: AuthorizationRequest, context: Context): boolean {
  if (
    statement.Action !== undefined
      ? !anyMatches(statement.Action, request.action, actionGlob)
      : anyMatches(statement.NotAction ?? [], request.action, actionGlob)
  ) {
    return false;
  }
  if (statement.Resource !== undefined) {
    if (!anyMatches(statement.Resource, request.resource, resourceGlob)) return false;
  } else if (statement.NotResource !== undefined) {
    if (anyMatches(statement.NotResource, request.resource, resourceGlob)) return false;
  }
  // Neither: a resource-based policy's statement is about the resource it is attached to (identity-based ones were refused in validation).
  // "Condition" element: every operator, and every key under an operator, must hold.
  for (const [name, block] of Object.entries(statement.Condition ?? {})) {
    const operator = parseOperator(name);
    for (const [key, value] of Object.entries(block)) {
      if (!conditionHolds(operator, key, context.get(key.toLowerCase()), policyValues(value))) return false;
    }
  }
  return true;
}

const listOf = <T>(value: T | readonly T[]): readonly T[] => (Array.isArray(value) ? value : [value as T]);

const anyMatches = (patterns: string | readonly string[], value: string, compile: (pattern: string) => Matcher) =>
  listOf(patterns).some((pattern) => compile(pattern)(value));

/** The principal of the request: a role, whose account root is what a resource policy names to delegate to IAM. */
interface Principal {
  arn: string;
  account: string | undefined;
  root: string | undefined;
}

function principalOf(arn: string): Principal {
  const [prefix, partition, , , account] = arn.split(':');
  if (prefix !== 'arn' || !partition || !account) return { arn, account: undefined, root: undefined };
  return { arn, account, root: `arn:${partition}:iam::${account}:root` };
}

/** `direct`: the statement names this principal (or everyone); `account`: it names the principal's account, which delegates to IAM. */
function principalMatch(statement: PolicyStatement, principal: Principal): 'direct' | 'account' | undefined {
  const named = statement.Principal;
  if (named === '*') return 'direct';
  let match: 'direct' | 'account' | undefined;
  for (const value of listOf(named?.AWS ?? [])) {
    if (value === '*' || value === principal.arn) return 'direct';
    if (value === principal.root || value === principal.account) match = 'account';
  }
  // A service principal (`Service`) is never a role, so it never names this principal.
  return match;
}

// --- Validation, once per document --------------------------------------------------------------

const STATEMENT_ELEMENTS = new Set(['Sid', 'Effect', 'Action', 'NotAction', 'Resource', 'NotResource', 'Principal', 'Condition']);
const validated: Record<PolicyKind, WeakSet<PolicyDocument>> = { identity: new WeakSet(), resource: new WeakSet() };

function statementsOf(document: PolicyDocument, kind: PolicyKind): readonly PolicyStatement[] {
  if (validated[kind].has(document)) return listOf(document.Statement);
  if (typeof document.Statement !== 'object' || document.Statement === null) throw new UnsupportedPolicyError('a policy needs a Statement');
  const statements = listOf(document.Statement);
  for (const element of Object.keys(document)) {
    if (element !== 'Version' && element !== 'Id' && element !== 'Statement') throw new UnsupportedPolicyError(`policy element ${element} is not supported`);
  }
  // "IAM JSON policy elements: Version": the two versions there are; policy variables are 2012-10-17 only, and unsupported anyway.
  if (document.Version !== undefined && document.Version !== '2012-10-17' && document.Version !== '2008-10-17') {
    throw new UnsupportedPolicyError(`policy Version ${document.Version} is not supported`);
  }
  for (const statement of statements) validateStatement(statement, kind);
  validated[kind].add(document);
  return statements;
}

function validateStatement(statement: PolicyStatement, kind: PolicyKind): void {
  const where = `statement ${statement.Sid ?? '(no Sid)'}`;
  for (const element of Object.keys(statement)) {
    if (!STATEMENT_ELEMENTS.has(element)) throw new UnsupportedPolicyError(`${where}: policy element ${element} is not supported`);
  }
  if (statement.Effect !== 'Allow' && statement.Effect !== 'Deny')
    throw new UnsupportedPolicyError(`${where}: Effect ${String(statement.Effect)} is not supported`);
  if ((statement.Action === undefined) === (statement.NotAction === undefined))
    throw new UnsupportedPolicyError(`${where}: needs exactly one of Action and NotAction`);
  if (statement.Resource !== undefined && statement.NotResource !== undefined) throw new UnsupportedPolicyError(`${where}: has both Resource and NotResource`);
  if (kind === 'identity') {
    // "IAM JSON policy elements: Principal": identity-based policies name no principal, and must name a resource.
    if (statement.Principal !== undefined) throw new UnsupportedPolicyError(`${where}: an identity-based policy cannot have a Principal`);
    if (statement.Resource === undefined && statement.NotResource === undefined) throw new UnsupportedPolicyError(`${where}: needs Resource or NotResource`);
  } else {
    validatePrincipal(statement.Principal, where);
  }
  for (const pattern of [...listOf(statement.Resource ?? []), ...listOf(statement.NotResource ?? [])]) {
    if (pattern.includes('${')) throw new UnsupportedPolicyError(`${where}: policy variables are not supported (Resource ${pattern})`);
  }
  for (const [name, block] of Object.entries(statement.Condition ?? {})) {
    const operator = parseOperator(name);
    for (const [key, value] of Object.entries(block)) validateConditionValues(operator, key, policyValues(value), where);
  }
}

function validatePrincipal(principal: PolicyStatement['Principal'], where: string): void {
  if (principal === '*') return;
  if (principal === undefined || typeof principal !== 'object')
    throw new UnsupportedPolicyError(`${where}: a resource-based policy statement needs a Principal`);
  for (const [element, values] of Object.entries(principal)) {
    if (element !== 'AWS' && element !== 'Service') throw new UnsupportedPolicyError(`${where}: Principal ${element} is not supported`);
    for (const value of listOf(values as string | string[])) {
      // "AWS JSON policy elements: Principal": `*` alone is the only wildcard a principal may be.
      if (value !== '*' && /[*?]/.test(value)) throw new UnsupportedPolicyError(`${where}: Principal ${value}: wildcards within a principal are not supported`);
    }
  }
}

function validateConditionValues(operator: Operator, key: string, values: readonly string[], where: string): void {
  for (const value of values) {
    if (value.includes('${')) throw new UnsupportedPolicyError(`${where}: policy variables are not supported (${operator.name} ${key}: ${value})`);
    if ((operator.base === 'Null' || operator.base === 'Bool') && !/^(true|false)$/i.test(value)) {
      throw new UnsupportedPolicyError(`${where}: ${operator.name} ${key} takes true or false, got ${value}`);
    }
    if (operator.base.startsWith('Numeric') && parseNumber(value) === undefined) {
      throw new UnsupportedPolicyError(`${where}: ${operator.name} ${key} takes numbers, got ${value}`);
    }
  }
}

// --- Conditions ---------------------------------------------------------------------------------

interface ContextEntry {
  values: readonly string[];
  multivalued: boolean;
}
type Context = ReadonlyMap<string, ContextEntry>;

/** Lower-cased key names ("IAM JSON policy elements: Condition": key names are not case-sensitive). An empty multivalued key is an absent one. */
function contextEntries(context: RequestContext): Context {
  const entries = new Map<string, ContextEntry>();
  for (const [key, value] of Object.entries(context)) {
    const name = key.toLowerCase();
    if (entries.has(name)) throw new Error(`request context names ${key} twice (context key names are case-insensitive)`);
    if (typeof value === 'string') entries.set(name, { values: [value], multivalued: false });
    else if (value.length > 0) entries.set(name, { values: value, multivalued: true });
  }
  return entries;
}

type Compare = (requestValue: string, policyValue: string) => boolean;

/** "IAM JSON policy elements: Condition operators". `negated`: true of a value that matches none of the policy's values, and of an absent key. */
const BASE_OPERATORS: Readonly<Record<string, { compare: Compare; negated: boolean }>> = {
  StringEquals: { compare: (value, policy) => value === policy, negated: false },
  StringNotEquals: { compare: (value, policy) => value === policy, negated: true },
  StringEqualsIgnoreCase: { compare: (value, policy) => value.toLowerCase() === policy.toLowerCase(), negated: false },
  StringNotEqualsIgnoreCase: { compare: (value, policy) => value.toLowerCase() === policy.toLowerCase(), negated: true },
  StringLike: { compare: (value, policy) => stringGlob(policy)(value), negated: false },
  StringNotLike: { compare: (value, policy) => stringGlob(policy)(value), negated: true },
  // ArnEquals and ArnLike are one operator in the docs: both take wildcards, segment by segment.
  ArnEquals: { compare: (value, policy) => arnGlob(policy)(value), negated: false },
  ArnLike: { compare: (value, policy) => arnGlob(policy)(value), negated: false },
  ArnNotEquals: { compare: (value, policy) => arnGlob(policy)(value), negated: true },
  ArnNotLike: { compare: (value, policy) => arnGlob(policy)(value), negated: true },
  Bool: { compare: (value, policy) => value.toLowerCase() === policy.toLowerCase(), negated: false },
  NumericEquals: { compare: numeric((value, policy) => value === policy), negated: false },
  NumericNotEquals: { compare: numeric((value, policy) => value === policy), negated: true },
  NumericLessThan: { compare: numeric((value, policy) => value < policy), negated: false },
  NumericLessThanEquals: { compare: numeric((value, policy) => value <= policy), negated: false },
  NumericGreaterThan: { compare: numeric((value, policy) => value > policy), negated: false },
  NumericGreaterThanEquals: { compare: numeric((value, policy) => value >= policy), negated: false },
};

interface Operator {
  name: string;
  base: string;
  set: 'ForAllValues' | 'ForAnyValue' | undefined;
  ifExists: boolean;
}

const operators = new Map<string, Operator>();

function parseOperator(name: string): Operator {
  const known = operators.get(name);
  if (known) return known;
  const colon = name.indexOf(':');
  const prefix = colon === -1 ? undefined : name.slice(0, colon);
  if (prefix !== undefined && prefix !== 'ForAllValues' && prefix !== 'ForAnyValue') {
    throw new UnsupportedPolicyError(`condition set prefix ${prefix}: (in ${name}) is not supported`);
  }
  const rest = colon === -1 ? name : name.slice(colon + 1);
  const ifExists = rest.endsWith('IfExists');
  const base = ifExists ? rest.slice(0, -'IfExists'.length) : rest;
  if (base === 'Null') {
    if (ifExists || prefix) throw new UnsupportedPolicyError(`condition operator ${name} is not supported: Null takes no IfExists suffix or set prefix`);
  } else if (!Object.hasOwn(BASE_OPERATORS, base)) {
    throw new UnsupportedPolicyError(`condition operator ${name} is not supported`);
  }
  const operator: Operator = { name, base, set: prefix, ifExists };
  operators.set(name, operator);
  return operator;
}

/**
 * One key of one operator ("IAM JSON policy elements: Condition operators", "Single-valued vs.
 * multivalued context keys"): the policy's values are OR-ed; `ForAllValues` holds when every
 * request value matches (so of an absent or empty key), `ForAnyValue` when one does (so never of
 * an absent key); `IfExists` holds when the key is absent.
 */
function conditionHolds(operator: Operator, key: string, entry: ContextEntry | undefined, policy: readonly string[]): boolean {
  if (operator.base === 'Null') return policy.some((value) => (value.toLowerCase() === 'true') === (entry === undefined));
  const { compare, negated } = BASE_OPERATORS[operator.base]!;
  const holds = (value: string) => policy.some((expected) => compare(value, expected)) !== negated;
  if (entry === undefined) {
    if (operator.set === 'ForAllValues' || operator.ifExists) return true;
    if (operator.set === 'ForAnyValue') return false;
    return negated;
  }
  if (operator.set === 'ForAllValues') return entry.values.every(holds);
  if (operator.set === 'ForAnyValue') return entry.values.some(holds);
  // "Multivalued context keys require a condition set operator": without one, the docs give no meaning to decide by.
  if (entry.multivalued) throw new UnsupportedPolicyError(`condition ${operator.name} on multivalued key ${key} needs ForAllValues: or ForAnyValue:`);
  return holds(entry.values[0]!);
}

/** Condition values may be JSON booleans and numbers; IAM compares their text. */
const policyValues = (value: string | boolean | number | readonly (string | boolean | number)[]): readonly string[] => listOf(value).map(String);

function parseNumber(text: string): number | undefined {
  const number = text.trim() === '' ? Number.NaN : Number(text);
  return Number.isFinite(number) ? number : undefined;
}

/** A request value that is not a number matches no numeric comparison. */
function numeric(compare: (value: number, policy: number) => boolean): Compare {
  return (value, policy) => {
    const left = parseNumber(value);
    const right = parseNumber(policy);
    return left !== undefined && right !== undefined && compare(left, right);
  };
}

// --- Wildcards ----------------------------------------------------------------------------------

type Matcher = (value: string) => boolean;

/** Compiled once per pattern: policies are few and long-lived, requests many. */
const matchers = new Map<string, Matcher>();

function cached(key: string, build: () => Matcher): Matcher {
  let matcher = matchers.get(key);
  if (!matcher) {
    matcher = build();
    matchers.set(key, matcher);
  }
  return matcher;
}

/** `*`: any run of characters, `/` and `:` included; `?`: any one character. */
function globMatcher(pattern: string, ignoreCase: boolean): Matcher {
  if (pattern === '*') return () => true;
  if (!/[*?]/.test(pattern)) return ignoreCase ? (value) => value.toLowerCase() === pattern.toLowerCase() : (value) => value === pattern;
  const source = pattern.replace(/[.+^${}()|[\]\\*?]/g, (char) => (char === '*' ? '.*' : char === '?' ? '.' : `\\${char}`));
  const regex = new RegExp(`^${source}$`, ignoreCase ? 'is' : 's');
  return (value) => regex.test(value);
}

/** "IAM JSON policy elements: Action": service prefixes and action names are case-insensitive. */
const actionGlob = (pattern: string) => cached(`a:${pattern}`, () => globMatcher(pattern, true));
/** "IAM JSON policy elements: Resource": ARNs are case-sensitive; a `*` may run past `/` (and colons). */
const resourceGlob = (pattern: string) => cached(`r:${pattern}`, () => globMatcher(pattern, false));
const stringGlob = (pattern: string) => cached(`s:${pattern}`, () => globMatcher(pattern, false));

/**
 * ArnEquals/ArnLike ("IAM JSON policy elements: Condition operators"): each of the six
 * colon-delimited components is matched separately, so a wildcard stays within its component
 * (the last, the resource, may itself hold colons). A pattern that is not ARN-shaped (`*`) is
 * matched whole.
 */
function arnGlob(pattern: string): Matcher {
  return cached(`n:${pattern}`, () => {
    const parts = arnParts(pattern);
    if (!parts) return globMatcher(pattern, false);
    const segments = parts.map((part) => globMatcher(part, false));
    return (value) => {
      const valueParts = arnParts(value);
      return valueParts !== undefined && segments.every((segment, index) => segment(valueParts[index]!));
    };
  });
}

function arnParts(arn: string): string[] | undefined {
  const parts = arn.split(':');
  if (parts.length < 6) return undefined;
  return [...parts.slice(0, 5), parts.slice(5).join(':')];
}
