import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type IamUsage, iamUsageDir, loadRolePolicies } from '../local/iam/enforcer.ts';

/**
 * `npm run iam:report [-- --clear]`: least privilege both ways, from what the sandbox processes of
 * this checkout recorded (`npm start`, `npm test`: docs/sandbox-iam.md). Per function, each granted
 * action that no call used (over-privilege), unless KEPT says why it stays; and every refusal
 * (under-privilege). `--clear` removes the records first (then run the tests again). Exit 0 always:
 * it reports, it does not judge.
 */
const { values } = parseArgs({ options: { clear: { type: 'boolean', default: false } } });
const dir = iamUsageDir();
if (values.clear) {
  await rm(dir, { recursive: true, force: true });
  console.info(`cleared ${dir}`);
  process.exit(0);
}

/** Grants kept although no sandbox call uses them, and why (by action, or `<function> <action>`). */
const KEPT: Readonly<Record<string, string>> = {
  'logs:CreateLogStream': "the Lambda runtime's own log writes, not the function's code",
  'logs:PutLogEvents': "the Lambda runtime's own log writes, not the function's code",
  'xray:PutTraceSegments': "the Lambda runtime's X-Ray daemon (active tracing), not the function's code",
  'xray:PutTelemetryRecords': "the Lambda runtime's X-Ray daemon (active tracing), not the function's code",
  'secretsmanager:GetSecretValue': 'the RPC URLs secret: read in AWS only (the sandbox passes the URLs in the environment)',
  'secretsmanager:DescribeSecret': 'granted with GetSecretValue by CDK (grantRead); read in AWS only',
  'dynamodb:BatchGetItem': 'part of every table read grant (infra/constructs/service-function.ts TABLE_ACTIONS), fenced to the same partitions',
  'dynamodb:BatchWriteItem': 'part of every table write grant (TABLE_ACTIONS), fenced to the same partitions',
  'dynamodb:ConditionCheckItem': 'part of every table write grant (TABLE_ACTIONS), fenced to the same partitions',
  'dynamodb:DeleteItem': 'part of every table write grant (TABLE_ACTIONS), fenced to the same partitions',
  'GetTask states:StartExecution':
    're-kicks a start that was lost between the task write and StartExecution (shared/transfers/service.ts getUserTask): a crash path the suites do not take',
  'CreateTransfer states:DescribeExecution': 'reads the execution a repeated start finds already there (shared/transfers/executor.ts, ExecutionAlreadyExists)',
  'ResumeTask states:DescribeExecution': 'reads the execution a repeated start finds already there (shared/transfers/executor.ts, ExecutionAlreadyExists)',
  'SignMessageV2 kms:GenerateDataKey': 'seals a v1 wallet migrated on its first v2 use (shared/enclave/use-wallet.ts), only while V1_RETIREMENT_AT is ahead',
  'SignTransactionV2 kms:GenerateDataKey':
    'seals a v1 wallet migrated on its first v2 use (shared/enclave/use-wallet.ts), only while V1_RETIREMENT_AT is ahead',
  'SignAuthorizationV2 kms:GenerateDataKey':
    'seals a v1 wallet migrated on its first v2 use (shared/enclave/use-wallet.ts), only while V1_RETIREMENT_AT is ahead',
  'sqs:GetQueueAttributes': "the delivery queue's event source mapping reads its attributes in AWS; the sandbox's mapping does not ask for them",
};

const files = (await readdir(dir).catch(() => [] as string[])).filter((name) => name.endsWith('.json'));
if (files.length === 0) {
  console.info(`no sandbox IAM usage recorded in ${dir}: run npm start or npm test first`);
  process.exit(0);
}
const used = new Map<string, Set<string>>();
const refusals = new Map<string, IamUsage['refusals'][number]>();
const modes = new Set<string>();
for (const file of files) {
  const usage = JSON.parse(await readFile(join(dir, file), 'utf8')) as IamUsage;
  modes.add(usage.mode);
  for (const [functionId, actions] of Object.entries(usage.used)) {
    const set = used.get(functionId) ?? new Set<string>();
    for (const entry of actions) set.add(entry);
    used.set(functionId, set);
  }
  for (const refusal of usage.refusals) refusals.set(`${refusal.functionId} ${refusal.action} ${refusal.resource}`, refusal);
}

const policies = loadRolePolicies({ account: '000000000000', region: 'us-east-1', table: 'perp-wallet' });
console.info(`sandbox IAM report: ${files.length} process(es) (${[...modes].join(', ')}) in ${dir}`);
let unused = 0;
let kept = 0;
for (const [functionId, role] of Object.entries(policies.functions).sort(([a], [b]) => a.localeCompare(b))) {
  const lines: string[] = [];
  for (const policy of role.policies) {
    [policy.document.Statement].flat().forEach((statement, index) => {
      if (statement.Effect !== 'Allow') return;
      for (const action of [statement.Action ?? []].flat()) {
        if (used.get(functionId)?.has(`${policy.name}#${index} ${action}`)) continue;
        const reason = KEPT[`${functionId} ${action}`] ?? KEPT[action];
        if (reason) kept++;
        else unused++;
        lines.push(`  ${reason ? 'kept  ' : 'UNUSED'} ${action} on ${[statement.Resource].flat().join(', ')}${reason ? `: ${reason}` : ''}`);
      }
    });
  }
  const refused = [...refusals.values()].filter((refusal) => refusal.functionId === functionId);
  if (lines.length === 0 && refused.length === 0) continue;
  console.info(`${functionId} (${role.source})`);
  for (const line of lines) console.info(line);
  for (const refusal of refused) console.info(`  REFUSED ${refusal.message}`);
}
console.info(`${unused} granted action(s) no call used and no reason keeps; ${kept} kept with a reason; ${refusals.size} refusal(s)`);
