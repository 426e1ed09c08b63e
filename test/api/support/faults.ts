import { expect } from 'vitest';
import { call } from './client.ts';

/**
 * `POST /sandbox/faults` for one user's wallet. API test files run side by side against one
 * sandbox, so a test faults only its own user's operations: `address` is required here (an
 * unscoped fault would hit whichever test deposits, withdraws or bridges next).
 */
export interface UserFault {
  readonly target: string;
  readonly operation: string;
  readonly mode: 'fail' | 'stall' | 'refund' | 'clear';
  readonly count?: number;
  /** The user's EVM address (venues, bridge) or Solana address (bridge), as the venue or bridge sees it. */
  readonly address: string;
}

export async function setUserFault(fault: UserFault): Promise<{ mode: string; remaining: number } | null> {
  const count = fault.mode === 'clear' ? {} : { count: fault.count ?? 1 };
  const response = await call('account', 'POST', '/sandbox/faults', { json: { ...fault, ...count } });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body.fault;
}
