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
  for (const issue of result.issues) {
    const path = v.getDotPath(issue);
    const full = path ? `${where}.${path}` : where;
    const field = full.length > MAX_FIELD ? `${full.slice(0, MAX_FIELD)}…` : full;
    if (seen.has(field)) continue;
    seen.add(field);
    problems.push(`${field}: ${issue.message}`);
  }
  throw new ValidationError(problems.join('; '), 'INVALID_REQUEST');
}

/** A message from the issue's rule (`expected`, set by the schema), never its input. */
export function ruleOnly(issue: v.BaseIssue<unknown>): string {
  if (issue.expected === 'never') return 'is not allowed';
  if (issue.kind === 'schema' && issue.input === undefined) return 'is required';
  if (issue.kind === 'schema' && issue.expected === 'Object') return 'must be a JSON object';
  if (issue.kind === 'schema') return `must be of type ${issue.expected ?? issue.type}`;
  return issue.expected ? `fails ${issue.type} (expected ${issue.expected})` : `fails ${issue.type}`;
}
