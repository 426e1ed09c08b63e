import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { type RolePolicies, rolePoliciesOf, type Template } from '../local/iam/role-policies.ts';

/**
 * `npm run iam:policies`: synthesizes the stacks exactly as `cdk synth` does (infra/app.ts with
 * cdk.json's context), without bundling the functions (`aws:cdk:bundling-stacks`: the IAM is the
 * same), reads the templates it wrote and writes the roles' and keys' policies the sandbox
 * enforces to infra/local/iam/role-policies.json (docs/sandbox-iam.md), and the stacks table of
 * docs/deploy.md (stacks, resource counts, keys). A test fails when either differs from the stacks
 * (test/infra/iam-policies.test.ts).
 */
const ROOT = resolve(import.meta.dirname, '../..');
export const ROLE_POLICIES_FILE = join(ROOT, 'infra/local/iam/role-policies.json');

export async function synthesizeRolePolicies(): Promise<RolePolicies> {
  return rolePoliciesOf(await synthesizeTemplates());
}

/** The templates `cdk synth` writes for infra/app.ts (without bundling), by stack name. */
export async function synthesizeTemplates(): Promise<Record<string, Template>> {
  const outdir = await mkdtemp(join(tmpdir(), 'iam-policies-'));
  try {
    const cdkJson = JSON.parse(await readFile(join(ROOT, 'cdk.json'), 'utf8')) as { context?: Record<string, unknown> };
    // As the CLI passes them: cdk.json's context, version reporting on (the AWS::CDK::Metadata resource), no bundling.
    const context = { ...cdkJson.context, 'aws:cdk:version-reporting': true, 'aws:cdk:bundling-stacks': [] };
    await promisify(execFile)(process.execPath, [join(ROOT, 'infra/app.ts')], {
      cwd: ROOT,
      env: { ...process.env, CDK_OUTDIR: outdir, CDK_CONTEXT_JSON: JSON.stringify(context) },
      maxBuffer: 16 * 1024 * 1024,
    });
    const templates: Record<string, Template> = {};
    for (const file of (await readdir(outdir)).filter((name) => name.endsWith('.template.json')).sort())
      templates[file.slice(0, -'.template.json'.length)] = JSON.parse(await readFile(join(outdir, file), 'utf8'));
    return templates;
  } finally {
    await rm(outdir, { recursive: true, force: true });
  }
}

export function rolePoliciesJson(policies: RolePolicies): string {
  return `${JSON.stringify(policies, null, 2)}\n`;
}

/** docs/deploy.md, whose stacks table (between the markers) is written from the same templates. */
export const DEPLOY_GUIDE = join(ROOT, 'docs/deploy.md');
const BEGIN = '<!-- stacks: written by npm run iam:policies from the synthesized templates; do not edit -->';
const END = '<!-- /stacks -->';

/** What each stack holds, in the order `cdk deploy --all` creates them; a stack the app makes and this does not name stops the generator. */
const STACKS: readonly { readonly name: string; readonly holds: string }[] = [
  { name: 'PerpWallet-Stateful', holds: 'the DynamoDB table (with its stream); the KMS keys below; the RPC URLs secret' },
  { name: 'PerpWallet-ApiGatewayLogging', holds: "API Gateway's account-level CloudWatch Logs role (one setting per region: below)" },
  { name: 'PerpWallet-Enclave', holds: "the enclave's REST API (stage `prod`) and one Lambda per enclave route in `functions/routes.ts`" },
  { name: 'PerpWallet-Transfers', holds: 'the transfer state machine and its step Lambdas (`functions/transfer-steps.ts`)' },
  {
    name: 'PerpWallet-Events',
    holds: "the event publisher on the table's stream, the webhook delivery FIFO queue with its dead-letter queue, and the deliverer",
  },
  { name: 'PerpWallet-Account', holds: "the account service's REST API and one Lambda per account route" },
  { name: 'PerpWallet-Express', holds: "the express service's REST API and one Lambda per express route" },
];

/** The stacks table and the keys, as markdown, from the templates. */
export function stacksSection(templates: Readonly<Record<string, Template>>): string {
  const unnamed = Object.keys(templates).filter((stack) => !STACKS.some((known) => known.name === stack));
  if (unnamed.length > 0) throw new Error(`write-iam-policies: the app makes ${unnamed.join(', ')}, which docs/deploy.md's table does not describe (STACKS)`);
  const rows = STACKS.filter((stack) => templates[stack.name]).map((stack) => ({
    ...stack,
    count: Object.keys(templates[stack.name]!.Resources ?? {}).length,
  }));
  const keys = Object.values(templates).flatMap((template) =>
    Object.values(template.Resources ?? {})
      .filter((resource) => resource.Type === 'AWS::KMS::Key')
      .map((resource) => `${resource.Properties?.Description} (${resource.Properties?.KeySpec ?? 'SYMMETRIC_DEFAULT'})`),
  );
  const functions = Object.values(templates).reduce(
    (n, template) => n + Object.values(template.Resources ?? {}).filter((r) => r.Type === 'AWS::Lambda::Function').length,
    0,
  );
  return [
    BEGIN,
    `${rows.length} stacks, from \`infra/app.ts\` (the stateless ones wired in \`infra/services-stack.ts\`), ${functions} functions in all:`,
    '',
    '| stack | holds | resources |',
    '| --- | --- | --- |',
    ...rows.map((row) => `| \`${row.name}\` | ${row.holds} | ${row.count} |`),
    '',
    `${keys.length} KMS keys, all in \`PerpWallet-Stateful\`: ${keys.join('; ')}.`,
    '',
    '(Resource counts as `cdk synth` writes them, `AWS::CDK::Metadata` included. Why this split, how the stacks refer to each other and how to move from',
    'the former single `PerpWallet-Services` stack: "Stacks" below.)',
    END,
  ].join('\n');
}

/** docs/deploy.md with its stacks section replaced by `section`. */
export function withStacksSection(guide: string, section: string): string {
  const from = guide.indexOf(BEGIN);
  const to = guide.indexOf(END);
  if (from < 0 || to < from) throw new Error(`write-iam-policies: docs/deploy.md has no stacks markers (${BEGIN})`);
  return `${guide.slice(0, from)}${section}${guide.slice(to + END.length)}`;
}

if (import.meta.main) {
  const templates = await synthesizeTemplates();
  const policies = rolePoliciesOf(templates);
  await writeFile(ROLE_POLICIES_FILE, rolePoliciesJson(policies));
  await writeFile(DEPLOY_GUIDE, withStacksSection(await readFile(DEPLOY_GUIDE, 'utf8'), stacksSection(templates)));
  console.info(
    `wrote ${ROLE_POLICIES_FILE}: ${Object.keys(policies.functions).length} function roles, ${Object.keys(policies.keys).length} key policies; and the stacks table of ${DEPLOY_GUIDE}`,
  );
}
