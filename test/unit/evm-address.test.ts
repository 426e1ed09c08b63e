import { getAddress, zeroAddress } from 'viem';
import { describe, expect, it } from 'vitest';
import { parseEvmAddress } from '../../shared/chains/evm-address.ts';

/** EIP-55 as the spec and the issue read it: no case → normalised; mixed case → a checksum that must be right. */
describe('parseEvmAddress', () => {
  const checksummed = getAddress('0x52908400098527886e0f7030069857d2e4169ee7');

  it('normalises all lower case and all upper case to the checksummed form, and accepts the right checksum', () => {
    expect(parseEvmAddress(checksummed.toLowerCase(), 'body.to')).toBe(checksummed);
    expect(parseEvmAddress(`0x${checksummed.slice(2).toUpperCase()}`, 'body.to')).toBe(checksummed);
    expect(parseEvmAddress(checksummed, 'body.to')).toBe(checksummed);
    // EIP-55's own test vectors.
    for (const vector of [
      '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
      '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359',
      '0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB',
    ])
      expect(parseEvmAddress(vector, 'f')).toBe(vector);
  });

  it('refuses a mixed-case address whose checksum is wrong: INVALID_ADDRESS_CHECKSUM, naming the field', () => {
    const at = [...checksummed].findIndex((char, index) => index > 1 && /[a-fA-F]/.test(char));
    const letter = checksummed[at]!;
    const wrong = `${checksummed.slice(0, at)}${letter === letter.toUpperCase() ? letter.toLowerCase() : letter.toUpperCase()}${checksummed.slice(at + 1)}`;
    expect(wrong.toLowerCase()).toBe(checksummed.toLowerCase());
    expect(wrong).not.toBe(checksummed);
    expect(() => parseEvmAddress(wrong, 'body.to_address')).toThrow(expect.objectContaining({ status: 400, code: 'INVALID_ADDRESS_CHECKSUM' }));
    expect(() => parseEvmAddress(wrong, 'body.to_address')).toThrow(/^body\.to_address: has a wrong EIP-55 checksum/);
  });

  it('refuses what is not 0x + 40 hex digits, and the zero address as a destination only', () => {
    for (const raw of ['', '0x', '0x1234', `${checksummed}00`, checksummed.slice(2), `0X${checksummed.slice(2)}`, `0x${'g'.repeat(40)}`, ` ${checksummed}`])
      expect(() => parseEvmAddress(raw, 'f'), raw).toThrow(expect.objectContaining({ code: 'INVALID_ADDRESS' }));
    expect(parseEvmAddress(zeroAddress, 'f')).toBe(zeroAddress);
    expect(() => parseEvmAddress(zeroAddress, 'f', { destination: true })).toThrow(expect.objectContaining({ code: 'INVALID_ADDRESS' }));
  });
});
