import { httpHandler } from '../../shared/http/handler.ts';
import { V1SignDataRequest } from '../../shared/enclave/schemas.ts';
import { signData } from '../../shared/enclave/sign-operations.ts';
import { signAdapter } from './sign-adapter.ts';

/** `POST /v1/api/wallet/sign_data`: v1 form (encryption_context), until retirement. */
export const adapter = signAdapter(1, V1SignDataRequest, signData);

export const handler = httpHandler(adapter, { jsonBody: true });
