import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { setChainDelegate } from '../../infra/scripts/chains-config-file.ts';

const DELEGATE = '0x99f9723333f9bb855fda00C5f801A1567eeFD5Ac';

/** `npm run sponsor:setup` writes the delegate into the operator's chains config: nothing else may change. */
describe('setChainDelegate', () => {
  it("adds the member after the chain's last one, in the file's indentation, leaving every other byte alone", () => {
    const text = readFileSync(resolve(import.meta.dirname, '../../infra/config/chains.mainnet.json'), 'utf8');
    const updated = setChainDelegate(text, 'POL', DELEGATE);
    const at = text.indexOf('"INK"');
    const polEnd = text.lastIndexOf('}', text.lastIndexOf('}', at) - 1) + 1; // the end of POL's tokens object
    expect(updated).toBe(`${text.slice(0, polEnd)},\n    "delegate": "${DELEGATE}"${text.slice(polEnd)}`);
    expect(JSON.parse(updated).POL.delegate).toBe(DELEGATE);
  });

  it('replaces an existing delegate in place', () => {
    const text = '{\n\t"ARB": {\n\t\t"delegate": "0x0000000000000000000000000000000000000001",\n\t\t"chain_id": 42161\n\t}\n}\n';
    expect(setChainDelegate(text, 'ARB', DELEGATE)).toBe(text.replace('0x0000000000000000000000000000000000000001', DELEGATE));
  });

  it('keeps tabs, CRLF line ends and one-line objects as they are', () => {
    expect(setChainDelegate('{\r\n\t"ETH": {\r\n\t\t"chain_id": 1\r\n\t}\r\n}', 'ETH', DELEGATE)).toBe(
      `{\r\n\t"ETH": {\r\n\t\t"chain_id": 1,\r\n\t\t"delegate": "${DELEGATE}"\r\n\t}\r\n}`,
    );
    expect(setChainDelegate('{"ETH":{"chain_id":1,"tokens":{"USDC":{"decimals":6}}},"INK":{}}', 'ETH', DELEGATE)).toBe(
      `{"ETH":{"chain_id":1,"tokens":{"USDC":{"decimals":6}}, "delegate": "${DELEGATE}"},"INK":{}}`,
    );
    expect(setChainDelegate('{"INK": {}}', 'INK', DELEGATE)).toBe(`{"INK": {"delegate": "${DELEGATE}"}}`);
  });

  it('does not mistake a "delegate" string inside another value, or a nested one, for the member', () => {
    const text = '{"ETH": {"note": "\\"delegate\\": here", "tokens": {"delegate": "x"}, "chain_id": 1}}';
    const updated = setChainDelegate(text, 'ETH', DELEGATE);
    expect(JSON.parse(updated)).toEqual({ ETH: { note: '"delegate": here', tokens: { delegate: 'x' }, chain_id: 1, delegate: DELEGATE } });
  });

  it('refuses a file without that chain', () => {
    expect(() => setChainDelegate('{"ETH": {}}', 'ARB', DELEGATE)).toThrow(/no object for ARB/);
    expect(() => setChainDelegate('[]', 'ARB', DELEGATE)).toThrow(/not a JSON object/);
  });
});
