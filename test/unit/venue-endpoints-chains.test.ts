import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatUnits } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EvmSandbox, startEvmSandbox } from '../../infra/local/evm-sandbox.ts';
import { putAccountIfAbsent } from '../../shared/accounts/account-record.ts';
import type { AuthenticatedUser } from '../../shared/auth/authenticate.ts';
import { Chains } from '../../shared/chains/chains.ts';
import type { Table } from '../../shared/db/client.ts';
import { defaultPerpDexStatus, type VenueId } from '../../shared/venues/default-status.ts';
import type { VenueDriver, VenueRules } from '../../shared/venues/driver.ts';
import { VenueRegistry } from '../../shared/venues/registry.ts';
import { chainReader, checkPerpDexRequirements, FIRST_DEPOSIT_GAS } from '../../shared/venues/service.ts';
import { startDynaliteTable } from './support/dynalite-table.ts';

/**
 * The requirements check against real chains: the sandbox's anvils (real chain ids, the sandbox
 * ERC-20s at the USDC/USDC.E addresses, the faucet) read through shared/chains, and an account in
 * dynalite. The venue is only its rules here (a test double with no behaviour: the check never
 * calls the venue).
 */
const USDC = 1_000_000n;
const ETHER = 10n ** 18n;

let dataDir: string;
let sandbox: EvmSandbox;
let table: Table;
let stopTable: () => Promise<void>;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'venue-chains-'));
  sandbox = await startEvmSandbox({ dataDir });
  ({ table, stop: stopTable } = await startDynaliteTable('venue-chains-unit'));
}, 120_000);

afterAll(async () => {
  await sandbox?.stop();
  await stopTable?.();
  await rm(dataDir, { recursive: true, force: true });
}, 60_000);

function rules(venue: VenueId, chain: VenueRules['chain'], token: string): VenueRules {
  const none = { supported: true, minimum: 5n * USDC, fee: { amount: 0n, token, feeType: 'none' as const, note: null }, note: null };
  return { venue, chain, token, decimals: 6, deposit: none, withdrawal: none, firstDepositMinimum: 5n * USDC };
}

/** A venue that is only its rules: the requirements check must not call anything else. */
const rulesOnly = (r: VenueRules) => () => ({ id: r.venue, rules: r }) as unknown as VenueDriver;

describe('check-perp-dex-requirements against the sandbox chains', () => {
  it("reads the venue token on every chain carrying it, the native coin and the gas price of the venue's chain", async () => {
    const chains = new Chains({ ...sandbox.chains, SOL: { family: 'sol', native: 'SOL', tokens: {} }, sandbox: true });
    const reader = chainReader(chains);
    expect(reader.chainsCarrying('USDC.E')).toEqual(['ARB', 'POL']);
    expect(reader.chainsCarrying('USDC')).toEqual(['ETH', 'ARB', 'POL', 'INK']);
    expect(reader.native('POL')).toBe('POL');

    const owner = privateKeyToAccount(generatePrivateKey()).address;
    await putAccountIfAbsent(table, {
      app_id: 'chains-app',
      app_user_id: 'carol',
      user_id: 'u-carol',
      public_address: { ETH: owner, SOL: '11111111111111111111111111111112' },
      perp_dex_status: defaultPerpDexStatus(),
      wallets: { evm: { wallet_id: 'w-e' }, sol: { wallet_id: 'w-s' } },
      sealed: {} as never,
      created_at: '2026-11-22T00:00:00.000Z',
    });
    const user = { app: { app_id: 'chains-app' }, identity: { sub: 'carol' } } as unknown as AuthenticatedUser;
    const venues = new VenueRegistry(
      { venue_b: 'https://b.example.com', venue_e: 'https://e.example.com' },
      { venue_b: rulesOnly(rules('venue_b', 'ARB', 'USDC')), venue_e: rulesOnly(rules('venue_e', 'POL', 'USDC.E')) },
    );
    const deps = { table, venues, chains: reader };

    const empty = await checkPerpDexRequirements(deps, user, 'venue_b');
    expect(empty).toMatchObject({
      requirements_met: false,
      usdc_available: '0',
      eth_available: '0',
      chain_balances: { ETH: '0', ARB: '0', POL: '0', INK: '0' },
    });

    await sandbox.faucet('ARB', owner, 'USDC', 7n * USDC + 1n);
    await sandbox.faucet('INK', owner, 'USDC', 3n * USDC);
    await sandbox.faucet('ARB', owner, 'ETH', ETHER / 10n);
    const funded = await checkPerpDexRequirements(deps, user, 'venue_b');
    const gasPrice = await reader.gasPrice('ARB');
    expect(gasPrice).toBeGreaterThan(0n);
    expect(funded).toMatchObject({
      requirements_met: true,
      usdc_required: '5',
      usdc_available: '7.000001',
      usdc_sufficient: true,
      chain_balances: { ETH: '0', ARB: '7.000001', POL: '0', INK: '3' },
      eth_available: '0.1',
      eth_sufficient: true,
      gas_token: 'ETH',
    });
    // The gas price can move between two reads; the required gas is the budget at a price of that order.
    const required = Number(funded.eth_required);
    expect(required).toBeGreaterThan(0);
    expect(required).toBeCloseTo(Number(formatUnits(FIRST_DEPOSIT_GAS.venue_b * gasPrice, 18)), 6);

    // venue_e: USDC.E on POL, gas in POL; the wallet's ARB USDC does not count.
    await sandbox.faucet('POL', owner, 'USDC.E', 2n * USDC);
    const e = await checkPerpDexRequirements(deps, user, 'venue_e');
    expect(e).toMatchObject({
      requirements_met: false,
      usdc_available: '2',
      chain_balances: { ARB: '0', POL: '2' },
      eth_available: '0',
      gas_token: 'POL',
      chain: 'POL',
      token: 'USDC.E',
    });
    expect(e.message).toMatch(/at least 5 USDC\.E on POL for the first deposit \(the wallet holds 2\)/);
    expect(e.message).toMatch(/POL on POL for gas \(the wallet holds 0\)/);
  }, 60_000);
});
