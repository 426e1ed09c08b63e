import { ConditionalCheckFailedException, DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it } from 'vitest';
import { clientEndpoint, type LocalRequest, registerLocalEndpoint } from '../../shared/deps/local-endpoints.ts';

/**
 * In-process endpoints (shared/deps/local-endpoints.ts): a client built for a registered endpoint
 * hands the SDK's signed request to the registered function, and the SDK reads the answer as it
 * reads a socket's (items, its own exception classes, aborts). Port 9 (discard) has no listener
 * here, so a request that went to a socket would fail.
 */
const ENDPOINT = 'http://127.0.0.1:9';
const credentials = { accessKeyId: 'sandbox', secretAccessKey: 'sandbox' };
const json = (status: number, body: unknown, headers: Record<string, string> = {}) => ({
  status,
  headers: { 'content-type': 'application/x-amz-json-1.0', ...headers },
  body: Buffer.from(JSON.stringify(body)),
});

describe('local endpoints', () => {
  const stops: (() => void)[] = [];
  afterEach(() => {
    for (const stop of stops.splice(0)) stop();
  });

  it('configures nothing without an endpoint (AWS), and only the endpoint for one not served here', () => {
    expect(clientEndpoint(undefined)).toEqual({});
    expect(clientEndpoint('')).toEqual({});
    expect(clientEndpoint(ENDPOINT)).toEqual({ endpoint: ENDPOINT });
  });

  it('hands a registered endpoint’s requests to its function: the signed JSON request in, the SDK’s parsed answer out', async () => {
    const seen: LocalRequest[] = [];
    stops.push(
      registerLocalEndpoint(`${ENDPOINT}/`, async (request) => {
        seen.push(request);
        return json(200, { Item: { pk: { S: 'a' }, n: { N: '7' } } });
      }),
    );
    const client = new DynamoDBClient({ ...clientEndpoint(ENDPOINT), region: 'us-east-1', credentials });
    const answer = await client.send(new GetItemCommand({ TableName: 'table', Key: { pk: { S: 'a' } } }));
    expect(answer.Item).toEqual({ pk: { S: 'a' }, n: { N: '7' } });
    expect(seen).toHaveLength(1);
    const [request] = seen;
    expect(request).toMatchObject({ method: 'POST', path: '/' });
    expect(request!.headers['x-amz-target']).toBe('DynamoDB_20120810.GetItem');
    expect(request!.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=sandbox\//);
    expect(JSON.parse(request!.body.toString('utf8'))).toEqual({ TableName: 'table', Key: { pk: { S: 'a' } } });
  });

  it('gives the SDK’s own exception for an error answer, with the item a failed condition returns', async () => {
    stops.push(
      registerLocalEndpoint(ENDPOINT, async () =>
        json(400, {
          __type: 'com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException',
          message: 'The conditional request failed',
          Item: { pk: { S: 'a' } },
        }),
      ),
    );
    const client = new DynamoDBClient({ ...clientEndpoint(ENDPOINT), region: 'us-east-1', credentials, maxAttempts: 1 });
    const error = await client
      .send(
        new PutItemCommand({
          TableName: 'table',
          Item: { pk: { S: 'a' } },
          ConditionExpression: 'attribute_not_exists(pk)',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      )
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConditionalCheckFailedException);
    expect((error as ConditionalCheckFailedException).Item).toEqual({ pk: { S: 'a' } });
  });

  it('passes the abort signal on: an aborted long poll rejects as the SDK’s socket handler rejects', async () => {
    let signalled: AbortSignal | undefined;
    stops.push(
      registerLocalEndpoint(ENDPOINT, async (request) => {
        signalled = request.signal;
        await new Promise((done) => request.signal?.addEventListener('abort', done, { once: true }));
        return json(200, { Messages: [] });
      }),
    );
    const client = new SQSClient({ ...clientEndpoint(ENDPOINT), region: 'us-east-1', credentials });
    const abort = new AbortController();
    const receiving = client.send(new ReceiveMessageCommand({ QueueUrl: `${ENDPOINT}/000000000000/q`, WaitTimeSeconds: 20 }), { abortSignal: abort.signal });
    await expect.poll(() => signalled).toBeDefined();
    abort.abort();
    await expect(receiving).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('stops serving once unregistered: a client built after that goes to the socket (and finds nothing on port 9)', async () => {
    const stop = registerLocalEndpoint(ENDPOINT, async () => json(200, {}));
    stop();
    expect(clientEndpoint(ENDPOINT)).toEqual({ endpoint: ENDPOINT });
    const client = new DynamoDBClient({ ...clientEndpoint(ENDPOINT), region: 'us-east-1', credentials, maxAttempts: 1 });
    await expect(client.send(new GetItemCommand({ TableName: 'table', Key: { pk: { S: 'a' } } }))).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });
});
