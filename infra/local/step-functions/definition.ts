import { StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';

/**
 * What the local interpreter (aws-local-stepfunctions 3.0.0) would run differently from AWS
 * without saying so (aws-local-stepfunctions 3.0.0: no JSONata support): JSONata fields are accepted and silently
 * ignored, `.waitForTaskToken` has no token, a Task without TimeoutSeconds is cut at 60 s
 * locally but not on AWS. A definition using any of them is refused when loaded.
 */
export class UnsupportedDefinitionError extends Error {
  override readonly name = 'UnsupportedDefinitionError';
}

/** The optimised Lambda integration: the only Task resource the local runner serves. */
export const LAMBDA_INVOKE = 'arn:aws:states:::lambda:invoke';

const JSONATA_FIELDS = ['Arguments', 'Output', 'Assign'] as const;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type States = Record<string, Record<string, Json>>;

/** Validates `definition` (asl-validator, as the interpreter does) and refuses what runs differently locally. */
export function loadLocalDefinition(definition: unknown): StateMachineDefinition {
  const problems: string[] = [];
  if (typeof definition !== 'object' || definition === null || Array.isArray(definition))
    throw new UnsupportedDefinitionError('the definition is not a JSON object');
  const top = definition as Record<string, Json>;
  if ('QueryLanguage' in top && top.QueryLanguage !== 'JSONPath')
    problems.push(`QueryLanguage ${JSON.stringify(top.QueryLanguage)}: only JSONPath runs locally`);
  if (typeof top.TimeoutSeconds !== 'number') problems.push('the machine has no TimeoutSeconds');
  visit(top.States as States | undefined, '', problems);
  if (problems.length) throw new UnsupportedDefinitionError(`The state machine cannot run locally as it would on AWS: ${problems.join('; ')}`);
  // Throws "State machine definition is invalid" with asl-validator's errors. The validator writes
  // `QueryLanguage: "JSONPath"` into every state it checks, so it gets a copy.
  new StateMachine(structuredClone(definition) as StateMachineDefinition);
  return structuredClone(definition) as StateMachineDefinition;
}

function visit(states: States | undefined, prefix: string, problems: string[]) {
  for (const [name, state] of Object.entries(states ?? {})) {
    const where = `${prefix}${name}`;
    if ('QueryLanguage' in state && state.QueryLanguage !== 'JSONPath')
      problems.push(`${where}: QueryLanguage ${JSON.stringify(state.QueryLanguage)}: only JSONPath runs locally`);
    for (const field of JSONATA_FIELDS) if (field in state) problems.push(`${where}: ${field} is JSONata`);
    if (JSON.stringify(state).includes('{%')) problems.push(`${where}: a {% %} JSONata expression`);
    if (state.Type === 'Task') {
      if (typeof state.Resource === 'string' && state.Resource.endsWith('.waitForTaskToken'))
        problems.push(`${where}: .waitForTaskToken has no local task token`);
      if (typeof state.TimeoutSeconds !== 'number') problems.push(`${where}: a Task without TimeoutSeconds (cut at 60 s locally, unlimited on AWS)`);
      else if (state.Resource !== LAMBDA_INVOKE) problems.push(`${where}: only ${LAMBDA_INVOKE} Tasks run locally (through the in-process Lambda adapter)`);
    }
    for (const nested of [state.ItemProcessor, state.Iterator] as Json[]) {
      if (nested && typeof nested === 'object' && !Array.isArray(nested)) visit(nested.States as States, `${where}/`, problems);
    }
    if (Array.isArray(state.Branches))
      for (const branch of state.Branches)
        if (branch && typeof branch === 'object' && !Array.isArray(branch)) visit(branch.States as States, `${where}/`, problems);
  }
}

/** The names of every state of `kind` at any depth (waitTimeOverrides and retryIntervalOverrides are keyed by state name). */
export function stateNames(definition: StateMachineDefinition, select: (state: Record<string, unknown>) => boolean): string[] {
  const names: string[] = [];
  const walk = (states: Record<string, Record<string, unknown>>) => {
    for (const [name, state] of Object.entries(states)) {
      if (select(state)) names.push(name);
      const nested = (state.ItemProcessor ?? state.Iterator) as { States?: Record<string, Record<string, unknown>> } | undefined;
      if (nested?.States) walk(nested.States);
      for (const branch of (state.Branches ?? []) as { States: Record<string, Record<string, unknown>> }[]) walk(branch.States);
    }
  };
  walk(definition.States as unknown as Record<string, Record<string, unknown>>);
  return names;
}
