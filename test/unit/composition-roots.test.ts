import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { EVENT_FUNCTIONS } from '../../functions/events.ts';
import { ROUTES, type RouteNeeds } from '../../functions/routes.ts';

/**
 * Each handler module's composition root reads its route's configuration, and only that, at
 * import (cold start): imported in a fresh Node process with exactly the variables its needs
 * name (functions/routes.ts `needs`), it loads; without one of them, it refuses to load and
 * names the variable.
 */
const run = promisify(execFile);
const ROOT = new URL('../../', import.meta.url);

const CHAINS_CONFIG = readFileSync(new URL('infra/config/chains.mainnet.json', ROOT), 'utf8');

/** The variables each need sets, as CDK sets them in AWS (KMS flavour). Required ones first. */
function environment(needs: RouteNeeds): { env: Record<string, string>; required: string[] } {
  const env: Record<string, string> = {};
  const required: string[] = [];
  const add = (name: string, value: string, isRequired = true) => {
    env[name] = value;
    if (isRequired && !required.includes(name)) required.push(name);
  };
  if (needs.table) add('TABLE_NAME', 'unit-table');
  if (needs.accountAccessKey || needs.webhookSecretKey) {
    add('KEY_PROVIDER', 'kms');
    add('ACCOUNT_KMS_KEY_ID', 'alias/account');
  }
  if (needs.enclaveWalletKey) {
    add('KEY_PROVIDER', 'kms');
    add('ENCLAVE_KMS_KEY_ID', 'alias/enclave');
  }
  if (needs.opJwtKey) {
    add('OP_JWT_SIGNER', 'kms');
    add('OP_JWT_KMS_KEY_ID', 'alias/op-jwt');
  }
  if (needs.sponsorKey) {
    add('SPONSOR_SIGNER', 'kms');
    add('SPONSOR_KMS_KEY_ID', 'alias/gas-sponsor');
  }
  if (needs.enclaveUrl) add('TEE_URL', 'https://enclave.example.com');
  if (needs.chains) {
    add('CHAINS_CONFIG', CHAINS_CONFIG);
    add('RPC_URLS_SECRET', 'perp-wallet/unit-rpc-urls', false);
  } else if (needs.chainData) {
    add('CHAINS_CONFIG', CHAINS_CONFIG);
  }
  if (needs.delegates) add('ALLOWED_7702_DELEGATES', '', false);
  if (needs.venues) add('VENUE_URLS', '{"venue_b":"https://venue-b.example.com"}');
  if (needs.bridge) add('BRIDGE_URL', 'https://bridge.example.com', false);
  if (needs.platformFee) add('PLATFORM_FEE', '{"bps":10,"recipients":{}}', false);
  if (needs.deliveryQueue) add('DELIVERY_QUEUE_URL', 'https://sqs.us-east-1.amazonaws.com/123456789012/deliveries.fifo');
  if (needs.transfers) {
    add('TRANSFER_STATE_MACHINE_ARN', 'arn:aws:states:us-east-1:123456789012:stateMachine:Transfer');
    add('TRANSFER_STEP_FUNCTIONS', '{"withdrawal":"w","bridge":"b","deposit":"d","settle":"s"}');
  }
  return { env, required };
}

interface Case {
  readonly route: string;
  readonly entry: string;
  readonly env: Record<string, string>;
  /** The required variable left out, or undefined for the complete environment. */
  readonly dropped?: string;
}

/**
 * One fresh Node process imports each case's module with exactly that case's environment. The
 * composition root runs at module evaluation and its builders read process.env when called, so
 * a fresh evaluation per case (a distinct `?case=` URL) sees that case's variables.
 */
const CHILD = `
import { readFileSync } from 'node:fs';
const cases = JSON.parse(readFileSync(process.argv[1], 'utf8'));
const base = { ...process.env };
const results = [];
for (const [index, c] of cases.entries()) {
  for (const name of Object.keys(process.env)) delete process.env[name];
  Object.assign(process.env, base, c.env);
  try {
    const m = await import(c.url + '?case=' + index);
    results.push({ ok: typeof m.handler === 'function', error: '' });
  } catch (error) {
    results.push({ ok: false, error: String(error && error.message) });
  }
}
process.stdout.write(JSON.stringify(results));
`;

async function importAll(cases: readonly Case[]): Promise<{ ok: boolean; error: string }[]> {
  // In a file, not an argument: every case's CHAINS_CONFIG together is past the kernel's limit for one argument (E2BIG).
  const dir = await mkdtemp(join(tmpdir(), 'composition-roots-'));
  try {
    const payload = join(dir, 'cases.json');
    await writeFile(payload, JSON.stringify(cases.map((c) => ({ url: new URL(c.entry, ROOT).href, env: c.env }))));
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', CHILD, payload], {
      env: { PATH: process.env.PATH ?? '', AWS_REGION: 'us-east-1' },
      timeout: 120_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    return JSON.parse(stdout);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe('composition roots', () => {
  it("every handler module loads with exactly its route's variables, and refuses to without each required one", async () => {
    const byEntry = new Map<string, { id: string; entry: string; needs: RouteNeeds }>();
    for (const route of [...ROUTES, ...EVENT_FUNCTIONS]) byEntry.set(route.entry, route);
    const cases: Case[] = [...byEntry.values()].flatMap((route) => {
      const { env, required } = environment(route.needs);
      const without = (name: string) => Object.fromEntries(Object.entries(env).filter(([key]) => key !== name));
      return [
        { route: route.id, entry: route.entry, env },
        ...required.map((name) => ({ route: route.id, entry: route.entry, env: without(name), dropped: name })),
      ];
    });
    const results = await importAll(cases);
    const problems = cases.flatMap(({ route, dropped }, index) => {
      const { ok, error } = results[index]!;
      if (dropped === undefined) return ok ? [] : [`${route} does not load with its own variables: ${error}`];
      if (ok) return [`${route} loads without ${dropped}`];
      return error.includes(dropped) ? [] : [`${route} without ${dropped} fails without naming it: ${error}`];
    });
    expect(problems).toEqual([]);
    expect(cases.length).toBeGreaterThan(40);
  }, 120_000);
});
