import { StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';
import { definitionProblems } from '../../transfer-definition.ts';

/**
 * What the local interpreter (aws-local-stepfunctions 3.0.0) would run differently from AWS
 * without saying so (definitionProblems in infra/transfer-definition.ts lists them). A definition
 * using any of them is refused when loaded.
 */
export class UnsupportedDefinitionError extends Error {
  override readonly name = 'UnsupportedDefinitionError';
}

/**
 * Refuses (definitionProblems, the check the deployment applies too) what would run differently
 * locally, then validates the ASL with asl-validator as the interpreter does.
 */
export function loadLocalDefinition(definition: unknown): StateMachineDefinition {
  const problems = definitionProblems(definition);
  if (problems.length) throw new UnsupportedDefinitionError(`The state machine cannot run locally as it would on AWS: ${problems.join('; ')}`);
  // Throws "State machine definition is invalid" with asl-validator's errors. The validator writes
  // `QueryLanguage: "JSONPath"` into every state it checks, so it gets a copy. It builds and
  // compiles its JSON schemas anew on every call (about 0.2 s of CPU), so a definition it passed
  // is remembered, as its text: the same text passes again.
  const text = JSON.stringify(definition);
  if (!validated.has(text)) {
    new StateMachine(JSON.parse(text) as StateMachineDefinition);
    validated.add(text);
  }
  return JSON.parse(text) as StateMachineDefinition;
}

/** Definitions (as JSON text) asl-validator passed in this process. */
const validated = new Set<string>();

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
