import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';

/** `GET /health` on every service: 200 once the function can serve. */
export const adapter = async () => jsonResponse(200, { status: 'ok' });

export const handler = httpHandler(adapter);
