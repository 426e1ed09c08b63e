import { type LookupAddress, lookup } from 'node:dns';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import type { WebhookPost } from './deliver.ts';

/**
 * The deliverer's HTTP POST. In AWS (`publicOnly`) it connects only to public addresses: the
 * address check runs in the socket's own DNS lookup, so the address it connects to is the one it
 * checked (a hostname that resolves to a public address at registration and to 169.254.169.254
 * at delivery, DNS rebinding, is refused), and redirects are not followed (Standard Webhooks: a
 * 3xx is a failure). The body of the answer is not read beyond its status.
 */
export interface WebhookPostOptions {
  /** true in AWS: refuse any address `isPublicAddress` rejects. */
  readonly publicOnly: boolean;
  readonly isPublicAddress: (address: string) => boolean;
  /** Standard Webhooks suggests 15–30 s. */
  readonly timeoutMs: number;
}

export class AddressNotAllowedError extends Error {
  constructor(host: string) {
    super(`${host} resolves to an address that is not public`);
  }
}

export function createWebhookPost(options: WebhookPostOptions): WebhookPost {
  const checkedLookup: LookupFunction = (hostname, lookupOptions, callback) => {
    lookup(hostname, { ...lookupOptions, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, '', 0);
      if (addresses.some((entry) => !options.isPublicAddress(entry.address))) return callback(new AddressNotAllowedError(hostname), '', 0);
      if (lookupOptions.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      const [first] = addresses;
      if (!first) return callback(new AddressNotAllowedError(hostname), '', 0);
      callback(null, first.address, first.family);
    });
  };
  return (url, headers, body) =>
    new Promise((resolve, reject) => {
      const target = new URL(url);
      const host = target.hostname.replace(/^\[|\]$/g, '');
      if (options.publicOnly && isIP(host) && !options.isPublicAddress(host)) return reject(new AddressNotAllowedError(host));
      const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
      const outgoing = send(
        target,
        {
          method: 'POST',
          headers: { ...headers, 'content-length': Buffer.byteLength(body) },
          timeout: options.timeoutMs,
          ...(options.publicOnly ? { lookup: checkedLookup } : {}),
        },
        (response) => {
          response.resume(); // the status is the answer; drain and drop the body
          resolve({ status: response.statusCode ?? 0 });
        },
      );
      outgoing.on('timeout', () => outgoing.destroy(new Error(`no answer within ${options.timeoutMs} ms`)));
      outgoing.on('error', reject);
      outgoing.end(body);
    });
}
