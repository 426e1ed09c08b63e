import { Agent, type IncomingHttpHeaders, type IncomingMessage, request, type ServerResponse } from 'node:http';
import { Readable } from 'node:stream';

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

/** An engine's own request listener (dynalite's, in this process): the proxy hands requests to it without a second HTTP hop. */
export type EngineListener = (req: IncomingMessage, res: ServerResponse) => void;

export class Upstream {
  readonly #url: URL;
  readonly #agent = new Agent({ keepAlive: true });
  readonly #listener: EngineListener | undefined;

  /**
   * `listener`: the engine runs in this process (the embedded dynalite): requests go to its request
   * listener directly, not through a socket. Measured on the 2-core machine: the second HTTP hop
   * was a visible share of a sandbox DynamoDB call's CPU (the conservation run makes about 100k).
   */
  constructor(url: string, listener?: EngineListener) {
    this.#url = new URL(url);
    this.#listener = listener;
  }

  /** A request the proxy does not look into: streamed both ways, as a plain pipe would. */
  pipe(req: IncomingMessage, res: ServerResponse, onError: (error: Error) => void) {
    if (this.#listener) {
      try {
        this.#listener(req, res);
      } catch (error) {
        onError(error as Error);
      }
      return;
    }
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
    if (this.#listener) return this.#dispatch(sent, body);
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

  /** The request handed to the in-process engine's listener, its answer collected as an HTTP response would carry it. */
  #dispatch(headers: IncomingHttpHeaders, body: Buffer): Promise<UpstreamResponse> {
    const listener = this.#listener;
    if (!listener) throw new Error('no in-process engine');
    return new Promise((done, fail) => {
      const req = Object.assign(Readable.from([body]), { headers, method: 'POST', url: '/' });
      const answered: Record<string, string> = {};
      const res = {
        statusCode: 200,
        setHeader: (name: string, value: unknown) => {
          answered[name.toLowerCase()] = String(value);
        },
        getHeader: (name: string) => answered[name.toLowerCase()],
        end: (chunk?: string | Buffer) => done({ status: res.statusCode, headers: answered, body: chunk === undefined ? Buffer.alloc(0) : Buffer.from(chunk) }),
      };
      try {
        listener(req as unknown as IncomingMessage, res as unknown as ServerResponse);
      } catch (error) {
        fail(error);
      }
    });
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
