import { formatAmount } from '../money.ts';
import type { VenueId } from './default-status.ts';
import type { DirectionRule, VenueRules } from './driver.ts';
import { VENUE_RULE_SOURCES } from './rule-sources.ts';

/**
 * Every venue's funding rules (issue 10; from each venue's public documentation and SDKs), in base
 * units of the venue's token. The sandbox venues apply these and the drivers refuse what breaks
 * them. Each rule names its source in shared/venues/rule-sources.ts: a research tag ([O]
 * official, [S] secondary, [I] inference) or `sandbox choice` where research found nothing. These
 * two files are the ONLY place sandbox choices live; the README's "Sandbox venues" section lists them. A choice never contradicts a published
 * rule.
 *
 * Chains and tokens follow the table: venue_d's USDC on INK stands in for USDT0 (not a
 * token this project carries), venue_e takes USDC.E on POL into the proxy wallet.
 */
const USDC = 1_000_000n; // 6 decimals, every venue token here

function direction(input: Partial<DirectionRule> & { minimum: bigint; token: string }): DirectionRule {
  return {
    supported: input.supported ?? true,
    minimum: input.minimum,
    fee: input.fee ?? { amount: 0n, token: input.token, feeType: 'none', note: null },
    note: input.note ?? null,
  };
}

export const VENUE_RULES: Readonly<Record<VenueId, VenueRules>> = {
  venue_a: {
    venue: 'venue_a',
    chain: 'ARB',
    token: 'USDC',
    decimals: 6,
    firstDepositMinimum: 1n * USDC,
    deposit: direction({
      token: 'USDC',
      minimum: 1n * USDC,
      fee: { amount: 10_000n, token: 'USDC', feeType: 'quote', note: "The venue bridge's quote fee; the sandbox quotes 0.01 USDC." },
      note: 'Bridge quote (GET then POST /user/bridge/quote) and the deposit call carrying the committed quote id on Arbitrum.',
    }),
    withdrawal: direction({
      token: 'USDC',
      minimum: 1n * USDC,
      fee: { amount: 10_000n, token: 'USDC', feeType: 'quote', note: "The venue bridge's quote fee; the sandbox quotes 0.01 USDC." },
      note: 'Stark-signed withdrawal with a committed bridge quote, paid out on Arbitrum.',
    }),
  },
  venue_b: {
    venue: 'venue_b',
    chain: 'ARB',
    token: 'USDC',
    decimals: 6,
    firstDepositMinimum: 5n * USDC,
    deposit: direction({
      token: 'USDC',
      minimum: 5n * USDC,
      note: 'A plain USDC transfer to the bridge on Arbitrum, credited to the sender. Less than 5 USDC is not credited and is lost.',
    }),
    withdrawal: direction({
      token: 'USDC',
      // "must be greater than the withdrawal fee": the fee plus one base unit.
      minimum: 1n * USDC + 1n,
      fee: { amount: 1n * USDC, token: 'USDC', feeType: 'fixed', note: 'Deducted from the amount; the destination receives amount minus 1 USDC.' },
      note: 'withdraw3 signed by the main wallet (agents cannot withdraw), paid out on Arbitrum.',
    }),
  },
  venue_c: {
    venue: 'venue_c',
    chain: 'ETH',
    token: 'USDC',
    decimals: 6,
    firstDepositMinimum: 1n * USDC,
    // StarkGate's estimateDepositFeeWei(): 20,000 gas × 5 gwei, sent with the deposit call.
    depositNativeValue: 20_000n * 5_000_000_000n,
    deposit: direction({
      token: 'USDC',
      minimum: 1n * USDC,
      note: 'approve USDC to the venue bridge, then the bridge deposit on Ethereum, which also pays the L1-to-L2 message fee in ETH; at most 500,000 USDC per transaction.',
    }),
    withdrawal: direction({
      token: 'USDC',
      supported: false,
      minimum: 1n * USDC,
      note: "Paradex pays a withdrawal out through Starknet: a withdraw transaction on its appchain, then up to 8 hours of proving before the payout on Ethereum. This service does not yet send that transaction or follow it to the payout, so transfers out of venue_c are refused (422 VENUE_WITHDRAWAL_UNSUPPORTED); withdraw in the venue's own app.",
    }),
  },
  venue_d: {
    venue: 'venue_d',
    chain: 'INK',
    token: 'USDC',
    decimals: 6,
    firstDepositMinimum: 5n * USDC,
    deposit: direction({
      token: 'USDC',
      minimum: 1n * USDC,
      note: 'approve the endpoint, then depositCollateral on Ink. The first deposit that opens a subaccount must be at least 5. USDC stands in for USDT0.',
    }),
    withdrawal: direction({
      token: 'USDC',
      minimum: 1n * USDC + 1n,
      fee: {
        amount: 1n * USDC,
        token: 'USDC',
        feeType: 'fixed',
        note: "The venue's withdrawal sequencer fee for the collateral product, charged on top of the signed amount: of the amount taken from the venue balance, the wallet receives the amount minus 1 USDC.",
      },
      note: 'withdraw_collateral signed by the owner (or its linked signer), paid out on Ink to the owner; the amount must exceed the fee.',
    }),
  },
  venue_e: {
    venue: 'venue_e',
    chain: 'POL',
    token: 'USDC.E',
    decimals: 6,
    firstDepositMinimum: 2n * USDC,
    deposit: direction({
      token: 'USDC.E',
      minimum: 2n * USDC,
      note: 'USDC.e transferred to the proxy wallet on Polygon, wrapped 1:1 into pUSD as collateral. Less than 2 USDC.e stays USDC.e in the proxy wallet and is not collateral.',
    }),
    withdrawal: direction({
      token: 'USDC.E',
      supported: false,
      minimum: 1n * USDC,
      note: "Polymarket withdraws through its Bridge API: the owner sends pUSD out of the proxy wallet (a call through the proxy factory) to a one-time address from POST /withdraw, and the bridge pays on the chosen chain. This service does not yet make that call or follow the bridge's status, so transfers out of venue_e are refused (422 VENUE_WITHDRAWAL_UNSUPPORTED); withdraw in the venue's own app.",
    }),
  },
};

/** A direction rule as the spec's `transfer_rules` entry: amounts as decimal strings. */
export function directionRuleJson(rule: DirectionRule, decimals: number) {
  return {
    supported: rule.supported,
    minimum_amount: formatAmount(rule.minimum, decimals),
    fee: { amount: formatAmount(rule.fee.amount, decimals), token: rule.fee.token, fee_type: rule.fee.feeType, note: rule.fee.note },
    note: rule.note,
  };
}

/** A venue's rules on the wire (`GET /sandbox/venues`): decimal strings, sources included. */
export function venueRulesJson(rules: VenueRules) {
  return {
    chain: rules.chain,
    token: rules.token,
    decimals: rules.decimals,
    first_deposit_minimum: formatAmount(rules.firstDepositMinimum, rules.decimals),
    deposit: directionRuleJson(rules.deposit, rules.decimals),
    withdrawal: directionRuleJson(rules.withdrawal, rules.decimals),
    sources: VENUE_RULE_SOURCES[rules.venue],
  };
}
