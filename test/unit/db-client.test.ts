import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { createDocumentClient } from '../../shared/db/client.ts';

/** The table's document client (shared/db/client.ts), as every handler and the sandbox build it. */
describe('the table client', () => {
  const names = (stack: { identify(): string[] }) => stack.identify().map((entry) => entry.split(' ')[0]);

  it('has the SDK’s middleware but its logger’s (no SDK logger is set: it only copied every input and output for a no-op)', () => {
    const plain = names(new DynamoDBClient({ region: 'us-east-1' }).middlewareStack);
    expect(plain).toContain('loggerMiddleware');
    const ours = names(createDocumentClient('http://127.0.0.1:9').middlewareStack);
    expect(ours).toEqual(plain.filter((name) => name !== 'loggerMiddleware'));
    expect(ours).toEqual(expect.arrayContaining(['serializerMiddleware', 'retryMiddleware', 'httpSigningMiddleware', 'deserializerMiddleware']));
  });
});
