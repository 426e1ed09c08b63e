import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { signWithWallet } from '../../shared/accounts/account-service.ts';
import { SignRequest } from '../../shared/accounts/schemas.ts';
import { authenticateUser } from '../../shared/auth/authenticate.ts';
import { accountDeps } from '../../shared/deps/account.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';

/** `POST /wallet/sign`: sign a hash, or the keccak256 of a message, with the EVM wallet. */
export const adapter = async (event: APIGatewayProxyEventV2 & { body: unknown }) => {
  const user = await authenticateUser(accountDeps.apps, event);
  const body = parseInput(SignRequest, event.body, 'body');
  const { signature, raw_data_hash } = await signWithWallet(accountDeps, user, body);
  return jsonResponse(200, { success: true, signature, raw_data_hash, app_user_id: user.identity.sub });
};

export const handler = httpHandler(adapter, { jsonBody: true });
