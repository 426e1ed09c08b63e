import { describe, expect, it } from 'vitest';
import { BRIDGE_ROUTES, bridgeFee, bridgeRouteJson, findBridgeRoute, USDC_E_CHAINS } from '../../shared/transfers/bridge-routes.ts';

/** The bridge's route table (shared by the sandbox bridge and the planner): coverage, sources, fee arithmetic. */
describe('bridge routes', () => {
  it('covers EVM ↔ EVM USDC, EVM ↔ SOL USDC and USDC ↔ USDC.E on the chains that carry USDC.E, each once', () => {
    const ids = BRIDGE_ROUTES.map((route) => route.id);
    expect(new Set(ids).size).toBe(ids.length);
    const evm = ['ETH', 'ARB', 'POL', 'INK'] as const;
    for (const a of evm) {
      expect(findBridgeRoute({ chain: a, token: 'USDC' }, { chain: 'SOL', token: 'USDC' })?.model).toBe('cctp');
      expect(findBridgeRoute({ chain: 'SOL', token: 'USDC' }, { chain: a, token: 'USDC' })?.model).toBe('cctp');
      for (const b of evm) if (a !== b) expect(findBridgeRoute({ chain: a, token: 'USDC' }, { chain: b, token: 'USDC' })?.model).toBe('across');
      for (const e of USDC_E_CHAINS) {
        expect(findBridgeRoute({ chain: a, token: 'USDC' }, { chain: e, token: 'USDC.E' })).toBeDefined();
        expect(findBridgeRoute({ chain: e, token: 'USDC.E' }, { chain: a, token: 'USDC' })).toBeDefined();
      }
    }
    expect(findBridgeRoute({ chain: 'ETH', token: 'USDC' }, { chain: 'INK', token: 'USDC.E' })).toBeUndefined();
    expect(findBridgeRoute({ chain: 'SOL', token: 'USDC' }, { chain: 'POL', token: 'USDC.E' })).toBeUndefined();
    expect(BRIDGE_ROUTES).toHaveLength(12 + 16 + 8);
  });

  it('gives every number a source: published (a research section) or "sandbox choice"', () => {
    for (const route of BRIDGE_ROUTES) {
      for (const field of ['fee_fixed', 'fee_bps', 'min', 'max', 'published_fill_s', 'quote_ttl_s', 'fill_deadline_s']) {
        expect(route.sources[field], `${route.id} ${field}`).toMatch(/sandbox choice|C\.\d/);
      }
      expect(route.min).toBeGreaterThan(bridgeFee(route, route.min));
      expect(route.fill_latency_ms).toBe(0);
    }
  });

  it('charges fixed + bps rounded up, in base units', () => {
    const route = { fee_fixed: 50_000n, fee_bps: 4n };
    expect(bridgeFee(route, 10_000_000n)).toBe(54_000n);
    expect(bridgeFee(route, 10_000_001n)).toBe(54_001n);
    expect(bridgeFee({ fee_fixed: 0n, fee_bps: 0n }, 123n)).toBe(0n);
    expect(bridgeRouteJson(BRIDGE_ROUTES[0]!).fee_fixed).toMatch(/^\d+$/);
  });
});
