import { httpHandler } from '../../shared/http/handler.ts';
import { V1SignMessageRequest } from '../../shared/enclave/schemas.ts';
import { signMessage } from '../../shared/enclave/sign-operations.ts';
import { signAdapter } from './sign-adapter.ts';

/** `POST /v1/api/wallet/sign_message`: v1 form (encryption_context), until retirement. */
export const adapter = signAdapter(1, V1SignMessageRequest, signMessage);

export const handler = httpHandler(adapter, { jsonBody: true });
