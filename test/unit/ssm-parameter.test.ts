import { createHash, createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignatureV4 } from '@smithy/signature-v4';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getSecureParameter, signSsmRequest, SsmParameterError } from '../../shared/chains/ssm-parameter.ts';

/**
 * The lean SSM GetParameter: its SigV4 signature equals the AWS SDK's signer's for the same
 * request, and it speaks SSM's JSON 1.1 protocol to an endpoint (here a local stand-in that
 * checks the signature the way SSM does: recomputing it with the secret key).
 */
class Sha256 {
  readonly #hash;
  constructor(secret?: Uint8Array) {
    this.#hash = secret === undefined ? createHash('sha256') : createHmac('sha256', secret);
  }
  update(data: Uint8Array) {
    this.#hash.update(data);
  }
  async digest() {
    return new Uint8Array(this.#hash.digest());
  }
}

const CREDENTIALS = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', sessionToken: 'session-token-example' };
const HEADERS = { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': 'AmazonSSM.GetParameter' };
const NOW = new Date('2026-11-22T09:15:30.123Z');

async function sdkAuthorization(url: URL, body: string, credentials: typeof CREDENTIALS | Omit<typeof CREDENTIALS, 'sessionToken'>) {
  const signer = new SignatureV4({ service: 'ssm', region: 'eu-west-1', credentials, sha256: Sha256 as never }); // the SDK's Checksum interface, minimally
  const signed = await signer.sign(
    { method: 'POST', protocol: url.protocol, hostname: url.hostname, port: url.port ? Number(url.port) : undefined, path: url.pathname, query: {}, headers: { ...HEADERS, host: url.host }, body },
    { signingDate: NOW },
  );
  return signed.headers.authorization;
}

describe('signSsmRequest', () => {
  it('signs exactly as @smithy/signature-v4 does, with and without a session token', async () => {
    for (const url of [new URL('https://ssm.eu-west-1.amazonaws.com/'), new URL('http://127.0.0.1:4566/')]) {
      const body = JSON.stringify({ Name: '/perp-wallet/prod/rpc-urls', WithDecryption: true });
      for (const credentials of [CREDENTIALS, { accessKeyId: CREDENTIALS.accessKeyId, secretAccessKey: CREDENTIALS.secretAccessKey }]) {
        const ours = signSsmRequest(url, body, HEADERS, credentials, 'eu-west-1', NOW);
        expect(ours.authorization).toBe(await sdkAuthorization(url, body, credentials));
        expect(ours['x-amz-date']).toBe('20261122T091530Z');
      }
    }
  });
});

describe('getSecureParameter', () => {
  let server: Server;
  let endpoint: string;
  const requests: { headers: IncomingHttpHeaders; body: string }[] = [];
  const stored = new Map([['/perp-wallet/test/rpc-urls', '{"SOL":"https://rpc.example.com/?api-key=secret-123"}']]);

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      req.on('end', () => {
        requests.push({ headers: req.headers, body });
        const url = new URL(`http://${req.headers.host}${req.url}`);
        const expected = signSsmRequest(url, body, HEADERS, { ...CREDENTIALS }, 'eu-west-1', new Date(`${String(req.headers['x-amz-date']).replace(/(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z/, '$1-$2-$3T$4:$5:$6Z')}`));
        if (req.headers.authorization !== expected.authorization || req.headers['x-amz-target'] !== 'AmazonSSM.GetParameter') {
          res.writeHead(400, { 'content-type': 'application/x-amz-json-1.1' }).end(JSON.stringify({ __type: 'InvalidSignatureException', message: 'bad signature' }));
          return;
        }
        const { Name, WithDecryption } = JSON.parse(body) as { Name: string; WithDecryption: boolean };
        const value = stored.get(Name);
        if (!value || WithDecryption !== true) {
          res.writeHead(400, { 'content-type': 'application/x-amz-json-1.1' }).end(JSON.stringify({ __type: 'ParameterNotFound', message: `Parameter ${Name} not found` }));
          return;
        }
        res.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' }).end(JSON.stringify({ Parameter: { Name, Type: 'SecureString', Value: value, Version: 1 } }));
      });
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  afterAll(() => new Promise<void>((done) => server.close(() => done())));

  const env = () => ({ AWS_REGION: 'eu-west-1', AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey, AWS_SESSION_TOKEN: CREDENTIALS.sessionToken, AWS_ENDPOINT_URL_SSM: endpoint });

  it('reads the decrypted value with a signed JSON 1.1 request', async () => {
    expect(await getSecureParameter('/perp-wallet/test/rpc-urls', env())).toBe('{"SOL":"https://rpc.example.com/?api-key=secret-123"}');
    const last = requests.at(-1)!;
    expect(JSON.parse(last.body)).toEqual({ Name: '/perp-wallet/test/rpc-urls', WithDecryption: true });
    expect(last.headers['content-type']).toBe('application/x-amz-json-1.1');
    expect(last.headers['x-amz-security-token']).toBe(CREDENTIALS.sessionToken);
  });

  it("names SSM's error type and the parameter, never a value; refuses to run without credentials", async () => {
    await expect(getSecureParameter('/missing', env())).rejects.toThrow(new SsmParameterError('SSM parameter /missing: ParameterNotFound'));
    const wrongKey = { ...env(), AWS_SECRET_ACCESS_KEY: 'not-the-key' };
    await expect(getSecureParameter('/perp-wallet/test/rpc-urls', wrongKey)).rejects.toThrow('SSM parameter /perp-wallet/test/rpc-urls: InvalidSignatureException');
    await expect(getSecureParameter('/x', { AWS_REGION: 'eu-west-1' })).rejects.toBeInstanceOf(SsmParameterError);
  });
});
