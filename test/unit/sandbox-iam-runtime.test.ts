import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DescribeExecutionCommand, SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { importJWK, type JWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_AUDIENCE, DEV_ISSUER, devAppPaths } from '../../infra/local/applications.ts';
import { loadRolePolicies } from '../../infra/local/iam/enforcer.ts';
import { runAsFunction } from '../../infra/local/iam/principal.ts';
import { type LocalRuntime, startLocalRuntime } from '../../infra/local/runtime.ts';
import { clientEndpoint } from '../../shared/deps/local-endpoints.ts';

/**
 * The sandbox's IAM in the running sandbox (docs/sandbox-iam.md): every function's table calls
 * are authorised as its synthesized role. One runtime whose policies lack one grant, as a stack
 * would after a route's `needs` lost its table: that route answers 500 (nothing internal in the
 * answer) and the refusal is said once, with DynamoDB's AccessDeniedException text; the other
 * routes, under their committed grants, answer as always.
 */
let dataDir: string;
let runtime: LocalRuntime;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'sandbox-iam-runtime-'));
  process.env.LOG_LEVEL = 'silent';
  runtime = await startLocalRuntime({
    dataDir,
    ports: { account: 0, enclave: 0, express: 0 },
    dynamodbStore: 'memory',
    rolePolicies: (committed) => {
      const role = committed.functions.GetIdentityProvider!;
      // The role without its table statement: what `needs: {}` would synthesize.
      const policies = role.policies.map((policy) => ({
        ...policy,
        document: {
          ...policy.document,
          Statement: [policy.document.Statement]
            .flat()
            .filter((statement) => ![statement.Action].flat().some((action) => String(action).startsWith('dynamodb:'))),
        },
      }));
      return { ...committed, functions: { ...committed.functions, GetIdentityProvider: { ...role, policies } } };
    },
  });
}, 120_000);

afterAll(async () => {
  await runtime?.stop();
  await rm(dataDir, { recursive: true, force: true });
}, 60_000);

describe('enforced by default', () => {
  it('is on (SANDBOX_IAM unset), and a route under its committed grants is allowed: each call evaluated and its statement recorded', async () => {
    expect(runtime.iam.mode).toBe('enforce');
    const app = runtime.apps[0]!;
    const events = await fetch(`${runtime.urls.account}/events`, { headers: { 'x-service-secret-key': app.secret_key } });
    expect(events.status).toBe(200);
    expect([...(runtime.iam.used.get('ListEvents') ?? [])].length).toBeGreaterThan(0);
    expect(runtime.iam.refusals.filter((refusal) => refusal.functionId === 'ListEvents')).toEqual([]);
  });

  it("KMS too: creating an account wraps its access key (the account key's GenerateDataKey, under the route's role and the key's policy)", async () => {
    const app = runtime.apps[0]!;
    const issuerKey = JSON.parse(await readFile(devAppPaths(dataDir).issuerKey, 'utf8')) as JWK;
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', typ: 'JWT', kid: issuerKey.kid! })
      .setIssuer(DEV_ISSUER)
      .setAudience(DEV_AUDIENCE)
      .setSubject('iam-alice')
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(await importJWK(issuerKey, 'ES256'));
    const created = await fetch(`${runtime.urls.account}/account`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'x-service-secret-key': app.secret_key, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(created.status, await created.clone().text()).toBe(200);
    // The role's KMS statement was evaluated and allowed (with the key policy delegating to IAM).
    const [policy] = loadRolePolicies({ account: '000000000000', region: 'us-east-1', table: runtime.tableName }).functions.CreateAccount!.policies;
    const kmsIndex = [policy!.document.Statement].flat().findIndex((statement) => [statement.Action].flat().includes('kms:GenerateDataKey'));
    expect(kmsIndex).toBeGreaterThanOrEqual(0);
    expect([...(runtime.iam.used.get('CreateAccount') ?? [])]).toContain(`${policy!.name}#${kmsIndex} kms:GenerateDataKey`);
    expect(runtime.iam.refusals.filter((refusal) => refusal.functionId === 'CreateAccount')).toEqual([]);
  });

  it('Step Functions and SQS too: a step Lambda may not start an execution, a route may not use the delivery queue; their own grants pass', async () => {
    const sfn = new SFNClient(clientEndpoint(runtime.stepFunctions.endpoint));
    const sqs = new SQSClient(clientEndpoint(process.env.SQS_ENDPOINT));
    const stateMachineArn = runtime.stepFunctions.stateMachineArn;
    const start = new StartExecutionCommand({ stateMachineArn, name: 'iam-probe', input: '{}' });
    await expect(runAsFunction('TransferBridgeStep', () => sfn.send(start))).rejects.toMatchObject({
      name: 'AccessDeniedException',
      message: expect.stringMatching(
        /TransferBridgeStep.* is not authorized to perform: states:StartExecution on resource: arn:aws:states:us-east-1:000000000000:stateMachine:transfer because no identity-based policy allows/,
      ),
    });
    // GetTask's own grant (DescribeExecution of the machine's executions): past IAM, the machine answers for itself.
    const describe = new DescribeExecutionCommand({ executionArn: `${stateMachineArn.replace(':stateMachine:', ':execution:')}:no-such-execution` });
    await expect(runAsFunction('GetTask', () => sfn.send(describe))).rejects.toMatchObject({ name: 'ExecutionDoesNotExist' });
    const attributes = new GetQueueAttributesCommand({ QueueUrl: process.env.DELIVERY_QUEUE_URL, AttributeNames: ['ApproximateNumberOfMessages'] });
    await expect(runAsFunction('GetAccount', () => sqs.send(attributes))).rejects.toMatchObject({ message: expect.stringContaining('sqs:GetQueueAttributes') });
    expect((await runAsFunction('EventsDeliver', () => sqs.send(attributes))).Attributes).toHaveProperty('ApproximateNumberOfMessages');
    sfn.destroy();
    sqs.destroy();
  });

  it('a route whose table grant is gone answers 500 with nothing internal; the refusal is AccessDeniedException for its role', async () => {
    const app = runtime.apps[0]!;
    const response = await fetch(`${runtime.urls.express}/v1/identity/provider`, { headers: { 'x-service-secret-key': app.secret_key } });
    expect(response.status).toBe(500);
    const body = (await response.json()) as { success: boolean; error: { code: string; message: string } };
    expect(body.success).toBe(false);
    expect(JSON.stringify(body)).not.toMatch(/AccessDenied|dynamodb|arn:/);
    const [refusal] = runtime.iam.refusals.filter((one) => one.functionId === 'GetIdentityProvider');
    expect(refusal?.message).toMatch(
      /^User: arn:aws:sts::000000000000:assumed-role\/PerpWallet-Express-GetIdentityProviderRole[0-9A-F]{8}\/PerpWallet-Express-GetIdentityProviderRole[0-9A-F]{8} is not authorized to perform: dynamodb:GetItem on resource: arn:aws:dynamodb:us-east-1:000000000000:table\/perp-wallet because no identity-based policy allows the dynamodb:GetItem action$/,
    );
  });
});
