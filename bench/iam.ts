import { parseArgs } from 'node:util';
import { dynamodbAccessRequests } from '../infra/local/iam/dynamodb.ts';
import { loadRolePolicies, SandboxIam } from '../infra/local/iam/enforcer.ts';
import { kmsGuard } from '../infra/local/iam/kms.ts';
import { runAsFunction } from '../infra/local/iam/principal.ts';

/**
 * `npm run bench:iam [-- --calls 200000]`: what the sandbox's IAM (docs/sandbox-iam.md) adds to a
 * table call, in process: reading the request's body (JSON.parse, as the stream proxy does), what
 * AWS would authorise for it (dynamodbAccessRequests) and the evaluation against the calling
 * function's synthesized role (SandboxIam.authorize, the committed role-policies.json), for a
 * GetItem of an account-service route, a Query, and a BatchGetItem of 25 keys; and a KMS Decrypt
 * of a wallet key (the role's grant and the key's policy, infra/local/iam/kms.ts). Each after a
 * warm-up of a tenth of the calls. Not a test: it prints numbers.
 */
const { values } = parseArgs({ options: { calls: { type: 'string', default: '200000' } } });
const CALLS = Number(values.calls);
const TABLE = 'perp-wallet';
const arn = (table: string) => `arn:aws:dynamodb:us-east-1:000000000000:table/${table}`;
const policies = loadRolePolicies({ account: '000000000000', region: 'us-east-1', table: TABLE });
const iam = new SandboxIam(policies, 'enforce', () => undefined);
const kms = kmsGuard(iam, policies, 'us-east-1', '000000000000');

const cases: { name: string; functionId: string; operation: string; body: string }[] = [
  {
    name: 'GetItem (GetAccount, ACCOUNT#…)',
    functionId: 'GetAccount',
    operation: 'GetItem',
    body: JSON.stringify({ TableName: TABLE, Key: { pk: { S: 'ACCOUNT#dev#alice' }, sk: { S: 'ACCOUNT' } }, ConsistentRead: true }),
  },
  {
    name: 'Query (ListTasks, TASKS#…)',
    functionId: 'ListTasks',
    operation: 'Query',
    body: JSON.stringify({
      TableName: TABLE,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': { S: 'TASKS#dev#alice' } },
      ScanIndexForward: false,
      Limit: 5,
    }),
  },
  {
    name: 'BatchGetItem, 25 keys (EventsDeliver)',
    functionId: 'EventsDeliver',
    operation: 'BatchGetItem',
    body: JSON.stringify({
      RequestItems: { [TABLE]: { Keys: Array.from({ length: 25 }, (_, i) => ({ pk: { S: `WEBHOOKS#dev` }, sk: { S: `ENDPOINT#${i}` } })) } },
    }),
  },
];

console.info(`bench:iam, ${CALLS} calls per case, Node ${process.version}`);
for (const one of cases) {
  const run = (n: number) =>
    runAsFunction(one.functionId, () => {
      let refused = 0;
      for (let i = 0; i < n; i++) if (iam.authorize(dynamodbAccessRequests(one.operation, JSON.parse(one.body), arn))) refused++;
      return refused;
    });
  run(Math.ceil(CALLS / 10));
  const started = performance.now();
  const refused = run(CALLS);
  const perCall = ((performance.now() - started) * 1000) / CALLS;
  console.info(`${one.name}: ${perCall.toFixed(2)} µs per call (${refused} refused)`);
}

{
  const request = { key: 'enclave', operation: 'Decrypt', encryptionContext: { purpose: 'enclave-wallet', app_id: 'dev', wallet_id: 'w-1' } } as const;
  const run = (n: number) =>
    runAsFunction('SignDataV2', () => {
      for (let i = 0; i < n; i++) kms(request);
    });
  run(Math.ceil(CALLS / 10));
  const started = performance.now();
  run(CALLS);
  console.info(`KMS Decrypt (SignDataV2, enclave key, role + key policy): ${(((performance.now() - started) * 1000) / CALLS).toFixed(2)} µs per call`);
}
