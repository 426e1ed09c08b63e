import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * JSON-RPC 2.0 over HTTP, as an Agave validator serves it: POST one request or a batch, `GET /health`
 * answers `ok`. The methods themselves are in methods.ts.
 */

const MAX_REQUEST_BODY_SIZE = 50 * 1024;

export class JsonRpcError extends Error {
  readonly code: number;
  readonly data: unknown;
  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

/**
 * The state changed in memory but could not be made durable. Never a JSON-RPC error (a client reads
 * that as "nothing was taken"): the request fails at the HTTP level, as an unreachable node's would.
 */
export class PersistenceError extends Error {}

export type Params = readonly unknown[];
export type RpcMethod = (params: Params) => unknown;

/** u64 values go out as exact JSON integers (lamports, rentEpoch), as a validator writes them. */
const rawJSON = (text: string): unknown => (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON(text);
const toJson = (value: unknown) => JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? rawJSON(v.toString()) : v));

export function serveHttp(req: IncomingMessage, res: ServerResponse, methods: Map<string, RpcMethod>): void {
  if (req.method === 'GET' && req.url === '/health') {
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    return;
  }
  if (req.method !== 'POST') {
    res.writeHead(405, { allow: 'POST' }).end();
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  req.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size <= MAX_REQUEST_BODY_SIZE) chunks.push(chunk);
  });
  req.on('end', () => {
    if (size > MAX_REQUEST_BODY_SIZE) {
      res.writeHead(413).end();
      return;
    }
    let reply: string | undefined;
    try {
      reply = answerBody(Buffer.concat(chunks).toString('utf8'), methods);
    } catch (error) {
      if (!(error instanceof PersistenceError)) throw error;
      res.writeHead(500, { 'content-type': 'text/plain' }).end('state not persisted');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(reply ?? '');
  });
}

/** One request or a batch; notifications (no id) get no answer, as in jsonrpc-core. */
function answerBody(body: string, methods: Map<string, RpcMethod>): string | undefined {
  let request: unknown;
  try {
    request = JSON.parse(body);
  } catch {
    return toJson(errorResponse(null, new JsonRpcError(-32700, 'Parse error')));
  }
  if (Array.isArray(request)) {
    if (request.length === 0) return toJson(errorResponse(null, new JsonRpcError(-32600, 'Invalid request')));
    const replies = request.map((one) => answerOne(one, methods)).filter((reply) => reply !== undefined);
    return replies.length ? toJson(replies) : undefined;
  }
  const reply = answerOne(request, methods);
  return reply === undefined ? undefined : toJson(reply);
}

function answerOne(request: unknown, methods: Map<string, RpcMethod>): object | undefined {
  if (typeof request !== 'object' || request === null || Array.isArray(request)) return errorResponse(null, new JsonRpcError(-32600, 'Invalid request'));
  const { jsonrpc, method, params, id } = request as Record<string, unknown>;
  const hasId = 'id' in request;
  const replyId = typeof id === 'string' || typeof id === 'number' ? id : null;
  if (jsonrpc !== '2.0' || typeof method !== 'string' || (params !== undefined && !Array.isArray(params))) {
    return errorResponse(replyId, new JsonRpcError(-32600, 'Invalid request'));
  }
  const handler = methods.get(method);
  let reply: object;
  if (!handler) {
    reply = errorResponse(replyId, new JsonRpcError(-32601, 'Method not found'));
  } else {
    try {
      reply = { jsonrpc: '2.0', result: handler((params as Params | undefined) ?? []), id: replyId };
    } catch (error) {
      if (error instanceof PersistenceError) throw error;
      reply = errorResponse(
        replyId,
        error instanceof JsonRpcError ? error : new JsonRpcError(-32603, 'Internal error', error instanceof Error ? error.message : String(error)),
      );
    }
  }
  return hasId ? reply : undefined;
}

function errorResponse(id: string | number | null, error: JsonRpcError) {
  return {
    jsonrpc: '2.0',
    error: error.data === undefined ? { code: error.code, message: error.message } : { code: error.code, message: error.message, data: error.data },
    id,
  };
}
