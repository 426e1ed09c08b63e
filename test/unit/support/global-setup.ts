import type { TestProject } from 'vitest/node';
import { sharedDynamoDbLocal } from '../../support/dynamodb-local.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The unit project's DynamoDB Local (test/unit/support/dynamodb-engines.ts makes a table per caller). */
    dynamodbLocalEndpoint: string;
  }
}

/** The run's DynamoDB Local for the unit project's files (shared with api-dynamodb-local's runtime, each on its own tables). */
export default async function setup(project: TestProject) {
  const engine = await sharedDynamoDbLocal();
  project.provide('dynamodbLocalEndpoint', engine.endpoint);
  return engine.release;
}
