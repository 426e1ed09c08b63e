import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConditionalCheckFailedException, DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it } from 'vitest';
import { createEvmClient } from '../../shared/chains/evm/evm-client.ts';
import { clientEndpoint, type LocalRequest, localFetch, registerLocalEndpoint, UnsignedAuthorization } from '../../shared/deps/local-endpoints.ts';

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
    // SigV4's header, unsigned: the access key, the request's date, region and service; 64 zeros for the signature.
    const date = request!.headers['x-amz-date']!;
    expect(date).toMatch(/^\d{8}T\d{6}Z$/);
    expect(request!.headers.authorization).toBe(
      `AWS4-HMAC-SHA256 Credential=sandbox/${date.slice(0, 8)}/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=${'0'.repeat(64)}`,
    );
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

  it('leaves signing to the SDK for an endpoint in another process: a real SigV4 signature over each request', async () => {
    const seen: IncomingHttpHeaders[] = [];
    const server = createServer((req, res) => {
      seen.push(req.headers);
      req.resume().on('end', () => res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' }).end('{}'));
    });
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
    try {
      const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      expect(clientEndpoint(endpoint)).toEqual({ endpoint });
      const client = new DynamoDBClient({ ...clientEndpoint(endpoint), region: 'us-east-1', credentials, maxAttempts: 1 });
      for (const pk of ['a', 'b']) await client.send(new GetItemCommand({ TableName: 'table', Key: { pk: { S: pk } } }));
      const signatures = seen.map(
        (headers) =>
          /^AWS4-HMAC-SHA256 Credential=sandbox\/\d{8}\/us-east-1\/dynamodb\/aws4_request, SignedHeaders=\S+, Signature=([0-9a-f]{64})$/.exec(
            headers.authorization ?? '',
          )?.[1],
      );
      expect(signatures).toHaveLength(2);
      // Computed over each request's body: two keys, two signatures, neither the unsigned one.
      expect(new Set(signatures).size).toBe(2);
      for (const signature of signatures) expect([undefined, UnsignedAuthorization.SIGNATURE]).not.toContain(signature);
    } finally {
      server.closeAllConnections();
      await new Promise((closed) => server.close(closed));
    }
  });

  it('localFetch hands a request for a registered endpoint to its function, and answers with a Response of what it returned', async () => {
    const seen: LocalRequest[] = [];
    stops.push(
      registerLocalEndpoint(ENDPOINT, async (request) => {
        seen.push(request);
        return { status: 201, headers: { 'content-type': 'application/json', 'x-two': ['a', 'b'] }, body: Buffer.from('{"ok":true}') };
      }),
    );
    const response = await localFetch(`${ENDPOINT}/key/ETH?x=1`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"id":1}' });
    expect(response.status).toBe(201);
    expect(response.headers.get('x-two')).toBe('a, b');
    expect(await response.json()).toEqual({ ok: true });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: 'POST', path: '/key/ETH?x=1', headers: { 'content-type': 'application/json' } });
    expect(seen[0]!.body.toString('utf8')).toBe('{"id":1}');
  });

  it('viem’s transport over localFetch (createEvmClient): JSON-RPC to a registered endpoint, no socket', async () => {
    const methods: string[] = [];
    stops.push(
      registerLocalEndpoint(ENDPOINT, async (request) => {
        const { id, method } = JSON.parse(request.body.toString('utf8')) as { id: number; method: string };
        methods.push(method);
        return { status: 200, headers: { 'content-type': 'application/json' }, body: Buffer.from(JSON.stringify({ jsonrpc: '2.0', id, result: '0x2a' })) };
      }),
    );
    const client = createEvmClient(`${ENDPOINT}/rpc-key/ETH`);
    expect(await client.getBalance({ address: '0x1111111111111111111111111111111111111111' })).toBe(42n);
    expect(methods).toEqual(['eth_getBalance']);
  });

  it('localFetch: an aborted request rejects with the signal’s reason, as fetch does; an endpoint not served here goes to the socket', async () => {
    stops.push(registerLocalEndpoint(ENDPOINT, async () => json(200, {})));
    const abort = new AbortController();
    abort.abort(new Error('gave up'));
    await expect(localFetch(`${ENDPOINT}/`, { method: 'POST', body: '{}', signal: abort.signal })).rejects.toThrow('gave up');
    const server = createServer((req, res) => req.resume().on('end', () => res.writeHead(200, { 'content-type': 'text/plain' }).end('over http')));
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
    try {
      const response = await localFetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, { method: 'POST', body: '{}' });
      expect(await response.text()).toBe('over http');
    } finally {
      server.closeAllConnections();
      await new Promise((closed) => server.close(closed));
    }
  });

  it('stops serving once unregistered: a client built after that goes to the socket (and finds nothing on port 9)', async () => {
    const stop = registerLocalEndpoint(ENDPOINT, async () => json(200, {}));
    stop();
    expect(clientEndpoint(ENDPOINT)).toEqual({ endpoint: ENDPOINT });
    const client = new DynamoDBClient({ ...clientEndpoint(ENDPOINT), region: 'us-east-1', credentials, maxAttempts: 1 });
    await expect(client.send(new GetItemCommand({ TableName: 'table', Key: { pk: { S: 'a' } } }))).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    // localFetch looks up each call: the same URL now meets the closed port.
    await expect(localFetch(`${ENDPOINT}/`, { method: 'POST', body: '{}' })).rejects.toThrow('fetch failed');
  });
});
