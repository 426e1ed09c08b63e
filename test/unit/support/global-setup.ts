import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal, stopChild } from '../../support/dynamodb-local.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The unit project's DynamoDB Local (test/unit/support/dynamodb-engines.ts makes a table per caller). */
    dynamodbLocalEndpoint: string;
  }
}

/** One DynamoDB Local for the unit project's files, started beside the first files and stopped after the last. */
export default async function setup(project: TestProject) {
  const workDir = await mkdtemp(join(tmpdir(), 'ddb-local-unit-'));
  const engine = await startDynamoDbLocal(workDir);
  project.provide('dynamodbLocalEndpoint', engine.endpoint);
  return async () => {
    await stopChild(engine.process);
    await rm(workDir, { recursive: true, force: true });
  };
}
