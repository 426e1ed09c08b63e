import * as v from 'valibot';
import { ValidationError } from '../errors.ts';

/** Longest field path quoted in a message; a longer one (a caller's own key) is cut. */
const MAX_FIELD = 80;

/**
 * Validates input with a valibot schema; a failure is a 400 naming the field and the rule
 * (`body.network: must be ...`). Only the first issue of each field is reported, to keep
 * messages short. A message never repeats what the caller sent: the schemas' own messages name
 * rules only, and where a schema has none, `ruleOnly` stands in for valibot's default (which
 * quotes the received value: a whole body, an op_jwt or an access key).
 */
export function parseInput<S extends v.GenericSchema>(schema: S, input: unknown, where: 'body' | 'query' | 'path' | 'header'): v.InferOutput<S> {
  const result = v.safeParse(schema, input ?? {}, { abortPipeEarly: true, message: ruleOnly });
  if (result.success) return result.output;
  const seen = new Set<string>();
  const problems: string[] = [];
  for (const issue of result.issues.flatMap(branchIssues)) {
    const field = clip(issue.path ? `${where}.${issue.path}` : where);
    if (seen.has(field)) continue;
    seen.add(field);
    problems.push(`${field}: ${issue.message}`);
  }
  throw new ValidationError(problems.join('; '), 'INVALID_REQUEST');
}

/**
 * A union that is not sure which branch was meant (an EVM transaction object with an unknown or
 * missing field, or a base64 Solana message) holds each branch's problems; those with a path come
 * from the branch whose type matched the input (the others fail at their root), so they are what
 * the caller got wrong, each naming its field. Sub-issue paths are relative to the union.
 */
function branchIssues(issue: v.BaseIssue<unknown>): { path: string | null; message: string }[] {
  const path = dotPath(issue);
  const inner = (issue.issues ?? []).filter((sub) => dotPath(sub) !== null);
  if (!inner.length) return [{ path, message: issue.message }];
  return inner.map((sub) => ({ path: `${path ? `${path}.` : ''}${dotPath(sub)}`, message: sub.message }));
}

/**
 * The issue's path; an unknown key (a strict object's) is named only when it looks like a field
 * name, since it is the caller's own text (a leading underscore too: `__defineGetter__`).
 */
function dotPath(issue: v.BaseIssue<unknown>): string | null {
  const path = v.getDotPath(issue);
  if (path === null || issue.expected !== 'never') return path;
  const key = String(issue.path?.at(-1)?.key ?? '');
  return /^[A-Za-z_][A-Za-z0-9_]{0,39}$/.test(key) ? path : `${path.slice(0, path.length - key.length)}(unknown field)`;
}

const clip = (field: string) => (field.length > MAX_FIELD ? `${field.slice(0, MAX_FIELD)}…` : field);

/** A message from the issue's rule (`expected`, set by the schema), never its input. */
export function ruleOnly(issue: v.BaseIssue<unknown>): string {
  if (issue.expected === 'never') return 'is not allowed';
  if (issue.kind === 'schema' && issue.input === undefined) return 'is required';
  if (issue.kind === 'schema' && issue.expected === 'Object') return 'must be a JSON object';
  if (issue.kind === 'schema') return `must be of type ${issue.expected ?? issue.type}`;
  return issue.expected ? `fails ${issue.type} (expected ${issue.expected})` : `fails ${issue.type}`;
}
