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
  // `QueryLanguage: "JSONPath"` into every state it checks, so it gets a copy.
  new StateMachine(structuredClone(definition) as StateMachineDefinition);
  return structuredClone(definition) as StateMachineDefinition;
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
