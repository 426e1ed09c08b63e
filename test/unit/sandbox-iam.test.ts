import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BatchGetCommand, BatchWriteCommand, type DynamoDBDocumentClient, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_FUNCTIONS } from '../../functions/events.ts';
import { ROUTES } from '../../functions/routes.ts';
import { TRANSFER_STEP_FUNCTIONS } from '../../functions/transfer-steps.ts';
import { type DynamoDbStreamProxy, startDynamoDbStreamProxy } from '../../infra/local/dynamodb-stream/proxy.ts';
import { dynamodbAccessRequests } from '../../infra/local/iam/dynamodb.ts';
import { dynamodbAccessDenied, iamModeOf, loadRolePolicies, SandboxIam } from '../../infra/local/iam/enforcer.ts';
import { kmsGuard } from '../../infra/local/iam/kms.ts';
import { runAsFunction } from '../../infra/local/iam/principal.ts';
import type { RolePolicies } from '../../infra/local/iam/role-policies.ts';
import { LocalKeyWrapper } from '../../shared/crypto/local-key-wrapper.ts';
import { setLocalKmsGuard } from '../../shared/crypto/local-kms-guard.ts';
import { LOCAL_SPONSOR_KEY_FILE, LocalOpJwtSigner } from '../../shared/crypto/local-op-jwt-signer.ts';
import { createDocumentClient, type Table } from '../../shared/db/client.ts';
import { startEngineTable } from './support/dynamodb-engines.ts';

/**
 * The sandbox's IAM for DynamoDB (docs/sandbox-iam.md): what each request is authorised as, and
 * the stream proxy refusing, as AWS does, a call the calling function's role does not allow.
 */
const REGION = 'us-east-1';
const arn = (table: string) => `arn:aws:dynamodb:${REGION}:000000000000:table/${table}`;

describe('what a DynamoDB request is authorised as', () => {
  it('an item operation: its action on the table, the partition key as dynamodb:LeadingKeys', () => {
    expect(dynamodbAccessRequests('GetItem', { TableName: 't', Key: { pk: { S: 'APP#a' }, sk: { S: 'x' } } }, arn)).toEqual([
      { action: 'dynamodb:GetItem', resource: arn('t'), context: { 'dynamodb:LeadingKeys': ['APP#a'] } },
    ]);
    expect(dynamodbAccessRequests('PutItem', { TableName: 't', Item: { pk: { S: 'TASKS#a#u' }, sk: { S: 'T#1' } } }, arn)[0]!.context).toEqual({
      'dynamodb:LeadingKeys': ['TASKS#a#u'],
    });
  });

  it("a Query: the key condition's partition value, through an ExpressionAttributeNames placeholder too; an index is its own resource", () => {
    const query = {
      TableName: 't',
      KeyConditionExpression: '#p = :p AND begins_with(sk, :s)',
      ExpressionAttributeNames: { '#p': 'pk' },
      ExpressionAttributeValues: { ':p': { S: 'EVENTS#a' }, ':s': { S: 'E#' } },
    };
    expect(dynamodbAccessRequests('Query', query, arn)).toEqual([
      { action: 'dynamodb:Query', resource: arn('t'), context: { 'dynamodb:LeadingKeys': ['EVENTS#a'] } },
    ]);
    expect(dynamodbAccessRequests('Query', { ...query, IndexName: 'byTime' }, arn)[0]!.resource).toBe(`${arn('t')}/index/byTime`);
    // No equality on the partition key: no leading keys (a fenced grant then refuses it, as AWS does).
    expect(dynamodbAccessRequests('Query', { ...query, KeyConditionExpression: 'sk = :s' }, arn)[0]!.context).toEqual({});
  });

  it('batches item by item as the batch action; a transaction element as its own action within the transaction', () => {
    const keys = [{ pk: { S: 'APP#a' } }, { pk: { S: 'APPSECRET#b' } }];
    expect(
      dynamodbAccessRequests('BatchGetItem', { RequestItems: { t: { Keys: keys } } }, arn).map((r) => [r.action, r.context['dynamodb:LeadingKeys']]),
    ).toEqual([
      ['dynamodb:BatchGetItem', ['APP#a']],
      ['dynamodb:BatchGetItem', ['APPSECRET#b']],
    ]);
    const transaction = {
      TransactItems: [
        { Put: { TableName: 't', Item: { pk: { S: 'TASKS#a' } } } },
        { Update: { TableName: 't', Key: { pk: { S: 'IDEMP#a' } } } },
        { ConditionCheck: { TableName: 't', Key: { pk: { S: 'ACCOUNT#a' } } } },
      ],
    };
    expect(dynamodbAccessRequests('TransactWriteItems', transaction, arn)).toEqual([
      { action: 'dynamodb:PutItem', resource: arn('t'), context: { 'dynamodb:LeadingKeys': ['TASKS#a'], 'dynamodb:EnclosingOperation': 'TransactWriteItems' } },
      {
        action: 'dynamodb:UpdateItem',
        resource: arn('t'),
        context: { 'dynamodb:LeadingKeys': ['IDEMP#a'], 'dynamodb:EnclosingOperation': 'TransactWriteItems' },
      },
      {
        action: 'dynamodb:ConditionCheckItem',
        resource: arn('t'),
        context: { 'dynamodb:LeadingKeys': ['ACCOUNT#a'], 'dynamodb:EnclosingOperation': 'TransactWriteItems' },
      },
    ]);
    expect(dynamodbAccessRequests('Scan', { TableName: 't' }, arn)).toEqual([{ action: 'dynamodb:Scan', resource: arn('t'), context: {} }]);
  });
});

describe('SANDBOX_IAM', () => {
  it('is enforce by default; warn and off on request; anything else stops the start', () => {
    expect(iamModeOf(undefined)).toBe('enforce');
    expect(iamModeOf('')).toBe('enforce');
    expect(iamModeOf('warn')).toBe('warn');
    expect(iamModeOf('off')).toBe('off');
    expect(() => iamModeOf('on')).toThrow(/SANDBOX_IAM: must be one of enforce, warn, off/);
  });
});

describe('the committed policies (infra/local/iam/role-policies.json)', () => {
  const policies = loadRolePolicies({ account: '000000000000', region: REGION, table: 'perp-wallet' });

  it('name a role for every function the sandbox runs: each route, transfer step and events function', () => {
    const ids = [...ROUTES.map((route) => route.id), ...TRANSFER_STEP_FUNCTIONS.map((fn) => fn.id), ...EVENT_FUNCTIONS.map((fn) => fn.id)];
    expect(Object.keys(policies.functions).sort()).toEqual([...new Set(ids)].sort());
    expect(policies.functions.GetIdentityProvider!.role_arn).toMatch(
      /^arn:aws:iam::000000000000:role\/perp-wallet\/PerpWallet-Stateful\/GetIdentityProvider\/PerpWallet-Express-GetIdentityProviderRole[0-9A-F]{8}$/,
    );
  });

  it('let the express identity-provider lookup read what it authenticates with (the app secret, the app), and nothing else', () => {
    const iam = new SandboxIam(policies, 'enforce', () => undefined);
    const get = (pk: string) => dynamodbAccessRequests('GetItem', { TableName: 'perp-wallet', Key: { pk: { S: pk }, sk: { S: 'x' } } }, arn);
    runAsFunction('GetIdentityProvider', () => {
      expect(iam.authorize(get('APPSECRET#0f'))).toBeUndefined();
      expect(iam.authorize(get('APP#dev'))).toBeUndefined();
      expect(iam.authorize(get('ACCOUNT#dev#alice'))?.message).toMatch(
        /is not authorized to perform: dynamodb:GetItem .* because no identity-based policy allows/,
      );
      expect(iam.authorize(dynamodbAccessRequests('PutItem', { TableName: 'perp-wallet', Item: { pk: { S: 'APP#dev' } } }, arn))).toBeDefined();
    });
  });
});

describe('the stream proxy refuses what the calling function may not do', () => {
  let table: Table;
  let stopTable: () => Promise<void>;
  let proxy: DynamoDbStreamProxy;
  let doc: DynamoDBDocumentClient;
  const said: string[] = [];
  let mode: 'enforce' | 'warn' = 'enforce';
  const statement = (actions: string[], patterns: string[]) => ({
    Effect: 'Allow' as const,
    Action: actions,
    Resource: arn('sandbox-iam'),
    Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': patterns }, Null: { 'dynamodb:LeadingKeys': 'false' } },
  });
  const policies: RolePolicies = {
    functions: {
      Reader: {
        role_arn: 'arn:aws:iam::000000000000:role/perp-wallet/S/Reader/S-ReaderRole',
        source: 'S/ReaderRole',
        policies: [{ name: 'ReaderPolicy', document: { Statement: [statement(['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query'], ['APP#*'])] } }],
      },
      Writer: {
        role_arn: 'arn:aws:iam::000000000000:role/perp-wallet/S/Writer/S-WriterRole',
        source: 'S/WriterRole',
        policies: [{ name: 'WriterPolicy', document: { Statement: [statement(['dynamodb:PutItem', 'dynamodb:BatchWriteItem'], ['TASKS#*'])] } }],
      },
    },
    keys: {},
  };
  const iams = { enforce: new SandboxIam(policies, 'enforce', (line) => said.push(line)), warn: new SandboxIam(policies, 'warn', (line) => said.push(line)) };

  beforeAll(async () => {
    ({ table, stop: stopTable } = await startEngineTable('dynalite', 'sandbox-iam'));
    const endpoint = (await table.doc.config.endpoint!())!;
    proxy = await startDynamoDbStreamProxy({
      upstream: `${endpoint.protocol}//${endpoint.hostname}:${endpoint.port}`,
      port: 0,
      authorize: (operation, body) => iams[mode].authorizeJson(body, (parsed: never) => dynamodbAccessRequests(operation, parsed, arn), dynamodbAccessDenied),
    });
    doc = createDocumentClient(proxy.endpoint);
    await table.doc.send(new PutCommand({ TableName: table.name, Item: { pk: 'APP#a', sk: 'x', v: 1 } }));
    await table.doc.send(new PutCommand({ TableName: table.name, Item: { pk: 'APPSECRET#s', sk: 'x', v: 2 } }));
  }, 90_000);
  afterAll(async () => {
    doc?.destroy();
    await proxy?.stop();
    await stopTable?.();
  });

  it("allows a read of a granted partition; refuses another partition's with DynamoDB's AccessDeniedException, naming the role, action, table and why", async () => {
    mode = 'enforce';
    await runAsFunction('Reader', async () => {
      expect((await doc.send(new GetCommand({ TableName: table.name, Key: { pk: 'APP#a', sk: 'x' } }))).Item).toMatchObject({ v: 1 });
      const refused = await doc.send(new GetCommand({ TableName: table.name, Key: { pk: 'APPSECRET#s', sk: 'x' } })).catch((error: Error) => error);
      expect(refused).toMatchObject({
        name: 'AccessDeniedException',
        $metadata: { httpStatusCode: 400 },
        message: `User: arn:aws:sts::000000000000:assumed-role/S-ReaderRole/S-ReaderRole is not authorized to perform: dynamodb:GetItem on resource: ${arn('sandbox-iam')} because no identity-based policy allows the dynamodb:GetItem action`,
      });
      // A batch with one key outside the grant is refused whole: nothing is read.
      const batch = await doc
        .send(
          new BatchGetCommand({
            RequestItems: {
              [table.name]: {
                Keys: [
                  { pk: 'APP#a', sk: 'x' },
                  { pk: 'APPSECRET#s', sk: 'x' },
                ],
              },
            },
          }),
        )
        .catch((error: Error) => error);
      expect(batch).toMatchObject({ name: 'AccessDeniedException' });
      const query = await doc.send(
        new QueryCommand({ TableName: table.name, KeyConditionExpression: 'pk = :p', ExpressionAttributeValues: { ':p': 'APP#a' } }),
      );
      expect(query.Items).toHaveLength(1);
    });
    expect(said.filter((line) => line.includes('Reader: ') && line.includes('dynamodb:GetItem'))).toHaveLength(1);
    expect(said.join('\n')).toContain('partitions APPSECRET#…');
    expect(said.join('\n')).not.toContain('APPSECRET#s');
  });

  it('refuses a batch write when one item is outside the grant, and writes nothing of it', async () => {
    mode = 'enforce';
    const put = (pk: string) => ({ PutRequest: { Item: { pk, sk: 'x' } } });
    await runAsFunction('Writer', async () => {
      const refused = await doc.send(new BatchWriteCommand({ RequestItems: { [table.name]: [put('TASKS#a'), put('APP#b')] } })).catch((error: Error) => error);
      expect(refused).toMatchObject({ name: 'AccessDeniedException', message: expect.stringContaining('dynamodb:BatchWriteItem') });
      await doc.send(new BatchWriteCommand({ RequestItems: { [table.name]: [put('TASKS#c')] } }));
      await doc.send(new PutCommand({ TableName: table.name, Item: { pk: 'TASKS#d', sk: 'x' } }));
    });
    expect((await table.doc.send(new GetCommand({ TableName: table.name, Key: { pk: 'TASKS#a', sk: 'x' } }))).Item).toBeUndefined();
    expect((await table.doc.send(new GetCommand({ TableName: table.name, Key: { pk: 'TASKS#c', sk: 'x' } }))).Item).toBeDefined();
  });

  it('a function without a role may do nothing; code outside an invocation (the sandbox itself, a test) is not a Lambda: not evaluated', async () => {
    mode = 'enforce';
    const refused = await runAsFunction('Unknown', () => doc.send(new GetCommand({ TableName: table.name, Key: { pk: 'APP#a', sk: 'x' } }))).catch(
      (error: Error) => error,
    );
    expect(refused).toMatchObject({ name: 'AccessDeniedException' });
    expect((await doc.send(new GetCommand({ TableName: table.name, Key: { pk: 'APPSECRET#s', sk: 'x' } }))).Item).toMatchObject({ v: 2 });
  });

  it('warn: the call goes through and the refusal AWS would make is said once', async () => {
    mode = 'warn';
    const before = said.length;
    await runAsFunction('Reader', async () => {
      for (let i = 0; i < 3; i++)
        expect((await doc.send(new GetCommand({ TableName: table.name, Key: { pk: 'APPSECRET#s', sk: 'x' } }))).Item).toMatchObject({ v: 2 });
    });
    expect(said.slice(before)).toHaveLength(1);
    expect(said.at(-1)).toMatch(/^sandbox IAM \(warn\): Reader: User: .* is not authorized to perform: dynamodb:GetItem/);
    expect(iams.warn.refusals).toHaveLength(3);
  });
});

describe('KMS: the local key wrapper and signers ask as the KMS adapters would send', () => {
  const committed = loadRolePolicies({ account: '000000000000', region: REGION, table: 'perp-wallet' });
  const context = (purpose: string) => ({ purpose, app_id: 'dev', wallet_id: 'w-1' });
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'sandbox-iam-kms-'));
  });
  afterAll(async () => {
    setLocalKmsGuard(undefined);
    await rm(dataDir, { recursive: true, force: true });
  });

  it("an enclave route wraps and unwraps wallet keys under the wallet's context; under another purpose, or from another route, KMS refuses", async () => {
    setLocalKmsGuard(kmsGuard(new SandboxIam(committed, 'enforce', () => undefined), committed, REGION, '000000000000'));
    const wrapper = new LocalKeyWrapper(dataDir, 'enclave');
    const key = await runAsFunction('SignDataV2', () => wrapper.generateDataKey(context('enclave-wallet')));
    expect(await runAsFunction('SignDataV2', () => wrapper.decryptDataKey(key.ciphertext, context('enclave-wallet')))).toEqual(key.plaintext);
    await expect(runAsFunction('SignDataV2', () => wrapper.decryptDataKey(key.ciphertext, context('account-access-keys')))).rejects.toMatchObject({
      name: 'AccessDeniedException',
      message: expect.stringMatching(
        /is not authorized to perform: kms:Decrypt on resource: arn:aws:kms:us-east-1:000000000000:key\/local-EnclaveWalletKey[0-9A-F]{8} because/,
      ),
    });
    // An unlisted context key is refused too (ForAllValues:StringEquals on kms:EncryptionContextKeys).
    await expect(runAsFunction('SignDataV2', () => wrapper.decryptDataKey(key.ciphertext, { ...context('enclave-wallet'), extra: 'x' }))).rejects.toMatchObject(
      {
        name: 'AccessDeniedException',
      },
    );
    await expect(runAsFunction('GetAccount', () => wrapper.decryptDataKey(key.ciphertext, context('enclave-wallet')))).rejects.toMatchObject({
      name: 'AccessDeniedException',
    });
  });

  it('a key policy that does not allow the role refuses even where the role is granted: no resource-based policy allows it', async () => {
    const keyId = Object.keys(committed.keys).find((id) => id.startsWith('EnclaveWalletKey'))!;
    const policy = committed.keys[keyId]!.policy;
    const without = [policy.Statement].flat().filter((statement) => statement.Sid !== 'DecryptOnlyByNamedRoles');
    const policies = { ...committed, keys: { ...committed.keys, [keyId]: { ...committed.keys[keyId]!, policy: { ...policy, Statement: without } } } };
    setLocalKmsGuard(kmsGuard(new SandboxIam(policies, 'enforce', () => undefined), policies, REGION, '000000000000'));
    const wrapper = new LocalKeyWrapper(dataDir, 'enclave');
    const key = await runAsFunction('SignDataV2', () => wrapper.generateDataKey(context('enclave-wallet')));
    await expect(runAsFunction('SignDataV2', () => wrapper.decryptDataKey(key.ciphertext, context('enclave-wallet')))).rejects.toMatchObject({
      name: 'AccessDeniedException',
      message: expect.stringMatching(/because no resource-based policy allows the kms:Decrypt action$/),
    });
  });

  it('the op_jwt key signs for a route that needs it (RAW, ECDSA_SHA_256), not for one that does not; the gas sponsor key only for the sponsoring functions', async () => {
    setLocalKmsGuard(kmsGuard(new SandboxIam(committed, 'enforce', () => undefined), committed, REGION, '000000000000'));
    const claims = { iss: 'https://sandbox.test', sub: 'alice', aud: 'dev', app_id: 'dev' };
    const opJwt = new LocalOpJwtSigner(dataDir);
    expect(await runAsFunction('GetOrCreateExpressWallet', () => opJwt.sign(claims))).toMatch(/^ey/);
    await expect(runAsFunction('GetAccount', () => opJwt.sign(claims))).rejects.toMatchObject({ name: 'AccessDeniedException' });
    const sponsor = new LocalOpJwtSigner(dataDir, LOCAL_SPONSOR_KEY_FILE);
    await expect(runAsFunction('GetOrCreateExpressWallet', () => sponsor.sign(claims))).rejects.toMatchObject({
      name: 'AccessDeniedException',
      message: expect.stringContaining('kms:GetPublicKey'),
    });
    expect(await runAsFunction('Withdraw', () => sponsor.sign(claims))).toMatch(/^ey/);
  });
});
