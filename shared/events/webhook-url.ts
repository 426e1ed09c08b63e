import { isIPv4, isIPv6 } from 'node:net';
import * as v from 'valibot';
import { ConfigError } from '../config.ts';

/**
 * Which webhook endpoint URLs the service accepts (issue 24). Pure: no DNS, no I/O.
 *
 * `public-https` (AWS, the default): `https` only, no userinfo, a host that is a public IP
 * literal or a domain name outside the names that only mean something on a private network.
 * The deliverer runs inside AWS, so a URL that points at loopback, a private or link-local
 * range (the instance metadata address 169.254.169.254 among them) would let an app make the
 * service call its own network (SSRF). A domain name can still resolve to such an address, now
 * or later (DNS rebinding): the deliverer checks each resolved address with `isPublicAddress`
 * when it connects.
 *
 * `sandbox` (`npm start`): the same, plus `http` or `https` to the loopback names
 * (127.0.0.1, localhost, [::1]) on any port, so a receiver on the developer's machine works.
 */
export const WEBHOOK_URL_MODES = ['public-https', 'sandbox'] as const;
export type WebhookUrlMode = (typeof WEBHOOK_URL_MODES)[number];

export const MAX_WEBHOOK_URL_LENGTH = 2048;

/** WEBHOOK_URLS: `public-https` (default; a deployment leaves it unset) or `sandbox` (the local runtime sets it). */
export function loadWebhookUrlMode(env: Record<string, string | undefined> = process.env): WebhookUrlMode {
  const result = v.safeParse(v.optional(v.picklist(WEBHOOK_URL_MODES), 'public-https'), env.WEBHOOK_URLS);
  if (!result.success) throw new ConfigError('Invalid configuration: WEBHOOK_URLS: must be public-https or sandbox');
  return result.output;
}

export type WebhookUrlProblem = 'WEBHOOK_URL_INVALID' | 'WEBHOOK_URL_NOT_ALLOWED';

export type WebhookUrlCheck =
  | { readonly ok: true /** The URL as WHATWG URL normalises it (lower-case host, canonical IP). */; readonly url: string }
  | { readonly ok: false; readonly code: WebhookUrlProblem /** Names the rule, never repeats the URL. */; readonly reason: string };

/** Names that resolve only on a private network or never (RFC 6761, RFC 6762, RFC 8375, ICANN's `.internal`). */
const PRIVATE_SUFFIXES = ['localhost', 'local', 'internal', 'localdomain', 'home.arpa', 'test', 'invalid', 'example'];

const SANDBOX_LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

const refuse = (reason: string, code: WebhookUrlProblem = 'WEBHOOK_URL_NOT_ALLOWED'): WebhookUrlCheck => ({ ok: false, code, reason });

export function checkWebhookUrl(raw: string, mode: WebhookUrlMode): WebhookUrlCheck {
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) return refuse(`url must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`, 'WEBHOOK_URL_INVALID');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse('url is not an absolute URL', 'WEBHOOK_URL_INVALID');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return refuse('url must use https');
  if (url.username !== '' || url.password !== '') return refuse('url must not carry a user name or password');
  if (mode === 'sandbox' && SANDBOX_LOOPBACK_HOSTS.has(url.hostname)) return { ok: true, url: url.href };
  if (url.protocol !== 'https:') {
    return refuse(mode === 'sandbox' ? 'url must use https (http only to 127.0.0.1, localhost or [::1] in the sandbox)' : 'url must use https');
  }
  const host = url.hostname;
  if (host.startsWith('[')) {
    return isPublicAddress(host.slice(1, -1)) ? { ok: true, url: url.href } : refuse('url host is an IPv6 address that is not public');
  }
  // WHATWG parsing has already turned every IPv4 spelling (0x7f.1, 2130706433) into dotted form.
  if (isIPv4(host)) return isPublicAddress(host) ? { ok: true, url: url.href } : refuse('url host is an IPv4 address that is not public');
  const name = host.endsWith('.') ? host.slice(0, -1) : host;
  if (!name.includes('.')) return refuse('url host must be a fully qualified domain name or a public IP address');
  if (PRIVATE_SUFFIXES.some((suffix) => name === suffix || name.endsWith(`.${suffix}`))) return refuse('url host is a private or reserved name');
  return { ok: true, url: url.href };
}

/**
 * Ranges that are not public unicast: IANA's special-purpose registries (RFC 6890 and updates)
 * for IPv4; for IPv6 everything outside global unicast 2000::/3 is refused first, then these.
 */
const NON_PUBLIC_V4: readonly [string, number][] = [
  ['0.0.0.0', 8], // "this network", unspecified
  ['10.0.0.0', 8], // private (RFC 1918)
  ['100.64.0.0', 10], // shared address space, carrier-grade NAT (RFC 6598)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, instance metadata 169.254.169.254
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation TEST-NET-1
  ['192.88.99.0', 24], // 6to4 relay anycast (deprecated)
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation TEST-NET-2
  ['203.0.113.0', 24], // documentation TEST-NET-3
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, 255.255.255.255 broadcast
];
const NON_PUBLIC_V6: readonly [string, number][] = [
  ['2001::', 23], // IETF protocol assignments: Teredo, benchmarking 2001:2::/48, ORCHID
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4: an IPv4 address inside, private ones included
  ['3fff::', 20], // documentation (RFC 9637)
];
const GLOBAL_UNICAST_V6: readonly [string, number] = ['2000::', 3];
const V4_MAPPED: readonly [string, number] = ['::ffff:0:0', 96];
const NAT64: readonly [string, number] = ['64:ff9b::', 96];

/**
 * True when `ip` (an IPv4 or IPv6 address without brackets) is a public unicast address: what
 * the deliverer may connect to in `public-https` mode, for each address a host name resolves to.
 * IPv4-mapped and NAT64 IPv6 addresses are judged by the IPv4 address they carry. Anything that
 * does not parse, or carries a zone (`fe80::1%eth0`), is not public.
 */
export function isPublicAddress(ip: string): boolean {
  if (isIPv4(ip)) {
    const value = v4Value(ip);
    return !NON_PUBLIC_V4.some(([base, bits]) => inRange(value, v4Value(base), bits, 32));
  }
  if (!isIPv6(ip) || ip.includes('%')) return false;
  const value = v6Value(ip);
  if (inRange(value, v6Value(V4_MAPPED[0]), V4_MAPPED[1], 128) || inRange(value, v6Value(NAT64[0]), NAT64[1], 128)) {
    return isPublicAddress(v4Text(value & 0xffffffffn));
  }
  if (!inRange(value, v6Value(GLOBAL_UNICAST_V6[0]), GLOBAL_UNICAST_V6[1], 128)) return false;
  return !NON_PUBLIC_V6.some(([base, bits]) => inRange(value, v6Value(base), bits, 128));
}

/** Whether the deliverer may connect to `ip` in `mode`: public addresses, and loopback too in the sandbox. */
export function isAllowedAddress(ip: string, mode: WebhookUrlMode): boolean {
  if (mode === 'sandbox' && (ip === '::1' || (isIPv4(ip) && ip.startsWith('127.')))) return true;
  return isPublicAddress(ip);
}

function inRange(value: bigint, base: bigint, bits: number, width: number): boolean {
  const shift = BigInt(width - bits);
  return value >> shift === base >> shift;
}

function v4Value(ip: string): bigint {
  return ip.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

function v4Text(value: bigint): string {
  return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 0xffn)).join('.');
}

/** An IPv6 address (already checked by isIPv6) as a 128-bit number; a trailing dotted IPv4 part is allowed. */
function v6Value(ip: string): bigint {
  let text = ip;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted?.[1]) {
    const v4 = v4Value(dotted[1]);
    text = `${text.slice(0, -dotted[1].length)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return groups.reduce((acc, group) => (acc << 16n) | BigInt(Number.parseInt(group, 16)), 0n);
}
