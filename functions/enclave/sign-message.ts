import { httpHandler } from '../../shared/http/handler.ts';
import { SignMessageRequest } from '../../shared/enclave/schemas.ts';
import { signMessage } from '../../shared/enclave/sign-operations.ts';
import { signAdapter } from './sign-adapter.ts';

/** `POST /v2/api/wallet/sign_message`: EIP-191 personal message (EVM) or raw bytes (SOL). */
export const adapter = signAdapter(2, SignMessageRequest, signMessage);

export const handler = httpHandler(adapter, { jsonBody: true });
