import type { SigningRequest } from '../../../shared/enclave/policy-gate.ts';

/** A signing request every policy channel allows by default (issue 22): for tests of what comes before the policy. */
export const SIGN_MESSAGE: SigningRequest = { operation: 'sign_message', body: { message: 'hello', encoding: 'utf8' } };
