import { HttpRequestError, InvalidInputRpcError, RpcRequestError, TimeoutError } from 'viem';
import { describe, expect, it } from 'vitest';
import { describeChainError, redact } from '../../shared/chains/errors.ts';

/**
 * viem's `message` carries the RPC URL (hosted RPC URLs hold the API key in the path) and the
 * request body; what the chain adapters keep of an error must carry neither.
 */
const URL = 'https://arb-mainnet.example.com/v2/sk-live-0123456789abcdef';
const SIGNED = `0x02f8${'ab'.repeat(120)}`;
const body = { jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransaction', params: [SIGNED] };

describe('describeChainError', () => {
  it('keeps the short message of transport failures, without the URL or the request body', () => {
    const errors = [
      new HttpRequestError({ url: URL, body, status: 503, details: `upstream ${URL} unavailable` }),
      new TimeoutError({ url: URL, body }),
      new RpcRequestError({ url: URL, body, error: { code: -32000, message: 'nonce too low' } }),
      new InvalidInputRpcError(new RpcRequestError({ url: URL, body, error: { code: -32000, message: 'insufficient funds for gas * price + value' } })),
    ];
    for (const error of errors) {
      expect(error.message).toContain('sk-live-0123456789abcdef'); // what the raw message would leak
      const described = describeChainError(error);
      expect(described).not.toContain('sk-live');
      expect(described).not.toContain('arb-mainnet.example.com');
      expect(described).not.toContain('ab'.repeat(40));
      expect(described).toContain(error.shortMessage.replace(/\s+/g, ' '));
    }
    expect(describeChainError(errors[2])).toContain('nonce too low');
    expect(describeChainError(errors[3])).toContain('insufficient funds');
  });

  it('redacts any URL, long hex payload and newline in other errors, and bounds the length', () => {
    const text = describeChainError(new Error(`request to ${URL} failed\nbody ${SIGNED}`));
    expect(text).toBe('Error: request to [url] failed');
    expect(redact(`bad ${SIGNED} from wss://rpc.example.com/key`)).toBe('bad [data] from [url]');
    expect(redact('x'.repeat(1_000))).toHaveLength(300);
    expect(describeChainError('a string')).toBe('unknown error');
  });
});
