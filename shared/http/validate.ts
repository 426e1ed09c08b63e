import * as v from 'valibot';
import { ValidationError } from '../errors.ts';

/**
 * Validates input with a valibot schema; a failure is a 400 naming the field (`body.network:
 * ...`). Only the first issue of each field is reported, to keep messages short.
 */
export function parseInput<S extends v.GenericSchema>(schema: S, input: unknown, where: 'body' | 'query' | 'path' | 'header'): v.InferOutput<S> {
  const result = v.safeParse(schema, input ?? {}, { abortPipeEarly: true });
  if (result.success) return result.output;
  const seen = new Set<string>();
  const problems: string[] = [];
  for (const issue of result.issues) {
    const path = v.getDotPath(issue);
    const field = path ? `${where}.${path}` : where;
    if (seen.has(field)) continue;
    seen.add(field);
    problems.push(`${field}: ${issue.message}`);
  }
  throw new ValidationError(problems.join('; '), 'INVALID_REQUEST');
}
