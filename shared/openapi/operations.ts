import * as v from 'valibot';
import { CreateAccountResponse, Account, SignRequest, SignResponse } from '../accounts/schemas.ts';
import {
  CreateWalletRequest,
  CreateWalletResponse,
  SignatureResponse,
  SignDataRequest,
  SignMessageRequest,
  SignTransactionRequest,
  SignTransactionResponse,
} from '../wallets/schemas.ts';

/**
 * What the OpenAPI document says of each route id in functions/routes.ts. The request schemas
 * are the very valibot schemas the handlers validate with, so the document cannot drift from
 * what is enforced.
 */
export type Security = 'userJwt' | 'secretKey';

export interface OperationDoc {
  readonly summary: string;
  readonly description?: string;
  readonly security: readonly Security[];
  readonly body?: v.GenericSchema;
  readonly response: v.GenericSchema;
  /** Error statuses this operation can answer with (besides 500). */
  readonly errors: readonly number[];
}

const Health = v.object({ status: v.literal('ok') });

export const IdentityProviderResponse = v.object({
  success: v.literal(true),
  provider_id: v.string(),
  issuer: v.string(),
  audience: v.nullable(v.string()),
});

const health: OperationDoc = { summary: 'Liveness: 200 once the service can serve', security: [], response: Health, errors: [] };

export const OPERATIONS: Record<string, OperationDoc> = {
  AccountHealth: health,
  EnclaveHealth: health,
  ExpressHealth: health,
  CreateAccount: {
    summary: 'Create the caller\'s account if missing, otherwise return it',
    description: 'Provisions an EVM and a Solana wallet in the wallet enclave (the app\'s default wallet group). Safe to retry and to call concurrently: one account per user.',
    security: ['userJwt', 'secretKey'],
    response: CreateAccountResponse,
    errors: [401, 502],
  },
  GetAccount: {
    summary: 'The caller\'s account',
    security: ['userJwt', 'secretKey'],
    response: Account,
    errors: [401, 404],
  },
  SignWithWallet: {
    summary: 'Sign a 32-byte hash, or keccak256 of a message, with the EVM wallet',
    description: 'raw_data_hash is signed when given (it wins over message); otherwise keccak256(message) with no EIP-191 prefix.',
    security: ['userJwt', 'secretKey'],
    body: SignRequest,
    response: SignResponse,
    errors: [400, 401, 404, 415, 502],
  },
  CreateWalletV2: {
    summary: 'Get or create a wallet bound to the auth_jwt identity',
    description: 'One wallet per (identity, wallet_group_id, key family): every EVM network shares one secp256k1 key, SOL uses ed25519. Repeats return the same wallet and access_key. No recovery_key.',
    security: ['secretKey'],
    body: CreateWalletRequest,
    response: CreateWalletResponse,
    errors: [400, 401, 415],
  },
  SignDataV2: {
    summary: 'Sign a 32-byte hash as given',
    description: 'Authorised by op_jwt (verified offline, exp - iat ≤ 300 s, naming the wallet\'s iss/sub) plus access_key.',
    security: ['secretKey'],
    body: SignDataRequest,
    response: SignatureResponse,
    errors: [400, 401, 403, 404, 415],
  },
  SignMessageV2: {
    summary: 'Sign a message: EIP-191 personal message (EVM) or raw bytes (SOL)',
    security: ['secretKey'],
    body: SignMessageRequest,
    response: SignatureResponse,
    errors: [400, 401, 403, 404, 415],
  },
  SignTransactionV2: {
    summary: 'Sign a transaction: an EVM transaction object, or a base64 Solana message',
    security: ['secretKey'],
    body: SignTransactionRequest,
    response: SignTransactionResponse,
    errors: [400, 401, 403, 404, 415],
  },
  GetIdentityProvider: {
    summary: 'The application\'s identity provider',
    security: ['secretKey'],
    response: IdentityProviderResponse,
    errors: [401],
  },
};
