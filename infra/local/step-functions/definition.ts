import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
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
  // compiles its JSON schemas anew on every call (about 0.2 s of CPU, a tenth of a runtime's
  // start), so a definition it passed is remembered, as its text: the same text passes again.
  const text = JSON.stringify(definition);
  if (!validated.has(text) && !verdicts.passed(text)) {
    new StateMachine(JSON.parse(text) as StateMachineDefinition);
    verdicts.pass(text);
  }
  validated.add(text);
  return JSON.parse(text) as StateMachineDefinition;
}

/** Definitions (as JSON text) asl-validator passed in this process. */
const validated = new Set<string>();

/**
 * asl-validator's passes, kept across processes (every runtime start and test worker loads the
 * same definition): an empty file per definition passed, in a folder of this user's under the
 * temporary directory, named by the SHA-256 of the interpreter's and validator's versions and the
 * definition's text. A changed definition or another version is another name, validated anew;
 * only passes are kept. The folder is used only if it is this user's and no one else may write
 * in it; anything unexpected (not writable, another owner) only means validating again.
 */
export const ASL_VERDICTS_FOLDER = join(tmpdir(), `perp-wallet-asl-validated-${process.getuid?.() ?? 'user'}`);

const verdicts = (() => {
  const uid = process.getuid?.();
  const folder = ASL_VERDICTS_FOLDER;
  let versions: string | undefined;
  const nameOf = (text: string) => {
    versions ??= validatorVersions();
    return join(folder, createHash('sha256').update(`${versions}\n${text}`).digest('hex'));
  };
  const ours = () => {
    try {
      const stat = statSync(folder);
      return stat.isDirectory() && (uid === undefined || stat.uid === uid) && (stat.mode & 0o022) === 0;
    } catch {
      return false;
    }
  };
  return {
    passed(text: string): boolean {
      try {
        return ours() && statSync(nameOf(text)).isFile();
      } catch {
        return false;
      }
    },
    pass(text: string): void {
      try {
        mkdirSync(folder, { recursive: true, mode: 0o700 });
        if (ours()) writeFileSync(nameOf(text), '', { mode: 0o600 });
      } catch {
        // Not kept: the next process validates again.
      }
    },
  };
})();

/** The interpreter's and its validator's installed versions (neither package exports its package.json). */
function validatorVersions(): string {
  const interpreter = fileURLToPath(import.meta.resolve('aws-local-stepfunctions'));
  const validator = createRequire(interpreter).resolve('asl-validator');
  return `aws-local-stepfunctions@${versionAbove(interpreter, 'aws-local-stepfunctions')} asl-validator@${versionAbove(validator, 'asl-validator')}`;
}

/** The version in the nearest package.json above `file` that is `name`'s. */
function versionAbove(file: string, name: string): string {
  for (let dir = dirname(file); dir !== dirname(dir); dir = dirname(dir)) {
    try {
      const json = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (json.name === name && json.version) return json.version;
    } catch {
      // No package.json here: one folder up.
    }
  }
  throw new Error(`no package.json of ${name} above ${file}`);
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
