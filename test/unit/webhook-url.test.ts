import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../shared/config.ts';
import { checkWebhookUrl, isAllowedAddress, isPublicAddress, loadWebhookUrlMode, MAX_WEBHOOK_URL_LENGTH } from '../../shared/events/webhook-url.ts';

/** The webhook URL rules (issue 24): what POST /webhook-endpoints accepts, and the addresses the deliverer may connect to. */

const allowed = (url: string, mode: 'public-https' | 'sandbox' = 'public-https') => checkWebhookUrl(url, mode).ok;
const problem = (url: string, mode: 'public-https' | 'sandbox' = 'public-https') => {
  const check = checkWebhookUrl(url, mode);
  return check.ok ? undefined : check.code;
};

describe('checkWebhookUrl in public-https mode (AWS)', () => {
  it('accepts https URLs to public names and public IP literals, on any port, and returns them normalised', () => {
    expect(checkWebhookUrl('https://Hooks.Example.COM/in?x=1', 'public-https')).toEqual({ ok: true, url: 'https://hooks.example.com/in?x=1' });
    expect(allowed('https://hooks.example.com:8443/a')).toBe(true);
    expect(allowed('https://8.8.8.8/hook')).toBe(true);
    expect(allowed('https://[2606:4700:4700::1111]/hook')).toBe(true);
    expect(allowed('https://example.com./trailing-dot')).toBe(true);
  });

  it('refuses other schemes, http included', () => {
    for (const url of ['http://hooks.example.com/', 'ftp://hooks.example.com/', 'file:///etc/passwd', 'javascript:alert(1)']) {
      expect(problem(url), url).toBe('WEBHOOK_URL_NOT_ALLOWED');
    }
  });

  it('refuses user names and passwords in the URL', () => {
    expect(problem('https://user:pw@hooks.example.com/')).toBe('WEBHOOK_URL_NOT_ALLOWED');
    expect(problem('https://user@hooks.example.com/')).toBe('WEBHOOK_URL_NOT_ALLOWED');
  });

  it('refuses IP literals of every non-public range, however the address is spelt', () => {
    for (const host of [
      '127.0.0.1',
      '127.1.2.3',
      '0x7f.1', // 127.0.0.1
      '2130706433', // 127.0.0.1
      '10.0.0.1',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254', // instance metadata
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
      '198.18.0.1',
      '192.0.2.1',
      '198.51.100.7',
      '203.0.113.9',
      '[::1]',
      '[::]',
      '[fc00::1]',
      '[fd12:3456::1]',
      '[fe80::1]',
      '[ff02::1]',
      '[::ffff:127.0.0.1]',
      '[::ffff:169.254.169.254]',
      '[64:ff9b::a00:1]', // NAT64 of 10.0.0.1
      '[2001:db8::1]',
      '[2002:a00:1::]', // 6to4 of 10.0.0.1
    ]) {
      expect(problem(`https://${host}/hook`), host).toBe('WEBHOOK_URL_NOT_ALLOWED');
    }
  });

  it('refuses names that only resolve on a private network, and single-label names', () => {
    for (const host of ['localhost', 'LOCALHOST.', 'api.localhost', 'printer.local', 'metadata.google.internal', 'nas.home.arpa', 'intranet']) {
      expect(problem(`https://${host}/hook`), host).toBe('WEBHOOK_URL_NOT_ALLOWED');
    }
    expect(allowed('https://localhost.example.com/')).toBe(true);
    expect(allowed('https://internal.example.com/')).toBe(true);
  });

  it('refuses text that is not an absolute URL, and URLs over the length limit', () => {
    expect(problem('hooks.example.com/in')).toBe('WEBHOOK_URL_INVALID');
    expect(problem('https://exa mple.com/')).toBe('WEBHOOK_URL_INVALID');
    const path = 'a'.repeat(MAX_WEBHOOK_URL_LENGTH - 'https://hooks.example.com/'.length);
    expect(allowed(`https://hooks.example.com/${path}`)).toBe(true);
    expect(problem(`https://hooks.example.com/${path}a`)).toBe('WEBHOOK_URL_INVALID');
  });

  it('does not take the loopback receivers the sandbox takes', () => {
    for (const url of ['http://127.0.0.1:4000/hook', 'http://localhost:4000/hook', 'http://[::1]:4000/hook', 'https://127.0.0.1/hook']) {
      expect(problem(url), url).toBe('WEBHOOK_URL_NOT_ALLOWED');
    }
  });

  it('names the rule in its reason without repeating the URL', () => {
    const check = checkWebhookUrl('http://secret-token@10.0.0.1/x', 'public-https');
    expect(check.ok).toBe(false);
    if (!check.ok) expect(check.reason).not.toContain('secret-token');
  });
});

describe('checkWebhookUrl in sandbox mode', () => {
  it('also takes http and https to 127.0.0.1, localhost and [::1] on any port', () => {
    for (const url of ['http://127.0.0.1:4000/hook', 'http://localhost:9/hook', 'http://[::1]:65535/', 'https://127.0.0.1/hook', 'http://127.0.0.1/']) {
      expect(allowed(url, 'sandbox'), url).toBe(true);
    }
  });

  it('still refuses private addresses, other loopback spellings over http, and other schemes', () => {
    for (const url of [
      'http://10.0.0.1/hook',
      'https://10.0.0.1/hook',
      'http://169.254.169.254/',
      'http://127.0.0.2/',
      'http://hooks.example.com/',
      'ftp://127.0.0.1/',
    ]) {
      expect(problem(url, 'sandbox'), url).toBe('WEBHOOK_URL_NOT_ALLOWED');
    }
    expect(problem('http://user:pw@127.0.0.1/', 'sandbox')).toBe('WEBHOOK_URL_NOT_ALLOWED');
    expect(allowed('https://hooks.example.com/', 'sandbox')).toBe(true);
  });
});

describe('isPublicAddress and isAllowedAddress (the deliverer, per resolved address)', () => {
  it('tells public unicast from everything else', () => {
    for (const ip of ['8.8.8.8', '1.1.1.1', '100.63.255.255', '100.128.0.0', '172.32.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808']) {
      expect(isPublicAddress(ip), ip).toBe(true);
    }
    for (const ip of [
      '10.1.2.3',
      '100.127.0.1',
      '169.254.169.254',
      '::1',
      '::',
      'fe80::1',
      'fe80::1%eth0',
      'fc00::',
      'ff02::1',
      '::ffff:10.0.0.1',
      'not-an-ip',
      '',
    ]) {
      expect(isPublicAddress(ip), ip).toBe(false);
    }
  });

  it('allows loopback in the sandbox only', () => {
    expect(isAllowedAddress('127.0.0.1', 'sandbox')).toBe(true);
    expect(isAllowedAddress('::1', 'sandbox')).toBe(true);
    expect(isAllowedAddress('127.0.0.1', 'public-https')).toBe(false);
    expect(isAllowedAddress('10.0.0.1', 'sandbox')).toBe(false);
    expect(isAllowedAddress('8.8.8.8', 'public-https')).toBe(true);
  });
});

describe('loadWebhookUrlMode', () => {
  it('defaults to public-https, takes sandbox, and stops on anything else', () => {
    expect(loadWebhookUrlMode({})).toBe('public-https');
    expect(loadWebhookUrlMode({ WEBHOOK_URLS: 'public-https' })).toBe('public-https');
    expect(loadWebhookUrlMode({ WEBHOOK_URLS: 'sandbox' })).toBe('sandbox');
    expect(() => loadWebhookUrlMode({ WEBHOOK_URLS: 'any' })).toThrow(ConfigError);
  });
});
