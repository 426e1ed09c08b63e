import { describe, expect, it } from 'vitest';
import { DomainError, ValidationError } from '../../shared/errors.ts';
import { parseInput } from '../../shared/http/validate.ts';
import { findBridgeRoute } from '../../shared/transfers/bridge-routes.ts';
import { type PlannedStep, planToJson, planTransfer } from '../../shared/transfers/planner.ts';
import { TransferRequest } from '../../shared/transfers/schemas.ts';

/** The body as the handler sees it: through the valibot schema, then the planner. */
const plan = (body: Record<string, unknown>) => planTransfer(parseInput(TransferRequest, { amount: '100', ...body }, 'body'));

/** A step in one short string, so a whole route reads as one line. */
function shape(step: PlannedStep): string {
  switch (step.action) {
    case 'withdrawal':
      return `withdrawal ${step.venue} ${step.holding.chain}.${step.holding.token}`;
    case 'bridge':
      return `bridge ${step.from.chain}.${step.from.token}>${step.to.chain}.${step.to.token} (${step.gasPolicy})`;
    case 'deposit':
      return `deposit ${step.venue} ${step.holding.chain}.${step.holding.token} (${step.gasPolicy})`;
  }
}
const route = (body: Record<string, unknown>) => plan(body).steps.map(shape);

function refusal(body: Record<string, unknown>): DomainError {
  try {
    plan(body);
  } catch (error) {
    if (error instanceof DomainError) return error;
    throw error;
  }
  throw new Error('the body was accepted');
}

describe('transfer body schema', () => {
  it('names the field of a value outside the enumerations', () => {
    expect(() => plan({ source: 'venue_x', destination: 'self' })).toThrow(/body\.source: must be one of self, venue_a/);
    expect(() => plan({ source: 'self', destination: 'venue_b', chain: 'BASE' })).toThrow(/body\.chain: must be one of ETH, ARB, POL, INK, SOL/);
    expect(() => plan({ source: 'self', destination: 'venue_b', token: 'DAI' })).toThrow(/body\.token: must be one of/);
    expect(() => plan({ source: 'self', destination: 'venue_b', gas_sponsored: 'yes' })).toThrow(/body\.gas_sponsored: must be true or false/);
    expect(() => plan({ destination: 'venue_b' })).toThrow(/body\.source: is required/);
    expect(() => plan({ source: 'self', destination: 'venue_b', amount: 5 })).toThrow(/body\.amount: must be a decimal string/);
  });

  it.each(['0', '-1', '1e3', '1.0000001', ''])('refuses amount %j naming body.amount', (amount) => {
    const error = refusal({ source: 'self', destination: 'venue_b', amount });
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.message).toMatch(/^body\.amount: /);
  });

  it('keeps the amount exact in base units (6 decimals)', () => {
    expect(plan({ source: 'self', destination: 'venue_b', amount: '12.345678' }).amount).toBe(12_345_678n);
  });
});

describe('route planner: route shapes', () => {
  it('defaults chain to ARB and token to USDC', () => {
    const p = plan({ source: 'self', destination: 'venue_b' });
    expect(p.origin).toEqual({ chain: 'ARB', token: 'USDC' });
    expect(route({ source: 'self', destination: 'venue_b' })).toEqual(['deposit venue_b ARB.USDC (user)']);
    expect(p.routeId).toBe('self>ARB.USDC>venue_b');
  });

  it.each([
    ['venue_a', ['deposit venue_a ARB.USDC (user)']],
    ['venue_b', ['deposit venue_b ARB.USDC (user)']],
    ['venue_c', ['bridge ARB.USDC>ETH.USDC (user)', 'deposit venue_c ETH.USDC (user)']],
    ['venue_d', ['bridge ARB.USDC>INK.USDC (user)', 'deposit venue_d INK.USDC (user)']],
    ['venue_e', ['bridge ARB.USDC>POL.USDC.E (user)', 'deposit venue_e POL.USDC.E (user)']],
  ])('self (ARB USDC) to %s', (venue, expected) => {
    expect(route({ source: 'self', destination: venue })).toEqual(expected);
  });

  it("self on the venue's own chain and token needs no bridge; on another chain it does", () => {
    expect(route({ source: 'self', destination: 'venue_c', chain: 'ETH' })).toEqual(['deposit venue_c ETH.USDC (user)']);
    expect(route({ source: 'self', destination: 'venue_e', chain: 'POL', token: 'USDC.E' })).toEqual(['deposit venue_e POL.USDC.E (user)']);
    expect(route({ source: 'self', destination: 'venue_d', chain: 'SOL' })).toEqual(['bridge SOL.USDC>INK.USDC (user)', 'deposit venue_d INK.USDC (user)']);
  });

  it.each([
    ['venue_a', {}, ['withdrawal venue_a ARB.USDC']],
    ['venue_b', { chain: 'SOL' }, ['withdrawal venue_b ARB.USDC', 'bridge ARB.USDC>SOL.USDC (user)']],
    ['venue_d', { destination_chain: 'POL', destination_token: 'USDC.E' }, ['withdrawal venue_d INK.USDC', 'bridge INK.USDC>POL.USDC.E (user)']],
  ])('%s to self %j', (venue, extra, expected) => {
    expect(route({ source: venue, destination: 'self', ...extra })).toEqual(expected);
  });

  it.each([
    ['venue_c', {}],
    ['venue_c', { destination: 'venue_b' }],
    ['venue_e', { chain: 'POL', token: 'USDC.E' }],
    ['venue_e', { destination: 'venue_d' }],
  ])('%s as the source %j: refused up front, 422 VENUE_WITHDRAWAL_UNSUPPORTED (this service cannot follow its withdrawal)', (venue, extra) => {
    let refused: unknown;
    try {
      plan({ source: venue, destination: 'self', ...extra });
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(DomainError);
    expect(refused).toMatchObject({
      status: 422,
      code: 'VENUE_WITHDRAWAL_UNSUPPORTED',
      message: expect.stringMatching(new RegExp(`^${venue} withdrawals are not supported`)),
    });
  });

  it("venue to venue goes through the user's wallet, bridging across chains", () => {
    expect(route({ source: 'venue_b', destination: 'venue_d' })).toEqual([
      'withdrawal venue_b ARB.USDC',
      'bridge ARB.USDC>INK.USDC (user)',
      'deposit venue_d INK.USDC (user)',
    ]);
    expect(route({ source: 'venue_d', destination: 'venue_e' })).toEqual([
      'withdrawal venue_d INK.USDC',
      'bridge INK.USDC>POL.USDC.E (user)',
      'deposit venue_e POL.USDC.E (user)',
    ]);
    // Same chain and token on both sides: no bridge.
    expect(route({ source: 'venue_a', destination: 'venue_b' })).toEqual(['withdrawal venue_a ARB.USDC', 'deposit venue_b ARB.USDC (user)']);
    expect(plan({ source: 'venue_b', destination: 'venue_d' }).routeId).toBe('venue_b>ARB.USDC>INK.USDC>venue_d');
  });

  it('venue to venue accepts a chain or token naming either side, ignoring it', () => {
    expect(route({ source: 'venue_b', destination: 'venue_d', chain: 'INK' })).toHaveLength(3);
    expect(route({ source: 'venue_b', destination: 'venue_e', token: 'USDC.E' })).toHaveLength(3);
  });

  it.each([
    [{ chain: 'ARB', destination_chain: 'SOL', destination_token: 'USDC' }, ['bridge ARB.USDC>SOL.USDC (user)'], 'self>ARB.USDC>SOL.USDC>self'],
    [{ chain: 'SOL', destination_chain: 'POL', destination_token: 'USDC' }, ['bridge SOL.USDC>POL.USDC (user)'], 'self>SOL.USDC>POL.USDC>self'],
    [{ chain: 'ETH', destination_chain: 'INK', destination_token: 'USDC' }, ['bridge ETH.USDC>INK.USDC (user)'], 'self>ETH.USDC>INK.USDC>self'],
    [{ destination_chain: 'ARB', destination_token: 'USDC.E' }, ['bridge ARB.USDC>ARB.USDC.E (user)'], 'self>ARB.USDC>ARB.USDC.E>self'],
  ])('self to self %j', (extra, expected, id) => {
    const p = plan({ source: 'self', destination: 'self', ...extra });
    expect(p.steps.map(shape)).toEqual(expected);
    expect(p.routeId).toBe(id);
    expect(p.reason).toMatch(/bridge/);
  });
});

describe('route planner: bad combinations are a 400 naming the field', () => {
  it.each([
    [{ source: 'self', destination: 'self' }, 'body.destination_chain', /required for self to self/],
    [{ source: 'self', destination: 'self', destination_token: 'USDC' }, 'body.destination_chain', /required together with destination_token/],
    [{ source: 'self', destination: 'self', destination_chain: 'SOL' }, 'body.destination_token', /required together with destination_chain/],
    [{ source: 'venue_b', destination: 'self', destination_chain: 'SOL' }, 'body.destination_token', /required together/],
    [{ source: 'self', destination: 'self', destination_chain: 'ARB', destination_token: 'USDC' }, 'body.destination_chain', /different chain or token/],
    [{ source: 'self', destination: 'venue_b', destination_chain: 'ARB' }, 'body.destination_chain', /only for transfers to self/],
    [{ source: 'venue_a', destination: 'venue_b', destination_token: 'USDC' }, 'body.destination_token', /only for transfers to self/],
    [{ source: 'venue_b', destination: 'venue_b' }, 'body.destination', /must differ from the source/],
    [{ source: 'self', destination: 'venue_b', token: 'ETH' }, 'body.token', /transfers move USDC or USDC\.E/],
    [{ source: 'self', destination: 'venue_b', chain: 'SOL', token: 'USDC.E' }, 'body.token', /USDC\.E is not carried on SOL/],
    [{ source: 'self', destination: 'venue_b', chain: 'ETH', token: 'USDC.E' }, 'body.token', /not carried on ETH/],
    [{ source: 'self', destination: 'self', destination_chain: 'INK', destination_token: 'USDC.E' }, 'body.destination_token', /not carried on INK/],
    [{ source: 'self', destination: 'self', destination_chain: 'SOL', destination_token: 'SOL' }, 'body.destination_token', /transfers move/],
    [
      { source: 'venue_b', destination: 'self', chain: 'ETH', destination_chain: 'SOL', destination_token: 'USDC' },
      'body.chain',
      /contradicts destination_chain/,
    ],
    [
      { source: 'venue_b', destination: 'self', token: 'USDC.E', destination_chain: 'POL', destination_token: 'USDC' },
      'body.token',
      /contradicts destination_token/,
    ],
    [{ source: 'venue_b', destination: 'venue_d', chain: 'SOL' }, 'body.chain', /runs on ARB and INK/],
    [{ source: 'venue_a', destination: 'venue_b', token: 'USDC.E' }, 'body.token', /moves USDC; leave token out/],
    // No direct bridge route in shared/transfers/bridge-routes.ts: SOL USDC to or from USDC.E, USDC.E to USDC.E.
    [
      { source: 'self', destination: 'self', chain: 'SOL', destination_chain: 'POL', destination_token: 'USDC.E' },
      'body.destination_chain',
      /no bridge route from USDC on SOL to USDC\.E on POL/,
    ],
    [{ source: 'self', destination: 'venue_e', chain: 'SOL' }, 'body.chain', /no bridge route from USDC on SOL to USDC\.E on POL/],
    [{ source: 'venue_e', destination: 'self', chain: 'SOL' }, 'body.chain', /no bridge route from USDC\.E on POL to USDC on SOL/],
    [{ source: 'venue_e', destination: 'self', destination_chain: 'SOL', destination_token: 'USDC' }, 'body.destination_chain', /no bridge route/],
    [{ source: 'self', destination: 'venue_e', chain: 'ARB', token: 'USDC.E' }, 'body.chain', /no bridge route from USDC\.E on ARB to USDC\.E on POL/],
  ])('%j', (body, field, message) => {
    const error = refusal(body);
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.status).toBe(400);
    expect(error.message.startsWith(`${field}: `)).toBe(true);
    expect(error.message).toMatch(message);
  });

  it('accepts venue to self with matching chain and destination_chain', () => {
    expect(route({ source: 'venue_b', destination: 'self', chain: 'SOL', token: 'USDC', destination_chain: 'SOL', destination_token: 'USDC' })).toEqual([
      'withdrawal venue_b ARB.USDC',
      'bridge ARB.USDC>SOL.USDC (user)',
    ]);
  });
});

describe('route planner: gas sponsorship is EVM only', () => {
  it('sponsors EVM legs', () => {
    const p = plan({ source: 'self', destination: 'venue_d', gas_sponsored: true });
    expect(p.steps.map(shape)).toEqual(['bridge ARB.USDC>INK.USDC (sponsored)', 'deposit venue_d INK.USDC (sponsored)']);
    expect(p.gasSponsored).toBe(true);
    expect(p.notes).toEqual([]);
  });

  it('ignores it for a Solana leg and says so', () => {
    const p = plan({ source: 'self', destination: 'venue_b', chain: 'SOL', gas_sponsored: true });
    expect(p.steps.map(shape)).toEqual(['bridge SOL.USDC>ARB.USDC (user)', 'deposit venue_b ARB.USDC (sponsored)']);
    expect(p.gasSponsored).toBe(true);
    expect(p.notes.join(' ')).toMatch(/EVM only: the Solana leg is paid by your wallet in SOL/);

    const solOnly = plan({ source: 'self', destination: 'self', chain: 'SOL', destination_chain: 'ARB', destination_token: 'USDC', gas_sponsored: true });
    expect(solOnly.gasSponsored).toBe(false);
    expect(solOnly.gasSponsoredRequested).toBe(true);
    expect(solOnly.notes.join(' ')).toMatch(/Solana/);
  });

  it('a bridge from EVM to SOL is sponsored on its EVM source; the venue pays its own payout', () => {
    expect(route({ source: 'self', destination: 'self', destination_chain: 'SOL', destination_token: 'USDC', gas_sponsored: true })).toEqual([
      'bridge ARB.USDC>SOL.USDC (sponsored)',
    ]);
    const p = plan({ source: 'venue_a', destination: 'self', gas_sponsored: true });
    expect(p.steps[0]!.gasPolicy).toBe('venue');
    expect(p.gasSponsored).toBe(false);
    expect(p.notes.join(' ')).toMatch(/does not apply/);
  });

  it('defaults to unsponsored', () => {
    expect(plan({ source: 'self', destination: 'venue_b' }).steps.every((step) => step.gasPolicy === 'user')).toBe(true);
  });
});

describe('planToJson', () => {
  it('is plain JSON with the amount as a decimal string', () => {
    const json = planToJson(plan({ source: 'venue_b', destination: 'venue_d', amount: '12.5' }));
    expect(JSON.parse(JSON.stringify(json))).toEqual(json);
    expect(json).toMatchObject({ amount: '12.5', route_id: 'venue_b>ARB.USDC>INK.USDC>venue_d', origin: { chain: 'ARB', token: 'USDC' } });
    expect(json.steps).toHaveLength(3);
  });
});

describe('route planner: every bridge step it plans is a route of the bridge', () => {
  it('over every body shape', () => {
    const locations = ['self', 'venue_a', 'venue_b', 'venue_c', 'venue_d', 'venue_e'];
    const chains = ['ETH', 'ARB', 'POL', 'INK', 'SOL'];
    const tokens = ['USDC', 'USDC.E'];
    let planned = 0;
    for (const source of locations)
      for (const destination of locations)
        for (const chain of chains)
          for (const token of tokens)
            for (const destinationChain of [undefined, ...chains])
              for (const destinationToken of destinationChain ? tokens : [undefined]) {
                const body = { source, destination, chain, token, destination_chain: destinationChain, destination_token: destinationToken };
                let p: ReturnType<typeof plan>;
                try {
                  p = plan(body);
                } catch (error) {
                  // 400 for a bad combination; 422 for a source venue whose withdrawals are refused up front.
                  if (!(error instanceof ValidationError)) expect(error).toMatchObject({ code: 'VENUE_WITHDRAWAL_UNSUPPORTED' });
                  continue;
                }
                planned += 1;
                for (const step of p.steps) if (step.action === 'bridge') expect(findBridgeRoute(step.from, step.to), JSON.stringify(step)).toBeDefined();
              }
    expect(planned).toBeGreaterThan(100);
  });

  it('a route the given table lacks is refused', () => {
    const body = parseInput(TransferRequest, { source: 'self', destination: 'venue_c', amount: '10' }, 'body');
    expect(planTransfer(body).steps).toHaveLength(2);
    expect(() => planTransfer(body, () => false)).toThrow(/body\.chain: no bridge route from USDC on ARB to USDC on ETH/);
  });
});
