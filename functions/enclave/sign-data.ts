import { httpHandler } from '../../shared/http/handler.ts';
import { SignDataRequest } from '../../shared/enclave/schemas.ts';
import { signData } from '../../shared/enclave/sign-operations.ts';
import { signAdapter } from './sign-adapter.ts';

/** `POST /v2/api/wallet/sign_data`: signs a 32-byte hash as given (no prefix). */
export const adapter = signAdapter(2, SignDataRequest, signData);

export const handler = httpHandler(adapter, { jsonBody: true });
