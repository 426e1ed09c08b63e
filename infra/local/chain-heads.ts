import type { PublicClient } from 'viem';

/**
 * The sandbox chains' heads as the sandbox's watchers (every venue, the bridge) read them each
 * tick: one `eth_blockNumber` per chain however many watchers ask within `maxAgeMs`, so a short
 * tick costs a request per chain, not one per watcher. A head up to `maxAgeMs` old is a deposit
 * seen that much later, never one missed: each watcher reads logs from its own cursor.
 */
export class ChainHeads {
  private readonly latest = new Map<string, { readonly at: number; readonly head: Promise<bigint> }>();
  private readonly maxAgeMs: number;

  constructor(maxAgeMs: number) {
    this.maxAgeMs = maxAgeMs;
  }

  /** The head of the chain `rpcUrl` names, read through `client` unless another watcher read it within `maxAgeMs`. */
  head(rpcUrl: string, client: Pick<PublicClient, 'getBlockNumber'>): Promise<bigint> {
    const now = performance.now();
    const cached = this.latest.get(rpcUrl);
    if (cached && now - cached.at < this.maxAgeMs) return cached.head;
    const head = client.getBlockNumber({ cacheTime: 0 });
    this.latest.set(rpcUrl, { at: now, head });
    // A failed read is not kept: the next watcher asks the chain again.
    head.catch(() => {
      if (this.latest.get(rpcUrl)?.head === head) this.latest.delete(rpcUrl);
    });
    return head;
  }
}
