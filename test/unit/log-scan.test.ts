import { describe, expect, it } from 'vitest';
import { countLogLines, scanLog } from '../api/support/log-scan.ts';

/** The scanner the API suite's teardown runs over the runtime's log: it must catch each kind. */
const clean = [
  '{"level":"INFO","message":"request handled","service":"account","function_request_id":"0c6a1f5e-8d7b-4c2f-9a41-3b2d7e6f1a90","request_id":"XFetJhwJg65gHQ==","route":"POST /withdraw","status":200}',
  '{"type":"access","service":"account","method":"GET","path":"/demo/wallet/balance?chain","status":200,"request_id":"cW+wJqZguSCMJw=="}',
  '{"level":"ERROR","message":"unhandled error","error":{"name":"HttpRequestError","message":"HTTP request failed."},"rpc":"http://127.0.0.1:40021/…","address":"0xB7CbA89620a724C5016c2f75A7cE6a34b06Dcdcb"}',
].join('\n');

describe('scanLog', () => {
  it('finds nothing in ordinary log lines (addresses, request ids, redacted URLs)', () => {
    expect(scanLog(clean, [{ label: 'app secret key', value: 'sk_test_app-one_5d1c0e1e-0b7e-4a57-9d2c-1f3e5a7b9c0d' }])).toEqual([]);
  });

  it.each([
    ['EVM private key (0x + 64 hex)', '{"message":"signing with 0x4c0883a69102937d6231471b5dbb6204fe512961708279f3c9b1c8f3a2b4e5d6"}'],
    ['JWT', '{"authorization":"Bearer eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl"}'],
    ['RPC credential', '{"error":{"message":"fetch http://127.0.0.1:4000/rpc-key-9f8e7d6c5b4a/ARB failed"}}'],
    ['PEM private key', '{"key":"-----BEGIN PRIVATE KEY-----\\nMIGH..."}'],
  ])('catches a %s', (kind, line) => {
    const findings = scanLog(`${clean}\n${line}`);
    expect(findings.map((finding) => [finding.kind, finding.line])).toEqual([[kind, 4]]);
  });

  it('catches a known value anywhere in a line, and masks it in the report', () => {
    const secret = 'ak_test_app-two_0b8c1d2e-3f4a-4b5c-8d6e-7f8091a2b3c4';
    const findings = scanLog(`${clean}\n{"message":"x","header":"${secret}"}`, [{ label: 'app-two API key', value: secret }]);
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({ kind: 'app-two API key', line: 4 });
    expect(findings[0]!.excerpt).not.toContain(secret);
  });

  it("masks every secret of a line in each finding's excerpt, not only its own", () => {
    const secret = 'sk_test_app-one_5d1c0e1e-0b7e-4a57-9d2c-1f3e5a7b9c0d';
    const line = `{"key":"${secret}","rpc":"http://127.0.0.1:4000/rpc-key-9f8e7d6c5b4a/ARB"}`;
    const findings = scanLog(line, [{ label: 'app secret key', value: secret }]);
    expect(findings.map((finding) => finding.kind).sort()).toEqual(['RPC credential', 'app secret key']);
    for (const finding of findings) {
      expect(finding.excerpt).not.toContain(secret);
      expect(finding.excerpt).not.toContain('rpc-key-9f8e7d6c5b4a');
    }
  });

  it('lets through a 32-byte hash the tests saw in the open (a transaction hash), and no other', () => {
    const txHash = '0x9b2f4c1d0e8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c';
    const other = '0x4c0883a69102937d6231471b5dbb6204fe512961708279f3c9b1c8f3a2b4e5d6';
    expect(scanLog(`{"message":"broadcast","tx_hash":"${txHash.toUpperCase().replace('0X', '0x')}"}`, [], new Set([txHash]))).toEqual([]);
    const findings = scanLog(`{"tx_hash":"${txHash}","key":"${other}"}`, [], new Set([txHash]));
    expect(findings).toHaveLength(1);
    expect(findings[0]!.kind).toBe('EVM private key (0x + 64 hex)');
    expect(findings[0]!.excerpt).not.toContain(other);
  });

  it('ignores known values too short to be told apart from ordinary text', () => {
    expect(scanLog(clean, [{ label: 'short', value: 'account' }])).toEqual([]);
  });

  it('counts function lines and access lines, skipping plain text', () => {
    expect(countLogLines(`LOCAL SANDBOX\n${clean}\n{not json`)).toEqual({ lines: 5, functionLines: 1, accessLines: 1, errorLines: 1 });
  });
});
