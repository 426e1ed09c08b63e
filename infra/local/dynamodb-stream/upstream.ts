import { Agent, type IncomingHttpHeaders, type IncomingMessage, request, type ServerResponse } from 'node:http';

/**
 * The engine behind the stream proxy (dynalite or DynamoDB Local), spoken to over kept-alive
 * sockets. The proxy's own reads (GetItem, BatchGetItem, DescribeTable) carry the client's headers:
 * DynamoDB Local keeps one database per access key (and region) and checks no signature (tried:
 * a request signed `Signature=deadbeef` is served; one without Authorization is refused), dynalite
 * ignores both, so the same headers reach the same tables without re-signing.
 */
export interface UpstreamResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/** Per connection, not per request (RFC 9110 §7.6.1): never forwarded to the engine or back. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'upgrade', 'te', 'trailer', 'transfer-encoding']);

export class Upstream {
  readonly #url: URL;
  readonly #agent = new Agent({ keepAlive: true });

  constructor(url: string) {
    this.#url = new URL(url);
  }

  /** A request the proxy does not look into: streamed both ways, as a plain pipe would. */
  pipe(req: IncomingMessage, res: ServerResponse, onError: (error: Error) => void) {
    const headers = endToEnd(req.headers);
    if (req.headers['transfer-encoding']) headers['transfer-encoding'] = req.headers['transfer-encoding'];
    const out = request(this.#url, { method: req.method, path: req.url, headers, agent: this.#agent }, (up) => {
      res.writeHead(up.statusCode ?? 502, endToEnd(up.headers));
      up.pipe(res);
    });
    out.on('error', onError);
    req.pipe(out);
  }

  /** Sends `body` with the client's headers, `target` instead of theirs (a read of the proxy's own, or the client's write rewritten). */
  send(headers: IncomingHttpHeaders, target: string, body: Buffer): Promise<UpstreamResponse> {
    const sent = endToEnd(headers);
    // The proxy parses what comes back: no compressed answer.
    delete sent['accept-encoding'];
    sent['x-amz-target'] = `DynamoDB_20120810.${target}`;
    sent['content-length'] = String(body.length);
    return new Promise((done, fail) => {
      const out = request(this.#url, { method: 'POST', path: '/', headers: sent, agent: this.#agent }, (up) => {
        const chunks: Buffer[] = [];
        up.on('data', (chunk: Buffer) => chunks.push(chunk));
        up.on('end', () => done({ status: up.statusCode ?? 502, headers: up.headers, body: Buffer.concat(chunks) }));
        up.on('error', fail);
      });
      out.on('error', fail);
      out.end(body);
    });
  }

  /** A read the proxy needs: its JSON on success, the engine's error otherwise. */
  async json(headers: IncomingHttpHeaders, target: string, payload: unknown): Promise<any> {
    const answer = await this.send(headers, target, Buffer.from(JSON.stringify(payload)));
    const text = answer.body.toString('utf8');
    if (answer.status !== 200) throw new Error(`${target} answered ${answer.status}: ${text.slice(0, 300)}`);
    return JSON.parse(text);
  }

  close() {
    this.#agent.destroy();
  }
}

export function endToEnd(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const kept: IncomingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) if (!HOP_BY_HOP.has(name)) kept[name] = value;
  return kept;
}
